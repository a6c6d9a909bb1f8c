//! Flow phases: a kernel cut at its barriers into phases, each phase a vector
//! field on the block's state integrated over its own span by the launch's
//! integrator (any Butcher tableau), evaluated for a whole block at a time.
//! This is the one executor of phased kernels: attractor phases
//! ([`super::PhaseKernel`]) run through it as a [`FlowKernel`] (see
//! [`super::collapse`]).
//!
//! The block's state is `y = (h of every lane, S)`: the registers, and the
//! float entries of the typed shared sub-field ([`SharedDecl`]). In a phase the
//! kernel gives, at every stage of every step ([`FlowKernel::stage`]):
//!
//! * the **rates** of its registers ([`StageOut::rates`]); registers a phase
//!   holds ([`RegisterUpdate::Hold`]) keep their bits;
//! * **drives** of shared entries ([`StageOut::drive`]): each trajectory's
//!   contribution to the rate of an entry, summed in call (lane) order; or the
//!   float entries' rates directly ([`StageOut::shared_rates`]);
//! * **flux** into typed accumulators ([`StageOut::emit`]).
//!
//! The float part of `y` is advanced by the tableau, registers and shared
//! arrays of both precisions together, one stage at a time
//! ([`crate::Stepper::stage`]), with the same arithmetic as every launch.
//!
//! Unit flows: a **jump** ([`RegisterUpdate::Jump`], CUDA's register
//! assignment) sets a register to the value the kernel gives at the step's
//! first stage ([`StageOut::jumps`]); drives of **integer** shared entries add
//! their first-stage contributions (wrapping). Both are the exact flow of a
//! unit-time piecewise-constant segment, under any method.
//!
//! Flux is the method's quadrature of the emitted rate: for every emission the
//! destination is read at the step's first stage, and the amount is
//! `Σ_i (dt·b_i)·v_i` over the stages (summed left to right, as the stepper's
//! update; Euler: `dt·v`; RK4: the b-weighted stage sum); integer flux, a unit
//! flow, is the first-stage value. An **impulse** ([`Impulses::emit`], from
//! [`FlowKernel::phase_start`]) is flux emitted once, whose amount is the
//! value itself (CUDA's `atomicAdd` as a unit flow). Emissions land in the
//! fixed order of [`crate::flux`] ([`crate::flux::order_block`]): block, then
//! phase repetition by repetition (its impulses, then its steps), then lane,
//! then the lane's call order.
//!
//! **Length.** A repetition of a phase takes the steps [`FlowPhase::steps`]
//! gives it, or, for a phase [`FlowPhase::until_settled`], as many as it takes
//! until [`FlowKernel::settled`] says the block has settled (asked before every
//! step), at most that many. Every repetition begins with
//! [`FlowKernel::phase_start`] (before any step, even when it takes none) and
//! ends with [`FlowKernel::phase_end`]; a block's shared memory starts at its
//! declared values, then [`FlowKernel::init_block`]. All three default to
//! doing nothing.
//!
//! Everything in a stage reads the stage's input; a phase starts from where
//! the previous one ended (the barrier between them).

use super::memory::TypedLog;
use super::memory::{Layout, SharedDecl, SharedMem, SharedView};
use super::{check_finite, out_of_bounds, BlockOutcome, PhasedLaunch};
use crate::error::FieldError;
use crate::executor::{gather_soa, scatter_soa};
use crate::field::BlockCtx;
use crate::flux::{order_block, FluxBuffer, FluxPlace};
use crate::launch::{Dim3, LaunchConfig};
use crate::real::Real;
use crate::scalar::{ScalarType, Value};
use crate::stepper::Stepper;

/// What a phase does to one register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterUpdate {
    /// Held: keeps its bits.
    Hold,
    /// Integrated from its rate ([`StageOut::rates`]).
    Rate,
    /// Set, at the end of every step, to the value given at the step's first
    /// stage ([`StageOut::jumps`]).
    Jump,
}

