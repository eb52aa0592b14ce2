//! Texture and surface objects: what `cudaCreateTextureObject` / `cudaCreateSurfaceObject` make, over
//! device memory the emulator allocated, and how a fetch samples them (PTX ISA §9.7.9 `tex`/`txq`, §9.7.10
//! `suld`/`sust`/`suq`; CUDA C++ Programming Guide, "Texture Fetching").
//!
//! A kernel receives an object as an opaque 64-bit handle (a `.u64` parameter) and names it in unified
//! mode (`tex.2d.v4.f32.f32 d, [handle, {x, y}]`). The emulator's handles index a table in the
//! [`Emulator`](super::Emulator); the memory is laid out as pitch-linear rows (a CUDA array's layout is
//! opaque, so any layout the program cannot observe is as good). Sampling follows the Guide's appendix:
//! normalized coordinates scale by the extent; point sampling takes `floor`; linear filtering weighs the
//! two (four, eight) nearest texels with fractions held in 9-bit fixed point with 8 fractional bits, as the
//! hardware does, so results match it rather than exact interpolation; the address mode maps indices
//! outside the extent (wrap and mirror only with normalized coordinates — otherwise clamp, as on the GPU);
//! 8- and 16-bit integer texels read as normalized floats when asked. Components a format lacks read as
//! 0, and alpha as 1.

use std::fmt;

/// A texel component's type (`cudaChannelFormatKind` and bit width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TexelType {
    /// 8-bit unsigned.
    U8,
    /// 8-bit signed.
    S8,
    /// 16-bit unsigned.
    U16,
    /// 16-bit signed.
    S16,
    /// 32-bit unsigned.
    U32,
    /// 32-bit signed.
    S32,
    /// IEEE half.
    F16,
    /// IEEE single.
    F32,
}

impl TexelType {
    /// Bytes of one component.
    pub fn size(self) -> usize {
        match self {
            TexelType::U8 | TexelType::S8 => 1,
            TexelType::U16 | TexelType::S16 | TexelType::F16 => 2,
            _ => 4,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, TexelType::F16 | TexelType::F32)
    }

    /// The CLI's name (`u8`, `i8`, `u16`, `i16`, `u32`, `i32`, `f16`, `f32`).
    pub fn parse(s: &str) -> Option<TexelType> {
        Some(match s {
            "u8" => TexelType::U8,
            "i8" | "s8" => TexelType::S8,
            "u16" => TexelType::U16,
            "i16" | "s16" => TexelType::S16,
            "u32" => TexelType::U32,
            "i32" | "s32" => TexelType::S32,
            "f16" => TexelType::F16,
            "f32" => TexelType::F32,
            _ => return None,
        })
    }
}

/// What a coordinate outside the extent reads (`cudaTextureAddressMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressMode {
    /// Repeat (normalized coordinates only).
    Wrap,
    /// The nearest edge texel.
    Clamp,
    /// Repeat mirrored (normalized coordinates only).
    Mirror,
    /// The border color.
    Border,
}

/// Point sampling or linear filtering (`cudaTextureFilterMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterMode {
    /// The texel the coordinate falls in.
    Point,
    /// The nearest texels weighed by distance (float results only).
    Linear,
}

/// How integer texels are returned (`cudaTextureReadMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// As stored.
    ElementType,
    /// 8- and 16-bit integers as floats in [0, 1] (unsigned) or [-1, 1] (signed).
    NormalizedFloat,
}

/// A texture or surface over device memory: `addr` holds `extent` texels of `channels` components of
/// `texel` each, rows `pitch` bytes apart (0: packed), the rows of one slice of a 3D texture contiguous.
/// The sampler fields concern textures; a surface reads and writes raw bytes.
///
/// ```
/// use prism_runtime::emu::{AddressMode, EmuConfig, Emulator, FilterMode, TexelType, TextureDesc};
/// let mut emu = Emulator::new(EmuConfig::default());
/// let img = emu.alloc(4 * 64 * 32);
/// let mut desc = TextureDesc::new(img, TexelType::F32, 1, &[64, 32]);
/// desc.filter = FilterMode::Linear;
/// desc.normalized = true;
/// desc.address = [AddressMode::Wrap; 3];
/// let tex = emu.create_texture(&desc).unwrap(); // pass `ParamValue::U64(tex)` to the kernel
/// assert_ne!(tex, 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextureDesc {
    /// Device address of texel (0, 0, 0).
    pub addr: u64,
    /// Component type.
    pub texel: TexelType,
    /// Components per texel: 1, 2 or 4.
    pub channels: u32,
    /// Dimensions used: 1, 2 or 3.
    pub dims: u8,
    /// Width, height, depth in texels (1 for the dimensions not used).
    pub extent: [u32; 3],
    /// Bytes from one row to the next (0: `extent[0]` texels, packed, as in a CUDA array; otherwise a
    /// pitch-2D resource, base and pitch multiples of 32 bytes).
    pub pitch: u64,
    /// Address mode per dimension.
    pub address: [AddressMode; 3],
    /// Point sampling or linear filtering.
    pub filter: FilterMode,
    /// Integer texels as stored or as normalized floats.
    pub read: ReadMode,
    /// Coordinates in [0, 1) rather than in texels.
    pub normalized: bool,
    /// The border color (address mode `Border`), one value per component.
    pub border: [f32; 4],
}

