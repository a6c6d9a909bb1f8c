//! Speculative regions: where the device's f32 fma is guarded (it may flush
//! subnormals: [`super::emit::fma_guarded`]), the run of a block's
//! statements from its first f32 fma to its last, without a store or an
//! atomic (and in a checked kernel without a load), is written twice. First
//! a fast copy whose fmas are the device's own (`dev_fma`), noting in a
//! flag a tested value that is zero or below the kernel's threshold 2^T in
//! magnitude (`tiny`). An fma's operand or result is tested only where no
//! bound (magnitude.rs) puts it at 2⁻¹²⁶ or above: bounds come from
//! immediates, from passed tests (2^T, T ≥ −126 chosen per kernel by
//! coverage.rs) and from the rules for sums, products and fmas; a value is
//! tested once while it is held, one an earlier region tested or bounded is
//! taken with that region's flag instead (coverage.rs). Then, only where one
//! was noted, the
//! registers the region reads before it writes them are restored and the
//! region runs again with the in-place guard (`fma_native_f32`: the full
//! test, and the exact emulation for a suspect fma; written as
//! second_run.rs says). The guard then costs
//! about a comparison per tested value and one branch per region rather than
//! its full test and a branch per fma (`lorenz_rk4`'s step loop is one
//! region).
//!
//! Why it is exact: where no test noted a value, every fma's operands and
//! exact result are zero, infinite, NaN or at least 2⁻¹²⁶ in magnitude
//! (their bounds), no case `fma_suspect` takes, so each fma's device result
//! is what `fma_native_f32` returns and the fast copy computed the guarded
//! form's values; otherwise the second run
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

use super::coverage::Coverage;
use super::fma_plan::{plan, saved, Covered, Plan, Test};
use super::writer::KernelWriter;
use crate::cfg::{Inst, Reg, Stmt, TernOp, Val};
use crate::error::IrError;
use std::fmt::Write;

impl KernelWriter<'_> {
    /// The code of a block's statements, each under its guard: one piece
    /// per statement, or per speculative region where the kernel's f32 fma
    /// is guarded (module documentation).
    pub(super) fn stmts_code(
        &mut self,
        block: usize,
        stmts: &[Stmt],
    ) -> Result<Vec<String>, IrError> {
        // Where the fma is guarded: the analysis found them once.
        let regions = self.coverage.regions(block).to_vec();
        let mut out = Vec::new();
        let mut i = 0;
        for (j, r) in regions.into_iter().enumerate() {
            while i < r.start {
                out.extend(self.pieces(&stmts[i])?);
                i += 1;
            }
            out.push(self.region(block, j, &stmts[r.clone()], r.start)?);
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

    /// One region's code (statements `start..` of block `block`): the fast
    /// copy, then the guarded one where the fast copy noted a suspect fma.
    fn region(
        &mut self,
        block: usize,
        j: usize,
        region: &[Stmt],
        start: usize,
    ) -> Result<String, IrError> {
        let n = self.tmp;
        self.tmp += 1;
        let saved = saved(region);
        // Its plan, from the values covered where it starts (coverage.rs;
        // a block the analysis did not reach: none).
        let (site, p) = match self.coverage.region(block, j) {
            Some((site, p)) => (Some(site), p.clone()),
            None => (
                None,
                plan(
                    region,
                    &Covered::new(),
                    self.coverage.threshold(),
                    false,
                    self.coverage.sources(),
                ),
            ),
        };
        let init: Vec<String> = p.init.iter().map(|&s| Coverage::flag(s)).collect();
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
        let mut restore = String::new();
        for r in &saved {
            let _ = writeln!(restore, "        r{r} = sv{n}_{r};");
        }
        code.push_str(&self.second_run(block, region, start, n, &restore)?);
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
    /// tests before it, its result's after it where planned.
    fn fast_copy(
        &mut self,
        region: &[Stmt],
        p: &Plan,
        n: u32,
        code: &mut String,
    ) -> Result<(), IrError> {
        for ((s, pre), &post) in region.iter().zip(&p.pre).zip(&p.post) {
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
            if let (
                true,
                Inst::Tern {
                    op: TernOp::FmaF32 { .. },
                    d,
                    ..
                },
            ) = (post, &s.inst)
            {
                // Whether or not a guard let it run, the value now held.
                let _ = writeln!(code, "        sus{n} = sus{n} | tiny(r{d});");
            }
        }
        Ok(())
    }
}
