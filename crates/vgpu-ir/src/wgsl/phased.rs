//! The WGSL emitter for fields with phases: one workgroup integrates one block.
//!
//! * A block is a workgroup of [`PhasedLayout::block`] invocations, one per
//!   trajectory; its states live in each invocation's registers.
//! * A shared sub-field (`__shared__`) is a `var<workgroup>` array, filled with
//!   its initial value once at launch and kept across phases.
//! * A phase integrates its span from local time 0 with the launch's integrator
//!   (any Butcher tableau), each repetition with the steps the host computed
//!   ([`PhasedLayout::schedule`]), as the CPU's flow phases do: the block's
//!   state is its registers and the float shared elements, advanced together
//!   stage by stage. Within a stage every invocation evaluates everything at
//!   the stage's input (states, shared elements, time); a phase that drives
//!   shared memory then collapses the basin: `workgroupBarrier()`, each shared
//!   element's rate and its next stage input (or, after the last stage, its
//!   step), `workgroupBarrier()`, so the next stage, step and phase read
//!   settled values. Phases without drives need no barrier. Jumps, integer
//!   drives and integer emissions are unit flows taken from the first stage;
//!   float emissions are the tableau's quadrature `Σ (dt·b_i)·v_i` of the
//!   emitted rate, into the element the first stage names.
//! * Drives are summed per element in lane order, drive by drive, exactly as the
//!   CPU does: a drive at `s[tid]` (the only one into `s` in its phase) is applied
//!   by its own lane; any other float drive writes each lane's (index, value)
//!   into workgroup arrays, and the owner of each element sums them in order;
//!   integer drives go through workgroup atomics (integer addition commutes:
//!   any order gives the same bits).
//!   Shared results are therefore the CPU's bits wherever WGSL's arithmetic is.
//! * A flux output (`atomicAdd`) is a storage buffer of atomics, zero at launch:
//!   native `atomicAdd` for `i32`/`u32` (exact: integer addition commutes), and
//!   for `f32` (WGSL has no float atomics) an `atomic<u32>` holding the bits,
//!   added to by a compare-exchange loop. The order in which invocations add
//!   to a float flux is the GPU's: float fluxes are not deterministic on the GPU
//!   and agree with the CPU's fixed-order sum only to rounding (compare them
//!   with a tolerance).
//!
//! Bindings (group 0): those of [`crate::wgsl`] (`0` endpoint states, `1` launch
//! words, `2` fault record, then the buffer parameters), then one binding per
//! flux output in declaration order ([`PhasedLayout::flux_binding`]). The launch
//! words ([`PhasedLayout::launch_words`]) are [`meta_words`], then each flux
//! output's length, then the schedule: per phase, its repetition count followed
//! by the steps of each repetition.
//!
//! Refused ([`IrError::Unsupported`]): `f64` anywhere, drives into a `bool`
//! shared sub-field.

use super::{
    emit_prelude, expr_with, literal, meta_words, wty, ParamSlots, FIRST_BUFFER_BINDING,
    META_HEADER,
};
use crate::args::Args;
use crate::error::IrError;
use crate::eval::{self, Dims};
use crate::kernel::{Builtin, Kernel, Node, NodeId, Update, Variance};
use crate::limits::Limits;
use crate::phased::{check_unit_time, steps_of};
use crate::run::Integration;
use crate::types::{ScalarType, Value};
use std::fmt::Write;
use vgpu_field::Method;

/// Marks an inactive drive contribution (guard false or index out of range).
const NO_ELEMENT: &str = "0xffffffffu";

fn unsupported(k: &Kernel, reason: impl Into<String>) -> IrError {
    IrError::Unsupported {
        kernel: k.name.clone(),
        backend: "gpu (WGSL, phases)".into(),
        reason: reason.into(),
    }
}

fn launch_err(k: &Kernel, message: String) -> IrError {
    IrError::Launch {
        kernel: k.name.clone(),
        message,
    }
}

