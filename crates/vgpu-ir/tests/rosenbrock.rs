//! Rosenbrock23 on `.field` kernels with the Jacobian derived from the IR:
//! the Jacobian against finite differences, order 2 on a linear problem with
//! a known solution, Van der Pol (μ = 1000) against a tight reference with far
//! fewer steps than Tsit5, Robertson at t = 40, and the refusals.

use vgpu_field::adaptive::{AdaptiveEnsemble, AdaptiveMethod, OdeRhs, Status, Traj};
use vgpu_ir::adaptive::{run_adaptive_cpu, AdaptiveOutput, AdaptiveRun, IrRhs};
use vgpu_ir::derived::Derived;
use vgpu_ir::{compile, Args, Buffer, Kernel, Value};

fn f64s(b: &Buffer) -> Vec<f64> {
    (0..b.len()).map(|i| b.get(i).as_f64()).collect()
}

fn run(k: &Kernel, args: &Args, n: usize, t1: f64, opts: AdaptiveEnsemble) -> AdaptiveOutput {
    let run = AdaptiveRun {
        n,
        spans: vec![(0.0, t1)],
        u0: None,
        options: opts,
        slice: None,
    };
    run_adaptive_cpu(k, args, &run).unwrap()
}

/// The derived Jacobian of a 3-state f64 field at `(t, y)` against central
/// differences of its rates.
fn jacobian_matches_differences(src: &str, t: f64, y: [f64; 3]) {
    let k = compile("j.field", src).unwrap();
    let mut args = Args::new(&k);
    if k.params.iter().any(|p| p.name == "a") {
        args.buffer("a", Buffer::F64(vec![0.7, 1.3].into()))
            .unwrap();
    }
    let d = Derived::new(&k, true).unwrap();
    let rhs = IrRhs::new(&k, &args, 2).unwrap().with_derived(&d).unwrap();
    let y0 = [0.0; 3];
    for index in 0..2 {
        let cx = Traj {
            index,
            y0: &y0,
            p: &[],
        };
        let mut sc = <IrRhs as OdeRhs<f64, 3>>::scratch(&rhs);
        let (mut jac, mut ft) = ([[0.0; 3]; 3], [0.0; 3]);
        assert!(<IrRhs as OdeRhs<f64, 3>>::has_jacobian(&rhs));
        rhs.jacobian(t, &y, &cx, &mut sc, &mut jac, &mut ft);
        let f = |t: f64, y: [f64; 3], sc: &mut _| {
            let mut dy = [0.0; 3];
            rhs.rhs(t, &y, &cx, sc, &mut dy);
            dy
        };
        let e = 1e-6;
        for j in 0..4 {
            let (mut yp, mut ym, mut tp, mut tm) = (y, y, t, t);
            if j < 3 {
                yp[j] += e;
                ym[j] -= e;
            } else {
                tp += e;
                tm -= e;
            }
            let (fp, fm) = (f(tp, yp, &mut sc), f(tm, ym, &mut sc));
            for i in 0..3 {
                let fd = (fp[i] - fm[i]) / (2.0 * e);
                let sym = if j < 3 { jac[i][j] } else { ft[i] };
                assert!(
                    (fd - sym).abs() <= 1e-6 * (1.0 + fd.abs()),
                    "{src}\nd f{i} / d {}: symbolic {sym}, differences {fd}",
                    if j < 3 { format!("y{j}") } else { "t".into() }
                );
            }
        }
    }
}

