//! A user's crate: one device function and one kernel of its own, composed with a library device function
//! (`prism_kernels::block_load`), launched on `Device::auto()` (GPU 0, else the emulator) and checked
//! against the CPU. `cargo run` prints `ok` and the backend, or exits 1.

use prism_macros::{prism_device, prism_kernel};
use prism_runtime::{Device, LaunchDims, RuntimeError};

/// `thread[1]`: the sum of this thread's register items.
#[prism_device(requires(thread[1]), returns = thread[1])]
pub fn sum4(items: &[i32; 4]) -> i32 {
    let mut s: i32 = 0;
    for i in 0..4 {
        s += items[i];
    }
    s
}

/// Each block of 128 threads loads 512 items with the library's `block_load` (4 per thread) and writes
/// each thread's sum of its 4 items, plus the block size: `out[t] = in[4t] + .. + in[4t+3] + block_dim()`.
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128)]
pub fn sums_of_four(input: *const i32, out: *mut i32) {
    #[at(block[1])]
    let b: u32 = id();
    partition(
        input,
        block[1],
        |x| b * 512 + x,
        |in_blk| {
            partition(
                out,
                block[1],
                |x| b * 128 + x,
                |out_blk| {
                    group(block[1], || {
                        #[at(thread[1])]
                        let mut items = [0i32; 4];
                        prism_kernels::block_load::<4>(in_blk, &mut items);
                        #[at(thread[1])]
                        let t: u32 = id();
                        partition(
                            out_blk,
                            thread[1],
                            |x| t + x,
                            |o| {
                                group(thread[1], || {
                                    o[0] = sum4(&items) + block_dim() as i32;
                                });
                            },
                        );
                    });
                },
            );
        },
    );
}

fn main() -> Result<(), RuntimeError> {
    let dev = Device::auto()?;
    let blocks = 3usize;
    let input: Vec<i32> = (0..blocks * 512)
        .map(|i| (i as i32 * 7919) % 1000 - 500)
        .collect();
    let d_in = dev.htod(&input)?;
    let mut d_out = dev.alloc_zeros::<i32>(blocks * 128)?;
    sums_of_four::launch(&dev, LaunchDims::new(blocks as u32, 128), &d_in, &mut d_out)?;
    let out = dev.dtoh(&d_out)?;
    let want: Vec<i32> = input
        .chunks(4)
        .map(|c| c.iter().sum::<i32>() + 128)
        .collect();
    if out != want {
        let i = out.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
        eprintln!("out[{i}] = {}, expected {}", out[i], want[i]);
        std::process::exit(1);
    }
    println!("ok: {} sums on {}", out.len(), dev.name());
    Ok(())
}
