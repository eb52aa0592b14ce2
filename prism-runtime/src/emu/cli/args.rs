//! The CLI's arguments that name device memory: named buffers (`NAME=buf:…`), references to them
//! (`ref:NAME[+BYTES]`, a pointer parameter) and structs passed by value whose fields may hold such
//! pointers (`struct:FIELD,FIELD,…`). With them a command line runs several launches on the same buffers
//! (`--then`) and passes the parameter blocks public code builds on the host (`struct Params { float* x;
//! int n; }`).

use super::{AddressMode, FilterMode, ParamValue, ReadMode, TexelType, TextureDesc};

/// A field of a `struct:` argument.
#[derive(Debug, Clone, PartialEq)]
pub enum StructField {
    /// A scalar, laid out at its natural alignment.
    Scalar(ParamValue),
    /// The address of a named buffer plus a byte offset (8 bytes, 8-aligned).
    Ref(BufferRef),
    /// An 8- or 16-bit integer, little-endian (`u8`, `i8`, `u16`, `i16`).
    Bytes(Vec<u8>),
}

/// `ref:NAME[+BYTES]`: the address of the buffer named `NAME` (by `NAME=buf:…` in this launch or an
/// earlier one), plus `offset` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferRef {
    /// The buffer's name.
    pub name: String,
    /// Bytes past its start.
    pub offset: u64,
}

/// Whether `s` is a buffer name: a C identifier.
pub(crate) fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// `NAME=REST` with `NAME` an identifier: (name, rest); anything else is unnamed.
pub(crate) fn split_name(arg: &str) -> (Option<&str>, &str) {
    match arg.split_once('=') {
        Some((n, rest)) if is_name(n) => (Some(n), rest),
        _ => (None, arg),
    }
}

/// `NAME[+BYTES]` after `ref:`.
pub(crate) fn parse_ref(s: &str) -> Result<BufferRef, String> {
    let (name, offset) = match s.split_once('+') {
        Some((n, o)) => (
            n,
            o.parse::<u64>()
                .map_err(|_| format!("bad byte offset '{o}' in ref:{s}"))?,
        ),
        None => (s, 0),
    };
    if !is_name(name) {
        return Err(format!("ref:{s}: expected ref:NAME or ref:NAME+BYTES"));
    }
    Ok(BufferRef {
        name: name.to_string(),
        offset,
    })
}

/// The fields of `struct:F,F,…`: `u8:V`, `i8:V`, `u16:V`, `i16:V`, `u32:V`, `i32:V`, `u64:V`, `i64:V`, `f32:V`,
/// `f64:V`, `ref:NAME[+B]`.
pub(crate) fn parse_struct(s: &str) -> Result<Vec<StructField>, String> {
    let mut fields = Vec::new();
    for f in s.split(',') {
        let (kind, v) = f
            .split_once(':')
            .ok_or_else(|| format!("struct field '{f}': expected TYPE:VALUE or ref:NAME"))?;
        let bad = || format!("struct field '{f}': bad {kind} value");
        fields.push(match kind {
            "u8" => StructField::Bytes(vec![v.parse::<u8>().map_err(|_| bad())?]),
            "i8" => StructField::Bytes(vec![v.parse::<i8>().map_err(|_| bad())? as u8]),
            "u16" => StructField::Bytes(v.parse::<u16>().map_err(|_| bad())?.to_le_bytes().to_vec()),
            "i16" => StructField::Bytes(v.parse::<i16>().map_err(|_| bad())?.to_le_bytes().to_vec()),
            "u32" => StructField::Scalar(ParamValue::U32(v.parse().map_err(|_| bad())?)),
            "i32" => StructField::Scalar(ParamValue::I32(v.parse().map_err(|_| bad())?)),
            "u64" => StructField::Scalar(ParamValue::U64(v.parse().map_err(|_| bad())?)),
            "i64" => StructField::Scalar(ParamValue::I64(v.parse().map_err(|_| bad())?)),
            "f32" => StructField::Scalar(ParamValue::F32(v.parse().map_err(|_| bad())?)),
            "f64" => StructField::Scalar(ParamValue::F64(v.parse().map_err(|_| bad())?)),
            "ref" => StructField::Ref(parse_ref(v)?),
            _ => {
                return Err(format!(
                    "struct field '{f}': unknown type '{kind}' (u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, ref)"
                ))
            }
        });
    }
    if fields.is_empty() {
        return Err("struct: needs at least one field".into());
    }
    Ok(fields)
}

fn field_size(f: &StructField) -> usize {
    match f {
        StructField::Scalar(p) => p.to_bytes().len(),
        StructField::Ref(_) => 8,
        StructField::Bytes(b) => b.len(),
    }
}

/// The struct's bytes as a C compiler lays it out (each field at a multiple of its size, the whole padded
/// to its largest field), with `addr` giving each reference's address.
pub(crate) fn struct_bytes(
    fields: &[StructField],
    mut addr: impl FnMut(&BufferRef) -> Result<u64, String>,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut align = 1;
    for f in fields {
        let size = field_size(f);
        align = align.max(size);
        out.resize(out.len().next_multiple_of(size), 0);
        match f {
            StructField::Scalar(p) => out.extend(p.to_bytes()),
            StructField::Ref(r) => out.extend(addr(r)?.to_le_bytes()),
            StructField::Bytes(b) => out.extend(b),
        }
    }
    out.resize(out.len().next_multiple_of(align), 0);
    Ok(out)
}

