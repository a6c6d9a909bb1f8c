//! Unit tests of the adaptive `.field` path on the CPU (moved out of
//! `adaptive.rs` to keep it under the file-size limit).

use super::*;
use crate::check::compile;
use vgpu_field::adaptive::{rhs_fn, AdaptiveMethod, Status};

/// `examples/lorenz_f64.field`: the Lorenz field in `f64`.
const LORENZ64: &str = include_str!("../../../examples/lorenz_f64.field");

fn rhos(n: usize) -> Vec<f64> {
    (0..n).map(|i| 21.0 * i as f64 / (n - 1) as f64).collect()
}

/// The `.field` Lorenz and the same arithmetic as a Rust closure, through
/// the same driver: endpoints, save points and statistics, bit for bit.
fn lorenz_matches_the_closure<T: IrFloat>(src: &str, buf: Buffer, method: AdaptiveMethod) {
    let n = 40;
    let k = compile("lorenz.field", src).unwrap();
    let mut args = Args::new(&k);
    args.buffer("rho", buf.clone()).unwrap();
    let opts = AdaptiveEnsemble::new(method)
        .rtol(1e-6)
        .atol(1e-8)
        .saveat(vec![0.0, 0.25, 0.5, 1.0]);
    let run = AdaptiveRun {
        n,
        spans: vec![(0.0, 1.0)],
        u0: None,
        options: opts.clone(),
        slice: None,
    };
    let ir = run_adaptive_cpu(&k, &args, &run).unwrap();
    let f = rhs_fn(|_t: T, u: &[T; 3], p: &[T], du: &mut [T; 3]| {
        du[0] = T::from_f64(10.0) * (u[1] - u[0]);
        du[1] = u[0] * (p[0] - u[2]) - u[1];
        du[2] = u[0] * u[1] - T::from_f64(8.0) / T::from_f64(3.0) * u[2];
    });
    let y0: Vec<T> = (0..n).flat_map(|_| [T::ONE, T::ZERO, T::ZERO]).collect();
    let p: Vec<T> = (0..n).map(|i| T::from_f64(buf.get(i).as_f64())).collect();
    let prob = EnsembleProblem::new(n, &y0, &[(0.0, 1.0)]).params(&p, 1);
    let rust = opts.solve(&f, &prob).unwrap();
    assert_eq!(ir.end, to_buffer(&rust.end), "{method}");
    assert_eq!(ir.saved, to_buffer(&rust.saved), "{method}");
    assert_eq!(ir.stats, rust.stats, "{method}");
    assert!(rust.all_success());
}

#[test]
fn field_lorenz_equals_the_rust_closure_bit_for_bit() {
    let lorenz32 = include_str!("../../../examples/lorenz.field");
    let r = rhos(40);
    let r32 = Buffer::F32(r.iter().map(|&v| v as f32).collect());
    for m in AdaptiveMethod::ALL {
        lorenz_matches_the_closure::<f32>(lorenz32, r32.clone(), m);
        lorenz_matches_the_closure::<f64>(LORENZ64, Buffer::F64(r.clone().into()), m);
    }
}

