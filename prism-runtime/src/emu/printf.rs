//! Device-side `printf`: nvcc lowers it to `vprintf(format, args)`, where `args` points at a buffer holding
//! each argument at its natural alignment (integers 4 or 8 bytes, floating point promoted to `double`,
//! pointers and strings 8 bytes). This formats such a call the way the C library would.

/// Reads argument bytes from the argument buffer and strings from device memory.
pub(crate) trait ArgSource {
    /// The `size`-byte little-endian value at byte `offset` of the argument buffer.
    fn arg(&mut self, offset: usize, size: usize) -> Option<u64>;
    /// The NUL-terminated string at device address `addr`.
    fn string(&mut self, addr: u64) -> Option<String>;
}

/// Formats `fmt` with the arguments from `src`. Malformed conversions are copied through verbatim;
/// unreadable arguments print as `<?>`.
pub(crate) fn format(fmt: &[u8], src: &mut dyn ArgSource) -> String {
    let mut out = String::new();
    let mut off = 0usize;
    let mut i = 0usize;
    while i < fmt.len() {
        let c = fmt[i];
        if c != b'%' {
            // Copy a run of plain bytes (UTF-8 passes through).
            let start = i;
            while i < fmt.len() && fmt[i] != b'%' {
                i += 1;
            }
            out.push_str(&String::from_utf8_lossy(&fmt[start..i]));
            continue;
        }
        let start = i;
        i += 1;
        if i < fmt.len() && fmt[i] == b'%' {
            out.push('%');
            i += 1;
            continue;
        }
        let mut spec = Spec::default();
        while i < fmt.len() && b"-+ #0".contains(&fmt[i]) {
            match fmt[i] {
                b'-' => spec.left = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'0' => spec.zero = true,
                _ => spec.alt = true,
            }
            i += 1;
        }
        spec.width = digits(fmt, &mut i);
        if i < fmt.len() && fmt[i] == b'.' {
            i += 1;
            spec.precision = Some(digits(fmt, &mut i).unwrap_or(0));
        }
        let mut long = 0;
        while i < fmt.len() && b"hlLqjzt".contains(&fmt[i]) {
            if matches!(fmt[i], b'l' | b'q' | b'j' | b'z' | b't' | b'L') {
                long += 1;
            }
            i += 1;
        }
        let Some(&conv) = fmt.get(i) else {
            out.push_str(&String::from_utf8_lossy(&fmt[start..]));
            break;
        };
        i += 1;
        let int_size = if long > 0 { 8 } else { 4 };
        let mut take = |size: usize| {
            off = off.div_ceil(size) * size;
            let v = src.arg(off, size);
            off += size;
            v
        };
        let body = match conv {
            b'd' | b'i' => take(int_size).map(|v| {
                let v = if int_size == 4 {
                    v as u32 as i32 as i64
                } else {
                    v as i64
                };
                spec.signed(v.unsigned_abs().to_string(), v < 0)
            }),
            b'u' => take(int_size).map(|v| spec.digits(v.to_string())),
            b'x' => take(int_size).map(|v| spec.prefixed(v, "0x", spec.digits(format!("{v:x}")))),
            b'X' => take(int_size).map(|v| spec.prefixed(v, "0X", spec.digits(format!("{v:X}")))),
            b'o' => take(int_size).map(|v| spec.prefixed(v, "0", spec.digits(format!("{v:o}")))),
            b'c' => take(4).map(|v| char::from(v as u8).to_string()),
            b'p' => take(8).map(|v| format!("0x{v:x}")),
            b's' => take(8).map(|a| {
                let s = src.string(a).unwrap_or_else(|| "<?>".into());
                match spec.precision {
                    Some(p) => s.chars().take(p).collect(),
                    None => s,
                }
            }),
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => take(8).map(|v| {
                let x = f64::from_bits(v);
                let text = float(x.abs(), conv, spec.precision.unwrap_or(6), spec.alt);
                spec.signed(text, x.is_sign_negative() && !x.is_nan())
            }),
            _ => {
                out.push_str(&String::from_utf8_lossy(&fmt[start..i]));
                continue;
            }
        };
        let text = body.unwrap_or_else(|| "<?>".into());
        out.push_str(&spec.pad(
            text,
            matches!(
                conv,
                b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'f' | b'F' | b'e' | b'E' | b'g' | b'G'
            ),
        ));
    }
    out
}

fn digits(fmt: &[u8], i: &mut usize) -> Option<usize> {
    let start = *i;
    while *i < fmt.len() && fmt[*i].is_ascii_digit() {
        *i += 1;
    }
    // Clamped (docs/EMULATOR.md, "Limits"): `%999999999999d` would otherwise allocate its width.
    std::str::from_utf8(&fmt[start..*i])
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .map(|v| v.min(super::limits::MAX_PRINTF_FIELD))
}

#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    zero: bool,
    alt: bool,
    width: Option<usize>,
    precision: Option<usize>,
}

impl Spec {
    /// `#` puts the base prefix before a non-zero value.
    fn prefixed(&self, v: u64, prefix: &str, digits: String) -> String {
        if self.alt && v != 0 {
            format!("{prefix}{digits}")
        } else {
            digits
        }
    }

