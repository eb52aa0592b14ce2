//! Thread-block clusters: blocks of a cluster are resident together, read each other's shared memory
//! through `mapa` addresses (distributed shared memory), synchronize with `barrier.cluster`, and receive
//! multicast TMA copies with `complete_tx` on their own mbarrier; under round-robin and random schedules.

use prism_runtime::emu::*;

const PTX: &str = r#"
.version 8.0
.target sm_90a
.address_size 64

// Each block publishes ctaid*10+7 in shared memory; after a cluster barrier it reads its partner's value
// (rank ^ 1) through mapa (shared::cluster form for even blocks, generic form for odd ones).
.visible .entry dsmem(.param .u64 out)
{
	.reg .pred %p<3>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<8>;
	.shared .align 4 .u32 sv;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	setp.eq.u32 %p1, %r1, 0;
	mad.lo.u32 %r3, %r2, 10, 7;
	@%p1 st.shared.u32 [sv], %r3;
	barrier.cluster.arrive;
	barrier.cluster.wait;
	mov.u32 %r4, %cluster_ctarank;
	xor.b32 %r5, %r4, 1;
	and.b32 %r9, %r2, 1;
	setp.eq.u32 %p2, %r9, 0;
	@!%p2 bra GENERIC;
	mov.u32 %r6, sv;
	mapa.shared::cluster.u32 %r7, %r6, %r5;
	ld.shared::cluster.u32 %r8, [%r7];
	bra STORE;
GENERIC:
	mov.u64 %rd4, sv;
	cvta.shared.u64 %rd5, %rd4;
	mapa.u64 %rd6, %rd5, %r5;
	ld.u32 %r8, [%rd6];
STORE:
	mul.wide.u32 %rd2, %r2, 4;
	add.s64 %rd3, %rd1, %rd2;
	@%p1 st.global.u32 [%rd3], %r8;
	barrier.cluster.arrive;
	barrier.cluster.wait;
	ret;
}

// Rank 0 of each 2-block cluster multicasts one 64x4 u16 box to both blocks; every block waits on its own
// mbarrier and copies the box out (512 bytes per block).
.visible .entry multicast(.param .align 64 .b8 map[128], .param .u64 out)
{
	.reg .pred %p<4>;
	.reg .b16 %rs<2>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<10>;
	.shared .align 1024 .b8 buf[512];
	.shared .align 8 .b64 bar;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %cluster_ctarank;
	setp.eq.u32 %p1, %r1, 0;
	mov.u32 %r4, bar;
	@%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
	@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd9, [%r4], 512;
	// every block has armed its barrier before rank 0 multicasts
	barrier.cluster.arrive;
	barrier.cluster.wait;
	setp.eq.u32 %p2, %r3, 0;
	and.pred %p3, %p1, %p2;
	mov.u64 %rd2, map;
	cvta.param.u64 %rd3, %rd2;
	mov.u32 %r5, buf;
	mov.u16 %rs1, 3;
	mul.lo.u32 %r6, %r2, 2;
	@%p3 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r5], [%rd3, {0, %r6}], [%r4], %rs1;
WAIT:
	mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r4], 0;
	@!%p1 bra WAIT;
	// thread t copies bytes 4t..4t+3
	shl.b32 %r7, %r1, 2;
	add.u32 %r8, %r5, %r7;
	ld.shared.u32 %r9, [%r8];
	mul.lo.u32 %r10, %r2, 512;
	add.u32 %r11, %r10, %r7;
	cvt.u64.u32 %rd4, %r11;
	add.s64 %rd5, %rd1, %rd4;
	st.global.u32 [%rd5], %r9;
	barrier.cluster.arrive;
	barrier.cluster.wait;
	ret;
}
"#;

fn configs() -> Vec<EmuConfig> {
    let mut v = vec![EmuConfig::default()];
    for seed in [1, 2, 3] {
        v.push(EmuConfig {
            schedule: Schedule::Random { seed },
            ..EmuConfig::default()
        });
    }
    v
}

