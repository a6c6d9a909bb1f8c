//! Fields with phases on the GPU (lavapipe in CI): shared sub-fields in
//! workgroup memory, barriers, flux outputs as atomics. Every phased example
//! agrees with the CPU executor (`run_cpu`): integer results and shared-memory
//! results exactly, float flux to the rounding of a different summation order.
//! Skipped without an adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use std::path::PathBuf;
use vgpu_gpu::{run_ensemble_gpu, EnsembleError, GpuEnsemble, KernelCache};
use vgpu_ir::{
    compile, compile_file, run_cpu, Args, Buffer, Integration, IrError, Kernel, Method, Output,
    Value,
};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn euler(n: usize, block: u32) -> Integration {
    Integration::new(n, 0.0, 1.0, 1.0)
        .method(Method::Euler)
        .block(block)
}

fn f32s(b: &Buffer) -> Vec<f32> {
    match b {
        Buffer::F32(v) => v.to_vec(),
        other => panic!("expected f32, got {other:?}"),
    }
}

/// Runs `k` on both and checks: states within `state_tol(cpu value)`, integer
/// flux exactly, float flux within `flux_tol(cpu value)`.
fn agree(
    cache: &mut KernelCache,
    k: &Kernel,
    args: &Args,
    integ: &Integration,
    state_tol: &dyn Fn(usize, f32) -> f32,
    flux_tol: &dyn Fn(&str, f32) -> f32,
) -> (Output, GpuEnsemble) {
    let cpu = run_cpu(k, args, integ).unwrap();
    let gpu =
        run_ensemble_gpu(cache, k, args, integ, None).unwrap_or_else(|e| panic!("{}: {e}", k.name));
    assert_eq!(gpu.steps, cpu.steps, "{}", k.name);
    let cs = f32s(&cpu.states);
    assert_eq!(gpu.states.len(), cs.len(), "{}", k.name);
    for (i, (g, c)) in gpu.states.iter().zip(&cs).enumerate() {
        let tol = state_tol(i, *c);
        assert!(
            (g - c).abs() <= tol,
            "{}: state {i}: gpu {g} cpu {c} (tolerance {tol})",
            k.name
        );
    }
    assert_eq!(gpu.fluxes.len(), cpu.fluxes.len(), "{}", k.name);
    for ((gn, gb), (cn, cb)) in gpu.fluxes.iter().zip(&cpu.fluxes) {
        assert_eq!(gn, cn);
        match (gb, cb) {
            (Buffer::F32(g), Buffer::F32(c)) => {
                assert_eq!(g.len(), c.len());
                for (i, (g, c)) in g.iter().zip(c.iter()).enumerate() {
                    let tol = flux_tol(gn, *c);
                    assert!(
                        (g - c).abs() <= tol,
                        "{}: flux {gn}[{i}]: gpu {g} cpu {c} (tolerance {tol})",
                        k.name
                    );
                }
            }
            (g, c) => assert_eq!(g, c, "{}: integer flux {gn} is exact", k.name),
        }
    }
    (cpu, gpu)
}

fn exact(_: usize, _: f32) -> f32 {
    0.0
}

