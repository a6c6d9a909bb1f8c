//! Adaptive ensembles of `.field` kernels on the CPU (issue 13): an unphased
//! kernel as the adaptive driver's right-hand side ([`IrRhs`]), and
//! [`run_adaptive_cpu`], which integrates `n` trajectories of it with any
//! built-in embedded pair ([`vgpu_field::adaptive::AdaptiveEnsemble`]).
//!
//! **One trajectory at a time.** Every trajectory of an adaptive ensemble has
//! its own time and step size, so lanes never move together: trajectory `i`
//! runs as the single lane of block `i` of a launch of `n` blocks of one lane
//! (`i = bid = i`, `tid = 0`, `bdim = 1`, `gdim = n`), evaluated by
//! [`IrField`]'s own column evaluator (a block of one lane), with its own
//! registers ([`IrScratch`], one per trajectory). Buffer reads the kernel
//! indexes by `i` (`rho[i]`) are hoisted once per trajectory.
//!
//! **Native code.** With [`Engine::Jit`] (the default) the field and its
//! derived kernels are compiled by [`crate::jit`] into one native function
//! each, called once per stage with the trajectory's state; the column
//! evaluator stays the reference ([`Engine::Eval`]) and the fallback for
//! what the JIT cannot compile. Both give the same bits. For an explicit
//! pair, [`IrRhs::whole_steps`] also compiles the whole step attempt (all
//! stages, the new state and the error norm) into one native function
//! ([`crate::jit`]'s `step.rs`), which the driver calls through
//! [`OdeRhs::erk_attempt`] in place of one call per stage; same bits again.
//!
//! **Runtime dimension.** The driver's states are `[T; D]` with `D` known at
//! compile time (its Rust-closure path keeps its states in registers); a
//! kernel's dimension is known at run time. [`run_adaptive_cpu`] dispatches
//! over `D = 1..=`[`MAX_ADAPTIVE_STATES`] to the monomorphised driver, so a
//! `.field` kernel and a Rust closure run through the same Runge–Kutta core
//! and, for the same arithmetic, give the same bits.

use crate::args::{Args, Buffer};
use crate::derived::Derived;
use crate::error::IrError;
use crate::field::{IrField, IrFloat, IrScratch};
use crate::jit::{Engine, NotCompilable};
use crate::kernel::{Kernel, Update};
use crate::slice::Slice;
use crate::types::ScalarType;
use rayon::prelude::*;
use vgpu_field::adaptive::rhs::{ErkAttempt, ErkLane, TableauId, ERK_LANES};
use vgpu_field::adaptive::{
    AdaptiveEnsemble, AdaptiveError, AdaptiveMethod, EnsembleProblem, EnsembleSolution, EventSpec,
    OdeRhs, Traj, TrajectoryStats,
};
use vgpu_field::{BlockCtx, BlockField, LaunchConfig, Par};

/// The most state components an adaptive `.field` ensemble may have (the
/// driver is monomorphised for `D = 1..=16`).
pub const MAX_ADAPTIVE_STATES: usize = 16;

