//! The intrinsics table (`prism_core::intrinsics`) against the checker: every row's arity and perspective
//! is the rule the checker enforces, for the Hopper rows (checked in `check/hopper.rs`) as for the others.

use prism_core::check::{check_function, INTRINSICS};
use prism_core::intrinsics::{lookup, Arity, Need, TABLE};
use prism_core::parse::parse_source;
use prism_core::Diagnostic;

/// The diagnostics of a kernel (cluster of 2, so `sync_cluster` has a cluster) whose body is `body`.
fn diags(body: &str) -> Vec<Diagnostic> {
    let src = format!(
        "#[prism_kernel(requires(grid[1], block[1], thread[1]), cluster = 2)]\nfn k(p: *mut u32) {{\n{body}\n}}\n"
    );
    let fs = parse_source(&src).unwrap_or_else(|e| {
        panic!(
            "parse: {:?}",
            e.iter().map(|d| d.text()).collect::<Vec<_>>()
        )
    });
    match check_function(&fs[0], &[]) {
        Ok(_) => Vec::new(),
        Err(ds) => ds,
    }
}

/// `name(0u32, ..)` with `n` arguments, called from `thread[1]`.
fn call_from_thread(name: &str, n: usize) -> Vec<Diagnostic> {
    let args = vec!["0u32"; n].join(", ");
    diags(&format!(
        "    group(thread[1], || {{\n        {name}({args});\n    }});"
    ))
}

#[test]
fn names_are_the_checkers_intrinsics() {
    let names: Vec<&str> = TABLE.iter().map(|i| i.name).collect();
    assert_eq!(names, INTRINSICS);
    for i in TABLE {
        assert_eq!(lookup(i.name).map(|j| j.name), Some(i.name));
    }
    assert!(lookup("warp_load").is_none());
}

#[test]
fn every_row_arity_is_the_checkers() {
    for i in TABLE {
        let (wrong, want) = match i.arity {
            Arity::Exactly(k) => (k + 1, format!("takes {k} argument")),
            Arity::TwoPlusRank => (2, "takes 2 + the map's rank argument".to_string()),
            Arity::FiveOrSix => (7, "takes 5 or 6 argument".to_string()),
        };
        // `id()` says it in its own words.
        let want = if i.name == "id" {
            "`id()` takes no arguments".to_string()
        } else {
            want
        };
        let ds = call_from_thread(i.name, wrong);
        assert!(
            ds.iter().any(|d| d.message.contains(&want)),
            "`{}` with {wrong} arguments: no diagnostic says {want:?}; got {:#?}",
            i.name,
            ds.iter().map(|d| d.text()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn every_row_perspective_is_the_checkers() {
    for i in TABLE {
        let n = match i.arity {
            Arity::Exactly(k) => k,
            Arity::TwoPlusRank => 3,
            Arity::FiveOrSix => 5,
        };
        let ds = call_from_thread(i.name, n);
        let needs = format!("`{}` requires", i.name);
        let rejected = ds
            .iter()
            .any(|d| d.rule == "INTRINSIC" && d.message.contains(&needs));
        match i.need {
            Need::Any => assert!(!rejected, "`{}` needs no perspective", i.name),
            Need::At(p) => {
                let broader = p.n > 1 || p.level != prism_core::ast::Level::Thread;
                assert_eq!(
                    rejected,
                    broader,
                    "`{}` needs {p}: called from thread[1]; got {:#?}",
                    i.name,
                    ds.iter().map(|d| d.text()).collect::<Vec<_>>()
                );
                if broader {
                    let d = ds.iter().find(|d| d.message.contains(&needs)).unwrap();
                    assert!(d.message.contains(&p.to_string()), "{}", d.message);
                }
            }
            // The cluster of this kernel is 2: block[2].
            Need::Cluster => assert!(
                ds.iter()
                    .any(|d| d.message.contains(&needs) && d.message.contains("block[2]")),
                "`{}` needs the cluster; got {:#?}",
                i.name,
                ds.iter().map(|d| d.text()).collect::<Vec<_>>()
            ),
        }
    }
}
