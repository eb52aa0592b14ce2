//! Device-side tensor-map edits as nvcc 13.5 compiles them for sm_90a (tests/fixtures/hopper/
//! tensormap_edit.ptx, from tensormap_edit.cu): a map passed by value is copied to shared memory,
//! retargeted with `tensormap.replace` (address, sizes, stride, box, element type, rank), published with
//! `tensormap.cp_fenceproxy`, acquired with `fence.proxy.tensormap`, and a TMA load through it must read
//! the new tensor — every element of the box checked, inside and past the tensor's edges (zeros). A
//! replace with a value no map can hold faults.

use prism_runtime::emu::*;

mod common;
use common::{le, read, upload, Rng};

fn module() -> Module {
    common::fixture_module("hopper/tensormap_edit.ptx")
}

/// The map the host made: over a different tensor, with another shape and box.
fn host_map(e: &mut Emulator) -> TensorMap {
    let first = upload(e, &vec![0x7f; 4 * 64 * 32]);
    TensorMap::tiled(
        TensorDataType::F32,
        first,
        &[64, 32],
        &[256],
        &[32, 16],
        TensorSwizzle::None,
    )
    .expect("map")
}

#[test]
fn a_retargeted_map_loads_the_new_tensor() {
    let m = module();
    let (rows, cols) = (20usize, 32usize);
    let mut rng = Rng(8);
    let other: Vec<f32> = (0..rows * cols)
        .map(|_| rng.range(-999, 999) as f32 / 8.0)
        .collect();
    for (name, cfg) in common::configs() {
        for (x0, y0) in [(16i32, 8i32), (24, 16), (0, 0)] {
            let mut e = Emulator::new(cfg.clone());
            let map = host_map(&mut e);
            let gmap = upload(&mut e, &[0; 128]);
            let src = upload(&mut e, &le(&other, f32::to_le_bytes));
            let out = upload(&mut e, &vec![0xff; 4 * 128]);
            let p = ParamValue::Ptr;
            e.launch(
                &m,
                "retarget_and_load",
                [1, 1, 1],
                [64, 1, 1],
                0,
                &[
                    ParamValue::Bytes(map.encode().to_vec()),
                    p(gmap),
                    p(src),
                    ParamValue::I32(rows as i32),
                    ParamValue::I32(cols as i32),
                    p(out),
                    ParamValue::I32(x0),
                    ParamValue::I32(y0),
                ],
            )
            .unwrap_or_else(|err| panic!("{name}: ({x0}, {y0}): {err}"));
            let got = read(&e, out, 128, f32::from_le_bytes);
            for r in 0..8 {
                for c in 0..16 {
                    let (y, x) = (y0 as usize + r, x0 as usize + c);
                    let want = if y < rows && x < cols {
                        other[y * cols + x]
                    } else {
                        0.0
                    };
                    assert_eq!(
                        got[r * 16 + c],
                        want,
                        "{name}: box ({x0}, {y0}) element ({c}, {r})"
                    );
                }
            }
            // The published map is the retargeted one.
            let published = TensorMap::decode(&e.read(gmap, 128).unwrap()).expect("a valid map");
            assert_eq!(published.global_address, src);
            assert_eq!(published.dims, vec![cols as u64, rows as u64]);
            assert_eq!(published.strides, vec![4 * cols as u64]);
            assert_eq!(published.box_dims, vec![16, 8]);
        }
    }
}

#[test]
fn a_replace_no_map_can_hold_faults() {
    let m = module();
    let mut e = Emulator::new(EmuConfig::default());
    let map = host_map(&mut e);
    let err = e
        .launch(
            &m,
            "bad_replace",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[ParamValue::Bytes(map.encode().to_vec()), ParamValue::I32(0)],
        )
        .expect_err("a box of 0 elements")
        .to_string();
    assert!(
        err.contains("InvalidOperation") && err.contains("tensormap.replace"),
        "{err}"
    );
    // A box of 300 elements is out of range too; 64 is fine.
    assert!(e
        .launch(
            &m,
            "bad_replace",
            [1, 1, 1],
            [32, 1, 1],
            0,
            &[
                ParamValue::Bytes(map.encode().to_vec()),
                ParamValue::I32(300)
            ]
        )
        .is_err());
    e.launch(
        &m,
        "bad_replace",
        [1, 1, 1],
        [32, 1, 1],
        0,
        &[
            ParamValue::Bytes(map.encode().to_vec()),
            ParamValue::I32(64),
        ],
    )
    .expect("a box of 64");
}
