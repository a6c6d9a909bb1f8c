//! Whether the adapter's WGSL `fma` on f32 is fused: one rounding of the exact
//! `a·b + c`, as NVIDIA's `FFMA` and PTX's `fma.rn.f32` compute it.
//!
//! WGSL (and Vulkan's `Fma`) allow `fma` to be a multiply and an add with two
//! roundings, so compiled PTX's `fma.rn.f32` runs on an exact f64 emulation
//! (`fma_f32` in vgpu-ir's WGSL prelude) unless this probe shows that the
//! device's own `fma` is fused: a small kernel (vgpu-ir's `fma_probe_wgsl`)
//! computes the fma on [`fma_f32_triples`] read from a storage buffer (so no
//! compiler can fold them) exactly as the control-flow kernels would on the
//! native path (with SHADER_F64: `fma_native_f32`, whose zero or subnormal
//! operands and results take the emulation, since NVIDIA's driver flushes
//! subnormals; without: the bare `fma`), and every result is compared with
//! Rust's correctly rounded [`f32::mul_add`], bit for bit (NaN as "is NaN").
//! The triples are chosen so that a multiply-then-add, a double rounding
//! through f64, a flush of subnormals or an overflow of the product alone
//! each give a different answer on many of them. The verdict is taken once
//! per device and kept in its [`GpuContext`].
//!
//! `VGPU_PTX_EXACT_FMA` chooses for the whole process: `auto` (or unset) the
//! probe's verdict, `emulate` the emulation everywhere, `native` the device's
//! `fma` without the probe (exact only on a fused device: for measurements),
//! `flush-model` the guarded forms over a model of a flushing device fma
//! ([`FmaF32Path::FlushModel`]).

use crate::{Binding, GpuContext, GpuError, KernelCache, KernelSpec};
use vgpu_ir::wgsl::cfg::fma_probe_wgsl;

/// How compiled PTX's `fma.rn.f32` (and `mad.rn.f32`, contracted `mul`+`add`)
/// runs on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FmaF32Path {
    /// As `VGPU_PTX_EXACT_FMA` says; unset or `auto`: the device's `fma` where
    /// the probe found it fused, else the emulation.
    #[default]
    Auto,
    /// The exact f64 emulation (needs `SHADER_F64`).
    Emulated,
    /// The device's `fma`, without asking the probe: exact only where it is
    /// fused.
    Native,
    /// The guarded forms of a device whose `fma` flushes subnormals (the
    /// in-place guard, speculative regions: vgpu-ir's
    /// `CfgWgslOptions::fma_flush_model`) over a model of such an `fma`
    /// (NVIDIA's `FFMA.FTZ`), so that they are tested on a device that keeps
    /// subnormals; exact like them. Needs `SHADER_F64` (without it, the
    /// emulation).
    FlushModel,
}

impl FmaF32Path {
    /// Whether kernels on `ctx` use the device's `fma` (running the probe on
    /// the first call that needs it).
    ///
    /// # Errors
    /// [`GpuError::BadFmaEnv`] for a `VGPU_PTX_EXACT_FMA` other than `auto`,
    /// `emulate` or `native`; the probe's dispatch errors.
    pub fn native(self, ctx: &'static GpuContext) -> Result<bool, GpuError> {
        match self.chosen()? {
            FmaF32Path::Emulated => Ok(false),
            FmaF32Path::Native => Ok(true),
            FmaF32Path::FlushModel => Ok(ctx.has_f64()),
            FmaF32Path::Auto => fma_f32_fused(ctx),
        }
    }

    /// Whether the kernels' fma is the model of a flushing device's
    /// ([`FmaF32Path::FlushModel`], also as `VGPU_PTX_EXACT_FMA=flush-model`).
    ///
    /// # Errors
    /// [`GpuError::BadFmaEnv`] as [`Self::native`].
    pub fn flush_model(self) -> Result<bool, GpuError> {
        Ok(self.chosen()? == FmaF32Path::FlushModel)
    }

    /// `Auto` resolved by `VGPU_PTX_EXACT_FMA` where it names a path.
    fn chosen(self) -> Result<FmaF32Path, GpuError> {
        if self != FmaF32Path::Auto {
            return Ok(self);
        }
        match std::env::var("VGPU_PTX_EXACT_FMA").as_deref() {
            Err(_) | Ok("auto") => Ok(FmaF32Path::Auto),
            Ok("emulate") => Ok(FmaF32Path::Emulated),
            Ok("native") => Ok(FmaF32Path::Native),
            Ok("flush-model") => Ok(FmaF32Path::FlushModel),
            Ok(v) => Err(GpuError::BadFmaEnv { value: v.into() }),
        }
    }
}

/// A triple on which the device's `fma` differs from the correctly rounded one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FmaMismatch {
    /// The operands.
    pub abc: [f32; 3],
    /// The device's result bits.
    pub got: u32,
    /// `a.mul_add(b, c)`'s bits.
    pub want: u32,
}

