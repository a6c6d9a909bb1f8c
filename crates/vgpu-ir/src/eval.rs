//! Batched evaluation of IR nodes over the lanes of a block: every node is one
//! loop over a column of `lanes` values (structure of arrays), so nothing on the
//! hot path interprets one trajectory at a time.
//!
//! A phase's nodes fall into three groups (see [`Variance`]): *uniform* nodes
//! (constants, parameters) are computed once per launch and baked into the
//! instructions as immediates; *lane* nodes (indices, `rho[i]`, `init(x)`) once
//! per block; *varying* nodes at every stage of every step.

use crate::args::{Args, Buffer};
use crate::error::{IrError, Pos};
use crate::kernel::{BinOp, Builtin, Kernel, Node, NodeId, UnOp, Variance};
use crate::ops;
use crate::types::{ScalarType, Value};

mod columns;
mod fused;
mod simd;
pub use columns::IrFloat;
pub(crate) use columns::{Pools, StateCols};
pub(crate) use fused::{run as fused_run, Io, Plan, Resolved, CHUNK};

/// The launch values uniform nodes may read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub bdim: u32,
    pub gdim: u32,
    pub n: u32,
    pub rep: u32,
}

/// Computes every uniform node among `nodes` (arena order); other nodes get `None`.
pub(crate) fn uniform_values(
    k: &Kernel,
    nodes: &[NodeId],
    var: &[Variance],
    args: &Args,
    dims: Dims,
) -> Result<Vec<Option<Value>>, IrError> {
    let mut vals: Vec<Option<Value>> = vec![None; k.nodes.len()];
    for &id in nodes {
        if var[id.index()] != Variance::Uniform {
            continue;
        }
        let g = |n: NodeId| vals[n.index()].expect("operands come first");
        let v = match k.nodes[id.index()] {
            Node::Const(v) => v,
            Node::Param(p) => args.scalar_at(p as usize).expect("args checked complete"),
            Node::Builtin(b) => Value::U32(match b {
                Builtin::BlockDim => dims.bdim,
                Builtin::GridDim => dims.gdim,
                Builtin::Count => dims.n,
                Builtin::Repetition => dims.rep,
                _ => unreachable!("not uniform"),
            }),
            Node::Load { buf, index, site } => {
                let b = args.buffer_at(buf as usize).expect("args checked complete");
                let i = index_of(g(index));
                if i < 0 || i as usize >= b.len() {
                    return Err(oob(
                        k,
                        &k.params[buf as usize].name,
                        b.len(),
                        i,
                        0,
                        dims.bdim,
                        k.sites[site as usize],
                    ));
                }
                b.get(i as usize)
            }
            Node::Unary(op, a) => ops::unary(op, g(a)).expect("type-checked"),
            Node::Binary(op, a, b) => ops::binary(op, g(a), g(b)).expect("type-checked"),
            Node::Select(c, a, b) => {
                if g(c) == Value::Bool(true) {
                    g(a)
                } else {
                    g(b)
                }
            }
            Node::Fma(a, b, c) => ops::fma(g(a), g(b), g(c)),
            Node::Cast(t, a) => g(a).cast(t),
            Node::State(_) | Node::Init(_) | Node::SharedLoad { .. } => unreachable!("not uniform"),
        };
        vals[id.index()] = Some(v);
    }
    Ok(vals)
}

/// An integer index value as `i64` (negative for negative `i32`).
#[inline]
pub(crate) fn index_of(v: Value) -> i64 {
    match v {
        Value::I32(x) => x as i64,
        Value::U32(x) => x as i64,
        _ => -1,
    }
}

pub(crate) fn oob(
    k: &Kernel,
    name: &str,
    len: usize,
    index: i64,
    traj: usize,
    bdim: u32,
    pos: Pos,
) -> IrError {
    let bdim = bdim.max(1) as usize;
    IrError::OutOfBounds {
        kernel: k.name.clone(),
        buffer: name.to_string(),
        len,
        index,
        trajectory: traj,
        block: traj / bdim,
        thread: traj % bdim,
        file: k.source.clone(),
        pos,
    }
}

