//! The model against real PTX: every nvcc fixture of the emulator's test suite reads, prints and reads
//! back to an equal model; each operand form and each error on its own.

use super::*;

fn roundtrip(src: &str) -> Module {
    let m = parse(src).unwrap_or_else(|e| panic!("{e}"));
    let printed = m.to_string();
    let again =
        parse(&printed).unwrap_or_else(|e| panic!("printed text does not parse: {e}\n{printed}"));
    assert_eq!(again, m, "parse(print(m)) != m");
    assert_eq!(again.to_string(), printed, "printing is not a fixed point");
    m
}

#[test]
fn every_nvcc_fixture_round_trips() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../prism-runtime/tests/fixtures");
    let mut files = 0;
    let mut instrs = 0;
    for sub in ["", "hopper", "prism"] {
        let Ok(rd) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "ptx") {
                let src = std::fs::read_to_string(&p).expect("read fixture");
                let m = roundtrip(&src);
                files += 1;
                for it in &m.items {
                    if let Item::Func(f) = it {
                        instrs += f
                            .body
                            .iter()
                            .flatten()
                            .flat_map(|s| s.instructions())
                            .count();
                    }
                }
            }
        }
    }
    assert!(
        files >= 10,
        "only {files} fixtures found under {}",
        dir.display()
    );
    assert!(instrs > 5000, "only {instrs} instructions");
}

#[test]
fn operand_forms() {
    let s = parse_stmts(
        "@!%p1 setp.lt.s32 %p2|%p3, %r1, -0x10; ld.global.v2.f32 {%f1, _}, [%rd1+-8];\
         cp.async.bulk.tensor.2d.shared::cluster.global [%r2], [%rd2, {%r3, %r4}], [mb];\
         mov.u64 %rd3, sym+4; mov.f32 %f2, 0fBF800000; mov.f64 %fd1, 2.5e-3;\
         call.uni (r0), f, (a, b); mbarrier.init.shared::cta.b64 [x+0], 1; L: bra L;",
    )
    .unwrap();
    let ins: Vec<&Instruction> = s.iter().flat_map(|x| x.instructions()).collect();
    assert_eq!(
        ins[0].guard,
        Some(Guard {
            negated: true,
            pred: "%p1".into()
        })
    );
    assert_eq!(
        ins[0].operands[0],
        Operand::Pair(
            Box::new(Operand::Name("%p2".into())),
            Box::new(Operand::Name("%p3".into()))
        )
    );
    assert_eq!(ins[0].operands[2], Operand::Int(-16));
    assert_eq!(
        ins[1].operands[1],
        Operand::Addr(Address {
            base: Some("%rd1".into()),
            offset: Some(-8)
        })
    );
    assert!(matches!(&ins[2].operands[1], Operand::Tensor(a, c)
        if a.base.as_deref() == Some("%rd2") && matches!(**c, Operand::Vector(ref v) if v.len() == 2)));
    assert_eq!(ins[3].operands[1], Operand::SymOffset("sym".into(), 4));
    assert_eq!(ins[4].operands[1], Operand::F32Bits(0xBF80_0000));
    assert_eq!(ins[5].operands[1], Operand::Float(2.5e-3));
    assert!(matches!(&ins[6].operands[0], Operand::List(v) if v.len() == 1));
    assert_eq!(
        ins[7].operands[0],
        Operand::Addr(Address {
            base: Some("x".into()),
            offset: Some(0)
        })
    );
    assert!(matches!(s.last(), Some(Stmt::Instr(i)) if i.op() == "bra" && i.mentions("L")));
    // Every form prints and reads back.
    let text: String = ins.iter().map(|i| format!("{i}\n")).collect();
    let again: Vec<Stmt> = parse_stmts(&text).unwrap();
    let again: Vec<&Instruction> = again.iter().flat_map(|x| x.instructions()).collect();
    assert_eq!(again, ins);
}

#[test]
fn declarations_and_blocks() {
    let m = roundtrip(
        ".version 8.0\n.target sm_90a\n.address_size 64\n.global .align 4 .u32 g[2] = {1, 2};\n\
         .extern .shared .align 16 .b8 smem[];\n.func (.param .b32 r) f(.param .b32 a) { ret; }\n\
         .visible .entry k(.param .align 64 .b8 map[128]) .reqntid 128, 1, 1 .maxnreg 168\n\
         { .reg .pred %p<3>, %q; .local .align 8 .b8 buf[16]; { .reg .b64 %x; L: @%p1 bra L; } ret; }",
    );
    let Item::Var(g) = &m.items[3] else {
        panic!("{:?}", m.items[3])
    };
    assert_eq!((g.align, g.dims.as_slice()), (Some(4), &[Some(2)][..]));
    assert!(matches!(&g.init, Some(Init::List(v)) if v.len() == 2));
    let Item::Func(k) = &m.items[6] else { panic!() };
    assert!(k.entry);
    assert_eq!(k.perf[0].args, vec![128, 1, 1]);
    assert_eq!(k.perf[1].name, ".maxnreg");
    let body = k.body.as_ref().unwrap();
    assert!(
        matches!(&body[0], Stmt::Reg(r) if r.names[0].range == Some(3) && r.names[1].name == "%q")
    );
    assert!(matches!(&body[2], Stmt::Block(b) if b.stmts.len() == 3));
}

