//! The Cranelift side of the JIT: the host's instruction set, one module of
//! native functions that lives as long as a [`Code`], and the Rust functions
//! the native code calls (the evaluator's own library functions and the
//! out-of-bounds recorder).

use super::NotCompilable;
use crate::eval::IrFloat;
use crate::kernel::{BinOp, UnOp};
use cranelift_codegen::ir::{types, AbiParam, Signature, Type};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

/// The host's instruction set with its detected extensions (SSE4.1, AVX,
/// FMA, …), optimising for speed. Cranelift's IR verifier runs in debug
/// builds (the tests) only: in a release build it was most of the compile
/// time of a whole-step function (milliseconds per run).
pub(super) fn host_isa() -> Result<OwnedTargetIsa, NotCompilable> {
    let mut flags = settings::builder();
    let verify = if cfg!(debug_assertions) {
        "true"
    } else {
        "false"
    };
    for (k, v) in [
        ("use_colocated_libcalls", "false"),
        ("is_pic", "false"),
        ("opt_level", "speed"),
        ("enable_verifier", verify),
    ] {
        flags
            .set(k, v)
            .map_err(|e| NotCompilable::new("", format!("Cranelift flag {k}={v}: {e}")))?;
    }
    let isa = cranelift_native::builder()
        .map_err(|m| NotCompilable::new("", format!("no Cranelift backend for this host: {m}")))?;
    isa.finish(settings::Flags::new(flags))
        .map_err(|e| NotCompilable::new("", format!("Cranelift target: {e}")))
}

/// Native code: the memory of a finished module, freed when the last holder
/// of the [`Arc`] drops it. Function pointers taken from it are valid while it lives.
pub(crate) struct Code {
    module: Option<JITModule>,
}

// SAFETY: after `finalize_definitions` the module is never touched through a
// shared reference (`Code` has no method taking `&self`); the executable
// memory it owns is immutable and may be run from any thread; it is freed only
// in `drop`, when no other reference exists.
unsafe impl Send for Code {}
// SAFETY: as above.
unsafe impl Sync for Code {}

impl Drop for Code {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: every holder of a function pointer of this module holds
            // the `Arc<Code>` too, so no pointer outlives this call.
            unsafe { m.free_memory() };
        }
    }
}

/// A compiled function with what every call passes it: the code (kept alive
/// with its module), the buffer table of the bound arguments and each
/// buffer's length.
pub(super) struct Compiled<'a> {
    _code: Arc<Code>,
    /// The function's address.
    pub code: *const u8,
    /// The buffer table (one entry per parameter).
    pub bufs: Vec<BufRef>,
    /// Each buffer parameter's length.
    pub lens: Vec<usize>,
    _args: PhantomData<&'a crate::args::Args>,
}

// SAFETY: the raw pointers are to the module's immutable code (alive while
// `_code` is) and to the buffers of the borrowed `Args` (immutable, alive for
// `'a`); native code only reads them.
unsafe impl Send for Compiled<'_> {}
// SAFETY: as above; a call writes only to the memory its caller passes.
unsafe impl Sync for Compiled<'_> {}

impl<'a> Compiled<'a> {
    /// The function at `code` of module `module`, for a kernel of `params`
    /// parameters bound to `args`.
    pub(super) fn new(
        module: Arc<Code>,
        code: *const u8,
        args: &'a crate::args::Args,
        params: usize,
    ) -> Compiled<'a> {
        let (bufs, lens) = buffer_table(args, params);
        Compiled {
            _code: module,
            code,
            bufs,
            lens,
            _args: PhantomData,
        }
    }
}

/// The record of the first out-of-bounds buffer read of a call.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FaultRec {
    /// 0: none; 1: the fields below hold the first.
    pub hit: u32,
    /// Index into [`crate::kernel::Kernel::sites`].
    pub site: u32,
    /// The buffer parameter.
    pub buf: u32,
    pub _pad: u32,
    /// The index read.
    pub index: i64,
}

impl FaultRec {
    /// The recorded read as the evaluator's [`crate::eval::Fault`] of lane 0
    /// (`lens`: each buffer parameter's length), if a read was recorded.
    pub(super) fn fault(&self, lens: &[usize]) -> Option<crate::eval::Fault> {
        (self.hit != 0).then(|| crate::eval::Fault {
            lane: 0,
            index: self.index,
            len: lens[self.buf as usize],
            site: self.site,
            shared: false,
            which: self.buf,
        })
    }
}

/// One buffer argument as native code reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct BufRef {
    pub ptr: *const u8,
    pub len: u64,
}

