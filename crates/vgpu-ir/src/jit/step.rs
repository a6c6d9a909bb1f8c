//! A whole step attempt of an explicit Runge–Kutta pair as one native
//! function (issue 13, the adaptive CPU path): every stage of the pair with
//! the kernel's rates inlined, the stage combinations, the new state, the
//! embedded error estimate and its scaled norm, the state kept in registers
//! from the first stage to the norm. The adaptive driver calls it through
//! [`vgpu_field::adaptive::OdeRhs::erk_attempt`].
//!
//! The arithmetic is the driver's own, operation for operation (documented
//! in `vgpu_field::adaptive::erk` and [`vgpu_field::adaptive::error_norm`]),
//! the coefficients the same `f64` values rounded to the state type, zero
//! coefficients included; no operation is contracted or reassociated. So the
//! results are the bits of the stage-by-stage path (native or evaluator).
//!
//! Per-trajectory values (a buffer read at `i`, `init(x)`) are computed once
//! per attempt rather than once per stage: they are the same at every stage,
//! and the first out-of-bounds read recorded is the same one.

use super::code::{BufRef, Compiled, FaultRec, Jit};
use super::lower::{self, clif, size, Inputs};
use super::scalar::compilable;
use super::NotCompilable;
use crate::args::Args;
use crate::eval::IrFloat;
use crate::eval::{self, Dims, Fault};
use crate::kernel::{Kernel, NodeId, Update, Variance};
use crate::types::{ScalarType, Value as V};
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, UserFuncName, Value};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::Module;
use vgpu_field::adaptive::rhs::{ErkAttempt, TableauId};
use vgpu_field::adaptive::{bs3, dp5, tsit5, vern7, AdaptiveMethod, ErkTableau};

/// The native signature: `t`, `h`, then pointers to the state `y`, the
/// initial state, the stages (`S` rows of `D`, row 0 read, the others
/// written), `atol`, `rtol`, the new state (written), the indices
/// `[i, tid, bid, 0]`, the buffer table and the fault record; returns the
/// error norm.
type StepFn<T> = unsafe extern "C" fn(
    T,
    T,
    *const T,
    *const T,
    *mut T,
    *const T,
    *const T,
    *mut T,
    *const [u32; 4],
    *const BufRef,
    *mut FaultRec,
) -> T;

/// The most nodes a whole step may lower (varying nodes of the rates times
/// the stages after the first): beyond it, compile time and code size grow
/// past what one step gains, and the stages run one native call each.
pub(crate) const MAX_STEP_NODES: usize = 1 << 14;

/// An explicit pair's coefficients in `f64`, as the driver's core reads them.
struct Pair {
    id: TableauId,
    a: Vec<Vec<f64>>,
    b: Vec<f64>,
    /// `b − b̂`, computed in `f64` as [`ErkTableau::b_tilde`].
    bt: Vec<f64>,
    c: Vec<f64>,
    fsal: bool,
}

impl Pair {
    fn of<const S: usize>(tab: &ErkTableau<S>) -> Pair {
        Pair {
            id: TableauId::of(tab),
            a: tab.a.iter().map(|r| r.to_vec()).collect(),
            b: tab.b.to_vec(),
            bt: tab.b_tilde().to_vec(),
            c: tab.c.to_vec(),
            fsal: tab.fsal,
        }
    }

    /// The pair of an explicit built-in method (`None` for the stiff one).
    fn of_method(m: AdaptiveMethod) -> Option<Pair> {
        match m {
            AdaptiveMethod::Tsit5 => Some(Pair::of(&tsit5())),
            AdaptiveMethod::Dp5 => Some(Pair::of(&dp5())),
            AdaptiveMethod::Bs3 => Some(Pair::of(&bs3())),
            AdaptiveMethod::Vern7 => Some(Pair::of(&vern7())),
            _ => None,
        }
    }

    fn stages(&self) -> usize {
        self.c.len()
    }
}

/// A kernel's whole step attempt of one explicit pair, as native code.
pub(crate) struct StepKernel<'a> {
    native: Compiled<'a>,
    id: TableauId,
    ty: ScalarType,
    dim: usize,
    stages: usize,
}

