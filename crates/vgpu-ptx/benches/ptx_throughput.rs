//! PTX emulation throughput: executed thread-instructions per second for nvcc's
//! `matmul_naive` (256×256×256) and `lorenz_rk4` (N = 65536, 20 RK4 steps), each
//! beside the same computation as a VGPU Rust field measured in the same run.
//!
//! `cargo bench -p vgpu-ptx --bench ptx_throughput`. Criterion's "thrpt" for the
//! PTX rows is thread-instructions/s; for the field rows it is trajectory-steps/s
//! (matmul: one fma per step; Lorenz: one RK4 step per step).

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vgpu_field::lorenz::{lorenz_field, LorenzProblem};
use vgpu_field::Par;
use vgpu_ptx::{ExecOptions, KernelArg, LaunchConfig, Module};

fn module() -> Module {
    let dir = match std::env::var_os("VGPU_PTX_CASES") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/ptx-cases"
        )),
    };
    Module::from_file(&dir.join("kernels.ptx")).expect("kernels.ptx")
}

fn inputs(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        })
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn matmul(c: &mut Criterion) {
    let m = module();
    let k = m.kernel("matmul_naive").unwrap();
    let n = 256usize;
    let a = inputs(n * n, 1);
    let b = inputs(n * n, 2);
    let cfg = LaunchConfig {
        grid: [16, 16, 1],
        block: [16, 16, 1],
        shared_bytes: 0,
    };
    let args = [
        KernelArg::Buffer(0),
        KernelArg::Buffer(1),
        KernelArg::Buffer(2),
        KernelArg::S32(256),
        KernelArg::S32(256),
        KernelArg::S32(256),
    ];
    let opts = ExecOptions::default();
    let mut bufs = vec![bytes(&a), bytes(&b), vec![0u8; n * n * 4]];
    let instr = vgpu_ptx::launch(&k, &cfg, &args, &mut bufs, &opts)
        .unwrap()
        .thread_instructions;
    // Same result as the field (bit for bit) — checked here, once.
    let (cf, _) = vgpu_field::demos::matmul_field(&a, &b, (n, n, n), Par::Auto).unwrap();
    assert_eq!(bytes(&cf), bufs[2], "PTX and field matmul differ");
    let mut g = c.benchmark_group("matmul_256");
    g.sample_size(10);
    g.throughput(Throughput::Elements(instr));
    g.bench_function("ptx_thread_instructions", |bch| {
        bch.iter(|| {
            let mut bufs = vec![bytes(&a), bytes(&b), vec![0u8; n * n * 4]];
            vgpu_ptx::launch(&k, &cfg, &args, &mut bufs, &opts).unwrap()
        })
    });
    g.throughput(Throughput::Elements((n * n * n) as u64));
    g.bench_function("field_trajectory_steps", |bch| {
        bch.iter(|| vgpu_field::demos::matmul_field(&a, &b, (n, n, n), Par::Auto).unwrap())
    });
    g.finish();
}

fn lorenz(c: &mut Criterion) {
    let m = module();
    let k = m.kernel("lorenz_rk4").unwrap();
    let mut p = LorenzProblem::new(65536);
    p.steps = 20;
    let rho = p.rho();
    let state: Vec<f32> = (0..p.n).flat_map(|_| p.u0).collect();
    let cfg = LaunchConfig {
        grid: [256, 1, 1],
        block: [256, 1, 1],
        shared_bytes: 0,
    };
    let args = [
        KernelArg::Buffer(0),
        KernelArg::Buffer(1),
        KernelArg::F32(p.dt),
        KernelArg::S32(p.steps as i32),
        KernelArg::S32(p.n as i32),
    ];
    let opts = ExecOptions::default();
    let mut bufs = vec![bytes(&state), bytes(&rho)];
    let instr = vgpu_ptx::launch(&k, &cfg, &args, &mut bufs, &opts)
        .unwrap()
        .thread_instructions;
    let mut g = c.benchmark_group("lorenz_65536x20");
    g.sample_size(10);
    g.throughput(Throughput::Elements(instr));
    g.bench_function("ptx_thread_instructions", |bch| {
        bch.iter(|| {
            let mut bufs = vec![bytes(&state), bytes(&rho)];
            vgpu_ptx::launch(&k, &cfg, &args, &mut bufs, &opts).unwrap()
        })
    });
    g.throughput(Throughput::Elements((p.n * p.steps) as u64));
    g.bench_function("field_trajectory_steps", |bch| {
        bch.iter(|| lorenz_field(&p, 256, Par::Auto).unwrap())
    });
    g.finish();
}

criterion_group!(benches, matmul, lorenz);
criterion_main!(benches);
