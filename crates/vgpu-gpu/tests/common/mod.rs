//! Shared helpers of the GPU tests: the skip-or-fail rule, test data, error norms.
#![allow(dead_code)]

use vgpu_gpu::{BackendChoice, KernelCache, VgpuCache};

/// Whether CI demands a GPU (`VGPU_REQUIRE_GPU=1`): then a missing adapter fails.
pub(crate) fn gpu_required() -> bool {
    std::env::var("VGPU_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// A `VgpuCache` on the GPU, or `None` (with a printed line) when there is no
/// adapter and `VGPU_REQUIRE_GPU` is not 1.
pub(crate) fn gpu_cache(test: &str) -> Option<VgpuCache> {
    match VgpuCache::with_backend(BackendChoice::Gpu) {
        Ok(c) => Some(c),
        Err(e) if !gpu_required() => {
            println!(
                "{test}: skipped, no GPU adapter ({e}); set VGPU_REQUIRE_GPU=1 to fail instead"
            );
            None
        }
        Err(e) => panic!("{test}: VGPU_REQUIRE_GPU=1 but no GPU: {e}"),
    }
}

/// A generic `KernelCache` on the GPU, or `None` as for [`gpu_cache`].
pub(crate) fn kernel_cache(test: &str) -> Option<KernelCache> {
    match KernelCache::new() {
        Ok(c) => Some(c),
        Err(e) if !gpu_required() => {
            println!(
                "{test}: skipped, no GPU adapter ({e}); set VGPU_REQUIRE_GPU=1 to fail instead"
            );
            None
        }
        Err(e) => panic!("{test}: VGPU_REQUIRE_GPU=1 but no GPU: {e}"),
    }
}

/// Deterministic pseudo-random f32 in [-1, 1) (SplitMix64).
pub(crate) fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
    (0..len)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// The product in f64, the plain triple loop: the reference both executors are held to.
pub(crate) fn reference(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p] as f64;
            for j in 0..n {
                c[i * n + j] += x * b[p * n + j] as f64;
            }
        }
    }
    c
}

/// ‖got − want‖_F / ‖want‖_F.
pub(crate) fn rel_frobenius(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let num: f64 = got
        .iter()
        .zip(want)
        .map(|(&g, &w)| (g as f64 - w).powi(2))
        .sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    (num / den).sqrt()
}

/// ‖x − y‖_F / ‖y‖_F between two f32 results.
pub(crate) fn rel_frobenius_f32(x: &[f32], y: &[f32]) -> f64 {
    let y64: Vec<f64> = y.iter().map(|&v| v as f64).collect();
    rel_frobenius(x, &y64)
}
