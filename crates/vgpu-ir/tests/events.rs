//! Events of `.field` kernels on the CPU adaptive path: a bouncing ball's
//! bounce times against the closed form, termination, save points after an
//! event, per-trajectory effects, and the checker's errors.

use vgpu_field::adaptive::{AdaptiveEnsemble, AdaptiveMethod, Status};
use vgpu_ir::adaptive::{run_adaptive_cpu, AdaptiveOutput, AdaptiveRun};
use vgpu_ir::{compile, Args, Buffer, Value};

const G: f64 = 9.81;

/// A ball dropped from `h0[i]`; `tb` holds the time of the last bounce and
/// `nb` the number of bounces (both change only at events).
const BALL: &str = "field ball(h0: f64[], e: f64) {
    state y: f64 = h0[i], v: f64 = 0.0, tb: f64 = 0.0, nb: f64 = 0.0;
    d(y)/dt = v;
    d(v)/dt = -9.81;
    d(tb)/dt = 0.0;
    d(nb)/dt = 0.0;
    event floor: y falling {
        v := -e * v;
        tb := t;
        nb := nb + 1.0;
    }
}";

fn run(src: &str, h0: &[f64], e: f64, t1: f64, opts: AdaptiveEnsemble) -> AdaptiveOutput {
    let k = compile("ball.field", src).unwrap();
    let mut args = Args::new(&k);
    args.buffer("h0", Buffer::F64(h0.to_vec().into()))
        .unwrap()
        .scalar("e", Value::F64(e))
        .unwrap();
    let run = AdaptiveRun {
        n: h0.len(),
        spans: vec![(0.0, t1)],
        u0: None,
        options: opts,
        slice: None,
    };
    run_adaptive_cpu(&k, &args, &run).unwrap()
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

fn f64s(b: &Buffer) -> Vec<f64> {
    (0..b.len()).map(|i| b.get(i).as_f64()).collect()
}

#[test]
fn a_bouncing_ball_bounces_at_the_closed_form_times() {
    // Each trajectory runs to halfway between its 6th and 7th bounce.
    const BOUNCES: usize = 6;
    let heights = [1.0, 2.5, 4.0];
    for e in [0.5, 0.8, 0.9] {
        let exact: Vec<Vec<f64>> = heights.iter().map(|&h| bounce_times(h, e, 8)).collect();
        let spans: Vec<(f64, f64)> = exact
            .iter()
            .map(|b| (0.0, 0.5 * (b[BOUNCES - 1] + b[BOUNCES])))
            .collect();
        let t_min = spans.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
        let saves: Vec<f64> = (0..=2000).map(|j| t_min * j as f64 / 2000.0).collect();
        for method in [
            AdaptiveMethod::Tsit5,
            AdaptiveMethod::Vern7,
            AdaptiveMethod::Bs3,
        ] {
            let opts = AdaptiveEnsemble::new(method)
                .rtol(1e-8)
                .atol(1e-10)
                .saveat(saves.clone());
            let k = compile("ball.field", BALL).unwrap();
            let mut args = Args::new(&k);
            args.buffer("h0", Buffer::F64(heights.to_vec().into()))
                .unwrap()
                .scalar("e", Value::F64(e))
                .unwrap();
            let run = AdaptiveRun {
                n: heights.len(),
                spans: spans.clone(),
                u0: None,
                options: opts,
                slice: None,
            };
            let out = run_adaptive_cpu(&k, &args, &run).unwrap();
            let (saved, end) = (f64s(&out.saved), f64s(&out.end));
            for (i, &h) in heights.iter().enumerate() {
                let at = format!("{method} e={e} h={h}");
                assert_eq!(out.stats[i].status, Status::Success, "{at}");
                // Every distinct `tb` among the save points is one bounce.
                let mut seen: Vec<f64> = Vec::new();
                for j in 0..saves.len() {
                    let tb = saved[(i * saves.len() + j) * 4 + 2];
                    if tb > 0.0 && seen.last() != Some(&tb) {
                        seen.push(tb);
                    }
                }
                let before = exact[i].iter().filter(|&&b| b < t_min).count();
                assert!(!seen.is_empty() && seen.len() <= before, "{at}: {seen:?}");
                for (j, tb) in seen.iter().enumerate() {
                    let want = exact[i][j];
                    assert!(
                        (tb - want).abs() <= 1e-8 * want,
                        "{at}: bounce {j} at {tb}, closed form {want}"
                    );
                }
                assert_eq!(end[i * 4 + 3], BOUNCES as f64, "{at}: bounces");
                let last = exact[i][BOUNCES - 1];
                assert!(
                    (end[i * 4 + 2] - last).abs() <= 1e-8 * last,
                    "{at}: last bounce at {}, closed form {last}",
                    end[i * 4 + 2]
                );
            }
        }
    }
}

#[test]
fn saves_after_an_event_take_the_jumped_state() {
    let (h, e) = (2.0, 0.7);
    let tb = bounce_times(h, e, 1)[0];
    let saves = vec![0.5 * tb, tb + 0.05, tb + 0.2];
    let opts = AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
        .rtol(1e-8)
        .atol(1e-10)
        .saveat(saves.clone());
    let out = run(BALL, &[h], e, 1.5 * tb, opts);
    let s = f64s(&out.saved);
    let v_after = e * G * tb;
    // Before the bounce: free fall.
    assert!((s[1] - (-G * saves[0])).abs() < 1e-9, "{}", s[1]);
    for j in 1..3 {
        let dt = saves[j] - tb;
        let (y, v) = (v_after * dt - 0.5 * G * dt * dt, v_after - G * dt);
        assert!(
            (s[j * 4] - y).abs() < 1e-8,
            "save {j}: y = {} vs {y}",
            s[j * 4]
        );
        assert!(
            (s[j * 4 + 1] - v).abs() < 1e-8,
            "save {j}: v = {} vs {v}",
            s[j * 4 + 1]
        );
        assert_eq!(s[j * 4 + 3], 1.0);
    }
}

#[test]
fn a_terminating_event_ends_only_its_trajectory_at_the_crossing() {
    // Stops where the ball, after its first bounce, rises through y = 0.5.
    let src = BALL.replace(
        "event floor",
        "event high: y - 0.5 rising terminate;\n    event floor",
    );
    let e = 0.9;
    // A ball from 1.0 bounces to 0.81 (> 0.5) and stops; one from 8.0 is
    // still falling at t = 1.2 and runs to the end.
    let opts = AdaptiveEnsemble::new(AdaptiveMethod::Dp5)
        .rtol(1e-8)
        .atol(1e-10)
        .saveat(vec![0.1, 1.1]);
    let out = run(&src, &[1.0, 8.0], e, 1.2, opts);
    let t1 = bounce_times(1.0, e, 1)[0];
    let v = e * G * t1;
    let t_stop = t1 + (v - (v * v - 2.0 * G * 0.5).sqrt()) / G;
    assert_eq!(out.stats[0].status, Status::Terminated);
    assert!(
        (out.stats[0].t - t_stop).abs() < 1e-8 * t_stop,
        "{} vs {t_stop}",
        out.stats[0].t
    );
    let end = f64s(&out.end);
    assert!((end[0] - 0.5).abs() < 1e-8, "y at the stop: {}", end[0]);
    assert!(t_stop < 1.1);
    let s = f64s(&out.saved);
    assert!(
        s[4..8].iter().all(|v| v.is_nan()),
        "not reached: {:?}",
        &s[4..8]
    );
    assert_eq!(out.stats[1].status, Status::Success);
    assert_eq!(out.stats[1].t, 1.2);
    assert!((end[4] - (8.0 - 0.5 * G * 1.44)).abs() < 1e-9);
    assert_eq!(end[7], 0.0, "no bounce");
}

#[test]
fn event_errors_name_the_place() {
    let field = |event: &str| {
        format!(
            "field f(k: f32) {{\n    state y = 1.0, v = 0.0;\n    d(y)/dt = v;\n    d(v)/dt = -k;\n    {event}\n}}"
        )
    };
    let cases = [
        (
            "event a: y > 0.0 falling { v := -v; }",
            "5:16",
            "found bool",
        ),
        (
            "event a: i32(y) falling { v := -v; }",
            "5:14",
            "must be f32",
        ),
        (
            "event a: y falling { k := 1.0; }",
            "5:26",
            "a parameter: only states can jump",
        ),
        (
            "event a: y falling { w := 1.0; }",
            "5:26",
            "unknown state `w`",
        ),
        ("event a: y falling { v := true; }", "5:31", "must be f32"),
        (
            "event a: q falling { v := -v; }",
            "5:14",
            "unknown name `q`",
        ),
        ("event a: y falling { v := -v; v := 0.0; }", "5:35", "twice"),
        (
            "event a: y falling { v := -v; terminate; }",
            "5:35",
            "jumps and terminates",
        ),
        ("event a: y falling { }", "5:5", "does nothing"),
        ("event a: y down { v := -v; }", "5:16", "a direction"),
    ];
    for (event, at, says) in cases {
        let e = compile("f.field", &field(event)).unwrap_err().to_string();
        assert!(e.contains(&format!("f.field:{at}")), "{event}: {e}");
        assert!(e.contains(says), "{event}: {e}");
    }
    let twice = field("event a: y terminate;\n    event a: v terminate;");
    let e = compile("f.field", &twice).unwrap_err().to_string();
    assert!(
        e.contains("f.field:6:5") && e.contains("already declared at 5:5"),
        "{e}"
    );
}

#[test]
fn fixed_step_runs_refuse_events() {
    let k = compile("ball.field", BALL).unwrap();
    let mut args = Args::new(&k);
    args.buffer("h0", Buffer::F64(vec![1.0; 4].into()))
        .unwrap()
        .scalar("e", Value::F64(0.5))
        .unwrap();
    let integ = vgpu_ir::Integration::new(4, 0.0, 1.0, 0.01);
    let e = vgpu_ir::run_cpu(&k, &args, &integ).unwrap_err().to_string();
    assert!(
        e.contains("event `floor`") && e.contains("adaptive methods"),
        "{e}"
    );
}

#[test]
fn fixed_step_wgsl_refuses_events_instead_of_ignoring_them() {
    let src = BALL.replace("f64", "f32");
    let k = compile("ball.field", &src).unwrap();
    let e = vgpu_ir::wgsl::check_wgsl(&k).unwrap_err().to_string();
    assert!(e.contains("event `floor`"), "{e}");
}
