// c[i] = a[i] + b[i], one element per thread.
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
pub fn vector_add(a: *const f32, b: *const f32, c: *mut f32, n: u32) {
    // id() into a thread[1] variable from grid[1] code: the global thread index.
    #[at(thread[1])]
    let i: u32 = id();
    partition(c, thread[1], |x| i + x, |c_th| {
        group(thread[1], || {
            if i < n {
                c_th[0] = a[i] + b[i];
            }
        });
    });
}
