//! Runtime API tests. They run on whatever `Device::auto()` picks: the emulator on machines without a GPU
//! (CI), the GPU otherwise; assertions that depend on the backend say so.

use prism_runtime::emu::{EmuError, FaultKind};
use prism_runtime::{
    registered_kernels, validate_launch, Backend, Contract, Device, DeviceBuffer, DeviceCopy,
    ElemType, KernelArg, KernelInfo, LaunchDims, ParamSpec, ParamType, RegisteredKernel,
    RuntimeError,
};

/// `c[i] = a[i] + b[i]` for `i < n`, one element per thread, 1-D grid.
const VADD_PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.visible .entry prism_test_vadd(
    .param .u64 a,
    .param .u64 b,
    .param .u64 c,
    .param .u32 n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<10>;

    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    ld.param.u64 %rd3, [c];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.u32 %rd7, %r5, 4;
    add.s64 %rd8, %rd4, %rd7;
    ld.global.f32 %f1, [%rd8];
    add.s64 %rd8, %rd5, %rd7;
    ld.global.f32 %f2, [%rd8];
    add.f32 %f3, %f1, %f2;
    add.s64 %rd9, %rd6, %rd7;
    st.global.f32 [%rd9], %f3;
DONE:
    ret;
}
"#;

static VADD_PARAMS: [ParamSpec; 4] = [
    ParamSpec {
        name: "a",
        ty: ParamType::Ptr {
            elem: ElemType::F32,
            mutable: false,
        },
    },
    ParamSpec {
        name: "b",
        ty: ParamType::Ptr {
            elem: ElemType::F32,
            mutable: false,
        },
    },
    ParamSpec {
        name: "c",
        ty: ParamType::Ptr {
            elem: ElemType::F32,
            mutable: true,
        },
    },
    ParamSpec {
        name: "n",
        ty: ParamType::U32,
    },
];

/// A kernel description in the field-by-field form (`KernelInfo`'s fields are private and its constructor is
/// `unsafe`, so safe code cannot forge one): the tests build variants of the hand-written kernels with it.
#[derive(Clone, Copy)]
struct Info {
    name: &'static str,
    entry: &'static str,
    ptx: &'static str,
    params: &'static [ParamSpec],
    contract: C,
}

/// [`Contract`]'s values, field by field.
#[derive(Clone, Copy)]
struct C {
    threads_multiple_of: u32,
    threads_exact: Option<u32>,
    blocks_multiple_of: u32,
    blocks_exact: Option<u32>,
    smem_bytes: u32,
}

impl C {
    const fn unconstrained() -> C {
        C {
            threads_multiple_of: 1,
            threads_exact: None,
            blocks_multiple_of: 1,
            blocks_exact: None,
            smem_bytes: 0,
        }
    }
}

impl Info {
    /// SAFETY (of the `unsafe` constructors): every PTX these tests describe is hand-written and checked to
    /// match its parameters; the variants that do not (wrong parameter widths, missing entries, too little
    /// shared memory) are refused by the runtime's checks or fault on the emulator, which is what the tests
    /// check. None of them runs on a GPU with a mismatch: the PTX consistency check runs first.
    const fn k(self) -> KernelInfo {
        let c = self.contract;
        unsafe {
            KernelInfo::new_unchecked(
                self.name,
                self.entry,
                self.ptx,
                self.params,
                Contract::new_unchecked(
                    c.threads_multiple_of,
                    c.threads_exact,
                    c.blocks_multiple_of,
                    c.blocks_exact,
                    c.smem_bytes,
                ),
            )
        }
    }
}

