//! [`Limits`]: the largest sizes a kernel may ask for from its input. Shared
//! sub-field and flux output lengths and phase repetition counts are
//! expressions of parameters and the launch (`shared s: f32[bins]`,
//! `phase p for j in 0..k`); they are evaluated with overflow-checked
//! arithmetic and held against these limits before anything of that size is
//! allocated or compiled, on the CPU ([`crate::run_cpu_with`]) and for the GPU
//! ([`crate::wgsl::phased::PhasedLayout::new_with`]). The size of a generated
//! shader is held against [`Limits::max_wgsl_bytes`] before it is compiled
//! ([`Limits::check_wgsl`]).

use crate::error::{IrError, Pos};
use crate::kernel::{Kernel, NodeId};
use crate::types::{ScalarType, Value};

/// The largest sizes a launch may take from its input. Every entry point that
/// takes no `Limits` uses [`Limits::default`].
///
/// ```
/// let limits = vgpu_ir::Limits { max_shared_bytes: 96 * 1024, ..Default::default() };
/// assert_eq!(limits.max_flux_elements, vgpu_ir::Limits::default().max_flux_elements);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Bytes of shared sub-fields per block, all of a kernel's together
    /// (elements × 4 bytes, 8 for `f64`). Default 48 KiB (49,152), CUDA's
    /// static `__shared__` limit per block.
    pub max_shared_bytes: u64,
    /// Elements of flux outputs, all of a kernel's together. Default 2^26
    /// (67,108,864: 256 MiB of `f32`).
    pub max_flux_elements: u64,
    /// Repetitions of phases (`phase p for j in 0..K`), summed over a kernel's
    /// phases: each one is a compiled segment of the launch. Default 2^16 (65,536).
    pub max_phase_repetitions: u64,
    /// Steps per trajectory of a phased field, over all its phases and
    /// repetitions (each phase's span, from the input, over the launch's `dt`).
    /// Default 2^32 - 1, what the GPU's schedule words hold.
    pub max_phase_steps: u64,
    /// Bytes of the WGSL shader generated for a kernel, checked before the
    /// shader is compiled ([`Limits::check_wgsl`]). naga, the WGSL compiler of
    /// wgpu (and of [`crate::validate_wgsl`]), takes time quadratic in the
    /// expressions of a function (naga 30's `Typifier::grow` walks the
    /// expression arena from its start for each expression), and a shader is
    /// one function: 2.6 MB of WGSL (a phase with 1,000 drives of a shared
    /// element under RK4) takes 4.5 s, 5.2 MB 18 s, 31 MB (12,000 drives) ten
    /// minutes. Emitting the WGSL is linear. Default 2^20 (1 MiB; at most about
    /// 10 s of naga for the densest shaders, such as 4,500 states; the
    /// examples' shaders are 2 to 11 KB).
    pub max_wgsl_bytes: u64,
}

/// Which of [`Limits`] a size was held against (in [`IrError::Limit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitKind {
    /// [`Limits::max_shared_bytes`].
    SharedBytes,
    /// [`Limits::max_flux_elements`].
    FluxElements,
    /// [`Limits::max_phase_repetitions`].
    PhaseRepetitions,
    /// [`Limits::max_phase_steps`].
    PhaseSteps,
    /// [`Limits::max_wgsl_bytes`].
    WgslBytes,
}

impl LimitKind {
    /// The name of the [`Limits`] field (`max_shared_bytes`, …).
    pub fn field(self) -> &'static str {
        match self {
            LimitKind::SharedBytes => "max_shared_bytes",
            LimitKind::FluxElements => "max_flux_elements",
            LimitKind::PhaseRepetitions => "max_phase_repetitions",
            LimitKind::PhaseSteps => "max_phase_steps",
            LimitKind::WgslBytes => "max_wgsl_bytes",
        }
    }
    /// The unit of the size and the limit.
    pub fn unit(self) -> &'static str {
        match self {
            LimitKind::SharedBytes => "bytes per block",
            LimitKind::FluxElements => "elements",
            LimitKind::PhaseRepetitions => "repetitions",
            LimitKind::PhaseSteps => "steps",
            LimitKind::WgslBytes => "bytes",
        }
    }
    /// The limit's value in `limits`.
    pub fn of(self, limits: &Limits) -> u64 {
        match self {
            LimitKind::SharedBytes => limits.max_shared_bytes,
            LimitKind::FluxElements => limits.max_flux_elements,
            LimitKind::PhaseRepetitions => limits.max_phase_repetitions,
            LimitKind::PhaseSteps => limits.max_phase_steps,
            LimitKind::WgslBytes => limits.max_wgsl_bytes,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_shared_bytes: 48 * 1024,
            max_flux_elements: 1 << 26,
            max_phase_repetitions: 1 << 16,
            max_phase_steps: u32::MAX as u64,
            max_wgsl_bytes: 1 << 20,
        }
    }
}

/// The sizes of a phased launch, each checked against [`Limits`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sizes {
    /// Elements of each shared sub-field.
    pub shared: Vec<u32>,
    /// Elements of each flux output.
    pub flux: Vec<u32>,
    /// Repetitions of each phase (1 without `for`).
    pub repeats: Vec<u32>,
}