#[test]
fn every_phased_example_agrees_with_the_cpu() {
    let Some(mut cache) = common::kernel_cache("every_phased_example_agrees_with_the_cpu") else {
        return;
    };
    let mut ran = vec![];
    let mut entries: Vec<PathBuf> = std::fs::read_dir(examples())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "field"))
        .collect();
    entries.sort();
    for path in entries {
        let k = compile_file(&path).unwrap();
        if !k.is_phased() {
            continue;
        }
        let mut args = Args::new(&k);
        match k.name.as_str() {
            "barrier_reverse" => {
                let n = 1024;
                let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 100.0).collect();
                args.buffer("x", x.clone()).unwrap();
                for block in [64u32, 256] {
                    let (_, gpu) = agree(
                        &mut cache,
                        &k,
                        &args,
                        &euler(n, block),
                        // dt = 1: one rounding-free step each way, exact on both.
                        &exact,
                        &|_, _| 0.0,
                    );
                    let b = block as usize;
                    for i in 0..n {
                        let (blk, tid) = (i / b, i % b);
                        assert_eq!(gpu.states[i], x[blk * b + b - 1 - tid]);
                    }
                }
            }
            "tree_sum" => {
                let n = 4096;
                let x: Vec<f32> = (0..n).map(|i| i as f32 / (n - 1) as f32).collect();
                args.buffer("x", x.clone()).unwrap();
                for block in [64u32, 256] {
                    args.scalar("steps", Value::U32(block.trailing_zeros()))
                        .unwrap();
                    let (cpu, gpu) = agree(
                        &mut cache,
                        &k,
                        &args,
                        &euler(n, block),
                        &exact,
                        // Each block's partial sum is the CPU's bits (shared memory
                        // reduces in the same order); the blocks' atomic adds land
                        // in any order: one rounding of the running total each,
                        // |total| <= 2048, so within blocks · 2^-24 · 2048 · 2.
                        &|_, c| (n / block as usize) as f32 * c.abs() * 2.0f32.powi(-23),
                    );
                    let want: f64 = x.iter().map(|&v| v as f64).sum();
                    let got = f32s(&gpu.fluxes[0].1)[0] as f64;
                    assert!((got - want).abs() < 1e-2, "tree_sum {got} vs {want}");
                    assert_eq!(cpu.fluxes[0].0, "total");
                }
            }
            "histogram" => {
                let n = 4096;
                let x: Vec<u32> = (0..n as u32)
                    .map(|i| i.wrapping_mul(2654435761) >> 7)
                    .collect();
                args.buffer("x", x.clone()).unwrap();
                for bins in [7u32, 16, 64] {
                    args.scalar("bins", Value::U32(bins)).unwrap();
                    let (_, gpu) = agree(&mut cache, &k, &args, &euler(n, 64), &exact, &|_, _| 0.0);
                    let mut want = vec![0u32; bins as usize];
                    for v in &x {
                        want[(v % bins) as usize] += 1;
                    }
                    assert_eq!(gpu.fluxes[0].1, Buffer::from(want));
                }
            }
            "matmul" | "matmul_fma" => {
                let (m, kk, cols) = (12usize, 20usize, 16usize);
                let a = common::random(m * kk, 1);
                let b = common::random(kk * cols, 2);
                args.buffer("a", a.clone()).unwrap();
                args.buffer("b", b.clone()).unwrap();
                args.scalar("k", Value::U32(kk as u32)).unwrap();
                args.scalar("cols", Value::U32(cols as u32)).unwrap();
                // The same products and sums in the same order; a GPU compiler
                // may contract `acc + a·b` into one fma (or WGSL's fma may round
                // twice): at most one rounding per step apart,
                // kk · 2^-24 · Σ|a·b| in all.
                let tol = |i: usize, _: f32| {
                    let (row, col) = (i / cols, i % cols);
                    let s: f32 = (0..kk)
                        .map(|p| (a[row * kk + p] * b[p * cols + col]).abs())
                        .sum();
                    kk as f32 * s * 2.0f32.powi(-23)
                };
                agree(
                    &mut cache,
                    &k,
                    &args,
                    &euler(m * cols, 64),
                    &tol,
                    &|_, _| 0.0,
                );
            }
            other => panic!("phased example `{other}` has no arguments in this test: add them"),
        }
        ran.push(k.name.clone());
    }
    assert_eq!(
        ran,
        [
            "barrier_reverse",
            "histogram",
            "matmul",
            "matmul_fma",
            "tree_sum"
        ],
        "every phased example runs"
    );
}

/// Every kind of shared sub-field and flux output, gathered and own-lane
/// drives, guards, repetitions, jumps: integer results exact, floats to rounding.
#[test]
fn typed_shared_memory_drives_and_flux_agree() {
    let Some(mut cache) = common::kernel_cache("typed_shared_memory_drives_and_flux_agree") else {
        return;
    };
    let k = compile(
        "mix.field",
        "field mix(x: f32[], m: u32) {
            shared a: f32[bdim] = 1.5;
            shared c: i32[4] = -2;
            shared u: u32[m] = 0;
            shared flag: bool[2] = true;
            flux total: f32[2];
            flux cnt: i32[3];
            flux ucnt: u32[5];
            state y = x[i], z = 0.0;
            phase one for k in 0..3 {
                d(a[tid])/dt += y * f32(k);
                d(c[tid % 4])/dt += i32(tid) - 1 if flag[1];
                d(c[(tid + 1) % 4])/dt += 2;
                d(u[tid % m])/dt += tid;
                emit total[tid % 2] += a[(tid + 1) % bdim];
                emit cnt[u32(c[tid % 4] + 100) % 3] += c[0] if tid < 3;
                emit ucnt[tid % 5] += u[tid % m] + k;
                d(y)/dt = a[tid] - y;
                z := z + f32(u[0]) - f32(c[1]);
            }
            phase two {
                emit ucnt[0] += u32(c[2] + 1000);
                y := y + f32(u[m - 1]);
            }
        }",
    )
    .unwrap();
    let mut args = Args::new(&k);
    args.buffer("x", common::random(256, 7)).unwrap();
    args.scalar("m", Value::U32(5)).unwrap();
    // Shared memory steps in the CPU's order with the CPU's operations: the
    // states are its bits; the float flux differs by summation order only
    // (|values| <= ~10, 2 · 256 · 3 emissions).
    agree(&mut cache, &k, &args, &euler(256, 64), &exact, &|_, c| {
        1e-5 * c.abs().max(1.0) * 100.0
    });
}

