//! A proof that a kernel's fixed-size indexing stays in bounds, so that
//! naga's clamp of every such index (its `index` bounds-check policy:
//! vectors, matrices and fixed-size arrays, e.g. shared and local memory)
//! can be left out of the SPIR-V. The PTX kernels clamp their own indices
//! where the emitter cannot show them in range (`rd_s`, `wr_l`, …) and
//! index the padded shared tiles by `min(base, last) + k` once per base;
//! naga's clamp on top of those cost the H100 4–7 ms of `matmul_tiled`
//! (`benchmarks/results/gpu-2026-12-06-s26/call2-h100`).
//!
//! The proof is an upper-bound analysis of `u32` index expressions: a
//! literal is its value, `min`/`&` the lesser bound, `+`/`*` the sum or
//! product when that cannot wrap, `>>` and `/` no more than their left
//! side, `%` by a literal less than it, `select` the greater bound, and a
//! function's argument the greatest bound any call of it passes (naga
//! orders callees before callers, so one pass from the entry points down
//! sees every call first). Anything else (a loaded variable, a
//! subtraction, a call's result) is unbounded. An index is proven when its
//! bound is below the length; a signed index only as a literal. One
//! unproven index keeps naga's clamps for the whole module.

use naga::{
    ArraySize, BinaryOperator, Block, Expression, Function, Handle, Literal, MathFunction, Module,
    Scalar, ScalarKind, Statement, TypeInner,
};
use std::collections::HashMap;

/// The largest value a `u32` can hold, the bound of an unknown one.
const ANY: u64 = u32::MAX as u64;

/// The verdict of [`unproven_index`] on WGSL source: `Ok(None)` where every
/// fixed-size index is proven in bounds (the kernel compiles without naga's
/// index clamps wherever VGPU writes its SPIR-V), `Ok(Some(where))` for the
/// first that is not, `Err` with naga's message where the source does not
/// parse or validate.
pub fn unproven_wgsl_index(wgsl: &str) -> Result<Option<String>, String> {
    let (module, info) = super::naga_module::validated(wgsl, naga::valid::Capabilities::all())?;
    Ok(unproven_index(&module, &info))
}

/// `None` where every fixed-size index of the module's entry points and the
/// functions they call is proven in bounds, else where the first one that
/// is not is (function and expression), for the log and the tests.
pub(super) fn unproven_index(module: &Module, info: &naga::valid::ModuleInfo) -> Option<String> {
    // The greatest bound passed to each function's arguments so far.
    let mut args: HashMap<Handle<Function>, Vec<u64>> = HashMap::new();
    for (i, ep) in module.entry_points.iter().enumerate() {
        let fi = info.get_entry_point(i);
        let bounds = vec![ANY; ep.function.arguments.len()];
        if let Some(e) = check(module, &ep.function, fi, &bounds, &mut args) {
            return Some(format!("entry point `{}`: {e}", ep.name));
        }
    }
    for (h, f) in module.functions.iter().rev() {
        // A function no entry point reaches keeps bounds of 0: it never runs.
        let bounds = args
            .get(&h)
            .cloned()
            .unwrap_or_else(|| vec![0; f.arguments.len()]);
        if let Some(e) = check(module, f, &info[h], &bounds, &mut args) {
            let name = f.name.as_deref().unwrap_or("?");
            return Some(format!("function `{name}`: {e}"));
        }
    }
    None
}

/// Checks `f`'s indices with its arguments bounded by `bounds`, and raises
/// the bounds of the functions it calls to what it passes them.
fn check(
    module: &Module,
    f: &Function,
    fi: &naga::valid::FunctionInfo,
    bounds: &[u64],
    args: &mut HashMap<Handle<Function>, Vec<u64>>,
) -> Option<String> {
    let mut b = Bounds {
        module,
        f,
        fi,
        args: bounds,
        memo: HashMap::new(),
    };
    for (h, e) in f.expressions.iter() {
        if let Expression::Access { base, index } = *e {
            let Some(len) = indexable_len(module, fi[base].ty.inner_with(&module.types)) else {
                continue;
            };
            if !b.below(index, len) {
                return Some(format!(
                    "index expression {} of a length-{len} access not proven below it",
                    h.index()
                ));
            }
        }
    }
    let mut calls = Vec::new();
    calls_in(&f.body, &mut calls);
    for (callee, arguments) in calls {
        let callee_args = &module.functions[callee].arguments;
        let entry = args
            .entry(callee)
            .or_insert_with(|| vec![0; callee_args.len()]);
        for (j, &a) in arguments.iter().enumerate() {
            let v = if b.is_u32(a) { b.ub(a) } else { ANY };
            entry[j] = entry[j].max(v);
        }
    }
    None
}