/// The raw launch (`unsafe`, see [`Info::k`] for why these launches uphold its contract).
fn launch(
    d: &Device,
    k: &KernelInfo,
    dims: LaunchDims,
    args: &mut [KernelArg<'_>],
) -> Result<prism_runtime::LaunchReport, RuntimeError> {
    // SAFETY: see `Info::k`.
    unsafe { d.launch(k, dims, args) }
}

const VADD_INFO: Info = Info {
    name: "prism_test_vadd",
    entry: "prism_test_vadd",
    ptx: VADD_PTX,
    params: &VADD_PARAMS,
    contract: C {
        threads_multiple_of: 32,
        threads_exact: None,
        blocks_multiple_of: 1,
        blocks_exact: None,
        smem_bytes: 0,
    },
};

static VADD: KernelInfo = VADD_INFO.k();

prism_runtime::inventory::submit! { RegisteredKernel(&VADD) }

/// Deterministic pseudo-random values (no zeros, no repeated patterns) without a rand dependency.
fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 200.0 - 100.0
        })
        .collect()
}

const SENTINEL: f32 = -12345.5;

fn vadd_with(contract: C) -> KernelInfo {
    Info {
        contract,
        ..VADD_INFO
    }
    .k()
}

fn device() -> Device {
    Device::auto().expect("Device::auto() must not fail")
}

#[test]
fn auto_picks_the_gpu_when_present_and_the_emulator_otherwise() {
    let d = device();
    match Device::gpu(0) {
        Err(RuntimeError::NoGpu(_)) => {
            assert_eq!(d.backend(), Backend::Emulator);
            assert!(
                d.name().contains("emulator"),
                "name {:?} does not say emulator",
                d.name()
            );
        }
        Ok(_) => {
            assert_eq!(d.backend(), Backend::Gpu);
            assert!(
                d.name().contains("GPU 0"),
                "name {:?} does not say GPU 0",
                d.name()
            );
        }
        Err(e) => panic!(
            "Device::gpu(0) failed with something other than NoGpu: {}",
            e
        ),
    }
    let e = Device::emulator();
    assert_eq!(e.backend(), Backend::Emulator);
    assert_eq!(e.name(), "Prism PTX emulator (CPU)");
    assert_ne!(e.id(), d.id());
    assert_eq!(e.clone().id(), e.id());
}

#[test]
fn missing_gpu_is_a_clean_no_gpu_error() {
    // Ordinal 4096 exists nowhere: a clean NoGpu on every machine, GPU or not, and no panic.
    match Device::gpu(4096) {
        Err(RuntimeError::NoGpu(msg)) => {
            assert!(!msg.is_empty());
            let shown = RuntimeError::NoGpu(msg).to_string();
            assert!(shown.starts_with("no GPU available"), "{}", shown);
        }
        Err(e) => panic!("expected NoGpu, got {}", e),
        Ok(d) => panic!("GPU 4096 exists? {}", d.name()),
    }
    // On a machine without libcuda, GPU 0 is a NoGpu error, not a panic.
    if Device::auto().unwrap().backend() == Backend::Emulator {
        assert!(matches!(Device::gpu(0), Err(RuntimeError::NoGpu(_))));
    }
}

fn roundtrip<T: DeviceCopy + PartialEq + std::fmt::Debug>(d: &Device, data: Vec<T>) {
    let buf = d.htod(&data).unwrap();
    assert_eq!(buf.len(), data.len());
    assert_eq!(buf.is_empty(), data.is_empty());
    assert_eq!(buf.device().id(), d.id());
    assert_eq!(d.dtoh(&buf).unwrap(), data, "round trip of {}", T::ELEM);
    let z = d.alloc_zeros::<T>(data.len() + 3).unwrap();
    assert_eq!(d.dtoh(&z).unwrap(), vec![T::default(); data.len() + 3]);
    // Overwrite a prefix in place.
    let mut z = z;
    d.copy_htod(&data, &mut z).unwrap();
    let back = d.dtoh(&z).unwrap();
    assert_eq!(&back[..data.len()], &data[..]);
    assert_eq!(&back[data.len()..], &vec![T::default(); 3][..]);
    let too_long: Vec<T> = data
        .iter()
        .copied()
        .chain(std::iter::repeat_n(T::default(), 4))
        .collect();
    assert!(matches!(
        d.copy_htod(&too_long, &mut z),
        Err(RuntimeError::BadArgs(_))
    ));
}