impl TextureDesc {
    /// A texture of `extent` (1 to 3 dimensions, width first) over `addr`, packed rows, clamped, point
    /// sampled, read as stored, unnormalized coordinates, border 0.
    pub fn new(addr: u64, texel: TexelType, channels: u32, extent: &[u32]) -> TextureDesc {
        let mut e = [1u32; 3];
        for (d, x) in e.iter_mut().zip(extent) {
            *d = *x;
        }
        TextureDesc {
            addr,
            texel,
            channels,
            dims: extent.len().clamp(1, 3) as u8,
            extent: e,
            pitch: 0,
            address: [AddressMode::Clamp; 3],
            filter: FilterMode::Point,
            read: ReadMode::ElementType,
            normalized: false,
            border: [0.0; 4],
        }
    }

    /// Bytes of one texel.
    pub fn texel_bytes(&self) -> usize {
        self.texel.size() * self.channels as usize
    }

    /// Bytes from one row to the next.
    pub fn row_pitch(&self) -> u64 {
        if self.pitch == 0 {
            self.extent[0] as u64 * self.texel_bytes() as u64
        } else {
            self.pitch
        }
    }

    /// Bytes the texture spans from `addr`.
    pub fn span(&self) -> u64 {
        self.row_pitch() * self.extent[1] as u64 * self.extent[2] as u64
    }

    /// Whether fetches return floats: float texels, or integers read as normalized floats.
    fn float_results(&self) -> bool {
        self.texel.is_float() || self.read == ReadMode::NormalizedFloat
    }

    /// The rules `cudaCreateTextureObject` / `cudaCreateSurfaceObject` enforce that matter here.
    pub(crate) fn validate(&self, surface: bool) -> Result<(), String> {
        if ![1, 2, 4].contains(&self.channels) {
            return Err(format!("{} channels: 1, 2 or 4", self.channels));
        }
        if !(1..=3).contains(&self.dims) {
            return Err(format!("{} dimensions: 1, 2 or 3", self.dims));
        }
        let limit = [1u32 << 27, 65536, 16384][self.dims as usize - 1];
        for d in 0..3 {
            let used = d < self.dims as usize;
            if (used && !(1..=limit).contains(&self.extent[d])) || (!used && self.extent[d] != 1) {
                return Err(format!(
                    "extent {:?} for {} dimension(s): each used one 1..={limit}, the others 1",
                    self.extent, self.dims
                ));
            }
        }
        let row = self.extent[0] as u64 * self.texel_bytes() as u64;
        if self.pitch != 0
            && (self.pitch < row || !self.pitch.is_multiple_of(self.texel_bytes() as u64))
        {
            return Err(format!(
                "pitch {} bytes: at least a row ({row} bytes) and a multiple of the texel ({} bytes)",
                self.pitch,
                self.texel_bytes()
            ));
        }
        if !self.addr.is_multiple_of(self.texel.size() as u64) {
            return Err(format!(
                "address {:#x} is not aligned to its texel components",
                self.addr
            ));
        }
        if surface {
            return Ok(());
        }
        // cudaCreateTextureObject's alignment rules: a 1D texture is over linear memory (its base aligned to
        // textureAlignment, 512 bytes); a texture given a pitch is a pitch-2D resource (base and pitch
        // multiples of texturePitchAlignment, 32 bytes). A packed 2D/3D texture stands for a CUDA array,
        // whose layout is the runtime's own.
        if self.dims == 1 && !self.addr.is_multiple_of(512) {
            return Err(format!(
                "a 1D texture's base {:#x} must be 512-byte aligned (textureAlignment)",
                self.addr
            ));
        }
        if self.pitch != 0 && (!self.pitch.is_multiple_of(32) || !self.addr.is_multiple_of(32)) {
            return Err(format!(
                "a pitched texture's base {:#x} and pitch {} must be multiples of 32 bytes (texturePitchAlignment)",
                self.addr, self.pitch
            ));
        }
        if self.read == ReadMode::NormalizedFloat && !matches!(self.texel.size(), 1 | 2) {
            return Err("normalized-float reads need 8- or 16-bit integer texels".into());
        }
        if self.filter == FilterMode::Linear && !self.float_results() {
            return Err(
                "linear filtering needs float results: float texels, or 8/16-bit integers read as normalized floats"
                    .into(),
            );
        }
        Ok(())
    }
}

