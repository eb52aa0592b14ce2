//! Shared by the property tests: a seedable generator and Prism programs generated from the grammar.
#![allow(dead_code)]

pub mod hopper;
pub mod mutate;

/// splitmix64: small, seedable, good enough to pick mutations.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// Block level: the threads add to a shared counter, then the block reads the total plainly and branches on it
/// around a barrier. The read needs a barrier after the atomics (inferred), or threads of the block read
/// different totals and some skip the barrier.
const ATOMIC_TOTAL: &str =
    "let cnt: Shared<[u32; 4]>;\ngroup(thread[1], || {\natomic_add(cnt, 0, 1u32);\n});\n\
                            let tot: u32 = cnt[0];\nif tot > 3u32 {\nsync_threads();\n}\n";

/// Warpgroup collectives (Hopper): a wgmma on two swizzled tiles and a register reallocation in a
/// `thread[128]` group (accepted only when the block size is a multiple of 128).
const WARPGROUP: &str = "let wa: Shared<[bf16; 64 * 64], Swizzle128>;\nlet wb: Shared<[bf16; 64 * 64], Swizzle128>;\n\
                         group(thread[128], || {\n#[at(thread[1])] let mut wacc = [0.0f32; 32];\n\
                         wgmma_bf16(&mut wacc, wa, 0, wb, 16);\nwgmma_bf16(&mut wacc, wa, 16, wb, 0);\n\
                         #[at(thread[1])] let ws: f32 = wacc[3];\n});\n";

/// A pipeline: a producer and a consumer warpgroup step through a two-slot ring (accepted only when both
/// arms fit the block: 256 threads).
const RING: &str = "let rs: Shared<[f32; 2 * 128]>;\nring(2, rs, |rr| {\nmatch split(warpgroup) {\n\
                    1 => {\nfor i in 0..3 {\nfill(rr, i, |rs_f| match split(thread) {\n1 => {\ncp_async_bulk(rs_f, 0, a, i * 128, 512);\n}\n});\n}\n}\n\
                    1 => {\nfor i in 0..3 {\ndrain(rr, i, |rs_d| {\n#[at(thread[1])] let rv: f32 = rs_d[i];\n});\n}\n}\n\
                    }\n});\n";

/// A random kernel from Prism's grammar: mostly well-formed, sometimes ill-typed on purpose.
pub fn generate(rng: &mut Rng) -> String {
    let threads = *rng.pick(&[1u32, 2, 4, 32, 64, 128, 256]);
    let mut body = String::new();
    gen_block(rng, &mut body, 0, "grid", threads);
    format!(
        "#[prism_kernel(requires(grid[1], block[1], thread[{threads}]), smem = 65536)]\n\
         fn generated(a: *const f32, c: *mut f32, n: u32) {{\n{body}}}\n"
    )
}

fn gen_block(rng: &mut Rng, out: &mut String, depth: usize, level: &str, threads: u32) {
    let stmts = 1 + rng.below(3);
    for _ in 0..stmts {
        gen_stmt(rng, out, depth, level, threads);
    }
}

fn gen_stmt(rng: &mut Rng, out: &mut String, depth: usize, level: &str, threads: u32) {
    let deep = depth >= 4;
    match rng.below(if deep { 3 } else { 10 }) {
        0 => out.push_str("#[at(thread[1])] let t: u32 = id();\n"),
        1 => out.push_str(&format!("let v: u32 = n * {};\n", rng.below(7))),
        2 => match level {
            "block" => out.push_str(rng.pick::<&str>(&[
                "sync_threads();\n",
                "let s: Shared<[f32; 64]>;\n",
                // Atomics, then a plain read of their total that guards a barrier: the read needs a barrier
                // after the atomics (inferred), or threads of the block read different totals.
                ATOMIC_TOTAL,
                // The same across blocks: no barrier can order it (rejected, SYNC-ATOMIC).
                "match split(thread) {\n1 => {\natomic_add(c, 0, 1.0f32);\n}\n}\nlet r: f32 = c[0];\nif r > 2.0 {\nsync_threads();\n}\n",
                WARPGROUP,
                RING,
            ])),
            "thread" if rng.below(4) == 0 => out.push_str(
                // A thread reads what other threads still add to (rejected, SYNC-ATOMIC).
                "atomic_add(c, 0, 1.0f32);\nlet r: f32 = c[0];\n",
            ),
            "warp" => out.push_str(rng.pick::<&str>(&[
                "sync_warp();\n",
                "#[at(thread[1])] let x: f32 = shfl_xor(1.0f32, 1);\n",
                "#[at(thread[1])] let fa = [0.0f32; 4];\n#[at(thread[1])] let fb = [0.0f32; 2];\n#[at(thread[1])] let mut fc = [0.0f32; 4];\nmma_m16n8k8_tf32(&mut fc, &fa, &fb);\n",
            ])),
            _ => out.push_str("let w: u32 = 1 + 2;\n"),
        },
        3 => {
            out.push_str("group(block[1], || {\n");
            if rng.below(3) == 0 {
                out.push_str(ATOMIC_TOTAL);
            }
            gen_block(rng, out, depth + 1, "block", threads);
            out.push_str("});\n");
        }
        4 => {
            let n = *rng.pick(&[1u32, 2, 32, 64, 3]);
            out.push_str(&format!("group(thread[{n}], || {{\n"));
            gen_block(rng, out, depth + 1, if n == 32 { "warp" } else { "thread" }, threads);
            out.push_str("});\n");
        }
        5 => {
            out.push_str("match split(thread) {\n");
            for _ in 0..1 + rng.below(3) {
                let n = *rng.pick(&[1u32, 2, 16, 32, 64]);
                out.push_str(&format!("{n} => {{\n"));
                gen_block(rng, out, depth + 1, if n == 32 { "warp" } else { "thread" }, threads);
                out.push_str("}\n");
            }
            out.push_str("}\n");
        }
        6 => {
            out.push_str("if n > 3 {\n");
            gen_block(rng, out, depth + 1, level, threads);
            out.push_str("} else {\n");
            gen_block(rng, out, depth + 1, level, threads);
            out.push_str("}\n");
        }
        7 => {
            out.push_str(&format!("for i in 0..{} {{\n", 1 + rng.below(4)));
            gen_block(rng, out, depth + 1, level, threads);
            out.push_str("}\n");
        }
        8 => {
            out.push_str("#[at(thread[1])] let gi: u32 = id();\n");
            out.push_str("partition(c, thread[1], |k| gi + k, |ct| {\ngroup(thread[1], || {\nif gi < n {\nct[0] = a[gi] * 2.0;\n}\n});\n});\n");
        }
        _ => {
            out.push_str("#[at(thread[1])] let tv: u32 = id();\nif tv < 3 {\n");
            gen_block(rng, out, depth + 1, level, threads);
            out.push_str("}\n");
        }
    }
}

