//! The CPU executor: [`Launch`] integrates one trajectory per thread of a
//! `<<<grid, block>>>`, blocks in parallel (rayon), the lanes of a block together
//! in structure-of-arrays layout.
//!
//! One way through: every field (per-trajectory closures through
//! [`crate::PerTrajectory`], the kernel-IR evaluator, the Lorenz benchmark)
//! reaches the integrator as a [`BlockField`]; every block owns its stage buffers
//! ([`Stepper`]) and state copies, allocated once per block, never per step.
//!
//! Determinism: a block's arithmetic depends only on its own states and the
//! parameters, never on which thread runs it or on the other blocks, so the
//! result is the same bits for any [`Par`].

use crate::blocks::run_blocks;
use crate::error::{check_len, FieldError};
use crate::field::{BlockCtx, BlockField};
use crate::launch::LaunchConfig;
use crate::par::Par;
use crate::real::Real;
use crate::stepper::Stepper;
use crate::tableau::{Method, Tableau};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A shared count of the work launches have done, in trajectory-steps, for
/// progress bars: give a clone to [`Launch::progress`], read it from any thread
/// while the launch runs. A launch adds its work (`trajectories · steps`) to
/// [`Progress::total`] when it starts and advances [`Progress::done`] as its
/// blocks step (every 32 steps of a block and at its end), so on success
/// `done == total`. Without one, a launch pays one untaken branch per step.
#[derive(Clone, Debug, Default)]
pub struct Progress(Arc<Counts>);

#[derive(Debug, Default)]
struct Counts {
    done: AtomicU64,
    total: AtomicU64,
}

impl Progress {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }
    /// Work done so far.
    pub fn done(&self) -> u64 {
        self.0.done.load(Ordering::Relaxed)
    }
    /// Work announced so far (by every launch that started).
    pub fn total(&self) -> u64 {
        self.0.total.load(Ordering::Relaxed)
    }
    /// Announces `n` more units of work (for executors other than [`Launch`]).
    pub fn add_total(&self, n: u64) {
        self.0.total.fetch_add(n, Ordering::Relaxed);
    }
    /// Records `n` more units of work done.
    pub fn advance(&self, n: u64) {
        self.0.done.fetch_add(n, Ordering::Relaxed);
    }
}

/// Two handles are equal when they count into the same counter.
impl PartialEq for Progress {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Steps of a block between two reports to a [`Progress`].
const PROGRESS_STRIDE: usize = 32;

/// Steps between two checks for non-finite states, for fields whose faults
/// ignore the state ([`BlockField::faults_ignore_state`]); others are checked
/// after every step.
const FINITE_CHECK_STRIDE: usize = 16;

/// What a launch did.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchReport {
    /// Trajectories integrated (`grid · block`).
    pub trajectories: usize,
    /// Blocks.
    pub blocks: usize,
    /// Steps per trajectory.
    pub steps: usize,
    /// Field evaluations per trajectory (`steps · stages`).
    pub evaluations: usize,
    /// The end time `t0 + steps·dt` (in `f64`).
    pub t_end: f64,
}

/// An integration of a launch over `steps` fixed steps of `dt` from `t0`.
///
/// ```
/// use vgpu_field::{field_fn, Ctx, Launch, LaunchConfig, Method, Par};
/// let f = field_fn(|_t: f32, _h: &[f32; 1], _h0: &[f32; 1], c: &Ctx<()>, dh: &mut [f32; 1]| {
///     dh[0] = c.global() as f32;
/// });
/// let cfg = LaunchConfig::linear(8, 4)?;
/// let mut x = vec![0.0f32; 8];
/// Launch::new(cfg).method(Method::Euler).dt(1.0).steps(2).par(Par::Seq).run(&f, &(), &mut x)?;
/// assert_eq!(x[5], 10.0);
/// # Ok::<(), vgpu_field::FieldError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Launch {
    cfg: LaunchConfig,
    tableau: Tableau,
    t0: f64,
    dt: f64,
    steps: usize,
    par: Par,
    progress: Option<Progress>,
}

