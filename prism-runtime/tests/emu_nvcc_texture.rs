//! Texture and surface objects on nvcc 13.5's output for sm_90 (tests/fixtures/texture.ptx, from
//! texture.cu): `tex1Dfetch`, `tex2D`/`tex3D` with point sampling and linear filtering under every address
//! mode, 8-bit texels read as normalized floats, integer texels, `surf2Dread`/`surf2Dwrite` with the
//! boundary modes, and what is refused (bad descriptors, a handle that is not an object, a write past a
//! surface). Every output element is checked against a reference written here from the CUDA C++
//! Programming Guide's texture-fetching formulas (linear weights in 9-bit fixed point with 8 fractional
//! bits), independently of `emu/texture.rs`.

use prism_runtime::emu::*;

mod common;
use common::{le, read, upload, Rng};

fn module() -> Module {
    common::fixture_module("texture.ptx")
}

fn launch(e: &mut Emulator, m: &Module, entry: &str, n: usize, params: &[ParamValue]) {
    e.launch(
        m,
        entry,
        [n.div_ceil(64) as u32, 1, 1],
        [64, 1, 1],
        0,
        params,
    )
    .unwrap_or_else(|err| panic!("{entry}: {err}"));
}

/// Index `i` of an extent `n` after `mode` (`None`: the border), wrap and mirror only when normalized.
fn moded(i: i64, n: i64, mode: AddressMode, normalized: bool) -> Option<i64> {
    match (mode, normalized) {
        (AddressMode::Border, _) => (0..n).contains(&i).then_some(i),
        (AddressMode::Wrap, true) => Some(((i % n) + n) % n),
        (AddressMode::Mirror, true) => {
            let p = ((i % (2 * n)) + 2 * n) % (2 * n);
            Some(if p < n { p } else { 2 * n - 1 - p })
        }
        _ => Some(i.max(0).min(n - 1)),
    }
}

/// The reference fetch of an f32 texture of `ext` (1 to 3 dims) at `x`: point or linear.
fn reference(data: &[f32], ext: &[usize], x: &[f32], d: &TextureDesc) -> f32 {
    let texel = |idx: &[i64]| -> f32 {
        let mut lin = 0usize;
        for k in (0..ext.len()).rev() {
            match moded(idx[k], ext[k] as i64, d.address[k], d.normalized) {
                Some(j) => lin = lin * ext[k] + j as usize,
                None => return d.border[0],
            }
        }
        data[lin]
    };
    let u: Vec<f64> = (0..ext.len())
        .map(|k| x[k] as f64 * if d.normalized { ext[k] as f64 } else { 1.0 })
        .collect();
    if d.filter == FilterMode::Point {
        let idx: Vec<i64> = u.iter().map(|v| v.floor() as i64).collect();
        return texel(&idx);
    }
    let mut acc = 0f64;
    for corner in 0..(1 << ext.len()) {
        let mut idx = vec![0i64; ext.len()];
        let mut wgt = 1.0;
        for k in 0..ext.len() {
            let b = (u[k] - 0.5).floor();
            let a = ((u[k] - 0.5 - b) * 256.0).round() / 256.0;
            let hi = corner >> k & 1 == 1;
            idx[k] = b as i64 + hi as i64;
            wgt *= if hi { a } else { 1.0 - a };
        }
        acc += wgt * texel(&idx) as f64;
    }
    acc as f32
}

fn floats(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| rng.range(-1000, 1000) as f32 / 64.0)
        .collect()
}

#[test]
fn tex1dfetch_reads_zero_outside() {
    let m = module();
    let mut rng = Rng(1);
    let n = 100;
    let data = floats(&mut rng, n);
    let mut e = Emulator::new(EmuConfig::default());
    let buf = upload(&mut e, &le(&data, f32::to_le_bytes));
    let t = e
        .create_texture(&TextureDesc::new(buf, TexelType::F32, 1, &[n as u32]))
        .unwrap();
    let out = upload(&mut e, &vec![0xAB; 4 * (n + 4)]);
    launch(
        &mut e,
        &m,
        "fetch1d",
        n + 4,
        &[
            ParamValue::U64(t),
            ParamValue::Ptr(out),
            ParamValue::I32(n as i32),
        ],
    );
    let got = read(&e, out, n + 4, f32::from_le_bytes);
    for (i, g) in got.iter().enumerate() {
        let want = data.get(i.wrapping_sub(2)).copied().unwrap_or(0.0);
        assert_eq!(g.to_bits(), want.to_bits(), "out[{i}]");
    }
}

