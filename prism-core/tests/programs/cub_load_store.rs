// Paper 000, §6.1.2 and appendix B: CUB-like block/warp/thread load and store, composed by calls. Each thread
// owns N consecutive items (a thread-local array); a warp owns 32 * N, a block blockDim * N.
#[prism_device(requires(thread[1]))]
pub fn thread_load<const N: u32>(input: *const i32, out: &mut [i32; N]) {
    for i in 0..N {
        out[i] = input[i];
    }
}

#[prism_device(requires(thread[32]))]
pub fn warp_load<const N: u32>(input: *const i32, out: &mut [i32; N]) {
    #[at(thread[1])]
    let tid: u32 = id();
    partition(input, thread[1], |x| tid * N + x, |input_thrd| {
        group(thread[1], || {
            thread_load::<N>(input_thrd, out);
        });
    });
}

#[prism_device(requires(block[1], thread[32]))]
pub fn block_load<const N: u32>(input: *const i32, out: &mut [i32; N]) {
    #[at(thread[32])]
    let wid: u32 = id();
    partition(input, thread[32], |x| wid * 32 * N + x, |input_warp| {
        group(thread[32], || {
            warp_load::<N>(input_warp, out);
        });
    });
}

#[prism_device(requires(thread[1]))]
pub fn thread_store<const N: u32>(input: &[i32; N], output: *mut i32) {
    for i in 0..N {
        output[i] = input[i];
    }
}

#[prism_device(requires(thread[32]))]
pub fn warp_store<const N: u32>(input: &[i32; N], output: *mut i32) {
    #[at(thread[1])]
    let tid: u32 = id();
    partition(output, thread[1], |x| tid * N + x, |output_thrd| {
        group(thread[1], || {
            thread_store::<N>(input, output_thrd);
        });
    });
}

#[prism_device(requires(block[1], thread[32]))]
pub fn block_store<const N: u32>(input: &[i32; N], output: *mut i32) {
    #[at(thread[32])]
    let wid: u32 = id();
    partition(output, thread[32], |x| wid * 32 * N + x, |output_warp| {
        group(thread[32], || {
            warp_store::<N>(input, output_warp);
        });
    });
}

// Copies 128 * N items per block through registers.
#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 128, instances = [1, 4])]
pub fn block_copy<const N: u32>(input: *const i32, output: *mut i32) {
    #[at(block[1])]
    let bid: u32 = id();
    partition(input, block[1], |x| bid * 128 * N + x, |in_blk| {
        partition(output, block[1], |x| bid * 128 * N + x, |out_blk| {
            group(block[1], || {
                #[at(thread[1])]
                let mut data = [0i32; N];
                block_load::<N>(in_blk, &mut data);
                block_store::<N>(&data, out_blk);
            });
        });
    });
}
