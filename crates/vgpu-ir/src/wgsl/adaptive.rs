//! Adaptive ensembles as WGSL (issue 13, GPU side): one invocation integrates
//! one trajectory through its whole adaptive integration, the same algorithm
//! as the CPU driver (`vgpu_field::adaptive::AdaptiveEnsemble`, its
//! `run_one`) written as a shader:
//!
//! * **Tableau from the same data.** The coefficients are the CPU's
//!   `tableaus.rs` / `vern7.rs` values ([`MethodData::of`] reads
//!   [`vgpu_field::adaptive::tsit5`] etc.), rounded to the state type and
//!   written as exact literals; nothing is retyped.
//! * **The right-hand side from the IR**, as the fixed-step shader emits it
//!   ([`super::FieldFn`]): trajectory `i` sees the launch the CPU's `IrRhs`
//!   gives it (block `i` of blocks of one lane: `i = bid = i`, `tid = 0`,
//!   `bdim = 1`, `gdim = n`).
//! * **The same arithmetic.** Stage sums `y + h·(a_i0·k_0 + a_i1·k_1 + …)` left
//!   to right with zero coefficients included, the embedded error
//!   `h·Σ (b_i − b̂_i) k_i`, the RMS error norm, the 64-ulp snap onto `t1`, FSAL,
//!   the PI controller with the CPU's formula and constants
//!   (`PiController::accept`/`reject`), Hairer's starting step, save times from
//!   the method's dense output (extra stages evaluated lazily), statuses
//!   (`Success = 0 … NonFinite = 3`), accepted/rejected/evaluation counts. The
//!   controller runs in the state type with `pow` in `f32` (WGSL has no `f64`
//!   `pow`), where the CPU runs it in `f64`: step sizes agree to rounding, so
//!   step counts agree except where an error norm sits at a rounding's distance
//!   from 1.
//! * **f32 and f64.** An `f64` field needs the adapter's `SHADER_F64`; its RHS
//!   may not use `sin`, `cos`, `exp`, `log`, `tanh` or `pow` (Vulkan has them in
//!   32 bits only): refused with [`IrError::Unsupported`] (`auto` runs it on
//!   the CPU).
//! * **Chunks.** A dispatch covers trajectories `offset .. offset + chunk` of
//!   `n` (launch words [`W_OFFSET`], [`W_CHUNK`]); per-trajectory bindings hold
//!   only the chunk's rows, so `n` is bounded by host memory, not by a binding.
//!
//! Bindings (group 0): `0` `out` (`chunk × (D + 1)`: the final state, then the
//! time reached), `1` launch words, `2` the fault record, then one read-only
//! binding per buffer parameter (as the fixed-step shader), then `cfg`
//! ([`cfg_values`]), `inp` (the chunk's `u0` rows, then its `(t0, t1)` rows,
//! each present when its flag is set), `stats` (`chunk ×` [`STATS_WORDS`]
//! u32: status, accepted, rejected, evaluations, saves written) and `saved`
//! (`chunk × K × D`).
//!
//! **Loops cut short.** llvmpipe (lavapipe's compiler) leaves every loop of a
//! shader invocation once the invocation has taken 65,535 loop iterations in
//! all, silently. So every exit of the step loop sets `done`: an error status
//! goes to the loop's top (`continue`) and leaves from there, after the loop's
//! back edge; a trajectory whose step loop ends without `done` (or whose
//! first save loop ends early) is marked [`STATUS_CUT_SHORT`] and the runner
//! refuses the launch (`auto` runs it on the CPU). The fixed-size loops (the
//! LU factorisation and solves, the event samples) are unrolled at emission,
//! so a step costs the device few loop iterations.

use super::adaptive_events::EventsWgsl;
use super::adaptive_rosenbrock as ros;
use super::{emit_prelude_typed, literal, FieldFn, ParamSlots, FIRST_BUFFER_BINDING, META_HEADER};
use crate::args::Args;
use crate::error::IrError;
use crate::kernel::{BinOp, Kernel, Node, NodeId, UnOp};
use crate::types::{ScalarType, Value};
use std::fmt::Write;
use vgpu_field::adaptive::events::EVENT_POINTS;
use vgpu_field::adaptive::{
    bs3, dp5, tsit5, vern7, AdaptiveMethod, DriverSettings, ErkTableau, TrajectoryStats,
};

/// Invocations per workgroup of the adaptive shaders.
pub const ADAPTIVE_WORKGROUP: u32 = 64;
/// Launch word: the ensemble's `n` (what `count` and `gdim` read).
pub const W_N: usize = 0;
/// Launch word: the chunk's first trajectory.
pub const W_OFFSET: usize = 1;
/// Launch word: trajectories in the chunk.
pub const W_CHUNK: usize = 2;
/// Launch word: [`FLAG_U0`] | [`FLAG_SPANS`] | [`FLAG_DT0`] | [`FLAG_FIXED`].
pub const W_FLAGS: usize = 3;
/// Flag: initial states come from `inp` (else the kernel's initialisers).
pub const FLAG_U0: u32 = 1;
/// Flag: one `(t0, t1)` per trajectory in `inp` (else the shared span in `cfg`).
pub const FLAG_SPANS: u32 = 2;
/// Flag: the first step is `cfg`'s `dt0` (else Hairer's estimate).
pub const FLAG_DT0: u32 = 4;
/// Flag: fixed steps of `cfg`'s `fixed_step`, no error control.
pub const FLAG_FIXED: u32 = 8;
/// Per-trajectory u32 words of `stats`: status, accepted, rejected,
/// evaluations, save points written (the rows after them are the host's to
/// fill with NaN).
pub const STATS_WORDS: usize = 5;
/// The status word of a trajectory whose loops the device stopped before the
/// integration ended (llvmpipe, lavapipe's compiler, leaves every loop of a
/// shader invocation after 65,535 iterations in all, without an error): its
/// results are not the integration's, and the runner refuses the launch.
pub const STATUS_CUT_SHORT: u32 = 5;
/// Values of `cfg` after the `2·D` tolerances and before the save times.
const CFG_SCALARS: usize = 14;

