//! Which statements of a block form the speculative fma regions
//! (speculate.rs) and what each region's fast copy tests (its plan): pure
//! analysis of the CFG IR, shared by the writer (speculate.rs) and the
//! carried tests' analysis (coverage.rs).

use super::magnitude;
use crate::cfg::{Inst, Reg, Space, Stmt, TernOp, Val};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;

/// Registers holding a tested value, each with the sites (coverage.rs)
/// that vouch for it.
pub(super) type Covered = HashMap<Reg, BTreeSet<u32>>;

/// The site (coverage.rs) of the workgroup's flag of the words stored into
/// shared memory: where every store there tests its word (`tiny`, the flag
/// set where one is tiny: [`smem_words_tested`]), a word loaded from there
/// was stored tested or never stored (zero), so it has the threshold as its
/// bound or the flag is set. The flag is never cleared.
pub(super) const SMEM_SITE: u32 = u32::MAX;

/// Whether `s` loads 4-byte words from shared memory.
pub(super) fn smem_word_load(s: &Stmt) -> bool {
    matches!(
        s.inst,
        Inst::Load {
            space: Space::Shared,
            size: 4,
            ..
        }
    )
}

/// Whether kernel statements `stmts` can have their shared memory's words
/// tested where they are stored ([`SMEM_SITE`]): every store that may reach
/// shared memory (shared or generic) stores 4-byte words, no atomic may
/// write there, and some 4-byte word is loaded from there. A word loaded
/// then is one word one store wrote (or none did: zero).
pub(super) fn smem_words_tested<'a>(stmts: impl IntoIterator<Item = &'a Stmt>) -> bool {
    let mut loads = false;
    for s in stmts {
        match &s.inst {
            Inst::Store {
                space: Space::Shared | Space::Generic,
                size,
                ..
            } if *size != 4 => return false,
            Inst::Atom {
                space: Space::Shared | Space::Generic,
                ..
            } => return false,
            _ => loads |= smem_word_load(s),
        }
    }
    loads
}

/// Whether `s` is an f32 fma.
pub(super) fn is_fma_f32(s: &Stmt) -> bool {
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
/// statements that has an f32 fma, its start to its last fma (`checked`:
/// the kernel is). The statements before the first fma are in it so that
/// the values they compute have bounds there (magnitude.rs) and can be
/// tested through their sources.
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
        if let Some(b) = run.iter().rposition(is_fma_f32) {
            out.push(start..start + b + 1);
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
    /// The value a register holds: zero or below the kernel's threshold
    /// (`tiny`) in magnitude.
    Reg(Reg),
    /// A subnormal immediate: suspect at once.
    Always,
}

/// What a region's fast copy tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    /// Per statement of the region, the tests before it.
    pub(super) pre: Vec<Vec<Test>>,
    /// Per statement of the region, whether the value an fma leaves in its
    /// destination is tested after it (false for other statements).
    pub(super) post: Vec<bool>,
    /// The sites whose flags the region's starts from: those of the values
    /// it took covered rather than testing them, and of those its bounds
    /// rest on (coverage.rs).
    pub(super) init: BTreeSet<u32>,
    /// The registers that hold, at the region's end, a value with a bound of
    /// at least the threshold (magnitude.rs): one it tested, took covered,
    /// or bounded so. The same whatever was covered where the flags of
    /// `init` are false.
    pub(super) tested: HashSet<Reg>,
}

/// A register's bound (magnitude.rs) in a region, with the sites of the
/// covered values it rests on.
#[derive(Debug, Clone)]
struct Bound {
    exp: i32,
    sites: BTreeSet<u32>,
}

