//! A launch run as slices (`Integration::slice`, `AdaptiveRun::slice`) gives
//! each trajectory the bits the whole launch gives it: the kernel sees the
//! global `i`, `bid`, `tid`, `n` and `gdim`, reads buffers at global indices,
//! and faults name global trajectories.

use vgpu_field::adaptive::{AdaptiveEnsemble, AdaptiveMethod};
use vgpu_ir::adaptive::{run_adaptive_cpu, AdaptiveRun};
use vgpu_ir::{compile, run_cpu, Args, Buffer, Integration, Method, Slice};

/// Every launch value in the rates and the initial state.
const INDEXED: &str = "field indexed(p: f32[]) {
    state x = f32(i) + 0.5 * f32(n), y = f32(bid * 1000u + tid), z = f32(gdim);
    d(x)/dt = p[i] * x - f32(n) * 0.001;
    d(y)/dt = sin(y) + f32(bdim);
    d(z)/dt = z * 0.1 + f32(tid);
}";

fn rows(b: &Buffer, lo: usize, hi: usize, dim: usize) -> Vec<f64> {
    (lo * dim..hi * dim).map(|j| b.get(j).as_f64()).collect()
}

/// Slices at block boundaries: (first, n) of each, covering 0..total.
fn cover(total: usize, block: usize, parts: usize) -> Vec<(usize, usize)> {
    let blocks = total.div_ceil(block);
    (0..parts)
        .map(|r| {
            let lo = (blocks * r / parts * block).min(total);
            let hi = (blocks * (r + 1) / parts * block).min(total);
            (lo, hi - lo)
        })
        .collect()
}

#[test]
fn fixed_step_slices_equal_the_whole_launch() {
    let k = compile("indexed.field", INDEXED).unwrap();
    let total = 1000;
    let mut args = Args::new(&k);
    let p: Vec<f32> = (0..total).map(|j| -(j as f32) / 700.0).collect();
    args.buffer("p", p).unwrap();
    let whole_integ = Integration::new(total, 0.0, 0.5, 0.01).block(64);
    let whole = run_cpu(&k, &args, &whole_integ).unwrap();
    for parts in [2, 3, 7] {
        for (first, n) in cover(total, 64, parts) {
            let integ = Integration::new(n, 0.0, 0.5, 0.01)
                .block(64)
                .slice(Slice { first, total });
            let s = run_cpu(&k, &args, &integ).unwrap();
            assert_eq!(s.n, n);
            assert_eq!(
                rows(&s.states, 0, n, 3),
                rows(&whole.states, first, first + n, 3),
                "slice {first}+{n} of {parts}"
            );
        }
    }
}

#[test]
fn phased_slices_equal_the_whole_launch() {
    let src = include_str!("../../../examples/barrier_reverse.field");
    let k = compile("barrier_reverse.field", src).unwrap();
    let total = 512;
    let mut args = Args::new(&k);
    args.buffer("x", (0..total).map(|j| j as f32).collect::<Vec<_>>())
        .unwrap();
    let integ = |n| {
        Integration::new(n, 0.0, 1.0, 1.0)
            .method(Method::Euler)
            .block(64)
    };
    let whole = run_cpu(&k, &args, &integ(total)).unwrap();
    for (first, n) in cover(total, 64, 3) {
        let s = run_cpu(&k, &args, &integ(n).slice(Slice { first, total })).unwrap();
        assert_eq!(
            rows(&s.states, 0, n, 1),
            rows(&whole.states, first, first + n, 1)
        );
    }
    // The reversal reads the block's own trajectories: block b of the whole
    // launch holds x reversed within it.
    assert_eq!(whole.states.get(64).as_f64(), 127.0);
}

#[test]
fn a_slice_must_start_a_block_and_lie_in_the_launch() {
    let k = compile("indexed.field", INDEXED).unwrap();
    let mut args = Args::new(&k);
    args.buffer("p", vec![0.0f32; 100]).unwrap();
    let bad = Integration::new(10, 0.0, 0.1, 0.01).block(8).slice(Slice {
        first: 4,
        total: 100,
    });
    let e = run_cpu(&k, &args, &bad).unwrap_err().to_string();
    assert!(e.contains("not a multiple of the block size 8"), "{e}");
    let past = Integration::new(10, 0.0, 0.1, 0.01).block(8).slice(Slice {
        first: 96,
        total: 100,
    });
    let e = run_cpu(&k, &args, &past).unwrap_err().to_string();
    assert!(e.contains("runs past the launch's 100"), "{e}");
}

#[test]
fn an_out_of_bounds_read_names_the_global_trajectory() {
    let k = compile(
        "oob.field",
        "field oob(p: f32[]) { state x = 0.0; d(x)/dt = p[i]; }",
    )
    .unwrap();
    let mut args = Args::new(&k);
    args.buffer("p", vec![1.0f32; 90]).unwrap();
    let integ = Integration::new(50, 0.0, 0.1, 0.01).block(10).slice(Slice {
        first: 50,
        total: 100,
    });
    let e = run_cpu(&k, &args, &integ).unwrap_err().to_string();
    assert!(e.contains("trajectory 90 (block 9, thread 0)"), "{e}");
}

#[test]
fn adaptive_slices_equal_the_whole_launch() {
    let k = compile("indexed.field", INDEXED).unwrap();
    let total = 37;
    let mut args = Args::new(&k);
    args.buffer(
        "p",
        (0..total).map(|j| -(j as f32) / 30.0).collect::<Vec<_>>(),
    )
    .unwrap();
    let opts = AdaptiveEnsemble::new(AdaptiveMethod::Tsit5)
        .rtol(1e-5)
        .atol(1e-7)
        .saveat(vec![0.0, 0.3, 1.0]);
    let spans: Vec<(f64, f64)> = (0..total).map(|j| (0.0, 1.0 + j as f64 * 0.01)).collect();
    let run = |first: usize, n: usize| AdaptiveRun {
        n,
        spans: spans[first..first + n].to_vec(),
        u0: None,
        options: opts.clone(),
        slice: Some(Slice { first, total }),
    };
    let whole = run_adaptive_cpu(&k, &args, &run(0, total)).unwrap();
    for (first, n) in [(0, 10), (10, 20), (30, 7)] {
        let s = run_adaptive_cpu(&k, &args, &run(first, n)).unwrap();
        assert_eq!(rows(&s.end, 0, n, 3), rows(&whole.end, first, first + n, 3));
        assert_eq!(
            rows(&s.saved, 0, n, 9),
            rows(&whole.saved, first, first + n, 9)
        );
        assert_eq!(s.stats[..], whole.stats[first..first + n]);
    }
}
