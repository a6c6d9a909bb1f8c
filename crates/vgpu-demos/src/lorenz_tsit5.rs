//! The adaptive driver's benchmark problem and its hand-written reference:
//! the Lorenz ensemble of [`crate::lorenz`] (`f32`, `σ = 10`, `β = 8/3`,
//! `ρ = linspace(0, 21, N)`, `u0 = (1, 0, 0)`) over `t ∈ [0, 1]` with Tsit5 at
//! `rtol = atol = 1e-6`, endpoints only.
//!
//! [`lorenz_tsit5_driver`] runs it through [`AdaptiveEnsemble`];
//! [`lorenz_tsit5_reference`] is one hand-written scalar Tsit5 loop per
//! trajectory (stages spelled out, the field's time argument dropped as Lorenz is
//! autonomous, the same PI controller and starting step),
//! trajectories spread over rayon. Both do the same operations in the same
//! order, so their endpoints and step counts agree bit for bit.

use crate::lorenz::LorenzProblem;
use rayon::prelude::*;
use vgpu_field::adaptive::controller::{initial_step, PiController};
use vgpu_field::adaptive::driver::{AdaptiveEnsemble, EnsembleProblem};
use vgpu_field::adaptive::error::AdaptiveError;
use vgpu_field::adaptive::method::AdaptiveMethod;
use vgpu_field::adaptive::rhs::rhs_fn;
use vgpu_field::adaptive::status::{EnsembleSolution, Status, TrajectoryStats};
use vgpu_field::adaptive::tableaus::tsit5;
use vgpu_field::Par;

/// The tolerance of the benchmark (`rtol = atol`).
pub const LORENZ_TOL: f64 = 1e-6;

#[inline(always)]
fn lorenz(rho: f32, u: &[f32; 3]) -> [f32; 3] {
    let (sigma, beta) = (10.0f32, 8.0f32 / 3.0);
    [
        sigma * (u[1] - u[0]),
        u[0] * (rho - u[2]) - u[1],
        u[0] * u[1] - beta * u[2],
    ]
}

/// The benchmark through the adaptive driver: `n` trajectories, endpoints
/// `(n, 3)` and per-trajectory statistics.
///
/// # Errors
/// [`AdaptiveError::EmptyEnsemble`] for `n = 0`; a thread-pool error.
pub fn lorenz_tsit5_driver(n: usize, par: Par) -> Result<EnsembleSolution<f32>, AdaptiveError> {
    let rho = LorenzProblem::new(n).rho();
    let y0: Vec<f32> = [1.0f32, 0.0, 0.0].repeat(n);
    let f = rhs_fn(|_t: f32, u: &[f32; 3], p: &[f32], du: &mut [f32; 3]| {
        *du = lorenz(p[0], u);
    });
    let prob = EnsembleProblem::new(n, &y0, &[(0.0, 1.0)]).params(&rho, 1);
    AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
        .rtol(LORENZ_TOL)
        .atol(LORENZ_TOL)
        .par(par)
        .solve(&f, &prob)
}

