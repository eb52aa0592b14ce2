//! Shared by the property tests: a seedable generator and Prism programs generated from the grammar.
#![allow(dead_code)]

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

/// A random kernel from Prism's grammar: mostly well-formed, sometimes ill-typed on purpose.
pub fn generate(rng: &mut Rng) -> String {
    let threads = *rng.pick(&[1u32, 2, 4, 32, 64, 128]);
    let mut body = String::new();
    gen_block(rng, &mut body, 0, "grid", threads);
    format!(
        "#[prism_kernel(requires(grid[1], block[1], thread[{threads}]), smem = 4096)]\n\
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
            "block" => out.push_str(rng.pick::<&str>(&["sync_threads();\n", "let s: Shared<[f32; 64]>;\n"])),
            "warp" => out.push_str(rng.pick::<&str>(&[
                "sync_warp();\n",
                "#[at(thread[1])] let x: f32 = shfl_xor(1.0f32, 1);\n",
                "#[at(thread[1])] let fa = [0.0f32; 4];\n#[at(thread[1])] let fb = [0.0f32; 2];\n#[at(thread[1])] let mut fc = [0.0f32; 4];\nmma_m16n8k8_tf32(&mut fc, &fa, &fb);\n",
            ])),
            _ => out.push_str("let w: u32 = 1 + 2;\n"),
        },
        3 => {
            out.push_str("group(block[1], || {\n");
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
