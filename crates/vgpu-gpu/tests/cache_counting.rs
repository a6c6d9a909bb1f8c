//! The cache counts: one compile per shape, hits after; interleaved shapes are
//! rebound correctly; the generic kernel cache grows buffers and checks bindings.

mod common;
use common::*;
use vgpu_gpu::{matmul_cpu, Binding, GpuError, KernelSpec};

#[test]
fn one_compile_per_shape_then_hits_and_interleaving_rebinds() {
    let Some(mut cache) = gpu_cache("one_compile_per_shape_then_hits_and_interleaving_rebinds")
    else {
        return;
    };
    let shapes = [(16usize, 16usize, 16usize), (24, 40, 8)];
    let data: Vec<_> = shapes
        .iter()
        .enumerate()
        .map(|(i, &(m, k, n))| {
            let a = random(m * k, 50 + i as u64);
            let b = random(k * n, 60 + i as u64);
            let want = matmul_cpu(&a, (m, k), &b, (k, n)).unwrap();
            (a, b, want)
        })
        .collect();
    let mut calls = 0;
    // Shape 0 three times, shape 1 three times, then alternating: each result must be
    // its own shape's product (a stale binding would return the other one's data).
    let order = [0, 0, 0, 1, 1, 1, 0, 1, 0, 1, 1, 0];
    for (step, &s) in order.iter().enumerate() {
        let (m, k, n) = shapes[s];
        let (a, b, want) = &data[s];
        let got = cache.matmul(a, (m, k), b, (k, n)).unwrap();
        calls += 1;
        let err = rel_frobenius_f32(&got, want);
        assert!(err <= 1e-5, "step {step}, shape {s}: {err:e}");
        let st = cache.stats();
        let compiles = if step < 3 { 1 } else { 2 };
        assert_eq!(st.compiles, compiles, "step {step}");
        assert_eq!(st.cache_hits, calls - compiles, "step {step}");
        assert_eq!(st.gpu_dispatches, calls, "step {step}");
    }
    let st = cache.stats();
    assert_eq!(st.cpu_fallbacks, 0);
    // Every call uploads A and B and downloads C.
    let bytes_in: u64 = order
        .iter()
        .map(|&s| {
            let (m, k, n) = shapes[s];
            4 * (m * k + k * n) as u64
        })
        .sum();
    let bytes_out: u64 = order
        .iter()
        .map(|&s| {
            let (m, _, n) = shapes[s];
            4 * (m * n) as u64
        })
        .sum();
    assert_eq!(st.bytes_uploaded, bytes_in);
    assert_eq!(st.bytes_downloaded, bytes_out);
    assert!(st.compile_time.as_nanos() > 0);
}

const SCALE: &str = "
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<uniform> p: vec4<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&x)) { y[id.x] = fma(p.x, x[id.x], y[id.x]); }
}";

#[test]
fn generic_cache_grows_buffers_and_keeps_one_compile() {
    let Some(mut cache) = kernel_cache("generic_cache_grows_buffers_and_keeps_one_compile") else {
        return;
    };
    let spec = KernelSpec::new("axpy", SCALE, "main").workgroup_size([64, 1, 1]);
    for (i, len) in [10usize, 1000, 100, 5000].into_iter().enumerate() {
        let x = random(len, i as u64);
        let mut y = random(len, 99 + i as u64);
        let y0 = y.clone();
        let p = [3.0f32, 0.0, 0.0, 0.0];
        let groups = len.div_ceil(64) as u32;
        cache
            .dispatch(
                &spec,
                &mut [
                    Binding::read(&x),
                    Binding::uniform(&p),
                    Binding::read_write(&mut y),
                ],
                [groups, 1, 1],
            )
            .unwrap();
        // Vulkan lets `fma` be fused or not (lavapipe does not fuse): accept either.
        for j in 0..len {
            let (fused, split) = (3.0f32.mul_add(x[j], y0[j]), 3.0 * x[j] + y0[j]);
            assert!(
                y[j] == fused || y[j] == split,
                "len {len}, element {j}: {}",
                y[j]
            );
        }
    }
    let st = cache.stats();
    assert_eq!((st.compiles, st.cache_hits, st.gpu_dispatches), (1, 3, 4));
    assert_eq!(cache.len(), 1);
    assert!(cache.is_compiled(&spec));
    // A different specialisation is a different key: compiled again.
    let other = spec.clone().specialisation("v2");
    assert_ne!(cache.key(&other), cache.key(&spec));
    assert!(!cache.is_compiled(&other));
}

#[test]
fn bad_wgsl_is_a_typed_compile_error() {
    let Some(mut cache) = kernel_cache("bad_wgsl_is_a_typed_compile_error") else {
        return;
    };
    let spec = KernelSpec::new("broken", "fn main( { }", "main");
    let x = [1.0f32; 4];
    let err = cache
        .dispatch(&spec, &mut [Binding::read(&x)], [1, 1, 1])
        .unwrap_err();
    match &err {
        GpuError::Compile { label, entry, .. } => {
            assert_eq!((label.as_str(), entry.as_str()), ("broken", "main"))
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
    assert!(err.to_string().contains("broken"));
    // The device still works afterwards.
    let spec = KernelSpec::new("axpy", SCALE, "main").workgroup_size([64, 1, 1]);
    let mut y = [1.0f32; 4];
    cache
        .dispatch(
            &spec,
            &mut [
                Binding::read(&x),
                Binding::uniform(&[2.0f32; 4]),
                Binding::read_write(&mut y),
            ],
            [1, 1, 1],
        )
        .unwrap();
    assert_eq!(y, [3.0; 4]);
}

#[test]
fn wrong_bindings_are_typed_errors() {
    let Some(mut cache) = kernel_cache("wrong_bindings_are_typed_errors") else {
        return;
    };
    let spec = KernelSpec::new("axpy", SCALE, "main").workgroup_size([64, 1, 1]);
    let x = [1.0f32; 4];
    let mut y = [1.0f32; 4];
    // Binding 1 declared uniform in WGSL, given as storage: the pipeline is rejected.
    let err = cache
        .dispatch(
            &spec,
            &mut [
                Binding::read(&x),
                Binding::read(&x),
                Binding::read_write(&mut y),
            ],
            [1, 1, 1],
        )
        .unwrap_err();
    assert!(matches!(err, GpuError::Compile { .. }), "{err:?}");
    // Empty and unaligned bindings.
    let spec2 = spec.clone().specialisation("other");
    let err = cache
        .dispatch(&spec2, &mut [Binding::Read(&[])], [1, 1, 1])
        .unwrap_err();
    assert!(matches!(err, GpuError::Binding { index: 0, .. }), "{err:?}");
    let err = cache
        .dispatch(&spec2, &mut [Binding::Read(&[1, 2, 3])], [1, 1, 1])
        .unwrap_err();
    assert!(err.to_string().contains("multiple of 4"), "{err}");
}