/// The plan of `region`'s fast copy where `covered` holds before it and the
/// tests let pass values of at least 2^`threshold` (`tiny`): an fma's
/// operand is tested before it, and its result after it, only where its
/// bound (magnitude.rs) is below 2⁻¹²⁶ — an operand no test, cover or rule
/// bounds, or whose rules lost too much to cancellation; a tested value then
/// has the threshold as its bound (a value is tested once while it is held).
/// A covered value where the region starts has the threshold as its bound
/// (its sites' flags start the region's where the region rests on it). An
/// operand the region computed by a rule (a sum, product, …) from values
/// still held is, where `sources`, tested through the one of them without a
/// bound of the threshold where that bounds it at 2⁻¹²⁶ or above: one test
/// then serves the operand and its source (`lorenz_rk4`'s `ρ − z`, tested
/// through the loop-invariant `ρ`, which a pre-test then takes out of the
/// loop). Where `smem` ([`smem_words_tested`]), a word loaded from shared
/// memory has the threshold as its bound, resting on [`SMEM_SITE`].
pub(super) fn plan(
    region: &[Stmt],
    covered: &Covered,
    threshold: i32,
    smem: bool,
    sources: bool,
) -> Plan {
    let mut p = Planner {
        covered,
        threshold,
        bound: HashMap::new(),
        written: HashSet::new(),
        took: HashSet::new(),
        init: BTreeSet::new(),
    };
    // Registers holding a value a rule bounds (magnitude.rs's `of_stmt`),
    // with the statement that computed it from registers still holding
    // what it read.
    let mut defs: HashMap<Reg, &Stmt> = HashMap::new();
    let mut pre = Vec::with_capacity(region.len());
    let mut post = Vec::with_capacity(region.len());
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
            post.push(false);
            let new = magnitude::of_stmt(s, |v| p.get(v).map(|b| b.exp));
            let new = new.map(|exp| Bound {
                exp,
                sites: p.sites_of(s),
            });
            let dests = s.inst.dests();
            for &r in &dests {
                forget(&mut defs, r);
            }
            if smem && smem_word_load(s) {
                for r in dests {
                    let b = Bound {
                        exp: threshold,
                        sites: BTreeSet::from([SMEM_SITE]),
                    };
                    p.write(s, &[r], Some(b));
                }
                continue;
            }
            // A statement a rule bounds, whatever its operands' bounds.
            let ruled = magnitude::of_stmt(s, |_| Some(0)).is_some();
            if let (&[d], true, None) = (&dests[..], ruled, s.guard) {
                if !reads(s).contains(&d) {
                    defs.insert(d, s);
                }
            }
            p.write(s, &dests, new);
            continue;
        };
        let mut t = Vec::new();
        let mut exps = [0; 3];
        for (i, v) in [a, b, c].into_iter().enumerate() {
            exps[i] = match v {
                Val::Reg(r) => match p.get(v).filter(|b| b.exp >= magnitude::NORMAL) {
                    Some(b) => {
                        p.rest_on(r);
                        b.exp
                    }
                    None => {
                        // Tested through its source where that serves,
                        // else itself.
                        match defs.get(&r).filter(|_| sources).and_then(|d| p.via(d)) {
                            Some((x, b)) => {
                                t.push(Test::Reg(x));
                                p.set(x, threshold);
                                p.bound.insert(r, b);
                                p.rest_on(r);
                            }
                            None => {
                                t.push(Test::Reg(r));
                                p.set(r, threshold);
                            }
                        }
                        p.bound[&r].exp
                    }
                },
                // A subnormal immediate is suspect at once; zero and
                // normal ones never are.
                Val::Imm(x) => {
                    let e = magnitude::immediate(x as u32);
                    if e < magnitude::NORMAL {
                        t.push(Test::Always);
                    }
                    e
                }
            };
        }
        pre.push(t);
        let exp = magnitude::fma(exps[0], exps[1], exps[2]);
        let sites = p.sites_of(s);
        forget(&mut defs, d);
        // The result tested where its bound is below 2⁻¹²⁶: the value then
        // held (whether or not a guard let the fma run) passes the test.
        let test = exp < magnitude::NORMAL;
        post.push(test);
        if test {
            p.written.insert(d);
            p.set(d, threshold);
        } else {
            p.write(s, &[d], Some(Bound { exp, sites }));
        }
    }
    let tested: HashSet<Reg> = p
        .bound
        .iter()
        .filter(|(_, b)| b.exp >= threshold)
        .map(|(&r, _)| r)
        .chain(p.took.iter().copied().filter(|r| !p.written.contains(r)))
        .collect();
    // What a later region takes covered rests on these sites too.
    for r in &tested {
        let s = p.sites(*r);
        p.init.extend(s);
    }
    Plan {
        pre,
        post,
        init: p.init,
        tested,
    }
}