/// The calls anywhere in `block`: callee and argument expressions.
fn calls_in(block: &Block, out: &mut Vec<(Handle<Function>, Vec<Handle<Expression>>)>) {
    for s in block.iter() {
        match s {
            Statement::Call {
                function,
                arguments,
                ..
            } => out.push((*function, arguments.clone())),
            Statement::Block(b) => calls_in(b, out),
            Statement::If { accept, reject, .. } => {
                calls_in(accept, out);
                calls_in(reject, out);
            }
            Statement::Switch { cases, .. } => cases.iter().for_each(|c| calls_in(&c.body, out)),
            Statement::Loop {
                body, continuing, ..
            } => {
                calls_in(body, out);
                calls_in(continuing, out);
            }
            _ => {}
        }
    }
}

/// The number of elements an index into a value or pointer of type `t`
/// chooses among, where fixed (runtime-sized arrays are the buffer policy's).
fn indexable_len(module: &Module, t: &TypeInner) -> Option<u64> {
    match *t {
        TypeInner::Pointer { base, .. } => indexable_len(module, &module.types[base].inner),
        TypeInner::ValuePointer { size, .. } => size.map(|s| s as u64),
        TypeInner::Vector { size, .. } => Some(size as u64),
        TypeInner::Matrix { columns, .. } => Some(columns as u64),
        TypeInner::Array {
            size: ArraySize::Constant(n),
            ..
        } => Some(n.get() as u64),
        _ => None,
    }
}

/// Upper bounds of one function's `u32` expressions.
struct Bounds<'a> {
    module: &'a Module,
    f: &'a Function,
    fi: &'a naga::valid::FunctionInfo,
    args: &'a [u64],
    memo: HashMap<Handle<Expression>, u64>,
}