/// The buffer table native code reads for a kernel of `params` parameters
/// bound to `args` (a null entry for a scalar parameter), and each buffer's length.
pub(super) fn buffer_table(args: &crate::args::Args, params: usize) -> (Vec<BufRef>, Vec<usize>) {
    use crate::args::Buffer;
    (0..params)
        .map(|p| {
            let (ptr, len) = match args.buffer_at(p) {
                Some(Buffer::F32(v)) => (v.as_ptr().cast::<u8>(), v.len()),
                Some(Buffer::F64(v)) => (v.as_ptr().cast::<u8>(), v.len()),
                Some(Buffer::I32(v)) => (v.as_ptr().cast::<u8>(), v.len()),
                Some(Buffer::U32(v)) => (v.as_ptr().cast::<u8>(), v.len()),
                None => (std::ptr::null(), 0),
            };
            (
                BufRef {
                    ptr,
                    len: len as u64,
                },
                len,
            )
        })
        .unzip()
}

/// Records an out-of-bounds read unless the call already has one.
///
/// # Safety
/// `rec` points to a live [`FaultRec`] (native code passes the one its caller gave).
unsafe extern "C" fn record_fault(rec: *mut FaultRec, site: u32, buf: u32, index: i64) {
    let rec = &mut *rec;
    if rec.hit == 0 {
        *rec = FaultRec {
            hit: 1,
            site,
            buf,
            _pad: 0,
            index,
        };
    }
}

macro_rules! unary_fns {
    ($($name:ident: $t:ty, $op:ident;)*) => {$(
        extern "C" fn $name(x: $t) -> $t {
            <$t as IrFloat>::un(UnOp::$op, x)
        }
    )*};
}
unary_fns! {
    sin_f32: f32, Sin; cos_f32: f32, Cos; exp_f32: f32, Exp; log_f32: f32, Log; tanh_f32: f32, Tanh;
    sin_f64: f64, Sin; cos_f64: f64, Cos; exp_f64: f64, Exp; log_f64: f64, Log; tanh_f64: f64, Tanh;
}

macro_rules! binary_fns {
    ($($name:ident: $t:ty, $op:ident;)*) => {$(
        extern "C" fn $name(a: $t, b: $t) -> $t {
            <$t as IrFloat>::bin(BinOp::$op, a, b)
        }
    )*};
}
binary_fns! {
    rem_f32: f32, Rem; min_f32: f32, Min; max_f32: f32, Max; pow_f32: f32, Pow;
    rem_f64: f64, Rem; min_f64: f64, Min; max_f64: f64, Max; pow_f64: f64, Pow;
}

/// The symbol of a library call, by operation and float type.
pub(super) fn unary_symbol(op: UnOp, f64: bool) -> Option<&'static str> {
    Some(match (op, f64) {
        (UnOp::Sin, false) => "vgpu_sin_f32",
        (UnOp::Cos, false) => "vgpu_cos_f32",
        (UnOp::Exp, false) => "vgpu_exp_f32",
        (UnOp::Log, false) => "vgpu_log_f32",
        (UnOp::Tanh, false) => "vgpu_tanh_f32",
        (UnOp::Sin, true) => "vgpu_sin_f64",
        (UnOp::Cos, true) => "vgpu_cos_f64",
        (UnOp::Exp, true) => "vgpu_exp_f64",
        (UnOp::Log, true) => "vgpu_log_f64",
        (UnOp::Tanh, true) => "vgpu_tanh_f64",
        _ => return None,
    })
}

/// As [`unary_symbol`] for the float operations that are library calls.
pub(super) fn binary_symbol(op: BinOp, f64: bool) -> Option<&'static str> {
    Some(match (op, f64) {
        (BinOp::Rem, false) => "vgpu_rem_f32",
        (BinOp::Min, false) => "vgpu_min_f32",
        (BinOp::Max, false) => "vgpu_max_f32",
        (BinOp::Pow, false) => "vgpu_pow_f32",
        (BinOp::Rem, true) => "vgpu_rem_f64",
        (BinOp::Min, true) => "vgpu_min_f64",
        (BinOp::Max, true) => "vgpu_max_f64",
        (BinOp::Pow, true) => "vgpu_pow_f64",
        _ => return None,
    })
}

/// The out-of-bounds recorder's symbol.
pub(super) const FAULT_SYMBOL: &str = "vgpu_record_fault";

