//! IR nodes as Cranelift instructions, one scalar value per node, with the
//! semantics of [`crate::ops`] (the evaluator's): integer arithmetic wraps,
//! `x / 0 = x`, `x % 0 = 0`, shifts modulo 32, casts as Rust's `as`, float
//! library functions called, never contracted or reassociated.

use super::code::{binary_symbol, unary_symbol, Jit, FAULT_SYMBOL};
use super::NotCompilable;
use crate::kernel::{BinOp, Builtin, Kernel, Node, NodeId, UnOp, Variance};
use crate::types::{ScalarType, Value as V};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, FuncRef, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::Module;
use std::collections::HashMap;

/// The Cranelift type of an IR type (`bool` is a byte holding 0 or 1).
pub(super) fn clif(t: ScalarType) -> Type {
    match t {
        ScalarType::F32 => types::F32,
        ScalarType::F64 => types::F64,
        ScalarType::I32 | ScalarType::U32 => types::I32,
        ScalarType::Bool => types::I8,
    }
}

/// Bytes of an IR type in memory (buffers and states).
pub(super) fn size(t: ScalarType) -> i64 {
    match t {
        ScalarType::F64 => 8,
        ScalarType::Bool => 1,
        _ => 4,
    }
}

/// What the nodes of a function read: pointers to the states, the initial
/// states, the trajectory's indices (`i`, `tid`, `bid` as three `u32`), the
/// buffer table ([`super::code::BufRef`] per parameter) and the fault record;
/// `states`, when not empty, holds the states as values (a whole step's stage
/// input, kept in registers) and `y` is not read.
pub(super) struct Inputs {
    pub t: Value,
    pub y: Value,
    pub y0: Value,
    pub lane: Value,
    pub bufs: Value,
    pub fault: Value,
    pub states: Vec<Value>,
}

/// Everything a kernel's nodes can call, declared in the function `jit.ctx.func`.
pub(super) fn imports(
    jit: &mut Jit,
    k: &Kernel,
    nodes: &[NodeId],
) -> Result<HashMap<&'static str, FuncRef>, NotCompilable> {
    let mut names = vec![];
    for &id in nodes {
        let f64 = k.ty(id) == ScalarType::F64;
        match k.nodes[id.index()] {
            Node::Unary(op, a) if k.ty(a).is_float() => names.extend(unary_symbol(op, f64)),
            Node::Binary(op, a, _) if k.ty(a).is_float() => names.extend(binary_symbol(op, f64)),
            Node::Load { .. } => names.push(FAULT_SYMBOL),
            _ => {}
        }
    }
    let mut refs = HashMap::new();
    for name in names {
        if refs.contains_key(name) {
            continue;
        }
        let id = jit.import(name)?;
        let r = jit.module.declare_func_in_func(id, &mut jit.ctx.func);
        refs.insert(name, r);
    }
    Ok(refs)
}

/// Lowers the nodes reachable from `roots`: uniform and per-trajectory
/// (`Lane`) nodes first, then the varying ones, each in arena order (the evaluator's order, so
/// the first out-of-bounds read recorded is the one it records). Uniform
/// nodes are the constants `uni` (computed once per launch, as the evaluator).
/// Returns each node's value.
#[allow(clippy::too_many_arguments)]
pub(super) fn lower(
    b: &mut FunctionBuilder<'_>,
    k: &Kernel,
    roots: &[NodeId],
    var: &[Variance],
    uni: &[Option<V>],
    calls: &HashMap<&'static str, FuncRef>,
    inp: &Inputs,
) -> Result<Vec<Option<Value>>, NotCompilable> {
    let nodes = k.reachable(roots);
    let mut vals: Vec<Option<Value>> = vec![None; k.nodes.len()];
    for varying in [false, true] {
        lower_some(b, k, &nodes, varying, var, uni, calls, inp, &mut vals)?;
    }
    Ok(vals)
}

