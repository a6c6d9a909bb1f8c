//! The adaptive pairs' coefficients: order conditions from rooted trees for
//! `b`, `b̂` and the dense output, and measured convergence orders.

use vgpu_field::adaptive::{
    bs3, dp5, order_residuals, rhs_fn, tsit5, vern7, AdaptiveEnsemble, AdaptiveMethod, DenseKind,
    EnsembleProblem, ErkTableau,
};
use vgpu_field::{Par, Stepper};

/// Checks one pair: row sums, `b` to its order and not beyond, `b̂` to its
/// order and not beyond, the dense output to its order at several `θ`, and
/// `w(1) = b`.
fn check_pair<const S: usize>(tab: &ErkTableau<S>, tol: f64, dense_tol: f64) {
    let name = tab.name;
    let (ext_a, ext_c) = tab.extended();
    for (i, (row, ci)) in ext_a.iter().zip(&ext_c).enumerate() {
        let sum: f64 = row.iter().sum();
        assert!(
            (sum - ci).abs() < 1e-12,
            "{name}: extended row {i} sums to {sum}, c = {ci}"
        );
    }
    let main: Vec<Vec<f64>> = (0..S).map(|i| tab.a[i][..i].to_vec()).collect();
    let (p, q) = (tab.order as usize, tab.embedded_order as usize);
    let rb = order_residuals(&main, &tab.b, 1.0, p + 1);
    assert!(rb[..p].iter().all(|&r| r < tol), "{name} b: {rb:?}");
    assert!(rb[p] > 1e-6, "{name} b satisfies order {}: {rb:?}", p + 1);
    let rh = order_residuals(&main, &tab.b_hat, 1.0, q + 1);
    assert!(rh[..q].iter().all(|&r| r < tol), "{name} b̂: {rh:?}");
    assert!(rh[q] > 1e-6, "{name} b̂ satisfies order {}: {rh:?}", q + 1);
    if tab.fsal {
        assert_eq!(tab.c[S - 1], 1.0, "{name}: FSAL stage at c = 1");
        assert_eq!(
            &tab.a[S - 1][..S - 1],
            &tab.b[..S - 1],
            "{name}: FSAL row = b"
        );
        assert_eq!(tab.b[S - 1], 0.0, "{name}: FSAL stage has no weight");
    }
    let po = tab.dense.order as usize;
    for theta in [0.25, 0.5, 0.8, 1.0] {
        let w = tab.dense_weights(theta);
        let r = order_residuals(&ext_a, &w, theta, po + 1);
        assert!(
            r[..po].iter().all(|&x| x < dense_tol),
            "{name} dense θ = {theta}: {r:?}"
        );
    }
    let w1 = tab.dense_weights(1.0);
    for (i, wi) in w1.iter().enumerate() {
        let bi = tab.b.get(i).copied().unwrap_or(0.0);
        assert!(
            (wi - bi).abs() < dense_tol,
            "{name}: w_{i}(1) = {wi} ≠ b = {bi}"
        );
    }
    let w0 = tab.dense_weights(0.0);
    assert!(w0.iter().all(|&x| x == 0.0), "{name}: w(0) = {w0:?}");
    // The same data pass the fixed-step executor's own checks.
    let t = tab.to_tableau().unwrap();
    assert_eq!(t.embedded().unwrap().1, tab.embedded_order);
    tab.embedded_tableau().unwrap();
}

#[test]
fn tsit5_satisfies_its_order_conditions() {
    let t = tsit5();
    check_pair(&t, 1e-13, 1e-13);
    assert_eq!(t.dense.kind, DenseKind::Native);
}

#[test]
fn dp5_satisfies_its_order_conditions() {
    check_pair(&dp5(), 1e-13, 1e-13);
}

#[test]
fn bs3_satisfies_its_order_conditions() {
    let t = bs3();
    check_pair(&t, 1e-15, 1e-15);
    assert_eq!(t.dense.kind, DenseKind::Hermite);
}

#[test]
fn vern7_satisfies_its_order_conditions() {
    // 85 conditions for b (trees up to order 7), 37 for b̂, and the
    // interpolant over its 16 extended stages: orders 1–6 to rounding, order 7
    // to the precision of the published decimals (see vern7.rs).
    let t = vern7();
    assert_eq!(t.extended_stages(), 16);
    check_pair(&t, 1e-13, 1e-11);
    let (a, _) = t.extended();
    for theta in [0.1, 0.25, 0.5, 0.75, 0.9] {
        let r = order_residuals(&a, &t.dense_weights(theta), theta, 8);
        assert!(r[6] < 1e-6, "order 7 at θ = {theta}: {r:?}");
        assert!(r[7] > 1e-6, "order 8 at θ = {theta}: {r:?}");
    }
}

