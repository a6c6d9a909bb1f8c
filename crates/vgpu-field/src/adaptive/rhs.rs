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
use crate::adaptive::tableaus::ErkTableau;
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

    /// Attempts a whole step of an explicit pair at once, if this right-hand
    /// side can (a compiled `.field` kernel can: all stages, the combinations
    /// and the error norm as one native function, the state in registers).
    ///
    /// `None` (the default) means it cannot for `step.tableau`: the driver
    /// then evaluates the stages one [`OdeRhs::rhs`] call at a time. `Some(err)`
    /// means it wrote stages `1..S` into `step.k` (`step.k[0]` holds
    /// `f(t, y)` on entry), the new state into `step.y_new`, and returned the
    /// error norm, with exactly the arithmetic and operation order the driver
    /// documents (`crate::adaptive::erk`; [`crate::adaptive::error_norm`]), so
    /// that both ways give the same bits.
    fn erk_attempt(
        &self,
        step: &mut ErkAttempt<'_, T, D>,
        traj: &Traj<'_, T, D>,
        scratch: &mut Self::Scratch,
    ) -> Option<T> {
        let _ = (step, traj, scratch);
        None
    }

    /// Whether [`OdeRhs::erk_attempt_lanes`] can attempt [`ERK_LANES`]
    /// trajectories' whole steps of `tableau` at once (`false`, the default:
    /// it cannot).
    fn erk_lanes(&self, tableau: TableauId) -> bool {
        let _ = tableau;
        false
    }

    /// Attempts the whole steps of [`ERK_LANES`] trajectories at once, each
    /// exactly as [`OdeRhs::erk_attempt`] would (same writes, same bits),
    /// writing each lane's error norm into its [`ErkLane::err`]. The lanes
    /// share their tolerances. Returns `false` (the default) if it cannot:
    /// the driver then attempts them one at a time.
    fn erk_attempt_lanes(&self, lanes: &mut [ErkLane<'_, '_, T, D>; ERK_LANES]) -> bool {
        let _ = lanes;
        false
    }
}

/// Which explicit pair a step attempt is of: its name and a hash of every
/// coefficient (nodes, `a`, `b`, `b̂`, FSAL), so that a whole-step function
/// compiled for one tableau is never run for another of the same name. Two
/// ids are equal when their hashes are (the name is for messages; the
/// comparison is one integer, made once per step attempt).
#[derive(Debug, Clone, Copy)]
pub struct TableauId {
    /// The tableau's name.
    pub name: &'static str,
    /// FNV-1a over the stage count, the FSAL flag and the bits of `c`, `a`,
    /// `b` and `b̂`, in that order.
    pub hash: u64,
}

impl PartialEq for TableauId {
    #[inline]
    fn eq(&self, other: &TableauId) -> bool {
        self.hash == other.hash
    }
}
impl Eq for TableauId {}
impl std::hash::Hash for TableauId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.hash.hash(state);
    }
}

impl TableauId {
    /// The identity of `tab`.
    pub fn of<const S: usize>(tab: &ErkTableau<S>) -> TableauId {
        let words = [S as u64, u64::from(tab.fsal)]
            .into_iter()
            .chain(tab.c.iter().map(|v| v.to_bits()))
            .chain(tab.a.iter().flatten().map(|v| v.to_bits()))
            .chain(tab.b.iter().map(|v| v.to_bits()))
            .chain(tab.b_hat.iter().map(|v| v.to_bits()));
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        for w in words {
            for byte in w.to_le_bytes() {
                hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        TableauId {
            name: tab.name,
            hash,
        }
    }
}

/// One step attempt of an explicit pair handed to [`OdeRhs::erk_attempt`].
#[derive(Debug)]
pub struct ErkAttempt<'s, T, const D: usize> {
    /// The pair.
    pub tableau: TableauId,
    /// The step's start.
    pub t: T,
    /// The step.
    pub h: T,
    /// The state at the start.
    pub y: &'s [T; D],
    /// The stages, one row each (`S` rows): row 0 is `f(t, y)` on entry, the
    /// others are written.
    pub k: &'s mut [[T; D]],
    /// Absolute tolerance per component.
    pub atol: &'s [T; D],
    /// Relative tolerance per component.
    pub rtol: &'s [T; D],
    /// Where the new state is written.
    pub y_new: &'s mut [T; D],
}

/// Trajectories whose step attempts [`OdeRhs::erk_attempt_lanes`] makes at
/// once. A compiled `.field` kernel interleaves their stages in one native
/// function: one trajectory's step is a chain of dependent operations, and
/// independent chains side by side keep the core's execution units busy.
pub const ERK_LANES: usize = 4;

/// One lane of [`OdeRhs::erk_attempt_lanes`]: a trajectory's step attempt.
pub struct ErkLane<'s, 't, T, const D: usize> {
    /// The attempt.
    pub step: ErkAttempt<'s, T, D>,
    /// The trajectory.
    pub traj: &'s Traj<'t, T, D>,
    /// The error norm (written).
    pub err: T,
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
