//! The GPU path's bit-manipulation instructions (`bfi` 32/64 with immediate
//! and register lengths, `bfe` u/s 32/64, `prmt` in every mode, `lop3` plain and
//! with `.or`/`.and` predicates, `shf` l/r clamp/wrap, `szext`, `fns`, `dp4a`,
//! `dp2a`) equal the interpreter's bit for bit on adversarial inputs: positions
//! and lengths at, below and past the width, every byte selector, zeros, all
//! ones and random words. Skipped without an adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::{assert_same_bytes, in_out, line, word, Kernel, Rng, IN_OUT};

/// Bytes each thread writes (49 results, 32- and 64-bit, aligned).
const STRIDE: usize = 232;

/// Three words per thread: `x`, `y` (the operands) and `z`, whose bytes are
/// the position (byte 0), the length (byte 1) and the `prmt` selector and
/// `fns` offsets (bytes 2, 3).
fn inputs(n: usize) -> Vec<u64> {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let mut v = Vec::with_capacity(3 * n);
    for i in 0..n {
        let (x, y) = match i % 4 {
            0 => (0, u64::MAX),
            1 => (u64::MAX, r.next64()),
            _ => (r.next64(), r.next64()),
        };
        let small = |r: &mut Rng| r.next64() % 72;
        let z = r.next64();
        // Positions and lengths mostly around the widths, sometimes any byte.
        let pos = if i % 8 == 7 { z & 0xff } else { small(&mut r) };
        let len = if i % 16 == 15 {
            (z >> 8) & 0xff
        } else {
            small(&mut r)
        };
        v.extend([x, y, (z & !0xffff) | pos | (len << 8)]);
    }
    v
}

/// `tests/kernels/bitops.ptx`: every form, [`STRIDE`] bytes per thread.
#[test]
fn bit_operations_match_the_interpreter() {
    let Some(kernel) = Kernel::load("bitops") else {
        return;
    };
    let n = 4096usize;
    let x = inputs(n);
    let bufs = in_out(&x, u64::to_le_bytes, STRIDE * n);
    let (cpu, gpu) = kernel.on_both(&line((n / 128) as u32, 128, 0), &IN_OUT, &bufs, 1);
    // Every word a thread owns, named by its byte offset, each thread by its
    // x, y and z.
    assert_same_bytes(&cpu, &gpu, STRIDE, &x, 3);
    // Not vacuous: the interpreter's results vary (the first bfi differs
    // between threads, and some lop3 predicates are set and some clear).
    let first = |t: usize| word(&cpu, STRIDE / 4 * t);
    assert!((1..n).any(|t| first(t) != first(0)));
}
