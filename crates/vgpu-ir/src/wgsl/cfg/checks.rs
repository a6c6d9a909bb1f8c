//! The checker's block-level checks in checked mode (none of it is emitted
//! with [`super::CfgWgslOptions::checked`] off).
//!
//! Barrier divergence, as the interpreter (vgpu-ptx's exec) defines it: when a
//! barrier is released (a round in which every thread that has not exited
//! waits at a barrier and none yielded or stopped at a warp point), the
//! waiting threads must all wait at the same `bar.sync`, and no thread of the
//! block may have exited. In the rounds each thread waiting at barrier `i`
//! publishes its linear index in `wg_bar[i]` and each exited thread in
//! `wg_exit`, both as `0x10000 - lidx` by `atomicMax` (0: none), so each
//! holds the lowest such thread. Thread 0 then judges, before the round's
//! uniform load: the first waiting thread (in linear order, the interpreter's
//! order) fixes the barrier; the lowest thread waiting at another one is the
//! fault, at its own barrier's line; else the lowest exited thread is, at the
//! first waiting thread's barrier's line. A fault ends the rounds of the
//! workgroup (the round's count made 0).
//!
//! Uninitialised shared memory, as the interpreter's shadow (vgpu-ptx's
//! race.rs) defines it: a bit per byte of the kernel's shared memory
//! (`wg_init`, zero in a new workgroup), set by every store and atomic,
//! tested by every load; the reserved region counts as written. An atomic on
//! a byte nothing wrote faults at once. A load of one is kept, as the
//! interpreter keeps the first such read, and reported when its barrier
//! interval ends (the barrier's release, or the block's end) with the
//! interpreter's thread: the lowest one that made such a read (its first),
//! published in `wg_uninit` as `(1023 - lidx) << 22 | line` by `atomicMax`.
//! It comes before a barrier fault of the same release, as in the
//! interpreter. (The interpreter reports a read that another thread's later
//! write in the same interval makes a write-after-read race as that race;
//! the GPU, without the race check, reports it as uninitialised.)

use std::fmt::Write;

use super::fault;
use super::writer::{EXIT, WAIT};
use crate::cfg::{CfgKernel, Inst, Space, Term};

/// The barrier check's index of each block ending in a barrier (`None` for
/// other blocks), and the barriers' source lines in index order.
pub(super) fn barrier_indices(k: &CfgKernel) -> (Vec<Option<u32>>, Vec<u32>) {
    let mut lines = Vec::new();
    let idx = k
        .blocks
        .iter()
        .map(|b| match b.term {
            Term::Barrier { line, .. } => {
                lines.push(line);
                Some(lines.len() as u32 - 1)
            }
            _ => None,
        })
        .collect();
    (idx, lines)
}

/// Whether the kernel's WGSL under `checked` has the barrier check.
pub(super) fn barrier_check(k: &CfgKernel, checked: bool) -> bool {
    checked && k.has_barriers()
}

/// Declarations of the barrier check: the per-barrier lowest waiting
/// thread, the lowest exited thread, the barriers' lines and the thread's
/// current barrier.
pub(super) fn barrier_decls(k: &CfgKernel) -> String {
    let (_, lines) = barrier_indices(k);
    let n = lines.len().max(1);
    let list = lines
        .iter()
        .map(|l| format!("{l}u"))
        .collect::<Vec<_>>()
        .join(", ");
    let last = n - 1;
    format!(
        "
// The barrier check (checks.rs).
var<workgroup> wg_bar: array<atomic<u32>, {n}>;
// The last slot of wg_bar (every index into a workgroup array is clamped
// by the kernel itself, so that vgpu-gpu can drop naga's clamps).
const BAR_LAST: u32 = {last}u;
var<workgroup> wg_exit: atomic<u32>;
fn bar_line(i: u32) -> u32 {{
  var l = array<u32, {n}>({list});
  return l[min(i, {last}u)];
}}
var<private> bar_i: u32;
"
    )
}

