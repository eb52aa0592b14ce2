// Type generics: `Num` admits f32, for which `^` is not defined, so the generic body is rejected (GENERIC)
// although it would compile for the integer types.
use prism_macros::prism_device;

#[prism_device(requires(thread[1]), returns = thread[1])]
pub fn mix<T: Num>(a: T, b: T) -> T {
    let c: T = a ^ b;
    c
}

fn main() {}
