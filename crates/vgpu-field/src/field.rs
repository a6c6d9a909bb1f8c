//! Fields: the batched [`BlockField`] the executor runs, the per-trajectory
//! [`Field`] users write, the adapter [`PerTrajectory`] between them, closures
//! through [`field_fn`], and the contexts [`BlockCtx`] / [`Ctx`].
//!
//! A field is `F(t, h, h0, ctx) → dh/dt`: `h` the trajectory's state, `h0` its
//! initial state, `ctx` where it runs (thread and block index, dimensions) and
//! the kernel's parameters (scalars, read-only buffers).
//!
//! **Layout.** A block's states are held in structure-of-arrays layout:
//! component `k` of lane `l` is `h[k·lanes + l]`, so the same component of all
//! lanes is contiguous and a loop over lanes vectorises.

use crate::error::FieldError;
use crate::launch::{Dim3, LaunchConfig};
use crate::real::Real;
use std::marker::PhantomData;

/// Where a block runs: its index (the basin seed), the launch dimensions, the
/// range of global trajectory indices it holds, and the kernel's parameters.
#[derive(Debug)]
pub struct BlockCtx<'a, P: ?Sized> {
    cfg: LaunchConfig,
    block_linear: usize,
    block_idx: Dim3,
    params: &'a P,
}

// Manual impls: `P` itself need not be `Clone`.
impl<P: ?Sized> Clone for BlockCtx<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: ?Sized> Copy for BlockCtx<'_, P> {}

impl<'a, P: ?Sized> BlockCtx<'a, P> {
    /// The context of block `block_linear` (linear block index) of launch `cfg`.
    ///
    /// # Errors
    /// The launch's own validation errors, or [`FieldError::Invalid`] if
    /// `block_linear` is not a block of `cfg`.
    pub fn new(cfg: &LaunchConfig, block_linear: usize, params: &'a P) -> Result<Self, FieldError> {
        cfg.validate()?;
        if block_linear >= cfg.num_blocks() {
            return Err(FieldError::Invalid {
                context: "block context".into(),
                why: format!(
                    "block {block_linear} is outside grid {} ({} blocks)",
                    cfg.grid,
                    cfg.num_blocks()
                ),
            });
        }
        Ok(Self::new_unchecked(cfg, block_linear, params))
    }

    pub(crate) fn new_unchecked(cfg: &LaunchConfig, block_linear: usize, params: &'a P) -> Self {
        BlockCtx {
            cfg: *cfg,
            block_linear,
            block_idx: cfg.grid.delinearize(block_linear as u64),
            params,
        }
    }

    /// The block's index in the grid (CUDA `blockIdx`).
    #[inline(always)]
    pub fn block_idx(&self) -> Dim3 {
        self.block_idx
    }
    /// The block's linear index (x fastest).
    #[inline(always)]
    pub fn block_linear(&self) -> usize {
        self.block_linear
    }
    /// Trajectories per block on each axis (CUDA `blockDim`).
    #[inline(always)]
    pub fn block_dim(&self) -> Dim3 {
        self.cfg.block
    }
    /// Blocks on each axis (CUDA `gridDim`).
    #[inline(always)]
    pub fn grid_dim(&self) -> Dim3 {
        self.cfg.grid
    }
    /// The launch.
    #[inline(always)]
    pub fn launch(&self) -> &LaunchConfig {
        &self.cfg
    }
    /// Number of trajectories (lanes) in the block.
    #[inline(always)]
    pub fn lanes(&self) -> usize {
        self.cfg.threads_per_block()
    }
    /// Global index of the block's lane 0; lane `l` is trajectory `first() + l`.
    #[inline(always)]
    pub fn first(&self) -> usize {
        self.block_linear * self.cfg.threads_per_block()
    }
    /// The kernel's parameters.
    #[inline(always)]
    pub fn params(&self) -> &'a P {
        self.params
    }
    /// The context of lane `lane` of this block.
    #[inline(always)]
    pub fn thread(&self, lane: usize) -> Ctx<'_, 'a, P> {
        Ctx { block: self, lane }
    }
}

/// Where one trajectory runs: a lane of a [`BlockCtx`]. Indices are computed on
/// demand, so a field that does not read them pays nothing for them.
#[derive(Debug)]
pub struct Ctx<'b, 'a, P: ?Sized> {
    block: &'b BlockCtx<'a, P>,
    lane: usize,
}

impl<P: ?Sized> Clone for Ctx<'_, '_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: ?Sized> Copy for Ctx<'_, '_, P> {}

