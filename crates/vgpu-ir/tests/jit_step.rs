//! The whole step attempt as one native function (`IrRhs::whole_steps`, the
//! JIT's `step.rs`) against the column evaluator: every explicit pair, f32
//! and f64, on examples/lorenz.field, examples/blowup.field and a bouncing
//! ball's events, with save times: endpoints, saved points, statuses and
//! step counts bit for bit. A field too large for one step function, and the
//! stiff method, fall back to one native call per stage and say why.

use vgpu_field::adaptive::rhs::{ErkAttempt, TableauId};
use vgpu_field::adaptive::{
    bs3, dp5, tsit5, vern7, AdaptiveEnsemble, AdaptiveMethod, ErkTableau, OdeRhs, Traj,
};
use vgpu_ir::adaptive::{run_adaptive_cpu_on, AdaptiveIrError, AdaptiveOutput, AdaptiveRun, IrRhs};
use vgpu_ir::derived::Derived;
use vgpu_ir::{compile, Args, Buffer, Engine, Kernel, Value};

/// `n` trajectories over `t ∈ [0, 1]` on engine `e`.
fn try_run(
    k: &Kernel,
    args: &Args,
    n: usize,
    opts: &AdaptiveEnsemble,
    e: Engine,
) -> Result<AdaptiveOutput, AdaptiveIrError> {
    let run = AdaptiveRun {
        n,
        spans: vec![(0.0, 1.0)],
        u0: None,
        options: opts.clone(),
        slice: None,
    };
    run_adaptive_cpu_on(k, args, &run, e)
}

fn run(k: &Kernel, args: &Args, n: usize, opts: &AdaptiveEnsemble, e: Engine) -> AdaptiveOutput {
    try_run(k, args, n, opts, e).unwrap()
}

fn same(a: &Buffer, b: &Buffer) -> bool {
    a.len() == b.len()
        && (0..a.len()).all(|i| {
            let (x, y) = (a.get(i).as_f64(), b.get(i).as_f64());
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        })
}

/// The rhs of `k` on native code with whole steps of `m`.
fn stepped<'a>(
    k: &'a Kernel,
    args: &'a Args,
    d: &'a Derived,
    n: usize,
    m: AdaptiveMethod,
) -> IrRhs<'a> {
    IrRhs::new(k, args, n)
        .unwrap()
        .with_derived(d)
        .unwrap()
        .engine(Engine::Jit)
        .whole_steps(m)
}

/// Every explicit pair: the whole-step JIT compiles and gives the
/// evaluator's bits; `want_accepted` steps at least on some trajectory.
fn whole_steps_agree(k: &Kernel, args: &Args, n: usize, tol: (f64, f64), want_accepted: u64) {
    whole_steps_agree_with(k, args, n, |o| o.rtol(tol.0).atol(tol.1), want_accepted);
}

/// [`whole_steps_agree`] with the tolerances `tune` sets.
fn whole_steps_agree_with(
    k: &Kernel,
    args: &Args,
    n: usize,
    tune: impl Fn(AdaptiveEnsemble) -> AdaptiveEnsemble,
    want_accepted: u64,
) {
    let d = Derived::new(k, false).unwrap();
    for m in AdaptiveMethod::ALL {
        let rhs = stepped(k, args, &d, n, m);
        assert!(rhs.has_native_steps(), "{m}: {:?}", rhs.step_fallback());
        let opts = tune(AdaptiveEnsemble::new(m))
            .dt0(0.5)
            .saveat(vec![0.0, 0.3, 0.61, 0.9, 1.0]);
        let jit = run(k, args, n, &opts, Engine::Jit);
        let eval = run(k, args, n, &opts, Engine::Eval);
        assert_eq!(jit.stats, eval.stats, "{} {m}", k.name);
        assert!(
            same(&jit.end, &eval.end),
            "{} {m}: {:?} {:?}",
            k.name,
            jit.end,
            eval.end
        );
        assert!(same(&jit.saved, &eval.saved), "{} {m}", k.name);
        assert!(
            jit.stats.iter().any(|s| s.accepted >= want_accepted)
                && jit.stats.iter().any(|s| s.rejected > 0),
            "{} {m}: too easy a run: {:?}",
            k.name,
            jit.stats
        );
    }
}

