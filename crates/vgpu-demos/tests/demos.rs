//! The equivalence demos against the CUDA-style computation.

use vgpu_demos::{self as demos, DemoOptions, MatmulField};
use vgpu_field::{Ctx, Field, FieldError, Launch, LaunchConfig, Method, Par, PerTrajectory};

fn opts(par: Par) -> DemoOptions {
    DemoOptions {
        n: 5000,
        par,
        ..DemoOptions::default()
    }
}

#[test]
fn scale_is_bit_exact() {
    let r = demos::scale(&opts(Par::Rayon(2))).unwrap();
    assert!(r.passed, "{r:?}");
    assert_eq!((r.max_error, r.steps, r.trajectories), (0.0, 1, 5120));
}

#[test]
fn matmul_37x53x29_is_bit_exact_against_the_fma_loop() {
    let r = demos::matmul(&opts(Par::Rayon(2))).unwrap();
    assert!(r.passed, "{r:?}");
    assert_eq!(r.steps, 53);
    assert_eq!(
        r.trajectories,
        2 * 3 * 256,
        "grid 2×3 of 16×16 blocks covers 37×29"
    );
}

/// The same field without the factored form: Euler adds the rounded product, so
/// the result is the unfused loop `acc = acc + a*b`, bit for bit, and (for these
/// inputs) not the fma loop.
struct Unfused<'a>(MatmulField<'a>);

impl Field<f32, 1> for Unfused<'_> {
    type Params = ();
    fn eval(&self, t: f32, h: &[f32; 1], h0: &[f32; 1], c: &Ctx<'_, '_, ()>, dh: &mut [f32; 1]) {
        self.0.eval(t, h, h0, c, dh)
    }
}

#[test]
fn euler_on_rounded_products_equals_the_unfused_loop() {
    let (m, k, n) = (37, 53, 29);
    let a: Vec<f32> = (0..m * k)
        .map(|i| ((i * 7919) % 1000) as f32 / 997.0 - 0.5)
        .collect();
    let b: Vec<f32> = (0..k * n)
        .map(|i| ((i * 104729) % 1000) as f32 / 991.0 - 0.5)
        .collect();
    let cfg = LaunchConfig::new((2, 3), (16, 16)).unwrap();
    let mut acc = vec![0.0f32; cfg.total_threads()];
    let f = PerTrajectory(Unfused(MatmulField {
        a: &a,
        b: &b,
        shape: (m, k, n),
    }));
    Launch::new(cfg)
        .method(Method::Euler)
        .dt(1.0)
        .steps(k)
        .par(Par::Seq)
        .run(&f, &(), &mut acc)
        .unwrap();
    let fused = demos::matmul_fma_reference(&a, &b, (m, k, n));
    let mut fma_differs = 0;
    for row in 0..m {
        for col in 0..n {
            let mut want = 0.0f32;
            for kk in 0..k {
                want += a[row * k + kk] * b[kk * n + col];
            }
            let got = acc[((row / 16) * 2 + col / 16) * 256 + (row % 16) * 16 + col % 16];
            assert_eq!(got.to_bits(), want.to_bits(), "C[{row},{col}]");
            fma_differs += usize::from(got.to_bits() != fused[row * n + col].to_bits());
        }
    }
    assert!(
        fma_differs > 0,
        "fma and unfused loops should differ somewhere"
    );
}

#[test]
fn relax_converges_within_the_derived_tolerance() {
    let r = demos::relax(&opts(Par::Rayon(4))).unwrap();
    assert!(r.passed, "{r:?}");
    assert!(r.max_error > 0.0 && r.max_error <= r.tolerance, "{r:?}");
    // A short horizon: the e^-T term dominates, the error sits just under the bound,
    // so the bound is not vacuous.
    let short = DemoOptions {
        t_end: 2.0,
        dt: 0.05,
        ..opts(Par::Seq)
    };
    let r = demos::relax(&short).unwrap();
    assert!(r.passed && r.max_error > 0.5 * r.tolerance, "{r:?}");
    let euler = DemoOptions {
        method: Method::Euler,
        dt: 0.001,
        ..opts(Par::Seq)
    };
    assert!(demos::relax(&euler).unwrap().passed);
    let bad = DemoOptions {
        dt: 1.5,
        ..opts(Par::Seq)
    };
    assert!(matches!(
        demos::relax(&bad),
        Err(FieldError::Invalid { .. })
    ));
}

