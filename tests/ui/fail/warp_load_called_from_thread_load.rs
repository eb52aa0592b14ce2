// Paper §6.1.2: calling warp_load (thread[32]) from thread_load (thread[1]) must be rejected.
use prism_macros::prism_device;

#[prism_device(requires(thread[32]))]
pub fn warp_load<const N: u32>(#[at(thread[32])] input: *const i32, output: &mut [i32; N]) {
    #[at(thread[1])]
    let tid: u32 = id();
    partition(input, thread[1], |i| tid * N + i, |input_thread| {
        group(thread[1], || {
            for i in 0..N {
                output[i] = input_thread[i];
            }
        });
    });
}

#[prism_device(requires(thread[1]))]
pub fn thread_load<const N: u32>(#[at(thread[1])] input: *const i32, output: &mut [i32; N]) {
    warp_load::<N>(input, output);
}

fn main() {}
