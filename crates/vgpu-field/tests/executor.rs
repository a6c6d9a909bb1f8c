//! The executor: context indices, integrator accuracy, determinism across
//! thread counts, and every kind of bad input.

use vgpu_field::{
    field_fn, BlockCtx, BlockField, Ctx, Dim3, Field, FieldError, Launch, LaunchConfig, Method,
    Par, PerTrajectory,
};

/// A nonlinear field that reads its indices and a parameter buffer: chaotic
/// enough that any change of arithmetic order would show in the bits.
struct Coupled;

impl Field<f32, 3> for Coupled {
    type Params = [f32];
    fn eval(
        &self,
        _t: f32,
        h: &[f32; 3],
        h0: &[f32; 3],
        c: &Ctx<'_, '_, [f32]>,
        dh: &mut [f32; 3],
    ) {
        let rho = c.params()[c.global()];
        let s = (c.thread_idx().x + 2 * c.block_idx().y) as f32 * 0.01;
        dh[0] = 10.0 * (h[1] - h[0]) + s;
        dh[1] = h[0] * (rho - h[2]) - h[1];
        dh[2] = h[0] * h[1] - 8.0 / 3.0 * h[2] + 0.001 * h0[0];
    }
    fn check(&self, cfg: &LaunchConfig, p: &[f32]) -> Result<(), FieldError> {
        vgpu_field::check_len("rho", p.len(), cfg.total_threads(), "one per trajectory")
    }
}

fn coupled_run(par: Par) -> Vec<f32> {
    let cfg = LaunchConfig::new((3, 2, 2), (8, 4, 2)).unwrap();
    let n = cfg.total_threads();
    let rho: Vec<f32> = (0..n).map(|i| 28.0 * i as f32 / n as f32).collect();
    let mut s: Vec<f32> = (0..n)
        .flat_map(|i| [1.0, 0.1 * (i % 7) as f32, 0.0])
        .collect();
    Launch::new(cfg)
        .method(Method::Rk4)
        .dt(0.005)
        .steps(400)
        .par(par)
        .run(&PerTrajectory(Coupled), &rho[..], &mut s)
        .unwrap();
    s
}

#[test]
fn bit_identical_for_any_thread_count() {
    let seq = coupled_run(Par::Seq);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for threads in [1, 2, 4] {
        let par = coupled_run(Par::Rayon(threads));
        assert_eq!(
            bits(&seq),
            bits(&par),
            "Par::Rayon({threads}) differs from Par::Seq"
        );
    }
    // Not trivially constant: the trajectories moved and differ from each other.
    assert!(seq.iter().all(|v| v.is_finite()));
    assert_ne!(seq[0], seq[3 * 100]);
}

#[test]
fn context_gives_cuda_indices() {
    // dh/dt = an encoding of (threadIdx, blockIdx, global); one Euler step of dt = 1
    // from zero stores it exactly.
    let cfg = LaunchConfig::new((2, 3, 1), (4, 2, 3)).unwrap();
    let f = field_fn(
        |_t: f64, _h: &[f64; 3], _h0: &[f64; 3], c: &Ctx<()>, dh: &mut [f64; 3]| {
            let (ti, bi) = (c.thread_idx(), c.block_idx());
            dh[0] = (ti.x + 10 * ti.y + 100 * ti.z) as f64;
            dh[1] = (bi.x + 10 * bi.y + 100 * bi.z) as f64;
            dh[2] = c.global() as f64;
        },
    );
    let n = cfg.total_threads();
    let mut s = vec![0.0f64; n * 3];
    Launch::new(cfg)
        .method(Method::Euler)
        .steps(1)
        .par(Par::Rayon(2))
        .run(&f, &(), &mut s)
        .unwrap();
    for g in 0..n {
        let (b, l) = (g / 24, g % 24);
        let bi = Dim3::new((b % 2) as u32, (b / 2) as u32, 0);
        let ti = Dim3::new((l % 4) as u32, ((l / 4) % 2) as u32, (l / 8) as u32);
        assert_eq!(
            s[g * 3],
            (ti.x + 10 * ti.y + 100 * ti.z) as f64,
            "thread of {g}"
        );
        assert_eq!(
            s[g * 3 + 1],
            (bi.x + 10 * bi.y + 100 * bi.z) as f64,
            "block of {g}"
        );
        assert_eq!(s[g * 3 + 2], g as f64);
    }
}

