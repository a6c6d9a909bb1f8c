//! Loops whose own code ends them. Two kinds:
//!
//! - **Halving loops**, which the watchdog need not test (watchdog.rs): the
//!   tree reduction's `for (s = n / 2; s > 0; s >>= 1)`, whose one latch
//!   goes on only while a register is nonzero and shifts that register
//!   right (unsigned, by an immediate of at least 1) before testing it, and
//!   nothing else in the loop (no statement, no warp operation) writes it.
//!   Each iteration that goes on halves it at least once, so a `b`-bit
//!   register lets at most `b` iterations go on: the header is reached at
//!   most `b + 1` times whatever the loop's other code does, and a thread
//!   that faulted and skips its loads (the structured form's soft checks)
//!   halves it alike, since no load writes it.
//! - **Counted loops**, which end within `2^b` iterations but may run
//!   long: the one latch steps a `b`-bit register `i` by a constant `s`
//!   (its one definition in the loop, unguarded) and goes on while
//!   `i < n` with `s = 1`, while `i > n` with `s = −1`, or while `i ≠ n`
//!   where `s = 2^j·m` (`m` odd) and `i − n` is a multiple of `2^j` on
//!   entry; `n` an immediate or a register the loop does not write. The
//!   values `i` takes then reach `n` (or pass it, for `<` and `>`, without
//!   wrapping) before they repeat. A multiple of `2^j` is known by
//!   [`low_bits_zero`]: nvcc's unrolled loops count `n − (n & (2^j − 1))`
//!   down by `2^j`.
//!
//! An unchecked kernel in structured form whose every loop ends itself
//! ([`every_loop_ends`]) lets the GPU compiler drop its own loop bounds
//! (naga's `force_loop_bounding`, a 64-bit count in every loop): on the
//! H100 unchecked `lorenz_rk4` went from 21.06 to 20.43 ms, `matmul_tiled`
//! from 23.75 to 23.25 and `reduce_sum_atomic` from 0.1662 to 0.1564
//! (session 31; in session 26's tree the same change had slowed the first
//! two).

use super::ranges::msk;
use crate::cfg::shape::{Loop, Shape};
use crate::cfg::{BinOp, BlockId, CfgKernel, ICmp, Inst, Reg, Stmt, Term, UnOp, Val};

/// Whether block `h` is the header of a halving loop of `shape` (module
/// documentation), reached at most 33 times (65 for a 64-bit register) on
/// one entry.
pub(super) fn is_halving_loop(k: &CfgKernel, shape: &Shape, h: usize) -> bool {
    halving(k, shape, h).is_some()
}

/// Whether every loop of `shape` is a halving or a counted loop (module
/// documentation), so that each ends within `2^b` iterations of its entry.
pub(super) fn every_loop_ends(k: &CfgKernel, shape: &Shape) -> bool {
    (0..k.blocks.len()).all(|h| {
        shape.loops.get(h).is_none_or(|l| l.is_none())
            || halving(k, shape, h).is_some()
            || counted(k, shape, h).is_some()
    })
}

/// A loop's one latch and the test that decides whether it goes on: the
/// loop goes on while `a cmp b` on `bits` bits (signed or not: neither
/// kind of loop depends on it); the test
/// is the latch's statement `si`.
struct LatchTest<'a> {
    lp: &'a Loop,
    latch: usize,
    si: usize,
    cmp: ICmp,
    signed: bool,
    bits: u8,
    a: Val,
    b: Val,
}

