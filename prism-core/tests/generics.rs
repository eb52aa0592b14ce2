//! Type generics (`fn f<T: Num, const N: u32>`, docs/SYNTAX.md "Type generics"): instances compile to the
//! same PTX as the function written out for each type, kernels get one entry per instance, and every misuse
//! is a `GENERIC` diagnostic at the offending token.

use prism_core::ast::ScalarType;
use prism_core::parse::parse_source;
use prism_core::{check_device, compile_kernel, CompiledKernel, Diagnostic};

/// Compiles the last function of `src` (a kernel; the others are its dependencies).
fn compile(src: &str) -> Result<Vec<CompiledKernel>, Vec<Diagnostic>> {
    let fs = parse_source(src)?;
    let f = fs.last().expect("a function");
    compile_kernel(f, &fs)
}

fn ok(src: &str) -> Vec<CompiledKernel> {
    compile(src).unwrap_or_else(|e| {
        panic!(
            "{src}\n{:#?}",
            e.iter().map(|d| d.text()).collect::<Vec<_>>()
        )
    })
}

/// Checks the last function of `src` as a device function (its definition check).
fn device(src: &str) -> Result<(), Vec<Diagnostic>> {
    let fs = parse_source(src)?;
    let f = fs.last().expect("a function");
    check_device(f, &fs)
}

/// The diagnostics of `r`, which must fail with a `GENERIC` one containing every needle at the marker
/// `/*@*/` of `src`.
fn expect_generic<T: std::fmt::Debug>(src: &str, r: Result<T, Vec<Diagnostic>>, needles: &[&str]) {
    let ds = r.expect_err("expected an error");
    let marker = src.find("/*@*/").expect("marker");
    let line = src[..marker].matches('\n').count() + 1;
    let col = marker - src[..marker].rfind('\n').map(|i| i + 1).unwrap_or(0) + 5;
    let found = ds
        .iter()
        .find(|d| d.rule == "GENERIC" && needles.iter().all(|n| d.message.contains(n)));
    let Some(d) = found else {
        panic!(
            "no [GENERIC] with {needles:?}; got {:#?}",
            ds.iter().map(|d| d.text()).collect::<Vec<_>>()
        );
    };
    let at = d.span.start();
    assert_eq!((at.line, at.column), (line, col), "span of {}", d.text());
}

const WARP_SUM: &str = "
#[prism_device(requires(thread[32]), returns = thread[1])]
fn warp_sum<T: Num32>(#[at(thread[1])] v: T) -> T {
    #[at(thread[1])]
    let mut x: T = v;
    for k in 0..5 {
        x = x + shfl_xor(x, 16u32 >> k);
    }
    x
}
#[prism_device(requires(thread[1]), returns = thread[1])]
fn thread_sum<T: Num, const N: u32>(items: &[T; N]) -> T {
    let mut s: T = 0 as T;
    for i in 0..N {
        s = s + items[i];
    }
    s
}
";

/// The same two functions written out for one type (what `prism-kernels/src/scan/gen.sh` used to generate).
fn written_out(t: &str, zero: &str) -> String {
    format!(
        "
#[prism_device(requires(thread[32]), returns = thread[1])]
fn warp_sum_{t}(#[at(thread[1])] v: {t}) -> {t} {{
    #[at(thread[1])]
    let mut x: {t} = v;
    for k in 0..5 {{
        x = x + shfl_xor(x, 16u32 >> k);
    }}
    x
}}
#[prism_device(requires(thread[1]), returns = thread[1])]
fn thread_sum_{t}<const N: u32>(items: &[{t}; N]) -> {t} {{
    let mut s: {t} = {zero};
    for i in 0..N {{
        s = s + items[i];
    }}
    s
}}
#[prism_kernel(requires(grid[1], block[1], thread[32]), instances = [2, 4])]
fn k_{t}<const N: u32>(x: *const {t}, out: *mut {t}) {{
    #[at(thread[1])]
    let i: u32 = id();
    partition(out, thread[1], |j| i + j, |o| {{
        group(thread[32], || {{
            #[at(thread[1])]
            let mut items = [{zero}; N];
            group(thread[1], || {{
                for j in 0..N {{
                    items[j] = x[i * N + j];
                }}
            }});
            #[at(thread[1])]
            let s: {t} = thread_sum_{t}::<N>(&items);
            #[at(thread[1])]
            let w: {t} = warp_sum_{t}(s);
            group(thread[1], || {{
                o[0] = w;
            }});
        }});
    }});
}}
"
    )
}

