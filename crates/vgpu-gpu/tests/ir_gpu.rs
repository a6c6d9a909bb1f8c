//! IR kernels on the GPU (lavapipe in CI): the generated WGSL agrees with the CPU
//! executor, compiles once, and reports faults. Skipped without an adapter
//! unless `VGPU_REQUIRE_GPU=1`.

mod common;

use std::path::PathBuf;
use vgpu_gpu::{run_ensemble_gpu, KernelCache};
use vgpu_ir::{compile, compile_file, run_cpu, Args, Buffer, Integration, IrError, Method};

fn cache() -> Option<KernelCache> {
    match KernelCache::new() {
        Ok(c) => Some(c),
        Err(e) => {
            assert!(
                !common::gpu_required(),
                "VGPU_REQUIRE_GPU=1 but no GPU: {e}"
            );
            eprintln!("skipped: no GPU adapter ({e})");
            None
        }
    }
}

fn lorenz() -> vgpu_ir::Kernel {
    compile_file(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/lorenz.field"))
        .unwrap()
}

#[test]
fn lorenz_gpu_agrees_with_cpu_and_compiles_once() {
    let Some(mut cache) = cache() else { return };
    let k = lorenz();
    let n = 1000;
    let rho: Vec<f32> = (0..n).map(|i| 21.0 * i as f32 / (n - 1) as f32).collect();
    let mut args = Args::new(&k);
    args.buffer("rho", rho).unwrap();
    for m in [Method::Euler, Method::Rk4] {
        let integ = Integration::new(n, 0.0, 0.3, 0.001).method(m);
        let cpu = run_cpu(&k, &args, &integ).unwrap();
        let Buffer::F32(cpu) = cpu.states else {
            panic!("f32 field")
        };
        let gpu = run_ensemble_gpu(&mut cache, &k, &args, &integ, None).unwrap();
        assert!(gpu.compiled);
        // Same operations in the same order; a GPU compiler may contract a*b+c into
        // fma and its division may differ by an ulp. Over 300 steps of a system with
        // a Lyapunov exponent below 1 (t = 0.3) those differences stay below 1e-4
        // relative to the state's scale (|u| <= 30).
        let mut worst = 0.0f32;
        for (g, c) in gpu.states.iter().zip(cpu.iter()) {
            worst = worst.max((g - c).abs() / c.abs().max(1.0));
        }
        assert!(worst <= 1e-4, "{m}: worst relative difference {worst}");
        let again = run_ensemble_gpu(&mut cache, &k, &args, &integ, None).unwrap();
        assert!(!again.compiled, "second run must hit the cache");
        assert_eq!(again.states, gpu.states, "same bits on the same device");
    }
}

#[test]
fn gpu_reports_short_buffers_and_nan() {
    let Some(mut cache) = cache() else { return };
    let k = lorenz();
    let mut args = Args::new(&k);
    args.buffer("rho", vec![1.0f32; 100]).unwrap();
    let e = run_ensemble_gpu(
        &mut cache,
        &k,
        &args,
        &Integration::new(128, 0.0, 0.01, 0.001),
        None,
    )
    .unwrap_err();
    let s = e.to_string();
    assert!(
        s.contains("buffer `rho` has 100 elements") && s.contains("lorenz.field:"),
        "{s}"
    );
    let k = compile(
        "blow.field",
        "field blow(a: f32[]) { state y = 0.0; d(y)/dt = log(a[i] - 1.0); }",
    )
    .unwrap();
    let mut args = Args::new(&k);
    args.buffer("a", vec![3.0f32, 0.5, 3.0, 3.0]).unwrap();
    let e = run_ensemble_gpu(
        &mut cache,
        &k,
        &args,
        &Integration::new(4, 0.0, 1.0, 0.5),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            vgpu_gpu::EnsembleError::Ir(IrError::NonFinite { trajectory: 1, .. })
        ),
        "{e}"
    );
}

#[test]
fn fused_relu_and_bias_add_match_the_cpu() {
    let x: Vec<f32> = (0..1000)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.125)
        .collect();
    let b: Vec<f32> = (0..10).map(|i| i as f32 * 0.5 - 2.0).collect();
    let relu_cpu = vgpu_gpu::fused::relu(&x, None).unwrap();
    let bias_cpu = vgpu_gpu::fused::bias_add(&x, &b, None).unwrap();
    for i in 0..1000 {
        assert_eq!(relu_cpu[i], x[i].max(0.0));
        assert_eq!(bias_cpu[i], x[i] + b[i % 10]);
    }
    assert!(vgpu_gpu::fused::bias_add(&x[..999], &b, None).is_err());
    let Some(mut cache) = cache() else { return };
    // Exact on the GPU too: max and one addition round the same everywhere.
    assert_eq!(
        vgpu_gpu::fused::relu(&x, Some(&mut cache)).unwrap(),
        relu_cpu
    );
    assert_eq!(
        vgpu_gpu::fused::bias_add(&x, &b, Some(&mut cache)).unwrap(),
        bias_cpu
    );
    let compiled = cache.len();
    vgpu_gpu::fused::relu(&x[..500], Some(&mut cache)).unwrap();
    assert_eq!(
        cache.len(),
        compiled,
        "another shape reuses the compiled kernel"
    );
}

