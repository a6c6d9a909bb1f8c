//! Shared sub-field, basin-collapse barrier and flux: semantics and bad input,
//! for attractor phases (`PhaseKernel`) and flow phases (`FlowKernel`).

use vgpu_field::phase::{
    FlowKernel, FlowPhase, FluxBuffer, RegisterUpdate, SharedDecl, SharedSlice, StageAt, StageIn,
    StageOut,
};
use vgpu_field::{
    field_fn, Barrier, BlockCtx, Ctx, FieldError, Launch, LaunchConfig, Method, Par, PhaseKernel,
    PhaseOut, PhaseReport, PhasedLaunch, Value,
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
                out.emit(c.block().block_linear(), h[0])
            }
            _ => out.set(0, h[0] / h[1] * 0.0 + f64::NAN), // poisons register 0
        }
    }
}

/// Register 0 of trajectory `i` starts at `0.1 + 1.37·i`, register 1 at 0.
fn states(n: usize) -> Vec<f64> {
    (0..n).flat_map(|i| [0.1 + 1.37 * i as f64, 0.0]).collect()
}

/// Runs [`Rotate`] over `cfg` (blocks of `block`) from [`states`]: the
/// outcome, the final states and the flux (one accumulator per block).
fn rotate(
    cfg: LaunchConfig,
    phases: usize,
    barrier: Barrier,
    par: Par,
) -> (Result<PhaseReport, FieldError>, Vec<f64>, Vec<f64>) {
    let mut s = states(cfg.total_threads());
    let mut flux = vec![0.0f64; cfg.num_blocks()];
    let kernel = Rotate {
        block: cfg.threads_per_block(),
        phases,
    };
    let r = PhasedLaunch::new(cfg)
        .barrier(barrier)
        .par(par)
        .run(&kernel, &(), &mut s, &mut flux);
    (r, s, flux)
}

#[test]
fn barrier_snaps_to_exact_values_and_reports_collapse_steps() {
    let cfg = LaunchConfig::new(3, 8).unwrap();
    let (r, s, flux) = rotate(cfg, 2, Barrier::default(), Par::Seq);
    let r = r.unwrap();
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
    let (r2, s2, _) = rotate(cfg, 2, loose, Par::Auto);
    assert!(r2.unwrap().max_steps_of_phase(1) < r.max_steps_of_phase(1));
    assert_eq!(s, s2, "snapping makes the result independent of θ");
    // A phase time shorter than settling: the phase ends on time and still snaps.
    let hurried = Barrier {
        phase_time: 1.0,
        method: Method::Euler,
        ..Barrier::default()
    };
    let (r3, s3, _) = rotate(cfg, 2, hurried, Par::Auto);
    assert_eq!(r3.unwrap().max_steps_of_phase(1), 4);
    assert_eq!(s, s3);
}

