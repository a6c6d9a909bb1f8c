//! Value ranges of a kernel's registers, so that a checked kernel's shared,
//! local and parameter accesses whose addresses can never be out of bounds
//! or misaligned skip `saddr`'s test (access.rs); and, over the same
//! reaching definitions, the exact address of a shared store in every
//! thread where it follows from the thread's index and constants alone
//! ([`Ranges::shared_store_addrs`], for written.rs).
//!
//! Each definition of a register (a statement writing it, its initial
//! value, a warp operation's result) has one abstract value: an interval of
//! unsigned values with a known number of low zero bits ([`Range`]), the
//! join over every time it runs. A register read at a statement is the join
//! of the definitions that reach it (reaching definitions over the block
//! graph), so a register that nvcc reuses — `%tid.y` read into a register
//! that a loop later steps by 16 — is exact where only its first definition
//! reaches, as `matmul_tiled`'s tile addresses are.
//!
//! Soundness: the values are those the WGSL computes, operation by
//! operation as exprs.rs writes it (32-bit operands and results, masks,
//! zero extensions, 64-bit pairs). An operation that may wrap, or that is
//! not modelled here (loads, atomics, warp operations, float and most bit
//! operations, `%ctaid`, parameters), gives every value of its width; a
//! register's initial value counts as unknown; a guarded definition, a load
//! or an atomic (which a fault may skip) and a warp operation reach on
//! without ending the definitions before them. The definitions are iterated
//! to a fixpoint, each widened to every value of its register once it has
//! grown [`WIDEN`] times (a loop-carried induction variable). A speculative
//! region (speculate.rs) runs its statements in their order and restores
//! what it reads, so the same definitions reach each read.

use std::collections::HashMap;

use crate::cfg::{
    BinOp, CfgKernel, CvtOp, Inst, Reg, RegTy, Special, Stmt, Term, TernOp, UnOp, Val,
};

/// How many times a definition's value may grow before it is widened to
/// every value of its register.
pub(super) const WIDEN: u8 = 8;

/// The most bits the reaching definitions may take per block's set (over
/// it the analysis proves nothing: every access keeps its check).
const MAX_BITS: usize = 1 << 26;

/// A set of unsigned values: those in `lo..=hi` that are multiples of
/// `2^tz` (`tz` 64: only 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Range {
    /// The least value.
    pub(super) lo: u64,
    /// The greatest value.
    pub(super) hi: u64,
    /// Known low zero bits.
    pub(super) tz: u32,
}

/// `2^bits - 1` (every value of `bits` bits).
pub(super) fn msk(bits: u8) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

impl Range {
    /// One value.
    pub(super) fn konst(x: u64) -> Range {
        Range {
            lo: x,
            hi: x,
            tz: x.trailing_zeros(),
        }
    }

    /// Every value of `bits` bits.
    pub(super) fn full(bits: u8) -> Range {
        Range {
            lo: 0,
            hi: msk(bits),
            tz: 0,
        }
    }

    /// Either's values.
    fn join(self, o: Range) -> Range {
        Range {
            lo: self.lo.min(o.lo),
            hi: self.hi.max(o.hi),
            tz: self.tz.min(o.tz),
        }
    }

    /// The values' low `bits` bits (`x & msk(bits)`).
    fn mask(self, bits: u8) -> Range {
        if self.hi <= msk(bits) {
            self
        } else {
            Range {
                lo: 0,
                hi: msk(bits),
                tz: self.tz.min(bits as u32),
            }
        }
    }
}

/// `2^tz` divides every value of a product of multiples of `2^a` and `2^b`.
fn tz_sum(a: u32, b: u32) -> u32 {
    (a + b).min(64)
}

/// `x + y` where no value wraps `limit`.
fn add(x: Range, y: Range, limit: u64) -> Option<Range> {
    let hi = x.hi.checked_add(y.hi).filter(|&h| h <= limit)?;
    Some(Range {
        lo: x.lo + y.lo,
        hi,
        tz: x.tz.min(y.tz),
    })
}

