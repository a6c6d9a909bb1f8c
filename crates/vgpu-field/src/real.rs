//! The scalar type of a field's state: [`Real`], implemented for `f32` and `f64`.

use std::fmt::{Debug, Display};
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// A floating-point scalar a field's state is made of (`f32` or `f64`).
///
/// The methods are the IEEE operations the executor, the integrators and the
/// demos need. [`Real::mul_add`] is a true fused multiply-add (one rounding), as
/// CUDA's `fma`; the integrators' hot loops never call it, so a baseline x86-64
/// build without hardware FMA stays fast.
pub trait Real:
    Copy
    + Send
    + Sync
    + 'static
    + Default
    + PartialEq
    + PartialOrd
    + Debug
    + Display
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
{
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity.
    const ONE: Self;
    /// Machine epsilon (the gap between 1 and the next representable value).
    const EPSILON: Self;
    /// The type's name, `"f32"` or `"f64"`.
    const NAME: &'static str;
    /// The nearest value to `v` (round to nearest even).
    fn from_f64(v: f64) -> Self;
    /// The value as `f64` (exact for both implementations).
    fn to_f64(self) -> f64;
    /// `n` as this type, rounded to nearest.
    fn from_usize(n: usize) -> Self;
    /// `self * a + b` with one rounding (IEEE fusedMultiplyAdd, CUDA's `fma`).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Exponential.
    fn exp(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Largest integer not above `self`.
    fn floor(self) -> Self;
    /// Neither infinite nor NaN.
    fn is_finite(self) -> bool;
    /// The IEEE bit pattern, widened to `u64` (for bit-exact comparisons).
    fn to_bits_u64(self) -> u64;
    /// The value whose IEEE bit pattern is the low bits of `bits` (the inverse
    /// of [`Real::to_bits_u64`]; NaN payloads kept).
    fn from_bits_u64(bits: u64) -> Self;
    /// Whether every value of `xs` is finite. Written as integer operations on the
    /// bit patterns so that the compiler vectorises it; the executor calls it after
    /// every step.
    fn all_finite(xs: &[Self]) -> bool;
}

macro_rules! impl_real {
    ($t:ty, $bits:ty, $expmask:expr, $name:expr) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const EPSILON: Self = <$t>::EPSILON;
            const NAME: &'static str = $name;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_usize(n: usize) -> Self {
                n as $t
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                <$t>::mul_add(self, a, b)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline(always)]
            fn to_bits_u64(self) -> u64 {
                self.to_bits() as u64
            }
            #[inline(always)]
            fn from_bits_u64(bits: u64) -> Self {
                <$t>::from_bits(bits as $bits)
            }
            #[inline]
            fn all_finite(xs: &[Self]) -> bool {
                // A value is non-finite exactly when all its exponent bits are set:
                // one and, one compare, one or per value (SSE2 has all three;
                // AVX2 does them on twice the lanes, chosen at run time).
                #[inline(always)]
                fn body(xs: &[$t]) -> bool {
                    let mut bad: $bits = 0;
                    for &x in xs {
                        bad |= <$bits>::from(x.to_bits() & $expmask == $expmask);
                    }
                    bad == 0
                }
                #[cfg(target_arch = "x86_64")]
                {
                    /// [`body`] compiled for AVX2.
                    ///
                    /// # Safety
                    /// The CPU must have AVX2.
                    #[target_feature(enable = "avx2")]
                    unsafe fn body_avx2(xs: &[$t]) -> bool {
                        body(xs)
                    }
                    if std::is_x86_feature_detected!("avx2") {
                        // SAFETY: the CPU has AVX2 (checked just above).
                        return unsafe { body_avx2(xs) };
                    }
                }
                body(xs)
            }
        }
    };
}

impl_real!(f32, u32, 0x7f80_0000u32, "f32");
impl_real!(f64, u64, 0x7ff0_0000_0000_0000u64, "f64");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_finite_detects_nan_and_inf() {
        let mut v = vec![1.0f32; 37];
        assert!(f32::all_finite(&v));
        v[20] = f32::NAN;
        assert!(!f32::all_finite(&v));
        v[20] = f32::NEG_INFINITY;
        assert!(!f32::all_finite(&v));
        let mut w = vec![f64::MAX; 9];
        assert!(f64::all_finite(&w));
        w[8] = f64::INFINITY;
        assert!(!f64::all_finite(&w));
    }

    #[test]
    fn all_finite_sees_every_position_of_every_length() {
        // Vector bodies and scalar tails (AVX2 where the CPU has it) alike.
        for n in 0..70usize {
            assert!(f32::all_finite(&vec![f32::MAX; n]));
            assert!(f64::all_finite(&vec![-f64::MAX; n]));
            for at in 0..n {
                for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                    let mut v = vec![1.0f32; n];
                    v[at] = bad;
                    assert!(!f32::all_finite(&v), "f32 n={n} at={at}");
                }
                let mut w = vec![1.0f64; n];
                w[at] = f64::NAN;
                assert!(!f64::all_finite(&w), "f64 n={n} at={at}");
            }
        }
    }

    #[test]
    fn mul_add_is_fused() {
        // (1 + 2^-12)^2 - 1 needs the unrounded product: fma keeps 2^-24.
        let a = 1.0f32 + 2f32.powi(-12);
        let fused = Real::mul_add(a, a, -1.0 - 2f32.powi(-11));
        assert_eq!(fused, 2f32.powi(-24));
        assert_eq!(a * a + (-1.0 - 2f32.powi(-11)), 0.0);
    }
}