/// Bytes of one element of a shared sub-field (as on the GPU: `bool` takes 4).
fn elem_bytes(t: ScalarType) -> u128 {
    if t == ScalarType::F64 {
        8
    } else {
        4
    }
}

impl Limits {
    /// Checks `wgsl`, the shader generated for `k`, against
    /// [`Limits::max_wgsl_bytes`]; the GPU backend calls it before compiling
    /// the shader.
    ///
    /// # Errors
    /// [`IrError::Limit`] at the field's first phase (an unphased field's
    /// body: its declaration).
    pub fn check_wgsl(&self, k: &Kernel, wgsl: &str) -> Result<(), IrError> {
        let bytes = wgsl.len() as u64;
        if bytes <= self.max_wgsl_bytes {
            return Ok(());
        }
        let pos = k
            .phases
            .iter()
            .map(|p| p.pos)
            .chain(k.sites.iter().copied())
            .find(|p| p.line >= 1)
            .unwrap_or_default();
        Err(IrError::Limit {
            kernel: k.name.clone(),
            file: k.source.clone(),
            pos,
            quantity: format!(
                "the WGSL shader generated for field `{}` ({} phase(s), {} state(s), {} IR nodes) takes",
                k.name,
                k.phases.len(),
                k.states.len(),
                k.nodes.len()
            ),
            value: bytes,
            limit: self.max_wgsl_bytes,
            kind: LimitKind::WgslBytes,
        })
    }

    /// Checks `total`, the steps of phased `k` up to and including phase
    /// `phase`, against [`Limits::max_phase_steps`].
    ///
    /// # Errors
    /// [`IrError::Limit`] naming the phase.
    pub(crate) fn check_steps(&self, k: &Kernel, phase: usize, total: u128) -> Result<(), IrError> {
        if total <= self.max_phase_steps as u128 {
            return Ok(());
        }
        let p = &k.phases[phase];
        Err(IrError::Limit {
            kernel: k.name.clone(),
            file: k.source.clone(),
            pos: p.pos,
            quantity: format!("phase `{}` brings the steps of a trajectory to", p.name),
            value: u64::try_from(total).unwrap_or(u64::MAX),
            limit: self.max_phase_steps,
            kind: LimitKind::PhaseSteps,
        })
    }

    /// The lengths and repetition counts of `k` from its uniform values `uni`
    /// (every shared and flux length and repetition count computed), checked.
    ///
    /// # Errors
    /// [`IrError::Limit`] naming the first declaration over a limit.
    pub(crate) fn sizes(&self, k: &Kernel, uni: &[Option<Value>]) -> Result<Sizes, IrError> {
        let u32_of = |id: NodeId| match uni.get(id.index()).copied().flatten() {
            Some(Value::U32(v)) => v,
            _ => 0,
        };
        let over = |pos: Pos, quantity: String, value: u128, kind: LimitKind| IrError::Limit {
            kernel: k.name.clone(),
            file: k.source.clone(),
            pos,
            quantity,
            value: u64::try_from(value).unwrap_or(u64::MAX),
            limit: kind.of(self),
            kind,
        };
        // u128 sums of u32 lengths times 8 cannot overflow; saturating all the same.
        let sum = |acc: u128, x: u128| acc.saturating_add(x);
        let mut bytes = 0u128;
        let mut shared = Vec::with_capacity(k.shared.len());
        for (j, s) in k.shared.iter().enumerate() {
            let len = u32_of(s.len);
            let own = (len as u128).saturating_mul(elem_bytes(s.ty));
            bytes = sum(bytes, own);
            if bytes > self.max_shared_bytes as u128 {
                let quantity = if j == 0 || own == bytes {
                    format!("shared `{}` ({len} × {}) takes", s.name, s.ty)
                } else {
                    format!(
                        "shared sub-fields up to `{}` ({len} × {}) take",
                        s.name, s.ty
                    )
                };
                return Err(over(s.pos, quantity, bytes, LimitKind::SharedBytes));
            }
            shared.push(len);
        }
        let mut elems = 0u128;
        let mut flux = Vec::with_capacity(k.fluxes.len());
        for f in &k.fluxes {
            let len = u32_of(f.len);
            elems = sum(elems, len as u128);
            if elems > self.max_flux_elements as u128 {
                return Err(over(
                    f.pos,
                    format!("flux `{}` brings the flux outputs to", f.name),
                    elems,
                    LimitKind::FluxElements,
                ));
            }
            flux.push(len);
        }
        let mut reps = 0u128;
        let mut repeats = Vec::with_capacity(k.phases.len());
        for p in &k.phases {
            let r = p.repeat.map(u32_of).unwrap_or(1);
            reps = sum(reps, r as u128);
            if reps > self.max_phase_repetitions as u128 {
                return Err(over(
                    p.pos,
                    format!("phase `{}` ({r} repetitions) brings the phases to", p.name),
                    reps,
                    LimitKind::PhaseRepetitions,
                ));
            }
            repeats.push(r);
        }
        Ok(Sizes {
            shared,
            flux,
            repeats,
        })
    }
}
