//! A kernel's rates over every lane of a block as one native function: the
//! fixed-step executor's [`vgpu_field::BlockField::eval_block`] of an
//! [`crate::field::IrField`] (issue 16 item 1).
//!
//! The function walks the block's structure-of-arrays state a vector at a
//! time (`f32x4`, `f64x2`: the 128-bit vectors every host Cranelift targets
//! has), each value in a register from the state's load to the rate's store.
//! Float `+ − × ÷`, `sqrt`, `abs`, negation (and `fma` where the host has
//! it) are vector instructions, each lane rounded exactly as the scalar
//! operation; a buffer read at the global index `i` (`rho[i]`) is one vector
//! load in blocks whose lanes are all live and inside the buffer (a second
//! copy of the loop, chosen once per call); everything else (other buffer reads, library calls, integers, casts,
//! comparisons, selects, values of another float type) is computed lane by
//! lane by the scalar lowering the adaptive path uses ([`super::lower`]). A
//! block whose size is not a multiple of the vector width ends with a
//! vector that overlaps the one before it: those lanes are computed twice
//! from the same inputs and written twice with the same bits.
//!
//! An out-of-bounds read is only flagged; the caller then evaluates the
//! block with the column evaluator, which names the read exactly as it
//! always does.

use super::code::{buffer_table, BufRef, Code, FaultRec, Jit};
use super::lower::{self, clif, size, Inputs};
use super::scalar::compilable;
use super::NotCompilable;
use crate::args::Args;
use crate::eval::IrFloat;
use crate::eval::{self, Dims};
use crate::kernel::{BinOp, Builtin, Kernel, Node, NodeId, UnOp, Update, Variance};
use crate::types::ScalarType;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, Type, UserFuncName, Value};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::Module;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

/// The native signature: `t`, then pointers to the block's states, initial
/// states and rates (component-major, `lanes` per component), the launch
/// values `[first i, last live lane, bid, 0]`, the buffer table and the
/// fault record.
type LanesFn<T> = unsafe extern "C" fn(
    T,
    *const T,
    *const T,
    *mut T,
    *const [u32; 4],
    *const BufRef,
    *mut FaultRec,
);

/// Bytes of the vectors the lanes are computed in.
const VECTOR_BYTES: i64 = 16;

/// An unphased kernel's rates over the lanes of a block of fixed size, as
/// native code.
pub(crate) struct LaneKernel<'a> {
    _code: Arc<Code>,
    code: *const u8,
    ty: ScalarType,
    lanes: usize,
    dim: usize,
    outs: usize,
    bufs: Vec<BufRef>,
    _args: PhantomData<&'a Args>,
}

// SAFETY: the raw pointers are to the module's immutable code (alive while
// `_code` is) and to the buffers of the borrowed `Args` (immutable, alive for
// `'a`); native code only reads them.
unsafe impl Send for LaneKernel<'_> {}
// SAFETY: as above; a call writes only to the rates and fault record its caller passes.
unsafe impl Sync for LaneKernel<'_> {}

