//! Events in the adaptive WGSL shaders (issue 13, GPU side): the CPU
//! driver's algorithm (`vgpu_field::adaptive::events`, `EventScan::scan` and
//! `locate`) written as shader code, with the same constants
//! ([`EVENT_POINTS`] samples per step, at most [`MAX_ROOT_ITERS`] Illinois
//! iterations, the time tolerance `4·ε·(|t| + |h|)`), so that an `f64` event
//! lands where the CPU's does to rounding.
//!
//! The conditions and the jumps are the field's IR expressions, emitted by the
//! same expression emitter as the rates ([`FieldFn::function`]):
//! `fn gcond(t, h: S, l: L, gid) -> array<T, E>` (every event's `g`) and per
//! event `fn jumpE(t, h: S, l: L, gid) -> S` (the state after its jumps, a
//! state it does not jump keeping its value). The step's dense output is the
//! stepper's `fn dense(th, …) -> S`, called through a closure the stepper
//! gives.
//!
//! Per accepted step (variables of the entry point): `gp` and `gn` hold `g`
//! at the step's start and end, `just` says the step starts at an event;
//! [`EventsWgsl::scan`] leaves the earliest crossing in `fe` (the event, `-1`
//! for none) and `fth` (its `θ`).

use super::FieldFn;
use crate::kernel::{Kernel, NodeId};
use std::fmt::Write;
use vgpu_field::adaptive::events::{EVENT_POINTS, MAX_ROOT_ITERS};
use vgpu_field::adaptive::Crossing;

/// The events of a field as shader code.
pub(crate) struct EventsWgsl {
    /// Per event: its direction and whether it terminates.
    specs: Vec<(Crossing, bool)>,
    /// The state type.
    ty: &'static str,
}

impl EventsWgsl {
    /// The IR roots the event functions read (for [`FieldFn::with_extra`]):
    /// every condition and every jump value.
    pub(crate) fn roots(k: &Kernel) -> Vec<NodeId> {
        let mut r: Vec<NodeId> = k.events.iter().map(|e| e.condition).collect();
        for e in &k.events {
            r.extend(e.jumps.iter().map(|&(_, v)| v));
        }
        r
    }

    pub(crate) fn new(k: &Kernel, ty: &'static str) -> EventsWgsl {
        EventsWgsl {
            specs: k
                .events
                .iter()
                .map(|e| (e.direction, e.terminate))
                .collect(),
            ty,
        }
    }

    /// Number of events.
    pub(crate) fn len(&self) -> usize {
        self.specs.len()
    }

    /// `fn gcond` and the `fn jumpE` of every event that does not terminate.
    pub(crate) fn functions(&self, k: &Kernel, ff: &FieldFn) -> String {
        let conds: Vec<Option<NodeId>> = k.events.iter().map(|e| Some(e.condition)).collect();
        let mut s = ff.function(k, "gcond", &conds, false);
        for (e, ev) in k.events.iter().enumerate() {
            if ev.terminate {
                continue;
            }
            let mut roots: Vec<Option<NodeId>> = vec![None; k.states.len()];
            for &(st, v) in &ev.jumps {
                roots[st as usize] = Some(v);
            }
            s.push_str(&ff.function(k, &format!("jump{e}"), &roots, true));
        }
        s
    }

    /// Declarations before the step loop: `gp`, `gn`, the sample buffer,
    /// `just`, `evented`, `fe`, `fth`.
    pub(crate) fn decls(&self) -> String {
        let (ty, ne) = (self.ty, self.len());
        format!(
            "    var gp: array<{ty}, {ne}>;\n    var gn: array<{ty}, {ne}>;\n    var gpts: array<array<{ty}, {ne}>, {}>;\n    var just = false;\n    var evented = false;\n    var fe = -1i;\n    var fth: {ty};\n",
            EVENT_POINTS + 1
        )
    }

