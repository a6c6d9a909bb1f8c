//! `vgpu cache-demo`: the original VGPU kernel-cache scenario, 200 matmul calls.
//!
//! The N=16 shape (compiled on its first call, then cached), the N=64 shape (the
//! same), then the two interleaved, which proves that each shape's buffers are
//! rebound before its dispatch (a stale binding would hand one shape the other's
//! data). Every result is checked against the CPU GEMM; then the counters line.

use std::process::ExitCode;
use vgpu::gpu::{matmul_cpu, VgpuCache};

/// Calls per phase: N=16 alone, N=64 alone, then both interleaved (half each).
const PHASES: [(&str, usize); 3] = [
    ("N=16 (compile, then cached)", 50),
    ("N=64 (compile, then cached)", 50),
    ("N=16 and N=64 interleaved (rebinding)", 100),
];

/// Relative Frobenius error allowed between the GPU and the CPU (f32 sums of ≤ 64
/// products in different orders).
const TOL: f64 = 1e-5;

/// SplitMix64 → f32 in [-1, 1): fresh data for every call (only new data is uploaded).
struct Rng(u64);

impl Rng {
    fn next_f32(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    fn matrix(&mut self, len: usize) -> Vec<f32> {
        (0..len).map(|_| self.next_f32()).collect()
    }
}

fn rel_frobenius(x: &[f32], y: &[f32]) -> f64 {
    let num: f64 = x
        .iter()
        .zip(y)
        .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
        .sum();
    let den: f64 = y.iter().map(|&b| (b as f64).powi(2)).sum();
    (num / den).sqrt()
}

/// Runs the demo; exit code 1 if any result differs from the CPU's.
pub(crate) fn run() -> Result<ExitCode, vgpu::Error> {
    let mut cache = VgpuCache::new()?;
    println!("{}", cache.adapter_line());
    let mut rng = Rng(2024);
    let mut worst = 0.0f64;
    let mut failures = 0usize;
    for (phase, &(name, calls)) in PHASES.iter().enumerate() {
        let before = cache.stats();
        let mut phase_worst = 0.0f64;
        for call in 0..calls {
            let n = match phase {
                0 => 16,
                1 => 64,
                _ => [16, 64][call % 2],
            };
            let a = rng.matrix(n * n);
            let b = rng.matrix(n * n);
            let got = cache.matmul(&a, (n, n), &b, (n, n))?;
            let want = matmul_cpu(&a, (n, n), &b, (n, n))?;
            let err = rel_frobenius(&got, &want);
            phase_worst = phase_worst.max(err);
            if err.is_nan() || err > TOL {
                failures += 1;
                eprintln!(
                    "phase {}, call {call}, N={n}: relative error {err:e} > {TOL:e}",
                    phase + 1
                );
            }
        }
        let after = cache.stats();
        println!(
            "phase {}: {name}: {calls} calls, {} compiles, {} cache hits, {} GPU dispatches, {} CPU fallbacks, worst relative error vs CPU {phase_worst:.1e}",
            phase + 1,
            after.compiles - before.compiles,
            after.cache_hits - before.cache_hits,
            after.gpu_dispatches - before.gpu_dispatches,
            after.cpu_fallbacks - before.cpu_fallbacks,
        );
        worst = worst.max(phase_worst);
    }
    let st = cache.stats();
    println!(
        "uploaded {} bytes, downloaded {} bytes, compile time {:.1} ms, worst relative error vs CPU {worst:.1e}",
        st.bytes_uploaded,
        st.bytes_downloaded,
        st.compile_time.as_secs_f64() * 1e3
    );
    println!("{st}");
    if failures > 0 {
        eprintln!("{failures} results differ from the CPU's");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