/// Bytes of workgroup memory the checks take for `k` with `shared` bytes of
/// the kernel's shared memory (static and dynamic) under `checked`.
pub fn check_workgroup_bytes(k: &CfgKernel, shared: u64, checked: bool) -> u64 {
    let bar = if barrier_check(k, checked) {
        4 * (barrier_indices(k).1.len().max(1) as u64 + 1)
    } else {
        0
    };
    let shadow = if shadow_check(k, checked) {
        4 * (shared.div_ceil(32).max(1) + 2)
    } else {
        0
    };
    bar + shadow
}

/// What a thread publishes before the round's `workgroupBarrier` (`ret`: the
/// returned thread's `pc`).
pub(super) fn barrier_publish(ret: u32) -> String {
    format!(
        "  if (pc == {ret}u) {{ atomicMax(&wg_exit, 0x10000u - lidx); }} else if ((pc & {WAIT}u) != 0u) {{ atomicMax(&wg_bar[min(bar_i, BAR_LAST)], 0x10000u - lidx); }}\n"
    )
}

/// Whether the kernel's WGSL under `checked` has the shared-memory
/// initialisation check: checked, and the kernel reads shared memory (a load
/// or an atomic, by a shared or generic address).
pub(super) fn shadow_check(k: &CfgKernel, checked: bool) -> bool {
    checked
        && k.blocks.iter().flat_map(|b| &b.stmts).any(|s| {
            matches!(
                s.inst,
                Inst::Load {
                    space: Space::Shared | Space::Generic,
                    ..
                } | Inst::Atom {
                    space: Space::Shared | Space::Generic,
                    ..
                }
            )
        })
}

/// Declarations of the initialisation check: a bit per byte of the kernel's
/// `shared` bytes, the pending read, and the readers and writers of the bits
/// (`sh_rd` records a pending read, `sh_wr` marks bytes written, `sh_at`
/// faults an atomic on unwritten bytes and returns false then).
///
/// The bits only ever get set, so once every one is, no read can find an
/// unwritten byte. The store that completes a word (its `atomicOr` is the
/// one that finds some of the word's bits clear and leaves none) counts it
/// in `wg_nfull`, so the count is of full words without a scan, and after
/// a release each thread notes in `sh_full` ([`shadow_refresh`]) whether
/// all are, which spares the bits' reads and writes from then on. The
/// count only grows, so a thread that reads it after stores of the next
/// interval raised it still reads the truth.
///
/// A pending read goes to `wg_uninit[sh_rp]`, packed by `sh_rd` and
/// unpacked by `sh_report`. The rounds and the state
/// machine leave `sh_rp` at 0; the structured form's barriers
/// ([`shadow_release`]) alternate it, so that the interval after a barrier
/// writes the other slot while the threads still judge this one.
pub(super) fn shadow_decls(shared: u32, block: [u32; 3]) -> String {
    let words = shared.div_ceil(32);
    let n = words.max(1);
    let [bx, by, _] = block;
    format!(
        "
// The shared-memory initialisation check (checks.rs).
var<workgroup> wg_init: array<atomic<u32>, {n}>;
var<workgroup> wg_nfull: atomic<u32>;
var<workgroup> wg_uninit: array<atomic<u32>, 2>;
const SH_WORDS: u32 = {words}u;
const SH_INIT_LAST: u32 = {last}u;
var<private> sh_pend: bool;
var<private> sh_full: bool;
var<private> sh_rp: u32;
fn sh_unwritten(o: u32, size: u32) -> bool {{
  if (sh_full || o >= SHARED_BYTES) {{ return false; }}
  let m = msk(size) << (o & 31u);
  return (atomicLoad(&wg_init[min(o >> 5u, SH_INIT_LAST)]) & m) != m;
}}
fn sh_rd(o: u32, size: u32, line: u32) {{
  if (!sh_pend && sh_unwritten(o, size)) {{
    sh_pend = true;
    let t = g_lid.x + {bx}u * (g_lid.y + {by}u * g_lid.z);
    atomicMax(&wg_uninit[sh_rp & 1u], ((1023u - t) << 22u) | min(line, 0x3fffffu));
  }}
}}
fn sh_report(u: u32) {{
  raise_lidx({cls}u, u & 0x3fffffu, 1023u - (u >> 22u));
}}
fn sh_wr(o: u32, size: u32) {{
  if (!sh_full && o < SHARED_BYTES) {{
    let w = o >> 5u;
    let m = msk(size) << (o & 31u);
    let full = msk(min(SHARED_BYTES - 32u * w, 32u));
    let old = atomicOr(&wg_init[min(w, SH_INIT_LAST)], m);
    if ((old & full) != full && ((old | m) & full) == full) {{ atomicAdd(&wg_nfull, 1u); }}
  }}
}}
fn sh_at(o: u32, line: u32) -> bool {{
  if (sh_unwritten(o, 4u)) {{ raise({cls}u, line, vec2<u32>(o, 0u)); return false; }}
  return true;
}}
",
        cls = fault::CLASS_UNINITIALIZED,
        last = n - 1,
    )
}