#[test]
fn phased_results_are_bit_identical_for_any_thread_count() {
    let cfg = LaunchConfig::new((4, 2), (16, 2)).unwrap();
    let run = |par| {
        let (r, s, flux) = rotate(cfg, 2, Barrier::default(), par);
        r.unwrap();
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
    let quick = Barrier {
        phase_time: 2.0,
        ..Barrier::default()
    };
    match rotate(cfg, 3, quick, Par::Auto).0.unwrap_err() {
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

/// One phase, one register: the trajectory `bad_shared` stores past the
/// shared sub-field's end, `bad_register` sets a register that does not exist,
/// and every trajectory emits -1 into accumulator 0.
struct Faulty {
    shared_len: usize,
    bad_shared: Option<usize>,
    bad_register: Option<usize>,
}

const CLEAN: Faulty = Faulty {
    shared_len: 0,
    bad_shared: None,
    bad_register: None,
};

impl PhaseKernel<f32> for Faulty {
    type Params = ();
    type Flux = i32;
    fn dim(&self) -> usize {
        1
    }
    fn shared_len(&self) -> usize {
        self.shared_len
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
        if Some(c.global()) == self.bad_shared {
            out.store_shared(self.shared_len, 1.0)?;
        }
        if Some(c.global()) == self.bad_register {
            out.set(1, 1.0)?;
        }
        out.emit(0, -1)
    }
}

fn faulty(cfg: LaunchConfig, k: &Faulty, acc: &mut [i32]) -> Result<PhaseReport, FieldError> {
    let mut s = vec![0.0f32; cfg.total_threads()];
    PhasedLaunch::new(cfg).run(k, &(), &mut s, acc)
}

#[test]
fn out_of_bounds_shared_and_registers_are_typed_errors() {
    let both = Faulty {
        shared_len: 4,
        bad_shared: Some(6),
        bad_register: Some(1),
    };
    let e = faulty(LaunchConfig::new(2, 4).unwrap(), &both, &mut [0]).unwrap_err();
    // Block 0's fault (register 1 of thread 1) is reported before block 1's.
    assert_eq!(
        e.to_string(),
        "register index 1 out of bounds (length 1) in phase 0, block (0, 0, 0), thread (1, 0, 0)"
    );
    let cfg = LaunchConfig::new((1, 2), 4).unwrap();
    let shared_only = Faulty {
        bad_register: None,
        ..both
    };
    let mut acc = [5i32];
    let e = faulty(cfg, &shared_only, &mut acc).unwrap_err();
    assert_eq!(
        e.to_string(),
        "shared index 4 out of bounds (length 4) in phase 0, block (0, 1, 0), thread (2, 0, 0)"
    );
    assert_eq!(acc[0], 5, "no flux applied after a fault");
    faulty(cfg, &CLEAN, &mut acc).unwrap();
    assert_eq!(acc[0], 5 - 8, "i32 flux conserved");
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
            .run(&CLEAN, &(), &mut s, &mut [0i32])
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
        .run(&CLEAN, &(), &mut s, &mut [0i32])
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

/// One register, four shared entries starting at `10·block + 2 + j`. Phase 0:
/// each lane stores 5 into `s[lane]`, reads it back, stores the entry's own
/// value again (so nothing moves: the collapse takes no step) and emits
/// `5 + s[lane]` as it read them. Phase 1: register 0 relaxes from 0 to 1 and
/// lane 0 sends `s[0]` to 0. Phase 2: lane 0 emits `s[0]`, nothing is set.
struct Settle;
impl PhaseKernel<f32> for Settle {
    type Params = ();
    type Flux = f32;
    fn dim(&self) -> usize {
        1
    }
    fn shared_len(&self) -> usize {
        4
    }
    fn phases(&self) -> usize {
        3
    }
    fn shared_init(&self, ctx: &BlockCtx<'_, ()>, s: &mut [f32]) {
        for (j, v) in s.iter_mut().enumerate() {
            *v = (10 * ctx.block_linear() + 2 + j) as f32;
        }
    }
    fn phase(
        &self,
        p: usize,
        c: &Ctx<'_, '_, ()>,
        h: &[f32],
        _h0: &[f32],
        s: &[f32],
        out: &mut PhaseOut<'_, f32, f32>,
    ) -> Result<(), FieldError> {
        let l = c.lane();
        match p {
            0 => {
                out.store_shared(l, 5.0)?;
                let own = out.shared(l)?;
                out.store_shared(l, s[l])?;
                out.emit(c.global(), own + out.shared(l)?)
            }
            1 => {
                out.set(0, h[0] + 1.0)?;
                if l == 0 {
                    out.store_shared(0, 0.0)?;
                }
                Ok(())
            }
            _ if l == 0 => out.emit(c.global(), s[0]),
            _ => Ok(()),
        }
    }
}

#[test]
fn collapse_steps_follow_the_settling_rule_and_a_stepless_collapse_still_emits() {
    let cfg = LaunchConfig::new(2, 4).unwrap();
    let euler = Barrier {
        theta: 1e-3,
        dt: 0.5,
        method: Method::Euler,
        ..Barrier::default()
    };
    let run = |barrier: Barrier| {
        let mut h = vec![0.0f32; 8];
        let mut flux = vec![0.5f32; 8];
        let r = PhasedLaunch::new(cfg)
            .barrier(barrier)
            .run(&Settle, &(), &mut h, &mut flux)
            .unwrap();
        (r.collapse_steps, h, flux)
    };
    let (steps, h, flux) = run(euler);
    // Euler with dt = 1/2 halves every distance exactly: the register (1 away
    // from 1) settles after 10 steps (2^-10 ≤ 1e-3), s[0] of block 0 (2 away
    // from 0) after 11, of block 1 (12 away) after 14. Phases 0 and 2 move
    // nothing and take no step.
    assert_eq!(steps, [0, 11, 0, 0, 14, 0]);
    assert_eq!(h, [1.0; 8], "registers snap to their attractors");
    for (g, &got) in flux.iter().enumerate() {
        let (b, l) = (g / 4, g % 4);
        // The stepless phase 0 still emitted 5 + s[l] (its own writes, read
        // back); phase 2 read s[0] snapped to exactly 0.
        let want = 0.5 + (5.0 + (10 * b + 2 + l) as f32);
        assert_eq!(got, want, "accumulator {g}");
    }
    // A phase time shorter than block 1's settling: 6 / 0.5 = 12 steps at most.
    let (steps, h2, flux2) = run(Barrier {
        phase_time: 6.0,
        ..euler
    });
    assert_eq!(steps, [0, 11, 0, 0, 12, 0]);
    assert_eq!(
        (h2, flux2),
        (h, flux),
        "the collapse snaps however it ended"
    );
}

// ---- flow phases -------------------------------------------------------------

/// How [`Decay`] misbehaves.
#[derive(Clone, Copy, PartialEq)]
enum Misuse {
    None,
    /// Lane 2 of block 1 drives past the end of `acc`.
    OutOfBounds,
    /// Emits only at the first stage.
    DropsEmissions,
    /// Drives the f64 array with an f32.
    WrongType,
}

/// Registers `(h, g)`. Phase 0 (`steps` steps): `dh/dt = −h`, `g` held; each
/// lane drives `acc[lane]` (f64) at rate `h` and emits `h` into `out[global]`
/// (f64 flux), so flux and `acc` integrate the same rate. Phase 1, three
/// repetitions `r` of one step: `h` held, `g` jumps to `acc[lane]`; every lane
/// adds 1 to `hits[r % 2]` (i32, starting at `i32::MAX`, wrapping); lane 0
/// emits `hits[0]` into `count[0]` (i32).
struct Decay {
    shared: Vec<SharedDecl>,
    phases: Vec<FlowPhase>,
    misuse: Misuse,
}

impl Decay {
    fn new(lanes: usize, steps: usize, misuse: Misuse) -> Decay {
        Decay {
            shared: vec![
                SharedDecl {
                    name: "acc".into(),
                    len: lanes,
                    init: Value::F64(0.0),
                },
                SharedDecl {
                    name: "hits".into(),
                    len: 2,
                    init: Value::I32(i32::MAX),
                },
            ],
            phases: vec![
                FlowPhase::fixed(
                    vec![steps],
                    vec![RegisterUpdate::Rate, RegisterUpdate::Hold],
                ),
                FlowPhase::fixed(vec![1; 3], vec![RegisterUpdate::Hold, RegisterUpdate::Jump]),
            ],
            misuse,
        }
    }
}

impl FlowKernel<f64> for Decay {
    type Params = ();
    type Scratch = ();
    fn dim(&self) -> usize {
        2
    }
    fn shared(&self) -> &[SharedDecl] {
        &self.shared
    }
    fn phases(&self) -> &[FlowPhase] {
        &self.phases
    }
    fn scratch(&self, _lanes: usize) {}
    fn stage(
        &self,
        at: StageAt<f64>,
        ctx: &BlockCtx<'_, ()>,
        input: &StageIn<'_, f64>,
        _sc: &mut (),
        out: &mut StageOut<'_, f64>,
    ) -> Result<(), FieldError> {
        let (SharedSlice::F64(acc), SharedSlice::I32(hits)) =
            (input.shared.array(0), input.shared.array(1))
        else {
            panic!("layout")
        };
        let lanes = ctx.lanes();
        for l in 0..lanes {
            let h = input.h[l];
            if at.phase == 0 {
                out.rates()[l] = -h;
                let bad = self.misuse == Misuse::OutOfBounds && ctx.first() + l == 6;
                let v = match self.misuse {
                    Misuse::WrongType => Value::F32(h as f32),
                    _ => Value::F64(h),
                };
                out.drive(0, l, if bad { acc.len() } else { l }, v)?;
                if out.first_stage() || self.misuse != Misuse::DropsEmissions {
                    out.emit(0, l, ctx.first() + l, Value::F64(h))?;
                }
            } else {
                out.jumps()[lanes + l] = acc[l];
                out.drive(1, l, at.rep % 2, Value::I32(1))?;
                if l == 0 {
                    out.emit(1, l, 0, Value::I32(hits[0] as i32))?;
                }
            }
        }
        Ok(())
    }
}

/// Runs [`Decay`] from `(h, g) = (1 + i/8, 0)` over `blocks` blocks of
/// `lanes`, with step 0.25: states, f64 flux and i32 flux.
fn decay(
    blocks: u32,
    lanes: u32,
    method: Method,
    misuse: Misuse,
    par: Par,
) -> Result<(Vec<f64>, FluxBuffer, FluxBuffer), FieldError> {
    let cfg = LaunchConfig::new(blocks, lanes)?;
    let n = cfg.total_threads();
    let mut h: Vec<f64> = (0..n).flat_map(|i| [1.0 + i as f64 / 8.0, 0.0]).collect();
    let mut flux = vec![
        FluxBuffer::zeros(vgpu_field::ScalarType::F64, n).unwrap(),
        FluxBuffer::I32(vec![0]),
    ];
    let barrier = Barrier {
        dt: 0.25,
        method,
        ..Barrier::default()
    };
    PhasedLaunch::new(cfg).barrier(barrier).par(par).run_flow(
        &Decay::new(lanes as usize, 8, misuse),
        &(),
        &mut h,
        &mut flux,
    )?;
    let count = flux.pop().unwrap();
    Ok((h, flux.pop().unwrap(), count))
}

#[test]
fn flow_phases_integrate_registers_shared_and_flux_with_the_launch_arithmetic() {
    for method in [Method::Euler, Method::Rk4] {
        let (h, out, count) = decay(3, 4, method, Misuse::None, Par::Seq).unwrap();
        // Phase 0 alone is the field dh/dt = −h: the plain launch gives these bits.
        let mut plain: Vec<f64> = (0..12).map(|i| 1.0 + i as f64 / 8.0).collect();
        let field = field_fn(
            |_t: f64, h: &[f64; 1], _: &[f64; 1], _: &Ctx<()>, d: &mut [f64; 1]| {
                d[0] = -h[0];
            },
        );
        Launch::new(LaunchConfig::new(3, 4).unwrap())
            .method(method)
            .dt(0.25)
            .steps(8)
            .run(&field, &(), &mut plain)
            .unwrap();
        let FluxBuffer::F64(out) = out else { panic!() };
        for i in 0..12 {
            // h took phase 0's steps as the plain launch does, and phase 1 held it.
            assert_eq!(h[2 * i], plain[i], "{method}: h of trajectory {i}");
            // The flux is the method's quadrature of the rate `acc` integrates
            // from 0, summed in the same order: the same bits, which g jumped to.
            let acc = h[2 * i + 1];
            assert_eq!(out[i], acc, "{method}: flux of trajectory {i}");
            let h0 = 1.0 + i as f64 / 8.0;
            // What the flux carried is what left h, up to rounding.
            assert!((acc - (h0 - plain[i])).abs() <= 1e-13, "{method}: {acc}");
            // After phase 0, h decayed to h0·e^{−2}, within T·dt^p/(p+1)!·h0 for a
            // method of order p (see `demos::relax_tolerance`).
            let p = method.tableau().order() as i32;
            let tol = 2.0 * 0.25f64.powi(p) / (1..=p + 1).map(f64::from).product::<f64>();
            let err = (plain[i] - h0 * (-2.0f64).exp()).abs();
            assert!(
                err <= tol * h0,
                "{method}: {} vs {}",
                plain[i],
                h0 * (-2.0f64).exp()
            );
        }
        // hits[0] read at the step's start of each repetition: MAX, then
        // MAX + 4 (wrapped), then unchanged (repetition 1 drove hits[1]); 3 blocks.
        let per_block = i32::MAX
            .wrapping_add(i32::MAX.wrapping_add(4))
            .wrapping_add(i32::MAX.wrapping_add(4));
        let want = per_block.wrapping_mul(3);
        assert_eq!(count, FluxBuffer::I32(vec![want]), "{method}");
    }
    let seq = decay(4, 8, Method::Rk4, Misuse::None, Par::Seq).unwrap();
    assert_eq!(
        decay(4, 8, Method::Rk4, Misuse::None, Par::Rayon(2)).unwrap(),
        seq
    );
}

#[test]
fn flow_misuse_is_a_typed_error_and_no_flux_lands() {
    let e = decay(2, 4, Method::Rk4, Misuse::OutOfBounds, Par::Seq).unwrap_err();
    assert_eq!(
        e.to_string(),
        "shared index 4 out of bounds (length 4) in phase 0, block (1, 0, 0), thread (2, 0, 0)"
    );
    let e = decay(2, 4, Method::Rk4, Misuse::DropsEmissions, Par::Seq).unwrap_err();
    assert!(e.to_string().contains("stage 1 made 0 emissions"), "{e}");
    // Under Euler there is only the first stage: nothing is dropped.
    decay(2, 4, Method::Euler, Misuse::DropsEmissions, Par::Seq).unwrap();
    let e = decay(2, 4, Method::Euler, Misuse::WrongType, Par::Seq).unwrap_err();
    assert!(e.to_string().contains("drives a f64 shared array"), "{e}");
}

/// The items of a [`FlowKernel`] with one register, no shared memory, no
/// parameters or scratch, whose phases are its field `.0`.
macro_rules! one_register_one_phase {
    () => {
        type Params = ();
        type Scratch = ();
        fn dim(&self) -> usize {
            1
        }
        fn shared(&self) -> &[SharedDecl] {
            &[]
        }
        fn phases(&self) -> &[FlowPhase] {
            &self.0
        }
        fn scratch(&self, _lanes: usize) {}
    };
}

/// A launch of one block of `lanes` with the unit barrier (Euler, `dt` 1).
fn unit_launch(lanes: u32) -> PhasedLaunch {
    let unit = Barrier {
        dt: 1.0,
        method: Method::Euler,
        ..Barrier::default()
    };
    PhasedLaunch::new(LaunchConfig::new(1, lanes).unwrap()).barrier(unit)
}

/// One register, one phase of two unit steps: lane 1 jumps to `h − ∞ + ∞`
/// (NaN), every other lane to `h + 1`.
struct JumpToNan([FlowPhase; 1]);

impl FlowKernel<f32> for JumpToNan {
    one_register_one_phase!();
    fn stage(
        &self,
        _at: StageAt<f32>,
        _ctx: &BlockCtx<'_, ()>,
        input: &StageIn<'_, f32>,
        _sc: &mut (),
        out: &mut StageOut<'_, f32>,
    ) -> Result<(), FieldError> {
        for (l, j) in out.jumps().iter_mut().enumerate() {
            let h = input.h[l];
            *j = if l == 1 {
                h - f32::INFINITY + f32::INFINITY
            } else {
                h + 1.0
            };
        }
        Ok(())
    }
}

#[test]
fn run_flow_stops_on_a_non_finite_register_unless_told_they_are_data() {
    let kernel = JumpToNan([FlowPhase::fixed(vec![2], vec![RegisterUpdate::Jump])]);
    let launch = unit_launch(3);
    let mut h = vec![0.0f32; 3];
    match launch.clone().run_flow(&kernel, &(), &mut h, &mut []) {
        Err(FieldError::NonFinite { trajectory, .. }) => assert_eq!(trajectory, 1),
        other => panic!("expected NonFinite, got {other:?}"),
    }
    let mut h = vec![0.0f32; 3];
    let report = launch
        .stop_on_non_finite(false)
        .run_flow(&kernel, &(), &mut h, &mut [])
        .unwrap();
    assert_eq!(report.total_steps(), 2);
    assert_eq!((h[0], h[2]), (2.0, 2.0));
    assert!(h[1].is_nan());
}

/// Lanes emit in reverse lane order, two amounts each: lane 0 `1e8` then
/// `−1e8`, lane 1 `1` then `0` (f32), as impulses into `flux[0]` at the
/// phase's start and as rates into `flux[1]` at its one step (Euler, `dt`
/// 1: the amount is the rate).
struct ReverseEmitter([FlowPhase; 1]);

const REVERSE_AMOUNTS: [[f32; 2]; 2] = [[1e8, -1e8], [1.0, 0.0]];

impl FlowKernel<f32> for ReverseEmitter {
    one_register_one_phase!();
    fn phase_start(
        &self,
        _at: vgpu_field::phase::SegmentAt,
        _ctx: &BlockCtx<'_, ()>,
        _input: &StageIn<'_, f32>,
        _sc: &mut (),
        flux: &mut vgpu_field::phase::Impulses<'_>,
    ) -> Result<(), FieldError> {
        for l in [1, 0] {
            for a in REVERSE_AMOUNTS[l] {
                flux.emit(0, l, 0, Value::F32(a))?;
            }
        }
        Ok(())
    }
    fn stage(
        &self,
        _at: StageAt<f32>,
        _ctx: &BlockCtx<'_, ()>,
        _input: &StageIn<'_, f32>,
        _sc: &mut (),
        out: &mut StageOut<'_, f32>,
    ) -> Result<(), FieldError> {
        for l in [1, 0] {
            out.rates()[l] = 0.0;
            for a in REVERSE_AMOUNTS[l] {
                out.emit(1, l, 0, Value::F32(a))?;
            }
        }
        Ok(())
    }
}

#[test]
fn flux_lands_in_lane_order_whatever_order_the_lanes_emit_in() {
    // In lane order 1e8 − 1e8 + 1 + 0 = 1; in the call order (lane 1 first)
    // 1 + 1e8 rounds to 1e8 in f32 and the sum is 0.
    let kernel = ReverseEmitter([FlowPhase::fixed(vec![1], vec![RegisterUpdate::Rate])]);
    let launch = unit_launch(2);
    let mut h = vec![0.0f32; 2];
    let mut flux = vec![FluxBuffer::F32(vec![0.0]), FluxBuffer::F32(vec![0.0])];
    launch.run_flow(&kernel, &(), &mut h, &mut flux).unwrap();
    assert_eq!(
        flux,
        [FluxBuffer::F32(vec![1.0]), FluxBuffer::F32(vec![1.0])]
    );
}
