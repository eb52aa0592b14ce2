// The raw, untyped launch is `unsafe`, and so is making a `KernelInfo` or `Contract` by hand: safe code
// launches only what the checker proved, through the kernel's typed `launch` (legal twin: pass/kernel_api.rs).
use prism_runtime::{Contract, Device, KernelArg, KernelInfo, LaunchDims};

fn main() {
    let dev = Device::emulator();
    let info: KernelInfo = prism_kernels::vector_add::INFO;
    let mut c = dev.alloc_zeros::<f32>(4).unwrap();
    // Hand-written PTX, or a weaker contract: the constructors are `unsafe`.
    let weaker = Contract::new_unchecked(1, None, 1, None, 0);
    let _forged = KernelInfo::new_unchecked("k", "k", ".entry k", &[], weaker);
    // The raw launch is `unsafe`.
    let _ = dev.launch(&info, LaunchDims::new(1, 32), &mut [c.as_arg_mut(), KernelArg::U32(4)]);
}
