//! The structured form: a kernel whose control flow has a structured shape
//! ([`Shape`]) is written as WGSL `loop`s and `if`s in a function
//! `run_thread` that `main` calls, instead of the state machine's
//! `loop { switch pc { … } }`, and its barriers as direct
//! `workgroupBarrier()`s instead of rounds. GPU compilers keep the registers
//! of structured code in hardware registers and schedule across its blocks,
//! which they cannot do across the cases of a switch on a variable.
//!
//! It applies where [`shape`] says: no warp operations or yields (they meet
//! in rounds), and for a kernel with barriers, every barrier met by all
//! threads of a block alike ([`Shape::barriers_uniform`]).
//!
//! Checked, a kernel with barriers cannot let a fault end its thread, which
//! would leave the others waiting at the next barrier. Its faults do not end
//! the thread ([`KernelWriter::soft`]): the fault is kept and recorded before
//! the thread's next barrier (and at its end), the faulting access is
//! skipped, and so is every later store and atomic of that thread, as the
//! thread would have stopped before them; the thread goes on meeting the
//! barriers with the others, and the launch reports the fault (its buffers
//! are not written back). Its control flow stays that of the
//! others: the divergence analysis makes every branch that decides a barrier
//! depend only on parameters, special registers and constants, never on a
//! loaded value. The watchdog's fault leaves a loop without barriers; a loop
//! with barriers, which every thread runs alike, ends with a count of its
//! iterations that is the same in every thread. A barrier's release makes
//! the checks the state machine's rounds make there: a pending read of
//! unwritten shared memory is judged, the race check's marks are cleared.
//! Barrier divergence needs no check: [`Shape::barriers_uniform`] rules it
//! out.
//!
//! Writing: from a block, its statements, then by its terminator: a jump
//! goes on at its target; a branch becomes `if (p) { … } else { … }`, each
//! arm written up to the branch's immediate post-dominator, where the code
//! goes on; a loop header opens `loop { … }` whose body returns to the
//! header by `continue;` and leaves to the loop's one exit block by `break;`,
//! after which the code goes on at that block. A block reached along several
//! unstructured paths is written once per path; past a budget of twice the
//! blocks (or, for lavapipe's nesting limit, [`MAX_NESTING`]), the kernel
//! keeps the state machine.

use super::bounded::{self, VisitBound};
use super::motion;
use super::watchdog::AfterFault;
use super::writer::{CleanCopy, KernelWriter, EXIT};
use super::CfgWgslOptions;
use super::{checks, fault, meta};
use crate::cfg::shape::Shape;
use crate::cfg::{BlockId, CfgKernel, Inst, Space, Term};
use crate::error::IrError;
use std::fmt::Write;

/// The most returns plus nesting depth of the structured form. Mesa lowers
/// each `return` inside control flow by nesting the rest of the function in
/// a conditional, and lavapipe ignores the execution mask of conditionals
/// nested past 80 levels (emit.rs, `MAX_CASE_EXITS`); 64 leaves room for
/// the helpers inlined at that depth.
const MAX_NESTING: usize = 64;

/// The shape of `k` when it is written in structured form under `o`, else
/// `None` (the state machine).
pub(super) fn shape(k: &CfgKernel, o: &CfgWgslOptions) -> Option<Shape> {
    if !o.structured || k.has_warp_ops() || k.has_yields() {
        return None;
    }
    let barriers = k.has_barriers();
    let s = Shape::of(k).ok()?;
    if barriers && !s.barriers_uniform(k) {
        return None;
    }
    Some(s)
}

