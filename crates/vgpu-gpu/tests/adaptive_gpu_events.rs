//! Events and Rosenbrock23 on the GPU (lavapipe in CI) against the CPU
//! driver: a bouncing ball's bounce times (f64 to 1e-10 of the CPU's, f32 to
//! 1e-5), a terminating event's status, time and saves, Van der Pol at
//! μ = 1000 and Robertson with the stiff method (endpoints within the
//! tolerance; step counts the CPU's to the controller's f32 rounding, see
//! [`close_steps`]), and a run longer than llvmpipe's loop limit refused, not
//! cut short. Skipped without an adapter unless `VGPU_REQUIRE_GPU=1` (then
//! they fail); the f64 cases without `SHADER_F64` check the refusal instead.

mod common;

use vgpu_field::adaptive::{AdaptiveEnsemble, AdaptiveMethod, Status};
use vgpu_gpu::{run_adaptive_gpu, GpuAdaptiveOptions, KernelCache};
use vgpu_ir::adaptive::{run_adaptive_cpu, AdaptiveOutput, AdaptiveRun};
use vgpu_ir::{compile, Args, Buffer, IrError, Kernel};

const G: f64 = 9.81;

/// A ball dropped from `h0[i]` with restitution `e[i]`; `tb` is the time of
/// the last bounce, `nb` the number of bounces.
fn ball(ty: &str) -> String {
    format!(
        "field ball(h0: {ty}[], e: {ty}[]) {{
    state y: {ty} = h0[i], v: {ty} = 0.0, tb: {ty} = 0.0, nb: {ty} = 0.0;
    d(y)/dt = v;
    d(v)/dt = -9.81;
    d(tb)/dt = 0.0;
    d(nb)/dt = 0.0;
    event floor: y falling {{
        v := -e[i] * v;
        tb := t;
        nb := nb + 1.0;
    }}
}}"
    )
}

/// The first `m` bounce times of a ball dropped from `h` with restitution `e`.
fn bounce_times(h: f64, e: f64, m: usize) -> Vec<f64> {
    let t1 = (2.0 * h / G).sqrt();
    let v1 = G * t1;
    let mut t = vec![t1];
    for k in 1..m {
        t.push(t[k - 1] + 2.0 * e.powi(k as i32) * v1 / G);
    }
    t
}

/// Whether the GPU's accepted steps `g` are the CPU's `c` to the controller's
/// rounding: the controller's `pow` runs in f32 on the GPU (Vulkan has no f64
/// `pow`; the hand CUDA kernel does the same), so f64 step sizes agree to
/// ~1e-7 relative, and a step is accepted on one side and rejected on the
/// other where an error norm sits that close to 1; after an event the step
/// control restarts, so such differences add up over the bounces (lavapipe:
/// 0 to 2 steps of 30 to 40 per ball, 2 of 6,480 for Van der Pol).
fn close_steps(g: u64, c: u64) -> bool {
    g.abs_diff(c) <= 2.max(c / 100)
}

fn values(b: &Buffer) -> Vec<f64> {
    (0..b.len()).map(|i| b.get(i).as_f64()).collect()
}

fn ball_args(k: &Kernel, f64_states: bool, h0: &[f64], e: &[f64]) -> Args {
    let mut args = Args::new(k);
    if f64_states {
        args.buffer("h0", h0.to_vec()).unwrap();
        args.buffer("e", e.to_vec()).unwrap();
    } else {
        args.buffer("h0", h0.iter().map(|&x| x as f32).collect::<Vec<f32>>())
            .unwrap();
        args.buffer("e", e.iter().map(|&x| x as f32).collect::<Vec<f32>>())
            .unwrap();
    }
    args
}

/// Runs on the GPU, or `None` for an f64 field on an adapter without
/// `SHADER_F64` (after checking that the refusal says so and lets `auto` fall
/// back).
fn gpu(
    cache: &mut KernelCache,
    k: &Kernel,
    args: &Args,
    run: &AdaptiveRun,
) -> Option<AdaptiveOutput> {
    let r = run_adaptive_gpu(cache, k, args, run, &GpuAdaptiveOptions::default());
    if k.float_type() == vgpu_ir::ScalarType::F64 && !cache.context().has_f64() {
        let e = r.unwrap_err();
        assert!(
            e.cpu_can_run() && e.to_string().contains("SHADER_F64"),
            "{e}"
        );
        println!("{}: no SHADER_F64, refusal checked", k.name);
        return None;
    }
    Some(r.unwrap_or_else(|e| panic!("{}: {e}", k.name)).output)
}