impl<'a> LaneKernel<'a> {
    /// Compiles `k` (unphased, float states of one type) for blocks of
    /// `dims.bdim` lanes with `args` and the uniform launch values of `dims`
    /// baked in.
    ///
    /// # Errors
    /// [`NotCompilable`] naming the reason (see [`compilable`]; also a block
    /// narrower than one vector, or states of two float types).
    pub(crate) fn compile(
        k: &Kernel,
        args: &'a Args,
        dims: Dims,
    ) -> Result<LaneKernel<'a>, NotCompilable> {
        compilable(k)?;
        let ty = k.float_type();
        if k.states.iter().any(|s| s.ty != ty) {
            return Err(NotCompilable::new(&k.name, "states of two float types"));
        }
        let lanes = dims.bdim as usize;
        let width = (VECTOR_BYTES / size(ty)) as usize;
        if lanes < width {
            return Err(NotCompilable::new(
                &k.name,
                format!("blocks of {lanes} lanes are narrower than one vector of {width}"),
            ));
        }
        let outs = k.phases[0].updates.len();
        let rows = k.states.len().max(outs) as i64;
        if rows * lanes as i64 * size(ty) > i32::MAX as i64 {
            return Err(NotCompilable::new(
                &k.name,
                "a block's states span more than 2 GiB",
            ));
        }
        let mut jit = Jit::new(&k.name)?;
        let id = build(&mut jit, k, args, dims, ty, width)?;
        let (code, ptrs) = jit.finish(&[id])?;
        let (bufs, _) = buffer_table(args, k.params.len());
        Ok(LaneKernel {
            _code: code,
            code: ptrs[0],
            ty,
            lanes,
            dim: k.states.len(),
            outs,
            bufs,
            _args: PhantomData,
        })
    }

    /// Writes the rates of every lane of a block at time `t` into `dh`
    /// (component-major), the block's trajectories starting at global index
    /// `first`, `live` of them in the launch (lanes past them read the last
    /// one's `i`), block index `bid`. Returns whether a buffer read was out
    /// of bounds (the rates are then incomplete).
    ///
    /// # Panics
    /// If `T` is not the kernel's float type or a slice is shorter than the
    /// block.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn call<T: IrFloat>(
        &self,
        t: T,
        h: &[T],
        h0: &[T],
        dh: &mut [T],
        first: u32,
        live: usize,
        bid: u32,
    ) -> bool {
        let n = self.lanes;
        assert!(
            T::TYPE == self.ty
                && h.len() >= n * self.dim
                && h0.len() >= n * self.dim
                && dh.len() >= n * self.outs,
            "native block kernel called with the wrong shapes"
        );
        let ids = [first, live.saturating_sub(1) as u32, bid, 0];
        let mut rec = FaultRec::default();
        // SAFETY: the code was compiled with this signature for `T` (checked
        // above); it reads `dim` components of `lanes` values of `h` and
        // `h0` and writes `outs` of `dh` (lengths checked above), reads
        // `ids`, the buffer table of one entry per parameter (each within its
        // length: the code checks every index) and writes only `rec`.
        unsafe {
            let f = std::mem::transmute::<*const u8, LanesFn<T>>(self.code);
            f(
                t,
                h.as_ptr(),
                h0.as_ptr(),
                dh.as_mut_ptr(),
                &ids,
                self.bufs.as_ptr(),
                &mut rec,
            );
        }
        rec.hit != 0
    }
}

/// Whether the host computes a vector `fma` as one instruction (else `fma`
/// goes lane by lane, as the scalar lowering computes it).
fn vector_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("fma")
    }
    #[cfg(target_arch = "aarch64")]
    {
        true
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

/// A node's value inside the loop: one value for every lane, a vector of
/// the kernel's float type, or one scalar per lane.
#[derive(Clone)]
enum Lanes {
    One(Value),
    Vector(Value),
    Each(Vec<Value>),
}

/// The loop body's lowering state.
#[derive(Clone)]
struct Body<'k> {
    k: &'k Kernel,
    ty: ScalarType,
    vty: Type,
    vals: Vec<Option<Lanes>>,
    /// Per lane, the scalar of each node taken so far (operands of the lane-by-lane nodes).
    scalars: Vec<Vec<Option<Value>>>,
    /// Vectors of the nodes, and splats of uniform values (by scalar).
    vectors: Vec<Option<Value>>,
    splats: HashMap<Value, Value>,
}

