//! Calls nvcc does not inline, as nvcc 13.5 compiles them for sm_90 (tests/fixtures/calls.ptx, from
//! calls.cu): virtual functions (vtables in initialized globals, objects in the thread's frame), function
//! pointers chosen per lane, a function table and pointers to variables in initializers (`generic(A)+8`,
//! nvcc's byte-masked `0xFF00(generic(A)+4)`), and recursion: direct (fib, quicksort), mutual
//! (is_even/is_odd), and through pointers into the caller's frame, with lanes of one warp at different
//! depths. Every output element is checked against a CPU reference on seeded random inputs, under the
//! round-robin schedule, in lockstep and under random schedules.

use prism_runtime::emu::*;

mod common;
use common::{configs, le as bytes, upload, Rng};

fn module() -> Module {
    common::fixture_module("calls.ptx")
}

fn read_i32(e: &Emulator, a: u64, n: usize) -> Vec<i32> {
    e.read(a, 4 * n)
        .expect("read")
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}

fn read_f32(e: &Emulator, a: u64, n: usize) -> Vec<f32> {
    read_i32(e, a, n)
        .into_iter()
        .map(|x| f32::from_bits(x as u32))
        .collect()
}

/// Sentinel for outputs: an element the kernel should have written but did not shows as this.
const UNSET: i32 = 0x5A5A_5A5A;

#[test]
fn addresses_in_initializers_and_a_function_table() {
    let m = module();
    let a = [1.0f32, 2.0, 3.0, 4.0];
    let b = [5.0f32, 6.0, 7.0, 8.0];
    let arrays: [(&[f32; 4], usize); 3] = [(&a, 0), (&b, 0), (&b, 2)];
    // `*cptr` reads the bits of A[1] as an int; `s_init = {7, A + 3}`; `packed = {3, A + 1, 9}`.
    let cptr = 2.0f32.to_bits() as i32;
    for sel in [0, 1, 2] {
        for (what, cfg) in configs() {
            let mut e = Emulator::new(cfg);
            let out = upload(&mut e, &bytes(&[UNSET; 64], i32::to_le_bytes));
            let out2 = upload(&mut e, &bytes(&[UNSET; 64], i32::to_le_bytes));
            let params = [
                ParamValue::Ptr(out),
                ParamValue::Ptr(out2),
                ParamValue::I32(sel),
            ];
            e.launch(
                &m,
                "initialized_addresses",
                [1, 1, 1],
                [64, 1, 1],
                0,
                &params,
            )
            .unwrap_or_else(|err| panic!("{what}, sel {sel}: {err}"));
            let got = read_f32(&e, out, 64);
            let got2 = read_i32(&e, out2, 64);
            for t in 0..64usize {
                let (arr, o) = arrays[t % 3];
                assert_eq!(got[t], arr[o + t % 2] + a[3], "{what}, sel {sel}: out[{t}]");
                let ti = t as i32;
                let f = match (t + sel as usize) % 3 {
                    0 => ti * ti,
                    1 => ti * ti * ti,
                    _ => -ti,
                };
                let want = f + cptr + 7 + 9 + a[1] as i32 + 3;
                assert_eq!(got2[t], want, "{what}, sel {sel}: out2[{t}]");
            }
        }
    }
}

#[test]
fn function_pointers_chosen_per_lane() {
    let m = module();
    let n = 300usize;
    let mut rng = Rng(3);
    let input: Vec<i32> = (0..n).map(|_| rng.range(-40, 40)).collect();
    let want: Vec<i32> = input
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = |v: i32| match (x & 1, x & 2) {
                (1, _) => v * v,
                (_, 2) => v * v * v,
                _ => -v,
            };
            f(x) + f(i as i32)
        })
        .collect();
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let din = upload(&mut e, &bytes(&input, i32::to_le_bytes));
        let dout = upload(&mut e, &bytes(&vec![UNSET; n], i32::to_le_bytes));
        let params = [
            ParamValue::Ptr(din),
            ParamValue::Ptr(dout),
            ParamValue::I32(n as i32),
        ];
        e.launch(&m, "pointer_per_lane", [3, 1, 1], [128, 1, 1], 0, &params)
            .unwrap_or_else(|err| panic!("{what}: {err}"));
        assert_eq!(read_i32(&e, dout, n), want, "{what}");
    }
}

#[test]
fn virtual_functions_dispatch_per_object() {
    let m = module();
    let n = 200usize;
    let mut rng = Rng(5);
    let input: Vec<f32> = (0..n)
        .map(|_| rng.range(-1000, 1000) as f32 / 250.0)
        .collect();
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let din = upload(&mut e, &bytes(&input, f32::to_le_bytes));
        let darea = upload(&mut e, &bytes(&vec![UNSET; n], i32::to_le_bytes));
        let dsides = upload(&mut e, &bytes(&vec![UNSET; n], i32::to_le_bytes));
        let params = [
            ParamValue::Ptr(din),
            ParamValue::Ptr(darea),
            ParamValue::Ptr(dsides),
            ParamValue::I32(n as i32),
        ];
        e.launch(&m, "virtual_dispatch", [2, 1, 1], [128, 1, 1], 0, &params)
            .unwrap_or_else(|err| panic!("{what}: {err}"));
        let area = read_f32(&e, darea, n);
        let sides = read_i32(&e, dsides, n);
        for i in 0..n {
            let x = input[i];
            let square = (x * x, 4);
            let tri = (0.5 * x * (2.0 * x + 1.0), 3);
            let first = if (i % 4) & 1 != 0 { square } else { tri };
            let second = if (i % 4) & 2 != 0 { (0.0, 0) } else { square };
            let want = 0.0f32 + first.0 + second.0;
            let tol = 1e-5 * want.abs().max(1.0);
            assert!(
                (area[i] - want).abs() <= tol,
                "{what}: area[{i}] = {}, want {want}",
                area[i]
            );
            assert_eq!(sides[i], first.1 + second.1, "{what}: sides[{i}]");
        }
    }
}

