//! A whole step attempt of an explicit Runge–Kutta pair as one native
//! function (issue 13, the adaptive CPU path): every stage of the pair with
//! the kernel's rates inlined, the stage combinations, the new state, the
//! embedded error estimate and its scaled norm, the state kept in registers
//! from the first stage to the norm. The adaptive driver calls it through
//! [`vgpu_field::adaptive::OdeRhs::erk_attempt`]. A second function makes
//! the attempts of [`STEP_LANES`] trajectories at once, their stages
//! interleaved (one trajectory's step is a chain of dependent operations;
//! independent chains side by side keep the core busy), called through
//! [`vgpu_field::adaptive::OdeRhs::erk_attempt_lanes`]. The stage
//! combinations, the new state and the error terms are computed as
//! `f32x4`/`f64x2` vectors over the state's components.
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
use cranelift_codegen::ir::{types, Endianness, InstBuilder, MemFlagsData, UserFuncName, Value};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::Module;
use vgpu_field::adaptive::rhs::{ErkAttempt, ErkLane, TableauId, ERK_LANES};
use vgpu_field::adaptive::{bs3, dp5, tsit5, vern7, AdaptiveMethod, ErkTableau};

/// One trajectory's step attempt as the native function reads it: pointers
/// to its state `y`, its initial state, its stages (`S` rows of `D`, row 0
/// read, the others written) and its new state (written), its indices
/// `[i, tid, bid, 0]`, its fault record, `t` and `h`, and the error norm
/// (written).
#[repr(C)]
struct LaneArgs<T> {
    y: *const T,
    y0: *const T,
    k: *mut T,
    y_new: *mut T,
    ids: [u32; 4],
    fault: FaultRec,
    t: T,
    h: T,
    err: T,
}

/// Byte offsets of [`LaneArgs`]'s fields, and its size, for `T`.
struct LaneLayout {
    y: i32,
    y0: i32,
    k: i32,
    y_new: i32,
    ids: i32,
    fault: i32,
    t: i32,
    h: i32,
    err: i32,
    size: i64,
}

impl LaneLayout {
    fn of<T>() -> LaneLayout {
        use std::mem::offset_of;
        let o = |x: usize| x as i32;
        LaneLayout {
            y: o(offset_of!(LaneArgs<T>, y)),
            y0: o(offset_of!(LaneArgs<T>, y0)),
            k: o(offset_of!(LaneArgs<T>, k)),
            y_new: o(offset_of!(LaneArgs<T>, y_new)),
            ids: o(offset_of!(LaneArgs<T>, ids)),
            fault: o(offset_of!(LaneArgs<T>, fault)),
            t: o(offset_of!(LaneArgs<T>, t)),
            h: o(offset_of!(LaneArgs<T>, h)),
            err: o(offset_of!(LaneArgs<T>, err)),
            size: std::mem::size_of::<LaneArgs<T>>() as i64,
        }
    }
}

/// The native signature: the lanes' records ([`LaneArgs`], one per lane),
/// `atol`, `rtol` and the buffer table.
type StepFn<T> = unsafe extern "C" fn(*mut LaneArgs<T>, *const T, *const T, *const BufRef);