/// A float field with a coupled mean, fractional steps, spans that depend on
/// the repetition, and time inside phases.
#[test]
fn coupled_float_phases_with_fractional_steps_agree() {
    let Some(mut cache) = common::kernel_cache("coupled_float_phases_with_fractional_steps_agree")
    else {
        return;
    };
    let k = compile(
        "couple.field",
        "field couple(x: f32[]) {
            shared mean: f32[1] = 0.0;
            flux out: f32[2];
            state y = x[i];
            phase gather over 2.0 {
                d(mean[0])/dt += y / f32(bdim);
                d(y)/dt = mean[0] - y;
                emit out[tid % 2] += y * t;
            }
            phase decay for k in 0..3 over (0.5 * f32(k + 1)) {
                d(y)/dt = -y * f32(k) + sin(t) + init(y) * 0.1;
            }
        }",
    )
    .unwrap();
    let mut args = Args::new(&k);
    args.buffer("x", common::random(512, 3)).unwrap();
    let integ = Integration::new(512, 0.0, 1.0, 0.25)
        .method(Method::Euler)
        .block(128);
    // 8 + 2 + 4 + 6 steps; per step a few roundings of values below 2 (time
    // is computed in f32 on the GPU, in f64 then rounded on the CPU).
    let (cpu, _) = agree(
        &mut cache,
        &k,
        &args,
        &integ,
        &|_, c| 1e-5 * c.abs().max(1.0),
        &|_, c| 1e-5 * c.abs().max(1.0) * 16.0,
    );
    assert_eq!(cpu.steps, 20);
}

#[test]
fn compiled_once_and_integer_results_repeat_bit_for_bit() {
    let Some(mut cache) = common::kernel_cache("compiled_once_and_integer_results_repeat") else {
        return;
    };
    let k = compile_file(&examples().join("histogram.field")).unwrap();
    let mut args = Args::new(&k);
    args.buffer("x", (0..2048u32).collect::<Vec<_>>()).unwrap();
    args.scalar("bins", Value::U32(10)).unwrap();
    let first = run_ensemble_gpu(&mut cache, &k, &args, &euler(2048, 128), None).unwrap();
    assert!(first.compiled);
    let again = run_ensemble_gpu(&mut cache, &k, &args, &euler(2048, 128), None).unwrap();
    assert!(!again.compiled, "the second run hits the cache");
    assert_eq!(again.fluxes, first.fluxes);
    assert_eq!(
        first.fluxes[0].1,
        Buffer::from(vec![205u32, 205, 205, 205, 205, 205, 205, 205, 204, 204])
    );
    // Another block size is another kernel.
    let other = run_ensemble_gpu(&mut cache, &k, &args, &euler(2048, 64), None).unwrap();
    assert!(other.compiled);
    assert_eq!(other.fluxes, first.fluxes);
    // Device timing runs on scratch copies: the results above are unaffected.
    let timed = run_ensemble_gpu(&mut cache, &k, &args, &euler(2048, 64), Some(3)).unwrap();
    assert!(timed.kernel_time.is_some());
    assert_eq!(timed.fluxes, first.fluxes);
}