const GENERIC_KERNEL: &str = "
#[prism_kernel(requires(grid[1], block[1], thread[32]), instances = [(u32, 2), (f32, 2), (i32, 4), (u32, 4), (f32, 4)])]
fn k<T: Num32, const N: u32>(x: *const T, out: *mut T) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(out, thread[1], |j| i + j, |o| {
        group(thread[32], || {
            #[at(thread[1])]
            let mut items = [0 as T; N];
            group(thread[1], || {
                for j in 0..N {
                    items[j] = x[i * N + j];
                }
            });
            #[at(thread[1])]
            let s: T = thread_sum::<T, N>(&items);
            #[at(thread[1])]
            let w: T = warp_sum::<T>(s);
            group(thread[1], || {
                o[0] = w;
            });
        });
    });
}
";

#[test]
fn instances_compile_to_the_written_out_ptx() {
    let generic = ok(&format!("{WARP_SUM}{GENERIC_KERNEL}"));
    let entries: Vec<&str> = generic.iter().map(|k| k.entry.as_str()).collect();
    // Grouped by type tuple in order of first appearance, const instances in listed order.
    assert_eq!(
        entries,
        ["k_u32_2", "k_u32_4", "k_f32_2", "k_f32_4", "k_i32_4"]
    );
    for (t, zero) in [("u32", "0u32"), ("i32", "0i32"), ("f32", "0.0f32")] {
        let want = ok(&written_out(t, zero));
        for w in &want {
            let Some(g) = generic.iter().find(|g| g.entry == w.entry) else {
                assert!(t == "i32" && w.entry == "k_i32_2", "{} missing", w.entry);
                continue;
            };
            assert_eq!(g.ptx, w.ptx, "PTX of {}", w.entry);
            assert_eq!(g.params, w.params, "parameters of {}", w.entry);
            assert_eq!(g.instance, w.instance);
            let ty = match t {
                "u32" => ScalarType::U32,
                "i32" => ScalarType::I32,
                _ => ScalarType::F32,
            };
            assert_eq!(g.types, [ty]);
        }
    }
}

#[test]
fn a_generic_device_function_checks_for_every_admitted_type() {
    assert!(device(WARP_SUM).is_ok());
    // `%` and `<<` hold for every integer type: `Int` admits it.
    let src = "
#[prism_device(requires(thread[1]), returns = thread[1])]
fn mix<T: Int>(a: T, b: T) -> T {
    let c: T = (a << 1u32) ^ (b % (3 as T));
    c
}
";
    assert!(device(src).is_ok(), "{:?}", device(src).err());
}

#[test]
fn an_operation_the_bound_does_not_allow() {
    // `Num` admits f32, for which `^` is not defined: GENERIC at the operator's expression.
    let src = "
#[prism_device(requires(thread[1]), returns = thread[1])]
fn mix<T: Num>(a: T, b: T) -> T {
    let c: T = /*@*/a ^ b;
    c
}
";
    expect_generic(src, device(src), &["with `T = f32`"]);
}

#[test]
fn unknown_type_argument() {
    let src = format!(
        "{WARP_SUM}
#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k(out: *mut f32) {{
    #[at(thread[1])]
    let v: f32 = 1.0;
    #[at(thread[1])]
    let w: f32 = warp_sum::</*@*/Foo>(v);
}}
"
    );
    expect_generic(&src, compile(&src), &["`Foo` is not a type", "Num32"]);
}

#[test]
fn wrong_number_of_type_arguments() {
    let src = format!(
        "{WARP_SUM}
#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k(out: *mut f32) {{
    #[at(thread[1])]
    let v: f32 = 1.0;
    #[at(thread[1])]
    let w: f32 = /*@*/warp_sum(v);
}}
"
    );
    expect_generic(&src, compile(&src), &["takes 1 type argument", "found 0"]);
}