/// Bounce times of three balls, three restitutions, four methods (FSAL,
/// not FSAL, extra dense stages): the GPU's bounces are the CPU's, to 1e-12
/// in f64 (same step counts) and to f32's resolution in f32, and the closed
/// form's to the tolerance.
#[test]
fn a_bouncing_ball_bounces_where_the_cpu_says() {
    let Some(mut cache) = common::kernel_cache("adaptive events") else {
        return;
    };
    const BOUNCES: usize = 6;
    let heights = [1.0, 2.5, 4.0, 1.0, 2.5, 4.0];
    let rest = [0.5, 0.8, 0.9, 0.9, 0.5, 0.8];
    let exact: Vec<Vec<f64>> = heights
        .iter()
        .zip(rest)
        .map(|(&h, e)| bounce_times(h, e, BOUNCES + 1))
        .collect();
    let spans: Vec<(f64, f64)> = exact
        .iter()
        .map(|b| (0.0, 0.5 * (b[BOUNCES - 1] + b[BOUNCES])))
        .collect();
    for f64_states in [true, false] {
        let ty = if f64_states { "f64" } else { "f32" };
        let k = compile("ball.field", &ball(ty)).unwrap();
        let args = ball_args(&k, f64_states, &heights, &rest);
        let (rtol, atol) = if f64_states {
            (1e-8, 1e-10)
        } else {
            (1e-5, 1e-6)
        };
        for m in [
            AdaptiveMethod::Tsit5,
            AdaptiveMethod::Dp5,
            AdaptiveMethod::Vern7,
            AdaptiveMethod::Bs3,
            AdaptiveMethod::Rosenbrock23,
        ] {
            let run = AdaptiveRun {
                n: heights.len(),
                spans: spans.clone(),
                u0: None,
                slice: None,
                options: AdaptiveEnsemble::new(m).rtol(rtol).atol(atol),
            };
            let cpu = run_adaptive_cpu(&k, &args, &run).unwrap();
            let Some(g) = gpu(&mut cache, &k, &args, &run) else {
                break;
            };
            let (ce, ge) = (values(&cpu.end), values(&g.end));
            for i in 0..heights.len() {
                let at = format!("{m} {ty} trajectory {i}");
                assert_eq!(g.stats[i].status, Status::Success, "{at}");
                assert_eq!(ge[i * 4 + 3], BOUNCES as f64, "{at}: bounces");
                let (tc, tg) = (ce[i * 4 + 2], ge[i * 4 + 2]);
                let want = exact[i][BOUNCES - 1];
                if f64_states {
                    assert!(
                        (tg - tc).abs() <= 1e-10 * tc,
                        "{at}: last bounce gpu {tg} cpu {tc}"
                    );
                    assert!((tg - want).abs() <= 1e-7 * want, "{at}: {tg} vs {want}");
                    let (ga, ca) = (g.stats[i].accepted, cpu.stats[i].accepted);
                    assert!(close_steps(ga, ca), "{at}: {ga} vs {ca} steps");
                } else {
                    assert!(
                        (tg - tc).abs() <= 1e-5 * tc,
                        "{at}: last bounce gpu {tg} cpu {tc}"
                    );
                    assert!((tg - want).abs() <= 1e-4 * want, "{at}: {tg} vs {want}");
                }
            }
        }
    }
}

