//! The Lorenz ensemble benchmark problem (as in the DiffEqGPU paper): `f32`,
//! `σ = 10`, `β = 8/3`, `ρ = linspace(0, 21, N)`, `u0 = (1, 0, 0)`,
//! `dt = 0.001`, 1000 RK4 steps, endpoints only.
//!
//! Two implementations of the same arithmetic: [`lorenz_field`] through the
//! public field API ([`LorenzField`] run by [`Launch`]), and
//! two hand-written Rust loops parallelised with rayon: [`lorenz_reference`]
//! (one scalar loop per trajectory) and [`lorenz_reference_lanes`] (chunks of
//! 16 trajectories the compiler vectorises). All three perform the same
//! operations in the same order, so their endpoints agree bit for bit.

use rayon::prelude::*;
use vgpu_field::field::{Ctx, Field, PerTrajectory};
use vgpu_field::Launch;
use vgpu_field::LaunchConfig;
use vgpu_field::Method;
use vgpu_field::Par;
use vgpu_field::Real;
use vgpu_field::{check_len, FieldError};

/// The benchmark problem.
#[derive(Debug, Clone, PartialEq)]
pub struct LorenzProblem {
    /// Trajectories.
    pub n: usize,
    /// RK4 steps.
    pub steps: usize,
    /// Step size.
    pub dt: f32,
    /// σ.
    pub sigma: f32,
    /// β.
    pub beta: f32,
    /// Start state.
    pub u0: [f32; 3],
}

impl LorenzProblem {
    /// The paper's problem with `n` trajectories.
    pub fn new(n: usize) -> Self {
        LorenzProblem {
            n,
            steps: 1000,
            dt: 0.001,
            sigma: 10.0,
            beta: 8.0 / 3.0,
            u0: [1.0, 0.0, 0.0],
        }
    }

    /// `ρ_i`, as numpy's `linspace(0, 21, n)` computes it (in `f64`, then rounded).
    pub fn rho(&self) -> Vec<f32> {
        linspace_rho(self.n)
    }

    /// This problem's σ, β, dt and start state.
    pub fn consts(&self) -> LorenzConsts<f32> {
        LorenzConsts {
            sigma: self.sigma,
            beta: self.beta,
            dt: self.dt,
            u0: self.u0,
        }
    }
}

/// `ρ_i` as numpy's `linspace(0, 21, n)` computes it, in `f64`, then rounded
/// to `T`.
pub fn linspace_rho<T: Real>(n: usize) -> Vec<T> {
    let step = if n > 1 { 21.0 / (n - 1) as f64 } else { 0.0 };
    (0..n).map(|i| T::from_f64(i as f64 * step)).collect()
}

/// The problem's constants in a float type `T`: what the loops and the field
/// below compute with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LorenzConsts<T> {
    /// σ.
    pub sigma: T,
    /// β.
    pub beta: T,
    /// Step size.
    pub dt: T,
    /// Start state.
    pub u0: [T; 3],
}

impl<T: Real> LorenzConsts<T> {
    /// The paper's constants computed in `T` (σ = 10, β = 8/3 divided in `T`,
    /// dt = 0.001, u0 = (1, 0, 0)); in `f32` those of [`LorenzProblem::new`].
    pub fn paper() -> Self {
        LorenzConsts {
            sigma: T::from_f64(10.0),
            beta: T::from_f64(8.0) / T::from_f64(3.0),
            dt: T::from_f64(0.001),
            u0: [T::ONE, T::ZERO, T::ZERO],
        }
    }
}

/// The Lorenz field in `T` (`f32` unless said); its parameter is the `ρ`
/// buffer, one per trajectory.
#[derive(Debug, Clone, Copy)]
pub struct LorenzField<T = f32> {
    /// σ.
    pub sigma: T,
    /// β.
    pub beta: T,
}

impl<T: Real> Field<T, 3> for LorenzField<T> {
    type Params = [T];
    #[inline(always)]
    fn eval(&self, _t: T, u: &[T; 3], _u0: &[T; 3], c: &Ctx<'_, '_, [T]>, du: &mut [T; 3]) {
        let rho = c.params()[c.global()];
        lorenz_rhs(self.sigma, self.beta, rho, u, du);
    }

    fn check(&self, cfg: &LaunchConfig, rho: &[T]) -> Result<(), FieldError> {
        check_len(
            "rho",
            rho.len(),
            cfg.total_threads(),
            "one ρ per trajectory of the launch",
        )
    }
}

