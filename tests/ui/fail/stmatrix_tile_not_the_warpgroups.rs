// `stmatrix_bf16` is a warpgroup collective that writes a whole 64 × 64 tile: the tile must be the
// warpgroup's own (handed to it with `partition(e, thread[128], |x| x, ..)`), not the block's.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
fn k() {
    group(block[1], || {
        let e: Shared<[bf16; 64 * 64], Swizzle128>;
        group(thread[128], || {
            #[at(thread[1])]
            let acc = [0.0f32; 32];
            stmatrix_bf16(e, &acc, 0);
        });
    });
}

fn main() {}
