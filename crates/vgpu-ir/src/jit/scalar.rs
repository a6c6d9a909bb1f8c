//! A kernel's rates as a native scalar function of one trajectory:
//! `f(t, y, y0, ids, buffers, fault) → out`, the adaptive driver's
//! right-hand side (and, through derived kernels, its event conditions,
//! jumps and Jacobian).

use super::code::{BufRef, Code, FaultRec, Jit};
use super::lower::{self, clif, size, Inputs};
use super::NotCompilable;
use crate::args::{Args, Buffer};
use crate::eval::IrFloat;
use crate::eval::{self, Dims, Fault};
use crate::kernel::{Kernel, Node, Update};
use crate::types::{ScalarType, Value as V};
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, UserFuncName};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::Module;
use std::marker::PhantomData;
use std::sync::Arc;

/// The native signature: `t`, then pointers to the states, the initial
/// states, the output, the indices `[i, tid, bid, 0]`, the buffer table and
/// the fault record.
type ScalarFn<T> = unsafe extern "C" fn(
    T,
    *const T,
    *const T,
    *mut T,
    *const [u32; 4],
    *const BufRef,
    *mut FaultRec,
);

/// One compiled kernel of a [`ScalarSet`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScalarKernel {
    code: *const u8,
    /// Outputs written (the kernel's updates).
    outs: usize,
    /// States read (one past the highest `State`/`Init` index).
    reads: usize,
}

/// Kernels that share arguments and launch values (a field and the kernels
/// derived from it), compiled into one module.
pub(crate) struct ScalarSet<'a> {
    _code: Arc<Code>,
    kernels: Vec<ScalarKernel>,
    ty: ScalarType,
    bufs: Vec<BufRef>,
    lens: Vec<usize>,
    _args: PhantomData<&'a Args>,
}

// SAFETY: the raw pointers are to the module's immutable code (alive while
// `_code` is) and to the buffers of the borrowed `Args` (immutable, alive for
// `'a`); native code only reads them.
unsafe impl Send for ScalarSet<'_> {}
// SAFETY: as above; a call writes only to the output and fault record its caller passes.
unsafe impl Sync for ScalarSet<'_> {}

impl<'a> ScalarSet<'a> {
    /// Compiles `kernels` (unphased, all of float type `ty`) with `args` and
    /// the launch values `dims` baked in where uniform.
    ///
    /// # Errors
    /// [`NotCompilable`] naming the first kernel and reason.
    pub(crate) fn compile(
        kernels: &[&Kernel],
        args: &'a Args,
        dims: Dims,
    ) -> Result<ScalarSet<'a>, NotCompilable> {
        let first = kernels
            .first()
            .ok_or_else(|| NotCompilable::new("", "no kernel"))?;
        let ty = first.float_type();
        let mut jit = Jit::new(&first.name)?;
        let mut ids = vec![];
        let mut shapes = vec![];
        for (j, k) in kernels.iter().enumerate() {
            if k.float_type() != ty {
                return Err(NotCompilable::new(&k.name, "kernels of two float types"));
            }
            let (id, outs, reads) = compile_one(&mut jit, k, args, dims, j)?;
            ids.push(id);
            shapes.push((outs, reads));
        }
        let (code, ptrs) = jit.finish(&ids)?;
        let mut bufs = vec![];
        let mut lens = vec![];
        for p in 0..first.params.len() {
            let (ptr, len) = match args.buffer_at(p) {
                Some(Buffer::F32(v)) => (v.as_ptr().cast::<u8>(), v.len()),
                Some(Buffer::F64(v)) => (v.as_ptr().cast::<u8>(), v.len()),
                Some(Buffer::I32(v)) => (v.as_ptr().cast::<u8>(), v.len()),
                Some(Buffer::U32(v)) => (v.as_ptr().cast::<u8>(), v.len()),
                None => (std::ptr::null(), 0),
            };
            bufs.push(BufRef {
                ptr,
                len: len as u64,
            });
            lens.push(len);
        }
        let kernels = ptrs
            .into_iter()
            .zip(shapes)
            .map(|(code, (outs, reads))| ScalarKernel { code, outs, reads })
            .collect();
        Ok(ScalarSet {
            _code: code,
            kernels,
            ty,
            bufs,
            lens,
            _args: PhantomData,
        })
    }

    /// Outputs of kernel `which`.
    pub(crate) fn outputs(&self, which: usize) -> usize {
        self.kernels[which].outs
    }

    /// Runs kernel `which` at `(t, y)` with initial state `y0` for the
    /// trajectory of indices `ids = [i, tid, bid, 0]`, writing its outputs
    /// into `out`; returns its first out-of-bounds read (as the evaluator's
    /// [`Fault`] of lane 0).
    ///
    /// # Panics
    /// If `T` is not the kernels' float type, or a slice is shorter than the
    /// kernel reads or writes.
    #[inline]
    pub(crate) fn call<T: IrFloat>(
        &self,
        which: usize,
        t: T,
        y: &[T],
        y0: &[T],
        ids: [u32; 4],
        out: &mut [T],
    ) -> Option<Fault> {
        let k = self.kernels[which];
        assert!(
            T::TYPE == self.ty && y.len() >= k.reads && y0.len() >= k.reads && out.len() >= k.outs,
            "native kernel called with the wrong shapes"
        );
        let mut rec = FaultRec::default();
        // SAFETY: the code was compiled with this signature for `T` (checked
        // above); it reads `k.reads` values of `y` and `y0`, writes `k.outs`
        // of `out` (lengths checked above), reads `ids`, the buffer table of
        // one entry per parameter (each within its length: the code checks
        // every index) and writes only `rec`.
        unsafe {
            let f = std::mem::transmute::<*const u8, ScalarFn<T>>(k.code);
            f(
                t,
                y.as_ptr(),
                y0.as_ptr(),
                out.as_mut_ptr(),
                &ids,
                self.bufs.as_ptr(),
                &mut rec,
            );
        }
        rec.fault(&self.lens)
    }
}

