//! Shared sub-field, basin-collapse barrier and flux: semantics and bad input.

use vgpu_field::{
    Barrier, Ctx, FieldError, LaunchConfig, Method, Par, PhaseKernel, PhaseOut, PhasedLaunch,
};

/// Each lane stores `h` into `s[lane]`; after the barrier reads its neighbour
/// `s[(lane+1) % B]` into register 1 and emits its own value as f64 flux.
struct Rotate {
    block: usize,
    phases: usize,
}

impl PhaseKernel<f64> for Rotate {
    type Params = ();
    type Flux = f64;
    fn dim(&self) -> usize {
        2
    }
    fn shared_len(&self) -> usize {
        self.block
    }
    fn phases(&self) -> usize {
        self.phases
    }
    fn phase(
        &self,
        p: usize,
        c: &Ctx<'_, '_, ()>,
        h: &[f64],
        _h0: &[f64],
        s: &[f64],
        out: &mut PhaseOut<'_, f64, f64>,
    ) -> Result<(), FieldError> {
        let l = c.lane();
        match p {
            0 => out.store_shared(l, h[0]),
            1 => {
                out.set(1, s[(l + 1) % self.block])?;
                out.emit(c.block_linear_for_test(), h[0])
            }
            _ => out.set(0, h[0] / h[1] * 0.0 + f64::NAN), // poisons register 0
        }
    }
}

trait BlockLinear {
    fn block_linear_for_test(&self) -> usize;
}
impl BlockLinear for Ctx<'_, '_, ()> {
    fn block_linear_for_test(&self) -> usize {
        self.block().block_linear()
    }
}

fn states(n: usize) -> Vec<f64> {
    (0..n).flat_map(|i| [0.1 + 1.37 * i as f64, 0.0]).collect()
}

#[test]
fn barrier_snaps_to_exact_values_and_reports_collapse_steps() {
    let cfg = LaunchConfig::new(3, 8).unwrap();
    let mut s = states(24);
    let mut flux = vec![0.0f64; 3];
    let r = PhasedLaunch::new(cfg)
        .par(Par::Seq)
        .run(
            &Rotate {
                block: 8,
                phases: 2,
            },
            &(),
            &mut s,
            &mut flux,
        )
        .unwrap();
    for i in 0..24 {
        let next = (i / 8) * 8 + (i % 8 + 1) % 8;
        assert_eq!(s[2 * i + 1], 0.1 + 1.37 * next as f64, "lane {i}");
    }
    for (b, got) in flux.iter().enumerate() {
        let want: f64 = (0..8).fold(0.0, |acc, l| acc + (0.1 + 1.37 * (b * 8 + l) as f64));
        assert_eq!(*got, want, "block {b} flux, lane order");
    }
    assert_eq!(r.collapse_steps.len(), 6);
    assert_eq!(r.emissions, 24);
    // Relaxing from 0 to about 30 under RK4, dt = 0.25, θ = 1e-6 relative: e^-t ≤ 1e-6
    // takes t ≈ 14, about 56 steps; never more than the phase time allows.
    for p in 0..2 {
        let steps = r.max_steps_of_phase(p);
        assert!((40..=80).contains(&steps), "phase {p}: {steps} steps");
    }
    // A looser threshold collapses sooner.
    let loose = Barrier {
        theta: 1e-2,
        ..Barrier::default()
    };
    let mut s2 = states(24);
    let r2 = PhasedLaunch::new(cfg)
        .barrier(loose)
        .run(
            &Rotate {
                block: 8,
                phases: 2,
            },
            &(),
            &mut s2,
            &mut [0.0; 3],
        )
        .unwrap();
    assert!(r2.max_steps_of_phase(1) < r.max_steps_of_phase(1));
    assert_eq!(s, s2, "snapping makes the result independent of θ");
    // A phase time shorter than settling: the phase ends on time and still snaps.
    let hurried = Barrier {
        phase_time: 1.0,
        method: Method::Euler,
        ..Barrier::default()
    };
    let mut s3 = states(24);
    let r3 = PhasedLaunch::new(cfg)
        .barrier(hurried)
        .run(
            &Rotate {
                block: 8,
                phases: 2,
            },
            &(),
            &mut s3,
            &mut [0.0; 3],
        )
        .unwrap();
    assert_eq!(r3.max_steps_of_phase(1), 4);
    assert_eq!(s, s3);
}