/// One block of the launch is one workgroup: `tid`, `bid`, `bdim` and `gdim`
/// read on the GPU what they read on the CPU, whatever `--block` is; a block
/// beyond the device's invocations per workgroup is refused for a kernel that
/// reads them, naming the limit and `--block`, and shrunk for one that doesn't.
#[test]
fn block_builtins_follow_the_launch_block() {
    let Some(mut cache) = cache() else { return };
    let k = compile(
        "blocks.field",
        "field blocks() { state a = 0.0; state b = 0.0; \
         d(a)/dt = f32(tid) + 1000.0 * f32(bid); d(b)/dt = f32(bdim) + 1000.0 * f32(gdim); }",
    )
    .unwrap();
    let args = Args::new(&k);
    for block in [32u32, 64, 256] {
        let integ = Integration::new(1000, 0.0, 1.0, 1.0)
            .method(Method::Euler)
            .block(block);
        let Buffer::F32(cpu) = run_cpu(&k, &args, &integ).unwrap().states else {
            panic!("f32 field")
        };
        let gpu = run_ensemble_gpu(&mut cache, &k, &args, &integ, None).unwrap();
        assert_eq!(gpu.states[..], cpu[..], "block {block}");
        // Trajectory 3·block + 3 is thread 3 of block 3: one Euler step of dt = 1.
        let j = 3 * block as usize + 3;
        assert_eq!(gpu.states[2 * j], 3003.0, "block {block}: trajectory {j}");
    }
    let max = cache
        .context()
        .limits()
        .max_compute_invocations_per_workgroup;
    let too_big = Integration::new(64, 0.0, 1.0, 1.0)
        .method(Method::Euler)
        .block(2 * max);
    let e = run_ensemble_gpu(&mut cache, &k, &args, &too_big, None).unwrap_err();
    let s = e.to_string();
    assert!(
        s.contains(&format!("allows {max} invocations")) && s.contains("--block"),
        "{s}"
    );
    assert!(e.cpu_can_run(), "auto falls back to the CPU: {s}");
    // Lorenz reads no block builtin: the same block runs, in workgroups the device allows.
    let lorenz = lorenz();
    let mut args = Args::new(&lorenz);
    args.buffer("rho", vec![28.0f32; 64]).unwrap();
    let small = Integration::new(64, 0.0, 0.1, 0.01);
    let want = run_ensemble_gpu(&mut cache, &lorenz, &args, &small, None).unwrap();
    let big = run_ensemble_gpu(
        &mut cache,
        &lorenz,
        &args,
        &small.clone().block(2 * max),
        None,
    )
    .unwrap();
    assert_eq!(big.states, want.states);
}

/// `--kernel-time` measures the kernel on the GPU's clock where the device has
/// timestamp queries (lavapipe and NVIDIA's Vulkan driver do): the shortest
/// pass, which is positive and no longer than the whole host-to-host run that
/// also uploads, compiles and downloads.
#[test]
fn kernel_time_is_the_devices_clock() {
    let Some(mut cache) = cache() else { return };
    let k = lorenz();
    let n = 4096;
    let mut args = Args::new(&k);
    args.buffer("rho", vec![28.0f32; n]).unwrap();
    let integ = Integration::new(n, 0.0, 0.2, 0.001);
    let r = run_ensemble_gpu(&mut cache, &k, &args, &integ, Some(3)).unwrap();
    let kt = r.kernel_time.expect("asked for");
    eprintln!(
        "timestamps: {}, kernel {kt:?}, end to end {:?}",
        cache.context().has_timestamps(),
        r.end_to_end
    );
    assert!(
        !kt.is_zero() && kt <= r.end_to_end,
        "{kt:?} vs {:?}",
        r.end_to_end
    );
    if cache.adapter().name.contains("llvmpipe") {
        assert!(
            cache.context().has_timestamps(),
            "lavapipe offers TIMESTAMP_QUERY"
        );
    }
}
