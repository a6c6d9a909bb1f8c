//! Kernels with barriers: the coupled sub-field (`__shared__`), the
//! basin-collapse barrier (`__syncthreads`) and flux (`atomicAdd`).
//!
//! A kernel cut at its barriers into phases runs through one launch,
//! [`PhasedLaunch`], and one executor, the flow engine of [`flow`], in one of
//! two shapes:
//!
//! * [`PhaseKernel`] ([`PhasedLaunch::run`]): each phase sets **attractors**
//!   per trajectory and the block relaxes to them until the basin collapses
//!   (see [`collapse`]). The Rust-written demos use it. It runs as a
//!   [`FlowKernel`] whose phases last until the block has settled.
//! * [`FlowKernel`] ([`PhasedLaunch::run_flow`]): each phase is a vector
//!   field on the block's state integrated over its span by the launch's
//!   integrator (any Butcher tableau), with typed shared arrays, drives, jumps,
//!   repeated phases, phases that run until settled and flux as the method's
//!   quadrature or as impulses (see [`flow`]). The kernel IR's phased fields
//!   use it.
//!
//! Blocks run in parallel as [`Par`] says; flux is applied in the fixed order
//! of [`crate::flux`] after every block is done (and not at all when a block
//! fails: the lowest failing block's error is returned); the steps of every
//! phase of every block are reported ([`PhaseReport`]).

pub mod collapse;
pub mod flow;
pub mod memory;

pub use crate::flux::FluxBuffer;
pub use collapse::{PhaseKernel, PhaseOut};
pub use flow::{
    FlowKernel, FlowPhase, Impulses, RegisterUpdate, SegmentAt, StageAt, StageIn, StageOut,
};
pub use memory::{SharedDecl, SharedMem, SharedSlice, SharedView};

use crate::blocks::run_blocks;
use crate::error::{check_len, FieldError};
use crate::executor::Launch;
use crate::flux::FluxValue;
use crate::launch::LaunchConfig;
use crate::par::Par;
use crate::real::Real;
use crate::tableau::Method;
use memory::Layout;

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

/// A launch of a phased kernel ([`PhaseKernel`] or [`FlowKernel`]).
#[derive(Debug, Clone)]
pub struct PhasedLaunch {
    cfg: LaunchConfig,
    barrier: Barrier,
    par: Par,
    progress: Option<crate::executor::Progress>,
    /// Whether [`PhasedLaunch::run_flow`] fails on a non-finite register.
    stop_on_non_finite: bool,
}

/// What one block did: the steps of each phase, its flux log, its error.
pub(crate) struct BlockOutcome<L> {
    steps: Vec<usize>,
    flux: L,
    error: Option<FieldError>,
}

impl<L> BlockOutcome<L> {
    /// Runs a block's phases into a fresh outcome (flux starting at `flux`),
    /// keeping the error if they fail.
    fn of(flux: L, run: impl FnOnce(&mut Self) -> Result<(), FieldError>) -> Self {
        let mut out = BlockOutcome {
            steps: vec![],
            flux,
            error: None,
        };
        if let Err(e) = run(&mut out) {
            out.error = Some(e);
        }
        out
    }
}

/// [`FieldError::OutOfBounds`] for lane `lane` of `block` in `phase`.
fn out_of_bounds(
    what: &'static str,
    index: usize,
    len: usize,
    phase: usize,
    block: crate::launch::Dim3,
    cfg: &LaunchConfig,
    lane: usize,
) -> FieldError {
    FieldError::OutOfBounds {
        what,
        index,
        len,
        phase,
        block,
        thread: cfg.block.delinearize(lane as u64),
    }
}

/// [`FieldError::NonFinite`] for the lowest lane of a block whose registers
/// `h` (structure of arrays) hold a NaN or an infinity at time `t`.
fn check_finite<T: Real, P: ?Sized>(
    h: &[T],
    dim: usize,
    ctx: &crate::field::BlockCtx<'_, P>,
    t: f64,
) -> Result<(), FieldError> {
    if T::all_finite(h) {
        return Ok(());
    }
    let lanes = ctx.lanes();
    match crate::executor::locate_non_finite(h, lanes, dim) {
        Some((lane, component, value)) => Err(FieldError::NonFinite {
            trajectory: ctx.first() + lane,
            block: ctx.block_idx(),
            thread: ctx.launch().block.delinearize(lane as u64),
            component,
            t,
            value,
        }),
        None => Ok(()),
    }
}

impl PhasedLaunch {
    /// A launch over `cfg` with the default [`Barrier`] and [`Par::Auto`].
    pub fn new(cfg: LaunchConfig) -> Self {
        PhasedLaunch {
            cfg,
            barrier: Barrier::default(),
            par: Par::Auto,
            progress: None,
            stop_on_non_finite: true,
        }
    }
    /// Barrier settings. A [`FlowKernel`]'s phases are integrated with the
    /// barrier's `method` and `dt` (θ and the phase time bound collapses only).
    pub fn barrier(mut self, b: Barrier) -> Self {
        self.barrier = b;
        self
    }
    /// Parallelism.
    pub fn par(mut self, par: Par) -> Self {
        self.par = par;
        self
    }
    /// Report the work done to `p` as [`PhasedLaunch::run_flow`] runs, in
    /// trajectory-steps (all repetitions of all phases), block by block: on
    /// success `done` grows by exactly what `total` announced.
    pub fn progress(mut self, p: crate::executor::Progress) -> Self {
        self.progress = Some(p);
        self
    }