#[test]
fn htod_dtoh_round_trip_for_every_element_type() {
    let d = device();
    let f = random_f32(37, 1);
    roundtrip(
        &d,
        (0..37u32).map(|i| (i * 7 + 3) as u8).collect::<Vec<u8>>(),
    );
    roundtrip(
        &d,
        (0..37u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect::<Vec<u32>>(),
    );
    roundtrip(
        &d,
        (0..37i32)
            .map(|i| i * -1_000_003 + 17)
            .collect::<Vec<i32>>(),
    );
    roundtrip(
        &d,
        (0..37u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect::<Vec<u64>>(),
    );
    roundtrip(
        &d,
        (0..37i64)
            .map(|i| i * -0x1234_5678_9ABC + 5)
            .collect::<Vec<i64>>(),
    );
    roundtrip(&d, f.clone());
    roundtrip(
        &d,
        f.iter()
            .map(|&x| x as f64 * 1.000_000_1)
            .collect::<Vec<f64>>(),
    );
    roundtrip(
        &d,
        f.iter()
            .map(|&x| half::f16::from_f32(x))
            .collect::<Vec<half::f16>>(),
    );
    roundtrip(
        &d,
        f.iter()
            .map(|&x| half::bf16::from_f32(x))
            .collect::<Vec<half::bf16>>(),
    );
    roundtrip(&d, Vec::<f32>::new());
    assert_eq!(<half::bf16 as DeviceCopy>::ELEM, ElemType::BF16);
    assert_eq!(ElemType::F16.size(), 2);
}

#[test]
fn dtoh_of_another_devices_buffer_is_wrong_device() {
    let d1 = Device::emulator();
    let d2 = Device::emulator();
    let b = d1.htod(&[1u32, 2, 3]).unwrap();
    assert!(matches!(d2.dtoh(&b), Err(RuntimeError::WrongDevice)));
    // A clone is the same device.
    assert_eq!(d1.clone().dtoh(&b).unwrap(), vec![1, 2, 3]);
}

fn run_vadd(d: &Device, n: usize, block: u32) {
    let a = random_f32(n, 11 + n as u64);
    let b = random_f32(n, 23 + n as u64);
    let (da, db) = (d.htod(&a).unwrap(), d.htod(&b).unwrap());
    // One spare element past n, pre-filled like the rest, must stay untouched.
    let mut dc = d.htod(&vec![SENTINEL; n + 1]).unwrap();
    let grid = (n as u32).div_ceil(block).max(1);
    let report = launch(
        d,
        &VADD,
        LaunchDims::new(grid, block),
        &mut [
            da.as_arg(),
            db.as_arg(),
            dc.as_arg_mut(),
            KernelArg::U32(n as u32),
        ],
    )
    .unwrap();
    assert_eq!(report.backend, d.backend());
    let c = d.dtoh(&dc).unwrap();
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "c[{}] (n = {}, block = {})", i, n, block);
    }
    assert_eq!(c[n], SENTINEL, "element past n was written");
    if d.backend() == Backend::Emulator {
        let emu = report.emu.expect("emulator launches report counters");
        assert_eq!(emu.counters.blocks, grid as u64);
        assert!(emu.counters.thread_instructions >= n as u64 * 10);
        assert!(emu.counters.global_accesses > 0);
    } else {
        assert!(report.emu.is_none());
    }
}

#[test]
fn vector_add_matches_the_cpu_reference() {
    let d = device();
    run_vadd(&d, 1000, 128);
    run_vadd(&d, 1000, 96); // block a multiple of 32 but not a power of two
    run_vadd(&d, 31, 32);
    // Launching the same kernel again reuses the cached module.
    run_vadd(&d, 257, 64);
}