impl<'a> StepKernel<'a> {
    /// Compiles the whole step attempt of `method`'s pair for `k` (unphased,
    /// float states of one type, one rate per state) with `args` and the
    /// uniform launch values of `dims` baked in.
    ///
    /// # Errors
    /// [`NotCompilable`] naming the reason: what [`compilable`] refuses, a
    /// method that is not an explicit pair, states of two float types, a
    /// kernel whose updates are not one per state, a step of more than
    /// [`MAX_STEP_NODES`] nodes.
    pub(crate) fn compile(
        k: &Kernel,
        args: &'a Args,
        dims: Dims,
        method: AdaptiveMethod,
    ) -> Result<StepKernel<'a>, NotCompilable> {
        compilable(k)?;
        let pair = Pair::of_method(method).ok_or_else(|| {
            NotCompilable::new(
                &k.name,
                format!("{method} is not an explicit pair (its stages run one call each)"),
            )
        })?;
        let ty = k.float_type();
        if k.states.iter().any(|s| s.ty != ty) {
            return Err(NotCompilable::new(&k.name, "states of two float types"));
        }
        let dim = k.states.len();
        if k.phases[0].updates.len() != dim {
            return Err(NotCompilable::new(
                &k.name,
                format!("{} updates for {dim} states", k.phases[0].updates.len()),
            ));
        }
        let var = k.variance();
        let reach = k.reachable(&k.phase_roots(&k.phases[0]));
        let per_stage = reach
            .iter()
            .filter(|n| var[n.index()] == Variance::Varying)
            .count();
        let nodes = per_stage * (pair.stages() - 1);
        if nodes > MAX_STEP_NODES {
            return Err(NotCompilable::new(
                &k.name,
                format!(
                    "a whole {method} step would lower {nodes} nodes ({per_stage} per stage), \
                     more than {MAX_STEP_NODES}; its stages run one native call each"
                ),
            ));
        }
        let mut jit = Jit::new(&k.name)?;
        let id = build(&mut jit, k, args, dims, &pair, (&var, &reach))?;
        let (code, ptrs) = jit.finish(&[id])?;
        Ok(StepKernel {
            native: Compiled::new(code, ptrs[0], args, k.params.len()),
            id: pair.id,
            ty,
            dim,
            stages: pair.stages(),
        })
    }

    /// The pair this step was compiled for.
    #[inline]
    pub(crate) fn tableau(&self) -> TableauId {
        self.id
    }

    /// Attempts `step` for the trajectory of initial state `y0` and indices
    /// `ids = [i, tid, bid, 0]`: writes its stages `1..S` and new state,
    /// returns the error norm and the first out-of-bounds read (as the
    /// evaluator's [`Fault`] of lane 0).
    ///
    /// # Panics
    /// If `T` or `D` is not the kernel's, or `step.k` has fewer rows than the
    /// pair has stages.
    #[inline]
    pub(crate) fn call<T: IrFloat, const D: usize>(
        &self,
        step: &mut ErkAttempt<'_, T, D>,
        y0: &[T; D],
        ids: [u32; 4],
    ) -> (T, Option<Fault>) {
        assert!(
            T::TYPE == self.ty && D == self.dim && step.k.len() >= self.stages,
            "native step called with the wrong shapes"
        );
        let mut rec = FaultRec::default();
        // SAFETY: the code was compiled with this signature for `T` (checked
        // above); it reads `D` values of `y`, `y0`, `atol`, `rtol` and of
        // row 0 of `k`, writes rows `1..S` of `k` (at least `S` rows, checked
        // above) and `D` values of `y_new`, reads `ids`, the buffer table of
        // one entry per parameter (each within its length: the code checks
        // every index) and writes only `rec`.
        let err = unsafe {
            let f = std::mem::transmute::<*const u8, StepFn<T>>(self.native.code);
            f(
                step.t,
                step.h,
                step.y.as_ptr(),
                y0.as_ptr(),
                step.k.as_mut_ptr().cast::<T>(),
                step.atol.as_ptr(),
                step.rtol.as_ptr(),
                step.y_new.as_mut_ptr(),
                &ids,
                self.native.bufs.as_ptr(),
                &mut rec,
            )
        };
        (err, rec.fault(&self.native.lens))
    }
}

/// A float constant of type `ty` from its `f64` value (rounded as `as`).
fn float(b: &mut FunctionBuilder<'_>, ty: ScalarType, v: f64) -> Value {
    lower::constant(b, V::F64(v).cast(ty))
}

/// `Σ_j w_j·k_j[d]` summed left to right from `w_0·k_0[d]`, every weight
/// included (the driver's order).
fn weighted(
    b: &mut FunctionBuilder<'_>,
    ty: ScalarType,
    w: &[f64],
    ks: &[Vec<Value>],
    d: usize,
) -> Value {
    let mut s = None;
    for (j, &wj) in w.iter().enumerate() {
        let c = float(b, ty, wj);
        let term = b.ins().fmul(c, ks[j][d]);
        s = Some(match s {
            None => term,
            Some(acc) => b.ins().fadd(acc, term),
        });
    }
    s.expect("a pair has stages")
}