/// The statements after an access's checked offset `t` in shared memory
/// (`generic`: the access was by a generic address, in shared memory when
/// `gsp` is 1): the initialisation check's bits. `rw`: 0 load, 1 store,
/// 2 atomic.
pub(super) fn shadow_access(t: &str, size: u8, line: u32, rw: u32, generic: bool) -> String {
    let s = match rw {
        0 => format!("sh_rd({t}, {size}u, {line}u);"),
        1 => format!("sh_wr({t}, {size}u);"),
        _ => format!("if (!sh_at({t}, {line}u)) {{ {EXIT} }}"),
    };
    in_space(s, generic, 1)
}

/// Thread 0's judgement, inside its `if (lidx == 0u)` after `wg_round` is
/// read (the round's count: barrier waiters in the low half, threads at warp
/// points or yielded in the high half; 0 at the block's end): a pending
/// uninitialised read at a release or the end, then barrier divergence at a
/// release. A fault makes `wg_round` 0 (the rounds end).
pub(super) fn judge(k: &CfgKernel, checked: bool) -> String {
    let mut s = String::new();
    let bar = barrier_check(k, checked);
    if bar {
        let _ = write!(
            s,
            "
    // The barrier check (checks.rs): the first and second lowest barriers'
    // first threads, and the first exited thread.
    let ex = atomicExchange(&wg_exit, 0u);
    var f0 = 0u; var i0 = 0u; var f1 = 0u; var i1 = 0u;
    for (var i = 0u; i < {n}u; i = i + 1u) {{
      let v = atomicExchange(&wg_bar[min(i, BAR_LAST)], 0u);
      if (v > f0) {{ f1 = f0; i1 = i0; f0 = v; i0 = i; }} else if (v > f1) {{ f1 = v; i1 = i; }}
    }}",
            n = barrier_indices(k).1.len(),
        );
    }
    if shadow_check(k, checked) {
        s.push_str(&uninit_judge());
    }
    if bar {
        let _ = write!(
            s,
            "
    if (wg_round != 0u && wg_round < 0x10000u) {{
      if (f1 != 0u) {{ raise_lidx({cls}u, bar_line(i1), 0x10000u - f1); wg_round = 0u; }}
      else if (ex != 0u) {{ raise_lidx({cls}u, bar_line(i0), 0x10000u - ex); wg_round = 0u; }}
    }}",
            cls = fault::CLASS_BARRIER,
        );
    }
    if !s.is_empty() {
        s.push('\n');
    }
    s
}

/// The initialisation check's part of [`judge`]: a read of unwritten shared
/// memory pending when the interval ends (`wg_round` below `0x10000`: a
/// release or the block's end) faults for the thread that made it. Both
/// slots are judged: at the
/// block's end of the structured form the last interval's may be either
/// (the other holds 0 or an earlier interval's read, already raised with
/// an earlier time, so raised again without effect: the block records its
/// earliest fault, [`soft_publish`]).
pub(super) fn uninit_judge() -> String {
    "
    // The initialisation check: a read of unwritten shared memory pending at
    // the interval's end.
    if (wg_round < 0x10000u) {
      for (var s = 0u; s < 2u; s = s + 1u) {
        let u = atomicLoad(&wg_uninit[s & 1u]);
        if (u != 0u) { sh_report(u); wg_round = 0u; }
      }
    }"
    .to_string()
}