    /// The scan of an accepted step `(t, h)` with `gp`, `gn` set: `g` at the
    /// [`EVENT_POINTS`] + 1 points `θ = j / EVENT_POINTS` of the dense output
    /// `dense(θ)` (an `S` expression of the WGSL `θ` expression it is given),
    /// each event's first sign change in its direction located by Illinois,
    /// the earliest kept in `fe`, `fth`. `lit` writes a literal of the state
    /// type; `at(j)` is the CPU's `θ_j` (rounded in the state type).
    pub(crate) fn scan(
        &self,
        dense: &dyn Fn(&str) -> String,
        lit: &dyn Fn(f64) -> String,
        at: &dyn Fn(usize) -> f64,
    ) -> String {
        let np = EVENT_POINTS;
        let mut s = String::new();
        let ats: Vec<String> = (0..=np).map(|j| lit(at(j))).collect();
        let _ = writeln!(
            s,
            "            let ev_at = array<{}, {}>({});",
            self.ty,
            np + 1,
            ats.join(", ")
        );
        let _ = writeln!(
            s,
            "            gpts[0] = gp;\n            gpts[{np}u] = gn;"
        );
        // Unrolled: no loop for the device to cut short.
        for j in 1..np {
            let _ = writeln!(
                s,
                "            gpts[{j}] = gcond(t + ev_at[{j}] * h, {}, l, gid);",
                dense(&format!("ev_at[{j}]"))
            );
        }
        let _ = writeln!(
            s,
            "            let tol_t = {} * {} * (abs(t) + abs(h));\n            fe = -1i;",
            lit(4.0),
            self.eps_lit(lit)
        );
        let (zero, half) = (lit(0.0), lit(0.5));
        for (e, (dir, _)) in self.specs.iter().enumerate() {
            let fires = |a: &str, b: &str| -> String {
                let rising = format!("({a} < {zero} && {b} >= {zero})");
                let falling = format!("({a} > {zero} && {b} <= {zero})");
                match dir {
                    Crossing::Rising => rising,
                    Crossing::Falling => falling,
                    Crossing::Both => format!("({rising} || {falling})"),
                }
            };
            // The first sample pair that fires (unrolled, last to first).
            let _ = writeln!(s, "            {{\n                var jf = {np}u;");
            for j in (0..np).rev() {
                let _ = writeln!(
                    s,
                    "                if {} {{ jf = {j}u; }}",
                    fires(&format!("gpts[{j}][{e}]"), &format!("gpts[{}][{e}]", j + 1))
                );
            }
            // locate(): Illinois on [a, b], the far side returned.
            let _ = writeln!(
                s,
                "                if (jf < {np}u) {{\n                    var a = ev_at[jf];\n                    var b = ev_at[jf + 1u];\n                    var fa = gpts[jf][{e}];\n                    var fb = gpts[jf + 1u][{e}];\n                    let pos = fa > {zero};\n                    var kept = 0i;\n                    for (var it = 0u; it < {MAX_ROOT_ITERS}u; it = it + 1u) {{\n                        if ((b - a) * abs(h) <= tol_t) {{ break; }}\n                        var c = (a * fb - b * fa) / (fb - fa);\n                        if (!(c > a && c < b)) {{\n                            c = (a + b) * {half};\n                            if (!(c > a && c < b)) {{ break; }}\n                        }}\n                        let gc = gcond(t + c * h, {}, l, gid);\n                        let fc = gc[{e}];\n                        if (select((fc < {zero}), (fc > {zero}), pos)) {{\n                            a = c;\n                            fa = fc;\n                            if (kept == 1i) {{ fb = fb * {half}; }}\n                            kept = 1i;\n                        }} else {{\n                            b = c;\n                            fb = fc;\n                            if (fc == {zero}) {{ break; }}\n                            if (kept == -1i) {{ fa = fa * {half}; }}\n                            kept = -1i;\n                        }}\n                    }}\n                    if (!(just && b * abs(h) <= tol_t) && (fe < 0i || b < fth)) {{ fe = {e}i; fth = b; }}\n                }}\n            }}",
                dense("c")
            );
        }
        s
    }