impl Body<'_> {
    fn get(&self, n: NodeId) -> &Lanes {
        self.vals[n.index()].as_ref().expect("operands come first")
    }

    /// Node `n`'s value in lane `j`.
    fn scalar(&mut self, b: &mut FunctionBuilder<'_>, n: NodeId, j: usize) -> Value {
        if let Some(v) = self.scalars[j][n.index()] {
            return v;
        }
        let v = match self.get(n).clone() {
            Lanes::One(v) => v,
            Lanes::Each(vs) => vs[j],
            Lanes::Vector(v) => b.ins().extractlane(v, j as u8),
        };
        self.scalars[j][n.index()] = Some(v);
        v
    }

    /// Node `n` (of the kernel's float type) as a vector.
    fn vector(&mut self, b: &mut FunctionBuilder<'_>, n: NodeId) -> Value {
        if let Some(v) = self.vectors[n.index()] {
            return v;
        }
        let v = match self.get(n).clone() {
            Lanes::Vector(v) => v,
            Lanes::One(s) => self.splat(b, s),
            Lanes::Each(vs) => {
                let mut v = b.ins().scalar_to_vector(self.vty, vs[0]);
                for (j, &s) in vs.iter().enumerate().skip(1) {
                    v = b.ins().insertlane(v, s, j as u8);
                }
                v
            }
        };
        self.vectors[n.index()] = Some(v);
        v
    }

    fn splat(&mut self, b: &mut FunctionBuilder<'_>, s: Value) -> Value {
        if let Some(&v) = self.splats.get(&s) {
            return v;
        }
        let v = b.ins().splat(self.vty, s);
        self.splats.insert(s, v);
        v
    }

    /// Whether node `n` is computed as one vector instruction.
    fn vectorised(&self, n: NodeId, fma: bool) -> bool {
        let k = self.k;
        if k.ty(n) != self.ty {
            return false;
        }
        match k.nodes[n.index()] {
            Node::Unary(UnOp::Neg | UnOp::Abs | UnOp::Sqrt, a) => k.ty(a) == self.ty,
            Node::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div, a, _) => {
                k.ty(a) == self.ty
            }
            Node::Fma(..) => fma,
            _ => false,
        }
    }

    fn vector_op(&mut self, b: &mut FunctionBuilder<'_>, n: NodeId) -> Value {
        match self.k.nodes[n.index()] {
            Node::Unary(op, a) => {
                let a = self.vector(b, a);
                match op {
                    UnOp::Neg => b.ins().fneg(a),
                    UnOp::Abs => b.ins().fabs(a),
                    _ => b.ins().sqrt(a),
                }
            }
            Node::Binary(op, x, y) => {
                let (x, y) = (self.vector(b, x), self.vector(b, y));
                match op {
                    BinOp::Add => b.ins().fadd(x, y),
                    BinOp::Sub => b.ins().fsub(x, y),
                    BinOp::Mul => b.ins().fmul(x, y),
                    _ => b.ins().fdiv(x, y),
                }
            }
            Node::Fma(x, y, z) => {
                let (x, y, z) = (self.vector(b, x), self.vector(b, y), self.vector(b, z));
                b.ins().fma(x, y, z)
            }
            _ => unreachable!("only the nodes `vectorised` accepts"),
        }
    }
}

/// Whether node `index` is the launch's global index `i` (consecutive across
/// the lanes of a vector while they are live).
fn at_global(k: &Kernel, index: NodeId) -> bool {
    matches!(k.nodes[index.index()], Node::Builtin(Builtin::Global))
}

