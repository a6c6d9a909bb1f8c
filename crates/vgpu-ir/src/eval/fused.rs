//! Fused chains of float arithmetic: the hot path of an unphased field.
//!
//! The varying float nodes of a program (`+ − × ÷`, `min`, `sin`, `fma`, … on
//! the field's float type) are grouped into *chains*: a node whose value is
//! used exactly once, by another such node, is not stored but carried in an
//! accumulator into its consumer. A chain runs as one pass over the block's
//! lanes, [`CHUNK`] lanes at a time, the accumulator held in registers; only
//! its last value is stored: into its node's column when something else reads
//! it, straight into `dh/dt` when it is a rate and nothing else reads it.
//!
//! A pass dispatches once per node: the chain's first load and last store
//! ride on its first and last node's step, and nodes that call library
//! functions (`sin`, `pow`, …) run lane by lane out of line, so the arithmetic
//! steps keep the accumulators in registers without spills.
//!
//! Every node still rounds exactly once, its operands in their order (`a − b`
//! stays `a − b`, whichever side the accumulator is on), so the results are
//! the bits of the node-at-a-time evaluation.
//!
//! Nodes of other kinds (loads, selects, casts, integer arithmetic) stay in the
//! general column evaluator ([`super::run`]), in program order between chains.

use super::columns::IrFloat;
use super::simd::{self, Vector};
use super::{Instr, Op, Pools, Program, Src};
use crate::kernel::{BinOp, UnOp};
use crate::types::{ScalarType, Value};
use std::ops::Range;

/// The most lanes a pass of a chain holds (eight AVX registers of `f32`); the
/// width of a constant's broadcast column.
pub(crate) const CHUNK: usize = 64;

/// Where a chain operand lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    /// A column of the float pool (slot).
    Pool(u32),
    /// State component `k` of the stage input.
    State(u32),
    /// Initial state component `k`.
    Init(u32),
    /// Constant `k` (`0` is the stage time), broadcast over the chunk.
    Const(u32),
    /// Component `k` of `dh/dt` (only ever written).
    Rate(u32),
}

/// One operation on the accumulator `acc` with operands `p`, `q`. The `R…`
/// forms have the accumulator on the right: `RSub` is `p − acc`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Add,
    RAdd,
    Sub,
    RSub,
    Mul,
    RMul,
    Div,
    RDiv,
    Bin(BinOp),
    RBin(BinOp),
    Un(UnOp),
    /// `fma(acc, p, q)`.
    Fma,
    /// `fma(p, acc, q)`.
    RFma,
    /// `fma(p, q, acc)`.
    FmaAdd,
}

/// One node of a chain: the accumulator is first loaded from `first` when the
/// chain begins here, then `kind` applied, then the accumulator stored at
/// `store` when the chain ends here (its node's column, or a rate). A chain of
/// one node is one step; loads and stores ride on the steps that need them, so
/// a pass dispatches once per node.
#[derive(Clone, Copy, Debug)]
struct Step {
    kind: Kind,
    p: Loc,
    q: Loc,
    first: Option<Loc>,
    store: Option<Loc>,
}

#[derive(Clone, Debug)]
enum Item {
    /// Instructions of [`Plan::general`], run by the column evaluator.
    General(Range<usize>),
    /// Consecutive chains (steps of [`Plan::steps`]), run together chunk by chunk.
    Chains(Range<usize>),
}

/// The varying part of a program as chains and general instructions, for
/// states of one float type.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    ty: ScalarType,
    items: Vec<Item>,
    steps: Vec<Step>,
    general: Vec<Instr>,
    /// Constants by index; index 0 is the stage time.
    consts: Vec<Value>,
    /// Whether a chain reads the stage time.
    time: bool,
    /// Chains.
    chains: usize,
    /// Rates written straight into `dh/dt` by a chain.
    direct: Vec<bool>,
}

