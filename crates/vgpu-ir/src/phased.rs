//! [`IrPhased`]: a kernel with phases (shared sub-fields, barriers, flux) as the
//! field engine's [`FlowKernel`], so it runs through the one phased launch
//! ([`vgpu_field::PhasedLaunch::run_flow`]) with any Butcher tableau, a block
//! of lanes at a time through the batched evaluator.
//!
//! Every repetition of every phase is compiled once (its `k` and uniform values
//! baked in); per block, its per-lane nodes are computed once, its varying
//! nodes at every stage.

use crate::args::{Args, Buffer};
use crate::error::IrError;
use crate::eval::{self, Dims, Frame, Pools, Program, Src};
use crate::field::IrFloat;
use crate::kernel::{Kernel, NodeId, Phase, Update};
use crate::limits::Limits;
use crate::slice::Slice;
use crate::types::{ScalarType, Value};
use std::sync::Mutex;
use vgpu_field::phase::{
    FlowKernel, FlowPhase, FluxBuffer, RegisterUpdate, SharedDecl, StageAt, StageIn, StageOut,
};
use vgpu_field::{BlockCtx, FieldError};

/// One repetition of a phase, compiled.
struct Plan {
    prog: Program,
    phase: usize,
}

/// A phased kernel bound to its arguments and launch size.
pub(crate) struct IrPhased<'a> {
    k: &'a Kernel,
    args: &'a Args,
    lanes: usize,
    /// One per repetition of each phase, in order (the launch's segments).
    plans: Vec<Plan>,
    phases: Vec<FlowPhase>,
    shared: Vec<SharedDecl>,
    flux_lens: Vec<usize>,
    /// Global index of trajectory 0 and of block 0 (a [`Slice`] of a larger launch).
    offset: usize,
    block0: usize,
    /// The first evaluation fault of the lowest failing block.
    fault: Mutex<Option<(usize, IrError)>>,
}

/// Per-worker memory: the columns of the current segment and block and the
/// step's emissions (the evaluator reads the shared arrays where the executor
/// keeps them).
pub(crate) struct PhasedScratch {
    pools: Pools,
    /// The (block, segment) whose per-lane nodes `pools` holds.
    key: Option<(usize, usize)>,
    /// Emissions of the step: (emit statement, lane, index), from its first stage.
    slots: Vec<(usize, usize, usize)>,
}

/// A drive or an emit, as one lane sees it.
struct Target<'n> {
    guard: Option<NodeId>,
    index: NodeId,
    value: NodeId,
    ty: ScalarType,
    len: usize,
    name: &'n str,
    site: u32,
}

/// The number of whole steps `dt` in `span`.
///
/// # Errors
/// [`IrError::Launch`] for a bad step or span.
pub(crate) fn steps_of(kernel: &str, span: f64, dt: f64, what: &str) -> Result<usize, IrError> {
    let err = |message: String| IrError::Launch {
        kernel: kernel.into(),
        message,
    };
    if !(dt.is_finite() && dt > 0.0) {
        return Err(err(format!("dt = {dt} is not a positive finite step")));
    }
    if !(span.is_finite() && span >= 0.0) {
        return Err(err(format!(
            "{what} = {span} is not a finite, non-negative span"
        )));
    }
    let s = (span / dt).round();
    if (s * dt - span).abs() > 1e-9 * span.abs().max(1.0) || s > 1e12 {
        return Err(err(format!(
            "{what} = {span} is not a whole number of steps dt = {dt}"
        )));
    }
    Ok(s as usize)
}

/// Refuses a step other than 1 for a phase with unit-time segments (jumps,
/// integer drives and emits: exact flows of unit pieces).
///
/// # Errors
/// [`IrError::Launch`] naming the phase.
pub(crate) fn check_unit_time(k: &Kernel, p: &Phase, dt: f64) -> Result<(), IrError> {
    let unit = p.updates.iter().any(|u| matches!(u, Update::Jump(_)))
        || p.drives
            .iter()
            .any(|d| !k.shared[d.shared as usize].ty.is_float())
        || p.emits
            .iter()
            .any(|e| !k.fluxes[e.flux as usize].ty.is_float());
    if unit && dt != 1.0 {
        return Err(IrError::Launch {
            kernel: k.name.clone(),
            message: format!(
                "phase `{}` has jumps or integer drives/emits: they are unit-time segments and need dt = 1 (got {dt})",
                p.name
            ),
        });
    }
    Ok(())
}