#[test]
fn corrupting_one_coefficient_breaks_the_conditions() {
    let mut t = tsit5();
    t.a[4][2] += 1e-6;
    t.c[4] += 1e-6;
    let main: Vec<Vec<f64>> = (0..7).map(|i| t.a[i][..i].to_vec()).collect();
    let r = order_residuals(&main, &t.b, 1.0, 5);
    assert!(r[2..].iter().any(|&x| x > 1e-8), "{r:?}");
}

/// y' = -t·y, y(0) = 1: y(t) = exp(-t²/2). Global error at t = 2 with fixed
/// steps of 2/n through the driver's core (weights b).
fn fixed_error(m: AdaptiveMethod, n: usize) -> f64 {
    let f = rhs_fn(|t: f64, y: &[f64; 1], _p: &[f64], dy: &mut [f64; 1]| dy[0] = -t * y[0]);
    let prob = EnsembleProblem::new(1, &[1.0], &[(0.0, 2.0)]);
    let sol = AdaptiveEnsemble::new(m)
        .fixed_step(2.0 / n as f64)
        .par(Par::Seq)
        .solve(&f, &prob)
        .unwrap();
    assert!(sol.all_success());
    assert_eq!(sol.stats[0].accepted as usize, n, "{m}: {n} fixed steps");
    (sol.end[0] - (-2.0f64).exp()).abs()
}

/// The same with the embedded weights b̂, through the fixed-step `Stepper`.
fn embedded_error<const S: usize>(tab: &ErkTableau<S>, n: usize) -> f64 {
    let mut s = Stepper::<f64>::new(&tab.embedded_tableau().unwrap(), 1);
    let dt = 2.0 / n as f64;
    let mut y = [1.0];
    for i in 0..n {
        s.step(i as f64 * dt, dt, &mut y, |t, y, dy| dy[0] = -t * y[0]);
    }
    (y[0] - (-2.0f64).exp()).abs()
}

fn observed(e1: f64, e2: f64) -> f64 {
    (e1 / e2).log2()
}

#[test]
fn fixed_step_orders_are_the_methods_orders() {
    for (m, n) in [
        (AdaptiveMethod::Bs3, 40),
        (AdaptiveMethod::Tsit5, 20),
        (AdaptiveMethod::Dp5, 20),
        (AdaptiveMethod::Vern7, 10),
    ] {
        let (e1, e2) = (fixed_error(m, n), fixed_error(m, 2 * n));
        let o = observed(e1, e2);
        let p = m.order() as f64;
        eprintln!("{m}: b order {o:.3} (errors {e1:.3e} → {e2:.3e})");
        assert!(
            (o - p).abs() < 0.35,
            "{m}: observed order {o} (errors {e1:e}, {e2:e})"
        );
    }
}

#[test]
fn embedded_orders_are_the_pairs_lower_orders() {
    fn check<const S: usize>(tab: &ErkTableau<S>, n: usize) {
        let (e1, e2) = (embedded_error(tab, n), embedded_error(tab, 2 * n));
        let o = observed(e1, e2);
        let q = tab.embedded_order as f64;
        eprintln!("{}: b̂ order {o:.3} (errors {e1:.3e} → {e2:.3e})", tab.name);
        assert!(
            (o - q).abs() < 0.35,
            "{} b̂: observed order {o} ({e1:e}, {e2:e})",
            tab.name
        );
    }
    check(&bs3(), 40);
    check(&tsit5(), 20);
    check(&dp5(), 20);
    check(&vern7(), 10);
}

#[test]
fn fixed_steps_match_the_fixed_step_executor() {
    // The pair's b row through vgpu-field's Stepper and through the driver's
    // core: the same method, different (documented) rounding orders.
    let tab = vern7();
    let mut s = Stepper::<f64>::new(&tab.to_tableau().unwrap(), 1);
    let mut y = [1.0];
    for i in 0..16 {
        s.step(i as f64 * 0.125, 0.125, &mut y, |t, y, dy| {
            dy[0] = -t * y[0]
        });
    }
    let f = rhs_fn(|t: f64, y: &[f64; 1], _p: &[f64], dy: &mut [f64; 1]| dy[0] = -t * y[0]);
    let sol = AdaptiveEnsemble::new(AdaptiveMethod::Vern7)
        .fixed_step(0.125)
        .solve(&f, &EnsembleProblem::new(1, &[1.0], &[(0.0, 2.0)]))
        .unwrap();
    assert!(
        (sol.end[0] - y[0]).abs() < 1e-15,
        "{} vs {}",
        sol.end[0],
        y[0]
    );
}
