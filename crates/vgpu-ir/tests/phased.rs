//! Phased `.field` kernels under any integrator: they run through vgpu-field's
//! `PhasedLaunch`, so RK4 integrates registers, shared arrays (both
//! precisions) and flux with the same arithmetic as every other launch.

use vgpu_demos::RelaxField;
use vgpu_field::{Launch, LaunchConfig, PerTrajectory};
use vgpu_ir::{compile, compile_file, run_cpu, Args, Buffer, Integration, Method, Output, Par};

fn example(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn f32s(b: &Buffer) -> Vec<f32> {
    match b {
        Buffer::F32(v) => v.to_vec(),
        other => panic!("expected f32, got {other:?}"),
    }
}

fn f64s(b: &Buffer) -> Vec<f64> {
    match b {
        Buffer::F64(v) => v.to_vec(),
        other => panic!("expected f64, got {other:?}"),
    }
}

/// Runs a source with no parameters over `n` trajectories in blocks of `block`.
fn run_src(src: &str, n: usize, block: u32, dt: f64, m: Method) -> Output {
    let k = compile("t.field", src).unwrap();
    run_cpu(
        &k,
        &Args::new(&k),
        &Integration::new(n, 0.0, 0.0, dt).block(block).method(m),
    )
    .unwrap()
}

const RELAX_PHASED: &str = "field relax(x0: f32[]) {
    state h = x0[i];
    phase relax over 20.0 { d(h)/dt = sin(init(h)) - h; }
}";

#[test]
fn rk4_phase_equals_the_rust_field_rk4_launch_bit_for_bit() {
    let n = 256;
    let x0: Vec<f32> = (0..n).map(|i| -3.0 + 6.0 * i as f32 / 255.0).collect();
    let k = compile("relax.field", RELAX_PHASED).unwrap();
    let mut args = Args::new(&k);
    args.buffer("x0", x0.clone()).unwrap();
    let integ = Integration::new(n, 0.0, 0.0, 0.01)
        .block(64)
        .method(Method::Rk4);
    let phased = f32s(&run_cpu(&k, &args, &integ).unwrap().states);
    // The Rust field under the field engine's own RK4 launch: same steps, same bits.
    let mut h = x0.clone();
    Launch::new(LaunchConfig::linear(n, 64).unwrap())
        .method(Method::Rk4)
        .dt(0.01)
        .steps(2000)
        .run(&PerTrajectory(RelaxField), &(), &mut h)
        .unwrap();
    assert_eq!(phased, h);
    // And the unphased example through the unphased launch.
    let k = compile_file(&example("relax_sin.field")).unwrap();
    let mut args = Args::new(&k);
    args.buffer("x0", x0.clone()).unwrap();
    let plain = run_cpu(&k, &args, &Integration::new(n, 0.0, 20.0, 0.01).block(64)).unwrap();
    assert_eq!(phased, f32s(&plain.states));
    // Euler is a different (first-order) integrator: it does not give these bits.
    let euler = run_cpu(
        &k,
        &args,
        &Integration::new(n, 0.0, 20.0, 0.01).method(Method::Euler),
    );
    assert_ne!(phased, f32s(&euler.unwrap().states));
}

#[test]
fn rk4_flux_is_the_quadrature_of_its_rate() {
    // Each of 8 lanes emits at rate t³ over [0, 2]: ∫ = 4. RK4's weights are
    // Simpson's rule, exact for cubics: the total is 32 up to rounding (a few
    // ulps of 32 from the 1/6, 1/3 weights). Euler's is the left Riemann sum
    // 0.5·(0 + 0.5³ + 1 + 1.5³) = 2.25 per lane, exact in binary.
    let src = "field q() { state x: f64 = 0.0; flux f: f64[1];
        phase p over 2.0 { emit f[0] += t * t * t; } }";
    let rk4 = run_src(src, 8, 8, 0.5, Method::Rk4);
    let total = f64s(rk4.flux("f").unwrap())[0];
    assert!((total - 32.0).abs() <= 1e-13, "rk4: {total}");
    let euler = run_src(src, 8, 8, 0.5, Method::Euler);
    assert_eq!(f64s(euler.flux("f").unwrap()), vec![8.0 * 2.25]);
    // A rate that depends on the state: the flux of d(y)/dt = -y, y(0) = 1 is
    // the decrease of y, ∫ y dt = 1 - e^{-2}; RK4 with dt = 0.1 within 1e-6.
    let src = "field q() { state y: f64 = 1.0; flux f: f64[1];
        phase p over 2.0 { d(y)/dt = -y; emit f[0] += y if tid == 0u; } }";
    let out = run_src(src, 4, 4, 0.1, Method::Rk4);
    let got = f64s(out.flux("f").unwrap())[0];
    let want = 1.0 - (-2.0f64).exp();
    assert!((got - want).abs() <= 1e-6, "{got} vs {want}");
    // The emitted flux equals what left the state (same quadrature).
    let y = out.states_f64()[0];
    assert!((got - (1.0 - y)).abs() <= 1e-14, "{got} vs 1 - {y}");
}