#[test]
fn tex2d_point_and_linear_in_every_address_mode() {
    let m = module();
    let mut rng = Rng(2);
    let (w, h, n) = (37usize, 23usize, 700usize);
    let data = floats(&mut rng, w * h);
    for (filter, mode, normalized) in [
        (FilterMode::Point, AddressMode::Clamp, false),
        (FilterMode::Linear, AddressMode::Clamp, false),
        (FilterMode::Point, AddressMode::Border, false),
        (FilterMode::Linear, AddressMode::Border, false),
        (FilterMode::Linear, AddressMode::Wrap, true),
        (FilterMode::Point, AddressMode::Mirror, true),
        (FilterMode::Linear, AddressMode::Mirror, true),
        (FilterMode::Point, AddressMode::Wrap, false), // treated as clamp
    ] {
        let mut e = Emulator::new(EmuConfig::default());
        let buf = upload(&mut e, &le(&data, f32::to_le_bytes));
        let mut d = TextureDesc::new(buf, TexelType::F32, 1, &[w as u32, h as u32]);
        (d.filter, d.address, d.normalized) = (filter, [mode; 3], normalized);
        d.border = [2.5; 4];
        let t = e.create_texture(&d).unwrap();
        let coords: Vec<f32> = (0..2 * n)
            .map(|k| {
                let ext = if k % 2 == 0 { w } else { h } as f32;
                let v =
                    rng.range(-300, 1300) as f32 / 1000.0 * ext + (rng.next() % 7) as f32 / 13.0;
                if normalized {
                    v / ext
                } else {
                    v
                }
            })
            .collect();
        let xy = upload(&mut e, &le(&coords, f32::to_le_bytes));
        let out = upload(&mut e, &vec![0; 4 * n]);
        let p = ParamValue::Ptr;
        launch(
            &mut e,
            &m,
            "sample2d",
            n,
            &[ParamValue::U64(t), p(xy), p(out), ParamValue::I32(n as i32)],
        );
        let got = read(&e, out, n, f32::from_le_bytes);
        for i in 0..n {
            let want = reference(&data, &[w, h], &coords[2 * i..2 * i + 2], &d);
            assert_eq!(
                got[i].to_bits(),
                want.to_bits(),
                "{filter:?} {mode:?} normalized {normalized}: at {:?}: {} vs {}",
                &coords[2 * i..2 * i + 2],
                got[i],
                want
            );
        }
    }
}

#[test]
fn tex3d_point_and_linear() {
    let m = module();
    let mut rng = Rng(3);
    let (w, h, dd, n) = (9usize, 7usize, 5usize, 300usize);
    let data = floats(&mut rng, w * h * dd);
    for filter in [FilterMode::Point, FilterMode::Linear] {
        let mut e = Emulator::new(EmuConfig::default());
        let buf = upload(&mut e, &le(&data, f32::to_le_bytes));
        let mut d = TextureDesc::new(buf, TexelType::F32, 1, &[w as u32, h as u32, dd as u32]);
        d.filter = filter;
        let t = e.create_texture(&d).unwrap();
        let coords: Vec<f32> = (0..4 * n)
            .map(|k| [w, h, dd, 1][k % 4] as f32 * rng.range(-100, 1100) as f32 / 1000.0)
            .collect();
        let xyz = upload(&mut e, &le(&coords, f32::to_le_bytes));
        let out = upload(&mut e, &vec![0; 4 * n]);
        let p = ParamValue::Ptr;
        launch(
            &mut e,
            &m,
            "sample3d",
            n,
            &[
                ParamValue::U64(t),
                p(xyz),
                p(out),
                ParamValue::I32(n as i32),
            ],
        );
        let got = read(&e, out, n, f32::from_le_bytes);
        for i in 0..n {
            let want = reference(&data, &[w, h, dd], &coords[4 * i..4 * i + 3], &d);
            assert_eq!(
                got[i].to_bits(),
                want.to_bits(),
                "{filter:?} at {:?}",
                &coords[4 * i..4 * i + 3]
            );
        }
    }
}

