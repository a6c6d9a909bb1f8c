//! The vectors a fused chain computes in: `f32`/`f64` themselves (one lane) and,
//! on x86-64 with AVX2 and FMA, `8 × f32` and `4 × f64` registers. Every
//! operation is the IEEE operation of each lane (one rounding), so a chain gives
//! the same bits whichever vector runs it.
//!
//! The AVX vectors are used only by functions compiled for AVX2 and FMA and
//! called after the CPU was found to have both (see `fused::passes`): that is
//! what makes their safe operations sound.

use super::columns::IrFloat;

/// A register of [`Vector::N`] lanes of [`Vector::E`].
pub(crate) trait Vector: Copy {
    /// The lane type.
    type E: IrFloat;
    /// Lanes.
    const N: usize;
    /// Reads `N` values at `p`.
    ///
    /// # Safety
    /// `p .. p + N` must be readable.
    unsafe fn load(p: *const Self::E) -> Self;
    /// Writes the lanes at `p`.
    ///
    /// # Safety
    /// `p .. p + N` must be writable.
    unsafe fn store(self, p: *mut Self::E);
    /// Zero in every lane.
    fn zero() -> Self;
    /// Lane-wise `+`.
    fn add(self, o: Self) -> Self;
    /// Lane-wise `−`.
    fn sub(self, o: Self) -> Self;
    /// Lane-wise `×`.
    fn mul(self, o: Self) -> Self;
    /// Lane-wise `÷`.
    fn div(self, o: Self) -> Self;
    /// Lane-wise `fma(self, b, c)` (one rounding).
    fn fma(self, b: Self, c: Self) -> Self;
    /// Lane-wise `f(self, o)`.
    fn zip(self, o: Self, f: impl Fn(Self::E, Self::E) -> Self::E) -> Self;
    /// Lane-wise `f(self)`.
    fn map(self, f: impl Fn(Self::E) -> Self::E) -> Self;
}

macro_rules! scalar {
    ($t:ty) => {
        impl Vector for $t {
            type E = $t;
            const N: usize = 1;
            #[inline(always)]
            unsafe fn load(p: *const $t) -> $t {
                *p
            }
            #[inline(always)]
            unsafe fn store(self, p: *mut $t) {
                *p = self
            }
            #[inline(always)]
            fn zero() -> $t {
                0.0
            }
            #[inline(always)]
            fn add(self, o: $t) -> $t {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: $t) -> $t {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: $t) -> $t {
                self * o
            }
            #[inline(always)]
            fn div(self, o: $t) -> $t {
                self / o
            }
            #[inline(always)]
            fn fma(self, b: $t, c: $t) -> $t {
                self.mul_add(b, c)
            }
            #[inline(always)]
            fn zip(self, o: $t, f: impl Fn($t, $t) -> $t) -> $t {
                f(self, o)
            }
            #[inline(always)]
            fn map(self, f: impl Fn($t) -> $t) -> $t {
                f(self)
            }
        }
    };
}
scalar!(f32);
scalar!(f64);

#[cfg(target_arch = "x86_64")]
pub(crate) use avx::{F32x8, F64x4};

#[cfg(target_arch = "x86_64")]
mod avx {
    use super::Vector;
    use std::arch::x86_64::*;

    /// Eight `f32` lanes in an AVX register.
    #[derive(Clone, Copy)]
    pub(crate) struct F32x8(__m256);
    /// Four `f64` lanes in an AVX register.
    #[derive(Clone, Copy)]
    pub(crate) struct F64x4(__m256d);

    macro_rules! avx {
        ($v:ident, $t:ty, $n:expr, $r:ty, $load:ident, $store:ident, $add:ident, $sub:ident, $mul:ident, $div:ident, $fma:ident) => {
            impl Vector for $v {
                type E = $t;
                const N: usize = $n;
                #[inline(always)]
                unsafe fn load(p: *const $t) -> $v {
                    $v($load(p))
                }
                #[inline(always)]
                unsafe fn store(self, p: *mut $t) {
                    $store(p, self.0)
                }
                #[inline(always)]
                fn zero() -> $v {
                    // SAFETY: all-zero bits are a valid register of lanes 0.0.
                    $v(unsafe { std::mem::zeroed() })
                }
                // SAFETY (all below): these vectors are only used where the CPU
                // has AVX2 and FMA (see the module documentation).
                #[inline(always)]
                fn add(self, o: $v) -> $v {
                    $v(unsafe { $add(self.0, o.0) })
                }
                #[inline(always)]
                fn sub(self, o: $v) -> $v {
                    $v(unsafe { $sub(self.0, o.0) })
                }
                #[inline(always)]
                fn mul(self, o: $v) -> $v {
                    $v(unsafe { $mul(self.0, o.0) })
                }
                #[inline(always)]
                fn div(self, o: $v) -> $v {
                    $v(unsafe { $div(self.0, o.0) })
                }
                #[inline(always)]
                fn fma(self, b: $v, c: $v) -> $v {
                    $v(unsafe { $fma(self.0, b.0, c.0) })
                }
                #[inline(always)]
                fn zip(self, o: $v, f: impl Fn($t, $t) -> $t) -> $v {
                    // SAFETY: the register and the array have the same size; any
                    // bits are valid for both.
                    let (a, b) = unsafe {
                        (
                            std::mem::transmute::<$r, [$t; $n]>(self.0),
                            std::mem::transmute::<$r, [$t; $n]>(o.0),
                        )
                    };
                    let r: [$t; $n] = std::array::from_fn(|j| f(a[j], b[j]));
                    $v(unsafe { std::mem::transmute::<[$t; $n], $r>(r) })
                }
                #[inline(always)]
                fn map(self, f: impl Fn($t) -> $t) -> $v {
                    // SAFETY: as in `zip`.
                    let a = unsafe { std::mem::transmute::<$r, [$t; $n]>(self.0) };
                    let r: [$t; $n] = std::array::from_fn(|j| f(a[j]));
                    $v(unsafe { std::mem::transmute::<[$t; $n], $r>(r) })
                }
            }
        };
    }
    avx!(
        F32x8,
        f32,
        8,
        __m256,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_add_ps,
        _mm256_sub_ps,
        _mm256_mul_ps,
        _mm256_div_ps,
        _mm256_fmadd_ps
    );
    avx!(
        F64x4,
        f64,
        4,
        __m256d,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_add_pd,
        _mm256_sub_pd,
        _mm256_mul_pd,
        _mm256_div_pd,
        _mm256_fmadd_pd
    );
}
