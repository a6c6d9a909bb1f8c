//! How the global accesses of a counted loop move over its iterations, for
//! loop versioning (versioned.rs): each access's base is [`Motion::Fixed`]
//! (not written in the loop), [`Motion::Stepped`] (a 64-bit pointer stepped
//! by an immediate in every iteration) or [`Motion::Indexed`] (`q +
//! mul.wide(x, c)` with `x` stepped in every iteration by a value the same
//! in all), found on the kernel's IR from each register's one definition in
//! the loop and where it runs in the iteration (before the access on every
//! path, or after it on every path).

use super::bounded::{sole_def, written_in, VisitBound};
use crate::cfg::shape::{Loop, Shape};
use crate::cfg::{BinOp, BlockId, CfgKernel, Inst, Reg, Space, Stmt, Val};
use std::collections::HashMap;

/// A statement's place: its block and index.
type Pos = (usize, usize);

/// How a global access's base moves over the iterations `j` of one entry
/// into the loop (module documentation). `delta` is 1 where the step runs
/// before the access in each iteration, else 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Motion {
    /// The base, not written in the loop.
    Fixed(Val),
    /// `p + (j + delta) * step`, `p` the base's value on entry.
    Stepped { p: Reg, delta: u64, step: u64 },
    /// `q + ext(x + (j + delta) * s) * scale`, `x` its value on entry.
    Indexed {
        q: Val,
        x: Reg,
        delta: u64,
        s: Step,
        scale: u64,
    },
}

/// An index's step, the same in every iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// An immediate or a register the loop does not write.
    Val(Val),
    /// `op(a, b)` of such values, computed in the loop before its use.
    Bin(BinOp, Val, Val),
}

/// The global accesses of the loop with header `h` (a counted loop,
/// `vb`), each statement's address motion; `None` where one does not move
/// in a way [`motion`] follows, or the loop has a generic access.
pub(super) fn loop_sites(
    k: &CfgKernel,
    shape: &Shape,
    h: usize,
    vb: &VisitBound,
) -> Option<HashMap<*const Stmt, Motion>> {
    let lp = shape.loops.get(h)?.as_ref()?;
    let mut sites = HashMap::new();
    for (b, blk) in k.blocks.iter().enumerate().filter(|&(b, _)| lp.body[b]) {
        for (i, s) in blk.stmts.iter().enumerate() {
            let (space, base) = match s.inst {
                Inst::Load { space, base, .. }
                | Inst::Store { space, base, .. }
                | Inst::Atom { space, base, .. } => (space, base),
                _ => continue,
            };
            match space {
                Space::Global => {
                    let m = motion(k, shape, lp, h, vb.latch, (b, i), base)?;
                    sites.insert(s as *const Stmt, m);
                }
                Space::Generic => return None,
                _ => {}
            }
        }
    }
    Some(sites)
}

/// The motion of base `v` of the access at `u` (module documentation).
fn motion(
    k: &CfgKernel,
    shape: &Shape,
    lp: &Loop,
    h: usize,
    latch: usize,
    u: Pos,
    v: Val,
) -> Option<Motion> {
    let Val::Reg(p) = v else {
        return Some(Motion::Fixed(v));
    };
    if !written_in(k, lp, p) {
        return Some(Motion::Fixed(v));
    }
    let (db, di, def) = sole_def(k, lp, p)?;
    if def.guard.is_some() {
        return None;
    }
    if let Some((c, delta)) = stepped(k, shape, lp, h, latch, p, 64, u) {
        let Step::Val(Val::Imm(step)) = c else {
            return None;
        };
        return Some(Motion::Stepped { p, delta, step });
    }
    // `p = q + w` this iteration, `w = x * scale` widened before it.
    let Inst::Bin {
        op: BinOp::Add(64),
        a,
        b,
        ..
    } = def.inst
    else {
        return None;
    };
    if !before(shape, (db, di), u) {
        return None;
    }
    let fixed = |v: Val| match v {
        Val::Reg(r) => !written_in(k, lp, r),
        Val::Imm(_) => true,
    };
    let (q, w) = match (a, b) {
        (q, Val::Reg(w)) if fixed(q) => (q, w),
        (Val::Reg(w), q) if fixed(q) => (q, w),
        _ => return None,
    };
    let (wb, wi, wdef) = sole_def(k, lp, w)?;
    if wdef.guard.is_some() || !before(shape, (wb, wi), (db, di)) {
        return None;
    }
    let (x, scale) = match wdef.inst {
        Inst::Bin {
            op: BinOp::MulWide { .. },
            a: Val::Reg(x),
            b: Val::Imm(c),
            ..
        }
        | Inst::Bin {
            op: BinOp::MulWide { .. },
            a: Val::Imm(c),
            b: Val::Reg(x),
            ..
        } => (x, c & 0xffff_ffff),
        _ => return None,
    };
    let (s, delta) = stepped(k, shape, lp, h, latch, x, 32, (wb, wi))?;
    Some(Motion::Indexed {
        q,
        x,
        delta,
        s,
        scale,
    })
}

