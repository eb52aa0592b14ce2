// A bulk copy completes on a block-wide mbarrier: its async_ target is a shared allocation at block[1].
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(x: *const f32, y: *mut f32) {
    async_(y, |y_async| {
        group(thread[1], || {
            cp_async_bulk(y_async, 0, x, 0, 16);
        });
    });
}

fn main() {}