impl<'a> IrPhased<'a> {
    /// Binds phased `k` to `args` for `blocks` blocks of `lanes`, integrated with step `dt`.
    ///
    /// # Errors
    /// Out-of-bounds reads at uniform indices, spans that are not whole steps,
    /// unit-time phases (jumps, integer drives and emits) with `dt ≠ 1`, a
    /// driven `bool` shared sub-field, a `bool` flux output, sizes over `limits`
    /// (checked before anything of that size is allocated or compiled).
    pub(crate) fn new(
        k: &'a Kernel,
        args: &'a Args,
        lanes: usize,
        blocks: usize,
        dt: f64,
        limits: &Limits,
        slice: Slice,
    ) -> Result<Self, IrError> {
        let launch_err = |message: String| IrError::Launch {
            kernel: k.name.clone(),
            message,
        };
        let var = k.variance();
        debug_assert!(slice.first + lanes * blocks <= slice.total);
        let base = Dims {
            bdim: lanes as u32,
            gdim: slice.blocks(lanes) as u32,
            n: slice.total as u32,
            rep: 0,
        };
        // Lengths and initial values of shared sub-fields and flux outputs, repeats.
        let mut roots: Vec<NodeId> = vec![];
        for s in &k.shared {
            roots.extend([s.len, s.init]);
        }
        roots.extend(k.fluxes.iter().map(|f| f.len));
        roots.extend(k.phases.iter().filter_map(|p| p.repeat));
        let uni = eval::uniform_values(k, &k.reachable(&roots), &var, args, base)?;
        let sizes = limits.sizes(k, &uni)?;
        let shared = k
            .shared
            .iter()
            .zip(&sizes.shared)
            .map(|(s, &len)| {
                let init = uni[s.init.index()].ok_or_else(|| {
                    launch_err(format!(
                        "shared `{}`: its initial value is not uniform",
                        s.name
                    ))
                })?;
                Ok(SharedDecl {
                    name: s.name.clone(),
                    len: len as usize,
                    init,
                })
            })
            .collect::<Result<_, IrError>>()?;
        if let Some(f) = k.fluxes.iter().find(|f| f.ty == ScalarType::Bool) {
            return Err(launch_err(format!(
                "flux output `{}` is bool: only numbers accumulate",
                f.name
            )));
        }
        let flux_lens = sizes.flux.iter().map(|&l| l as usize).collect();
        let mut plans = Vec::new();
        let mut phases = Vec::new();
        let mut total_steps = 0u128;
        for (pi, p) in k.phases.iter().enumerate() {
            if let Some(d) = p
                .drives
                .iter()
                .find(|d| k.shared[d.shared as usize].ty == ScalarType::Bool)
            {
                return Err(launch_err(format!(
                    "phase `{}` drives `{}`, a bool shared sub-field: only numbers have rates",
                    p.name, k.shared[d.shared as usize].name
                )));
            }
            check_unit_time(k, p, dt)?;
            let span = p.span.expect("phased");
            let mut steps = vec![];
            for rep in 0..sizes.repeats[pi] {
                let dims = Dims { rep, ..base };
                let mut roots = k.phase_roots(p);
                roots.push(span);
                let uni = eval::uniform_values(k, &k.reachable(&roots), &var, args, dims)?;
                let span_v = uni[span.index()].map(|v| v.as_f64()).unwrap_or(f64::NAN);
                let what = format!("the span of phase `{}`", p.name);
                let s = steps_of(&k.name, span_v, dt, &what)?;
                total_steps = total_steps.saturating_add(s as u128);
                limits.check_steps(k, pi, total_steps)?;
                steps.push(s);
                plans.push(Plan {
                    prog: Program::build(k, &k.phase_roots(p), &var, &uni),
                    phase: pi,
                });
            }
            let updates = p
                .updates
                .iter()
                .map(|u| match u {
                    Update::Hold => RegisterUpdate::Hold,
                    Update::Rate(_) => RegisterUpdate::Rate,
                    Update::Jump(_) => RegisterUpdate::Jump,
                })
                .collect();
            phases.push(FlowPhase::fixed(steps, updates));
        }
        Ok(IrPhased {
            k,
            args,
            lanes,
            plans,
            phases,
            shared,
            flux_lens,
            offset: slice.first,
            block0: slice.first_block(lanes),
            fault: Mutex::new(None),
        })
    }

