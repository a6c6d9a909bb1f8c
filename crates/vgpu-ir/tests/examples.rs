//! Every `examples/*.field` compiles and runs on the CPU with the result the
//! CUDA program it stands for computes.
#![allow(clippy::needless_range_loop)]

use std::path::PathBuf;
use vgpu_demos::lorenz::{lorenz_reference, LorenzProblem};
use vgpu_ir::{compile_file, run_cpu, Args, Buffer, Integration, Method, Par, Value};

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn f32s(b: &Buffer) -> Vec<f32> {
    match b {
        Buffer::F32(v) => v.to_vec(),
        other => panic!("expected f32 buffer, got {:?}", other.ty()),
    }
}

#[test]
fn every_example_compiles() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut count = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "field") {
            compile_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            count += 1;
        }
    }
    assert!(count >= 8, "found {count} examples");
}

#[test]
fn lorenz_equals_the_hand_written_loop_bit_for_bit() {
    // Same operations in the same order as vgpu-field's reference loop (RK4 as the
    // field engine's stepper combines it): identical bits.
    let k = compile_file(&example("lorenz.field")).unwrap();
    let p = LorenzProblem {
        steps: 200,
        ..LorenzProblem::new(1000)
    };
    let mut args = Args::new(&k);
    args.buffer("rho", p.rho()).unwrap();
    let out = run_cpu(
        &k,
        &args,
        &Integration::new(p.n, 0.0, 0.2, 0.001).method(Method::Rk4),
    )
    .unwrap();
    let want = lorenz_reference(&p, Par::Seq).unwrap();
    let got = f32s(&out.states);
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "component {i}: {g} vs {w}");
    }
}

#[test]
fn same_bits_for_any_thread_count() {
    let k = compile_file(&example("lorenz.field")).unwrap();
    let rho: Vec<f32> = (0..777).map(|i| i as f32 * 0.03).collect();
    let mut args = Args::new(&k);
    args.buffer("rho", rho).unwrap();
    let base = Integration::new(777, 0.0, 0.05, 0.001).block(64);
    let a = run_cpu(&k, &args, &base.clone().par(Par::Seq)).unwrap();
    let b = run_cpu(&k, &args, &base.clone().par(Par::Rayon(2))).unwrap();
    let c = run_cpu(&k, &args, &base.par(Par::Rayon(3))).unwrap();
    assert_eq!(a.states, b.states);
    assert_eq!(a.states, c.states);
    // and the phased executor
    let k = compile_file(&example("tree_sum.field")).unwrap();
    let x: Vec<f32> = (0..1024).map(|i| (i as f32).sin()).collect();
    let mut args = Args::new(&k);
    args.buffer("x", x)
        .unwrap()
        .scalar("steps", Value::U32(7))
        .unwrap();
    let base = Integration::new(1024, 0.0, 0.0, 1.0)
        .block(128)
        .method(Method::Euler);
    let a = run_cpu(&k, &args, &base.clone().par(Par::Seq)).unwrap();
    let b = run_cpu(&k, &args, &base.par(Par::Rayon(2))).unwrap();
    assert_eq!(a.fluxes, b.fluxes);
}

#[test]
fn scale_is_exact() {
    let k = compile_file(&example("scale.field")).unwrap();
    let x: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.37).sin() * 1e3).collect();
    let mut args = Args::new(&k);
    args.scalar("a", Value::F32(-1.75))
        .unwrap()
        .buffer("x", x.clone())
        .unwrap();
    let out = run_cpu(
        &k,
        &args,
        &Integration::new(1000, 0.0, 1.0, 1.0).method(Method::Euler),
    )
    .unwrap();
    let y = f32s(&out.states);
    // Bit for bit, except that 0 + 1·(-0.0) is +0.0 where CUDA writes -0.0 (equal as numbers).
    for i in 0..1000 {
        let want = -1.75f32 * x[i];
        if want == 0.0 {
            assert_eq!(y[i], 0.0, "y[{i}]");
        } else {
            assert_eq!(y[i].to_bits(), want.to_bits(), "y[{i}]");
        }
    }
}

fn matmul_inputs(m: usize, kk: usize, cols: usize) -> (Vec<f32>, Vec<f32>) {
    let a = (0..m * kk)
        .map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.37)
        .collect();
    let b = (0..kk * cols)
        .map(|i| ((i * 5 % 11) as f32 - 5.0) * 1.13)
        .collect();
    (a, b)
}

