// Inside async_, the original name is hidden until the copies complete.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), smem = 1024)]
fn k(a: *const f32) {
    group(block[1], || {
        let s: Shared<[f32; 256]>;
        async_(s, |s_async| {
            group(thread[1], || {
                #[at(thread[1])]
                let v: f32 = s[0];
            });
        });
    });
}

fn main() {}
