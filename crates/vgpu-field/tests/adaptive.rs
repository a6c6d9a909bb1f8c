//! The adaptive ensemble driver: accuracy against exact solutions and a tight
//! reference, dense output at save times, per-trajectory statuses, option
//! errors, determinism across thread counts. (The hand-written Tsit5 reference
//! and the Lorenz `Field` through both integrators are checked in
//! `crates/vgpu-demos/tests/lorenz_baselines.rs`, beside the baselines.)

use vgpu_field::adaptive::{
    rhs_fn, vern7, AdaptiveEnsemble, AdaptiveError, AdaptiveMethod, DenseTableau, EnsembleProblem,
    EnsembleSolution, Status,
};
use vgpu_field::{Par, Real};

const ALL: [AdaptiveMethod; 4] = AdaptiveMethod::ALL;

fn gauss(t: f64) -> f64 {
    (-t * t / 2.0).exp()
}

/// y' = -t·y (from y(0) = 1 the solution is `gauss`).
fn gauss_rhs() -> impl vgpu_field::adaptive::OdeRhs<f64, 1> {
    rhs_fn(|t: f64, y: &[f64; 1], _p: &[f64], dy: &mut [f64; 1]| dy[0] = -t * y[0])
}

#[test]
fn adaptive_runs_reach_the_exact_solution_within_tolerance() {
    for m in ALL {
        for tol in [1e-6, 1e-9] {
            let prob = EnsembleProblem::new(1, &[1.0], &[(0.0, 3.0)]);
            let sol = AdaptiveEnsemble::new(m)
                .rtol(tol)
                .atol(tol)
                .solve(&gauss_rhs(), &prob)
                .unwrap();
            assert!(sol.all_success(), "{m}");
            let err = (sol.end[0] - gauss(3.0)).abs();
            assert!(err < 10.0 * tol, "{m} tol {tol}: error {err:e}");
            assert!(sol.stats[0].accepted > 3, "{m}: really adaptive");
        }
        // The rotation, ω per trajectory: y(t) = (cos ωt, -sin ωt).
        let f = rhs_fn(|_t: f64, y: &[f64; 2], p: &[f64], dy: &mut [f64; 2]| {
            dy[0] = p[0] * y[1];
            dy[1] = -p[0] * y[0];
        });
        let w = [1.0, 2.0, 5.0];
        let prob =
            EnsembleProblem::new(3, &[1.0, 0.0, 1.0, 0.0, 1.0, 0.0], &[(0.0, 2.0)]).params(&w, 1);
        let tol = 1e-8;
        let sol = AdaptiveEnsemble::new(m)
            .rtol(tol)
            .atol(tol)
            .solve(&f, &prob)
            .unwrap();
        for (i, wi) in w.iter().enumerate() {
            let e = sol.end_of(i);
            let err = (e[0] - (2.0 * wi).cos())
                .abs()
                .max((e[1] + (2.0 * wi).sin()).abs());
            assert!(err < 50.0 * tol, "{m} rotation ω = {wi}: error {err:e}");
        }
    }
}

fn lorenz_rhs<T: Real>() -> impl vgpu_field::adaptive::OdeRhs<T, 3> {
    rhs_fn(|_t: T, u: &[T; 3], p: &[T], du: &mut [T; 3]| {
        let (sigma, beta) = (T::from_f64(10.0), T::from_f64(8.0 / 3.0));
        du[0] = sigma * (u[1] - u[0]);
        du[1] = u[0] * (p[0] - u[2]) - u[1];
        du[2] = u[0] * u[1] - beta * u[2];
    })
}

fn lorenz<T: Real>(m: AdaptiveMethod, tol: f64, rho: &[f64]) -> EnsembleSolution<T> {
    let n = rho.len();
    let y0: Vec<T> = (0..n).flat_map(|_| [T::ONE, T::ZERO, T::ZERO]).collect();
    let p: Vec<T> = rho.iter().map(|r| T::from_f64(*r)).collect();
    let prob = EnsembleProblem::new(n, &y0, &[(0.0, 1.0)]).params(&p, 1);
    AdaptiveEnsemble::new(m)
        .rtol(tol)
        .atol(tol)
        .solve(&lorenz_rhs::<T>(), &prob)
        .unwrap()
}