impl fmt::Display for TextureDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?}x{} {:?} at {:#x}",
            self.texel,
            self.channels,
            &self.extent[..self.dims as usize],
            self.addr
        )
    }
}

/// One component of a texel's bytes as a float result (`ReadMode` applied) or as integer bits.
fn component(desc: &TextureDesc, bits: u64) -> (f32, u32) {
    let nf = desc.read == ReadMode::NormalizedFloat;
    match desc.texel {
        TexelType::U8 => (
            if nf {
                bits as u8 as f32 / 255.0
            } else {
                bits as u8 as f32
            },
            bits as u8 as u32,
        ),
        TexelType::S8 => {
            let v = bits as u8 as i8;
            (
                if nf {
                    (v as f32 / 127.0).max(-1.0)
                } else {
                    v as f32
                },
                v as i32 as u32,
            )
        }
        TexelType::U16 => {
            let v = bits as u16;
            (if nf { v as f32 / 65535.0 } else { v as f32 }, v as u32)
        }
        TexelType::S16 => {
            let v = bits as u16 as i16;
            (
                if nf {
                    (v as f32 / 32767.0).max(-1.0)
                } else {
                    v as f32
                },
                v as i32 as u32,
            )
        }
        TexelType::U32 => (bits as u32 as f32, bits as u32),
        TexelType::S32 => (bits as u32 as i32 as f32, bits as u32),
        TexelType::F16 => (
            half::f16::from_bits(bits as u16).to_f32(),
            bits as u16 as u32,
        ),
        TexelType::F32 => (f32::from_bits(bits as u32), bits as u32),
    }
}

/// A fetched texel: four float results and four integer results (the instruction's type picks one).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Texel {
    pub f: [f32; 4],
    pub i: [u32; 4],
}

impl Texel {
    /// Components a format lacks: 0, alpha 1.
    const MISSING: Texel = Texel {
        f: [0.0, 0.0, 0.0, 1.0],
        i: [0, 0, 0, 1],
    };
}

/// Texel `idx` (within the extent) of `desc`, its components read by `read(byte address, bytes)`.
fn texel_at(
    desc: &TextureDesc,
    idx: [u32; 3],
    read: &mut impl FnMut(u64, usize) -> Option<u64>,
) -> Option<Texel> {
    let tb = desc.texel_bytes() as u64;
    let at = desc.addr
        + (idx[2] as u64 * desc.extent[1] as u64 + idx[1] as u64) * desc.row_pitch()
        + idx[0] as u64 * tb;
    let cs = desc.texel.size();
    let mut t = Texel::MISSING;
    for c in 0..desc.channels as usize {
        let bits = read(at + (c * cs) as u64, cs)?;
        (t.f[c], t.i[c]) = component(desc, bits);
    }
    Some(t)
}

/// The index `i` along dimension `d` after the address mode, or `None` for the border.
fn address(desc: &TextureDesc, d: usize, i: i64) -> Option<u32> {
    let n = desc.extent[d] as i64;
    let mode = match desc.address[d] {
        // Wrap and mirror need normalized coordinates; the hardware clamps otherwise.
        AddressMode::Wrap | AddressMode::Mirror if !desc.normalized => AddressMode::Clamp,
        m => m,
    };
    let j = match mode {
        AddressMode::Clamp => i.clamp(0, n - 1),
        AddressMode::Border if !(0..n).contains(&i) => return None,
        AddressMode::Border => i,
        AddressMode::Wrap => i.rem_euclid(n),
        AddressMode::Mirror => {
            let m = i.rem_euclid(2 * n);
            if m >= n {
                2 * n - 1 - m
            } else {
                m
            }
        }
    };
    Some(j as u32)
}

