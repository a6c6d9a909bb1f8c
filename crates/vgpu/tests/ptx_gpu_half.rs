//! The GPU path's half-precision arithmetic (`add`, `sub`, `mul`, `fma.rn`,
//! `min`, `max`, `neg`, `abs` on `.f16` and `.f16x2`, with `.ftz` and `.sat`,
//! and the fma the decoder contracts from a `mul` and an `add`/`sub`) equals
//! the interpreter's bit for bit on adversarial inputs: zeros of both signs,
//! infinities, NaNs with payloads, the largest finite and smallest normal,
//! subnormals, operands whose sum or product overflows, cancels or lands
//! on the ties of the f16 rounding, and fmas whose f32 sum is an f16 midpoint
//! that only the sum's error decides (the TwoSum step of wgsl/cfg/half.rs).
//! Skipped without an adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::{assert_same_bytes, in_out, line, word, Kernel, Rng, IN_OUT};

/// Bytes each thread writes.
const STRIDE: usize = 84;

/// Special f16 values.
const SPECIAL: [u16; 16] = [
    0x0000, 0x8000, // ±0
    0x7c00, 0xfc00, // ±inf
    0x7e00, 0xfc01, // NaNs
    0x7bff, 0xfbff, // ±65504, the largest
    0x0400, 0x8400, // ±2^-14, the smallest normal
    0x0001, 0x83ff, // subnormals
    0x3c00, 0x3c01, // 1 and 1 + 2^-10
    0x5bff, 0x3800, // 255.9 (squares overflow), 0.5
];

/// One f16 that is special, near 1 or any bits.
fn pick(r: &mut Rng) -> u16 {
    match r.next64() % 4 {
        0 => SPECIAL[(r.next64() % SPECIAL.len() as u64) as usize],
        1 => 0x3c00 ^ (r.next32() as u16 & 0x83ff),
        _ => r.next32() as u16,
    }
}

/// Two words per thread: `a | b << 32` and `c`, each word two f16.
fn inputs(n: usize) -> Vec<u64> {
    let mut r = Rng(0xbb67_ae85_84ca_a73b);
    let mut v = Vec::with_capacity(2 * n);
    for i in 0..n {
        let mut h = [0u16; 6];
        h.iter_mut().for_each(|x| *x = pick(&mut r));
        match i % 4 {
            // b = ±a: sums that cancel exactly.
            0 => {
                h[2] = h[0] ^ 0x8000;
                h[3] = h[1];
            }
            // a = 1.5 · 2^k and b with an odd significand below 1366: the
            // product is an f16 midpoint, and c = ±1..3 · 2^-24 is too small
            // for f32 to keep beside it, so only the sum's error breaks the tie.
            1 => {
                for j in 0..2 {
                    let e = 2 + r.next64() % 6;
                    h[j] = ((15 + e as u16) << 10) | 0x200;
                    let m = 2 * (r.next64() % 171) as u16 + 1;
                    h[2 + j] = (15 << 10) | m;
                    h[4 + j] = ((r.next32() as u16) & 0x8000) | (1 + (r.next64() % 3) as u16);
                }
            }
            _ => {}
        }
        let w = |lo: u16, hi: u16| lo as u64 | (hi as u64) << 16;
        v.extend([w(h[0], h[1]) | w(h[2], h[3]) << 32, w(h[4], h[5])]);
    }
    v
}

/// `tests/kernels/halfops.ptx`: every operation, [`STRIDE`] bytes per thread.
#[test]
fn half_operations_match_the_interpreter() {
    let Some(kernel) = Kernel::load("halfops") else {
        return;
    };
    let n = 4096usize;
    let x = inputs(n);
    let bufs = in_out(&x, u64::to_le_bytes, STRIDE * n);
    let (cpu, gpu) = kernel.on_both(&line((n / 128) as u32, 128, 0), &IN_OUT, &bufs, 1);
    // Every word a thread owns, named by its byte offset, each thread by its
    // two input words.
    assert_same_bytes(&cpu, &gpu, STRIDE, &x, 2);
    // Not vacuous: sums vary, some are NaN (0x7fff) and some are not, and
    // the midpoint fmas (word 3, x·y + c) round both ways: up past the tie
    // (odd significand) and down to it (even).
    let w = |t: usize, i: usize| word(&cpu, STRIDE / 4 * t + i);
    assert!((1..n).any(|t| w(t, 0) != w(0, 0)));
    let nan = |t: usize| w(t, 0) & 0xffff == 0x7fff;
    assert!((0..n).any(nan) && (0..n).any(|t| !nan(t)));
    let mids: Vec<u32> = (0..n).filter(|t| t % 4 == 1).map(|t| w(t, 3) & 1).collect();
    assert!(mids.contains(&0) && mids.contains(&1));
}