/// `x · y + z` where no value wraps `limit`.
fn mad(x: Range, y: Range, z: Range, limit: u64) -> Option<Range> {
    let hi = (x.hi as u128) * (y.hi as u128) + z.hi as u128;
    if hi > limit as u128 {
        return None;
    }
    Some(Range {
        lo: x.lo * y.lo + z.lo,
        hi: hi as u64,
        tz: tz_sum(x.tz, y.tz).min(z.tz),
    })
}

/// Whether an access of `size` bytes aligned to `align` at `base + off`
/// (64-bit, as `saddr` receives it), `base` in `b`, always lies in the
/// space's first `limit` bytes and is aligned: `saddr` would return the
/// offset unchanged.
pub(super) fn in_bounds(b: Range, off: i64, size: u8, align: u32, limit: u64) -> bool {
    let lo = b.lo as i128 + off as i128;
    let hi = b.hi as i128 + off as i128;
    if align == 0 || limit > u32::MAX as u64 || lo < 0 || hi + size as i128 > limit as i128 {
        return false;
    }
    if b.lo == b.hi {
        return lo % align as i128 == 0;
    }
    align.is_power_of_two() && align.trailing_zeros() <= b.tz && off.rem_euclid(align as i64) == 0
}

/// What defines a register.
#[derive(Clone, Copy)]
enum Site {
    /// Every value of the register (its initial value, a load, an atomic,
    /// a warp operation).
    Unknown,
    /// Statement `i` of block `b`.
    Stmt(usize, usize),
}

/// One definition of a register.
struct Def {
    reg: Reg,
    site: Site,
}

/// A set of definitions, a bit each.
#[derive(Clone, PartialEq)]
struct Bits(Vec<u64>);

impl Bits {
    fn has(&self, d: u32) -> bool {
        self.0[d as usize / 64] & (1 << (d % 64)) != 0
    }
    fn set(&mut self, d: u32) {
        self.0[d as usize / 64] |= 1 << (d % 64);
    }
    fn clear(&mut self, d: u32) {
        self.0[d as usize / 64] &= !(1 << (d % 64));
    }
    /// Adds `o`'s; whether any was new.
    fn union(&mut self, o: &Bits) -> bool {
        let mut grew = false;
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            grew |= *b & !*a != 0;
            *a |= *b;
        }
        grew
    }
}

/// The registers of memory addresses a proof may need: the bases of
/// shared, local and parameter accesses, and what their definitions read.
fn relevant(k: &CfgKernel) -> Vec<bool> {
    let mut rel = vec![false; k.regs.len()];
    // Each register's modelled definitions' instructions.
    let mut defs: Vec<Vec<&Inst>> = vec![Vec::new(); k.regs.len()];
    let mut work = Vec::new();
    for s in k.blocks.iter().flat_map(|b| &b.stmts) {
        if let Some(d) = modelled_dest(&s.inst) {
            defs[d as usize].push(&s.inst);
        }
        if let Some((space, Val::Reg(r), _)) = mem_access(&s.inst) {
            if checked_space(space) && !rel[r as usize] {
                rel[r as usize] = true;
                work.push(r);
            }
        }
    }
    while let Some(r) = work.pop() {
        for inst in &defs[r as usize] {
            for v in operands(inst) {
                if let Val::Reg(o) = v {
                    if !rel[o as usize] {
                        rel[o as usize] = true;
                        work.push(o);
                    }
                }
            }
        }
    }
    rel
}

/// Whether accesses to `space` are checked by `saddr` (shared, local and
/// parameter memory).
fn checked_space(space: crate::cfg::Space) -> bool {
    use crate::cfg::Space;
    matches!(space, Space::Shared | Space::Local | Space::Param)
}

/// A memory statement's space, base and offset.
fn mem_access(i: &Inst) -> Option<(crate::cfg::Space, Val, i64)> {
    match *i {
        Inst::Load {
            space, base, off, ..
        }
        | Inst::Store {
            space, base, off, ..
        }
        | Inst::Atom {
            space, base, off, ..
        } => Some((space, base, off)),
        _ => None,
    }
}

