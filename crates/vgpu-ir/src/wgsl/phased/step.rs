//! One step of one phase in WGSL: stages, basin collapses, the step's end.

use super::{combine, terms, zero, DrivePlan, PhasedLayout, Stage, NO_ELEMENT};
use crate::kernel::{Kernel, NodeId, Update};
use crate::wgsl::wty;
use std::fmt::Write;

/// One step of one phase: its stages (each evaluating the field at its input,
/// then, where the phase drives shared memory, a basin collapse), then the
/// step's end (registers, jumps, flux).
pub(super) struct StepCtx<'a> {
    pub(super) k: &'a Kernel,
    pub(super) pi: usize,
    pub(super) plans: &'a [Option<DrivePlan>],
    pub(super) layout: &'a PhasedLayout,
    pub(super) tableau: &'a vgpu_field::Tableau,
    /// Shared sub-fields this phase advances through stage inputs (`sx`, `rk`).
    pub(super) staged: Vec<bool>,
}

const IND: &str = "                ";

impl StepCtx<'_> {
    pub(super) fn emit(
        &self,
        s: &mut String,
        reach: &[NodeId],
        done: &[bool],
        ms: &dyn Fn(u32) -> usize,
    ) {
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
