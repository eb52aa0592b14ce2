// A multicast TMA load writes the same slot in every block of a cluster: the kernel must have clusters.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
fn k(b: TensorMap<bf16, 2>, k_tiles: u32) {
    group(block[1], || {
        let sb: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
        ring(2, sb, |r| match split(warpgroup) {
            1 => {
                for kt in 0..k_tiles {
                    fill(r, kt, |sb_s| match split(thread) {
                        1 => {
                            tma_load_multicast(sb_s, b, kt * 64, 0);
                        }
                    });
                }
            }
            1 => {
                for kt in 0..k_tiles {
                    drain(r, kt, |sb_s| {});
                }
            }
        });
    });
}

fn main() {}
