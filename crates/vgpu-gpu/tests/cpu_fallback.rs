//! `VGPU_BACKEND=cpu`: every call runs on the CPU GEMM and is counted.
//! (Its own test binary: it sets the environment variable.)

mod common;
use vgpu_gpu::{matmul_cpu, ActiveBackend, BackendChoice, VgpuCache};

#[test]
fn vgpu_backend_cpu_counts_every_call_as_a_fallback() {
    std::env::set_var("VGPU_BACKEND", "cpu");
    let mut cache = VgpuCache::new().unwrap();
    assert_eq!(cache.choice(), BackendChoice::Cpu);
    assert_eq!(cache.backend(), ActiveBackend::Cpu);
    assert!(cache.adapter_info().is_none());
    assert!(cache.adapter_line().contains("VGPU_BACKEND=cpu"));
    for (i, &(m, k, n)) in [(16, 16, 16), (64, 64, 64), (3, 300, 2)].iter().enumerate() {
        let a = common::random(m * k, i as u64);
        let b = common::random(k * n, 10 + i as u64);
        let c = cache.matmul(&a, (m, k), &b, (k, n)).unwrap();
        let want = common::reference(&a, &b, m, k, n);
        assert!(common::rel_frobenius(&c, &want) <= 1e-5);
        assert_eq!(c, matmul_cpu(&a, (m, k), &b, (k, n)).unwrap());
    }
    let st = cache.stats();
    assert_eq!(
        (
            st.compiles,
            st.cache_hits,
            st.gpu_dispatches,
            st.cpu_fallbacks
        ),
        (0, 0, 0, 3)
    );
    assert_eq!(
        st.to_string(),
        "VGPUCache: 0 compiles, 0 cache hits, 0 GPU dispatches, 3 CPU fallbacks"
    );
    std::env::set_var("VGPU_BACKEND", "bogus");
    assert!(VgpuCache::new().is_err());
    std::env::remove_var("VGPU_BACKEND");
}