/// The test of loop `h`'s one latch, if the latch ends in a branch whose
/// other target leaves the loop and its predicate is last set there by an
/// unguarded integer comparison.
fn latch_test<'a>(k: &CfgKernel, shape: &'a Shape, h: usize) -> Option<LatchTest<'a>> {
    let lp = shape.loops.get(h)?.as_ref()?;
    let mut latches = (0..k.blocks.len()).filter(|&b| {
        lp.body[b]
            && shape
                .succs
                .get(b)
                .is_some_and(|s| s.iter().any(|&t| t as usize == h))
    });
    let (Some(latch), None) = (latches.next(), latches.next()) else {
        return None;
    };
    let blk = &k.blocks[latch];
    let Term::Branch { p, neg, then, els } = blk.term else {
        return None;
    };
    // Whether the loop goes on where `p` is true: the latch's other target
    // must leave the loop.
    let on_true = if then as usize == h && !lp.body[els as usize] {
        !neg
    } else if els as usize == h && !lp.body[then as usize] {
        neg
    } else {
        return None;
    };
    let (si, setp) = blk
        .stmts
        .iter()
        .enumerate()
        .rev()
        .find(|(_, s)| s.inst.dests().contains(&p))?;
    let Inst::Bin {
        op: BinOp::SetpInt { cmp, signed, bits },
        a,
        b,
        ..
    } = setp.inst
    else {
        return None;
    };
    if setp.guard.is_some() {
        return None;
    }
    let cmp = if on_true { cmp } else { negated(cmp) };
    Some(LatchTest {
        lp,
        latch,
        si,
        cmp,
        signed,
        bits,
        a,
        b,
    })
}

/// The comparison that holds exactly where `c` does not.
fn negated(c: ICmp) -> ICmp {
    match c {
        ICmp::Eq => ICmp::Ne,
        ICmp::Ne => ICmp::Eq,
        ICmp::Lt => ICmp::Ge,
        ICmp::Ge => ICmp::Lt,
        ICmp::Le => ICmp::Gt,
        ICmp::Gt => ICmp::Le,
    }
}

/// `c` with its operands swapped.
fn swapped(c: ICmp) -> ICmp {
    match c {
        ICmp::Lt => ICmp::Gt,
        ICmp::Gt => ICmp::Lt,
        ICmp::Le => ICmp::Ge,
        ICmp::Ge => ICmp::Le,
        c => c,
    }
}

/// The one statement of loop `lp` that writes `v` (its block and index), if
/// exactly one does and no warp operation of the loop writes it.
pub(super) fn sole_def<'k>(
    k: &'k CfgKernel,
    lp: &Loop,
    v: Reg,
) -> Option<(usize, usize, &'k Stmt)> {
    let mut defs = defs_of(k, v).filter(|&(b, _, _)| lp.body[b]);
    let (Some(def), None) = (defs.next(), defs.next()) else {
        return None;
    };
    (!warp_writes(k, lp, v)).then_some(def)
}

/// Whether a statement or warp operation of loop `lp` writes `v`.
pub(super) fn written_in(k: &CfgKernel, lp: &Loop, v: Reg) -> bool {
    warp_writes(k, lp, v) || defs_of(k, v).any(|(b, _, _)| lp.body[b])
}

/// The statements of `k` that write `v`: their block, index and statement.
fn defs_of(k: &CfgKernel, v: Reg) -> impl Iterator<Item = (usize, usize, &Stmt)> {
    k.blocks
        .iter()
        .enumerate()
        .flat_map(|(b, blk)| blk.stmts.iter().enumerate().map(move |(i, s)| (b, i, s)))
        .filter(move |(_, _, s)| s.inst.dests().contains(&v))
}

/// Whether a warp operation of loop `lp` writes `v`.
fn warp_writes(k: &CfgKernel, lp: &Loop, v: Reg) -> bool {
    k.blocks.iter().enumerate().any(|(b, blk)| {
        lp.body[b] && matches!(&blk.term, Term::Warp { op, .. } if op.dsts().any(|d| d == v))
    })
}

/// [`is_halving_loop`], `Some(())` where it is.
fn halving(k: &CfgKernel, shape: &Shape, h: usize) -> Option<()> {
    let t = latch_test(k, shape, h)?;
    // `v != 0` where the loop goes on while it holds.
    let (ICmp::Ne, Val::Reg(v), Val::Imm(0)) = (t.cmp, t.a, t.b) else {
        return None;
    };
    // `v`'s one definition in the loop: an unguarded `v = v >> c`, c ≥ 1,
    // in the latch before the test, at the test's width.
    let (db, di, def) = sole_def(k, t.lp, v)?;
    let halves = matches!(
        def.inst,
        Inst::Bin { op: BinOp::ShrU(w), a: Val::Reg(a), b: Val::Imm(c), .. }
            if a == v && w == t.bits && c >= 1
    );
    (halves && def.guard.is_none() && db == t.latch && di < t.si).then_some(())
}

