// Paper appendix B: block_load → warp_load → thread_load and block_store → warp_store → thread_store, called
// from a user's kernel in another crate with a per-thread register array.
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[1], thread[32]), threads = 64, instances = [2])]
fn copy_twice<const N: u32>(input: *const i32, output: *mut i32) {
    #[at(block[1])]
    let bid: u32 = id();
    partition(input, block[1], |x| bid * 64 * N + x, |in_blk| {
        partition(output, block[1], |x| bid * 64 * N + x, |out_blk| {
            group(block[1], || {
                #[at(thread[1])]
                let mut items = [0i32; N];
                prism_kernels::block_load::<N>(in_blk, &mut items);
                for i in 0..N {
                    items[i] = items[i] * 2;
                }
                prism_kernels::block_store::<N>(&items, out_blk);
            });
        });
    });
}

fn main() {
    let ptx = copy_twice::<2>::PTX;
    assert_eq!(ptx.matches("ld.global").count(), 2, "two items per thread are loaded");
    assert_eq!(ptx.matches("st.global").count(), 2, "and stored");
}