impl Launch {
    /// A launch over `cfg` with RK4, `t0 = 0`, `dt = 1`, one step, [`Par::Auto`].
    pub fn new(cfg: LaunchConfig) -> Self {
        Launch {
            cfg,
            tableau: Tableau::rk4(),
            t0: 0.0,
            dt: 1.0,
            steps: 1,
            par: Par::Auto,
            progress: None,
        }
    }
    /// Integrate with a named method.
    pub fn method(mut self, m: Method) -> Self {
        self.tableau = m.tableau();
        self
    }
    /// Integrate with any explicit tableau.
    pub fn tableau(mut self, t: Tableau) -> Self {
        self.tableau = t;
        self
    }
    /// Start time.
    pub fn t0(mut self, t0: f64) -> Self {
        self.t0 = t0;
        self
    }
    /// Step size (validated by [`Launch::run`]).
    pub fn dt(mut self, dt: f64) -> Self {
        self.dt = dt;
        self
    }
    /// Number of steps.
    pub fn steps(mut self, steps: usize) -> Self {
        self.steps = steps;
        self
    }
    /// Parallelism.
    pub fn par(mut self, par: Par) -> Self {
        self.par = par;
        self
    }
    /// Report the work done to `p` as the launch runs (see [`Progress`]).
    pub fn progress(mut self, p: Progress) -> Self {
        self.progress = Some(p);
        self
    }
    /// The launch geometry.
    pub fn config(&self) -> &LaunchConfig {
        &self.cfg
    }

    /// Validates `t0` and `dt` for state type `T`; returns them converted.
    pub(crate) fn times<T: Real>(t0: f64, dt: f64) -> Result<(T, T), FieldError> {
        let dtt = T::from_f64(dt);
        if !(dt.is_finite() && dt > 0.0 && dtt.is_finite() && dtt > T::ZERO) {
            return Err(FieldError::BadStep { dt, ty: T::NAME });
        }
        let t0t = T::from_f64(t0);
        if !(t0.is_finite() && t0t.is_finite()) {
            return Err(FieldError::BadStartTime { t0 });
        }
        Ok((t0t, dtt))
    }

    /// Integrates every trajectory of the launch. `states` holds the initial
    /// states, trajectory-major (`states[i·dim + k]`, `i` the global index), at
    /// least `grid·block·dim` values; on return it holds the final states.
    ///
    /// # Errors
    /// Bad dimensions, `dt ≤ 0` or not finite, `states` (or a parameter buffer,
    /// through [`BlockField::check`]) shorter than the index space, and
    /// [`FieldError::NonFinite`] if a NaN or infinity appears in a state: the
    /// earliest such step, and in it the lowest trajectory index. Blocks where
    /// no NaN appeared still hold their final states; the failing block stops at
    /// the failing step.
    pub fn run<T: Real, F: BlockField<T>>(
        &self,
        field: &F,
        params: &F::Params,
        states: &mut [T],
    ) -> Result<LaunchReport, FieldError> {
        let cfg = self.cfg;
        cfg.validate()?;
        let (t0, dt) = Self::times::<T>(self.t0, self.dt)?;
        let dim = field.dim();
        let n = cfg.total_threads();
        check_len(
            "states",
            states.len(),
            n * dim,
            &format!(
                "{n} trajectories (grid {} × block {}) × {dim} components",
                cfg.grid, cfg.block
            ),
        )?;
        field.check(&cfg, params)?;
        let report = LaunchReport {
            trajectories: n,
            blocks: cfg.num_blocks(),
            steps: self.steps,
            evaluations: self.steps * self.tableau.stages(),
            t_end: self.t0 + self.steps as f64 * self.dt,
        };
        let work = (n * self.steps) as u64;
        if let Some(p) = &self.progress {
            p.add_total(work);
        }
        if dim == 0 {
            if let Some(p) = &self.progress {
                p.advance(work);
            }
            return Ok(report);
        }
        let lanes = cfg.threads_per_block();
        let states = &mut states[..n * dim];
        let job = BlockJob {
            field,
            params,
            cfg,
            tableau: &self.tableau,
            t0,
            dt,
            steps: self.steps,
            progress: self.progress.as_ref(),
        };
        let first_bad = run_blocks(
            self.par,
            states,
            lanes * dim,
            || job.work(),
            |w, b, chunk| job.run_block(w, b, chunk),
        )?
        .into_iter()
        .fold(None, earliest);
        match first_bad {
            None => Ok(report),
            Some(bad) => Err(bad.into_error(&cfg, self.t0, self.dt)),
        }
    }
}