/// A structured-form barrier's release of the initialisation check, after
/// its one `workgroupBarrier()`, in every thread whose `sh_full` is not yet
/// set: the interval's pending read of unwritten shared memory (slot
/// `sh_rp`, which no thread writes until every thread has passed the next
/// barrier) faults for the thread that made it, raised by every such
/// thread as a fault of the interval before the barrier
/// ([`raise_lidx_decl`]), so that it is the block's record unless a fault
/// came before it, as in the interpreter; then
/// the slot alternates and the thread notes whether all shared memory is
/// written (the count only grows, so a count that stores of the next
/// interval already raised is still true).
pub(super) fn shadow_release() -> String {
    format!(
        "  if (!sh_full) {{
    let u = atomicLoad(&wg_uninit[sh_rp & 1u]);
    if (u != 0u) {{ sh_report(u); }}
    sh_rp = sh_rp ^ 1u;
  {}  }}
",
        shadow_refresh()
    )
}

/// What each thread runs after a round's judgement (past the barrier or
/// uniform load that follows it) or a structured-form release
/// ([`shadow_release`]) where the kernel has the initialisation check:
/// whether all its shared memory is written now (`shadow_decls`).
pub(super) fn shadow_refresh() -> &'static str {
    "  sh_full = atomicLoad(&wg_nfull) >= SH_WORDS;\n"
}

/// `raise`, which keeps a fault of this thread (class, line, address) in
/// its private record (`g_fcls`, `g_fline`, `g_fa`; a thread keeps its
/// first), and `lid3`, a thread's linear index in the block as its
/// `%tid`.
///
/// Where a fault ends the thread (the state machine, the rounds, the
/// structured form without barriers) the thread's epilogue records it
/// (`raise_t`). Where it does not (`soft`: the structured form of a checked
/// kernel with barriers, whose threads go on meeting them), the record also
/// keeps the faulting thread (`g_ft`, linear) and when: `g_fkey`, twice the
/// barriers the thread has passed (`g_nbar`, counted alike in every thread
/// since the barriers are met alike), or one less for a read of unwritten
/// shared memory judged at a barrier's release (it was made before that
/// barrier, after the faults of the interval before it); the block records
/// its earliest fault at its end ([`soft_publish`]). So a barrier costs a
/// count, not a test and a recording site.
pub(super) fn raise_decl(soft: bool, block: [u32; 3]) -> String {
    let [bx, by, _] = block;
    let lid3 = format!(
        "fn lid3(t: u32) -> vec3<u32> {{
  return vec3<u32>(t % {bx}u, (t / {bx}u) % {by}u, t / ({bx}u * {by}u));
}}
"
    );
    if !soft {
        return format!(
            "// A fault of this thread, kept until the thread stops (at once) and
// recorded by raise_t in its epilogue: a recording site per kernel rather
// than one per checked access.
fn raise(cls: u32, line: u32, a: vec2<u32>) {{
  if (g_fcls == 0u) {{ g_fcls = cls; g_fline = line; g_fa = a; }}
}}
{lid3}"
        );
    }
    format!(
        "// A fault of this thread, kept with when it was raised (twice the
// barriers passed) until the block's end, which records the block's
// earliest (checks.rs, soft_publish).
var<private> g_ft: u32;
var<private> g_fkey: u32;
var<private> g_nbar: u32;
var<workgroup> wg_fmin: atomic<u32>;
fn raise(cls: u32, line: u32, a: vec2<u32>) {{
  if (g_fcls == 0u) {{
    g_fcls = cls; g_fline = line; g_fa = a;
    g_ft = g_lid.x + {bx}u * (g_lid.y + {by}u * g_lid.z); g_fkey = 2u * g_nbar;
  }}
}}
// raise of a fault without an address where c holds, without a branch (the
// watchdog of a loop through barriers, watchdog.rs): while g_fcls is 0,
// g_fa is still zero and g_ft this thread's index (set before run_thread).
fn raise_if(c: bool, cls: u32, line: u32) {{
  let w = c & (g_fcls == 0u);
  g_fline = select(g_fline, line, w); g_fkey = select(g_fkey, 2u * g_nbar, w);
  g_fcls = select(g_fcls, cls, w);
}}
{lid3}"
    )
}