impl<'b, 'a, P: ?Sized> Ctx<'b, 'a, P> {
    /// The trajectory's index in its block (CUDA `threadIdx`).
    #[inline(always)]
    pub fn thread_idx(&self) -> Dim3 {
        self.block.cfg.block.delinearize(self.lane as u64)
    }
    /// The linear index in the block (the lane).
    #[inline(always)]
    pub fn lane(&self) -> usize {
        self.lane
    }
    /// The global linear trajectory index, `block_linear · blockDim.count() + lane`.
    #[inline(always)]
    pub fn global(&self) -> usize {
        self.block.first() + self.lane
    }
    /// The block's index (CUDA `blockIdx`), the trajectory's basin seed.
    #[inline(always)]
    pub fn block_idx(&self) -> Dim3 {
        self.block.block_idx
    }
    /// CUDA `blockDim`.
    #[inline(always)]
    pub fn block_dim(&self) -> Dim3 {
        self.block.cfg.block
    }
    /// CUDA `gridDim`.
    #[inline(always)]
    pub fn grid_dim(&self) -> Dim3 {
        self.block.cfg.grid
    }
    /// The kernel's parameters.
    #[inline(always)]
    pub fn params(&self) -> &'a P {
        self.block.params
    }
    /// The block this lane belongs to.
    #[inline(always)]
    pub fn block(&self) -> &'b BlockCtx<'a, P> {
        self.block
    }
}

/// A field evaluated for a whole block at once: the executor's one entry point.
///
/// `h`, `h0` and `dh` hold `dim() × lanes` values in structure-of-arrays layout
/// (`h[k·lanes + l]`). The kernel-IR evaluator and the per-trajectory adapter
/// [`PerTrajectory`] both implement it.
pub trait BlockField<T: Real>: Sync {
    /// The kernel's parameters (scalars, read-only buffers), shared by all
    /// trajectories; reached through the context.
    type Params: ?Sized + Sync;
    /// Working memory of one block evaluation (registers, temporaries), built
    /// once per block by [`BlockField::scratch`] and reused at every step.
    type Scratch: Send;
    /// Whether [`BlockField::eval_block_factored`] gives the field as an exact
    /// product `u ⊙ v`; Euler then applies it with one rounding (fma).
    const FACTORED: bool = false;

    /// Components of one trajectory's state.
    fn dim(&self) -> usize;

    /// Fresh scratch for blocks of `lanes` trajectories.
    fn scratch(&self, lanes: usize) -> Self::Scratch;

    /// Whether evaluating the field does nothing but write `dh` apart from
    /// what the launch alone decides: no fault, panic or record whose
    /// occurrence depends on the states or the time (an index computed from
    /// them, say). Then steps run past the one where a state became NaN or
    /// infinite change nothing the launch reports, and the executor checks
    /// for non-finite states once per stride of steps (replaying a stride
    /// that ends non-finite step by step) instead of after every step. The
    /// default, `false`, checks every step.
    fn faults_ignore_state(&self) -> bool {
        false
    }

    /// Checks the parameters against the launch (buffer lengths against the
    /// index space), before anything runs.
    ///
    /// # Errors
    /// Typically [`FieldError::BufferTooShort`].
    fn check(&self, cfg: &LaunchConfig, params: &Self::Params) -> Result<(), FieldError> {
        let _ = (cfg, params);
        Ok(())
    }

    /// Writes `dh/dt` of every lane of the block at time `t` into `dh`.
    fn eval_block(
        &self,
        t: T,
        h: &[T],
        h0: &[T],
        ctx: &BlockCtx<'_, Self::Params>,
        scratch: &mut Self::Scratch,
        dh: &mut [T],
    );

    /// The field as a product `dh/dt = u ⊙ v` (component-wise), for fields whose
    /// value is a product such as `A[i,⌊t⌋]·B[⌊t⌋,j]`. Only called when
    /// [`BlockField::FACTORED`] is true; the default writes `u = F`, `v = 1`.
    #[allow(clippy::too_many_arguments)]
    fn eval_block_factored(
        &self,
        t: T,
        h: &[T],
        h0: &[T],
        ctx: &BlockCtx<'_, Self::Params>,
        scratch: &mut Self::Scratch,
        u: &mut [T],
        v: &mut [T],
    ) {
        self.eval_block(t, h, h0, ctx, scratch, u);
        v.fill(T::ONE);
    }
}

/// A field written per trajectory, with a state of `D` components.
///
/// Run it through [`PerTrajectory`] (or build one from a closure with
/// [`field_fn`]). With `D` known at compile time the adapter's loop over lanes
/// inlines `eval` and vectorises.
pub trait Field<T: Real, const D: usize>: Sync {
    /// The kernel's parameters, reached through `ctx.params()`.
    type Params: ?Sized + Sync;
    /// Whether [`Field::eval_factored`] gives the field as an exact product.
    const FACTORED: bool = false;

    /// Writes `dh/dt` at `(t, h)` for the trajectory `ctx` whose initial state is `h0`.
    fn eval(&self, t: T, h: &[T; D], h0: &[T; D], ctx: &Ctx<'_, '_, Self::Params>, dh: &mut [T; D]);

    /// The field as a product `u ⊙ v` (see [`BlockField::eval_block_factored`]).
    fn eval_factored(
        &self,
        t: T,
        h: &[T; D],
        h0: &[T; D],
        ctx: &Ctx<'_, '_, Self::Params>,
        u: &mut [T; D],
        v: &mut [T; D],
    ) {
        self.eval(t, h, h0, ctx, u);
        *v = [T::ONE; D];
    }