/// What an adaptive `.field` ensemble refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AdaptiveIrError {
    /// The kernel, its arguments, or its launch (a phased kernel, too many
    /// states, an out-of-bounds read, a bad `u0`).
    #[error(transparent)]
    Ir(#[from] IrError),
    /// The driver's options or shapes (tolerances, step limits, spans, save
    /// times), naming the option.
    #[error(transparent)]
    Adaptive(#[from] AdaptiveError),
}

/// An unphased kernel as the adaptive driver's right-hand side: trajectory `i`
/// is the one lane of block `i` of a launch of `n` blocks of one lane.
pub struct IrRhs<'a> {
    field: IrField<'a>,
    cfg: LaunchConfig,
    n: usize,
    dim: usize,
    ty: ScalarType,
    args: &'a Args,
    slice: Slice,
    /// Derived kernels bound like the field: event conditions, event jumps,
    /// the Jacobian (see [`Derived`]).
    aux: Vec<IrField<'a>>,
    /// Index in `aux` of the conditions; the jumps follow it.
    conditions: Option<usize>,
    /// Index in `aux` of the Jacobian.
    jacobian: Option<usize>,
    specs: Vec<EventSpec>,
    /// The field, then the kernels of `aux`, for the JIT.
    kernels: Vec<&'a Kernel>,
    /// Their native code (index 0 the field, `1 + a` aux kernel `a`), when
    /// [`IrRhs::engine`] compiled them.
    #[cfg(feature = "jit")]
    native: Option<crate::jit::ScalarSet<'a>>,
    /// Why the evaluator runs though the JIT was asked for.
    fallback: Option<NotCompilable>,
    /// The field's whole step attempt of an explicit pair, when
    /// [`IrRhs::whole_steps`] compiled it.
    #[cfg(feature = "jit")]
    step: Option<crate::jit::StepKernel<'a>>,
    /// Why the stages run one native call each though whole steps were asked for.
    step_fallback: Option<NotCompilable>,
}

/// One trajectory's registers and launch context (see [`IrRhs`]).
pub struct IrTrajScratch<T> {
    /// The field's evaluator registers (made at the first evaluator call:
    /// native code needs none).
    regs: Option<IrScratch<T>>,
    ctx: Option<(usize, BlockCtx<'static, ()>)>,
    /// Evaluator registers of the derived kernels (made at the first
    /// evaluator call), and their padded inputs and output.
    aux: Vec<IrScratch<T>>,
    pad: [Vec<T>; 3],
    /// The Jacobian's outputs (`D·D + D`).
    jac: Vec<T>,
}

impl<'a> IrRhs<'a> {
    /// `kernel` (unphased) bound to `args` for `n` trajectories.
    ///
    /// # Errors
    /// [`IrError::Launch`] for a phased kernel, `n = 0`, or `n` beyond the
    /// grid's limit; the errors of [`IrField::new`].
    pub fn new(kernel: &'a Kernel, args: &'a Args, n: usize) -> Result<Self, IrError> {
        Self::new_slice(kernel, args, n, Slice::whole(n))
    }

    /// `kernel` bound to `args` for the `n` trajectories from `slice.first` of
    /// a launch of `slice.total`: trajectory `j` of the slice is block
    /// `slice.first + j` of the larger launch (its `i`, `bid`, `n`, `gdim`).
    ///
    /// # Errors
    /// Those of [`IrRhs::new`], and a slice [`Slice::check`] refuses.
    pub fn new_slice(
        kernel: &'a Kernel,
        args: &'a Args,
        n: usize,
        slice: Slice,
    ) -> Result<Self, IrError> {
        if kernel.is_phased() {
            return Err(launch_err(
                kernel,
                "adaptive methods need a field without phases (shared sub-fields, \
                 barriers and flux run with the fixed-step methods euler and rk4)"
                    .into(),
            ));
        }
        if n == 0 {
            return Err(launch_err(kernel, "n = 0: nothing to integrate".into()));
        }
        let cfg = LaunchConfig::linear(n, 1).map_err(|e| launch_err(kernel, e.to_string()))?;
        u32::try_from(n).map_err(|_| launch_err(kernel, format!("n = {n} exceeds 2^32 - 1")))?;
        let field = IrField::new_slice(kernel, args, n, 1, slice)?;
        Ok(IrRhs {
            field,
            cfg,
            n,
            dim: kernel.states.len(),
            ty: kernel.float_type(),
            args,
            slice,
            aux: vec![],
            conditions: None,
            jacobian: None,
            specs: vec![],
            kernels: vec![kernel],
            #[cfg(feature = "jit")]
            native: None,
            fallback: None,
            #[cfg(feature = "jit")]
            step: None,
            step_fallback: None,
        })
    }

