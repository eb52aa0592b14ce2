// A cluster barrier needs a kernel whose blocks form clusters (`cluster = N`).
use prism_macros::prism_kernel;

#[prism_kernel(requires(grid[1], block[2], thread[1]), threads = 64)]
fn k() {
    sync_cluster();
}

fn main() {}
