// A variable cannot live at a broader perspective than the code that declares it.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k() {
    group(block[1], || {
        group(thread[1], || {
            #[at(block[1])]
            let x: u32 = 0;
        });
    });
}

fn main() {}