fn read_u32(e: &Emulator, a: u64, n: usize) -> Vec<u32> {
    e.read(a, 4 * n)
        .unwrap()
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn distributed_shared_memory_and_cluster_barrier() {
    let m = Module::parse(PTX).unwrap();
    for cfg in configs() {
        let mut e = Emulator::new(cfg.clone());
        let out = e.alloc(8 * 4);
        e.launch_cluster(
            &m,
            "dsmem",
            [8, 1, 1],
            [64, 1, 1],
            Some([2, 1, 1]),
            0,
            &[ParamValue::Ptr(out)],
        )
        .unwrap_or_else(|err| panic!("{:?}: {err}", cfg.schedule));
        let got = read_u32(&e, out, 8);
        let want: Vec<u32> = (0..8u32).map(|b| (b ^ 1) * 10 + 7).collect();
        assert_eq!(got, want, "{:?}", cfg.schedule);
    }
}

#[test]
fn multicast_tma_reaches_every_block_of_the_mask() {
    let m = Module::parse(PTX).unwrap();
    for cfg in configs() {
        let mut e = Emulator::new(cfg.clone());
        // 64 x 8 u16 tensor, value y*64 + x + 1; cluster c loads rows 2c*... (each rank-0 block loads 4 rows
        // at row 2*ctaid).
        let g: Vec<u8> = (0..8 * 64u32)
            .flat_map(|i| ((i + 1) as u16).to_le_bytes())
            .collect();
        let ga = e.alloc(g.len());
        e.write(ga, &g).unwrap();
        let map = TensorMap::tiled(
            TensorDataType::U16,
            ga,
            &[64, 8],
            &[128],
            &[64, 4],
            TensorSwizzle::None,
        )
        .unwrap();
        let out = e.alloc(4 * 512);
        e.launch_cluster(
            &m,
            "multicast",
            [4, 1, 1],
            [128, 1, 1],
            Some([2, 1, 1]),
            0,
            &[
                ParamValue::Bytes(map.encode().to_vec()),
                ParamValue::Ptr(out),
            ],
        )
        .unwrap_or_else(|err| panic!("{:?}: {err}", cfg.schedule));
        let got = e.read(out, 4 * 512).unwrap();
        for blk in 0..4usize {
            // The issuing block is rank 0 of the cluster: ctaid 2c; it loads rows 2*(2c) .. +4.
            let row0 = 2 * (blk & !1);
            let want: Vec<u8> = (0..4 * 64)
                .map(|i| {
                    let (y, x) = (row0 + i / 64, i % 64);
                    if y < 8 {
                        (y * 64 + x + 1) as u16
                    } else {
                        0
                    }
                })
                .flat_map(|v| v.to_le_bytes())
                .collect();
            assert_eq!(
                &got[blk * 512..(blk + 1) * 512],
                &want[..],
                "block {blk} ({:?})",
                cfg.schedule
            );
        }
    }
}

/// A multicast to a rank outside the cluster is a fault.
#[test]
fn multicast_outside_the_cluster_is_a_fault() {
    let src = PTX.replace("mov.u16 %rs1, 3;", "mov.u16 %rs1, 7;");
    let m = Module::parse(&src).unwrap();
    let mut e = Emulator::new(EmuConfig::default());
    let ga = e.alloc(1024);
    let map = TensorMap::tiled(
        TensorDataType::U16,
        ga,
        &[64, 8],
        &[128],
        &[64, 4],
        TensorSwizzle::None,
    )
    .unwrap();
    let out = e.alloc(4 * 512);
    let r = e.launch_cluster(
        &m,
        "multicast",
        [2, 1, 1],
        [128, 1, 1],
        Some([2, 1, 1]),
        0,
        &[
            ParamValue::Bytes(map.encode().to_vec()),
            ParamValue::Ptr(out),
        ],
    );
    match r {
        Err(EmuError::Faulted { faults, .. }) => {
            assert!(
                faults.iter().any(|f| f.message.contains("cluster has 2")),
                "{faults:#?}"
            )
        }
        other => panic!("expected a fault, got {other:?}"),
    }
}

/// `.reqnctapercluster` sets the cluster shape of a plain launch; launching with another shape is refused.
#[test]
fn declared_cluster_shape() {
    let src = PTX.replace(
        ".visible .entry dsmem(.param .u64 out)\n{",
        ".visible .entry dsmem(.param .u64 out)\n.reqnctapercluster 2, 1, 1\n{",
    );
    let m = Module::parse(&src).unwrap();
    let mut e = Emulator::new(EmuConfig::default());
    let out = e.alloc(4 * 4);
    e.launch(
        &m,
        "dsmem",
        [4, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(out)],
    )
    .unwrap();
    assert_eq!(read_u32(&e, out, 4), vec![17, 7, 37, 27]);
    let r = e.launch_cluster(
        &m,
        "dsmem",
        [4, 1, 1],
        [32, 1, 1],
        Some([4, 1, 1]),
        0,
        &[ParamValue::Ptr(out)],
    );
    assert!(matches!(r, Err(EmuError::BadLaunch(_))), "{r:?}");
}

/// Block 1 of each cluster arrives on block 0's mbarrier through a `mapa` address (how a consumer in one
/// block releases a stage to the producer in another); block 0 waits for that phase, then records it.
#[test]
fn remote_mbarrier_arrive() {
    let src = r#"
.version 8.0
.target sm_90a
.address_size 64
.visible .entry remote_arrive(.param .u64 out)
{
	.reg .pred %p<4>;
	.reg .b32 %r<10>;
	.reg .b64 %rd<6>;
	.shared .align 8 .b64 bar;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %cluster_ctarank;
	mov.u32 %r3, bar;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 mbarrier.init.shared::cta.b64 [%r3], 1;
	barrier.cluster.arrive;
	barrier.cluster.wait;
	setp.eq.u32 %p2, %r2, 1;
	and.pred %p3, %p1, %p2;
	mapa.shared::cluster.u32 %r4, %r3, 0;
	@%p3 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r4];
	setp.eq.u32 %p2, %r2, 0;
	and.pred %p3, %p1, %p2;
	@!%p3 bra DONE;
WAIT:
	mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r3], 0;
	@!%p1 bra WAIT;
	mov.u32 %r5, %ctaid.x;
	mul.wide.u32 %rd2, %r5, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], 99;
DONE:
	barrier.cluster.arrive;
	barrier.cluster.wait;
	ret;
}
"#;
    let m = Module::parse(src).unwrap();
    for cfg in configs() {
        let mut e = Emulator::new(cfg.clone());
        let out = e.alloc(4 * 4);
        e.write(out, &[0u8; 16]).unwrap();
        e.launch_cluster(
            &m,
            "remote_arrive",
            [4, 1, 1],
            [32, 1, 1],
            Some([2, 1, 1]),
            0,
            &[ParamValue::Ptr(out)],
        )
        .unwrap_or_else(|err| panic!("{:?}: {err}", cfg.schedule));
        assert_eq!(
            read_u32(&e, out, 4),
            vec![99, 0, 99, 0],
            "{:?}",
            cfg.schedule
        );
    }
}
