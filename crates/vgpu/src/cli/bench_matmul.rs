//! `vgpu bench matmul`: square f32 matmul, host arrays in and host arrays out.
//!
//! Reports the first call (kernel compile, buffer allocation, upload, dispatch,
//! readback) apart from the cached calls (median), and, with `--device-side`, the
//! GPU time of one matmul measured over many dispatches in one submission without
//! readback.

use clap::{Args, ValueEnum};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use vgpu::gpu::{matmul_cpu, BackendChoice, Tile, VgpuCache};

/// Which executor to benchmark.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum BackendArg {
    /// `VGPU_BACKEND`, default auto.
    Auto,
    /// The GPU (an error if there is none).
    Gpu,
    /// The CPU GEMM fallback.
    Cpu,
}

/// Options of `vgpu bench matmul`.
#[derive(Debug, Args)]
pub(crate) struct MatmulArgs {
    /// Matrix size: C(N×N) = A(N×N)·B(N×N).
    #[arg(long)]
    n: usize,
    /// Executor (default: `VGPU_BACKEND`, else auto).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Wall-time budget for the cached calls, in seconds.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Also time the GPU alone: `--iters` dispatches in one submission, no readback.
    #[arg(long)]
    device_side: bool,
    /// Dispatches for `--device-side`.
    #[arg(long, default_value_t = 20)]
    iters: u32,
    /// Register-blocked tile BMxBNxBKxTMxTN (default: chosen by size).
    #[arg(long)]
    tile: Option<String>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn data(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Runs the benchmark.
pub(crate) fn run(args: MatmulArgs) -> Result<ExitCode, vgpu::Error> {
    let n = args.n;
    if n == 0 {
        return Err(vgpu::Error::Usage("--n must be positive".into()));
    }
    let choice = match args.backend {
        None => BackendChoice::from_env()?,
        Some(BackendArg::Auto) => BackendChoice::Auto,
        Some(BackendArg::Gpu) => BackendChoice::Gpu,
        Some(BackendArg::Cpu) => BackendChoice::Cpu,
    };
    let t_init = Instant::now();
    let mut cache = VgpuCache::with_backend(choice)?;
    if let Some(t) = &args.tile {
        cache = cache.with_tile(t.parse::<Tile>().map_err(vgpu::gpu::GpuError::from)?)?;
    }
    let init_s = t_init.elapsed().as_secs_f64();
    let a = data(n * n, 1);
    let b = data(n * n, 2);
    let mut c = vec![0.0f32; n * n];
    let mut call = |c: &mut [f32]| -> Result<(), vgpu::Error> {
        cache.matmul_into(&a, (n, n), &b, (n, n), c)?;
        Ok(())
    };
    let t = Instant::now();
    call(&mut c)?;
    let first_call_s = t.elapsed().as_secs_f64();
    let budget = Duration::from_secs_f64(args.seconds.max(0.0));
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 5 || (start.elapsed() < budget && times.len() < 100_000) {
        let t = Instant::now();
        call(&mut c)?;
        times.push(t.elapsed().as_secs_f64());
    }
    let calls = times.len();
    let per_call_s = median(times);
    let gflops = 2.0 * (n as f64).powi(3) / per_call_s / 1e9;
    // Check the last result against the CPU fallback (`faer`).
    let want = matmul_cpu(&a, (n, n), &b, (n, n))?;
    let num: f64 = c
        .iter()
        .zip(&want)
        .map(|(&x, &y)| (x as f64 - y as f64).powi(2))
        .sum();
    let den: f64 = want.iter().map(|&y| (y as f64).powi(2)).sum();
    let rel_err = (num / den).sqrt();
    let device_s = if args.device_side {
        Some(
            cache
                .time_matmul_device(&a, (n, n), &b, (n, n), args.iters)?
                .as_secs_f64(),
        )
    } else {
        None
    };
    let backend = cache.backend().to_string();
    let adapter = cache
        .adapter_info()
        .map(|a| a.to_string())
        .unwrap_or_else(|| format!("none ({})", cache.fallback_reason().unwrap_or("CPU")));
    let stats = cache.stats();
    if args.json {
        let mut obj = serde_json::json!({
            "n": n,
            "backend": backend,
            "adapter": adapter,
            "first_call_s": first_call_s,
            "per_call_s": per_call_s,
            "gflops": gflops,
            "calls": calls,
            "init_s": init_s,
            "rel_err_vs_cpu": rel_err,
            "compiles": stats.compiles,
            "cache_hits": stats.cache_hits,
            "cpu_fallbacks": stats.cpu_fallbacks,
            "compile_s": stats.compile_time.as_secs_f64(),
        });
        if let Some(t) = &args.tile {
            obj["tile"] = serde_json::json!(t);
        }
        if let Some(d) = device_s {
            obj["device_s"] = serde_json::json!(d);
            obj["device_iters"] = serde_json::json!(args.iters);
            obj["device_tflops"] = serde_json::json!(2.0 * (n as f64).powi(3) / d / 1e12);
        }
        println!("{obj}");
    } else {
        println!("adapter: {adapter}");
        println!("matmul N={n}, backend {backend}: init {:.3} s", init_s);
        println!(
            "first call {:.3} ms (compile {:.3} ms); cached calls: median {:.3} µs over {calls} calls = {gflops:.2} GFLOP/s",
            first_call_s * 1e3,
            stats.compile_time.as_secs_f64() * 1e3,
            per_call_s * 1e6
        );
        println!("relative Frobenius error vs CPU GEMM: {rel_err:.1e}");
        if let Some(d) = device_s {
            println!(
                "device-side: {:.3} ms per matmul over {} dispatches = {:.2} TFLOP/s",
                d * 1e3,
                args.iters,
                2.0 * (n as f64).powi(3) / d / 1e12
            );
        }
        println!("{stats}");
    }
    Ok(ExitCode::SUCCESS)
}
