//! Attractor phases: a [`PhaseKernel`] is a CUDA kernel cut at its barriers into phases. In phase
//! `p` every trajectory reads its registers `h`, its initial state `h0` and the
//! block's **shared sub-field** `S` as they stand when the phase begins (the
//! values the last collapse fixed), and sets **attractors**: new values for
//! some of its registers ([`PhaseOut::set`]), for entries of `S`
//! ([`PhaseOut::store_shared`]), and flux into accumulators ([`PhaseOut::emit`]).
//!
//! The phase is then a field on the block's state `y = (h of every lane, S)`:
//! `dy/dt = m ⊙ (g − y)`, `g` the attractors and `m` the mask of what was set.
//! The block integrates it with the barrier's integrator (the same [`crate::Stepper`]
//! as every launch) until the **basin collapses**: every component has settled,
//! `|g − y| ≤ θ·max(1, |g|)`, or the phase time is spent. Pending values then
//! snap to their attractors (`y ← g` where `m`), so the next phase reads exact
//! values. The steps each collapse took are reported.
//!
//! Without a barrier between a write of `S` and a read of it, the read happens
//! in the same phase and sees the value from before the write: the read races
//! ahead of the write, as in CUDA, and the result differs. A trajectory does see
//! its own writes of the phase ([`PhaseOut::shared`], [`PhaseOut::register`]),
//! as a CUDA thread does.
//!
//! Several lanes setting the same shared entry in one phase: the highest lane
//! wins (deterministic; one of the outcomes CUDA allows).
//!
//! **Executor.** Attractor phases run through the flow engine ([`super::flow`],
//! the one executor of phased kernels): [`super::PhasedLaunch::run`] wraps the
//! kernel in a [`FlowKernel`] whose phases each run until settled, at most
//! [`super::Barrier::max_steps`] steps, every register integrated from its rate.
//! Its state is the registers and one shared array of `T` (`shared_len`
//! entries, zero, then [`PhaseKernel::shared_init`]). At a phase's start
//! ([`FlowKernel::phase_start`]) every lane's [`PhaseKernel::phase`] runs once,
//! in lane order, filling `g` and `m` and emitting its flux as impulses (the
//! amount as it is, into the one accumulator buffer), even when the collapse
//! then takes no step; the stages give the rates `m ⊙ (g − y)` of registers
//! and shared entries; the settling rule is asked before every step; the phase's
//! end ([`FlowKernel::phase_end`]) snaps. Values move between `T` and the
//! shared array by their bits.

use super::flow::{
    FlowKernel, FlowPhase, Impulses, RegisterUpdate, SegmentAt, StageAt, StageIn, StageOut,
};
use super::memory::{SharedDecl, SharedMem};
use super::{out_of_bounds, Barrier};
use crate::error::FieldError;
use crate::field::{BlockCtx, Ctx};
use crate::flux::{FluxLog, FluxValue};
use crate::launch::{Dim3, LaunchConfig};
use crate::real::Real;
use crate::scalar::Value;

/// A kernel cut at its barriers into phases (see the module documentation).
pub trait PhaseKernel<T: Real>: Sync {
    /// The kernel's parameters (scalars, read-only buffers).
    type Params: ?Sized + Sync;
    /// The accumulator type of its flux (`f32`, `f64`, `i32`, `u32`).
    type Flux: FluxValue;

    /// Registers per trajectory (the state each trajectory carries; its final
    /// value is the launch's output).
    fn dim(&self) -> usize;
    /// Entries of the block's shared sub-field.
    fn shared_len(&self) -> usize;
    /// Number of phases (barriers + 1).
    fn phases(&self) -> usize;

    /// Initial shared sub-field of a block (CUDA leaves `__shared__`
    /// uninitialised; VGPU starts it at zero unless the kernel says otherwise).
    fn shared_init(&self, ctx: &BlockCtx<'_, Self::Params>, shared: &mut [T]) {
        let _ = ctx;
        shared.fill(T::ZERO);
    }

    /// Checks the parameters against the launch.
    ///
    /// # Errors
    /// Typically [`FieldError::BufferTooShort`].
    fn check(&self, cfg: &LaunchConfig, params: &Self::Params) -> Result<(), FieldError> {
        let _ = (cfg, params);
        Ok(())
    }

    /// Phase `phase` of one trajectory: reads `h`, `h0` and `shared` (values at
    /// the phase's start) and sets attractors and flux through `out`.
    ///
    /// # Errors
    /// Out-of-bounds indices reported by `out`, or the kernel's own faults.
    fn phase(
        &self,
        phase: usize,
        ctx: &Ctx<'_, '_, Self::Params>,
        h: &[T],
        h0: &[T],
        shared: &[T],
        out: &mut PhaseOut<'_, T, Self::Flux>,
    ) -> Result<(), FieldError>;
}