    /// Zeroed flux buffers, one per flux output (none is `bool`: refused by [`IrPhased::new`]).
    pub(crate) fn flux_buffers(&self) -> Vec<FluxBuffer> {
        self.k
            .fluxes
            .iter()
            .zip(&self.flux_lens)
            .filter_map(|(f, &len)| FluxBuffer::zeros(f.ty, len))
            .collect()
    }

    /// The flux outputs by name, as buffers.
    pub(crate) fn flux_outputs(&self, bufs: Vec<FluxBuffer>) -> Vec<(String, Buffer)> {
        self.k
            .fluxes
            .iter()
            .zip(bufs)
            .map(|(f, b)| (f.name.clone(), b.into()))
            .collect()
    }

    /// Steps per trajectory over all phases.
    pub(crate) fn total_steps(&self) -> usize {
        self.phases.iter().flat_map(|p| &p.steps).sum()
    }

    /// The evaluation fault behind a launch error, if the error stands for one.
    pub(crate) fn take_fault(&self, e: &FieldError) -> Option<IrError> {
        if !matches!(e, FieldError::Invalid { .. }) {
            return None;
        }
        self.fault
            .lock()
            .ok()
            .and_then(|mut f| f.take())
            .map(|(_, e)| e)
    }

    /// Records `e` for `block` (the lowest block's is kept); the launch error standing for it.
    fn fail(&self, block: usize, e: IrError) -> FieldError {
        let why = e.to_string();
        if let Ok(mut slot) = self.fault.lock() {
            if slot.as_ref().is_none_or(|(b, _)| block < *b) {
                *slot = Some((block, e));
            }
        }
        FieldError::Invalid {
            context: format!("kernel `{}`", self.k.name),
            why,
        }
    }

    /// Lane `l`'s drive or emit: `None` where its guard is false, else the
    /// index (checked against the length: an out-of-bounds error names the
    /// sub-field or output, the trajectory and the statement's place) and the value.
    fn target(
        &self,
        plan: &Plan,
        pools: &Pools,
        fr: &Frame<'_>,
        t: &Target<'_>,
        l: usize,
    ) -> Result<Option<(usize, Value)>, IrError> {
        let read = |n: NodeId, ty: ScalarType| {
            eval::read_src(
                plan.prog.src[n.index()].expect("compiled"),
                ty,
                pools,
                fr,
                l,
            )
        };
        if let Some(g) = t.guard {
            if read(g, ScalarType::Bool) != Value::Bool(true) {
                return Ok(None);
            }
        }
        let i = eval::index_of(read(t.index, self.k.ty(t.index)));
        if i < 0 || i as usize >= t.len {
            return Err(eval::oob(
                self.k,
                t.name,
                t.len,
                i,
                fr.first + l,
                self.lanes as u32,
                self.k.sites[t.site as usize],
            ));
        }
        Ok(Some((i as usize, read(t.value, t.ty))))
    }
}

/// Writes the lanes' values of `src` into `out`.
fn column<T: IrFloat>(src: Src, pools: &Pools, h: &[T], h0: &[T], t: T, out: &mut [T]) {
    let lanes = out.len();
    let col = |c: usize| c * lanes..(c + 1) * lanes;
    match src {
        Src::Col(c) => out.copy_from_slice(&T::pool(pools)[c as usize * pools.width..][..lanes]),
        Src::State(j) => out.copy_from_slice(&h[col(j as usize)]),
        Src::Init(j) => out.copy_from_slice(&h0[col(j as usize)]),
        Src::Imm(v) => out.fill(T::from_value(v)),
        Src::Time => out.fill(t),
    }
}

