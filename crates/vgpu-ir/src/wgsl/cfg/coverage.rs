//! Tests carried from one speculative region to the next (speculate.rs):
//! a value a region has tested is not tested again by a later region while
//! a register still holds it; that region's flag starts from the flags of
//! the sites that tested it instead.
//!
//! A *site* is a region, or a pre-test at the end of a block before a loop
//! (below). Each site `S` has a private flag `covS`, false at the thread's
//! start, with this meaning wherever a register `r` is *covered* by a set
//! of sites `C` (forward must-analysis over the CFG, `C` the union over the
//! paths that meet): `r`'s value has the kernel's threshold `T` as its
//! bound (magnitude.rs: it is zero, infinite, NaN or at least 2^T in
//! magnitude), or some `covQ`, `Q ∈ C`, is true. It holds because
//!
//! * a region `S` covers, at its end, exactly the registers whose value its
//!   fast copy tested, took covered or bounded by at least `T` (the set is
//!   the same on every run of `S`, fma_plan.rs's [`super::fma_plan::plan`]);
//!   `S`'s flag starts true where a flag of a value it rests on is, so where
//!   the fast copy noted nothing those values have bound `T` and
//!   `covS = false` is right; where it noted one, the second run computes
//!   them exactly and `covS` is set by testing each of them (`tiny`: zero or
//!   below 2^T; the cost only where a region runs twice,
//!   and no flag stays true once its values are gone: a zero met once does
//!   not send every later region to its second run);
//! * a pre-test `P` sets `covP` by testing its registers;
//! * any other write of a register ends its cover, and a warp operation
//!   (which writes registers at a block's end) ends all of them;
//! * a pre-test's flag is set false where the last register it covered
//!   stops being covered by it (after the region that took them over), so
//!   that a loop's first iteration does not pass a suspect flag to the
//!   others.
//!
//! Pre-tests: for each loop header (the target of a back edge of a
//! depth-first walk), the registers covered at the end of every back edge's
//! source that the header reads before writing them are tested at the end of each of the header's other predecessors
//! where they are not covered, so that the loop's regions need not test
//! them (`lorenz_rk4`'s state, carried from one step's region to the next,
//! and its step sizes, tested once before the loop).

use super::fma_plan::{
    plan, reads, regions, smem_word_load, smem_words_tested, Covered, Plan, SMEM_SITE,
};
use crate::cfg::shape::successors;
use crate::cfg::{CfgKernel, Inst, Reg, Space, Stmt, Term};
use std::collections::{BTreeSet, HashMap};
use std::ops::Range;

/// The carried tests of a kernel: each region's plan and what the writer
/// adds around it.
#[derive(Debug, Default, Clone)]
pub(super) struct Coverage {
    /// Per block, its regions (fma_plan.rs's [`regions`], found once).
    regions: Vec<Vec<Range<usize>>>,
    /// How many regions the kernel has: sites below are regions, the rest
    /// pre-tests.
    nregions: u32,
    /// Per block, its regions' sites, in order.
    region_sites: Vec<Vec<u32>>,
    /// Per block, the pre-test at its end: its site and registers.
    pretests: Vec<Option<(u32, Vec<Reg>)>>,
    /// Per region site, its plan.
    plans: HashMap<u32, Plan>,
    /// Per region site, the pre-test flags set false after it.
    clears: HashMap<u32, Vec<u32>>,
    /// The sites whose flag some region reads.
    read: BTreeSet<u32>,
    /// The threshold `T` of the kernel's tests (`tiny`: zero or below 2^T),
    /// as an exponent.
    threshold: i32,
    /// Whether words loaded from shared memory are covered by the
    /// workgroup's flag ([`SMEM_SITE`]; fma_plan.rs's [`smem_words_tested`]).
    smem: bool,
    /// How many words the kernel's stores that may reach shared memory
    /// write (each tested where the flag is read).
    smem_stores: usize,
    /// Whether an operand is tested through its source where that serves
    /// (fma_plan.rs's [`plan`]).
    sources: bool,
}

/// The thresholds tried per kernel (exponents; 2⁻¹²⁶ the smallest normal):
/// the one with the fewest tests is taken, the smallest of those on a tie.
/// Values below 2⁻³² are rare enough in f32 work that a region meeting one
/// may run twice.
pub(super) const THRESHOLDS: [i32; 6] = [-126, -96, -64, -48, -40, -32];

