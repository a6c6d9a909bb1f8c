//! The shape of a kernel's control flow: successors, post-dominators,
//! natural loops and divergence, for emitters that write it as structured
//! code (WGSL's `loop`, `if`, `break`, `continue`) instead of a `switch` on
//! a program counter, and that place its barriers directly.
//!
//! [`Shape::of`] succeeds when the control flow is reducible, every loop has
//! at most one exit block and every block reaches a return. Its divergence
//! analysis says which branches may go different ways in the threads of one
//! block: a branch is uniform when its predicate is computed, outside any
//! divergent region, only from values every thread of the block shares
//! (parameters, `%ctaid`, `%ntid`, `%nctaid`, constants). A divergent branch
//! opens a region up to its immediate post-dominator; [`Shape::barriers_uniform`]
//! holds when no such region holds a barrier, and no region holding a return
//! is followed by a barrier: then every thread of a block meets the same
//! barriers in the same order, as CUDA requires of `bar.sync` and WGSL of
//! `workgroupBarrier()`.

use super::{BlockId, CfgKernel, Inst, Space, Special, Term, Val};

/// Why a kernel's control flow has no structured shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unstructured {
    /// A loop is entered other than through its header.
    Irreducible,
    /// A loop leaves to more than one block.
    LoopExits(BlockId),
    /// A block cannot reach a return (an endless loop).
    NoExit(BlockId),
}

/// The shape of a kernel's control flow ([`Shape::of`]).
#[derive(Debug, Clone)]
pub struct Shape {
    /// Each block's successors.
    pub succs: Vec<Vec<BlockId>>,
    /// Each block's immediate post-dominator; `None`: the exit (the block
    /// only returns or traps, or every path from it ends before meeting
    /// another block).
    pub ipdom: Vec<Option<BlockId>>,
    /// For a loop header, the loop: its blocks and its exit block (`None`:
    /// it is left only by returning).
    pub loops: Vec<Option<Loop>>,
    /// Each block's immediate dominator (the entry block's is itself;
    /// `None`: the entry does not reach the block).
    pub idom: Vec<Option<BlockId>>,
    /// Whether each branch block's predicate may differ between the threads
    /// of one block (only meaningful for blocks ending in a branch).
    pub divergent_branch: Vec<bool>,
    /// Whether each block may run in some threads of a block and not others,
    /// or a different number of times.
    pub divergent_block: Vec<bool>,
}

/// A natural loop.
#[derive(Debug, Clone)]
pub struct Loop {
    /// Whether each block of the kernel belongs to it.
    pub body: Vec<bool>,
    /// The block it leaves to, if it leaves other than by returning.
    pub exit: Option<BlockId>,
}

/// A block's successors.
pub fn successors(t: &Term) -> Vec<BlockId> {
    match *t {
        Term::Jump(b) => vec![b],
        Term::Branch { then, els, .. } => {
            if then == els {
                vec![then]
            } else {
                vec![then, els]
            }
        }
        Term::Barrier { next, .. } | Term::Yield { next } | Term::Warp { next, .. } => vec![next],
        Term::Return | Term::Trap { .. } => vec![],
    }
}

impl Shape {
    /// The shape of `k`'s control flow, or why it has none.
    pub fn of(k: &CfgKernel) -> Result<Shape, Unstructured> {
        let n = k.blocks.len();
        let succs: Vec<Vec<BlockId>> = k.blocks.iter().map(|b| successors(&b.term)).collect();
        let mut preds = vec![Vec::new(); n];
        for (i, s) in succs.iter().enumerate() {
            for &t in s {
                preds[t as usize].push(i as BlockId);
            }
        }
        let reach = reachable_from(&succs, &[0]);
        // Post-dominators over the reachable blocks, node n the exit.
        let exits: Vec<usize> = (0..n)
            .filter(|&i| reach[i] && succs[i].is_empty())
            .collect();
        let ipdom_full = {
            let mut rsuccs = vec![Vec::new(); n + 1];
            for (i, p) in preds.iter().enumerate() {
                if reach[i] {
                    rsuccs[i] = p.iter().map(|&x| x as usize).collect();
                }
            }
            rsuccs[n] = exits.clone();
            idoms(&rsuccs, n)
        };
        for i in 0..n {
            if reach[i] && ipdom_full[i].is_none() {
                return Err(Unstructured::NoExit(i as BlockId));
            }
        }
        let ipdom = (0..n)
            .map(|i| match ipdom_full[i] {
                Some(p) if p < n => Some(p as BlockId),
                _ => None,
            })
            .collect();
        // Dominators, for back edges and reducibility.
        let fsuccs: Vec<Vec<usize>> = succs
            .iter()
            .map(|s| s.iter().map(|&x| x as usize).collect())
            .collect();
        let idom: Vec<Option<BlockId>> = idoms(&fsuccs, 0)
            .iter()
            .map(|d| d.map(|d| d as BlockId))
            .collect();
        let dominates = |a: usize, b: usize| dominates_in(&idom, a as BlockId, b as BlockId);
        if retreating_edges(&fsuccs)
            .into_iter()
            .any(|(u, h)| !dominates(h, u))
        {
            return Err(Unstructured::Irreducible);
        }
        let mut loops: Vec<Option<Loop>> = vec![None; n];
        for h in 0..n {
            let back: Vec<usize> = preds[h]
                .iter()
                .map(|&p| p as usize)
                .filter(|&p| reach[p] && dominates(h, p))
                .collect();
            if back.is_empty() {
                continue;
            }
            let mut body = vec![false; n];
            body[h] = true;
            let mut stack = back;
            while let Some(b) = stack.pop() {
                if !body[b] {
                    body[b] = true;
                    stack.extend(preds[b].iter().map(|&p| p as usize));
                }
            }
            let mut exit = None;
            for b in (0..n).filter(|&b| body[b]) {
                for &t in &succs[b] {
                    if !body[t as usize] {
                        if exit.is_some_and(|e| e != t) {
                            return Err(Unstructured::LoopExits(h as BlockId));
                        }
                        exit = Some(t);
                    }
                }
            }
            loops[h] = Some(Loop { body, exit });
        }
        let mut shape = Shape {
            succs,
            ipdom,
            loops,
            idom,
            divergent_branch: vec![false; n],
            divergent_block: vec![false; n],
        };
        shape.divergence(k);
        Ok(shape)
    }