#[inline(always)]
fn lorenz_rhs<T: Real>(sigma: T, beta: T, rho: T, u: &[T; 3], du: &mut [T; 3]) {
    du[0] = sigma * (u[1] - u[0]);
    du[1] = u[0] * (rho - u[2]) - u[1];
    du[2] = u[0] * u[1] - beta * u[2];
}

/// Integrates the problem through the field API with blocks of `block`
/// trajectories. Returns the endpoints, trajectory-major (`n × 3`).
///
/// # Errors
/// Bad dimensions (`n = 0`, `block` out of range).
pub fn lorenz_field(p: &LorenzProblem, block: u32, par: Par) -> Result<Vec<f32>, FieldError> {
    lorenz_field_in(&p.rho(), p.consts(), p.steps, block, par)
}

/// [`lorenz_field`] in any float type: one trajectory per `ρ`, `steps` RK4
/// steps of `c.dt`.
///
/// # Errors
/// Bad dimensions (no `ρ`, `block` out of range).
pub fn lorenz_field_in<T: Real>(
    rho: &[T],
    c: LorenzConsts<T>,
    steps: usize,
    block: u32,
    par: Par,
) -> Result<Vec<T>, FieldError> {
    let n = rho.len();
    let cfg = LaunchConfig::linear(n, block)?;
    let total = cfg.total_threads();
    // ρ padded to the launch (the last block's extra lanes integrate ρ = 0 and are dropped).
    let mut rho = rho.to_vec();
    rho.resize(total, T::ZERO);
    let mut u: Vec<T> = c.u0.iter().copied().cycle().take(3 * total).collect();
    let field = PerTrajectory(LorenzField {
        sigma: c.sigma,
        beta: c.beta,
    });
    Launch::new(cfg)
        .method(Method::Rk4)
        .dt(c.dt.to_f64())
        .steps(steps)
        .par(par)
        .run(&field, &rho[..], &mut u)?;
    u.truncate(3 * n);
    Ok(u)
}

/// The hand-written reference: one scalar RK4 loop per trajectory, trajectories
/// spread over rayon's threads (one pool of the size `par` says). Same
/// operations, same order as the field path.
///
/// # Errors
/// [`FieldError::ThreadPool`] if the pool cannot be built.
pub fn lorenz_reference(p: &LorenzProblem, par: Par) -> Result<Vec<f32>, FieldError> {
    let rho = p.rho();
    let mut out = vec![0.0f32; 3 * p.n];
    let (s, b, dt, steps, u0) = (p.sigma, p.beta, p.dt, p.steps, p.u0);
    // Step weights as the textbook writes them: dt/2, dt, dt/6, dt/3 (each rounded once).
    let (half, full) = (dt * 0.5, dt * 1.0);
    let (w0, w1) = (dt * (1.0f32 / 6.0), dt * (1.0f32 / 3.0));
    let one = move |o: &mut [f32], r: f32| {
        let mut u = u0;
        let (mut k1, mut k2, mut k3, mut k4) = ([0.0f32; 3], [0.0f32; 3], [0.0f32; 3], [0.0f32; 3]);
        for _ in 0..steps {
            lorenz_rhs(s, b, r, &u, &mut k1);
            let v: [f32; 3] = std::array::from_fn(|i| u[i] + half * k1[i]);
            lorenz_rhs(s, b, r, &v, &mut k2);
            let v: [f32; 3] = std::array::from_fn(|i| u[i] + half * k2[i]);
            lorenz_rhs(s, b, r, &v, &mut k3);
            let v: [f32; 3] = std::array::from_fn(|i| u[i] + full * k3[i]);
            lorenz_rhs(s, b, r, &v, &mut k4);
            for i in 0..3 {
                u[i] += w0 * k1[i] + w1 * k2[i] + w1 * k3[i] + w0 * k4[i];
            }
        }
        o.copy_from_slice(&u);
    };
    par.run(|parallel| {
        if parallel {
            out.par_chunks_mut(3)
                .zip(rho.par_iter())
                .for_each(|(o, &r)| one(o, r));
        } else {
            out.chunks_mut(3)
                .zip(rho.iter())
                .for_each(|(o, &r)| one(o, r));
        }
        Ok(())
    })?;
    Ok(out)
}

/// Lanes per chunk of [`lorenz_reference_lanes`].
pub const REFERENCE_LANES: usize = 16;

/// The hand-written reference a performance-minded Rust programmer writes:
/// trajectories in chunks of [`REFERENCE_LANES`], each component a fixed-size
/// array so the compiler vectorises across the chunk, chunks spread over
/// rayon's threads. Same operations, same order as [`lorenz_field`].
///
/// # Errors
/// [`FieldError::ThreadPool`] if the pool cannot be built.
pub fn lorenz_reference_lanes(p: &LorenzProblem, par: Par) -> Result<Vec<f32>, FieldError> {
    lorenz_lanes(&p.rho(), p.consts(), p.steps, par)
}

