//! The GPU path's f32 arithmetic with PTX's `.ftz` and `.sat` (`add`, `sub`,
//! `mul`, `div.{rn,approx,full}`, `min`, `max`, `abs`, `neg`,
//! `sqrt.{rn,approx}`, `rcp.{rn,approx}`, `rsqrt.approx`, `lg2.approx`,
//! `fma.rn`, `mad.rn`, the fmas the decoder contracts from `mul.ftz` and
//! `add.ftz`/`sub.ftz`, `setp.ftz`; and `sqrt.approx`/`rcp.approx` without
//! them) equals the interpreter's bit for bit on adversarial inputs:
//! subnormal operands of both signs (read as zeros), results that fall below
//! 2⁻¹²⁶ (written as zeros of their sign) or round up onto it, sums that
//! cancel, `.sat`'s edges (NaN, −0, negatives, 1 and just above), specials
//! and random bits. Skipped without an adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::{assert_same_bytes, in_out, line, word, Kernel, Rng, F32_SPECIALS, IN_OUT};
use vgpu::gpu::FmaF32Path;

/// Bytes each thread writes (tests/kernels/f32mods.ptx).
const STRIDE: usize = 124;

/// f32 values at the edges `.ftz` and `.sat` meet.
const EDGES: [u32; 14] = [
    0x0000_0001,
    0x8000_0001, // the least subnormals
    0x007f_ffff,
    0x807f_ffff, // the greatest subnormals
    0x0080_0000,
    0x8080_0000, // the least normals, 2^-126
    0x0080_0001,
    0x3f80_0000, // 2^-126 (1 + 2^-23), 1
    0x3f80_0001,
    0xbf80_0000, // 1 + 2^-23, -1
    0x3f00_0000,
    0x1f80_0000, // 0.5, 2^-64
    0x2000_0000,
    0x7f7f_ffff, // 2^-63 (squares near 2^-126), the largest
];

/// One f32: special, an edge, a small scaling of one, or any bits.
fn pick(r: &mut Rng) -> u32 {
    match r.next64() % 5 {
        0 => F32_SPECIALS[(r.next64() % F32_SPECIALS.len() as u64) as usize],
        1 => EDGES[(r.next64() % EDGES.len() as u64) as usize],
        // Near 2^-63 and 2^-64: products near 2^-126.
        2 => {
            (0x1f80_0000 + ((r.next32() % 0x0100_0000) & 0x00ff_ffff)) ^ (r.next32() & 0x8000_0000)
        }
        _ => r.next32(),
    }
}

/// Three words per thread, a b c, packed as `a | b << 32` and `c`.
fn inputs(n: usize) -> Vec<u64> {
    let mut r = Rng(0x3c6e_f372_fe94_f82b);
    let mut v = Vec::with_capacity(2 * n);
    for i in 0..n {
        let (a, mut b, mut c) = (pick(&mut r), pick(&mut r), pick(&mut r));
        match i % 4 {
            // b = -a, c = -a·b: sums that cancel, fmas near zero.
            0 => {
                b = a ^ 0x8000_0000;
                c = (f32::from_bits(a) * f32::from_bits(b)).to_bits() ^ 0x8000_0000;
            }
            // c a subnormal beside a small product.
            1 => c = r.next32() & 0x807f_ffff,
            _ => {}
        }
        v.extend([a as u64 | (b as u64) << 32, c as u64]);
    }
    v
}

/// Packs the three words as the kernel reads them (12 bytes a thread).
fn bytes(x: &[u64]) -> Vec<u32> {
    x.chunks(2)
        .flat_map(|p| [p[0] as u32, (p[0] >> 32) as u32, p[1] as u32])
        .collect()
}

#[test]
fn ftz_and_sat_f32_operations_match_the_interpreter() {
    let Some(kernel) = Kernel::load_f64("f32mods") else {
        return;
    };
    let n = 4096usize;
    let x = inputs(n);
    let bufs = in_out(&bytes(&x), u32::to_le_bytes, STRIDE * n);
    let cfg = line((n / 128) as u32, 128, 0);
    let (cpu, gpu) = kernel.on_both(&cfg, &IN_OUT, &bufs, 1);
    assert_same_bytes(&cpu, &gpu, STRIDE, &x, 2);
    // The fmas as a device whose `fma` flushes subnormals runs them
    // (guarded), here over a model of NVIDIA's `FFMA.FTZ`.
    let (cpu2, gpu2, _) = kernel.on_both_fma(FmaF32Path::FlushModel, &cfg, &IN_OUT, &bufs, 1);
    assert_eq!(cpu, cpu2);
    assert_same_bytes(&cpu2, &gpu2, STRIDE, &x, 2);
    // Not vacuous: add.ftz (word 0) flushes a subnormal sum to a zero for
    // some threads and keeps normal sums for others; fma.rn.ftz (word 20)
    // gives zeros where the exact fma's result is subnormal; .sat (word 3)
    // clamps to 1 and keeps values inside.
    let w = |t: usize, i: usize| word(&cpu, STRIDE / 4 * t + i);
    let subnormal = |v: u32| v & 0x7f80_0000 == 0 && v & 0x007f_ffff != 0;
    assert!((0..n).all(|t| !subnormal(w(t, 0)) && !subnormal(w(t, 20))));
    let sum = |t: usize| {
        let (a, b) = (
            f32::from_bits(x[2 * t] as u32),
            f32::from_bits((x[2 * t] >> 32) as u32),
        );
        a + b
    };
    assert!((0..n).any(|t| sum(t).is_subnormal() && w(t, 0) & 0x7fff_ffff == 0));
    assert!(
        (0..n).any(|t| w(t, 3) == 0x3f80_0000)
            && (0..n).any(|t| {
                let v = f32::from_bits(w(t, 3));
                v > 0.0 && v < 1.0
            })
    );
}