/// Whether threads of a block may pass values through global memory across
/// a barrier: a block that stores to global memory (or atomically updates
/// it) reaches a barrier, and the kernel reads global memory. `bar.sync`
/// orders global accesses too, so the barrier is then also a
/// `storageBarrier()`.
fn global_exchange(k: &CfgKernel, shape: &Shape) -> bool {
    let global = |s: &Space| matches!(s, Space::Global | Space::Generic);
    let insts = || k.blocks.iter().flat_map(|b| &b.stmts).map(|s| &s.inst);
    let reads = insts().any(|i| match i {
        Inst::Load { space, .. } | Inst::Atom { space, .. } => global(space),
        _ => false,
    });
    let writes_before_barrier = k.blocks.iter().enumerate().any(|(i, b)| {
        b.stmts.iter().any(|s| match &s.inst {
            Inst::Store { space, .. } | Inst::Atom { space, .. } => global(space),
            _ => false,
        }) && shape.reaches_barrier(k, i as BlockId)
    });
    reads && writes_before_barrier
}

/// The state of writing one structured kernel.
struct Writing<'s> {
    shape: &'s Shape,
    /// Blocks written so far, and the most allowed.
    written: usize,
    budget: usize,
    /// `return`s written, and the deepest nesting of loops and ifs.
    returns: usize,
    depth: usize,
    deepest: usize,
    /// A barrier's statements.
    barrier: String,
    /// Those of a barrier that ends an interval without initialisation
    /// notes ([`KernelWriter::barrier_unjudged`]).
    barrier_unjudged: String,
    /// Those of a barrier without a release's checks
    /// ([`KernelWriter::barrier_plain`]).
    barrier_plain: String,
    /// Whether each block is the header of a loop that holds a barrier.
    barrier_loop: Vec<bool>,
    /// Whether each block is the header of a loop its own code ends within
    /// a few iterations (bounded.rs), which the watchdog does not test.
    bounded: Vec<bool>,
    /// For each header of a loop through barriers whose watchdog test the
    /// workgroup skips on entries that cannot reach the limit, the bound on
    /// its visits (bounded.rs, watchdog.rs: `fits_code`).
    visits: Vec<Option<VisitBound>>,
}

impl Writing<'_> {
    /// Whether code can go on at `j` inside the loop with header `lp` (or at
    /// the top level): `j` is in the loop or its exit.
    fn in_scope(&self, j: BlockId, lp: Option<BlockId>) -> bool {
        match lp.and_then(|h| self.shape.loops[h as usize].as_ref()) {
            Some(l) => l.body[j as usize] || l.exit == Some(j),
            None => true,
        }
    }
}