/// What the probe found.
#[derive(Debug, Clone, PartialEq)]
pub struct FmaProbe {
    /// Triples computed.
    pub triples: usize,
    /// In the guarded form (`fma_native_f32`, see [`fma_on_device`]).
    pub guarded: bool,
    /// How many differ from the correctly rounded result.
    pub mismatches: usize,
    /// The first that differs.
    pub first: Option<FmaMismatch>,
}

impl FmaProbe {
    /// Every result was the correctly rounded one.
    pub fn fused(&self) -> bool {
        self.mismatches == 0
    }
}

/// Whether the device's f32 `fma` is fused: [`probe_fma_f32`] on the first
/// call, its verdict kept in `ctx` for every later one.
///
/// # Errors
/// The probe's dispatch errors (nothing is kept then).
pub fn fma_f32_fused(ctx: &'static GpuContext) -> Result<bool, GpuError> {
    if let Some(&f) = ctx.fma_f32_fused.get() {
        return Ok(f);
    }
    let fused = probe_fma_f32(ctx)?.fused();
    Ok(*ctx.fma_f32_fused.get_or_init(|| fused))
}

/// Runs the probe now on `ctx` (uncached; its own kernel cache, so no
/// caller's counts change): [`fma_on_device`] over [`fma_f32_triples`], in
/// the form the kernels use on this device (guarded where it has
/// SHADER_F64 and does not keep f32 subnormals in plain arithmetic and its
/// fma; where it keeps them, the bare `fma`, so the suspect triples test the
/// device's fma too), compiled
/// declaring f32 subnormals kept as the kernels are.
///
/// # Errors
/// Compilation and dispatch errors.
pub fn probe_fma_f32(ctx: &'static GpuContext) -> Result<FmaProbe, GpuError> {
    let mut cache = KernelCache::with_context(ctx);
    let triples = fma_f32_triples();
    let kept = crate::subnormal_probe::f32_subnormals_kept(ctx)?;
    let guarded = kept.fma_guarded(ctx.has_f64());
    let got = fma_on_device(&mut cache, &triples, guarded, kept.plain)?;
    let mut probe = FmaProbe {
        triples: triples.len(),
        guarded,
        mismatches: 0,
        first: None,
    };
    for (&abc, &got) in triples.iter().zip(&got) {
        let want = abc[0].mul_add(abc[1], abc[2]).to_bits();
        if !same(got, want) {
            probe.mismatches += 1;
            probe.first.get_or_insert(FmaMismatch { abc, got, want });
        }
    }
    Ok(probe)
}

/// Equal bits, or both NaN.
fn same(x: u32, y: u32) -> bool {
    x == y || (f32::from_bits(x).is_nan() && f32::from_bits(y).is_nan())
}

/// The bits of the device's fma of each triple, computed by the probe's
/// kernel: `guarded` (the device needs SHADER_F64) `fma_native_f32`, whose
/// zero or subnormal operands and results take the exact emulation; else the
/// bare WGSL `fma`; `compares`: the guarded form's test compares floats (the
/// device keeps subnormals in comparisons), as the kernels' does there.
///
/// # Errors
/// Compilation and dispatch errors.
pub fn fma_on_device(
    cache: &mut KernelCache,
    triples: &[[f32; 3]],
    guarded: bool,
    compares: bool,
) -> Result<Vec<u32>, GpuError> {
    if triples.is_empty() {
        return Ok(Vec::new());
    }
    // The triples' bits, then the 0 word the emulation's opaque flag reads.
    let mut abc: Vec<u32> = triples.iter().flatten().map(|x| x.to_bits()).collect();
    abc.push(0);
    let mut out = vec![0u32; triples.len()];
    let spec = KernelSpec::new("fma_probe", fma_probe_wgsl(guarded, compares), "main")
        .workgroup_size([64, 1, 1])
        .keep_f32_subnormals();
    let groups = (triples.len() as u32).div_ceil(64);
    cache.dispatch(
        &spec,
        &mut [Binding::read(&abc), Binding::write(&mut out)],
        [groups, 1, 1],
    )?;
    Ok(out)
}

/// `2^e` as an f32 (`e` in the normal range).
fn pow2(e: i32) -> f32 {
    f32::from_bits(((e + 127) as u32) << 23)
}

