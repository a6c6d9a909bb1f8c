//! Whether the device's f32 atomic add computes PTX's `atom.add.f32` on
//! global memory exactly: PTX rounds it to nearest even and flushes subnormal
//! inputs and results to sign-preserving zero (the interpreter does the
//! same). Compiled PTX otherwise adds through a compare-and-swap loop on the
//! word, exact on every device but serialised where many threads add to one
//! word (a grid-wide `atomicAdd(out, x)` is 65536 retries in a row).
//!
//! The probe adds the second operand of each of [`atomic_add_f32_pairs`] to
//! an accumulator holding the first, with WGSL's `atomicAdd` on
//! `atomic<f32>` (vgpu-ir's [`atomic_add_f32_probe_wgsl`], needing
//! `SHADER_FLOAT32_ATOMIC`), and compares every result with
//! `ftz(ftz(a) + ftz(b))` bit for bit (NaN as "is NaN"). The pairs are chosen
//! so that a device that keeps subnormals, rounds otherwise or mishandles
//! signed zeros and infinities differs on many of them. The verdict is taken
//! once per device and kept in its [`GpuContext`].
//!
//! `VGPU_PTX_ATOMIC_F32` chooses for the whole process: `auto` (or unset) the
//! probe's verdict, `cas` the compare-and-swap loop everywhere, `native` the
//! device's f32 atomics without the probe (exact only where it agrees: for
//! measurements).

use crate::{Binding, GpuContext, GpuError, KernelCache, KernelSpec};
use vgpu_ir::wgsl::cfg::atomic_add_f32_probe_wgsl;

/// How compiled PTX's global `atom.add.f32` / `red.add.f32` runs on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AtomicF32Path {
    /// As `VGPU_PTX_ATOMIC_F32` says; unset or `auto`: the device's f32
    /// atomics where it has them and the probe found them exact, else the
    /// compare-and-swap loop.
    #[default]
    Auto,
    /// The compare-and-swap loop (every device).
    Cas,
    /// The device's f32 atomics without asking the probe (needs
    /// `SHADER_FLOAT32_ATOMIC`; exact only where the probe would agree).
    Native,
}

impl AtomicF32Path {
    /// Whether kernels on `ctx` use the device's f32 atomic add (running the
    /// probe on the first call that needs it).
    ///
    /// # Errors
    /// [`GpuError::BadAtomicEnv`] for a `VGPU_PTX_ATOMIC_F32` other than
    /// `auto`, `cas` or `native`; `native` on a device without
    /// `SHADER_FLOAT32_ATOMIC` ([`GpuError::CfgLaunch`]); the probe's
    /// dispatch errors.
    pub fn native(self, ctx: &'static GpuContext) -> Result<bool, GpuError> {
        let forced = |native: bool| {
            if native && !ctx.has_f32_atomic_add() {
                return Err(GpuError::CfgLaunch {
                    kernel: "atom.add.f32".into(),
                    msg: format!(
                        "native f32 atomics asked for, but {} has no SHADER_FLOAT32_ATOMIC",
                        ctx.adapter()
                    ),
                });
            }
            Ok(native)
        };
        match self {
            AtomicF32Path::Cas => Ok(false),
            AtomicF32Path::Native => forced(true),
            AtomicF32Path::Auto => match std::env::var("VGPU_PTX_ATOMIC_F32").as_deref() {
                Err(_) | Ok("auto") => f32_atomic_add_exact(ctx),
                Ok("cas") => Ok(false),
                Ok("native") => forced(true),
                Ok(v) => Err(GpuError::BadAtomicEnv { value: v.into() }),
            },
        }
    }
}

/// What the probe found.
#[derive(Debug, Clone, PartialEq)]
pub struct AtomicProbe {
    /// Pairs added.
    pub pairs: usize,
    /// How many differ from PTX's result.
    pub mismatches: usize,
    /// The first that differs: the operands, the device's bits, PTX's bits.
    pub first: Option<([f32; 2], u32, u32)>,
}

impl AtomicProbe {
    /// Every result was PTX's.
    pub fn exact(&self) -> bool {
        self.mismatches == 0
    }
}