#[test]
fn reverse_is_exact_with_the_barrier_and_differs_without() {
    let r = demos::reverse(&opts(Par::Rayon(2))).unwrap();
    assert!(r.passed, "{r:?}");
    assert!(
        r.note.contains("without it 5120 of 5120 differ"),
        "{}",
        r.note
    );
    assert!(r.steps > 0, "the collapses took steps");
}

#[test]
fn tree_sum_is_exact_and_deterministic() {
    let r = demos::tree_sum(&opts(Par::Rayon(4))).unwrap();
    assert!(r.passed, "{r:?}");
    let x: Vec<f32> = (0..3001)
        .map(|i| ((i * 37) % 101) as f32 * 0.013 - 0.6)
        .collect();
    let want = demos::tree_sum_reference(&x, 64);
    for par in [Par::Seq, Par::Rayon(1), Par::Rayon(2), Par::Rayon(4)] {
        let (got, _) = demos::tree_sum_field(&x, 64, par).unwrap();
        assert_eq!(got.to_bits(), want.to_bits(), "{par:?}");
    }
    assert!(demos::tree_sum_field(&x, 48, Par::Seq).is_err());
}

#[test]
fn histogram_is_exact_and_deterministic() {
    let r = demos::histogram(&opts(Par::Rayon(3))).unwrap();
    assert!(r.passed, "{r:?}");
    let data: Vec<u32> = (0..1000).map(|i| (i * i) % 256).collect();
    let mut bins = vec![0u32; 256];
    demos::histogram_field(&data, &mut bins, 128, Par::Rayon(2)).unwrap();
    for (v, &count) in bins.iter().enumerate() {
        assert_eq!(
            count as usize,
            data.iter().filter(|&&d| d as usize == v).count()
        );
    }
}

#[test]
fn histogram_value_out_of_range_names_block_and_thread() {
    let mut data = vec![3u32; 300];
    data[259] = 256;
    let mut bins = vec![0u32; 256];
    let e = demos::histogram_field(&data, &mut bins, 128, Par::Rayon(2)).unwrap_err();
    assert!(
        e.to_string().contains("flux index 256 out of bounds (length 256) in phase 0, block (2, 0, 0), thread (3, 0, 0)"),
        "{e}"
    );
    assert!(
        bins.iter().all(|&b| b == 0),
        "no flux applied after a fault"
    );
}

#[test]
fn demos_give_the_same_bits_for_any_thread_count() {
    let seq = demos::run_all(&opts(Par::Seq));
    for threads in [1, 2, 4] {
        let par = demos::run_all(&opts(Par::Rayon(threads)));
        for (a, b) in seq.iter().zip(&par) {
            let (a, b) = (a.as_ref().unwrap(), b.as_ref().unwrap());
            assert!(a.passed && b.passed, "{a:?} {b:?}");
            assert_eq!(
                (a.max_error.to_bits(), a.steps),
                (b.max_error.to_bits(), b.steps),
                "{}",
                a.name
            );
        }
    }
}

#[test]
fn demos_refuse_bad_sizes() {
    let zero = DemoOptions {
        n: 0,
        ..DemoOptions::default()
    };
    assert!(demos::scale(&zero).is_err());
    let big = DemoOptions {
        block: 2048,
        ..opts(Par::Seq)
    };
    assert!(matches!(
        demos::scale(&big),
        Err(FieldError::BlockTooLarge { .. })
    ));
    let empty = DemoOptions {
        mat: (0, 3, 3),
        ..opts(Par::Seq)
    };
    assert!(demos::matmul(&empty).is_err());
}