/// The border texel.
fn border(desc: &TextureDesc) -> Texel {
    let mut t = Texel::MISSING;
    for c in 0..desc.channels as usize {
        t.f[c] = desc.border[c];
        t.i[c] = desc.border[c] as i64 as u32;
    }
    t
}

/// The texel at integer indices (after the address mode; the border outside).
fn texel_moded(
    desc: &TextureDesc,
    idx: [i64; 3],
    read: &mut impl FnMut(u64, usize) -> Option<u64>,
) -> Option<Texel> {
    let mut j = [0u32; 3];
    for d in 0..desc.dims as usize {
        match address(desc, d, idx[d]) {
            Some(x) => j[d] = x,
            None => return Some(border(desc)),
        }
    }
    texel_at(desc, j, read)
}

/// A linear filter weight: the fraction in 9-bit fixed point with 8 fractional bits.
fn weight(frac: f64) -> f64 {
    (frac * 256.0).round() / 256.0
}

/// `tex` at float coordinates `x` (the first `dims` used): `None` when memory could not be read.
pub(crate) fn sample(
    desc: &TextureDesc,
    x: [f32; 3],
    read: &mut impl FnMut(u64, usize) -> Option<u64>,
) -> Option<Texel> {
    let dims = desc.dims as usize;
    let mut u = [0f64; 3];
    for d in 0..dims {
        u[d] = x[d] as f64
            * if desc.normalized {
                desc.extent[d] as f64
            } else {
                1.0
            };
    }
    if desc.filter == FilterMode::Point {
        let idx = u.map(|v| v.floor() as i64);
        return texel_moded(desc, idx, read);
    }
    // Linear: the 2^dims texels around u - 0.5, weighed by the quantized fractions.
    // (No allocation per fetch: the unused dimensions hold 0 and are not read.)
    let base = u.map(|v| (v - 0.5).floor() as i64);
    let frac = [0, 1, 2].map(|d| weight(u[d] - 0.5 - base[d] as f64));
    let mut acc = [0f64; 4];
    for corner in 0..(1usize << dims) {
        let mut idx = [0i64; 3];
        let mut w = 1.0;
        for d in 0..dims {
            let hi = corner >> d & 1 == 1;
            idx[d] = base[d] + hi as i64;
            w *= if hi { frac[d] } else { 1.0 - frac[d] };
        }
        let t = texel_moded(desc, idx, read)?;
        for (a, f) in acc.iter_mut().zip(t.f) {
            *a += w * f as f64;
        }
    }
    let mut t = Texel::MISSING;
    let n = desc.channels as usize;
    for (f, a) in t.f.iter_mut().zip(acc).take(n) {
        *f = a as f32;
    }
    Some(t)
}

/// `tld4`: component `comp` of the four texels linear filtering at `x` would weigh, in the order the PTX
/// ISA gives (counter-clockwise from the lower left): (i, j+1), (i+1, j+1), (i+1, j), (i, j) with
/// (i, j) = floor(u − 0.5, v − 0.5); the address mode applies to each.
pub(crate) fn gather(
    desc: &TextureDesc,
    x: [f32; 3],
    comp: usize,
    read: &mut impl FnMut(u64, usize) -> Option<u64>,
) -> Option<Texel> {
    let scale = |d: usize| {
        if desc.normalized {
            desc.extent[d] as f64
        } else {
            1.0
        }
    };
    let i = (x[0] as f64 * scale(0) - 0.5).floor() as i64;
    let j = (x[1] as f64 * scale(1) - 0.5).floor() as i64;
    let mut out = Texel {
        f: [0.0; 4],
        i: [0; 4],
    };
    for (k, (di, dj)) in [(0, 1), (1, 1), (1, 0), (0, 0)].into_iter().enumerate() {
        let t = texel_moded(desc, [i + di, j + dj, 0], read)?;
        (out.f[k], out.i[k]) = (t.f[comp], t.i[comp]);
    }
    Some(out)
}

