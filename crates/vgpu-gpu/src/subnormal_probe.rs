//! Whether the device keeps f32 subnormals in compiled PTX's plain
//! arithmetic (`add`, `mul`, `sub`, `setp` without `.ftz`, which keep them).
//! Kernels are compiled declaring `DenormPreserve` where the context can
//! ([`GpuContext::declares_f32_subnormals`]); whether the driver honours it is
//! found by running vgpu-ir's probe kernel through that same path on pairs
//! of subnormals and of a subnormal and a power of two, against the host's
//! f32 arithmetic, and likewise its `fma` (on products that are exact, so
//! that fusion does not matter). Where both keep them, the device's fma
//! needs no guard
//! ([`vgpu_ir::wgsl::cfg::CfgWgslOptions::f32_subnormals`]).

use crate::kernel_cache::{Binding, KernelCache, KernelSpec};
use crate::runtime::GpuContext;
use crate::GpuError;
use vgpu_ir::wgsl::cfg::f32_subnormal_probe_wgsl;

/// What the probe found: whether the device keeps f32 subnormals in plain
/// arithmetic and in its `fma`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubnormalProbe {
    /// `add`, `mul`, `sub` and `<` kept every subnormal operand and result.
    pub plain: bool,
    /// `fma` did too (NVIDIA's keeps them in plain arithmetic under
    /// `DenormPreserve` but flushes them in its `fma`).
    pub fma: bool,
}

impl SubnormalProbe {
    /// Whether compiled kernels run the device's f32 `fma` guarded on a
    /// device with this verdict (`has_f64`: it has SHADER_F64, which the
    /// guard's emulation needs): where it does not keep subnormals in both
    /// its plain arithmetic and its `fma`. The fma probe tests that form.
    pub fn fma_guarded(self, has_f64: bool) -> bool {
        has_f64 && !(self.plain && self.fma)
    }
}

/// Whether compiled kernels keep f32 subnormals on `ctx`: neither where the
/// context cannot declare it, else [`probe_f32_subnormals`]'s verdict on the
/// first call, kept in `ctx` for every later one.
///
/// # Errors
/// The probe's dispatch errors (nothing is kept then).
pub fn f32_subnormals_kept(ctx: &'static GpuContext) -> Result<SubnormalProbe, GpuError> {
    if !ctx.declares_f32_subnormals() {
        return Ok(SubnormalProbe {
            plain: false,
            fma: false,
        });
    }
    if let Some(&k) = ctx.f32_subnormals_kept.get() {
        return Ok(k);
    }
    let kept = probe_f32_subnormals(ctx)?;
    Ok(*ctx.f32_subnormals_kept.get_or_init(|| kept))
}

/// Runs the probe now on `ctx` (uncached; its own kernel cache), against
/// the host's f32 arithmetic.
///
/// # Errors
/// Compilation and dispatch errors.
pub fn probe_f32_subnormals(ctx: &'static GpuContext) -> Result<SubnormalProbe, GpuError> {
    let pairs = f32_subnormal_pairs();
    let mut ab: Vec<u32> = pairs.iter().flat_map(|p| p.map(f32::to_bits)).collect();
    ab.push(2f32.to_bits());
    let mut out = vec![0u32; 5 * pairs.len()];
    let spec = KernelSpec::new("f32_subnormal_probe", f32_subnormal_probe_wgsl(), "main")
        .workgroup_size([64, 1, 1])
        .keep_f32_subnormals();
    let mut cache = KernelCache::with_context(ctx);
    cache.dispatch(
        &spec,
        &mut [Binding::read(&ab), Binding::write(&mut out)],
        [(pairs.len() as u32).div_ceil(64), 1, 1],
    )?;
    let mut probe = SubnormalProbe {
        plain: true,
        fma: true,
    };
    for (p, got) in pairs.iter().zip(out.chunks(5)) {
        let [a, b] = *p;
        let plain = [
            (a + b).to_bits(),
            (a * b).to_bits(),
            (a - b).to_bits(),
            (a < b) as u32,
        ];
        probe.plain &= plain[..] == got[..4];
        probe.fma &= a.mul_add(2.0, b).to_bits() == got[4];
    }
    Ok(probe)
}

/// The probe's 512 pairs: subnormal `a` of either sign beside a subnormal
/// `b` (even pairs) or a power of two from 2⁻²⁰ to 2³⁹ (odd pairs), whose
/// sums, differences, products and order a flushing device gets wrong.
pub fn f32_subnormal_pairs() -> Vec<[f32; 2]> {
    let mut next = crate::xorshift::xorshift32(0x9e37_79b9_7f4a_7c15u64);
    let mut sub = move || f32::from_bits((next() % 0x7f_ffff + 1) | ((next() & 1) << 31));
    (0..512)
        .map(|i| {
            let a = sub();
            let b = if i % 2 == 0 {
                sub()
            } else {
                f32::from_bits(((i as u32 / 2) % 60 + 107) << 23)
            };
            [a, b]
        })
        .collect()
}