fn rhos(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| 21.0 * i as f64 / (n - 1) as f64 + 7.0)
        .collect()
}

/// `src` with its float type swapped (`f32` ↔ `f64`), and a buffer of
/// `vals` in the new file's type.
fn kernel_of(name: &str, src: &str, f64: bool) -> Kernel {
    let text = if f64 {
        src.replace("f32", "f64")
    } else {
        src.replace("f64", "f32")
    };
    // Untyped states default to f32: spell them out for the f64 version.
    let text = if f64 {
        text.replace(
            "state x = 1.0, y = 0.0, z = 0.0",
            "state x: f64 = 1.0, y: f64 = 0.0, z: f64 = 0.0",
        )
    } else {
        text
    };
    compile(name, &text).unwrap()
}

fn buffer(vals: &[f64], f64: bool) -> Buffer {
    if f64 {
        Buffer::F64(vals.to_vec().into())
    } else {
        Buffer::F32(vals.iter().map(|&v| v as f32).collect())
    }
}

#[test]
fn lorenz_every_pair_f32_and_f64() {
    for f64 in [false, true] {
        let k = kernel_of(
            "lorenz.field",
            include_str!("../../../examples/lorenz.field"),
            f64,
        );
        assert_eq!(k.float_type().to_string(), if f64 { "f64" } else { "f32" });
        let mut args = Args::new(&k);
        args.buffer("rho", buffer(&rhos(16), f64)).unwrap();
        whole_steps_agree(&k, &args, 16, (1e-6, 1e-7), 20);
    }
}

#[test]
fn blowup_every_pair_f32_and_f64_with_a_failing_trajectory() {
    for f64 in [false, true] {
        let k = kernel_of(
            "blowup.field",
            include_str!("../../../examples/blowup.field"),
            f64,
        );
        let mut args = Args::new(&k);
        args.buffer("p", buffer(&[0.5, 2.0, -1.0, 0.9], f64))
            .unwrap();
        whole_steps_agree(&k, &args, 4, (1e-7, 1e-9), 5);
        let opts = AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
            .rtol(1e-7)
            .atol(1e-9);
        let out = run(&k, &args, 4, &opts, Engine::Jit);
        assert!(!out.stats[1].status.is_success(), "{:?}", out.stats[1]);
        assert!(out.stats[0].status.is_success());
    }
}

/// Five coupled states: more than one vector of the native step (f32x4,
/// f64x2) with a padded last one, and a tolerance per component.
const CHAIN: &str = "field chain(w: f64[]) {
    state p: f64 = 1.0, q: f64 = 0.0, r: f64 = 0.5, s: f64 = -0.5, v: f64 = 0.0;
    d(p)/dt = q;
    d(q)/dt = -w[i] * w[i] * p - 0.1 * q + 0.5 * r * s;
    d(r)/dt = s - p * v;
    d(s)/dt = -r + 0.2 * q;
    d(v)/dt = p * r - v;
}";

#[test]
fn five_states_with_per_component_tolerances_f32_and_f64() {
    for f64 in [false, true] {
        let k = kernel_of("chain.field", CHAIN, f64);
        assert_eq!(k.states.len(), 5);
        let mut args = Args::new(&k);
        args.buffer("w", buffer(&[1.0, 3.0, 7.5, 12.0, 0.25, 20.0], f64))
            .unwrap();
        let tune = |o: AdaptiveEnsemble| {
            o.rtol_per_component(vec![1e-6, 1e-5, 3e-7, 1e-6, 2e-6])
                .atol_per_component(vec![1e-7, 1e-6, 1e-8, 5e-7, 1e-9])
        };
        whole_steps_agree_with(&k, &args, 6, tune, 20);
    }
}