#[test]
fn vector_add_on_a_fresh_emulator_with_random_schedule() {
    use prism_runtime::emu::{EmuConfig, Schedule};
    let d = Device::emulator_with(EmuConfig {
        schedule: Schedule::Random { seed: 7 },
        ..EmuConfig::default()
    });
    run_vadd(&d, 300, 64);
}

/// Buffers for the contract tests; `c` holds sentinels so a launch that should not happen is detected.
struct Bufs {
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    c: DeviceBuffer<f32>,
}

fn bufs(d: &Device) -> Bufs {
    Bufs {
        a: d.htod(&random_f32(64, 3)).unwrap(),
        b: d.htod(&random_f32(64, 4)).unwrap(),
        c: d.htod(&[SENTINEL; 64]).unwrap(),
    }
}

fn assert_not_launched(d: &Device, c: &DeviceBuffer<f32>) {
    assert!(
        d.dtoh(c).unwrap().iter().all(|&x| x == SENTINEL),
        "kernel ran although the launch was refused"
    );
}

fn expect_bad_launch(d: &Device, k: &KernelInfo, dims: LaunchDims, needles: &[&str]) {
    let mut x = bufs(d);
    let r = launch(
        d,
        k,
        dims,
        &mut [
            x.a.as_arg(),
            x.b.as_arg(),
            x.c.as_arg_mut(),
            KernelArg::U32(64),
        ],
    );
    match r {
        Err(RuntimeError::BadLaunch(m)) => {
            for n in needles {
                assert!(m.contains(n), "message {:?} lacks {:?}", m, n);
            }
            assert!(
                m.contains(k.name()),
                "message {:?} does not name the kernel",
                m
            );
        }
        Err(e) => panic!("expected BadLaunch for {:?}, got {}", dims, e),
        Ok(_) => panic!("launch {:?} accepted", dims),
    }
    assert!(validate_launch(k, dims).is_err());
    assert_not_launched(d, &x.c);
}

#[test]
fn contract_violations_are_refused_before_launching() {
    let d = device();
    let c = VADD_INFO.contract;
    expect_bad_launch(
        &d,
        &VADD,
        LaunchDims::new(2, 48),
        &["block of 48 threads is not a multiple of 32", "thread[32]"],
    );
    expect_bad_launch(&d, &VADD, LaunchDims::new(2, 0), &["block of 0 threads"]);
    expect_bad_launch(&d, &VADD, LaunchDims::new(1, 2048), &["2048", "1024"]);
    expect_bad_launch(&d, &VADD, LaunchDims::new(0, 64), &["grid of 0 blocks"]);
    expect_bad_launch(
        &d,
        &VADD,
        LaunchDims::new(u32::MAX, 64),
        &["4294967295", "2147483647"],
    );
    let exact = vadd_with(C {
        threads_exact: Some(128),
        ..c
    });
    expect_bad_launch(
        &d,
        &exact,
        LaunchDims::new(1, 64),
        &[
            "block of 64 threads",
            "exactly 128 threads",
            "threads = 128",
        ],
    );
    let blocks = vadd_with(C {
        blocks_multiple_of: 4,
        ..c
    });
    expect_bad_launch(
        &d,
        &blocks,
        LaunchDims::new(6, 32),
        &["grid of 6 blocks is not a multiple of 4", "block[4]"],
    );
    let one_block = vadd_with(C {
        blocks_exact: Some(1),
        ..c
    });
    expect_bad_launch(
        &d,
        &one_block,
        LaunchDims::new(2, 32),
        &["grid of 2 blocks", "exactly 1 block", "blocks = 1"],
    );
    let big = vadd_with(C {
        smem_bytes: 232_449,
        ..c
    });
    expect_bad_launch(
        &d,
        &big,
        LaunchDims::new(2, 32),
        &["smem = 232449", "232448"],
    );
    // The boundaries themselves are accepted.
    assert!(validate_launch(&exact, LaunchDims::new(1, 128)).is_ok());
    assert!(validate_launch(&blocks, LaunchDims::new(8, 32)).is_ok());
    assert!(validate_launch(&VADD, LaunchDims::new(1, 1024)).is_ok());
    assert!(validate_launch(&VADD, LaunchDims::new(i32::MAX as u32, 32)).is_ok());
    assert!(validate_launch(
        &vadd_with(C {
            smem_bytes: 232_448,
            ..c
        }),
        LaunchDims::new(1, 32)
    )
    .is_ok());
    // 0 and 1 mean "no constraint" and never divide by zero.
    let free = vadd_with(C {
        threads_multiple_of: 0,
        blocks_multiple_of: 0,
        ..c
    });
    assert!(validate_launch(&free, LaunchDims::new(3, 7)).is_ok());
}

