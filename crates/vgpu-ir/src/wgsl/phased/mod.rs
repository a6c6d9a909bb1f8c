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

use super::{emit_prelude, expr_with, literal, wty, ParamSlots, META_HEADER};
use crate::error::IrError;
use crate::kernel::{Builtin, Kernel, Node, NodeId, Variance};
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

mod fault;
mod layout;
mod step;

pub use fault::fault_error;
pub use layout::PhasedLayout;
use step::StepCtx;

#[cfg(test)]
mod tests;
