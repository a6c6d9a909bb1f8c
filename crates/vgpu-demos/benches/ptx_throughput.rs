//! PTX emulation throughput: executed thread-instructions per second for nvcc's
//! `matmul_naive` (256×256×256) and `lorenz_rk4` (N = 65536, 20 RK4 steps), each
//! beside the same computation as a VGPU Rust field measured in the same run.
//!
//! `cargo bench -p vgpu-demos --bench ptx_throughput`. Criterion's "thrpt" for the
//! PTX rows is thread-instructions/s; for the field rows it is trajectory-steps/s
//! (matmul: one fma per step; Lorenz: one RK4 step per step). `vgpu bench ptx`
//! prints the same comparison as a table.

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vgpu_demos::lorenz::{lorenz_field, LorenzProblem};
use vgpu_demos::ptx_workload::{self as workload, f32_bytes, inputs, Workload};
use vgpu_field::Par;
use vgpu_ptx::{ExecOptions, Kernel, Module};

fn module() -> Module {
    let dir = match std::env::var_os("VGPU_PTX_CASES") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../ptx-cases")),
    };
    Module::from_file(&dir.join("kernels.ptx")).expect("kernels.ptx")
}

/// One launch on fresh buffers: the buffers after it and the thread-instructions.
fn run(k: &Kernel, w: &Workload) -> (Vec<Vec<u8>>, u64) {
    let mut bufs = w.buffers.clone();
    let s = vgpu_ptx::launch(k, &w.cfg, &w.args, &mut bufs, &ExecOptions::default()).unwrap();
    (bufs, s.thread_instructions)
}

fn matmul(c: &mut Criterion) {
    let k = module().kernel("matmul_naive").unwrap();
    let n = 256usize;
    let (a, b) = (inputs(n * n, 1), inputs(n * n, 2));
    let w = workload::matmul_naive(n, &a, &b);
    let (out, instr) = run(&k, &w);
    // Same result as the field (bit for bit) — checked here, once.
    let (cf, _) = vgpu_demos::matmul_field(&a, &b, (n, n, n), Par::Auto).unwrap();
    assert_eq!(f32_bytes(&cf), out[2], "PTX and field matmul differ");
    let mut g = c.benchmark_group("matmul_256");
    g.sample_size(10);
    g.throughput(Throughput::Elements(instr));
    g.bench_function("ptx_thread_instructions", |bch| bch.iter(|| run(&k, &w)));
    g.throughput(Throughput::Elements((n * n * n) as u64));
    g.bench_function("field_trajectory_steps", |bch| {
        bch.iter(|| vgpu_demos::matmul_field(&a, &b, (n, n, n), Par::Auto).unwrap())
    });
    g.finish();
}

fn lorenz(c: &mut Criterion) {
    let k = module().kernel("lorenz_rk4").unwrap();
    let mut p = LorenzProblem::new(65536);
    p.steps = 20;
    let state: Vec<f32> = (0..p.n).flat_map(|_| p.u0).collect();
    let w = workload::lorenz_rk4(&state, &p.rho(), p.dt, p.steps);
    let (_, instr) = run(&k, &w);
    let mut g = c.benchmark_group("lorenz_65536x20");
    g.sample_size(10);
    g.throughput(Throughput::Elements(instr));
    g.bench_function("ptx_thread_instructions", |bch| bch.iter(|| run(&k, &w)));
    g.throughput(Throughput::Elements((p.n * p.steps) as u64));
    g.bench_function("field_trajectory_steps", |bch| {
        bch.iter(|| lorenz_field(&p, 256, Par::Auto).unwrap())
    });
    g.finish();
}

criterion_group!(benches, matmul, lorenz);
criterion_main!(benches);