/// A terminating event stops its trajectory at the crossing with status
/// `Terminated` (its saves after it NaN) while its neighbour runs to `t1`;
/// as the CPU, in f64 and f32.
#[test]
fn a_terminating_event_stops_only_its_trajectory() {
    let Some(mut cache) = common::kernel_cache("adaptive terminate") else {
        return;
    };
    for f64_states in [true, false] {
        let ty = if f64_states { "f64" } else { "f32" };
        let src = ball(ty).replace(
            "event floor",
            "event high: y - 0.5 rising terminate;\n    event floor",
        );
        let k = compile("ball.field", &src).unwrap();
        // From 1.0 the ball bounces to 0.81 and stops rising through 0.5;
        // from 8.0 it is still falling at t = 1.2.
        let args = ball_args(&k, f64_states, &[1.0, 8.0], &[0.9, 0.9]);
        let (rtol, atol) = if f64_states {
            (1e-8, 1e-10)
        } else {
            (1e-5, 1e-6)
        };
        for m in [AdaptiveMethod::Dp5, AdaptiveMethod::Rosenbrock23] {
            let run = AdaptiveRun {
                n: 2,
                spans: vec![(0.0, 1.2)],
                u0: None,
                slice: None,
                options: AdaptiveEnsemble::new(m)
                    .rtol(rtol)
                    .atol(atol)
                    .saveat(vec![0.1, 1.1]),
            };
            let cpu = run_adaptive_cpu(&k, &args, &run).unwrap();
            let Some(g) = gpu(&mut cache, &k, &args, &run) else {
                break;
            };
            let at = format!("{m} {ty}");
            assert_eq!(g.stats[0].status, Status::Terminated, "{at}");
            assert_eq!(g.stats[1].status, Status::Success, "{at}");
            assert_eq!(cpu.stats[0].status, Status::Terminated, "{at}");
            let tol = if f64_states { 1e-12 } else { 1e-5 };
            let (tc, tg) = (cpu.stats[0].t, g.stats[0].t);
            assert!(
                (tg - tc).abs() <= tol * tc,
                "{at}: stopped at {tg}, cpu {tc}"
            );
            assert!(tg > 0.45 && tg < 1.1, "{at}: {tg}");
            let t1 = if f64_states { 1.2 } else { f64::from(1.2f32) };
            assert_eq!(g.stats[1].t, t1, "{at}");
            let (ge, gs) = (values(&g.end), values(&g.saved));
            // Stopped on y = 0.5, rising, after one bounce.
            assert!((ge[0] - 0.5).abs() <= 10.0 * tol, "{at}: y = {}", ge[0]);
            assert!(ge[1] > 0.0 && ge[3] == 1.0, "{at}: {ge:?}");
            // (N, K, D): trajectory 0's save at 1.1 is after its end.
            assert!(gs[4..8].iter().all(|v| v.is_nan()), "{at}: {gs:?}");
            assert!(gs[8..].iter().all(|v| v.is_finite()), "{at}: {gs:?}");
            let cs = values(&cpu.saved);
            for (a, b) in cs.iter().zip(&gs) {
                assert!(
                    (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e3 * tol * (1.0 + a.abs()),
                    "{at}: saves cpu {cs:?} gpu {gs:?}"
                );
            }
        }
    }
}

/// Van der Pol at μ = 1000 over [0, 3000] and Robertson over [0, 40] with
/// Rosenbrock23 in f64: the CPU's accepted and rejected steps, endpoints
/// within the tolerance; Tsit5 cannot (the problems are stiff). Four Van der
/// Pol trajectories of different μ from one launch.
#[test]
fn rosenbrock23_on_the_gpu_takes_the_cpus_steps_on_stiff_problems() {
    let Some(mut cache) = common::kernel_cache("adaptive rosenbrock") else {
        return;
    };
    let vdp = compile(
        "vdp.field",
        "field vdp(mu: f64[]) {
            state x: f64 = 2.0, y: f64 = 0.0;
            d(x)/dt = y;
            d(y)/dt = mu[i] * (1.0 - x * x) * y - x;
        }",
    )
    .unwrap();
    let mut args = Args::new(&vdp);
    args.buffer("mu", vec![1000.0f64, 500.0, 300.0, 100.0])
        .unwrap();
    let run = AdaptiveRun {
        n: 4,
        spans: vec![(0.0, 3000.0)],
        u0: None,
        slice: None,
        options: AdaptiveEnsemble::new(AdaptiveMethod::Rosenbrock23)
            .rtol(1e-6)
            .atol(1e-6)
            .maxiters(200_000),
    };
    let cpu = run_adaptive_cpu(&vdp, &args, &run).unwrap();
    let Some(g) = gpu(&mut cache, &vdp, &args, &run) else {
        return;
    };
    let (ce, ge) = (values(&cpu.end), values(&g.end));
    for i in 0..4 {
        let (c, s) = (&cpu.stats[i], &g.stats[i]);
        assert_eq!(s.status, Status::Success, "vdp {i}: {s:?}");
        assert!(close_steps(s.accepted, c.accepted), "vdp {i}: {s:?} {c:?}");
        for d in 0..2 {
            let (a, b) = (ce[i * 2 + d], ge[i * 2 + d]);
            assert!(
                (a - b).abs() <= 1e-6 * (1.0 + a.abs()),
                "vdp {i}.{d}: {a} {b}"
            );
        }
    }
    assert!(g.stats[0].accepted < 5000, "{:?}", g.stats[0]);

    let rober = compile(
        "rober.field",
        "field rober() {
            state y1: f64 = 1.0, y2: f64 = 0.0, y3: f64 = 0.0;
            d(y1)/dt = -0.04 * y1 + 1.0e4 * y2 * y3;
            d(y2)/dt = 0.04 * y1 - 1.0e4 * y2 * y3 - 3.0e7 * y2 * y2;
            d(y3)/dt = 3.0e7 * y2 * y2;
        }",
    )
    .unwrap();
    let args = Args::new(&rober);
    let run = AdaptiveRun {
        n: 1,
        spans: vec![(0.0, 40.0)],
        u0: None,
        slice: None,
        options: AdaptiveEnsemble::new(AdaptiveMethod::Rosenbrock23)
            .rtol(1e-8)
            .atol_per_component(vec![1e-10, 1e-14, 1e-10]),
    };
    let cpu = run_adaptive_cpu(&rober, &args, &run).unwrap();
    let g = gpu(&mut cache, &rober, &args, &run).expect("f64 checked above");
    let (c, s) = (&cpu.stats[0], &g.stats[0]);
    assert_eq!(s.status, Status::Success, "{s:?}");
    assert!(close_steps(s.accepted, c.accepted), "{s:?} {c:?}");
    // Hairer's reference values at t = 40.
    let want = [0.715_827_068_7, 9.185_534_765e-6, 0.284_163_745_7];
    let ge = values(&g.end);
    for d in 0..3 {
        assert!(
            (ge[d] - want[d]).abs() <= 1e-5 * want[d],
            "y{} = {} vs {}",
            d + 1,
            ge[d],
            want[d]
        );
    }
}