/// Where a trajectory's phase writes: its register attractors, the block's
/// shared attractors and the block's flux log.
pub struct PhaseOut<'w, T, A> {
    phase: usize,
    lane: usize,
    lanes: usize,
    dim: usize,
    cfg: LaunchConfig,
    block: Dim3,
    targets: &'w mut [T],
    mask: &'w mut [T],
    flux: &'w mut FluxLog<A>,
    flux_len: usize,
    /// The block's state at the phase's start (registers of every lane, then `S`).
    start: &'w [T],
    /// Shared entries this lane wrote in this phase, in order.
    own: &'w mut Vec<(usize, T)>,
}

impl<T: Real, A: FluxValue> PhaseOut<'_, T, A> {
    fn oob(&self, what: &'static str, index: usize, len: usize) -> FieldError {
        let (p, b, l) = (self.phase, self.block, self.lane);
        out_of_bounds(what, index, len, p, b, &self.cfg, l)
    }

    /// Register `k` of this trajectory is attracted to `value` (CUDA: an
    /// assignment to a register).
    ///
    /// # Errors
    /// [`FieldError::OutOfBounds`] if `k ≥ dim`.
    #[inline]
    pub fn set(&mut self, k: usize, value: T) -> Result<(), FieldError> {
        if k >= self.dim {
            return Err(self.oob("register", k, self.dim));
        }
        let i = k * self.lanes + self.lane;
        self.targets[i] = value;
        self.mask[i] = T::ONE;
        Ok(())
    }

    /// Shared entry `j` is attracted to `value` (CUDA: `s[j] = value`).
    ///
    /// # Errors
    /// [`FieldError::OutOfBounds`] if `j` is past the shared sub-field.
    #[inline]
    pub fn store_shared(&mut self, j: usize, value: T) -> Result<(), FieldError> {
        let base = self.dim * self.lanes;
        let len = self.targets.len() - base;
        if j >= len {
            return Err(self.oob("shared", j, len));
        }
        self.targets[base + j] = value;
        self.mask[base + j] = T::ONE;
        self.own.push((j, value));
        Ok(())
    }

    /// Reads shared entry `j` as this trajectory sees it: its own last write of
    /// this phase if it made one (a thread sees its own writes, as in CUDA),
    /// otherwise the value at the phase's start (other trajectories' writes of
    /// this phase land at the collapse).
    ///
    /// # Errors
    /// [`FieldError::OutOfBounds`] if `j` is past the shared sub-field.
    #[inline]
    pub fn shared(&self, j: usize) -> Result<T, FieldError> {
        let base = self.dim * self.lanes;
        let len = self.start.len() - base;
        if j >= len {
            return Err(self.oob("shared", j, len));
        }
        Ok(match self.own.iter().rev().find(|(i, _)| *i == j) {
            Some(&(_, v)) => v,
            None => self.start[base + j],
        })
    }

    /// Reads register `k` of this trajectory: the value it set in this phase if
    /// it set one, otherwise its value at the phase's start.
    ///
    /// # Errors
    /// [`FieldError::OutOfBounds`] if `k ≥ dim`.
    #[inline]
    pub fn register(&self, k: usize) -> Result<T, FieldError> {
        if k >= self.dim {
            return Err(self.oob("register", k, self.dim));
        }
        let i = k * self.lanes + self.lane;
        Ok(if self.mask[i] != T::ZERO {
            self.targets[i]
        } else {
            self.start[i]
        })
    }

    /// Emits `amount` into accumulator `index` (CUDA: `atomicAdd(&acc[index], amount)`).
    ///
    /// # Errors
    /// [`FieldError::OutOfBounds`] if `index` is past the accumulator buffer.
    #[inline]
    pub fn emit(&mut self, index: usize, amount: A) -> Result<(), FieldError> {
        if index >= self.flux_len {
            return Err(self.oob("flux", index, self.flux_len));
        }
        self.flux.push(index, amount);
        Ok(())
    }
}

/// A [`PhaseKernel`] as a [`FlowKernel`] (see the module documentation).
pub(super) struct Attractors<'k, T, K: ?Sized> {
    kernel: &'k K,
    shared: [SharedDecl; 1],
    phases: Vec<FlowPhase>,
    theta: T,
}

