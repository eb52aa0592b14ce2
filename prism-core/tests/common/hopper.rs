//! Random warp-specialized Hopper programs: producer/consumer rings of random depth stepped by loops of random
//! (constant or run-time) length, wgmma in the drains, `set_max_regs` in the arms and in warpgroup groups,
//! barriers and warpgroup collectives before and after the ring. Most are well-typed; the rest exercise the
//! rules (RING, SETMAXNREG, T-SPLIT).

use super::Rng;

/// A random Hopper kernel `(a: *const f32, c: *mut f32, n: u32, ta, tb: TensorMap<bf16, 2>, td:
/// TensorMapMut<bf16, 2>)`: `ta` a tensor of 256 × 64 and `tb` of 64 × 64 bf16, loaded in 64 × 64 boxes
/// (128-byte swizzle); `td` 256 × 64 bf16, where a lone consumer warpgroup may store its tile (block `b`'s
/// rows `64b..64b + 64`) through `stmatrix_bf16` and `tma_store`.
pub fn generate_hopper(rng: &mut Rng) -> String {
    let groups = *rng.pick(&[2u32, 2, 3, 4]);
    let threads = 128 * groups;
    // A third of the kernels run in 2-block clusters and share the `tb` tile by multicast.
    let cluster = rng.below(3) == 0;
    let mut body = String::new();
    for _ in 0..rng.below(3) {
        prelude_stmt(rng, &mut body);
    }
    for r in 0..1 + rng.below(2) {
        ring(rng, &mut body, r, groups, cluster);
        if rng.below(2) == 0 {
            prelude_stmt(rng, &mut body);
        }
    }
    let (attrs, rank, tail) = if cluster {
        (
            "requires(grid[1], block[2], block[1], warpgroup), cluster = 2",
            "#[at(block[1])] let blk: u32 = id();\n#[at(block[1])] let rank: u32 = blk % 2;\n",
            if rng.below(2) == 0 {
                "group(block[2], || {\nsync_cluster();\n});\n"
            } else {
                ""
            },
        )
    } else {
        ("requires(grid[1], block[1], warpgroup)", "", "")
    };
    format!(
        "{K_STEP}#[prism_kernel({attrs}, threads = {threads}, smem = 200000)]\n\
         fn generated(a: *const f32, c: *mut f32, n: u32, ta: TensorMap<bf16, 2>, tb: TensorMap<bf16, 2>, \
         td: TensorMapMut<bf16, 2>, abf: *const bf16) {{\n\
         {rank}#[at(block[1])] let eb: u32 = id();\ngroup(block[1], || {{\n\
         let ep: Shared<[bf16; 64 * 64], Swizzle128>;\npartition(ep, thread[128], |x| x, |ep_w| {{\n{body}}});\n}});\n{tail}}}\n"
    )
}

/// A drain's k-step as a device function over the ring's slots (`Shared` parameters, a forwarded
/// accumulator): `K` wgmmas, the first one overwriting the accumulator when `fresh`.
const K_STEP: &str = "#[prism_device(requires(thread[128]))]\n\
    fn k_step<const K: u32>(acc: &mut [f32; 32], a: Shared<[bf16; 64 * 64], Swizzle128>, \
    b: Shared<[bf16; 64 * 64], Swizzle128>, fresh: bool) {\n\
    for kk in 0..K {\nwgmma_bf16(acc, a, kk * 16, b, kk * 16, !fresh || kk > 0);\n}\n}\n";

/// A register count a warpgroup may ask for (sometimes one that breaks the budget or the range).
fn regs(rng: &mut Rng, producer: bool) -> u32 {
    match rng.below(10) {
        0 => *rng.pick(&[20u32, 100, 260]),
        1..=4 if producer => *rng.pick(&[24u32, 40, 56]),
        1..=4 => *rng.pick(&[160u32, 216, 232, 240]),
        _ => 8 * (3 + rng.below(30) as u32),
    }
}

