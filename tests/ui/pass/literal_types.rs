// What a port of llm.c-style code writes (user round I): an online maximum starting at
// `f32::NEG_INFINITY`, an indicator `if j == t { 1.0 } else { 0.0 }`, a pad with the literal first.
use prism_macros::{prism_device, prism_kernel};

#[prism_device(requires(thread[1]), returns = thread[1])]
fn indicator(j: u32, t: u32) -> f32 {
    if j == t {
        1.0
    } else {
        0.0
    }
}

#[prism_kernel(requires(grid[1], block[1], thread[1]), threads = 64)]
fn softmax_grad(x: *const f32, y: *mut f32, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(y, thread[1], |j| i + j, |yi| {
        group(thread[1], || {
            let mut m: f32 = f32::NEG_INFINITY;
            for k in 0..4u32 {
                m = m.max(if k < n { x[k] } else { f32::NEG_INFINITY });
            }
            let left: f32 = if i == 0 || i > n { 0.0 } else { x[i - 1] };
            let ind = if i == 3 { 1.0 } else { 0.0 };
            yi[0] = m + left + ind + indicator(i, 5) + u32::MAX as f32 * 0.0;
        });
    });
}

fn main() {
    assert!(softmax_grad::PTX.contains(".entry"));
}
