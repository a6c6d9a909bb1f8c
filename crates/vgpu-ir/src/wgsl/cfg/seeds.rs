//! The region caches' first guess: the launch buffer a global address's
//! kernel parameter points into.
//!
//! A checked kernel's global or generic access site keeps the region its
//! last access found (`gaddr`'s cache, access.rs), so that an access inside
//! it needs no search of the launch's table of regions. A thread's first
//! access at a site finds the cache empty and searches, which costs a kernel
//! whose threads make few accesses (a reduction loads one value per thread)
//! about as much as the rest of its checks. Most addresses derive from a
//! pointer parameter (`ld.param.u64`, then `cvta`, adds and `mad.wide`s of
//! offsets), so each site's cache starts as the region that parameter
//! points into, which the host finds once per launch (launch words from
//! [`super::meta::SEEDS`]: per 8-byte parameter slot, that region for loads,
//! and for stores and atomics the same if it is writable, else empty).
//!
//! The guess is only a guess: an access outside the cached region searches
//! as before, so the origin found here needs no proof (a register defined
//! from two parameters, or reused, has none). A store's cache holds only
//! writable regions, as after a search.

use super::writer::KernelWriter;
use crate::cfg::{BinOp, CfgKernel, Inst, Space, TernOp, UnOp, Val};
use std::fmt::Write as _;

/// A register's parameter origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// None found (yet).
    Unset,
    /// The 8-byte parameter at this byte offset.
    Param(u64),
    /// More than one.
    Many,
}

impl Origin {
    fn join(self, o: Origin) -> Origin {
        match (self, o) {
            (Origin::Unset, x) | (x, Origin::Unset) => x,
            (Origin::Param(a), Origin::Param(b)) if a == b => self,
            _ => Origin::Many,
        }
    }
}

/// Each register's parameter slot (byte offset / 8) where all of its
/// definitions that carry a pointer derive it from one 8-byte parameter,
/// flow-insensitively: a parameter's 64-bit load, and moves, 64-bit adds,
/// subtractions (of an offset from a pointer), `mad.wide`'s addend and
/// selections of such values.
pub(super) fn param_slots(k: &CfgKernel) -> Vec<Option<u32>> {
    let mut o = vec![Origin::Unset; k.regs.len()];
    let of = |o: &[Origin], v: Val| match v {
        Val::Reg(r) => o[r as usize],
        Val::Imm(_) => Origin::Unset,
    };
    loop {
        let mut changed = false;
        for s in k.blocks.iter().flat_map(|b| &b.stmts) {
            let (d, x) = match s.inst {
                Inst::Load {
                    space: Space::Param,
                    size: 8,
                    ref d,
                    base: Val::Imm(b),
                    off,
                    ..
                } if d.len() == 1 => match d[0] {
                    Some(r) => (r, Origin::Param(b.wrapping_add(off as u64))),
                    None => continue,
                },
                Inst::Un {
                    op: UnOp::Mov(64),
                    d,
                    a,
                } => (d, of(&o, a)),
                Inst::Bin {
                    op: BinOp::Add(64),
                    d,
                    a,
                    b,
                } => (d, of(&o, a).join(of(&o, b))),
                Inst::Bin {
                    op: BinOp::Sub(64),
                    d,
                    a,
                    ..
                } => (d, of(&o, a)),
                Inst::Tern {
                    op: TernOp::MadWide { .. },
                    d,
                    c,
                    ..
                } => (d, of(&o, c)),
                Inst::Tern {
                    op: TernOp::Selp(64),
                    d,
                    a,
                    b,
                    ..
                } => (d, of(&o, a).join(of(&o, b))),
                _ => continue,
            };
            let j = o[d as usize].join(x);
            if j != o[d as usize] {
                o[d as usize] = j;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    o.into_iter()
        .map(|x| match x {
            Origin::Param(p) if p % 8 == 0 && p + 8 <= k.param_bytes as u64 => Some((p / 8) as u32),
            _ => None,
        })
        .collect()
}

impl KernelWriter<'_> {
    /// The parameter slot an access at `base` derives its address from, if
    /// one ([`param_slots`]).
    pub(super) fn seed_of(&self, base: Val) -> Option<u32> {
        match base {
            Val::Reg(r) => self.param_slots.get(r as usize).copied().flatten(),
            Val::Imm(_) => None,
        }
    }

    /// `seed_caches`, which each thread of a checked kernel runs first: the
    /// caches handed out with a parameter slot start as its region (loads'
    /// caches the region, stores' and atomics' its writable one).
    pub(super) fn seed_fn(&self) -> String {
        let mut s = format!(
            "fn seed_caches() {{\n  let s = words[{}];\n",
            super::meta::SEEDS
        );
        for (i, seed) in self.site_seeds.iter().enumerate() {
            if let Some((slot, write, span)) = seed {
                let w = 4 * slot + 2 * (*write as u32);
                let _ = writeln!(
                    s,
                    "  gc{i} = vec2<u32>(words[s + {w}u], cache_len(words[s + {}u], {span}u));",
                    w + 1
                );
            }
        }
        s.push_str("}\n");
        s
    }
}
