// Type generics: a generic device function called with its type first (`fill_value::<T>`), a generic kernel
// with instances `(type, const)`, a kernel alias under the pre-generics name, and a device-function alias
// (`aliases = [..]`) called like any device function. The typed launchers take the instance's buffer types.
use prism_macros::{prism_device, prism_kernel};
use prism_runtime::{Device, DeviceBuffer, LaunchDims};

#[prism_device(requires(thread[1]), aliases = [u32, f32])]
pub fn fill_value<T: Num32, const N: u32>(o: *mut T, i: u32, n: u32, items: &mut [T; N]) {
    for j in 0..N {
        items[j] = (i + j) as T + 1 as T;
    }
    if i < n {
        o[0] = items[N - 1];
    }
}

#[prism_kernel(
    requires(grid[1], block[1], thread[1]),
    instances = [(u32, 2), (f32, 2), (f32, 4)],
    aliases = [u32, f32]
)]
pub fn fill<T: Num32, const N: u32>(out: *mut T, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    #[at(thread[1])]
    let mut items = [0 as T; N];
    partition(out, thread[1], |x| i + x, |o| {
        group(thread[1], || {
            fill_value::<T, N>(o, i, n, &mut items);
        });
    });
}

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn fill_alias(out: *mut f32, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    #[at(thread[1])]
    let mut items = [0.0f32; 3];
    partition(out, thread[1], |x| i + x, |o| {
        group(thread[1], || {
            fill_value_f32::<3>(o, i, n, &mut items);
        });
    });
}

fn main() {
    assert_eq!(fill::<f32, 4>::INFO.entry(), "fill_f32_4");
    assert_eq!(fill_u32::<2>::INFO.entry(), "fill_u32_2");
    assert_eq!(fill::<u32, 2>::INFO.name(), "fill<u32, 2>");
    let dev = Device::emulator();
    let mut out: DeviceBuffer<f32> = dev.alloc_zeros(40).unwrap();
    fill::<f32, 4>::launch(&dev, LaunchDims::new(1, 32), &mut out, 40).unwrap();
    assert_eq!(dev.dtoh(&out).unwrap()[5], 9.0);
    let mut out: DeviceBuffer<u32> = dev.alloc_zeros(40).unwrap();
    fill_u32::<2>::launch(&dev, LaunchDims::new(1, 32), &mut out, 40).unwrap();
    assert_eq!(dev.dtoh(&out).unwrap()[5], 7);
    let mut out: DeviceBuffer<f32> = dev.alloc_zeros(40).unwrap();
    fill_alias::launch(&dev, LaunchDims::new(1, 32), &mut out, 40).unwrap();
    assert_eq!(dev.dtoh(&out).unwrap()[5], 8.0);
}