const BALL: &str = "field ball(h0: f64[], e: f64) {
    state y: f64 = h0[i], v: f64 = 0.0, nb: f64 = 0.0;
    d(y)/dt = v;
    d(v)/dt = -9.81 - 0.3 * v * abs(v) + 2.0 * sin(20.0 * t);
    d(nb)/dt = 0.0;
    event floor: y falling {
        v := -e * v;
        nb := nb + 1.0;
    }
    event stop: t - 0.8 * h0[i] rising { terminate; }
}";

#[test]
fn bouncing_ball_events_every_pair_f32_and_f64() {
    for f64 in [false, true] {
        let k = kernel_of("ball.field", BALL, f64);
        let mut args = Args::new(&k);
        args.buffer("h0", buffer(&[1.0, 2.5, 0.3, 4.0, 0.05], f64))
            .unwrap()
            .scalar(
                "e",
                if f64 {
                    Value::F64(0.8)
                } else {
                    Value::F32(0.8)
                },
            )
            .unwrap();
        whole_steps_agree(&k, &args, 5, (1e-6, 1e-8), 3);
        let opts = AdaptiveEnsemble::new(AdaptiveMethod::Vern7)
            .rtol(1e-6)
            .atol(1e-8);
        let out = run(&k, &args, 5, &opts, Engine::Jit);
        // Trajectories 0, 2 and 4 stop at t = 0.8·h0 < 1; 0 after a bounce.
        use vgpu_field::adaptive::Status::{Success, Terminated};
        let st: Vec<_> = out.stats.iter().map(|s| s.status).collect();
        assert_eq!(st, [Terminated, Success, Terminated, Success, Terminated]);
        let bounces = out.end.get(2).as_f64();
        assert!(bounces >= 1.0, "{bounces}");
    }
}

/// The whole step is offered only for the pair it was compiled for.
fn offered<const S: usize>(rhs: &IrRhs<'_>, tab: &ErkTableau<S>) -> Option<f32> {
    let y0 = [1.0f32, 0.0, 0.0];
    let traj = Traj {
        index: 3,
        y0: &y0,
        p: &[],
    };
    let mut sc = OdeRhs::<f32, 3>::scratch(rhs);
    let mut k = vec![[0.0f32; 3]; S];
    rhs.rhs(0.0, &y0, &traj, &mut sc, &mut k[0]);
    let mut y_new = [0.0f32; 3];
    let mut step = ErkAttempt {
        tableau: TableauId::of(tab),
        t: 0.0,
        h: 0.01,
        y: &y0,
        k: &mut k,
        atol: &[1e-6; 3],
        rtol: &[1e-6; 3],
        y_new: &mut y_new,
    };
    rhs.erk_attempt(&mut step, &traj, &mut sc)
}

fn lorenz32() -> Kernel {
    let src = include_str!("../../../examples/lorenz.field");
    compile("lorenz.field", src).unwrap()
}

fn lorenz_args(k: &Kernel, n: usize) -> Args {
    let mut args = Args::new(k);
    args.buffer("rho", buffer(&rhos(n), false)).unwrap();
    args
}

#[test]
fn the_step_runs_for_its_own_pair_only() {
    let k = lorenz32();
    let args = lorenz_args(&k, 8);
    let d = Derived::new(&k, false).unwrap();
    let rhs = stepped(&k, &args, &d, 8, AdaptiveMethod::Tsit5);
    let err = offered(&rhs, &tsit5()).expect("tsit5's step is compiled");
    assert!(err.is_finite() && err > 0.0, "{err}");
    assert_eq!(offered(&rhs, &dp5()), None);
    assert_eq!(offered(&rhs, &bs3()), None);
    assert_eq!(offered(&rhs, &vern7()), None);
    // A tableau named tsit5 with one coefficient changed is another pair.
    let mut other = tsit5();
    other.b_hat[0] += 1e-3;
    assert_eq!(offered(&rhs, &other), None);
    // Without whole steps nothing is offered.
    let plain = IrRhs::new(&k, &args, 8).unwrap().engine(Engine::Jit);
    assert!(plain.is_native() && !plain.has_native_steps());
    assert_eq!(offered(&plain, &tsit5()), None);
}