fn expect_bad_args(d: &Device, args: &mut [KernelArg<'_>], needles: &[&str]) {
    match launch(d, &VADD, LaunchDims::new(2, 32), args) {
        Err(RuntimeError::BadArgs(m)) => {
            for n in needles {
                assert!(m.contains(n), "message {:?} lacks {:?}", m, n);
            }
        }
        Err(e) => panic!("expected BadArgs, got {}", e),
        Ok(_) => panic!("bad arguments accepted"),
    }
}

#[test]
fn argument_mismatches_are_refused_before_launching() {
    let d = device();
    let mut x = bufs(&d);
    // Wrong count.
    expect_bad_args(
        &d,
        &mut [x.a.as_arg(), x.b.as_arg(), x.c.as_arg_mut()],
        &["takes 4 arguments (a, b, c, n), got 3 arguments"],
    );
    // Wrong element type.
    let ints = d.htod(&[0i32; 64]).unwrap();
    expect_bad_args(
        &d,
        &mut [
            ints.as_arg(),
            x.b.as_arg(),
            x.c.as_arg_mut(),
            KernelArg::U32(64),
        ],
        &["`a: *const f32`", "buffer of i32"],
    );
    // Const buffer to a *mut parameter.
    expect_bad_args(
        &d,
        &mut [x.a.as_arg(), x.b.as_arg(), x.c.as_arg(), KernelArg::U32(64)],
        &["`c: *mut f32`", "const buffer", "as_arg_mut"],
    );
    // Wrong scalar type, scalar for a pointer, buffer for a scalar.
    expect_bad_args(
        &d,
        &mut [
            x.a.as_arg(),
            x.b.as_arg(),
            x.c.as_arg_mut(),
            KernelArg::I32(64),
        ],
        &["`n: u32`", "i32 scalar"],
    );
    expect_bad_args(
        &d,
        &mut [
            KernelArg::U64(0),
            x.b.as_arg(),
            x.c.as_arg_mut(),
            KernelArg::U32(64),
        ],
        &["`a: *const f32`", "u64 scalar"],
    );
    let n_buf = d.htod(&[64u32]).unwrap();
    expect_bad_args(
        &d,
        &mut [x.a.as_arg(), x.b.as_arg(), x.c.as_arg_mut(), n_buf.as_arg()],
        &["`n: u32`", "const buffer of u32"],
    );
    // A buffer of another device.
    let other = Device::emulator();
    let foreign = other.htod(&[1.0f32; 64]).unwrap();
    expect_bad_args(
        &d,
        &mut [
            x.a.as_arg(),
            foreign.as_arg(),
            x.c.as_arg_mut(),
            KernelArg::U32(64),
        ],
        &["`b: *const f32`", &format!("device #{}", other.id())],
    );
    // A handle whose public fields were edited to lie about it.
    let lying = match x.a.as_arg() {
        KernelArg::Buf { buf, .. } => KernelArg::Buf {
            elem: ElemType::F32,
            mutable: true,
            buf,
        },
        _ => unreachable!(),
    };
    expect_bad_args(
        &d,
        &mut [x.b.as_arg(), x.b.as_arg(), lying, KernelArg::U32(64)],
        &["`c: *mut f32`", "handle is a const"],
    );
    assert_not_launched(&d, &x.c);
    // A mutable borrow is fine for a const parameter.
    let mut a2 = d.htod(&random_f32(64, 9)).unwrap();
    launch(
        &d,
        &VADD,
        LaunchDims::new(2, 32),
        &mut [
            a2.as_arg_mut(),
            x.b.as_arg(),
            x.c.as_arg_mut(),
            KernelArg::U32(64),
        ],
    )
    .unwrap();
    assert!(d.dtoh(&x.c).unwrap().iter().all(|&v| v != SENTINEL));
}

#[test]
fn dropping_a_buffer_frees_emulator_memory() {
    let d = Device::emulator();
    let emu = d
        .emulator_handle()
        .expect("emulator device has an emulator");
    let buf = d.htod(&[7u32; 100]).unwrap();
    let addr = buf.raw_ptr();
    assert_eq!(emu.lock().unwrap().read(addr, 400).unwrap().len(), 400);
    drop(buf);
    assert!(
        emu.lock().unwrap().read(addr, 4).is_err(),
        "memory at 0x{:x} still mapped after drop",
        addr
    );
    // Same for zero-filled allocations, and for buffers that outlive their Device handle.
    let z = d.alloc_zeros::<f64>(10).unwrap();
    let zaddr = z.raw_ptr();
    drop(d);
    assert!(emu.lock().unwrap().read(zaddr, 80).is_ok());
    drop(z);
    assert!(emu.lock().unwrap().read(zaddr, 8).is_err());
}

#[test]
fn emulator_faults_and_bad_ptx_come_back_as_errors() {
    let d = Device::emulator();
    // n larger than the buffers: the kernel reads out of bounds.
    let a = d.htod(&[1.0f32; 32]).unwrap();
    let b = d.htod(&[2.0f32; 32]).unwrap();
    let mut c = d.alloc_zeros::<f32>(32).unwrap();
    let r = launch(
        &d,
        &VADD,
        LaunchDims::new(2, 32),
        &mut [a.as_arg(), b.as_arg(), c.as_arg_mut(), KernelArg::U32(64)],
    );
    match r {
        Err(RuntimeError::Emulator(EmuError::Faulted { faults, .. })) => {
            let f = faults
                .iter()
                .find(|f| f.kind == FaultKind::OutOfBounds)
                .unwrap_or_else(|| panic!("{faults:?}"));
            // The fault names the kernel, and its address as an element of a buffer argument.
            eprintln!("{f}");
            assert!(
                f.message.starts_with("kernel `")
                    && f.message.contains("past its 32 elements, parameter #"),
                "{f}"
            );
        }
        other => panic!(
            "expected an out-of-bounds fault, got {:?}",
            other.map(|r| r.backend)
        ),
    }
    let broken = Info {
        ptx: ".version 8.0\n.target sm_80\n.visible .entry prism_test_vadd( garbage",
        ..VADD_INFO
    }
    .k();
    let r = launch(
        &d,
        &broken,
        LaunchDims::new(1, 32),
        &mut [a.as_arg(), b.as_arg(), c.as_arg_mut(), KernelArg::U32(1)],
    );
    assert!(
        matches!(r, Err(RuntimeError::Ptx(_))),
        "{:?}",
        r.map(|r| r.backend)
    );
}

#[test]
fn kernel_info_that_disagrees_with_its_ptx_is_refused() {
    let d = device();
    let a = d.htod(&[1.0f32; 32]).unwrap();
    let b = d.htod(&[2.0f32; 32]).unwrap();
    let mut c = d.htod(&[SENTINEL; 32]).unwrap();
    // `n` declared as u64: 8 bytes against the PTX's 4-byte `.u32 n`.
    static WIDE_N: [ParamSpec; 4] = [
        VADD_PARAMS[0],
        VADD_PARAMS[1],
        VADD_PARAMS[2],
        ParamSpec {
            name: "n",
            ty: ParamType::U64,
        },
    ];
    let wide = Info {
        params: &WIDE_N,
        ..VADD_INFO
    }
    .k();
    let r = launch(
        &d,
        &wide,
        LaunchDims::new(1, 32),
        &mut [a.as_arg(), b.as_arg(), c.as_arg_mut(), KernelArg::U64(32)],
    );
    match r {
        Err(RuntimeError::Ptx(m)) => {
            assert!(m.contains("`n: u64`") && m.contains("has 4"), "{}", m)
        }
        other => panic!("expected a Ptx error, got {:?}", other.map(|r| r.backend)),
    }
    // Three parameters declared, four in the PTX.
    let short = Info {
        params: &VADD_PARAMS[..3],
        ..VADD_INFO
    }
    .k();
    let r = launch(
        &d,
        &short,
        LaunchDims::new(1, 32),
        &mut [a.as_arg(), b.as_arg(), c.as_arg_mut()],
    );
    assert!(
        matches!(&r, Err(RuntimeError::Ptx(m)) if m.contains("3 parameters declared, the PTX has 4")),
        "{:?}",
        r.err()
    );
    // An entry the PTX does not have.
    let missing = Info {
        entry: "no_such_entry",
        ..VADD_INFO
    }
    .k();
    let r = launch(
        &d,
        &missing,
        LaunchDims::new(1, 32),
        &mut [a.as_arg(), b.as_arg(), c.as_arg_mut(), KernelArg::U32(32)],
    );
    assert!(matches!(&r, Err(RuntimeError::Ptx(_))), "{:?}", r.err());
    assert_not_launched(&d, &c);
}

/// Stores its two bool parameters (one `.u32`, as Prism emits them, one `.u8`) as u32 0/1.
const BOOLS_PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.visible .entry prism_test_bools(
    .param .u64 out,
    .param .u32 flag,
    .param .u8 flag8
)
{
    .reg .b16 %h<2>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;

    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    ld.param.u32 %r1, [flag];
    ld.param.u8 %h1, [flag8];
    cvt.u32.u16 %r2, %h1;
    st.global.u32 [%rd2], %r1;
    st.global.u32 [%rd2+4], %r2;
    ret;
}
"#;

static BOOLS_PARAMS: [ParamSpec; 3] = [
    ParamSpec {
        name: "out",
        ty: ParamType::Ptr {
            elem: ElemType::U32,
            mutable: true,
        },
    },
    ParamSpec {
        name: "flag",
        ty: ParamType::Bool,
    },
    ParamSpec {
        name: "flag8",
        ty: ParamType::Bool,
    },
];

#[test]
fn bool_parameters_arrive_as_zero_or_one() {
    let k = Info {
        name: "prism_test_bools",
        entry: "prism_test_bools",
        ptx: BOOLS_PTX,
        params: &BOOLS_PARAMS,
        contract: C::unconstrained(),
    }
    .k();
    let d = device();
    for (x, y) in [(true, false), (false, true), (true, true)] {
        let mut out = d.htod(&[7u32, 7]).unwrap();
        launch(
            &d,
            &k,
            LaunchDims::new(1, 1),
            &mut [out.as_arg_mut(), x.into(), KernelArg::Bool(y)],
        )
        .unwrap();
        assert_eq!(d.dtoh(&out).unwrap(), vec![x as u32, y as u32]);
    }
}

/// Uses the top of 64 KiB of dynamic shared memory (over the 48 KiB default, so the GPU path must opt in):
/// thread `t` stores `t` there, then reads what thread `255 - t` stored.
const BIG_SMEM_PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.extern .shared .align 16 .b8 dsmem[];

.visible .entry prism_test_big_smem(
    .param .u64 out
)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;

    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, dsmem;
    shl.b32 %r3, %r1, 2;
    add.s32 %r4, %r2, %r3;
    st.shared.u32 [%r4+64512], %r1;
    bar.sync 0;
    mov.u32 %r5, 255;
    sub.s32 %r5, %r5, %r1;
    shl.b32 %r6, %r5, 2;
    add.s32 %r6, %r2, %r6;
    ld.shared.u32 %r7, [%r6+64512];
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd3, %rd2, %rd3;
    st.global.u32 [%rd3], %r7;
    ret;
}
"#;

