//! Speculative regions: where the device's f32 fma is guarded (it may flush
//! subnormals: [`super::emit::fma_guarded`]), the run of a block's
//! statements from its first f32 fma to its last, without a store or an
//! atomic (and in a checked kernel without a load), is written twice. First
//! a fast copy whose fmas are the device's own (`dev_fma`), noting in a
//! flag an fma operand or result that is zero or below 2⁻¹²⁶ in magnitude
//! (`tiny`; a value is tested once while it is held: an operand that an
//! earlier fma produced or an earlier test saw is not tested again, one
//! an earlier region tested is taken with that region's flag instead
//! (coverage.rs), and immediates are judged here); then, only where one
//! was noted, the
//! registers the region reads before it writes them are restored and the
//! region runs again with the in-place guard (`fma_native_f32`: the full
//! test, and the exact emulation for a suspect fma). The guard then costs
//! about a comparison per value and one branch per region rather than its
//! full test and a branch per fma (`lorenz_rk4`'s step loop is one region).
//!
//! Why it is exact: the tests take every case `fma_suspect` takes (a zero
//! immediate is no such case, a normal one neither), so where none was
//! noted each fma's device result is what `fma_native_f32` returns and the
//! fast copy computed the guarded form's values; otherwise the second run
//! computes them from the region's inputs. The region has no
//! side effect: barriers, warp operations and yields end blocks, stores and
//! atomics end regions. A region's loads are read twice, which a program
//! without data races cannot tell. Where the kernel is checked, a load
//! whose address or guard an fma of the region fed ends it: the fast copy's
//! flushed value could fault where the exact run would not. Any other load
//! reads the same address in both runs, so it faults in the fast copy
//! exactly where the second run would (first, as loads are the only
//! statements that fault); its checks are idempotent (a fault is recorded
//! once, an uninitialised or racing read marked once).

use super::coverage::Covered;
use super::writer::KernelWriter;
use crate::cfg::{BinOp, Inst, Reg, Stmt, TernOp, Val};
use crate::error::IrError;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write;
use std::ops::Range;

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

impl KernelWriter<'_> {
    /// The code of a block's statements, each under its guard: one piece
    /// per statement, or per speculative region where the kernel's f32 fma
    /// is guarded (module documentation).
    pub(super) fn stmts_code(
        &mut self,
        block: usize,
        stmts: &[Stmt],
    ) -> Result<Vec<String>, IrError> {
        let regions = if self.guarded_fma {
            regions(stmts, self.o.checked)
        } else {
            Vec::new()
        };
        let mut out = Vec::new();
        let mut i = 0;
        for (j, r) in regions.into_iter().enumerate() {
            while i < r.start {
                out.extend(self.pieces(&stmts[i])?);
                i += 1;
            }
            out.push(self.region(block, j, &stmts[r.clone()])?);
            i = r.end;
        }
        while i < stmts.len() {
            out.extend(self.pieces(&stmts[i])?);
            i += 1;
        }
        out.push(self.flush_reads());
        // The pre-test of the values a loop's regions take covered
        // (coverage.rs).
        if let Some((site, regs)) = self.coverage.pretest(block) {
            let tests = self.any_tiny(regs.iter().copied());
            out.push(format!("        cov{site} = {tests};\n"));
        }
        Ok(out)
    }

    /// `tiny(r) | …` over `regs`, or `false` where there is none.
    fn any_tiny(&self, regs: impl IntoIterator<Item = Reg>) -> String {
        let tests: Vec<String> = regs
            .into_iter()
            .map(|r| format!("tiny({})", self.v32(Val::Reg(r))))
            .collect();
        if tests.is_empty() {
            "false".into()
        } else {
            tests.join(" | ")
        }
    }

    /// One region's code: the fast copy, then the guarded one where the
    /// fast copy noted a suspect fma.
    fn region(&mut self, block: usize, j: usize, region: &[Stmt]) -> Result<String, IrError> {
        let n = self.tmp;
        self.tmp += 1;
        let saved = saved(region);
        // Its plan, from the values covered where it starts (coverage.rs;
        // a block the analysis did not reach: none).
        let (site, p) = match self.coverage.region(block, j) {
            Some((site, p)) => (Some(site), p.clone()),
            None => (None, plan(region, &Covered::new())),
        };
        let init: Vec<String> = p.init.iter().map(|s| format!("cov{s}")).collect();
        let init = if init.is_empty() {
            "false".to_string()
        } else {
            init.join(" | ")
        };
        let mut code = format!("        {{\n        var sus{n} = {init};\n");
        for r in &saved {
            let _ = writeln!(code, "        let sv{n}_{r} = r{r};");
        }
        self.fast = true;
        let fast = self.fast_copy(region, &p, n, &mut code);
        self.fast = false;
        fast?;
        code.push_str(&self.flush_reads());
        // This region's flag, where a later one reads it: false after the
        // fast copy noted nothing, else each covered value tested as the
        // second run leaves it.
        let flag = site.filter(|&s| self.coverage.is_read(s));
        if let Some(s) = flag {
            let _ = writeln!(code, "        cov{s} = false;");
        }
        let _ = writeln!(code, "        if (sus{n}) {{");
        for r in &saved {
            let _ = writeln!(code, "        r{r} = sv{n}_{r};");
        }
        for s in region {
            code.push_str(&self.pieces(s)?.concat());
        }
        code.push_str(&self.flush_reads());
        if let Some(s) = flag {
            let mut tested: Vec<Reg> = p.tested.iter().copied().collect();
            tested.sort_unstable();
            let _ = writeln!(code, "        cov{s} = {};", self.any_tiny(tested));
        }
        code.push_str("        }\n");
        for &q in site.map_or(&[][..], |s| self.coverage.clears(s)) {
            if self.coverage.is_read(q) {
                let _ = writeln!(code, "        cov{q} = false;");
            }
        }
        code.push_str("        }\n");
        Ok(code)
    }

    /// The fast copy of region `n` onto `code` as `p` plans it: each fma's
    /// tests before it, its result's after it.
    fn fast_copy(
        &mut self,
        region: &[Stmt],
        p: &Plan,
        n: u32,
        code: &mut String,
    ) -> Result<(), IrError> {
        for (s, pre) in region.iter().zip(&p.pre) {
            let tests: Vec<String> = pre
                .iter()
                .map(|t| match t {
                    Test::Reg(r) => format!("tiny({})", self.v32(Val::Reg(*r))),
                    Test::Always => "true".into(),
                })
                .collect();
            if !tests.is_empty() {
                let _ = writeln!(code, "        sus{n} = sus{n} | {};", tests.join(" | "));
            }
            code.push_str(&self.pieces(s)?.concat());
            if let Inst::Tern {
                op: TernOp::FmaF32 { .. },
                d,
                ..
            } = s.inst
            {
                // Whether or not a guard let it run, the value now held.
                let _ = writeln!(code, "        sus{n} = sus{n} | tiny(r{d});");
            }
        }
        Ok(())
    }
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