fn symbols() -> Vec<(&'static str, *const u8)> {
    vec![
        ("vgpu_sin_f32", sin_f32 as *const u8),
        ("vgpu_cos_f32", cos_f32 as *const u8),
        ("vgpu_exp_f32", exp_f32 as *const u8),
        ("vgpu_log_f32", log_f32 as *const u8),
        ("vgpu_tanh_f32", tanh_f32 as *const u8),
        ("vgpu_sin_f64", sin_f64 as *const u8),
        ("vgpu_cos_f64", cos_f64 as *const u8),
        ("vgpu_exp_f64", exp_f64 as *const u8),
        ("vgpu_log_f64", log_f64 as *const u8),
        ("vgpu_tanh_f64", tanh_f64 as *const u8),
        ("vgpu_rem_f32", rem_f32 as *const u8),
        ("vgpu_min_f32", min_f32 as *const u8),
        ("vgpu_max_f32", max_f32 as *const u8),
        ("vgpu_pow_f32", pow_f32 as *const u8),
        ("vgpu_rem_f64", rem_f64 as *const u8),
        ("vgpu_min_f64", min_f64 as *const u8),
        ("vgpu_max_f64", max_f64 as *const u8),
        ("vgpu_pow_f64", pow_f64 as *const u8),
        (FAULT_SYMBOL, record_fault as *const u8),
    ]
}

/// A module being filled with functions.
pub(super) struct Jit {
    pub(super) module: JITModule,
    pub(super) ctx: Context,
    pub(super) fctx: FunctionBuilderContext,
    imports: HashMap<&'static str, FuncId>,
    kernel: String,
}

impl Jit {
    /// An empty module for the host (`kernel` names the kernel in errors).
    pub(super) fn new(kernel: &str) -> Result<Jit, NotCompilable> {
        let isa = host_isa().map_err(|e| NotCompilable::new(kernel, e.reason))?;
        let mut b = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
        b.symbols(symbols());
        let module = JITModule::new(b);
        let ctx = module.make_context();
        Ok(Jit {
            module,
            ctx,
            fctx: FunctionBuilderContext::new(),
            imports: HashMap::new(),
            kernel: kernel.to_string(),
        })
    }

    /// A signature of the host's calling convention.
    pub(super) fn signature(&self, params: &[Type], ret: Option<Type>) -> Signature {
        let mut s = self.module.make_signature();
        s.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        s.returns.extend(ret.map(AbiParam::new));
        s
    }

    /// The imported Rust function `name` (one of [`symbols`]).
    pub(super) fn import(&mut self, name: &'static str) -> Result<FuncId, NotCompilable> {
        if let Some(&id) = self.imports.get(name) {
            return Ok(id);
        }
        let sig = if name == FAULT_SYMBOL {
            self.signature(&[types::I64, types::I32, types::I32, types::I64], None)
        } else {
            let t = if name.ends_with("f64") {
                types::F64
            } else {
                types::F32
            };
            let n = if unary_like(name) { 1 } else { 2 };
            self.signature(&vec![t; n], Some(t))
        };
        let id = self
            .module
            .declare_function(name, Linkage::Import, &sig)
            .map_err(|e| self.err(format!("declaring {name}: {e}")))?;
        self.imports.insert(name, id);
        Ok(id)
    }

    /// A new local function of signature `sig` (its body built in `self.ctx`).
    pub(super) fn declare(&mut self, name: &str, sig: &Signature) -> Result<FuncId, NotCompilable> {
        self.module
            .declare_function(name, Linkage::Local, sig)
            .map_err(|e| self.err(format!("declaring {name}: {e}")))
    }

    /// Compiles the function built in `self.ctx` as `id`.
    pub(super) fn define(&mut self, id: FuncId) -> Result<(), NotCompilable> {
        let r = self.module.define_function(id, &mut self.ctx);
        self.module.clear_context(&mut self.ctx);
        r.map_err(|e| self.err(format!("Cranelift: {e:?}")))
    }

    /// Links the module: the code and the addresses of `ids`.
    pub(super) fn finish(
        mut self,
        ids: &[FuncId],
    ) -> Result<(Arc<Code>, Vec<*const u8>), NotCompilable> {
        self.module
            .finalize_definitions()
            .map_err(|e| NotCompilable::new(&self.kernel, format!("linking: {e}")))?;
        let ptrs = ids
            .iter()
            .map(|&id| self.module.get_finalized_function(id))
            .collect();
        Ok((
            Arc::new(Code {
                module: Some(self.module),
            }),
            ptrs,
        ))
    }

    /// An error naming the kernel.
    pub(super) fn err(&self, reason: String) -> NotCompilable {
        NotCompilable::new(&self.kernel, reason)
    }
}

fn unary_like(name: &str) -> bool {
    ["sin", "cos", "exp", "log", "tanh"]
        .iter()
        .any(|f| name.starts_with(&format!("vgpu_{f}_")))
}
