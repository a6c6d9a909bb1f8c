//! Which statements of a block form the speculative fma regions
//! (speculate.rs) and what each region's fast copy tests (its plan): pure
//! analysis of the CFG IR, shared by the writer (speculate.rs) and the
//! carried tests' analysis (coverage.rs).

use crate::cfg::{BinOp, Inst, Reg, Stmt, TernOp, Val};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;

/// Registers holding a tested value, each with the sites (coverage.rs)
/// that vouch for it.
pub(super) type Covered = HashMap<Reg, BTreeSet<u32>>;

/// Whether `s` is an f32 fma.
fn is_fma_f32(s: &Stmt) -> bool {
    matches!(
        s.inst,
        Inst::Tern {
            op: TernOp::FmaF32 { .. },
            ..
        }
    )
}

/// Whether `s` may be in a region: no side effect, and, where `checked`,
/// a load only where no register it reads is `tainted` (fed by one of the
/// region's fmas).
fn speculable(s: &Stmt, checked: bool, tainted: &HashSet<Reg>) -> bool {
    match s.inst {
        Inst::Un { .. }
        | Inst::Bin { .. }
        | Inst::Tern { .. }
        | Inst::Cvt { .. }
        | Inst::Special { .. } => true,
        Inst::Load { .. } => !checked || reads(s).iter().all(|r| !tainted.contains(r)),
        Inst::Store { .. } | Inst::Atom { .. } => false,
    }
}

/// Marks the registers `s` writes as fed by an fma (it is one, or it reads
/// a register so fed) or not.
fn taint(s: &Stmt, tainted: &mut HashSet<Reg>) {
    let fed = is_fma_f32(s) || reads(s).iter().any(|r| tainted.contains(r));
    for r in s.inst.dests() {
        if fed {
            tainted.insert(r);
        } else if s.guard.is_none() {
            tainted.remove(&r);
        }
    }
}

/// The regions of a block's statements: in each maximal run of speculable
/// statements, its first f32 fma to its last (`checked`: the kernel is).
pub(super) fn regions(stmts: &[Stmt], checked: bool) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut tainted = HashSet::new();
    while i < stmts.len() {
        tainted.clear();
        if !speculable(&stmts[i], checked, &tainted) {
            i += 1;
            continue;
        }
        let start = i;
        while i < stmts.len() && speculable(&stmts[i], checked, &tainted) {
            taint(&stmts[i], &mut tainted);
            i += 1;
        }
        let run = &stmts[start..i];
        if let (Some(a), Some(b)) = (
            run.iter().position(is_fma_f32),
            run.iter().rposition(is_fma_f32),
        ) {
            out.push(start + a..start + b + 1);
        }
    }
    out
}

/// The registers `s` reads (its operands, address and guard).
pub(super) fn reads(s: &Stmt) -> Vec<Reg> {
    let vals: Vec<Val> = match &s.inst {
        Inst::Un { a, .. } | Inst::Cvt { a, .. } => vec![*a],
        Inst::Bin { a, b, .. } => vec![*a, *b],
        Inst::Tern { a, b, c, .. } => vec![*a, *b, *c],
        Inst::Special { .. } => vec![],
        Inst::Load { base, .. } => vec![*base],
        Inst::Store { src, base, .. } => src.iter().copied().chain([*base]).collect(),
        Inst::Atom { base, b, c, .. } => vec![*base, *b, *c],
    };
    let mut regs: Vec<Reg> = vals
        .into_iter()
        .filter_map(|v| match v {
            Val::Reg(r) => Some(r),
            Val::Imm(_) => None,
        })
        .collect();
    regs.extend(s.guard.map(|g| g.0));
    regs
}

/// The registers a second run of `region` needs as they were before the
/// first: those it writes and reads before writing them unconditionally (a
/// guarded write may not happen, so it keeps the old value), in order.
pub(super) fn saved(region: &[Stmt]) -> Vec<Reg> {
    let written: HashSet<Reg> = region.iter().flat_map(|s| s.inst.dests()).collect();
    let mut defined = HashSet::new();
    let mut out = Vec::new();
    let need = |r: Reg, defined: &HashSet<Reg>, out: &mut Vec<Reg>| {
        if written.contains(&r) && !defined.contains(&r) && !out.contains(&r) {
            out.push(r);
        }
    };
    for s in region {
        for r in reads(s) {
            need(r, &defined, &mut out);
        }
        if s.guard.is_some() {
            for r in s.inst.dests() {
                need(r, &defined, &mut out);
            }
        } else {
            defined.extend(s.inst.dests());
        }
    }
    out
}

