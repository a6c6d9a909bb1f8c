//! A speculative region's second run (speculate.rs), written so that the
//! code it adds costs the fast copy little where it does not run.
//!
//! The second run computes each f32 fma with the in-place guard
//! (`fma_native_f32`), whose exact emulation is inlined where it is called.
//! With one call per fma, code that never runs where no test fired still
//! raises the kernel's register demand: on an H100, `matmul_tiled`'s
//! second run (16 fmas) made the kernel 57% slower than without it, though
//! it never ran (docs/BENCHMARKS.md, session 29). Where a region has two
//! unguarded fmas or more, its second run may instead be a loop over them:
//! a `switch` on the fma reached (`fk`) runs the statements from the last
//! fma's result (`fx`) to the next fma's operands (`fa`, `fb`, `fc`), and
//! one `fma_native_f32` after the `switch` computes it. Each statement runs
//! once, in order, as in the straight form; the emulation is written once.
//!
//! The loop form holds at its one call site every register live at any of
//! the fmas, so it is taken only where those, all together, are no more
//! than the ones live at the busiest fma ([`loop_form_fits`]): an
//! accumulation such as `matmul_tiled`'s tile (the same few registers live
//! at each fma) takes it; `lorenz_rk4`'s steps, whose live values change
//! from fma to fma, do not (there the loop form measured 11% slower).
//!
//! A region of two fmas or more that the loop form does not fit runs again
//! until no fma is left to emulate (the rerun form): each pass restores the
//! region's inputs and runs its statements in order with the device's fma,
//! a suspect one (`fma_suspect`) taking the value emulated for it in an
//! earlier pass or, the first new one, noted with its operands; after the
//! pass, the noted fma is emulated (`fma_f32`, one call in the code) and
//! kept, and the next pass begins. Every pass computes the same values up to
//! the first fma not yet emulated (the same inputs, the same statements),
//! so the values kept are the exact ones, each pass keeps one more, and the
//! pass that notes none (at most one pass per fma, plus one) computed every
//! fma as the in-place guard would. Its statements after a noted fma ran on
//! the device's value, as the fast copy's do: no side effect, a load at the
//! address the fast copy read ([`super::speculate`]). On an H100 this
//! cut `lorenz_rk4` by 0.8 ms (checked) and 0.9 ms (unchecked) of 20.2 and
//! 20.4 (the WGSL variant `reloop`, docs/BENCHMARKS.md, session 32).

use super::emit::under_guard;
use super::fma_plan::{is_fma_f32, reads};
use super::writer::{ExprWidth, KernelWriter};
use crate::cfg::{CfgKernel, Inst, Reg, Stmt, Term, TernOp};
use crate::error::IrError;
use std::collections::BTreeSet;
use std::fmt::Write;

/// The indices in `region` of its unguarded f32 fmas.
fn fma_sites(region: &[Stmt]) -> Vec<usize> {
    region
        .iter()
        .enumerate()
        .filter(|(_, s)| s.guard.is_none() && is_fma_f32(s))
        .map(|(i, _)| i)
        .collect()
}

/// The registers of `region` live at each of the fma sites `fmas` (the
/// fma's own operands excluded: the loop form holds them in `fa`, `fb`,
/// `fc`; its result excluded: it is written there): those live after the
/// fma, by one backward pass from the ones `live_out` says are read past
/// the region (an unguarded write ends a register's life, a read starts
/// it). Where their union is no larger than the largest of them, the loop
/// form adds no register ([module documentation](self)).
pub(super) fn loop_form_fits(
    region: &[Stmt],
    fmas: &[usize],
    live_out: impl Fn(Reg) -> bool,
) -> bool {
    let mut live: BTreeSet<Reg> = region
        .iter()
        .flat_map(|s| reads(s).into_iter().chain(s.inst.dests()))
        .filter(|&r| live_out(r))
        .collect();
    let mut union = BTreeSet::new();
    let mut most = 0;
    for (i, s) in region.iter().enumerate().rev() {
        if fmas.contains(&i) {
            let mut at = live.clone();
            for d in s.inst.dests() {
                at.remove(&d);
            }
            most = most.max(at.len());
            union.extend(at);
        }
        if s.guard.is_none() {
            for d in s.inst.dests() {
                live.remove(&d);
            }
        }
        live.extend(reads(s));
    }
    union.len() <= most
}