#[test]
fn phased_results_are_bit_identical_for_any_thread_count() {
    let cfg = LaunchConfig::new((4, 2), (16, 2)).unwrap();
    let run = |par| {
        let mut s = states(256);
        let mut flux = vec![0.0f64; 8];
        PhasedLaunch::new(cfg)
            .par(par)
            .run(
                &Rotate {
                    block: 32,
                    phases: 2,
                },
                &(),
                &mut s,
                &mut flux,
            )
            .unwrap();
        (s, flux)
    };
    let seq = run(Par::Seq);
    for t in [1, 2, 4] {
        assert_eq!(run(Par::Rayon(t)), seq, "Par::Rayon({t})");
    }
}

#[test]
fn non_finite_register_is_reported_with_trajectory_and_time() {
    let cfg = LaunchConfig::new(2, 4).unwrap();
    let mut s = states(8);
    let e = PhasedLaunch::new(cfg)
        .barrier(Barrier {
            phase_time: 2.0,
            ..Barrier::default()
        })
        .run(
            &Rotate {
                block: 4,
                phases: 3,
            },
            &(),
            &mut s,
            &mut [0.0; 2],
        )
        .unwrap_err();
    match e {
        FieldError::NonFinite {
            trajectory,
            component,
            t,
            ..
        } => {
            assert_eq!((trajectory, component), (0, 0));
            assert!(t > 0.0 && t <= 6.0, "t = {t}");
        }
        other => panic!("{other}"),
    }
}

struct OutOfRange;
impl PhaseKernel<f32> for OutOfRange {
    type Params = ();
    type Flux = i32;
    fn dim(&self) -> usize {
        1
    }
    fn shared_len(&self) -> usize {
        4
    }
    fn phases(&self) -> usize {
        1
    }
    fn phase(
        &self,
        _p: usize,
        c: &Ctx<'_, '_, ()>,
        _h: &[f32],
        _h0: &[f32],
        _s: &[f32],
        out: &mut PhaseOut<'_, f32, i32>,
    ) -> Result<(), FieldError> {
        if c.global() == 6 {
            out.store_shared(4, 1.0)?;
        }
        if c.global() == 1 {
            out.set(1, 1.0)?;
        }
        out.emit(0, -1)
    }
}

#[test]
fn out_of_bounds_shared_and_registers_are_typed_errors() {
    let cfg = LaunchConfig::new(2, 4).unwrap();
    let mut s = vec![0.0f32; 8];
    let e = PhasedLaunch::new(cfg)
        .run(&OutOfRange, &(), &mut s, &mut [0i32])
        .unwrap_err();
    // Block 0's fault (register 1 of thread 1) is reported before block 1's.
    assert_eq!(
        e.to_string(),
        "register index 1 out of bounds (length 1) in phase 0, block (0, 0, 0), thread (1, 0, 0)"
    );
    let cfg = LaunchConfig::new((1, 2), 4).unwrap();
    let mut s = vec![0.0f32; 8];
    struct OnlyShared;
    impl PhaseKernel<f32> for OnlyShared {
        type Params = ();
        type Flux = i32;
        fn dim(&self) -> usize {
            1
        }
        fn shared_len(&self) -> usize {
            4
        }
        fn phases(&self) -> usize {
            1
        }
        fn phase(
            &self,
            _p: usize,
            c: &Ctx<'_, '_, ()>,
            _h: &[f32],
            _h0: &[f32],
            _s: &[f32],
            out: &mut PhaseOut<'_, f32, i32>,
        ) -> Result<(), FieldError> {
            if c.global() == 6 {
                out.store_shared(4, 1.0)?;
            }
            out.emit(0, -1)
        }
    }
    let e = PhasedLaunch::new(cfg)
        .run(&OnlyShared, &(), &mut s, &mut [0i32])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "shared index 4 out of bounds (length 4) in phase 0, block (0, 1, 0), thread (2, 0, 0)"
    );
    let mut acc = [5i32];
    PhasedLaunch::new(cfg)
        .run(&OutOfRangeFree, &(), &mut s, &mut acc)
        .unwrap();
    assert_eq!(acc[0], 5 - 8, "i32 flux conserved");
}

