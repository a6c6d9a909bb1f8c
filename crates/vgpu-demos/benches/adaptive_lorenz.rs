//! The adaptive driver beside a hand-written loop, same run: the Lorenz
//! ensemble (`f32`, `ρ = linspace(0, 21, N)`, `u0 = (1, 0, 0)`, `t ∈ [0, 1]`)
//! with Tsit5 at `rtol = atol = 1e-6`, endpoints only, trajectories over
//! rayon's pool. `vgpu_demos::lorenz_tsit5` holds both; they agree bit
//! for bit (checked here once, and in `tests/adaptive.rs`).
//!
//! `cargo bench -p vgpu-demos --bench adaptive_lorenz`. Criterion's "thrpt" is
//! trajectories per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use vgpu_demos::lorenz_tsit5::{lorenz_tsit5_driver, lorenz_tsit5_reference};
use vgpu_field::Par;

fn lorenz_tsit5(c: &mut Criterion) {
    let n = 8192;
    let sol = lorenz_tsit5_driver(n, Par::Auto).unwrap();
    let (end, stats) = lorenz_tsit5_reference(n, Par::Auto).unwrap();
    assert_eq!(sol.end, end, "driver and hand loop disagree");
    assert_eq!(sol.stats, stats);
    let steps: u64 = stats.iter().map(|s| s.accepted + s.rejected).sum();
    eprintln!(
        "N = {n}: {steps} step attempts in all ({:.1} per trajectory), {} threads",
        steps as f64 / n as f64,
        rayon::current_num_threads()
    );
    let mut g = c.benchmark_group("adaptive_lorenz_tsit5");
    g.throughput(Throughput::Elements(n as u64));
    g.sample_size(20);
    g.bench_function("hand_loop", |b| {
        b.iter(|| black_box(lorenz_tsit5_reference(black_box(n), Par::Auto).unwrap()))
    });
    g.bench_function("driver", |b| {
        b.iter(|| black_box(lorenz_tsit5_driver(black_box(n), Par::Auto).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, lorenz_tsit5);
criterion_main!(benches);
