//! The element types of host buffers: what a PTX case's buffer, a `.npy`
//! file, a kernel's scalar argument and a shard's output hold. One list for
//! the whole house: the kernel IR's [`ScalarType`]s are the subset its
//! arithmetic runs on ([`Dtype::scalar`], [`ScalarType::dtype`]); PTX's
//! value types name theirs through it (`vgpu_ptx::Ty::dtype`); the CLI, the
//! Python package and the shard writer read and write `.npy` files by it.

use std::fmt;

use crate::scalar::{Buffer, ScalarType};

/// The element type of a host buffer (little-endian, as PTX, WGSL and
/// `.npy` files on every supported machine lay them out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    /// IEEE binary16.
    F16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
}

impl Dtype {
    /// Every element type, in declaration order.
    pub const ALL: [Dtype; 11] = [
        Dtype::F16,
        Dtype::F32,
        Dtype::F64,
        Dtype::I8,
        Dtype::I16,
        Dtype::I32,
        Dtype::I64,
        Dtype::U8,
        Dtype::U16,
        Dtype::U32,
        Dtype::U64,
    ];

    /// Bytes of one element.
    pub fn size(self) -> usize {
        match self {
            Dtype::I8 | Dtype::U8 => 1,
            Dtype::F16 | Dtype::I16 | Dtype::U16 => 2,
            Dtype::F32 | Dtype::I32 | Dtype::U32 => 4,
            Dtype::F64 | Dtype::I64 | Dtype::U64 => 8,
        }
    }