#[test]
fn lorenz_f32_and_f64_match_a_tight_reference() {
    let rho = [28.0, 21.0, 10.0, 0.5];
    let reference = lorenz::<f64>(AdaptiveMethod::Vern7, 1e-12, &rho);
    let dp = lorenz::<f64>(AdaptiveMethod::Dp5, 1e-12, &rho);
    for (a, b) in reference.end.iter().zip(&dp.end) {
        assert!(
            (a - b).abs() < 1e-9 * a.abs().max(1.0),
            "references disagree: {a} vs {b}"
        );
    }
    let check = |name: String, end: Vec<f64>, tol: f64, factor: f64| {
        for (i, (x, r)) in end.iter().zip(&reference.end).enumerate() {
            let rel = (x - r).abs() / r.abs().max(1.0);
            assert!(
                rel < factor * tol,
                "{name} component {i}: {x} vs {r} (rel {rel:e})"
            );
        }
    };
    for m in ALL {
        let s32 = lorenz::<f32>(m, 1e-6, &rho);
        assert!(s32.all_success(), "{m} f32");
        check(
            format!("{m} f32"),
            s32.end.iter().map(|v| *v as f64).collect(),
            1e-6,
            100.0,
        );
        let s64 = lorenz::<f64>(m, 1e-8, &rho);
        assert!(s64.all_success(), "{m} f64");
        check(format!("{m} f64"), s64.end, 1e-8, 100.0);
    }
}

#[test]
fn saveat_comes_from_the_dense_output_without_forcing_steps() {
    let times = vec![0.0, 0.1, 0.37, 1.0, 1.234, 2.5, 3.0];
    for m in ALL {
        let tol = 1e-9;
        let run = |save: Vec<f64>| {
            let prob = EnsembleProblem::new(2, &[1.0, 2.0], &[(0.0, 3.0)]);
            AdaptiveEnsemble::new(m)
                .rtol(tol)
                .atol(tol)
                .saveat(save)
                .par(Par::Seq)
                .solve(&gauss_rhs(), &prob)
                .unwrap()
        };
        let with = run(times.clone());
        let without = run(vec![]);
        assert_eq!(with.saved.len(), 2 * times.len());
        for (j, &t) in times.iter().enumerate() {
            for (i, scale) in [1.0, 2.0].into_iter().enumerate() {
                let got = with.saved_at(i, j)[0];
                let err = (got - scale * gauss(t)).abs();
                assert!(
                    err < 20.0 * tol * scale,
                    "{m} t = {t}: {got} (error {err:e})"
                );
            }
        }
        // Same steps, same endpoints: save times never shorten a step.
        assert_eq!(with.end, without.end, "{m}");
        for (a, b) in with.stats.iter().zip(&without.stats) {
            assert_eq!((a.accepted, a.rejected), (b.accepted, b.rejected), "{m}");
        }
        assert_eq!(with.saved_at(0, 0)[0], 1.0);
        assert_eq!(with.saved_at(1, times.len() - 1)[0], with.end[1]);
    }
}

#[test]
fn vern7_interpolant_beats_its_hermite_fallback() {
    // The same steps (dense output never changes them), interpolated by
    // Verner's order-7 interpolant and by the cubic Hermite fallback.
    let prob = EnsembleProblem::new(1, &[1.0], &[(0.0, 3.0)]);
    let times: Vec<f64> = (1..30).map(|i| i as f64 * 0.1 + 0.013).collect();
    let ens = AdaptiveEnsemble::new(AdaptiveMethod::Vern7)
        .rtol(1e-7)
        .atol(1e-7)
        .saveat(times.clone());
    let native = vern7();
    let mut hermite = vern7();
    hermite.dense = DenseTableau::hermite(&hermite.b, hermite.f1_index());
    let worst = |sol: &EnsembleSolution<f64>| {
        times
            .iter()
            .enumerate()
            .map(|(j, &t)| (sol.saved_at(0, j)[0] - gauss(t)).abs())
            .fold(0.0, f64::max)
    };
    let a = ens.solve_tableau(&native, &gauss_rhs(), &prob).unwrap();
    let b = ens.solve_tableau(&hermite, &gauss_rhs(), &prob).unwrap();
    assert_eq!(a.end, b.end);
    assert_eq!(a.stats[0].accepted, b.stats[0].accepted);
    // Five extra stages per step that holds a save time, nothing else.
    assert!(a.stats[0].evaluations > b.stats[0].evaluations);
    let (wa, wb) = (worst(&a), worst(&b));
    assert!(wa < 1e-6, "native worst dense error {wa:e}");
    assert!(wa * 10.0 < wb, "native {wa:e} vs Hermite {wb:e}");
}