    /// Runs the field and its derived kernels on `engine`: with
    /// [`Engine::Jit`], compiles them all to native code, or, if one of them
    /// cannot be ([`IrRhs::fallback`] says why), keeps them all on the
    /// evaluator. Call it after [`IrRhs::with_derived`].
    pub fn engine(mut self, engine: Engine) -> Self {
        #[cfg(feature = "jit")]
        {
            self.native = None;
            self.step = None;
        }
        self.fallback = None;
        self.step_fallback = None;
        if engine == Engine::Eval {
            return self;
        }
        #[cfg(feature = "jit")]
        {
            match crate::jit::ScalarSet::compile(&self.kernels, self.args, self.dims()) {
                Ok(set) => self.native = Some(set),
                Err(e) => self.fallback = Some(e),
            }
        }
        #[cfg(not(feature = "jit"))]
        {
            self.fallback = crate::jit::available().err();
        }
        self
    }

    /// Whether the kernels run as native code.
    pub fn is_native(&self) -> bool {
        #[cfg(feature = "jit")]
        {
            self.native.is_some()
        }
        #[cfg(not(feature = "jit"))]
        {
            false
        }
    }

    /// Why the evaluator runs though [`Engine::Jit`] was asked for.
    pub fn fallback(&self) -> Option<&NotCompilable> {
        self.fallback.as_ref()
    }

    /// The launch values native code is compiled with: trajectory `i` the one
    /// lane of block `i` of the launch this is a slice of.
    #[cfg(feature = "jit")]
    fn dims(&self) -> crate::eval::Dims {
        crate::eval::Dims {
            bdim: 1,
            gdim: self.slice.blocks(1) as u32,
            n: self.slice.total as u32,
            rep: 0,
        }
    }

    /// With the kernels on native code ([`IrRhs::engine`] with
    /// [`Engine::Jit`] succeeded), also compiles the field's whole step
    /// attempt of `method`'s explicit pair into one native function, which
    /// the driver then calls once per attempt instead of once per stage (the
    /// same bits). If it cannot be compiled, [`IrRhs::step_fallback`] says
    /// why and the stages run one native call each. Call it after
    /// [`IrRhs::engine`]; on the evaluator it does nothing.
    pub fn whole_steps(mut self, method: AdaptiveMethod) -> Self {
        self.step_fallback = None;
        #[cfg(feature = "jit")]
        {
            self.step = None;
            if self.native.is_some() {
                let k = self.kernels[0];
                match crate::jit::StepKernel::compile(k, self.args, self.dims(), method) {
                    Ok(s) => self.step = Some(s),
                    Err(e) => self.step_fallback = Some(e),
                }
            }
        }
        #[cfg(not(feature = "jit"))]
        let _ = method;
        self
    }

    /// Whether whole step attempts run as one native function each.
    pub fn has_native_steps(&self) -> bool {
        #[cfg(feature = "jit")]
        {
            self.step.is_some()
        }
        #[cfg(not(feature = "jit"))]
        {
            false
        }
    }

    /// Why the stages run one native call each though
    /// [`IrRhs::whole_steps`] was asked for on native code.
    pub fn step_fallback(&self) -> Option<&NotCompilable> {
        self.step_fallback.as_ref()
    }

    /// The indices `[i, tid, bid, 0]` of trajectory `index` (block `index` of
    /// one lane, in the launch of which this is a slice).
    #[cfg(feature = "jit")]
    #[inline]
    fn ids(&self, index: usize) -> [u32; 4] {
        let first = self.slice.first + index;
        [
            first as u32,
            0,
            (self.slice.first_block(1) + index) as u32,
            0,
        ]
    }

    /// Binds the derived kernels of `d` (events, Jacobian) like the field, so
    /// the driver sees the field's events and Jacobian.
    ///
    /// # Errors
    /// Those of [`IrField::new_slice`] for a derived kernel.
    pub fn with_derived(mut self, d: &'a Derived) -> Result<Self, IrError> {
        let bind = |k: &'a Kernel| IrField::new_slice(k, self.args, self.n, 1, self.slice);
        if let Some(c) = &d.conditions {
            self.conditions = Some(self.aux.len());
            self.aux.push(bind(c)?);
            self.kernels.push(c);
            for j in &d.jumps {
                self.aux.push(bind(j)?);
                self.kernels.push(j);
            }
            self.specs = d.specs.clone();
        }
        if let Some(j) = &d.jacobian {
            self.jacobian = Some(self.aux.len());
            self.aux.push(bind(j)?);
            self.kernels.push(j);
        }
        Ok(self)
    }

