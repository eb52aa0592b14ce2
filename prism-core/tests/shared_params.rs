//! `Shared<[T; N], L>` device-function parameters: the caller's allocation must be whole, of the element
//! type and layout the callee declares, and at least `N` elements long (rule CALL-ARG), since the callee's
//! wgmma descriptors are built from that layout.

use prism_core::ast::FnKind;

const SRC: &str = r#"
#[prism_device(requires(thread[128]))]
fn first(acc: &mut [f32; 32], a: Shared<[bf16; 64 * 64], Swizzle128>, b: Shared<[bf16; 64 * 64], Swizzle128>) {
    wgmma_bf16(acc, a, 0, b, 0);
}

#[prism_kernel(requires(grid[1], block[1], warpgroup), threads = 128)]
fn k(c: *mut f32) {
    group(block[1], || {
        let sa: Shared<[bf16; @LEN@], @LAYOUT@>;
        let sb: Shared<[bf16; 64 * 64], Swizzle128>;
        #[at(thread[1])]
        let mut acc = [0.0f32; 32];
        group(thread[128], || {
            first(&mut acc, sa, sb);
        });
    });
}
"#;

/// The diagnostics of compiling `SRC` with the A allocation's length and layout substituted (empty: it compiles).
fn diagnostics(len: &str, layout: &str) -> Vec<String> {
    let src = SRC.replace("@LEN@", len).replace("@LAYOUT@", layout);
    let fns = prism_core::parse::parse_source(&src).expect("parses");
    let deps: Vec<_> = fns
        .iter()
        .filter(|f| f.kind == FnKind::Device)
        .cloned()
        .collect();
    let k = fns
        .iter()
        .find(|f| f.kind == FnKind::Kernel)
        .expect("kernel");
    match prism_core::compile_kernel(k, &deps) {
        Ok(_) => Vec::new(),
        Err(d) => d.iter().map(|d| d.text()).collect(),
    }
}

#[test]
fn a_whole_allocation_in_the_declared_layout_is_accepted() {
    assert_eq!(diagnostics("64 * 64", "Swizzle128"), Vec::<String>::new());
    // Longer is fine: the callee's offsets are checked against the caller's allocation.
    assert_eq!(diagnostics("128 * 64", "Swizzle128"), Vec::<String>::new());
}

#[test]
fn another_layout_or_a_shorter_allocation_is_refused() {
    for (len, layout, why) in [
        ("64 * 64", "Swizzle64", "Swizzle64"),
        ("32 * 64", "Swizzle128", "2048 elements"),
    ] {
        let d = diagnostics(len, layout);
        assert!(
            d.iter().any(|t| t.contains("[CALL-ARG]")
                && t.contains("parameter `a`")
                && t.contains(why)),
            "{len} {layout}: {d:?}"
        );
    }
}