impl Coverage {
    /// The analysis of kernel `k`'s regions (`checked`: as fma_plan.rs's
    /// [`regions`] takes it) at the one of [`THRESHOLDS`], with operands
    /// tested through their sources or not, that leaves the fewest tests.
    pub(super) fn best(k: &CfgKernel, checked: bool) -> Coverage {
        let base = Coverage::base(k, checked);
        if base.nregions == 0 {
            return base;
        }
        THRESHOLDS
            .iter()
            .flat_map(|&t| [false, true].map(|src| base.clone().analysed(k, t, src)))
            .min_by_key(|c| (c.tests(), c.threshold, c.sources))
            .unwrap_or(base)
    }

    /// What does not depend on the threshold: kernel `k`'s regions
    /// (`checked`: as fma_plan.rs's [`regions`] takes it), their sites, and
    /// what its stores to shared memory allow; no plan yet.
    fn base(k: &CfgKernel, checked: bool) -> Coverage {
        let n = k.blocks.len();
        let stmts = || k.blocks.iter().flat_map(|b| &b.stmts);
        let mut c = Coverage {
            smem: smem_words_tested(stmts()),
            smem_stores: stmts()
                .map(|s| match &s.inst {
                    Inst::Store {
                        space: Space::Shared | Space::Generic,
                        src,
                        ..
                    } => src.len(),
                    _ => 0,
                })
                .sum(),
            regions: k
                .blocks
                .iter()
                .map(|b| regions(&b.stmts, checked))
                .collect(),
            region_sites: Vec::with_capacity(n),
            pretests: vec![None; n],
            ..Coverage::default()
        };
        let mut next = 0u32;
        for r in &c.regions {
            let r = r.len() as u32;
            c.region_sites.push((next..next + r).collect());
            next += r;
        }
        c.nregions = next;
        c
    }

    /// `self` (from [`Coverage::base`] of kernel `k`, with regions) analysed
    /// where the tests let pass values of at least 2^`threshold`
    /// (`sources`: as fma_plan.rs's [`plan`] takes it).
    fn analysed(mut self, k: &CfgKernel, threshold: i32, sources: bool) -> Coverage {
        self.threshold = threshold;
        self.sources = sources;
        let c = &mut self;
        let mut next = c.nregions;
        // Without pre-tests, then with those the loops' back edges ask for.
        let Some(exits) = c.fixpoint(k) else {
            return self.uncovered();
        };
        for (h, from) in back_edges(k) {
            let carried: Option<BTreeSet<Reg>> = from
                .iter()
                .map(|&u| exits[u].as_ref().map(|m| m.keys().copied().collect()))
                .reduce(|a: Option<BTreeSet<Reg>>, b| match (a, b) {
                    (Some(a), Some(b)) => Some(&a & &b),
                    _ => None,
                })
                .flatten();
            let Some(mut carried) = carried else { continue };
            // Only what the header reads before writing it.
            let read = exposed(&k.blocks[h].stmts);
            carried.retain(|r| read.contains(r));
            for (p, b) in k.blocks.iter().enumerate() {
                if from.contains(&p) || !successors(&b.term).contains(&(h as u32)) {
                    continue;
                }
                let Some(out) = &exits[p] else { continue };
                let need: Vec<Reg> = carried
                    .iter()
                    .copied()
                    .filter(|r| !out.contains_key(r))
                    .collect();
                if need.is_empty() {
                    continue;
                }
                let entry = c.pretests[p].get_or_insert_with(|| {
                    next += 1;
                    (next - 1, Vec::new())
                });
                for r in need {
                    if !entry.1.contains(&r) {
                        entry.1.push(r);
                    }
                }
            }
        }
        if c.fixpoint(k).is_none() {
            return self.uncovered();
        }
        self
    }

    /// Without carried tests: each region planned alone (what the writer
    /// does for a region without a plan), where the fixed point was not
    /// reached.
    fn uncovered(self) -> Coverage {
        Coverage {
            regions: self.regions,
            nregions: self.nregions,
            region_sites: self.region_sites,
            pretests: vec![None; self.pretests.len()],
            threshold: self.threshold,
            smem_stores: self.smem_stores,
            sources: self.sources,
            ..Coverage::default()
        }
    }