/// `TYPE[xC]:DIMS:INIT[:OPTS]` after `tex:` or `surf:`: the texel type and channels (`f32`, `u8x4`), the
/// extent (`64x32`, width first, up to 3), the buffer's initial contents (as `buf:`), and for textures
/// the sampler, a comma list of `point|linear`, `clamp|wrap|mirror|border`, `norm` (normalized
/// coordinates), `nf` (integers read as normalized floats), `border=V`. Returns the buffer's element type
/// and count and the descriptor (address 0 until the buffer exists).
pub(crate) fn parse_texture(
    rest: &str,
    surface: bool,
) -> Result<(String, usize, &str, TextureDesc), String> {
    let parts: Vec<&str> = rest.splitn(4, ':').collect();
    if parts.len() < 3 || (surface && parts.len() > 3) {
        return Err(if surface {
            "expected surf:TYPE[xC]:DIMS:INIT".into()
        } else {
            "expected tex:TYPE[xC]:DIMS:INIT[:OPTIONS]".into()
        });
    }
    let (ty, channels) = match parts[0].split_once('x') {
        Some((t, c)) => (
            t,
            c.parse::<u32>()
                .map_err(|_| format!("bad channel count in '{}'", parts[0]))?,
        ),
        None => (parts[0], 1),
    };
    let texel = TexelType::parse(ty)
        .filter(|t| *t != TexelType::S8)
        .ok_or_else(|| format!("texel type '{ty}': u8, u16, i16, u32, i32, f16 or f32"))?;
    let dims: Vec<u32> = parts[1]
        .split('x')
        .map(|d| d.parse::<u32>().ok())
        .collect::<Option<_>>()
        .filter(|v: &Vec<u32>| (1..=3).contains(&v.len()))
        .ok_or_else(|| format!("bad DIMS '{}' (e.g. 64x32)", parts[1]))?;
    let mut desc = TextureDesc::new(0, texel, channels, &dims);
    for o in parts.get(3).into_iter().flat_map(|o| o.split(',')) {
        match o {
            "point" => desc.filter = FilterMode::Point,
            "linear" => desc.filter = FilterMode::Linear,
            "clamp" => desc.address = [AddressMode::Clamp; 3],
            "wrap" => desc.address = [AddressMode::Wrap; 3],
            "mirror" => desc.address = [AddressMode::Mirror; 3],
            "border" => desc.address = [AddressMode::Border; 3],
            "norm" => desc.normalized = true,
            "nf" => desc.read = ReadMode::NormalizedFloat,
            _ => match o.strip_prefix("border=").map(str::parse::<f32>) {
                Some(Ok(v)) => desc.border = [v; 4],
                _ => {
                    return Err(format!(
                        "texture option '{o}': point, linear, clamp, wrap, mirror, border, norm, nf, border=V"
                    ))
                }
            },
        }
    }
    let count = dims.iter().map(|&d| d as usize).product::<usize>() * channels as usize;
    Ok((ty.to_string(), count, parts[2], desc))
}

/// The struct's size in bytes (its layout with placeholder addresses).
pub(crate) fn struct_size(fields: &[StructField]) -> usize {
    struct_bytes(fields, |_| Ok(0)).map_or(0, |b| b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_are_laid_out_as_c_does() {
        // struct { float* x; int n; float a; double d; char pad-free } -> 8 + 4 + 4 + 8 = 24
        let f = parse_struct("ref:x+16,i32:-3,f32:1.5,f64:2").unwrap();
        let b = struct_bytes(&f, |r| Ok(0x1000 + r.offset)).unwrap();
        assert_eq!(b.len(), 24);
        assert_eq!(u64::from_le_bytes(b[0..8].try_into().unwrap()), 0x1010);
        assert_eq!(i32::from_le_bytes(b[8..12].try_into().unwrap()), -3);
        assert_eq!(f32::from_le_bytes(b[12..16].try_into().unwrap()), 1.5);
        assert_eq!(f64::from_le_bytes(b[16..24].try_into().unwrap()), 2.0);
        // struct { int n; float* x; } -> 4 + pad 4 + 8; struct { double d; int n; } -> 16 (tail padding)
        assert_eq!(struct_size(&parse_struct("i32:1,ref:x").unwrap()), 16);
        assert_eq!(struct_size(&parse_struct("f64:1,i32:2").unwrap()), 16);
        assert_eq!(struct_size(&parse_struct("i32:1,i32:2,f32:3").unwrap()), 12);
    }

    #[test]
    fn names_refs_and_bad_fields() {
        assert_eq!(
            split_name("x=buf:f32:4:zero"),
            (Some("x"), "buf:f32:4:zero")
        );
        assert_eq!(split_name("buf:f32:4:@a=b"), (None, "buf:f32:4:@a=b"));
        assert_eq!(split_name("9x=buf:u8:1:zero").0, None);
        assert_eq!(
            parse_ref("out_2+64").unwrap(),
            BufferRef {
                name: "out_2".into(),
                offset: 64
            }
        );
        assert!(parse_ref("a+b").is_err());
        assert!(parse_ref("").is_err());
        assert!(parse_struct("u32:1,q:2").is_err());
        // struct { short s; char c; int n; } -> 2 + 1 + pad 1 + 4
        let f = parse_struct("i16:-2,u8:7,i32:9").unwrap();
        let b = struct_bytes(&f, |_| Ok(0)).unwrap();
        assert_eq!(b, [0xfe, 0xff, 7, 0, 9, 0, 0, 0]);
        assert!(parse_struct("u32:x").is_err());
        assert!(parse_struct("u32").is_err());
    }
}