#[test]
fn rk4_integrates_shared_arrays_of_both_precisions() {
    // Lane 0 relaxes s32[0] and s64[0] to 1 (rate 1 - s), from 0, over [0, 2]:
    // s(2) = 1 - e^{-2}. RK4 with dt = 0.1: global error ≤ ~1e-7 (O(dt⁴)), plus
    // f32 rounding for the f32 array (20 steps, ≤ 1e-6). Euler misses by ~1e-2:
    // the shared arrays really do take RK4's stages. A second phase copies them
    // into the states.
    let src = "field s() {
        shared a: f32[1] = 0.0;
        shared b: f64[1] = 0.0;
        state x = 0.0, y = 0.0;
        phase relax over 2.0 {
            d(a[0])/dt += 1.0 - a[0] if tid == 0u;
            d(b[0])/dt += 1.0 - b[0] if tid == 0u;
        }
        phase copy over 1.0 {
            d(x)/dt = a[0];
            d(y)/dt = f32(b[0]);
        }
    }";
    let want = 1.0 - (-2.0f64).exp();
    for (m, tol) in [(Method::Rk4, 2e-6), (Method::Euler, 2e-2)] {
        let out = run_src(src, 4, 4, 0.1, m);
        let st = out.states_f64();
        for l in 0..4 {
            let (x, y) = (st[2 * l], st[2 * l + 1]);
            assert!((x - want).abs() <= tol, "{m:?}: a = {x}");
            assert!((y - want).abs() <= tol, "{m:?}: b = {y}");
        }
        if m == Method::Euler {
            assert!((st[1] - want).abs() > 1e-3, "euler is first order");
        }
    }
}

#[test]
fn barrier_reverse_under_rk4_is_within_a_few_roundings() {
    // Under RK4 a constant rate c over one step dt = 1 lands at
    // fl(w0·c) + fl(w1·c) + fl(w2·c) + fl(w3·c) with w = fl(1/6), fl(1/3), …:
    // within 4·eps·|c| of c per phase, two phases: 8·eps·|x| (eps = 2^-23).
    let k = compile_file(&example("barrier_reverse.field")).unwrap();
    let x: Vec<f32> = (0..512).map(|i| (i as f32 * 0.37).sin() * 100.0).collect();
    let mut args = Args::new(&k);
    args.buffer("x", x.clone()).unwrap();
    let base = Integration::new(512, 0.0, 0.0, 1.0).block(128);
    let out = run_cpu(&k, &args, &base.clone().method(Method::Rk4)).unwrap();
    let y = f32s(&out.states);
    for i in 0..512 {
        let want = x[(i / 128) * 128 + 127 - i % 128];
        let tol = 8.0 * f32::EPSILON * want.abs();
        assert!((y[i] - want).abs() <= tol, "y[{i}] = {} vs {want}", y[i]);
    }
    // The same bits for any thread count, under RK4 too.
    let par = run_cpu(&k, &args, &base.method(Method::Rk4).par(Par::Rayon(2))).unwrap();
    assert_eq!(out.states, par.states);
}