impl<'k, T: Real, K: PhaseKernel<T> + ?Sized> Attractors<'k, T, K> {
    /// `kernel` under `barrier`'s settling rule and most steps per phase.
    pub(super) fn new(kernel: &'k K, barrier: &Barrier) -> Self {
        let zero = if T::NAME == "f32" {
            Value::F32(0.0)
        } else {
            Value::F64(0.0)
        };
        let phase = FlowPhase {
            steps: vec![barrier.max_steps()],
            updates: vec![RegisterUpdate::Rate; kernel.dim()],
            until_settled: true,
        };
        Attractors {
            kernel,
            shared: [SharedDecl {
                name: "shared".into(),
                len: kernel.shared_len(),
                init: zero,
            }],
            phases: vec![phase; kernel.phases()],
            theta: T::from_f64(barrier.theta),
        }
    }
}

/// A worker's memory for [`Attractors`]: the block's state at the phase's
/// start `y` (registers of every lane, then the shared entries), the
/// attractors `g` and mask `m`, one lane's registers, its shared writes and
/// its flux.
pub(super) struct AttractorScratch<T, A> {
    y: Vec<T>,
    g: Vec<T>,
    m: Vec<T>,
    reg: Vec<T>,
    reg0: Vec<T>,
    own: Vec<(usize, T)>,
    log: FluxLog<A>,
}

/// `f32` shared entries as `T`, by their bits (`T` is `f32` where they exist).
#[inline(always)]
fn of_f32<T: Real>(v: &f32) -> T {
    T::from_bits_u64(u64::from(v.to_bits()))
}

/// `f64` shared entries as `T`, by their bits (`T` is `f64` where they exist).
#[inline(always)]
fn of_f64<T: Real>(v: &f64) -> T {
    T::from_bits_u64(v.to_bits())
}

/// The shared entries of a block as `T`, in order: the one array (of `T`'s
/// type) is the whole of `f32s` or of `f64s`, the other empty.
fn shared_values<'s, T: Real>(f32s: &'s [f32], f64s: &'s [f64]) -> impl Iterator<Item = T> + 's {
    f32s.iter().map(of_f32).chain(f64s.iter().map(of_f64))
}

/// Entry `j` of `f32s` or `f64s` (as [`shared_values`] reads them) set to
/// `value(j, old)` where it gives one.
fn set_shared<T: Real>(
    f32s: &mut [f32],
    f64s: &mut [f64],
    mut value: impl FnMut(usize, T) -> Option<T>,
) {
    for (j, s) in f32s.iter_mut().enumerate() {
        if let Some(v) = value(j, of_f32(s)) {
            *s = f32::from_bits(v.to_bits_u64() as u32);
        }
    }
    for (j, s) in f64s.iter_mut().enumerate() {
        if let Some(v) = value(j, of_f64(s)) {
            *s = f64::from_bits(v.to_bits_u64());
        }
    }
}

/// `m·(g − y)`: the rate of a component relaxing to its attractor.
#[inline(always)]
fn rate<T: Real>(y: T, g: T, m: T) -> T {
    m * (g - y)
}

/// Unmasked, or within `θ·max(1, |g|)` of its attractor.
#[inline(always)]
fn near<T: Real>(y: T, g: T, m: T, theta: T) -> bool {
    let scale = if g.abs() > T::ONE { g.abs() } else { T::ONE };
    m == T::ZERO || (g - y).abs() <= theta * scale
}

