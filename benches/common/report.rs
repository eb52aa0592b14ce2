//! The results of one benchmark binary: one row per (kernel, size), each a measurement of ours next to its
//! reference from the same run, with the correctness check that came first. Printed as a table at the end of
//! the run, and written as `<bench>.json` and `<bench>.tsv` into the folder named by `PRISM_BENCH_OUT` when
//! that is set (`scripts/gpu/run.sh` sets it and merges the TSVs into its final table).

use std::fmt::Write as _;
use std::path::PathBuf;

/// Environment variable naming the folder where [`Report::finish`] writes `<bench>.json` and `<bench>.tsv`.
pub const OUT_ENV: &str = "PRISM_BENCH_OUT";

/// One timed side of a row: median seconds per call, and the rate in the report's unit.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub secs: f64,
    pub rate: f64,
}

/// A row: ours, the reference, and whether ours agreed with it before timing.
#[derive(Clone, Debug)]
struct Row {
    kernel: String,
    size: String,
    ours: Option<Timing>,
    reference: String,
    reference_timing: Option<Timing>,
    /// `None`: the result matched its reference; `Some(why)`: it did not, or the case could not run.
    failure: Option<String>,
}

impl Row {
    fn ratio(&self) -> Option<f64> {
        match (self.ours, self.reference_timing) {
            (Some(o), Some(r)) if r.rate > 0.0 => Some(o.rate / r.rate),
            _ => None,
        }
    }
}

/// The results table of one benchmark binary.
pub struct Report {
    bench: String,
    unit: String,
    device: String,
    method: String,
    rows: Vec<Row>,
}

fn fmt_opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".to_string())
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_num(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:e}"),
        _ => "null".to_string(),
    }
}

/// A TSV cell: tabs and newlines would break the row.
fn tsv_cell(s: &str) -> String {
    s.replace(['\t', '\n'], " ")
}

impl Report {
    /// A report for benchmark `bench` on `device`, rates in `unit` (`"GFLOP/s"`, `"GB/s"`); `method` says in
    /// one line how the figures were taken (printed above the table).
    pub fn new(bench: &str, unit: &str, device: &str, method: &str) -> Self {
        Report {
            bench: bench.to_string(),
            unit: unit.to_string(),
            device: device.to_string(),
            method: method.to_string(),
            rows: Vec::new(),
        }
    }

    /// A case that ran, matched its reference and was timed next to it.
    pub fn pass(
        &mut self,
        kernel: &str,
        size: &str,
        ours: Timing,
        reference: &str,
        reference_timing: Timing,
    ) {
        self.rows.push(Row {
            kernel: kernel.to_string(),
            size: size.to_string(),
            ours: Some(ours),
            reference: reference.to_string(),
            reference_timing: Some(reference_timing),
            failure: None,
        });
    }

    /// A case whose result disagreed with its reference, or that could not run; it makes the binary exit 1.
    pub fn fail(&mut self, kernel: &str, size: &str, reference: &str, why: &str) {
        println!("FAIL {kernel} at {size}: {why}");
        self.rows.push(Row {
            kernel: kernel.to_string(),
            size: size.to_string(),
            ours: None,
            reference: reference.to_string(),
            reference_timing: None,
            failure: Some(why.to_string()),
        });
    }

    /// Number of failed cases so far.
    pub fn failures(&self) -> usize {
        self.rows.iter().filter(|r| r.failure.is_some()).count()
    }

    fn cells(&self, r: &Row) -> Vec<String> {
        vec![
            r.kernel.clone(),
            r.size.clone(),
            fmt_opt(r.ours.map(|t| t.secs), |s| format!("{:.3}", s * 1e3)),
            fmt_opt(r.ours.map(|t| t.rate), |v| format!("{v:.0}")),
            r.reference.clone(),
            fmt_opt(r.reference_timing.map(|t| t.secs), |s| {
                format!("{:.3}", s * 1e3)
            }),
            fmt_opt(r.reference_timing.map(|t| t.rate), |v| format!("{v:.0}")),
            fmt_opt(r.ratio(), |v| format!("{v:.2}")),
            match &r.failure {
                None => "pass".to_string(),
                Some(_) => "FAIL".to_string(),
            },
        ]
    }

    fn header(&self) -> Vec<String> {
        let u = &self.unit;
        [
            "kernel".to_string(),
            "size".to_string(),
            "ms".to_string(),
            u.clone(),
            "reference".to_string(),
            "ref ms".to_string(),
            format!("ref {u}"),
            "ratio".to_string(),
            "check".to_string(),
        ]
        .to_vec()
    }

