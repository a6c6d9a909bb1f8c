//! Whether the device makes stray storage-buffer accesses harmless
//! (`GpuContext::robust_buffers`: Vulkan's `robustBufferAccess2`), read from
//! the Vulkan device wgpu made: lavapipe has it, so CI's compiled PTX
//! kernels drop naga's buffer clamps there, as wgpu's own shaders do; other
//! backends never claim it. Skipped without an adapter unless
//! `VGPU_REQUIRE_GPU=1`.

mod common;

#[test]
fn robust_buffers_are_vulkans_robust_buffer_access_2() {
    let Some(cache) = common::kernel_cache("robust_buffers") else {
        return;
    };
    let ctx = cache.context();
    let a = ctx.adapter();
    if a.name.contains("llvmpipe") {
        assert!(
            ctx.robust_buffers(),
            "lavapipe has robustBufferAccess2: {a:?}"
        );
    }
    if a.backend != "Vulkan" {
        assert!(!ctx.robust_buffers(), "{a:?}");
    }
}