/// An embedded pair's tableau as plain data with its stage count at run time:
/// the CPU's tableau values, read from the same functions.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodData {
    /// The method's name.
    pub name: &'static str,
    /// Order of the propagated solution (the default controller's order).
    pub order: u32,
    /// Order of the embedded solution (Hairer's starting step).
    pub embedded_order: u32,
    /// Stages.
    pub stages: usize,
    /// Nodes.
    pub c: Vec<f64>,
    /// Rows of `a`, each `stages` long.
    pub a: Vec<Vec<f64>>,
    /// Weights.
    pub b: Vec<f64>,
    /// Error weights `b − b̂`.
    pub bt: Vec<f64>,
    /// First same as last.
    pub fsal: bool,
    /// Index of `f(t₁, y₁)` among the extended stages.
    pub f1: usize,
    /// Nodes of the dense output's extra stages.
    pub extra_c: Vec<f64>,
    /// Rows of the extra stages (over the earlier extended stages).
    pub extra_a: Vec<Vec<f64>>,
    /// Dense-output weights per extended stage (coefficients of θ¹, θ², …).
    pub weights: Vec<Vec<f64>>,
}

impl MethodData {
    /// The built-in method's tableau, `None` for a method that is not an
    /// explicit embedded pair (it has no GPU kernel).
    pub fn of(m: AdaptiveMethod) -> Option<MethodData> {
        Some(match m {
            AdaptiveMethod::Tsit5 => Self::from_tableau(&tsit5()),
            AdaptiveMethod::Dp5 => Self::from_tableau(&dp5()),
            AdaptiveMethod::Bs3 => Self::from_tableau(&bs3()),
            AdaptiveMethod::Vern7 => Self::from_tableau(&vern7()),
            #[allow(unreachable_patterns)]
            _ => return None,
        })
    }

    /// Any embedded pair given as data.
    pub fn from_tableau<const S: usize>(t: &ErkTableau<S>) -> MethodData {
        MethodData {
            name: t.name,
            order: t.order,
            embedded_order: t.embedded_order,
            stages: S,
            c: t.c.to_vec(),
            a: t.a.iter().map(|r| r.to_vec()).collect(),
            b: t.b.to_vec(),
            bt: t.b_tilde().to_vec(),
            fsal: t.fsal,
            f1: t.f1_index(),
            extra_c: t.dense.extra_c.clone(),
            extra_a: t.dense.extra_a.clone(),
            weights: t.dense.weights.clone(),
        }
    }
}

/// The backend label of the adaptive shaders' refusals.
const BACKEND: &str = "gpu (WGSL, adaptive)";

fn unsupported(k: &Kernel, reason: impl Into<String>) -> IrError {
    super::unsupported_on(k, BACKEND, reason)
}

/// Whether the kernel can run as an adaptive WGSL ensemble, and why not.
/// `f64` kernels also need the adapter's `SHADER_F64` (the runtime's check).
/// Events (jumps and termination) and Rosenbrock23 run on the GPU.
///
/// # Errors
/// [`IrError::Unsupported`]: the unphased emitters' shared preconditions
/// (phases, `:=` jumps, no states), more than 16 states, drives and emits,
/// and for `f64` fields the operations Vulkan has in 32 bits only (in the
/// rates and in event conditions and jumps), scalar `f64` parameters and
/// non-finite `f64` constants.
pub fn check_adaptive_wgsl(k: &Kernel) -> Result<(), IrError> {
    super::check_unphased(
        k,
        BACKEND,
        "cannot take adaptive steps (they need a field without barriers)",
    )?;
    let dim = k.states.len();
    if dim > 16 {
        return Err(unsupported(
            k,
            format!("adaptive methods take fields of 1 to 16 states; this one has {dim}"),
        ));
    }
    if k.phases
        .iter()
        .any(|p| !p.drives.is_empty() || !p.emits.is_empty())
    {
        return Err(unsupported(
            k,
            "drives and emits are not integrated by the adaptive GPU kernel",
        ));
    }
    let float = k.float_type();
    if k.states.iter().any(|s| s.ty != float) {
        return Err(unsupported(k, "states of mixed float types"));
    }
    if float == ScalarType::F64 {
        if let Some(p) = k
            .params
            .iter()
            .find(|p| !p.buffer && p.ty == ScalarType::F64)
        {
            return Err(unsupported(
                k,
                format!(
                    "scalar f64 parameter `{}`: launch words are 32-bit (pass it as a buffer)",
                    p.name
                ),
            ));
        }
        for (i, node) in k.nodes.iter().enumerate() {
            let f64_node = k.types[i] == ScalarType::F64;
            let what = match *node {
                Node::Unary(op, _) if f64_node => match op {
                    UnOp::Sin => Some("sin"),
                    UnOp::Cos => Some("cos"),
                    UnOp::Exp => Some("exp"),
                    UnOp::Log => Some("log"),
                    UnOp::Tanh => Some("tanh"),
                    _ => None,
                },
                Node::Binary(BinOp::Pow, _, _) if f64_node => Some("pow"),
                Node::Const(Value::F64(x)) if !x.is_finite() => Some("a non-finite constant"),
                _ => None,
            };
            if let Some(what) = what {
                return Err(unsupported(
                    k,
                    format!("f64 {what}: Vulkan shaders have it in 32 bits only; run f64 fields using it on the CPU (--backend cpu)"),
                ));
            }
        }
    }
    Ok(())
}