#[test]
fn type_argument_outside_the_bound() {
    let src = format!(
        "{WARP_SUM}
#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k(out: *mut u64) {{
    #[at(thread[1])]
    let v: u64 = 1;
    #[at(thread[1])]
    let w: u64 = warp_sum::</*@*/u64>(v);
}}
"
    );
    expect_generic(&src, compile(&src), &["`u64` does not satisfy `T: Num32`"]);
}

#[test]
fn type_arguments_for_a_function_without_type_parameters() {
    let src = "
#[prism_device(requires(thread[1]), returns = thread[1])]
fn one(a: f32) -> f32 {
    a
}
#[prism_kernel(requires(grid[1], block[1], thread[32]))]
fn k(out: *mut f32) {
    #[at(thread[1])]
    let w: f32 = one::</*@*/f32>(1.0);
}
";
    expect_generic(src, compile(src), &["`one` has no type parameters"]);
}

#[test]
fn kernel_instances_name_admitted_types() {
    let src = "
#[prism_kernel(requires(grid[1], block[1], thread[32]), instances = [(u32, 2), /*@*/(f64, 2)])]
fn k<T: Num32, const N: u32>(out: *mut T) {
}
";
    expect_generic(src, compile(src), &["`f64` does not satisfy `T: Num32`"]);
    let src = "
#[prism_kernel(requires(grid[1], block[1], thread[32]), instances = [/*@*/2])]
fn k<T: Num32, const N: u32>(out: *mut T) {
}
";
    expect_generic(
        src,
        compile(src),
        &["0 type argument(s)", "1 type parameter"],
    );
}

#[test]
fn a_kernel_error_of_one_instance_only_is_generic() {
    // `sqrt` exists for f32 only: the u32 instance fails.
    let src = "
#[prism_kernel(requires(grid[1], block[1], thread[1]), instances = [f32, u32])]
fn k<T: Num32>(x: *const T, out: *mut T) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(out, thread[1], |j| i + j, |o| {
        group(thread[1], || {
            o[0] = x[i]./*@*/sqrt();
        });
    });
}
";
    expect_generic(src, compile(src), &["with `T = u32`"]);
}

#[test]
fn declaration_errors() {
    let src = "
#[prism_device(requires(thread[1]))]
fn f<const N: u32, /*@*/T: Num>(a: T) {
}
";
    expect_generic(src, parse_source(src), &["before const parameters"]);
    let src = "
#[prism_device(requires(thread[1]))]
fn f</*@*/T>(a: T) {
}
";
    expect_generic(src, parse_source(src), &["needs one bound"]);
    let src = "
#[prism_device(requires(thread[1]))]
fn f<T: /*@*/Copy>(a: T) {
}
";
    expect_generic(src, parse_source(src), &["needs one bound"]);
}

#[test]
fn typed_literals_and_casts() {
    // `0 as T` is the literal of type T; other casts stay conversions.
    let src = "
#[prism_kernel(requires(grid[1], block[1], thread[1]), instances = [f32, i32])]
fn k<T: Num32>(out: *mut T, n: u32) {
    #[at(thread[1])]
    let i: u32 = id();
    partition(out, thread[1], |j| i + j, |o| {
        group(thread[1], || {
            o[0] = (1 as T) + (n as T) + (2.0 as f32) as T;
        });
    });
}
";
    let ks = ok(src);
    assert_eq!(ks.len(), 2);
    // f32: `1 as T` is the literal 1.0 (no conversion), `n as T` converts.
    assert!(ks[0].ptx.contains("0f3F800000"), "{}", ks[0].ptx);
    assert!(ks[0].ptx.contains("cvt.rn.f32.u32"), "{}", ks[0].ptx);
    assert_eq!(ks[0].ptx.matches("cvt.").count(), 1, "{}", ks[0].ptx);
    assert!(!ks[1].ptx.contains("cvt."), "{}", ks[1].ptx);
}