#[test]
fn what_cannot_be_one_step_falls_back_and_says_why() {
    // 16 states whose rates are long sums of library calls: more nodes per
    // step than the whole-step limit, few enough for one call per stage.
    let states: Vec<String> = (0..16).map(|j| format!("s{j} = {}.0", j + 1)).collect();
    let rates: String = (0..16)
        .map(|j| {
            let terms: String = (0..64)
                .map(|m| format!(" + 0.001 * sin(s{} * {}.5)", (j + m) % 16, m))
                .collect();
            format!("d(s{j})/dt = -s{j}{terms};\n")
        })
        .collect();
    let src = format!("field wide() {{ state {}; {rates} }}", states.join(", "));
    let k = compile("wide.field", &src).unwrap();
    let args = Args::new(&k);
    let d = Derived::new(&k, false).unwrap();
    let rhs = stepped(&k, &args, &d, 2, AdaptiveMethod::Vern7);
    assert!(rhs.is_native(), "{:?}", rhs.fallback());
    assert!(!rhs.has_native_steps());
    let why = rhs.step_fallback().expect("a reason").to_string();
    assert!(why.contains("wide") && why.contains("more than"), "{why}");
    // It still runs, with the evaluator's bits.
    let opts = AdaptiveEnsemble::new(AdaptiveMethod::Vern7)
        .rtol(1e-6)
        .atol(1e-8);
    let (jit, eval) = (
        run(&k, &args, 2, &opts, Engine::Jit),
        run(&k, &args, 2, &opts, Engine::Eval),
    );
    assert_eq!(jit.stats, eval.stats);
    assert!(same(&jit.end, &eval.end));
    // The stiff method is no explicit pair.
    let k = lorenz32();
    let args = lorenz_args(&k, 4);
    let d = Derived::new(&k, true).unwrap();
    let rhs = stepped(&k, &args, &d, 4, AdaptiveMethod::Rosenbrock23);
    let why = rhs.step_fallback().expect("a reason").to_string();
    assert!(
        why.contains("rosenbrock23 is not an explicit pair"),
        "{why}"
    );
}

#[test]
fn an_out_of_bounds_read_inside_a_stage_is_the_same_error() {
    // The index depends on the stage's time: the read faults in a later
    // stage, at t·10 + i ≥ len. With 6 trajectories the native steps run
    // four lanes at a time: the first faulting trajectory is still named.
    let src = "field oob(a: f32[]) {
        state x = 1.0;
        d(x)/dt = -x * a[u32(t * 10.0) + i];
    }";
    let k = compile("oob.field", src).unwrap();
    for (n, len, first) in [(3, 9, 0), (6, 12, 2)] {
        let mut args = Args::new(&k);
        args.buffer("a", vec![1.0f32; len]).unwrap();
        let d = Derived::new(&k, false).unwrap();
        assert!(stepped(&k, &args, &d, n, AdaptiveMethod::Tsit5).has_native_steps());
        let opts = AdaptiveEnsemble::new(AdaptiveMethod::Tsit5);
        let jit = try_run(&k, &args, n, &opts, Engine::Jit).unwrap_err();
        let eval = try_run(&k, &args, n, &opts, Engine::Eval).unwrap_err();
        assert_eq!(jit.to_string(), eval.to_string());
        assert!(
            jit.to_string().contains(&format!("trajectory {first}")),
            "{jit}"
        );
    }
}
