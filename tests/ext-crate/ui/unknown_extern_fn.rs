// A path to a device function that the other crate does not export.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn k(input: *const i32) {
    group(thread[32], || {
        #[at(thread[1])]
        let mut data = [0i32; 4];
        prism_kernels::warp_lod::<4>(input, &mut data);
    });
}

fn main() {}
