// A kernel that Prism rejects still leaves its names (`PTX`, `INFO`, `launch`) behind, so host code that
// uses it adds no errors of its own: only the kernel's own error (a barrier in warp code) is reported.
use prism_macros::prism_kernel;
use prism_runtime::{Device, LaunchDims};

#[prism_kernel(requires(grid[1], block[1], thread[32]))]
pub fn my_bad_kernel(out: *mut f32, n: u32) {
    group(thread[32], || {
        sync_threads();
    });
}

#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64, instances = [2, 4])]
pub fn my_bad_template<const N: u32>(out: *mut f32) {
    let x: u32 = undefined_name;
}

fn main() -> Result<(), prism_runtime::RuntimeError> {
    let dev = Device::auto()?;
    let mut out = dev.alloc_zeros::<f32>(64)?;
    my_bad_kernel::launch(&dev, LaunchDims::new(2, 32), &mut out, 64)?;
    my_bad_template::<4>::launch(&dev, LaunchDims::new(1, 64), &mut out)?;
    let info = &my_bad_kernel::INFO;
    println!("{} {} {}", info.entry(), my_bad_kernel::PTX.len(), my_bad_template::<2>::INFO.name());
    Ok(())
}
