//! The GPU path's `ex2.approx{.ftz}.f32` equals the interpreter's bit for bit:
//! both are the correctly rounded f32 of `2^x`, computed on integers by the
//! same steps (vgpu-ir `cfg::ex2_f32` in the interpreter, the emitted
//! `ex2_f32` in WGSL: no f64, no platform `exp2`). The inputs: zeros,
//! infinities, NaNs, subnormals (read as zero under `.ftz`), the edges of
//! overflow (128) and of underflow (−150, results subnormal in (−150, −126),
//! flushed under `.ftz`), integers and half-integers, the inputs whose `2^x`
//! lies nearest an f32 rounding boundary ([`EX2_NEAR_TIES`], from the
//! exhaustive scan in vgpu-ir), `0x3b429d37` (where an f64 evaluation on
//! lavapipe came out 1 ulp high), the neighbours of each, and random words.
//! Skipped without an adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::{assert_same_bytes, in_out, line, word, Kernel, Rng, F32_SPECIALS, IN_OUT};
use vgpu::ir::cfg::EX2_NEAR_TIES;

/// `n` inputs (a multiple of 128): the specials, edges and near ties with
/// their neighbours first, then structured and random words.
fn inputs(n: usize) -> Vec<u32> {
    let mut v = F32_SPECIALS.to_vec();
    v.extend([
        0x0000_0001,
        0x8000_0001,
        0x007f_ffff,
        0x807f_ffff,
        0x0080_0000,
        0x3300_0000,
        0xb300_0000,
        0x42ff_ffff,
        0x4300_0000,
        0x4300_0001,
        0xc2fc_0000,
        0xc2fc_0001,
        0xc315_ffff,
        0xc316_0000,
        0xc316_0001,
        0xc315_8000,
        0x3f80_0000,
        0x3f00_0000,
        0xbf00_0000,
    ]);
    for c in EX2_NEAR_TIES.iter().copied().chain([0x3b42_9d37]) {
        v.extend([c - 1, c, c + 1]);
    }
    for k in -300i32..256 {
        v.push((k as f32 / 2.0).to_bits());
    }
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    while v.len() < n {
        let i = v.len() as u32;
        v.push(match i % 6 {
            // |x| < 1, where the fraction has the most bits.
            0 => (r.next32() % (0x3f80_0000 - 0x3300_0000) + 0x3300_0000) | (i & 8) << 28,
            // Results subnormal: x in (−150, −126).
            1 => (-126.0 - 24.0 * (r.next32() as f32 / u32::MAX as f32)).to_bits(),
            // Large |x| up to the overflow and underflow edges.
            2 => (r.next32() % (0x4316_0000 - 0x4200_0000) + 0x4200_0000) | (i & 8) << 28,
            3 => r.next32() & 0x807f_ffff,
            _ => r.next32(),
        });
    }
    v.truncate(n);
    v
}

/// `tests/kernels/ex2.ptx`: `ex2.approx.f32` and its `.ftz` form per thread.
#[test]
fn ex2_approx_matches_the_interpreter() {
    let Some(kernel) = Kernel::load("ex2") else {
        return;
    };
    let n = 1 << 16;
    let x = inputs(n);
    let bufs = in_out(&x, u32::to_le_bytes, 8 * n);
    let (cpu, gpu) = kernel.on_both(&line((n / 128) as u32, 128, 0), &IN_OUT, &bufs, 1);
    let named: Vec<u64> = x.iter().map(|&v| v as u64).collect();
    assert_same_bytes(&cpu, &gpu, 8, &named, 1);
    // Not vacuous: the interpreter's results are 2^x. Each is within one ulp
    // of the platform's f64 exp2 rounded to f32 (which rounds twice), equal
    // to it on nearly every input, and .ftz differs exactly where it should.
    let mut differ = 0;
    for (t, &b) in x.iter().enumerate() {
        let xf = f32::from_bits(b);
        let (r, rf) = (word(&cpu, 2 * t), word(&cpu, 2 * t + 1));
        if xf.is_nan() {
            assert_eq!((r, rf), (0x7fff_ffff, 0x7fff_ffff), "{b:#x}");
            continue;
        }
        let libm = (xf as f64).exp2() as f32;
        if r != libm.to_bits() {
            differ += 1;
            assert_eq!(
                r.abs_diff(libm.to_bits()),
                1,
                "2^{xf:e}: {r:#x} vs {libm:e}"
            );
        }
        let sub = |v: u32| v & 0x7f80_0000 == 0 && v & 0x7fff_ffff != 0;
        let want_ftz = if sub(b) {
            0x3f80_0000
        } else if sub(r) {
            0
        } else {
            r
        };
        assert_eq!(rf, want_ftz, "ftz 2^{xf:e}");
    }
    assert!(
        differ < 8,
        "{differ} results differ from f64 exp2 by an ulp"
    );
    let w = |t: usize| word(&cpu, 2 * t);
    assert!((0..n).any(|t| w(t) == 0x7f80_0000) && (0..n).any(|t| w(t) == 0));
    assert!((0..n).filter(|&t| w(t) != 0 && w(t) < 0x0080_0000).count() > 1000);
}