    /// State components per trajectory.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The first out-of-bounds read of the run (lowest trajectory), if any.
    pub fn take_fault(&self) -> Option<IrError> {
        let mut first = self.field.take_fault();
        for a in &self.aux {
            if let Some(e) = a.take_fault() {
                first.get_or_insert(e);
            }
        }
        first
    }

    /// The launch context of trajectory `index` (cached in its scratch).
    fn ctx<T>(&self, index: usize, sc: &mut IrTrajScratch<T>) -> BlockCtx<'static, ()> {
        match sc.ctx {
            Some((i, ctx)) if i == index => ctx,
            _ => {
                let ctx = BlockCtx::new(&self.cfg, index, &())
                    .expect("the driver's trajectory indices are below n");
                sc.ctx = Some((index, ctx));
                ctx
            }
        }
    }

    /// The first `out.len()` outputs of derived kernel `a` at `(t, y)` of
    /// trajectory `index`.
    #[allow(clippy::too_many_arguments)]
    fn eval_aux<T: IrFloat>(
        &self,
        a: usize,
        t: T,
        y: &[T],
        y0: &[T],
        index: usize,
        sc: &mut IrTrajScratch<T>,
        out: &mut [T],
    ) {
        #[cfg(feature = "jit")]
        if let Some(native) = &self.native {
            let dh = &mut sc.pad[2];
            dh.resize(native.outputs(1 + a), T::ZERO);
            if let Some(f) = native.call(1 + a, t, y, y0, self.ids(index), dh) {
                self.aux[a].record(f, index);
            }
            out.copy_from_slice(&dh[..out.len()]);
            return;
        }
        let ctx = self.ctx(index, sc);
        if sc.aux.is_empty() {
            sc.aux = self
                .aux
                .iter()
                .map(|f| BlockField::<T>::scratch(f, 1))
                .collect();
        }
        let f = &self.aux[a];
        let m = BlockField::<T>::dim(f);
        let [h, h0, dh] = &mut sc.pad;
        for (v, src) in [(&mut *h, y), (&mut *h0, y0)] {
            v.clear();
            v.extend_from_slice(src);
            v.resize(m, T::ZERO);
        }
        dh.resize(m, T::ZERO);
        f.eval_block(t, h, h0, &ctx, &mut sc.aux[a], dh);
        out.copy_from_slice(&dh[..out.len()]);
    }

    /// `dy = f(t, y)` of trajectory `index` with initial state `y0` (`D` values each).
    fn eval<T: IrFloat>(
        &self,
        t: T,
        y: &[T],
        y0: &[T],
        index: usize,
        sc: &mut IrTrajScratch<T>,
        dy: &mut [T],
    ) {
        #[cfg(feature = "jit")]
        if let Some(native) = &self.native {
            if let Some(f) = native.call(0, t, y, y0, self.ids(index), dy) {
                self.field.record(f, index);
            }
            return;
        }
        let ctx = self.ctx(index, sc);
        let regs = sc
            .regs
            .get_or_insert_with(|| BlockField::<T>::scratch(&self.field, 1));
        self.field.eval_block(t, y, y0, &ctx, regs, dy);
    }

    fn traj_scratch<T: IrFloat>(&self) -> IrTrajScratch<T> {
        IrTrajScratch {
            regs: None,
            ctx: None,
            aux: vec![],
            pad: [vec![], vec![], vec![]],
            jac: vec![],
        }
    }
}

