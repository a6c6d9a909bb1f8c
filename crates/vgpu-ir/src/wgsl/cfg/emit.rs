//! The emitter proper: declarations, memory helpers, the state machine and
//! one WGSL statement list per basic block.

use super::access::{self, element_align, needs_atomic_words, space_letter, Rw, BAD};
use super::bits::{self, BITS_PRELUDE};
use super::checks;
use super::coverage::Coverage;
use super::exp2;
use super::float64::FLOAT64_PRELUDE;
use super::float64_exact;
use super::half::{self, HALF_PRELUDE};
use super::prelude::{
    dev_fma_wgsl, fma_suspect_wgsl, tiny_wgsl, F64_INT64_PRELUDE, F64_PRELUDE, INT_PRELUDE,
};
use super::ranges::Ranges;
use super::warp;
use super::writer::{
    round_mark, ExprWidth, KernelWriter, BACK, RET, ROUND_TAKE, WAIT, WARP, YIELD,
};
use super::{
    binds_f32_atomic_view, check_cfg_wgsl, fault, meta, CfgChecks, CfgWgslOptions, GLOBAL_BASE,
};
use crate::cfg::*;
use crate::error::IrError;
use std::fmt::Write;

/// The most exits (`break;`: a check's fault, the watchdog) one case of the
/// state machine's switch holds before its block's statements go on in a
/// continuation case (`pc` set to it, the next round of the loop).
/// On Mesa (lavapipe 22.3 seen) the statements after a conditional `break`
/// end up in a conditional of their own, so each exit nests the rest of the
/// case one level deeper, and lavapipe's gallivm ignores the execution mask
/// of conditionals nested past 80 levels (`LP_MAX_TGSI_NESTING`): code under
/// them runs for every lane, e.g. a global access's region check breaking
/// out with an in-bounds address (the case gpu_false_misaligned: the store
/// after its block's 78th exit faulted). 32 leaves room for the nesting of
/// the helpers inlined at that depth.
const MAX_CASE_EXITS: usize = 32;

fn unsupported(k: &CfgKernel, reason: String) -> IrError {
    IrError::Unsupported {
        kernel: k.name.clone(),
        backend: "gpu (WGSL)".into(),
        reason,
    }
}

/// WGSL for `k` under `o` (see the module documentation for the layout).
///
/// # Errors
/// [`IrError::Unsupported`] when the kernel is malformed, needs f64 on an
/// adapter without it, or its shared or local memory does not fit in 32-bit
/// offsets.
pub fn emit_cfg_wgsl(k: &CfgKernel, o: &CfgWgslOptions) -> Result<String, IrError> {
    emit_cfg_wgsl_with(
        k,
        o,
        CfgChecks {
            initcheck: false,
            race: true,
        },
    )
}

/// [`emit_cfg_wgsl`] with the checks `c` chosen (when `o` is checked):
/// [`CfgChecks::initcheck`], the global-memory initcheck, and
/// [`CfgChecks::race`], the shared-memory race check (checks.rs).
///
/// # Errors
/// As [`emit_cfg_wgsl`].
pub fn emit_cfg_wgsl_with(
    k: &CfgKernel,
    o: &CfgWgslOptions,
    c: CfgChecks,
) -> Result<String, IrError> {
    emit_cfg_kernel(k, o, c).map(|w| w.text)
}

/// A kernel's WGSL ([`emit_cfg_kernel`]) and what is known of its loops.
#[derive(Debug, Clone)]
pub struct CfgWgsl {
    /// The WGSL.
    pub text: String,
    /// Whether every loop of the kernel ends itself within `2^b` iterations
    /// of a `b`-bit register (a halving or a counted loop; bounded.rs),
    /// written in structured form, whose only other loops are the
    /// prelude's, which count to a bound or retry an atomic
    /// compare-and-swap that another thread's success ends: the GPU
    /// compiler need not bound them.
    pub loops_end: bool,
    /// The block's end records every faulting thread's fault without
    /// picking the earliest ([`CfgWgslOptions::earliest_fault`] off where
    /// it applies): a launch that faults must be run again, recording only
    /// its lowest faulting block, with that option on.
    pub first_pass: bool,
    /// A versioned loop is written without its checked copy
    /// ([`CfgWgslOptions::speculative_loops`]): a launch whose fault record
    /// has [`fault::FALLBACK`] set must run again with that option off.
    pub speculative: bool,
}

