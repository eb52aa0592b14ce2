//! Blocks that would be resident together run interleaved: a block that waits for another block's
//! progress (a grid-wide flag, a persistent kernel's work counter) sees it happen, under the round-robin
//! and random schedules, and a wait that can never end is a fault, not a hang.

use prism_runtime::emu::*;

/// Block 0 spins until the last block has published a value; block 0 then copies it out. Sequentially,
/// block 0 would spin forever. The value itself goes through atomics too: the race detector orders threads
/// of one block only (docs/EMULATOR.md), so a plain write read by another block after a flag is reported.
const FLAG_PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64
.visible .entry wait_for_last(.param .u64 flag, .param .u64 data, .param .u64 out)
{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [flag];
	ld.param.u64 %rd2, [data];
	ld.param.u64 %rd3, [out];
	mov.u32 %r1, %tid.x;
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra DONE;
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %nctaid.x;
	add.u32 %r4, %r3, -1;
	setp.eq.u32 %p2, %r2, %r4;
	@%p2 bra PUBLISH;
	setp.ne.u32 %p3, %r2, 0;
	@%p3 bra DONE;
SPIN:
	atom.global.cas.b32 %r5, [%rd1], 1, 1;
	setp.eq.u32 %p1, %r5, 0;
	@%p1 bra SPIN;
	atom.global.or.b32 %r6, [%rd2], 0;
	st.global.u32 [%rd3], %r6;
	bra DONE;
PUBLISH:
	atom.global.exch.b32 %r7, [%rd2], 1234;
	atom.global.exch.b32 %r5, [%rd1], 1;
DONE:
	ret;
}

// Every block waits for a flag that nobody sets.
.visible .entry spin_forever(.param .u64 flag)
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [flag];
SPIN:
	atom.global.cas.b32 %r1, [%rd1], 1, 1;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 bra SPIN;
	ret;
}

// Persistent blocks take work items from a counter until none is left; each item writes its index.
.visible .entry persistent(.param .u64 counter, .param .u64 out, .param .u32 n)
{
	.reg .pred %p<3>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<6>;
	ld.param.u64 %rd1, [counter];
	ld.param.u64 %rd2, [out];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %tid.x;
	setp.ne.u32 %p1, %r2, 0;
	@%p1 bra DONE;
LOOP:
	atom.global.add.u32 %r3, [%rd1], 1;
	setp.ge.u32 %p2, %r3, %r1;
	@%p2 bra DONE;
	mul.wide.u32 %rd3, %r3, 4;
	add.s64 %rd4, %rd2, %rd3;
	mov.u32 %r4, %ctaid.x;
	add.u32 %r5, %r3, 1000000;
	st.global.u32 [%rd4], %r5;
	bra LOOP;
DONE:
	ret;
}
"#;

fn upload_u32(e: &mut Emulator, v: &[u32]) -> u64 {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let a = e.alloc(bytes.len());
    e.write(a, &bytes).unwrap();
    a
}

fn read_u32(e: &Emulator, a: u64, n: usize) -> Vec<u32> {
    e.read(a, 4 * n)
        .unwrap()
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn schedules() -> Vec<EmuConfig> {
    let mut v = vec![EmuConfig::default()];
    for seed in [1, 2, 3] {
        v.push(EmuConfig {
            schedule: Schedule::Random { seed },
            ..EmuConfig::default()
        });
    }
    v
}

#[test]
fn a_block_waiting_for_a_later_block_makes_progress() {
    let m = Module::parse(FLAG_PTX).unwrap();
    for cfg in schedules() {
        let mut e = Emulator::new(cfg.clone());
        let (flag, data, out) = (
            upload_u32(&mut e, &[0]),
            upload_u32(&mut e, &[0]),
            upload_u32(&mut e, &[0]),
        );
        let r = e.launch(
            &m,
            "wait_for_last",
            [200, 1, 1],
            [64, 1, 1],
            0,
            &[
                ParamValue::Ptr(flag),
                ParamValue::Ptr(data),
                ParamValue::Ptr(out),
            ],
        );
        match r {
            Ok(rep) => assert_eq!(rep.counters.blocks, 200),
            Err(err) => panic!("{:?}: {err}", cfg.schedule),
        }
        assert_eq!(read_u32(&e, out, 1), vec![1234], "{:?}", cfg.schedule);
    }
}

#[test]
fn persistent_blocks_share_a_work_counter() {
    let m = Module::parse(FLAG_PTX).unwrap();
    let n = 5000u32;
    for cfg in schedules() {
        let mut e = Emulator::new(cfg.clone());
        let counter = upload_u32(&mut e, &[0]);
        let out = upload_u32(&mut e, &vec![0; n as usize]);
        e.launch(
            &m,
            "persistent",
            [132, 1, 1],
            [32, 1, 1],
            0,
            &[
                ParamValue::Ptr(counter),
                ParamValue::Ptr(out),
                ParamValue::U32(n),
            ],
        )
        .unwrap_or_else(|err| panic!("{:?}: {err}", cfg.schedule));
        let got = read_u32(&e, out, n as usize);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(*g, i as u32 + 1_000_000, "item {i} ({:?})", cfg.schedule);
        }
    }
}

/// A wait for a flag nobody sets ends with a fault naming the spinning instruction, quickly.
#[test]
fn a_wait_that_cannot_end_is_a_fault() {
    let m = Module::parse(FLAG_PTX).unwrap();
    let mut e = Emulator::new(EmuConfig {
        max_steps: 200_000,
        ..EmuConfig::default()
    });
    let (flag, data, out) = (
        upload_u32(&mut e, &[0]),
        upload_u32(&mut e, &[0]),
        upload_u32(&mut e, &[0]),
    );
    // Grid of 1: block 0 is also the last block, so it publishes instead of waiting: no fault.
    e.launch(
        &m,
        "wait_for_last",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[
            ParamValue::Ptr(flag),
            ParamValue::Ptr(data),
            ParamValue::Ptr(out),
        ],
    )
    .unwrap();
    // The flag is now 1 and stays 1: reset it, and let no block publish (the kernel counts on the last
    // block, so hand the waiter a flag the publisher does not write by running spin_forever).
    let never = upload_u32(&mut e, &[0]);
    let t0 = std::time::Instant::now();
    match e.launch(
        &m,
        "spin_forever",
        [4, 1, 1],
        [32, 1, 1],
        0,
        &[ParamValue::Ptr(never)],
    ) {
        Err(EmuError::Faulted { faults, .. }) => {
            assert!(
                faults.iter().any(|f| f.kind == FaultKind::Livelock),
                "{faults:#?}"
            );
        }
        other => panic!("expected a Livelock fault, got {other:?}"),
    }
    assert!(
        t0.elapsed().as_secs() < 20,
        "the fault took {:?}",
        t0.elapsed()
    );
}