fn prelude_stmt(rng: &mut Rng, out: &mut String) {
    match rng.below(5) {
        0 => out.push_str("sync_threads();\n"),
        1 => {
            let producer = rng.below(2) == 0;
            out.push_str(&format!(
                "group(thread[128], || {{\nset_max_regs({});\n}});\n",
                regs(rng, producer)
            ))
        }
        2 => out.push_str(
            "let wa: Shared<[bf16; 64 * 64], Swizzle128>;\nlet wb: Shared<[bf16; 64 * 64], Swizzle128>;\n\
             group(thread[128], || {\n#[at(thread[1])] let mut wacc = [0.0f32; 32];\n\
             wgmma_bf16(&mut wacc, wa, 0, wb, 16);\n#[at(thread[1])] let ws: f32 = wacc[1];\n});\n",
        ),
        // A branch the whole block takes alike; rarely one on a thread's id (rejected, READ-UP).
        3 if rng.below(4) == 0 => out.push_str(
            "#[at(thread[1])] let t: u32 = id();\nif t < 3 {\nlet w: u32 = n + 1;\n}\n",
        ),
        3 => out.push_str("if n > 2 {\nsync_threads();\n}\n"),
        _ => out.push_str("let v: u32 = n * 3;\n"),
    }
}

/// The steps a ring arm walks: one loop, two loops one after the other, or a loop under a condition that
/// both arms share.
fn steps(rng: &mut Rng) -> Vec<(String, String)> {
    let bound = |rng: &mut Rng| -> String {
        match rng.below(4) {
            0 => "n".to_string(),
            _ => (1 + rng.below(7)).to_string(),
        }
    };
    match rng.below(3) {
        0 => {
            let mid = 1 + rng.below(3);
            vec![
                ("0".into(), mid.to_string()),
                (mid.to_string(), format!("{mid} + {}", bound(rng))),
            ]
        }
        _ => vec![("0".into(), bound(rng))],
    }
}

