//! Shared memory indexed once per base: a word load or store at `base + 4k`
//! reads `smem[((base >> 2) & CAP) + k]` (or `smem[min(base >> 2, CAP) + k]`)
//! on an array padded past its end.
//!
//! naga clamps every index of a workgroup array (`min(i, len − 1)`), and
//! `(base + 4k) >> 2` hides from the driver that a run of accesses shares one
//! base: a tiled matmul's 32 tile loads each paid an add, a shift and a clamp
//! (16% of unchecked `matmul_tiled` on the H100, session 21). With one clamp
//! of the base and a constant `k` added after it, the driver sees that the
//! index stays in the array (`CAP + kmax + 1` words long) and addresses each
//! load from the one clamped base.
//!
//! The clamp is a mask where the padding allows it: `CAP` is then one less
//! than a power of two, so `(base >> 2) & CAP` keeps the base's low zero
//! bits, and the driver can see that a tile row's words `k = 0, 1, 2, 3` lie
//! in one aligned 16-byte group and read them with one vector load (NVIDIA's
//! `LDS.128`, as ptxas does for CUDA's own `matmul_tiled`); `min` hides that
//! alignment. On the H100 (session 27, `mask_variants.sh`) the mask saved 0.8
//! ms of unchecked and 1.6 ms of checked `matmul_tiled` (36.0 → 35.2, 46.3 →
//! 44.6 ms), and 3.9 ms where the fma regions' tests were taken out (21.7 →
//! 17.8 ms, CUDA 16.9 ms). Otherwise (the padding to the next power of two
//! past the launch's allowance) the clamp is `min`.
//!
//! Which accesses: 4-byte shared loads and stores at offsets that are
//! multiples of 4 from their base, in unchecked kernels or proven in bounds
//! and aligned (ranges.rs) in checked ones. For each of them that is in
//! bounds (its word below `SWORDS`, the array's own length) the index is the
//! same: `base >> 2 ≤ SWORDS − 1 − kmin ≤ CAP`, so either clamp leaves the
//! base alone (the mask's `CAP + 1` is a power of two above the base) and
//! `(base >> 2) + k` is its word (`base + 4k` does not wrap). An
//! out-of-bounds access of an unchecked kernel reads or writes some word of
//! the array, as naga's clamp makes it. Where the padding (`kmax − kmin`
//! words) exceeds what the launch allows
//! ([`super::CfgWgslOptions::smem_pad_words`]), nothing is padded.

use super::access::element_align;
use super::writer::{KernelWriter, SmemPad};
use crate::cfg::{Inst, Space, Stmt, Val};

impl KernelWriter<'_> {
    /// Whether element `i` of statement `s` (a shared load or store of
    /// `size`-byte elements at `off`, the first aligned to `align`) is
    /// indexed through the padded form: a word at a multiple of 4, and the
    /// kernel unchecked or the access proven (ranges.rs).
    fn padded_element(&self, s: &Stmt, at: i64, size: u8, align: u32) -> bool {
        size == 4
            && at % 4 == 0
            && (!self.o.checked || self.proven(Space::Shared, s, at, (size, align)))
    }

    /// Every shared word access the padded form would index, as its word
    /// offset `k`.
    fn padded_offsets(&self) -> Vec<i64> {
        let mut ks = Vec::new();
        for s in self.k.blocks.iter().flat_map(|b| &b.stmts) {
            let (size, off, n) = match &s.inst {
                Inst::Load {
                    space: Space::Shared,
                    size,
                    off,
                    d,
                    ..
                } => (*size, *off, d.len()),
                Inst::Store {
                    space: Space::Shared,
                    size,
                    off,
                    src,
                    ..
                } => (*size, *off, src.len()),
                _ => continue,
            };
            for i in 0..n {
                let align = element_align(size, n, i);
                let at = off + i as i64 * size as i64;
                if self.padded_element(s, at, size, align) {
                    ks.push(at.div_euclid(4));
                }
            }
        }
        ks
    }

    /// The padding for a kernel whose shared array holds `swords` words, if
    /// any access takes it and it fits the launch's allowance.
    pub(super) fn smem_pad(&self, swords: u64) -> Option<SmemPad> {
        let ks = self.padded_offsets();
        let kmin = ks.iter().copied().min()?.min(0);
        let kmax = ks.iter().copied().max()?.max(0);
        let allowed = self.o.smem_pad_words as u64;
        let least = swords - 1 + (-kmin) as u64;
        // The mask's CAP: all ones from the least CAP's top bit down.
        let masked = (least + 1).next_power_of_two() - 1;
        for (cap, mask) in [(masked, true), (least, false)] {
            let words = cap + kmax as u64 + 1;
            if words - swords <= allowed {
                return Some(SmemPad {
                    cap,
                    kmin,
                    words,
                    mask,
                });
            }
        }
        None
    }

    /// The padded index of element `at` (bytes from `base`) of statement
    /// `s`, where the kernel is padded and the element takes it, and the
    /// suffix of the word reader or writer that takes it: `_in` (no clamp)
    /// where `k ≥ 0`, so that the index is at most `CAP + kmax`, below the
    /// array's length whatever the base; a negative `k` can wrap below zero
    /// for an out-of-bounds base and keeps the clamping reader.
    pub(super) fn padded_index(
        &self,
        s: &Stmt,
        base: Val,
        at: i64,
        size: u8,
        align: u32,
    ) -> Option<(String, &'static str)> {
        let pad = self.pad?;
        if !self.padded_element(s, at, size, align) {
            return None;
        }
        let k = at.div_euclid(4);
        debug_assert!(k >= pad.kmin);
        let b = self.v32(base);
        let clamped = if pad.mask {
            format!("(({b} >> 2u) & {}u)", pad.cap)
        } else {
            format!("min({b} >> 2u, {}u)", pad.cap)
        };
        Some(match k {
            0 => (clamped, "_in"),
            k if k > 0 => (format!("{clamped} + {k}u"), "_in"),
            k => (format!("{clamped} - {}u", -k), ""),
        })
    }
}
