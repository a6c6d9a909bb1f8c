//! The adaptive CPU path on native code (`Engine::Jit`) against the column
//! evaluator (`Engine::Eval`): every built-in method, endpoints, save points,
//! statistics and statuses bit for bit, on Lorenz (f32, f64), a field of
//! library functions and buffer reads, a bouncing ball's events, a stiff
//! problem through its derived Jacobian, and an out-of-bounds read.

use vgpu_field::adaptive::{AdaptiveEnsemble, AdaptiveMethod};
use vgpu_ir::adaptive::{run_adaptive_cpu_on, AdaptiveOutput, AdaptiveRun, IrRhs};
use vgpu_ir::derived::Derived;
use vgpu_ir::{compile, Args, Buffer, Engine, Kernel, Value};

fn run(
    k: &Kernel,
    args: &Args,
    n: usize,
    t1: f64,
    opts: &AdaptiveEnsemble,
    e: Engine,
) -> AdaptiveOutput {
    let run = AdaptiveRun {
        n,
        spans: vec![(0.0, t1)],
        u0: None,
        options: opts.clone(),
        slice: None,
    };
    run_adaptive_cpu_on(k, args, &run, e).unwrap()
}

/// Both engines, every method of `methods`: the same output; and the JIT
/// really ran native code.
fn engines_agree(k: &Kernel, args: &Args, n: usize, t1: f64, methods: &[AdaptiveMethod]) {
    for &m in methods {
        let d = Derived::new(k, m == AdaptiveMethod::Rosenbrock23).unwrap();
        let rhs = IrRhs::new(k, args, n)
            .unwrap()
            .with_derived(&d)
            .unwrap()
            .engine(Engine::Jit);
        assert!(rhs.is_native(), "{m}: {:?}", rhs.fallback());
        let opts = AdaptiveEnsemble::new(m).rtol(1e-5).atol(1e-7).saveat(vec![
            0.0,
            t1 * 0.3,
            t1 * 0.61,
            t1,
        ]);
        let jit = run(k, args, n, t1, &opts, Engine::Jit);
        let eval = run(k, args, n, t1, &opts, Engine::Eval);
        assert_eq!(jit.stats, eval.stats, "{m}");
        assert!(
            same(&jit.end, &eval.end),
            "{m}: {:?} {:?}",
            jit.end,
            eval.end
        );
        assert!(same(&jit.saved, &eval.saved), "{m}");
        assert!(
            jit.stats.iter().any(|s| s.accepted > 3),
            "{m}: too short a run"
        );
    }
}

fn same(a: &Buffer, b: &Buffer) -> bool {
    a.len() == b.len()
        && (0..a.len()).all(|i| {
            let (x, y) = (a.get(i).as_f64(), b.get(i).as_f64());
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        })
}

fn rhos(n: usize) -> Vec<f64> {
    (0..n).map(|i| 21.0 * i as f64 / (n - 1) as f64).collect()
}

#[test]
fn lorenz_f32_and_f64_every_method() {
    let k = compile(
        "lorenz.field",
        include_str!("../../../examples/lorenz.field"),
    )
    .unwrap();
    let mut args = Args::new(&k);
    args.buffer(
        "rho",
        rhos(24).iter().map(|&r| r as f32).collect::<Vec<_>>(),
    )
    .unwrap();
    engines_agree(&k, &args, 24, 1.0, &AdaptiveMethod::EVERY);
    let k = compile(
        "lorenz_f64.field",
        include_str!("../../../examples/lorenz_f64.field"),
    )
    .unwrap();
    let mut args = Args::new(&k);
    args.buffer("rho", Buffer::F64(rhos(24).into())).unwrap();
    engines_agree(&k, &args, 24, 1.0, &AdaptiveMethod::EVERY);
}

/// Library functions, buffers of three types, indices, casts, selects.
const MATHS: &str = "field maths(w: f32[], k: i32[], sh: u32[], g: f32) {
    state a = w[i], b = 0.5 + f32(k[i % 3u]), c = 1.0;
    let s = sin(a) * cos(b) + exp(-abs(c)) + tanh(a - b) + log(1.0 + a * a) + sqrt(abs(b));
    d(a)/dt = -a + g * s + pow(abs(b), 0.75) - min(a, b) + max(c, 0.25) + a % 1.5 + floor(c);
    d(b)/dt = select(a > b, -0.5 * b, 0.25 * a) + f32(i32(t * 8.0) % 3) * 0.125 + f32(sh[i] >> 1u) * 0.01;
    d(c)/dt = fma(a, b, -c) + f32(i + tid + bid) * 0.001 + init(a) * 0.1;
}";

#[test]
fn a_field_of_library_functions_and_buffer_reads_every_method() {
    let k = compile("maths.field", MATHS).unwrap();
    let n = 12;
    let mut args = Args::new(&k);
    args.buffer(
        "w",
        (0..n).map(|i| i as f32 * 0.3 - 1.0).collect::<Vec<_>>(),
    )
    .unwrap()
    .buffer("k", vec![1i32, -2, 3])
    .unwrap()
    .buffer("sh", (0..n as u32).map(|i| i * 7).collect::<Vec<_>>())
    .unwrap()
    .scalar("g", Value::F32(0.8))
    .unwrap();
    // `%` has no derivative: the stiff method refuses this field.
    engines_agree(&k, &args, n, 2.0, &AdaptiveMethod::ALL);
}

#[test]
fn events_and_the_stiff_method() {
    let ball = "field ball(h0: f64[], e: f64) {
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
        event stop: nb - 3.5 rising { terminate; }
    }";
    let k = compile("ball.field", ball).unwrap();
    let mut args = Args::new(&k);
    args.buffer("h0", Buffer::F64(vec![1.0, 2.5, 0.3, 4.0].into()))
        .unwrap()
        .scalar("e", Value::F64(0.8))
        .unwrap();
    engines_agree(&k, &args, 4, 3.0, &AdaptiveMethod::EVERY);
    let vdp = "field vdp(mu: f64[]) {
        state x: f64 = 2.0, y: f64 = 0.0;
        d(x)/dt = y;
        d(y)/dt = mu[i] * ((1.0 - x * x) * y) - x;
    }";
    let k = compile("vdp.field", vdp).unwrap();
    let mut args = Args::new(&k);
    args.buffer("mu", Buffer::F64(vec![1.0, 10.0, 100.0].into()))
        .unwrap();
    engines_agree(&k, &args, 3, 1.0, &[AdaptiveMethod::Rosenbrock23]);
}

#[test]
fn an_out_of_bounds_read_is_the_same_error() {
    let src = "field oob(a: f32[]) {
        state x = 1.0;
        d(x)/dt = -x * a[i * 2u];
    }";
    let k = compile("oob.field", src).unwrap();
    let mut args = Args::new(&k);
    args.buffer("a", vec![1.0f32; 5]).unwrap();
    let r = AdaptiveRun {
        n: 6,
        spans: vec![(0.0, 1.0)],
        u0: None,
        options: AdaptiveEnsemble::new(AdaptiveMethod::Tsit5),
        slice: None,
    };
    let jit = run_adaptive_cpu_on(&k, &args, &r, Engine::Jit).unwrap_err();
    let eval = run_adaptive_cpu_on(&k, &args, &r, Engine::Eval).unwrap_err();
    assert_eq!(jit.to_string(), eval.to_string());
    assert!(jit.to_string().contains("trajectory 3"), "{jit}");
}