/// One phase of a [`FlowKernel`]: how often it runs, how long, and what it
/// does to each register.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowPhase {
    /// Steps of each repetition (`steps.len()` repetitions, in order): the
    /// steps it takes, or with [`FlowPhase::until_settled`] the most it takes.
    pub steps: Vec<usize>,
    /// One update per register.
    pub updates: Vec<RegisterUpdate>,
    /// Whether each repetition ends early, before the first step at which
    /// [`FlowKernel::settled`] says the block has settled (a barrier that
    /// releases on settling). The steps taken are reported.
    pub until_settled: bool,
}

impl FlowPhase {
    /// A phase whose repetitions take exactly `steps[r]` steps each.
    pub fn fixed(steps: Vec<usize>, updates: Vec<RegisterUpdate>) -> FlowPhase {
        FlowPhase {
            steps,
            updates,
            until_settled: false,
        }
    }
}

/// Where a repetition of a phase is: the phase, its repetition and the
/// segment (repetitions of all phases counted in order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentAt {
    /// The phase.
    pub phase: usize,
    /// Its repetition.
    pub rep: usize,
    /// The segment.
    pub segment: usize,
}

/// Where a stage is: phase, repetition, step, stage and its time (local to
/// the repetition, which starts at 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageAt<T> {
    /// The phase.
    pub phase: usize,
    /// Its repetition.
    pub rep: usize,
    /// The segment: repetitions of all phases counted in order.
    pub segment: usize,
    /// The step within the repetition.
    pub step: usize,
    /// The stage within the step (0 = the step's start).
    pub stage: usize,
    /// The stage's time `t_n + c_i·dt`, `t_n = fl(n)·dt`.
    pub t: T,
}

/// What a stage reads: registers (structure of arrays, `h[k·lanes + l]`),
/// initial registers and the shared arrays, at the stage's input.
#[derive(Debug, Clone, Copy)]
pub struct StageIn<'a, T> {
    /// Registers.
    pub h: &'a [T],
    /// Initial registers.
    pub h0: &'a [T],
    /// The shared arrays.
    pub shared: SharedView<'a>,
}

/// A kernel cut into flow phases, evaluated a block at a time (see the module
/// documentation). Run it with [`PhasedLaunch::run_flow`].
pub trait FlowKernel<T: Real>: Sync {
    /// The kernel's parameters.
    type Params: ?Sized + Sync;
    /// Per-worker memory (sized for a block), reused across blocks.
    type Scratch: Send;
    /// Registers per trajectory.
    fn dim(&self) -> usize;
    /// The block's shared arrays.
    fn shared(&self) -> &[SharedDecl];
    /// The phases, in order.
    fn phases(&self) -> &[FlowPhase];
    /// Scratch for blocks of `lanes` trajectories.
    fn scratch(&self, lanes: usize) -> Self::Scratch;
    /// Checks the parameters against the launch.
    ///
    /// # Errors
    /// The kernel's own refusals.
    fn check(&self, cfg: &LaunchConfig, params: &Self::Params) -> Result<(), FieldError> {
        let _ = (cfg, params);
        Ok(())
    }
    /// A block's shared memory before its first phase: `shared` holds the
    /// declared initial values ([`SharedDecl::init`]) and may be changed here
    /// (per-block initial values). Does nothing unless overridden.
    ///
    /// # Errors
    /// The kernel's own faults.
    fn init_block(
        &self,
        ctx: &BlockCtx<'_, Self::Params>,
        shared: &mut SharedMem,
        scratch: &mut Self::Scratch,
    ) -> Result<(), FieldError> {
        let _ = (ctx, shared, scratch);
        Ok(())
    }
    /// The start of repetition `at` of a phase, before its first step (also
    /// when it takes none): reads the block's state `input` and may emit flux
    /// impulses, which land before the repetition's step emissions. Does
    /// nothing unless overridden.
    ///
    /// # Errors
    /// Out-of-bounds indices (from `flux`), the kernel's own faults.
    fn phase_start(
        &self,
        at: SegmentAt,
        ctx: &BlockCtx<'_, Self::Params>,
        input: &StageIn<'_, T>,
        scratch: &mut Self::Scratch,
        flux: &mut Impulses<'_>,
    ) -> Result<(), FieldError> {
        let _ = (at, ctx, input, scratch, flux);
        Ok(())
    }
    /// Whether the block's state `input` has settled, asked before every step
    /// of a phase [`FlowPhase::until_settled`] (never for other phases): `true`
    /// ends the repetition. `false` unless overridden.
    fn settled(
        &self,
        at: SegmentAt,
        ctx: &BlockCtx<'_, Self::Params>,
        input: &StageIn<'_, T>,
        scratch: &mut Self::Scratch,
    ) -> bool {
        let _ = (at, ctx, input, scratch);
        false
    }
    /// The end of repetition `at` of a phase, after its last step and before
    /// the finiteness check: may set the registers `h` (structure of arrays)
    /// and the shared memory. Does nothing unless overridden.
    ///
    /// # Errors
    /// The kernel's own faults.
    fn phase_end(
        &self,
        at: SegmentAt,
        ctx: &BlockCtx<'_, Self::Params>,
        h: &mut [T],
        shared: &mut SharedMem,
        scratch: &mut Self::Scratch,
    ) -> Result<(), FieldError> {
        let _ = (at, ctx, h, shared, scratch);
        Ok(())
    }
    /// One stage of a block: reads `input`, writes rates, jumps (first stage),
    /// drives and emissions into `out`. Every stage of a step must emit the
    /// same emissions in the same order.
    ///
    /// # Errors
    /// Out-of-bounds indices (from `out`), the kernel's own faults.
    fn stage(
        &self,
        at: StageAt<T>,
        ctx: &BlockCtx<'_, Self::Params>,
        input: &StageIn<'_, T>,
        scratch: &mut Self::Scratch,
        out: &mut StageOut<'_, T>,
    ) -> Result<(), FieldError>;
}

