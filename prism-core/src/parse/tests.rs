//! Parser unit tests: the paper's figures, statements, literals, syntax errors and robustness.

use super::*;

/// Figs. 5 and 6, from the kernel library's source (the one copy of the paper's running example).
const FIG5_6: &str = include_str!("../../../prism-kernels/src/mma.rs");
const CUB: &str = include_str!("../../tests/programs/cub_load_store.rs");
const VADD: &str = include_str!("../../tests/programs/vector_add.rs");
const FIG2: &str = include_str!("../../tests/programs/fig2_warp_mma.rs");

fn one(src: &str) -> Function {
    let mut v = parse_source(src)
        .unwrap_or_else(|e| panic!("{:?}", e.iter().map(|d| d.text()).collect::<Vec<_>>()));
    assert_eq!(v.len(), 1);
    v.remove(0)
}

fn err(src: &str) -> Diagnostic {
    match parse_source(src) {
        Ok(_) => panic!("expected a SYNTAX error for {src}"),
        Err(mut e) => e.remove(0),
    }
}

#[test]
fn fixtures_parse() {
    for src in [FIG2, FIG5_6, CUB, VADD] {
        let fs = parse_source(src)
            .unwrap_or_else(|e| panic!("{:?}", e.iter().map(|d| d.text()).collect::<Vec<_>>()));
        assert!(!fs.is_empty());
    }
    assert_eq!(parse_source(CUB).unwrap().len(), 7);
}

