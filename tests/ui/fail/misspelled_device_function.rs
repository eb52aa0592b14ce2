// A misspelled call of a device function defined earlier in the crate: the call is reported at the name,
// with the similarly named device function suggested (rustc's "cannot find macro" resolution, see
// docs/RULES.md, UNKNOWN-FN).
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[32]), returns = thread[1])]
fn warp_sum(#[at(thread[1])] v: u32) -> u32 {
    #[at(thread[1])]
    let s: u32 = v + shfl_down(v, 16);
    s
}

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k(n: u32) {
    group(thread[32], || {
        #[at(thread[1])]
        let t: u32 = warp_summ(n);
    });
}

fn main() {}