/// Whether `ins` is float arithmetic a chain can carry (operands and result of type `ty`).
fn fusable(ins: &Instr, ty: ScalarType) -> bool {
    ins.ty == ty
        && ins.rty == ty
        && match ins.op {
            Op::Un(u) => u != UnOp::Not,
            Op::Bin(b) => matches!(
                b,
                BinOp::Add
                    | BinOp::Sub
                    | BinOp::Mul
                    | BinOp::Div
                    | BinOp::Rem
                    | BinOp::Min
                    | BinOp::Max
                    | BinOp::Pow
            ),
            Op::Fma => true,
            _ => false,
        }
}

/// The operands of `ins` with their types (the pool a `Src::Col` refers to).
pub(crate) fn operands(ins: &Instr) -> Vec<(Src, ScalarType)> {
    match ins.op {
        Op::Un(_) | Op::Cast => vec![(ins.a, ins.ty)],
        Op::Bin(BinOp::Shl | BinOp::Shr) => vec![(ins.a, ins.ty), (ins.b, ScalarType::U32)],
        Op::Bin(_) => vec![(ins.a, ins.ty), (ins.b, ins.ty)],
        Op::Select => vec![(ins.a, ScalarType::Bool), (ins.b, ins.ty), (ins.c, ins.ty)],
        Op::Fma => vec![(ins.a, ins.ty), (ins.b, ins.ty), (ins.c, ins.ty)],
        Op::Load { .. } | Op::SharedLoad { .. } => vec![(ins.a, ins.ty)],
        Op::Lane(_) => vec![],
    }
}

fn same_pool(a: ScalarType, b: ScalarType) -> bool {
    super::pool_of(a) == super::pool_of(b)
}

struct Builder<'a> {
    vary: &'a [Instr],
    ty: ScalarType,
    /// For each instruction, the operand position its accumulator comes from.
    acc: Vec<Option<usize>>,
    /// Pool slot → producing instruction (varying, of type `ty`).
    producer: Vec<Option<usize>>,
    consts: Vec<Value>,
    steps: Vec<Step>,
}

impl Builder<'_> {
    fn loc(&mut self, s: Src) -> Loc {
        match s {
            Src::Col(c) => Loc::Pool(c),
            Src::State(k) => Loc::State(k),
            Src::Init(k) => Loc::Init(k),
            Src::Time => Loc::Const(0),
            Src::Imm(v) => {
                let v = v.cast(self.ty);
                let at = self.consts[1..]
                    .iter()
                    .position(|c| c.as_f64().to_bits() == v.as_f64().to_bits())
                    .map(|i| i + 1)
                    .unwrap_or_else(|| {
                        self.consts.push(v);
                        self.consts.len() - 1
                    });
                Loc::Const(at as u32)
            }
        }
    }

    /// Pushes the steps computing instruction `i` into the accumulator.
    fn chain(&mut self, i: usize) {
        let ins = self.vary[i];
        let srcs = [ins.a, ins.b, ins.c];
        // The accumulator's producer first; else the chain begins here.
        let first = match self.acc[i] {
            Some(pos) => {
                let Src::Col(c) = srcs[pos] else {
                    unreachable!("accumulators come from columns")
                };
                let from = self.producer[c as usize].expect("a producer");
                self.chain(from);
                None
            }
            None => Some(self.loc(if ins.op == Op::Fma { ins.c } else { ins.a })),
        };
        let none = Loc::Const(0);
        let (kind, p, q) = match (ins.op, self.acc[i]) {
            (Op::Un(u), _) => (Kind::Un(u), none, none),
            (Op::Bin(op), Some(1)) => {
                let kind = match op {
                    BinOp::Add => Kind::RAdd,
                    BinOp::Sub => Kind::RSub,
                    BinOp::Mul => Kind::RMul,
                    BinOp::Div => Kind::RDiv,
                    op => Kind::RBin(op),
                };
                (kind, self.loc(ins.a), none)
            }
            (Op::Bin(op), _) => {
                let kind = match op {
                    BinOp::Add => Kind::Add,
                    BinOp::Sub => Kind::Sub,
                    BinOp::Mul => Kind::Mul,
                    BinOp::Div => Kind::Div,
                    op => Kind::Bin(op),
                };
                (kind, self.loc(ins.b), none)
            }
            (Op::Fma, Some(0)) => (Kind::Fma, self.loc(ins.b), self.loc(ins.c)),
            (Op::Fma, Some(1)) => (Kind::RFma, self.loc(ins.a), self.loc(ins.c)),
            (Op::Fma, _) => (Kind::FmaAdd, self.loc(ins.a), self.loc(ins.b)),
            _ => unreachable!("only fusable instructions chain"),
        };
        self.steps.push(Step {
            kind,
            p,
            q,
            first,
            store: None,
        });
    }
}

