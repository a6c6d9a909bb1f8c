//! The fused kernels of `VgpuCache` (relu, bias_add, softmax, matmul_bias_relu):
//! values against plain Rust references, GPU (lavapipe in CI) against CPU,
//! non-finite values, compile counting, bad input.

mod common;

use common::{gpu_cache, random, reference};
use vgpu_gpu::{BackendChoice, GpuError, VgpuCache};

fn cpu_cache() -> VgpuCache {
    VgpuCache::with_backend(BackendChoice::Cpu).unwrap()
}

/// Softmax of each row in f64, the textbook way: `exp(x − max) / Σ exp(x − max)`,
/// NaN propagating through the max as numpy's does.
fn softmax_reference(x: &[f32], cols: usize) -> Vec<f64> {
    x.chunks(cols)
        .flat_map(|row| {
            let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| {
                if m.is_nan() || v.is_nan() {
                    f64::NAN
                } else {
                    m.max(v as f64)
                }
            });
            let e: Vec<f64> = row.iter().map(|&v| (v as f64 - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(move |v| v / s).collect::<Vec<_>>()
        })
        .collect()
}

/// Equal as IEEE values with a relative tolerance: both NaN, or both the same
/// infinity, or |got − want| ≤ rtol·|want| + atol.
fn assert_close(what: &str, got: &[f32], want: &[f64], rtol: f64, atol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let g = g as f64;
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= rtol * w.abs() + atol;
        assert!(ok, "{what}: element {i}: got {g}, want {w}");
    }
}

/// Rows that exercise the online softmax: ordinary values, large values (a
/// plain `exp` would overflow), `−∞` first and in the middle, a row of only
/// `−∞`, a NaN, a `+∞`, a single large outlier.
fn softmax_cases() -> (Vec<f32>, usize) {
    let cols = 7;
    let inf = f32::INFINITY;
    let mut x = random(5 * cols, 11);
    x.extend([1000.0, 1001.0, 999.5, 1000.25, 998.0, 1003.0, 1000.0]);
    x.extend([-inf, 0.5, -inf, 2.0, -1.0, -inf, 0.0]);
    x.extend([-inf; 7]);
    x.extend([0.0, 1.0, f32::NAN, 2.0, 3.0, 4.0, 5.0]);
    x.extend([0.0, 1.0, 2.0, inf, 3.0, 4.0, 5.0]);
    x.extend([-80.0, -90.0, 80.0, -100.0, -70.0, 0.0, -3.0e4]);
    (x, cols)
}

#[test]
fn softmax_matches_the_textbook_formula_on_cpu_and_gpu() {
    let (x, cols) = softmax_cases();
    let rows = x.len() / cols;
    let want = softmax_reference(&x, cols);
    // Online vs two-pass: a few roundings per column (exp, the rescaling);
    // 1e-5 relative covers seven columns with a wide margin.
    let cpu = cpu_cache().softmax(&x, (rows, cols)).unwrap();
    assert_close("softmax cpu", &cpu, &want, 1e-5, 1e-12);
    // The row of only −∞, the NaN row and the +∞ row are NaN throughout.
    for r in [7, 8, 9] {
        assert!(cpu[r * cols..(r + 1) * cols].iter().all(|v| v.is_nan()));
    }
    let Some(mut gpu) = gpu_cache("softmax") else {
        return;
    };
    let on_gpu = gpu.softmax(&x, (rows, cols)).unwrap();
    // The GPU's exp may differ from the CPU's by a few ulp.
    assert_close("softmax gpu", &on_gpu, &want, 1e-5, 1e-12);
}

#[test]
fn wide_softmax_rows_sum_to_one() {
    let (rows, cols) = (33, 1000);
    let x: Vec<f32> = random(rows * cols, 5).iter().map(|v| v * 30.0).collect();
    let want = softmax_reference(&x, cols);
    let cpu = cpu_cache().softmax(&x, (rows, cols)).unwrap();
    // A thousand online rescalings: the error grows with the row length.
    assert_close("softmax 33x1000 cpu", &cpu, &want, 1e-4, 1e-10);
    if let Some(mut gpu) = gpu_cache("wide softmax") {
        let g = gpu.softmax(&x, (rows, cols)).unwrap();
        assert_close("softmax 33x1000 gpu", &g, &want, 1e-4, 1e-10);
    }
}

#[test]
fn relu_and_bias_add_are_exact_and_pass_nan_through() {
    let (rows, cols) = (9, 13);
    let mut x = random(rows * cols, 3);
    x[4] = f32::NAN;
    x[5] = f32::NEG_INFINITY;
    x[6] = f32::INFINITY;
    let bias = random(cols, 4);
    let relu_want: Vec<f64> = x
        .iter()
        .map(|&v| {
            if v.is_nan() {
                f64::NAN
            } else {
                v.max(0.0) as f64
            }
        })
        .collect();
    let bias_want: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| (v + bias[i % cols]) as f64)
        .collect();
    let mut caches = vec![cpu_cache()];
    caches.extend(gpu_cache("relu and bias_add"));
    for mut c in caches {
        let what = c.backend();
        // One rounding (or none): exact on both backends.
        assert_close(
            &format!("relu {what}"),
            &c.relu(&x).unwrap(),
            &relu_want,
            0.0,
            0.0,
        );
        let got = c.bias_add(&x, (rows, cols), &bias).unwrap();
        assert_close(&format!("bias_add {what}"), &got, &bias_want, 0.0, 0.0);
    }
}

