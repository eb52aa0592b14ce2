// A TMA store writes global memory through its tensor map: the parameter is a `TensorMapMut`, which the
// host makes from `&mut DeviceBuffer` (nothing else touches the buffer during the launch).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 128)]
fn k(out: TensorMap<f32, 1>) {
    group(block[1], || {
        let tile: Shared<[f32; 128]>;
        match split(thread) {
            1 => {
                tma_store(out, tile, 0);
            }
        }
    });
}

fn main() {}