/// [`lorenz_reference_lanes`] in any float type: one trajectory per `ρ`,
/// `steps` RK4 steps of `c.dt`, endpoints trajectory-major.
///
/// # Errors
/// [`FieldError::ThreadPool`] if the pool cannot be built.
pub fn lorenz_lanes<T: Real>(
    rho: &[T],
    c: LorenzConsts<T>,
    steps: usize,
    par: Par,
) -> Result<Vec<T>, FieldError> {
    const L: usize = REFERENCE_LANES;
    let mut out = vec![T::ZERO; 3 * rho.len()];
    let (s, b, dt, u0) = (c.sigma, c.beta, c.dt, c.u0);
    // Step weights as the textbook writes them: dt/2, dt, dt/6, dt/3 (each rounded once).
    let (half, full) = (dt * T::from_f64(0.5), dt * T::ONE);
    let (w0, w1) = (
        dt * (T::ONE / T::from_f64(6.0)),
        dt * (T::ONE / T::from_f64(3.0)),
    );
    #[inline(always)]
    fn rhs<T: Real>(s: T, b: T, r: &[T; L], u: &[[T; L]; 3], du: &mut [[T; L]; 3]) {
        for l in 0..L {
            du[0][l] = s * (u[1][l] - u[0][l]);
            du[1][l] = u[0][l] * (r[l] - u[2][l]) - u[1][l];
            du[2][l] = u[0][l] * u[1][l] - b * u[2][l];
        }
    }
    #[inline(always)]
    fn stage<T: Real>(u: &[[T; L]; 3], k: &[[T; L]; 3], h: T) -> [[T; L]; 3] {
        std::array::from_fn(|i| std::array::from_fn(|l| u[i][l] + h * k[i][l]))
    }
    let chunk = move |o: &mut [T], r: &[T]| {
        let m = r.len();
        let mut rr = [T::ZERO; L];
        rr[..m].copy_from_slice(r);
        let mut u: [[T; L]; 3] = std::array::from_fn(|i| [u0[i]; L]);
        let zero = [[T::ZERO; L]; 3];
        let (mut k1, mut k2, mut k3, mut k4) = (zero, zero, zero, zero);
        for _ in 0..steps {
            rhs(s, b, &rr, &u, &mut k1);
            rhs(s, b, &rr, &stage(&u, &k1, half), &mut k2);
            rhs(s, b, &rr, &stage(&u, &k2, half), &mut k3);
            rhs(s, b, &rr, &stage(&u, &k3, full), &mut k4);
            for i in 0..3 {
                for l in 0..L {
                    u[i][l] += w0 * k1[i][l] + w1 * k2[i][l] + w1 * k3[i][l] + w0 * k4[i][l];
                }
            }
        }
        for l in 0..m {
            for i in 0..3 {
                o[3 * l + i] = u[i][l];
            }
        }
    };
    par.run(|parallel| {
        if parallel {
            out.par_chunks_mut(3 * L)
                .zip(rho.par_chunks(L))
                .for_each(|(o, r)| chunk(o, r));
        } else {
            out.chunks_mut(3 * L)
                .zip(rho.chunks(L))
                .for_each(|(o, r)| chunk(o, r));
        }
        Ok(())
    })?;
    Ok(out)
}

/// The benchmark's checksum: the `f64` sum of every endpoint component.
pub fn checksum(u: &[f32]) -> f64 {
    u.iter().map(|&v| v as f64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_and_hand_written_loop_agree_bit_for_bit() {
        let mut p = LorenzProblem::new(1000);
        p.steps = 200;
        let a = lorenz_field(&p, 128, Par::Rayon(2)).unwrap();
        let b = lorenz_reference(&p, Par::Seq).unwrap();
        let c = lorenz_reference_lanes(&p, Par::Rayon(3)).unwrap();
        assert_eq!(a.len(), 3000);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b));
        assert_eq!(bits(&a), bits(&c));
        // ρ = 21 (last trajectory) has left the start; ρ = 0 (first) decays toward 0.
        assert!(a[3 * 999] > 1.0 && a[0] < 1.0);
    }

    #[test]
    fn rho_is_numpy_linspace() {
        let r = LorenzProblem::new(5).rho();
        assert_eq!(r, vec![0.0, 5.25, 10.5, 15.75, 21.0]);
    }
}