impl KernelWriter<'_> {
    /// The function `run_thread` holding the kernel's registers and its
    /// control flow in structured form, or `None` where that form would be
    /// over its budget or nesting limit (the module documentation).
    ///
    /// # Errors
    /// As a statement's code ([`KernelWriter::guarded`]).
    pub(super) fn structured(&mut self, shape: &Shape) -> Result<Option<String>, IrError> {
        let before = std::mem::take(&mut self.out);
        let (tmp, site_caches) = (self.tmp, self.site_caches);
        self.out.push_str(
            "\nfn run_thread(lid: vec3<u32>, cta: vec3<u32>, ncta: vec3<u32>, lidx: u32) {\n  var steps: u32 = 0u;\n",
        );
        self.reg_decls();
        let k = self.k;
        let barrier_loop: Vec<bool> = shape
            .loops
            .iter()
            .map(|l| {
                l.as_ref().is_some_and(|l| {
                    k.blocks
                        .iter()
                        .zip(&l.body)
                        .any(|(b, &inside)| inside && matches!(b.term, Term::Barrier { .. }))
                })
            })
            .collect();
        let bounded: Vec<bool> = (0..k.blocks.len())
            .map(|h| self.o.checked && bounded::is_halving_loop(k, shape, h))
            .collect();
        let visits: Vec<Option<VisitBound>> = (0..k.blocks.len())
            .map(|h| {
                (self.soft && barrier_loop[h] && !bounded[h])
                    .then(|| bounded::visit_bound(k, shape, h))
                    .flatten()
            })
            .collect();
        if self.soft {
            for h in (0..k.blocks.len()).filter(|&h| barrier_loop[h] && !bounded[h]) {
                let _ = writeln!(self.out, "  var it{h}: u32 = 0u;");
                if visits[h].is_some() {
                    let _ = writeln!(self.out, "  var wdok{h}: u32 = 0u;");
                }
            }
        }
        let mut w = Writing {
            shape,
            written: 0,
            budget: 2 * self.k.blocks.len() + 8,
            returns: 0,
            depth: 1,
            deepest: 1,
            barrier: self.barrier_code(global_exchange(self.k, shape)),
            barrier_unjudged: self.barrier_unjudged(global_exchange(self.k, shape)),
            barrier_plain: self.barrier_plain(global_exchange(self.k, shape)),
            barrier_loop,
            bounded,
            visits,
        };
        let fits = self.seq(&mut w, 0, None, None, false)?;
        self.out.push_str("}\n");
        if w.visits.iter().any(Option::is_some) {
            self.out.push_str(super::watchdog::FITS_DECLS);
        }
        let body = std::mem::replace(&mut self.out, before);
        if !fits || w.returns + w.deepest > MAX_NESTING {
            // The form not taken: its temporaries' numbers and region
            // caches are free again.
            (self.tmp, self.site_caches) = (tmp, site_caches);
            self.waiting_reads.clear();
            return Ok(None);
        }
        Ok(Some(body))
    }

    /// A barrier's statements: `workgroupBarrier()` (after a
    /// `storageBarrier()` where threads `exchange` values through global
    /// memory); where faults do not end the thread, before it the count of
    /// barriers passed (the time of a fault, `checks::raise_decl`: faults
    /// are recorded at the block's end), and the checks a barrier's release
    /// makes (a pending read of unwritten shared memory, the race check's
    /// marks cleared) between it and a second one.
    fn barrier_code(&self, exchange: bool) -> String {
        let mut s = self.barrier_plain(exchange);
        if !(self.soft && (self.shadow || self.race)) {
            return s;
        }
        s.push('\n');
        if self.shadow && !self.race {
            // The initialisation check's release needs no second barrier
            // (checks::shadow_release).
            s.push_str(&checks::shadow_release());
            return s;
        }
        // With the race check, the release: thread 0's judgement of pending
        // reads of unwritten shared memory, the race check's marks cleared,
        // a second barrier that publishes them, each thread's note of
        // whether shared memory is all written.
        let mut release = String::new();
        if self.shadow {
            let judge = checks::uninit_judge();
            let _ = writeln!(release, "  if (lidx == 0u) {{ wg_round = 1u;{judge}\n  }}");
        }
        let shared = self.k.shared_static + self.o.dyn_shared;
        release.push_str(&checks::race_reset(shared, self.o.block.iter().product()));
        release.push_str(self.shadow_refresh());
        s.push_str(&release);
        s
    }

    /// The statements of a barrier that ends a block running only after a
    /// barrier by which all of shared memory is proven written
    /// (`written_after`, written.rs): every block of the interval it ends
    /// runs only after a barrier too (a block reached from the entry without
    /// passing one would reach this barrier so), so the interval made no
    /// initialisation notes and its release has nothing to judge; without
    /// the race check, whose marks a release clears, the barrier alone (with
    /// its count). A thread's `sh_full` is then refreshed at the next
    /// release instead, which only delays its skipping the bits.
    fn barrier_unjudged(&self, exchange: bool) -> String {
        if !self.soft || self.race || self.written_after.is_empty() {
            return self.barrier_code(exchange);
        }
        self.barrier_plain(exchange)
    }

    /// A barrier without a release: in the soft form the count of barriers
    /// passed (the time of the faults that follow, checks::raise_decl),
    /// `storageBarrier()` where threads exchange through global memory,
    /// then `workgroupBarrier()`.
    fn barrier_plain(&self, exchange: bool) -> String {
        let mut s = String::new();
        if self.soft {
            s.push_str("g_nbar = g_nbar + 1u;\n  ");
        }
        if exchange {
            s.push_str("storageBarrier(); ");
        }
        s.push_str("workgroupBarrier();");
        s
    }

    /// The watchdog at the start of block `i` of the structured form (see
    /// [`KernelWriter::watchdog`]). Where faults do not end the thread, its
    /// fault leaves a loop without barriers (`break;`), whose exit every
    /// thread reaches; a loop with barriers every thread runs alike, so a
    /// count of its iterations, the same in all, ends the thread once every
    /// thread has faulted (each iteration counts at least the header's
    /// instructions); its fault is raised there without a branch
    /// ([`KernelWriter::watchdog_branchless`]).
    fn structured_watchdog(&self, w: &Writing, i: usize) -> String {
        // A loop that ends on its own within a few iterations only counts
        // (bounded.rs).
        let header = w.shape.loops[i].is_some() && !w.bounded[i];
        if !(self.soft && header) {
            return self.watchdog(i, header);
        }
        if !w.barrier_loop[i] {
            return self.watchdog_then(i, true, AfterFault::LeaveLoop);
        }
        if self.clean.as_ref().is_some_and(|c| c.header == i) {
            // A versioned loop's clean copy: entered only where no thread
            // can reach the limit in it (versioned.rs).
            return self.watchdog(i, false);
        }
        let n = self.k.blocks[i].stmts.len() + 1;
        let test = format!(
            "{}        it{i} = it{i} + 1u;\n        if (it{i} > words[{}] / {n}u) {{ return; }}\n",
            self.watchdog_raise_if(i),
            meta::WATCHDOG
        );
        // The block's count alone (the test follows).
        let count = self.watchdog(i, false);
        if w.visits[i].is_some() {
            // Skipped where the whole workgroup's entry cannot reach the
            // limit (`wdok`, uniform, set before the loop: watchdog.rs,
            // `fits_code`).
            return format!("{count}        if (wdok{i} == 0u) {{\n{test}        }}\n");
        }
        count + &test
    }

    /// A line of control flow at the current depth.
    fn ctl(&mut self, w: &Writing, s: &str) {
        let _ = writeln!(self.out, "{:1$}{s}", "", 2 * w.depth);
    }

    /// One arm of a branch: the code from `b` up to `follow` ([`Self::seq`]),
    /// apart; `None`: over the budget.
    fn arm(
        &mut self,
        w: &mut Writing,
        b: BlockId,
        follow: Option<BlockId>,
        lp: Option<BlockId>,
    ) -> Result<Option<String>, IrError> {
        let before = std::mem::take(&mut self.out);
        let fits = self.seq(w, b, follow, lp, false)?;
        let arm = std::mem::replace(&mut self.out, before);
        Ok(fits.then_some(arm))
    }

    /// Whether code written here may be written twice on `sh_full`
    /// ([`Self::unswitched`]): a kernel with the initialisation check (not
    /// the race check, whose marks each access makes) and barriers (at
    /// whose releases `sh_full` is set), where `sh_full` is not known.
    fn may_unswitch(&self) -> bool {
        self.shadow && !self.race && self.sh_known.is_none() && self.k.has_barriers()
    }

    /// Code that `write` writes (`None`: over a limit), or where it notes or
    /// marks shared memory for the initialisation check (at least
    /// `min_notes` times) and [`Self::may_unswitch`], the same code twice:
    /// `if (sh_full) { … } else { … }`, the first copy without the notes and
    /// marks, which do nothing once all of shared memory is written, and
    /// `sh_full` does not change inside (the code has no barrier); GPU
    /// compilers do not take that branch out of a loop themselves. Both
    /// copies give a global access site the same region cache (only one
    /// runs at a time), and code inside either is not copied again
    /// (`sh_known`: in the general copy `sh_full` stays false).
    fn unswitched(
        &mut self,
        min_notes: u32,
        write: &mut dyn FnMut(&mut Self) -> Result<Option<String>, IrError>,
    ) -> Result<Option<String>, IrError> {
        if !self.may_unswitch() {
            return write(self);
        }
        let (notes, caches) = (self.shadow_notes, self.site_caches);
        self.sh_known = Some(false);
        let general = write(self);
        self.sh_known = None;
        let Some(general) = general? else {
            return Ok(None);
        };
        if self.shadow_notes - notes < min_notes {
            return Ok(Some(general));
        }
        let caches_after = self.site_caches;
        self.site_caches = caches;
        self.sh_known = Some(true);
        let full = write(self);
        self.sh_known = None;
        self.site_caches = self.site_caches.max(caches_after);
        let Some(full) = full? else {
            return Ok(None);
        };
        Ok(Some(format!(
            "  if (sh_full) {{\n{full}  }} else {{\n{general}  }}\n"
        )))
    }

    /// The loop with header `h`; `Ok(false)`: over the budget or nesting
    /// limit. A loop without barriers is written twice where
    /// [`Self::unswitched`] says (the copy not counted against the budget:
    /// each loop is copied once).
    fn loop_code(&mut self, w: &mut Writing, h: BlockId) -> Result<bool, IrError> {
        let copy = !w.barrier_loop[h as usize] && self.may_unswitch();
        if !copy {
            return self.plain_loop(w, h);
        }
        let (written, depth, deepest) = (w.written, w.depth, w.deepest);
        let (mut budget_after, mut general_deepest) = (written, depth);
        let before = std::mem::take(&mut self.out);
        let code = self.unswitched(1, &mut |me: &mut Self| {
            // The general copy first, where a loop is always written (so a
            // loop left as one copy is written as without the copying);
            // then, where taken, the copy on `sh_full`, the `if` around
            // both one level deeper.
            if me.sh_known == Some(true) {
                budget_after = w.written;
                w.written = written;
                w.deepest = w.deepest.max(general_deepest + 1);
                w.depth = depth + 1;
            } else {
                w.deepest = depth;
            }
            let fits = me.plain_loop(w, h)?;
            if me.sh_known == Some(true) {
                w.written = budget_after;
            } else {
                general_deepest = w.deepest;
                w.deepest = deepest.max(general_deepest);
            }
            w.depth = depth;
            Ok(fits.then(|| std::mem::take(&mut me.out)))
        });
        self.out = before;
        let Some(code) = code? else {
            return Ok(false);
        };
        self.out.push_str(&code);
        Ok(true)
    }

    /// `loop { … }` with header `h` ([`Self::loop_code`]), after the fits
    /// test where the watchdog takes one, and versioned where it can be
    /// (versioned.rs).
    fn plain_loop(&mut self, w: &mut Writing, h: BlockId) -> Result<bool, IrError> {
        if let Some(vb) = w.visits[h as usize] {
            if self.versioned_loop(w, h, &vb)? {
                return Ok(true);
            }
            let code = self.fits_code(h as usize, &vb, "", "");
            for line in code.lines() {
                self.ctl(w, line);
            }
        }
        self.loop_only(w, h)
    }

    /// The loop with header `h` written twice where versioned.rs can
    /// prove its clean copy exact: the fits test with the sites' tests,
    /// then `if (wdok) { clean copy } else { checked copy }`. `Ok(false)`:
    /// not versioned, nothing written and the writer's state as it was.
    fn versioned_loop(
        &mut self,
        w: &mut Writing,
        h: BlockId,
        vb: &VisitBound,
    ) -> Result<bool, IrError> {
        let hi = h as usize;
        let Some(sites) = motion::loop_sites(self.k, w.shape, hi, vb) else {
            return Ok(false);
        };
        let saved = (w.written, w.depth, w.deepest, w.returns);
        let state = (
            self.site_caches,
            self.site_seeds.clone(),
            self.shadow_notes,
            self.waiting_reads.clone(),
            self.fault_sites,
        );
        let before = std::mem::take(&mut self.out);
        // The checked copy, one level deeper (in the `else`).
        self.site_log = Some(Default::default());
        w.depth += 1;
        let slow_ok = self.loop_only(w, h);
        let log = self.site_log.take().unwrap_or_default();
        let slow = std::mem::take(&mut self.out);
        let after_slow = (w.written, w.deepest, w.returns);
        // The clean copy, not counted against the budget (each loop is
        // copied once).
        w.written = saved.0;
        w.depth = saved.1 + 1;
        let faults = self.fault_sites;
        self.clean = Some(CleanCopy { header: hi, sites });
        let fast_ok = self.loop_only(w, h);
        let sites = self.clean.take().map(|c| c.sites).unwrap_or_default();
        let fast = std::mem::replace(&mut self.out, before);
        w.depth = saved.1;
        let clean = self.fault_sites == faults;
        let kl = if vb.step_first {
            "(max(d, 1u) - 1u)"
        } else {
            "d"
        };
        let mut lets = String::new();
        // Each logged site's test (`None`: one cannot be tested).
        let tests: Option<Vec<String>> = log
            .into_iter()
            .map(|((ptr, off), cache, align)| {
                let m = sites.get(&ptr)?;
                self.motion_test(m, (off, align), &cache, kl, &mut lets)
            })
            .collect();
        let deepest = w.deepest.max(after_slow.1);
        let tests = match tests {
            Some(t) if slow_ok? && fast_ok? && clean && deepest <= MAX_NESTING => t,
            _ => {
                (w.written, w.depth, w.deepest, w.returns) = saved;
                (
                    self.site_caches,
                    self.site_seeds,
                    self.shadow_notes,
                    self.waiting_reads,
                    self.fault_sites,
                ) = state;
                return Ok(false);
            }
        };
        (w.written, w.deepest) = (after_slow.0, deepest);
        w.returns = w.returns.max(after_slow.2);
        let also = std::iter::once("g_fcls == 0u".to_string())
            .chain(tests)
            .collect::<Vec<_>>()
            .join(" && ");
        let code = self.fits_code(hi, vb, &lets, &also);
        for line in code.lines() {
            self.ctl(w, line);
        }
        self.ctl(w, &format!("if (wdok{h} != 0u) {{"));
        self.out.push_str(&fast);
        self.ctl(w, "} else {");
        if self.o.speculative_loops {
            // The launch runs again with the checked copy (uniform: every
            // thread of the workgroup returns here).
            self.speculated = true;
            w.returns += 1;
            self.ctl(
                w,
                &format!("  atomicStore(&flt[{}], 1u); return;", fault::FALLBACK),
            );
        } else {
            self.out.push_str(&slow);
        }
        self.ctl(w, "}");
        Ok(true)
    }

    /// `loop { … }` with header `h`, alone.
    fn loop_only(&mut self, w: &mut Writing, h: BlockId) -> Result<bool, IrError> {
        self.ctl(w, "loop {");
        w.depth += 1;
        w.deepest = w.deepest.max(w.depth);
        if w.deepest > MAX_NESTING {
            return Ok(false);
        }
        if !self.seq(w, h, None, Some(h), true)? {
            return Ok(false);
        }
        w.depth -= 1;
        self.ctl(w, "}");
        Ok(true)
    }

    /// Writes the code from block `b` up to `follow` (exclusive; `None`: the
    /// end), inside the loop with header `lp`: reaching the header is
    /// `continue;`, reaching its exit `break;`. `at_header`: `b` is `lp`'s
    /// header, starting its body. `Ok(false)`: over the budget.
    fn seq(
        &mut self,
        w: &mut Writing,
        mut b: BlockId,
        follow: Option<BlockId>,
        lp: Option<BlockId>,
        mut at_header: bool,
    ) -> Result<bool, IrError> {
        loop {
            if !at_header {
                if Some(b) == follow {
                    return Ok(true);
                }
                if let Some(h) = lp {
                    if b == h {
                        self.ctl(w, "continue;");
                        return Ok(true);
                    }
                    if w.shape.loops[h as usize].as_ref().and_then(|l| l.exit) == Some(b) {
                        self.ctl(w, "break;");
                        return Ok(true);
                    }
                }
                if let Some(l) = &w.shape.loops[b as usize] {
                    let exit = l.exit;
                    if !self.loop_code(w, b)? {
                        return Ok(false);
                    }
                    match exit {
                        Some(e) => {
                            b = e;
                            continue;
                        }
                        None => return Ok(true),
                    }
                }
            }
            at_header = false;
            w.written += 1;
            if w.written > w.budget {
                return Ok(false);
            }
            let i = b as usize;
            let k = self.k;
            let blk = &k.blocks[i];
            let mut code = self.structured_watchdog(w, i);
            let stmts = if self.written_after.get(i) == Some(&true) {
                // Shared memory is all written here (written.rs): no notes.
                let known = self.sh_known.replace(true);
                let code = self.stmts_code(i, &blk.stmts);
                self.sh_known = known;
                code?.concat()
            } else {
                // A block of one note gains nothing from two copies: its
                // note is already one branch.
                self.unswitched(2, &mut |me: &mut Self| {
                    Ok(Some(me.stmts_code(i, &blk.stmts)?.concat()))
                })?
                .unwrap_or_default()
            };
            code += &stmts;
            // A check's fault ends the thread, or where it must go on meeting
            // barriers, is only recorded (`raise`).
            let code = code.replace(EXIT, if self.soft { "" } else { "return;" });
            w.returns += code.matches("return;").count();
            self.out.push_str(&code);
            match blk.term {
                Term::Jump(t) => b = t,
                Term::Barrier { next, .. } => {
                    let code = if self.written_after.get(i) == Some(&true) {
                        &w.barrier_unjudged
                    } else {
                        &w.barrier
                    };
                    if *code != w.barrier_plain {
                        // Its release checks (checks.rs).
                        self.fault_sites += 1;
                    }
                    self.ctl(w, code);
                    b = next;
                }
                Term::Branch { then, els, .. } if then == els => b = then,
                Term::Branch { p, neg, then, els } => {
                    let j = w.shape.ipdom[i];
                    w.depth += 1;
                    w.deepest = w.deepest.max(w.depth);
                    if w.deepest > MAX_NESTING {
                        return Ok(false);
                    }
                    let Some(a) = self.arm(w, then, j, lp)? else {
                        return Ok(false);
                    };
                    let Some(c) = self.arm(w, els, j, lp)? else {
                        return Ok(false);
                    };
                    w.depth -= 1;
                    let (yes, no) = if neg { ("==", "!=") } else { ("!=", "==") };
                    match (a.is_empty(), c.is_empty()) {
                        (true, true) => {}
                        (false, true) => {
                            self.ctl(w, &format!("if (r{p} {yes} 0u) {{"));
                            self.out.push_str(&a);
                            self.ctl(w, "}");
                        }
                        (true, false) => {
                            self.ctl(w, &format!("if (r{p} {no} 0u) {{"));
                            self.out.push_str(&c);
                            self.ctl(w, "}");
                        }
                        (false, false) => {
                            self.ctl(w, &format!("if (r{p} {yes} 0u) {{"));
                            self.out.push_str(&a);
                            self.ctl(w, "} else {");
                            self.out.push_str(&c);
                            self.ctl(w, "}");
                        }
                    }
                    match j {
                        Some(j) if w.in_scope(j, lp) => b = j,
                        _ => return Ok(true),
                    }
                }
                Term::Return => {
                    w.returns += 1;
                    self.ctl(w, "return;");
                    return Ok(true);
                }
                Term::Trap { line } => {
                    w.returns += 1;
                    self.fault_sites += 1;
                    let raise = format!(
                        "raise({}u, {line}u, vec2<u32>(0u, 0u)); return;",
                        fault::CLASS_TRAP
                    );
                    self.ctl(w, &raise);
                    return Ok(true);
                }
                // shape() keeps kernels with either in the state machine.
                Term::Yield { .. } | Term::Warp { .. } => return Ok(false),
            }
        }
    }
}
