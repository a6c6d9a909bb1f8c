//! The right-hand side an adaptive ensemble integrates: [`OdeRhs`], the
//! per-trajectory context [`Traj`], closures through [`rhs_fn`], and
//! [`FieldRhs`], which runs any per-trajectory [`Field`] (the fixed-step
//! executor's interface) through the adaptive driver.
//!
//! **Why a trait of its own.** [`Field::eval`] receives a [`Ctx`], which is a
//! lane of a block of a `<<<grid, block>>>` launch, and the kernel's parameters
//! shared by all trajectories. An adaptive ensemble has no blocks (every
//! trajectory has its own step size and time, so lanes cannot move together),
//! and scientists hand it parameters as an `(N, P)` array. [`OdeRhs`] is the
//! per-trajectory shape of the same idea, `dy/dt = f(t, y, p)`, with the
//! trajectory's index, initial state and parameter row in a [`Traj`];
//! [`FieldRhs`] adapts a [`Field`] to it by giving trajectory `i` the lane
//! `i mod blockDim` of block `i / blockDim` of a launch the caller names, so
//! the same field value runs through [`crate::Launch`] and through
//! [`crate::adaptive::AdaptiveEnsemble`].

use crate::adaptive::error::AdaptiveError;
use crate::adaptive::events::EventSpec;
use crate::field::{BlockCtx, Field};
use crate::launch::LaunchConfig;
use crate::real::Real;
use std::marker::PhantomData;

/// Where one trajectory of an adaptive ensemble runs: its index, its initial
/// state and its row of the `(N, P)` parameter array.
#[derive(Debug, Clone, Copy)]
pub struct Traj<'a, T, const D: usize> {
    /// The trajectory's index in the ensemble (`0..N`).
    pub index: usize,
    /// Its initial state.
    pub y0: &'a [T; D],
    /// Its parameters (row `index` of the parameter array, `P` values).
    pub p: &'a [T],
}

/// A right-hand side `dy/dt = f(t, y, p)` for states of `D` components,
/// evaluated one trajectory at a time.
///
/// A right-hand side that needs working memory (an interpreter's registers,
/// say) names it as its [`OdeRhs::Scratch`]: the driver makes one per
/// trajectory with [`OdeRhs::scratch`] and hands it to every evaluation of that
/// trajectory. Closures and [`FieldRhs`] need none (`()`).
pub trait OdeRhs<T: Real, const D: usize>: Sync {
    /// Working memory of one trajectory's evaluations.
    type Scratch;

    /// Fresh working memory for one trajectory.
    fn scratch(&self) -> Self::Scratch;

    /// Writes `dy/dt` at `(t, y)` of trajectory `traj` into `dy`, using the
    /// trajectory's working memory `scratch`.
    fn rhs(
        &self,
        t: T,
        y: &[T; D],
        traj: &Traj<'_, T, D>,
        scratch: &mut Self::Scratch,
        dy: &mut [T; D],
    );

    /// Checks the right-hand side against the ensemble (`n` trajectories, `p`
    /// parameters each) before anything runs.
    ///
    /// # Errors
    /// Whatever the right-hand side cannot run with.
    fn check(&self, n: usize, p: usize) -> Result<(), AdaptiveError> {
        let _ = (n, p);
        Ok(())
    }

    /// Whether [`OdeRhs::jacobian`] gives the Jacobian (the stiff method
    /// needs it). `false` by default.
    fn has_jacobian(&self) -> bool {
        false
    }

    /// Writes `∂f_i/∂y_j` into `jac[i][j]` and `∂f_i/∂t` into `ft[i]` at
    /// `(t, y)` (only called when [`OdeRhs::has_jacobian`]).
    fn jacobian(
        &self,
        t: T,
        y: &[T; D],
        traj: &Traj<'_, T, D>,
        scratch: &mut Self::Scratch,
        jac: &mut [[T; D]; D],
        ft: &mut [T; D],
    ) {
        let _ = (t, y, traj, scratch, jac, ft);
    }

    /// The right-hand side's events (none by default): see
    /// [`crate::adaptive::events`].
    fn events(&self) -> &[EventSpec] {
        &[]
    }

    /// Writes `g_e(t, y)` of every event `e` into `g` (one value per entry of
    /// [`OdeRhs::events`]).
    fn event_values(
        &self,
        t: T,
        y: &[T; D],
        traj: &Traj<'_, T, D>,
        scratch: &mut Self::Scratch,
        g: &mut [T],
    ) {
        let _ = (t, y, traj, scratch, g);
    }