/// The bounds of a region's registers as [`plan`] walks it.
struct Planner<'a> {
    covered: &'a Covered,
    threshold: i32,
    /// The bounds of the registers the region has written or tested.
    bound: HashMap<Reg, Bound>,
    /// Registers the region has written (their cover is gone).
    written: HashSet<Reg>,
    /// Covered registers whose cover the region used.
    took: HashSet<Reg>,
    /// The sites the region rests on.
    init: BTreeSet<u32>,
}

impl Planner<'_> {
    /// The bound of `v` here: an immediate's, a register's from the region
    /// or its cover (the threshold), or none.
    fn get(&self, v: Val) -> Option<Bound> {
        match v {
            Val::Imm(x) => Some(Bound {
                exp: magnitude::immediate(x as u32),
                sites: BTreeSet::new(),
            }),
            Val::Reg(r) => self.bound.get(&r).cloned().or_else(|| {
                if self.written.contains(&r) {
                    return None;
                }
                self.covered.get(&r).map(|sites| Bound {
                    exp: self.threshold,
                    sites: sites.clone(),
                })
            }),
        }
    }

    /// The sites register `r`'s bound rests on.
    fn sites(&self, r: Reg) -> BTreeSet<u32> {
        self.get(Val::Reg(r)).map(|b| b.sites).unwrap_or_default()
    }

    /// The sites the bounds of the registers `s` reads rest on.
    fn sites_of(&self, s: &Stmt) -> BTreeSet<u32> {
        reads(s).into_iter().flat_map(|r| self.sites(r)).collect()
    }

    /// The region rests on `r`'s bound: its sites join the region's flag.
    fn rest_on(&mut self, r: Reg) {
        if !self.bound.contains_key(&r)
            && !self.written.contains(&r)
            && self.covered.contains_key(&r)
        {
            self.took.insert(r);
        }
        let s = self.sites(r);
        self.init.extend(s);
    }

    /// Where `def` (a statement a rule bounds, whose registers still hold
    /// what it read) has one source without a bound of the threshold, and
    /// testing it would bound `def`'s value at 2⁻¹²⁶ or above: that source
    /// and the bound.
    fn via(&self, def: &Stmt) -> Option<(Reg, Bound)> {
        let mut need: Vec<Reg> = reads(def)
            .into_iter()
            .filter(|&x| self.get(Val::Reg(x)).is_none_or(|b| b.exp < self.threshold))
            .collect();
        need.dedup();
        let [x] = need[..] else { return None };
        let exp = magnitude::of_stmt(def, |v| match v {
            Val::Reg(y) if y == x => Some(self.threshold),
            v => self.get(v).map(|b| b.exp),
        })?;
        let sites = reads(def)
            .into_iter()
            .filter(|&y| y != x)
            .flat_map(|y| self.sites(y))
            .collect();
        (exp >= magnitude::NORMAL).then_some((x, Bound { exp, sites }))
    }

    /// `r` tested: bound `exp`, resting on nothing.
    fn set(&mut self, r: Reg, exp: i32) {
        self.bound.insert(
            r,
            Bound {
                exp,
                sites: BTreeSet::new(),
            },
        );
    }

    /// `s` writes `dests`, the value `new` (where it writes one register):
    /// under a guard, a register keeps the lower of its old and new bounds.
    fn write(&mut self, s: &Stmt, dests: &[Reg], new: Option<Bound>) {
        for &r in dests {
            let old = if s.guard.is_some() {
                self.get(Val::Reg(r))
            } else {
                None
            };
            let b = match (&new, old) {
                (Some(n), _) if dests.len() == 1 && s.guard.is_none() => Some(n.clone()),
                (Some(n), Some(o)) if dests.len() == 1 => Some(Bound {
                    exp: n.exp.min(o.exp),
                    sites: n.sites.union(&o.sites).copied().collect(),
                }),
                _ => None,
            };
            self.written.insert(r);
            match b {
                Some(b) => self.bound.insert(r, b),
                None => self.bound.remove(&r),
            };
        }
    }
}

