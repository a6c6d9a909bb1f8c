//! Shared memory indexed once per base: a word load or store at `base + 4k`
//! reads `smem[min(base >> 2, CAP) + k]` on an array padded past its end.
//!
//! naga clamps every index of a workgroup array (`min(i, len − 1)`), and
//! `(base + 4k) >> 2` hides from the driver that a run of accesses shares one
//! base: a tiled matmul's 32 tile loads each paid an add, a shift and a clamp
//! (16% of unchecked `matmul_tiled` on the H100, session 21). With one clamp
//! of the base and a constant `k` added after it, the driver sees that
//! naga's clamp cannot bite (the array is `CAP + kmax + 1` words long) and
//! addresses each load from the one clamped base.
//!
//! Which accesses: 4-byte shared loads and stores at offsets that are
//! multiples of 4 from their base, in unchecked kernels or proven in bounds
//! and aligned (ranges.rs) in checked ones. For each of them that is in
//! bounds (its word below `SWORDS`, the array's own length) the index is the
//! same: `base >> 2 ≤ SWORDS − 1 − kmin = CAP`, so the clamp leaves the base
//! alone and `(base >> 2) + k` is its word (`base + 4k` does not wrap). An
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
        let pad = (kmax - kmin) as u64;
        if pad > self.o.smem_pad_words as u64 {
            return None;
        }
        let cap = swords - 1 + (-kmin) as u64;
        Some(SmemPad {
            cap,
            kmin,
            words: cap + kmax as u64 + 1,
        })
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
        let clamped = format!("min({b} >> 2u, {}u)", pad.cap);
        Some(match k {
            0 => (clamped, "_in"),
            k if k > 0 => (format!("{clamped} + {k}u"), "_in"),
            k => (format!("{clamped} - {}u", -k), ""),
        })
    }
}