    /// Whether event `fe` terminates, as a WGSL `bool` expression.
    pub(crate) fn terminates(&self) -> String {
        let t: Vec<String> = self
            .specs
            .iter()
            .enumerate()
            .filter(|(_, (_, term))| *term)
            .map(|(e, _)| format!("fe == {e}i"))
            .collect();
        if t.is_empty() {
            "false".into()
        } else {
            format!("({})", t.join(" || "))
        }
    }

    /// `y = jumpE(t, y, …)` for the event `fe` (one that does not terminate).
    pub(crate) fn apply(&self) -> String {
        let mut s = String::new();
        for (e, (_, term)) in self.specs.iter().enumerate() {
            if !*term {
                let _ = writeln!(
                    s,
                    "                if (fe == {e}i) {{ y = jump{e}(t, y, l, gid); }}"
                );
            }
        }
        s
    }

    /// The end of an accepted step with events, after `gn` is set and the
    /// dense output's stages are ready: the scan ([`EventsWgsl::scan`]), the
    /// step's end `(t_end, y_end)` at the event or `(t_new, yn)`, the saves up
    /// to it (a save at a continuing event's time takes the jumped state, the
    /// next step's), then at an event: `Terminated` (status 4), or the jumps,
    /// `k0 = f(t, y)`, `g` anew and a restarted step control (Hairer's start
    /// or `dt0`), as the CPU driver. `check_before_rhs`: the jumped state is
    /// checked before `f` is evaluated on it (the explicit pairs) rather than
    /// with it (Rosenbrock23). `cfg`: the indices of the save times, `qoldinit`,
    /// `dt0`, `dtmax`; `flag_dt0` the flag of a given `dt0`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn step_end(
        &self,
        dense: &dyn Fn(&str) -> String,
        lit: &dyn Fn(f64) -> String,
        at: &dyn Fn(usize) -> f64,
        check_before_rhs: bool,
        [c_save, c_qold, c_dt0, c_dtmax]: [usize; 4],
        flag_dt0: u32,
    ) -> String {
        let mut s = self.scan(dense, lit, at);
        let jumped = if check_before_rhs {
            "                if (!fin_s(y)) { status = 3u; continue; }\n                k0 = field(t, y, l, gid);\n                evals = evals + 1u;\n                if (!fin_s(k0)) { status = 3u; continue; }\n"
        } else {
            "                k0 = field(t, y, l, gid);\n                evals = evals + 1u;\n                if (!fin_s(y) || !fin_s(k0)) { status = 3u; continue; }\n"
        };
        let _ = writeln!(
            s,
            "            var t_end = t_new;\n            var y_end = yn;\n            if (fe >= 0i) {{ t_end = t + fth * h; y_end = {}; }}\n            let term = fe >= 0i && {};\n            if (ns < nsave && cfg[{c_save}u + ns] <= t_end) {{\n                loop {{\n                    if (ns >= nsave) {{ break; }}\n                    let ts = cfg[{c_save}u + ns];\n                    if (ts > t_end || (ts == t_end && fe >= 0i && !term)) {{ break; }}\n                    if (ts == t_end) {{ store(sbase + ns, y_end); }} else {{ store(sbase + ns, {}); }}\n                    ns = ns + 1u;\n                }}\n            }}\n            y = y_end;\n            t = t_end;\n            acc = acc + 1u;\n            if (fe >= 0i) {{\n                if (term) {{ status = 4u; continue; }}\n{}{jumped}                gp = gcond(t, y, l, gid);\n                just = true;\n                evented = true;\n                if (adaptive) {{\n                    err_old = cfg[{c_qold}u];\n                    if ((flags & {flag_dt0}u) != 0u) {{ dt = min(cfg[{c_dt0}u], cfg[{c_dtmax}u]); }} else {{ evals = evals + 1u; dt = hinit(t, y, k0, l, gid, cfg[{c_dtmax}u]); }}\n                }}\n                continue;\n            }}",
            dense("fth"),
            self.terminates(),
            dense("(ts - t) / h"),
            self.apply()
        );
        s
    }

    fn eps_lit(&self, lit: &dyn Fn(f64) -> String) -> String {
        if self.ty == "f64" {
            lit(f64::EPSILON)
        } else {
            lit(f64::from(f32::EPSILON))
        }
    }
}
