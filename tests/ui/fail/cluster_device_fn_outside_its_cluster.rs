// A device function declared `cluster = 2` multicasts into both blocks of a 2-block cluster: it may only be
// called where the blocks form clusters of 2 (not in a kernel without clusters, nor with clusters of 4).
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[128]), cluster = 2)]
fn produce(r: Ring<bf16>, b: TensorMap<bf16, 2>, k_tiles: u32) {
    for kt in 0..k_tiles {
        fill(r, kt, |sb_s| match split(thread) {
            1 => {
                tma_load_multicast(sb_s, b, kt * 64, 0);
            }
        });
    }
}

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 256)]
fn no_clusters(b: TensorMap<bf16, 2>, k_tiles: u32) {
    group(block[1], || {
        let sb: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
        ring(2, sb, |r| match split(warpgroup) {
            1 => {
                produce(r, b, k_tiles);
            }
            1 => {
                for kt in 0..k_tiles {
                    drain(r, kt, |sb_s| {});
                }
            }
        });
    });
}

#[prism_kernel(requires(grid[1], block[4], block[1], warpgroup), threads = 256, cluster = 4)]
fn clusters_of_four(b: TensorMap<bf16, 2>, k_tiles: u32) {
    group(block[1], || {
        let sb: Shared<[bf16; 2 * 64 * 64], Swizzle128>;
        ring(2, sb, |r| match split(warpgroup) {
            1 => {
                produce(r, b, k_tiles);
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