#[test]
fn errors_are_values_with_lines() {
    for (src, line, msg) in [
        (".entry k() {\n mov.u32 %r1, 1", 2, "missing ';'"),
        (
            ".entry k() {\n mov.u32 %r1, [a b];\n}",
            2,
            "bad address expression",
        ),
        ("\n\n.bogus x;", 3, "unexpected module-level directive"),
        (".entry k() { ret; ", 1, "unterminated function body"),
        (".entry k(.foo x) {}", 1, "expected .param"),
        (".entry k() { mov.u32 %r1, 0fZZ; }", 1, "bad number"),
    ] {
        let e = parse(src).expect_err(src);
        assert_eq!(e.line, line, "{src}: {e}");
        assert!(e.message.contains(msg), "{src}: {e}");
    }
    assert!(parse_stmts("}").is_err());
}

#[test]
fn hostile_nesting_is_an_error_not_a_crash() {
    for open in ["{", "(", "[{"] {
        let src = format!(".entry k() {{ mov.u32 %r1, {}; }}", open.repeat(100_000));
        assert!(parse(&src).is_err());
    }
    let src = format!(".entry k() {}", "{".repeat(100_000));
    assert!(parse(&src).unwrap_err().message.contains("nested deeper"));
    let src = format!(".global .u32 g[1] = {};", "{".repeat(100_000));
    assert!(parse(&src).is_err());
}

#[test]
fn state_spaces_of_declarations_and_instructions() {
    let m = roundtrip(".extern .shared .align 16 .b8 s[];\n.const .f32 c = 0f3F800000;\n.entry k(.param .u64 p) { .local .b8 l[4]; ret; }");
    let spaces: Vec<Space> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Var(v) => Some(v.space),
            Item::Func(f) => f.params.as_ref().map(|p| p[0].space),
            _ => None,
        })
        .collect();
    assert_eq!(spaces, vec![Space::Shared, Space::Const, Space::Param]);
    let s = parse_stmts(
        "st.shared::cluster.u32 [a], 1; ld.global.nc.v4.f32 {a, b, c, d}, [p]; st.u32 [q], 2;",
    )
    .unwrap();
    let ins: Vec<&Instruction> = s.iter().flat_map(|x| x.instructions()).collect();
    assert_eq!(ins[0].space(), Some(Space::Shared));
    assert_eq!(ins[1].space(), Some(Space::Global));
    assert_eq!(
        ins[1].modifiers().collect::<Vec<_>>(),
        ["global", "nc", "v4", "f32"]
    );
    assert_eq!(ins[2].space(), None);
}

/// Mutated fixtures: whatever still parses prints to text that parses back to the same model (the printer
/// and the parser agree on every form the parser accepts, not only on well-formed PTX).
#[test]
fn mutated_ptx_that_parses_round_trips() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../prism-runtime/tests/fixtures");
    let src = std::fs::read_to_string(dir.join("misc.ptx")).expect("misc.ptx fixture");
    let pieces = [
        "",
        ";",
        "{",
        "}",
        "[",
        "]",
        "(",
        ")",
        ",",
        "|",
        "!",
        "-",
        "+",
        "@",
        "%r1",
        "0x10",
        "0f3F800000",
        "1.5e-3",
        "-7",
        "_",
        ".reg .b32 %q<3>;",
        ".shared .u32 s[4];",
        "L:",
        "{%r1, %r2}",
        "[%rd1+-8]",
        "sym+4",
        "1e999",
        "99999999999999999999",
        "\"s\"",
        ".pragma \"x\";",
        "\n",
        "//c\n",
        "/*c*/",
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let (mut parsed, mut cases) = (0, 0);
    for _ in 0..400 {
        let mut s = src.clone();
        for _ in 0..1 + next(4) {
            let at = next(s.len());
            let at = (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
            let cut = (at + next(12)).min(s.len());
            let cut = (cut..=s.len())
                .find(|&i| s.is_char_boundary(i))
                .unwrap_or(s.len());
            s.replace_range(at..cut, pieces[next(pieces.len())]);
        }
        cases += 1;
        if let Ok(m) = parse(&s) {
            parsed += 1;
            let printed = m.to_string();
            let again =
                parse(&printed).unwrap_or_else(|e| panic!("printed text does not parse: {e}"));
            assert_eq!(again, m, "round trip changed the model of a mutated module");
        }
    }
    assert!(
        parsed > cases / 10,
        "only {parsed} of {cases} mutants parsed"
    );
}

#[test]
fn address_initializers() {
    let m = roundtrip(
        ".version 8.0\n.target sm_90\n.address_size 64\n.global .align 4 .b8 A[16];\n\
         .global .align 8 .u64 p[4] = {generic(A), generic(A)+8, A, f};\n\
         .global .align 1 .u8 b[3] = {7, 0XFF(generic(A)+4), 0xFF00(generic(A)+4)};\n\
         .func f() { ret; }",
    );
    let Item::Var(p) = &m.items[4] else {
        panic!("{:?}", m.items[4])
    };
    let Some(Init::List(v)) = &p.init else {
        panic!("{:?}", p.init)
    };
    let addr = |i: &Init| match i {
        Init::Addr(a) => (a.name.clone(), a.generic, a.offset, a.mask.clone()),
        other => panic!("{other:?}"),
    };
    assert_eq!(addr(&v[1]), ("A".into(), true, 8, None));
    assert_eq!(addr(&v[2]), ("A".into(), false, 0, None));
    assert_eq!(addr(&v[3]), ("f".into(), false, 0, None));
    let Item::Var(b) = &m.items[5] else { panic!() };
    let Some(Init::List(v)) = &b.init else {
        panic!()
    };
    assert!(matches!(&v[0], Init::Value(Operand::Int(7))));
    assert_eq!(addr(&v[2]), ("A".into(), true, 4, Some("0xFF00".into())));
    assert!(parse(".global .u64 p = 0xFF(generic(A);").is_err());
}
