//! Cost counters with known answers (paper 003's cost model: sectors, bank conflicts, divergence).

use prism_runtime::emu::*;

const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry gload(.param .u64 buf, .param .u32 stride)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<6>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [buf];
    ld.param.u32 %r1, [stride];
    mov.u32 %r2, %tid.x;
    mul.lo.u32 %r3, %r2, %r1;
    mul.wide.u32 %rd2, %r3, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    ret;
}

.visible .entry sstore(.param .u32 stride)
{
    .shared .align 4 .f32 tile[1056];
    .reg .b32 %r<6>;
    ld.param.u32 %r1, [stride];
    mov.u32 %r2, %tid.x;
    mul.lo.u32 %r3, %r2, %r1;
    shl.b32 %r4, %r3, 2;
    mov.u32 %r5, tile;
    add.u32 %r4, %r4, %r5;
    st.shared.u32 [%r4], %r2;
    ret;
}

.visible .entry branchy(.param .u64 out, .param .u32 mode)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [mode];
    mov.u32 %r2, %tid.x;
    and.b32 %r3, %r2, 1;
    mov.u32 %r4, %ctaid.x;
    and.b32 %r4, %r4, 1;
    setp.ne.u32 %p1, %r1, 0;
    selp.u32 %r5, %r3, %r4, %p1;
    setp.eq.u32 %p1, %r5, 0;
    mov.u32 %r6, 7;
    @%p1 bra SKIP;
    mov.u32 %r6, 9;
SKIP:
    mov.u32 %r7, %ntid.x;
    mad.lo.u32 %r7, %r4, %r7, %r2;
    mul.wide.u32 %rd2, %r7, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r6;
    ret;
}
"#;

fn line(needle: &str, after: &str) -> usize {
    let start = PTX.lines().position(|l| l.contains(after)).unwrap();
    PTX.lines()
        .enumerate()
        .skip(start)
        .find(|(_, l)| l.contains(needle))
        .unwrap()
        .0
        + 1
}

#[test]
fn coalesced_vs_strided_global_loads() {
    let m = Module::parse(PTX).unwrap();
    let mut e = Emulator::new(EmuConfig::default());
    let buf = e.alloc(32 * 32 * 4);
    let r1 = e
        .launch(
            &m,
            "gload",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::Ptr(buf), ParamValue::U32(1)],
        )
        .unwrap();
    assert_eq!(
        (
            r1.counters.global_accesses,
            r1.counters.global_sectors,
            r1.counters.global_transactions
        ),
        (1, 4, 1)
    );
    let r32 = e
        .launch(
            &m,
            "gload",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::Ptr(buf), ParamValue::U32(32)],
        )
        .unwrap();
    assert_eq!(
        (
            r32.counters.global_accesses,
            r32.counters.global_sectors,
            r32.counters.global_transactions
        ),
        (1, 32, 32)
    );
    // per-instruction attribution
    let ld = line("ld.global.f32", ".entry gload");
    let pi = r32
        .per_instruction
        .iter()
        .find(|p| p.ptx_line == ld)
        .unwrap();
    assert_eq!((pi.warp_instructions, pi.global_sectors), (1, 32));
    // two warps: 8 sectors in total when coalesced
    let r = e
        .launch(
            &m,
            "gload",
            [1, 1, 1],
            [64, 1, 1],
            0,
            &[ParamValue::Ptr(buf), ParamValue::U32(1)],
        )
        .unwrap();
    assert_eq!(
        (r.counters.global_accesses, r.counters.global_sectors),
        (2, 8)
    );
}

#[test]
fn shared_bank_conflicts_stride_32_vs_33() {
    let m = Module::parse(PTX).unwrap();
    let mut e = Emulator::new(EmuConfig::default());
    let r32 = e
        .launch(
            &m,
            "sstore",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::U32(32)],
        )
        .unwrap();
    assert_eq!(
        (
            r32.counters.shared_accesses,
            r32.counters.shared_bank_conflict_degree_sum
        ),
        (1, 32)
    );
    let r33 = e
        .launch(
            &m,
            "sstore",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::U32(33)],
        )
        .unwrap();
    assert_eq!(
        (
            r33.counters.shared_accesses,
            r33.counters.shared_bank_conflict_degree_sum
        ),
        (1, 1)
    );
    let r1 = e
        .launch(
            &m,
            "sstore",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::U32(1)],
        )
        .unwrap();
    assert_eq!(r1.counters.shared_bank_conflict_degree_sum, 1);
    // broadcast: all lanes hit the same word -> no conflict
    let r0 = e
        .launch(
            &m,
            "sstore",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::U32(2)],
        )
        .unwrap();
    assert_eq!(r0.counters.shared_bank_conflict_degree_sum, 2);
}

#[test]
fn divergent_vs_uniform_branches() {
    let m = Module::parse(PTX).unwrap();
    for mode in [WarpMode::Independent, WarpMode::Lockstep] {
        let mut e = Emulator::new(EmuConfig {
            warp_mode: mode,
            ..EmuConfig::default()
        });
        let out = e.alloc(2 * 64 * 4);
        let div = e
            .launch(
                &m,
                "branchy",
                [2, 1, 1],
                [64, 1, 1],
                0,
                &[ParamValue::Ptr(out), ParamValue::U32(1)],
            )
            .unwrap();
        // 2 blocks x 2 warps, each warp diverges once on tid % 2
        assert_eq!(div.counters.divergent_branches, 4);
        let bra = line("@%p1 bra", ".entry branchy");
        assert_eq!(
            div.per_instruction
                .iter()
                .find(|p| p.ptx_line == bra)
                .unwrap()
                .divergent_branches,
            4
        );
        let got: Vec<u32> = e
            .read(out, 64 * 4)
            .unwrap()
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(
            got,
            (0..64)
                .map(|t| if t % 2 == 1 { 9 } else { 7 })
                .collect::<Vec<_>>()
        );
        let uni = e
            .launch(
                &m,
                "branchy",
                [2, 1, 1],
                [64, 1, 1],
                0,
                &[ParamValue::Ptr(out), ParamValue::U32(0)],
            )
            .unwrap();
        assert_eq!(uni.counters.divergent_branches, 0);
        // reconvergence: the store after the join executes once per warp in both modes
        let st = line("st.global.u32", ".entry branchy");
        assert_eq!(
            div.per_instruction
                .iter()
                .find(|p| p.ptx_line == st)
                .unwrap()
                .warp_instructions,
            4
        );
        let mov9 = line("mov.u32 %r6, 9", ".entry branchy");
        let pi = |r: &LaunchReport| {
            r.per_instruction
                .iter()
                .find(|p| p.ptx_line == mov9)
                .unwrap()
                .clone()
        };
        assert_eq!(
            (pi(&div).warp_instructions, pi(&div).thread_instructions),
            (4, 64)
        );
        assert_eq!(
            (pi(&uni).warp_instructions, pi(&uni).thread_instructions),
            (2, 64)
        );
    }
}