#[test]
fn matmul_equals_the_sequential_loop() {
    let (m, kk, cols) = (8, 13, 6);
    let (a, b) = matmul_inputs(m, kk, cols);
    for (file, fused) in [("matmul.field", false), ("matmul_fma.field", true)] {
        let k = compile_file(&example(file)).unwrap();
        let mut args = Args::new(&k);
        args.buffer("a", a.clone())
            .unwrap()
            .buffer("b", b.clone())
            .unwrap();
        args.scalar("k", Value::U32(kk as u32))
            .unwrap()
            .scalar("cols", Value::U32(cols as u32))
            .unwrap();
        let out = run_cpu(
            &k,
            &args,
            &Integration::new(m * cols, 0.0, 0.0, 1.0)
                .block(cols as u32)
                .method(Method::Euler),
        )
        .unwrap();
        let c = f32s(&out.states);
        for r in 0..m {
            for j in 0..cols {
                let mut acc = 0.0f32;
                for q in 0..kk {
                    acc = if fused {
                        a[r * kk + q].mul_add(b[q * cols + j], acc)
                    } else {
                        acc + a[r * kk + q] * b[q * cols + j]
                    };
                }
                assert_eq!(
                    c[r * cols + j].to_bits(),
                    acc.to_bits(),
                    "{file} C[{r},{j}]"
                );
            }
        }
    }
}

#[test]
fn relax_converges_to_sin_h0() {
    let k = compile_file(&example("relax_sin.field")).unwrap();
    let x0: Vec<f32> = (0..512).map(|i| -3.0 + 6.0 * i as f32 / 511.0).collect();
    let mut args = Args::new(&k);
    args.buffer("x0", x0.clone()).unwrap();
    let out = run_cpu(&k, &args, &Integration::new(512, 0.0, 20.0, 0.01)).unwrap();
    let h = f32s(&out.states);
    // |h0 - sin h0|·e^-20 < 1e-8; in f32 a step stops moving h once dt·|rate| is
    // under half an ulp of h (ulp ≤ 6e-8 for |h| ≤ 1, dt = 0.01): |h - sin h0| ≤ 3e-6,
    // plus the rounding of sin: 1e-5 covers both.
    for i in 0..512 {
        assert!(
            (h[i] - x0[i].sin()).abs() <= 1e-5,
            "h[{i}] = {} vs {}",
            h[i],
            x0[i].sin()
        );
    }
}

#[test]
fn barrier_reverse_reverses_each_block() {
    let k = compile_file(&example("barrier_reverse.field")).unwrap();
    let x: Vec<f32> = (0..512).map(|i| i as f32 * 1.5).collect();
    let mut args = Args::new(&k);
    args.buffer("x", x.clone()).unwrap();
    let out = run_cpu(
        &k,
        &args,
        &Integration::new(512, 0.0, 0.0, 1.0)
            .block(128)
            .method(Method::Euler),
    )
    .unwrap();
    let y = f32s(&out.states);
    for i in 0..512 {
        let (b, t) = (i / 128, i % 128);
        assert_eq!(y[i], x[b * 128 + 127 - t], "y[{i}]");
    }
}

#[test]
fn tree_sum_sums() {
    let k = compile_file(&example("tree_sum.field")).unwrap();
    let x: Vec<f32> = (0..4096).map(|i| ((i % 97) as f32) * 0.25).collect();
    let mut args = Args::new(&k);
    args.buffer("x", x.clone())
        .unwrap()
        .scalar("steps", Value::U32(8))
        .unwrap();
    let out = run_cpu(
        &k,
        &args,
        &Integration::new(4096, 0.0, 0.0, 1.0)
            .block(256)
            .method(Method::Euler),
    )
    .unwrap();
    // Multiples of 0.25 below 2^24·0.25: every partial sum is exact.
    let want: f32 = x.iter().sum();
    assert_eq!(f32s(out.flux("total").unwrap()), vec![want]);
}

#[test]
fn histogram_counts() {
    let k = compile_file(&example("histogram.field")).unwrap();
    let x: Vec<u32> = (0..2048u32)
        .map(|i| i.wrapping_mul(2654435761) >> 7)
        .collect();
    let mut args = Args::new(&k);
    args.buffer("x", x.clone())
        .unwrap()
        .scalar("bins", Value::U32(16))
        .unwrap();
    let out = run_cpu(
        &k,
        &args,
        &Integration::new(2048, 0.0, 0.0, 1.0)
            .block(256)
            .method(Method::Euler),
    )
    .unwrap();
    let mut want = vec![0u32; 16];
    for v in &x {
        want[(v % 16) as usize] += 1;
    }
    assert_eq!(out.flux("hist").unwrap(), &Buffer::U32(want.into()));
}