/// Lowers those of `nodes` (in arena order) that are varying (`varying`) or
/// uniform and per-trajectory (`!varying`) into `vals`, which holds the values
/// of the nodes they read.
#[allow(clippy::too_many_arguments)]
pub(super) fn lower_some(
    b: &mut FunctionBuilder<'_>,
    k: &Kernel,
    nodes: &[NodeId],
    varying: bool,
    var: &[Variance],
    uni: &[Option<V>],
    calls: &HashMap<&'static str, FuncRef>,
    inp: &Inputs,
    vals: &mut [Option<Value>],
) -> Result<(), NotCompilable> {
    for &id in nodes {
        if (var[id.index()] == Variance::Varying) != varying {
            continue;
        }
        let v = match uni[id.index()] {
            Some(c) => constant(b, c),
            None => node(b, k, id, vals, calls, inp)?,
        };
        vals[id.index()] = Some(v);
    }
    Ok(())
}

/// Starts the function being built in `b`: its entry block, sealed, holding
/// the function's parameters; returns them.
pub(super) fn entry(b: &mut FunctionBuilder<'_>) -> Vec<Value> {
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    b.block_params(entry).to_vec()
}

/// A constant of an IR value.
pub(super) fn constant(b: &mut FunctionBuilder<'_>, c: V) -> Value {
    match c {
        V::F32(x) => b.ins().f32const(x),
        V::F64(x) => b.ins().f64const(x),
        V::I32(x) => b.ins().iconst(types::I32, x as u32 as i64),
        V::U32(x) => b.ins().iconst(types::I32, x as i64),
        V::Bool(x) => b.ins().iconst(types::I8, x as i64),
    }
}

fn call(b: &mut FunctionBuilder<'_>, f: FuncRef, args: &[Value]) -> Value {
    let inst = b.ins().call(f, args);
    b.inst_results(inst)[0]
}

/// One node's scalar value from its operands' (`vals`).
pub(super) fn node(
    b: &mut FunctionBuilder<'_>,
    k: &Kernel,
    id: NodeId,
    vals: &[Option<Value>],
    calls: &HashMap<&'static str, FuncRef>,
    inp: &Inputs,
) -> Result<Value, NotCompilable> {
    let g = |n: NodeId| vals[n.index()].expect("operands come first");
    let rty = k.ty(id);
    let flags = MemFlagsData::trusted();
    let no = |what: &str| Err(NotCompilable::new(&k.name, what));
    Ok(match k.nodes[id.index()] {
        Node::Const(c) => constant(b, c),
        Node::State(s) => match inp.states.get(s as usize) {
            Some(&v) => v,
            None => b
                .ins()
                .load(clif(rty), flags, inp.y, (s as i64 * size(rty)) as i32),
        },
        Node::Init(s) => b
            .ins()
            .load(clif(rty), flags, inp.y0, (s as i64 * size(rty)) as i32),
        Node::Builtin(Builtin::Time) => inp.t,
        Node::Builtin(bi @ (Builtin::Global | Builtin::Thread | Builtin::Block)) => {
            let off = match bi {
                Builtin::Global => 0,
                Builtin::Thread => 4,
                _ => 8,
            };
            b.ins().load(types::I32, flags, inp.lane, off)
        }
        Node::Builtin(bi) => return no(&format!("the launch value {bi:?} is not uniform here")),
        Node::Param(p) => return no(&format!("parameter {p} has no value")),
        Node::SharedLoad { .. } => return no("shared sub-fields (a phased field)"),
        Node::Load { buf, index, site } => {
            load(b, k, buf, g(index), k.ty(index), site, rty, calls, inp)
        }
        Node::Unary(op, a) => unary(b, op, g(a), k.ty(a), calls),
        Node::Binary(op, x, y) => binary(b, op, g(x), g(y), k.ty(x), calls),
        Node::Select(c, x, y) => b.ins().select(g(c), g(x), g(y)),
        Node::Fma(x, y, z) => {
            if rty.is_float() {
                b.ins().fma(g(x), g(y), g(z))
            } else {
                let m = b.ins().imul(g(x), g(y));
                b.ins().iadd(m, g(z))
            }
        }
        Node::Cast(to, a) => cast(b, g(a), k.ty(a), to),
    })
}