    /// Integer digits with the precision's minimum digit count.
    fn digits(&self, d: String) -> String {
        match self.precision {
            Some(p) if d.len() < p => format!("{}{d}", "0".repeat(p - d.len())),
            _ => d,
        }
    }
    fn signed(&self, magnitude: String, negative: bool) -> String {
        let m = if magnitude.bytes().all(|b| b.is_ascii_digit()) {
            self.digits(magnitude)
        } else {
            magnitude
        };
        let sign = if negative {
            "-"
        } else if self.plus {
            "+"
        } else if self.space {
            " "
        } else {
            ""
        };
        format!("{sign}{m}")
    }
    fn pad(&self, text: String, numeric: bool) -> String {
        let width = self.width.unwrap_or(0);
        let len = text.chars().count();
        if len >= width {
            return text;
        }
        let fill = width - len;
        if self.left {
            format!("{text}{}", " ".repeat(fill))
        } else if self.zero
            && numeric
            && self.precision.is_none_or(|_| {
                !text.contains(|c: char| c.is_ascii_digit())
                    || text.contains('.')
                    || text.contains('e')
            })
        {
            // Zeros go after the sign.
            let (sign, rest) = match text.chars().next() {
                Some(c @ ('-' | '+' | ' ')) => (c.to_string(), text[1..].to_string()),
                _ => (String::new(), text),
            };
            format!("{sign}{}{rest}", "0".repeat(fill))
        } else {
            format!("{}{text}", " ".repeat(fill))
        }
    }
}

/// `%f`, `%e`, `%g` (and upper-case forms) of a non-negative value, as C prints them.
fn float(x: f64, conv: u8, precision: usize, alt: bool) -> String {
    let upper = conv.is_ascii_uppercase();
    let s = if x.is_nan() {
        "nan".to_string()
    } else if x.is_infinite() {
        "inf".to_string()
    } else {
        match conv.to_ascii_lowercase() {
            b'f' => format!("{x:.precision$}"),
            b'e' => exp(x, precision),
            b'a' => format!("{x:e}"),
            _ => {
                // %g: precision P (0 means 1); exponent X of the %e form; %f with P-1-X digits if
                // P > X >= -4, else %e with P-1; trailing zeros removed unless '#'.
                let p = precision.max(1);
                let e = exp(x, p - 1);
                let x_exp: i32 = e
                    .rsplit('e')
                    .next()
                    .and_then(|t| t.parse().ok())
                    .unwrap_or(0);
                let mut s = if (p as i32) > x_exp && x_exp >= -4 {
                    format!("{x:.*}", (p as i32 - 1 - x_exp) as usize)
                } else {
                    e
                };
                if !alt {
                    let (mantissa, exponent) = match s.find('e') {
                        Some(k) => (s[..k].to_string(), s[k..].to_string()),
                        None => (s.clone(), String::new()),
                    };
                    let mantissa = if mantissa.contains('.') {
                        mantissa
                            .trim_end_matches('0')
                            .trim_end_matches('.')
                            .to_string()
                    } else {
                        mantissa
                    };
                    s = mantissa + &exponent;
                }
                s
            }
        }
    };
    if upper {
        s.to_uppercase()
    } else {
        s
    }
}

/// `%.*e` as C prints it: `1.500000e+00`.
fn exp(x: f64, precision: usize) -> String {
    let s = format!("{x:.precision$e}");
    let (mantissa, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arguments laid out as nvcc does: each at its natural alignment.
    struct Buf(Vec<u8>, Vec<(u64, String)>);
    impl ArgSource for Buf {
        fn arg(&mut self, offset: usize, size: usize) -> Option<u64> {
            let b = self.0.get(offset..offset + size)?;
            let mut v = [0u8; 8];
            v[..size].copy_from_slice(b);
            Some(u64::from_le_bytes(v))
        }
        fn string(&mut self, addr: u64) -> Option<String> {
            self.1
                .iter()
                .find(|(a, _)| *a == addr)
                .map(|(_, s)| s.clone())
        }
    }

    #[test]
    fn formats_like_c() {
        // int 7, (pad to 8) double 1.5, long long -3, unsigned 255, (pad) char* at 0x1000
        let mut b = Vec::new();
        b.extend(7i32.to_le_bytes());
        b.extend([0; 4]);
        b.extend(1.5f64.to_le_bytes());
        b.extend((-3i64).to_le_bytes());
        b.extend(255u32.to_le_bytes());
        b.extend([0; 4]);
        b.extend(0x1000u64.to_le_bytes());
        let mut src = Buf(b, vec![(0x1000, "hi".into())]);
        let s = format(b"x=%d y=%f z=%lld %#x? %x %s %%\n", &mut src);
        assert_eq!(s, "x=7 y=1.500000 z=-3 0xff? 0 hi %\n");
    }

    #[test]
    fn widths_precisions_and_g() {
        let mut b = Vec::new();
        b.extend(42i32.to_le_bytes());
        b.extend((-5i32).to_le_bytes());
        b.extend(0.0001234f64.to_le_bytes());
        b.extend(123456789.0f64.to_le_bytes());
        b.extend(2.5f64.to_le_bytes());
        let mut src = Buf(b, vec![]);
        assert_eq!(
            format(b"[%5d][%-4d|][%g][%g][%08.3f]", &mut src),
            "[   42][-5  |][0.0001234][1.23457e+08][0002.500]"
        );
    }

    #[test]
    fn huge_widths_and_precisions_are_clamped() {
        let mut b = Vec::new();
        b.extend(42i32.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        b.extend(1.5f64.to_le_bytes());
        b.extend(7i32.to_le_bytes());
        let mut src = Buf(b, vec![]);
        let s = format(
            b"%999999999999d|%.99999999999f|%99999999999999999999999d",
            &mut src,
        );
        let max = super::super::limits::MAX_PRINTF_FIELD;
        let parts: Vec<&str> = s.split('|').collect();
        assert_eq!(parts[0].len(), max);
        assert!(parts[0].ends_with("42"));
        assert_eq!(parts[1].len(), max + 2, "1. and the digits");
        assert!(parts[2].len() <= max + 32);
    }
}
