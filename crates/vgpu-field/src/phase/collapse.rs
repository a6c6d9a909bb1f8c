//! Attractor phases: a [`PhaseKernel`] is a CUDA kernel cut at its barriers into phases. In phase
//! `p` every trajectory reads its registers `h`, its initial state `h0` and the
//! block's **shared sub-field** `S` as they stand when the phase begins (the
//! values the last collapse fixed), and sets **attractors**: new values for
//! some of its registers ([`PhaseOut::set`]), for entries of `S`
//! ([`PhaseOut::store_shared`]), and flux into accumulators ([`PhaseOut::emit`]).
//!
//! The phase is then a field on the block's state `y = (h of every lane, S)`:
//! `dy/dt = m ⊙ (g − y)`, `g` the attractors and `m` the mask of what was set.
//! The block integrates it with the barrier's integrator (the same [`Stepper`]
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

use super::{check_finite, out_of_bounds, Barrier, BlockOutcome};
use crate::error::FieldError;
use crate::executor::{gather_soa, scatter_soa};
use crate::field::{BlockCtx, Ctx};
use crate::flux::{FluxLog, FluxValue};
use crate::launch::{Dim3, LaunchConfig};
use crate::real::Real;
use crate::stepper::Stepper;

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

pub(super) struct PhaseJob<'a, T: Real, K: PhaseKernel<T> + ?Sized> {
    pub kernel: &'a K,
    pub params: &'a K::Params,
    pub cfg: LaunchConfig,
    pub barrier: Barrier,
    pub flux_len: usize,
}

pub(super) struct PhaseWork<T> {
    y: Vec<T>,
    h0: Vec<T>,
    g: Vec<T>,
    m: Vec<T>,
    reg: Vec<T>,
    reg0: Vec<T>,
    own: Vec<(usize, T)>,
    stepper: Stepper<T>,
}

impl<T: Real, K: PhaseKernel<T> + ?Sized> PhaseJob<'_, T, K> {
    pub(super) fn work(&self) -> PhaseWork<T> {
        let dim = self.kernel.dim();
        let len = dim * self.cfg.threads_per_block() + self.kernel.shared_len();
        PhaseWork {
            y: vec![T::ZERO; len],
            h0: vec![T::ZERO; len],
            g: vec![T::ZERO; len],
            m: vec![T::ZERO; len],
            reg: vec![T::ZERO; dim],
            reg0: vec![T::ZERO; dim],
            own: Vec::new(),
            stepper: Stepper::new(&self.barrier.method.tableau(), len),
        }
    }

    pub(super) fn run_block(
        &self,
        w: &mut PhaseWork<T>,
        block: usize,
        chunk: &mut [T],
    ) -> BlockOutcome<FluxLog<K::Flux>> {
        BlockOutcome::of(FluxLog::new(), |out| self.phases(w, block, chunk, out))
    }

    fn phases(
        &self,
        w: &mut PhaseWork<T>,
        block: usize,
        chunk: &mut [T],
        out: &mut BlockOutcome<FluxLog<K::Flux>>,
    ) -> Result<(), FieldError> {
        let dim = self.kernel.dim();
        let lanes = self.cfg.threads_per_block();
        let hs = dim * lanes;
        let ctx = BlockCtx::new_unchecked(&self.cfg, block, self.params);
        let PhaseWork {
            y,
            h0,
            g,
            m,
            reg,
            reg0,
            own,
            stepper,
        } = w;
        if dim > 0 {
            gather_soa(chunk, &mut y[..hs], lanes, dim);
        }
        self.kernel.shared_init(&ctx, &mut y[hs..]);
        h0.copy_from_slice(y);
        let dt = T::from_f64(self.barrier.dt);
        let theta = T::from_f64(self.barrier.theta);
        let max_steps = self.barrier.max_steps();
        let mut t = 0.0f64;
        for p in 0..self.kernel.phases() {
            g.copy_from_slice(y);
            m.fill(T::ZERO);
            for l in 0..lanes {
                for k in 0..dim {
                    reg[k] = y[k * lanes + l];
                    reg0[k] = h0[k * lanes + l];
                }
                let (targets, mask) = (&mut g[..], &mut m[..]);
                own.clear();
                let mut po = PhaseOut {
                    start: &y[..],
                    own: &mut *own,
                    phase: p,
                    lane: l,
                    lanes,
                    dim,
                    cfg: self.cfg,
                    block: ctx.block_idx(),
                    targets,
                    mask,
                    flux: &mut out.flux,
                    flux_len: self.flux_len,
                };
                self.kernel
                    .phase(p, &ctx.thread(l), reg, reg0, &y[hs..], &mut po)?;
            }
            // The collapse: integrate dy/dt = m ⊙ (g − y) until settled or out of time.
            let mut steps = 0;
            while steps < max_steps && !settled(y, g, m, theta) {
                stepper.step(T::ZERO, dt, y, |_, yy, dy| {
                    for i in 0..dy.len() {
                        dy[i] = m[i] * (g[i] - yy[i]);
                    }
                });
                steps += 1;
            }
            t += steps as f64 * self.barrier.dt;
            // Pending values snap to their attractors.
            for i in 0..y.len() {
                if m[i] != T::ZERO {
                    y[i] = g[i];
                }
            }
            out.steps.push(steps);
            check_finite(&y[..hs], dim, &ctx, t)?;
        }
        if dim > 0 {
            scatter_soa(&y[..hs], chunk, lanes, dim);
        }
        Ok(())
    }
}

/// Every masked component within `θ·max(1, |g|)` of its attractor.
fn settled<T: Real>(y: &[T], g: &[T], m: &[T], theta: T) -> bool {
    y.iter().zip(g).zip(m).all(|((&yi, &gi), &mi)| {
        let scale = if gi.abs() > T::ONE { gi.abs() } else { T::ONE };
        mi == T::ZERO || (gi - yi).abs() <= theta * scale
    })
}