#[test]
fn rgba8_as_normalized_floats_and_integer_texels() {
    let m = module();
    let mut rng = Rng(4);
    let (w, h, n) = (16usize, 8usize, 256usize);
    let bytes: Vec<u8> = (0..w * h * 4).map(|_| rng.next() as u8).collect();
    let mut e = Emulator::new(EmuConfig::default());
    let buf = upload(&mut e, &bytes);
    let mut d = TextureDesc::new(buf, TexelType::U8, 4, &[w as u32, h as u32]);
    (d.read, d.filter) = (ReadMode::NormalizedFloat, FilterMode::Linear);
    let t = e.create_texture(&d).unwrap();
    let coords: Vec<f32> = (0..2 * n)
        .map(|k| [w, h][k % 2] as f32 * rng.range(0, 1000) as f32 / 1000.0)
        .collect();
    let xy = upload(&mut e, &le(&coords, f32::to_le_bytes));
    let out = upload(&mut e, &vec![0; 16 * n]);
    let p = ParamValue::Ptr;
    launch(
        &mut e,
        &m,
        "sample_rgba8",
        n,
        &[ParamValue::U64(t), p(xy), p(out), ParamValue::I32(n as i32)],
    );
    let got = read(&e, out, 4 * n, f32::from_le_bytes);
    for c in 0..4 {
        let plane: Vec<f32> = (0..w * h)
            .map(|k| bytes[4 * k + c] as f32 / 255.0)
            .collect();
        for i in 0..n {
            let want = reference(&plane, &[w, h], &coords[2 * i..2 * i + 2], &d);
            let g = got[4 * i + c];
            // The reference weighs the normalized values; the texel unit weighs them the same way.
            assert!(
                (g - want).abs() <= 1e-6,
                "component {c} at {:?}: {g} vs {want}",
                &coords[2 * i..2 * i + 2]
            );
        }
    }
    // Integer texels as stored (int4), point sampled.
    let ints: Vec<i32> = (0..w * h * 4).map(|_| rng.range(-100000, 100000)).collect();
    let ib = upload(&mut e, &le(&ints, i32::to_le_bytes));
    let ti = e
        .create_texture(&TextureDesc::new(
            ib,
            TexelType::S32,
            4,
            &[w as u32, h as u32],
        ))
        .unwrap();
    let out = upload(&mut e, &vec![0; 16 * n]);
    launch(
        &mut e,
        &m,
        "fetch_int4",
        n,
        &[
            ParamValue::U64(ti),
            p(xy),
            p(out),
            ParamValue::I32(n as i32),
        ],
    );
    let got = read(&e, out, 4 * n, i32::from_le_bytes);
    for i in 0..n {
        let (x, y) = (
            coords[2 * i].floor() as usize,
            coords[2 * i + 1].floor() as usize,
        );
        let (x, y) = (x.min(w - 1), y.min(h - 1));
        assert_eq!(
            &got[4 * i..4 * i + 4],
            &ints[4 * (y * w + x)..4 * (y * w + x) + 4],
            "texel ({x}, {y})"
        );
    }
}

#[test]
fn surfaces_read_and_write_with_boundary_modes() {
    let m = module();
    let mut rng = Rng(5);
    let (w, h) = (33usize, 7usize);
    let data = floats(&mut rng, w * h);
    for (name, cfg) in common::configs() {
        let mut e = Emulator::new(cfg);
        let ib = upload(&mut e, &le(&data, f32::to_le_bytes));
        let ob = upload(&mut e, &vec![0; 4 * w * h]);
        let si = e
            .create_surface(&TextureDesc::new(
                ib,
                TexelType::F32,
                1,
                &[w as u32, h as u32],
            ))
            .unwrap();
        let so = e
            .create_surface(&TextureDesc::new(
                ob,
                TexelType::F32,
                1,
                &[w as u32, h as u32],
            ))
            .unwrap();
        e.launch(
            &m,
            "surf_stencil",
            [1, h as u32, 1],
            [64, 1, 1],
            0,
            &[
                ParamValue::U64(si),
                ParamValue::U64(so),
                ParamValue::I32(w as i32),
                ParamValue::I32(h as i32),
            ],
        )
        .unwrap_or_else(|err| panic!("{name}: {err}"));
        let got = read(&e, ob, w * h, f32::from_le_bytes);
        let at = |x: usize, y: i64| {
            if (0..h as i64).contains(&y) {
                data[y as usize * w + x]
            } else {
                0.0
            }
        };
        for y in 0..h {
            for x in 0..w {
                let right = data[y * w + (x + 1).min(w - 1)];
                let want = 2.0 * data[y * w + x]
                    + 1.0
                    + at(x, y as i64 - 1)
                    + at(x, y as i64 + 1)
                    + 0.5 * right;
                assert_eq!(
                    got[y * w + x].to_bits(),
                    want.to_bits(),
                    "{name}: ({x}, {y})"
                );
            }
        }
    }
}

