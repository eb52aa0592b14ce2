// The legal twin of `fail/raw_launch_needs_unsafe.rs` and `fail/kernel_called_from_kernel.rs`: a kernel is
// launched through its typed launcher, its description is read through accessors, and code shared between
// kernels lives in a device function.
use prism_macros::{prism_device, prism_kernel};
use prism_runtime::{Device, LaunchDims};

#[prism_device(requires(thread[1]))]
fn write_index(o: *mut u32, i: u32, n: u32) {
    if i < n {
        o[0] = i;
    }
}

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn fill(out: *mut u32, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(out, thread[1], |x| i + x, |o| {
        group(thread[1], || {
            write_index(o, i, n);
        });
    });
}

fn main() {
    let info = &fill::INFO;
    assert_eq!(info.entry(), "fill");
    assert_eq!(info.name(), "fill");
    assert_eq!(info.params().len(), 2);
    assert_eq!(info.contract().threads_multiple_of(), 1);
    assert_eq!(info.contract().smem_bytes(), 0);
    assert!(info.ptx().contains(".entry fill"));
    let dev = Device::emulator();
    let mut out = dev.alloc_zeros::<u32>(40).unwrap();
    fill::launch(&dev, LaunchDims::new(2, 32), &mut out, 40).unwrap();
    assert_eq!(dev.dtoh(&out).unwrap(), (0..40).collect::<Vec<u32>>());
}