fn fib(n: i32) -> i32 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

fn frames(depth: i32, acc: [i32; 2]) -> i32 {
    let loc: Vec<i32> = (0..4).map(|k| depth * k + acc[k as usize % 2]).collect();
    if depth == 0 {
        return loc[3];
    }
    frames(depth - 1, [loc[0], loc[1]]) + loc[(depth & 3) as usize]
}

#[test]
fn recursion_direct_mutual_and_through_the_callers_frame() {
    let m = module();
    let n = 96usize;
    let mut rng = Rng(9);
    let input: Vec<i32> = (0..n).map(|_| rng.range(0, 1 << 20)).collect();
    let arr: Vec<i32> = (0..16 * n).map(|_| rng.range(-50, 50)).collect();
    let mut want = vec![0i32; 3 * n];
    for (i, &x) in input.iter().enumerate() {
        want[i] = fib(x & 15);
        want[n + i] = frames(x & 7, [x, i as i32]);
        want[2 * n + i] = ((x & 31) % 2 == 0) as i32;
    }
    let mut sorted = arr.clone();
    sorted.chunks_mut(16).for_each(|c| c.sort());
    for (what, cfg) in configs() {
        let mut e = Emulator::new(cfg);
        let din = upload(&mut e, &bytes(&input, i32::to_le_bytes));
        let dout = upload(&mut e, &bytes(&vec![UNSET; 3 * n], i32::to_le_bytes));
        let darr = upload(&mut e, &bytes(&arr, i32::to_le_bytes));
        let params = [
            ParamValue::Ptr(din),
            ParamValue::Ptr(dout),
            ParamValue::Ptr(darr),
            ParamValue::I32(n as i32),
        ];
        e.launch(&m, "recursion", [2, 1, 1], [64, 1, 1], 0, &params)
            .unwrap_or_else(|err| panic!("{what}: {err}"));
        let got = read_i32(&e, dout, 3 * n);
        // `is_even` returns a bool: the kernel stores its low byte widened.
        for i in 0..3 * n {
            assert_eq!(got[i], want[i], "{what}: out[{i}] (input {})", input[i % n]);
        }
        assert_eq!(read_i32(&e, darr, 16 * n), sorted, "{what}: sorted rows");
    }
}

#[test]
fn deep_recursion_runs_and_too_deep_is_a_stack_overflow() {
    let m = module();
    let mut e = Emulator::new(EmuConfig::default());
    let out = upload(&mut e, &bytes(&[UNSET; 32], i32::to_le_bytes));
    let params = [ParamValue::Ptr(out), ParamValue::I32(500)];
    e.launch(&m, "deep_recursion", [1, 1, 1], [32, 1, 1], 0, &params)
        .expect("500 activations fit");
    let got = read_i32(&e, out, 32);
    for (t, &g) in got.iter().enumerate() {
        assert_eq!(g, frames(500, [1, t as i32]), "lane {t}");
    }
    let params = [ParamValue::Ptr(out), ParamValue::I32(5000)];
    let err = e
        .launch(&m, "deep_recursion", [1, 1, 1], [32, 1, 1], 0, &params)
        .expect_err("5000 activations overflow the stack");
    let text = err.to_string();
    assert!(text.contains("call stack overflow"), "{text}");
}

#[test]
fn an_indirect_call_through_a_data_address_is_reported() {
    let src = ".version 8.0\n.target sm_90\n.address_size 64\n\
        .func (.param .b32 r) f(.param .b32 a) { .reg .b32 %x; ld.param.b32 %x, [a]; st.param.b32 [r], %x; ret; }\n\
        .visible .entry k(.param .u64 p) {\n .reg .b64 %rd<3>; .reg .b32 %r<2>;\n\
         ld.param.u64 %rd1, [p];\n\
         { .param .b32 a0; st.param.b32 [a0], 1; .param .b32 r0;\n\
           proto: .callprototype (.param .b32 _) _ (.param .b32 _);\n\
           call (r0), %rd1, (a0), proto; ld.param.b32 %r1, [r0]; }\n ret;\n}\n";
    let m = Module::parse(src).expect("parses");
    let mut e = Emulator::new(EmuConfig::default());
    let buf = e.alloc(16);
    let err = e
        .launch(&m, "k", [1, 1, 1], [32, 1, 1], 0, &[ParamValue::Ptr(buf)])
        .expect_err("a data address is not a function");
    let text = err.to_string();
    assert!(
        text.contains("InvalidOperation") && text.contains("not the address of a defined .func"),
        "{text}"
    );
}

#[test]
fn an_initializer_naming_nothing_is_a_parse_error() {
    let src = ".version 8.0\n.target sm_90\n.address_size 64\n\
        .global .align 8 .u64 p[2] = {generic(nowhere)+8, 0};\n\
        .visible .entry k() { ret; }\n";
    let err = Module::parse(src).expect_err("unknown name");
    let text = err.to_string();
    assert!(
        text.contains("nowhere") && text.contains("line 4"),
        "{text}"
    );
}