static BIG_SMEM_PARAMS: [ParamSpec; 1] = [ParamSpec {
    name: "out",
    ty: ParamType::Ptr {
        elem: ElemType::U32,
        mutable: true,
    },
}];

#[test]
fn dynamic_shared_memory_over_48_kib() {
    let info = Info {
        name: "prism_test_big_smem",
        entry: "prism_test_big_smem",
        ptx: BIG_SMEM_PTX,
        params: &BIG_SMEM_PARAMS,
        contract: C {
            threads_exact: Some(256),
            smem_bytes: 64 * 1024,
            ..C::unconstrained()
        },
    };
    let k = info.k();
    let d = device();
    let mut out = d.htod(&[u32::MAX; 256]).unwrap();
    launch(&d, &k, LaunchDims::new(1, 256), &mut [out.as_arg_mut()]).unwrap();
    assert_eq!(d.dtoh(&out).unwrap(), (0..256u32).rev().collect::<Vec<_>>());
    // The same kernel with less dynamic shared memory than it touches faults on the emulator.
    let small = Info {
        contract: C {
            smem_bytes: 1024,
            ..info.contract
        },
        ..info
    }
    .k();
    let e = Device::emulator();
    let mut out = e.htod(&[0u32; 256]).unwrap();
    let r = launch(&e, &small, LaunchDims::new(1, 256), &mut [out.as_arg_mut()]);
    assert!(
        matches!(r, Err(RuntimeError::Emulator(EmuError::Faulted { .. }))),
        "{:?}",
        r.map(|r| r.backend)
    );
}

