//! Edge cases of instruction semantics that users' nvcc programs found wrong, each against the value the
//! PTX ISA (or CUDA's documentation) gives: rounding of 16-bit fma and tf32 conversions, sign extension of
//! float → narrow-integer conversions, `mad.hi.sat`, the order of signed zeros in `min`/`max`, operands
//! the emulator does not model faulting instead of computing something else (`oob`, `.b128`
//! immediates), `.b128` register pairs (`ld`/`st`/`mov`/`atom.cas`/`atom.exch`), the carry flag after a
//! subtraction (the adder's carry, not the borrow), `min/max.xorsign.abs.f32`,
//! bulk copies' 16-byte rule, multicast bulk copies, cluster barriers with exited threads, and the canonical
//! NaN of `cvt .relu`.

use prism_runtime::emu::*;

/// Runs `body` (PTX statements; `%rd1` holds `out`, `%rd2` holds `inp`) in one thread and returns `n` u32
/// words of `out`, or the launch's error.
fn run(regs: &str, body: &str, inp: &[u32], n: usize) -> Result<Vec<u32>, EmuError> {
    let ptx = format!(
        ".version 8.5\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 out, .param .u64 inp)\n{{\n\
         .reg .pred %p<4>;\n.reg .b16 %h<8>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<8>;\n.reg .f32 %f<8>;\n{regs}\n\
         ld.param.u64 %rd1, [out];\nld.param.u64 %rd2, [inp];\n{body}\nret;\n}}\n"
    );
    let m = Module::parse(&ptx).unwrap_or_else(|e| panic!("{e}\n{ptx}"));
    let mut e = Emulator::new(EmuConfig::default());
    let out = e.alloc(4 * n);
    let input = e.alloc(4 * inp.len().max(1));
    let bytes: Vec<u8> = inp.iter().flat_map(|v| v.to_le_bytes()).collect();
    e.write(input, &bytes).unwrap();
    e.launch(
        &m,
        "k",
        [1, 1, 1],
        [1, 1, 1],
        0,
        &[ParamValue::Ptr(out), ParamValue::Ptr(input)],
    )?;
    let got = e.read(out, 4 * n).unwrap();
    Ok(got
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect())
}

#[test]
fn sixteen_bit_fma_rounds_once() {
    // 0xb928 · 0xbb98 is exactly a bf16 tie; the tiny negative addend decides it downwards (0x3547).
    // Through an f64 that rounds the addend away, the tie went to even (0x3548).
    let body =
        "ld.global.b16 %h1, [%rd2];\nld.global.b16 %h2, [%rd2+2];\nld.global.b16 %h3, [%rd2+4];\n\
                fma.rn.bf16 %h4, %h1, %h2, %h3;\ncvt.u32.u16 %r1, %h4;\nst.global.u32 [%rd1], %r1;";
    let got = run("", body, &[0xbb98_b928, 0x8994], 1).unwrap();
    assert_eq!(got[0], 0x3547);
}

#[test]
fn tf32_conversions_round_as_named() {
    // 1 + 2^-11 is a tie at tf32's precision; 0x3f803000 a tie with an odd last bit.
    let inputs = [
        0x3f80_1000u32,
        0x3f80_0fff,
        0x3f80_1fff,
        0x3f80_3000,
        0x7f80_0000,
        0x7f7f_ffff,
    ];
    let mut body = String::new();
    for (i, _) in inputs.iter().enumerate() {
        body += &format!("ld.global.f32 %f1, [%rd2+{}];\n", 4 * i);
        for (j, op) in [
            "cvt.rn.tf32.f32",
            "cvt.rz.tf32.f32",
            "cvt.rna.tf32.f32",
            "cvt.rna.satfinite.tf32.f32",
        ]
        .iter()
        .enumerate()
        {
            body += &format!(
                "{op} %r1, %f1;\nst.global.u32 [%rd1+{}], %r1;\n",
                4 * (4 * i + j)
            );
        }
    }
    let got = run("", &body, &inputs, 4 * inputs.len()).unwrap();
    let want = [
        [0x3f80_0000, 0x3f80_0000, 0x3f80_2000, 0x3f80_2000],
        [0x3f80_0000, 0x3f80_0000, 0x3f80_0000, 0x3f80_0000],
        [0x3f80_2000, 0x3f80_0000, 0x3f80_2000, 0x3f80_2000],
        [0x3f80_4000, 0x3f80_2000, 0x3f80_4000, 0x3f80_4000],
        // +inf: kept, except `.satfinite` (the largest finite tf32).
        [0x7f80_0000, 0x7f80_0000, 0x7f80_0000, 0x7f7f_e000],
        // FLT_MAX rounds up to inf to nearest, and saturates.
        [0x7f80_0000, 0x7f7f_e000, 0x7f80_0000, 0x7f7f_e000],
    ];
    for (i, w) in want.iter().enumerate() {
        assert_eq!(&got[4 * i..4 * i + 4], w, "input {:#x}", inputs[i]);
    }
}

