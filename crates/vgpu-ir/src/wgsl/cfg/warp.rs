//! Warp operations in WGSL by workgroup-memory emulation: 32 lanes whatever
//! the adapter's subgroup size (lavapipe's is 8).
//!
//! A warp operation is a meeting point of the round structure (mod.rs): a
//! thread whose guard holds stops there (`pc = WARP | block`), as it stops at
//! `bar.sync`. In a kernel with warp operations a thread also stops where it
//! jumps backwards over a warp operation, at the jump (`WARP | BACK | from`,
//! the target in `bt`), as the interpreter's lane waits at its branch while
//! lower lanes of its warp run: between stops it never comes back to a warp
//! operation it has passed, and it cannot overtake lanes waiting at one.
//!
//! A round has the same two synchronisations as a round of a kernel with
//! barriers only (one `workgroupBarrier` and one `workgroupUniformLoad`; the
//! shader compilers of some drivers, lavapipe's LLVM among them, turn each
//! into a coroutine suspend point, and their compile time grows with the
//! number): before the barrier every thread publishes its stopped program
//! point (`wg_wpc`) and, when stopped at a warp operation, that operation's
//! operand (`wg_wv`), and counts itself as at a warp point (high half of the
//! round counter) or at a barrier (low half). After the uniform load, each
//! thread stopped at a warp point finds its warp's lowest stopped program
//! point — its group, the interpreter's min-PC rule — and the group's lanes
//! compute the result from their partners' slots and go on; a group stopped
//! at a backward jump takes it. The slots are double-buffered by the
//! round's parity, so a thread writing the next round's slots never overwrites
//! what a slower thread still reads. A thread that yielded (a strong load:
//! `Term::Yield`) counts with those at warp points and goes on in the next
//! round. Barriers are released only in a round where no thread stopped at a
//! warp point or yielded, so a warp operation never passes a `bar.sync` of
//! its own warp's threads, and a warp spinning on a flag lets the others run
//! to the store that sets it (the interpreter's rounds of yielding warps).
//!
//! A lane that does not take part publishes no operand (its slot holds its own
//! stopped operation's operand, or 0); a `shfl` reading such a lane is
//! undefined in CUDA, and the interpreter reads that lane's register there.

use std::fmt::Write;

use super::checks;
use super::writer::{round_mark, ExprWidth, KernelWriter, BACK, ROUND_TAKE, WARP, YIELD};
use crate::cfg::{ReduxOp, Reg, ShflMode, Term, VoteMode, WarpOp};

/// No warp point (`wg_wpc` of a thread that is not at one).
const NONE: u32 = 0xffff_ffff;
/// Kinds of the round's `switch kind`.
const SHFL: u32 = 0;
const VOTE: u32 = 1;
const REDUX: u32 = 2;
const ACTIVE: u32 = 3;
const MATCH: u32 = 4;
/// No value (`bar.warp.sync`).
const NOP: u32 = 5;

/// Bytes of workgroup memory the exchange takes for a block of `threads`
/// threads: a program point and a 64-bit value per thread, twice (the round's
/// parity).
pub fn warp_exchange_bytes(threads: u64) -> u64 {
    24 * threads
}

/// Declarations and helpers (after the shared-memory declarations).
pub(super) fn decls(threads: u32) -> String {
    format!(
        "
const NT: u32 = {threads}u;
var<workgroup> wg_wpc: array<u32, {two}>;
var<workgroup> wg_wv: array<vec2<u32>, {two}>;
const WSLOT_LAST: u32 = {last}u;
// This round's slots of the thread's warp: [wbase, wend) in wg_wpc / wg_wv.
var<private> wbase: u32;
var<private> wend: u32;
// Lane j's published value in the thread's warp (0 past the block).
fn wv(j: u32) -> vec2<u32> {{
  if (wbase + j < wend) {{ return wg_wv[min(wbase + j, WSLOT_LAST)]; }}
  return vec2<u32>(0u, 0u);
}}
",
        two = 2 * threads,
        last = 2 * threads - 1
    ) + HELPERS
}