/// Whether the device's f32 atomic add is PTX's: false without
/// `SHADER_FLOAT32_ATOMIC`, else [`probe_atomic_add_f32`] on the first call,
/// its verdict kept in `ctx` for every later one.
///
/// # Errors
/// The probe's dispatch errors (nothing is kept then).
pub fn f32_atomic_add_exact(ctx: &'static GpuContext) -> Result<bool, GpuError> {
    if !ctx.has_f32_atomic_add() {
        return Ok(false);
    }
    if let Some(&e) = ctx.f32_atomic_add_exact.get() {
        return Ok(e);
    }
    let exact = probe_atomic_add_f32(ctx)?.exact();
    Ok(*ctx.f32_atomic_add_exact.get_or_init(|| exact))
}

/// PTX's `atom.add.f32` of `a` and `b`: subnormal inputs and result flushed
/// to zero of their sign, the sum rounded to nearest even.
pub fn ptx_atomic_add_f32(a: f32, b: f32) -> f32 {
    let ftz = |x: f32| {
        if x.is_subnormal() {
            f32::from_bits(x.to_bits() & 0x8000_0000)
        } else {
            x
        }
    };
    ftz(ftz(a) + ftz(b))
}

/// Runs the probe now on `ctx` (uncached; its own kernel cache, so no
/// caller's counts change).
///
/// # Errors
/// A device without `SHADER_FLOAT32_ATOMIC` ([`GpuError::CfgLaunch`]);
/// compilation and dispatch errors.
pub fn probe_atomic_add_f32(ctx: &'static GpuContext) -> Result<AtomicProbe, GpuError> {
    let mut cache = KernelCache::with_context(ctx);
    let pairs = atomic_add_f32_pairs();
    let got = atomic_add_on_device(&mut cache, &pairs)?;
    let mut probe = AtomicProbe {
        pairs: pairs.len(),
        mismatches: 0,
        first: None,
    };
    for (&[a, b], &got) in pairs.iter().zip(&got) {
        let want = ptx_atomic_add_f32(a, b).to_bits();
        let same = got == want || (f32::from_bits(got).is_nan() && f32::from_bits(want).is_nan());
        if !same {
            probe.mismatches += 1;
            probe.first.get_or_insert(([a, b], got, want));
        }
    }
    Ok(probe)
}

/// The bits of `atomicAdd` on an `atomic<f32>` holding `a`, adding `b`, for
/// each pair, on the device.
///
/// # Errors
/// A device without `SHADER_FLOAT32_ATOMIC` ([`GpuError::CfgLaunch`]);
/// compilation and dispatch errors.
pub fn atomic_add_on_device(
    cache: &mut KernelCache,
    pairs: &[[f32; 2]],
) -> Result<Vec<u32>, GpuError> {
    if !cache.context().has_f32_atomic_add() {
        return Err(GpuError::CfgLaunch {
            kernel: "atomic_add_f32_probe".into(),
            msg: format!("{} has no SHADER_FLOAT32_ATOMIC", cache.context().adapter()),
        });
    }
    if pairs.is_empty() {
        return Ok(Vec::new());
    }
    let b: Vec<u32> = pairs.iter().map(|p| p[1].to_bits()).collect();
    let mut acc: Vec<u32> = pairs.iter().map(|p| p[0].to_bits()).collect();
    let spec = KernelSpec::new("atomic_add_f32_probe", atomic_add_f32_probe_wgsl(), "main")
        .workgroup_size([64, 1, 1]);
    let groups = (pairs.len() as u32).div_ceil(64);
    cache.dispatch(
        &spec,
        &mut [Binding::read(&b), Binding::read_write(&mut acc)],
        [groups, 1, 1],
    )?;
    Ok(acc)
}