/// Where a stage writes (see [`FlowKernel::stage`]).
pub struct StageOut<'a, T> {
    stage: usize,
    phase: usize,
    block: Dim3,
    cfg: LaunchConfig,
    layout: &'a Layout,
    rates: &'a mut [T],
    jumps: &'a mut [T],
    d32: &'a mut [f32],
    d64: &'a mut [f64],
    dints: &'a mut [u32],
    flux_types: &'a [(ScalarType, usize)],
    emits: &'a mut Emits,
}

/// The emissions of one step: destinations `(flux, index, lane)` (first
/// stage) and each stage's values.
#[derive(Default)]
struct Emits {
    slots: Vec<(usize, usize, usize)>,
    values: Vec<Vec<Value>>,
}

/// A block's emissions of one step or one repetition's impulses, each
/// `(flux, index, amount)` at its place, before [`order_block`] puts them in
/// the fixed order.
type Placed = Vec<(FluxPlace, (usize, usize, Value))>;

/// `placed` in the fixed order, pushed into the block's `logs` (and emptied).
fn land(placed: &mut Placed, logs: &mut [TypedLog]) {
    order_block(placed);
    for (_, (f, i, v)) in placed.drain(..) {
        logs[f].push(i, v);
    }
}

impl<T: Real> StageOut<'_, T> {
    fn fault(&self, what: &'static str, index: usize, len: usize, lane: usize) -> FieldError {
        out_of_bounds(what, index, len, self.phase, self.block, &self.cfg, lane)
    }
    fn mismatch(&self, what: String) -> FieldError {
        mismatch(self.phase, self.block, what)
    }

    /// Whether this is the step's first stage (where jumps, integer drives and
    /// flux destinations are read).
    pub fn first_stage(&self) -> bool {
        self.stage == 0
    }

    /// The register rates, structure of arrays (`[k·lanes + l]`), zero on entry.
    pub fn rates(&mut self) -> &mut [T] {
        self.rates
    }

    /// The jump targets, structure of arrays; read after the first stage for
    /// the registers the phase jumps.
    pub fn jumps(&mut self) -> &mut [T] {
        self.jumps
    }

    /// The rates of the float shared entries, flat as [`SharedMem::f32s`] and
    /// [`SharedMem::f64s`] store them, zero on entry; drives add to them.
    pub fn shared_rates(&mut self) -> (&mut [f32], &mut [f64]) {
        (self.d32, self.d64)
    }

    /// Lane `lane` contributes `value` to the rate of entry `index` of shared
    /// array `array` (integer arrays: to its unit flow, first stage only).
    ///
    /// # Errors
    /// [`FieldError::OutOfBounds`] for an index past the array;
    /// [`FieldError::Invalid`] for a value of another type or a `bool` array.
    pub fn drive(
        &mut self,
        array: usize,
        lane: usize,
        index: usize,
        value: Value,
    ) -> Result<(), FieldError> {
        let p = self.layout.places[array];
        if index >= p.len {
            return Err(self.fault("shared", index, p.len, lane));
        }
        let at = p.offset + index;
        match (p.ty, value) {
            (ScalarType::F32, Value::F32(v)) => self.d32[at] += v,
            (ScalarType::F64, Value::F64(v)) => self.d64[at] += v,
            (ScalarType::I32, Value::I32(_)) | (ScalarType::U32, Value::U32(_)) => {
                if self.stage == 0 {
                    let v = value.int_bits().unwrap_or(0);
                    self.dints[at] = self.dints[at].wrapping_add(v);
                }
            }
            (ty, v) => {
                return Err(self.mismatch(format!(
                    "a {v:?} drives a {} shared array (bool arrays cannot be driven)",
                    ty.name()
                )))
            }
        }
        Ok(())
    }

    /// Lane `lane` emits at rate `value` into accumulator `index` of flux
    /// buffer `flux` (see the module documentation for the amount).
    ///
    /// # Errors
    /// [`FieldError::OutOfBounds`] for an index past the buffer;
    /// [`FieldError::Invalid`] for a value of another type, or a later stage
    /// whose emissions differ from the first stage's.
    pub fn emit(
        &mut self,
        flux: usize,
        lane: usize,
        index: usize,
        value: Value,
    ) -> Result<(), FieldError> {
        let (p, b) = (self.phase, self.block);
        check_emission(self.flux_types, flux, index, value, (p, b, &self.cfg, lane))?;
        let e = &mut *self.emits;
        let vals = &mut e.values[self.stage];
        if self.stage == 0 {
            e.slots.push((flux, index, lane));
        } else if e.slots.get(vals.len()) != Some(&(flux, index, lane)) {
            return Err(self.mismatch(format!(
                "stage {} emits into flux {flux}[{index}] from lane {lane} where the first stage did not",
                self.stage
            )));
        }
        vals.push(value);
        Ok(())
    }
}