/// The hand-written reference: per trajectory a scalar Tsit5 loop with the
/// stages written out, the default PI controller (`β₁ = 0.14`, `β₂ = 0.08`,
/// safety 0.9, factors in `[0.2, 10]`) and Hairer's starting step; endpoints
/// `(n, 3)` and statistics (status, accepted, rejected, evaluations, time).
///
/// # Errors
/// A thread-pool error.
pub fn lorenz_tsit5_reference(
    n: usize,
    par: Par,
) -> Result<(Vec<f32>, Vec<TrajectoryStats>), AdaptiveError> {
    let rho = LorenzProblem::new(n).rho();
    let tab = tsit5();
    let cf = |v: f64| v as f32;
    let a = &tab.a;
    let (a21, a31, a32) = (cf(a[1][0]), cf(a[2][0]), cf(a[2][1]));
    let (a41, a42, a43) = (cf(a[3][0]), cf(a[3][1]), cf(a[3][2]));
    let (a51, a52, a53, a54) = (cf(a[4][0]), cf(a[4][1]), cf(a[4][2]), cf(a[4][3]));
    let (a61, a62, a63, a64, a65) = (
        cf(a[5][0]),
        cf(a[5][1]),
        cf(a[5][2]),
        cf(a[5][3]),
        cf(a[5][4]),
    );
    let (a71, a72, a73, a74, a75, a76) = (
        cf(a[6][0]),
        cf(a[6][1]),
        cf(a[6][2]),
        cf(a[6][3]),
        cf(a[6][4]),
        cf(a[6][5]),
    );
    let bt = tab.b_tilde().map(cf);
    let ctrl = PiController::for_order(5);
    let tol = LORENZ_TOL as f32;
    let (t0, t1) = (0.0f32, 1.0f32);
    let one = |r: f32, out: &mut [f32], st: &mut TrajectoryStats| {
        let f = |u: &[f32; 3]| lorenz(r, u);
        let mut y = [1.0f32, 0.0, 0.0];
        let mut t = t0;
        let mut k1 = f(&y);
        let mut evals = 2u64;
        let mut dt = initial_step(
            t0,
            &y,
            &k1,
            &[tol; 3],
            &[tol; 3],
            4,
            f64::INFINITY,
            |_, u, du| *du = f(u),
        );
        let mut err_old = ctrl.qoldinit;
        let (mut accepted, mut rejected, mut iters) = (0u64, 0u64, 0u64);
        let status = loop {
            if t >= t1 {
                break Status::Success;
            }
            if iters >= 100_000 {
                break Status::MaxIters;
            }
            iters += 1;
            let mut h = dt as f32;
            let last = t + h >= t1 - 64.0 * f32::EPSILON * (t1.abs() + h.abs());
            if last {
                h = t1 - t;
            }
            let st2: [f32; 3] = std::array::from_fn(|d| y[d] + h * (a21 * k1[d]));
            let k2 = f(&st2);
            let st3: [f32; 3] = std::array::from_fn(|d| y[d] + h * (a31 * k1[d] + a32 * k2[d]));
            let k3 = f(&st3);
            let st4: [f32; 3] =
                std::array::from_fn(|d| y[d] + h * (a41 * k1[d] + a42 * k2[d] + a43 * k3[d]));
            let k4 = f(&st4);
            let st5: [f32; 3] = std::array::from_fn(|d| {
                y[d] + h * (a51 * k1[d] + a52 * k2[d] + a53 * k3[d] + a54 * k4[d])
            });
            let k5 = f(&st5);
            let st6: [f32; 3] = std::array::from_fn(|d| {
                y[d] + h * (a61 * k1[d] + a62 * k2[d] + a63 * k3[d] + a64 * k4[d] + a65 * k5[d])
            });
            let k6 = f(&st6);
            let y_new: [f32; 3] = std::array::from_fn(|d| {
                y[d] + h
                    * (a71 * k1[d]
                        + a72 * k2[d]
                        + a73 * k3[d]
                        + a74 * k4[d]
                        + a75 * k5[d]
                        + a76 * k6[d])
            });
            let k7 = f(&y_new);
            evals += 6;
            let mut acc = 0.0f32;
            for d in 0..3 {
                let e = h
                    * (bt[0] * k1[d]
                        + bt[1] * k2[d]
                        + bt[2] * k3[d]
                        + bt[3] * k4[d]
                        + bt[4] * k5[d]
                        + bt[5] * k6[d]
                        + bt[6] * k7[d]);
                let (u, v) = (y[d].abs(), y_new[d].abs());
                let sc = tol + tol * if u > v { u } else { v };
                let r = e / sc;
                acc += r * r;
            }
            let err = ((acc / 3.0).sqrt()) as f64;
            let hf = h as f64;
            let accepted_step = err <= 1.0;
            if !accepted_step {
                rejected += 1;
                dt = if err.is_finite() {
                    hf / (err.powf(ctrl.beta1) / ctrl.safety).min(1.0 / ctrl.qmin)
                } else {
                    hf * ctrl.qmin
                };
                if t + dt as f32 == t {
                    break Status::DtMin;
                }
                continue;
            }
            t = if last { t1 } else { t + h };
            y = y_new;
            k1 = k7;
            accepted += 1;
            if !(y.iter().chain(&k1).all(|v| v.is_finite())) {
                break Status::NonFinite;
            }
            let q = (err.powf(ctrl.beta1) / err_old.powf(ctrl.beta2) / ctrl.safety)
                .clamp(1.0 / ctrl.qmax, 1.0 / ctrl.qmin);
            err_old = err.max(ctrl.qoldinit);
            dt = hf / q;
        };
        out.copy_from_slice(&y);
        *st = TrajectoryStats {
            status,
            accepted,
            rejected,
            evaluations: evals,
            t: t as f64,
        };
    };
    let mut out = vec![0.0f32; 3 * n];
    let mut stats = vec![TrajectoryStats::default(); n];
    par.run(|parallel| {
        if parallel {
            out.par_chunks_mut(3)
                .zip(stats.par_iter_mut())
                .zip(rho.par_iter())
                .for_each(|((o, s), &r)| one(r, o, s));
        } else {
            out.chunks_mut(3)
                .zip(stats.iter_mut())
                .zip(rho.iter())
                .for_each(|((o, s), &r)| one(r, o, s));
        }
        Ok(())
    })?;
    Ok((out, stats))
}