/// The probe's pairs, the same on every call (about 4500):
/// * every combination of the specials (±0, the least and greatest
///   subnormals, the least normal, ±1, 1 + 2⁻²³, ±MAX, ±∞, NaN): flushing,
///   signed zeros, overflow, infinities;
/// * ties: `a + b` halfway between two f32 (`b` an odd multiple of half an
///   ulp of `a`), which round to even;
/// * sums that fall into the subnormal range (`a` just above the least
///   normal, `b` cancelling most of it), which PTX flushes to zero;
/// * random normal pairs of nearby and distant exponents, and random bits.
pub fn atomic_add_f32_pairs() -> Vec<[f32; 2]> {
    let mut p = Vec::new();
    let mut next = crate::xorshift::xorshift32(0x9e37_79b9_7f4a_7c15u64);
    let specials = [
        0.0f32,
        f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MIN_POSITIVE,
        1.0,
        1.0 + f32::EPSILON,
        f32::MAX,
        f32::INFINITY,
    ];
    let mut all: Vec<f32> = specials.iter().flat_map(|&x| [x, -x]).collect();
    all.push(f32::NAN);
    for &a in &all {
        for &b in &all {
            p.push([a, b]);
        }
    }
    for _ in 0..1024 {
        // a in [1, 2) scaled; b an odd multiple of half of a's ulp.
        let a = f32::from_bits(0x3f80_0000 | (next() & 0x7f_ffff));
        let scale = f32::from_bits(((next() % 200 + 27) << 23) & 0x7f80_0000);
        let odd = (next() % 64) | 1;
        let b = odd as f32 * f32::EPSILON * 0.5;
        let sign = if next() & 1 == 0 { 1.0 } else { -1.0 };
        p.push([a * scale, sign * b * scale]);
    }
    for _ in 0..1024 {
        let a = f32::from_bits(0x0080_0000 + (next() % 0x40_0000));
        let b = -f32::from_bits(0x0080_0000 + (next() % 0x40_0000));
        p.push([a, b]);
        p.push([f32::from_bits(next() & 0x807f_ffff), a]);
    }
    for _ in 0..1024 {
        let e = next() % 254 + 1;
        let near = (e as i64 + (next() % 30) as i64 - 15).clamp(1, 254) as u32;
        let sa = next() & 0x8000_0000;
        let sb = next() & 0x8000_0000;
        let a = f32::from_bits(sa | (e << 23) | (next() & 0x7f_ffff));
        let b = f32::from_bits(sb | (near << 23) | (next() & 0x7f_ffff));
        p.push([a, b]);
    }
    for _ in 0..256 {
        p.push([
            f32::from_bits(next() << 1 ^ next()),
            f32::from_bits(next() << 2 ^ next()),
        ]);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PTX's reference: flushes subnormal inputs and results, keeps signs.
    #[test]
    fn the_reference_flushes_like_ptx() {
        let sub = f32::from_bits(3);
        assert_eq!(ptx_atomic_add_f32(sub, 1.0), 1.0);
        assert_eq!(ptx_atomic_add_f32(-sub, -0.0).to_bits(), 0x8000_0000);
        let a = f32::from_bits(0x0080_0001);
        let b = -f32::MIN_POSITIVE;
        assert_eq!(a + b, f32::from_bits(1), "a subnormal sum");
        assert_eq!(ptx_atomic_add_f32(a, b).to_bits(), 0);
        assert_eq!(
            ptx_atomic_add_f32(1.0, f32::EPSILON / 2.0),
            1.0,
            "tie to even"
        );
        assert!(ptx_atomic_add_f32(f32::INFINITY, -f32::INFINITY).is_nan());
    }

    /// The pairs reach every case the probe is for.
    #[test]
    fn the_pairs_cover_flushing_ties_and_specials() {
        let p = atomic_add_f32_pairs();
        let differs = |f: &dyn Fn(f32, f32) -> bool| p.iter().filter(|&&[a, b]| f(a, b)).count();
        // A device keeping subnormals differs here.
        let keep = differs(&|a, b| {
            (a + b).to_bits() != ptx_atomic_add_f32(a, b).to_bits() && !(a + b).is_nan()
        });
        assert!(keep > 500, "{keep}");
        // Ties broken upward instead of to even.
        let ties = differs(&|a, b| {
            let s = a as f64 + b as f64;
            s != (a + b) as f64
                && ((s - (a + b) as f64).abs() * 2.0
                    == ((a + b).next_up() as f64 - (a + b) as f64).abs())
        });
        assert!(ties > 200, "{ties}");
        assert!(p.iter().any(|&[a, b]| a.is_nan() || b.is_nan()));
        assert!(p.len() > 4000 && p.len() < 6000, "{}", p.len());
    }
}