impl Bounds<'_> {
    /// Whether expression `e` is a `u32` scalar.
    fn is_u32(&self, e: Handle<Expression>) -> bool {
        matches!(
            *self.fi[e].ty.inner_with(&self.module.types),
            TypeInner::Scalar(Scalar {
                kind: ScalarKind::Uint,
                width: 4
            })
        )
    }

    /// Whether index `e` is proven below `len`.
    fn below(&mut self, e: Handle<Expression>, len: u64) -> bool {
        if self.is_u32(e) {
            return self.ub(e) < len;
        }
        matches!(self.literal(e), Some(Literal::I32(v)) if v >= 0 && (v as u64) < len)
    }

    /// `e`'s value where it is a literal, directly or as a named constant.
    fn literal(&self, e: Handle<Expression>) -> Option<Literal> {
        match self.f.expressions[e] {
            Expression::Literal(l) => Some(l),
            Expression::Constant(c) => {
                let init = self.module.constants[c].init;
                match self.module.global_expressions[init] {
                    Expression::Literal(l) => Some(l),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// A `u32` literal's value.
    fn lit_u32(&self, e: Handle<Expression>) -> Option<u64> {
        match self.literal(e) {
            Some(Literal::U32(v)) => Some(v as u64),
            _ => None,
        }
    }

    /// An upper bound of `u32` expression `e`.
    fn ub(&mut self, e: Handle<Expression>) -> u64 {
        if let Some(&v) = self.memo.get(&e) {
            return v;
        }
        let v = self.ub_of(e).min(ANY);
        self.memo.insert(e, v);
        v
    }

    fn ub_of(&mut self, e: Handle<Expression>) -> u64 {
        if let Some(v) = self.lit_u32(e) {
            return v;
        }
        match self.f.expressions[e] {
            Expression::ZeroValue(_) => 0,
            Expression::FunctionArgument(j) => self.args.get(j as usize).copied().unwrap_or(ANY),
            Expression::Select { accept, reject, .. } => self.ub(accept).max(self.ub(reject)),
            Expression::Math {
                fun: MathFunction::Min,
                arg,
                arg1: Some(arg1),
                ..
            } => self.ub(arg).min(self.ub(arg1)),
            Expression::Math {
                fun: MathFunction::Max,
                arg,
                arg1: Some(arg1),
                ..
            } => self.ub(arg).max(self.ub(arg1)),
            Expression::Binary { op, left, right } if self.is_u32(left) && self.is_u32(right) => {
                let (l, r) = (self.ub(left), self.ub(right));
                let k = self.lit_u32(right);
                match op {
                    BinaryOperator::Add => no_wrap(l + r),
                    BinaryOperator::Multiply => no_wrap(l.saturating_mul(r)),
                    BinaryOperator::Divide => l,
                    BinaryOperator::Modulo => match k {
                        Some(k) if k > 0 => l.min(k - 1),
                        _ => l,
                    },
                    BinaryOperator::And => l.min(r),
                    BinaryOperator::InclusiveOr | BinaryOperator::ExclusiveOr => smear(l.max(r)),
                    BinaryOperator::ShiftRight => match k {
                        Some(k) if k < 32 => l >> k,
                        _ => l,
                    },
                    BinaryOperator::ShiftLeft => match k {
                        Some(k) if k < 32 => no_wrap(l << k),
                        _ => ANY,
                    },
                    _ => ANY,
                }
            }
            _ => ANY,
        }
    }
}

/// `v` where it fits a `u32`, else unbounded (the operation may wrap).
fn no_wrap(v: u64) -> u64 {
    if v > ANY {
        ANY
    } else {
        v
    }
}

/// The largest value with no bit above `v`'s highest.
fn smear(v: u64) -> u64 {
    if v == 0 {
        0
    } else {
        (1u64 << (64 - v.leading_zeros())) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verdict on WGSL `src`, which must parse and validate.
    fn verdict(src: &str) -> Option<String> {
        unproven_wgsl_index(src).unwrap()
    }

    /// A kernel around `body` (in `main`, with `x` an unknown u32) and the
    /// functions `fns`, over a workgroup array `a` of 8 words.
    fn kernel(fns: &str, body: &str) -> String {
        format!(
            "var<workgroup> a: array<u32, 8>;
@group(0) @binding(0) var<storage, read_write> b: array<u32>;
{fns}
@compute @workgroup_size(1) fn main(@builtin(local_invocation_index) x: u32) {{
  {body}
}}"
        )
    }

    #[test]
    fn clamped_masked_and_shifted_indices_are_proven() {
        for body in [
            "b[0] = a[min(x, 7u)];",
            "b[0] = a[x & 7u];",
            "b[0] = a[min(x, 3u) + 4u];",
            "b[0] = a[(x & 31u) >> 2u];",
            "b[0] = a[x % 8u];",
            "b[0] = a[select(2u, 7u, x > 3u)];",
            "b[0] = a[(x & 1u) * 3u + 4u];",
            "b[0] = a[5];",
            "let v = vec4<u32>(x); b[0] = v[x & 3u];",
        ] {
            assert_eq!(verdict(&kernel("", body)), None, "{body}");
        }
    }

    #[test]
    fn indices_that_may_reach_the_length_are_not() {
        for body in [
            "b[0] = a[x];",
            "b[0] = a[min(x, 8u)];",
            "b[0] = a[min(x, 3u) + 5u];",
            "b[0] = a[x & 15u];",
            "b[0] = a[(x & 7u) - 1u];",
            "b[0] = a[(x & 3u) << 2u];",
            "b[0] = a[x % 9u];",
            "b[0] = a[(x & 7u) | 8u];",
            "var i = 0u; b[0] = a[i];",
            "let v = vec4<u32>(x); b[0] = v[x & 7u];",
            "b[0] = a[i32(x & 7u)];",
        ] {
            assert!(verdict(&kernel("", body)).is_some(), "{body}");
        }
    }

    #[test]
    fn a_functions_index_is_bounded_by_every_call_of_it() {
        let f = "fn rd(i: u32) -> u32 { return a[i]; }
fn rd2(i: u32) -> u32 { return rd(i + 1u); }";
        assert_eq!(
            verdict(&kernel(f, "b[0] = rd(min(x, 7u)) + rd2(x & 3u);")),
            None
        );
        // One call that may pass 8 is enough to refuse.
        assert!(verdict(&kernel(f, "b[0] = rd(min(x, 7u)) + rd2(x & 7u);")).is_some());
        assert!(verdict(&kernel(f, "b[0] = rd(min(x, 7u)) + rd(x);")).is_some());
        // A function no entry point calls never runs.
        assert_eq!(verdict(&kernel(f, "b[0] = 1u;")), None);
    }

    #[test]
    fn runtime_sized_arrays_are_left_to_the_buffer_policy() {
        assert_eq!(verdict(&kernel("", "b[x] = 1u;")), None);
    }
}
