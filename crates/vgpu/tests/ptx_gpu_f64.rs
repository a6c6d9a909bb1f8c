//! The GPU path's f64 arithmetic (`add`, `sub`, `mul`, `min`, `max`, `neg`,
//! `abs` on `.f64`) and conversions (`cvt.rn.f64.{s64,u64,s32}`,
//! `cvt.f64.u32`, `cvt.rn.f32.f64`, `cvt.f64.f32`), and f64 and b32 values
//! split into and packed from halves (`mov.b64 {lo, hi}, %fd`, `mov.b32 %r,
//! {%rs, %rs}`) equal the interpreter's bit
//! for bit on adversarial inputs: zeros of both signs, infinities, NaNs with
//! payloads, the largest and smallest normals, subnormals, near-ties of the
//! f64 → f32 rounding, sums that cancel, products that overflow and
//! underflow, integers past 2^53. Skipped without an adapter unless
//! `VGPU_REQUIRE_GPU=1`; refused by name where the adapter lacks SHADER_F64 or
//! SHADER_INT64.

mod common;

use common::ptx_gpu::{assert_same_bytes, in_out, line, word, Kernel, Rng, IN_OUT};

/// Bytes each thread writes.
const STRIDE: usize = 144;

/// Special f64 values.
const SPECIAL: [u64; 14] = [
    0,
    0x8000_0000_0000_0000, // -0
    0x7ff0_0000_0000_0000, // +inf
    0xfff0_0000_0000_0000, // -inf
    0x7ff8_0000_0000_0001, // NaN with a payload
    0xfff4_0000_0000_0000, // negative signalling NaN
    0x7fef_ffff_ffff_ffff, // largest normal
    0x0010_0000_0000_0000, // smallest normal
    0x0000_0000_0000_0001, // smallest subnormal
    0x800f_ffff_ffff_ffff, // largest negative subnormal
    0x3ff0_0000_0000_0000, // 1
    0x3ff0_0000_1000_0000, // 1 + 2^-24: a tie of the f32 rounding
    0x3ff0_0000_1000_0001, // just above that tie
    0x47ef_ffff_f000_0000, // f32::MAX rounded up: the f32 overflow tie
];

/// Four words per thread: x, y, z (f64 bits) and an integer.
fn inputs(n: usize) -> Vec<u64> {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut v = Vec::with_capacity(4 * n);
    for i in 0..n {
        let pick = |r: &mut Rng| -> u64 {
            match r.next64() % 4 {
                0 => SPECIAL[(r.next64() % SPECIAL.len() as u64) as usize],
                // Random numbers of moderate exponent (sums that cancel, exact
                // products) and any bits at all.
                1 => (r.next64() & 0x800f_ffff_ffff_ffff) | (0x3f0u64 + r.next64() % 32) << 52,
                _ => r.next64(),
            }
        };
        let x = pick(&mut r);
        // Half the time y is near x or -x (cancellation, equal operands).
        let y = match i % 4 {
            0 => x ^ 0x8000_0000_0000_0000,
            1 => x.wrapping_add(r.next64() % 3),
            _ => pick(&mut r),
        };
        let z = pick(&mut r);
        let k = match i % 3 {
            0 => r.next64(),
            1 => (1u64 << 53) + r.next64() % 1024,
            _ => (r.next64() % 2000).wrapping_sub(1000),
        };
        v.extend([x, y, z, k]);
    }
    v
}

/// `tests/kernels/f64ops.ptx`: every operation, [`STRIDE`] bytes per thread.
#[test]
fn f64_operations_match_the_interpreter() {
    let Some(kernel) = Kernel::load_f64("f64ops") else {
        return;
    };
    let n = 4096usize;
    let x = inputs(n);
    let bufs = in_out(&x, u64::to_le_bytes, STRIDE * n);
    let (cpu, gpu) = kernel.on_both(&line((n / 128) as u32, 128, 0), &IN_OUT, &bufs, 1);
    // Every word a thread owns, named by its byte offset, each thread by its
    // x, y, z and integer.
    assert_same_bytes(&cpu, &gpu, STRIDE, &x, 4);
    // Not vacuous: the sums differ between threads, and some are NaN (the
    // canonical NaN's high word) while others are not.
    let hi = |t: usize| word(&cpu, STRIDE / 4 * t + 1);
    assert!((1..n).any(|t| hi(t) != hi(0)));
    assert!((0..n).any(|t| hi(t) == 0x7fff_ffff) && (0..n).any(|t| hi(t) != 0x7fff_ffff));
}
