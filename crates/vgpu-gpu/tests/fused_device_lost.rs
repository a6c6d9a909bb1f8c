//! The fused kernels after a lost device: CPU fallbacks, counted, with the
//! CPU's results. (Its own test binary: it destroys the process's shared device.)

mod common;
use vgpu_gpu::{ActiveBackend, BackendChoice, GpuContext, VgpuCache};

#[test]
fn fused_kernels_fall_back_to_the_cpu_after_a_device_loss() {
    let Some(mut gpu) = common::gpu_cache("fused kernels after a device loss") else {
        return;
    };
    let mut cpu = VgpuCache::with_backend(BackendChoice::Cpu).unwrap();
    let x = common::random(6 * 4, 1);
    let w = common::random(4 * 5, 2);
    let b = common::random(5, 3);
    gpu.softmax(&x, (6, 4)).unwrap();
    let before = gpu.stats();
    GpuContext::get().unwrap().destroy();
    // The same bits as the CPU backend: after the loss everything runs there.
    assert_eq!(gpu.relu(&x).unwrap(), cpu.relu(&x).unwrap());
    assert_eq!(
        gpu.softmax(&x, (6, 4)).unwrap(),
        cpu.softmax(&x, (6, 4)).unwrap()
    );
    assert_eq!(
        gpu.matmul_bias_relu(&x, (6, 4), &w, (4, 5), &b).unwrap(),
        cpu.matmul_bias_relu(&x, (6, 4), &w, (4, 5), &b).unwrap()
    );
    assert_eq!(gpu.backend(), ActiveBackend::Cpu);
    let s = gpu.stats();
    assert_eq!(
        (s.compiles, s.gpu_dispatches, s.cpu_fallbacks),
        (before.compiles, before.gpu_dispatches, 3)
    );
}