/// [`FieldError::Invalid`] in `phase` of `block`.
fn mismatch(phase: usize, block: Dim3, why: String) -> FieldError {
    FieldError::Invalid {
        context: format!("phase {phase}, block {block}"),
        why,
    }
}

/// Checks an emission of `value` into accumulator `index` of flux buffer
/// `flux` by a lane (`at`: phase, block, launch, lane).
fn check_emission(
    flux_types: &[(ScalarType, usize)],
    flux: usize,
    index: usize,
    value: Value,
    at: (usize, Dim3, &LaunchConfig, usize),
) -> Result<(), FieldError> {
    let (phase, block, cfg, lane) = at;
    let Some(&(ty, len)) = flux_types.get(flux) else {
        let why = format!("flux buffer {flux} of {}", flux_types.len());
        return Err(mismatch(phase, block, why));
    };
    if index >= len {
        return Err(out_of_bounds("flux", index, len, phase, block, cfg, lane));
    }
    if value.ty() != ty {
        let why = format!("a {value:?} emitted into a {} flux buffer", ty.name());
        return Err(mismatch(phase, block, why));
    }
    Ok(())
}

/// Where [`FlowKernel::phase_start`] emits flux impulses: amounts added once,
/// as they are (see the module documentation).
pub struct Impulses<'a> {
    phase: usize,
    segment: usize,
    block: Dim3,
    cfg: LaunchConfig,
    flux_types: &'a [(ScalarType, usize)],
    placed: &'a mut Placed,
}