/// `raise` for the thread of linear index `t` (declared by the checks that
/// fault for another thread than the one judging): recorded at once
/// (`raise_t`) where a judgement is thread 0's at a round's end, or, in the
/// structured form where faults do not end the thread (`soft`), kept in the
/// judging thread's record as a fault of the interval before the barrier
/// just passed ([`raise_decl`]).
pub(super) fn raise_lidx_decl(soft: bool) -> String {
    if soft {
        "fn raise_lidx(cls: u32, line: u32, t: u32) {
  if (g_fcls == 0u) {
    g_fcls = cls; g_fline = line; g_fa = vec2<u32>(0u, 0u); g_ft = t; g_fkey = 2u * g_nbar - 1u;
  }
}
"
        .to_string()
    } else {
        "fn raise_lidx(cls: u32, line: u32, t: u32) {
  raise_t(cls, line, vec2<u32>(0u, 0u), lid3(t));
}
"
        .to_string()
    }
}

/// The end of a block whose faults do not end the thread ([`raise_decl`]'s
/// `soft`), after every thread's run: the threads that faulted take the
/// least time of their faults (`wg_fmin` holds its complement: 0 is none)
/// and, after one barrier, those whose fault is that early record it. So
/// the block's record is a fault of its earliest faulting interval, as the
/// interpreter's first fault is. `judge` (thread 0's judgement of the last
/// interval's pending reads of unwritten shared memory, made after the
/// end's count as after a barrier) runs only where no thread faulted: a
/// fault it raises has the time `2·n − 1` of the end's interval, later than
/// any fault raised in the run (at most `2·(n − 1)`), so it is the block's
/// record only where there is no other, and thread 0 then records it at
/// once — one barrier where a second one, after the judgement, would only
/// ever let it lose.
///
/// Without `earliest` and a judgement, each thread that faulted records its
/// fault at once, with no barrier (`CfgWgslOptions::earliest_fault`): the
/// record's lowest faulting block is the same, and the launch that faults
/// runs again with `earliest` to take that block's earliest fault.
pub(super) fn soft_publish(judge: &str, earliest: bool) -> String {
    let record = "raise_t(g_fcls, g_fline, g_fa, lid3(g_ft));";
    if judge.is_empty() && !earliest {
        return format!("  if (g_fcls != 0u) {{ {record} }}\n");
    }
    let mut s = String::from(
        "  g_nbar = g_nbar + 1u;
  if (g_fcls != 0u) { atomicMax(&wg_fmin, ~g_fkey); }
  workgroupBarrier();
",
    );
    if judge.is_empty() {
        s.push_str(&format!(
            "  if (g_fcls != 0u && atomicLoad(&wg_fmin) == ~g_fkey) {{ {record} }}\n"
        ));
    } else {
        // Where no thread faulted (`fmin` 0), thread 0 alone may hold a
        // fault after the judgement.
        s.push_str(&format!(
            "  let fmin = atomicLoad(&wg_fmin);
  if (fmin == 0u && lidx == 0u) {{ wg_round = 0u;{judge}
  }}
  if (g_fcls != 0u && (fmin == 0u || fmin == ~g_fkey)) {{ {record} }}
"
        ));
    }
    s
}