/// The register an instruction computes from its operands (not a load's
/// or an atomic's).
fn modelled_dest(i: &Inst) -> Option<Reg> {
    match *i {
        Inst::Un { d, .. }
        | Inst::Bin { d, .. }
        | Inst::Tern { d, .. }
        | Inst::Cvt { d, .. }
        | Inst::Special { d, .. } => Some(d),
        _ => None,
    }
}

/// An instruction's source operands.
fn operands(i: &Inst) -> Vec<Val> {
    match *i {
        Inst::Un { a, .. } | Inst::Cvt { a, .. } => vec![a],
        Inst::Bin { a, b, .. } => vec![a, b],
        Inst::Tern { a, b, c, .. } => vec![a, b, c],
        _ => vec![],
    }
}

/// The blocks a block goes on at.
fn successors(t: &Term) -> Vec<u32> {
    match *t {
        Term::Jump(b) => vec![b],
        Term::Branch { then, els, .. } => vec![then, els],
        Term::Barrier { next, .. } | Term::Yield { next } | Term::Warp { next, .. } => vec![next],
        Term::Return | Term::Trap { .. } => vec![],
    }
}

/// The proven ranges of a kernel's shared, local and parameter addresses.
pub(super) struct Ranges {
    /// The base's values at each such access whose base is a register, by
    /// the statement's address in the kernel.
    bases: HashMap<usize, Range>,
    /// For each unguarded shared store whose address follows from the
    /// thread's index and constants alone, by the statement's address: its
    /// address in every thread of the block, in linear order.
    store_addrs: HashMap<usize, Vec<u64>>,
}

/// How deep [`Analysis::exact`] follows definitions.
const EXACT_DEPTH: u8 = 24;

/// Each statement's (block, index) register reads: the register and the
/// definitions of it that reach the read.
type Reads = HashMap<(usize, usize), Vec<(Reg, Vec<u32>)>>;

/// The state of the analysis of one kernel.
struct Analysis<'a> {
    k: &'a CfgKernel,
    block: [u32; 3],
    dyn_shared: u32,
    defs: Vec<Def>,
    /// Each register's definitions.
    of_reg: Vec<Vec<u32>>,
    /// The definitions of each statement's destinations (block, statement).
    at: Vec<Vec<Vec<u32>>>,
    /// The definitions reaching each statement's register reads.
    reads: Reads,
    /// Each definition's value ([`None`]: none computed yet).
    vals: Vec<Option<Range>>,
}

impl Ranges {
    /// The ranges of `k` run in blocks of `block` threads with
    /// `dyn_shared` dynamic shared bytes.
    pub(super) fn of(k: &CfgKernel, block: [u32; 3], dyn_shared: u32) -> Ranges {
        let mut bases = HashMap::new();
        let mut store_addrs = HashMap::new();
        if let Some(mut a) = Analysis::new(k, block, dyn_shared) {
            a.solve();
            for (bi, b) in k.blocks.iter().enumerate() {
                for (si, s) in b.stmts.iter().enumerate() {
                    if let Some(addrs) = a.shared_store_addrs((bi, si)) {
                        store_addrs.insert(s as *const Stmt as usize, addrs);
                    }
                    let Some((space, Val::Reg(r), _)) = mem_access(&s.inst) else {
                        continue;
                    };
                    if checked_space(space) {
                        if let Some(v) = a.reg_at((bi, si), r) {
                            bases.insert(s as *const Stmt as usize, v);
                        }
                    }
                }
            }
        }
        Ranges { bases, store_addrs }
    }

    /// The address of shared store `s` (one of the kernel's own
    /// statements) in every thread of the block, in linear order, where it
    /// is unguarded and its address follows from the thread's index and
    /// constants alone.
    pub(super) fn shared_store_addrs(&self, s: &Stmt) -> Option<&[u64]> {
        self.store_addrs
            .get(&(s as *const Stmt as usize))
            .map(Vec::as_slice)
    }

    /// The values of memory statement `s`'s base (one of the kernel's own
    /// statements, else [`None`]): its register's where proven, an
    /// immediate's bits.
    pub(super) fn base(&self, s: &Stmt) -> Option<Range> {
        match mem_access(&s.inst)? {
            (_, Val::Imm(x), _) => Some(Range::konst(x)),
            (_, Val::Reg(_), _) => self.bases.get(&(s as *const Stmt as usize)).copied(),
        }
    }
}