#[test]
fn derived_jacobians_match_finite_differences() {
    let lorenz = "field l(a: f64[]) {
        state x: f64 = 1.0, y: f64 = 0.0, z: f64 = 0.0;
        d(x)/dt = 10.0 * (y - x);
        d(y)/dt = x * (28.0 * a[i] - z) - y;
        d(z)/dt = x * y - 8.0 / 3.0 * z;
    }";
    let ops = "field o(a: f64[]) {
        state x: f64 = 1.0, y: f64 = 0.0, z: f64 = 0.0;
        let q = sqrt(x * x + 1.0) / (2.0 + cos(y));
        d(x)/dt = sin(x * y) + exp(-z) * t - pow(abs(x) + 1.0, 1.5) + q * a[i];
        d(y)/dt = log(2.0 + y * y) * tanh(z - t * t) + min(x, y) - max(z, 0.25) / (1.0 + x * x);
        d(z)/dt = fma(x, z, y) + select(x > 0.0, x * x, -y) + pow(2.0, x * t) - 0.5 * z + f64(i) * x;
    }";
    let vdp = "field v() {
        state x: f64 = 2.0, y: f64 = 0.0, w: f64 = 0.0;
        d(x)/dt = y;
        d(y)/dt = 3.0 * (1.0 - x * x) * y - x;
        d(w)/dt = 0.0;
    }";
    for (t, y) in [(0.3, [0.8, -1.1, 0.4]), (1.7, [-0.6, 0.9, 2.2])] {
        jacobian_matches_differences(lorenz, t, y);
        jacobian_matches_differences(ops, t, y);
        jacobian_matches_differences(vdp, t, y);
    }
}

#[test]
fn rosenbrock23_converges_at_order_two() {
    // y' = λ(y − cos t) − sin t, y(0) = 2: y = cos t + e^{λt} (non-autonomous,
    // so ∂f/∂t enters every step).
    let src = "field lin(lam: f64) {
        state y: f64 = 2.0;
        d(y)/dt = lam * (y - cos(t)) - sin(t);
    }";
    let k = compile("lin.field", src).unwrap();
    let mut args = Args::new(&k);
    args.scalar("lam", Value::F64(-5.0)).unwrap();
    let exact = 1f64.cos() + (-5.0f64).exp();
    let err = |steps: usize| {
        let opts =
            AdaptiveEnsemble::new(AdaptiveMethod::Rosenbrock23).fixed_step(1.0 / steps as f64);
        let out = run(&k, &args, 1, 1.0, opts);
        assert_eq!(out.stats[0].accepted, steps as u64);
        (f64s(&out.end)[0] - exact).abs()
    };
    let e: Vec<f64> = [20, 40, 80, 160].iter().map(|&s| err(s)).collect();
    for w in e.windows(2) {
        let order = (w[0] / w[1]).log2();
        assert!((1.85..2.2).contains(&order), "errors {e:?}: order {order}");
    }
}

/// Van der Pol, `x'' = μ(1 − x²)x' − x`: relaxation oscillations of period
/// ≈ (3 − 2 ln 2)μ ≈ 1614 for μ = 1000, with transitions of time scale 1/μ.
const VDP: &str = "field vdp(mu: f64) {
    state x: f64 = 2.0, y: f64 = 0.0;
    d(x)/dt = y;
    d(y)/dt = mu * (1.0 - x * x) * y - x;
}";

#[test]
fn van_der_pol_mu_1000_with_far_fewer_steps_than_tsit5() {
    let k = compile("vdp.field", VDP).unwrap();
    let mut args = Args::new(&k);
    args.scalar("mu", Value::F64(1000.0)).unwrap();
    let t1 = 3000.0;
    let saves = vec![250.0, 500.0, 1000.0, 2000.0, 3000.0];
    let reference = run(
        &k,
        &args,
        1,
        t1,
        AdaptiveEnsemble::new(AdaptiveMethod::Rosenbrock23)
            .rtol(1e-10)
            .atol(1e-10)
            .maxiters(10_000_000)
            .saveat(saves.clone()),
    );
    assert_eq!(
        reference.stats[0].status,
        Status::Success,
        "{:?}",
        reference.stats[0]
    );
    let out = run(
        &k,
        &args,
        1,
        t1,
        AdaptiveEnsemble::new(AdaptiveMethod::Rosenbrock23)
            .rtol(1e-6)
            .atol(1e-6)
            .saveat(saves.clone()),
    );
    let st = out.stats[0];
    assert_eq!(st.status, Status::Success);
    let (r, s) = (f64s(&reference.saved), f64s(&out.saved));
    for j in 0..saves.len() {
        // x is O(1) on the slow manifold; compare it there.
        assert!(
            (r[j * 2] - s[j * 2]).abs() < 1e-3,
            "t = {}: x = {} vs reference {}",
            saves[j],
            s[j * 2],
            r[j * 2]
        );
    }
    // Tsit5, stability-bound on the slow manifold, needs many more steps:
    // within 20× Rosenbrock23's attempts it does not get through the span.
    let budget = 20 * (st.accepted + st.rejected);
    let tsit = run(
        &k,
        &args,
        1,
        t1,
        AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
            .rtol(1e-6)
            .atol(1e-6)
            .maxiters(budget),
    );
    assert_eq!(
        tsit.stats[0].status,
        Status::MaxIters,
        "{:?} vs {st:?}",
        tsit.stats[0]
    );
    assert!(tsit.stats[0].t < 0.5 * t1, "{:?}", tsit.stats[0]);
}