/// The launch words of one chunk: the fixed-step layout (buffer lengths and
/// scalar parameters where [`ParamSlots`] puts them) with words 0–3 as
/// [`W_N`], [`W_OFFSET`], [`W_CHUNK`], [`W_FLAGS`], then the save count `K`,
/// and `maxiters` (saturated to `u32`).
///
/// # Errors
/// Missing arguments, `f64` scalars ([`super::meta_words`]).
pub fn launch_words(
    k: &Kernel,
    args: &Args,
    n: u32,
    offset: u32,
    chunk: u32,
    flags: u32,
    settings: &DriverSettings,
) -> Result<Vec<u32>, IrError> {
    let mut w = super::meta_words(k, args, n, 0, 0.0, 0.0)?;
    w[W_OFFSET] = offset;
    w[W_CHUNK] = chunk;
    w[W_FLAGS] = flags;
    debug_assert_eq!(w.len(), META_HEADER + k.params.len());
    w.push(settings.saveat.len().min(u32::MAX as usize) as u32);
    w.push(settings.maxiters.min(u32::MAX as u64) as u32);
    Ok(w)
}

/// The `cfg` binding's values for states of `dim` components: `rtol` (D),
/// `atol` (D), `t0`, `t1` (the shared span; per-trajectory spans are in
/// `inp`), `dt0`, `dtmin`, `dtmax`, `fixed_step`, the controller's `beta1`,
/// `beta2`, `safety`, `qmin`, `qmax`, `qoldinit`, `1/qmax`, `1/qmin` (the
/// CPU controller's clamp bounds, computed once in f64 as it computes them),
/// then the save times. The caller converts them to the state type.
pub fn cfg_values(settings: &DriverSettings, span: (f64, f64)) -> Vec<f64> {
    let c = &settings.controller;
    let mut v = Vec::with_capacity(settings.rtol.len() * 2 + CFG_SCALARS + settings.saveat.len());
    v.extend_from_slice(&settings.rtol);
    v.extend_from_slice(&settings.atol);
    v.extend_from_slice(&[
        span.0,
        span.1,
        settings.dt0.unwrap_or(0.0),
        settings.dtmin,
        settings.dtmax,
        settings.fixed_step.unwrap_or(0.0),
        c.beta1,
        c.beta2,
        c.safety,
        c.qmin,
        c.qmax,
        c.qoldinit,
        1.0 / c.qmax,
        1.0 / c.qmin,
    ]);
    v.extend_from_slice(&settings.saveat);
    v
}

/// The flags of a run: `u0` given, per-trajectory spans, `dt0` given, fixed steps.
pub fn flags(settings: &DriverSettings, has_u0: bool, per_traj_spans: bool) -> u32 {
    let bit = |on: bool, flag: u32| if on { flag } else { 0 };
    bit(has_u0, FLAG_U0)
        | bit(per_traj_spans, FLAG_SPANS)
        | bit(settings.dt0.is_some(), FLAG_DT0)
        | bit(settings.fixed_step.is_some(), FLAG_FIXED)
}

/// Per-trajectory statistics from a chunk's `stats` words and `out` times
/// (of a trajectory the device did not cut short: the runner refuses a
/// launch with [`STATUS_CUT_SHORT`] first).
pub fn stats_of(words: &[u32], t: f64) -> TrajectoryStats {
    use vgpu_field::adaptive::Status;
    TrajectoryStats {
        status: match words[0] {
            0 => Status::Success,
            1 => Status::MaxIters,
            2 => Status::DtMin,
            4 => Status::Terminated,
            _ => Status::NonFinite,
        },
        accepted: words[1] as u64,
        rejected: words[2] as u64,
        evaluations: words[3] as u64,
        t,
    }
}

/// Emits the adaptive ensemble shader of `k` with method `m` (entry point
/// `main`, workgroups of [`ADAPTIVE_WORKGROUP`]), states in the kernel's
/// float type.
///
/// # Errors
/// [`IrError::Unsupported`] (see [`check_adaptive_wgsl`]).
pub fn emit_wgsl_adaptive(k: &Kernel, m: &MethodData) -> Result<String, IrError> {
    check_adaptive_wgsl(k)?;
    emit(k, Some(m), &[], &[])
}