#[test]
fn initial_states_come_from_the_kernel_or_u0() {
    let src = "field decay(k: f32[]) {
        state a = k[i] * 2.0, b = 1.0 + f32(i);
        d(a)/dt = -a;
        d(b)/dt = -k[i] * b;
    }";
    let k = compile("decay.field", src).unwrap();
    let mut args = Args::new(&k);
    args.buffer("k", vec![1.0f32, 2.0, 3.0]).unwrap();
    let mut run = AdaptiveRun {
        n: 3,
        spans: vec![(0.0, 0.0)],
        u0: None,
        options: AdaptiveEnsemble::new(AdaptiveMethod::Tsit5),
        slice: None,
    };
    let out = run_adaptive_cpu(&k, &args, &run).unwrap();
    assert_eq!(
        out.end,
        Buffer::F32(vec![2.0, 1.0, 4.0, 2.0, 6.0, 3.0].into())
    );
    run.u0 = Some(vec![5.0, 6.0, 7.0, 8.0, 9.0, 10.0]);
    let out = run_adaptive_cpu(&k, &args, &run).unwrap();
    assert_eq!(
        out.end,
        Buffer::F32(vec![5.0, 6.0, 7.0, 8.0, 9.0, 10.0].into())
    );
    run.u0 = Some(vec![1.0; 5]);
    let e = run_adaptive_cpu(&k, &args, &run).unwrap_err();
    assert!(e.to_string().contains("`u0`"), "{e}");
    // Per-trajectory spans: y(t1) = exp(-t1) for the first component.
    run.u0 = None;
    run.spans = vec![(0.0, 1.0), (0.0, 2.0), (1.0, 1.5)];
    run.options = AdaptiveEnsemble::new(AdaptiveMethod::Vern7)
        .rtol(1e-6)
        .atol(1e-7);
    let out = run_adaptive_cpu(&k, &args, &run).unwrap();
    for (i, (a0, dt)) in [(2.0f64, 1.0f64), (4.0, 2.0), (6.0, 0.5)]
        .into_iter()
        .enumerate()
    {
        let got = out.end.get(2 * i).as_f64();
        assert!((got - a0 * (-dt).exp()).abs() < 1e-5, "{i}: {got}");
        assert_eq!(out.stats[i].t, run.spans[i].1);
    }
}

#[test]
fn a_blow_up_fails_alone() {
    let src = include_str!("../../../examples/blowup.field");
    let k = compile("blowup.field", src).unwrap();
    let mut args = Args::new(&k);
    args.buffer("p", vec![0.5f64, 2.0, -1.0]).unwrap();
    let run = AdaptiveRun {
        n: 3,
        spans: vec![(0.0, 1.0)],
        u0: None,
        options: AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
            .rtol(1e-8)
            .atol(1e-10),
        slice: None,
    };
    let out = run_adaptive_cpu(&k, &args, &run).unwrap();
    // y' = p y², y(0) = 1: y = 1 / (1 − p t), singular at t = 1/p.
    let st: Vec<Status> = out.stats.iter().map(|s| s.status).collect();
    assert_eq!(st[0], Status::Success);
    assert!(matches!(st[1], Status::DtMin | Status::NonFinite), "{st:?}");
    assert!((out.stats[1].t - 0.5).abs() < 1e-3, "{}", out.stats[1].t);
    assert_eq!(st[2], Status::Success);
    assert!((out.end.get(0).as_f64() - 2.0).abs() < 1e-6);
    assert!((out.end.get(2).as_f64() - 0.5).abs() < 1e-6);
}

#[test]
fn refusals_name_the_problem() {
    let phased = include_str!("../../../examples/barrier_reverse.field");
    let k = compile("barrier_reverse.field", phased).unwrap();
    let args = Args::new(&k);
    let e = IrRhs::new(&k, &args, 4).err().unwrap();
    assert!(e.to_string().contains("phases"), "{e}");
    let wide: String = (0..17).map(|j| format!("s{j} = 1.0, ")).collect();
    let rates: String = (0..17).map(|j| format!("d(s{j})/dt = -s{j}; ")).collect();
    let src = format!(
        "field wide() {{ state {} ; {rates} }}",
        wide.trim_end_matches(", ")
    );
    let k = compile("wide.field", &src).unwrap();
    let run = AdaptiveRun {
        n: 1,
        spans: vec![(0.0, 1.0)],
        u0: None,
        options: AdaptiveEnsemble::new(AdaptiveMethod::Tsit5),
        slice: None,
    };
    let e = run_adaptive_cpu(&k, &Args::new(&k), &run).unwrap_err();
    assert!(e.to_string().contains("1 to 16 states"), "{e}");
}