#[test]
fn faults_and_refusals_are_reported() {
    let Some(mut cache) = common::kernel_cache("faults_and_refusals_are_reported") else {
        return;
    };
    // A shared index out of range: the shared sub-field, its length, the trajectory.
    let k = compile(
        "oob.field",
        "field oob(x: f32[]) {
            shared s: f32[8] = 0.0;
            state y = 0.0;
            phase p { d(s[tid])/dt += x[i]; }
            phase q { d(y)/dt = s[tid]; }
        }",
    )
    .unwrap();
    let mut args = Args::new(&k);
    args.buffer("x", vec![1.0f32; 64]).unwrap();
    let cpu = run_cpu(&k, &args, &euler(64, 32)).unwrap_err();
    let gpu = run_ensemble_gpu(&mut cache, &k, &args, &euler(64, 32), None).unwrap_err();
    for e in [cpu.to_string(), gpu.to_string()] {
        assert!(
            e.contains("`s` has 8 elements") && e.contains("oob.field:"),
            "{e}"
        );
    }
    match gpu {
        EnsembleError::Ir(IrError::OutOfBounds {
            trajectory, index, ..
        }) => assert_eq!((trajectory, index), (8, 8)),
        e => panic!("{e}"),
    }
    // A flux index out of range, negative through an i32 index.
    let k = compile(
        "neg.field",
        "field neg() {
            flux f: u32[4];
            phase p { emit f[u32(i32(tid) - 2)] += 1; }
        }",
    )
    .unwrap();
    let args = Args::new(&k);
    let gpu = run_ensemble_gpu(&mut cache, &k, &args, &euler(32, 32), None).unwrap_err();
    assert!(gpu.to_string().contains("`f` has 4 elements"), "{gpu}");
    // Whole blocks only, as on the CPU.
    let k = compile_file(&examples().join("barrier_reverse.field")).unwrap();
    let mut args = Args::new(&k);
    args.buffer("x", vec![1.0f32; 100]).unwrap();
    let e = run_ensemble_gpu(&mut cache, &k, &args, &euler(100, 64), None).unwrap_err();
    assert!(
        e.to_string().contains("not a multiple of the block size"),
        "{e}"
    );
    // A block larger than a workgroup may be.
    let limit = cache
        .context()
        .limits()
        .max_compute_invocations_per_workgroup;
    let n = 2 * limit as usize * 2;
    args.buffer("x", vec![1.0f32; n]).unwrap();
    let e = run_ensemble_gpu(&mut cache, &k, &args, &euler(n, 2 * limit), None).unwrap_err();
    assert!(
        matches!(e, EnsembleError::Ir(IrError::Unsupported { .. }))
            && e.to_string().contains("invocations per workgroup"),
        "{e}"
    );
}

/// RK4 on phases: registers and float shared elements advance together stage by
/// stage (a barrier at every stage), float flux is the b-weighted quadrature,
/// jumps and integer drives are first-stage unit flows: the CPU's flow phases.
#[test]
fn rk4_phases_agree_with_the_cpu() {
    let Some(mut cache) = common::kernel_cache("rk4_phases_agree_with_the_cpu") else {
        return;
    };
    let k = compile(
        "couple.field",
        "field couple(x: f32[]) {
            shared mean: f32[1] = 0.0;
            shared w: f32[bdim] = 0.5;
            shared cnt: u32[3] = 0;
            flux out: f32[2];
            flux hits: u32[3];
            state y = x[i], z = 0.0;
            phase gather over 2.0 {
                d(mean[0])/dt += y / f32(bdim);
                d(w[tid])/dt += -w[tid] + y * t;
                d(cnt[tid % 3])/dt += 1;
                d(y)/dt = mean[0] - y + w[(tid + 1) % bdim];
                emit out[tid % 2] += y * t + mean[0];
                emit hits[tid % 3] += cnt[tid % 3];
            }
            phase decay for k in 0..3 over (f32(k + 1)) {
                d(y)/dt = -y * f32(k) + sin(t) + init(y) * 0.1;
                z := z + w[tid];
            }
        }",
    )
    .unwrap();
    let mut args = Args::new(&k);
    args.buffer("x", common::random(512, 5)).unwrap();
    let integ = Integration::new(512, 0.0, 1.0, 1.0)
        .method(Method::Rk4)
        .block(128);
    // Same operations in the same order; a GPU compiler may contract a·b + c
    // (and computes stage times in f32): a few roundings per step of values
    // below ~10, over 8 steps.
    let (cpu, gpu) = agree(
        &mut cache,
        &k,
        &args,
        &integ,
        &|_, c| 1e-5 * c.abs().max(1.0),
        &|_, c| 1e-5 * c.abs().max(1.0) * 64.0,
    );
    assert_eq!(cpu.steps, 8);
    // The integer flux counts what the first stages drove: exactly.
    assert_eq!(gpu.fluxes[1].1, cpu.fluxes[1].1);
    // The integrator matters here: Euler lands far outside those tolerances.
    let euler_cpu = run_cpu(&k, &args, &integ.clone().method(Method::Euler)).unwrap();
    let worst = f32s(&euler_cpu.states)
        .iter()
        .zip(gpu.states.iter())
        .map(|(e, g)| (e - g).abs() / e.abs().max(1.0))
        .fold(0.0f32, f32::max);
    assert!(worst > 1e-3, "Euler and RK4 differ by only {worst}");
    // Every phased example under RK4 too.
    let k = compile_file(&examples().join("tree_sum.field")).unwrap();
    let mut args = Args::new(&k);
    let x: Vec<f32> = (0..1024).map(|i| i as f32 / 1023.0).collect();
    args.buffer("x", x).unwrap();
    args.scalar("steps", Value::U32(7)).unwrap();
    agree(
        &mut cache,
        &k,
        &args,
        &euler(1024, 128).method(Method::Rk4),
        &exact,
        &|_, c| 8.0 * c.abs() * 2.0f32.powi(-20),
    );
}
