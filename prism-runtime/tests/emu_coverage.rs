//! The PTX ISA coverage table (docs/PTX-COVERAGE.md) against the emulator's decoder: the fixture
//! `tests/fixtures/coverage.ptx` holds every form the table marks supported and must decode without a single
//! `Unsupported` instruction; `coverage_unsupported.ptx` holds the forms it marks unsupported, which must
//! parse (a module is never rejected for them) and decode to `Unsupported`; and every supported mnemonic,
//! special register and directive the table names must occur in the fixture.

use prism_runtime::emu::*;

fn read(rel: &str) -> String {
    std::fs::read_to_string(format!("{}/{rel}", env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn every_supported_form_decodes() {
    let src = read("tests/fixtures/coverage.ptx");
    let m = Module::parse(&src).unwrap_or_else(|e| panic!("coverage.ptx: {e}"));
    let bad = m.unsupported_instructions();
    assert!(
        bad.is_empty(),
        "{} supported forms decode as unsupported:\n{}",
        bad.len(),
        bad.iter()
            .map(|(l, s)| format!("  line {l}: {s}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(m.instruction_count() > 250, "{}", m.instruction_count());
}

/// Instruction lines of a PTX text: (1-based line, opcode), skipping directives, labels, braces, comments.
fn instruction_lines(src: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_body = false;
    for (i, raw) in src.lines().enumerate() {
        let line = raw.split("//").next().unwrap_or("").trim();
        if line.starts_with('{') && !in_body {
            in_body = true;
            continue;
        }
        let labelled = line
            .split_whitespace()
            .next()
            .is_some_and(|w| w.ends_with(':'));
        if !in_body || line.is_empty() || line.starts_with('.') || labelled {
            continue;
        }
        if line == "}" || line == "{" {
            continue;
        }
        let mut words = line.split_whitespace();
        let mut op = words.next().unwrap_or("");
        if op.starts_with('@') {
            op = words.next().unwrap_or("");
        }
        out.push((i + 1, op.trim_end_matches(';').to_string()));
    }
    out
}

#[test]
fn every_unsupported_form_parses_and_faults_only_if_run() {
    let src = read("tests/fixtures/coverage_unsupported.ptx");
    let m = Module::parse(&src).unwrap_or_else(|e| panic!("coverage_unsupported.ptx: {e}"));
    let bad: std::collections::HashMap<usize, String> =
        m.unsupported_instructions().into_iter().collect();
    let lines = instruction_lines(&src);
    assert!(lines.len() > 40, "{}", lines.len());
    for (line, op) in &lines {
        let supported_control = op.starts_with("ld.param") || op == "exit";
        assert_eq!(
            bad.contains_key(line),
            !supported_control,
            "line {line}: {op} ({:?})",
            bad.get(line)
        );
    }
    // Running it faults at the first unsupported instruction, naming it.
    let mut e = Emulator::new(EmuConfig::default());
    let out = e.alloc(4);
    match e.launch(
        &m,
        "uncovered",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(out)],
    ) {
        Err(EmuError::Faulted { faults, .. }) => assert!(
            faults
                .iter()
                .any(|f| f.kind == FaultKind::Unsupported && f.message.contains("tld4.r.cube")),
            "{faults:?}"
        ),
        other => panic!("expected an Unsupported fault, got {other:?}"),
    }
}

/// Rows of the coverage tables: (forms, status), forms being the backticked tokens of the cell before the
/// status cell.
fn table_rows(doc: &str) -> Vec<(Vec<String>, String)> {
    const STATUS: [&str; 4] = ["supported", "partial", "unsupported", "n/a"];
    let mut rows = Vec::new();
    for line in doc.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<String> = line
            .replace("\\|", "/")
            .split('|')
            .map(|c| c.trim().to_string())
            .collect();
        let Some(si) = cells.iter().position(|c| STATUS.contains(&c.as_str())) else {
            continue;
        };
        let forms: Vec<String> = cells[si - 1]
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        rows.push((forms, cells[si].clone()));
    }
    rows
}

/// Whether `form` occurs in `src`: special registers, directives and constants as text; a mnemonic as a
/// dot-component prefix of an instruction's opcode.
fn occurs(form: &str, src: &str, opcodes: &[String]) -> bool {
    if form.starts_with('%') || form.starts_with('.') || form.starts_with('@') || form == "WARP_SZ"
    {
        return src.contains(form);
    }
    let want: Vec<&str> = form.split('.').collect();
    opcodes.iter().any(|op| {
        let have: Vec<&str> = op.split('.').collect();
        have.len() >= want.len() && have[..want.len()] == want[..]
    })
}

#[test]
fn the_table_and_the_fixtures_agree() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/PTX-COVERAGE.md"
    ))
    .expect("docs/PTX-COVERAGE.md");
    let sup = read("tests/fixtures/coverage.ptx");
    let uns = read("tests/fixtures/coverage_unsupported.ptx");
    let ops =
        |src: &str| -> Vec<String> { instruction_lines(src).into_iter().map(|(_, o)| o).collect() };
    let (sup_ops, uns_ops) = (ops(&sup), ops(&uns));
    let rows = table_rows(&doc);
    assert!(rows.len() > 50, "{} rows", rows.len());
    let (mut checked, mut missing) = (0, Vec::new());
    for (forms, status) in &rows {
        let (src, ops) = match status.as_str() {
            "supported" | "partial" => (&sup, &sup_ops),
            "unsupported" => (&uns, &uns_ops),
            _ => continue,
        };
        for f in forms {
            checked += 1;
            if !occurs(f, src, ops) {
                missing.push(format!("{f} ({status})"));
            }
        }
    }
    assert!(checked > 250, "{checked} forms checked");
    assert!(
        missing.is_empty(),
        "forms of docs/PTX-COVERAGE.md missing from their fixture: {missing:?}"
    );
}