impl<T: IrFloat, const D: usize> OdeRhs<T, D> for IrRhs<'_> {
    type Scratch = IrTrajScratch<T>;

    fn scratch(&self) -> IrTrajScratch<T> {
        self.traj_scratch()
    }

    #[inline]
    fn rhs(
        &self,
        t: T,
        y: &[T; D],
        traj: &Traj<'_, T, D>,
        sc: &mut IrTrajScratch<T>,
        dy: &mut [T; D],
    ) {
        self.eval(t, y, traj.y0, traj.index, sc, dy);
    }

    #[inline]
    fn erk_attempt(
        &self,
        step: &mut ErkAttempt<'_, T, D>,
        traj: &Traj<'_, T, D>,
        _sc: &mut IrTrajScratch<T>,
    ) -> Option<T> {
        #[cfg(feature = "jit")]
        if let Some(native) = &self.step {
            if native.tableau() == step.tableau {
                let (err, fault) = native.call(step, traj.y0, self.ids(traj.index));
                if let Some(f) = fault {
                    self.field.record(f, traj.index);
                }
                return Some(err);
            }
        }
        let _ = (step, traj);
        None
    }

    #[inline]
    fn erk_lanes(&self, tableau: TableauId) -> bool {
        #[cfg(feature = "jit")]
        if let Some(native) = &self.step {
            return native.tableau() == tableau;
        }
        let _ = tableau;
        false
    }

    #[inline]
    fn erk_attempt_lanes(&self, lanes: &mut [ErkLane<'_, '_, T, D>; ERK_LANES]) -> bool {
        #[cfg(feature = "jit")]
        if let Some(native) = &self.step {
            if lanes.iter().all(|l| native.tableau() == l.step.tableau) {
                let ids = lanes.each_ref().map(|l| self.ids(l.traj.index));
                let faults = native.call_lanes(lanes, &ids);
                for (f, l) in faults.into_iter().zip(lanes.iter()) {
                    if let Some(f) = f {
                        self.field.record(f, l.traj.index);
                    }
                }
                return true;
            }
        }
        let _ = lanes;
        false
    }

    fn events(&self) -> &[EventSpec] {
        &self.specs
    }

    fn has_jacobian(&self) -> bool {
        self.jacobian.is_some()
    }

    fn jacobian(
        &self,
        t: T,
        y: &[T; D],
        traj: &Traj<'_, T, D>,
        sc: &mut IrTrajScratch<T>,
        jac: &mut [[T; D]; D],
        ft: &mut [T; D],
    ) {
        if let Some(j) = self.jacobian {
            let mut buf = std::mem::take(&mut sc.jac);
            buf.resize(D * D + D, T::ZERO);
            self.eval_aux(j, t, y, traj.y0, traj.index, sc, &mut buf);
            for (i, row) in jac.iter_mut().enumerate() {
                row.copy_from_slice(&buf[i * D..][..D]);
            }
            ft.copy_from_slice(&buf[D * D..]);
            sc.jac = buf;
        }
    }

    fn event_values(
        &self,
        t: T,
        y: &[T; D],
        traj: &Traj<'_, T, D>,
        sc: &mut IrTrajScratch<T>,
        g: &mut [T],
    ) {
        if let Some(c) = self.conditions {
            self.eval_aux(c, t, y, traj.y0, traj.index, sc, g);
        }
    }

    fn apply_event(
        &self,
        event: usize,
        t: T,
        y: &mut [T; D],
        traj: &Traj<'_, T, D>,
        sc: &mut IrTrajScratch<T>,
    ) {
        if let Some(c) = self.conditions {
            let before = *y;
            self.eval_aux(c + 1 + event, t, &before, traj.y0, traj.index, sc, y);
        }
    }

    fn check(&self, n: usize, _p: usize) -> Result<(), AdaptiveError> {
        if D != self.dim {
            return Err(AdaptiveError::ShapeMismatch {
                what: "state",
                got: D,
                expected: format!("the kernel's {} state components", self.dim),
            });
        }
        if n != self.n {
            return Err(AdaptiveError::ShapeMismatch {
                what: "trajectories",
                got: n,
                expected: format!("the n = {} the kernel was bound for", self.n),
            });
        }
        if T::TYPE != self.field_type() {
            return Err(AdaptiveError::Rhs(format!(
                "the kernel's states are {}, the ensemble's {}",
                self.field_type(),
                T::TYPE
            )));
        }
        Ok(())
    }
}