/// Where a NaN or infinity first appeared in a block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NonFiniteAt {
    /// Index of the step after which it was seen (0-based).
    pub step: usize,
    pub trajectory: usize,
    pub component: usize,
    pub value: f64,
}

impl NonFiniteAt {
    pub(crate) fn into_error(self, cfg: &LaunchConfig, t0: f64, dt: f64) -> FieldError {
        let tpb = cfg.threads_per_block();
        FieldError::NonFinite {
            trajectory: self.trajectory,
            block: cfg.grid.delinearize((self.trajectory / tpb) as u64),
            thread: cfg.block.delinearize((self.trajectory % tpb) as u64),
            component: self.component,
            t: t0 + (self.step + 1) as f64 * dt,
            value: self.value,
        }
    }
}

/// The earlier of two findings (by step, then trajectory): a fixed order, so
/// the reported one does not depend on scheduling.
pub(crate) fn earliest(a: Option<NonFiniteAt>, b: Option<NonFiniteAt>) -> Option<NonFiniteAt> {
    match (a, b) {
        (Some(x), Some(y)) => {
            if (y.step, y.trajectory) < (x.step, x.trajectory) {
                Some(y)
            } else {
                Some(x)
            }
        }
        (x, None) => x,
        (None, y) => y,
    }
}

/// The first non-finite value of a structure-of-arrays block: lowest lane, then
/// lowest component.
pub(crate) fn locate_non_finite<T: Real>(
    h: &[T],
    lanes: usize,
    dim: usize,
) -> Option<(usize, usize, f64)> {
    (0..lanes).find_map(|l| {
        (0..dim).find_map(|k| {
            let v = h[k * lanes + l];
            (!v.is_finite()).then(|| (l, k, v.to_f64()))
        })
    })
}

/// Copies trajectory-major states into structure-of-arrays layout.
#[inline]
pub(crate) fn gather_soa<T: Copy>(aos: &[T], soa: &mut [T], lanes: usize, dim: usize) {
    for l in 0..lanes {
        for k in 0..dim {
            soa[k * lanes + l] = aos[l * dim + k];
        }
    }
}

/// Copies structure-of-arrays states back into trajectory-major layout.
#[inline]
pub(crate) fn scatter_soa<T: Copy>(soa: &[T], aos: &mut [T], lanes: usize, dim: usize) {
    for l in 0..lanes {
        for k in 0..dim {
            aos[l * dim + k] = soa[k * lanes + l];
        }
    }
}

struct BlockJob<'a, T, F: BlockField<T> + ?Sized>
where
    T: Real,
{
    field: &'a F,
    params: &'a F::Params,
    cfg: LaunchConfig,
    tableau: &'a Tableau,
    t0: T,
    dt: T,
    steps: usize,
    progress: Option<&'a Progress>,
}

/// One worker's memory: a block's states, initial states, stage buffers and
/// the field's scratch, allocated once and reused for every block it runs.
struct BlockWork<T, S> {
    h: Vec<T>,
    h0: Vec<T>,
    /// The states at the start of the current stride of steps (empty when
    /// every step is checked).
    checkpoint: Vec<T>,
    stepper: Stepper<T>,
    scratch: S,
}