    /// Whether every path from the entry to block `b` passes block `a` (`a`
    /// dominates itself).
    pub fn dominates(&self, a: BlockId, b: BlockId) -> bool {
        dominates_in(&self.idom, a, b)
    }

    /// Whether a path of at least one edge leads from block `a` to block
    /// `b` (`a` itself only through a cycle).
    pub fn reaches_after(&self, a: BlockId, b: BlockId) -> bool {
        reachable_from(&self.succs, &self.succs[a as usize])[b as usize]
    }

    /// The blocks of the region a branch at `b` opens: those reachable from
    /// its successors without passing its immediate post-dominator.
    pub fn region(&self, b: BlockId) -> Vec<BlockId> {
        let stop = self.ipdom[b as usize];
        let mut seen = vec![false; self.succs.len()];
        let mut out = Vec::new();
        let mut stack: Vec<BlockId> = self.succs[b as usize].clone();
        while let Some(x) = stack.pop() {
            if Some(x) == stop || seen[x as usize] {
                continue;
            }
            seen[x as usize] = true;
            out.push(x);
            stack.extend(&self.succs[x as usize]);
        }
        out
    }

    /// Marks the divergent branches and blocks: iterated to a fixed point
    /// with the registers that may differ between threads.
    fn divergence(&mut self, k: &CfgKernel) {
        let mut varying = vec![false; k.regs.len()];
        loop {
            let mut changed = false;
            for (i, blk) in k.blocks.iter().enumerate() {
                let in_region = self.divergent_block[i];
                for s in &blk.stmts {
                    let guard_varies = s.guard.is_some_and(|(g, _)| varying[g as usize]);
                    let v = in_region || guard_varies || inst_varies(&s.inst, &varying);
                    if v {
                        for d in s.inst.dests() {
                            if !varying[d as usize] {
                                varying[d as usize] = true;
                                changed = true;
                            }
                        }
                    }
                }
                if let Term::Warp { op, .. } = &blk.term {
                    for d in op.dsts() {
                        if !varying[d as usize] {
                            varying[d as usize] = true;
                            changed = true;
                        }
                    }
                }
            }
            for (i, blk) in k.blocks.iter().enumerate() {
                let d = match blk.term {
                    Term::Branch { p, then, els, .. } => {
                        then != els && (varying[p as usize] || self.divergent_block[i])
                    }
                    _ => false,
                };
                if d && !self.divergent_branch[i] {
                    self.divergent_branch[i] = true;
                    changed = true;
                    for x in self.region(i as BlockId) {
                        self.divergent_block[x as usize] = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// Whether every thread of a block meets the same barriers in the same
    /// order: no divergent region holds a barrier (or a yield or warp
    /// operation), and no divergent region that holds a return or trap is
    /// followed by one.
    pub fn barriers_uniform(&self, k: &CfgKernel) -> bool {
        let syncs = |b: BlockId| {
            matches!(
                k.blocks[b as usize].term,
                Term::Barrier { .. } | Term::Yield { .. } | Term::Warp { .. }
            )
        };
        for b in 0..k.blocks.len() {
            if !self.divergent_branch[b] {
                continue;
            }
            let region = self.region(b as BlockId);
            if region.iter().any(|&x| syncs(x)) {
                return false;
            }
            let leaves = region.iter().any(|&x| self.succs[x as usize].is_empty());
            if leaves && self.ipdom[b].is_some_and(|p| self.reaches(p, syncs)) {
                return false;
            }
        }
        true
    }

    /// Whether block `b` ends in a barrier or reaches one.
    pub fn reaches_barrier(&self, k: &CfgKernel, b: BlockId) -> bool {
        self.reaches(b, |x| {
            matches!(k.blocks[x as usize].term, Term::Barrier { .. })
        })
    }

    /// Whether block `from` or a block it reaches is one `pick` picks.
    fn reaches(&self, from: BlockId, pick: impl Fn(BlockId) -> bool) -> bool {
        let after = reachable_from(&self.succs, &[from]);
        (0..after.len()).any(|x| after[x] && pick(x as BlockId))
    }
}

/// Whether an instruction's result may differ between the threads of a
/// block given which registers may (`varying`).
fn inst_varies(i: &Inst, varying: &[bool]) -> bool {
    let v = |x: &Val| matches!(x, Val::Reg(r) if varying[*r as usize]);
    match i {
        Inst::Un { a, .. } | Inst::Cvt { a, .. } => v(a),
        Inst::Bin { a, b, .. } => v(a) || v(b),
        Inst::Tern { a, b, c, .. } => v(a) || v(b) || v(c),
        Inst::Special { s, .. } => matches!(
            s,
            Special::Tid(_) | Special::LaneId | Special::WarpId | Special::LaneMask(_)
        ),
        Inst::Load { space, base, .. } => *space != Space::Param || v(base),
        Inst::Atom { .. } => true,
        Inst::Store { .. } => false,
    }
}

/// Which blocks the blocks `from` reach (themselves included).
fn reachable_from(succs: &[Vec<BlockId>], from: &[BlockId]) -> Vec<bool> {
    let mut seen = vec![false; succs.len()];
    let mut stack = from.to_vec();
    while let Some(b) = stack.pop() {
        if !seen[b as usize] {
            seen[b as usize] = true;
            stack.extend(&succs[b as usize]);
        }
    }
    seen
}

/// Whether `a` dominates `b` in the dominator tree `idom` (each block's
/// immediate dominator, the root's itself).
fn dominates_in(idom: &[Option<BlockId>], a: BlockId, mut b: BlockId) -> bool {
    loop {
        if a == b {
            return true;
        }
        match idom.get(b as usize).copied().flatten() {
            Some(p) if p != b => b = p,
            _ => return false,
        }
    }
}

/// Immediate dominators of a graph from `root` (Cooper, Harvey and
/// Kennedy's iteration over reverse postorder): `Some(root)` for the root,
/// `None` for nodes the root does not reach.
fn idoms(succs: &[Vec<usize>], root: usize) -> Vec<Option<usize>> {
    let n = succs.len();
    let order = postorder(succs, root);
    let mut rank = vec![usize::MAX; n];
    for (i, &b) in order.iter().enumerate() {
        rank[b] = i;
    }
    let mut preds = vec![Vec::new(); n];
    for (i, s) in succs.iter().enumerate() {
        for &t in s {
            preds[t].push(i);
        }
    }
    let mut idom = vec![None; n];
    idom[root] = Some(root);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().rev() {
            if b == root {
                continue;
            }
            let mut new: Option<usize> = None;
            for &p in &preds[b] {
                if idom[p].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => p,
                    Some(mut a) => {
                        let mut c = p;
                        while a != c {
                            while rank[a] < rank[c] {
                                a = idom[a].unwrap_or(root);
                            }
                            while rank[c] < rank[a] {
                                c = idom[c].unwrap_or(root);
                            }
                        }
                        a
                    }
                });
            }
            if new.is_some() && idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom
}

/// The nodes `root` reaches, in postorder.
fn postorder(succs: &[Vec<usize>], root: usize) -> Vec<usize> {
    let mut seen = vec![false; succs.len()];
    let mut out = Vec::new();
    let mut stack = vec![(root, 0usize)];
    seen[root] = true;
    while let Some((b, i)) = stack.pop() {
        if i < succs[b].len() {
            stack.push((b, i + 1));
            let t = succs[b][i];
            if !seen[t] {
                seen[t] = true;
                stack.push((t, 0));
            }
        } else {
            out.push(b);
        }
    }
    out
}

/// The edges of a depth-first search from node 0 that go to a node still on
/// its stack.
fn retreating_edges(succs: &[Vec<usize>]) -> Vec<(usize, usize)> {
    let n = succs.len();
    let mut state = vec![0u8; n];
    let mut out = Vec::new();
    let mut stack = vec![(0usize, 0usize)];
    state[0] = 1;
    while let Some((b, i)) = stack.pop() {
        if i < succs[b].len() {
            stack.push((b, i + 1));
            let t = succs[b][i];
            match state[t] {
                0 => {
                    state[t] = 1;
                    stack.push((t, 0));
                }
                1 => out.push((b, t)),
                _ => {}
            }
        } else {
            state[b] = 2;
        }
    }
    out
}
