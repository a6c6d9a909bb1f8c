//! The f32 fma probe (`vgpu_gpu::fma_probe`): its verdict agrees with a direct
//! look at a few known ties on this adapter (the bare `fma`; where the probe
//! runs the guarded form, zero and subnormal cases aside, the same ties
//! decide), a mismatch it reports is real (the device gives the same wrong
//! bits again), and the verdict is kept.
//! Skipped without an adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use vgpu_gpu::fma_probe::{fma_on_device, FmaMismatch};
use vgpu_gpu::{fma_f32_fused, probe_fma_f32};

fn p2(e: i32) -> f32 {
    2f32.powi(e)
}

#[test]
fn the_probe_agrees_with_known_ties_and_its_mismatches_are_real() {
    let Some(mut cache) = common::kernel_cache("fma_probe") else {
        return;
    };
    let ctx = cache.context();
    // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 is a tie of f32: ±2^-60 decides it
    // when fused; a multiply-then-add (and a rounding through f64) rounds the
    // tie to even first. And c = -RN(a b) leaves the product's rounding error.
    let x = 1.0 + p2(-12);
    let y = 1.0 + 3.0 * p2(-12);
    let ties = [
        [x, x, p2(-60)],
        [x, x, -p2(-60)],
        [-x, x, p2(-60)],
        [y, x, p2(-60)],
        [y, x, -p2(-60)],
        [x, x, -(x * x)],
        [y, y, -(y * y)],
    ];
    let got = fma_on_device(&mut cache, &ties, false, false).unwrap();
    let probe = probe_fma_f32(ctx).unwrap();
    // Where the probe runs the guarded form, a zero (or subnormal) result of
    // the bare fma takes the emulation: those cases decide nothing.
    let wrong: Vec<usize> = (0..ties.len())
        .filter(|&i| {
            let [a, b, c] = ties[i];
            let decides = !probe.guarded || got[i] & 0x7f80_0000 != 0;
            decides && got[i] != a.mul_add(b, c).to_bits()
        })
        .collect();
    eprintln!(
        "{}: f32 fma fused on the known ties: {} (wrong on {wrong:?}); probe: {} of {} triples differ, first {:?}",
        ctx.adapter(),
        wrong.is_empty(),
        probe.mismatches,
        probe.triples,
        probe.first
    );
    if !wrong.is_empty() {
        assert!(!probe.fused(), "the probe missed the ties {wrong:?}");
    }
    if let Some(FmaMismatch { abc, got, want }) = probe.first {
        assert_ne!(got, want);
        let compares = vgpu_gpu::f32_subnormals_kept(ctx).unwrap().plain;
        let again = fma_on_device(&mut cache, &[abc], probe.guarded, compares).unwrap();
        assert_eq!(again, [got], "{abc:?}: the device's fma is not repeatable");
    } else {
        assert!(probe.fused() && probe.triples > 4000);
    }
    assert_eq!(fma_f32_fused(ctx).unwrap(), probe.fused());
    assert_eq!(fma_f32_fused(ctx).unwrap(), probe.fused());
}

/// Whether the guarded fma must send `a·b + c` to the emulation on a device
/// whose fma flushes subnormal operands and results: a subnormal `c`, a
/// subnormal factor beside a nonzero one, or nonzero factors whose device
/// result `d` is zero or subnormal.
fn must_emulate([a, b, c]: [f32; 3], d: u32) -> bool {
    let sub = |x: f32| x != 0.0 && x.abs() < f32::MIN_POSITIVE;
    let nonzero = a != 0.0 && b != 0.0;
    sub(c) || (nonzero && (sub(a) || sub(b) || d & 0x7f80_0000 == 0))
}

/// The guarded fma's test of the device's result (`fma_suspect`, in both its
/// forms: on the bits, and comparing floats where the device keeps
/// subnormals in comparisons), seen through the results: on triples where
/// the device's bare fma is not the correctly rounded result, the guarded
/// form gives the correctly rounded one exactly where the test must send the
/// triple to the emulation, and the device's otherwise. Triples: ties a
/// second rounding breaks the wrong way (decided by a normal addend: the
/// device's result kept; by a subnormal one or with a subnormal factor: the
/// emulation's), and products cancelled to their rounding error (a
/// multiply-then-add makes them 0: the emulation's).
#[test]
fn the_guarded_fma_emulates_exactly_the_triples_a_flush_can_change() {
    let Some(mut cache) = common::kernel_cache("fma_probe") else {
        return;
    };
    let ctx = cache.context();
    if !ctx.has_f64() {
        eprintln!("no SHADER_F64: no guarded form");
        return;
    }
    let x = 1.0 + p2(-12);
    let tiny = f32::from_bits(1);
    let s = x * p2(-130);
    let mut t = vec![
        [x, x, p2(-60)],
        [x, x, tiny],
        [x, x, -tiny],
        [s, x * p2(100), p2(-90)],
        [x * p2(100), s, -p2(-90)],
        [s, 0.0, p2(-90)],
    ];
    for i in 0..64 {
        let a = f32::from_bits(0x3f80_0000 | (i * 0x1_2345 + 0x777) & 0x7f_ffff);
        let b = f32::from_bits(0x3f80_0000 | (i * 0x3_0f0f + 0x123) & 0x7f_ffff);
        t.push([a, b, -(a * b)]);
    }
    let bare = fma_on_device(&mut cache, &t, false, false).unwrap();
    let decided: Vec<usize> = (0..t.len())
        .filter(|&i| bare[i] != t[i][0].mul_add(t[i][1], t[i][2]).to_bits())
        .collect();
    eprintln!(
        "{}: the bare fma differs from one rounding on {} of {} triples",
        ctx.adapter(),
        decided.len(),
        t.len()
    );
    let plain = vgpu_gpu::f32_subnormals_kept(ctx).unwrap().plain;
    for compares in [false, plain] {
        let guarded = fma_on_device(&mut cache, &t, true, compares).unwrap();
        for &i in &decided {
            let want = t[i][0].mul_add(t[i][1], t[i][2]).to_bits();
            let emulated = must_emulate(t[i], bare[i]);
            let expect = if emulated { want } else { bare[i] };
            assert_eq!(
                guarded[i], expect,
                "{:?} (compares {compares}): emulated {emulated}",
                t[i]
            );
        }
    }
    // Not vacuous where the device's fma is a multiply-then-add (lavapipe's):
    // every tie and cancellation decides.
    if !fma_f32_fused(ctx).unwrap() {
        assert!(decided.len() > 60, "{decided:?}");
    }
}
