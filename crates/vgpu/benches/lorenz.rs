//! Criterion: the Lorenz ensemble through the field API beside the hand-written
//! Rust + rayon loops (scalar per trajectory, 16-lane chunks).
//! `cargo bench -p vgpu --bench lorenz`; `VGPU_BENCH_N` sets N (default 65536).
//! Throughput is reported in trajectory-steps per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vgpu::demos::lorenz::{lorenz_field, lorenz_reference, lorenz_reference_lanes, LorenzProblem};
use vgpu::field::Par;

fn lorenz(c: &mut Criterion) {
    let n = std::env::var("VGPU_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(65_536);
    let p = LorenzProblem::new(n);
    let mut g = c.benchmark_group(format!("lorenz_n{n}"));
    g.sample_size(10);
    g.throughput(Throughput::Elements((p.n * p.steps) as u64));
    g.bench_function("field_api", |b| {
        b.iter(|| lorenz_field(&p, 256, Par::Auto).expect("field run"))
    });
    g.bench_function("hand_written_scalar", |b| {
        b.iter(|| lorenz_reference(&p, Par::Auto).expect("reference run"))
    });
    g.bench_function("hand_written_lanes", |b| {
        b.iter(|| lorenz_reference_lanes(&p, Par::Auto).expect("reference run"))
    });
    g.finish();
}

criterion_group!(benches, lorenz);
criterion_main!(benches);
