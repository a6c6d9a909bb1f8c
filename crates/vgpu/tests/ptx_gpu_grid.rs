//! Grids with more blocks in a dimension than the adapter dispatches
//! (`max_compute_workgroups_per_dimension`, 65,535 on lavapipe) run on the GPU
//! path as a two-dimensional dispatch of the linear block index, each
//! workgroup computing its `%ctaid` from it: every block runs once with
//! CUDA's `%ctaid`/`%nctaid`, as on the interpreter, and a fault names the
//! CUDA block. A grid of more blocks than the square of the limit is refused
//! naming the limit. Skipped without an adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::{assert_same_bytes, word, Kernel};
use std::path::Path;
use vgpu::ptx::{ExecOptions, KernelArg, LaunchConfig, Module, PtxError};
use vgpu::ptx_gpu::PtxRunner;
use vgpu::BackendChoice;

/// The adapter's workgroups per dimension.
fn limit() -> u32 {
    vgpu::gpu::GpuContext::get()
        .expect("an adapter (Kernel::load checked)")
        .limits()
        .max_compute_workgroups_per_dimension
}

/// `grid` over `g` blocks of 32 threads on both backends: the same words, and
/// each block's record is its own `%ctaid`, the grid and 32 increments.
fn run_grid(kernel: &Kernel, g: [u32; 3]) {
    let blocks = g.iter().map(|&d| d as usize).product::<usize>();
    let cfg = LaunchConfig {
        grid: g.into(),
        block: [32, 1, 1].into(),
        shared_bytes: 0,
    };
    let bufs = [vec![0u8; 32 * blocks]];
    let (cpu, gpu) = kernel.on_both(&cfg, &[KernelArg::Buffer(0)], &bufs, 0);
    let names: Vec<u64> = (0..blocks as u64).collect();
    assert_same_bytes(&cpu, &gpu, 32, &names, 1);
    for b in [0, 1, blocks / 2, blocks - 1] {
        let (x, y, z) = (
            b % g[0] as usize,
            (b / g[0] as usize) % g[1] as usize,
            b / (g[0] as usize * g[1] as usize),
        );
        let rec: Vec<u32> = (0..8).map(|i| word(&gpu, 8 * b + i)).collect();
        assert_eq!(
            rec,
            [x as u32, y as u32, z as u32, g[0], g[1], g[2], 32, 32],
            "block {b}"
        );
    }
}

/// gridDim.x above the limit (70,000 on lavapipe), alone and with y and z.
#[test]
fn grids_above_the_dispatch_limit_run_every_block_once() {
    let Some(kernel) = Kernel::load("grid") else {
        return;
    };
    let gx = limit().saturating_add(4465).max(70_000);
    if gx > 1 << 20 {
        eprintln!(
            "the adapter dispatches {} workgroups per dimension: no split to test",
            limit()
        );
        return;
    }
    run_grid(&kernel, [gx, 1, 1]);
    run_grid(&kernel, [gx, 2, 3]);
    // Below the limit: dispatched as is.
    run_grid(&kernel, [1000, 3, 2]);
}

/// A module of `tests/kernels/grid.ptx`.
fn module() -> Module {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/grid.ptx");
    let text = std::fs::read_to_string(&path).expect("grid.ptx");
    Module::parse(&text, "grid.ptx").expect("parses")
}

/// The fault of a block beyond the limit names that block, as the
/// interpreter's does.
#[test]
fn a_fault_names_the_cuda_block() {
    if Kernel::load("grid").is_none() {
        return;
    }
    let gx = limit().saturating_add(4465).max(70_000);
    let which = gx - 3;
    let cfg = LaunchConfig {
        grid: [gx, 1, 1].into(),
        block: [32, 1, 1].into(),
        shared_bytes: 0,
    };
    let m = module();
    let fault = |backend| {
        let e = PtxRunner::new(backend, true)
            .launch(
                &m,
                "trap_at",
                &cfg,
                &[KernelArg::U32(which)],
                &mut [],
                &ExecOptions::default(),
            )
            .expect_err("the block traps");
        match e {
            PtxError::Fault(f) => (f.block, f.line),
            other => panic!("{backend:?}: {other}"),
        }
    };
    let cpu = fault(BackendChoice::Cpu);
    assert_eq!(cpu.0, [which, 0, 0]);
    assert_eq!(fault(BackendChoice::Gpu), cpu);
}

/// More blocks than the square of the limit: refused before dispatch, naming
/// the limit.
#[test]
fn a_grid_beyond_the_split_is_refused_naming_the_limit() {
    if Kernel::load("grid").is_none() {
        return;
    }
    let l = limit();
    if l > 1 << 20 {
        return;
    }
    let cfg = LaunchConfig {
        grid: [2 * l, l, 1].into(),
        block: [32, 1, 1].into(),
        shared_bytes: 0,
    };
    let e = PtxRunner::new(BackendChoice::Gpu, true)
        .launch(
            &module(),
            "trap_at",
            &cfg,
            &[KernelArg::U32(0)],
            &mut [],
            &ExecOptions::default(),
        )
        .expect_err("refused");
    let msg = e.to_string();
    assert!(
        msg.contains("max_compute_workgroups_per_dimension") && msg.contains(&l.to_string()),
        "{msg}"
    );
}