/// A counted loop's stepped register and its test (module documentation).
struct Counted {
    /// The loop's one latch.
    latch: usize,
    /// The stepped register.
    i: Reg,
    /// The bound: an immediate or a register the loop does not write.
    n: Val,
    /// The loop goes on while `i cmp n`.
    cmp: ICmp,
    /// The step, on `bits` bits.
    step: u64,
    /// Whether the test compares signed.
    signed: bool,
    /// The test's width.
    bits: u8,
    /// Whether the step comes before the test in the latch.
    step_first: bool,
}

/// Loop `h`'s counted form (module documentation), where it is one.
fn counted(k: &CfgKernel, shape: &Shape, h: usize) -> Option<Counted> {
    let t = latch_test(k, shape, h)?;
    let bits = t.bits;
    // The stepped register `i` and the bound `n`, which the loop does not
    // write.
    let fixed = |v: Val| match v {
        Val::Reg(r) => !written_in(k, t.lp, r),
        Val::Imm(_) => true,
    };
    let (i, n, cmp) = match (t.a, t.b) {
        (Val::Reg(i), n) if fixed(n) => (i, n, t.cmp),
        (n, Val::Reg(i)) if fixed(n) => (i, n, swapped(t.cmp)),
        _ => return None,
    };
    // `i`'s one definition in the loop: `i = i ± c` in the latch, unguarded,
    // at the test's width.
    let (db, di, def) = sole_def(k, t.lp, i)?;
    if db != t.latch || def.guard.is_some() {
        return None;
    }
    let step = match def.inst {
        Inst::Bin {
            op: BinOp::Add(w),
            a: Val::Reg(a),
            b: Val::Imm(c),
            ..
        }
        | Inst::Bin {
            op: BinOp::Add(w),
            a: Val::Imm(c),
            b: Val::Reg(a),
            ..
        } if a == i && w == bits => c & msk(bits),
        Inst::Bin {
            op: BinOp::Sub(w),
            a: Val::Reg(a),
            b: Val::Imm(c),
            ..
        } if a == i && w == bits => c.wrapping_neg() & msk(bits),
        _ => return None,
    };
    let minus_one = msk(bits);
    let c = Counted {
        latch: t.latch,
        i,
        n,
        cmp,
        step,
        signed: t.signed,
        bits,
        step_first: di < t.si,
    };
    match cmp {
        ICmp::Lt if step == 1 => Some(c),
        ICmp::Gt if step == minus_one => Some(c),
        ICmp::Ne if step != 0 => {
            let j = step.trailing_zeros();
            if j == 0 {
                return Some(c);
            }
            let zero = low_bits_zero(k, shape, j);
            let n_ok = match n {
                Val::Imm(c) => (c & msk(bits)).trailing_zeros() >= j,
                Val::Reg(r) => zero.get(r as usize).copied().unwrap_or(false),
            };
            (n_ok && zero.get(i as usize).copied().unwrap_or(false)).then_some(c)
        }
        _ => None,
    }
}

