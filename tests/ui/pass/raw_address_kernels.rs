// Legal twins of fail/raw_address_launch_is_unsafe.rs: a kernel that hands inline PTX a raw address is
// launched in `unsafe` code that vouches for the address, or takes the memory as a typed buffer and computes
// the address itself (`prism_kernels::global_address_u64`), which keeps its launcher safe.
use prism_macros::{prism_device, prism_kernel};
use prism_runtime::{Device, LaunchDims};

#[prism_device(requires(thread[1]))]
fn store_at(addr: u64, v: u32) {
    unsafe {
        asm!("st.global.u32 [{a}], {v};", a = in(u64) addr, v = in(u32) v);
    }
}

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn poke_raw(addr: u64, v: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    group(thread[1], || {
        if i == 0 {
            store_at(addr, v);
        }
    });
}

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn poke(out: *mut u64, v: u32) {
    let addr: u64 = prism_kernels::global_address_u64(out);
    #[at(thread[1])]
    let i: u32 = id();
    group(thread[1], || {
        if i == 0 {
            store_at(addr, v);
        }
    });
}

fn main() {
    let dev = Device::emulator();
    let mut out = dev.alloc_zeros::<u64>(1).unwrap();
    poke::launch(&dev, LaunchDims::new(1, 32), &mut out, 7).unwrap();
    assert_eq!(dev.dtoh(&out).unwrap(), vec![7]);
    let buf = dev.alloc_zeros::<u64>(1).unwrap();
    // SAFETY: the address of a live one-word buffer of this device, which the kernel's only store targets.
    unsafe { poke_raw::launch(&dev, LaunchDims::new(1, 32), buf.raw_ptr(), 9) }.unwrap();
    assert_eq!(dev.dtoh(&buf).unwrap(), vec![9]);
}