/// The operations' helpers (lane arithmetic and the reductions over a warp's
/// published slots).
const HELPERS: &str = "// shfl.sync: the source lane and whether it is in range (mode 0 up, 1 down,
// 2 bfly, 3 idx; c = ((32 - width) << 8) | clamp).
fn shfl_src(mode: u32, l: u32, b: u32, c: u32) -> vec2<u32> {
  let bv = i32(b & 31u);
  let seg = i32((c >> 8u) & 31u);
  let cv = i32(c & 31u);
  let li = i32(l);
  let maxl = (li & seg) | (cv & ~seg);
  let minl = li & seg;
  var j = 0;
  var ok = false;
  switch mode {
    case 0u: { j = li - bv; ok = j >= maxl; }
    case 1u: { j = li + bv; ok = j <= maxl; }
    case 2u: { j = li ^ bv; ok = j <= maxl; }
    default: { j = minl | (bv & ~seg); ok = j <= maxl; }
  }
  if (!(ok && j >= 0 && j < 32)) { j = li; }
  return vec2<u32>(u32(j), select(0u, 1u, ok));
}
fn ballot(em: u32, neg: bool) -> u32 {
  var m = 0u;
  for (var j = 0u; j < 32u; j = j + 1u) {
    if (((em >> j) & 1u) != 0u && ((wv(j).x & 1u) != 0u) != neg) { m = m | (1u << j); }
  }
  return m;
}
// redux.sync over the lanes of g (op 0 add, 1 min, 2 max, 3 and, 4 or, 5 xor).
fn redux32(op: u32, signed: bool, g: u32) -> u32 {
  var acc = select(0u, 0xffffffffu, op == 3u);
  var first = true;
  for (var j = 0u; j < 32u; j = j + 1u) {
    if (((g >> j) & 1u) == 0u) { continue; }
    let v = wv(j).x;
    let lt = select(v < acc, bitcast<i32>(v) < bitcast<i32>(acc), signed);
    let gt = select(v > acc, bitcast<i32>(v) > bitcast<i32>(acc), signed);
    switch op {
      case 0u: { acc = acc + v; }
      case 1u: { if (first || lt) { acc = v; } }
      case 2u: { if (first || gt) { acc = v; } }
      case 3u: { acc = acc & v; }
      case 4u: { acc = acc | v; }
      default: { acc = acc ^ v; }
    }
    first = false;
  }
  return acc;
}
// match.any.sync: the lanes of em whose value equals lane l's.
fn match_any(em: u32, l: u32) -> u32 {
  let x = wv(l);
  var m = 0u;
  for (var j = 0u; j < 32u; j = j + 1u) {
    if (((em >> j) & 1u) != 0u && all(wv(j) == x)) { m = m | (1u << j); }
  }
  return m;
}
// match.all.sync: whether every lane of em has the same value.
fn match_same(em: u32) -> bool {
  if (em == 0u) { return true; }
  return match_any(em, firstTrailingBit(em)) == em;
}
";

fn shfl_code(m: ShflMode) -> u32 {
    match m {
        ShflMode::Up => 0,
        ShflMode::Down => 1,
        ShflMode::Bfly => 2,
        ShflMode::Idx => 3,
    }
}

fn redux_code(op: ReduxOp) -> u32 {
    match op {
        ReduxOp::Add => 0,
        ReduxOp::Min => 1,
        ReduxOp::Max => 2,
        ReduxOp::And => 3,
        ReduxOp::Or => 4,
        ReduxOp::Xor => 5,
    }
}