#[test]
fn float_to_narrow_signed_integers_sign_extend() {
    let body = "ld.global.f32 %f1, [%rd2];\ncvt.rni.sat.s8.f32 %r1, %f1;\nst.global.u32 [%rd1], %r1;\n\
                cvt.rni.s16.f32 %r2, %f1;\nst.global.u32 [%rd1+4], %r2;\n\
                ld.global.f32 %f2, [%rd2+4];\ncvt.rni.sat.s8.f32 %r3, %f2;\nst.global.u32 [%rd1+8], %r3;";
    let got = run("", body, &[(-2.0f32).to_bits(), (-300.0f32).to_bits()], 3).unwrap();
    assert_eq!(got, [-2i32 as u32, -2i32 as u32, -128i32 as u32]);
}

#[test]
fn double_literals_keep_their_bits_in_64_bit_moves() {
    // nvcc (and Prism) write f64 constants as `mov.b64 %fd, 0d..`: the bits of the double, not of a float.
    let body =
        ".reg .f64 %fd<4>;\nmov.b64 %fd1, 0d3FB999999999999A;\nst.global.f64 [%rd1], %fd1;\n\
                mov.f64 %fd2, 0d3FF8000000000000;\nst.global.f64 [%rd1+8], %fd2;\n\
                mov.b64 %rd3, 0d4000000000000000;\nst.global.u64 [%rd1+16], %rd3;\n\
                mov.b32 %r1, 0d3FF8000000000000;\nst.global.u32 [%rd1+24], %r1;";
    let got = run("", body, &[0], 7).unwrap();
    let word = |i: usize| got[2 * i] as u64 | (got[2 * i + 1] as u64) << 32;
    assert_eq!(f64::from_bits(word(0)), 0.1);
    assert_eq!(f64::from_bits(word(1)), 1.5);
    assert_eq!(f64::from_bits(word(2)), 2.0);
    // A 32-bit move takes the double rounded to single.
    assert_eq!(f32::from_bits(got[6]), 1.5);
}

#[test]
fn mad_hi_sat_clamps() {
    let (a, b, c) = (-1_273_196_018i32, -864_569_372i32, 2_020_287_978i32);
    let body =
        "ld.global.s32 %r1, [%rd2];\nld.global.s32 %r2, [%rd2+4];\nld.global.s32 %r3, [%rd2+8];\n\
                mad.hi.sat.s32 %r4, %r1, %r2, %r3;\nst.global.u32 [%rd1], %r4;\n\
                mad.hi.s32 %r5, %r1, %r2, %r3;\nst.global.u32 [%rd1+4], %r5;";
    let got = run("", body, &[a as u32, b as u32, c as u32], 2).unwrap();
    let hi = ((a as i64 * b as i64) >> 32) + c as i64;
    assert!(hi > i32::MAX as i64);
    assert_eq!(got, [i32::MAX as u32, hi as i32 as u32]);
}