/// Emits the Rosenbrock23 ensemble shader of `k` ([`super::adaptive_rosenbrock`]:
/// the Jacobian derived from the IR, a dense LU per trajectory), otherwise as
/// [`emit_wgsl_adaptive`].
///
/// # Errors
/// [`IrError::Unsupported`] (see [`check_adaptive_wgsl`]); the Jacobian's
/// errors ([`crate::jacobian::jacobian_nodes`]).
pub fn emit_wgsl_rosenbrock(k: &Kernel) -> Result<String, IrError> {
    check_adaptive_wgsl(k)?;
    let mut kb = k.clone();
    let (jac, ft) = crate::jacobian::jacobian_nodes(&mut kb)?;
    emit(&kb, None, &jac, &ft)
}

/// The adaptive shader of `k` for the built-in `method`: its tableau
/// ([`emit_wgsl_adaptive`]) or Rosenbrock23 ([`emit_wgsl_rosenbrock`]).
///
/// # Errors
/// As those.
pub fn emit_wgsl_method(k: &Kernel, method: AdaptiveMethod) -> Result<String, IrError> {
    match (method, MethodData::of(method)) {
        (_, Some(m)) => emit_wgsl_adaptive(k, &m),
        (AdaptiveMethod::Rosenbrock23, None) => emit_wgsl_rosenbrock(k),
        (_, None) => Err(unsupported(k, format!("method {method} has no GPU kernel"))),
    }
}