fn matmul_bias_relu_reference(
    a: &[f32],
    w: &[f32],
    bias: &[f32],
    m: usize,
    k: usize,
    n: usize,
) -> Vec<f64> {
    reference(a, w, m, k, n)
        .iter()
        .enumerate()
        .map(|(i, &v)| (v + bias[i % n] as f64).max(0.0))
        .collect()
}

#[test]
fn matmul_bias_relu_matches_the_reference_on_both_kernels() {
    // 37×53×29: the tiled kernel (odd sizes); 130×64×132: the register-blocked one.
    for (m, k, n) in [(37, 53, 29), (130, 64, 132)] {
        let a = random(m * k, 1);
        let w = random(k * n, 2);
        let bias = random(n, 3);
        let want = matmul_bias_relu_reference(&a, &w, &bias, m, k, n);
        // f32 accumulation over k terms of size ≤ 1: k·2⁻²⁴ relative to the
        // row's magnitude; 1e-5 absolute is far above it and far below 1/k.
        let cpu = cpu_cache()
            .matmul_bias_relu(&a, (m, k), &w, (k, n), &bias)
            .unwrap();
        assert_close(&format!("{m}x{k}x{n} cpu"), &cpu, &want, 0.0, 1e-5);
        assert!(cpu.contains(&0.0) && cpu.iter().any(|&v| v > 0.0));
        if let Some(mut gpu) = gpu_cache("matmul_bias_relu") {
            let g = gpu.matmul_bias_relu(&a, (m, k), &w, (k, n), &bias).unwrap();
            assert_close(&format!("{m}x{k}x{n} gpu"), &g, &want, 0.0, 1e-5);
        }
    }
}

#[test]
fn each_kernel_compiles_once_and_is_counted() {
    let Some(mut gpu) = gpu_cache("fused counting") else {
        return;
    };
    let x = random(6 * 4, 9);
    let bias = random(4, 8);
    gpu.relu(&x).unwrap();
    assert_eq!(gpu.stats().compiles, 1);
    // Another shape, the same kernel: sizes travel in launch words.
    gpu.relu(&x[..10]).unwrap();
    gpu.bias_add(&x, (6, 4), &bias).unwrap();
    gpu.bias_add(&x, (6, 4), &bias).unwrap();
    gpu.softmax(&x, (6, 4)).unwrap(); // row scan + normalisation: two kernels
    gpu.softmax(&x, (3, 8)).unwrap();
    let s = gpu.stats();
    assert_eq!((s.compiles, s.cache_hits, s.gpu_dispatches), (4, 4, 8));
    // matmul_bias_relu: one kernel per shape, apart from the plain matmul's.
    let w = random(4 * 5, 7);
    let b5 = random(5, 6);
    for _ in 0..3 {
        gpu.matmul_bias_relu(&x, (6, 4), &w, (4, 5), &b5).unwrap();
    }
    gpu.matmul(&x, (6, 4), &w, (4, 5)).unwrap();
    gpu.matmul_bias_relu(&x[..12], (3, 4), &w, (4, 5), &b5)
        .unwrap();
    let s = gpu.stats();
    assert_eq!((s.compiles, s.cache_hits, s.cpu_fallbacks), (7, 6, 0));
    assert!(s.bytes_uploaded > 0 && s.bytes_downloaded > 0);
}

#[test]
fn the_cpu_backend_counts_fallbacks_and_compiles_nothing() {
    let mut c = cpu_cache();
    let x = random(12, 1);
    c.relu(&x).unwrap();
    c.bias_add(&x, (3, 4), &x[..4]).unwrap();
    c.softmax(&x, (3, 4)).unwrap();
    c.matmul_bias_relu(&x, (3, 4), &x, (4, 3), &x[..3]).unwrap();
    let s = c.stats();
    assert_eq!((s.compiles, s.gpu_dispatches, s.cpu_fallbacks), (0, 0, 4));
}