/// Type-extreme values as Prism source: the limits of u32/i32/u64/i64 and their neighbours, with and without
/// suffixes (robustness: constants, loop bounds and steps near the limits must never panic the compiler).
pub fn extreme(rng: &mut Rng) -> String {
    let v: &str = rng.pick::<&str>(&[
        "0",
        "1",
        "2",
        "31",
        "32",
        "63",
        "64",
        "2147483647",
        "2147483648",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551615",
        "18446744073709551616",
        "340282366920938463463374607431768211455",
    ]);
    let neg = rng.below(4) == 0;
    let sfx: &str = rng.pick::<&str>(&["", "", "u32", "i32", "u64", "i64"]);
    format!("{}{v}{sfx}", if neg { "-" } else { "" })
}

/// A statement with type-extreme constants: loops with extreme bounds and steps, constant arithmetic that may
/// overflow its type, casts, perspective sizes.
pub fn gen_extreme_stmt(rng: &mut Rng) -> String {
    let ty: &str = rng.pick::<&str>(&["u32", "i32", "u64", "i64"]);
    let op: &str = rng.pick::<&str>(&["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"]);
    match rng.below(12) {
        0 => format!(
            "for i in ({}..{}).step_by({}) {{\nlet w: u32 = 1;\n}}\n",
            extreme(rng),
            extreme(rng),
            extreme(rng)
        ),
        1 => format!(
            "for i in {}..{} {{\nif n > 3 {{\nbreak;\n}}\n}}\n",
            extreme(rng),
            extreme(rng)
        ),
        2 => format!("let k: {ty} = {} {op} {};\n", extreme(rng), extreme(rng)),
        3 => format!(
            "let k: {ty} = ({} {op} {}) as {ty};\n",
            extreme(rng),
            extreme(rng)
        ),
        4 => format!("let k: {ty} = -({} {op} {});\n", extreme(rng), extreme(rng)),
        5..=7 => format!("let k: {ty} = {};\n", extreme(rng)),
        8 => format!(
            "match split(thread) {{\n{} => {{}}\n{} => {{}}\n}}\n",
            extreme(rng),
            extreme(rng)
        ),
        9 => format!(
            "#[at(thread[1])] let arr = [0u32; {}];\n#[at(thread[1])] let el: u32 = arr[{}];\n",
            extreme(rng),
            extreme(rng)
        ),
        10 => format!(
            "#[at(thread[1])] let pi: u32 = id();\npartition(c, thread[{}], |q| pi * {} + q, |cp| {{}});\n",
            extreme(rng),
            extreme(rng)
        ),
        _ => format!(
            "group(thread[{}], || {{\nlet w: u32 = 1;\n}});\n",
            extreme(rng)
        ),
    }
}

/// A generated kernel (as [`generate`]) with type-extreme statements inserted between its statements.
pub fn generate_extreme(rng: &mut Rng) -> String {
    let mut src = generate(rng);
    // Sometimes extreme launch facts too: `threads`, `smem`, perspective sizes in `requires`.
    match rng.below(4) {
        0 => src = src.replacen("smem = 4096", &format!("smem = {}", extreme(rng)), 1),
        1 => {
            src = src.replacen(
                "smem = 4096",
                &format!("smem = 4096, threads = {}", extreme(rng)),
                1,
            )
        }
        2 => src = src.replacen("block[1]", &format!("block[{}]", extreme(rng)), 1),
        _ => {}
    }
    let mut out = String::new();
    for line in src.lines() {
        out.push_str(line);
        out.push('\n');
        let opens_stmts =
            line.ends_with(';') || (line.ends_with('{') && !line.starts_with("match"));
        if opens_stmts && !line.starts_with("#[") && rng.below(3) == 0 {
            out.push_str(&gen_extreme_stmt(rng));
        }
    }
    out
}
