//! Flow phases: a kernel cut at its barriers into phases, each phase a vector
//! field on the block's state integrated over its own span by the launch's
//! integrator (any Butcher tableau), evaluated for a whole block at a time.
//!
//! The block's state is `y = (h of every lane, S)`: the registers, and the
//! float entries of the typed shared sub-field ([`SharedDecl`]). In a phase the
//! kernel gives, at every stage of every step ([`FlowKernel::stage`]):
//!
//! * the **rates** of its registers ([`StageOut::rates`]); registers a phase
//!   holds ([`RegisterUpdate::Hold`]) keep their bits;
//! * **drives** of shared entries ([`StageOut::drive`]): each trajectory's
//!   contribution to the rate of an entry, summed in call (lane) order;
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
//! flow, is the first-stage value. Emissions land in the fixed order of
//! [`crate::flux`]: block, step, then call order.
//!
//! Everything in a stage reads the stage's input; a phase starts from where
//! the previous one ended (the barrier between them).

use super::memory::TypedLog;
use super::memory::{FluxBuffer, Layout, SharedDecl, SharedMem, SharedView};
use super::{check_finite, out_of_bounds, BlockOutcome, PhasedLaunch};
use crate::error::FieldError;
use crate::executor::{gather_soa, scatter_soa};
use crate::field::BlockCtx;
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
    /// Steps of each repetition (`steps.len()` repetitions, in order).
    pub steps: Vec<usize>,
    /// One update per register.
    pub updates: Vec<RegisterUpdate>,
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

/// The emissions of one step: destinations (first stage) and each stage's values.
#[derive(Default)]
struct Emits {
    slots: Vec<(usize, usize)>,
    values: Vec<Vec<Value>>,
}

impl<T: Real> StageOut<'_, T> {
    fn fault(&self, what: &'static str, index: usize, len: usize, lane: usize) -> FieldError {
        out_of_bounds(what, index, len, self.phase, self.block, &self.cfg, lane)
    }
    fn mismatch(&self, what: String) -> FieldError {
        FieldError::Invalid {
            context: format!("phase {}, block {}", self.phase, self.block),
            why: what,
        }
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
        let Some(&(ty, len)) = self.flux_types.get(flux) else {
            return Err(self.mismatch(format!("flux buffer {flux} of {}", self.flux_types.len())));
        };
        if index >= len {
            return Err(self.fault("flux", index, len, lane));
        }
        if value.ty() != ty {
            return Err(self.mismatch(format!(
                "a {v:?} emitted into a {} flux buffer",
                ty.name(),
                v = value
            )));
        }
        let e = &mut *self.emits;
        let vals = &mut e.values[self.stage];
        if self.stage == 0 {
            e.slots.push((flux, index));
        } else if e.slots.get(vals.len()) != Some(&(flux, index)) {
            return Err(self.mismatch(format!(
                "stage {} emits into flux {flux}[{index}] where the first stage did not",
                self.stage
            )));
        }
        vals.push(value);
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
    steppers: (Stepper<T>, Stepper<f32>, Stepper<f64>),
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
            steppers: (
                Stepper::new(&tableau, len),
                Stepper::new(&tableau, self.layout.sizes[0]),
                Stepper::new(&tableau, self.layout.sizes[1]),
            ),
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
        let mut mem = self.layout.initial(self.kernel.shared());
        let dt64 = self.launch.barrier.dt;
        let dt = T::from_f64(dt64);
        let b: Vec<(usize, f64)> = {
            let t = self.launch.barrier.method.tableau();
            t.b()
                .iter()
                .copied()
                .enumerate()
                .filter(|(_, v)| *v != 0.0)
                .collect()
        };
        let mut segment = 0;
        let mut elapsed = 0.0f64;
        for (pi, phase) in self.kernel.phases().iter().enumerate() {
            for (rep, &steps) in phase.steps.iter().enumerate() {
                for n in 0..steps {
                    let at = StageAt {
                        phase: pi,
                        rep,
                        segment,
                        step: n,
                        stage: 0,
                        t: T::from_usize(n) * dt,
                    };
                    self.step(w, &mut mem, at, dt, &ctx, phase)?;
                    let e = &mut w.emits;
                    for (s, &(f, i)) in e.slots.iter().enumerate() {
                        out.flux[f].push(i, quadrature(&b, dt64, &e.values, s));
                    }
                }
                out.steps.push(steps);
                elapsed += steps as f64 * dt64;
                segment += 1;
                if self.launch.stop_on_non_finite {
                    check_finite(&w.h, dim, &ctx, elapsed)?;
                }
            }
        }
        if dim > 0 {
            scatter_soa(&w.h, chunk, lanes, dim);
        }
        Ok(())
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
        w.start.copy_from_slice(&w.h);
        w.dints.fill(0);
        w.emits.slots.clear();
        for v in &mut w.emits.values {
            v.clear();
        }
        let (sh, s32, s64) = &mut w.steppers;
        for i in 0..sh.stages() {
            let t = sh.stage_time(i, at.t, dt);
            let (h, rates) = sh.stage(i, dt, &w.h);
            let (f32s, d32) = s32.stage(i, dt32, &mem.f32s);
            let (f64s, d64) = s64.stage(i, dt64, &mem.f64s);
            rates.fill(T::ZERO);
            d32.fill(0.0);
            d64.fill(0.0);
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
        sh.finish(dt, &mut w.h);
        s32.finish(dt32, &mut mem.f32s);
        s64.finish(dt64, &mut mem.f64s);
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

/// Zeroed flux buffers' types and lengths, and an empty log for each.
pub(super) fn flux_shapes(flux: &[FluxBuffer]) -> (Vec<(ScalarType, usize)>, Vec<TypedLog>) {
    (
        flux.iter().map(|b| (b.ty(), b.len())).collect(),
        flux.iter().map(TypedLog::for_buffer).collect(),
    )
}