fn ring(rng: &mut Rng, out: &mut String, r: usize, groups: u32, cluster: bool) {
    let slots = 1 + rng.below(4);
    let mut loops = steps(rng);
    // Two consumer warpgroups may take turns (ping-pong): `tiles` turns of `per` steps each, consumer 0 the
    // even turns, consumer 1 the odd ones; the producer fills every step in order. Rarely one consumer
    // forgets its `turn` (rejected, TURN).
    let turns = groups == 3 && rng.below(3) == 0;
    let (tiles, per) = (
        *rng.pick(&["1", "2", "3", "5", "n"]),
        *rng.pick(&["1", "2", "3", "n"]),
    );
    if turns {
        loops = vec![("0".into(), format!("{tiles} * {per}"))];
    }
    let wide = rng.below(2) == 0;
    let tma = rng.below(3) != 0;
    let multicast = rng.below(4) != 0;
    out.push_str(&format!(
        "let rs{r}: Shared<[bf16; {slots} * 64 * 64], Swizzle128>;\nlet rt{r}: Shared<[bf16; {slots} * 64 * 64], Swizzle128>;\n\
         ring({slots}, (rs{r}, rt{r}), |rr| {{\nmatch split(warpgroup) {{\n"
    ));
    // Producer arm.
    out.push_str("1 => {\n");
    if rng.below(2) == 0 {
        out.push_str(&format!("set_max_regs({});\n", regs(rng, true)));
    }
    for (lo, hi) in &loops {
        // One thread loads both tiles: with bulk copies of `a`'s first bytes, or with TMA (a fill loads every
        // memory of its ring: rule RING).
        let body = match (tma, cluster && multicast) {
            (false, _) => "match split(thread) {\n1 => {\ncp_async_bulk(rs_f, 0, abf, 0, 8192);\ncp_async_bulk(rt_f, 0, abf, 0, 8192);\n}\n}\n",
            (true, false) => "match split(thread) {\n1 => {\ntma_load(rs_f, ta, 0, (i % 4) * 64);\ntma_load(rt_f, tb, 0, 0);\n}\n}\n",
            (true, true) => "match split(thread) {\n1 => {\ntma_load(rs_f, ta, 0, (i % 4) * 64);\nif rank == 0 {\ntma_load_multicast(rt_f, tb, 0, 0);\n}\n}\n}\n",
        };
        out.push_str(&format!(
            "for i in {lo}..{hi} {{\nfill(rr, i, |rs_f, rt_f| {{\n{body}}});\n}}\n"
        ));
    }
    out.push_str("}\n");
    // Consumer arms: one warpgroup each, or all the rest as one arm.
    // T-SPLIT wants arms that divide the block: {1, 1} of 3 warpgroups, {1, 1, 1} of 4 (and sometimes arms that
    // do not divide it or are misaligned, to be rejected).
    let arms = match (groups, rng.below(6)) {
        (3, _) if turns => vec![1, 1],
        (_, 0) => vec![groups - 1],
        (3, _) => vec![1, 1],
        (4, 1) => vec![2, 1],
        (4, _) => vec![1, 1, 1],
        _ => vec![1],
    };
    let arms_n = arms.len();
    if turns {
        let forget = rng.below(8) == 0;
        for c in 0..2u32 {
            out.push_str("1 => {\n");
            if rng.below(2) == 0 {
                out.push_str(&format!("set_max_regs({});\n", regs(rng, false)));
            }
            out.push_str("#[at(thread[1])] let mut racc = [0.0f32; 32];\n");
            let (open, close) = if forget && c == 1 {
                (String::new(), "")
            } else {
                (format!("turn(rr, {c}, || {{\n"), "});\n")
            };
            out.push_str(&format!(
                "for j in 0..({tiles} + 1 - {c}) / 2 {{\n{open}for kt in 0..{per} {{\n\
                 drain(rr, (2 * j + {c}) * {per} + kt, |rs_d, rt_d| {{\n\
                 wgmma_bf16(&mut racc, rs_d, 0, rt_d, 0, kt > 0);\n}});\n}}\n{close}}}\n"
            ));
            if rng.below(2) == 0 {
                out.push_str("#[at(thread[1])] let rv: f32 = racc[2];\n");
            }
            out.push_str("}\n");
        }
        out.push_str("}\n});\n");
        return;
    }
    for n in arms {
        out.push_str(&format!("{n} => {{\n"));
        // Two consumer warpgroups in one arm work as two `thread[128]` units (mostly).
        let grouped = n > 1 && rng.below(5) != 0;
        if grouped {
            out.push_str("group(thread[128], || {\n");
        }
        if rng.below(2) == 0 {
            out.push_str(&format!("set_max_regs({});\n", regs(rng, false)));
        }
        out.push_str("#[at(thread[1])] let mut racc = [0.0f32; 32];\n");
        for (lo, hi) in &loops {
            out.push_str(&format!(
                "for i in {lo}..{hi} {{\ndrain(rr, i, |rs_d, rt_d| {{\n"
            ));
            let k = if wide { 1 + rng.below(4) } else { 1 };
            if rng.below(4) == 0 {
                // The k-step in a device function over the slots (`Shared` parameters).
                out.push_str(&format!("k_step::<{k}>(&mut racc, rs_d, rt_d, i == 0);\n"));
            } else {
                for kk in 0..k {
                    out.push_str(&format!(
                        "wgmma_bf16(&mut racc, rs_d, {}, rt_d, {});\n",
                        16 * kk,
                        16 * kk
                    ));
                }
            }
            out.push_str("});\n}\n");
        }
        if rng.below(2) == 0 {
            out.push_str("#[at(thread[1])] let rv: f32 = racc[2];\n");
        }
        // The only consumer writes its tile out: stmatrix into its own box, a TMA store to this block's rows
        // (in the first ring only: the box is handed to one split arm, CLAIM-ONE-BRANCH).
        if arms_n == 1 && n == 1 && r == 0 && rng.below(3) == 0 {
            out.push_str(
                "stmatrix_bf16(ep_w, &racc, 0);\nmatch split(thread) {\n1 => {\ntma_store(td, ep_w, 0, eb * 64);\n}\n}\n",
            );
        }
        if grouped {
            out.push_str("});\n");
        }
        out.push_str("}\n");
    }
    out.push_str("}\n});\n");
}