/// [`emit_cfg_wgsl_with`], with what is known of the kernel's loops.
///
/// # Errors
/// As [`emit_cfg_wgsl`].
pub fn emit_cfg_kernel(
    k: &CfgKernel,
    o: &CfgWgslOptions,
    c: CfgChecks,
) -> Result<CfgWgsl, IrError> {
    check_cfg_wgsl(k, o)?;
    let shared = (k.shared_static as u64) + (o.dyn_shared as u64);
    if reserved_smem(shared).1 > u32::MAX as u64 / 2 {
        return Err(unsupported(k, format!("{shared} bytes of shared memory")));
    }
    if k.blocks.len() as u64 >= BACK as u64 {
        return Err(unsupported(k, format!("{} basic blocks", k.blocks.len())));
    }
    let mut e = KernelWriter {
        k,
        o,
        out: String::new(),
        tmp: 0,
        warps: k.has_warp_ops(),
        shadow: checks::shadow_check(k, o.checked),
        ginit: o.checked && c.initcheck,
        race: c.race && checks::race_check_applies(k, o),
        soft: false,
        fast: false,
        guarded_fma: fma_guarded(k, o),
        ranges: o.checked.then(|| Ranges::of(k, o.block, o.dyn_shared)),
        defer_reads: false,
        waiting_reads: Vec::new(),
        sh_known: None,
        written_after: Vec::new(),
        shadow_notes: 0,
        site_caches: 0,
        site_seeds: Vec::new(),
        param_slots: if o.checked {
            super::seeds::param_slots(k)
        } else {
            Vec::new()
        },
        pad: None,
        coverage: Coverage::default(),
        clean: None,
        fault_sites: 0,
        site_log: None,
        speculated: false,
    };
    e.pad = e.smem_pad(unpadded_smem_words(shared));
    if e.guarded_fma {
        e.coverage = Coverage::best(k, o.checked);
    }
    // The structured form first: whether it applies decides how faults are
    // raised (the header's `raise`).
    let mut loops_end = false;
    let body = match super::structured::shape(k, o) {
        Some(shape) => {
            e.soft = o.checked && k.has_barriers();
            if e.soft && e.shadow {
                if let Some(r) = &e.ranges {
                    e.written_after = super::written::written_after_first_barrier(
                        k,
                        r,
                        k.shared_static + o.dyn_shared,
                    );
                }
                if !e.race && super::written::nothing_unwritten_read(k, &e.written_after) {
                    e.shadow = false;
                    e.written_after.clear();
                }
            }
            let body = e.structured(&shape)?;
            e.soft &= body.is_some();
            loops_end = body.is_some() && super::bounded::every_loop_ends(k, &shape);
            if !e.soft {
                // The state machine does not read it, and checks every
                // read of shared memory.
                e.written_after.clear();
                e.shadow = checks::shadow_check(k, o.checked);
            }
            body
        }
        None => None,
    };
    e.header(shared as u32);
    e.main(body)?;
    let flags = e.coverage.decls();
    e.out.push_str(&flags);
    if o.checked {
        let caches = e.site_caches();
        e.out.push_str(&caches);
    }
    Ok(CfgWgsl {
        first_pass: e.soft && !o.earliest_fault && !e.shadow,
        speculative: e.speculated,
        text: e.out,
        loops_end,
    })
}

/// The words of shared memory a kernel with `shared` bytes indexes without
/// padding: its own and the reserved region's, at least one.
fn unpadded_smem_words(shared: u64) -> u64 {
    reserved_smem(shared).1.div_ceil(4).max(1)
}

/// Whether an atomic `op` in `space` is the device's f32 `atomicAdd` on
/// `gmemf`, the `atomic<f32>` view of global memory
/// ([`CfgWgslOptions::f32_atomic_add`]).
fn uses_gmemf(o: &CfgWgslOptions, space: Space, op: AtomOp) -> bool {
    o.f32_atomic_add && space == Space::Global && op == AtomOp::AddF32
}

/// The operation's code in the prelude's `atom_new`, and the native WGSL
/// atomic that does it in one step, if any.
fn atom_code(op: AtomOp) -> (u32, Option<&'static str>) {
    match op {
        AtomOp::Add => (0, Some("atomicAdd")),
        AtomOp::AddF32 => (1, None),
        AtomOp::Min { signed: true } => (2, None),
        AtomOp::Max { signed: true } => (3, None),
        AtomOp::Min { signed: false } => (4, Some("atomicMin")),
        AtomOp::Max { signed: false } => (5, Some("atomicMax")),
        AtomOp::And => (6, Some("atomicAnd")),
        AtomOp::Or => (7, Some("atomicOr")),
        AtomOp::Xor => (8, Some("atomicXor")),
        AtomOp::Exch => (9, Some("atomicExchange")),
        AtomOp::Cas => (10, None),
        AtomOp::Inc => (11, None),
        AtomOp::Dec => (12, None),
        AtomOp::MinF32 => (13, None),
        AtomOp::MaxF32 => (14, None),
    }
}