#[test]
fn bad_shapes_are_typed_errors_naming_the_shapes() {
    let mut c = cpu_cache();
    let x = random(12, 1);
    let msg = |e: GpuError| e.to_string();
    let e = c.bias_add(&x, (3, 4), &x[..3]).unwrap_err();
    assert!(matches!(e, GpuError::FusedShape { op: "bias_add", .. }));
    assert!(msg(e).contains("the bias has 3 elements but the matrix has 4 columns"));
    let e = c.bias_add(&x, (4, 4), &x[..4]).unwrap_err();
    assert!(
        msg(e).contains("4×4 needs 16"),
        "data not filling the shape"
    );
    let e = c.softmax(&x, (0, 4)).unwrap_err();
    assert!(msg(e).contains("empty (0×4)"));
    let e = c.softmax(&x, (5, 4)).unwrap_err();
    assert!(msg(e).contains("12 elements but its stated shape 5×4 needs 20"));
    assert!(matches!(
        c.relu(&[]).unwrap_err(),
        GpuError::FusedShape { op: "relu", .. }
    ));
    let e = c
        .matmul_bias_relu(&x, (3, 4), &x, (3, 4), &x[..4])
        .unwrap_err();
    assert!(matches!(
        e,
        GpuError::ShapeMismatch {
            a: (3, 4),
            b: (3, 4)
        }
    ));
    let e = c
        .matmul_bias_relu(&x, (3, 4), &x, (4, 3), &x[..4])
        .unwrap_err();
    assert!(msg(e).contains("bias has 4 elements but the matrix has 3 columns"));
    let e = c
        .matmul_bias_relu(&x, (3, 4), &x[..11], (4, 3), &x[..3])
        .unwrap_err();
    assert!(matches!(e, GpuError::DataLength { operand: "B", .. }));
    // Nothing ran.
    assert_eq!(c.stats().cpu_fallbacks, 0);
}

#[test]
fn a_jump_kernel_reading_out_of_range_is_an_error_on_both_backends() {
    use vgpu_gpu::fused::jumps::JumpKernel;
    use vgpu_ir::{Args, Value};
    let k = JumpKernel::new(
        "shift",
        "field shift(x: f32[], by: u32) { state y = 0.0; y := x[i + by]; }",
    )
    .unwrap();
    let mut args = Args::new(&k.kernel);
    args.buffer("x", vec![1.0f32, 2.0, 3.0, 4.0])
        .unwrap()
        .scalar("by", Value::U32(1))
        .unwrap();
    // Three trajectories stay in range; the fourth reads x[4].
    assert_eq!(k.run_cpu(&args, 3, 1).unwrap(), [2.0, 3.0, 4.0]);
    let e = k.run_cpu(&args, 4, 1).unwrap_err().to_string();
    assert!(e.contains("shift") && e.contains('4'), "{e}");
    if let Some(mut cache) = common::kernel_cache("jump kernel fault") {
        assert_eq!(k.run_gpu(&mut cache, &args, 3, 1).unwrap(), [2.0, 3.0, 4.0]);
        let e = k.run_gpu(&mut cache, &args, 4, 1).unwrap_err().to_string();
        assert!(e.contains("read index 4 out of range (trajectory 3"), "{e}");
    }
}

/// A jump kernel's CPU path and a phased `.field` with the same jumps both run
/// through the field engine's one phased launch (`PhasedLaunch::run_flow`,
/// `RegisterUpdate::Jump`), from two front ends (the jump kernel's evaluator of
/// an unphased field, the IR's phased kernel): the same bits, under Euler and
/// RK4 (jumps are exact unit flows under any method), with a held state, `t`
/// and a partial last block on the jump side (320 = 256 + 64).
#[test]
fn a_jump_kernel_on_the_cpu_equals_the_same_jumps_as_a_phased_field_bit_for_bit() {
    use vgpu_field::Method;
    use vgpu_gpu::fused::jumps::JumpKernel;
    use vgpu_ir::{compile, run_cpu, Args, Buffer, Integration, Value};
    let (n, cols) = (320usize, 7usize);
    let states = "state m = -1.0 / 0.0, s = 0.0, h = 2.5;";
    let body = "let v = x[i * cols + min(u32(t), cols - 1u)] * h + f32(i % 3u);
        let mn = max(m, v);
        m := mn;
        s := s * select(m == mn, 1.0, exp(m - mn)) + exp(v - mn) + t * 0.125;";
    let jump = JumpKernel::new(
        "scan",
        &format!("field scan(x: f32[], cols: u32) {{ {states} {body} }}"),
    )
    .unwrap();
    let phased = compile(
        "scan_phased.field",
        &format!(
            "field scan(x: f32[], cols: u32) {{ {states} phase rows over f32(cols) {{ {body} }} }}"
        ),
    )
    .unwrap();
    let x: Vec<f32> = (0..n * cols)
        .map(|j| ((j * 37 % 101) as f32 - 50.0) / 16.0)
        .collect();
    let args_of = |k: &vgpu_ir::Kernel| {
        let mut a = Args::new(k);
        a.buffer("x", x.clone())
            .unwrap()
            .scalar("cols", Value::U32(cols as u32))
            .unwrap();
        a
    };
    let got = jump.run_cpu(&args_of(&jump.kernel), n, cols).unwrap();
    assert_eq!(got.len(), n * 3);
    // Not a trivial result: held h, every row's own max and sum.
    assert!(got.chunks(3).all(|r| r[1] > 1.0 && r[2] == 2.5));
    assert!(got.chunks(3).any(|r| r[0] != got[0]));
    let args = args_of(&phased);
    for method in [Method::Euler, Method::Rk4] {
        let integ = Integration::new(n, 0.0, 0.0, 1.0).block(64).method(method);
        let out = run_cpu(&phased, &args, &integ).unwrap();
        let Buffer::F32(want) = &out.states else {
            panic!("f32 states expected, got {:?}", out.states)
        };
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(want), "{method:?}");
    }
}