/// `y' = -y + cos t`, `y(0) = 1`: exact solution `(sin t + cos t)/2 + e^{-t}/2`.
fn decay_error(method: Method, steps: usize) -> f64 {
    let t_end = 2.0;
    let f = field_fn(
        |t: f64, h: &[f64; 1], _h0: &[f64; 1], _c: &Ctx<()>, dh: &mut [f64; 1]| {
            dh[0] = -h[0] + t.cos();
        },
    );
    let mut s = vec![1.0f64; 4];
    Launch::new(LaunchConfig::linear(4, 2).unwrap())
        .method(method)
        .dt(t_end / steps as f64)
        .steps(steps)
        .run(&f, &(), &mut s)
        .unwrap();
    let exact = (t_end.sin() + t_end.cos()) / 2.0 + (-t_end).exp() / 2.0;
    (s[3] - exact).abs()
}

#[test]
fn rk4_converges_with_order_four_and_euler_with_order_one() {
    let (e1, e2) = (decay_error(Method::Rk4, 20), decay_error(Method::Rk4, 40));
    let order = (e1 / e2).log2();
    assert!(
        (3.7..4.3).contains(&order),
        "RK4 observed order {order} ({e1:e} → {e2:e})"
    );
    let (e1, e2) = (
        decay_error(Method::Euler, 200),
        decay_error(Method::Euler, 400),
    );
    let order = (e1 / e2).log2();
    assert!((0.9..1.1).contains(&order), "Euler observed order {order}");
}

#[test]
fn zero_dimensions_are_refused() {
    let e = LaunchConfig::new((0, 1, 1), 32).unwrap_err();
    assert!(
        matches!(e, FieldError::ZeroDimension { which: "grid", .. }),
        "{e}"
    );
    let e = LaunchConfig::new(4, (32, 0, 1)).unwrap_err();
    assert!(e.to_string().contains("block dimension (32, 0, 1)"), "{e}");
    assert!(LaunchConfig::linear(0, 64).is_err());
    assert!(LaunchConfig::linear(10, 0).is_err());
}

#[test]
fn oversized_blocks_are_refused() {
    let e = LaunchConfig::new(1, 1025).unwrap_err();
    assert!(
        matches!(e, FieldError::BlockTooLarge { threads: 1025, .. }),
        "{e}"
    );
    let e = LaunchConfig::new(1, (32, 32, 2)).unwrap_err();
    assert!(e.to_string().contains("2048 trajectories"), "{e}");
    let e = LaunchConfig::new(1, (1, 1, 65)).unwrap_err();
    assert!(
        matches!(e, FieldError::DimensionTooLarge { axis: 'z', .. }),
        "{e}"
    );
    // A hand-built config that skipped `new` is still refused by the executor.
    let bad = LaunchConfig {
        grid: Dim3::linear(1),
        block: Dim3::linear(2000),
        shared_bytes: 0,
    };
    let f = field_fn(
        |_t: f32, _h: &[f32; 1], _h0: &[f32; 1], _c: &Ctx<()>, dh: &mut [f32; 1]| dh[0] = 0.0,
    );
    let mut s = vec![0.0f32; 2000];
    assert!(matches!(
        Launch::new(bad).run(&f, &(), &mut s),
        Err(FieldError::BlockTooLarge { .. })
    ));
}

#[test]
fn bad_steps_are_refused() {
    let f = field_fn(
        |_t: f32, _h: &[f32; 1], _h0: &[f32; 1], _c: &Ctx<()>, dh: &mut [f32; 1]| dh[0] = 1.0,
    );
    let cfg = LaunchConfig::linear(4, 4).unwrap();
    for dt in [0.0, -0.5, f64::NAN, f64::INFINITY, 1e-60] {
        let mut s = vec![0.0f32; 4];
        let e = Launch::new(cfg).dt(dt).run(&f, &(), &mut s).unwrap_err();
        assert!(matches!(e, FieldError::BadStep { .. }), "dt = {dt}: {e}");
        assert_eq!(s, vec![0.0; 4], "nothing ran");
    }
    let mut s = vec![0.0f32; 4];
    let e = Launch::new(cfg)
        .t0(f64::NAN)
        .run(&f, &(), &mut s)
        .unwrap_err();
    assert!(matches!(e, FieldError::BadStartTime { .. }), "{e}");
}