/// Declarations of the global-memory initcheck (`initcheck`, as the
/// interpreter's vgpu-ptx memory.rs defines it): `ginit` at `binding`, bit
/// `o & 31` of word `o >> 5` set once byte `o` of `gmem` holds a value the
/// host or a thread wrote (the caller uploads the host's bits); `gi_rd`
/// faults a load of an unwritten byte (false then), `gi_wr` marks bytes
/// written, `gi_at` does both for an atomic. The fault's address is the
/// first unwritten byte's, its high word 0 for a load and 1 for an atomic
/// ([`fault::CLASS_UNINITIALIZED_GLOBAL`]).
pub(super) fn ginit_decls(binding: u32) -> String {
    format!(
        "
// The global-memory initcheck (checks.rs).
@group(0) @binding({binding}) var<storage, read_write> ginit: array<atomic<u32>>;
fn gi_rd(o: u32, size: u32, line: u32, what: u32) -> bool {{
  for (var j = 0u; j < size; j = j + 1u) {{
    let b = o + j;
    if (((atomicLoad(&ginit[b >> 5u]) >> (b & 31u)) & 1u) == 0u) {{
      raise({cls}u, line, vec2<u32>(GB + b, what));
      return false;
    }}
  }}
  return true;
}}
fn gi_wr(o: u32, size: u32) {{
  for (var j = 0u; j < size; j = j + 1u) {{
    let b = o + j;
    atomicOr(&ginit[b >> 5u], 1u << (b & 31u));
  }}
}}
fn gi_at(o: u32, line: u32) -> bool {{
  if (!gi_rd(o, 4u, line, 1u)) {{ return false; }}
  gi_wr(o, 4u);
  return true;
}}
",
        cls = fault::CLASS_UNINITIALIZED_GLOBAL,
    )
}

/// The statements after a global access's checked offset `t` (`generic`: by
/// a generic address, in global memory when `gsp` is 0): the global-memory
/// initcheck's test or mark. `rw`: 0 load, 1 store, 2 atomic.
pub(super) fn ginit_access(t: &str, size: u8, line: u32, rw: u32, generic: bool) -> String {
    let s = match rw {
        0 => format!("if (!gi_rd({t}, {size}u, {line}u, 0u)) {{ {EXIT} }}"),
        1 => format!("gi_wr({t}, {size}u);"),
        _ => format!("if (!gi_at({t}, {line}u)) {{ {EXIT} }}"),
    };
    in_space(s, generic, 0)
}

/// Whether the kernel's WGSL under `o` can have the shared-memory race check
/// (when asked, [`super::CfgChecks::race`]): checked, a block of more than
/// one CUDA warp (32 threads), shared memory, weak loads or stores by shared
/// or generic addresses, and no strong loads (a kernel that waits on a flag
/// with `.volatile`/`.relaxed`/`.acquire` loads orders its warps by release
/// and acquire, which the check does not follow: it is not checked).
pub fn race_check_applies(k: &CfgKernel, o: &super::CfgWgslOptions) -> bool {
    let threads: u64 = o.block.iter().map(|&b| b as u64).product();
    o.checked
        && threads > 32
        && k.shared_static as u64 + o.dyn_shared as u64 > 0
        && !k.has_yields()
        && k.blocks.iter().flat_map(|b| &b.stmts).any(|s| {
            matches!(
                s.inst,
                Inst::Load {
                    space: Space::Shared | Space::Generic,
                    ..
                } | Inst::Store {
                    space: Space::Shared | Space::Generic,
                    ..
                }
            )
        })
}

/// Bytes of workgroup memory the race check takes for `o`'s shared memory
/// (16 bits per byte; 0 when [`race_check_applies`] says no).
pub fn race_workgroup_bytes(k: &CfgKernel, o: &super::CfgWgslOptions) -> u64 {
    if race_check_applies(k, o) {
        4 * race_words(k.shared_static as u64 + o.dyn_shared as u64)
    } else {
        0
    }
}

fn race_words(shared: u64) -> u64 {
    shared.div_ceil(2).max(1)
}

