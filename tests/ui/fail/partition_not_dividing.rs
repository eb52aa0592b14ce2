// thread[3] does not divide thread[32].
use prism_macros::prism_device;

#[prism_device(requires(thread[32]))]
pub fn f(#[at(thread[32])] c: *mut f32) {
    partition(c, thread[3], |k| k, |c3| {});
}

fn main() {}