#[test]
fn short_buffers_are_refused() {
    let cfg = LaunchConfig::new(3, 8).unwrap();
    let mut s = vec![0.0f32; 3 * 24 - 1];
    let rho = [0.0f32; 24];
    let e = Launch::new(cfg)
        .run(&PerTrajectory(Coupled), &rho[..], &mut s)
        .unwrap_err();
    match &e {
        FieldError::BufferTooShort {
            name, len, needed, ..
        } => {
            assert_eq!((name.as_str(), *len, *needed), ("states", 71, 72));
        }
        other => panic!("{other}"),
    }
    let mut s = vec![0.0f32; 72];
    let e = Launch::new(cfg)
        .run(&PerTrajectory(Coupled), &rho[..23], &mut s)
        .unwrap_err();
    assert!(
        e.to_string().contains("buffer `rho` has 23 elements"),
        "{e}"
    );
}

#[test]
fn non_finite_state_names_trajectory_and_time() {
    // Trajectory 13 divides by (1 - t): infinite at the step that reaches t = 1.
    let f = field_fn(
        |t: f64, h: &[f64; 2], _h0: &[f64; 2], c: &Ctx<()>, dh: &mut [f64; 2]| {
            dh[0] = -h[0];
            dh[1] = if c.global() == 13 && t >= 0.75 {
                1.0 / (1.0 - t - 0.25)
            } else {
                0.0
            };
        },
    );
    let cfg = LaunchConfig::linear(32, 8).unwrap();
    for par in [Par::Seq, Par::Rayon(3)] {
        let mut s = vec![1.0f64; 64];
        let e = Launch::new(cfg)
            .method(Method::Euler)
            .dt(0.25)
            .steps(8)
            .par(par)
            .run(&f, &(), &mut s)
            .unwrap_err();
        match e {
            FieldError::NonFinite {
                trajectory,
                block,
                thread,
                component,
                t,
                ..
            } => {
                assert_eq!((trajectory, component), (13, 1));
                assert_eq!((block, thread), (Dim3::new(1, 0, 0), Dim3::new(5, 0, 0)));
                assert_eq!(
                    t, 1.0,
                    "the step ending at t = 1 evaluated the field at 0.75"
                );
            }
            other => panic!("{other}"),
        }
        // Other blocks finished: e^{-2} approximated by (3/4)^8.
        assert_eq!(s[0], 0.75f64.powi(8));
    }
}

/// A hand-written block field (the way the kernel IR implements the trait):
/// dh/dt = lane index, with a scratch buffer the executor allocates once.
struct LaneRamp;

impl BlockField<f32> for LaneRamp {
    type Params = ();
    type Scratch = Vec<f32>;
    fn dim(&self) -> usize {
        2
    }
    fn scratch(&self, lanes: usize) -> Vec<f32> {
        (0..lanes).map(|l| l as f32).collect()
    }
    fn eval_block(
        &self,
        _t: f32,
        _h: &[f32],
        _h0: &[f32],
        ctx: &BlockCtx<'_, ()>,
        s: &mut Vec<f32>,
        dh: &mut [f32],
    ) {
        let lanes = ctx.lanes();
        dh[..lanes].copy_from_slice(s);
        dh[lanes..].fill(ctx.block_linear() as f32);
    }
}

#[test]
fn block_fields_run_through_the_same_executor() {
    let cfg = LaunchConfig::linear(12, 4).unwrap();
    let mut s = vec![0.0f32; 24];
    let r = Launch::new(cfg)
        .method(Method::Rk4)
        .dt(0.5)
        .steps(4)
        .run(&LaneRamp, &(), &mut s)
        .unwrap();
    assert_eq!(
        (r.trajectories, r.blocks, r.evaluations, r.t_end),
        (12, 3, 16, 2.0)
    );
    for g in 0..12 {
        assert_eq!(s[2 * g], 2.0 * (g % 4) as f32);
        assert_eq!(s[2 * g + 1], 2.0 * (g / 4) as f32);
    }
    assert!(BlockCtx::new(&cfg, 3, &()).is_err());
}