/// Whether the phased kernel `k` can run as WGSL (with any integrator), and why not.
///
/// # Errors
/// [`IrError::Unsupported`] for an unphased kernel, `f64` anywhere, or a drive
/// into a `bool` shared sub-field.
pub fn check_phased_wgsl(k: &Kernel) -> Result<(), IrError> {
    if !k.is_phased() {
        return Err(unsupported(
            k,
            "the field has no phases: emit it with `emit_wgsl`",
        ));
    }
    if k.types.contains(&ScalarType::F64) || k.params.iter().any(|p| p.ty == ScalarType::F64) {
        return Err(unsupported(
            k,
            "WGSL has no portable f64: run f64 fields on the CPU (--backend cpu)",
        ));
    }
    for p in &k.phases {
        for d in &p.drives {
            let s = &k.shared[d.shared as usize];
            if s.ty == ScalarType::Bool {
                return Err(unsupported(
                    k,
                    format!(
                        "phase `{}` drives the bool shared sub-field `{}`",
                        p.name, s.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A phased launch resolved against its arguments: block geometry, the lengths
/// of shared sub-fields and flux outputs, and every phase repetition's steps.
#[derive(Clone, Debug, PartialEq)]
pub struct PhasedLayout {
    /// Trajectories per block: the workgroup size.
    pub block: u32,
    /// Blocks: the number of workgroups.
    pub blocks: u32,
    /// The step.
    pub dt: f64,
    /// Elements of each shared sub-field, in declaration order.
    pub shared_lens: Vec<u32>,
    /// Elements of each flux output, in declaration order.
    pub flux_lens: Vec<u32>,
    /// Per phase, the steps of each of its repetitions.
    pub schedule: Vec<Vec<u32>>,
    /// Steps over all phases and repetitions.
    pub steps: usize,
}

impl PhasedLayout {
    /// Resolves `k`'s phased launch `integ` against `args`, with the checks the
    /// CPU executor makes: whole blocks, spans that are whole numbers of steps,
    /// `dt = 1` for phases with jumps or integer drives and emits.
    ///
    /// # Errors
    /// [`IrError::Unsupported`] (see [`check_phased_wgsl`]), missing arguments,
    /// a bad launch ([`IrError::Launch`]), out-of-range reads in lengths, spans
    /// or repetition counts.
    pub fn new(k: &Kernel, args: &Args, integ: &Integration) -> Result<PhasedLayout, IrError> {
        PhasedLayout::new_with(k, args, integ, &Limits::default())
    }

    /// [`PhasedLayout::new`] with the sizes taken from the input held against
    /// `limits` instead of [`Limits::default`].
    ///
    /// # Errors
    /// Those of [`PhasedLayout::new`]; [`IrError::Limit`] for a shared, flux or
    /// repetition size over `limits`; [`IrError::Malformed`] (see [`Kernel::validate`]).
    pub fn new_with(
        k: &Kernel,
        args: &Args,
        integ: &Integration,
        limits: &Limits,
    ) -> Result<PhasedLayout, IrError> {
        k.validate()?;
        check_phased_wgsl(k)?;
        args.check_complete()?;
        let n = integ.n;
        let block = integ.block;
        if n == 0 || n > u32::MAX as usize {
            return Err(launch_err(k, format!("n = {n} is out of range 1..2^32")));
        }
        if block == 0 || n % block as usize != 0 {
            return Err(launch_err(k, format!(
                "a field with phases runs whole blocks: n = {n} is not a multiple of the block size {block}"
            )));
        }
        let blocks = (n / block as usize) as u32;
        let dt = integ.dt;
        let var = k.variance();
        let base = Dims {
            bdim: block,
            gdim: blocks,
            n: n as u32,
            rep: 0,
        };
        let mut roots: Vec<NodeId> = k.shared.iter().map(|s| s.len).collect();
        roots.extend(k.fluxes.iter().map(|f| f.len));
        roots.extend(k.phases.iter().filter_map(|p| p.repeat));
        let uni = eval::uniform_values(k, &k.reachable(&roots), &var, args, base)?;
        let sizes = limits.sizes(k, &uni)?;
        let mut schedule = Vec::with_capacity(k.phases.len());
        let mut steps = 0usize;
        for (pi, (p, &reps)) in k.phases.iter().zip(&sizes.repeats).enumerate() {
            let span = p.span.expect("a phased field's phases have spans");
            check_unit_time(k, p, dt)?;
            let reach = k.reachable(&[span]);
            let mut rep_steps = Vec::with_capacity(reps as usize);
            for rep in 0..reps {
                let uni = eval::uniform_values(k, &reach, &var, args, Dims { rep, ..base })?;
                let span_v = uni[span.index()].map(|v| v.as_f64()).unwrap_or(f64::NAN);
                let what = format!("the span of phase `{}`", p.name);
                let s = steps_of(&k.name, span_v, dt, &what)?;
                limits.check_steps(k, pi, steps as u128 + s as u128)?;
                let s32 = u32::try_from(s).map_err(|_| {
                    launch_err(
                        k,
                        format!(
                            "phase `{}` takes {s} steps: more than 2^32 - 1 on the GPU",
                            p.name
                        ),
                    )
                })?;
                steps = steps.saturating_add(s);
                rep_steps.push(s32);
            }
            schedule.push(rep_steps);
        }
        Ok(PhasedLayout {
            block,
            blocks,
            dt,
            shared_lens: sizes.shared,
            flux_lens: sizes.flux,
            schedule,
            steps,
        })
    }

    /// The binding of flux output `f` (after the buffer parameters).
    pub fn flux_binding(k: &Kernel, f: usize) -> u32 {
        FIRST_BUFFER_BINDING + k.params.iter().filter(|p| p.buffer).count() as u32 + f as u32
    }

    /// The launch words of binding 1 (see the module docs).
    ///
    /// # Errors
    /// Missing arguments; an `f64` scalar.
    pub fn launch_words(&self, k: &Kernel, args: &Args) -> Result<Vec<u32>, IrError> {
        let n = self.block * self.blocks;
        let mut w = meta_words(
            k,
            args,
            n,
            self.steps.min(u32::MAX as usize) as u32,
            0.0,
            self.dt,
        )?;
        w.extend(&self.flux_lens);
        for reps in &self.schedule {
            w.push(reps.len() as u32);
            w.extend(reps);
        }
        Ok(w)
    }
}

/// A phased kernel's compute shader and what it asks of the device.
#[derive(Clone, Debug, PartialEq)]
pub struct PhasedWgsl {
    /// The WGSL source (entry point `main`, workgroup size [`PhasedLayout::block`]).
    pub source: String,
    /// Bytes of workgroup memory it declares (shared sub-fields and drive
    /// contribution arrays), to hold against the device's limit.
    pub workgroup_bytes: u64,
}

/// How a phase's drives into one shared sub-field are applied.
enum DrivePlan {
    /// The only drive into the sub-field, at `s[tid]`: lane `tid` applies its own.
    Own(usize),
    /// Drives (indices into the phase's drives) whose contributions go through
    /// workgroup arrays; slot `q` of the sub-field holds the `q`-th.
    Gathered(Vec<usize>),
}

fn drive_plans(k: &Kernel, phase: usize) -> Vec<Option<DrivePlan>> {
    let p = &k.phases[phase];
    (0..k.shared.len())
        .map(|j| {
            let ds: Vec<usize> = (0..p.drives.len())
                .filter(|&d| p.drives[d].shared as usize == j)
                .collect();
            match ds.as_slice() {
                [] => None,
                [d] if k.nodes[p.drives[*d].index.index()] == Node::Builtin(Builtin::Thread) => {
                    Some(DrivePlan::Own(*d))
                }
                _ => Some(DrivePlan::Gathered(ds)),
            }
        })
        .collect()
}

/// How a stage names what it reads: states `y{s}` (its input), initial values
/// `i{s}`, time `ts`, everything else `n{node}`; shared sub-fields marked in
/// `staged` read their stage input (`sldx`) instead of the step's start.
struct Stage<'a> {
    k: &'a Kernel,
    staged: &'a [bool],
}

impl Stage<'_> {
    fn name(&self, n: NodeId) -> String {
        match self.k.nodes[n.index()] {
            Node::Const(v) => literal(v),
            Node::State(s) => format!("y{s}"),
            Node::Init(s) => format!("i{s}"),
            Node::Builtin(Builtin::Time) => "ts".into(),
            _ => format!("n{}", n.index()),
        }
    }

    /// Emits `let n{i} = …;` for each of `nodes` not done yet, marking them done.
    fn lets(
        &self,
        s: &mut String,
        indent: &str,
        nodes: &[NodeId],
        done: &mut [bool],
        ms: &dyn Fn(u32) -> usize,
    ) {
        let k = self.k;
        let r = |n: NodeId| self.name(n);
        for &n in nodes {
            if done[n.index()] {
                continue;
            }
            done[n.index()] = true;
            let e = match k.nodes[n.index()] {
                Node::Const(_) | Node::State(_) | Node::Init(_) | Node::Builtin(Builtin::Time) => {
                    continue
                }
                Node::Builtin(Builtin::Repetition) => "rep".to_string(),
                Node::SharedLoad {
                    shared,
                    index,
                    site,
                } => {
                    let x = if self.staged[shared as usize] {
                        "x"
                    } else {
                        ""
                    };
                    format!("sld{x}{shared}(u32({}), {site}u, gid)", r(index))
                }
                _ => expr_with(k, n, &r, ms),
            };
            let _ = writeln!(s, "{indent}let n{} = {e};", n.index());
        }
    }
}

fn zero(ty: ScalarType) -> String {
    literal(Value::U32(0).cast(ty))
}

/// The nonzero entries of a tableau row, as `(stage, coefficient)`.
fn terms(row: &[f64]) -> Vec<(usize, f64)> {
    row.iter()
        .copied()
        .enumerate()
        .filter(|(_, v)| *v != 0.0)
        .collect()
}

/// `base + (cX_0 * v(j_0) + cX_1 * v(j_1) + …)` over `terms` (the stepper's
/// combination, its `dt·coefficient` products named `coef(j)`); `base` alone
/// when there are none.
fn combine(
    base: &str,
    terms: &[(usize, f64)],
    coef: &dyn Fn(usize) -> String,
    v: &dyn Fn(usize) -> String,
) -> String {
    if terms.is_empty() {
        return base.to_string();
    }
    let sum = terms
        .iter()
        .map(|(j, _)| format!("{} * {}", coef(*j), v(*j)))
        .collect::<Vec<_>>()
        .join(" + ");
    format!("{base} + ({sum})")
}

/// Emits the compute shader integrating the phased kernel `k` with `method`
/// over `layout` (only its block size and shared lengths shape the source;
/// the rest travels in the launch words).
///
/// # Errors
/// [`IrError::Unsupported`] (see [`check_phased_wgsl`]).
pub fn emit_wgsl_phased(
    k: &Kernel,
    method: Method,
    layout: &PhasedLayout,
) -> Result<PhasedWgsl, IrError> {
    check_phased_wgsl(k)?;
    if layout.shared_lens.len() != k.shared.len() {
        return Err(unsupported(k, "the layout was resolved for another kernel"));
    }
    let tableau = method.tableau();
    let stages = tableau.stages();
    let wg = layout.block;
    let dim = k.states.len();
    let slots = ParamSlots::of(k);
    let ms = |p: u32| slots.scalar[p as usize];
    let n_scalars = k.params.iter().filter(|p| !p.buffer).count();
    let n_buffers = k.params.len() - n_scalars;
    let flux_word = META_HEADER + n_buffers + n_scalars;
    let sched_word = flux_word + k.fluxes.len();
    let plans: Vec<Vec<Option<DrivePlan>>> =
        (0..k.phases.len()).map(|p| drive_plans(k, p)).collect();
    // Contribution slots per float shared sub-field: the most gathered drives
    // of any phase. Integer ones gather through workgroup atomics instead
    // (`ia`): integer addition commutes, so any order gives the same bits.
    let atomic_int: Vec<bool> = (0..k.shared.len())
        .map(|j| {
            !k.shared[j].ty.is_float()
                && plans
                    .iter()
                    .any(|pp| matches!(pp[j], Some(DrivePlan::Gathered(_))))
        })
        .collect();
    let gathered_slots: Vec<usize> = (0..k.shared.len())
        .map(|j| {
            plans
                .iter()
                .map(|pp| match &pp[j] {
                    Some(DrivePlan::Gathered(ds)) => ds.len(),
                    _ => 0,
                })
                .max()
                .unwrap_or(0)
        })
        .collect();
    // Float sub-fields some phase drives: with several stages they carry a stage
    // input (`sx`) and each stage's rates (`rk`).
    let staged_any: Vec<bool> = (0..k.shared.len())
        .map(|j| stages > 1 && k.shared[j].ty.is_float() && plans.iter().any(|pp| pp[j].is_some()))
        .collect();

    let mut s = String::new();
    let _ = writeln!(
        s,
        "// Generated by vgpu-ir from field `{}` ({}): {} phases, integrator {}, block {wg}.",
        k.name,
        k.source,
        k.phases.len(),
        tableau.name()
    );
    let _ = writeln!(s, "const WG: u32 = {wg}u;");
    emit_prelude(&mut s, k, &slots);
    let mut workgroup_bytes = 0u64;
    for (j, sh) in k.shared.iter().enumerate() {
        let len = layout.shared_lens[j];
        let t = wty(sh.ty);
        let z = zero(sh.ty);
        let _ = writeln!(s, "var<workgroup> sh{j}: array<{t}, {}>;", len.max(1));
        workgroup_bytes += 4 * len.max(1) as u64;
        if atomic_int[j] {
            let _ = writeln!(
                s,
                "var<workgroup> ia{j}: array<atomic<{t}>, {}>;",
                len.max(1)
            );
            workgroup_bytes += 4 * len.max(1) as u64;
        }
        for q in 0..if atomic_int[j] { 0 } else { gathered_slots[j] } {
            let _ = writeln!(s, "var<workgroup> di{j}_{q}: array<u32, WG>;");
            let _ = writeln!(s, "var<workgroup> dv{j}_{q}: array<{t}, WG>;");
            workgroup_bytes += 8 * wg as u64;
        }
        let _ = writeln!(
            s,
            "fn sld{j}(i: u32, site: u32, gid: u32) -> {t} {{\n    if (i >= {len}u) {{ report(site, i, gid); return {z}; }}\n    return sh{j}[i];\n}}"
        );
        if staged_any[j] {
            let _ = writeln!(s, "var<workgroup> sx{j}: array<{t}, {}>;", len.max(1));
            for i in 0..stages {
                let _ = writeln!(s, "var<workgroup> rk{j}_{i}: array<{t}, {}>;", len.max(1));
            }
            workgroup_bytes += 4 * (stages as u64 + 1) * len.max(1) as u64;
            let _ = writeln!(
                s,
                "fn sldx{j}(i: u32, site: u32, gid: u32) -> {t} {{\n    if (i >= {len}u) {{ report(site, i, gid); return {z}; }}\n    return sx{j}[i];\n}}"
            );
        }
    }
    for (f, fx) in k.fluxes.iter().enumerate() {
        let binding = PhasedLayout::flux_binding(k, f);
        let (atom, t) = match fx.ty {
            ScalarType::I32 => ("i32", "i32"),
            ScalarType::U32 => ("u32", "u32"),
            _ => ("u32", "f32"),
        };
        let _ = writeln!(
            s,
            "@group(0) @binding({binding}) var<storage, read_write> fx{f}: array<atomic<{atom}>>;"
        );
        let add = if fx.ty.is_float() {
            format!("    var old = atomicLoad(&fx{f}[i]);\n    loop {{\n        let r = atomicCompareExchangeWeak(&fx{f}[i], old, bitcast<u32>(bitcast<f32>(old) + v));\n        if (r.exchanged) {{ break; }}\n        old = r.old_value;\n    }}")
        } else {
            format!("    atomicAdd(&fx{f}[i], v);")
        };
        let _ = writeln!(
            s,
            "fn emit{f}(i: u32, v: {t}, site: u32, gid: u32) {{\n    if (i >= launch[{}u]) {{ report(site, i, gid); return; }}\n{add}\n}}",
            flux_word + f
        );
    }

    // The entry point: geometry, the tableau's dt-products, initial states, shared sub-fields.
    s.push_str("@compute @workgroup_size(WG)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) grid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {\n");
    s.push_str("    let wg = wid.y * grid.x + wid.x;\n    let nwg = vec3<u32>(launch[0] / WG, 1u, 1u);\n    if (wg >= nwg.x) { return; }\n");
    s.push_str("    let gid = wg * WG + lid;\n    let dt = bitcast<f32>(launch[3]);\n");
    let lit = |v: f64| literal(Value::F32(v as f32));
    for i in 0..stages {
        let _ = writeln!(s, "    let cc{i} = {} * dt;", lit(tableau.c()[i]));
        let _ = writeln!(s, "    let cb{i} = dt * {};", lit(tableau.b()[i]));
        for (j, a) in terms(tableau.a(i)) {
            let _ = writeln!(s, "    let ca{i}_{j} = dt * {};", lit(a));
        }
    }
    let none = vec![false; k.shared.len()];
    let top = Stage { k, staged: &none };
    let mut done = vec![false; k.nodes.len()];
    let mut top_roots: Vec<NodeId> = k.states.iter().map(|st| st.init).collect();
    top_roots.extend(k.shared.iter().map(|sh| sh.init));
    top.lets(&mut s, "    ", &k.reachable(&top_roots), &mut done, &ms);
    for (j, st) in k.states.iter().enumerate() {
        let _ = writeln!(
            s,
            "    let i{j} = {};\n    var h{j}: f32 = i{j};",
            top.name(st.init)
        );
    }
    for (j, sh) in k.shared.iter().enumerate() {
        let clear = if atomic_int[j] {
            format!(" atomicStore(&ia{j}[e], {});", zero(sh.ty))
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "    for (var e = lid; e < {}u; e = e + WG) {{ sh{j}[e] = {};{clear} }}",
            layout.shared_lens[j],
            top.name(sh.init)
        );
    }
    if !k.shared.is_empty() {
        s.push_str("    workgroupBarrier();\n");
    }
    let _ = writeln!(s, "    var w = {sched_word}u;");
    let var = k.variance();
    for (pi, p) in k.phases.iter().enumerate() {
        let _ = writeln!(
            s,
            "    // phase `{}`\n    {{\n        let reps = launch[w];\n        w = w + 1u;\n        for (var rep = 0u; rep < reps; rep = rep + 1u) {{\n            let steps = launch[w];\n            w = w + 1u;",
            p.name
        );
        let reach = k.reachable(&k.phase_roots(p));
        let mut pdone = done.clone();
        let per_rep: Vec<NodeId> = reach
            .iter()
            .copied()
            .filter(|n| var[n.index()] != Variance::Varying)
            .collect();
        top.lets(&mut s, "            ", &per_rep, &mut pdone, &ms);
        s.push_str("            for (var step = 0u; step < steps; step = step + 1u) {\n                let t = f32(step) * dt;\n");
        let ctx = StepCtx {
            k,
            pi,
            plans: &plans[pi],
            layout,
            tableau: &tableau,
            staged: (0..k.shared.len())
                .map(|j| staged_any[j] && plans[pi][j].is_some())
                .collect(),
        };
        ctx.emit(&mut s, &reach, &pdone, &ms);
        s.push_str("            }\n        }\n    }\n");
    }
    for j in 0..dim {
        let _ = writeln!(s, "    out[gid * {dim}u + {j}u] = h{j};");
    }
    s.push_str("}\n");
    Ok(PhasedWgsl {
        source: s,
        workgroup_bytes,
    })
}

/// One step of one phase: its stages (each evaluating the field at its input,
/// then, where the phase drives shared memory, a basin collapse), then the
/// step's end (registers, jumps, flux).
struct StepCtx<'a> {
    k: &'a Kernel,
    pi: usize,
    plans: &'a [Option<DrivePlan>],
    layout: &'a PhasedLayout,
    tableau: &'a vgpu_field::Tableau,
    /// Shared sub-fields this phase advances through stage inputs (`sx`, `rk`).
    staged: Vec<bool>,
}

const IND: &str = "                ";

impl StepCtx<'_> {
    fn emit(&self, s: &mut String, reach: &[NodeId], done: &[bool], ms: &dyn Fn(u32) -> usize) {
        let (k, p) = (self.k, &self.k.phases[self.pi]);
        let stages = self.tableau.stages();
        // What the stages hand to the step's end.
        for (j, u) in p.updates.iter().enumerate() {
            match u {
                Update::Hold => {}
                Update::Rate(_) => {
                    for i in 0..stages {
                        let _ = writeln!(s, "{IND}var k{i}_{j}: f32;");
                    }
                }
                Update::Jump(_) => {
                    let _ = writeln!(s, "{IND}var jv{j}: f32;");
                }
            }
        }
        for (ei, e) in p.emits.iter().enumerate() {
            let t = wty(k.fluxes[e.flux as usize].ty);
            let _ = writeln!(s, "{IND}var eon{ei} = false;\n{IND}var eix{ei}: u32;");
            let kept = if k.fluxes[e.flux as usize].ty.is_float() {
                stages
            } else {
                1
            };
            for i in 0..kept {
                let _ = writeln!(s, "{IND}var ev{ei}_{i}: {t};");
            }
        }
        for (j, plan) in self.plans.iter().enumerate() {
            if let Some(DrivePlan::Own(_)) = plan {
                let t = wty(k.shared[j].ty);
                let _ = writeln!(s, "{IND}var own{j}: {t};\n{IND}var has{j} = false;");
            }
        }
        let float_drives = self
            .plans
            .iter()
            .enumerate()
            .any(|(j, pl)| pl.is_some() && k.shared[j].ty.is_float());
        let int_drives = self
            .plans
            .iter()
            .enumerate()
            .any(|(j, pl)| pl.is_some() && !k.shared[j].ty.is_float());
        for i in 0..stages {
            self.stage(s, i, reach, done, ms);
            let last = i + 1 == stages;
            if float_drives || (int_drives && last) {
                let _ = writeln!(s, "{IND}workgroupBarrier();");
                self.collapse(s, i);
                let _ = writeln!(s, "{IND}workgroupBarrier();");
            }
        }
        // The step's end: registers by the tableau's weights, jumps, flux.
        let b = terms(self.tableau.b());
        let cb = |i: usize| format!("cb{i}");
        let mut assigned = vec![];
        for (j, u) in p.updates.iter().enumerate() {
            let v = match u {
                Update::Hold => continue,
                Update::Rate(_) => combine(&format!("h{j}"), &b, &cb, &|i| format!("k{i}_{j}")),
                Update::Jump(_) => format!("jv{j}"),
            };
            let _ = writeln!(s, "{IND}let u{j} = {v};");
            assigned.push(j);
        }
        for j in assigned {
            let _ = writeln!(s, "{IND}h{j} = u{j};");
        }
        for (ei, e) in p.emits.iter().enumerate() {
            let amount = if k.fluxes[e.flux as usize].ty.is_float() {
                let sum = b
                    .iter()
                    .map(|(i, _)| format!("cb{i} * ev{ei}_{i}"))
                    .collect::<Vec<_>>()
                    .join(" + ");
                format!("({sum})")
            } else {
                format!("ev{ei}_0")
            };
            let _ = writeln!(
                s,
                "{IND}if (eon{ei}) {{ emit{}(eix{ei}, {amount}, {}u, gid); }}",
                e.flux, e.site
            );
        }
    }

    /// Stage `i`: its input, the field there, its drives and emissions.
    fn stage(
        &self,
        s: &mut String,
        i: usize,
        reach: &[NodeId],
        done: &[bool],
        ms: &dyn Fn(u32) -> usize,
    ) {
        let (k, p) = (self.k, &self.k.phases[self.pi]);
        let no = vec![false; k.shared.len()];
        let st = Stage {
            k,
            staged: if i == 0 { &no } else { &self.staged },
        };
        let r = |n: NodeId| st.name(n);
        let _ = writeln!(s, "{IND}{{ // stage {i}");
        let ind = format!("{IND}    ");
        let _ = writeln!(s, "{ind}let ts = t + cc{i};");
        let a = terms(self.tableau.a(i));
        for (j, u) in p.updates.iter().enumerate() {
            let y = match u {
                Update::Rate(_) => combine(&format!("h{j}"), &a, &|q| format!("ca{i}_{q}"), &|q| {
                    format!("k{q}_{j}")
                }),
                _ => format!("h{j}"),
            };
            let _ = writeln!(s, "{ind}let y{j} = {y};");
        }
        let mut sdone = done.to_vec();
        st.lets(s, &ind, reach, &mut sdone, ms);
        for (j, u) in p.updates.iter().enumerate() {
            match u {
                Update::Rate(n) => {
                    let _ = writeln!(s, "{ind}k{i}_{j} = {};", r(*n));
                }
                Update::Jump(n) if i == 0 => {
                    let _ = writeln!(s, "{ind}jv{j} = {};", r(*n));
                }
                _ => {}
            }
        }
        let guard = |g: Option<NodeId>| g.map(&r).unwrap_or_else(|| "true".into());
        // Drives: float ones at every stage, integer ones (unit flows) at the first.
        for (j, plan) in self.plans.iter().enumerate() {
            if !k.shared[j].ty.is_float() && i > 0 {
                continue;
            }
            let len = self.layout.shared_lens[j];
            match plan {
                None => {}
                Some(DrivePlan::Own(d)) => {
                    let d = &p.drives[*d];
                    let _ = writeln!(
                        s,
                        "{ind}has{j} = false;\n{ind}if ({}) {{\n{ind}    if (lid >= {len}u) {{ report({}u, lid, gid); }} else {{ own{j} = {}; has{j} = true; }}\n{ind}}}",
                        guard(d.guard),
                        d.site,
                        r(d.value)
                    );
                }
                Some(DrivePlan::Gathered(ds)) if !k.shared[j].ty.is_float() => {
                    for &d in ds {
                        let d = &p.drives[d];
                        let _ = writeln!(
                            s,
                            "{ind}if ({}) {{\n{ind}    let x = u32({});\n{ind}    if (x >= {len}u) {{ report({}u, x, gid); }} else {{ atomicAdd(&ia{j}[x], {}); }}\n{ind}}}",
                            guard(d.guard),
                            r(d.index),
                            d.site,
                            r(d.value)
                        );
                    }
                }
                Some(DrivePlan::Gathered(ds)) => {
                    for (q, &d) in ds.iter().enumerate() {
                        let d = &p.drives[d];
                        let _ = writeln!(
                            s,
                            "{ind}{{\n{ind}    var e = {NO_ELEMENT};\n{ind}    if ({}) {{\n{ind}        let x = u32({});\n{ind}        if (x >= {len}u) {{ report({}u, x, gid); }} else {{ e = x; }}\n{ind}    }}\n{ind}    di{j}_{q}[lid] = e;\n{ind}    dv{j}_{q}[lid] = {};\n{ind}}}",
                            guard(d.guard),
                            r(d.index),
                            d.site,
                            r(d.value)
                        );
                    }
                }
            }
        }
        // Emissions: target from the first stage, values at every stage (float).
        for (ei, e) in p.emits.iter().enumerate() {
            if i == 0 {
                let _ = writeln!(
                    s,
                    "{ind}eon{ei} = {};\n{ind}eix{ei} = u32({});\n{ind}ev{ei}_0 = {};",
                    guard(e.guard),
                    r(e.index),
                    r(e.value)
                );
            } else if k.fluxes[e.flux as usize].ty.is_float() {
                let _ = writeln!(s, "{ind}ev{ei}_{i} = {};", r(e.value));
            }
        }
        let _ = writeln!(s, "{IND}}}");
    }

    /// After stage `i`'s barrier: each shared element's rate (its drives summed
    /// in lane order), then the next stage's input or the step's end.
    fn collapse(&self, s: &mut String, i: usize) {
        let k = self.k;
        let stages = self.tableau.stages();
        let last = i + 1 == stages;
        for (j, plan) in self.plans.iter().enumerate() {
            let Some(plan) = plan else { continue };
            let ty = k.shared[j].ty;
            if !ty.is_float() && !last {
                continue;
            }
            let t = wty(ty);
            let len = self.layout.shared_lens[j];
            if !ty.is_float() && matches!(plan, DrivePlan::Gathered(_)) {
                // Integer drives gathered by workgroup atomics: exact in any order.
                let _ = writeln!(
                    s,
                    "{IND}for (var e = lid; e < {len}u; e = e + WG) {{ sh{j}[e] = sh{j}[e] + atomicExchange(&ia{j}[e], {}); }}",
                    zero(ty)
                );
                continue;
            }
            let _ = writeln!(
                s,
                "{IND}for (var e = lid; e < {len}u; e = e + WG) {{\n{IND}    var acc: {t} = {};\n{IND}    var seen = false;",
                zero(ty)
            );
            match plan {
                DrivePlan::Own(_) => {
                    let _ = writeln!(
                        s,
                        "{IND}    if (has{j} && e == lid) {{ acc = own{j}; seen = true; }}"
                    );
                }
                DrivePlan::Gathered(ds) => {
                    for q in 0..ds.len() {
                        let _ = writeln!(
                            s,
                            "{IND}    for (var l = 0u; l < WG; l = l + 1u) {{\n{IND}        if (di{j}_{q}[l] == e) {{\n{IND}            if (seen) {{ acc = acc + dv{j}_{q}[l]; }} else {{ acc = dv{j}_{q}[l]; seen = true; }}\n{IND}        }}\n{IND}    }}"
                        );
                    }
                }
            }
            if !ty.is_float() {
                // A unit flow: the first stage's contributions, wrapping.
                let _ = writeln!(s, "{IND}    if (seen) {{ sh{j}[e] = sh{j}[e] + acc; }}");
            } else if !self.staged[j] {
                // One stage: the Euler step of the element.
                let _ = writeln!(
                    s,
                    "{IND}    if (seen) {{ sh{j}[e] = sh{j}[e] + cb0 * acc; }}"
                );
            } else {
                let _ = writeln!(s, "{IND}    rk{j}_{i}[e] = acc;");
                let rk = |q: usize| format!("rk{j}_{q}[e]");
                if last {
                    let b = terms(self.tableau.b());
                    let v = combine(&format!("sh{j}[e]"), &b, &|q| format!("cb{q}"), &rk);
                    let _ = writeln!(s, "{IND}    sh{j}[e] = {v};");
                } else {
                    let a = terms(self.tableau.a(i + 1));
                    let v = combine(
                        &format!("sh{j}[e]"),
                        &a,
                        &|q| format!("ca{}_{q}", i + 1),
                        &rk,
                    );
                    let _ = writeln!(s, "{IND}    sx{j}[e] = {v};");
                }
            }
            let _ = writeln!(s, "{IND}}}");
        }
    }
}

/// The error a GPU fault record (`[trajectory, site, index, _]`, trajectory
/// `u32::MAX` when none) stands for: the buffer, shared sub-field or flux
/// output the faulting access reads or writes, its length, the index (signed
/// where the index is `i32`), the trajectory and its place in the source.
/// `None` when the record holds no fault.
pub fn fault_error(
    k: &Kernel,
    args: &Args,
    shared_lens: &[u32],
    flux_lens: &[u32],
    bdim: u32,
    fault: &[u32; 4],
) -> Option<IrError> {
    if fault[0] == u32::MAX {
        return None;
    }
    let site = fault[1];
    let from_nodes = k.nodes.iter().find_map(|nd| match *nd {
        Node::Load {
            buf,
            index,
            site: s,
        } if s == site => Some((
            k.params[buf as usize].name.clone(),
            args.buffer_at(buf as usize).map(|b| b.len()).unwrap_or(0),
            index,
        )),
        Node::SharedLoad {
            shared,
            index,
            site: s,
        } if s == site => Some((
            k.shared[shared as usize].name.clone(),
            shared_lens.get(shared as usize).copied().unwrap_or(0) as usize,
            index,
        )),
        _ => None,
    });
    let from_phases = || {
        k.phases.iter().find_map(|p| {
            p.drives
                .iter()
                .find(|d| d.site == site)
                .map(|d| {
                    (
                        k.shared[d.shared as usize].name.clone(),
                        shared_lens.get(d.shared as usize).copied().unwrap_or(0) as usize,
                        d.index,
                    )
                })
                .or_else(|| {
                    p.emits.iter().find(|e| e.site == site).map(|e| {
                        (
                            k.fluxes[e.flux as usize].name.clone(),
                            flux_lens.get(e.flux as usize).copied().unwrap_or(0) as usize,
                            e.index,
                        )
                    })
                })
        })
    };
    let (name, len, index) = match from_nodes.or_else(from_phases) {
        Some((name, len, index)) => {
            let i = if k.ty(index) == ScalarType::I32 {
                fault[2] as i32 as i64
            } else {
                fault[2] as i64
            };
            (name, len, i)
        }
        None => ("?".to_string(), 0, fault[2] as i64),
    };
    let pos = k.sites.get(site as usize).copied().unwrap_or_default();
    Some(eval::oob(
        k,
        &name,
        len,
        index,
        fault[0] as usize,
        bdim,
        pos,
    ))
}

#[cfg(test)]
mod tests;