/// A bound on the header visits of one entry into a counted loop stepping
/// by one (module documentation) with no loop inside it, for the watchdog
/// (watchdog.rs, `fits_code`): the loop goes on while `i < n` (`up`) or
/// `i > n` on `bits` bits, compared `signed` or not. With `d` = `n − i`
/// (`i − n` where not `up`) where `i < n` (`i > n`) on entry, else 0, an
/// entry visits the header exactly `d + 1` times where the test comes
/// before the step, and `max(d, 1)` times where the step comes first
/// (`step_first`), unless the test fails of `i` on entry and the step
/// wraps it (`i` the largest value, the smallest where not `up`): then the
/// loop may run `2^bits` times, and no bound is given. `max_steps` bounds
/// the instructions one iteration counts (each block of the body runs at
/// most once between two visits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct VisitBound {
    /// The stepped register.
    pub i: Reg,
    /// The bound it is compared with.
    pub n: Val,
    /// Whether `i` steps up (by 1, while below `n`), else down (by −1,
    /// while above).
    pub up: bool,
    /// Whether the comparison is signed.
    pub signed: bool,
    /// The comparison's width (at most 32).
    pub bits: u8,
    /// Whether the latch steps `i` before testing it.
    pub step_first: bool,
    /// The most instructions one iteration counts: the body's blocks'
    /// statements and terminators.
    pub max_steps: u64,
    /// The loop's one latch, whose branch goes back to the header.
    pub latch: usize,
}

/// Loop `h`'s [`VisitBound`], where it is a counted loop stepping by one on
/// at most 32 bits, no other loop lies inside it, and it lies inside no
/// other loop (entered once per run, so that the test on entry, two
/// barriers in the structured form, is paid once, not once per iteration
/// of an outer loop).
pub(super) fn visit_bound(k: &CfgKernel, shape: &Shape, h: usize) -> Option<VisitBound> {
    let lp = shape.loops.get(h)?.as_ref()?;
    let inner = (0..k.blocks.len()).any(|b| b != h && lp.body[b] && shape.loops[b].is_some());
    let outer = shape
        .loops
        .iter()
        .enumerate()
        .any(|(o, l)| o != h && l.as_ref().is_some_and(|l| l.body[h]));
    if inner || outer {
        return None;
    }
    let c = counted(k, shape, h)?;
    let up = match c.cmp {
        ICmp::Lt if c.step == 1 => true,
        ICmp::Gt if c.step == msk(c.bits) => false,
        _ => return None,
    };
    if c.bits > 32 {
        return None;
    }
    let max_steps = k
        .blocks
        .iter()
        .zip(&lp.body)
        .filter(|(_, &inside)| inside)
        .map(|(b, _)| b.stmts.len() as u64 + 1)
        .sum();
    Some(VisitBound {
        i: c.i,
        n: c.n,
        up,
        signed: c.signed,
        bits: c.bits,
        step_first: c.step_first,
        max_steps,
        latch: c.latch,
    })
}

/// For each register, whether its low `j` bits are zero at every point of
/// every run (registers start at zero): the largest set of registers whose
/// every definition keeps the property given that its operands in the set
/// have it (an induction over the run's steps).
fn low_bits_zero(k: &CfgKernel, shape: &Shape, j: u32) -> Vec<bool> {
    let mut ok = vec![true; k.regs.len()];
    // Warp operations' results are not followed.
    for blk in &k.blocks {
        if let Term::Warp { op, .. } = &blk.term {
            for d in op.dsts() {
                if let Some(x) = ok.get_mut(d as usize) {
                    *x = false;
                }
            }
        }
    }
    loop {
        let mut changed = false;
        for (b, blk) in k.blocks.iter().enumerate() {
            for (si, s) in blk.stmts.iter().enumerate() {
                let ds = s.inst.dests();
                if ds
                    .iter()
                    .all(|&d| !ok.get(d as usize).copied().unwrap_or(false))
                {
                    continue;
                }
                let keeps = ds.len() == 1 && keeps_low_zero(k, shape, &ok, j, b, si, &s.inst);
                if !keeps {
                    for d in ds {
                        if let Some(x) = ok.get_mut(d as usize) {
                            changed |= *x;
                            *x = false;
                        }
                    }
                }
            }
        }
        if !changed {
            return ok;
        }
    }
}