/// Declarations of the shared-memory race check, the interpreter's
/// (vgpu-ptx race.rs) between warps: two accesses to one byte by threads of
/// different CUDA warps (32 consecutive linear thread indices) in one
/// barrier interval, at least one a weak write, race. Each byte of the
/// kernel's shared memory has 16 bits in `wg_race` (two bytes a word): the
/// last writer's warp + 1 (bits 0–5), the first reader's warp + 1 (6–11) and
/// whether warps other than that one read it (12). Each access updates its
/// bytes' marks by compare-and-swap, so whichever of two conflicting accesses
/// comes second sees the first, in any schedule. The marks are cleared at
/// each barrier's release ([`race_reset`]). `rc` faults
/// [`fault::CLASS_RACE`] at the second access (its thread and line; the
/// address's high word: 1 read-after-write, 2 write-after-write, 3
/// write-after-read, and the other warp in bits 8–15, 255 for one of several
/// reading warps) and returns true.
/// Atomics neither mark nor test (they never race with each other; a race
/// between an atomic and a weak access is not reported on the GPU), nor do
/// accesses within one warp (ordered or not by `bar.warp.sync`: the GPU does
/// not report them).
pub(super) fn race_decls(shared: u32, block: [u32; 3]) -> String {
    let n = race_words(shared as u64);
    let [bx, by, _] = block;
    format!(
        "
// The shared-memory race check (checks.rs).
var<workgroup> wg_race: array<atomic<u32>, {n}>;
const RACE_LAST: u32 = {last}u;
// Byte o's access by warp w + 1: 0, or the hazard | the other warp << 8.
fn rc_byte(o: u32, w: u32, write: bool) -> u32 {{
  let i = min(o >> 1u, RACE_LAST);
  let sh = (o & 1u) * 16u;
  var old = atomicLoad(&wg_race[i]);
  loop {{
    let m = (old >> sh) & 0xffffu;
    let wr = m & 63u;
    let rd = (m >> 6u) & 63u;
    var n = m;
    if (write) {{
      if (wr != 0u && wr != w) {{ return 2u | ((wr - 1u) << 8u); }}
      if (rd != 0u && rd != w) {{ return 3u | ((rd - 1u) << 8u); }}
      if ((m & 4096u) != 0u) {{ return 3u | (0xffu << 8u); }}
      n = (m & ~63u) | w;
    }} else {{
      if (wr != 0u && wr != w) {{ return 1u | ((wr - 1u) << 8u); }}
      if (rd == 0u) {{ n = m | (w << 6u); }} else if (rd != w) {{ n = m | 4096u; }}
    }}
    if (n == m) {{ return 0u; }}
    let r = atomicCompareExchangeWeak(&wg_race[i], old, (old & ~(0xffffu << sh)) | (n << sh));
    if (r.exchanged) {{ return 0u; }}
    old = r.old_value;
  }}
  return 0u;
}}
fn rc(o: u32, size: u32, write: bool, line: u32) -> bool {{
  let w = (g_lid.x + {bx}u * (g_lid.y + {by}u * g_lid.z)) / 32u + 1u;
  for (var j = 0u; j < size; j = j + 1u) {{
    let b = o + j;
    if (b >= SHARED_BYTES) {{ continue; }}
    let h = rc_byte(b, w, write);
    if (h != 0u) {{ raise({cls}u, line, vec2<u32>(b, h)); return true; }}
  }}
  return false;
}}
",
        cls = fault::CLASS_RACE,
        last = n - 1,
    )
}

/// What every thread runs at a barrier's release, in uniform control flow
/// (`threads`: the block's): the race check's marks cleared for the new
/// interval, then a `workgroupBarrier`.
pub(super) fn race_reset(shared: u32, threads: u32) -> String {
    format!(
        "    for (var i = lidx; i < {n}u; i = i + {threads}u) {{ atomicStore(&wg_race[min(i, RACE_LAST)], 0u); }}\n    workgroupBarrier();\n",
        n = race_words(shared as u64),
    )
}

/// The statements after a shared access's checked offset `t` (`generic`: by
/// a generic address, in shared memory when `gsp` is 1): the race check.
/// `rw`: 0 load, 1 store (atomics have none).
pub(super) fn race_access(t: &str, size: u8, line: u32, rw: u32, generic: bool) -> String {
    if rw > 1 {
        return String::new();
    }
    let s = format!("if (rc({t}, {size}u, {}, {line}u)) {{ {EXIT} }}", rw == 1);
    in_space(s, generic, 1)
}

/// A check's statement `s` after an access: as it is, or, for an access by a
/// generic address, only where the address resolved to the space `gsp`
/// (1 shared, 0 global).
fn in_space(s: String, generic: bool, gsp: u32) -> String {
    if generic {
        format!("        if (gsp == {gsp}u) {{ {s} }}\n")
    } else {
        format!("        {s}\n")
    }
}