impl Plan {
    /// Groups `prog.vary` into chains for states of type `ty`; `rates` are the
    /// sources of `dh/dt` (one per state component).
    pub(crate) fn build(prog: &Program, rates: &[Src], ty: ScalarType) -> Plan {
        let vary = &prog.vary[..];
        let slots = prog.slots[super::pool_of(ty)] as usize;
        let mut uses = vec![0u32; slots];
        let mut producer = vec![None; slots];
        for (i, ins) in vary.iter().enumerate() {
            for (s, t) in operands(ins) {
                if let (Src::Col(c), true) = (s, same_pool(t, ty)) {
                    uses[c as usize] += 1;
                }
            }
            if same_pool(ins.rty, ty) {
                producer[ins.dst as usize] = Some(i);
            }
        }
        for r in rates {
            if let Src::Col(c) = r {
                uses[*c as usize] += 1;
            }
        }
        // Carried in the accumulator: used once, by a chain, produced by a chain.
        let carried = |s: Src| match s {
            Src::Col(c) => {
                uses[c as usize] == 1 && producer[c as usize].is_some_and(|p| fusable(&vary[p], ty))
            }
            _ => false,
        };
        let mut acc = vec![None; vary.len()];
        let mut absorbed = vec![false; vary.len()];
        for (i, ins) in vary.iter().enumerate() {
            if !fusable(ins, ty) {
                continue;
            }
            let n = operands(ins).len();
            if let Some(pos) = [ins.a, ins.b, ins.c][..n].iter().position(|s| carried(*s)) {
                acc[i] = Some(pos);
                let Src::Col(c) = [ins.a, ins.b, ins.c][pos] else {
                    unreachable!()
                };
                absorbed[producer[c as usize].expect("carried")] = true;
            }
        }
        let mut direct = vec![false; rates.len()];
        let mut rate_of = vec![None; vary.len()];
        for (k, r) in rates.iter().enumerate() {
            if let Src::Col(c) = r {
                if let Some(p) = producer[*c as usize] {
                    if uses[*c as usize] == 1 && fusable(&vary[p], ty) {
                        direct[k] = true;
                        rate_of[p] = Some(k as u32);
                    }
                }
            }
        }
        let mut b = Builder {
            vary,
            ty,
            acc,
            producer,
            consts: vec![Value::F64(0.0).cast(ty)],
            steps: vec![],
        };
        let mut items = vec![];
        let mut general: Vec<Instr> = vec![];
        let mut chains = 0;
        for (i, ins) in vary.iter().enumerate() {
            if absorbed[i] {
                continue;
            }
            if !fusable(ins, ty) {
                general.push(*ins);
                match items.last_mut() {
                    Some(Item::General(r)) => r.end = general.len(),
                    _ => items.push(Item::General(general.len() - 1..general.len())),
                }
                continue;
            }
            let from = b.steps.len();
            b.chain(i);
            let dst = match rate_of[i] {
                Some(k) => Loc::Rate(k),
                None => Loc::Pool(ins.dst),
            };
            b.steps.last_mut().expect("a chain has a node").store = Some(dst);
            chains += 1;
            match items.last_mut() {
                Some(Item::Chains(r)) => r.end = b.steps.len(),
                _ => items.push(Item::Chains(from..b.steps.len())),
            }
        }
        let time = b.steps.iter().any(|s| {
            let reads = |l: Loc| l == Loc::Const(0);
            s.first.is_some_and(reads)
                || match s.kind {
                    Kind::Un(_) => false,
                    Kind::Fma | Kind::RFma | Kind::FmaAdd => reads(s.p) || reads(s.q),
                    _ => reads(s.p),
                }
        });
        Plan {
            ty,
            items,
            steps: b.steps,
            general,
            consts: b.consts,
            time,
            chains,
            direct,
        }
    }