impl KernelWriter<'_> {
    /// The round's tail in a kernel with warp operations: publishes each
    /// thread's stop and operand, counts the threads at warp points (high
    /// half) and at barriers (low half) with one barrier and one uniform load,
    /// ends when none is at either, releases the barriers when none is at a
    /// warp point, else runs each warp's group.
    pub(super) fn warp_round(&mut self, ret: u32, wait: u32) {
        let k = self.k;
        // The barrier check (checks.rs), in checked mode.
        let publish = if checks::barrier_check(k, self.o.checked) {
            checks::barrier_publish(ret)
        } else {
            String::new()
        };
        let judge = checks::judge(k, self.o.checked);
        let reset = self.race_reset("cnt");
        let mark = round_mark("at_warp || at_yield");
        let take = ROUND_TAKE;
        let refresh = self.shadow_refresh();
        let _ = write!(
            self.out,
            "  let at_warp = pc >= {WARP}u && pc < {wait}u;
  let pb = (rnd & 1u) * NT;
  rnd = rnd + 1u;
  wg_wpc[min(pb + lidx, WSLOT_LAST)] = select({NONE}u, pc - {WARP}u, at_warp);
  var pv = vec2<u32>(0u, 0u);
  switch pc {{
"
        );
        for (i, b) in k.blocks.iter().enumerate() {
            if let Term::Warp { op, .. } = b.term {
                if let Some(a) = op.shared_operand() {
                    let _ = writeln!(
                        self.out,
                        "    case {}u: {{ pv = {}; }}",
                        i as u32 | WARP,
                        self.v64(a)
                    );
                }
            }
        }
        let _ = write!(
            self.out,
            "    default: {{}}
  }}
  wg_wv[min(pb + lidx, WSLOT_LAST)] = pv;
  let at_yield = pc != {ret}u && (pc & {YIELD}u) != 0u;
{mark}{publish}  workgroupBarrier();
  if (lidx == 0u) {{ {take}{judge} }}
  let cnt = workgroupUniformLoad(&wg_round);
{refresh}  if (cnt == 0u) {{ break; }}
{reset}  if (cnt < 0x10000u) {{
    if (pc != {ret}u) {{ pc = pc & ~{wait}u; }}
    continue;
  }}
  if (at_yield) {{ pc = pc & ~{YIELD}u; }}
  if (at_warp) {{
    wbase = pb + (lidx & ~31u);
    wend = min(wbase + 32u, pb + NT);
    var mn = {NONE}u;
    for (var j = wbase; j < wend; j = j + 1u) {{ mn = min(mn, wg_wpc[min(j, WSLOT_LAST)] & ~{BACK}u); }}
    if (((pc - {WARP}u) & ~{BACK}u) == mn && (pc & {BACK}u) != 0u) {{
      pc = bt;
    }} else if (pc - {WARP}u == mn) {{
      var em = 0u;
      for (var j = wbase; j < wend; j = j + 1u) {{ if (wg_wpc[min(j, WSLOT_LAST)] == mn) {{ em = em | (1u << (j - wbase)); }} }}
      let l = lidx & 31u;
      // The group's operation as data (one copy of the lane arithmetic and
      // reductions, however many warp operations the kernel has: the shader
      // compiler inlines every call, and its time grows with the code).
      var kind = {NOP}u;
      var md = 0u;
      var xb = 0u;
      var xc = 0u;
      switch mn {{
"
        );
        for (i, b) in k.blocks.iter().enumerate() {
            if let Term::Warp { op, .. } = b.term {
                let (kind, md, xb, xc) = self.warp_params(op);
                let _ = writeln!(
                    self.out,
                    "        case {i}u: {{ kind = {kind}u; md = {md}u; xb = {xb}; xc = {xc}; }}"
                );
            }
        }
        let _ = write!(
            self.out,
            "        default: {{}}
      }}
      var res = 0u;
      var res2 = 0u;
      switch kind {{
        case {SHFL}u: {{
          let sj = shfl_src(md, l, xb, xc);
          res = wv(sj.x).x;
          res2 = sj.y;
        }}
        case {VOTE}u: {{
          let bl = ballot(em, xb != 0u);
          switch md {{
            case 0u: {{ res = select(0u, 1u, bl == em); }}
            case 1u: {{ res = select(0u, 1u, bl != 0u); }}
            case 2u: {{ res = select(0u, 1u, bl == em || bl == 0u); }}
            default: {{ res = bl; }}
          }}
        }}
        case {REDUX}u: {{ res = redux32(md, xb != 0u, xc & em); }}
        case {ACTIVE}u: {{ res = em; }}
        case {MATCH}u: {{
          let same = match_same(em);
          res = select(match_any(em, l), select(0u, em, same), md != 0u);
          res2 = select(0u, 1u, same);
        }}
        default: {{}}
      }}
      switch mn {{
"
        );
        for (i, b) in k.blocks.iter().enumerate() {
            if let Term::Warp { op, next, .. } = b.term {
                let mut code = String::new();
                let (d, p) = warp_dsts(op);
                if let Some(d) = d {
                    code += &self.assign(d, "res".into(), ExprWidth::B32);
                    code.push(' ');
                }
                if let Some(p) = p {
                    code += &self.assign(p, "res2".into(), ExprWidth::B32);
                    code.push(' ');
                }
                let next = self.goto(i, next);
                let _ = writeln!(self.out, "        case {i}u: {{ {code}{next} }}");
            }
        }
        self.out.push_str(
            "        default: {}
      }
    }
  }
",
        );
    }

    /// The operation's kind, mode and two 32-bit operands as WGSL (see the
    /// `switch kind` of [`Self::warp_round`]).
    fn warp_params(&self, op: WarpOp) -> (u32, u32, String, String) {
        let zero = || "0u".to_string();
        match op {
            WarpOp::Shfl { mode, b, c, .. } => (SHFL, shfl_code(mode), self.v32(b), self.v32(c)),
            WarpOp::Vote { mode, neg, .. } => {
                let md = match mode {
                    VoteMode::All => 0,
                    VoteMode::Any => 1,
                    VoteMode::Uni => 2,
                    VoteMode::Ballot => 3,
                };
                (VOTE, md, format!("{}u", neg as u32), zero())
            }
            WarpOp::Redux {
                op, signed, mask, ..
            } => (
                REDUX,
                redux_code(op),
                format!("{}u", signed as u32),
                self.v32(mask),
            ),
            WarpOp::ActiveMask { .. } => (ACTIVE, 0, zero(), zero()),
            WarpOp::Match { all, .. } => (MATCH, all as u32, zero(), zero()),
            WarpOp::Sync => (NOP, 0, zero(), zero()),
        }
    }
}

/// The result register and the predicate (or second) register an operation
/// writes from `res` and `res2`.
fn warp_dsts(op: WarpOp) -> (Option<Reg>, Option<Reg>) {
    match op {
        WarpOp::Shfl { d, p, .. } | WarpOp::Match { d, p, .. } => (Some(d), p),
        WarpOp::Vote { d, .. } | WarpOp::Redux { d, .. } | WarpOp::ActiveMask { d } => {
            (Some(d), None)
        }
        WarpOp::Sync => (None, None),
    }
}