#[test]
fn unit_flows_are_exact_under_rk4() {
    // Jumps and integer drives/emits are exact unit flows under any method:
    // histogram and matmul_fma give Euler's bits under RK4.
    let src = "field u(k: u32) {
        shared c: u32[4] = 0;
        flux hist: u32[4];
        state acc = 0.0;
        phase count for r in 0..k { d(c[(tid + r) % 4u])/dt += 1; acc := fma(acc, 1.5, f32(tid)); }
        phase publish { emit hist[tid % 4u] += c[tid % 4u] if tid < 4u; }
    }";
    let k = compile("u.field", src).unwrap();
    let mut args = Args::new(&k);
    args.scalar("k", vgpu_ir::Value::U32(5)).unwrap();
    let run = |m| {
        run_cpu(
            &k,
            &args,
            &Integration::new(16, 0.0, 0.0, 1.0).block(8).method(m),
        )
        .unwrap()
    };
    let (e, r) = (run(Method::Euler), run(Method::Rk4));
    assert_eq!(e, r);
    // 8 lanes × 5 repetitions per block, spread evenly: 10 per entry, 2 blocks.
    assert_eq!(r.flux("hist").unwrap(), &Buffer::U32(vec![20u32; 4].into()));
    let mut want = 0.0f32;
    for _ in 0..5 {
        want = want.mul_add(1.5, 3.0);
    }
    assert_eq!(f32s(&r.states)[3], want);
}

/// Runs a source with no parameters; the error.
fn fails(src: &str, n: usize, block: u32) -> vgpu_ir::IrError {
    let k = compile("r.field", src).unwrap();
    run_cpu(
        &k,
        &Args::new(&k),
        &Integration::new(n, 0.0, 0.0, 1.0).block(block),
    )
    .unwrap_err()
}

#[test]
fn phased_faults_name_the_array_the_trajectory_and_the_place() {
    use vgpu_ir::IrError;
    let oob = |e: &IrError| match e {
        IrError::OutOfBounds {
            buffer,
            trajectory,
            index,
            len,
            ..
        } => (buffer.clone(), *trajectory, *index, *len),
        other => panic!("{other}"),
    };
    // A drive past the end (every block faults; the lowest block's first lane is named).
    let e = fails(
        "field r() { shared s: f32[4] = 0.0; state y = 0.0;\n phase a { d(s[tid])/dt += 1.0; } }",
        16,
        8,
    );
    assert_eq!(oob(&e), ("s".into(), 4, 4, 4));
    assert!(e.to_string().contains("r.field:2:"), "{e}");
    // An emission past the end, in block 1 only; under RK4 (the default).
    let e = fails(
        "field r() { flux f: f32[12]; state y = 0.0;\n phase a { emit f[i] += 1.0; } }",
        16,
        8,
    );
    assert_eq!(oob(&e), ("f".into(), 12, 12, 12));
    // A read past the end once the state has grown (its index follows the state).
    let e = fails("field r() { shared s: f32[8] = 0.0; state y = 0.0;\n phase a over 2.0 { d(y)/dt = s[min(u32(y * 10.0), 9u)]; d(s[tid])/dt += 1.0; } }", 8, 8);
    assert_eq!(oob(&e).0, "s");
    // Booleans have no rates and do not accumulate.
    let e = fails(
        "field r() { shared s: bool[4] = false; state y = 0.0; phase a { d(s[0])/dt += true; } }",
        4,
        4,
    );
    assert!(e.to_string().contains("bool shared sub-field"), "{e}");
    let e = fails(
        "field r() { flux f: bool[4]; state y = 0.0; phase a { emit f[0] += true; } }",
        4,
        4,
    );
    assert!(e.to_string().contains("only numbers accumulate"), "{e}");
}

#[test]
fn phased_runs_report_progress_to_the_last_trajectory_step() {
    // Two phases: 3 steps of 0.5 over 1.5, then 2 repetitions of 1 unit step:
    // 3 + 2·2 steps per trajectory (phase b's unit span takes 2 steps of 0.5);
    // 384 trajectories in 3 blocks of 128.
    let k = compile(
        "p.field",
        "field p() { state x = 1.0; shared s: f32[1] = 0.0;
         phase a over 1.5 { d(x)/dt = -x; }
         phase b for k in 0..2 { d(s[0])/dt += x; } }",
    )
    .unwrap();
    let p = vgpu_field::executor::Progress::new();
    let integ = Integration::new(384, 0.0, 0.0, 0.5)
        .block(128)
        .method(Method::Euler)
        .progress(p.clone());
    run_cpu(&k, &Args::new(&k), &integ).unwrap();
    assert_eq!(p.total(), 384 * (3 + 2 * 2));
    assert_eq!(p.done(), p.total());
}