    /// The float type the chains compute in.
    pub(crate) fn ty(&self) -> ScalarType {
        self.ty
    }

    /// Whether rate `k` is written by a chain (so it needs no copy).
    pub(crate) fn is_direct(&self, k: usize) -> bool {
        self.direct[k]
    }

    /// Chains and the nodes they compute.
    pub(crate) fn chains(&self) -> (usize, usize) {
        (self.chains, self.steps.len())
    }

    /// Whether a chain reads the stage time (constant 0 of [`Plan::const_columns`]).
    pub(crate) fn reads_time(&self) -> bool {
        self.time
    }

    /// The constants broadcast over a chunk (`CHUNK` copies each); entry 0
    /// (the time) is refreshed at every evaluation.
    pub(crate) fn const_columns<T: IrFloat>(&self) -> Vec<T> {
        self.consts
            .iter()
            .flat_map(|v| std::iter::repeat_n(T::from_value(*v), CHUNK))
            .collect()
    }
}

/// An operand resolved for a block size: base (pool, state, initial state,
/// constants, rates), offset, and the mask applied to the lane (`0` for
/// constants).
#[derive(Clone, Copy, Debug)]
struct Opnd {
    base: usize,
    off: usize,
    mask: usize,
}

#[derive(Clone, Copy, Debug)]
struct RStep {
    kind: Kind,
    p: Opnd,
    q: Opnd,
    first: Option<Opnd>,
    store: Option<Opnd>,
}

const POOL: usize = 0;
const STATE: usize = 1;
const INIT: usize = 2;
const CONST: usize = 3;
const RATES: usize = 4;

/// A [`Plan`]'s steps resolved for blocks of `lanes` (per worker).
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    steps: Vec<RStep>,
    lanes: usize,
    /// The lengths the pool, state, initial state, constants and rates must have.
    need: [usize; 5],
}

impl Resolved {
    /// Resolves `plan` for blocks of `lanes` lanes (pool columns `lanes` wide).
    pub(crate) fn new(plan: &Plan, lanes: usize) -> Resolved {
        let op = |l: Loc| {
            let (base, off, mask) = match l {
                Loc::Pool(c) => (POOL, c as usize * lanes, usize::MAX),
                Loc::State(k) => (STATE, k as usize * lanes, usize::MAX),
                Loc::Init(k) => (INIT, k as usize * lanes, usize::MAX),
                Loc::Rate(k) => (RATES, k as usize * lanes, usize::MAX),
                Loc::Const(k) => (CONST, k as usize * CHUNK, 0),
            };
            Opnd { base, off, mask }
        };
        let steps: Vec<RStep> = plan
            .steps
            .iter()
            .map(|s| RStep {
                kind: s.kind,
                p: op(s.p),
                q: op(s.q),
                first: s.first.map(op),
                store: s.store.map(op),
            })
            .collect();
        let mut need = [0; 5];
        let used = |s: &RStep| {
            [Some(s.p), Some(s.q), s.first, s.store]
                .into_iter()
                .flatten()
        };
        for o in steps.iter().flat_map(used) {
            let end = o.off + if o.mask == 0 { CHUNK } else { lanes };
            need[o.base] = need[o.base].max(end);
        }
        Resolved { steps, lanes, need }
    }
}

