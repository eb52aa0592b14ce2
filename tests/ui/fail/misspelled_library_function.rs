// A misspelled call of another crate's device function (`prism_kernels::block_load`), by path: the call is
// reported at the misspelled name (rustc's path resolution of the function's exported callback macro, see
// docs/COMPOSITION.md and docs/RULES.md, UNKNOWN-FN).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64, instances = [4])]
fn k<const N: u32>(input: *const i32) {
    #[at(block[1])]
    let bid: u32 = id();
    partition(input, block[1], |x| bid * 64 * N + x, |in_blk| {
        group(block[1], || {
            #[at(thread[1])]
            let mut items = [0i32; N];
            prism_kernels::block_lod::<N>(in_blk, &mut items);
        });
    });
}

fn main() {}