/// One test of a region's fast copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Test {
    /// The value a register holds: zero or below 2⁻¹²⁶ in magnitude.
    Reg(Reg),
    /// A subnormal immediate: suspect at once.
    Always,
}

/// What a region's fast copy tests (each fma's result after it too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    /// Per statement of the region, the tests before it.
    pub(super) pre: Vec<Vec<Test>>,
    /// The sites whose flags the region's starts from: those of the values
    /// it took covered rather than testing them (coverage.rs).
    pub(super) init: BTreeSet<u32>,
    /// The registers that hold, at the region's end, a value it tested or
    /// took covered: the same whatever was covered.
    pub(super) tested: HashSet<Reg>,
}

/// The plan of `region`'s fast copy where `covered` holds before it: each
/// fma's untested operands tested before it, its result after it; a value
/// is tested once while it is held (an operand an earlier fma produced or an
/// earlier test saw is not tested again), and one covered where the region
/// starts is not tested (its sites' flags start the region's). An operand
/// that is a product `x * k` by an immediate with |k| ≥ 1 ([`scaling`]) is
/// tested through `x` while `x` holds the value multiplied: |x·k| ≥ |x| and
/// rounding to nearest is monotone with 2⁻¹²⁶ a float, so a product below
/// 2⁻¹²⁶ (or zero) has a factor below it (or zero) — one test then serves
/// both (`lorenz_rk4`'s `β z` products of tested `z`).
pub(super) fn plan(region: &[Stmt], covered: &Covered) -> Plan {
    // Registers whose value now held has been tested.
    let mut tested: HashSet<Reg> = HashSet::new();
    // Registers the region has written (their cover is gone).
    let mut written: HashSet<Reg> = HashSet::new();
    // Registers holding a product by a scaling immediate, with the factor
    // register still holding the value multiplied.
    let mut factor: HashMap<Reg, Reg> = HashMap::new();
    let mut pre = Vec::with_capacity(region.len());
    let mut init = BTreeSet::new();
    for s in region {
        let Inst::Tern {
            op: TernOp::FmaF32 { .. },
            d,
            a,
            b,
            c,
        } = s.inst
        else {
            pre.push(Vec::new());
            for r in s.inst.dests() {
                tested.remove(&r);
                written.insert(r);
                forget(&mut factor, r);
            }
            if let Some((d, x)) = scaling(s) {
                factor.insert(d, x);
            }
            continue;
        };
        let mut t = Vec::new();
        for v in [a, b, c] {
            match v {
                Val::Reg(r) => {
                    if tested.insert(r) {
                        let x = factor.get(&r).copied().unwrap_or(r);
                        if x == r || tested.insert(x) {
                            match covered.get(&x).filter(|_| !written.contains(&x)) {
                                Some(sites) => init.extend(sites),
                                None => t.push(Test::Reg(x)),
                            }
                        }
                    }
                }
                // A subnormal immediate is suspect at once; zero and
                // normal ones never are.
                Val::Imm(x) => {
                    let mag = x as u32 & 0x7fff_ffff;
                    if mag != 0 && mag < 0x0080_0000 {
                        t.push(Test::Always);
                    }
                }
            }
        }
        pre.push(t);
        forget(&mut factor, d);
        tested.insert(d);
        written.insert(d);
    }
    Plan { pre, init, tested }
}

/// `factor` after register `r` is written: neither a product held in `r`
/// nor one whose factor `r` held is known any more.
fn forget(factor: &mut HashMap<Reg, Reg>, r: Reg) {
    factor.remove(&r);
    factor.retain(|_, x| *x != r);
}

