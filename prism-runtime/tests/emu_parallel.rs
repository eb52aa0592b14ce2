//! Blocks on several OS threads (issue 12, `emu/parallel.rs`): a launch whose blocks do not interact runs
//! them on worker threads (`LaunchReport::parallel_blocks`), and one whose blocks interact or do anything
//! whose result depends on the interleaving (a flag another block spins on, `printf`, `%clock`, a fault, a
//! Livelock) runs on one thread, as does a kernel with global atomics. Either way every output, fault, counter and `printf`
//! line equals the one-thread run's.

use prism_runtime::emu::*;

const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.extern .func (.param .b32 func_retval0) vprintf
(
    .param .b64 vprintf_param_0,
    .param .b64 vprintf_param_1
)
;
.global .align 1 .b8 $str[4] = {104, 105, 10, 0};

// out[gid] = in[tid] + ctaid: every block reads all of `in`, writes its own part of `out`.
.visible .entry indep(.param .u64 in, .param .u64 out)
{
    .reg .b32 %r<7>;
    .reg .b64 %rd<7>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd3, %r3, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r5, [%rd4];
    add.s32 %r6, %r5, %r1;
    mul.wide.u32 %rd5, %r4, 4;
    add.s64 %rd6, %rd2, %rd5;
    st.global.u32 [%rd6], %r6;
    ret;
}

// Each block counts its threads into its own word with atomics.
.visible .entry own_atomic(.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %ctaid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    atom.global.add.u32 %r2, [%rd3], 1;
    ret;
}

// Every thread of every block adds 1 to one counter; out[gid] = the value it saw.
.visible .entry shared_atomic(.param .u64 counter, .param .u64 out)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [counter];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    atom.global.add.u32 %r5, [%rd1], 1;
    mul.wide.u32 %rd3, %r4, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r5;
    ret;
}

// Block 0 publishes a value and raises a flag; every other block spins on the flag, then copies the value.
.visible .entry flag_spin(.param .u64 data, .param .u64 flag, .param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [data];
    ld.param.u64 %rd2, [flag];
    ld.param.u64 %rd3, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %tid.x;
    setp.ne.s32 %p1, %r2, 0;
    @%p1 bra $L_done;
    setp.ne.s32 %p2, %r1, 0;
    @%p2 bra $L_wait;
    mov.u32 %r3, 42;
    st.global.u32 [%rd1], %r3;
    mov.u32 %r4, 1;
    st.volatile.global.u32 [%rd2], %r4;
    bra.uni $L_done;
$L_wait:
    ld.volatile.global.u32 %r4, [%rd2];
    setp.eq.s32 %p3, %r4, 0;
    @%p3 bra $L_wait;
    ld.global.u32 %r5, [%rd1];
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd3, %rd4;
    st.global.u32 [%rd5], %r5;
$L_done:
    ret;
}

// out[gid] = %clock (a count of the launch's steps: depends on how blocks interleave).
.visible .entry clock_read(.param .u64 out)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mov.u32 %r5, %clock;
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r5;
    ret;
}

// Thread 0 of each block prints a line; every thread writes its own word.
.visible .entry printer(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<7>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r4;
    setp.ne.s32 %p1, %r3, 0;
    @%p1 bra $L_end;
    mov.u64 %rd4, $str;
    cvta.global.u64 %rd5, %rd4;
    {
    .param .b64 param0;
    st.param.b64 [param0+0], %rd5;
    .param .b64 param1;
    st.param.b64 [param1+0], 0;
    .param .b32 retval0;
    call.uni (retval0), vprintf, (param0, param1);
    ld.param.b32 %r6, [retval0+0];
    }
$L_end:
    ret;
}

.func (.param .b32 twice_ret) twice(.param .b32 twice_x)
{
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [twice_x];
    add.s32 %r2, %r1, %r1;
    st.param.b32 [twice_ret], %r2;
    ret;
}