struct OutOfRangeFree;
impl PhaseKernel<f32> for OutOfRangeFree {
    type Params = ();
    type Flux = i32;
    fn dim(&self) -> usize {
        1
    }
    fn shared_len(&self) -> usize {
        0
    }
    fn phases(&self) -> usize {
        1
    }
    fn phase(
        &self,
        _p: usize,
        _c: &Ctx<'_, '_, ()>,
        _h: &[f32],
        _h0: &[f32],
        _s: &[f32],
        out: &mut PhaseOut<'_, f32, i32>,
    ) -> Result<(), FieldError> {
        out.emit(0, -1)
    }
}

#[test]
fn bad_barrier_settings_and_short_states_are_refused() {
    let cfg = LaunchConfig::new(2, 4).unwrap();
    for b in [
        Barrier {
            theta: 0.0,
            ..Barrier::default()
        },
        Barrier {
            theta: f64::NAN,
            ..Barrier::default()
        },
        Barrier {
            phase_time: -1.0,
            ..Barrier::default()
        },
        Barrier {
            dt: 0.0,
            ..Barrier::default()
        },
        Barrier {
            dt: f64::INFINITY,
            ..Barrier::default()
        },
    ] {
        let mut s = vec![0.0f32; 8];
        let e = PhasedLaunch::new(cfg)
            .barrier(b)
            .run(&OutOfRangeFree, &(), &mut s, &mut [0i32])
            .unwrap_err();
        assert!(
            matches!(
                e,
                FieldError::BadBarrier { .. } | FieldError::BadStep { .. }
            ),
            "{b:?}: {e}"
        );
    }
    let mut s = vec![0.0f32; 7];
    let e = PhasedLaunch::new(cfg)
        .run(&OutOfRangeFree, &(), &mut s, &mut [0i32])
        .unwrap_err();
    assert!(
        matches!(e, FieldError::BufferTooShort { needed: 8, .. }),
        "{e}"
    );
}

/// Writes `s[l] = h0 + 1` and, in the same phase, reads back its own entry and
/// its neighbour's: a thread sees its own write, not the neighbour's.
struct ReadBack;
impl PhaseKernel<f32> for ReadBack {
    type Params = ();
    type Flux = u32;
    fn dim(&self) -> usize {
        3
    }
    fn shared_len(&self) -> usize {
        4
    }
    fn phases(&self) -> usize {
        1
    }
    fn phase(
        &self,
        _p: usize,
        c: &Ctx<'_, '_, ()>,
        _h: &[f32],
        h0: &[f32],
        _s: &[f32],
        out: &mut PhaseOut<'_, f32, u32>,
    ) -> Result<(), FieldError> {
        let l = c.lane();
        out.store_shared(l, h0[0] + 1.0)?;
        let own = out.shared(l)?;
        let neighbour = out.shared((l + 1) % 4)?;
        out.set(1, own)?;
        out.set(2, neighbour + out.register(1)?)?;
        assert!(out.shared(4).is_err() && out.register(3).is_err());
        Ok(())
    }
}

#[test]
fn a_trajectory_sees_its_own_writes_within_a_phase() {
    let cfg = LaunchConfig::new(1, 4).unwrap();
    let mut s: Vec<f32> = (0..4).flat_map(|i| [i as f32 * 10.0, 0.0, 0.0]).collect();
    PhasedLaunch::new(cfg)
        .run(&ReadBack, &(), &mut s, &mut [])
        .unwrap();
    for l in 0..4 {
        let own = l as f32 * 10.0 + 1.0;
        assert_eq!(s[3 * l + 1], own, "own write visible");
        assert_eq!(
            s[3 * l + 2],
            own,
            "neighbour's write not yet visible (shared starts at 0)"
        );
    }
}