impl Impulses<'_> {
    /// The length of flux buffer `flux` (`None` past the last buffer).
    pub fn buffer_len(&self, flux: usize) -> Option<usize> {
        self.flux_types.get(flux).map(|&(_, len)| len)
    }

    /// Lane `lane` adds `value` to accumulator `index` of flux buffer `flux`
    /// (CUDA: `atomicAdd(&flux[index], value)`).
    ///
    /// # Errors
    /// [`FieldError::OutOfBounds`] for an index past the buffer;
    /// [`FieldError::Invalid`] for a value of another type or no such buffer.
    pub fn emit(
        &mut self,
        flux: usize,
        lane: usize,
        index: usize,
        value: Value,
    ) -> Result<(), FieldError> {
        let at = (self.phase, self.block, &self.cfg, lane);
        check_emission(self.flux_types, flux, index, value, at)?;
        let place = FluxPlace {
            segment: self.segment,
            step: 0,
            lane,
        };
        self.placed.push((place, (flux, index, value)));
        Ok(())
    }
}

/// The flux amount of one emission over a step: `Σ_i (dt·b_i)·v_i` (floats,
/// summed left to right as the stepper's update), the first-stage value
/// (integers).
fn quadrature(b: &[(usize, f64)], dt: f64, values: &[Vec<Value>], slot: usize) -> Value {
    macro_rules! sum {
        ($t:ty, $var:ident) => {{
            let mut acc: Option<$t> = None;
            for &(i, bi) in b {
                let v = match values[i][slot] {
                    Value::$var(v) => v,
                    _ => unreachable!("types checked at emission"),
                };
                let term = ((dt as $t) * (bi as $t)) * v;
                acc = Some(match acc {
                    None => term,
                    Some(a) => a + term,
                });
            }
            Value::$var(acc.unwrap_or(0.0))
        }};
    }
    match values[0][slot] {
        Value::F32(_) => sum!(f32, F32),
        Value::F64(_) => sum!(f64, F64),
        v => v,
    }
}

/// Per-worker memory of a flow launch: a block's state, its steppers and the
/// kernel's scratch.
pub(super) struct FlowWork<T, S> {
    h: Vec<T>,
    h0: Vec<T>,
    start: Vec<T>,
    jumps: Vec<T>,
    dints: Vec<u32>,
    emits: Emits,
    /// Emissions waiting for their order ([`land`]).
    placed: Placed,
    steppers: (Stepper<T>, Stepper<f32>, Stepper<f64>),
    /// The method's non-zero weights `(i, b_i)`, for the flux quadrature.
    b: Vec<(usize, f64)>,
    /// The block's shared memory.
    mem: SharedMem,
    scratch: S,
}

/// A flow launch, bound to its kernel and buffers.
pub(super) struct FlowJob<'a, T: Real, K: FlowKernel<T> + ?Sized> {
    pub kernel: &'a K,
    pub params: &'a K::Params,
    pub launch: &'a PhasedLaunch,
    pub layout: Layout,
    pub flux_types: Vec<(ScalarType, usize)>,
    pub logs: Vec<TypedLog>,
    pub _t: std::marker::PhantomData<T>,
}

