//! GPU and CPU agree (relative Frobenius error ≤ 1e-5) on random shapes: 1×1, tall,
//! wide, shapes that are not multiples of the tiles, and both kernels (tiled and
//! register-blocked). The bound: f32 sums of k ≤ 300 products of numbers in [-1, 1),
//! accumulated in different orders, differ by a few units of 2⁻²⁴·√k relative.

mod common;
use common::*;
use vgpu_gpu::{matmul_cpu, Tile};

const TOL: f64 = 1e-5;

fn check(cache: &mut vgpu_gpu::VgpuCache, m: usize, k: usize, n: usize, seed: u64) {
    let a = random(m * k, seed);
    let b = random(k * n, seed + 1);
    let gpu = cache.matmul(&a, (m, k), &b, (k, n)).unwrap();
    let cpu = matmul_cpu(&a, (m, k), &b, (k, n)).unwrap();
    let want = reference(&a, &b, m, k, n);
    let e_gpu = rel_frobenius(&gpu, &want);
    let e_cpu = rel_frobenius(&cpu, &want);
    let e_gc = rel_frobenius_f32(&gpu, &cpu);
    assert!(e_gpu <= TOL, "{m}x{k}x{n}: GPU vs f64 reference: {e_gpu:e}");
    assert!(e_cpu <= TOL, "{m}x{k}x{n}: CPU vs f64 reference: {e_cpu:e}");
    assert!(e_gc <= TOL, "{m}x{k}x{n}: GPU vs CPU: {e_gc:e}");
}

#[test]
fn tiled_kernel_agrees_on_odd_shapes() {
    let Some(mut cache) = gpu_cache("tiled_kernel_agrees_on_odd_shapes") else {
        return;
    };
    let shapes = [
        (1, 1, 1),
        (1, 7, 1),
        (300, 3, 5),  // tall
        (4, 5, 300),  // wide
        (17, 33, 19), // no multiple of 16 anywhere
        (16, 16, 16),
        (31, 1, 45),
        (64, 64, 64),
        (2, 129, 3),
    ];
    for (i, &(m, k, n)) in shapes.iter().enumerate() {
        check(&mut cache, m, k, n, 10 + i as u64);
    }
    assert_eq!(cache.stats().cpu_fallbacks, 0);
    assert_eq!(cache.stats().gpu_dispatches, shapes.len() as u64);
}

#[test]
fn blocked_kernel_agrees_aligned_and_ragged() {
    let Some(mut cache) = gpu_cache("blocked_kernel_agrees_aligned_and_ragged") else {
        return;
    };
    // m, n >= 128 with k, n multiples of 4 take the register-blocked kernel.
    for (i, &(m, k, n)) in [
        (128, 64, 128),
        (130, 132, 136),
        (129, 20, 132),
        (200, 4, 140),
    ]
    .iter()
    .enumerate()
    {
        assert!(cache
            .kernel_source(m, k, n)
            .unwrap()
            .contains("register-blocked"));
        check(&mut cache, m, k, n, 100 + i as u64);
    }
}

#[test]
fn large_tile_agrees_on_shapes_smaller_than_the_tile() {
    let Some(cache) = gpu_cache("large_tile_agrees_on_shapes_smaller_than_the_tile") else {
        return;
    };
    let mut cache = cache.with_tile(Tile::LARGE).unwrap();
    for (i, &(m, k, n)) in [(1, 4, 4), (5, 36, 260), (131, 16, 4), (257, 28, 132)]
        .iter()
        .enumerate()
    {
        let src = cache.kernel_source(m, k, n).unwrap();
        assert!(src.contains("register-blocked 128x128x8,"), "{m}x{k}x{n}");
        check(&mut cache, m, k, n, 200 + i as u64);
    }
    // K or N not a multiple of 4 falls back to the tiled kernel even with a tile set.
    assert!(cache.kernel_source(8, 6, 8).unwrap().contains("tiled"));
    check(&mut cache, 8, 6, 8, 300);
}

#[test]
fn other_tiles_agree() {
    let Some(cache) = gpu_cache("other_tiles_agree") else {
        return;
    };
    let mut cache = cache.with_tile("64x128x16x4x8".parse().unwrap()).unwrap();
    check(&mut cache, 70, 24, 68, 400);
    let mut cache = cache.with_tile("128x128x8x8x8".parse().unwrap()).unwrap();
    check(&mut cache, 140, 36, 132, 402);
    let mut cache = cache.with_tile(Tile::MEDIUM).unwrap();
    check(&mut cache, 65, 48, 132, 401);
}

#[test]
fn ndarray_views_agree_including_transposed() {
    let Some(mut cache) = gpu_cache("ndarray_views_agree_including_transposed") else {
        return;
    };
    let a = ndarray::Array2::from_shape_vec((9, 14), random(9 * 14, 7)).unwrap();
    let b = ndarray::Array2::from_shape_vec((11, 14), random(11 * 14, 8)).unwrap();
    // B is used transposed: a non-contiguous view.
    let c = cache.matmul_nd(a.view(), b.t()).unwrap();
    let want = a.dot(&b.t());
    assert_eq!(c.dim(), (9, 11));
    let err = rel_frobenius_f32(c.as_slice().unwrap(), want.as_slice().unwrap());
    assert!(err <= TOL, "{err:e}");
}