#[test]
fn negative_zero_orders_below_positive_zero() {
    let body = "ld.global.f32 %f1, [%rd2];\nld.global.f32 %f2, [%rd2+4];\n\
                max.f32 %f3, %f1, %f2;\nst.global.f32 [%rd1], %f3;\nmin.f32 %f3, %f2, %f1;\nst.global.f32 [%rd1+4], %f3;\n\
                max.f32 %f3, %f2, %f1;\nst.global.f32 [%rd1+8], %f3;\nmin.f32 %f3, %f1, %f2;\nst.global.f32 [%rd1+12], %f3;";
    let got = run("", body, &[(-0.0f32).to_bits(), 0.0f32.to_bits()], 4).unwrap();
    assert_eq!(got, [0, 0x8000_0000, 0, 0x8000_0000]);
}

#[test]
fn unmodelled_operands_fault_instead_of_computing_something_else() {
    for (regs, body, what) in [
        // `.b128` values are register pairs: an immediate or a lone 64-bit register would be truncated.
        (".reg .b128 %q<2>;", "mov.b128 %q1, 5;\nmov.b128 {%rd3, %rd4}, %q1;\nst.global.u64 [%rd1], %rd3;", "b128"),
        (".reg .b128 %q<2>;", "ld.global.u64 %rd3, [%rd2];\natom.global.exch.b128 %q1, [%rd1], %rd3;", "b128"),
        ("", "ld.global.b16 %h1, [%rd2];\nfma.rn.oob.bf16 %h2, %h1, %h1, %h1;\nst.global.b16 [%rd1], %h2;", "oob"),
    ] {
        match run(regs, body, &[0x3f80_0000, 0x3f80_0000, 0, 0], 2) {
            Err(EmuError::Faulted { faults, .. }) => assert!(
                faults[0].kind == FaultKind::Unsupported && faults[0].message.contains(what),
                "{faults:?}"
            ),
            other => panic!("{what}: expected an Unsupported fault, got {other:?}"),
        }
    }
}

#[test]
fn min_max_xorsign_abs_f32_compare_magnitudes_and_xor_signs() {
    // PTX ISA, min/max: |a| vs |b| under the usual NaN rules; a non-NaN result takes sign(a) ^ sign(b).
    let cases: [(f32, f32); 6] = [
        (-3.0, 2.0),
        (-3.0, -2.0),
        (1.5, -4.0),
        (f32::NAN, -2.0),
        (-0.0, 0.0),
        (5.0, 5.0),
    ];
    let mut body = String::new();
    let mut inp = Vec::new();
    for (i, (a, b)) in cases.iter().enumerate() {
        inp.extend([a.to_bits(), b.to_bits()]);
        for (j, op) in ["min.xorsign.abs", "max.xorsign.abs", "min.NaN.xorsign.abs"]
            .iter()
            .enumerate()
        {
            body += &format!(
                "ld.global.f32 %f1, [%rd2+{}];\nld.global.f32 %f2, [%rd2+{}];\n{op}.f32 %f3, %f1, %f2;\n\
                 st.global.f32 [%rd1+{}], %f3;\n",
                8 * i,
                8 * i + 4,
                4 * (3 * i + j)
            );
        }
    }
    let got = run("", &body, &inp, 3 * cases.len()).unwrap();
    let want: [f32; 18] = [
        -2.0,
        -3.0,
        -2.0, // -3, 2
        2.0,
        3.0,
        2.0, // -3, -2
        -1.5,
        -4.0,
        -1.5, // 1.5, -4
        -2.0,
        -2.0,
        f32::NAN, // NaN, -2: the other operand, sign NaN ^ -2 (NaN is positive here)
        -0.0,
        -0.0,
        -0.0, // -0, 0
        5.0,
        5.0,
        5.0,
    ];
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            f32::from_bits(*g).is_nan()
        } else {
            *g == w.to_bits()
        };
        assert!(ok, "case {k}: got {:?}, want {w:?}", f32::from_bits(*g));
    }
}