/// The state memory of one evaluation.
pub(crate) struct Io<'a, T> {
    /// The stage's state columns.
    pub h: &'a [T],
    /// The initial state columns.
    pub h0: &'a [T],
    /// [`Plan::const_columns`], time refreshed.
    pub consts: &'a [T],
    /// The rates `dh/dt`.
    pub dh: &'a mut [T],
    /// Lanes of the block.
    pub lanes: usize,
}

/// Runs the chains of `plan` (resolved as `res`) and, between them, its general
/// instructions through `general`.
pub(crate) fn run<T: IrFloat>(
    plan: &Plan,
    res: &Resolved,
    pools: &mut Pools,
    io: &mut Io<'_, T>,
    mut general: impl FnMut(&[Instr], &mut Pools),
) {
    let have = [
        T::pool_mut(pools).len(),
        io.h.len(),
        io.h0.len(),
        io.consts.len(),
        io.dh.len(),
    ];
    // Bounds, checked once so that the chains can use raw pointers.
    assert!(
        io.lanes == res.lanes && have.iter().zip(&res.need).all(|(h, n)| h >= n),
        "fused chains resolved for other columns"
    );
    for item in &plan.items {
        match item {
            Item::General(r) => general(&plan.general[r.clone()], pools),
            Item::Chains(r) => {
                let bases = [
                    T::pool_mut(pools).as_mut_ptr().cast_const(),
                    io.h.as_ptr(),
                    io.h0.as_ptr(),
                    io.consts.as_ptr(),
                    io.dh.as_mut_ptr().cast_const(),
                ];
                // SAFETY: every operand lies within its buffer for `lanes` lanes
                // (checked above against `Resolved::need`); chains write only
                // their own node's column or a rate, never an operand of the
                // same chain, and only through the pool and rate pointers,
                // which come from `&mut` borrows held for the whole call.
                unsafe { passes(&bases, &res.steps[r.clone()], io.lanes) }
            }
        }
    }
}

/// The chains over all lanes: whole chunks in vector registers, then the rest
/// one lane at a time.
///
/// # Safety
/// As in [`run`].
#[inline(always)]
unsafe fn passes<T: IrFloat>(bases: &[*const T; 5], steps: &[RStep], lanes: usize) {
    use std::any::TypeId;
    // `IrFloat` is implemented for `f32` and `f64` only (its methods name
    // crate-private types); the casts change nothing, `T` is the type compared.
    #[cfg(target_arch = "x86_64")]
    let avx = std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
    if TypeId::of::<T>() == TypeId::of::<f32>() {
        let b = bases.map(|p| p.cast::<f32>());
        #[cfg(target_arch = "x86_64")]
        if avx {
            return passes_f32x8(&b, steps, lanes);
        }
        passes_of::<f32, 4>(&b, steps, lanes)
    } else if TypeId::of::<T>() == TypeId::of::<f64>() {
        let b = bases.map(|p| p.cast::<f64>());
        #[cfg(target_arch = "x86_64")]
        if avx {
            return passes_f64x4(&b, steps, lanes);
        }
        passes_of::<f64, 4>(&b, steps, lanes)
    } else {
        unreachable!("IrFloat is f32 or f64")
    }
}

/// [`passes_of`] with AVX registers of `f32`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn passes_f32x8(bases: &[*const f32; 5], steps: &[RStep], lanes: usize) {
    passes_of::<simd::F32x8, K_F32>(bases, steps, lanes)
}

/// [`passes_of`] with AVX registers of `f64`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn passes_f64x4(bases: &[*const f64; 5], steps: &[RStep], lanes: usize) {
    passes_of::<simd::F64x4, K_F64>(bases, steps, lanes)
}

/// Registers per accumulator (AVX): eight registers keep enough independent
/// operations in flight (for `f32` measured faster than four or six on the
/// Lorenz field; for `f64` eight took 0.89× the time of four, whole command,
/// median of seven pairs); blocks of a multiple of 64 (`f32`) or 32 (`f64`)
/// lanes need no shorter passes.
const K_F32: usize = 8;
const K_F64: usize = 8;