// out[gid] = twice(gid), through a device-function call (its arguments are `.param` variables).
.visible .entry calls(.param .u64 out)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    {
    .param .b32 param0;
    st.param.b32 [param0+0], %r4;
    .param .b32 retval0;
    call.uni (retval0), twice, (param0);
    ld.param.b32 %r5, [retval0+0];
    }
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r5;
    ret;
}

// buf[gid] = buf[gid + 64] + 1: each block reads the words the next block writes.
.visible .entry shift(.param .u64 buf)
{
    .reg .b32 %r<7>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [buf];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r5, [%rd3+256];
    add.s32 %r6, %r5, 1;
    st.global.u32 [%rd3], %r6;
    ret;
}

// Block 3 never finishes (a Livelock once the step budget is spent); the others write their word.
.visible .entry one_spins(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r4;
    setp.ne.s32 %p1, %r1, 3;
    @%p1 bra $L_out;
$L_spin:
    bra.uni $L_spin;
$L_out:
    ret;
}
"#;

/// How a launch is configured beside its thread count.
#[derive(Clone, Copy)]
struct Setup {
    races: bool,
    schedule: Schedule,
    max_steps: u64,
    cluster: Option<[u32; 3]>,
}

const PLAIN: Setup = Setup {
    races: true,
    schedule: Schedule::RoundRobin,
    max_steps: 200_000_000,
    cluster: None,
};

/// Runs `kernel` on `grid` blocks of 64 threads with buffers of the given u32 contents (passed in order);
/// returns everything the launch reports and leaves behind, as text, and its `parallel_blocks`.
fn run(kernel: &str, grid: u32, bufs: &[Vec<u32>], setup: Setup, threads: usize) -> (String, u64) {
    let (text, par, _) = run3(kernel, grid, bufs, setup, threads);
    (text, par)
}

/// [`run`], also returning `isolated_blocks` (blocks run one after another in a kept one-worker run).
fn run3(
    kernel: &str,
    grid: u32,
    bufs: &[Vec<u32>],
    setup: Setup,
    threads: usize,
) -> (String, u64, u64) {
    let module = Module::parse(PTX).expect("test PTX parses");
    let mut emu = Emulator::new(EmuConfig {
        check_races: setup.races,
        schedule: setup.schedule,
        max_steps: setup.max_steps,
        threads,
        ..EmuConfig::default()
    });
    let mut params = Vec::new();
    let mut addrs = Vec::new();
    for b in bufs {
        let bytes: Vec<u8> = b.iter().flat_map(|v| v.to_le_bytes()).collect();
        let a = emu.alloc(bytes.len());
        emu.write(a, &bytes).expect("write");
        params.push(ParamValue::Ptr(a));
        addrs.push((a, bytes.len()));
    }
    let r = emu.launch_cluster(
        &module,
        kernel,
        [grid, 1, 1],
        [64, 1, 1],
        setup.cluster,
        0,
        &params,
    );
    let (faults, report) = match r {
        Ok(r) => (Vec::new(), r),
        Err(EmuError::Faulted { faults, report }) => (faults, *report),
        Err(e) => panic!("{kernel}: {e}"),
    };
    let mem: Vec<Vec<u8>> = addrs
        .iter()
        .map(|&(a, n)| emu.read(a, n).expect("read"))
        .collect();
    let text = format!(
        "faults={faults:?}\ncounters={:?}\nper_instruction={:?}\nprintf={:?}\nmemory={mem:?}",
        report.counters, report.per_instruction, report.printf
    );
    (text, report.parallel_blocks, report.isolated_blocks)
}