#[test]
fn a_blow_up_fails_alone() {
    // y' = p·y², y(0) = 1: p = 10 blows up at t = 0.1; p = -1 gives 1/(1 + t).
    fn run<T: Real>(par: Par) -> EnsembleSolution<T> {
        let f = rhs_fn(|_t: T, y: &[T; 1], p: &[T], dy: &mut [T; 1]| dy[0] = p[0] * y[0] * y[0]);
        let p: Vec<T> = [-1.0, 10.0, -1.0].iter().map(|v| T::from_f64(*v)).collect();
        let y0 = [T::ONE; 3];
        let prob = EnsembleProblem::new(3, &y0, &[(0.0, 1.0)]).params(&p, 1);
        AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
            .rtol(1e-6)
            .atol(1e-6)
            .saveat(vec![0.05, 0.5, 1.0])
            .par(par)
            .solve(&f, &prob)
            .unwrap()
    }
    fn check<T: Real>(sol: &EnsembleSolution<T>) {
        let s = sol.statuses();
        assert_eq!(s[0], Status::Success, "{}", T::NAME);
        assert_eq!(s[2], Status::Success, "{}", T::NAME);
        assert!(
            matches!(s[1], Status::NonFinite | Status::DtMin),
            "{}: {:?}",
            T::NAME,
            s[1]
        );
        let t = sol.stats[1].t;
        assert!(t > 0.099 && t <= 0.1 + 1e-6, "{}: stopped at {t}", T::NAME);
        for i in [0, 2] {
            assert!(
                (sol.end_of(i)[0].to_f64() - 0.5).abs() < 1e-5,
                "{}",
                T::NAME
            );
        }
        // Before the blow-up saved, after it NaN.
        let early = sol.saved_at(1, 0)[0].to_f64();
        assert!((early - 2.0).abs() < 1e-4, "{}: y(0.05) = {early}", T::NAME);
        assert!(sol.saved_at(1, 1)[0].to_f64().is_nan());
        assert!(sol.saved_at(1, 2)[0].to_f64().is_nan());
    }
    check(&run::<f32>(Par::Seq));
    check(&run::<f64>(Par::Seq));
    check(&run::<f64>(Par::Rayon(2)));
}

#[test]
fn maxiters_and_per_trajectory_spans() {
    let f = rhs_fn(|_t: f64, y: &[f64; 2], _p: &[f64], dy: &mut [f64; 2]| {
        dy[0] = y[1];
        dy[1] = -y[0];
    });
    let y0 = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0];
    let spans = [(0.0, 0.5), (0.0, 500.0), (2.0, 2.0)];
    let sol = AdaptiveEnsemble::new(AdaptiveMethod::Dp5)
        .rtol(1e-8)
        .atol(1e-8)
        .maxiters(40)
        .solve(&f, &EnsembleProblem::new(3, &y0, &spans))
        .unwrap();
    assert_eq!(sol.stats[0].status, Status::Success);
    assert!((sol.end_of(0)[0] - 0.5f64.cos()).abs() < 1e-7);
    let s1 = sol.stats[1];
    assert_eq!(s1.status, Status::MaxIters);
    assert_eq!(s1.accepted + s1.rejected, 40);
    assert!(s1.t > 0.0 && s1.t < 500.0);
    // The state at the time reached is right.
    assert!((sol.end_of(1)[0] - s1.t.cos()).abs() < 1e-6);
    // An empty span succeeds at once with its initial state.
    assert_eq!(sol.stats[2].status, Status::Success);
    assert_eq!((sol.stats[2].accepted, sol.stats[2].t), (0, 2.0));
    assert_eq!(sol.end_of(2), &[1.0, 0.0]);
}

#[test]
fn dtmin_stops_a_trajectory() {
    let prob = EnsembleProblem::new(1, &[1.0], &[(0.0, 3.0)]);
    let sol = AdaptiveEnsemble::new(AdaptiveMethod::Bs3)
        .rtol(1e-10)
        .atol(1e-10)
        .dtmin(0.1)
        .solve(&gauss_rhs(), &prob)
        .unwrap();
    assert_eq!(sol.stats[0].status, Status::DtMin);
}

/// Endpoint bits, saved bits, and (status, accepted, rejected, time bits).
type Bits = (Vec<u64>, Vec<u64>, Vec<(u8, u64, u64, u64)>);

fn bits<T: Real>(s: &EnsembleSolution<T>) -> Bits {
    (
        s.end.iter().map(|v| v.to_bits_u64()).collect(),
        s.saved.iter().map(|v| v.to_bits_u64()).collect(),
        s.stats
            .iter()
            .map(|t| (t.status.code(), t.accepted, t.rejected, t.t.to_bits()))
            .collect(),
    )
}

