//! A lost device turns into CPU fallbacks, counted, with correct results; never a
//! panic. (Its own test binary: it destroys the process's shared device.)

mod common;
use vgpu_gpu::{matmul_cpu, ActiveBackend, GpuContext};

#[test]
fn a_lost_device_falls_back_to_the_cpu_and_counts_it() {
    let Some(mut cache) = common::gpu_cache("a_lost_device_falls_back_to_the_cpu_and_counts_it")
    else {
        return;
    };
    let (m, k, n) = (16, 16, 16);
    let a = common::random(m * k, 1);
    let b = common::random(k * n, 2);
    let want = matmul_cpu(&a, (m, k), &b, (k, n)).unwrap();
    let c = cache.matmul(&a, (m, k), &b, (k, n)).unwrap();
    assert!(common::rel_frobenius_f32(&c, &want) <= 1e-5);
    assert_eq!(cache.backend(), ActiveBackend::Gpu);

    let ctx = GpuContext::get().unwrap();
    ctx.destroy();
    assert!(ctx.is_lost());

    for _ in 0..3 {
        let c = cache.matmul(&a, (m, k), &b, (k, n)).unwrap();
        assert_eq!(c, want, "after the loss, results come from the CPU GEMM");
    }
    assert_eq!(cache.backend(), ActiveBackend::Cpu);
    assert!(
        cache.fallback_reason().unwrap().contains("lost"),
        "{:?}",
        cache.fallback_reason()
    );
    let st = cache.stats();
    assert_eq!(
        (st.compiles, st.gpu_dispatches, st.cpu_fallbacks),
        (1, 1, 3)
    );
    // The generic cache reports the loss as a typed error.
    let mut kc = vgpu_gpu::KernelCache::with_context(ctx);
    let spec = vgpu_gpu::KernelSpec::new("k", "@compute @workgroup_size(1) fn main() {}", "main");
    let err = kc
        .dispatch(&spec, &mut [vgpu_gpu::Binding::Scratch(4)], [1, 1, 1])
        .unwrap_err();
    assert!(
        matches!(err, vgpu_gpu::GpuError::DeviceLost { .. }),
        "{err:?}"
    );
}