/// The probe's inputs, the same on every call (about 5000):
/// * midpoints: `(1 + i 2⁻¹²)(1 + j 2⁻¹²)` with `i`, `j` odd is a tie of f32
///   when below 2; `c` of ±2⁻³⁰, ±2⁻⁶⁰ or ±0 relative to it decides the tie
///   (±2⁻⁶⁰ is lost by a rounding through f64 too), all scaled by powers of 2;
/// * cancellation: `c = -RN(a b)` leaves the product's rounding error, which a
///   multiply-then-add makes 0; and sums near a tie, `c` a few bits below `a b`;
/// * subnormals: products and sums in the subnormal range, subnormal `c`
///   beside a tiny normal product, subnormal `a` times a large `b`;
/// * overflow: products past `f32::MAX` that `c` brings back, and `c = ∓∞`
///   beside them (a multiply-then-add gives NaN);
/// * every combination of the specials (±0, ±1, ±2⁻⁸⁰, ±MAX, ±∞, NaN, the
///   least subnormal, 1 + 2⁻²³): signed zeros of underflowing products;
/// * random bit patterns.
pub fn fma_f32_triples() -> Vec<[f32; 3]> {
    let mut t = Vec::new();
    let mut next = crate::xorshift::xorshift32(0x2545_f491_4f6c_dd1du64);
    let mant = |r: u32| f32::from_bits(0x3f80_0000 | (r & 0x7f_ffff));
    // Midpoints decided by a tiny addend.
    for n in 0..960 {
        let (i, j) = ((next() % 2048) | 1, (next() % 2048) | 1);
        let x = 1.0 + i as f32 * pow2(-12);
        let y = 1.0 + j as f32 * pow2(-12);
        let (ea, eb) = ((next() % 41) as i32 - 20, (next() % 41) as i32 - 20);
        let rel = [-30, -60][n % 2];
        let c = match n / 2 % 3 {
            0 => pow2(ea + eb + rel),
            1 => -pow2(ea + eb + rel),
            _ => [0.0, -0.0][n / 6 % 2],
        };
        let sign = if n / 12 % 2 == 0 { 1.0 } else { -1.0 };
        t.push([sign * x * pow2(ea), y * pow2(eb), sign * c]);
    }
    // Cancellation and sums near a tie.
    for n in 0..1024 {
        let (ea, eb) = ((next() % 61) as i32 - 30, (next() % 61) as i32 - 30);
        let a = mant(next()) * pow2(ea);
        let b = mant(next()) * pow2(eb);
        let hi = a * b;
        let c = match n % 4 {
            0 => -hi,
            1 => -f32::from_bits(hi.to_bits() + 1),
            2 => hi * pow2(-((next() % 26) as i32)),
            _ => -hi * mant(next() & 0xff),
        };
        t.push([a, b, if n % 8 < 4 { c } else { -c }]);
    }
    // Subnormal products, sums and operands.
    for n in 0..768 {
        let (a, b) = (mant(next()), mant(next()));
        let tiny = f32::from_bits(next() % 0x80_0000);
        t.push(match n % 4 {
            0 => [a * pow2(-70), b * pow2(-70), [0.0, tiny, -tiny][n / 4 % 3]],
            1 => [a * pow2(-60), b * pow2(-60), -tiny],
            2 => [
                a * pow2(-63),
                -b * pow2(-63),
                (a * pow2(-63)) * (b * pow2(-63)),
            ],
            _ => [tiny, b * pow2((next() % 60) as i32 + 30), -a],
        });
    }
    // Products past the overflow threshold.
    for n in 0..256 {
        let a = f32::from_bits(0x7f00_0000 | (next() & 0x7f_ffff));
        let b = mant(next());
        let big = f32::from_bits(0x7f00_0000 | (next() & 0x7f_ffff));
        let c = match n % 4 {
            0 => -f32::MAX,
            1 => -big,
            2 => f32::NEG_INFINITY,
            _ => -a * (b - 1.0),
        };
        t.push(if n % 8 < 4 { [a, b, c] } else { [-a, b, -c] });
    }
    // Every combination of the specials.
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        pow2(-80),
        -pow2(-80),
        f32::MAX,
        -f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(1),
        1.0 + pow2(-23),
    ];
    for &a in &specials {
        for &b in &specials {
            for &c in &specials {
                t.push([a, b, c]);
            }
        }
    }
    // Random bits.
    for _ in 0..512 {
        t.push([next(), next(), next()].map(f32::from_bits));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The triples tell a fused `fma` from each way of not being one, many
    /// times over (so a device that is not fused cannot pass by luck).
    #[test]
    fn the_triples_catch_every_unfused_fma() {
        let t = fma_f32_triples();
        let count = |f: &dyn Fn(f32, f32, f32) -> f32| {
            t.iter()
                .filter(|&&[a, b, c]| !same(f(a, b, c).to_bits(), a.mul_add(b, c).to_bits()))
                .count()
        };
        let mul_add = count(&|a, b, c| a * b + c);
        let via_f64 = count(&|a, b, c| (a as f64 * b as f64 + c as f64) as f32);
        let ftz = |x: f32| {
            if x.is_subnormal() {
                0.0 * x.signum()
            } else {
                x
            }
        };
        let flushing = count(&|a, b, c| ftz(ftz(a).mul_add(ftz(b), ftz(c))));
        eprintln!(
            "{} triples: {mul_add} unfused, {via_f64} through f64, {flushing} flushing differ",
            t.len()
        );
        assert!((4000..6000).contains(&t.len()), "{}", t.len());
        assert!(mul_add > 1000, "multiply-then-add differs on {mul_add}");
        assert!(via_f64 > 100, "rounding through f64 differs on {via_f64}");
        assert!(flushing > 300, "flushing subnormals differs on {flushing}");
    }
}