/// Chunks of `K` vectors `V`, then of two and one vector, then single lanes.
#[inline(always)]
unsafe fn passes_of<V: Vector, const K: usize>(
    bases: &[*const V::E; 5],
    steps: &[RStep],
    lanes: usize,
) where
    V::E: Vector<E = V::E>,
{
    let chunk = K * V::N;
    debug_assert!(chunk <= CHUNK);
    let mut l = 0;
    while l + chunk <= lanes {
        pass::<V, K>(bases, steps, l);
        l += chunk;
    }
    if l + 2 * V::N <= lanes {
        pass::<V, 2>(bases, steps, l);
        l += 2 * V::N;
    }
    while l + V::N <= lanes {
        pass::<V, 1>(bases, steps, l);
        l += V::N;
    }
    while l < lanes {
        pass::<V::E, 1>(bases, steps, l);
        l += 1;
    }
}

/// The accumulators after `kind` (`Bin`, `RBin` or `Un`), lane by lane;
/// `p` holds the operand pointers (`N` lanes each).
///
/// # Safety
/// Every `p[k] .. p[k] + N` must be readable.
#[cold]
#[inline(never)]
unsafe fn call_lanes<V: Vector, const K: usize>(
    mut acc: [V; K],
    p: &[*const V::E; K],
    kind: Kind,
) -> [V; K] {
    for (a, &p) in acc.iter_mut().zip(p) {
        *a = match kind {
            Kind::Bin(op) => a.zip(V::load(p), |x, y| V::E::bin(op, x, y)),
            Kind::RBin(op) => V::load(p).zip(*a, |x, y| V::E::bin(op, x, y)),
            Kind::Un(op) => a.map(|x| V::E::un(op, x)),
            _ => unreachable!("only calls go out of line"),
        }
    }
    acc
}

/// The chains over lanes `l .. l + K·N`, each accumulator in `K` registers.
#[inline(always)]
unsafe fn pass<V: Vector, const K: usize>(bases: &[*const V::E; 5], steps: &[RStep], l: usize) {
    let at = |o: Opnd, k: usize| bases[o.base].add(o.off + (l & o.mask) + k * V::N);
    let mut acc: [V; K] = [V::zero(); K];
    for s in steps {
        if let Some(f) = s.first {
            for (k, a) in acc.iter_mut().enumerate() {
                *a = V::load(at(f, k));
            }
        }
        macro_rules! each {
            (|$a:ident, $p:ident, $k:ident| $e:expr) => {
                for $k in 0..K {
                    let ($a, $p) = (acc[$k], V::load(at(s.p, $k)));
                    acc[$k] = $e;
                }
            };
        }
        match s.kind {
            Kind::Add => each!(|a, p, k| a.add(p)),
            Kind::RAdd => each!(|a, p, k| p.add(a)),
            Kind::Sub => each!(|a, p, k| a.sub(p)),
            Kind::RSub => each!(|a, p, k| p.sub(a)),
            Kind::Mul => each!(|a, p, k| a.mul(p)),
            Kind::RMul => each!(|a, p, k| p.mul(a)),
            Kind::Div => each!(|a, p, k| a.div(p)),
            Kind::RDiv => each!(|a, p, k| p.div(a)),
            Kind::Fma => each!(|a, p, k| a.fma(p, V::load(at(s.q, k)))),
            Kind::RFma => each!(|a, p, k| p.fma(a, V::load(at(s.q, k)))),
            Kind::FmaAdd => each!(|a, p, k| p.fma(V::load(at(s.q, k)), a)),
            // Lane by lane through library functions: out of line, so that
            // their calls (which clobber every vector register) don't shape the
            // register allocation of the arms above.
            Kind::Bin(_) | Kind::RBin(_) | Kind::Un(_) => {
                let p: [*const V::E; K] = std::array::from_fn(|k| at(s.p, k));
                acc = call_lanes(acc, &p, s.kind)
            }
        }
        if let Some(d) = s.store {
            for (k, v) in acc.iter().enumerate() {
                v.store(at(d, k).cast_mut());
            }
        }
    }
}