/// Rosenbrock23 in f32 (no SHADER_F64 needed) on Van der Pol at μ = 100:
/// within the tolerance of the CPU, nearly the same steps.
#[test]
fn rosenbrock23_in_f32_agrees_with_the_cpu() {
    let Some(mut cache) = common::kernel_cache("adaptive rosenbrock f32") else {
        return;
    };
    let k = compile(
        "vdp32.field",
        "field vdp32(mu: f32[]) {
            state x = 2.0, y = 0.0;
            d(x)/dt = y;
            d(y)/dt = mu[i] * (1.0 - x * x) * y - x;
        }",
    )
    .unwrap();
    let mut args = Args::new(&k);
    args.buffer("mu", vec![100.0f32, 30.0, 10.0, 1.0]).unwrap();
    let run = AdaptiveRun {
        n: 4,
        spans: vec![(0.0, 200.0)],
        u0: None,
        slice: None,
        options: AdaptiveEnsemble::new(AdaptiveMethod::Rosenbrock23)
            .rtol(1e-4)
            .atol(1e-4)
            .saveat(vec![50.0, 100.0]),
    };
    let cpu = run_adaptive_cpu(&k, &args, &run).unwrap();
    let g = gpu(&mut cache, &k, &args, &run).expect("f32");
    for i in 0..4 {
        let (c, s) = (&cpu.stats[i], &g.stats[i]);
        assert_eq!(s.status, Status::Success, "{i}: {s:?}");
        let ratio = s.accepted as f64 / c.accepted as f64;
        assert!((0.9..1.1).contains(&ratio), "{i}: {c:?} vs {s:?}");
    }
    let (cs, gs) = (values(&cpu.saved), values(&g.saved));
    for (a, b) in cs.iter().zip(&gs) {
        assert!(
            (a - b).abs() <= 2e-2 * (1.0 + a.abs()),
            "cpu {cs:?} gpu {gs:?}"
        );
    }
}

/// 40,000 fixed steps in one invocation: a device that stops the shader's
/// loops early (llvmpipe leaves them after 65,535 iterations in all) must not
/// return the cut-short trajectory as a success: the launch is refused naming
/// the trajectory (`auto` runs it on the CPU); a device without the limit
/// takes every step.
#[test]
fn a_run_past_the_devices_loop_limit_is_refused_not_cut_short() {
    let Some(mut cache) = common::kernel_cache("adaptive loop limit") else {
        return;
    };
    let k = compile(
        "decay.field",
        "field decay() { state x = 1.0; d(x)/dt = -x; }",
    )
    .unwrap();
    let args = Args::new(&k);
    let run = AdaptiveRun {
        n: 3,
        spans: vec![(0.0, 1.0), (0.0, 0.01), (0.0, 1.0)],
        u0: None,
        slice: None,
        options: AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
            .fixed_step(1.0 / 40_000.0)
            .maxiters(100_000),
    };
    match run_adaptive_gpu(&mut cache, &k, &args, &run, &GpuAdaptiveOptions::default()) {
        Ok(g) => {
            let s = &g.output.stats;
            assert_eq!(
                (s[0].status, s[0].accepted, s[0].t),
                (Status::Success, 40_000, 1.0)
            );
            assert_eq!(s[1].accepted, 400, "{s:?}");
        }
        Err(e) => {
            assert!(e.cpu_can_run(), "{e}");
            let msg = e.to_string();
            assert!(
                matches!(
                    e,
                    vgpu_gpu::AdaptiveGpuError::Ir(IrError::Unsupported { .. })
                ) && msg.contains("stopped the loops of trajectory 0")
                    && msg.contains("65,535"),
                "{msg}"
            );
        }
    }
}