/// The shader of `k` stepped by the explicit pair `erk`, or by Rosenbrock23
/// with the Jacobian `jac`, `ft` (nodes of `k`) when `erk` is `None`.
fn emit(
    k: &Kernel,
    erk: Option<&MethodData>,
    jac: &[NodeId],
    ft: &[NodeId],
) -> Result<String, IrError> {
    let ros = erk.is_none();
    // Rosenbrock23 as the shared code sees it: FSAL, no extra dense stages,
    // Hairer's start with q = 2 (the CPU's `initial_step(…, 2, …)`).
    let ros_data = MethodData {
        name: "rosenbrock23",
        order: 2,
        embedded_order: 2,
        stages: 0,
        c: vec![],
        a: vec![],
        b: vec![],
        bt: vec![],
        fsal: true,
        f1: 0,
        extra_c: vec![],
        extra_a: vec![],
        weights: vec![],
    };
    let m = erk.unwrap_or(&ros_data);
    let f64_states = k.float_type() == ScalarType::F64;
    let ty = if f64_states { "f64" } else { "f32" };
    let lit = |x: f64| -> String {
        if f64_states {
            literal(Value::F64(x))
        } else {
            literal(Value::F32(x as f32))
        }
    };
    let dim = k.states.len();
    let jac_roots = ros::jacobian_roots(jac, ft);
    let mut extra = EventsWgsl::roots(k);
    extra.extend(jac_roots.iter().flatten());
    let ff = FieldFn::with_extra(k, ty, &extra);
    let ev = EventsWgsl::new(k, ty);
    let has_ev = ev.len() > 0;
    // The dense output as a function, for the event scan (emitted before main).
    let mut dense_fn = String::new();
    let slots = ParamSlots::of(k);
    let ms = |p: u32| slots.scalar[p as usize];
    let nb = k.params.iter().filter(|p| p.buffer).count() as u32;
    let x = META_HEADER + k.params.len();
    let (w_k, w_maxit) = (x, x + 1);
    let (c_t0, c_t1, c_dt0) = (2 * dim, 2 * dim + 1, 2 * dim + 2);
    let (c_dtmin, c_dtmax, c_fixed) = (2 * dim + 3, 2 * dim + 4, 2 * dim + 5);
    let (c_b1, c_b2, c_safe) = (2 * dim + 6, 2 * dim + 7, 2 * dim + 8);
    let (c_qmin, c_qold) = (2 * dim + 9, 2 * dim + 11);
    let (c_iqmax, c_iqmin) = (2 * dim + 12, 2 * dim + 13);
    let c_save = 2 * dim + CFG_SCALARS;
    // `S(f(0), f(1), …)` over the components.
    let s_of = |f: &dyn Fn(usize) -> String| -> String {
        format!("S({})", (0..dim).map(f).collect::<Vec<_>>().join(", "))
    };
    let sum = |terms: Vec<String>| terms.join(" + ");

    let mut s = String::new();
    let _ = writeln!(
        s,
        "// Generated by vgpu-ir from field `{}` ({}): adaptive {} in {ty}, one trajectory per invocation.",
        k.name, k.source, m.name
    );
    let _ = writeln!(s, "const WGS: u32 = {ADAPTIVE_WORKGROUP}u;");
    // The field sees blocks of one lane (the CPU's IrRhs launch).
    s.push_str("const WG: u32 = 1u;\n");
    emit_prelude_typed(&mut s, k, &slots, ty);
    let b0 = FIRST_BUFFER_BINDING + nb;
    let _ = writeln!(
        s,
        "@group(0) @binding({b0}) var<storage, read> cfg: array<{ty}>;\n@group(0) @binding({}) var<storage, read> inp: array<{ty}>;\n@group(0) @binding({}) var<storage, read_write> stats: array<u32>;\n@group(0) @binding({}) var<storage, read_write> saved: array<{ty}>;",
        b0 + 1,
        b0 + 2,
        b0 + 3
    );
    s.push_str(&ff.text);
    if has_ev {
        s.push_str(&ev.functions(k, &ff));
    }
    if ros {
        s.push_str(&ff.function(k, "jacf", &jac_roots, false));
        s.push_str(&ros::functions(dim, ty, &lit));
    }
    // Helpers: finiteness, pow (in f32), the error norm, the controller.
    let maxf = if f64_states {
        lit(f64::MAX)
    } else {
        literal(Value::F32(f32::MAX))
    };
    let _ = writeln!(s, "fn fin(x: {ty}) -> bool {{ return abs(x) <= {maxf}; }}");
    let _ = writeln!(
        s,
        "fn fin_s(y: S) -> bool {{ return {}; }}",
        (0..dim)
            .map(|d| format!("fin(y.v{d})"))
            .collect::<Vec<_>>()
            .join(" && ")
    );
    if f64_states {
        s.push_str("fn ppow(x: f64, e: f64) -> f64 { return f64(pow(f32(x), f32(e))); }\n");
    } else {
        s.push_str("fn ppow(x: f32, e: f32) -> f32 { return pow(x, e); }\n");
    }
    // error_norm: sc = atol + rtol·(|y| > |y_new| ? |y| : |y_new|), sqrt(Σ r² / D).
    let _ = writeln!(s, "fn enorm(e: S, y: S, yn: S) -> {ty} {{");
    for d in 0..dim {
        let _ = writeln!(
            s,
            "    let u{d} = abs(y.v{d}); let w{d} = abs(yn.v{d}); let r{d} = e.v{d} / (cfg[{}u] + cfg[{}u] * select(w{d}, u{d}, u{d} > w{d}));",
            dim + d,
            d
        );
    }
    let _ = writeln!(
        s,
        "    return sqrt(({}) / {});\n}}",
        sum((0..dim).map(|d| format!("r{d} * r{d}")).collect()),
        lit(dim as f64)
    );
    // The controller (`PiController::accept`/`reject`). With β₂ = 0 (the I
    // controller) E_old^β₂ is skipped: it is exactly 1 (pow(x, 0) = 1 for
    // x ≥ qoldinit > 0), so the quotient is unchanged. The clamp bounds
    // 1/qmax and 1/qmin are the host's (`cfg_values`), not divided per step.
    let _ = writeln!(
        s,
        "fn accept(h: {ty}, err: {ty}, err_old: ptr<function, {ty}>) -> {ty} {{\n    var q11 = ppow(err, cfg[{c_b1}u]);\n    if (cfg[{c_b2}u] != {zero}) {{ q11 = q11 / ppow(*err_old, cfg[{c_b2}u]); }}\n    let q = clamp(q11 / cfg[{c_safe}u], cfg[{c_iqmax}u], cfg[{c_iqmin}u]);\n    *err_old = max(err, cfg[{c_qold}u]);\n    return h / q;\n}}",
        zero = lit(0.0)
    );
    let _ = writeln!(
        s,
        "fn reject(h: {ty}, err: {ty}) -> {ty} {{\n    if (fin(err)) {{ return h / min(cfg[{c_iqmin}u], ppow(err, cfg[{c_b1}u]) / cfg[{c_safe}u]); }}\n    return h * cfg[{c_qmin}u];\n}}"
    );
    // Hairer's starting step (controller.rs `initial_step`), in the state type.
    let rms = |name: &str, v: &dyn Fn(usize) -> String| -> String {
        format!(
            "    let {name} = sqrt(({}) / {});\n",
            sum((0..dim)
                .map(|d| format!("({}) * ({})", v(d), v(d)))
                .collect()),
            lit(dim as f64)
        )
    };
    let _ = writeln!(
        s,
        "fn hinit(t0: {ty}, y0: S, f0: S, l: L, gid: u32, hmax: {ty}) -> {ty} {{"
    );
    for d in 0..dim {
        let _ = writeln!(
            s,
            "    let sc{d} = cfg[{}u] + abs(y0.v{d}) * cfg[{d}u];",
            dim + d
        );
    }
    s.push_str(&rms("d0", &|d| format!("y0.v{d} / sc{d}")));
    s.push_str(&rms("d1", &|d| format!("f0.v{d} / sc{d}")));
    let _ = writeln!(
        s,
        "    var h0 = {small};\n    if (!(d0 < {e5} || d1 < {e5})) {{ h0 = {c01} * d0 / d1; }}\n    h0 = min(h0, hmax);",
        small = lit(1e-6),
        e5 = lit(1e-5),
        c01 = lit(0.01)
    );
    let _ = writeln!(
        s,
        "    let f1 = field(t0 + h0, {}, l, gid);",
        s_of(&|d| format!("y0.v{d} + h0 * f0.v{d}"))
    );
    s.push_str(&rms("d2r", &|d| format!("(f1.v{d} - f0.v{d}) / sc{d}")));
    let _ = writeln!(
        s,
        "    let d2 = d2r / h0;\n    let dm = select(d1, d2, d2 > d1);\n    var h1 = h0;\n    if (fin(dm)) {{\n        if (dm <= {e15}) {{ h1 = max(h0 * {e3}, {small}); }} else {{ h1 = ppow({c01} / dm, {inv}); }}\n    }}\n    return min(min({c100} * h0, h1), hmax);\n}}",
        e15 = lit(1e-15),
        e3 = lit(1e-3),
        small = lit(1e-6),
        c01 = lit(0.01),
        inv = lit(1.0 / f64::from(m.embedded_order + 1)),
        c100 = lit(100.0)
    );
    // The initial state from the kernel's initialisers.
    let _ = writeln!(
        s,
        "fn init_state(gid: u32, lid: u32, wg: u32, nwg: vec3<u32>) -> S {{"
    );
    s.push_str(&ff.init_lines(k, &ms));
    let _ = writeln!(s, "    return {};\n}}", s_of(&|d| format!("i{d}")));
    // Saves.
    let _ = writeln!(
        s,
        "fn store(at: u32, y: S) {{\n{}}}",
        (0..dim)
            .map(|d| format!("    saved[at * {dim}u + {d}u] = y.v{d};\n"))
            .collect::<String>()
    );

    // The entry point.
    let main_at = s.len();
    let _ = writeln!(
        s,
        "@compute @workgroup_size({ADAPTIVE_WORKGROUP})\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwgs: vec3<u32>, @builtin(local_invocation_index) lix: u32) {{"
    );
    let _ = writeln!(
        s,
        "    let local = (wid.y * nwgs.x + wid.x) * WGS + lix;\n    if (local >= launch[{W_CHUNK}u]) {{ return; }}\n    let gid = launch[{W_OFFSET}u] + local;\n    let lid = 0u;\n    let wg = gid;\n    let nwg = vec3<u32>(launch[{W_N}u], 1u, 1u);\n    let flags = launch[{W_FLAGS}u];"
    );
    let _ = writeln!(
        s,
        "    var y0: S;\n    if ((flags & {FLAG_U0}u) != 0u) {{ y0 = {}; }} else {{ y0 = init_state(gid, lid, wg, nwg); }}",
        s_of(&|d| format!("inp[local * {dim}u + {d}u]"))
    );
    for d in 0..dim {
        let _ = writeln!(s, "    let i{d} = y0.v{d};");
    }
    let lane_nodes = k.reachable(&ff.field_pre);
    s.push_str(&ff.lane_lines(k, &ms, &lane_nodes));
    let _ = writeln!(
        s,
        "    var t0 = cfg[{c_t0}u];\n    var t1 = cfg[{c_t1}u];\n    if ((flags & {FLAG_SPANS}u) != 0u) {{\n        let sb = select(0u, launch[{W_CHUNK}u] * {dim}u, (flags & {FLAG_U0}u) != 0u) + local * 2u;\n        t0 = inp[sb];\n        t1 = inp[sb + 1u];\n    }}"
    );
    let _ = writeln!(
        s,
        "    let nsave = launch[{w_k}u];\n    let maxit = launch[{w_maxit}u];\n    let sbase = local * nsave;\n    var y = y0;\n    var t = t0;\n    var ns = 0u;\n    loop {{\n        if (ns >= nsave) {{ break; }}\n        if (cfg[{c_save}u + ns] > t0) {{ break; }}\n        store(sbase + ns, y);\n        ns = ns + 1u;\n    }}\n    // A loop the device cut short (see `STATUS_CUT_SHORT`).\n    var cut = false;\n    if (ns < nsave) {{ cut = cfg[{c_save}u + ns] <= t0; }}\n    var done = false;\n    var status = 0u;\n    var acc = 0u;\n    var rej = 0u;\n    var evals = 0u;\n    var k0: S;\n    var f1: S;"
    );
    let n_extra = m.extra_c.len();
    for e in 0..n_extra {
        let _ = writeln!(s, "    var x{e}: S;");
    }
    if has_ev {
        s.push_str(&ev.decls());
    }
    if ros {
        s.push_str(&ros::decls(dim, ty));
    }
    // 'run: one pass, left by `break` with the status set.
    let _ = writeln!(
        s,
        "    loop {{\n        if (!fin_s(y)) {{ status = 3u; done = true; break; }}\n        if (t0 >= t1) {{ done = true; break; }}\n        k0 = field(t, y, l, gid);\n        evals = evals + 1u;\n        if (!fin_s(k0)) {{ status = 3u; done = true; break; }}\n        let adaptive = (flags & {FLAG_FIXED}u) == 0u;\n        let hf = min(cfg[{c_fixed}u], cfg[{c_dtmax}u]);\n        var dt: {ty};\n        if (!adaptive) {{ dt = hf; }} else if ((flags & {FLAG_DT0}u) != 0u) {{ dt = min(cfg[{c_dt0}u], cfg[{c_dtmax}u]); }} else {{ evals = evals + 1u; dt = hinit(t0, y, k0, l, gid, cfg[{c_dtmax}u]); }}\n{}        var err_old = cfg[{c_qold}u];\n        var iters = 0u;\n        loop {{\n            if (status != 0u || t >= t1) {{ done = true; break; }}\n            if (iters >= maxit) {{ status = 1u; done = true; break; }}\n            iters = iters + 1u;\n            var h = dt;\n            let snap = {c64} * {eps} * (abs(t1) + abs(h));\n            let last = t + h >= t1 - snap;\n            if (last) {{ h = t1 - t; }}",
        if has_ev {
            "        gp = gcond(t, y, l, gid);\n"
        } else {
            ""
        },
        c64 = lit(64.0),
        eps = if f64_states {
            lit(f64::EPSILON)
        } else {
            literal(Value::F32(f32::EPSILON))
        }
    );
    let ss = m.stages;
    let stage_sum = |row: &[f64], upto: usize, d: usize| -> String {
        sum((0..upto)
            .map(|j| format!("{} * k{j}.v{d}", lit(row[j])))
            .collect())
    };
    if ros {
        let at = ros::CfgAt {
            dtmin: c_dtmin,
            qmin: c_qmin,
        };
        let evented = if has_ev { "evented" } else { "false" };
        s.push_str(&ros::step(dim, ty, &lit, &at, evented));
        // Accepted: the next step's Jacobian is at its new start.
        s.push_str("            need_jac = true;\n");
    } else {
        // Stages: y + h·(a_i0·k0 + … ) summed left to right, zeros included.
        for i in 1..ss {
            let _ = writeln!(
                s,
                "            let y{i} = {};\n            let k{i} = field(t + {} * h, y{i}, l, gid);",
                s_of(&|d| format!("y.v{d} + h * ({})", stage_sum(&m.a[i], i, d))),
                lit(m.c[i])
            );
        }
        let _ = writeln!(s, "            evals = evals + {}u;", ss - 1);
        if m.fsal {
            let _ = writeln!(s, "            let yn = y{};", ss - 1);
        } else {
            let _ = writeln!(
                s,
                "            let yn = {};",
                s_of(&|d| format!("y.v{d} + h * ({})", stage_sum(&m.b, ss, d)))
            );
        }
        let _ = writeln!(
            s,
            "            var err = {zero};\n            if (adaptive) {{ err = enorm({}, y, yn); }}\n            if (!(err <= {one})) {{\n                rej = rej + 1u;\n                dt = reject(h, err);\n                if (dt < cfg[{c_dtmin}u] || t + dt == t) {{ status = 2u; }}\n                continue;\n            }}\n            var t_new = t + h;\n            if (last) {{ t_new = t1; }} else if (!adaptive{}) {{ t_new = {ty}(acc + 1u) * hf + t0; }}",
            s_of(&|d| format!("h * ({})", stage_sum(&m.bt, ss, d))),
            // After an event, fixed steps restart their grid at the event.
            if has_ev { " && !evented" } else { "" },
            zero = lit(0.0),
            one = lit(1.0)
        );
    }
    let _ = writeln!(
        s,
        "            let saves_here = ns < nsave && cfg[{c_save}u + min(ns, nsave - 1u)] <= t_new;"
    );
    if !m.fsal {
        let _ = writeln!(
            s,
            "            let need_f1 = {};\n            if (need_f1) {{ f1 = field(t_new, yn, l, gid); evals = evals + 1u; }}",
            if has_ev { "true" } else { "!last || saves_here" }
        );
    }
    // Dense output: extended stage `i` by name.
    let ext = |i: usize| -> String {
        if i < ss {
            format!("k{i}")
        } else if i == m.f1 {
            "f1".into()
        } else {
            format!("x{}", i - m.f1 - 1)
        }
    };
    // The extra stages, once per step (`xd`), at indentation `ind`.
    let fill = |ind: &str| -> String {
        let mut f = String::new();
        if n_extra == 0 {
            return f;
        }
        let _ = writeln!(f, "{ind}if (!xd) {{");
        for e in 0..n_extra {
            let nz: Vec<(usize, f64)> = m.extra_a[e]
                .iter()
                .copied()
                .enumerate()
                .filter(|(_, a)| *a != 0.0)
                .collect();
            let _ = writeln!(
                f,
                "{ind}    x{e} = field(t + {} * h, {}, l, gid);",
                lit(m.extra_c[e]),
                s_of(&|d| {
                    let mut terms = vec![lit(0.0)];
                    terms.extend(
                        nz.iter()
                            .map(|(j, a)| format!("{} * {}.v{d}", lit(*a), ext(*j))),
                    );
                    format!("y.v{d} + h * ({})", sum(terms))
                })
            );
        }
        let _ = writeln!(
            f,
            "{ind}    evals = evals + {n_extra}u;\n{ind}    xd = true;\n{ind}}}"
        );
        f
    };
    let nzw: Vec<(usize, &Vec<f64>)> = m
        .weights
        .iter()
        .enumerate()
        .filter(|(_, w)| w.iter().any(|v| *v != 0.0))
        .collect();
    // `let wI = …` of θ = `th`: w.iter().rev().fold(0, |s, r| (s + r)·θ).
    let weight_lines = |ind: &str| -> String {
        let mut f = String::new();
        for (i, w) in &nzw {
            let mut e = lit(0.0);
            for r in w.iter().rev() {
                e = format!("(({e} + {}) * th)", lit(*r));
            }
            let _ = writeln!(f, "{ind}let w{i} = {e};");
        }
        f
    };
    let dense_of = |stage: &dyn Fn(usize) -> String| {
        s_of(&|d| {
            let mut terms = vec![lit(0.0)];
            terms.extend(
                nzw.iter()
                    .map(|(i, _)| format!("w{i} * {}.v{d}", stage(*i))),
            );
            format!("y.v{d} + h * ({})", sum(terms))
        })
    };
    if has_ev {
        let args: Vec<String> = if ros {
            vec!["k1".into(), "k2".into()]
        } else {
            nzw.iter().map(|(i, _)| ext(*i)).collect()
        };
        let dense = |th: &str| format!("dense({th}, h, y, {})", args.join(", "));
        if !ros {
            dense_fn = format!(
                "fn dense(th: {ty}, h: {ty}, y: S, {}) -> S {{\n{}    return {};\n}}\n",
                nzw.iter()
                    .map(|(i, _)| format!("e{i}: S"))
                    .collect::<Vec<_>>()
                    .join(", "),
                weight_lines("    "),
                dense_of(&|i| format!("e{i}"))
            );
        }
        s.push_str("            var xd = false;\n            gn = gcond(t_new, yn, l, gid);\n");
        s.push_str(&fill("            "));
        let at = |j: usize| {
            if f64_states {
                j as f64 / EVENT_POINTS as f64
            } else {
                f64::from(j as f32 / EVENT_POINTS as f32)
            }
        };
        s.push_str(&ev.step_end(
            &dense,
            &lit,
            &at,
            !ros,
            [c_save, c_qold, c_dt0, c_dtmax],
            FLAG_DT0,
        ));
    } else if ros {
        let _ = writeln!(
            s,
            "            if (saves_here) {{\n                loop {{\n                    if (ns >= nsave) {{ break; }}\n                    let ts = cfg[{c_save}u + ns];\n                    if (ts > t_new) {{ break; }}\n                    if (ts == t_new) {{ store(sbase + ns, yn); }} else {{ store(sbase + ns, dense((ts - t) / h, h, y, k1, k2)); }}\n                    ns = ns + 1u;\n                }}\n            }}\n            y = yn;\n            t = t_new;\n            acc = acc + 1u;"
        );
    } else {
        let _ = writeln!(
            s,
            "            if (saves_here) {{\n                var xd = false;\n                loop {{\n                    if (ns >= nsave) {{ break; }}\n                    let ts = cfg[{c_save}u + ns];\n                    if (ts > t_new) {{ break; }}\n                    if (ts == t_new) {{ store(sbase + ns, yn); }} else {{"
        );
        s.push_str(&fill("                        "));
        s.push_str("                        let th = (ts - t) / h;\n");
        s.push_str(&weight_lines("                        "));
        let _ = writeln!(
            s,
            "                        store(sbase + ns, {});\n                    }}\n                    ns = ns + 1u;\n                }}\n            }}\n            y = yn;\n            t = t_new;\n            acc = acc + 1u;",
            dense_of(&ext)
        );
    }
    if m.fsal {
        let _ = writeln!(
            s,
            "            k0 = {};\n            if (!fin_s(y) || !fin_s(k0)) {{ status = 3u; continue; }}",
            if ros {
                "fa2".to_string()
            } else {
                format!("k{}", ss - 1)
            }
        );
    } else {
        s.push_str("            if (need_f1) { k0 = f1; }\n            if (!fin_s(y) || (need_f1 && !fin_s(k0))) { status = 3u; continue; }\n");
    }
    if has_ev {
        s.push_str("            gp = gn;\n            just = false;\n");
    }
    let _ = writeln!(
        s,
        "            if (adaptive) {{\n                dt = min(accept(h, err, &err_old), cfg[{c_dtmax}u]);\n                if (!last && dt < cfg[{c_dtmin}u]) {{ status = 2u; }}\n            }}\n        }}\n        break;\n    }}"
    );
    // Every exit of the step loop sets `done` (an error status continues to
    // the loop's top, so it passes the loop's back edge first): a loop left
    // without it, or a save loop left early, was cut short by the device.
    // The save rows from `ns` on are the host's to fill with NaN.
    let _ = writeln!(
        s,
        "    if (!done || cut) {{ status = {STATUS_CUT_SHORT}u; }}"
    );
    for d in 0..dim {
        let _ = writeln!(s, "    out[local * {}u + {d}u] = y.v{d};", dim + 1);
    }
    let _ = writeln!(
        s,
        "    out[local * {}u + {dim}u] = t;\n    stats[local * {sw}u] = status;\n    stats[local * {sw}u + 1u] = acc;\n    stats[local * {sw}u + 2u] = rej;\n    stats[local * {sw}u + 3u] = evals;\n    stats[local * {sw}u + 4u] = ns;\n}}",
        dim + 1,
        sw = STATS_WORDS
    );
    s.insert_str(main_at, &dense_fn);
    Ok(s)
}

/// Parses and validates an adaptive shader with naga, with the `f64`
/// capability when `f64` is true (what the device must then offer).
///
/// # Errors
/// naga's message, with the kernel's name.
pub fn validate_adaptive_wgsl(kernel: &str, src: &str, f64: bool) -> Result<(), IrError> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| IrError::Wgsl {
        kernel: kernel.into(),
        message: e.emit_to_string(src),
    })?;
    let caps = if f64 {
        naga::valid::Capabilities::FLOAT64
    } else {
        naga::valid::Capabilities::empty()
    };
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(|e| IrError::Wgsl {
            kernel: kernel.into(),
            message: format!("{e:?}"),
        })?;
    Ok(())
}

#[cfg(test)]
#[path = "adaptive_tests.rs"]
mod tests;