#[allow(clippy::too_many_arguments)]
fn load(
    b: &mut FunctionBuilder<'_>,
    _k: &Kernel,
    buf: u32,
    index: Value,
    ity: ScalarType,
    site: u32,
    rty: ScalarType,
    calls: &HashMap<&'static str, FuncRef>,
    inp: &Inputs,
) -> Value {
    let flags = MemFlagsData::trusted();
    let i = if ity == ScalarType::I32 {
        b.ins().sextend(types::I64, index)
    } else {
        b.ins().uextend(types::I64, index)
    };
    let entry = buf as i32 * 16;
    let base = b.ins().load(types::I64, flags, inp.bufs, entry);
    let len = b.ins().load(types::I64, flags, inp.bufs, entry + 8);
    // A negative index is a huge unsigned one: one comparison for both ends.
    let ok = b.ins().icmp(IntCC::UnsignedLessThan, i, len);
    let (inside, outside, join) = (b.create_block(), b.create_block(), b.create_block());
    b.set_cold_block(outside);
    let rt = clif(rty);
    b.append_block_param(join, rt);
    b.ins().brif(ok, inside, &[], outside, &[]);
    b.switch_to_block(inside);
    b.seal_block(inside);
    let off = b.ins().imul_imm_s(i, size(rty));
    let at = b.ins().iadd(base, off);
    let v = b.ins().load(rt, flags, at, 0);
    b.ins().jump(join, &[v.into()]);
    b.switch_to_block(outside);
    b.seal_block(outside);
    let (s, w) = (
        b.ins().iconst(types::I32, site as i64),
        b.ins().iconst(types::I32, buf as i64),
    );
    b.ins().call(calls[FAULT_SYMBOL], &[inp.fault, s, w, i]);
    // The evaluator reads zero at a faulting index.
    let zero = constant(b, V::F64(0.0).cast(rty));
    b.ins().jump(join, &[zero.into()]);
    b.switch_to_block(join);
    b.seal_block(join);
    b.block_params(join)[0]
}

fn unary(
    b: &mut FunctionBuilder<'_>,
    op: UnOp,
    a: Value,
    t: ScalarType,
    calls: &HashMap<&'static str, FuncRef>,
) -> Value {
    let f64 = t == ScalarType::F64;
    match (op, t) {
        (UnOp::Neg, t) if t.is_float() => b.ins().fneg(a),
        (UnOp::Neg, _) => b.ins().ineg(a),
        (UnOp::Not, ScalarType::Bool) => b.ins().bxor_imm_u(a, 1),
        (UnOp::Not, _) => b.ins().bnot(a),
        (UnOp::Abs, ScalarType::I32) => b.ins().iabs(a),
        (UnOp::Abs, ScalarType::U32 | ScalarType::Bool) => a,
        (UnOp::Abs, _) => b.ins().fabs(a),
        (UnOp::Sqrt, _) => b.ins().sqrt(a),
        (UnOp::Floor, _) => b.ins().floor(a),
        (op, _) => {
            let name = unary_symbol(op, f64).expect("a library function");
            call(b, calls[name], &[a])
        }
    }
}