/// Where `r`'s one definition in the loop is `r = r + s` on `bits` bits,
/// unguarded, run in every iteration (its block on every path to the
/// latch), `s` the same in every iteration: `s` and whether the step runs
/// before `u` in each iteration (1) or after it (0); `None` where neither
/// holds on every path.
#[allow(clippy::too_many_arguments)]
fn stepped(
    k: &CfgKernel,
    shape: &Shape,
    lp: &Loop,
    h: usize,
    latch: usize,
    r: Reg,
    bits: u8,
    u: Pos,
) -> Option<(Step, u64)> {
    let (db, di, def) = sole_def(k, lp, r)?;
    let Inst::Bin {
        op: BinOp::Add(w),
        a,
        b,
        ..
    } = def.inst
    else {
        return None;
    };
    let s = match (a, b) {
        (Val::Reg(a), s) if a == r => s,
        (s, Val::Reg(b)) if b == r => s,
        _ => return None,
    };
    if w != bits || def.guard.is_some() || !shape.dominates(db as BlockId, latch as BlockId) {
        return None;
    }
    let s = invariant(k, shape, lp, s, (db, di))?;
    let delta = if before(shape, (db, di), u) {
        1
    } else if after(k, shape, lp, h, (db, di), u) {
        0
    } else {
        return None;
    };
    Some((s, delta))
}

/// `v` at `u` as a value the same in every iteration: an immediate, a
/// register the loop does not write, or one whose one definition in the
/// loop, unguarded and before `u`, is a binary operation of those.
fn invariant(k: &CfgKernel, shape: &Shape, lp: &Loop, v: Val, u: Pos) -> Option<Step> {
    let fixed = |v: Val| match v {
        Val::Reg(r) => !written_in(k, lp, r),
        Val::Imm(_) => true,
    };
    if fixed(v) {
        return Some(Step::Val(v));
    }
    let Val::Reg(r) = v else { return None };
    let (db, di, def) = sole_def(k, lp, r)?;
    match def.inst {
        Inst::Bin { op, a, b, .. }
            if def.guard.is_none() && fixed(a) && fixed(b) && before(shape, (db, di), u) =>
        {
            Some(Step::Bin(op, a, b))
        }
        _ => None,
    }
}

/// Whether the statement at `d` runs before the one at `u` in every
/// iteration that reaches `u` (it dominates it).
fn before(shape: &Shape, d: Pos, u: Pos) -> bool {
    if d.0 == u.0 {
        d.1 < u.1
    } else {
        shape.dominates(d.0 as BlockId, u.0 as BlockId)
    }
}

/// Whether the statement at `d` runs after the one at `u` wherever both
/// run in one iteration: no path inside the loop leads from `d` to `u`
/// without passing the header `h`.
fn after(k: &CfgKernel, shape: &Shape, lp: &Loop, h: usize, d: Pos, u: Pos) -> bool {
    if d.0 == u.0 {
        return u.1 < d.1;
    }
    let mut seen = vec![false; k.blocks.len()];
    let mut todo = vec![d.0];
    while let Some(b) = todo.pop() {
        for &t in &shape.succs[b] {
            let t = t as usize;
            // Back at the header is the next iteration.
            if t == h || !lp.body[t] {
                continue;
            }
            if t == u.0 {
                return false;
            }
            if !seen[t] {
                seen[t] = true;
                todo.push(t);
            }
        }
    }
    true
}
