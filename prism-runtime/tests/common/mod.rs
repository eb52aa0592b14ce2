//! Helpers the nvcc-fixture tests share: a fixture module, a seeded generator, buffers in and out.
#![allow(dead_code)]

use prism_runtime::emu::*;

/// The PTX fixture `tests/fixtures/<name>`, parsed.
pub fn fixture_module(name: &str) -> Module {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Module::parse(&src).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// splitmix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `lo..hi`.
    pub fn range(&mut self, lo: i32, hi: i32) -> i32 {
        lo + (self.next() % (hi - lo) as u64) as i32
    }

    /// `n` values in `lo..hi`.
    pub fn ints(&mut self, n: usize, lo: i32, hi: i32) -> Vec<i32> {
        (0..n).map(|_| self.range(lo, hi)).collect()
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Little-endian element types moved to and from the emulator.
pub trait Pod: Copy {
    const N: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(b: &[u8]) -> Self;
}

macro_rules! pod {
    ($($t:ty),*) => {$(
        impl Pod for $t {
            const N: usize = std::mem::size_of::<$t>();
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("size"))
            }
        }
    )*};
}
pod!(u8, u16, i32, u32, i64, u64, f32, f64);

/// A new allocation holding `bytes`.
pub fn upload(e: &mut Emulator, bytes: &[u8]) -> u64 {
    let a = e.alloc(bytes.len().max(1));
    e.write(a, bytes).expect("write");
    a
}

/// The little-endian bytes of `v` (`f` is the element's `to_le_bytes`).
pub fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// `n` elements of `N` bytes at `a` (`f` is the element's `from_le_bytes`).
pub fn read<const N: usize, T>(e: &Emulator, a: u64, n: usize, f: impl Fn([u8; N]) -> T) -> Vec<T> {
    e.read(a, N * n)
        .expect("read")
        .chunks(N)
        .map(|c| f(c.try_into().expect("chunk")))
        .collect()
}

/// The schedules a kernel's result must not depend on: round-robin, lockstep, three random seeds.
pub fn configs() -> Vec<(String, EmuConfig)> {
    let mut v = vec![
        ("round-robin".to_string(), EmuConfig::default()),
        (
            "lockstep".to_string(),
            EmuConfig {
                warp_mode: WarpMode::Lockstep,
                ..EmuConfig::default()
            },
        ),
    ];
    for seed in [1u64, 7, 42] {
        v.push((
            format!("random seed {seed}"),
            EmuConfig {
                schedule: Schedule::Random { seed },
                ..EmuConfig::default()
            },
        ));
    }
    v
}

/// Launches `k` on a one-dimensional grid of `grid` blocks of `block` threads; a failed launch panics
/// with the kernel's name and the error.
pub fn launch_1d(
    e: &mut Emulator,
    m: &Module,
    k: &str,
    (grid, block, smem): (u32, u32, u32),
    p: &[ParamValue],
) -> LaunchReport {
    match e.launch(m, k, [grid, 1, 1], [block, 1, 1], smem, p) {
        Ok(r) => r,
        Err(err) => panic!("{k}: {err:?}"),
    }
}

/// Sentinel bits for outputs: an element the kernel should have written but did not shows as this.
pub const UNSET_BITS: u32 = 0x5A5A_5A5A;

/// One emulator with typed buffers.
pub struct Dev(pub Emulator);

impl Dev {
    pub fn new(cfg: EmuConfig) -> Self {
        Dev(Emulator::new(cfg))
    }
    pub fn up<T: Pod>(&mut self, v: &[T]) -> u64 {
        let mut b = Vec::with_capacity(v.len() * T::N);
        for x in v {
            x.put(&mut b);
        }
        upload(&mut self.0, &b)
    }
    /// `n` 32-bit elements of [`UNSET_BITS`].
    pub fn unset(&mut self, n: usize) -> u64 {
        self.up(&vec![UNSET_BITS; n])
    }
    pub fn down<T: Pod>(&self, a: u64, n: usize) -> Vec<T> {
        self.0
            .read(a, n * T::N)
            .expect("read")
            .chunks(T::N)
            .map(T::get)
            .collect()
    }
    /// [`launch_1d`] on this emulator.
    pub fn run(
        &mut self,
        m: &Module,
        k: &str,
        dims: (u32, u32, u32),
        p: &[ParamValue],
    ) -> LaunchReport {
        launch_1d(&mut self.0, m, k, dims, p)
    }
}

/// Compares `got` with `want` element by element, naming the first difference.
pub fn check<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{what}: element {i}");
    }
}