impl<'a> Analysis<'a> {
    /// The definitions of `k`'s relevant registers and where each reaches;
    /// [`None`] where the sets would be too large.
    fn new(k: &'a CfgKernel, block: [u32; 3], dyn_shared: u32) -> Option<Analysis<'a>> {
        let rel = relevant(k);
        let mut defs = Vec::new();
        let mut of_reg = vec![Vec::new(); k.regs.len()];
        let mut def = |reg: Reg, site: Site, defs: &mut Vec<Def>| {
            let id = defs.len() as u32;
            defs.push(Def { reg, site });
            of_reg[reg as usize].push(id);
            id
        };
        // The initial values first: ids 0.. of the relevant registers.
        for (r, _) in rel.iter().enumerate().filter(|(_, &on)| on) {
            def(r as Reg, Site::Unknown, &mut defs);
        }
        let mut at = Vec::with_capacity(k.blocks.len());
        for (bi, b) in k.blocks.iter().enumerate() {
            let mut here = Vec::with_capacity(b.stmts.len() + 1);
            for (si, s) in b.stmts.iter().enumerate() {
                let site = match modelled_dest(&s.inst) {
                    Some(_) => Site::Stmt(bi, si),
                    None => Site::Unknown,
                };
                let ids = s
                    .inst
                    .dests()
                    .into_iter()
                    .filter(|&r| rel[r as usize])
                    .map(|r| def(r, site, &mut defs))
                    .collect();
                here.push(ids);
            }
            let warp = match &b.term {
                Term::Warp { op, .. } => op
                    .dsts()
                    .filter(|&r| rel[r as usize])
                    .map(|r| def(r, Site::Unknown, &mut defs))
                    .collect(),
                _ => Vec::new(),
            };
            here.push(warp);
            at.push(here);
        }
        let words = defs.len().div_ceil(64).max(1);
        if words.saturating_mul(64).saturating_mul(k.blocks.len()) > MAX_BITS {
            return None;
        }
        let vals = defs
            .iter()
            .map(|d| match d.site {
                Site::Unknown => Some(full_reg(k.regs[d.reg as usize])),
                Site::Stmt(..) => None,
            })
            .collect();
        let mut a = Analysis {
            k,
            block,
            dyn_shared,
            defs,
            of_reg,
            at,
            reads: HashMap::new(),
            vals,
        };
        a.reaching(words, &rel);
        Some(a)
    }

    /// Reaching definitions, then each relevant read's.
    fn reaching(&mut self, words: usize, rel: &[bool]) {
        let k = self.k;
        let n = k.blocks.len();
        let mut ins = vec![Bits(vec![0; words]); n];
        for (id, d) in self.defs.iter().enumerate() {
            if self.of_reg[d.reg as usize].first() == Some(&(id as u32)) {
                ins[0].set(id as u32);
            }
        }
        let mut queued = vec![false; n];
        let mut work = vec![0usize];
        queued[0] = true;
        while let Some(b) = work.pop() {
            queued[b] = false;
            let out = self.walk(b, ins[b].clone(), |_, _| {});
            for s in successors(&k.blocks[b].term) {
                let s = s as usize;
                if ins[s].union(&out) && !queued[s] {
                    queued[s] = true;
                    work.push(s);
                }
            }
        }
        let mut reads = HashMap::new();
        for (b, set) in ins.into_iter().enumerate() {
            self.walk(b, set, |si, set| {
                let s = &k.blocks[b].stmts[si];
                let mut regs: Vec<Val> = operands(&s.inst);
                if let Some((_, base, _)) = mem_access(&s.inst) {
                    regs.push(base);
                }
                let list = regs
                    .into_iter()
                    .filter_map(|v| match v {
                        Val::Reg(r) if rel[r as usize] => Some(r),
                        _ => None,
                    })
                    .map(|r| {
                        let ds = self.of_reg[r as usize]
                            .iter()
                            .copied()
                            .filter(|&d| set.has(d))
                            .collect();
                        (r, ds)
                    })
                    .collect();
                reads.insert((b, si), list);
            });
        }
        self.reads = reads;
    }

    /// The definitions reaching block `b`'s end from `set` at its start;
    /// `seen` sees each statement's index with the set before it.
    fn walk(&self, b: usize, mut set: Bits, mut seen: impl FnMut(usize, &Bits)) -> Bits {
        let blk = &self.k.blocks[b];
        for (si, s) in blk.stmts.iter().enumerate() {
            seen(si, &set);
            // A guarded statement may not run; a load or an atomic that
            // faults leaves its register as it was (where threads go on
            // after a fault): they end no definition.
            let kills = s.guard.is_none() && modelled_dest(&s.inst).is_some();
            for &id in &self.at[b][si] {
                if kills {
                    for &o in &self.of_reg[self.defs[id as usize].reg as usize] {
                        set.clear(o);
                    }
                }
                set.set(id);
            }
        }
        for &id in &self.at[b][blk.stmts.len()] {
            set.set(id);
        }
        set
    }

    /// The values of register `r` read at statement `at`.
    fn reg_at(&self, at: (usize, usize), r: Reg) -> Option<Range> {
        let (_, ds) = self.reads.get(&at)?.iter().find(|(x, _)| *x == r)?;
        ds.iter()
            .filter_map(|&d| self.vals[d as usize])
            .reduce(Range::join)
    }

    /// The fixpoint of the definitions' values.
    fn solve(&mut self) {
        let mut grown = vec![0u8; self.defs.len()];
        loop {
            let mut changed = false;
            for (id, grown) in grown.iter_mut().enumerate() {
                let Site::Stmt(b, si) = self.defs[id].site else {
                    continue;
                };
                let Some(new) = self.eval((b, si)) else {
                    continue;
                };
                let old = self.vals[id];
                let joined = old.map_or(new, |o| o.join(new));
                if old != Some(joined) {
                    changed = true;
                    *grown += 1;
                    let ty = self.k.regs[self.defs[id].reg as usize];
                    self.vals[id] = Some(if *grown > WIDEN { full_reg(ty) } else { joined });
                }
            }
            if !changed {
                return;
            }
        }
    }

    /// Operand `v` read at `at` as `w` (32 or 64) bits, as `v32` and `v64`
    /// write it ([`None`]: its definitions have no value yet).
    fn rd(&self, at: (usize, usize), v: Val, w: u8) -> Option<Range> {
        match v {
            Val::Imm(x) => Some(Range::konst(if w > 32 { x } else { x as u32 as u64 })),
            Val::Reg(r) => {
                let x = self.reg_at(at, r)?;
                Some(match self.k.regs[r as usize] {
                    RegTy::Pred => Range::full(w),
                    RegTy::B32 => x,
                    RegTy::B64 => x.mask(w),
                })
            }
        }
    }

    /// The value statement `at` stores in its destination.
    fn eval(&self, at: (usize, usize)) -> Option<Range> {
        let s = &self.k.blocks[at.0].stmts[at.1];
        let d = modelled_dest(&s.inst)?;
        let (x, _wide) = self.result(at, &s.inst)?;
        Some(match self.k.regs[d as usize] {
            RegTy::B64 => x,
            // `.x` of a 64-bit result; a 32-bit one as it is.
            RegTy::B32 => x.mask(32),
            RegTy::Pred => Range::full(32),
        })
    }

    /// An instruction's result and whether it is 64-bit (exprs.rs).
    fn result(&self, at: (usize, usize), inst: &Inst) -> Option<(Range, bool)> {
        let rd = |v: Val, w: u8| self.rd(at, v, w);
        let w = |bits: u8| if bits > 32 { 64 } else { 32 };
        let or_full = |r: Option<Range>, bits: u8| r.unwrap_or(Range::full(bits));
        Some(match *inst {
            Inst::Special { s, .. } => (self.special(s), matches!(s, Special::Const(_))),
            Inst::Un {
                op: UnOp::Mov(b),
                a,
                ..
            } => (rd(a, w(b))?.mask(b), b > 32),
            Inst::Bin { op, a, b, .. } => match op {
                BinOp::Add(bits) => {
                    let r = add(rd(a, w(bits))?, rd(b, w(bits))?, msk(bits));
                    (or_full(r, bits), bits > 32)
                }
                BinOp::Sub(bits) => {
                    let (x, y) = (rd(a, w(bits))?, rd(b, w(bits))?);
                    let r = (x.lo >= y.hi && x.hi - y.lo <= msk(bits)).then(|| Range {
                        lo: x.lo - y.hi,
                        hi: x.hi - y.lo,
                        tz: x.tz.min(y.tz),
                    });
                    (or_full(r, bits), bits > 32)
                }
                BinOp::MulLo(bits) => {
                    let zero = Range::konst(0);
                    let r = mad(rd(a, w(bits))?, rd(b, w(bits))?, zero, msk(bits));
                    (or_full(r, bits), bits > 32)
                }
                BinOp::MulWide { signed } => {
                    let (x, y) = (rd(a, 32)?, rd(b, 32)?);
                    // Signed operands below 2^31 are their unsigned values.
                    let ok = !signed || (x.hi <= i32::MAX as u64 && y.hi <= i32::MAX as u64);
                    let r = ok.then(|| mad(x, y, Range::konst(0), u64::MAX)).flatten();
                    (or_full(r, 64), true)
                }
                BinOp::And(bits) => {
                    let (x, y) = (rd(a, w(bits))?, rd(b, w(bits))?);
                    let r = Range {
                        lo: 0,
                        hi: x.hi.min(y.hi).min(msk(bits)),
                        tz: x.tz.max(y.tz),
                    };
                    (r, bits > 32)
                }
                BinOp::Or(bits) | BinOp::Xor(bits) => {
                    let (x, y) = (rd(a, w(bits))?, rd(b, w(bits))?);
                    let top = x.hi.max(y.hi);
                    // Every value below the next power of two.
                    let hi = if top == 0 {
                        0
                    } else {
                        u64::MAX >> top.leading_zeros()
                    };
                    let lo = if matches!(op, BinOp::Or(_)) {
                        x.lo.max(y.lo)
                    } else {
                        0
                    };
                    let r = (top <= msk(bits)).then_some(Range {
                        lo,
                        hi,
                        tz: x.tz.min(y.tz),
                    });
                    (or_full(r, bits), bits > 32)
                }
                BinOp::Shl(bits) => {
                    let (x, n) = (rd(a, w(bits))?, rd(b, 32)?);
                    let r = (n.hi < bits as u64 && (x.hi as u128) << n.hi <= msk(bits) as u128)
                        .then(|| Range {
                            lo: x.lo << n.lo,
                            hi: x.hi << n.hi,
                            tz: (x.tz as u64 + n.lo).min(64) as u32,
                        });
                    (or_full(r, bits), bits > 32)
                }
                BinOp::ShrU(bits) => {
                    // shru32 masks its operand to the width first.
                    let (x, n) = (rd(a, w(bits))?.mask(bits), rd(b, 32)?);
                    let r = (n.hi < bits as u64).then(|| Range {
                        lo: x.lo >> n.hi,
                        hi: x.hi >> n.lo,
                        tz: (x.tz as u64).saturating_sub(n.hi) as u32,
                    });
                    (or_full(r, bits), bits > 32)
                }
                _ => (Range::full(64), true),
            },
            Inst::Tern { op, a, b, c, .. } => match op {
                TernOp::MadLo(bits) => {
                    let r = mad(rd(a, w(bits))?, rd(b, w(bits))?, rd(c, w(bits))?, msk(bits));
                    (or_full(r, bits), bits > 32)
                }
                TernOp::MadWide { signed } => {
                    let (x, y, z) = (rd(a, 32)?, rd(b, 32)?, rd(c, 64)?);
                    let ok = !signed || (x.hi <= i32::MAX as u64 && y.hi <= i32::MAX as u64);
                    let r = ok.then(|| mad(x, y, z, u64::MAX)).flatten();
                    (or_full(r, 64), true)
                }
                // `select(b, a, c != 0)`, unmasked.
                TernOp::Selp(bits) => (rd(a, w(bits))?.join(rd(b, w(bits))?), bits > 32),
                _ => (Range::full(64), true),
            },
            Inst::Cvt {
                op:
                    CvtOp::Int {
                        sbits,
                        signed,
                        dbits,
                    },
                a,
                ..
            } => {
                // A signed source below its sign bit is its unsigned value.
                let below_sign = |x: Range| {
                    sbits
                        .checked_sub(1)
                        .is_some_and(|s| s < 64 && x.hi < 1u64 << s)
                };
                if dbits > 32 && sbits > 32 {
                    (rd(a, 64)?, true)
                } else if dbits > 32 {
                    let x = rd(a, 32)?;
                    let r = if signed {
                        below_sign(x).then_some(x)
                    } else {
                        Some(x.mask(sbits))
                    };
                    (or_full(r, 64), true)
                } else if signed && sbits <= 32 {
                    let x = rd(a, 32)?;
                    let r = below_sign(x).then(|| x.mask(dbits));
                    (or_full(r, dbits), false)
                } else {
                    (rd(a, 32)?.mask(sbits.min(32)).mask(dbits), false)
                }
            }
            _ => (Range::full(64), true),
        })
    }

    /// Statement `at`'s address in every thread of the block (linear
    /// order) where it is an unguarded shared store whose address follows
    /// from the thread's index and constants alone ([`Self::exact`]), as
    /// `saddr` receives it: the base's bits (64-bit) plus the offset, below
    /// 2^32.
    fn shared_store_addrs(&self, at: (usize, usize)) -> Option<Vec<u64>> {
        let s = &self.k.blocks[at.0].stmts[at.1];
        let Inst::Store {
            space: crate::cfg::Space::Shared,
            base,
            off,
            ..
        } = s.inst
        else {
            return None;
        };
        if s.guard.is_some() {
            return None;
        }
        let [bx, by, bz] = self.block;
        let mut addrs = Vec::with_capacity((bx as usize) * (by as usize) * (bz as usize));
        for z in 0..bz {
            for y in 0..by {
                for x in 0..bx {
                    let tid = [x, y, z].map(u64::from);
                    let b = self.exact(at, base, 64, tid, EXACT_DEPTH)?;
                    let a = (b as i128) + off as i128;
                    if !(0..=u32::MAX as i128).contains(&a) {
                        return None;
                    }
                    addrs.push(a as u64);
                }
            }
        }
        Some(addrs)
    }

    /// Operand `v` read at `at` as `w` (32 or 64) bits in the thread of
    /// index `tid`, where its value follows from the thread's index and
    /// constants alone: one definition reaches the read, a statement whose
    /// operation is modelled here, whose operands (within `depth`
    /// definitions) do too. Each operation as exprs.rs writes it: wrapping
    /// at its width, a shift by the width or more not modelled.
    fn exact(&self, at: (usize, usize), v: Val, w: u8, tid: [u64; 3], depth: u8) -> Option<u64> {
        let r = match v {
            Val::Imm(x) => return Some(if w > 32 { x } else { x as u32 as u64 }),
            Val::Reg(r) => r,
        };
        let depth = depth.checked_sub(1)?;
        let (_, ds) = self.reads.get(&at)?.iter().find(|(x, _)| *x == r)?;
        let [d] = ds[..] else {
            return None;
        };
        let Site::Stmt(b, si) = self.defs[d as usize].site else {
            return None;
        };
        let here = (b, si);
        let inst = &self.k.blocks[b].stmts[si].inst;
        let rd = |v: Val, w: u8| self.exact(here, v, w, tid, depth);
        let wd = |bits: u8| if bits > 32 { 64 } else { 32 };
        let wide = |x: u64, y: u64, signed: bool| {
            if signed {
                (x as u32 as i32 as i64).wrapping_mul(y as u32 as i32 as i64) as u64
            } else {
                (x & msk(32)).wrapping_mul(y & msk(32))
            }
        };
        let x = match *inst {
            Inst::Special { s, .. } => match s {
                Special::Tid(i) if i < 3 => tid[i as usize],
                Special::Ntid(i) if i < 3 => self.block[i as usize] as u64,
                Special::DynSmem => self.dyn_shared as u64,
                Special::Const(c) => c,
                _ => return None,
            },
            Inst::Un {
                op: UnOp::Mov(bits),
                a,
                ..
            } => rd(a, wd(bits))? & msk(bits),
            Inst::Bin { op, a, b, .. } => match op {
                BinOp::Add(n) => rd(a, wd(n))?.wrapping_add(rd(b, wd(n))?) & msk(n),
                BinOp::Sub(n) => rd(a, wd(n))?.wrapping_sub(rd(b, wd(n))?) & msk(n),
                BinOp::MulLo(n) => rd(a, wd(n))?.wrapping_mul(rd(b, wd(n))?) & msk(n),
                BinOp::MulWide { signed } => wide(rd(a, 32)?, rd(b, 32)?, signed),
                BinOp::And(n) => rd(a, wd(n))? & rd(b, wd(n))? & msk(n),
                BinOp::Or(n) => (rd(a, wd(n))? | rd(b, wd(n))?) & msk(n),
                BinOp::Xor(n) => (rd(a, wd(n))? ^ rd(b, wd(n))?) & msk(n),
                BinOp::Shl(n) => {
                    let sh = rd(b, 32)?;
                    (sh < n as u64).then_some(())?;
                    (rd(a, wd(n))? << sh) & msk(n)
                }
                BinOp::ShrU(n) => {
                    let sh = rd(b, 32)?;
                    (sh < n as u64).then_some(())?;
                    (rd(a, wd(n))? & msk(n)) >> sh
                }
                _ => return None,
            },
            Inst::Tern { op, a, b, c, .. } => match op {
                TernOp::MadLo(n) => {
                    let p = rd(a, wd(n))?.wrapping_mul(rd(b, wd(n))?);
                    p.wrapping_add(rd(c, wd(n))?) & msk(n)
                }
                TernOp::MadWide { signed } => {
                    wide(rd(a, 32)?, rd(b, 32)?, signed).wrapping_add(rd(c, 64)?)
                }
                _ => return None,
            },
            Inst::Cvt {
                op:
                    CvtOp::Int {
                        sbits,
                        signed,
                        dbits,
                    },
                a,
                ..
            } => {
                let x = rd(a, wd(sbits))? & msk(sbits);
                let negative = signed && (1..64).contains(&sbits) && (x >> (sbits - 1)) & 1 == 1;
                (if negative { x | !msk(sbits) } else { x }) & msk(dbits)
            }
            _ => return None,
        };
        // The destination's bits (`eval`), then as read here.
        let x = match self.k.regs[r as usize] {
            RegTy::B64 => x,
            RegTy::B32 => x & msk(32),
            RegTy::Pred => return None,
        };
        Some(if w > 32 { x } else { x & msk(32) })
    }

    /// A special register's values (emit.rs writes them).
    fn special(&self, s: Special) -> Range {
        let [bx, by, bz] = self.block.map(|x| x as u64);
        let threads = bx.saturating_mul(by).saturating_mul(bz);
        match s {
            Special::Tid(i) if i < 3 && self.block[i as usize] > 0 => Range {
                lo: 0,
                hi: self.block[i as usize] as u64 - 1,
                tz: 0,
            },
            Special::Ntid(i) => Range::konst([bx, by, bz][(i as usize).min(2)]),
            Special::LaneId => Range {
                lo: 0,
                hi: 31,
                tz: 0,
            },
            Special::WarpId if threads > 0 => Range {
                lo: 0,
                hi: (threads - 1) >> 5,
                tz: 0,
            },
            Special::DynSmem => Range::konst(self.dyn_shared as u64),
            Special::Const(v) => Range::konst(v),
            _ => Range::full(32),
        }
    }
}

/// Every value of a register of type `t`.
fn full_reg(t: RegTy) -> Range {
    match t {
        RegTy::B64 => Range::full(64),
        _ => Range::full(32),
    }
}

#[cfg(test)]
#[path = "ranges_tests.rs"]
mod tests;
