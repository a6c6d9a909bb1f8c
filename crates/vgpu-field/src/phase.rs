//! Kernels with barriers: the coupled sub-field (`__shared__`), the
//! basin-collapse barrier (`__syncthreads`) and flux (`atomicAdd`).
//!
//! A [`PhaseKernel`] is a CUDA kernel cut at its barriers into phases. In phase
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

use crate::error::{check_len, FieldError};
use crate::executor::{gather_soa, locate_non_finite, scatter_soa, Launch};
use crate::field::{BlockCtx, Ctx};
use crate::flux::{apply_in_order, FluxLog, FluxValue};
use crate::launch::{Dim3, LaunchConfig};
use crate::par::Par;
use crate::real::Real;
use crate::stepper::Stepper;
use crate::tableau::Method;
use rayon::prelude::*;

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
        FieldError::OutOfBounds {
            what,
            index,
            len,
            phase: self.phase,
            block: self.block,
            thread: self.cfg.block.delinearize(self.lane as u64),
        }
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

/// The basin-collapse barrier's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Barrier {
    /// Settling threshold θ (relative: `|g − y| ≤ θ·max(1, |g|)`), in `(0, 1)`.
    pub theta: f64,
    /// The longest a phase runs before it collapses anyway (> 0).
    pub phase_time: f64,
    /// Step of the phase integration (> 0).
    pub dt: f64,
    /// Integrator of the phase dynamics.
    pub method: Method,
}

impl Default for Barrier {
    /// θ = 1e-6, phase time 64, dt = 0.25, RK4.
    fn default() -> Self {
        Barrier {
            theta: 1e-6,
            phase_time: 64.0,
            dt: 0.25,
            method: Method::Rk4,
        }
    }
}

impl Barrier {
    /// Checks the settings.
    ///
    /// # Errors
    /// [`FieldError::BadBarrier`] or [`FieldError::BadStep`].
    pub fn validate<T: Real>(&self) -> Result<(), FieldError> {
        if !(self.theta > 0.0 && self.theta < 1.0) {
            return Err(FieldError::BadBarrier {
                what: "theta",
                value: self.theta,
                why: "must lie in (0, 1)",
            });
        }
        if !(self.phase_time.is_finite() && self.phase_time > 0.0) {
            return Err(FieldError::BadBarrier {
                what: "phase_time",
                value: self.phase_time,
                why: "must be positive and finite",
            });
        }
        Launch::times::<T>(0.0, self.dt)?;
        Ok(())
    }

    /// Most steps a phase may take: `ceil(phase_time / dt)`.
    pub fn max_steps(&self) -> usize {
        (self.phase_time / self.dt).ceil() as usize
    }
}

/// What a phased launch did.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseReport {
    /// Trajectories (`grid · block`).
    pub trajectories: usize,
    /// Blocks.
    pub blocks: usize,
    /// Phases per block.
    pub phases: usize,
    /// Steps each collapse took, block-major: `collapse_steps[b·phases + p]`.
    pub collapse_steps: Vec<usize>,
    /// Flux emissions applied.
    pub emissions: usize,
}

impl PhaseReport {
    /// The most steps any block's collapse of phase `p` took.
    pub fn max_steps_of_phase(&self, p: usize) -> usize {
        (0..self.blocks)
            .map(|b| self.collapse_steps[b * self.phases + p])
            .max()
            .unwrap_or(0)
    }
    /// Total integration steps over all blocks and phases.
    pub fn total_steps(&self) -> usize {
        self.collapse_steps.iter().sum()
    }
}

/// A launch of a [`PhaseKernel`].
#[derive(Debug, Clone)]
pub struct PhasedLaunch {
    cfg: LaunchConfig,
    barrier: Barrier,
    par: Par,
}

impl PhasedLaunch {
    /// A launch over `cfg` with the default [`Barrier`] and [`Par::Auto`].
    pub fn new(cfg: LaunchConfig) -> Self {
        PhasedLaunch {
            cfg,
            barrier: Barrier::default(),
            par: Par::Auto,
        }
    }
    /// Barrier settings.
    pub fn barrier(mut self, b: Barrier) -> Self {
        self.barrier = b;
        self
    }
    /// Parallelism.
    pub fn par(mut self, par: Par) -> Self {
        self.par = par;
        self
    }