const BULK: &str = r#"
.version 8.5
.target sm_90a
.address_size 64
.visible .entry bulk(.param .u64 out, .param .u64 inp, .param .u32 bytes, .param .u32 mask)
.reqnctapercluster 2, 1, 1
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<8>;
    .shared .align 16 .b8 buf[256];
    .shared .align 8 .b64 mbar;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [inp];
    ld.param.u32 %r1, [bytes];
    ld.param.u32 %r9, [mask];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %cluster_ctarank;
    mov.u32 %r4, buf;
    mov.u32 %r5, mbar;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 mbarrier.init.shared.b64 [%r5], 1;
    barrier.cluster.arrive.release;
    barrier.cluster.wait.acquire;
    @%p1 mbarrier.arrive.expect_tx.shared.b64 %rd3, [%r5], %r1;
    setp.eq.u32 %p2, %r3, 0;
    and.pred %p2, %p2, %p1;
    @%p2 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r4], [%rd2], %r1, [%r5], %r9;
WAIT:
    mbarrier.try_wait.parity.shared.b64 %p3, [%r5], 0;
    @!%p3 bra WAIT;
    mul.wide.u32 %rd4, %r2, 4;
    add.u32 %r6, %r4, %r2;
    add.u32 %r6, %r6, %r2;
    add.u32 %r6, %r6, %r2;
    add.u32 %r6, %r6, %r2;
    ld.shared.u32 %r7, [%r6];
    mov.u32 %r8, %ctaid.x;
    mul.lo.u32 %r8, %r8, 256;
    cvt.u64.u32 %rd5, %r8;
    add.u64 %rd4, %rd4, %rd5;
    add.u64 %rd4, %rd4, %rd1;
    st.global.u32 [%rd4], %r7;
    barrier.cluster.arrive.release;
    barrier.cluster.wait.acquire;
    ret;
}
"#;

#[test]
fn multicast_bulk_copies_reach_every_block_of_the_mask() {
    let m = Module::parse(BULK).unwrap();
    let mut e = Emulator::new(EmuConfig::default());
    let src: Vec<u8> = (0..256u32)
        .flat_map(|i| (i * 7 + 1).to_le_bytes())
        .take(256)
        .collect();
    let inp = e.alloc(256);
    e.write(inp, &src).unwrap();
    let out = e.alloc(2 * 64 * 4);
    let params = |bytes: u32| {
        [
            ParamValue::Ptr(out),
            ParamValue::Ptr(inp),
            ParamValue::U32(bytes),
            ParamValue::U32(0b11),
        ]
    };
    e.launch_cluster(
        &m,
        "bulk",
        [2, 1, 1],
        [64, 1, 1],
        Some([2, 1, 1]),
        0,
        &params(256),
    )
    .unwrap();
    let got = e.read(out, 2 * 64 * 4).unwrap();
    for blk in 0..2 {
        assert_eq!(&got[blk * 256..blk * 256 + 256], &src[..], "block {blk}");
    }
    // A size that is not a multiple of 16 faults (Misaligned), naming the rule.
    match e.launch_cluster(
        &m,
        "bulk",
        [2, 1, 1],
        [64, 1, 1],
        Some([2, 1, 1]),
        0,
        &params(100),
    ) {
        Err(EmuError::Faulted { faults, .. }) => assert!(
            faults
                .iter()
                .any(|f| f.kind == FaultKind::Misaligned && f.message.contains("multiples of 16")),
            "{faults:?}"
        ),
        other => panic!("expected a Misaligned fault, got {other:?}"),
    }
}

const EXIT: &str = r#"
.version 8.5
.target sm_90a
.address_size 64
.visible .entry skip(.param .u64 out)
.reqnctapercluster 2, 1, 1
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %cluster_ctarank;
    mov.u32 %r2, %ctaid.x;
    mul.wide.u32 %rd2, %r2, 4;
    add.u64 %rd2, %rd2, %rd1;
    setp.eq.u32 %p1, %r1, 1;
    @%p1 bra DONE;
    barrier.cluster.arrive.release;
    barrier.cluster.wait.acquire;
    st.global.u32 [%rd2], 1;
DONE:
    ret;
}
"#;