    /// Whether [`PhasedLaunch::run_flow`] fails with [`FieldError::NonFinite`]
    /// when a register becomes NaN or infinite (`true`, the default: a
    /// diverging integration), or keeps such values as data (`false`: IEEE
    /// values in, IEEE values out, as the fused jump kernels of `vgpu-gpu`
    /// want). [`PhasedLaunch::run`] always fails on them.
    pub fn stop_on_non_finite(mut self, stop: bool) -> Self {
        self.stop_on_non_finite = stop;
        self
    }

    /// Runs a [`PhaseKernel`]: every block through every phase, each phase
    /// ending in a basin collapse. `states` holds each trajectory's initial
    /// registers, trajectory-major (`states[i·dim + k]`); on return the final
    /// ones. `flux` is the accumulator buffer; emissions are added to it in the
    /// fixed order of [`crate::flux`]. Runs through [`PhasedLaunch::run_flow`]
    /// (see [`collapse`]), without reporting progress.
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
        let adapter = collapse::Attractors::new(kernel, &self.barrier);
        let mut bufs = [K::Flux::to_buffer(flux)];
        let launch = PhasedLaunch {
            progress: None,
            stop_on_non_finite: true,
            ..self.clone()
        };
        let report = launch.run_flow(&adapter, params, states, &mut bufs)?;
        if let Some(acc) = K::Flux::of_buffer(&bufs[0]) {
            flux.copy_from_slice(acc);
        }
        Ok(report)
    }

    /// Runs a [`FlowKernel`]: every block through every repetition of every
    /// phase, integrated with the barrier's method and step. `states` as for
    /// [`PhasedLaunch::run`]; `flux` the typed accumulator buffers, added to in
    /// the fixed order of [`crate::flux`].
    ///
    /// # Errors
    /// As [`PhasedLaunch::run`]; [`FieldError::NonFinite`] is checked at the end
    /// of every repetition (time = the block's phase time so far), unless
    /// [`PhasedLaunch::stop_on_non_finite`] is `false`.
    pub fn run_flow<T: Real, K: FlowKernel<T>>(
        &self,
        kernel: &K,
        params: &K::Params,
        states: &mut [T],
        flux: &mut [FluxBuffer],
    ) -> Result<PhaseReport, FieldError> {
        let dim = kernel.dim();
        self.check_states::<T>(dim, states.len())?;
        kernel.check(&self.cfg, params)?;
        let (flux_types, logs) = flow::flux_shapes(flux);
        let job = flow::FlowJob {
            kernel,
            params,
            launch: self,
            layout: Layout::new(kernel.shared()),
            flux_types,
            logs,
            _t: std::marker::PhantomData,
        };
        let steps = (kernel.phases().iter().flat_map(|p| &p.steps))
            .fold(0usize, |a, &s| a.saturating_add(s));
        let per_block = (self.cfg.threads_per_block().saturating_mul(steps)) as u64;
        if let Some(p) = &self.progress {
            p.add_total(per_block * self.cfg.num_blocks() as u64);
        }
        let results = self.blocks(
            dim,
            states,
            || job.work(),
            |w, b, c| {
                let outcome = job.run_block(w, b, c);
                if let Some(p) = &self.progress {
                    p.advance(per_block);
                }
                outcome
            },
        )?;
        let segments = kernel.phases().iter().map(|p| p.steps.len()).sum();
        let report = self.report(&results, segments, |logs| {
            logs.iter().map(|l| l.len()).sum()
        })?;
        for r in &results {
            for (log, acc) in r.flux.iter().zip(flux.iter_mut()) {
                log.apply(acc);
            }
        }
        Ok(report)
    }

    fn check_states<T: Real>(&self, dim: usize, len: usize) -> Result<(), FieldError> {
        let cfg = self.cfg;
        cfg.validate()?;
        self.barrier.validate::<T>()?;
        let n = cfg.total_threads();
        check_len(
            "states",
            len,
            n * dim,
            &format!(
                "{n} trajectories (grid {} × block {}) × {dim} registers",
                cfg.grid, cfg.block
            ),
        )
    }

    /// Runs `run(work, block, registers)` for every block, in parallel as the
    /// launch's [`Par`] says, each worker with its own `work`; outcomes in block
    /// order.
    fn blocks<T: Real, W: Send, L: Send>(
        &self,
        dim: usize,
        states: &mut [T],
        work: impl Fn() -> W + Sync + Send,
        run: impl Fn(&mut W, usize, &mut [T]) -> BlockOutcome<L> + Sync + Send,
    ) -> Result<Vec<BlockOutcome<L>>, FieldError> {
        let cfg = self.cfg;
        let states = &mut states[..cfg.total_threads() * dim];
        // A kernel with no registers still runs: one placeholder value per block.
        let chunk = if dim == 0 {
            1
        } else {
            cfg.threads_per_block() * dim
        };
        let mut empty: Vec<T> = if dim == 0 {
            vec![T::ZERO; cfg.num_blocks()]
        } else {
            Vec::new()
        };
        let states: &mut [T] = if dim == 0 { &mut empty } else { states };
        run_blocks(self.par, states, chunk, work, run)
    }

    /// The lowest failing block's error, or the report.
    fn report<L>(
        &self,
        results: &[BlockOutcome<L>],
        phases: usize,
        emissions: impl Fn(&L) -> usize,
    ) -> Result<PhaseReport, FieldError> {
        let mut collapse_steps = Vec::with_capacity(results.len() * phases);
        for r in results {
            if let Some(e) = &r.error {
                return Err(e.clone());
            }
            collapse_steps.extend_from_slice(&r.steps);
        }
        Ok(PhaseReport {
            trajectories: self.cfg.total_threads(),
            blocks: self.cfg.num_blocks(),
            phases,
            collapse_steps,
            emissions: results.iter().map(|r| emissions(&r.flux)).sum(),
        })
    }
}