impl IrRhs<'_> {
    /// The kernel's float type (the type of its states).
    fn field_type(&self) -> ScalarType {
        self.ty
    }
}

/// An adaptive ensemble of a `.field` kernel: trajectories, spans, initial
/// states and the driver's options.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptiveRun {
    /// Trajectories (N).
    pub n: usize,
    /// `(t0, t1)` of each trajectory, or one span shared by all.
    pub spans: Vec<(f64, f64)>,
    /// Initial states `(N, D)`, trajectory-major; `None` evaluates the
    /// kernel's `state x = …` initialisers (as trajectory `i` of blocks of one).
    pub u0: Option<Vec<f64>>,
    /// Method, tolerances, step limits, save times, parallelism.
    pub options: AdaptiveEnsemble,
    /// The `n` trajectories are a slice of a larger launch (`spans` and `u0`
    /// are the slice's own rows); `None`: the whole launch.
    pub slice: Option<Slice>,
}

/// What an adaptive `.field` ensemble produced.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptiveOutput {
    /// Trajectories (N).
    pub n: usize,
    /// State components (D).
    pub dim: usize,
    /// Save times (K).
    pub saveat: Vec<f64>,
    /// Final states `(N, D)` in the kernel's float type (a failed trajectory's
    /// last accepted state).
    pub end: Buffer,
    /// States at the save times `(N, K, D)` (NaN where a failed trajectory did
    /// not reach them).
    pub saved: Buffer,
    /// Per trajectory: status, accepted and rejected steps, evaluations, time reached.
    pub stats: Vec<TrajectoryStats>,
}

fn launch_err(k: &Kernel, message: String) -> IrError {
    IrError::Launch {
        kernel: k.name.clone(),
        message,
    }
}

/// Integrates `run.n` trajectories of the unphased `kernel` with `args` by the
/// adaptive method of `run.options`, on the CPU, trajectories in parallel as
/// its [`Par`] says (the same bits for any thread count). A trajectory that
/// fails (step limit, `dtmin`, a NaN) has its status; the others run on.
///
/// # Errors
/// [`AdaptiveIrError::Ir`]: a phased kernel, no states or more than
/// [`MAX_ADAPTIVE_STATES`], missing arguments, a `u0` of the wrong length, an
/// out-of-bounds read (naming buffer and trajectory).
/// [`AdaptiveIrError::Adaptive`]: the driver's options and shapes.
pub fn run_adaptive_cpu(
    kernel: &Kernel,
    args: &Args,
    run: &AdaptiveRun,
) -> Result<AdaptiveOutput, AdaptiveIrError> {
    run_adaptive_cpu_on(kernel, args, run, Engine::default())
}

/// [`run_adaptive_cpu`] on the CPU engine `engine` ([`Engine::Jit`]: native
/// code where the kernel and host allow it; [`Engine::Eval`]: the column
/// evaluator). The results are the same bits.
///
/// # Errors
/// Those of [`run_adaptive_cpu`].
pub fn run_adaptive_cpu_on(
    kernel: &Kernel,
    args: &Args,
    run: &AdaptiveRun,
    engine: Engine,
) -> Result<AdaptiveOutput, AdaptiveIrError> {
    kernel.validate()?;
    args.check_complete()?;
    let dim = kernel.states.len();
    if dim == 0 || dim > MAX_ADAPTIVE_STATES {
        return Err(launch_err(
            kernel,
            format!(
                "adaptive methods take fields of 1 to {MAX_ADAPTIVE_STATES} states; this one has {dim}"
            ),
        )
        .into());
    }
    if let Some(u0) = &run.u0 {
        if Some(u0.len()) != run.n.checked_mul(dim) {
            return Err(AdaptiveError::ShapeMismatch {
                what: "u0",
                got: u0.len(),
                expected: format!(
                    "(N, D) = ({}, {dim}) → {} values",
                    run.n,
                    run.n.saturating_mul(dim)
                ),
            }
            .into());
        }
    }
    let slice = run.slice.unwrap_or(Slice::whole(run.n));
    let stiff = run.options.method() == vgpu_field::adaptive::AdaptiveMethod::Rosenbrock23;
    let derived = Derived::new(kernel, stiff)?;
    let rhs = IrRhs::new_slice(kernel, args, run.n, slice)?
        .with_derived(&derived)?
        .engine(engine)
        .whole_steps(run.options.method());
    match kernel.float_type() {
        ScalarType::F64 => typed::<f64>(kernel, args, &rhs, run),
        _ => typed::<f32>(kernel, args, &rhs, run),
    }
}