#[test]
fn fig5_structure() {
    let f = parse_source(FIG5_6).expect("parses").remove(0);
    assert_eq!(f.kind, FnKind::Device);
    assert_eq!(f.name.name, "simple_mma");
    assert!(f.is_pub);
    assert_eq!(f.requires.len(), 1);
    assert_eq!(f.requires[0].perspective, Perspective::thread(32));
    assert_eq!(f.params.len(), 5);
    assert!(matches!(
        f.params[2].ty,
        Type::Ptr {
            elem: ScalarType::F32,
            mutable: true
        }
    ));
    assert_eq!(f.params[0].at.unwrap().perspective, Perspective::thread(32));
    assert!(f.params[3].at.is_none());
    // let x; 3 arrays; group; mma call; partition
    assert_eq!(f.body.stmts.len(), 7);
    match &f.body.stmts[0].kind {
        StmtKind::Let {
            name,
            at,
            init: Some(init),
            ..
        } => {
            assert_eq!(name.name, "x");
            assert_eq!(at.unwrap().perspective, Perspective::thread(1));
            assert!(
                matches!(&init.kind, ExprKind::Call { path, args, .. } if path[0].name == "id" && args.is_empty())
            );
        }
        other => panic!("{other:?}"),
    }
    match &f.body.stmts[6].kind {
        StmtKind::Partition {
            target,
            at,
            index,
            new_name,
            body,
        } => {
            assert_eq!(target.name, "c");
            assert_eq!(at.perspective, Perspective::thread(1));
            assert_eq!(index.params.len(), 2);
            assert_eq!(new_name.name, "c_thrd");
            assert!(
                matches!(&body.stmts[0].kind, StmtKind::Group { body, .. } if body.stmts.len() == 4)
            );
        }
        other => panic!("{other:?}"),
    }
    match &f.body.stmts[5].kind {
        StmtKind::Expr(Expr {
            kind: ExprKind::Call { path, args, .. },
            ..
        }) => {
            assert_eq!(path[0].name, "mma_m16n8k8_tf32");
            assert!(matches!(args[0].kind, ExprKind::Ref { mutable: true, .. }));
            assert!(matches!(args[1].kind, ExprKind::Ref { mutable: false, .. }));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn fig6_structure() {
    let fs = parse_source(FIG5_6).unwrap();
    let k = &fs[1];
    assert_eq!(k.kind, FnKind::Kernel);
    assert_eq!(
        k.requires.iter().map(|p| p.perspective).collect::<Vec<_>>(),
        vec![
            Perspective::grid(1),
            Perspective::block(1),
            Perspective::thread(32)
        ]
    );
    assert_eq!(
        eval_const(k.smem.as_ref().unwrap(), &|_| None).unwrap(),
        1280
    );
    // Find the split inside the claim.
    fn find_split(b: &Block) -> Option<(Level, u32, u32)> {
        for s in &b.stmts {
            let found = match &s.kind {
                StmtKind::Split { level, unit, arms } => Some((*level, *unit, arms[0].size)),
                StmtKind::Group { body, .. }
                | StmtKind::Partition { body, .. }
                | StmtKind::Claim { body, .. }
                | StmtKind::For { body, .. } => find_split(body),
                _ => None,
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }
    assert_eq!(find_split(&k.body), Some((Level::Thread, 1, 32)));
    // The source spans are real line/column positions.
    let line = FIG5_6
        .lines()
        .position(|l| l.starts_with("pub fn mma_tf32_naive"))
        .expect("kernel")
        + 1;
    assert_eq!(k.name.span.start().line, line);
}

#[test]
fn const_generics_and_instances() {
    let fs = parse_source(CUB).unwrap();
    let k = fs.iter().find(|f| f.name.name == "block_copy").unwrap();
    assert_eq!(k.const_params.len(), 1);
    assert_eq!(k.const_params[0].name.name, "N");
    assert_eq!(
        k.instances
            .iter()
            .map(|i| i.values.clone())
            .collect::<Vec<_>>(),
        vec![vec![1], vec![4]]
    );
    assert_eq!(
        eval_const(k.threads.as_ref().unwrap(), &|_| None).unwrap(),
        128
    );
    let w = fs.iter().find(|f| f.name.name == "warp_load").unwrap();
    assert!(matches!(
        &w.params[1].ty,
        Type::ArrayRef {
            elem: ScalarType::I32,
            mutable: true,
            ..
        }
    ));
    let src =
        "#[prism_kernel(requires(grid[1], block[1], thread[1]), instances = [(64, 8), (128, 16)])]
                   fn k<const BM: u32, const BK: u32>() { let x = f::<BM, { BK * 2 }, 3>(); }";
    let f = one(src);
    assert_eq!(f.instances[1].values, vec![128, 16]);
    match &f.body.stmts[0].kind {
        StmtKind::Let {
            init:
                Some(Expr {
                    kind: ExprKind::Call { generics, .. },
                    ..
                }),
            ..
        } => assert_eq!(generics.len(), 3),
        other => panic!("{other:?}"),
    }
}

#[test]
fn perspectives_sugar() {
    let f = one("#[prism_device(requires(block[1], warpgroup, warp[2], warp, thread[2 * 2]), returns = warp)] fn f() {}");
    let ps: Vec<_> = f.requires.iter().map(|p| p.perspective).collect();
    assert_eq!(
        ps,
        vec![
            Perspective::block(1),
            Perspective::thread(128),
            Perspective::thread(64),
            Perspective::thread(32),
            Perspective::thread(4)
        ]
    );
    assert_eq!(f.returns.unwrap().perspective, Perspective::thread(32));
}

#[test]
fn statements() {
    let src = r#"
            #[prism_device(requires(thread[1]))]
            fn f(p: *mut f32, n: u32) -> f32 {
                let mut s = 0.0f32;
                let a: [f32; 4] = [1.0, 2.0, 3.0, 4.0];
                for i in (0..n).step_by(2) { s += a[i] * 2.0; if s > 1.0 { break; } else if s < 0.0 { continue; } else { s = -s; } }
                while s < 10.0 { s = s * 2.0; }
                p[0] = s.sqrt().min(1.0);
                let t = if s > 0.0 { s } else { 0.0 };
                let h = t as bf16;
                unsafe { asm!("mov.u32 {r}, 1;", r = out(u32) n2, q = in(u64) 4u64, z = inout(f32) s); }
                match split(warp) { 1 => { } 2 => { } }
                t + (h as f32) + (!true as i32) as f32
            }"#;
    let f = one(src);
    assert!(f.body.tail.is_some());
    assert!(matches!(f.ret, Some((Type::Scalar(ScalarType::F32), _))));
    let kinds: Vec<&StmtKind> = f.body.stmts.iter().map(|s| &s.kind).collect();
    assert!(matches!(kinds[2], StmtKind::For { step: Some(_), .. }));
    match kinds[2] {
        StmtKind::For { body, .. } => {
            assert!(matches!(
                &body.stmts[0].kind,
                StmtKind::Assign {
                    op: Some(BinOp::Add),
                    ..
                }
            ));
            match &body.stmts[1].kind {
                StmtKind::If {
                    else_block: Some(eb),
                    ..
                } => {
                    assert!(matches!(
                        &eb.stmts[0].kind,
                        StmtKind::If {
                            else_block: Some(_),
                            ..
                        }
                    ))
                }
                other => panic!("{other:?}"),
            }
        }
        _ => unreachable!(),
    }
    assert!(matches!(
        kinds[5],
        StmtKind::Let {
            init: Some(Expr {
                kind: ExprKind::Select { .. },
                ..
            }),
            ..
        }
    ));
    match kinds[7] {
        StmtKind::Unsafe { body } => match &body.stmts[0].kind {
            StmtKind::Expr(Expr {
                kind: ExprKind::Asm { template, operands },
                ..
            }) => {
                assert_eq!(template, "mov.u32 {r}, 1;");
                assert_eq!(operands.len(), 3);
                assert_eq!(operands[0].dir, AsmDir::Out);
                assert_eq!(operands[1].dir, AsmDir::In);
                assert_eq!(operands[2].dir, AsmDir::InOut);
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    match kinds[8] {
        StmtKind::Split { level, unit, arms } => {
            assert_eq!((*level, *unit), (Level::Thread, 32));
            assert_eq!(
                arms.iter().map(|a| a.size).collect::<Vec<_>>(),
                vec![32, 64]
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn shared_and_literals() {
    let f = one("#[prism_kernel(requires(grid[1], block[1], thread[1]))] fn k() { let s: Shared<[f32; 16 * 8]>; let x = 7u64; let y = 1.5; }");
    assert!(matches!(
        &f.body.stmts[0].kind,
        StmtKind::Let {
            ty: Some(Type::Shared {
                elem: ScalarType::F32,
                ..
            }),
            init: None,
            ..
        }
    ));
    assert!(matches!(
        &f.body.stmts[1].kind,
        StmtKind::Let {
            init: Some(Expr {
                kind: ExprKind::Lit(Lit::Int(7, Some(ScalarType::U64))),
                ..
            }),
            ..
        }
    ));
    assert!(matches!(
        &f.body.stmts[2].kind,
        StmtKind::Let {
            init: Some(Expr {
                kind: ExprKind::Lit(Lit::Float(_, None)),
                ..
            }),
            ..
        }
    ));
}

#[test]
fn syntax_errors() {
    let cases: &[(&str, &str)] = &[
        ("#[prism_kernel(smem = 4)] fn k() {}", "requires"),
        ("#[prism_kernel(requires(grid[0]))] fn k() {}", "at least 1"),
        (
            "#[prism_kernel(requires(grid[N]))] fn k<const N: u32>() {}",
            "not a constant",
        ),
        (
            "#[prism_kernel(requires(wave[1]))] fn k() {}",
            "expected a perspective",
        ),
        (
            "#[prism_kernel(requires(grid[1]), foo = 3)] fn k() {}",
            "unknown",
        ),
        (
            "#[prism_kernel(requires(grid[1]), threads = 64, threads = 128)] fn k() {}",
            "`threads` is given twice",
        ),
        (
            "#[prism_kernel(requires(grid[1]), requires(block[1]))] fn k() {}",
            "`requires` is given twice",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { return; }",
            "`return`",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { loop { } }",
            "`loop`",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { let (a, b) = (1, 2); }",
            "patterns",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { let f = |x| x; }",
            "closures",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { let a = 1; let r = &(a + 1); }",
            "references",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { let t = (1, 2); }",
            "tuples",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { let s = S { a: 1 }; }",
            "structs",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k(x: String) {}",
            "scalar type",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k(x: &u32) {}",
            "arrays",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k<'a>() {}",
            "const generic",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { match x { 1 => {} } }",
            "split",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { match split(thread) { _ => {} } }",
            "literal sizes",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { group(block[1], |x| { }); }",
            "0 closure parameters",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { let x = group(block[1], || {}); }",
            "statement",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { for i in 0..=3 {} }",
            "inclusive",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { let x = 1u8; }",
            "suffix",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { println!(\"hi\"); }",
            "asm!",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { partition(x, thread[1], |y| { }); }",
            "4 arguments",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { let x = a.b; }",
            "field",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { { let x = 1; } }",
            "bare blocks",
        ),
        (
            "#[prism_kernel(requires(grid[1]))] fn k() { let x = *p; }",
            "dereference",
        ),
    ];
    for (src, needle) in cases {
        let d = err(src);
        assert!(d.rule == "SYNTAX" || d.rule == "CONST", "{src}: {}", d.rule);
        assert!(
            d.message.contains(needle) || d.help.as_deref().unwrap_or("").contains(needle),
            "{src}: {}",
            d.text()
        );
    }
}

#[test]
fn error_span_points_at_token() {
    let src = "#[prism_kernel(requires(grid[1]))]\nfn k() {\n    let a = 1;\n    return;\n}";
    let d = err(src);
    assert_eq!(d.span.start().line, 4);
    assert_eq!(d.span.start().column, 4);
}

#[test]
fn several_errors_collected() {
    let src = "#[prism_kernel(requires(grid[1]))] fn k() { return; let (a, b) = c; loop {} }";
    assert_eq!(parse_source(src).unwrap_err().len(), 3);
}

#[test]
fn deep_nesting_rejected_without_panic() {
    let deep = format!(
        "#[prism_kernel(requires(grid[1]))] fn k() {{ let x = {}1{}; }}",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    assert!(parse_source(&deep).unwrap_err()[0]
        .message
        .contains("nesting"));
    let neg = format!(
        "#[prism_kernel(requires(grid[1]))] fn k() {{ let x = {}1; }}",
        "-".repeat(5000)
    );
    assert!(parse_source(&neg).is_err());
    let chain = format!(
        "#[prism_kernel(requires(grid[1]))] fn k() {{ let x = 1{}; }}",
        " + 1".repeat(300)
    );
    assert!(parse_source(&chain).unwrap_err()[0]
        .message
        .contains("nesting"));
    let elifs = format!(
        "#[prism_kernel(requires(grid[1]))] fn k() {{ if a {{}} {} }}",
        "else if a {} ".repeat(1000)
    );
    assert!(parse_source(&elifs).is_err());
    let blocks = format!(
        "#[prism_kernel(requires(grid[1]))] fn k() {{ {} {} }}",
        "if a {".repeat(70),
        "}".repeat(70)
    );
    assert!(parse_source(&blocks).unwrap_err()[0]
        .message
        .contains("nesting"));
}

/// Cheap fuzzing: every truncation and single-token deletion of the fixtures must give Ok or errors, never
/// a panic.
#[test]
fn mutations_never_panic() {
    for src in [FIG5_6, CUB] {
        let toks: Vec<String> = src.split_whitespace().map(String::from).collect();
        for i in (0..toks.len()).step_by(3) {
            let mut t = toks.clone();
            t.remove(i);
            let _ = parse_source(&t.join(" "));
            let _ = parse_source(&toks[..i].join(" "));
        }
        for cut in (0..src.len()).step_by(97) {
            if src.is_char_boundary(cut) {
                let _ = parse_source(&src[..cut]);
            }
        }
    }
}
#[test]
fn brace_less_closure_body_from_rustfmt() {
    let src = r#"
            #[prism_kernel(requires(grid[1], block[1], thread[32]), smem = 256)]
            fn k() {
                group(block[1], || {
                    let s: Shared<[f32; 64]>;
                    claim(s, thread[32], |w| match split(thread) {
                        32 => {}
                    });
                });
            }
        "#;
    let fs = parse_source(src).expect("rustfmt's brace-less closure body parses");
    assert_eq!(fs.len(), 1);
}