/// Runs interleaved (`threads: 0`, no speculative run), on one thread and on two; the results must be
/// identical. Returns the two-thread run's `parallel_blocks` and the (common) result.
fn both(kernel: &str, grid: u32, bufs: &[Vec<u32>], setup: Setup) -> (u64, String) {
    let (reference, p0, i0) = run3(kernel, grid, bufs, setup, 0);
    assert_eq!(
        (p0, i0),
        (0, 0),
        "{kernel}: threads 0 is the interleaved run"
    );
    let (one, p1) = run(kernel, grid, bufs, setup, 1);
    assert_eq!(p1, 0, "{kernel}: one thread never runs blocks in parallel");
    assert_eq!(
        reference, one,
        "{kernel}: blocks one after another changed the result"
    );
    let (two, p2) = run(kernel, grid, bufs, setup, 2);
    assert_eq!(one, two, "{kernel}: two threads changed the result");
    (p2, one)
}

fn iota(n: u32) -> Vec<u32> {
    (0..n).map(|i| i * 7 + 1).collect()
}

#[test]
fn independent_blocks_run_in_parallel_with_the_one_thread_result() {
    for races in [true, false] {
        let setup = Setup { races, ..PLAIN };
        let (par, res) = both("indep", 16, &[iota(64), vec![0; 16 * 64]], setup);
        assert_eq!(par, 16, "races {races}: every block in parallel");
        assert!(res.starts_with("faults=[]"), "{res}");
        // out[gid] = in[tid] + ctaid (the memory line lists both buffers' bytes).
        let (text, _) = run("indep", 16, &[iota(64), vec![0; 16 * 64]], setup, 2);
        assert!(text.contains("blocks: 16"), "{text}");
    }
}

#[test]
fn one_thread_runs_independent_blocks_one_after_another() {
    for races in [true, false] {
        let setup = Setup { races, ..PLAIN };
        let bufs = [iota(64), vec![0; 16 * 64]];
        let (_, par, iso) = run3("indep", 16, &bufs, setup, 1);
        assert_eq!((par, iso), (0, 16), "races {races}: every block in turn");
        // Two threads on a grid of 3 blocks: one worker.
        let (_, par, iso) = run3("indep", 3, &bufs, setup, 2);
        assert_eq!((par, iso), (0, 3), "races {races}: 3 blocks, one worker");
    }
    // Discarded (blocks interact, or the order shows): the interleaved run, nothing kept.
    let (_, _, iso) = run3("shift", 8, &[iota(9 * 64)], PLAIN, 1);
    assert_eq!(iso, 0, "neighbour reads");
    let (_, _, iso) = run3("printer", 8, &[vec![0; 8 * 64]], PLAIN, 1);
    assert_eq!(iso, 0, "printf");
}

#[test]
fn device_function_calls_run_in_parallel() {
    let (par, res) = both("calls", 8, &[vec![0; 8 * 64]], PLAIN);
    assert_eq!(par, 8, "{res}");
    let want: Vec<u8> = (0..8 * 64u32).flat_map(|g| (2 * g).to_le_bytes()).collect();
    assert!(res.contains(&format!("memory=[{want:?}]")), "{res}");
}

#[test]
fn kernels_with_global_atomics_are_not_tried_in_parallel() {
    // Even atomics on a word only one block touches (no interaction): global atomics usually combine
    // blocks' results, often at the very end, so a parallel attempt would mostly be run twice.
    let (par, res) = both("own_atomic", 8, &[vec![0; 8]], PLAIN);
    assert_eq!(par, 0);
    let want: Vec<u8> = [64u32; 8].iter().flat_map(|v| v.to_le_bytes()).collect();
    assert!(res.contains(&format!("memory=[{want:?}]")), "{res}");
}