#[test]
fn results_are_bit_identical_for_any_thread_count() {
    let n = 97;
    // ρ = linspace(0, 21, n), as the Lorenz benchmark problem has it.
    let rho: Vec<f32> = (0..n)
        .map(|i| (i as f64 * 21.0 / (n - 1) as f64) as f32)
        .collect();
    let y0: Vec<f32> = [1.0f32, 0.0, 0.0].repeat(n);
    let spans: Vec<(f64, f64)> = (0..n).map(|i| (0.0, 0.5 + i as f64 / n as f64)).collect();
    for m in ALL {
        let run = |par| {
            AdaptiveEnsemble::new(m)
                .rtol(1e-5)
                .atol(1e-5)
                .saveat(vec![0.1, 0.25, 0.5])
                .par(par)
                .solve(
                    &lorenz_rhs::<f32>(),
                    &EnsembleProblem::new(n, &y0, &spans).params(&rho, 1),
                )
                .unwrap()
        };
        let seq = bits(&run(Par::Seq));
        assert_eq!(seq, bits(&run(Par::Rayon(2))), "{m}");
        assert_eq!(seq, bits(&run(Par::Rayon(3))), "{m}");
    }
}

#[test]
fn bad_options_are_typed_errors() {
    let f = gauss_rhs();
    let y0 = [1.0, 1.0];
    let prob = EnsembleProblem::new(2, &y0, &[(0.0, 1.0)]);
    let e = |b: AdaptiveEnsemble, p: &EnsembleProblem<f64>| b.solve(&f, p).unwrap_err();
    let base = || AdaptiveEnsemble::new(AdaptiveMethod::Tsit5);
    let err = e(base().rtol(0.0), &prob);
    assert!(
        matches!(err, AdaptiveError::BadTolerance { option: "rtol", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("rtol"));
    let err = e(base().atol(f64::NAN), &prob);
    assert!(
        matches!(err, AdaptiveError::BadTolerance { option: "atol", .. }),
        "{err}"
    );
    let err = e(base().rtol(-1e-3), &prob);
    assert!(
        matches!(err, AdaptiveError::BadTolerance { option: "rtol", .. }),
        "{err}"
    );
    let err = e(base().atol_per_component(vec![1e-6, 1e-6]), &prob);
    assert!(
        matches!(err, AdaptiveError::ShapeMismatch { what: "atol", .. }),
        "{err}"
    );
    let err = e(base().saveat(vec![0.5, 1.5]), &prob);
    assert!(
        matches!(err, AdaptiveError::BadSaveat { index: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("outside the span"), "{err}");
    let err = e(base().saveat(vec![0.5, 0.2]), &prob);
    assert!(
        matches!(err, AdaptiveError::BadSaveat { index: 1, .. }),
        "{err}"
    );
    let err = e(base().dt0(0.0), &prob);
    assert!(
        matches!(err, AdaptiveError::BadStepOption { option: "dt0", .. }),
        "{err}"
    );
    let err = e(base().dt0(-1.0), &prob);
    assert!(
        matches!(err, AdaptiveError::BadStepOption { option: "dt0", .. }),
        "{err}"
    );
    let err = e(base().dtmin(0.5).dtmax(0.1), &prob);
    assert!(
        matches!(
            err,
            AdaptiveError::BadStepOption {
                option: "dtmin",
                ..
            }
        ),
        "{err}"
    );
    let err = e(base().fixed_step(0.0), &prob);
    assert!(matches!(
        err,
        AdaptiveError::BadStepOption {
            option: "fixed_step",
            ..
        }
    ));
    let err = e(base().maxiters(0), &prob);
    assert_eq!(err, AdaptiveError::ZeroMaxIters);
    let err = e(base(), &EnsembleProblem::new(0, &[], &[(0.0, 1.0)]));
    assert_eq!(err, AdaptiveError::EmptyEnsemble);
    let err = e(base(), &EnsembleProblem::new(3, &y0, &[(0.0, 1.0)]));
    assert!(
        matches!(
            err,
            AdaptiveError::ShapeMismatch {
                what: "y0",
                got: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("(N, D) = (3, 1)"), "{err}");
    let err = e(base(), &EnsembleProblem::new(2, &y0, &[(0.0, 1.0); 3]));
    assert!(
        matches!(err, AdaptiveError::ShapeMismatch { what: "spans", .. }),
        "{err}"
    );
    let err = e(base(), &prob.params(&[1.0, 2.0, 3.0], 2));
    assert!(err.to_string().contains("(N, P) = (2, 2)"), "{err}");
    let err = e(base(), &EnsembleProblem::new(2, &y0, &[(1.0, 0.0)]));
    assert!(matches!(err, AdaptiveError::BadSpan { .. }), "{err}");
    let err = e(
        base(),
        &EnsembleProblem::new(2, &y0, &[(0.0, f64::INFINITY)]),
    );
    assert!(matches!(err, AdaptiveError::BadSpan { .. }), "{err}");
    assert!("rk45".parse::<AdaptiveMethod>().is_err());
    assert_eq!(
        "Vern7".parse::<AdaptiveMethod>().unwrap(),
        AdaptiveMethod::Vern7
    );
}