impl KernelWriter<'_> {
    fn header(&mut self, shared: u32) {
        let k = self.k;
        let o = self.o;
        let swords = self.smem_words();
        let out = &mut self.out;
        out.push_str("// Generated by vgpu-ir's control-flow emitter (wgsl/cfg).\n");
        out.push_str(INT_PRELUDE);
        if k.blocks.iter().flat_map(|b| &b.stmts).any(bits::uses) {
            out.push_str(BITS_PRELUDE);
        }
        if k.blocks.iter().flat_map(|b| &b.stmts).any(half::uses) {
            out.push_str(HALF_PRELUDE);
        }
        if k.blocks.iter().flat_map(|b| &b.stmts).any(exp2::uses) {
            out.push_str(&exp2::ex2_prelude());
        }
        // The f64 helpers, which the f64 registers' conversions also use.
        if o.f64 && (k.f64_line(false).is_some() || (o.int64 && k.f64_reg_line().is_some())) {
            out.push_str(F64_PRELUDE);
            out.push_str(fma_suspect_wgsl(o.f32_subnormal_compares));
            out.push_str(dev_fma_wgsl(o.fma_flush_model));
            if self.guarded_fma {
                out.push_str(&tiny_wgsl(self.coverage.threshold()));
            }
            if o.int64 {
                out.push_str(F64_INT64_PRELUDE);
            }
        }
        if o.f64 && o.int64 && k.f64_reg_line().is_some() {
            out.push_str(FLOAT64_PRELUDE);
            if k.blocks
                .iter()
                .flat_map(|b| &b.stmts)
                .any(float64_exact::uses)
            {
                out.push_str(float64_exact::FLOAT64_EXACT_PRELUDE);
            }
        }
        let g_atomic = needs_atomic_words(k, Space::Global);
        let s_atomic = needs_atomic_words(k, Space::Shared);
        let gty = if g_atomic { "atomic<u32>" } else { "u32" };
        let sty = if s_atomic { "atomic<u32>" } else { "u32" };
        // The kernel's bytes, padding, and the reserved region's usable bytes.
        let (rbegin, rend, _) = reserved_smem(shared as u64);
        let lwords = k.local_bytes.div_ceil(4).max(1);
        let gmemf = if binds_f32_atomic_view(k, o) {
            "@group(0) @binding(4) var<storage, read_write> gmemf: array<atomic<f32>>;\n"
        } else {
            ""
        };
        let raise_fn = checks::raise_decl(self.soft, o.block);
        let _ = write!(
            out,
            "
@group(0) @binding(0) var<storage, read_write> gmem: array<{gty}>;
@group(0) @binding(1) var<storage, read> words: array<u32>;
@group(0) @binding(2) var<storage, read> params: array<u32>;
@group(0) @binding(3) var<storage, read_write> flt: array<atomic<u32>>;
{gmemf}var<workgroup> smem: array<{sty}, {swords}>;
var<workgroup> wg_waiting: atomic<u32>;
var<workgroup> wg_held: atomic<u32>;
var<workgroup> wg_round: u32;{warp_decls}
var<private> lmem: array<u32, {lwords}>;
var<private> g_wid: vec3<u32>;
var<private> g_lid: vec3<u32>;
// The block's linear index (x fastest) in the CUDA grid.
var<private> g_blin: u32;
// This thread's fault (class, line, address) not yet recorded (raise).
var<private> g_fcls: u32;
var<private> g_fline: u32;
var<private> g_fa: vec2<u32>;
// The line plus one of the watchdog fault that ended this thread, where
// faults end the thread (watchdog.rs), taken into the record at its end.
var<private> g_wd: u32;
// Never true (the watchdog word is below 2^31); the f64 helpers select on it
// to keep values opaque to the shader compiler's algebra.
var<private> opq: bool;
const GB: u32 = {gb}u;
const SHARED_BYTES: u32 = {shared}u;
const RSMEM_BEGIN: u32 = {rbegin}u;
const RSMEM_END: u32 = {rend}u;
const LOCAL_BYTES: u32 = {local}u;
const PARAM_BYTES: u32 = {param}u;

{raise_fn}// The record keeps the lowest block (linear, x fastest) that faulted; the
// details are the first fault's, or with the launch word meta::FAULT_ONLY
// (not 0xffffffff) the first fault's of that block.
fn raise_t(cls: u32, line: u32, a: vec2<u32>, t: vec3<u32>) {{
  let key = g_blin;
  atomicMin(&flt[{min_key}], key);
  let only = words[{only}];
  if (only != 0xffffffffu && only != key) {{ return; }}
  if (atomicAdd(&flt[{claimed}], 1u) == 0u) {{
    atomicStore(&flt[{key_w}], key);
    atomicStore(&flt[{class}], cls);
    atomicStore(&flt[{line_w}], line);
    atomicStore(&flt[{b}], g_wid.x); atomicStore(&flt[{b}u + 1u], g_wid.y); atomicStore(&flt[{b}u + 2u], g_wid.z);
    atomicStore(&flt[{t}], t.x); atomicStore(&flt[{t}u + 1u], t.y); atomicStore(&flt[{t}u + 2u], t.z);
    atomicStore(&flt[{a}], a.x); atomicStore(&flt[{a}u + 1u], a.y);
  }}
}}
// A global byte address -> its byte offset in gmem, or {BAD} after a fault.
// c: the access site's cache of the last region it found, for accesses of
// at most span bytes (align: a power of two): its first byte's address, GB
// included, and its length less span, plus one (0 where shorter; (0, 0) at
// first): an aligned access whose offset in it is below that lies inside it
// and needs no search of the table.
fn gaddr(a: vec2<u32>, size: u32, align: u32, line: u32, write: bool, c: ptr<private, vec2<u32>>, span: u32) -> u32 {{
  let o = a.x - GB;
  let r = *c;
  if ((a.y | (a.x & (align - 1u))) == 0u && a.x - r.x < r.y) {{ return o; }}
  if (a.y == 0u && a.x >= GB) {{
    let n = words[{nreg}];
    for (var i = 0u; i < n; i = i + 1u) {{
      let s = words[{regs}u + 3u * i];
      let e = words[{regs}u + 3u * i + 1u];
      if (o >= s && o < e) {{
        if (e - o < size || (write && words[{regs}u + 3u * i + 2u] == 0u)) {{ break; }}
        if ((o % align) != 0u) {{ raise({mis}u, line, a); return {BAD}; }}
        *c = vec2<u32>(s + GB, cache_len(e - s, span));
        return o;
      }}
    }}
  }}
  raise({oob}u, line, a);
  return {BAD};
}}
// A region cache's second word for a region of len bytes and accesses of at
// most span bytes (gaddr).
fn cache_len(len: u32, span: u32) -> u32 {{ return select(0u, len - span + 1u, len >= span); }}
// A shared, local or parameter offset checked against the space's size
// (shared memory: or in the reserved region's usable bytes rb..re; size,
// limit, rb and re are constants at every call, so each range is one or two
// comparisons).
fn saddr(a: vec2<u32>, size: u32, align: u32, line: u32, limit: u32, rb: u32, re: u32) -> u32 {{
  let own = limit >= size && a.x <= limit - size;
  let rsv = re >= size && a.x >= rb && a.x <= re - size;
  if (a.y != 0u || !(own || rsv)) {{ raise({oob}u, line, a); return {BAD}; }}
  if ((a.x % align) != 0u) {{ raise({mis}u, line, a); return {BAD}; }}
  return a.x;
}}
",
            gb = GLOBAL_BASE,
            local = k.local_bytes,
            param = k.param_bytes,
            claimed = fault::CLAIMED,
            min_key = fault::MIN_KEY,
            key_w = fault::KEY,
            only = meta::FAULT_ONLY,
            class = fault::CLASS,
            line_w = fault::LINE,
            b = fault::BLOCK,
            t = fault::THREAD,
            a = fault::ADDR,
            nreg = meta::NREGIONS,
            regs = meta::REGIONS,
            mis = fault::CLASS_MISALIGNED,
            oob = fault::CLASS_OUT_OF_BOUNDS,
            warp_decls = if k.has_warp_ops() {
                warp::decls(o.block.iter().product())
            } else {
                String::new()
            },
        );
        // Word readers and writers per space. Shared and local memory,
        // fixed-size arrays, clamp their word index themselves (as naga's
        // clamp would), so that vgpu-gpu can prove every fixed-size index in
        // bounds and compile without naga's; `rd_s_in`/`wr_s_in` take an
        // index already below the length (the padded tiles' `min(base, last)
        // + k`, padded_smem.rs). Global memory and the parameters are
        // runtime-sized: the device's robust buffers or naga's buffer clamps
        // keep those in bounds.
        let spaces: [(&str, &str, bool, bool, Option<u64>); 4] = [
            ("g", "gmem", g_atomic, true, None),
            ("s", "smem", s_atomic, true, Some(swords - 1)),
            ("l", "lmem", false, true, Some(lwords as u64 - 1)),
            ("p", "params", false, false, None),
        ];
        for (n, arr, atomic, writable, last) in spaces {
            let word = match last {
                Some(l) => format!("{arr}[min(i, {l}u)]"),
                None => format!("{arr}[i]"),
            };
            // A word's read and write, atomic where the space's words are.
            let load = |w: &str| {
                if atomic {
                    format!("atomicLoad(&{w})")
                } else {
                    w.to_string()
                }
            };
            let store = |w: &str| {
                if atomic {
                    format!("atomicStore(&{w}, v);")
                } else {
                    format!("{w} = v;")
                }
            };
            let rd = load(&word);
            if n == "s" {
                let raw = format!("{arr}[i]");
                let _ = write!(
                    out,
                    "
fn rd_{n}_in(i: u32) -> u32 {{ return {}; }}
fn wr_{n}_in(i: u32, v: u32) {{ {} }}",
                    load(&raw),
                    store(&raw)
                );
            }
            let _ = write!(
                out,
                "
fn rd_{n}(i: u32) -> u32 {{ return {rd}; }}
fn ld_{n}(o: u32, size: u32, sign: bool) -> vec2<u32> {{
  let i = o >> 2u;
  if (size == 8u) {{ return vec2<u32>(rd_{n}(i), rd_{n}(i + 1u)); }}
  if (size == 4u) {{ return vec2<u32>(rd_{n}(i), 0u); }}
  let bits = size * 8u;
  var v = (rd_{n}(i) >> ((o & 3u) * 8u)) & msk(bits);
  if (sign) {{ return sw64(sx32(v, bits)); }}
  return vec2<u32>(v, 0u);
}}
"
            );
            if !writable {
                continue;
            }
            if atomic {
                let _ = write!(
                    out,
                    "
// A read-modify-write by compare-and-swap; returns the old word.
fn atom_{n}(i: u32, op: u32, b: u32, c: u32) -> u32 {{
  var old = atomicLoad(&{word});
  loop {{
    let r = atomicCompareExchangeWeak(&{word}, old, atom_new(op, old, b, c));
    if (r.exchanged) {{ break; }}
    old = r.old_value;
  }}
  return old;
}}
"
                );
            }
            let wr = store(&word);
            let sub = if atomic {
                format!("atomicAnd(&{word}, ~(m << sh)); atomicOr(&{word}, (v.x & m) << sh);")
            } else {
                format!("{word} = ({word} & ~(m << sh)) | ((v.x & m) << sh);")
            };
            let _ = write!(
                out,
                "fn wr_{n}(i: u32, v: u32) {{ {wr} }}
fn st_{n}(o: u32, size: u32, v: vec2<u32>) {{
  let i = o >> 2u;
  if (size == 8u) {{ wr_{n}(i, v.x); wr_{n}(i + 1u, v.y); return; }}
  if (size == 4u) {{ wr_{n}(i, v.x); return; }}
  let m = msk(size * 8u);
  let sh = (o & 3u) * 8u;
  {sub}
}}
"
            );
        }
        out.push_str(&access::generic_prelude(k));
        let bar_check = checks::barrier_check(k, o.checked);
        let shadow_check = self.shadow;
        if bar_check {
            out.push_str(&checks::barrier_decls(k));
        }
        if shadow_check {
            out.push_str(&checks::shadow_decls(shared, o.block));
        }
        if bar_check || shadow_check {
            out.push_str(&checks::raise_lidx_decl(self.soft));
        }
        if self.ginit {
            out.push_str(&checks::ginit_decls(super::initcheck_binding(k, o)));
        }
        if self.race {
            out.push_str(&checks::race_decls(shared, o.block));
        }
    }

    /// `main`: the grid's fold, then `run_thread` where the kernel has its
    /// structured form (`structured`: its body), else the state machine.
    fn main(&mut self, structured: Option<String>) -> Result<(), IrError> {
        let k = self.k;
        let [bx, by, bz] = self.o.block;
        let _ = write!(
            self.out,
            "
@compute @workgroup_size({bx}, {by}, {bz})
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lidx: u32) {{
  // %ctaid and %nctaid: the workgroup's, or from its linear index when the
  // dispatch folds a larger grid (meta::GRID); past the grid's end, nothing.
  var cta = wid;
  var ncta = nwg;
  var pc: u32 = 0u;
  if (words[{grid}u] != 0u) {{
    ncta = vec3<u32>(words[{grid}u], words[{grid}u + 1u], words[{grid}u + 2u]);
    let lin = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
    // A 1-D grid's block is its linear index (no division by the extents).
    if (ncta.y == 1u && ncta.z == 1u) {{ cta = vec3<u32>(lin, 0u, 0u); }} else {{
      cta = vec3<u32>(lin % ncta.x, (lin / ncta.x) % ncta.y, lin / (ncta.x * ncta.y));
    }}
    if (lin >= ncta.x * ncta.y * ncta.z) {{ pc = {RET}u; }}
  }}
  g_wid = cta;
  g_lid = lid;
  g_blin = cta.x + ncta.x * (cta.y + ncta.y * cta.z);
  opq = words[{wd}] == 0xffffffffu;
  var steps: u32 = 0u;
{seed}",
            wd = meta::WATCHDOG,
            grid = meta::GRID,
            seed = if self.o.checked {
                "  seed_caches();\n"
            } else {
                ""
            },
        );
        if let Some(body) = structured {
            // Where faults do not end the thread, the faulting thread's
            // index is its own until a check judging for another sets it
            // (`raise_if` selects only the other fields).
            let ft = if self.soft { "  g_ft = lidx;\n" } else { "" };
            let _ = writeln!(
                self.out,
                "  if (pc == {RET}u) {{ return; }}\n{ft}  run_thread(lid, cta, ncta, lidx);"
            );
            self.epilogue(false);
            self.out.push_str("}\n");
            self.out.push_str(&body);
            return Ok(());
        }
        self.reg_decls();
        if self.warps {
            // The round's parity (warp.rs double-buffers its slots by it).
            self.out
                .push_str("  var rnd: u32 = 0u;\n  var bt: u32 = 0u;\n");
        }
        let rounds = k.has_barriers() || self.warps || k.has_yields();
        if rounds {
            self.out.push_str("  loop {\n");
        }
        self.out.push_str(&format!(
            "  loop {{\n    if (pc >= {WARP}u) {{ break; }}\n    switch pc {{\n"
        ));
        // Loop headers: targets of a jump from a block at or after them.
        let mut header = vec![false; k.blocks.len()];
        for (i, b) in k.blocks.iter().enumerate() {
            let ts: Vec<BlockId> = match b.term {
                Term::Jump(t) => vec![t],
                Term::Branch { then, els, .. } => vec![then, els],
                Term::Barrier { next, .. } | Term::Warp { next, .. } | Term::Yield { next } => {
                    vec![next]
                }
                _ => vec![],
            };
            for t in ts {
                if t as usize <= i {
                    header[t as usize] = true;
                }
            }
        }
        let bar_check = checks::barrier_check(k, self.o.checked);
        let (bar_idx, _) = checks::barrier_indices(k);
        // The next continuation case's number (after the blocks').
        let mut next_case = k.blocks.len() as u32;
        for (i, b) in k.blocks.iter().enumerate() {
            let _ = writeln!(self.out, "      case {i}u: {{");
            let wd = self.watchdog(i, header[i]);
            self.out.push_str(&wd);
            // A case's exits so far (the watchdog's above): past
            // MAX_CASE_EXITS its statements go on in a continuation case.
            let mut exits = (self.o.checked && header[i]) as usize;
            for code in self.stmts_code(i, &b.stmts)? {
                let n = code.matches("break;").count();
                if exits > 0 && exits + n > MAX_CASE_EXITS {
                    if next_case >= BACK {
                        return Err(unsupported(
                            k,
                            format!("{next_case} basic blocks and continuations"),
                        ));
                    }
                    let _ = writeln!(
                        self.out,
                        "        pc = {next_case}u;\n      }}\n      case {next_case}u: {{"
                    );
                    next_case += 1;
                    exits = 0;
                }
                exits += n;
                self.out.push_str(&code);
            }
            let t = match b.term {
                Term::Jump(t) => self.goto(i, t),
                Term::Branch { p, neg, then, els } => {
                    let (a, c) = if neg { (els, then) } else { (then, els) };
                    let (ga, gc) = (self.goto(i, a), self.goto(i, c));
                    if ga.starts_with("bt") || gc.starts_with("bt") {
                        format!("if (r{p} != 0u) {{ {ga} }} else {{ {gc} }}")
                    } else {
                        format!("pc = select({c}u, {a}u, r{p} != 0u);")
                    }
                }
                Term::Barrier { next, .. } => match bar_idx[i] {
                    Some(j) if bar_check => format!("bar_i = {j}u; pc = {}u;", next | WAIT),
                    _ => format!("pc = {}u;", next | WAIT),
                },
                Term::Yield { next } => format!("pc = {}u;", next | YIELD),
                Term::Warp { guard, next, .. } => {
                    let stop = i as u32 | WARP;
                    match guard {
                        None => format!("pc = {stop}u;"),
                        Some((g, neg)) => {
                            let cmp = if neg { "==" } else { "!=" };
                            format!(
                                "if (r{g} {cmp} 0u) {{ pc = {stop}u; }} else {{ {} }}",
                                self.goto(i, next)
                            )
                        }
                    }
                }
                Term::Return => format!("pc = {RET}u;"),
                Term::Trap { line } => format!(
                    "raise({}u, {line}u, vec2<u32>(0u, 0u)); pc = {RET}u;",
                    fault::CLASS_TRAP
                ),
            };
            let _ = writeln!(self.out, "        {t}\n      }}");
        }
        let _ = writeln!(self.out, "      default: {{ pc = {RET}u; }}\n    }}\n  }}");
        self.epilogue(rounds);
        self.out.push_str("}\n");
        Ok(())
    }

    /// Statement `s`, under condition `cond` where faults do not end the
    /// thread ([`KernelWriter::soft`]): a faulting access is skipped
    /// (`t != BAD`), and every store and atomic of a thread that has faulted
    /// (`g_fcls == 0u`), as the thread would have stopped before it.
    fn soft_guard(&self, cond: &str, s: String) -> String {
        // A versioned loop's clean copy runs only where no thread had
        // faulted, and nothing in it can (versioned.rs).
        if self.soft && self.clean.is_none() {
            format!("if ({cond}) {{ {s} }}")
        } else {
            s
        }
    }

    /// The declarations of the kernel's registers (`r{i}`).
    pub(super) fn reg_decls(&mut self) {
        for (i, t) in self.k.regs.iter().enumerate() {
            let ty = match t {
                RegTy::B64 => "vec2<u32>",
                _ => "u32",
            };
            let _ = writeln!(self.out, "  var r{i}: {ty};");
        }
    }

    /// A statement's code, under its guard.
    pub(super) fn guarded(&mut self, s: &Stmt) -> Result<String, IrError> {
        let code = self.stmt(s)?;
        Ok(under_guard(s.guard, code))
    }

    /// What follows a thread's run in `main`: its fault recorded, then the
    /// rounds' end (`rounds`: the kernel runs in rounds) or, without rounds,
    /// the shared-memory initialisation check's judgement at the block's end;
    /// where faults do not end the thread, that judgement and then the
    /// block's earliest fault recorded ([`checks::soft_publish`]).
    fn epilogue(&mut self, rounds: bool) {
        let k = self.k;
        let bar_check = checks::barrier_check(k, self.o.checked);
        if self.soft {
            // The block's earliest fault recorded, or where there is none
            // the last interval's judgement (checks::soft_publish).
            let judge = if self.shadow {
                checks::uninit_judge()
            } else {
                String::new()
            };
            self.out
                .push_str(&checks::soft_publish(&judge, self.o.earliest_fault));
            return;
        }
        if self.o.checked {
            // The thread's fault, recorded before its round is judged.
            // A watchdog fault ended the thread with no fault before it
            // (one would have ended it): its address word is still zero;
            // `g_wd` holds its line plus one.
            let _ = write!(
                self.out,
                "  if (g_wd != 0u) {{ g_fcls = {}u; g_fline = g_wd - 1u; g_wd = 0u; }}
  if (g_fcls != 0u) {{ raise_t(g_fcls, g_fline, g_fa, g_lid); g_fcls = 0u; }}\n",
                fault::CLASS_WATCHDOG
            );
        }
        if self.warps {
            self.warp_round(RET, WAIT);
            self.out.push_str("  }\n");
        } else if rounds {
            // Threads at a barrier count 1, yielded ones 0x10000: the
            // barriers are released in a round where none yielded.
            let publish = if bar_check {
                checks::barrier_publish(RET)
            } else {
                String::new()
            };
            let judge = checks::judge(k, self.o.checked);
            let reset = self.race_reset("waiting");
            let mark = round_mark(&format!("pc != {RET}u && (pc & {YIELD}u) != 0u"));
            let refresh = self.shadow_refresh();
            let _ = write!(
                self.out,
                "{mark}{publish}  workgroupBarrier();
  if (lidx == 0u) {{ {ROUND_TAKE}{judge} }}
  let waiting = workgroupUniformLoad(&wg_round);
{refresh}  if (waiting == 0u) {{ break; }}
{reset}  if (pc != {RET}u) {{ pc = pc & select(~{WAIT}u, ~{YIELD}u, waiting >= 0x10000u); }}
  }}
"
            );
        }
        if !rounds && checks::shadow_check(k, self.o.checked) {
            // The block's end is the end of its one barrier interval: a
            // pending uninitialised read is reported there (checks.rs).
            let _ = write!(
                self.out,
                "  workgroupBarrier();\n  if (lidx == 0u) {{ wg_round = 0u;{} }}\n",
                checks::judge(k, self.o.checked)
            );
        }
    }

    /// After a round's judgement, with the initialisation check: whether
    /// all shared memory is written now ([`checks::shadow_refresh`]).
    pub(super) fn shadow_refresh(&self) -> &'static str {
        if self.shadow {
            checks::shadow_refresh()
        } else {
            ""
        }
    }

    /// The length in words of the shared array `smem`: the kernel's bytes
    /// with the reserved region's, or the padded length.
    fn smem_words(&self) -> u64 {
        let shared = self.k.shared_static as u64 + self.o.dyn_shared as u64;
        self.pad.map_or(unpadded_smem_words(shared), |p| p.words)
    }

    /// The word index of byte offset `t` in `space`'s array, clamped to a
    /// shared array's length as its readers and writers clamp (a native
    /// atomic indexes the array itself).
    fn word_index(&self, space: Space, t: &str) -> String {
        match space {
            Space::Shared => format!("min({t} >> 2u, {}u)", self.smem_words() - 1),
            _ => format!("{t} >> 2u"),
        }
    }

    /// At the end of a round whose count is `cnt` (uniform): with the race
    /// check, its marks cleared when the round released a barrier.
    pub(super) fn race_reset(&self, cnt: &str) -> String {
        if !self.race {
            return String::new();
        }
        let shared = self.k.shared_static + self.o.dyn_shared;
        format!(
            "  if ({cnt} < 0x10000u) {{
{}  }}
",
            checks::race_reset(shared, self.o.block.iter().product())
        )
    }

    fn stmt(&mut self, s: &Stmt) -> Result<String, IrError> {
        let line = s.line;
        Ok(match &s.inst {
            Inst::Load {
                space,
                size,
                sign,
                d,
                base,
                off,
                unused,
            } => {
                let sp = space_letter(*space);
                let mut code = String::new();
                for (i, r) in d.iter().enumerate() {
                    let align = element_align(*size, d.len(), i);
                    // An element the program does not use (`used_bytes_mask`)
                    // is no read for the initialisation check, as in the
                    // interpreter.
                    let (shadow, ginit, race) = (self.shadow, self.ginit, self.race);
                    let unused_elem = i < 32 && unused & (1 << i) != 0;
                    self.shadow &= !unused_elem;
                    self.ginit &= !unused_elem;
                    self.race &= !unused_elem;
                    let at = off + (i as i64) * (*size as i64);
                    let (c, t, may_fault) =
                        self.access(*space, *base, at, (*size, align), s, Rw::Read);
                    (self.shadow, self.ginit, self.race) = (shadow, ginit, race);
                    code.push_str(&c);
                    if let Some(r) = r {
                        let padded = (*space == Space::Shared)
                            .then(|| self.padded_index(s, *base, at, *size, align))
                            .flatten();
                        let e = match padded {
                            Some((i, sfx)) => format!("vec2<u32>(rd_s{sfx}({i}), 0u)"),
                            None => format!("ld_{sp}({t}, {size}u, {sign})"),
                        };
                        let mut a = self.assign(*r, e, ExprWidth::B64);
                        // A faulting load leaves its register as it was.
                        if may_fault {
                            a = self.soft_guard(&format!("{t} != {BAD}"), a);
                        }
                        let _ = writeln!(code, "        {a}");
                    }
                }
                code
            }
            Inst::Store {
                space,
                size,
                src,
                base,
                off,
            } => {
                if *space == Space::Param {
                    return Err(unsupported(
                        self.k,
                        format!("line {line}: a store to the parameter space"),
                    ));
                }
                let sp = space_letter(*space);
                let mut code = String::new();
                for (i, v) in src.iter().enumerate() {
                    let align = element_align(*size, src.len(), i);
                    let at = off + (i as i64) * (*size as i64);
                    let (c, t, _) = self.access(*space, *base, at, (*size, align), s, Rw::Write);
                    code.push_str(&c);
                    let padded = (*space == Space::Shared)
                        .then(|| self.padded_index(s, *base, at, *size, align))
                        .flatten();
                    let st = match padded {
                        Some((i, sfx)) => format!("wr_s{sfx}({i}, {});", self.v32(*v)),
                        None => format!("st_{sp}({t}, {size}u, {});", self.v64(*v)),
                    };
                    // A word that may reach shared memory, where regions
                    // take such words covered (coverage.rs): tested, before
                    // it is stored.
                    if self.coverage.smem_read() && matches!(space, Space::Shared | Space::Generic)
                    {
                        let _ = writeln!(
                            code,
                            "        if (tiny({})) {{ atomicOr(&smem_tiny, 1u); }}",
                            self.v32(*v)
                        );
                    }
                    let _ = writeln!(code, "        {}", self.soft_guard("g_fcls == 0u", st));
                }
                code
            }
            Inst::Atom {
                space,
                op,
                d,
                base,
                off,
                b,
                c,
            } => {
                let (code, native) = atom_code(*op);
                let (mut out, t, _) = self.access(*space, *base, *off, (4, 4), s, Rw::Atomic);
                let (arr, n) = match space {
                    Space::Global => ("gmem", "g"),
                    Space::Shared => ("smem", "s"),
                    // By the space its check found (access.rs).
                    Space::Generic => ("", "x"),
                    _ => {
                        return Err(unsupported(
                            self.k,
                            format!("line {line}: an atomic outside global and shared memory"),
                        ))
                    }
                };
                let (b, c) = (self.v32(*b), self.v32(*c));
                let e = if uses_gmemf(self.o, *space, *op) {
                    format!("bitcast<u32>(atomicAdd(&gmemf[{t} >> 2u], bitcast<f32>({b})))")
                } else {
                    match native.filter(|_| *space != Space::Generic) {
                        Some(f) => format!("{f}(&{arr}[{}], {b})", self.word_index(*space, &t)),
                        None => format!("atom_{n}({t} >> 2u, {code}u, {b}, {c})"),
                    }
                };
                let a = match d {
                    Some(r) => self.assign(*r, e, ExprWidth::B32),
                    None => format!("_ = {e};"),
                };
                let _ = writeln!(out, "        {}", self.soft_guard("g_fcls == 0u", a));
                out
            }
            Inst::Special { d, s } => {
                let [bx, by, bz] = self.o.block;
                let rsv = reserved_smem(self.k.shared_static as u64 + self.o.dyn_shared as u64);
                let e = match s {
                    Special::Tid(i) => format!("lid[{i}]"),
                    Special::Ntid(i) => format!("{}u", [bx, by, bz][(*i as usize).min(2)]),
                    Special::Ctaid(i) => format!("cta[{i}]"),
                    Special::Nctaid(i) => format!("ncta[{i}]"),
                    Special::LaneId => "(lidx & 31u)".into(),
                    Special::WarpId => "(lidx >> 5u)".into(),
                    Special::NWarpId => format!("{}u", (bx * by * bz).div_ceil(32)),
                    Special::LaneMask(m) => match m {
                        0 => "(1u << (lidx & 31u))".into(),
                        1 => "((1u << (lidx & 31u)) - 1u)".into(),
                        // 2u << 31u wraps to 0, so lane 31's `le` is all ones.
                        2 => "((2u << (lidx & 31u)) - 1u)".into(),
                        3 => "(~((2u << (lidx & 31u)) - 1u))".into(),
                        _ => "(~((1u << (lidx & 31u)) - 1u))".into(),
                    },
                    Special::DynSmem => format!("{}u", self.o.dyn_shared),
                    Special::TotalSmem | Special::ReservedSmemBegin => format!("{}u", rsv.0),
                    Special::ReservedSmemEnd => format!("{}u", rsv.1),
                    Special::ReservedSmemCap => format!("{}u", rsv.2),
                    Special::Const(v) => {
                        return Ok(format!(
                            "        {}\n",
                            self.assign(*d, self.v64(Val::Imm(*v)), ExprWidth::B64)
                        ))
                    }
                };
                format!("        {}\n", self.assign(*d, e, ExprWidth::B32))
            }
            Inst::Un { op, d, a } => {
                let (e, w) = self.un(*op, *a);
                format!("        {}\n", self.assign(*d, e, w))
            }
            Inst::Bin { op, d, a, b } => {
                let (e, w) = self.bin(*op, *a, *b);
                format!("        {}\n", self.assign(*d, e, w))
            }
            Inst::Tern { op, d, a, b, c } => {
                let (e, w) = self.tern(*op, *a, *b, *c);
                format!("        {}\n", self.assign(*d, e, w))
            }
            Inst::Cvt { op, d, a } => {
                let (e, w) = self.cvt(*op, *a);
                format!("        {}\n", self.assign(*d, e, w))
            }
        })
    }
}

/// Whether kernel `k`'s f32 fmas are the guarded device `fma` under `o`:
/// the device's fma chosen ([`CfgWgslOptions::native_fma_f32`]), SHADER_F64
/// there for the emulation, and the device not found to keep f32 subnormals
/// in its fma (where it does, the bare `fma` is exact) or its flush modelled
/// ([`CfgWgslOptions::fma_flush_model`]). A guarded fma whose result a flush
/// of subnormals may have changed is computed on the emulation
/// (`fma_native_f32`, prelude.rs), and a block's fmas run speculatively
/// first (speculate.rs).
pub fn fma_guarded(k: &CfgKernel, o: &CfgWgslOptions) -> bool {
    o.native_fma_f32 && o.f64 && (!o.f32_subnormals || o.fma_flush_model) && k.has_fma_f32()
}

/// `code` (whole lines) run only where `guard` (a predicate register, true
/// or, negated, false) lets it; as it is without one.
pub(super) fn under_guard(guard: Option<(Reg, bool)>, code: String) -> String {
    match guard {
        Some((g, neg)) => {
            let cmp = if neg { "==" } else { "!=" };
            format!("        if (r{g} {cmp} 0u) {{\n{code}        }}\n")
        }
        None => code,
    }
}