#[test]
fn registry_lists_submitted_kernels_sorted_by_entry() {
    let all = registered_kernels();
    assert!(all.iter().any(|k| std::ptr::eq(*k, &VADD)));
    assert!(all.windows(2).all(|w| w[0].entry() <= w[1].entry()));
}

#[test]
fn devices_and_buffers_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Device>();
    check::<DeviceBuffer<f32>>();
    check::<RuntimeError>();
}

/// `max_active_clusters` asks about a grid the kernel's contract allows (its exact block count, or a
/// multiple of its block requirement), so kernels with either are answered, not refused; a block size the
/// contract refuses is `BadLaunch`. The emulator has no multiprocessors (`None`); a GPU counts at least one
/// resident block of this small kernel per SM.
#[test]
fn resident_clusters_are_asked_on_a_grid_the_contract_allows() {
    let d = device();
    let c = VADD_INFO.contract;
    let exact = vadd_with(C {
        blocks_exact: Some(3),
        ..c
    });
    let multiple = vadd_with(C {
        blocks_multiple_of: 4,
        ..c
    });
    for k in [&VADD, &exact, &multiple] {
        let n = d
            .max_active_clusters(k, 64)
            .expect("a block size the contract allows");
        match d.backend() {
            Backend::Emulator => assert_eq!(n, None),
            Backend::Gpu => {
                let sms = d.properties().multiprocessors.unwrap_or(1);
                assert!(
                    n.is_some_and(|n| n >= sms),
                    "{n:?} resident blocks on {sms} SMs"
                );
            }
        }
    }
    match d.max_active_clusters(&VADD, 48) {
        Err(RuntimeError::BadLaunch(m)) => assert!(m.contains("48"), "{m}"),
        other => panic!("block of 48 threads accepted: {other:?}"),
    }
}