/// Trajectories whose step attempts the lanes function makes at once, their
/// stages interleaved (the driver's [`ERK_LANES`]).
pub(crate) const STEP_LANES: usize = ERK_LANES;

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
    /// One trajectory's attempt.
    native: Compiled<'a>,
    /// [`STEP_LANES`] trajectories' attempts, interleaved.
    lanes: Compiled<'a>,
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
        let one = build(&mut jit, k, args, dims, &pair, (&var, &reach), 1)?;
        let lanes = build(&mut jit, k, args, dims, &pair, (&var, &reach), STEP_LANES)?;
        let (code, ptrs) = jit.finish(&[one, lanes])?;
        Ok(StepKernel {
            native: Compiled::new(code.clone(), ptrs[0], args, k.params.len()),
            lanes: Compiled::new(code, ptrs[1], args, k.params.len()),
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
        let mut out = [(T::ZERO, None)];
        self.run(&self.native, &mut [step], &[y0], &[ids], &mut out);
        out[0]
    }

    /// [`StepKernel::call`] for [`STEP_LANES`] trajectories at once, their
    /// stages interleaved: writes each lane's error norm and returns each
    /// lane's first out-of-bounds read; `ids[l]` are lane `l`'s indices.
    ///
    /// # Panics
    /// As [`StepKernel::call`].
    #[inline]
    pub(crate) fn call_lanes<T: IrFloat, const D: usize>(
        &self,
        lanes: &mut [ErkLane<'_, '_, T, D>; STEP_LANES],
        ids: &[[u32; 4]; STEP_LANES],
    ) -> [Option<Fault>; STEP_LANES] {
        let y0 = lanes.each_ref().map(|l| l.traj.y0);
        let mut out = [(T::ZERO, None); STEP_LANES];
        let mut steps = lanes.each_mut().map(|l| &mut l.step);
        self.run(&self.lanes, &mut steps, &y0, ids, &mut out);
        for (l, o) in lanes.iter_mut().zip(&out) {
            l.err = o.0;
        }
        out.map(|o| o.1)
    }

    fn run<T: IrFloat, const D: usize>(
        &self,
        f: &Compiled<'_>,
        steps: &mut [&mut ErkAttempt<'_, T, D>],
        y0: &[&[T; D]],
        ids: &[[u32; 4]],
        out: &mut [(T, Option<Fault>)],
    ) {
        let n = steps.len();
        assert!(
            T::TYPE == self.ty
                && D == self.dim
                && y0.len() == n
                && ids.len() == n
                && out.len() == n
                && steps.iter().all(|s| s.k.len() >= self.stages),
            "native step called with the wrong shapes"
        );
        let (atol, rtol) = (steps[0].atol.as_ptr(), steps[0].rtol.as_ptr());
        assert!(
            steps
                .iter()
                .all(|s| s.atol.as_ptr() == atol && s.rtol.as_ptr() == rtol),
            "the lanes of one call share their tolerances"
        );
        let mut recs: [LaneArgs<T>; STEP_LANES] = std::array::from_fn(|l| {
            let s = &mut **steps.get_mut(l.min(n - 1)).expect("a lane");
            LaneArgs {
                y: s.y.as_ptr(),
                y0: y0[l.min(n - 1)].as_ptr(),
                k: s.k.as_mut_ptr().cast::<T>(),
                y_new: s.y_new.as_mut_ptr(),
                ids: ids[l.min(n - 1)],
                fault: FaultRec::default(),
                t: s.t,
                h: s.h,
                err: T::ZERO,
            }
        });
        // SAFETY: the code was compiled with this signature for `T` (checked
        // above) and for `n` lanes (`f` is the function of `n` lanes); lane
        // `l` reads `D` values of its `y`, `y0`, row 0 of its `k`, `atol`
        // and `rtol`, writes rows `1..S` of its `k` (at least `S` rows,
        // checked above) and `D` values of its `y_new`, reads the buffer
        // table of one entry per parameter (each within its length: the
        // code checks every index) and writes only its record.
        unsafe {
            let fun = std::mem::transmute::<*const u8, StepFn<T>>(f.code);
            fun(recs.as_mut_ptr(), atol, rtol, f.bufs.as_ptr());
        }
        for (o, r) in out.iter_mut().zip(&recs) {
            *o = (r.err, r.fault.fault(&f.lens));
        }
    }
}

/// A float constant of type `ty` from its `f64` value (rounded as `as`).
fn float(b: &mut FunctionBuilder<'_>, ty: ScalarType, v: f64) -> Value {
    lower::constant(b, V::F64(v).cast(ty))
}

/// The state-sized vectors of a step: a state of `D` values is
/// `⌈D / W⌉` vectors of `W` lanes (`f32x4`, `f64x2`), the last one padded
/// with copies of the state's last value. The stage combinations, the new
/// state and the error norm's per-component terms are computed a vector at a
/// time, each lane rounded exactly as the scalar operation; the rates are
/// lowered on scalars taken out of the vectors.
struct Rows {
    ty: ScalarType,
    vty: types::Type,
    width: usize,
    dim: usize,
}

impl Rows {
    fn chunks(&self) -> usize {
        self.dim.div_ceil(self.width)
    }

    /// `xs` (one scalar per component) as vectors.
    fn pack(&self, b: &mut FunctionBuilder<'_>, xs: &[Value]) -> Vec<Value> {
        xs.chunks(self.width)
            .map(|c| {
                let mut v = b.ins().splat(self.vty, c[c.len() - 1]);
                for (j, &x) in c[..c.len() - 1].iter().enumerate() {
                    v = b.ins().insertlane(v, x, j as u8);
                }
                v
            })
            .collect()
    }

    /// The components of `vs` as scalars.
    fn unpack(&self, b: &mut FunctionBuilder<'_>, vs: &[Value]) -> Vec<Value> {
        (0..self.dim)
            .map(|d| {
                b.ins()
                    .extractlane(vs[d / self.width], (d % self.width) as u8)
            })
            .collect()
    }

    /// A vector of `v` (rounded to the state type) in every lane.
    fn constant(&self, b: &mut FunctionBuilder<'_>, v: f64) -> Value {
        let one = match V::F64(v).cast(self.ty) {
            V::F32(x) => x.to_le_bytes().to_vec(),
            other => other.as_f64().to_le_bytes().to_vec(),
        };
        let bytes: Vec<u8> = one.repeat(self.width);
        let c = b.func.dfg.constants.insert(bytes.into());
        b.ins().vconst(self.vty, c)
    }

    /// `Σ_j w_j·k_j` summed left to right from `w_0·k_0`, every weight
    /// included (the driver's order), for chunk `c`.
    fn weighted(
        &self,
        b: &mut FunctionBuilder<'_>,
        w: &[f64],
        ks: &[Vec<Value>],
        c: usize,
    ) -> Value {
        let mut s = None;
        for (j, &wj) in w.iter().enumerate() {
            let cv = self.constant(b, wj);
            let term = b.ins().fmul(cv, ks[j][c]);
            s = Some(match s {
                None => term,
                Some(acc) => b.ins().fadd(acc, term),
            });
        }
        s.expect("a pair has stages")
    }

    /// `y + h·Σ_j w_j·k_j`, chunk by chunk.
    fn combine(
        &self,
        b: &mut FunctionBuilder<'_>,
        y: &[Value],
        hv: Value,
        w: &[f64],
        ks: &[Vec<Value>],
    ) -> Vec<Value> {
        (0..self.chunks())
            .map(|c| {
                let s = self.weighted(b, w, ks, c);
                let hs = b.ins().fmul(hv, s);
                b.ins().fadd(y[c], hs)
            })
            .collect()
    }
}

/// One lane's values while its step is lowered.
struct Lane {
    rec: Value,
    t: Value,
    h: Value,
    hv: Value,
    kp: Value,
    yv: Vec<Value>,
    base: Vec<Option<Value>>,
    inputs: Inputs,
    ks: Vec<Vec<Value>>,
    tmp: (Vec<Value>, Vec<Value>),
}

/// Declares and defines the step function of `lanes` trajectories (see
/// [`StepFn`]): lane by lane within each stage, so that the lanes' chains of
/// dependent operations sit side by side.
fn build(
    jit: &mut Jit,
    k: &Kernel,
    args: &Args,
    dims: Dims,
    pair: &Pair,
    (var, reach): (&[Variance], &[NodeId]),
    lanes: usize,
) -> Result<cranelift_module::FuncId, NotCompilable> {
    let uni = eval::uniform_values(k, reach, var, args, dims)
        .map_err(|e| NotCompilable::new(&k.name, e.to_string()))?;
    let ty = k.float_type();
    let (ft, ptr) = (clif(ty), types::I64);
    let sig = jit.signature(&[ptr, ptr, ptr, ptr], None);
    let id = jit.declare(&format!("erk_step_{lanes}"), &sig)?;
    jit.ctx.func.signature = sig;
    jit.ctx.func.name = UserFuncName::user(0, id.as_u32());
    let calls = lower::imports(jit, k, reach)?;
    let config = jit.module.target_config();
    let (dim, stages, sz) = (k.states.len(), pair.stages(), size(ty));
    let updates = &k.phases[0].updates;
    let width = (16 / sz) as usize;
    let rows = Rows {
        ty,
        vty: ft
            .by(width as u32)
            .ok_or_else(|| NotCompilable::new(&k.name, "no vector type"))?,
        width,
        dim,
    };
    let lay = match ty {
        ScalarType::F64 => LaneLayout::of::<f64>(),
        _ => LaneLayout::of::<f32>(),
    };
    {
        let mut b = FunctionBuilder::new(&mut jit.ctx.func, &mut jit.fctx);
        let p = lower::entry(&mut b);
        let (recs, atol, rtol, bufs) = (p[0], p[1], p[2], p[3]);
        let flags = MemFlagsData::trusted();
        let at = |d: usize| (d as i64 * sz) as i32;
        let load = |b: &mut FunctionBuilder<'_>, base: Value, d: usize| {
            b.ins().load(ft, flags, base, at(d))
        };
        let mut ls = Vec::with_capacity(lanes);
        for l in 0..lanes {
            let rec = b.ins().iadd_imm_s(recs, l as i64 * lay.size);
            let field = |b: &mut FunctionBuilder<'_>, off: i32| b.ins().load(ptr, flags, rec, off);
            let (y, y0, kp) = (
                field(&mut b, lay.y),
                field(&mut b, lay.y0),
                field(&mut b, lay.k),
            );
            let t = b.ins().load(ft, flags, rec, lay.t);
            let h = b.ins().load(ft, flags, rec, lay.h);
            let ids = b.ins().iadd_imm_s(rec, i64::from(lay.ids));
            let fault = b.ins().iadd_imm_s(rec, i64::from(lay.fault));
            let ys: Vec<Value> = (0..dim).map(|d| load(&mut b, y, d)).collect();
            let k0: Vec<Value> = (0..dim).map(|d| load(&mut b, kp, d)).collect();
            let yv = rows.pack(&mut b, &ys);
            let hv = b.ins().splat(rows.vty, h);
            let inputs = Inputs {
                t,
                y,
                y0,
                lane: ids,
                bufs,
                fault,
                states: ys.clone(),
            };
            // Uniform and per-trajectory nodes once; the varying ones per stage.
            let mut base = vec![None; k.nodes.len()];
            lower::lower_some(
                &mut b, k, reach, false, var, &uni, &calls, &inputs, &mut base,
            )?;
            let ks = vec![rows.pack(&mut b, &k0)];
            ls.push(Lane {
                rec,
                t,
                h,
                hv,
                kp,
                tmp: (yv.clone(), ys),
                yv,
                base,
                inputs,
                ks,
            });
        }
        for i in 1..stages {
            for ln in ls.iter_mut() {
                let sv = rows.combine(&mut b, &ln.yv, ln.hv, &pair.a[i][..i], &ln.ks);
                ln.tmp = (sv.clone(), rows.unpack(&mut b, &sv));
                let ci = float(&mut b, ty, pair.c[i]);
                let chi = b.ins().fmul(ci, ln.h);
                ln.inputs.t = b.ins().fadd(ln.t, chi);
                ln.inputs.states = ln.tmp.1.clone();
                let mut vals = ln.base.clone();
                lower::lower_some(
                    &mut b, k, reach, true, var, &uni, &calls, &ln.inputs, &mut vals,
                )?;
                let mut row = Vec::with_capacity(dim);
                for (d, u) in updates.iter().enumerate() {
                    let v = match u {
                        Update::Rate(n) => vals[n.index()].expect("roots are lowered"),
                        _ => float(&mut b, ty, 0.0),
                    };
                    b.ins().store(flags, v, ln.kp, at(i * dim + d));
                    row.push(v);
                }
                ln.ks.push(rows.pack(&mut b, &row));
            }
        }
        let atols: Vec<Value> = (0..dim).map(|d| load(&mut b, atol, d)).collect();
        let rtols: Vec<Value> = (0..dim).map(|d| load(&mut b, rtol, d)).collect();
        let (av, rv) = (rows.pack(&mut b, &atols), rows.pack(&mut b, &rtols));
        let lanewise = MemFlagsData::new().with_endianness(Endianness::Little);
        for ln in ls {
            let (ynv, yn) = if pair.fsal {
                ln.tmp
            } else {
                let v = rows.combine(&mut b, &ln.yv, ln.hv, &pair.b, &ln.ks);
                let s = rows.unpack(&mut b, &v);
                (v, s)
            };
            let y_new = b.ins().load(ptr, flags, ln.rec, lay.y_new);
            for (d, &v) in yn.iter().enumerate() {
                b.ins().store(flags, v, y_new, at(d));
            }
            // The scaled error terms (e_d / (atol_d + rtol_d·max(|y_d|,
            // |y₁_d|)))², then their sum in component order.
            let terms: Vec<Value> = (0..rows.chunks())
                .map(|c| {
                    let s = rows.weighted(&mut b, &pair.bt, &ln.ks, c);
                    let e = b.ins().fmul(ln.hv, s);
                    let (u, v) = (b.ins().fabs(ln.yv[c]), b.ins().fabs(ynv[c]));
                    let gt = b.ins().fcmp(FloatCC::GreaterThan, u, v);
                    let mask = b.ins().bitcast(rows.vty, lanewise, gt);
                    let m = b.ins().bitselect(mask, u, v);
                    let rm = b.ins().fmul(rv[c], m);
                    let sc = b.ins().fadd(av[c], rm);
                    let r = b.ins().fdiv(e, sc);
                    b.ins().fmul(r, r)
                })
                .collect();
            let mut acc = float(&mut b, ty, 0.0);
            for rr in rows.unpack(&mut b, &terms) {
                acc = b.ins().fadd(acc, rr);
            }
            let n = float(&mut b, ty, dim as f64);
            let mean = b.ins().fdiv(acc, n);
            let err = b.ins().sqrt(mean);
            b.ins().store(flags, err, ln.rec, lay.err);
        }
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(config);
    }
    jit.define(id)?;
    Ok(id)
}