impl<T: Real, F: BlockField<T> + ?Sized> BlockJob<'_, T, F> {
    fn work(&self) -> BlockWork<T, F::Scratch> {
        let lanes = self.cfg.threads_per_block();
        let len = lanes * self.field.dim();
        let batched = self.field.faults_ignore_state();
        BlockWork {
            h: vec![T::ZERO; len],
            h0: vec![T::ZERO; len],
            checkpoint: vec![T::ZERO; if batched { len } else { 0 }],
            stepper: Stepper::new(self.tableau, len),
            scratch: self.field.scratch(lanes),
        }
    }

    #[inline]
    fn run_block(
        &self,
        w: &mut BlockWork<T, F::Scratch>,
        block: usize,
        chunk: &mut [T],
    ) -> Option<NonFiniteAt> {
        let lanes = self.cfg.threads_per_block();
        let dim = self.field.dim();
        let BlockWork {
            h,
            h0,
            checkpoint,
            stepper,
            scratch,
        } = w;
        gather_soa(chunk, h, lanes, dim);
        h0.copy_from_slice(h);
        let ctx = BlockCtx::new_unchecked(&self.cfg, block, self.params);
        let field = self.field;
        let (t0, dt) = (self.t0, self.dt);
        let factored = F::FACTORED && stepper.is_euler();
        let mut step = |n: usize, h: &mut [T]| {
            let t = T::from_usize(n) * dt + t0;
            if factored {
                stepper.step_factored(t, dt, h, |t, y, u, v| {
                    field.eval_block_factored(t, y, h0, &ctx, scratch, u, v)
                });
            } else {
                stepper.step(t, dt, h, |t, y, dy| {
                    field.eval_block(t, y, h0, &ctx, scratch, dy)
                });
            }
        };
        // States are checked for NaN and infinities after every step, or,
        // for a field whose evaluation reports nothing that depends on the
        // state (`faults_ignore_state`), after every stride of steps: when a
        // stride ends non-finite it is replayed from its checkpoint step by
        // step, which finds the same step and trajectory (the same
        // operations give the same bits) and leaves the block there.
        let stride = if checkpoint.is_empty() {
            1
        } else {
            FINITE_CHECK_STRIDE
        };
        let mut bad = None;
        let mut unreported = 0;
        let mut n = 0;
        while n < self.steps {
            let end = (n + stride).min(self.steps);
            if stride > 1 {
                checkpoint.copy_from_slice(h);
            }
            for m in n..end {
                step(m, h);
            }
            if !T::all_finite(h) {
                let mut first = end - 1;
                if stride > 1 {
                    h.copy_from_slice(checkpoint);
                    first = (n..end)
                        .find(|&m| {
                            step(m, h);
                            !T::all_finite(h)
                        })
                        .unwrap_or(end - 1);
                }
                if let Some((lane, component, value)) = locate_non_finite(h, lanes, dim) {
                    bad = Some(NonFiniteAt {
                        step: first,
                        trajectory: ctx.first() + lane,
                        component,
                        value,
                    });
                }
                break;
            }
            if let Some(p) = self.progress {
                unreported += lanes * (end - n);
                if end % PROGRESS_STRIDE < stride {
                    p.advance(unreported as u64);
                    unreported = 0;
                }
            }
            n = end;
        }
        if let Some(p) = self.progress {
            p.advance(unreported as u64);
        }
        scatter_soa(h, chunk, lanes, dim);
        bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{field_fn, Ctx};

    #[test]
    fn progress_counts_every_trajectory_step() {
        let f = field_fn(
            |_t: f32, h: &[f32; 1], _h0: &[f32; 1], _c: &Ctx<()>, dh: &mut [f32; 1]| dh[0] = -h[0],
        );
        let cfg = LaunchConfig::linear(1000, 64).unwrap();
        let p = Progress::new();
        let mut x = vec![1.0f32; cfg.total_threads()];
        for par in [Par::Seq, Par::Rayon(3)] {
            Launch::new(cfg)
                .dt(0.01)
                .steps(70)
                .par(par)
                .progress(p.clone())
                .run(&f, &(), &mut x)
                .unwrap();
        }
        // 1024 trajectories (16 blocks of 64) × 70 steps, twice.
        assert_eq!(p.total(), 2 * 1024 * 70);
        assert_eq!(p.done(), p.total());
        // Without a counter nothing changes in the result.
        let mut y = vec![1.0f32; cfg.total_threads()];
        let mut z = y.clone();
        let launch = Launch::new(cfg).dt(0.01).steps(70);
        launch.clone().run(&f, &(), &mut y).unwrap();
        launch
            .progress(Progress::new())
            .run(&f, &(), &mut z)
            .unwrap();
        assert_eq!(y, z);
    }

    /// A field whose `faults_ignore_state` is chosen, delegating to `F`.
    struct Strided<'a, F>(&'a F, bool);

    impl<T: Real, F: BlockField<T>> BlockField<T> for Strided<'_, F> {
        type Params = F::Params;
        type Scratch = F::Scratch;
        fn dim(&self) -> usize {
            self.0.dim()
        }
        fn scratch(&self, lanes: usize) -> F::Scratch {
            self.0.scratch(lanes)
        }
        fn faults_ignore_state(&self) -> bool {
            self.1
        }
        fn eval_block(
            &self,
            t: T,
            h: &[T],
            h0: &[T],
            ctx: &BlockCtx<'_, F::Params>,
            scratch: &mut F::Scratch,
            dh: &mut [T],
        ) {
            self.0.eval_block(t, h, h0, ctx, scratch, dh)
        }
    }

    /// Checking states once per stride (and replaying the stride that ends
    /// non-finite) reports what checking every step reports, leaves the
    /// failing block at the same step, and counts progress alike.
    #[test]
    fn strided_finite_checks_report_the_step_by_step_result() {
        // Trajectory 70 turns NaN at step 37 (t = 0.37 at its start), 900 at
        // step 37 too, 3 at step 50: the error names 70, and blocks 1 and 14
        // stop at step 37, block 0 at step 50.
        let f = field_fn(
            |t: f64, h: &[f64; 2], _h0: &[f64; 2], c: &Ctx<()>, dh: &mut [f64; 2]| {
                let s = (t * 100.0).round() as usize;
                let g = c.global();
                dh[0] = -h[0];
                dh[1] = 0.5;
                if (g == 70 || g == 900) && s == 37 || g == 3 && s == 50 {
                    dh[1] = f64::NAN;
                }
            },
        );
        let cfg = LaunchConfig::linear(1000, 64).unwrap();
        let launch = Launch::new(cfg).dt(0.01).steps(70).method(Method::Rk4);
        let run = |strided: bool, par: Par| {
            let mut x = vec![1.0f64; 2 * cfg.total_threads()];
            let r = launch
                .clone()
                .par(par)
                .run(&Strided(&f, strided), &(), &mut x);
            (r.map(|_| ()).unwrap_err().to_string(), x)
        };
        for par in [Par::Seq, Par::Rayon(3)] {
            let (e1, x1) = run(false, par);
            let (e16, x16) = run(true, par);
            assert!(e1.contains("trajectory 70 "), "{e1}");
            assert_eq!(e1, e16);
            assert_eq!(x1.len(), x16.len());
            for (a, b) in x1.iter().zip(&x16) {
                assert!(a.to_bits() == b.to_bits(), "{a} {b}");
            }
        }
        // No NaN: same states and every step counted.
        let g = field_fn(
            |_t: f64, h: &[f64; 1], _h0: &[f64; 1], _c: &Ctx<()>, dh: &mut [f64; 1]| dh[0] = -h[0],
        );
        let p = Progress::new();
        let mut a = vec![1.0f64; cfg.total_threads()];
        let mut b = a.clone();
        launch
            .clone()
            .run(&Strided(&g, false), &(), &mut a)
            .unwrap();
        launch
            .clone()
            .progress(p.clone())
            .run(&Strided(&g, true), &(), &mut b)
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(p.done(), 1024 * 70);
    }
}
