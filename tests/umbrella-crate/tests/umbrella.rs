//! The umbrella-only crate's kernels launch and compute what the CPU does (GPU 0 if present, else the
//! emulator).

use gpu::runtime::half::bf16;
use gpu::{Device, LaunchDims};
use prism_umbrella_crate::{sums_of_four, widen_bf16};

#[test]
fn library_and_local_device_functions_through_the_umbrella() {
    let dev = Device::auto().unwrap();
    let blocks = 3usize;
    let input: Vec<i32> = (0..blocks * 512)
        .map(|i| (i as i32 * 7919) % 1000 - 500)
        .collect();
    let d_in = dev.htod(&input).unwrap();
    let mut d_out = dev.htod(&vec![i32::MIN; blocks * 128]).unwrap();
    sums_of_four::launch(&dev, LaunchDims::new(blocks as u32, 128), &d_in, &mut d_out).unwrap();
    let out = dev.dtoh(&d_out).unwrap();
    let want: Vec<i32> = input
        .chunks(4)
        .map(|c| c.iter().sum::<i32>() + 496)
        .collect();
    assert_eq!(out, want);
}

#[test]
fn bf16_parameters_through_the_umbrella() {
    let dev = Device::auto().unwrap();
    let n = 100usize; // two blocks of 64, the last partly idle
    let x: Vec<bf16> = (0..n)
        .map(|i| bf16::from_f32(((i * 37) % 101) as f32 / 8.0 - 6.0))
        .collect();
    let d_x = dev.htod(&x).unwrap();
    let mut d_out = dev.htod(&vec![f32::NAN; 128]).unwrap();
    widen_bf16::launch(&dev, LaunchDims::new(2, 64), &d_x, &mut d_out, n as u32).unwrap();
    let out = dev.dtoh(&d_out).unwrap();
    for i in 0..128 {
        if i < n {
            assert_eq!(out[i], 2.0 * x[i].to_f32(), "element {i}");
        } else {
            assert!(out[i].is_nan(), "element {i} past n was written");
        }
    }
}