#[test]
fn cluster_barriers_do_not_wait_for_exited_threads() {
    // Rank 1 of each cluster returns at once; rank 0's barrier waits for the threads that have not exited
    // (PTX ISA `barrier.cluster.wait`), so it goes on instead of spinning until the step limit.
    let m = Module::parse(EXIT).unwrap();
    let mut e = Emulator::new(EmuConfig::default());
    let out = e.alloc(16);
    e.launch_cluster(
        &m,
        "skip",
        [4, 1, 1],
        [32, 1, 1],
        Some([2, 1, 1]),
        0,
        &[ParamValue::Ptr(out)],
    )
    .unwrap();
    let got = e.read(out, 16).unwrap();
    let words: Vec<u32> = got
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    assert_eq!(words, [1, 0, 1, 0]);
}

#[test]
fn oversized_allocations_are_error_values() {
    let mut e = Emulator::new(EmuConfig::default());
    assert!(matches!(e.try_alloc(1 << 46), Err(EmuError::Memory(_))));
    assert!(matches!(e.try_alloc(usize::MAX), Err(EmuError::Memory(_))));
    let a = e.try_alloc(64).unwrap();
    assert_eq!(e.read(a, 64).unwrap(), vec![0u8; 64]);
}

#[test]
fn b128_register_pairs_load_store_move_and_swap() {
    // ld.b128 / mov.b128 unpack and pack / st.b128, then atom.cas.b128 (hit, then miss) and atom.exch.b128
    // on the 16 bytes at out + 16; a .b128 register's halves are {low, high}.
    let body = "ld.global.b128 %q1, [%rd2];\nmov.b128 {%rd3, %rd4}, %q1;\nmov.b128 %q2, {%rd4, %rd3};\n\
                st.global.b128 [%rd1], %q2;\nst.global.b128 [%rd1+16], %q1;\n\
                atom.global.cas.b128 %q3, [%rd1+16], %q1, %q2;\nmov.b128 {%rd5, %rd6}, %q3;\n\
                st.global.v2.u64 [%rd1+32], {%rd5, %rd6};\n\
                atom.relaxed.gpu.global.cas.b128 %q3, [%rd1+16], %q1, %q1;\nmov.b128 {%rd5, %rd6}, %q3;\n\
                st.global.v2.u64 [%rd1+48], {%rd5, %rd6};\n\
                atom.global.exch.b128 %q3, [%rd1+16], %q3;\nmov.b128 %q1, %q3;\nst.global.b128 [%rd1+64], %q1;";
    let inp = [1u32, 2, 3, 4];
    let got = run(".reg .b128 %q<4>;", body, &inp, 20).unwrap();
    let (lo, hi) = ([1, 2], [3, 4]);
    // out: q2, then the 16 bytes the atomics work on (q1, swapped to q2 by the first cas, exchanged with
    // itself), the first cas's old value (q1), the second's (q2, a miss), the exchange's (q2).
    let want: Vec<u32> = [hi, lo, hi, lo, lo, hi, hi, lo, hi, lo].concat();
    assert_eq!(got, want);
}

#[test]
fn b128_atomics_need_sixteen_byte_alignment() {
    let body = "ld.global.b128 %q1, [%rd2];\natom.global.cas.b128 %q2, [%rd1+8], %q1, %q1;";
    match run(".reg .b128 %q<3>;", body, &[0; 4], 6) {
        Err(EmuError::Faulted { faults, .. }) => {
            assert_eq!(faults[0].kind, FaultKind::Misaligned, "{faults:?}")
        }
        other => panic!("expected a Misaligned fault, got {other:?}"),
    }
}