/// Where an operand lives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Src {
    /// An immediate (uniform node).
    Imm(Value),
    /// A column of the scratch pools (slot of the node's type).
    Col(u32),
    /// State component `k` (the stage's input).
    State(u32),
    /// Initial state component `k`.
    Init(u32),
    /// The stage time.
    Time,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Op {
    Un(UnOp),
    Bin(BinOp),
    Select,
    Fma,
    Cast,
    Load { buf: u32, site: u32 },
    SharedLoad { shared: u32, site: u32 },
    Lane(Builtin),
}

/// One column operation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Instr {
    op: Op,
    /// Operand type (for `Select`: the value type; `Cast`: the source type).
    ty: ScalarType,
    /// Result type.
    rty: ScalarType,
    a: Src,
    b: Src,
    c: Src,
    dst: u32,
}

/// The instructions of one phase for one launch.
#[derive(Clone, Debug)]
pub(crate) struct Program {
    pub lane: Vec<Instr>,
    pub vary: Vec<Instr>,
    /// Where each node's value is (for the roots).
    pub src: Vec<Option<Src>>,
    /// Slots per pool: f32, f64, integers (as u32 bits), bool.
    pub slots: [u32; 4],
}

fn pool_of(t: ScalarType) -> usize {
    match t {
        ScalarType::F32 => 0,
        ScalarType::F64 => 1,
        ScalarType::I32 | ScalarType::U32 => 2,
        ScalarType::Bool => 3,
    }
}

impl Program {
    /// Compiles the nodes reachable from `roots`, with uniform values baked in.
    pub(crate) fn build(
        k: &Kernel,
        roots: &[NodeId],
        var: &[Variance],
        uni: &[Option<Value>],
    ) -> Program {
        let nodes = k.reachable(roots);
        let mut p = Program {
            lane: vec![],
            vary: vec![],
            src: vec![None; k.nodes.len()],
            slots: [0; 4],
        };
        for id in nodes {
            let i = id.index();
            if let Some(v) = uni[i] {
                p.src[i] = Some(Src::Imm(v));
                continue;
            }
            let node = k.nodes[i];
            match node {
                Node::State(s) => {
                    p.src[i] = Some(Src::State(s));
                    continue;
                }
                Node::Init(s) => {
                    p.src[i] = Some(Src::Init(s));
                    continue;
                }
                Node::Builtin(Builtin::Time) => {
                    p.src[i] = Some(Src::Time);
                    continue;
                }
                _ => {}
            }
            let rty = k.ty(id);
            let g = |n: NodeId| p.src[n.index()].expect("operands come first");
            let none = Src::Imm(Value::Bool(false));
            let (op, ty, a, b, c) = match node {
                Node::Builtin(bi) => (Op::Lane(bi), rty, none, none, none),
                Node::Load { buf, index, site } => {
                    (Op::Load { buf, site }, k.ty(index), g(index), none, none)
                }
                Node::SharedLoad {
                    shared,
                    index,
                    site,
                } => (
                    Op::SharedLoad { shared, site },
                    k.ty(index),
                    g(index),
                    none,
                    none,
                ),
                Node::Unary(op, a) => (Op::Un(op), k.ty(a), g(a), none, none),
                Node::Binary(op, a, b) => (Op::Bin(op), k.ty(a), g(a), g(b), none),
                Node::Select(c, a, b) => (Op::Select, k.ty(a), g(c), g(a), g(b)),
                Node::Fma(a, b, c) => (Op::Fma, k.ty(a), g(a), g(b), g(c)),
                Node::Cast(_, a) => (Op::Cast, k.ty(a), g(a), none, none),
                _ => unreachable!("handled above"),
            };
            let pool = pool_of(rty);
            let dst = p.slots[pool];
            p.slots[pool] += 1;
            let ins = Instr {
                op,
                ty,
                rty,
                a,
                b,
                c,
                dst,
            };
            if var[i] == Variance::Lane {
                p.lane.push(ins);
            } else {
                p.vary.push(ins);
            }
            p.src[i] = Some(Src::Col(dst));
        }
        p
    }
}

/// Everything a block evaluation reads.
#[allow(dead_code)] // `k` and `bdim` document the frame; faults use them via the caller.
pub(crate) struct Frame<'a> {
    pub k: &'a Kernel,
    pub args: &'a Args,
    pub lanes: usize,
    /// Global index of lane 0.
    pub first: usize,
    pub block: u32,
    pub bdim: u32,
    pub h: StateCols<'a>,
    pub h0: StateCols<'a>,
    pub t: Value,
    pub shared: Option<vgpu_field::phase::SharedView<'a>>,
    /// Lanes at or past this one are padding: their global index is clamped to
    /// the last real trajectory.
    pub last: usize,
}