#[test]
fn outputs_of_a_parallel_run_are_the_kernels() {
    let module = Module::parse(PTX).expect("parses");
    let mut emu = Emulator::new(EmuConfig {
        threads: 2,
        ..EmuConfig::default()
    });
    let input = iota(64);
    let a = emu.alloc(256);
    let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
    emu.write(a, &bytes).expect("write");
    let o = emu.alloc(32 * 64 * 4);
    let r = emu
        .launch(
            &module,
            "indep",
            [32, 1, 1],
            [64, 1, 1],
            0,
            &[ParamValue::Ptr(a), ParamValue::Ptr(o)],
        )
        .expect("runs");
    assert_eq!(r.parallel_blocks, 32);
    let out = emu.read(o, 32 * 64 * 4).expect("read");
    for (g, w) in out.chunks(4).enumerate() {
        let v = u32::from_le_bytes(w.try_into().expect("4 bytes"));
        assert_eq!(v, input[g % 64] + (g / 64) as u32, "element {g}");
    }
    // The input is untouched.
    assert_eq!(emu.read(a, 256).expect("read"), bytes);
}

#[test]
fn interacting_blocks_run_on_one_thread() {
    // Cross-block atomics: all blocks add to one word.
    let (par, res) = both("shared_atomic", 8, &[vec![0], vec![0; 8 * 64]], PLAIN);
    assert_eq!(par, 0, "cross-block atomics: {res}");
    let total: Vec<u8> = (8u32 * 64).to_le_bytes().to_vec();
    assert!(res.contains(&format!("memory=[{total:?}")), "{res}");
    // Each block reads what the next one writes (the one-thread run decides who is first).
    for races in [true, false] {
        let setup = Setup { races, ..PLAIN };
        let (par, res) = both("shift", 8, &[iota(9 * 64)], setup);
        assert_eq!(par, 0, "neighbour reads: {res}");
    }
    // A flag block 0 raises and the others spin on (races off: the hand-off is plain stores).
    let setup = Setup {
        races: false,
        ..PLAIN
    };
    let (par, res) = both("flag_spin", 8, &[vec![0], vec![0], vec![0; 8]], setup);
    assert_eq!(par, 0, "flag spin: {res}");
    let mut want = vec![0u8; 32];
    for b in 1..8 {
        want[b * 4] = 42;
    }
    assert!(res.contains(&format!("{want:?}]")), "{res}");
}

#[test]
fn order_sensitive_operations_run_on_one_thread() {
    let (par, res) = both("clock_read", 8, &[vec![0; 8 * 64]], PLAIN);
    assert_eq!(par, 0, "%clock: {res}");
    let (par, res) = both("printer", 8, &[vec![0; 8 * 64]], PLAIN);
    assert_eq!(par, 0, "printf: {res}");
    assert!(res.contains(r#"printf=["hi\n", "hi\n""#), "{res}");
    // A block that never ends: the Livelock of the one-thread run, with its block, warp and line.
    let setup = Setup {
        max_steps: 20_000,
        ..PLAIN
    };
    let (par, res) = both("one_spins", 8, &[vec![0; 8 * 64]], setup);
    assert_eq!(par, 0, "livelock: {res}");
    assert!(res.contains("Livelock"), "{res}");
    // A fault (block 7 writes past the end of `out`).
    let (par, res) = both("indep", 8, &[iota(64), vec![0; 7 * 64]], PLAIN);
    assert_eq!(par, 0, "fault: {res}");
    assert!(res.contains("OutOfBounds"), "{res}");
}

#[test]
fn schedules_and_shapes_that_stay_on_one_thread() {
    let bufs = [iota(64), vec![0; 16 * 64]];
    let random = Setup {
        schedule: Schedule::Random { seed: 3 },
        ..PLAIN
    };
    assert_eq!(both("indep", 16, &bufs, random).0, 0, "random schedule");
    let cluster = Setup {
        cluster: Some([2, 1, 1]),
        ..PLAIN
    };
    assert_eq!(both("indep", 16, &bufs, cluster).0, 0, "clusters");
    // Fewer blocks than two per thread.
    assert_eq!(both("indep", 3, &bufs, PLAIN).0, 0, "3 blocks");
    assert_eq!(both("indep", 4, &bufs, PLAIN).0, 4, "4 blocks");
}