#[test]
fn carry_after_subtraction_is_the_adders_carry() {
    // The hardware subtracts as a + ~b + 1: after `sub.cc` CF is 1 when nothing was borrowed, and `addc`
    // / `subc` read it as such (an `add.cc` that clears CF makes a following `subc` subtract one more).
    let body = "mov.u32 %r1, 5;\nmov.u32 %r2, 3;\n\
                sub.cc.u32 %r3, %r1, %r2;\naddc.u32 %r4, 0, 0;\nst.global.u32 [%rd1], %r4;\n\
                sub.cc.u32 %r3, %r2, %r1;\naddc.u32 %r4, 0, 0;\nst.global.u32 [%rd1+4], %r4;\n\
                add.cc.u32 %r3, 0, 0;\nsubc.u32 %r4, 0, 0;\nst.global.u32 [%rd1+8], %r4;\n\
                add.cc.u32 %r3, %r1, -1;\nsubc.u32 %r4, 10, 3;\nst.global.u32 [%rd1+12], %r4;\n\
                sub.cc.u32 %r3, %r2, %r1;\nsubc.cc.u32 %r4, 0, 0;\nsubc.u32 %r5, 7, 0;\nst.global.u32 [%rd1+16], %r4;\n\
                st.global.u32 [%rd1+20], %r5;\n\
                mov.u64 %rd3, 0;\nsub.cc.u64 %rd4, %rd3, 1;\nmadc.lo.u32 %r6, %r1, %r2, 100;\nst.global.u32 [%rd1+24], %r6;";
    let got = run("", body, &[], 7).unwrap();
    // 5-3: no borrow (CF 1); 3-5: borrow (CF 0); add.cc 0+0 leaves CF 0, so subc 0-0 gives -1; 5+(-1)
    // carries, so 10-3 is 7; a borrow chain: 0-0-borrow = -1 with a borrow again, 7-0-borrow = 6;
    // 0-1 borrows (CF 0): madc adds nothing, 115.
    assert_eq!(got, [1, 0, u32::MAX, 7, u32::MAX, 6, 115]);
}

#[test]
fn f16_ftz_flushes_subnormal_inputs_and_results() {
    // 0x0001 is f16's smallest subnormal, 0x0400 its smallest normal, 0x3800 is 0.5, 0x3c00 is 1.0.
    let ops = [
        ("add", "%h1, %h2", 0x0001_0001u32),
        ("mul", "%h1, %h2", 0x3800_0400),
        ("mul", "%h1, %h2", 0x3800_8400),
        ("mul", "%h1, %h2", 0x3c00_0200),
    ];
    let mut body = String::new();
    let mut inp = Vec::new();
    for (i, (op, args, pair)) in ops.iter().enumerate() {
        inp.push(*pair);
        for (j, ftz) in ["", ".ftz"].iter().enumerate() {
            let k = 2 * i + j;
            body += &format!(
                "ld.global.b16 %h1, [%rd2+{}];\nld.global.b16 %h2, [%rd2+{}];\n\
                 {op}.rn{ftz}.f16 %h3, {args};\ncvt.u32.u16 %r1, %h3;\nst.global.u32 [%rd1+{}], %r1;\n",
                4 * i,
                4 * i + 2,
                4 * k
            );
        }
    }
    // Packed: both halves flushed alike.
    body +=
        "ld.global.b32 %r2, [%rd2];\nmov.b32 %r3, 0x00010001;\nadd.rn.ftz.f16x2 %r4, %r2, %r3;\n\
             st.global.u32 [%rd1+32], %r4;\n";
    // Compares: a subnormal equals zero under `.ftz` only.
    body += "ld.global.b16 %h1, [%rd2];\nmov.b16 %h2, 0;\n\
             setp.eq.f16 %p1, %h1, %h2;\nselp.u32 %r5, 1, 0, %p1;\nst.global.u32 [%rd1+36], %r5;\n\
             setp.eq.ftz.f16 %p2, %h1, %h2;\nselp.u32 %r5, 1, 0, %p2;\nst.global.u32 [%rd1+40], %r5;";
    let got = run("", &body, &inp, 11).unwrap();
    assert_eq!(
        got,
        [
            0x0002,
            0x0000,
            0x0200,
            0x0000,
            0x8200,
            0x8000,
            0x0200,
            0x0000,
            0x0000_0000,
            0,
            1
        ]
    );
}