/// Declares and defines the block function of `k` in `jit`.
fn build(
    jit: &mut Jit,
    k: &Kernel,
    args: &Args,
    dims: Dims,
    ty: ScalarType,
    width: usize,
) -> Result<cranelift_module::FuncId, NotCompilable> {
    let phase = &k.phases[0];
    let roots = k.phase_roots(phase);
    let var = k.variance();
    let reach = k.reachable(&roots);
    let uni = eval::uniform_values(k, &reach, &var, args, dims)
        .map_err(|e| NotCompilable::new(&k.name, e.to_string()))?;
    let ptr = types::I64;
    let sig = jit.signature(&[clif(ty), ptr, ptr, ptr, ptr, ptr, ptr], None);
    let id = jit.declare("block", &sig)?;
    jit.ctx.func.signature = sig;
    jit.ctx.func.name = UserFuncName::user(0, id.as_u32());
    let calls = lower::imports(jit, k, &reach)?;
    let config = jit.module.target_config();
    let lanes = dims.bdim as i64;
    let sz = size(ty);
    let stride = lanes * sz;
    let vty = clif(ty)
        .by(width as u32)
        .ok_or_else(|| NotCompilable::new(&k.name, "no vector type"))?;
    let flags = MemFlagsData::new().with_notrap();
    let trusted = MemFlagsData::trusted();
    {
        let mut b = FunctionBuilder::new(&mut jit.ctx.func, &mut jit.fctx);
        let p = lower::entry(&mut b);
        let (t, h, h0, dh, ids) = (p[0], p[1], p[2], p[3], p[4]);
        let inp = Inputs {
            t,
            y: h,
            y0: h0,
            lane: ids,
            bufs: p[5],
            fault: p[6],
            states: vec![],
        };
        let first = b.ins().load(types::I32, trusted, ids, 0);
        let last = b.ins().load(types::I32, trusted, ids, 4);
        let bid = b.ins().load(types::I32, trusted, ids, 8);
        let mut body = Body {
            k,
            ty,
            vty,
            vals: vec![None; k.nodes.len()],
            scalars: vec![vec![None; k.nodes.len()]; width],
            vectors: vec![None; k.nodes.len()],
            splats: HashMap::new(),
        };
        // Uniform values (and their vectors) once, before the loop.
        body.splat(&mut b, t);
        for &n in &reach {
            if let Some(c) = uni[n.index()] {
                let s = lower::constant(&mut b, c);
                if k.ty(n) == ty {
                    body.splat(&mut b, s);
                }
                body.vals[n.index()] = Some(Lanes::One(s));
            }
        }
        // Two copies of the loop: one whose reads at `i` are plain vector
        // loads, taken when every lane of the block is live and inside every
        // buffer read at `i` (checked once here), and the general one
        // (padding lanes, a buffer shorter than the launch: lane-by-lane
        // reads, each bounds-checked and recorded). Here, once per call: the
        // check, and each such buffer's address of element `first`.
        let mut reads: Vec<u32> = reach
            .iter()
            .filter_map(|&n| match k.nodes[n.index()] {
                Node::Load { buf, index, .. } if k.ty(n) == ty && at_global(k, index) => Some(buf),
                _ => None,
            })
            .collect();
        reads.sort_unstable();
        reads.dedup();
        let mut rows = HashMap::new();
        let mut all_inside = None;
        if !reads.is_empty() {
            let first64 = b.ins().uextend(types::I64, first);
            let end = b.ins().iadd_imm_s(first64, lanes - 1);
            let at_first = b.ins().imul_imm_s(first64, sz);
            let mut ok = b
                .ins()
                .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, last, lanes - 1);
            for &buf in &reads {
                let base = b.ins().load(types::I64, trusted, inp.bufs, buf as i32 * 16);
                let len = b
                    .ins()
                    .load(types::I64, trusted, inp.bufs, buf as i32 * 16 + 8);
                let inside = b.ins().icmp(IntCC::UnsignedLessThan, end, len);
                ok = b.ins().band(ok, inside);
                rows.insert(buf, b.ins().iadd(base, at_first));
            }
            all_inside = Some(ok);
        }
        let exit = b.create_block();
        let emit = |b: &mut FunctionBuilder<'_>,
                    mut body: Body<'_>,
                    head: cranelift_codegen::ir::Block,
                    fast: bool|
         -> Result<(), NotCompilable> {
            b.switch_to_block(head);
            let l = b.block_params(head)[0];
            let off = b.ins().imul_imm_s(l, sz);
            let (hl, h0l, dhl) = (
                b.ins().iadd(h, off),
                b.ins().iadd(h0, off),
                b.ins().iadd(dh, off),
            );
            let l32 = b.ins().ireduce(types::I32, l);
            let fma = vector_fma();
            let varying = |n: &&NodeId| var[n.index()] == Variance::Varying;
            let order: Vec<NodeId> = reach
                .iter()
                .filter(|n| !varying(n))
                .chain(reach.iter().filter(varying))
                .copied()
                .collect();
            for n in order {
                if body.vals[n.index()].is_some() {
                    continue;
                }
                let rty = k.ty(n);
                let v = match k.nodes[n.index()] {
                    Node::State(s) | Node::Init(s) => {
                        if rty != ty {
                            return Err(NotCompilable::new(&k.name, "states of two float types"));
                        }
                        let base = if matches!(k.nodes[n.index()], Node::State(_)) {
                            hl
                        } else {
                            h0l
                        };
                        Lanes::Vector(b.ins().load(vty, flags, base, (s as i64 * stride) as i32))
                    }
                    Node::Builtin(Builtin::Time) => Lanes::One(t),
                    Node::Builtin(Builtin::Block) => Lanes::One(bid),
                    Node::Builtin(Builtin::Thread) => Lanes::Each(
                        (0..width)
                            .map(|j| b.ins().iadd_imm_s(l32, j as i64))
                            .collect(),
                    ),
                    Node::Builtin(Builtin::Global) => Lanes::Each(
                        (0..width)
                            .map(|j| {
                                let lane = b.ins().iadd_imm_s(l32, j as i64);
                                let m = b.ins().umin(lane, last);
                                b.ins().iadd(first, m)
                            })
                            .collect(),
                    ),
                    Node::Builtin(bi) => {
                        return Err(NotCompilable::new(
                            &k.name,
                            format!("the launch value {bi:?} is not uniform here"),
                        ))
                    }
                    _ if body.vectorised(n, fma) => Lanes::Vector(body.vector_op(b, n)),
                    Node::Load { buf, index, .. } if fast && rty == ty && at_global(k, index) => {
                        let at = b.ins().iadd(rows[&buf], off);
                        Lanes::Vector(b.ins().load(vty, flags, at, 0))
                    }
                    ref node => {
                        let ops = node.operands();
                        let mut each = Vec::with_capacity(width);
                        for j in 0..width {
                            for &o in &ops {
                                body.scalar(b, o, j);
                            }
                            each.push(lower::node(b, k, n, &body.scalars[j], &calls, &inp)?);
                        }
                        Lanes::Each(each)
                    }
                };
                body.vals[n.index()] = Some(v);
            }
            for (o, u) in phase.updates.iter().enumerate() {
                let v = match u {
                    Update::Rate(n) => body.vector(b, *n),
                    _ => {
                        let z = lower::constant(b, crate::types::Value::F64(0.0).cast(ty));
                        b.ins().splat(vty, z)
                    }
                };
                b.ins().store(flags, v, dhl, (o as i64 * stride) as i32);
            }
            let tail = lanes - width as i64;
            let done = b.ins().icmp_imm_u(IntCC::Equal, l, tail);
            let next = b.ins().iadd_imm_s(l, width as i64);
            let tail_v = b.ins().iconst(types::I64, tail);
            let next = b.ins().umin(next, tail_v);
            b.ins().brif(done, exit, &[], head, &[next.into()]);
            Ok(())
        };
        let zero = b.ins().iconst(types::I64, 0);
        let general = b.create_block();
        b.append_block_param(general, types::I64);
        match all_inside {
            None => {
                b.ins().jump(general, &[zero.into()]);
                emit(&mut b, body, general, false)?;
            }
            Some(ok) => {
                let fast = b.create_block();
                b.append_block_param(fast, types::I64);
                b.ins()
                    .brif(ok, fast, &[zero.into()], general, &[zero.into()]);
                emit(&mut b, body.clone(), fast, true)?;
                emit(&mut b, body, general, false)?;
            }
        }
        b.switch_to_block(exit);
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(config);
    }
    jit.define(id)?;
    Ok(id)
}