/// Whether `inst` (statement `si` of block `b`) gives a value whose low
/// `j` bits are zero when its register operands marked in `ok` have them.
fn keeps_low_zero(
    k: &CfgKernel,
    shape: &Shape,
    ok: &[bool],
    j: u32,
    b: usize,
    si: usize,
    inst: &Inst,
) -> bool {
    let zero = |v: Val| match v {
        Val::Imm(c) => c.trailing_zeros() >= j,
        Val::Reg(r) => ok.get(r as usize).copied().unwrap_or(false),
    };
    match *inst {
        Inst::Un {
            op: UnOp::Mov(_),
            a,
            ..
        } => zero(a),
        Inst::Bin {
            op: BinOp::Add(_) | BinOp::Or(_) | BinOp::Xor(_),
            a,
            b: c,
            ..
        } => zero(a) && zero(c),
        Inst::Bin {
            op: BinOp::And(_) | BinOp::MulLo(_),
            a,
            b: c,
            ..
        } => zero(a) || zero(c),
        Inst::Bin {
            op: BinOp::Shl(_),
            a,
            b: Val::Imm(c),
            ..
        } => zero(a) || c >= j as u64,
        Inst::Bin {
            op: BinOp::Shl(_),
            a,
            ..
        } => zero(a),
        Inst::Bin {
            op: BinOp::Sub(w),
            a,
            b: c,
            ..
        } => (zero(a) && zero(c)) || minus_low_bits(k, shape, j, b, si, w, a, c),
        _ => false,
    }
}

/// Whether `a − c` (statement `si` of block `b`, on `w` bits) is nvcc's
/// `x − (x & m)` with the low `j` bits of `m` set: a definition of `c` is
/// the unguarded `c = x & m`, outside loops, before the subtraction on
/// every path (dominance), and no other definition of `c` lies on a path
/// from it to the subtraction (nvcc reuses the register as the remainder
/// loop's count after the main loop); `x` has at most one definition,
/// unguarded, outside loops, before `c`'s on every path, so that both read
/// the same `x`.
#[allow(clippy::too_many_arguments)]
fn minus_low_bits(
    k: &CfgKernel,
    shape: &Shape,
    j: u32,
    b: usize,
    si: usize,
    w: u8,
    a: Val,
    c: Val,
) -> bool {
    let (Val::Reg(x), Val::Reg(c)) = (a, c) else {
        return false;
    };
    let in_loop = |bb: usize| shape.loops.iter().flatten().any(|l| l.body[bb]);
    let before = |(b1, i1): (usize, usize), (b2, i2): (usize, usize)| {
        if b1 == b2 {
            i1 < i2
        } else {
            shape.dominates(b1 as BlockId, b2 as BlockId)
        }
    };
    let warp_written = |r: Reg| {
        k.blocks
            .iter()
            .any(|blk| matches!(&blk.term, Term::Warp { op, .. } if op.dsts().any(|d| d == r)))
    };
    if warp_written(x) || warp_written(c) {
        return false;
    }
    // Whether some path runs from position `p` to position `q`.
    let reaches = |(b1, i1): (usize, usize), (b2, i2): (usize, usize)| {
        (b1 == b2 && i1 < i2) || shape.reaches_after(b1 as BlockId, b2 as BlockId)
    };
    let xd: Vec<_> = defs_of(k, x).collect();
    let cd: Vec<_> = defs_of(k, c).collect();
    cd.iter().any(|&(cb, ci, cdef)| {
        let masks = matches!(
            cdef.inst,
            Inst::Bin { op: BinOp::And(cw), a: Val::Reg(ax), b: Val::Imm(m), .. }
                if ax == x && cw >= w && (m & msk(j as u8)).trailing_ones() >= j
        );
        let alone = cd.iter().all(|&(ob, oi, _)| {
            (ob, oi) == (cb, ci) || !(reaches((cb, ci), (ob, oi)) && reaches((ob, oi), (b, si)))
        });
        let x_fixed = match xd[..] {
            [] => true,
            [(xb, xi, xdef)] => xdef.guard.is_none() && !in_loop(xb) && before((xb, xi), (cb, ci)),
            _ => false,
        };
        masks
            && cdef.guard.is_none()
            && !in_loop(cb)
            && before((cb, ci), (b, si))
            && alone
            && x_fixed
    })
}