#[test]
fn robertson_at_t_40() {
    let src = "field rober() {
        state y1: f64 = 1.0, y2: f64 = 0.0, y3: f64 = 0.0;
        d(y1)/dt = -0.04 * y1 + 1.0e4 * y2 * y3;
        d(y2)/dt = 0.04 * y1 - 1.0e4 * y2 * y3 - 3.0e7 * y2 * y2;
        d(y3)/dt = 3.0e7 * y2 * y2;
    }";
    let k = compile("rober.field", src).unwrap();
    let args = Args::new(&k);
    let out = run(
        &k,
        &args,
        1,
        40.0,
        AdaptiveEnsemble::new(AdaptiveMethod::Rosenbrock23)
            .rtol(1e-8)
            .atol_per_component(vec![1e-10, 1e-14, 1e-10]),
    );
    assert_eq!(out.stats[0].status, Status::Success);
    let y = f64s(&out.end);
    // Hairer & Wanner's reference values at t = 40.
    let want = [0.7158270687, 9.185534764e-6, 0.2841637457];
    for i in 0..3 {
        assert!(
            (y[i] - want[i]).abs() <= 1e-5 * want[i],
            "y{} = {} vs {}",
            i + 1,
            y[i],
            want[i]
        );
    }
    assert!(out.stats[0].accepted < 20_000, "{:?}", out.stats[0]);
}

#[test]
fn refusals_name_the_option() {
    // More than 16 states.
    let states: Vec<String> = (0..17).map(|j| format!("s{j}: f64 = 1.0")).collect();
    let rates: Vec<String> = (0..17).map(|j| format!("d(s{j})/dt = -s{j};")).collect();
    let src = format!(
        "field big() {{ state {}; {} }}",
        states.join(", "),
        rates.join(" ")
    );
    let k = compile("big.field", &src).unwrap();
    let args = Args::new(&k);
    let r = AdaptiveRun {
        n: 1,
        spans: vec![(0.0, 1.0)],
        u0: None,
        options: AdaptiveEnsemble::new(AdaptiveMethod::Rosenbrock23),
        slice: None,
    };
    let e = run_adaptive_cpu(&k, &args, &r).unwrap_err().to_string();
    assert!(e.contains("17") && e.contains("16"), "{e}");
    // An operation without a derivative.
    let src = "field m() { state x: f64 = 1.0; d(x)/dt = 1.0 % (x + 2.0); }";
    let k = compile("m.field", src).unwrap();
    let e = Derived::new(&k, true).unwrap_err().to_string();
    assert!(e.contains("`a % b`") && e.contains("rate of `x`"), "{e}");
    // A closure has no Jacobian.
    let f = vgpu_field::adaptive::rhs_fn(|_t: f64, y: &[f64; 1], _p: &[f64], dy: &mut [f64; 1]| {
        dy[0] = -y[0]
    });
    let prob = vgpu_field::adaptive::EnsembleProblem::new(1, &[1.0], &[(0.0, 1.0)]);
    let e = AdaptiveEnsemble::new(AdaptiveMethod::Rosenbrock23)
        .solve(&f, &prob)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("option `method` = rosenbrock23") && e.contains("Jacobian"),
        "{e}"
    );
}