#[test]
fn cvt_relu_gives_the_canonical_nan() {
    // PTX ISA, cvt `.relu` (f16, f16x2, bf16, bf16x2, tf32 destinations): "NaN results are converted to
    // canonical NaN", whatever the source NaN's payload or sign; without `.relu` a NaN need only stay a NaN.
    let body = "ld.global.f32 %f1, [%rd2];\nld.global.f32 %f2, [%rd2+4];\n\
                cvt.rn.relu.bf16x2.f32 %r1, %f1, %f2;\nst.global.u32 [%rd1], %r1;\n\
                cvt.rn.relu.f16x2.f32 %r2, %f2, %f1;\nst.global.u32 [%rd1+4], %r2;\n\
                cvt.rn.relu.bf16.f32 %h1, %f1;\ncvt.u32.u16 %r3, %h1;\nst.global.u32 [%rd1+8], %r3;\n\
                cvt.rn.relu.satfinite.f16.f32 %h2, %f1;\ncvt.u32.u16 %r4, %h2;\nst.global.u32 [%rd1+12], %r4;\n\
                cvt.rz.relu.satfinite.bf16x2.f32 %r5, %f2, %f1;\nst.global.u32 [%rd1+16], %r5;\n\
                cvt.rn.bf16x2.f32 %r6, %f1, %f2;\nst.global.u32 [%rd1+20], %r6;";
    // a negative NaN with a payload, and -2.5 (relu: +0)
    let got = run("", body, &[0xffc0_1234, (-2.5f32).to_bits()], 6).unwrap();
    assert_eq!(
        &got[..5],
        &[0x7fff_0000, 0x0000_7fff, 0x7fff, 0x7fff, 0x0000_7fff]
    );
    let (hi, lo) = ((got[5] >> 16) as u16, got[5] as u16);
    assert!(
        half::bf16::from_bits(hi).is_nan(),
        "plain cvt keeps a NaN: {hi:#x}"
    );
    assert_eq!(lo, half::bf16::from_f32(-2.5).to_bits());
}

#[test]
fn min_max_xorsign_abs_f16_bf16_per_half() {
    // PTX ISA, min/max: `.xorsign.abs` on f16/bf16(x2) is the f32 rule per 16-bit half.
    // f16x2 {lo -3.0 (0xc200), hi 1.5 (0x3e00)} vs {lo 2.0 (0x4000), hi -4.0 (0xc400)};
    // bf16x2 {lo -3.0 (0xc040), hi -2.0 (0xc000)} vs {lo -2.0 (0xc000), hi 0.5 (0x3f00)}.
    let body = "ld.global.b32 %r1, [%rd2];\nld.global.b32 %r2, [%rd2+4];\n\
                min.xorsign.abs.f16x2 %r3, %r1, %r2;\nst.global.b32 [%rd1], %r3;\n\
                max.xorsign.abs.f16x2 %r3, %r1, %r2;\nst.global.b32 [%rd1+4], %r3;\n\
                ld.global.b32 %r1, [%rd2+8];\nld.global.b32 %r2, [%rd2+12];\n\
                min.xorsign.abs.bf16x2 %r3, %r1, %r2;\nst.global.b32 [%rd1+8], %r3;\n\
                max.NaN.xorsign.abs.bf16x2 %r3, %r1, %r2;\nst.global.b32 [%rd1+12], %r3;\n\
                mov.b32 {%h1, %h2}, %r1;\nmov.b32 {%h3, %h4}, %r2;\n\
                max.xorsign.abs.bf16 %h5, %h2, %h4;\nmov.b32 %r4, {%h5, %h5};\nst.global.b32 [%rd1+16], %r4;";
    let inp = [0x3e00_c200, 0xc400_4000, 0xc000_c040, 0x3f00_c000];
    let got = run("", body, &inp, 5).unwrap();
    // f16x2 min: lo -(min 3,2) = -2 (0xc000), hi -(min 1.5,4) = -1.5 (0xbe00); max: lo -3 (0xc200), hi -4 (0xc400).
    // bf16x2 min: lo +2 (0x4000, signs equal), hi -0.5 (0xbf00); max: lo +3 (0x4040), hi -2 (0xc000).
    // bf16 max of hi halves (-2, 0.5): -2 (0xc000), in both halves.
    assert_eq!(
        got,
        [
            0xbe00_c000,
            0xc400_c200,
            0xbf00_4000,
            0xc000_4040,
            0xc000_c000
        ],
        "{got:x?}"
    );
}