fn typed<T: IrFloat>(
    kernel: &Kernel,
    args: &Args,
    rhs: &IrRhs<'_>,
    run: &AdaptiveRun,
) -> Result<AdaptiveOutput, AdaptiveIrError> {
    let y0: Vec<T> = match &run.u0 {
        Some(u0) => u0.iter().map(|&v| T::from_f64(v)).collect(),
        None => initial_states::<T>(
            kernel,
            args,
            run.n,
            run.slice.unwrap_or(Slice::whole(run.n)),
            run.options.parallelism(),
        )?,
    };
    let prob = EnsembleProblem::new(run.n, &y0, &run.spans);
    macro_rules! by_dim {
        ($($d:literal)*) => {
            match rhs.dim {
                $($d => run.options.solve::<T, $d, _>(rhs, &prob)?,)*
                d => unreachable!("dimension {d} was checked to be 1..=16"),
            }
        };
    }
    let sol: EnsembleSolution<T> = by_dim!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
    if let Some(e) = rhs.take_fault() {
        return Err(e.into());
    }
    Ok(AdaptiveOutput {
        n: sol.n,
        dim: sol.dim,
        saveat: sol.saveat,
        end: to_buffer(&sol.end),
        saved: to_buffer(&sol.saved),
        stats: sol.stats,
    })
}

/// Values of the kernel's float type as a [`Buffer`] of that type (exact).
fn to_buffer<T: IrFloat>(v: &[T]) -> Buffer {
    match T::TYPE {
        ScalarType::F64 => Buffer::F64(v.iter().map(|x| x.to_f64()).collect()),
        _ => Buffer::F32(v.iter().map(|x| x.to_f64() as f32).collect()),
    }
}

/// The kernel's initial states `(n, D)`: its `state x = …` initialisers, run as
/// the rates of a copy of the kernel (at `t = 0`, every state and `init(x)`
/// zero, which initialisers cannot read), trajectory `i` the lane of block `i`.
fn initial_states<T: IrFloat>(
    kernel: &Kernel,
    args: &Args,
    n: usize,
    slice: Slice,
    par: Par,
) -> Result<Vec<T>, IrError> {
    let mut init = kernel.clone();
    init.phases[0].updates = kernel.states.iter().map(|s| Update::Rate(s.init)).collect();
    let rhs = IrRhs::new_slice(&init, args, n, slice)?;
    let dim = rhs.dim;
    let zeros = vec![T::ZERO; dim];
    let mut y0 = vec![T::ZERO; n * dim];
    let one = |sc: &mut IrTrajScratch<T>, (i, row): (usize, &mut [T])| {
        rhs.eval(T::ZERO, &zeros, &zeros, i, sc, row);
    };
    par.run(|parallel| {
        if parallel {
            y0.par_chunks_mut(dim)
                .enumerate()
                .for_each_init(|| rhs.traj_scratch::<T>(), one);
        } else {
            let mut sc = rhs.traj_scratch::<T>();
            y0.chunks_mut(dim)
                .enumerate()
                .for_each(|ir| one(&mut sc, ir));
        }
        Ok(())
    })
    .map_err(|e| launch_err(kernel, e.to_string()))?;
    if let Some(e) = rhs.take_fault() {
        return Err(e);
    }
    Ok(y0)
}

#[cfg(test)]
#[path = "adaptive_tests.rs"]
mod tests;