#[test]
fn aliases_name_admitted_types() {
    let src = "
#[prism_device(requires(thread[1]), returns = thread[1], aliases = [u32, /*@*/u64])]
fn one<T: Num32>(a: T) -> T {
    a
}
";
    expect_generic(src, device(src), &["`u64` does not satisfy `T: Num32`"]);
    let src = "
#[prism_device(requires(thread[1]), returns = thread[1], aliases = [/*@*/(u32, 4)])]
fn one<T: Num32, const N: u32>(a: T) -> T {
    a
}
";
    expect_generic(src, device(src), &["one type per type parameter"]);
}

#[test]
fn argument_messages_name_the_instance_with_its_const_arguments() {
    // `[f32; 8]` comes from the call's `8`: the message names `thread_sum::<f32, 8>`, not `thread_sum::<f32>`.
    let src = format!(
        "{WARP_SUM}
#[prism_kernel(requires(grid[1], block[1], thread[1]))]
fn k(out: *mut f32) {{
    let items: [f32; 4] = [1.0; 4];
    let s: f32 = thread_sum::<f32, 8>(&items);
}}
"
    );
    let ds = compile(&src).expect_err("a [f32; 4] for a [f32; 8] parameter");
    let d = ds.iter().find(|d| d.rule == "TYPE").unwrap_or_else(|| {
        panic!(
            "no TYPE: {:#?}",
            ds.iter().map(|d| d.text()).collect::<Vec<_>>()
        )
    });
    assert!(
        d.message.contains("`thread_sum::<f32, 8>`") && d.message.contains("[f32; 8]"),
        "{}",
        d.text()
    );
}

#[test]
fn a_type_parameters_constants_are_its_instances() {
    // User round J: a bitonic sort pads its tail with `T::MAX`; each instance reads its own type's
    // constant (`u32::MAX as T` would be -1 for i32), the same PTX as the constant written out.
    let kernel = |pad: &str, min: &str, ty: &str, generic: bool| {
        let (params, name) = if generic {
            ("<T: Int>", "k")
        } else {
            ("", "k_")
        };
        let attrs = if generic {
            ", instances = [(u32), (i32), (u64), (i64)]"
        } else {
            ""
        };
        format!(
            "#[prism_kernel(requires(grid[1], block[1], thread[1]){attrs})]\n\
             fn {name}{}{params}(x: *const {ty}, out: *mut {ty}, n: u32) {{\n\
             #[at(thread[1])]\nlet i: u32 = id();\n\
             partition(out, thread[1], |j| i * 2 + j, |o| {{ group(thread[1], || {{\n\
             o[0] = if i < n {{ x[i] }} else {{ {pad} }};\n\
             o[1] = {min};\n\
             }}); }});\n}}\n",
            if generic {
                String::new()
            } else {
                ty.to_string()
            }
        )
    };
    let generic = ok(&kernel("T::MAX", "T::MIN", "T", true));
    for t in ["u32", "i32", "u64", "i64"] {
        let entry = format!("k_{t}");
        let g = generic
            .iter()
            .find(|k| k.entry == entry)
            .unwrap_or_else(|| panic!("{entry} missing"));
        let w = ok(&kernel(
            &format!("{t}::MAX"),
            &format!("{t}::MIN"),
            t,
            false,
        ));
        assert_eq!(g.ptx, w[0].ptx, "PTX of {entry}");
    }
    // A type the bound admits but that has no such constant: a GENERIC error naming the instance.
    let r = compile(
        "#[prism_kernel(requires(grid[1], block[1], thread[1]), instances = [(f32), (bf16)])]\n\
         fn k<T: Scalar>(out: *mut T) {\n\
         #[at(thread[1])]\nlet i: u32 = id();\n\
         partition(out, thread[1], |j| i + j, |o| { group(thread[1], || { o[0] = T::MAX; }); });\n}\n",
    );
    let ds = r.expect_err("bf16 has no MAX");
    assert!(
        ds.iter().any(|d| d.message.contains("T::MAX")),
        "{:#?}",
        ds.iter().map(|d| d.text()).collect::<Vec<_>>()
    );
}
