//! Launch contracts through the typed launchers: a launch that violates the kernel's contract (block size,
//! grid size) is an `Err` value and nothing runs (the output keeps its sentinel). Also checks what the
//! expansion put into `INFO` (parameters, contract) and the kernel registry.

mod e2e_util;

use e2e_util::{device, SENTINEL_F32, SENTINEL_I32};
use prism::kernels::{load_store_chain, mma_tf32_naive, vector_add};
use prism::{ElemType, LaunchDims, ParamType, RuntimeError};
use prism_ext_crate::{ext_block_copy_plus_one, ext_warp_copy};

fn assert_bad_launch<T: std::fmt::Debug>(r: Result<T, RuntimeError>, what: &str) -> String {
    match r {
        Err(RuntimeError::BadLaunch(m)) => m,
        other => panic!("{what}: expected Err(BadLaunch), got {other:?}"),
    }
}

#[test]
fn mma_tf32_rejects_block_not_multiple_of_warp() {
    let dev = device();
    let a = dev.htod(&vec![1.0f32; 16 * 8]).unwrap();
    let b = dev.htod(&vec![1.0f32; 8 * 8]).unwrap();
    let mut c = dev.htod(&vec![SENTINEL_F32; 16 * 8]).unwrap();
    let msg = assert_bad_launch(
        mma_tf32_naive::launch(&dev, LaunchDims::new(1, 48), &a, &b, &mut c, 16, 8, 8),
        "48 threads for a thread[32] kernel",
    );
    assert!(
        msg.contains("48") && msg.contains("32"),
        "message names the sizes: {msg}"
    );
    assert!(
        dev.dtoh(&c).unwrap().iter().all(|&x| x == SENTINEL_F32),
        "nothing may run"
    );
    // The same launch with a valid block size runs.
    mma_tf32_naive::launch(&dev, LaunchDims::new(1, 32), &a, &b, &mut c, 16, 8, 8).unwrap();
    assert!(dev
        .dtoh(&c)
        .unwrap()
        .iter()
        .all(|&x| (x - 8.0).abs() < 1e-3));
}

#[test]
fn exact_thread_count_is_enforced() {
    let dev = device();
    let input = dev.htod(&vec![3i32; 128 * 4]).unwrap();
    let mut out = dev.htod(&vec![SENTINEL_I32; 128 * 4]).unwrap();
    // threads = 128: 64 (a multiple of 32) is still wrong.
    assert_bad_launch(
        load_store_chain::<4>::launch(&dev, LaunchDims::new(1, 64), &input, &mut out),
        "64 for 128",
    );
    assert_bad_launch(
        load_store_chain::<1>::launch(&dev, LaunchDims::new(1, 256), &input, &mut out),
        "256 for 128",
    );
    // threads = 64 in the ext crate.
    assert_bad_launch(
        ext_block_copy_plus_one::launch(&dev, LaunchDims::new(1, 128), &input, &mut out),
        "128 for 64",
    );
    assert_bad_launch(
        ext_warp_copy::launch(&dev, LaunchDims::new(1, 40), &input, &mut out),
        "40 threads",
    );
    assert!(
        dev.dtoh(&out).unwrap().iter().all(|&x| x == SENTINEL_I32),
        "nothing may run"
    );
}

#[test]
fn empty_grid_and_oversized_block_are_rejected() {
    let dev = device();
    let a = dev.htod(&[1.0f32; 4]).unwrap();
    let mut c = dev.htod(&[SENTINEL_F32; 4]).unwrap();
    assert!(vector_add::launch(&dev, LaunchDims::new(0, 32), &a, &a, &mut c, 4).is_err());
    assert!(vector_add::launch(&dev, LaunchDims::new(1, 2048), &a, &a, &mut c, 4).is_err());
    assert!(dev.dtoh(&c).unwrap().iter().all(|&x| x == SENTINEL_F32));
}

#[test]
fn info_describes_params_and_contract() {
    let info = &vector_add::INFO;
    assert_eq!(info.entry(), "vector_add");
    assert_eq!(info.name(), "vector_add");
    let names: Vec<&str> = info.params().iter().map(|p| p.name).collect();
    assert_eq!(names, ["a", "b", "c", "n"]);
    assert_eq!(
        info.params()[0].ty,
        ParamType::Ptr {
            elem: ElemType::F32,
            mutable: false
        }
    );
    assert_eq!(
        info.params()[2].ty,
        ParamType::Ptr {
            elem: ElemType::F32,
            mutable: true
        }
    );
    assert_eq!(info.params()[3].ty, ParamType::U32);
    assert_eq!(info.ptx(), vector_add::PTX);
    assert!(info.ptx().contains(".entry vector_add"));

    let c = mma_tf32_naive::INFO.contract();
    assert_eq!(
        (c.threads_multiple_of(), c.threads_exact(), c.smem_bytes()),
        (32, Some(32), 1280)
    );
    assert!(
        mma_tf32_naive::PTX.contains("mma.sync.aligned.m16n8k8"),
        "simple_mma is inlined"
    );

    // One entry per template instance.
    assert_eq!(load_store_chain::<4>::INFO.name(), "load_store_chain<4>");
    assert_eq!(load_store_chain::<4>::INFO.entry(), "load_store_chain_4");
    assert_eq!(load_store_chain::<1>::INFO.entry(), "load_store_chain_1");
    assert_eq!(
        load_store_chain::<4>::INFO.contract().threads_exact(),
        Some(128)
    );
}

#[test]
fn cross_crate_callees_are_inlined() {
    // The ext crate's kernels call prism_kernels::warp_load/warp_store/block_load/block_store: their bodies
    // (and their own callees, thread_load/thread_store) are in the caller's PTX, with no `call`.
    for (name, ptx) in [
        ("ext_warp_copy", ext_warp_copy::PTX),
        ("ext_block_copy_plus_one", ext_block_copy_plus_one::PTX),
    ] {
        assert!(ptx.contains(&format!(".entry {name}")), "{name}");
        assert!(
            !ptx.contains("call"),
            "{name}: device functions must be inlined, found a call:\n{ptx}"
        );
        assert!(
            !ptx.contains(".func"),
            "{name}: no separate device function in the module"
        );
        let loads = ptx.matches("ld.global").count();
        let stores = ptx.matches("st.global").count();
        assert!(
            loads >= 2 && stores >= 2,
            "{name}: loads {loads}, stores {stores}"
        );
    }
    // warp_load::<4>: four loads per lane (unrolled thread_load loop), four stores.
    assert_eq!(ext_warp_copy::PTX.matches("ld.global").count(), 4);
    assert_eq!(ext_warp_copy::PTX.matches("st.global").count(), 4);
}

#[test]
fn every_workspace_kernel_is_registered() {
    prism_ext_crate::link();
    let entries: Vec<&str> = prism::registered_kernels()
        .iter()
        .map(|k| k.entry())
        .collect();
    for e in [
        "vector_add",
        "mma_tf32_naive",
        "load_store_chain_1",
        "load_store_chain_4",
        "ext_warp_copy",
        "ext_block_copy_plus_one",
    ] {
        assert!(entries.contains(&e), "{e} missing from {entries:?}");
    }
}