/// The registers that may be read outside `range` of block `block` of
/// `k`: by a statement elsewhere or a branch; `None` (any register) in a
/// kernel with warp operations, whose operands are not looked into.
fn read_elsewhere(k: &CfgKernel, block: usize, range: (usize, usize)) -> Option<BTreeSet<Reg>> {
    let mut out = BTreeSet::new();
    for (b, blk) in k.blocks.iter().enumerate() {
        match blk.term {
            Term::Branch { p, .. } => {
                out.insert(p);
            }
            Term::Warp { .. } => return None,
            _ => {}
        }
        for (i, s) in blk.stmts.iter().enumerate() {
            if !(b == block && i >= range.0 && i < range.1) {
                out.extend(reads(s));
            }
        }
    }
    Some(out)
}

impl KernelWriter<'_> {
    /// The second run of region `n`, statements `start..` of block
    /// `block`, its registers restored first by `restore`: a loop over its
    /// fmas where that fits, else run again until no fma is left to
    /// emulate, or straight where it has one fma ([module
    /// documentation](self)).
    pub(super) fn second_run(
        &mut self,
        block: usize,
        region: &[Stmt],
        start: usize,
        n: u32,
        restore: &str,
    ) -> Result<String, IrError> {
        let fmas = fma_sites(region);
        let k = self.k;
        let range = (start, start + region.len());
        let fits = fmas.len() >= 2 && {
            let elsewhere = read_elsewhere(k, block, range);
            loop_form_fits(region, &fmas, |r| {
                elsewhere.as_ref().is_none_or(|e| e.contains(&r))
            })
        };
        let all_fmas = region.iter().filter(|s| is_fma_f32(s)).count();
        if !fits && all_fmas >= 2 {
            return self.rerun(region, all_fmas, n, restore);
        }
        let mut code = restore.to_string();
        if !fits {
            for s in region {
                code.push_str(&self.pieces(s)?.concat());
            }
            code.push_str(&self.flush_reads());
            return Ok(code);
        }
        let _ = writeln!(
            code,
            "        var fk{n} = 0u; var fa{n} = 0u; var fb{n} = 0u; var fc{n} = 0u; var fx{n} = 0u;
        loop {{
        switch fk{n} {{"
        );
        let mut from = 0;
        let mut last = None;
        for (case, &i) in fmas.iter().enumerate() {
            let Inst::Tern {
                op: TernOp::FmaF32 { neg_ab, neg_c },
                d,
                a,
                b,
                c,
            } = region[i].inst
            else {
                continue;
            };
            let _ = writeln!(code, "        case {case}u: {{");
            code.push_str(&self.case_start(last, n, &region[from..i])?);
            let neg = |x: bool| if x { " ^ 0x80000000u" } else { "" };
            let _ = writeln!(
                code,
                "        fa{n} = {}{}; fb{n} = {}; fc{n} = {}{};
        }}",
                self.v32(a),
                neg(neg_ab),
                self.v32(b),
                self.v32(c),
                neg(neg_c)
            );
            last = Some(d);
            from = i + 1;
        }
        code.push_str("        default: {\n");
        code.push_str(&self.case_start(last, n, &region[from..])?);
        let fma = self.fma_f32(
            &format!("fa{n}"),
            &format!("fb{n}"),
            &format!("fc{n}"),
            (false, false),
            false,
        );
        let _ = writeln!(
            code,
            "        }}
        }}
        if (fk{n} == {}u) {{ break; }}
        fx{n} = {fma};
        fk{n} = fk{n} + 1u;
        }}",
            fmas.len()
        );
        Ok(code)
    }

    /// The rerun form of region `n`'s second run ([module
    /// documentation](self)), whose `nf` f32 fmas (guarded or not) are
    /// `ov`'s slots: passes from the inputs `restore` puts back, each fma
    /// (`k`-th of the region's) the device's, or where suspect `ov[k]` when
    /// an earlier pass emulated it (`k < dn`), else the first such noted
    /// (`pd`, its operands `pa`, `pb`, `pc`); after a pass that noted one,
    /// its emulation kept in `ov` and `dn` past it.
    fn rerun(
        &mut self,
        region: &[Stmt],
        nf: usize,
        n: u32,
        restore: &str,
    ) -> Result<String, IrError> {
        let mut code = format!(
            "        var dn{n} = 0u; var ov{n}: array<u32, {nf}>;
        var pd{n} = 0u; var pa{n} = 0u; var pb{n} = 0u; var pc{n} = 0u;
        loop {{
        pd{n} = 0xffffffffu;
{restore}"
        );
        let mut fk = 0;
        for s in region {
            let Inst::Tern {
                op: TernOp::FmaF32 { neg_ab, neg_c },
                d,
                a,
                b,
                c,
            } = s.inst
            else {
                code.push_str(&self.pieces(s)?.concat());
                continue;
            };
            let neg = |x: bool| if x { " ^ 0x80000000u" } else { "" };
            let one = format!(
                "        {{ let qa = {}{}; let qb = {}; let qc = {}{}; var qd = dev_fma(qa, qb, qc);
        if (fma_suspect(qa, qb, qc, qd)) {{ if ({fk}u < dn{n}) {{ qd = ov{n}[{fk}]; }} else if (pd{n} == 0xffffffffu) {{ pd{n} = {fk}u; pa{n} = qa; pb{n} = qb; pc{n} = qc; }} }}
        {} }}
",
                self.v32(a),
                neg(neg_ab),
                self.v32(b),
                self.v32(c),
                neg(neg_c),
                self.assign(d, "qd".into(), ExprWidth::B32)
            );
            code.push_str(&under_guard(s.guard, one));
            fk += 1;
        }
        code.push_str(&self.flush_reads());
        let _ = writeln!(
            code,
            "        if (pd{n} == 0xffffffffu) {{ break; }}
        ov{n}[min(pd{n}, {}u)] = fma_f32(pa{n}, pb{n}, pc{n}); dn{n} = pd{n} + 1u;
        }}",
            nf - 1
        );
        Ok(code)
    }

    /// A case of [`Self::second_run`]'s `switch` after its opening: the
    /// last fma's result (`fx`) in its register, then `stmts`, then the
    /// initialisation notes still waiting (a note's temporaries are the
    /// case's own).
    fn case_start(&mut self, last: Option<Reg>, n: u32, stmts: &[Stmt]) -> Result<String, IrError> {
        let mut code = String::new();
        if let Some(d) = last {
            let _ = writeln!(
                code,
                "        {}",
                self.assign(d, format!("fx{n}"), ExprWidth::B32)
            );
        }
        for s in stmts {
            code.push_str(&self.pieces(s)?.concat());
        }
        code.push_str(&self.flush_reads());
        Ok(code)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fma_plan::tests::{add, fma, load};
    use super::*;
    use crate::cfg::Val;

    /// `matmul_tiled`'s tile: each fma's factors loaded just before it from
    /// the two row bases 1 and 2, the sum carried in register 10. The same
    /// registers (the bases) are live at every fma: the loop form fits.
    /// Where the bases are not read past the region, the last fma has none
    /// live, and the union is still the busiest fma's.
    #[test]
    fn an_accumulation_fits_the_loop_form() {
        let mut region = Vec::new();
        for i in 0..4u32 {
            region.push(load(20 + 2 * i, 1));
            region.push(load(21 + 2 * i, 2));
            region.push(fma(
                10,
                Val::Reg(20 + 2 * i),
                Val::Reg(21 + 2 * i),
                Val::Reg(10),
            ));
        }
        let fmas = fma_sites(&region);
        assert_eq!(fmas, [2, 5, 8, 11]);
        assert!(loop_form_fits(&region, &fmas, |r| r == 10));
        assert!(loop_form_fits(&region, &fmas, |r| r == 10 || r < 3));
    }

    /// Values that change from fma to fma: at the first fma 1, 3, 5 and 6
    /// are live (read later in the region), at the second 5, 6, 7 and 8,
    /// at the last none. Four at the busiest, six in all: the straight form
    /// stays. Where registers 1 to 8 are read past the region, the last fma
    /// holds all seven the others do, and the loop form fits.
    #[test]
    fn values_that_change_from_fma_to_fma_keep_the_straight_form() {
        let region = vec![
            load(5, 1),
            load(6, 1),
            fma(3, Val::Reg(1), Val::Reg(1), Val::Reg(1)),
            load(7, 1),
            load(8, 1),
            fma(4, Val::Reg(3), Val::Reg(3), Val::Reg(3)),
            add(9, 5, 6),
            fma(11, Val::Reg(7), Val::Reg(8), Val::Reg(9)),
        ];
        let fmas = fma_sites(&region);
        assert!(!loop_form_fits(&region, &fmas, |_| false));
        assert!(loop_form_fits(&region, &fmas, |r| (1..=8).contains(&r)));
    }
}
