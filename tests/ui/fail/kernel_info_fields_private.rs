// The compiler-made `KernelInfo` and `Contract` cannot be changed by safe code: their fields are private
// (read them with the accessors, as pass/kernel_api.rs does; making one is `unsafe`, see
// raw_launch_needs_unsafe.rs).
use prism_runtime::KernelInfo;

fn main() {
    let info: KernelInfo = prism_kernels::vector_add::INFO;
    let _ = info.contract.smem_bytes;
}
