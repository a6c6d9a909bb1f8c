//! NaN and infinity propagate as IEEE says, on both executors, and never hang.

mod common;
use vgpu_gpu::{BackendChoice, VgpuCache};

fn check(cache: &mut VgpuCache, m: usize, k: usize, n: usize) {
    let mut a = common::random(m * k, 1);
    let b = common::random(k * n, 2);
    // Row 0 of A holds a NaN: row 0 of C is NaN, the rest finite.
    a[0] = f32::NAN;
    // Row 1 of A holds +inf in column 0, and B's row 0 is all positive:
    // row 1 of C is +inf wherever no NaN/opposite infinity meets it.
    a[k] = f32::INFINITY;
    let mut b = b;
    for v in b.iter_mut().take(n) {
        *v = v.abs() + 0.5;
    }
    let c = cache.matmul(&a, (m, k), &b, (k, n)).unwrap();
    for j in 0..n {
        assert!(c[j].is_nan(), "{m}x{k}x{n}: C[0,{j}] = {}", c[j]);
        assert_eq!(c[n + j], f32::INFINITY, "{m}x{k}x{n}: C[1,{j}]");
    }
    for (i, v) in c.iter().enumerate().skip(2 * n) {
        assert!(v.is_finite(), "{m}x{k}x{n}: C[{}, {}] = {v}", i / n, i % n);
    }
    // inf · 0 = NaN: B's column 0 zero in row 0 makes C[1,0] NaN.
    b[0] = 0.0;
    let c = cache.matmul(&a, (m, k), &b, (k, n)).unwrap();
    assert!(
        c[n].is_nan(),
        "{m}x{k}x{n}: inf·0 must give NaN, got {}",
        c[n]
    );
}

#[test]
fn nonfinite_values_propagate_on_the_cpu() {
    let mut cache = VgpuCache::with_backend(BackendChoice::Cpu).unwrap();
    check(&mut cache, 5, 7, 3);
    check(&mut cache, 130, 132, 136);
}

#[test]
fn nonfinite_values_propagate_on_the_gpu() {
    let Some(mut cache) = common::gpu_cache("nonfinite_values_propagate_on_the_gpu") else {
        return;
    };
    check(&mut cache, 5, 7, 3); // tiled, ragged
    check(&mut cache, 130, 132, 136); // blocked, ragged
    check(&mut cache, 128, 64, 128); // blocked, aligned
}