#[test]
fn bad_objects_and_accesses_are_refused() {
    let m = module();
    let mut e = Emulator::new(EmuConfig::default());
    let buf = upload(&mut e, &[0; 4 * 64]);
    // Descriptors cudaCreateTextureObject refuses, and memory outside the allocation.
    let mut d = TextureDesc::new(buf, TexelType::S32, 1, &[8, 8]);
    d.filter = FilterMode::Linear;
    assert!(
        matches!(e.create_texture(&d), Err(EmuError::BadParams(m)) if m.contains("linear filtering"))
    );
    let big = TextureDesc::new(buf, TexelType::F32, 1, &[8, 9]);
    assert!(e
        .create_texture(&big)
        .unwrap_err()
        .to_string()
        .contains("not inside one allocation"));
    assert!(e
        .create_texture(&TextureDesc::new(buf, TexelType::F32, 3, &[4]))
        .is_err());
    // cudaCreateTextureObject's alignments: a 1D texture's base (512 bytes), a pitched one's base and
    // pitch (32 bytes); a packed 2D texture stands for a CUDA array.
    let err = e
        .create_texture(&TextureDesc::new(buf + 4, TexelType::F32, 1, &[8]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("512-byte aligned"), "{err}");
    let mut pitched = TextureDesc::new(buf, TexelType::F32, 1, &[7, 4]);
    pitched.pitch = 32;
    assert!(e.create_texture(&pitched).is_ok());
    pitched.pitch = 36;
    let err = e.create_texture(&pitched).unwrap_err().to_string();
    assert!(err.contains("texturePitchAlignment"), "{err}");
    assert!(e
        .create_texture(&TextureDesc::new(buf + 4, TexelType::F32, 1, &[7, 4]))
        .is_ok());
    // A handle that is not an object (0, or destroyed) faults where the kernel uses it.
    let out = upload(&mut e, &[0; 64]);
    let t = e
        .create_texture(&TextureDesc::new(buf, TexelType::F32, 1, &[64]))
        .unwrap();
    e.destroy_object(t).unwrap();
    assert!(e.destroy_object(t).is_err());
    for h in [0, t] {
        let err = e
            .launch(
                &m,
                "fetch1d",
                [1, 1, 1],
                [8, 1, 1],
                0,
                &[ParamValue::U64(h), ParamValue::Ptr(out), ParamValue::I32(4)],
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("InvalidOperation") && err.contains("not a live texture object"),
            "{err}"
        );
    }
    // A surface is not a texture.
    let s = e
        .create_surface(&TextureDesc::new(buf, TexelType::F32, 1, &[8, 8]))
        .unwrap();
    let err = e
        .launch(
            &m,
            "fetch1d",
            [1, 1, 1],
            [8, 1, 1],
            0,
            &[ParamValue::U64(s), ParamValue::Ptr(out), ParamValue::I32(4)],
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a live texture object"), "{err}");
    // A write past the surface in trap mode.
    let err = e
        .launch(
            &m,
            "surf_trap",
            [1, 1, 1],
            [4, 1, 1],
            0,
            &[ParamValue::U64(s), ParamValue::I32(8)],
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("OutOfBounds") && err.contains("outside the surface"),
        "{err}"
    );
}

/// `tex2Dgather` (`tld4.g`): the green components of the four texels around each coordinate, in the PTX
/// ISA's order (counter-clockwise from the lower left), clamped at the edges.
#[test]
fn tex2dgather_returns_the_bilinear_footprint() {
    let m = module();
    let mut rng = Rng(6);
    let (w, h, n) = (11usize, 6usize, 200usize);
    let data: Vec<f32> = (0..w * h * 2)
        .map(|_| rng.range(-500, 500) as f32)
        .collect();
    let mut e = Emulator::new(EmuConfig::default());
    let buf = upload(&mut e, &le(&data, f32::to_le_bytes));
    let t = e
        .create_texture(&TextureDesc::new(
            buf,
            TexelType::F32,
            2,
            &[w as u32, h as u32],
        ))
        .unwrap();
    let coords: Vec<f32> = (0..2 * n)
        .map(|k| [w, h][k % 2] as f32 * rng.range(-100, 1100) as f32 / 1000.0)
        .collect();
    let xy = upload(&mut e, &le(&coords, f32::to_le_bytes));
    let out = upload(&mut e, &vec![0; 16 * n]);
    let p = ParamValue::Ptr;
    launch(
        &mut e,
        &m,
        "gather_g",
        n,
        &[ParamValue::U64(t), p(xy), p(out), ParamValue::I32(n as i32)],
    );
    let got = read(&e, out, 4 * n, f32::from_le_bytes);
    let g = |x: i64, y: i64| {
        let (x, y) = (
            x.clamp(0, w as i64 - 1) as usize,
            y.clamp(0, h as i64 - 1) as usize,
        );
        data[2 * (y * w + x) + 1]
    };
    for i in 0..n {
        let x0 = (coords[2 * i] - 0.5).floor() as i64;
        let y0 = (coords[2 * i + 1] - 0.5).floor() as i64;
        let want = [g(x0, y0 + 1), g(x0 + 1, y0 + 1), g(x0 + 1, y0), g(x0, y0)];
        assert_eq!(
            &got[4 * i..4 * i + 4],
            &want,
            "at {:?}",
            &coords[2 * i..2 * i + 2]
        );
    }
}