/// `tex` at integer coordinates (`tex1Dfetch`, `.s32` coordinates): texel indices, no filtering; a 1D
/// texture reads zero outside its extent (CUDA's textures over linear memory), the others follow the
/// address mode.
pub(crate) fn fetch(
    desc: &TextureDesc,
    x: [i32; 3],
    read: &mut impl FnMut(u64, usize) -> Option<u64>,
) -> Option<Texel> {
    if desc.dims == 1 && !(0..desc.extent[0] as i64).contains(&(x[0] as i64)) {
        let mut t = Texel::MISSING;
        for c in 0..desc.channels as usize {
            (t.f[c], t.i[c]) = (0.0, 0);
        }
        return Some(t);
    }
    texel_moded(desc, x.map(|v| v as i64), read)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4x2 single-channel f32 texture over `data`.
    fn desc() -> TextureDesc {
        TextureDesc::new(0, TexelType::F32, 1, &[4, 2])
    }

    fn reader(data: &[f32]) -> impl FnMut(u64, usize) -> Option<u64> + '_ {
        move |a, _| data.get(a as usize / 4).map(|v| v.to_bits() as u64)
    }

    #[test]
    fn point_linear_and_address_modes() {
        let data = [0.0f32, 1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 13.0];
        let mut d = desc();
        let mut r = reader(&data);
        let at = |d: &TextureDesc, x: f32, y: f32, r: &mut dyn FnMut(u64, usize) -> Option<u64>| {
            let mut rr = |a, s| r(a, s);
            sample(d, [x, y, 0.0], &mut rr).unwrap().f[0]
        };
        assert_eq!(at(&d, 2.7, 1.2, &mut r), 12.0);
        assert_eq!(at(&d, -5.0, 9.0, &mut r), 10.0); // clamped
        d.address = [AddressMode::Border; 3];
        d.border = [7.0; 4];
        assert_eq!(at(&d, 4.0, 0.5, &mut r), 7.0);
        // Linear between texel centres 1.5 and 2.5 at 2.0: half of each.
        d.address = [AddressMode::Clamp; 3];
        d.filter = FilterMode::Linear;
        assert_eq!(at(&d, 2.0, 0.5, &mut r), 1.5);
        // A fraction of 1/3 is held as 85/256.
        let v = at(&d, 1.5 + 1.0 / 3.0, 0.5, &mut r);
        assert_eq!(v, (1.0 + 85.0 / 256.0) as f32);
        // Normalized wrap and mirror.
        d.filter = FilterMode::Point;
        d.normalized = true;
        d.address = [AddressMode::Wrap; 3];
        assert_eq!(at(&d, 1.1, 0.1, &mut r), 0.0);
        d.address = [AddressMode::Mirror; 3];
        assert_eq!(at(&d, 1.1, 0.1, &mut r), 3.0);
        assert_eq!(at(&d, -0.1, 0.1, &mut r), 0.0);
    }

    #[test]
    fn integer_fetches_formats_and_validation() {
        let mut d = TextureDesc::new(0, TexelType::U8, 4, &[3]);
        let bytes = [255u8, 0, 128, 7, 1, 2, 3, 4, 9, 9, 9, 9];
        let mut r = |a: u64, _| bytes.get(a as usize).map(|&b| b as u64);
        let t = fetch(&d, [0, 0, 0], &mut r).unwrap();
        assert_eq!(t.i, [255, 0, 128, 7]);
        assert_eq!(fetch(&d, [3, 0, 0], &mut r).unwrap().i, [0, 0, 0, 0]);
        d.read = ReadMode::NormalizedFloat;
        let t = fetch(&d, [0, 0, 0], &mut r).unwrap();
        assert_eq!(t.f, [1.0, 0.0, 128.0 / 255.0, 7.0 / 255.0]);
        assert!(d.validate(false).is_ok());
        d.read = ReadMode::ElementType;
        d.filter = FilterMode::Linear;
        assert!(d.validate(false).unwrap_err().contains("linear filtering"));
        assert!(TextureDesc::new(0, TexelType::F32, 3, &[4])
            .validate(false)
            .is_err());
        assert!(TextureDesc::new(0, TexelType::F32, 1, &[0, 4])
            .validate(true)
            .is_err());
        let mut p = TextureDesc::new(0, TexelType::F32, 1, &[4, 4]);
        p.pitch = 8;
        assert!(p.validate(true).unwrap_err().contains("pitch"));
        // One channel: the others read 0, alpha 1.
        let one = TextureDesc::new(0, TexelType::F32, 1, &[1]);
        let data = [5.0f32];
        let t = fetch(&one, [0, 0, 0], &mut reader(&data)).unwrap();
        assert_eq!(t.f, [5.0, 0.0, 0.0, 1.0]);
    }
}