/// The first out-of-bounds access of an evaluation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Fault {
    pub lane: usize,
    pub index: i64,
    pub len: usize,
    pub site: u32,
    /// Buffer parameter (`false`) or shared sub-field (`true`), and its index.
    pub shared: bool,
    pub which: u32,
}

impl Fault {
    pub(crate) fn into_error(self, k: &Kernel, first: usize, bdim: u32) -> IrError {
        let name = if self.shared {
            &k.shared[self.which as usize].name
        } else {
            &k.params[self.which as usize].name
        };
        oob(
            k,
            name,
            self.len,
            self.index,
            first + self.lane,
            bdim,
            k.sites[self.site as usize],
        )
    }
}

enum Opnd<'a, X> {
    Col(&'a [X]),
    Imm(X),
}

impl<X: Copy> Opnd<'_, X> {
    #[inline(always)]
    fn get(&self, l: usize) -> X {
        match self {
            Opnd::Col(c) => c[l],
            Opnd::Imm(x) => *x,
        }
    }
}

#[inline(always)]
fn map1<X: Copy, R: Copy>(d: &mut [R], a: Opnd<X>, f: impl Fn(X) -> R) {
    match a {
        Opnd::Col(a) => {
            for (d, &x) in d.iter_mut().zip(a) {
                *d = f(x);
            }
        }
        Opnd::Imm(x) => d.fill(f(x)),
    }
}

#[inline(always)]
fn map2<X: Copy, R: Copy>(d: &mut [R], a: Opnd<X>, b: Opnd<X>, f: impl Fn(X, X) -> R) {
    match (a, b) {
        (Opnd::Col(a), Opnd::Col(b)) => {
            for ((d, &x), &y) in d.iter_mut().zip(a).zip(b) {
                *d = f(x, y);
            }
        }
        (Opnd::Col(a), Opnd::Imm(y)) => {
            for (d, &x) in d.iter_mut().zip(a) {
                *d = f(x, y);
            }
        }
        (Opnd::Imm(x), Opnd::Col(b)) => {
            for (d, &y) in d.iter_mut().zip(b) {
                *d = f(x, y);
            }
        }
        (Opnd::Imm(x), Opnd::Imm(y)) => d.fill(f(x, y)),
    }
}

macro_rules! float_ops {
    ($name:ident, $t:ty) => {
        #[inline(always)]
        fn $name(op: Op, d: &mut [$t], a: Opnd<$t>, b: Opnd<$t>, c: Opnd<$t>) -> bool {
            match op {
                Op::Un(u) => match u {
                    UnOp::Neg => map1(d, a, |x| -x),
                    UnOp::Abs => map1(d, a, |x| x.abs()),
                    UnOp::Sqrt => map1(d, a, |x| x.sqrt()),
                    UnOp::Floor => map1(d, a, |x| x.floor()),
                    UnOp::Sin => map1(d, a, |x| x.sin()),
                    UnOp::Cos => map1(d, a, |x| x.cos()),
                    UnOp::Exp => map1(d, a, |x| x.exp()),
                    UnOp::Log => map1(d, a, |x| x.ln()),
                    UnOp::Tanh => map1(d, a, |x| x.tanh()),
                    UnOp::Not => return false,
                },
                Op::Bin(o) => match o {
                    BinOp::Add => map2(d, a, b, |x, y| x + y),
                    BinOp::Sub => map2(d, a, b, |x, y| x - y),
                    BinOp::Mul => map2(d, a, b, |x, y| x * y),
                    BinOp::Div => map2(d, a, b, |x, y| x / y),
                    BinOp::Min => map2(d, a, b, |x, y| x.min(y)),
                    BinOp::Max => map2(d, a, b, |x, y| x.max(y)),
                    BinOp::Rem => map2(d, a, b, |x, y| x % y),
                    BinOp::Pow => map2(d, a, b, |x, y| x.powf(y)),
                    _ => return false,
                },
                Op::Fma => {
                    for (l, d) in d.iter_mut().enumerate() {
                        *d = a.get(l).mul_add(b.get(l), c.get(l));
                    }
                }
                _ => return false,
            }
            true
        }
    };
}
float_ops!(f32_ops, f32);
float_ops!(f64_ops, f64);