    /// Checks the parameters against the launch (see [`BlockField::check`]).
    ///
    /// # Errors
    /// Typically [`FieldError::BufferTooShort`].
    fn check(&self, cfg: &LaunchConfig, params: &Self::Params) -> Result<(), FieldError> {
        let _ = (cfg, params);
        Ok(())
    }
}

/// Runs a per-trajectory [`Field`] as a [`BlockField`]: a loop over the lanes
/// that gathers each lane's state from the structure-of-arrays block.
#[derive(Debug, Clone, Copy)]
pub struct PerTrajectory<F, const D: usize>(pub F);

impl<F, const D: usize> PerTrajectory<F, D> {
    /// Wraps `field`.
    pub fn new<T: Real>(field: F) -> Self
    where
        F: Field<T, D>,
    {
        PerTrajectory(field)
    }
}

impl<T: Real, const D: usize, F: Field<T, D>> BlockField<T> for PerTrajectory<F, D> {
    type Params = F::Params;
    type Scratch = ();
    const FACTORED: bool = F::FACTORED;

    fn dim(&self) -> usize {
        D
    }

    fn scratch(&self, _lanes: usize) -> Self::Scratch {}

    fn check(&self, cfg: &LaunchConfig, params: &Self::Params) -> Result<(), FieldError> {
        self.0.check(cfg, params)
    }

    #[inline]
    fn eval_block(
        &self,
        t: T,
        h: &[T],
        h0: &[T],
        ctx: &BlockCtx<'_, Self::Params>,
        _scratch: &mut (),
        dh: &mut [T],
    ) {
        let lanes = ctx.lanes();
        let h: [&[T]; D] = std::array::from_fn(|k| &h[k * lanes..][..lanes]);
        let h0: [&[T]; D] = std::array::from_fn(|k| &h0[k * lanes..][..lanes]);
        let out: [&mut [T]; D] = split_components(dh, lanes);
        for l in 0..lanes {
            let hl: [T; D] = std::array::from_fn(|k| h[k][l]);
            let h0l: [T; D] = std::array::from_fn(|k| h0[k][l]);
            let mut d = [T::ZERO; D];
            self.0.eval(t, &hl, &h0l, &ctx.thread(l), &mut d);
            for k in 0..D {
                out[k][l] = d[k];
            }
        }
    }

    fn eval_block_factored(
        &self,
        t: T,
        h: &[T],
        h0: &[T],
        ctx: &BlockCtx<'_, Self::Params>,
        _scratch: &mut (),
        u: &mut [T],
        v: &mut [T],
    ) {
        let lanes = ctx.lanes();
        let uo: [&mut [T]; D] = split_components(u, lanes);
        let vo: [&mut [T]; D] = split_components(v, lanes);
        for l in 0..lanes {
            let hl: [T; D] = std::array::from_fn(|k| h[k * lanes + l]);
            let h0l: [T; D] = std::array::from_fn(|k| h0[k * lanes + l]);
            let (mut ul, mut vl) = ([T::ZERO; D], [T::ONE; D]);
            self.0
                .eval_factored(t, &hl, &h0l, &ctx.thread(l), &mut ul, &mut vl);
            for k in 0..D {
                uo[k][l] = ul[k];
                vo[k][l] = vl[k];
            }
        }
    }
}

/// Splits a structure-of-arrays slice into its `D` component slices of `lanes` values.
fn split_components<T, const D: usize>(mut s: &mut [T], lanes: usize) -> [&mut [T]; D] {
    std::array::from_fn(|_| {
        let (head, tail) = std::mem::take(&mut s).split_at_mut(lanes);
        s = tail;
        head
    })
}

/// A [`Field`] made from a closure `|t, h, h0, ctx, dh|` (parameters `()`:
/// closures capture what they read).
pub struct FnField<F, T> {
    f: F,
    _t: PhantomData<fn(T) -> T>,
}

impl<F, T, const D: usize> Field<T, D> for FnField<F, T>
where
    T: Real,
    F: Fn(T, &[T; D], &[T; D], &Ctx<'_, '_, ()>, &mut [T; D]) + Sync,
{
    type Params = ();
    #[inline(always)]
    fn eval(&self, t: T, h: &[T; D], h0: &[T; D], ctx: &Ctx<'_, '_, ()>, dh: &mut [T; D]) {
        (self.f)(t, h, h0, ctx, dh)
    }
}

/// A block field from a per-trajectory closure with a `D`-component state:
///
/// ```
/// use vgpu_field::{field_fn, Ctx};
/// // dh/dt = sin(h0) - h: every trajectory relaxes to sin of its start.
/// let relax = field_fn(|_t: f64, h: &[f64; 1], h0: &[f64; 1], _c: &Ctx<()>, dh: &mut [f64; 1]| {
///     dh[0] = h0[0].sin() - h[0];
/// });
/// # let _ = relax;
/// ```
pub fn field_fn<T, const D: usize, F>(f: F) -> PerTrajectory<FnField<F, T>, D>
where
    T: Real,
    F: Fn(T, &[T; D], &[T; D], &Ctx<'_, '_, ()>, &mut [T; D]) + Sync,
{
    PerTrajectory(FnField { f, _t: PhantomData })
}