    /// The tests the kernel's regions and pre-tests make, counted once each
    /// where they are written.
    fn tests(&self) -> usize {
        let planned: usize = self
            .plans
            .values()
            .map(|p| {
                p.pre.iter().map(Vec::len).sum::<usize>() + p.post.iter().filter(|&&t| t).count()
            })
            .sum();
        let pre: usize = self.pretests.iter().flatten().map(|(_, r)| r.len()).sum();
        let stores = if self.smem_read() {
            self.smem_stores
        } else {
            0
        };
        planned + pre + stores
    }

    /// Whether operands are tested through their sources (fma_plan.rs's
    /// [`plan`]).
    pub(super) fn sources(&self) -> bool {
        self.sources
    }

    /// The threshold of the kernel's tests (an exponent: `tiny` is zero or
    /// below 2^threshold in magnitude).
    pub(super) fn threshold(&self) -> i32 {
        self.threshold
    }

    /// The covered registers at each block's end (`None`: not reached),
    /// to a fixed point from the entry block; records the plans, the
    /// clears and the flags read on the way. `None` where no fixed point
    /// was reached in 16 passes and two per block (bounds make a plan
    /// depend on its cover other than monotonically, so one is not certain;
    /// the kernels seen take a few).
    fn fixpoint(&mut self, k: &CfgKernel) -> Option<Vec<Option<Covered>>> {
        let n = k.blocks.len();
        let mut exits: Vec<Option<Covered>> = vec![None; n];
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, b) in k.blocks.iter().enumerate() {
            for s in successors(&b.term) {
                preds[s as usize].push(i);
            }
        }
        let mut passes = 0;
        let mut changed = true;
        while changed {
            passes += 1;
            if passes > 16 + 2 * n {
                return None;
            }
            changed = false;
            self.plans.clear();
            self.clears.clear();
            self.read.clear();
            for (i, b) in k.blocks.iter().enumerate() {
                let entry = if i == 0 {
                    Some(Covered::new())
                } else {
                    meet(preds[i].iter().filter_map(|&p| exits[p].as_ref()))
                };
                let Some(mut cov) = entry else { continue };
                self.block(i, &b.stmts, &mut cov);
                if let Term::Warp { .. } = b.term {
                    cov.clear();
                }
                if exits[i].as_ref() != Some(&cov) {
                    exits[i] = Some(cov);
                    changed = true;
                }
            }
        }
        Some(exits)
    }

    /// `cov` through block `i`'s statements (its regions planned).
    fn block(&mut self, i: usize, stmts: &[Stmt], cov: &mut Covered) {
        let smem = self.smem;
        let kill = |cov: &mut Covered, s: &Stmt| {
            for r in s.inst.dests() {
                cov.remove(&r);
                // A word from shared memory: its flag covers it.
                if smem && smem_word_load(s) && s.guard.is_none() {
                    cov.insert(r, BTreeSet::from([SMEM_SITE]));
                }
            }
        };
        let mut at = 0;
        for j in 0..self.regions[i].len() {
            let r = self.regions[i][j].clone();
            stmts[at..r.start].iter().for_each(|s| kill(cov, s));
            let site = self.region_sites[i][j];
            let p = plan(
                &stmts[r.clone()],
                cov,
                self.threshold,
                self.smem,
                self.sources,
            );
            self.read.extend(&p.init);
            let before: BTreeSet<u32> = self.pretest_sites(cov);
            stmts[r.clone()].iter().for_each(|s| kill(cov, s));
            for &t in &p.tested {
                cov.insert(t, BTreeSet::from([site]));
            }
            let after = self.pretest_sites(cov);
            self.clears
                .insert(site, before.difference(&after).copied().collect());
            self.plans.insert(site, p);
            at = r.end;
        }
        stmts[at..].iter().for_each(|s| kill(cov, s));
        if let Some((site, regs)) = &self.pretests[i] {
            for &r in regs {
                cov.insert(r, BTreeSet::from([*site]));
            }
        }
    }

    /// The pre-test sites that cover some register of `cov`.
    fn pretest_sites(&self, cov: &Covered) -> BTreeSet<u32> {
        cov.values()
            .flatten()
            .filter(|&&s| s >= self.nregions && s != SMEM_SITE)
            .copied()
            .collect()
    }

    /// Block `block`'s regions (none where the fma is not guarded: no
    /// analysis).
    pub(super) fn regions(&self, block: usize) -> &[Range<usize>] {
        self.regions.get(block).map_or(&[], |r| r.as_slice())
    }

    /// The plan of block `block`'s region `j` and its site.
    pub(super) fn region(&self, block: usize, j: usize) -> Option<(u32, &Plan)> {
        let site = *self.region_sites.get(block)?.get(j)?;
        Some((site, self.plans.get(&site)?))
    }

    /// Whether some region reads site `site`'s flag.
    pub(super) fn is_read(&self, site: u32) -> bool {
        self.read.contains(&site)
    }

    /// The pre-test flags set false after region site `site`.
    pub(super) fn clears(&self, site: u32) -> &[u32] {
        self.clears.get(&site).map_or(&[], |v| v.as_slice())
    }

    /// Block `block`'s pre-test, where its flag is read: its site and
    /// registers.
    pub(super) fn pretest(&self, block: usize) -> Option<(u32, &[Reg])> {
        let (site, regs) = self.pretests.get(block)?.as_ref()?;
        self.is_read(*site).then_some((*site, regs.as_slice()))
    }

    /// The flags' declarations (those read): private flags, and the
    /// workgroup's flag of shared memory's words.
    pub(super) fn decls(&self) -> String {
        self.read
            .iter()
            .map(|&s| match s {
                SMEM_SITE => "var<workgroup> smem_tiny: atomic<u32>;\n".to_string(),
                s => format!("var<private> cov{s}: bool;\n"),
            })
            .collect()
    }

    /// Whether some region reads the workgroup's flag of shared memory's
    /// words: each store that may reach shared memory then tests its words.
    pub(super) fn smem_read(&self) -> bool {
        self.read.contains(&SMEM_SITE)
    }

    /// Site `s`'s flag as a WGSL expression.
    pub(super) fn flag(s: u32) -> String {
        match s {
            SMEM_SITE => "(atomicLoad(&smem_tiny) != 0u)".into(),
            s => format!("cov{s}"),
        }
    }
}