fn binary(
    b: &mut FunctionBuilder<'_>,
    op: BinOp,
    x: Value,
    y: Value,
    t: ScalarType,
    calls: &HashMap<&'static str, FuncRef>,
) -> Value {
    use BinOp::*;
    if op.is_comparison() {
        return if t.is_float() {
            let cc = match op {
                Eq => FloatCC::Equal,
                // Rust's `!=` is true for NaN: unordered or not equal.
                Ne => FloatCC::NotEqual,
                Lt => FloatCC::LessThan,
                Le => FloatCC::LessThanOrEqual,
                Gt => FloatCC::GreaterThan,
                _ => FloatCC::GreaterThanOrEqual,
            };
            b.ins().fcmp(cc, x, y)
        } else {
            let signed = t == ScalarType::I32;
            let cc = match (op, signed) {
                (Eq, _) => IntCC::Equal,
                (Ne, _) => IntCC::NotEqual,
                (Lt, true) => IntCC::SignedLessThan,
                (Le, true) => IntCC::SignedLessThanOrEqual,
                (Gt, true) => IntCC::SignedGreaterThan,
                (Ge, true) => IntCC::SignedGreaterThanOrEqual,
                (Lt, false) => IntCC::UnsignedLessThan,
                (Le, false) => IntCC::UnsignedLessThanOrEqual,
                (Gt, false) => IntCC::UnsignedGreaterThan,
                _ => IntCC::UnsignedGreaterThanOrEqual,
            };
            b.ins().icmp(cc, x, y)
        };
    }
    if t.is_float() {
        return match op {
            Add => b.ins().fadd(x, y),
            Sub => b.ins().fsub(x, y),
            Mul => b.ins().fmul(x, y),
            Div => b.ins().fdiv(x, y),
            op => {
                let name = binary_symbol(op, t == ScalarType::F64).expect("a library function");
                call(b, calls[name], &[x, y])
            }
        };
    }
    let signed = t == ScalarType::I32;
    match op {
        Add => b.ins().iadd(x, y),
        Sub => b.ins().isub(x, y),
        Mul => b.ins().imul(x, y),
        Div | Rem => {
            // x / 0 = x and x % 0 = 0 (divide by 1); MIN / −1 wraps to MIN
            // and MIN % −1 = 0 (divide by 1 too): no trap, Rust's wrapping ops.
            let zero = b.ins().icmp_imm_u(IntCC::Equal, y, 0);
            let by_one = if signed {
                let (kmin, km1) = (
                    b.ins().iconst(types::I32, i32::MIN as u32 as i64),
                    b.ins().iconst(types::I32, u32::MAX as i64),
                );
                let min = b.ins().icmp(IntCC::Equal, x, kmin);
                let m1 = b.ins().icmp(IntCC::Equal, y, km1);
                let ovf = b.ins().band(min, m1);
                b.ins().bor(zero, ovf)
            } else {
                zero
            };
            let one = b.ins().iconst(types::I32, 1);
            let d = b.ins().select(by_one, one, y);
            match (op, signed) {
                (Div, true) => b.ins().sdiv(x, d),
                (Div, false) => b.ins().udiv(x, d),
                (_, true) => b.ins().srem(x, d),
                (_, false) => b.ins().urem(x, d),
            }
        }
        Min if signed => b.ins().smin(x, y),
        Min => b.ins().umin(x, y),
        Max if signed => b.ins().smax(x, y),
        Max => b.ins().umax(x, y),
        BitAnd | And => b.ins().band(x, y),
        BitOr | Or => b.ins().bor(x, y),
        BitXor => b.ins().bxor(x, y),
        Shl | Shr => {
            let amount = b.ins().band_imm_u(y, 31);
            match (op, signed) {
                (Shl, _) => b.ins().ishl(x, amount),
                (_, true) => b.ins().sshr(x, amount),
                (_, false) => b.ins().ushr(x, amount),
            }
        }
        Pow => unreachable!("pow is on floats (type-checked)"),
        Eq | Ne | Lt | Le | Gt | Ge => unreachable!("comparisons returned above"),
    }
}

/// `a as to` with Rust's (and [`V::cast`]'s) rules: float to integer
/// saturates with NaN → 0, `!= 0` to `bool`, `bool` as 0 or 1.
fn cast(b: &mut FunctionBuilder<'_>, a: Value, from: ScalarType, to: ScalarType) -> Value {
    use ScalarType::*;
    match (from, to) {
        (x, y) if x == y => a,
        (F32, F64) => b.ins().fpromote(types::F64, a),
        (F64, F32) => b.ins().fdemote(types::F32, a),
        (F32 | F64, I32) => b.ins().fcvt_to_sint_sat(types::I32, a),
        (F32 | F64, U32) => b.ins().fcvt_to_uint_sat(types::I32, a),
        (F32, Bool) => {
            let z = b.ins().f32const(0.0);
            b.ins().fcmp(FloatCC::NotEqual, a, z)
        }
        (F64, Bool) => {
            let z = b.ins().f64const(0.0);
            b.ins().fcmp(FloatCC::NotEqual, a, z)
        }
        (I32, F32 | F64) => b.ins().fcvt_from_sint(clif(to), a),
        (U32, F32 | F64) => b.ins().fcvt_from_uint(clif(to), a),
        (I32 | U32, I32 | U32) => a,
        (I32 | U32, Bool) => b.ins().icmp_imm_u(IntCC::NotEqual, a, 0),
        (Bool, I32 | U32) => b.ins().uextend(types::I32, a),
        (Bool, F32 | F64) => {
            let w = b.ins().uextend(types::I32, a);
            b.ins().fcvt_from_uint(clif(to), w)
        }
        _ => unreachable!("every pair of types is above"),
    }
}
