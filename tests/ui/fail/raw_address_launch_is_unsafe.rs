// A kernel whose `u64` parameter reaches `unsafe` inline PTX (here as the address of a store) gets an
// `unsafe` launcher: no launch-time check can tell whether the value is the address of live device memory.
// (Legal twins in pass/raw_address_kernels.rs: take a typed buffer instead, or launch in `unsafe`.)
use prism_macros::{prism_device, prism_kernel};
use prism_runtime::{Device, LaunchDims};

#[prism_device(requires(thread[1]))]
fn store_at(addr: u64, v: u32) {
    unsafe {
        asm!("st.global.u32 [{a}], {v};", a = in(u64) addr, v = in(u32) v);
    }
}

#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn poke(addr: u64, v: u32) {
    let target: u64 = addr + 4u64;
    group(thread[1], || {
        store_at(target, v);
    });
}

fn main() {
    let dev = Device::emulator();
    let _ = poke::launch(&dev, LaunchDims::new(1, 1), 0xdead_beef, 7);
}