/// Where `s` is an unguarded f32 product `x * k` (either order) by an
/// immediate with |k| ≥ 1, and `x` is not its destination: (destination,
/// `x`). Its result is below 2⁻¹²⁶ in magnitude only where `x` is.
fn scaling(s: &Stmt) -> Option<(Reg, Reg)> {
    let Inst::Bin {
        op: BinOp::MulF32,
        d,
        a,
        b,
    } = s.inst
    else {
        return None;
    };
    if s.guard.is_some() {
        return None;
    }
    let (x, k) = match (a, b) {
        (Val::Reg(x), Val::Imm(k)) | (Val::Imm(k), Val::Reg(x)) => (x, k),
        _ => return None,
    };
    (f32::from_bits(k as u32).abs() >= 1.0 && x != d).then_some((d, x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cfg::{BinOp, Space};

    fn st(inst: Inst) -> Stmt {
        Stmt {
            inst,
            guard: None,
            line: 1,
        }
    }

    fn fma(d: Reg, a: Val, b: Val, c: Val) -> Stmt {
        st(Inst::Tern {
            op: TernOp::FmaF32 {
                neg_ab: false,
                neg_c: false,
            },
            d,
            a,
            b,
            c,
        })
    }

    fn add(d: Reg, a: Reg, b: Reg) -> Stmt {
        st(Inst::Bin {
            op: BinOp::AddF32,
            d,
            a: Val::Reg(a),
            b: Val::Reg(b),
        })
    }

    fn load(d: Reg, base: Reg) -> Stmt {
        st(Inst::Load {
            space: Space::Global,
            size: 4,
            sign: false,
            d: vec![Some(d)],
            base: Val::Reg(base),
            off: 0,
            unused: 0,
        })
    }

    fn store(v: Reg, base: Reg) -> Stmt {
        st(Inst::Store {
            space: Space::Global,
            size: 4,
            src: vec![Val::Reg(v)],
            base: Val::Reg(base),
            off: 0,
        })
    }

    #[test]
    fn a_region_spans_first_to_last_fma_of_a_run_without_side_effects() {
        let r = Val::Reg;
        let stmts = vec![
            add(1, 2, 3),               // 0: before the first fma
            fma(4, r(1), r(2), r(3)),   // 1
            add(5, 4, 4),               // 2
            fma(6, r(5), r(4), r(1)),   // 3
            add(7, 6, 6),               // 4: after the last fma
            store(7, 9),                // 5: ends the run
            fma(8, r(7), r(7), r(7)),   // 6
            load(10, 9),                // 7: r9 no fma of the run fed: stays
            fma(11, r(10), r(8), r(8)), // 8
            add(12, 11, 2),             // 9: fed by the fma at 8
            load(13, 12),               // 10: its address fed: ends it where checked
            fma(14, r(13), r(2), r(2)), // 11
            load(15, 2),                // 12: r2 was never fed: stays
            fma(16, r(15), r(2), r(2)), // 13
        ];
        assert_eq!(regions(&stmts, false), vec![1..4, 6..14]);
        assert_eq!(regions(&stmts, true), vec![1..4, 6..9, 11..14]);
        assert!(regions(&stmts[..1], true).is_empty());
        // A guarded load is judged by its guard too; an unguarded write of
        // an unfed value clears a register's taint, a guarded one does not.
        let mut guarded = load(20, 2);
        guarded.guard = Some((11, false));
        let cleared = vec![
            fma(11, r(1), r(1), r(1)),
            guarded.clone(),
            fma(21, r(20), r(1), r(1)),
        ];
        assert_eq!(regions(&cleared, true), vec![0..1, 2..3]);
        let mut reguarded = add(11, 2, 2);
        reguarded.guard = Some((3, false));
        let kept = vec![
            fma(11, r(1), r(1), r(1)),
            reguarded,
            load(20, 11),
            fma(21, r(20), r(1), r(1)),
        ];
        assert_eq!(regions(&kept, true), vec![0..1, 3..4]);
        let rewritten = vec![
            fma(11, r(1), r(1), r(1)),
            add(11, 2, 2),
            load(20, 11),
            fma(21, r(20), r(1), r(1)),
        ];
        assert_eq!(regions(&rewritten, true), vec![0..4]);
    }

    #[test]
    fn the_registers_read_before_written_are_saved() {
        let r = Val::Reg;
        // r1 and r3 are read and then overwritten (saved); r2 only read; r4
        // written before it is read (not saved); r5 written under a guard
        // (saved: the old value stays where the guard is false).
        let mut guarded = add(5, 4, 4);
        guarded.guard = Some((2, false));
        let region = vec![
            fma(4, r(1), r(2), r(3)),
            add(1, 4, 2),
            add(4, 1, 4),
            guarded,
            fma(3, r(5), r(4), r(2)),
        ];
        assert_eq!(saved(&region), vec![1, 3, 5]);
    }
}