/// `defs` after register `r` is written: neither a value held in `r` nor
/// one computed from it is known any more.
fn forget(defs: &mut HashMap<Reg, &Stmt>, r: Reg) {
    defs.remove(&r);
    defs.retain(|_, s| !reads(s).contains(&r));
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::cfg::{BinOp, Space};

    /// An unguarded statement (the test modules' builder).
    pub(in crate::wgsl::cfg) fn st(inst: Inst) -> Stmt {
        Stmt {
            inst,
            guard: None,
            line: 1,
        }
    }

    /// `d = fma.rn.f32(a, b, c)`.
    pub(in crate::wgsl::cfg) fn fma(d: Reg, a: Val, b: Val, c: Val) -> Stmt {
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

    /// `d = a + b` (f32).
    pub(in crate::wgsl::cfg) fn add(d: Reg, a: Reg, b: Reg) -> Stmt {
        st(Inst::Bin {
            op: BinOp::AddF32,
            d,
            a: Val::Reg(a),
            b: Val::Reg(b),
        })
    }

    /// `d = ld.global.u32 [base]`.
    pub(in crate::wgsl::cfg) fn load(d: Reg, base: Reg) -> Stmt {
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
    fn a_region_spans_a_run_without_side_effects_to_its_last_fma() {
        let r = Val::Reg;
        let stmts = vec![
            add(1, 2, 3),               // 0: before the first fma: in
            fma(4, r(1), r(2), r(3)),   // 1
            add(5, 4, 4),               // 2
            fma(6, r(5), r(4), r(1)),   // 3
            add(7, 6, 6),               // 4: after the last fma
            store(7, 9),                // 5: ends the run
            fma(8, r(7), r(7), r(7)),   // 6
            load(10, 9),                // 7: r9 no fma of the run fed: stays
            fma(11, r(10), r(8), r(8)), // 8
            add(12, 11, 2),             // 9: fed by the fma at 8
            load(13, 12), // 10: its address fed: ends it where checked (and starts the next)
            fma(14, r(13), r(2), r(2)), // 11
            load(15, 2),  // 12: r2 was never fed: stays
            fma(16, r(15), r(2), r(2)), // 13
        ];
        assert_eq!(regions(&stmts, false), vec![0..4, 6..14]);
        assert_eq!(regions(&stmts, true), vec![0..4, 6..9, 10..14]);
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
        assert_eq!(regions(&cleared, true), vec![0..1, 1..3]);
        let mut reguarded = add(11, 2, 2);
        reguarded.guard = Some((3, false));
        let kept = vec![
            fma(11, r(1), r(1), r(1)),
            reguarded,
            load(20, 11),
            fma(21, r(20), r(1), r(1)),
        ];
        assert_eq!(regions(&kept, true), vec![0..1, 2..4]);
        let rewritten = vec![
            fma(11, r(1), r(1), r(1)),
            add(11, 2, 2),
            load(20, 11),
            fma(21, r(20), r(1), r(1)),
        ];
        assert_eq!(regions(&rewritten, true), vec![0..4]);
    }

    #[test]
    fn bounds_leave_out_the_tests_of_values_kept_normal() {
        let r = Val::Reg;
        let region = vec![
            fma(4, r(1), r(2), r(3)),        // 0: r1..r3 tested; r4: 2^-80
            add(5, 4, 4),                    // 1: r5: 2^-104
            fma(6, r(5), r(5), Val::Imm(0)), // 2: r5 kept; r6: 2^-208, tested
            fma(7, r(6), r(1), r(2)),        // 3: all kept; r7: 2^-80
        ];
        let p = plan(&region, &Covered::new(), -32, false, true);
        assert_eq!(
            p.pre,
            vec![
                vec![Test::Reg(1), Test::Reg(2), Test::Reg(3)],
                vec![],
                vec![],
                vec![]
            ]
        );
        assert_eq!(p.post, vec![false, false, true, false]);
        // At the end, bounded by 2^-32: the tested r1, r2, r3 and r6.
        let mut tested: Vec<Reg> = p.tested.iter().copied().collect();
        tested.sort_unstable();
        assert_eq!(tested, vec![1, 2, 3, 6]);
        assert!(p.init.is_empty());
        // At 2^-126 the first result needs its test, and so on.
        let q = plan(&region, &Covered::new(), -126, false, true);
        assert_eq!(q.post, vec![true, false, true, true]);
        // A covered r1 is taken with its site's flag, and stays covered.
        let covered = Covered::from([(1, BTreeSet::from([9]))]);
        let c = plan(&region, &covered, -32, false, true);
        assert_eq!(c.pre[0], vec![Test::Reg(2), Test::Reg(3)]);
        assert_eq!(c.init, BTreeSet::from([9]));
        assert!(c.tested.contains(&1));
        // A subnormal immediate is suspect at once; a guarded fma keeps the
        // lower of its old and new bounds (r8 unknown before: r9's operand
        // r8 is tested).
        let mut guarded = fma(8, r(1), r(1), r(1));
        guarded.guard = Some((20, false));
        let g = vec![
            fma(4, r(1), Val::Imm(1), r(1)),
            guarded,
            fma(9, r(8), r(1), r(1)),
        ];
        let p = plan(&g, &Covered::new(), -32, false, true);
        assert_eq!(p.pre[0], vec![Test::Reg(1), Test::Always]);
        assert_eq!(p.pre[2], vec![Test::Reg(8)]);
    }

    #[test]
    fn shared_words_are_tested_where_stored_only_where_every_write_is_a_word() {
        let at = |space, size| {
            st(Inst::Store {
                space,
                size,
                src: vec![Val::Reg(1)],
                base: Val::Reg(2),
                off: 0,
            })
        };
        let mut ld = load(3, 2);
        if let Inst::Load { space, .. } = &mut ld.inst {
            *space = Space::Shared;
        }
        let words = [at(Space::Shared, 4), at(Space::Global, 2), ld.clone()];
        assert!(smem_words_tested(&words));
        // Nothing loaded from shared memory: nothing to take.
        assert!(!smem_words_tested(&words[..2]));
        // A byte store, to shared or generic memory, or an atomic there.
        for other in [at(Space::Shared, 1), at(Space::Generic, 8)] {
            assert!(!smem_words_tested(&[other, ld.clone()]));
        }
        let atom = st(Inst::Atom {
            space: Space::Generic,
            op: crate::cfg::AtomOp::Add,
            d: None,
            base: Val::Reg(2),
            off: 0,
            b: Val::Reg(1),
            c: Val::Imm(0),
        });
        assert!(!smem_words_tested(&[atom, ld.clone()]));
        // Such a load is bounded by the threshold, resting on the flag.
        let region = vec![ld, fma(4, Val::Reg(3), Val::Reg(3), Val::Imm(0))];
        let p = plan(&region, &Covered::new(), -32, true, false);
        assert_eq!(p.pre[1], vec![]);
        assert_eq!(p.init, BTreeSet::from([SMEM_SITE]));
        let q = plan(&region, &Covered::new(), -32, false, false);
        assert_eq!(q.pre[1], vec![Test::Reg(3)]);
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