    /// Runs every block through every phase. `states` holds each trajectory's
    /// initial registers, trajectory-major (`states[i·dim + k]`); on return the
    /// final ones. `flux` is the accumulator buffer; emissions are added to it
    /// in the fixed order of [`crate::flux`].
    ///
    /// # Errors
    /// Bad dimensions or barrier settings, short buffers, out-of-bounds
    /// indices, kernel faults, and [`FieldError::NonFinite`] if a register
    /// becomes NaN or infinite (time = the block's time at that collapse). With
    /// several failing blocks the lowest block's error is returned; flux is then
    /// not applied.
    pub fn run<T: Real, K: PhaseKernel<T>>(
        &self,
        kernel: &K,
        params: &K::Params,
        states: &mut [T],
        flux: &mut [K::Flux],
    ) -> Result<PhaseReport, FieldError> {
        let cfg = self.cfg;
        cfg.validate()?;
        self.barrier.validate::<T>()?;
        let dim = kernel.dim();
        let n = cfg.total_threads();
        check_len(
            "states",
            states.len(),
            n * dim,
            &format!(
                "{n} trajectories (grid {} × block {}) × {dim} registers",
                cfg.grid, cfg.block
            ),
        )?;
        kernel.check(&cfg, params)?;
        let lanes = cfg.threads_per_block();
        let phases = kernel.phases();
        let job = PhaseJob {
            kernel,
            params,
            cfg,
            barrier: self.barrier,
            flux_len: flux.len(),
        };
        let states = &mut states[..n * dim];
        // A kernel with no registers still runs: one placeholder value per block.
        let chunk = if dim == 0 { 1 } else { lanes * dim };
        let mut empty: Vec<T> = if dim == 0 {
            vec![T::ZERO; cfg.num_blocks()]
        } else {
            Vec::new()
        };
        let states: &mut [T] = if dim == 0 { &mut empty } else { states };
        let results: Vec<BlockOutcome<K::Flux>> = self.par.run(|parallel| {
            Ok(if parallel {
                states
                    .par_chunks_mut(chunk)
                    .enumerate()
                    .map_init(|| job.work(), |w, (b, c)| job.run_block(w, b, c))
                    .collect()
            } else {
                let mut w = job.work();
                states
                    .chunks_mut(chunk)
                    .enumerate()
                    .map(|(b, c)| job.run_block(&mut w, b, c))
                    .collect()
            })
        })?;
        let mut collapse_steps = Vec::with_capacity(results.len() * phases);
        for r in &results {
            if let Some(e) = &r.error {
                return Err(e.clone());
            }
            collapse_steps.extend_from_slice(&r.steps);
        }
        apply_in_order(flux, results.iter().map(|r| &r.flux));
        Ok(PhaseReport {
            trajectories: n,
            blocks: cfg.num_blocks(),
            phases,
            collapse_steps,
            emissions: results.iter().map(|r| r.flux.len()).sum(),
        })
    }
}

struct BlockOutcome<A> {
    steps: Vec<usize>,
    flux: FluxLog<A>,
    error: Option<FieldError>,
}

struct PhaseJob<'a, T: Real, K: PhaseKernel<T> + ?Sized> {
    kernel: &'a K,
    params: &'a K::Params,
    cfg: LaunchConfig,
    barrier: Barrier,
    flux_len: usize,
}

struct PhaseWork<T> {
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
    fn work(&self) -> PhaseWork<T> {
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

    fn run_block(
        &self,
        w: &mut PhaseWork<T>,
        block: usize,
        chunk: &mut [T],
    ) -> BlockOutcome<K::Flux> {
        let mut out = BlockOutcome {
            steps: Vec::with_capacity(self.kernel.phases()),
            flux: FluxLog::new(),
            error: None,
        };
        if let Err(e) = self.phases(w, block, chunk, &mut out) {
            out.error = Some(e);
        }
        out
    }

    fn phases(
        &self,
        w: &mut PhaseWork<T>,
        block: usize,
        chunk: &mut [T],
        out: &mut BlockOutcome<K::Flux>,
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
            if !T::all_finite(&y[..hs]) {
                if let Some((lane, component, value)) = locate_non_finite(&y[..hs], lanes, dim) {
                    let trajectory = ctx.first() + lane;
                    return Err(FieldError::NonFinite {
                        trajectory,
                        block: ctx.block_idx(),
                        thread: self.cfg.block.delinearize(lane as u64),
                        component,
                        t,
                        value,
                    });
                }
            }
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
