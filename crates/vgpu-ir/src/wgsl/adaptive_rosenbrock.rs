//! Rosenbrock23 in the adaptive WGSL shaders (issue 13, GPU side): the CPU's
//! stepper (`vgpu_field::adaptive::rosenbrock`, Shampine–Reichelt `ode23s`,
//! a W-method with `W = I − h·d·J`) written as shader code, step for step in
//! the CPU's order of operations:
//!
//! * **The Jacobian from the IR.** `∂f_i/∂y_j` and `∂f_i/∂t` are the nodes
//!   [`crate::jacobian::jacobian_nodes`] adds to the field's arena, emitted by
//!   the same expression emitter as the rates (`fn jacf(t, h: S, l, gid) ->
//!   array<T, D·D + D>`, row-major `J` then `f_t`), evaluated at a step's
//!   start and kept across its rejections.
//! * **A dense LU per trajectory** in private arrays, unrolled at emission
//!   (static indices; no loop for the device to cut short) (`D ≤`
//!   [`vgpu_field::adaptive::rosenbrock::MAX_STIFF_STATES`]): partial pivoting
//!   that picks the last of equal magnitudes (as the CPU's `max_by`), a zero or
//!   non-finite pivot a singular `W` (the step is retried `qmin` times
//!   shorter), forward and back substitution in the CPU's order.
//! * **The same constants**, `d = 1/(2 + √2)`, `e32 = 6 + √2`,
//!   `1/(1 − 2d)`, computed in the state type as the CPU computes them and
//!   written as exact literals.
//!
//! Step control, save times, events and statuses are the explicit pairs'
//! (the shared parts of [`super::adaptive`]).

use crate::kernel::NodeId;
use std::fmt::Write;

/// The method's constants in the state type (`f32` rounded as the CPU's
/// `f32` arithmetic rounds them): `(d, e32, 1/(1 − 2d), 2d)`.
pub(crate) fn constants(f64_states: bool) -> [f64; 4] {
    if f64_states {
        let sqrt2 = 2.0f64.sqrt();
        let d = 1.0 / (2.0 + sqrt2);
        [d, 6.0 + sqrt2, 1.0 / (1.0 - 2.0 * d), 2.0 * d]
    } else {
        let sqrt2 = 2.0f32.sqrt();
        let d = 1.0 / (2.0 + sqrt2);
        [d, 6.0 + sqrt2, 1.0 / (1.0 - 2.0 * d), 2.0 * d].map(f64::from)
    }
}