fn build(
    jit: &mut Jit,
    k: &Kernel,
    args: &Args,
    dims: Dims,
    pair: &Pair,
    (var, reach): (&[Variance], &[NodeId]),
) -> Result<cranelift_module::FuncId, NotCompilable> {
    let uni = eval::uniform_values(k, reach, var, args, dims)
        .map_err(|e| NotCompilable::new(&k.name, e.to_string()))?;
    let ty = k.float_type();
    let (ft, ptr) = (clif(ty), types::I64);
    let sig = jit.signature(
        &[ft, ft, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr],
        Some(ft),
    );
    let id = jit.declare("erk_step", &sig)?;
    jit.ctx.func.signature = sig;
    jit.ctx.func.name = UserFuncName::user(0, id.as_u32());
    let calls = lower::imports(jit, k, reach)?;
    let config = jit.module.target_config();
    let (dim, stages, sz) = (k.states.len(), pair.stages(), size(ty));
    let updates = &k.phases[0].updates;
    {
        let mut b = FunctionBuilder::new(&mut jit.ctx.func, &mut jit.fctx);
        let p = lower::entry(&mut b);
        let (t, h, y, kp, atol, rtol, y_new) = (p[0], p[1], p[2], p[4], p[5], p[6], p[7]);
        let flags = MemFlagsData::trusted();
        let at = |d: usize| (d as i64 * sz) as i32;
        let inputs = |t: Value, states: Vec<Value>| Inputs {
            t,
            y,
            y0: p[3],
            lane: p[8],
            bufs: p[9],
            fault: p[10],
            states,
        };
        let ys: Vec<Value> = (0..dim)
            .map(|d| b.ins().load(ft, flags, y, at(d)))
            .collect();
        let k0: Vec<Value> = (0..dim)
            .map(|d| b.ins().load(ft, flags, kp, at(d)))
            .collect();
        // Uniform and per-trajectory nodes once; the varying ones per stage.
        let mut base = vec![None; k.nodes.len()];
        let once = inputs(t, ys.clone());
        lower::lower_some(&mut b, k, reach, false, var, &uni, &calls, &once, &mut base)?;
        let mut ks = vec![k0];
        let mut tmp = ys.clone();
        for i in 1..stages {
            for (d, slot) in tmp.iter_mut().enumerate() {
                let s = weighted(&mut b, ty, &pair.a[i][..i], &ks, d);
                let hs = b.ins().fmul(h, s);
                *slot = b.ins().fadd(ys[d], hs);
            }
            let ci = float(&mut b, ty, pair.c[i]);
            let chi = b.ins().fmul(ci, h);
            let ti = b.ins().fadd(t, chi);
            let mut vals = base.clone();
            let inp = inputs(ti, tmp.clone());
            lower::lower_some(&mut b, k, reach, true, var, &uni, &calls, &inp, &mut vals)?;
            let mut row = Vec::with_capacity(dim);
            for (d, u) in updates.iter().enumerate() {
                let v = match u {
                    Update::Rate(n) => vals[n.index()].expect("roots are lowered"),
                    _ => float(&mut b, ty, 0.0),
                };
                b.ins().store(flags, v, kp, at(i * dim + d));
                row.push(v);
            }
            ks.push(row);
        }
        let yn: Vec<Value> = if pair.fsal {
            tmp
        } else {
            (0..dim)
                .map(|d| {
                    let s = weighted(&mut b, ty, &pair.b, &ks, d);
                    let hs = b.ins().fmul(h, s);
                    b.ins().fadd(ys[d], hs)
                })
                .collect()
        };
        let mut acc = float(&mut b, ty, 0.0);
        for d in 0..dim {
            b.ins().store(flags, yn[d], y_new, at(d));
            let s = weighted(&mut b, ty, &pair.bt, &ks, d);
            let e = b.ins().fmul(h, s);
            let (u, v) = (b.ins().fabs(ys[d]), b.ins().fabs(yn[d]));
            let gt = b.ins().fcmp(FloatCC::GreaterThan, u, v);
            let m = b.ins().select(gt, u, v);
            let (ad, rd) = (
                b.ins().load(ft, flags, atol, at(d)),
                b.ins().load(ft, flags, rtol, at(d)),
            );
            let rm = b.ins().fmul(rd, m);
            let sc = b.ins().fadd(ad, rm);
            let r = b.ins().fdiv(e, sc);
            let rr = b.ins().fmul(r, r);
            acc = b.ins().fadd(acc, rr);
        }
        let n = float(&mut b, ty, dim as f64);
        let mean = b.ins().fdiv(acc, n);
        let err = b.ins().sqrt(mean);
        b.ins().return_(&[err]);
        b.seal_all_blocks();
        b.finalize(config);
    }
    jit.define(id)?;
    Ok(id)
}