/// The registers `stmts` read before writing them (a guarded write may not
/// happen, so it leaves a register unwritten).
fn exposed(stmts: &[Stmt]) -> BTreeSet<Reg> {
    let mut written = BTreeSet::new();
    let mut out = BTreeSet::new();
    for s in stmts {
        out.extend(reads(s).into_iter().filter(|r| !written.contains(r)));
        if s.guard.is_none() {
            written.extend(s.inst.dests());
        }
    }
    out
}

/// The registers covered on every one of `exits`, each by the union of
/// their sites; `None` where there is none.
fn meet<'a>(mut exits: impl Iterator<Item = &'a Covered>) -> Option<Covered> {
    let mut out = exits.next()?.clone();
    for e in exits {
        out.retain(|r, sites| match e.get(r) {
            Some(more) => {
                sites.extend(more);
                true
            }
            None => false,
        });
    }
    Some(out)
}

/// Each block a depth-first walk from the entry reaches again while it is
/// on the walk's path (a loop header), with the blocks it is reached from
/// so.
fn back_edges(k: &CfgKernel) -> Vec<(usize, Vec<usize>)> {
    let n = k.blocks.len();
    let mut state = vec![0u8; n]; // 0 new, 1 on the path, 2 done
    let mut found: HashMap<usize, Vec<usize>> = HashMap::new();
    // (block, its successors, the next one to visit)
    let mut stack: Vec<(usize, Vec<u32>, usize)> = Vec::new();
    if n > 0 {
        state[0] = 1;
        stack.push((0, successors(&k.blocks[0].term), 0));
    }
    while let Some((b, succ, at)) = stack.last_mut() {
        if let Some(&s) = succ.get(*at) {
            *at += 1;
            let (b, s) = (*b, s as usize);
            match state[s] {
                0 => {
                    state[s] = 1;
                    stack.push((s, successors(&k.blocks[s].term), 0));
                }
                1 => found.entry(s).or_default().push(b),
                _ => {}
            }
        } else {
            state[*b] = 2;
            stack.pop();
        }
    }
    let mut out: Vec<(usize, Vec<usize>)> = found.into_iter().collect();
    out.sort();
    out
}