/// Runs `prog` (the `lane` or `vary` list) over the frame's lanes.
///
/// On x86-64 with AVX2 (detected at run time) the same loops are compiled for
/// 256-bit vectors; the operations and their order are the same, so the results
/// are the same bits.
pub(crate) fn run(instrs: &[Instr], pools: &mut Pools, fr: &Frame<'_>, fault: &mut Option<Fault>) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        unsafe { run_avx2(instrs, pools, fr, fault) };
        return;
    }
    for ins in instrs {
        exec(ins, pools, fr, fault);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2(instrs: &[Instr], pools: &mut Pools, fr: &Frame<'_>, fault: &mut Option<Fault>) {
    for ins in instrs {
        exec(ins, pools, fr, fault);
    }
}

/// # Safety of the raw slices
/// An instruction's destination slot is never one of its operand slots (every
/// node has its own slot), and the pools are not resized while an instruction
/// runs, so the destination slice never overlaps an operand slice.
#[inline(always)]
fn exec(ins: &Instr, pools: &mut Pools, fr: &Frame<'_>, fault: &mut Option<Fault>) {
    let w = pools.width;
    let n = fr.lanes;
    let fast = match ins.ty {
        ScalarType::F32 => float_fast(ins, pools.f32s.as_mut_ptr(), w, fr, f32_ops),
        ScalarType::F64 => float_fast(ins, pools.f64s.as_mut_ptr(), w, fr, f64_ops),
        _ => false,
    };
    if fast {
        return;
    }
    // The general path: one value at a time through the scalar semantics.
    let read = |s: Src, ty: ScalarType, l: usize| read_src(s, ty, pools, fr, l);
    let mut out: Vec<Value> = Vec::with_capacity(n);
    match ins.op {
        Op::Lane(b) => {
            for l in 0..n {
                out.push(Value::U32(match b {
                    Builtin::Global => (fr.first + l.min(fr.last.saturating_sub(1))) as u32,
                    Builtin::Thread => l as u32,
                    Builtin::Block => fr.block,
                    _ => unreachable!("uniform builtins are immediates"),
                }));
            }
        }
        Op::Load { buf, site } => {
            let b: &Buffer = fr
                .args
                .buffer_at(buf as usize)
                .expect("args checked complete");
            let at = |l| index_of(read(ins.a, ins.ty, l));
            let place = (site, false, buf);
            gather(
                n,
                b.len(),
                at,
                |i| b.get(i),
                ins.rty,
                place,
                &mut out,
                fault,
            );
        }
        Op::SharedLoad { shared, site } => {
            let s = fr
                .shared
                .expect("shared loads are compiled for phased stages only")
                .array(shared as usize);
            let at = |l| index_of(read(ins.a, ins.ty, l));
            let place = (site, true, shared);
            gather(
                n,
                s.len(),
                at,
                |i| s.get(i),
                ins.rty,
                place,
                &mut out,
                fault,
            );
        }
        Op::Un(op) => {
            for l in 0..n {
                out.push(ops::unary(op, read(ins.a, ins.ty, l)).expect("type-checked"));
            }
        }
        Op::Bin(op) => {
            let bty = if matches!(op, BinOp::Shl | BinOp::Shr) {
                ScalarType::U32
            } else {
                ins.ty
            };
            for l in 0..n {
                out.push(
                    ops::binary(op, read(ins.a, ins.ty, l), read(ins.b, bty, l))
                        .expect("type-checked"),
                );
            }
        }
        Op::Select => {
            for l in 0..n {
                let c = read(ins.a, ScalarType::Bool, l) == Value::Bool(true);
                out.push(if c {
                    read(ins.b, ins.ty, l)
                } else {
                    read(ins.c, ins.ty, l)
                });
            }
        }
        Op::Fma => {
            for l in 0..n {
                out.push(ops::fma(
                    read(ins.a, ins.ty, l),
                    read(ins.b, ins.ty, l),
                    read(ins.c, ins.ty, l),
                ));
            }
        }
        Op::Cast => {
            for l in 0..n {
                out.push(read(ins.a, ins.ty, l).cast(ins.rty));
            }
        }
    }
    let base = ins.dst as usize * w;
    for (l, v) in out.into_iter().enumerate() {
        match v {
            Value::F32(x) => pools.f32s[base + l] = x,
            Value::F64(x) => pools.f64s[base + l] = x,
            Value::I32(x) => pools.ints[base + l] = x as u32,
            Value::U32(x) => pools.ints[base + l] = x,
            Value::Bool(x) => pools.bools[base + l] = x,
        }
    }
}

/// `out[l] = get(at(l))` for `n` lanes of a gather from `len` values; an index
/// out of range reads zero and records the lowest such lane as a [`Fault`] at
/// `(site, shared, which)`.
#[allow(clippy::too_many_arguments)]
fn gather(
    n: usize,
    len: usize,
    at: impl Fn(usize) -> i64,
    get: impl Fn(usize) -> Value,
    rty: ScalarType,
    (site, shared, which): (u32, bool, u32),
    out: &mut Vec<Value>,
    fault: &mut Option<Fault>,
) {
    for l in 0..n {
        let index = at(l);
        if index < 0 || index as usize >= len {
            if fault.is_none_or(|f| l < f.lane) {
                *fault = Some(Fault {
                    lane: l,
                    index,
                    len,
                    site,
                    shared,
                    which,
                });
            }
            out.push(Value::F64(0.0).cast(rty));
        } else {
            out.push(get(index as usize));
        }
    }
}

/// A column operation on floats of one type (`f32_ops`, `f64_ops`).
type FloatOps<T> = fn(Op, &mut [T], Opnd<'_, T>, Opnd<'_, T>, Opnd<'_, T>) -> bool;

/// The column path of float arithmetic of type `T` (its operands and result of
/// that type); `false` when `ins` is something else.
///
/// # Safety of the raw slices
/// As in [`exec`]: the destination column is not an operand column.
#[inline(always)]
fn float_fast<'a, T: IrFloat>(
    ins: &Instr,
    pool: *mut T,
    w: usize,
    fr: &Frame<'a>,
    ops: FloatOps<T>,
) -> bool {
    if ins.ty != T::TYPE
        || ins.rty != T::TYPE
        || matches!(
            ins.op,
            Op::Select | Op::Cast | Op::Load { .. } | Op::SharedLoad { .. } | Op::Lane(_)
        )
    {
        return false;
    }
    let n = fr.lanes;
    let state = |c: StateCols<'a>, k: u32| -> Opnd<'a, T> {
        let h = T::of_cols(c).expect("state type");
        Opnd::Col(&h[k as usize * n..(k as usize + 1) * n])
    };
    let opnd = |s: Src| match s {
        // SAFETY: see the function's doc; slot < slots, lanes <= width.
        Src::Col(c) => Opnd::Col(unsafe {
            std::slice::from_raw_parts(pool.cast_const().add(c as usize * w), n)
        }),
        Src::Imm(v) => Opnd::Imm(T::from_value(v)),
        Src::Time => Opnd::Imm(T::from_value(fr.t)),
        Src::State(k) => state(fr.h, k),
        Src::Init(k) => state(fr.h0, k),
    };
    // SAFETY: as above; the destination is this instruction's own slot.
    let d = unsafe { std::slice::from_raw_parts_mut(pool.add(ins.dst as usize * w), n) };
    ops(ins.op, d, opnd(ins.a), opnd(ins.b), opnd(ins.c))
}

/// Reads the value of `src` at lane `l` (for roots: rates, drives, emits).
pub(crate) fn read_src(src: Src, ty: ScalarType, pools: &Pools, fr: &Frame<'_>, l: usize) -> Value {
    let n = fr.lanes;
    match src {
        Src::Imm(v) => v,
        Src::Time => fr.t,
        Src::State(k) | Src::Init(k) => {
            let cols = if matches!(src, Src::State(_)) {
                fr.h
            } else {
                fr.h0
            };
            match cols {
                StateCols::F32(h) => Value::F32(h[k as usize * n + l]),
                StateCols::F64(h) => Value::F64(h[k as usize * n + l]),
            }
        }
        Src::Col(c) => {
            let at = c as usize * pools.width + l;
            match ty {
                ScalarType::F32 => Value::F32(pools.f32s[at]),
                ScalarType::F64 => Value::F64(pools.f64s[at]),
                ScalarType::I32 => Value::I32(pools.ints[at] as i32),
                ScalarType::U32 => Value::U32(pools.ints[at]),
                ScalarType::Bool => Value::Bool(pools.bools[at]),
            }
        }
    }
}