impl<T: Real, K: FlowKernel<T> + ?Sized> FlowJob<'_, T, K> {
    pub(super) fn work(&self) -> FlowWork<T, K::Scratch> {
        let lanes = self.launch.cfg.threads_per_block();
        let len = lanes * self.kernel.dim();
        let tableau = self.launch.barrier.method.tableau();
        FlowWork {
            h: vec![T::ZERO; len],
            h0: vec![T::ZERO; len],
            start: vec![T::ZERO; len],
            jumps: vec![T::ZERO; len],
            dints: vec![0; self.layout.sizes[2]],
            emits: Emits {
                slots: vec![],
                values: vec![vec![]; tableau.stages()],
            },
            placed: Vec::new(),
            steppers: (
                Stepper::new(&tableau, len),
                Stepper::new(&tableau, self.layout.sizes[0]),
                Stepper::new(&tableau, self.layout.sizes[1]),
            ),
            b: (tableau.b().iter().copied().enumerate())
                .filter(|(_, v)| *v != 0.0)
                .collect(),
            mem: SharedMem::default(),
            scratch: self.kernel.scratch(lanes),
        }
    }

    pub(super) fn run_block(
        &self,
        w: &mut FlowWork<T, K::Scratch>,
        block: usize,
        chunk: &mut [T],
    ) -> BlockOutcome<Vec<TypedLog>> {
        BlockOutcome::of(self.logs.clone(), |out| self.phases(w, block, chunk, out))
    }

    fn phases(
        &self,
        w: &mut FlowWork<T, K::Scratch>,
        block: usize,
        chunk: &mut [T],
        out: &mut BlockOutcome<Vec<TypedLog>>,
    ) -> Result<(), FieldError> {
        let cfg = self.launch.cfg;
        let dim = self.kernel.dim();
        let lanes = cfg.threads_per_block();
        let ctx = BlockCtx::new_unchecked(&cfg, block, self.params);
        if dim > 0 {
            gather_soa(chunk, &mut w.h, lanes, dim);
        }
        w.h0.copy_from_slice(&w.h);
        // The shared memory's vectors are the worker's, reused block after block.
        let mut mem = std::mem::take(&mut w.mem);
        self.layout.reset(self.kernel.shared(), &mut mem);
        let run = self.segments(w, &mut mem, &ctx, out);
        w.mem = mem;
        run?;
        if dim > 0 {
            scatter_soa(&w.h, chunk, lanes, dim);
        }
        Ok(())
    }

    /// Every repetition of every phase of a block, from registers `w.h` and
    /// shared memory `mem` at the block's start.
    fn segments(
        &self,
        w: &mut FlowWork<T, K::Scratch>,
        mem: &mut SharedMem,
        ctx: &BlockCtx<'_, K::Params>,
        out: &mut BlockOutcome<Vec<TypedLog>>,
    ) -> Result<(), FieldError> {
        let cfg = self.launch.cfg;
        let dim = self.kernel.dim();
        let dt64 = self.launch.barrier.dt;
        let dt = T::from_f64(dt64);
        self.kernel.init_block(ctx, mem, &mut w.scratch)?;
        let mut segment = 0;
        let mut elapsed = 0.0f64;
        for (pi, phase) in self.kernel.phases().iter().enumerate() {
            for (rep, &most) in phase.steps.iter().enumerate() {
                let seg = SegmentAt {
                    phase: pi,
                    rep,
                    segment,
                };
                let mut flux = Impulses {
                    phase: pi,
                    segment,
                    block: ctx.block_idx(),
                    cfg,
                    flux_types: &self.flux_types,
                    placed: &mut w.placed,
                };
                let input = self.input(&w.h, &w.h0, mem);
                (self.kernel).phase_start(seg, ctx, &input, &mut w.scratch, &mut flux)?;
                land(&mut w.placed, &mut out.flux);
                let mut steps = 0;
                while steps < most
                    && !(phase.until_settled && {
                        let input = self.input(&w.h, &w.h0, mem);
                        self.kernel.settled(seg, ctx, &input, &mut w.scratch)
                    })
                {
                    let at = StageAt {
                        phase: pi,
                        rep,
                        segment,
                        step: steps,
                        stage: 0,
                        t: T::from_usize(steps) * dt,
                    };
                    self.step(w, mem, at, dt, ctx, phase)?;
                    let e = &mut w.emits;
                    for (s, &(f, i, lane)) in e.slots.iter().enumerate() {
                        let place = FluxPlace {
                            segment,
                            step: steps + 1,
                            lane,
                        };
                        let amount = quadrature(&w.b, dt64, &e.values, s);
                        w.placed.push((place, (f, i, amount)));
                    }
                    land(&mut w.placed, &mut out.flux);
                    steps += 1;
                }
                (self.kernel).phase_end(seg, ctx, &mut w.h, mem, &mut w.scratch)?;
                out.steps.push(steps);
                elapsed += steps as f64 * dt64;
                segment += 1;
                if self.launch.stop_on_non_finite {
                    check_finite(&w.h, dim, ctx, elapsed)?;
                }
            }
        }
        Ok(())
    }

    /// The block's state as a stage reads it: registers `h`, initial
    /// registers `h0`, shared memory `mem`.
    fn input<'s>(&'s self, h: &'s [T], h0: &'s [T], mem: &'s SharedMem) -> StageIn<'s, T> {
        StageIn {
            h,
            h0,
            shared: SharedView {
                layout: &self.layout,
                f32s: &mem.f32s,
                f64s: &mem.f64s,
                ints: &mem.ints,
                bools: &mem.bools,
            },
        }
    }

    /// One step of a block: every stage, then the update of registers, shared
    /// entries and the step's emissions (left in `w.emits`).
    fn step(
        &self,
        w: &mut FlowWork<T, K::Scratch>,
        mem: &mut SharedMem,
        at: StageAt<T>,
        dt: T,
        ctx: &BlockCtx<'_, K::Params>,
        phase: &FlowPhase,
    ) -> Result<(), FieldError> {
        let lanes = self.launch.cfg.threads_per_block();
        let (dt32, dt64) = (dt.to_f64() as f32, dt.to_f64());
        if phase.updates.contains(&RegisterUpdate::Hold) {
            w.start.copy_from_slice(&w.h);
        }
        if !w.dints.is_empty() {
            w.dints.fill(0);
        }
        w.emits.slots.clear();
        for v in &mut w.emits.values {
            v.clear();
        }
        let (sh, s32, s64) = &mut w.steppers;
        for i in 0..sh.stages() {
            let t = sh.stage_time(i, at.t, dt);
            let (h, rates) = stage(sh, i, dt, &w.h);
            let (f32s, d32) = stage(s32, i, dt32, &mem.f32s);
            let (f64s, d64) = stage(s64, i, dt64, &mem.f64s);
            let input = StageIn {
                h,
                h0: &w.h0,
                shared: SharedView {
                    layout: &self.layout,
                    f32s,
                    f64s,
                    ints: &mem.ints,
                    bools: &mem.bools,
                },
            };
            let mut out = StageOut {
                stage: i,
                phase: at.phase,
                block: ctx.block_idx(),
                cfg: self.launch.cfg,
                layout: &self.layout,
                rates,
                jumps: &mut w.jumps,
                d32,
                d64,
                dints: &mut w.dints,
                flux_types: &self.flux_types,
                emits: &mut w.emits,
            };
            let at = StageAt { stage: i, t, ..at };
            self.kernel
                .stage(at, ctx, &input, &mut w.scratch, &mut out)?;
            let (first, this) = (w.emits.values[0].len(), w.emits.values[i].len());
            if this != first {
                return Err(FieldError::Invalid {
                    context: format!("phase {}, block {}", at.phase, ctx.block_idx()),
                    why: format!("stage {i} made {this} emissions, the first stage {first}"),
                });
            }
        }
        finish(sh, dt, &mut w.h);
        finish(s32, dt32, &mut mem.f32s);
        finish(s64, dt64, &mut mem.f64s);
        for (k, u) in phase.updates.iter().enumerate() {
            let col = k * lanes..(k + 1) * lanes;
            match u {
                RegisterUpdate::Rate => {}
                RegisterUpdate::Hold => w.h[col.clone()].copy_from_slice(&w.start[col]),
                RegisterUpdate::Jump => w.h[col.clone()].copy_from_slice(&w.jumps[col]),
            }
        }
        for (s, d) in mem.ints.iter_mut().zip(&w.dints) {
            *s = s.wrapping_add(*d);
        }
        Ok(())
    }
}

/// Stage `i` of `s` over `y` ([`Stepper::stage`]) with the stage's rates
/// zeroed; nothing for an empty state.
#[inline]
fn stage<'s, E: Real>(
    s: &'s mut Stepper<E>,
    i: usize,
    dt: E,
    y: &'s [E],
) -> (&'s [E], &'s mut [E]) {
    if s.is_empty() {
        return (&[], &mut []);
    }
    let (input, rates) = s.stage(i, dt, y);
    rates.fill(E::ZERO);
    (input, rates)
}

/// [`Stepper::finish`], nothing for an empty state.
#[inline]
fn finish<E: Real>(s: &mut Stepper<E>, dt: E, y: &mut [E]) {
    if !s.is_empty() {
        s.finish(dt, y);
    }
}

/// Zeroed flux buffers' types and lengths, and an empty log for each.
pub(super) fn flux_shapes(flux: &[FluxBuffer]) -> (Vec<(ScalarType, usize)>, Vec<TypedLog>) {
    (
        flux.iter().map(|b| (b.ty(), b.len())).collect(),
        flux.iter().map(TypedLog::for_buffer).collect(),
    )
}
