//! The Lorenz baselines against the libraries: the adaptive driver equals the
//! hand-written Tsit5 loop bit for bit, and the Lorenz `Field` runs through
//! both the fixed-step launch and the adaptive driver.

use vgpu_demos::lorenz::{LorenzField, LorenzProblem};
use vgpu_demos::lorenz_tsit5::{lorenz_tsit5_driver, lorenz_tsit5_reference};
use vgpu_field::adaptive::{
    AdaptiveEnsemble, AdaptiveError, AdaptiveMethod, EnsembleProblem, FieldRhs,
};
use vgpu_field::{Launch, LaunchConfig, Method, Par, PerTrajectory};

#[test]
fn driver_equals_the_hand_written_tsit5_loop() {
    for par in [Par::Seq, Par::Rayon(2)] {
        let sol = lorenz_tsit5_driver(300, par).unwrap();
        let (end, stats) = lorenz_tsit5_reference(300, par).unwrap();
        assert!(sol.all_success());
        let b = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(b(&sol.end), b(&end));
        assert_eq!(sol.stats, stats);
    }
}

#[test]
fn a_field_runs_through_fixed_step_and_adaptive_integration() {
    // The crate's Lorenz Field, unchanged: RK4 through Launch, Tsit5 through
    // the adaptive driver (FieldRhs), and the same ensemble as a closure.
    let n = 64;
    let p = LorenzProblem::new(n);
    let rho = p.rho();
    let field = LorenzField {
        sigma: 10.0,
        beta: 8.0 / 3.0,
    };
    let cfg = LaunchConfig::linear(n, 32).unwrap();
    let mut fixed: Vec<f32> = [1.0f32, 0.0, 0.0].repeat(n);
    Launch::new(cfg)
        .method(Method::Rk4)
        .dt(1e-3)
        .steps(1000)
        .run(&PerTrajectory(field), &rho[..], &mut fixed)
        .unwrap();
    let y0: Vec<f32> = [1.0f32, 0.0, 0.0].repeat(n);
    let adaptive = AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
        .rtol(1e-6)
        .atol(1e-6)
        .solve(
            &FieldRhs::new(&field, &rho[..], cfg),
            &EnsembleProblem::new(n, &y0, &[(0.0, 1.0)]),
        )
        .unwrap();
    assert!(adaptive.all_success());
    for (a, f) in adaptive.end.iter().zip(&fixed) {
        assert!((a - f).abs() < 1e-3 * f.abs().max(1.0), "{a} vs {f}");
    }
    // Bit for bit the closure form of the same field.
    let closure = lorenz_tsit5_driver(n, Par::Auto).unwrap();
    assert_eq!(adaptive.end, closure.end);
    // The launch must hold exactly one lane per trajectory.
    let small = LaunchConfig::linear(32, 32).unwrap();
    let err = AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
        .solve(
            &FieldRhs::new(&field, &rho[..], small),
            &EnsembleProblem::new(n, &y0, &[(0.0, 1.0)]),
        )
        .unwrap_err();
    assert!(matches!(err, AdaptiveError::ShapeMismatch { .. }), "{err}");
}
