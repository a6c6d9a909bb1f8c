//! PTX scalar types and the bit-level helpers every instruction uses.

/// A PTX scalar type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ty {
    /// `.b8`
    B8,
    /// `.b16`
    B16,
    /// `.b32`
    B32,
    /// `.b64`
    B64,
    /// `.u8`
    U8,
    /// `.u16`
    U16,
    /// `.u32`
    U32,
    /// `.u64`
    U64,
    /// `.s8`
    S8,
    /// `.s16`
    S16,
    /// `.s32`
    S32,
    /// `.s64`
    S64,
    /// `.f16`
    F16,
    /// `.bf16`
    Bf16,
    /// `.f32`
    F32,
    /// `.f64`
    F64,
    /// `.pred`
    Pred,
}

impl Ty {
    /// Parses a type name without its dot (`u32`, `f64`, …).
    pub fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            "b8" => Ty::B8,
            "b16" => Ty::B16,
            "b32" => Ty::B32,
            "b64" => Ty::B64,
            "u8" => Ty::U8,
            "u16" => Ty::U16,
            "u32" => Ty::U32,
            "u64" => Ty::U64,
            "s8" => Ty::S8,
            "s16" => Ty::S16,
            "s32" => Ty::S32,
            "s64" => Ty::S64,
            "f16" => Ty::F16,
            "bf16" => Ty::Bf16,
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            "pred" => Ty::Pred,
            _ => return None,
        })
    }

    /// Width in bits (1 for `.pred`).
    pub fn bits(self) -> u32 {
        match self {
            Ty::Pred => 1,
            Ty::B8 | Ty::U8 | Ty::S8 => 8,
            Ty::B16 | Ty::U16 | Ty::S16 | Ty::F16 | Ty::Bf16 => 16,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 => 32,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 64,
        }
    }

    /// Width in bytes (1 for `.pred`).
    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    /// A signed integer type.
    pub fn is_signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    /// A floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, Ty::F16 | Ty::Bf16 | Ty::F32 | Ty::F64)
    }

    /// An integer or bit type.
    pub fn is_int(self) -> bool {
        !self.is_float() && self != Ty::Pred
    }

    /// The host element type of this value type (`None` for the bit types,
    /// `.bf16` and `.pred`, which name no host buffer's elements).
    pub fn dtype(self) -> Option<vgpu_field::Dtype> {
        use vgpu_field::Dtype as D;
        Some(match self {
            Ty::U8 => D::U8,
            Ty::U16 => D::U16,
            Ty::U32 => D::U32,
            Ty::U64 => D::U64,
            Ty::S8 => D::I8,
            Ty::S16 => D::I16,
            Ty::S32 => D::I32,
            Ty::S64 => D::I64,
            Ty::F16 => D::F16,
            Ty::F32 => D::F32,
            Ty::F64 => D::F64,
            Ty::B8 | Ty::B16 | Ty::B32 | Ty::B64 | Ty::Bf16 | Ty::Pred => return None,
        })
    }
}

/// All ones in the low `bits` bits.
#[inline(always)]
pub(crate) fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Sign-extends the low `bits` bits of `x`.
#[inline(always)]
pub(crate) fn sx(x: u64, bits: u32) -> i64 {
    if bits >= 64 {
        x as i64
    } else {
        let s = 64 - bits;
        ((x << s) as i64) >> s
    }
}

/// The integer value of `x` as type `t` (sign- or zero-extended).
#[inline(always)]
pub(crate) fn ival(x: u64, t: Ty) -> i128 {
    if t.is_signed() {
        sx(x, t.bits()) as i128
    } else {
        (x & mask(t.bits())) as i128
    }
}

/// f32 of the low 32 bits.
#[inline(always)]
pub(crate) fn f32b(x: u64) -> f32 {
    f32::from_bits(x as u32)
}

/// f64 of the bits.
#[inline(always)]
pub(crate) fn f64b(x: u64) -> f64 {
    f64::from_bits(x)
}

/// Bits of an f32 result; NaN becomes the canonical NaN `0x7fffffff` as on NVIDIA GPUs.
#[inline(always)]
pub(crate) fn bf32(x: f32) -> u64 {
    if x.is_nan() {
        0x7fff_ffff
    } else {
        x.to_bits() as u64
    }
}

/// Bits of an f64 result; NaN becomes the canonical NaN.
#[inline(always)]
pub(crate) fn bf64(x: f64) -> u64 {
    if x.is_nan() {
        0x7fff_ffff_ffff_ffff
    } else {
        x.to_bits()
    }
}

/// Flushes an f32 subnormal to a zero of the same sign (`.ftz`).
#[inline(always)]
pub(crate) fn ftz32(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}

/// Clamps to [0, 1] (`.sat`), NaN to +0.
#[inline(always)]
pub(crate) fn sat32(x: f32) -> f32 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

/// Clamps to [0, 1] (`.sat`), NaN to +0.
#[inline(always)]
pub(crate) fn sat64(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_types_name_their_host_element_types() {
        let mut seen = Vec::new();
        for name in [
            "b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16",
            "bf16", "f32", "f64", "pred",
        ] {
            let t = Ty::parse(name).unwrap();
            if let Some(d) = t.dtype() {
                // The one vocabulary spells the type as PTX does, with its width.
                assert_eq!(d.name(), name);
                assert_eq!(d.size() as u32, t.bytes());
                assert_eq!(d.is_float(), t.is_float());
                assert_eq!(d.is_signed_int(), t.is_signed());
                seen.push(d);
            }
        }
        seen.sort();
        assert_eq!(seen, vgpu_field::Dtype::ALL.to_vec());
    }
}