/// Whether `k` is a kernel this module compiles (`Err` names why not).
pub(crate) fn compilable(k: &Kernel) -> Result<(), NotCompilable> {
    let no = |r: &str| Err(NotCompilable::new(&k.name, r));
    if k.is_phased() || k.phases.len() != 1 {
        return no("it has phases (barriers); the phased executor runs it");
    }
    let ph = &k.phases[0];
    if !k.shared.is_empty() || !ph.drives.is_empty() {
        return no("it has shared sub-fields");
    }
    if !k.fluxes.is_empty() || !ph.emits.is_empty() {
        return no("it emits flux");
    }
    if ph.updates.iter().any(|u| matches!(u, Update::Jump(_))) {
        return no("it has `x := …` jumps");
    }
    if !k.float_type().is_float() {
        return no("its states are not floats");
    }
    Ok(())
}

fn compile_one(
    jit: &mut Jit,
    k: &Kernel,
    args: &Args,
    dims: Dims,
    j: usize,
) -> Result<(cranelift_module::FuncId, usize, usize), NotCompilable> {
    compilable(k)?;
    let phase = &k.phases[0];
    let roots = k.phase_roots(phase);
    let var = k.variance();
    let reach = k.reachable(&roots);
    let uni = eval::uniform_values(k, &reach, &var, args, dims)
        .map_err(|e| NotCompilable::new(&k.name, e.to_string()))?;
    let reads = reach
        .iter()
        .filter_map(|n| match k.nodes[n.index()] {
            Node::State(s) | Node::Init(s) => Some(s as usize + 1),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let ty = k.float_type();
    let ptr = types::I64;
    let sig = jit.signature(&[clif(ty), ptr, ptr, ptr, ptr, ptr, ptr], None);
    let id = jit.declare(&format!("rhs{j}"), &sig)?;
    jit.ctx.func.signature = sig;
    jit.ctx.func.name = UserFuncName::user(0, id.as_u32());
    let calls = lower::imports(jit, k, &reach)?;
    let config = jit.module.target_config();
    {
        let mut b = FunctionBuilder::new(&mut jit.ctx.func, &mut jit.fctx);
        let p = lower::entry(&mut b);
        let inp = Inputs {
            t: p[0],
            y: p[1],
            y0: p[2],
            lane: p[4],
            bufs: p[5],
            fault: p[6],
            states: vec![],
        };
        let vals = lower::lower(&mut b, k, &roots, &var, &uni, &calls, &inp)?;
        let flags = MemFlagsData::trusted();
        for (o, u) in phase.updates.iter().enumerate() {
            let v = match u {
                Update::Rate(n) => vals[n.index()].expect("roots are lowered"),
                _ => lower::constant(&mut b, V::F64(0.0).cast(ty)),
            };
            b.ins().store(flags, v, p[3], (o as i64 * size(ty)) as i32);
        }
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(config);
    }
    jit.define(id)?;
    Ok((id, phase.updates.len(), reads))
}