    /// True for the floating-point types.
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F16 | Dtype::F32 | Dtype::F64)
    }

    /// True for the signed integer types.
    pub fn is_signed_int(self) -> bool {
        matches!(self, Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64)
    }

    /// The name PTX and the case files give it: `f32`, `s32`, `u8`, ….
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F16 => "f16",
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
            Dtype::I8 => "s8",
            Dtype::I16 => "s16",
            Dtype::I32 => "s32",
            Dtype::I64 => "s64",
            Dtype::U8 => "u8",
            Dtype::U16 => "u16",
            Dtype::U32 => "u32",
            Dtype::U64 => "u64",
        }
    }

    /// Parses a name: PTX's (`s32`, [`Dtype::name`]) or the `.field`
    /// language's and Rust's spelling of the signed types (`i32`).
    pub fn parse(s: &str) -> Option<Dtype> {
        let signed = |rest: &str| match rest {
            "8" => Some(Dtype::I8),
            "16" => Some(Dtype::I16),
            "32" => Some(Dtype::I32),
            "64" => Some(Dtype::I64),
            _ => None,
        };
        if let Some(rest) = s.strip_prefix('s').or_else(|| s.strip_prefix('i')) {
            return signed(rest);
        }
        Dtype::ALL.into_iter().find(|d| d.name() == s)
    }

    /// The names [`Dtype::parse`] reads, for error messages.
    pub fn names() -> String {
        Dtype::ALL.map(Dtype::name).join(", ")
    }

    /// numpy's type descriptor as a `.npy` header writes it, unquoted
    /// (`<f4`, `|u1`, …).
    pub fn npy_descr(self) -> &'static str {
        match self {
            Dtype::F16 => "<f2",
            Dtype::F32 => "<f4",
            Dtype::F64 => "<f8",
            Dtype::I8 => "|i1",
            Dtype::I16 => "<i2",
            Dtype::I32 => "<i4",
            Dtype::I64 => "<i8",
            Dtype::U8 => "|u1",
            Dtype::U16 => "<u2",
            Dtype::U32 => "<u4",
            Dtype::U64 => "<u8",
        }
    }

    /// The type of a numpy descriptor, quoted (`'<f4'`, as a `.npy` header's
    /// dictionary holds it) or not; `None` for big-endian and other types.
    pub fn from_npy_descr(s: &str) -> Option<Dtype> {
        let s = s.trim();
        let s = s
            .strip_prefix('\'')
            .and_then(|t| t.strip_suffix('\''))
            .unwrap_or(s);
        Dtype::ALL.into_iter().find(|d| d.npy_descr() == s)
    }

    /// The IR's scalar type of the same values, where the IR has one.
    pub fn scalar(self) -> Option<ScalarType> {
        Some(match self {
            Dtype::F32 => ScalarType::F32,
            Dtype::F64 => ScalarType::F64,
            Dtype::I32 => ScalarType::I32,
            Dtype::U32 => ScalarType::U32,
            _ => return None,
        })
    }

    /// The element at `bits` (the element's little-endian bytes, zero-extended)
    /// as an `f64` (exact for every type but the 64-bit integers beyond 2⁵³).
    pub fn value_f64(self, bits: u64) -> f64 {
        match self {
            Dtype::F16 => half::f16::from_bits(bits as u16).to_f64(),
            Dtype::F32 => f32::from_bits(bits as u32) as f64,
            Dtype::F64 => f64::from_bits(bits),
            Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64 => self.ordinal(bits) as f64,
            Dtype::U8 | Dtype::U16 | Dtype::U32 | Dtype::U64 => bits as f64,
        }
    }

    /// The element at `bits` as an integer whose differences count units in
    /// the last place (floats: sign and magnitude made monotonic, so `-0.0`
    /// and `0.0` are one apart and neighbours are one apart) or values
    /// (integers, sign-extended).
    pub fn ordinal(self, bits: u64) -> i128 {
        let shift = 64 - 8 * self.size() as u32;
        if self.is_float() {
            let sign = 1u64 << (8 * self.size() as u32 - 1);
            let mag = (bits & (sign - 1)) as i128;
            if bits & sign != 0 {
                -mag
            } else {
                mag
            }
        } else if self.is_signed_int() {
            (((bits << shift) as i64) >> shift) as i128
        } else {
            bits as i128
        }
    }

    /// Element `i` of the little-endian bytes `data`, zero-extended to 64
    /// bits; `None` past the end.
    pub fn bits_at(self, data: &[u8], i: usize) -> Option<u64> {
        let es = self.size();
        let start = i.checked_mul(es)?;
        let chunk = data.get(start..start.checked_add(es)?)?;
        let mut b = [0u8; 8];
        b[..es].copy_from_slice(chunk);
        Some(u64::from_le_bytes(b))
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl ScalarType {
    /// The element type of a buffer of this type (`None` for `bool`, which
    /// no buffer holds).
    pub fn dtype(self) -> Option<Dtype> {
        Some(match self {
            ScalarType::F32 => Dtype::F32,
            ScalarType::F64 => Dtype::F64,
            ScalarType::I32 => Dtype::I32,
            ScalarType::U32 => Dtype::U32,
            ScalarType::Bool => return None,
        })
    }
}

impl Buffer {
    /// The buffer's element type.
    pub fn dtype(&self) -> Dtype {
        match self {
            Buffer::F32(_) => Dtype::F32,
            Buffer::F64(_) => Dtype::F64,
            Buffer::I32(_) => Dtype::I32,
            Buffer::U32(_) => Dtype::U32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_the_signed_types_read_both_spellings() {
        for d in Dtype::ALL {
            assert_eq!(Dtype::parse(d.name()), Some(d));
            assert_eq!(Dtype::from_npy_descr(d.npy_descr()), Some(d));
            assert_eq!(
                Dtype::from_npy_descr(&format!("'{}'", d.npy_descr())),
                Some(d)
            );
        }
        assert_eq!(Dtype::parse("i32"), Some(Dtype::I32));
        assert_eq!(Dtype::parse("s64"), Some(Dtype::I64));
        for bad in ["", "b32", "f128", "i", "s", "bool", "pred", "s7"] {
            assert_eq!(Dtype::parse(bad), None, "{bad}");
        }
        assert_eq!(Dtype::from_npy_descr(">f4"), None);
    }

    #[test]
    fn the_ir_types_are_a_subset() {
        for t in [
            ScalarType::F32,
            ScalarType::F64,
            ScalarType::I32,
            ScalarType::U32,
        ] {
            let d = t.dtype().unwrap();
            assert_eq!(d.scalar(), Some(t));
            assert_eq!(
                d.size(),
                Buffer::from(vec![0u32]).cast(t).to_le_bytes().len()
            );
            assert_eq!(Buffer::from(vec![0u32]).cast(t).dtype(), d);
        }
        assert_eq!(ScalarType::Bool.dtype(), None);
        assert_eq!(Dtype::U8.scalar(), None);
    }

    #[test]
    fn values_and_ordinals() {
        let f = |x: f32| x.to_bits() as u64;
        assert_eq!(Dtype::F32.value_f64(f(-1.5)), -1.5);
        assert_eq!(Dtype::F32.ordinal(f(0.0)) - Dtype::F32.ordinal(f(-0.0)), 0);
        let next = f32::from_bits(1.0f32.to_bits() + 1);
        assert_eq!(Dtype::F32.ordinal(f(next)) - Dtype::F32.ordinal(f(1.0)), 1);
        assert_eq!(Dtype::F32.ordinal(f(-1.0)), -Dtype::F32.ordinal(f(1.0)));
        assert_eq!(Dtype::F64.value_f64(2.5f64.to_bits()), 2.5);
        assert_eq!(Dtype::I8.value_f64(0xff), -1.0);
        assert_eq!(Dtype::I16.ordinal(0x8000), -32768);
        assert_eq!(Dtype::I32.ordinal(0xffff_fffe), -2);
        assert_eq!(Dtype::I64.ordinal(u64::MAX), -1);
        assert_eq!(Dtype::U8.value_f64(0xff), 255.0);
        assert_eq!(Dtype::U64.ordinal(u64::MAX), u64::MAX as i128);
        // binary16: 1.0, -2.0, the smallest subnormal, the largest finite, inf, NaN.
        assert_eq!(Dtype::F16.value_f64(0x3c00), 1.0);
        assert_eq!(Dtype::F16.value_f64(0xc000), -2.0);
        assert_eq!(Dtype::F16.value_f64(0x0001), 2f64.powi(-24));
        assert_eq!(Dtype::F16.value_f64(0x7bff), 65504.0);
        assert_eq!(Dtype::F16.value_f64(0x7c00), f64::INFINITY);
        assert!(Dtype::F16.value_f64(0x7e00).is_nan());
        assert_eq!(Dtype::F16.ordinal(0x8001), -1);
    }

    #[test]
    fn bits_at_reads_one_element_and_stops_at_the_end() {
        let data = [1u8, 2, 3, 4, 5, 6];
        assert_eq!(Dtype::U16.bits_at(&data, 1), Some(0x0403));
        assert_eq!(Dtype::U32.bits_at(&data, 0), Some(0x0403_0201));
        assert_eq!(Dtype::U32.bits_at(&data, 1), None);
        assert_eq!(Dtype::U64.bits_at(&data, usize::MAX), None);
    }
}