/// The LU helpers and the dense output `fn dense(th, h, y, k1, k2) -> S`
/// for `dim` states of type `ty`; `lit` writes a literal of the state type.
pub(crate) fn functions(dim: usize, ty: &str, lit: &dyn Fn(f64) -> String) -> String {
    let [_, _, dn, two_d] = constants(ty == "f64");
    let mut s = String::new();
    let m = format!("array<array<{ty}, {dim}>, {dim}>");
    let zero = lit(0.0);
    // Lu::factor: PA = LU in place, false for a singular or non-finite W;
    // unrolled (no loop for the device to cut short, static indices).
    let _ = writeln!(
        s,
        "fn lu_factor(a: ptr<function, {m}>, perm: ptr<function, array<u32, {dim}>>) -> bool {{"
    );
    for i in 0..dim {
        let _ = writeln!(s, "    (*perm)[{i}] = {i}u;");
    }
    for c in 0..dim {
        let _ = writeln!(s, "    var p{c} = {c}u;");
        for r in c + 1..dim {
            // The last of equal magnitudes (the CPU's `max_by`), NaN included.
            let _ = writeln!(
                s,
                "    if (!(abs((*a)[p{c}][{c}]) > abs((*a)[{r}][{c}]))) {{ p{c} = {r}u; }}"
            );
        }
        let _ = writeln!(
            s,
            "    let piv{c} = (*a)[p{c}][{c}];\n    if (piv{c} == {zero} || !fin(piv{c})) {{ return false; }}"
        );
        for r in c + 1..dim {
            let _ = writeln!(
                s,
                "    if (p{c} == {r}u) {{ let row = (*a)[{c}]; (*a)[{c}] = (*a)[{r}]; (*a)[{r}] = row; let pc = (*perm)[{c}]; (*perm)[{c}] = (*perm)[{r}]; (*perm)[{r}] = pc; }}"
            );
        }
        for r in c + 1..dim {
            let _ = writeln!(
                s,
                "    let l{c}_{r} = (*a)[{r}][{c}] / piv{c};\n    (*a)[{r}][{c}] = l{c}_{r};"
            );
            for q in c + 1..dim {
                let _ = writeln!(
                    s,
                    "    (*a)[{r}][{q}] = (*a)[{r}][{q}] - l{c}_{r} * (*a)[{c}][{q}];"
                );
            }
        }
    }
    s.push_str("    return true;\n}\n");
    // Lu::solve: A⁻¹ b, unrolled.
    let _ = writeln!(
        s,
        "fn lu_solve(a: ptr<function, {m}>, perm: ptr<function, array<u32, {dim}>>, b: S) -> S {{\n    let bv = array<{ty}, {dim}>({});",
        (0..dim)
            .map(|d| format!("b.v{d}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for i in 0..dim {
        let _ = writeln!(s, "    var x{i} = bv[(*perm)[{i}]];");
    }
    for r in 0..dim {
        for q in 0..r {
            let _ = writeln!(s, "    x{r} = x{r} - (*a)[{r}][{q}] * x{q};");
        }
    }
    for r in (0..dim).rev() {
        for q in r + 1..dim {
            let _ = writeln!(s, "    x{r} = x{r} - (*a)[{r}][{q}] * x{q};");
        }
        let _ = writeln!(s, "    x{r} = x{r} / (*a)[{r}][{r}];");
    }
    let _ = writeln!(
        s,
        "    return S({});\n}}",
        (0..dim)
            .map(|d| format!("x{d}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        s,
        "fn dense(th: {ty}, h: {ty}, y: S, k1: S, k2: S) -> S {{\n    let c1 = th * ({one} - th) * {dn};\n    let c2 = th * (th - {two_d}) * {dn};\n    return S({});\n}}",
        (0..dim)
            .map(|d| format!("y.v{d} + h * (c1 * k1.v{d} + c2 * k2.v{d})"))
            .collect::<Vec<_>>()
            .join(", "),
        one = lit(1.0),
        dn = lit(dn),
        two_d = lit(two_d)
    );
    s
}

/// The Jacobian's roots for [`super::FieldFn::function`]: `J` row-major, then
/// `f_t`.
pub(crate) fn jacobian_roots(jac: &[NodeId], ft: &[NodeId]) -> Vec<Option<NodeId>> {
    jac.iter().chain(ft).map(|&n| Some(n)).collect()
}

/// The `cfg` indices the step body reads.
pub(crate) struct CfgAt {
    /// `dtmin`.
    pub(crate) dtmin: usize,
    /// `qmin`.
    pub(crate) qmin: usize,
}

/// One step's body, from a step `h` (already snapped onto `t1`) to an
/// accepted `yn` at `t_new` with its error `err` (a rejection `continue`s):
/// `k0` holds `f(t, y)`; leaves `k1`, `k2` (the dense output's stages) and
/// `fa2 = f(t_new, yn)` (the next step's `k0`). `evented` names whether an
/// event restarted a fixed-step grid (`"false"` without events).
pub(crate) fn step(
    dim: usize,
    ty: &str,
    lit: &dyn Fn(f64) -> String,
    at: &CfgAt,
    evented: &str,
) -> String {
    let [d, e32, _, _] = constants(ty == "f64");
    let s_of = |f: &dyn Fn(usize) -> String| -> String {
        format!("S({})", (0..dim).map(f).collect::<Vec<_>>().join(", "))
    };
    let dd = dim * dim;
    let (half, two, six, e32) = (lit(0.5), lit(2.0), lit(6.0), lit(e32));
    // W = I − h·d·J, unrolled.
    let mut w_rows = String::new();
    for i in 0..dim {
        for j in 0..dim {
            let id = lit(if i == j { 1.0 } else { 0.0 });
            let _ = writeln!(
                w_rows,
                "            wm[{i}][{j}] = {id} - hd * jv[{}];",
                i * dim + j
            );
        }
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "            if (need_jac) {{ jv = jacf(t, y, l, gid); need_jac = false; }}
            let hd = h * {d};
{w_rows}            if (!lu_factor(&wm, &perm)) {{
                rej = rej + 1u;
                dt = h * cfg[{qmin}u];
                if (!adaptive || dt < cfg[{dtmin}u] || t + dt == t) {{ status = 2u; }}
                continue;
            }}
            let k1 = lu_solve(&wm, &perm, {});
            let u1 = {};
            let fa1 = field(t + {half} * h, u1, l, gid);
            let s2 = lu_solve(&wm, &perm, {});
            let k2 = {};
            let yn = {};
            var t_new = t + h;
            if (last) {{ t_new = t1; }} else if (!adaptive && !{evented}) {{ t_new = {ty}(acc + 1u) * hf + t0; }}
            let fa2 = field(t_new, yn, l, gid);
            evals = evals + 2u;
            var err = {zero};
            if (adaptive) {{
                let k3 = lu_solve(&wm, &perm, {});
                err = enorm({}, y, yn);
            }}
            if (!(err <= {one})) {{
                rej = rej + 1u;
                dt = reject(h, err);
                if (dt < cfg[{dtmin}u] || t + dt == t) {{ status = 2u; }}
                continue;
            }}",
        s_of(&|i| format!("k0.v{i} + hd * jv[{}]", dd + i)),
        s_of(&|i| format!("y.v{i} + {half} * h * k1.v{i}")),
        s_of(&|i| format!("fa1.v{i} - k1.v{i}")),
        s_of(&|i| format!("s2.v{i} + k1.v{i}")),
        s_of(&|i| format!("y.v{i} + h * k2.v{i}")),
        s_of(&|i| format!(
            "fa2.v{i} - {e32} * (k2.v{i} - fa1.v{i}) - {two} * (k1.v{i} - k0.v{i}) + hd * jv[{}]",
            dd + i
        )),
        s_of(&|i| format!("h / {six} * (k1.v{i} - {two} * k2.v{i} + k3.v{i})")),
        d = lit(d),
        w_rows = w_rows,
        zero = lit(0.0),
        one = lit(1.0),
        qmin = at.qmin,
        dtmin = at.dtmin,
    );
    s
}

/// Declarations before the step loop: the Jacobian, `W`, its permutation.
pub(crate) fn decls(dim: usize, ty: &str) -> String {
    format!(
        "    var jv: array<{ty}, {}>;\n    var need_jac = true;\n    var wm: array<array<{ty}, {dim}>, {dim}>;\n    var perm: array<u32, {dim}>;\n",
        dim * dim + dim
    )
}