    /// Applies the jumps of event `event` at `(t, y)` to `y` (every jump reads
    /// the state before any of them).
    fn apply_event(
        &self,
        event: usize,
        t: T,
        y: &mut [T; D],
        traj: &Traj<'_, T, D>,
        scratch: &mut Self::Scratch,
    ) {
        let _ = (event, t, y, traj, scratch);
    }
}

/// An [`OdeRhs`] made from a closure `|t, y, p, dy|` (see [`rhs_fn`]).
pub struct RhsFn<F, T> {
    f: F,
    _t: PhantomData<fn(T) -> T>,
}

impl<F, T, const D: usize> OdeRhs<T, D> for RhsFn<F, T>
where
    T: Real,
    F: Fn(T, &[T; D], &[T], &mut [T; D]) + Sync,
{
    type Scratch = ();

    #[inline(always)]
    fn scratch(&self) {}

    #[inline(always)]
    fn rhs(&self, t: T, y: &[T; D], traj: &Traj<'_, T, D>, _: &mut (), dy: &mut [T; D]) {
        (self.f)(t, y, traj.p, dy)
    }
}

/// A right-hand side from a closure `|t, y, p, dy|`, `p` the trajectory's
/// parameter row:
///
/// ```
/// use vgpu_field::adaptive::rhs_fn;
/// // y' = p0 · y
/// let growth = rhs_fn(|_t: f64, y: &[f64; 1], p: &[f64], dy: &mut [f64; 1]| dy[0] = p[0] * y[0]);
/// # let _ = growth;
/// ```
pub fn rhs_fn<T, const D: usize, F>(f: F) -> RhsFn<F, T>
where
    T: Real,
    F: Fn(T, &[T; D], &[T], &mut [T; D]) + Sync,
{
    RhsFn { f, _t: PhantomData }
}

/// Runs a per-trajectory [`Field`] as an [`OdeRhs`]: trajectory `i` is lane
/// `i mod blockDim` of block `i / blockDim` of the launch `cfg`, the field's
/// parameters are the shared `params` (reached through `ctx.params()`, as in
/// [`crate::Launch`]), and `h0` is the trajectory's initial state. The
/// ensemble's per-trajectory parameter rows are not passed to the field.
#[derive(Debug)]
pub struct FieldRhs<'a, F, P: ?Sized> {
    field: &'a F,
    params: &'a P,
    cfg: LaunchConfig,
}

impl<F, P: ?Sized> Clone for FieldRhs<'_, F, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F, P: ?Sized> Copy for FieldRhs<'_, F, P> {}

impl<'a, F, P: ?Sized> FieldRhs<'a, F, P> {
    /// `field` with its parameters, trajectories laid out as the lanes of `cfg`
    /// (whose `grid · block` must equal the ensemble's `N`).
    pub fn new(field: &'a F, params: &'a P, cfg: LaunchConfig) -> Self {
        FieldRhs { field, params, cfg }
    }
    /// The launch the trajectories are laid out on.
    pub fn config(&self) -> &LaunchConfig {
        &self.cfg
    }
}

impl<T, const D: usize, F, P> OdeRhs<T, D> for FieldRhs<'_, F, P>
where
    T: Real,
    F: Field<T, D, Params = P>,
    P: ?Sized + Sync,
{
    type Scratch = ();

    #[inline(always)]
    fn scratch(&self) {}

    #[inline(always)]
    fn rhs(&self, t: T, y: &[T; D], traj: &Traj<'_, T, D>, _: &mut (), dy: &mut [T; D]) {
        let tpb = self.cfg.threads_per_block();
        let block = BlockCtx::new_unchecked(&self.cfg, traj.index / tpb, self.params);
        self.field
            .eval(t, y, traj.y0, &block.thread(traj.index % tpb), dy);
    }

    fn check(&self, n: usize, _p: usize) -> Result<(), AdaptiveError> {
        self.cfg.validate()?;
        if self.cfg.total_threads() != n {
            return Err(AdaptiveError::ShapeMismatch {
                what: "launch of the field",
                got: self.cfg.total_threads(),
                expected: format!(
                    "one lane per trajectory: grid {} × block {} must hold N = {n}",
                    self.cfg.grid, self.cfg.block
                ),
            });
        }
        self.field.check(&self.cfg, self.params)?;
        Ok(())
    }
}