    /// The table as aligned text.
    pub fn render(&self) -> String {
        let header = self.header();
        let rows: Vec<Vec<String>> = self.rows.iter().map(|r| self.cells(r)).collect();
        let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for r in &rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let pad = w[i].saturating_sub(c.chars().count());
                    // Names left-aligned, figures right-aligned.
                    if i == 0 || i == 4 {
                        format!("{c}{}", " ".repeat(pad))
                    } else {
                        format!("{}{c}", " ".repeat(pad))
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
        };
        let mut out = String::new();
        let _ = writeln!(out, "{}", line(&header));
        let _ = writeln!(
            out,
            "{}",
            "-".repeat(w.iter().sum::<usize>() + 2 * (w.len() - 1))
        );
        for r in &rows {
            let _ = writeln!(out, "{}", line(r));
        }
        for r in &self.rows {
            if let Some(why) = &r.failure {
                let _ = writeln!(out, "FAIL {} at {}: {}", r.kernel, r.size, why);
            }
        }
        out
    }

    /// The rows as JSON (one object with the bench, device, unit, method and rows).
    pub fn json(&self) -> String {
        let mut o = String::new();
        let _ = write!(
            o,
            "{{\"bench\":{},\"device\":{},\"unit\":{},\"method\":{},\"rows\":[",
            json_str(&self.bench),
            json_str(&self.device),
            json_str(&self.unit),
            json_str(&self.method)
        );
        for (i, r) in self.rows.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(
                o,
                "\n{{\"kernel\":{},\"size\":{},\"ms\":{},\"rate\":{},\"reference\":{},\"ref_ms\":{},\"ref_rate\":{},\"ratio\":{},\"pass\":{},\"failure\":{}}}",
                json_str(&r.kernel),
                json_str(&r.size),
                json_num(r.ours.map(|t| t.secs * 1e3)),
                json_num(r.ours.map(|t| t.rate)),
                json_str(&r.reference),
                json_num(r.reference_timing.map(|t| t.secs * 1e3)),
                json_num(r.reference_timing.map(|t| t.rate)),
                json_num(r.ratio()),
                r.failure.is_none(),
                r.failure.as_deref().map(json_str).unwrap_or_else(|| "null".into())
            );
        }
        o.push_str("\n]}\n");
        o
    }

    /// One line per row: bench, kernel, size, ours (rate and unit), reference (name, rate), ratio, check.
    /// The columns of `scripts/gpu/run.sh`'s final table.
    pub fn tsv(&self) -> String {
        let mut o = String::new();
        for r in &self.rows {
            let rate =
                |t: Option<Timing>| fmt_opt(t.map(|t| t.rate), |v| format!("{v:.0} {}", self.unit));
            let _ = writeln!(
                o,
                "{}\t{}\t{}\t{}\t{} {}\t{}\t{}",
                tsv_cell(&self.bench),
                tsv_cell(&r.kernel),
                tsv_cell(&r.size),
                rate(r.ours),
                tsv_cell(&r.reference),
                rate(r.reference_timing),
                fmt_opt(r.ratio(), |v| format!("{v:.2}")),
                match &r.failure {
                    None => "pass".to_string(),
                    Some(why) => format!("FAIL: {}", tsv_cell(why)),
                }
            );
        }
        o
    }

    /// Prints the table, writes the files when `PRISM_BENCH_OUT` is set, and exits: 0 when every case
    /// matched its reference, 1 otherwise (or when the files cannot be written).
    pub fn finish(self) -> ! {
        println!(
            "\n{} on {} ({}; ratio = ours / reference)",
            self.bench, self.device, self.method
        );
        print!("{}", self.render());
        let mut code = if self.failures() == 0 { 0 } else { 1 };
        if let Some(dir) = std::env::var_os(OUT_ENV) {
            let dir = PathBuf::from(dir);
            let write = || -> std::io::Result<()> {
                std::fs::create_dir_all(&dir)?;
                std::fs::write(dir.join(format!("{}.json", self.bench)), self.json())?;
                std::fs::write(dir.join(format!("{}.tsv", self.bench)), self.tsv())?;
                Ok(())
            };
            if let Err(e) = write() {
                eprintln!(
                    "{}: cannot write results into {}: {e}",
                    self.bench,
                    dir.display()
                );
                code = 1;
            }
        }
        if code != 0 {
            println!("{}: {} case(s) failed", self.bench, self.failures());
        }
        std::process::exit(code)
    }
}