impl<T: Real, K: PhaseKernel<T> + ?Sized> FlowKernel<T> for Attractors<'_, T, K> {
    type Params = K::Params;
    type Scratch = AttractorScratch<T, K::Flux>;
    fn dim(&self) -> usize {
        self.kernel.dim()
    }
    fn shared(&self) -> &[SharedDecl] {
        &self.shared
    }
    fn phases(&self) -> &[FlowPhase] {
        &self.phases
    }
    fn scratch(&self, lanes: usize) -> Self::Scratch {
        let dim = self.kernel.dim();
        let len = dim * lanes + self.kernel.shared_len();
        AttractorScratch {
            y: vec![T::ZERO; len],
            g: vec![T::ZERO; len],
            m: vec![T::ZERO; len],
            reg: vec![T::ZERO; dim],
            reg0: vec![T::ZERO; dim],
            own: Vec::new(),
            log: FluxLog::new(),
        }
    }
    fn check(&self, cfg: &LaunchConfig, params: &K::Params) -> Result<(), FieldError> {
        self.kernel.check(cfg, params)
    }

    fn init_block(
        &self,
        ctx: &BlockCtx<'_, K::Params>,
        shared: &mut SharedMem,
        sc: &mut Self::Scratch,
    ) -> Result<(), FieldError> {
        let s = &mut sc.y[self.kernel.dim() * ctx.lanes()..];
        s.fill(T::ZERO);
        self.kernel.shared_init(ctx, s);
        set_shared(&mut shared.f32s, &mut shared.f64s, |j, _| Some(s[j]));
        Ok(())
    }

    fn phase_start(
        &self,
        at: SegmentAt,
        ctx: &BlockCtx<'_, K::Params>,
        input: &StageIn<'_, T>,
        sc: &mut Self::Scratch,
        flux: &mut Impulses<'_>,
    ) -> Result<(), FieldError> {
        let (dim, lanes) = (self.kernel.dim(), ctx.lanes());
        let hs = dim * lanes;
        let AttractorScratch {
            y,
            g,
            m,
            reg,
            reg0,
            own,
            log,
        } = sc;
        y[..hs].copy_from_slice(input.h);
        let shared = shared_values(input.shared.f32s, input.shared.f64s);
        for (v, s) in y[hs..].iter_mut().zip(shared) {
            *v = s;
        }
        g.copy_from_slice(y);
        m.fill(T::ZERO);
        let flux_len = flux.buffer_len(0).unwrap_or(0);
        for l in 0..lanes {
            for k in 0..dim {
                reg[k] = y[k * lanes + l];
                reg0[k] = input.h0[k * lanes + l];
            }
            own.clear();
            log.clear();
            let mut po = PhaseOut {
                start: &y[..],
                own: &mut *own,
                phase: at.phase,
                lane: l,
                lanes,
                dim,
                cfg: *ctx.launch(),
                block: ctx.block_idx(),
                targets: &mut g[..],
                mask: &mut m[..],
                flux: &mut *log,
                flux_len,
            };
            let lane = ctx.thread(l);
            (self.kernel).phase(at.phase, &lane, reg, reg0, &y[hs..], &mut po)?;
            for &(i, a) in log.entries() {
                flux.emit(0, l, i, a.to_value())?;
            }
        }
        Ok(())
    }

    fn settled(
        &self,
        _at: SegmentAt,
        _ctx: &BlockCtx<'_, K::Params>,
        input: &StageIn<'_, T>,
        sc: &mut Self::Scratch,
    ) -> bool {
        let (g, m, hs) = (&sc.g, &sc.m, input.h.len());
        let regs = (input.h.iter().zip(&g[..hs]).zip(&m[..hs]))
            .all(|((&y, &g), &m)| near(y, g, m, self.theta));
        let shared = shared_values(input.shared.f32s, input.shared.f64s);
        regs && (shared.zip(&g[hs..]).zip(&m[hs..])).all(|((y, &g), &m)| near(y, g, m, self.theta))
    }

    fn stage(
        &self,
        _at: StageAt<T>,
        _ctx: &BlockCtx<'_, K::Params>,
        input: &StageIn<'_, T>,
        sc: &mut Self::Scratch,
        out: &mut StageOut<'_, T>,
    ) -> Result<(), FieldError> {
        let (g, m, hs) = (&sc.g, &sc.m, input.h.len());
        let (gh, mh) = (&g[..hs], &m[..hs]);
        for (((r, &y), &g), &m) in out.rates().iter_mut().zip(input.h).zip(gh).zip(mh) {
            *r = rate(y, g, m);
        }
        let (gs, ms) = (&g[hs..], &m[hs..]);
        let (d32, d64) = out.shared_rates();
        for (((d, y), &g), &m) in d32.iter_mut().zip(input.shared.f32s).zip(gs).zip(ms) {
            *d = f32::from_bits(rate(of_f32::<T>(y), g, m).to_bits_u64() as u32);
        }
        for (((d, y), &g), &m) in d64.iter_mut().zip(input.shared.f64s).zip(gs).zip(ms) {
            *d = f64::from_bits(rate(of_f64::<T>(y), g, m).to_bits_u64());
        }
        Ok(())
    }

    fn phase_end(
        &self,
        _at: SegmentAt,
        _ctx: &BlockCtx<'_, K::Params>,
        h: &mut [T],
        shared: &mut SharedMem,
        sc: &mut Self::Scratch,
    ) -> Result<(), FieldError> {
        // Pending values snap to their attractors.
        let (g, m, hs) = (&sc.g, &sc.m, h.len());
        for (i, y) in h.iter_mut().enumerate() {
            if m[i] != T::ZERO {
                *y = g[i];
            }
        }
        set_shared(&mut shared.f32s, &mut shared.f64s, |j, _| {
            (m[hs + j] != T::ZERO).then_some(g[hs + j])
        });
        Ok(())
    }
}
