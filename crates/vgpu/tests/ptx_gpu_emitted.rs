//! A kernel launched again on the GPU path reuses the WGSL written for it
//! (vgpu-gpu's cfg_wgsl_memo.rs): the emitter runs once per kernel, block
//! shape and options, and the launches give the interpreter's bytes. Skipped
//! without an adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::no_adapter;
use std::path::Path;
use vgpu::ptx::{ExecOptions, KernelArg, LaunchConfig, Module};
use vgpu::ptx_gpu::PtxRunner;
use vgpu::BackendChoice;

#[test]
fn a_kernel_launched_again_is_not_written_again() {
    if no_adapter() {
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/checks.ptx");
    let text = std::fs::read_to_string(&path).expect("tests/kernels/checks.ptx");
    let m = Module::parse(&text, "checks.ptx").expect("checks.ptx parses");
    let words: Vec<u8> = (0..1024u32).flat_map(|i| (7 * i).to_le_bytes()).collect();
    let opts = ExecOptions::default();
    let cfg = |threads: u32| LaunchConfig {
        grid: [1, 1, 1].into(),
        block: [threads, 1, 1].into(),
        shared_bytes: 0,
    };
    let launch = |r: &mut PtxRunner, i: u32, threads: u32| {
        let mut bufs = vec![words.clone()];
        let args = [KernelArg::Buffer(0), KernelArg::U32(i)];
        r.launch(&m, "gx_shared_tail", &cfg(threads), &args, &mut bufs, &opts)
            .expect("gx_shared_tail");
        bufs.swap_remove(0)
    };
    let mut cpu = PtxRunner::new(BackendChoice::Cpu, true);
    let mut gpu = PtxRunner::new(BackendChoice::Gpu, true);
    for (n, i) in [5u32, 900, 1023].into_iter().enumerate() {
        assert_eq!(launch(&mut gpu, i, 16), launch(&mut cpu, i, 16), "word {i}");
        assert_eq!(gpu.kernels_emitted(), 1, "after launch {}", n + 1);
    }
    // Another block shape is another kernel.
    assert_eq!(launch(&mut gpu, 7, 32), launch(&mut cpu, 7, 32));
    assert_eq!(gpu.kernels_emitted(), 2);
    assert_eq!(gpu.gpu_launches, 4);
}