impl<T: IrFloat> FlowKernel<T> for IrPhased<'_> {
    type Params = ();
    type Scratch = PhasedScratch;

    fn dim(&self) -> usize {
        self.k.states.len()
    }

    fn shared(&self) -> &[SharedDecl] {
        &self.shared
    }

    fn phases(&self) -> &[FlowPhase] {
        &self.phases
    }

    fn scratch(&self, lanes: usize) -> PhasedScratch {
        PhasedScratch {
            pools: Pools::new([0; 4], lanes),
            key: None,
            slots: vec![],
        }
    }

    fn stage(
        &self,
        at: StageAt<T>,
        ctx: &BlockCtx<'_, ()>,
        input: &StageIn<'_, T>,
        sc: &mut PhasedScratch,
        out: &mut StageOut<'_, T>,
    ) -> Result<(), FieldError> {
        let (k, lanes) = (self.k, self.lanes);
        let plan = &self.plans[at.segment];
        let p = &k.phases[plan.phase];
        let block = ctx.block_linear();
        let first = self.offset + ctx.first();
        let fr = Frame {
            k,
            args: self.args,
            lanes,
            first,
            block: (self.block0 + block) as u32,
            bdim: lanes as u32,
            h: T::cols(input.h),
            h0: T::cols(input.h0),
            t: Value::F64(at.t.to_f64()).cast(T::TYPE),
            shared: Some(input.shared),
            last: lanes,
        };
        let mut fault = None;
        if sc.key != Some((block, at.segment)) {
            if sc.key.map(|(_, s)| s) != Some(at.segment) {
                sc.pools = Pools::new(plan.prog.slots, lanes);
            }
            eval::run(&plan.prog.lane, &mut sc.pools, &fr, &mut fault);
            sc.key = Some((block, at.segment));
        }
        eval::run(&plan.prog.vary, &mut sc.pools, &fr, &mut fault);
        if let Some(f) = fault {
            sc.key = None;
            return Err(self.fail(block, f.into_error(k, first, lanes as u32)));
        }
        let src = |n: &NodeId| plan.prog.src[n.index()].expect("compiled");
        for (s, u) in p.updates.iter().enumerate() {
            let (r, dst) = match u {
                Update::Rate(r) => (r, out.rates()),
                Update::Jump(r) if out.first_stage() => (r, out.jumps()),
                _ => continue,
            };
            let dst = &mut dst[s * lanes..(s + 1) * lanes];
            column(src(r), &sc.pools, input.h, input.h0, at.t, dst);
        }
        let bad = |e: IrError| self.fail(block, e);
        for d in &p.drives {
            let sh = &k.shared[d.shared as usize];
            if !sh.ty.is_float() && !out.first_stage() {
                continue; // integer drives are unit flows, read at the first stage
            }
            let t = Target {
                guard: d.guard,
                index: d.index,
                value: d.value,
                ty: sh.ty,
                len: self.shared[d.shared as usize].len,
                name: &sh.name,
                site: d.site,
            };
            for l in 0..lanes {
                if let Some((i, v)) = self.target(plan, &sc.pools, &fr, &t, l).map_err(bad)? {
                    out.drive(d.shared as usize, l, i, v)?;
                }
            }
        }
        if out.first_stage() {
            sc.slots.clear();
            for (ei, e) in p.emits.iter().enumerate() {
                let f = &k.fluxes[e.flux as usize];
                let t = Target {
                    guard: e.guard,
                    index: e.index,
                    value: e.value,
                    ty: f.ty,
                    len: self.flux_lens[e.flux as usize],
                    name: &f.name,
                    site: e.site,
                };
                for l in 0..lanes {
                    if let Some((i, v)) = self.target(plan, &sc.pools, &fr, &t, l).map_err(bad)? {
                        sc.slots.push((ei, l, i));
                        out.emit(e.flux as usize, l, i, v)?;
                    }
                }
            }
        } else {
            for &(ei, l, i) in &sc.slots {
                let e = &p.emits[ei];
                let ty = k.fluxes[e.flux as usize].ty;
                let v = eval::read_src(src(&e.value), ty, &sc.pools, &fr, l);
                out.emit(e.flux as usize, l, i, v)?;
            }
        }
        Ok(())
    }
}
