//! Memory accesses: the checked offset of one access in its state space, and
//! generic addresses, whose space each access decides at run time from the
//! address as the interpreter does (vgpu-ptx `memory::generic_window`): the
//! high word [`GENERIC_SHARED_WINDOW`]` >> 32` is shared memory, the high
//! word [`GENERIC_LOCAL_WINDOW`]` >> 32` local memory (the low word the
//! offset there), anything else global memory. Each space then has the
//! bounds, alignment and read-only checks (and fault records) of an access
//! that names it; an atomic on local memory faults out of bounds after the
//! alignment check, as the interpreter's does. A shared, local or parameter
//! access whose address the value ranges (ranges.rs) prove inside the
//! space's own bytes and aligned has no `saddr` test, which could not fail.

use std::fmt::Write;

use super::checks;
use super::fault;
use super::ranges;
use super::writer::{KernelWriter, EXIT};
use crate::cfg::{CfgKernel, Inst, Space, Stmt, Val, GENERIC_LOCAL_WINDOW, GENERIC_SHARED_WINDOW};

/// What an address check returns after recording a fault.
pub(super) const BAD: &str = "0xffffffffu";

/// What an access does with its bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Rw {
    /// A load.
    Read = 0,
    /// A store.
    Write = 1,
    /// An atomic read-modify-write.
    Atomic = 2,
}

/// The letter of a space's word readers and writers (`ld_g`, `st_s`, …);
/// `x` is a generic address's (by the space its check found).
pub(super) fn space_letter(s: Space) -> &'static str {
    match s {
        Space::Global => "g",
        Space::Shared => "s",
        Space::Local => "l",
        Space::Param => "p",
        Space::Generic => "x",
    }
}

/// Whether the space's words must be atomic: sub-word stores (an and/or pair
/// keeps the neighbouring bytes) or atomics there, generic ones included
/// (global and shared memory; local memory is the thread's own).
pub(super) fn needs_atomic_words(k: &CfgKernel, sp: Space) -> bool {
    let here = |s: &Space| *s == sp || (*s == Space::Generic && sp != Space::Local);
    k.blocks
        .iter()
        .flat_map(|b| &b.stmts)
        .any(|s| match &s.inst {
            Inst::Store { space, size, .. } => here(space) && *size < 4,
            Inst::Atom { space, .. } => here(space),
            _ => false,
        })
}

/// Whether the kernel accesses memory through a generic address (and
/// whether through a generic atomic).
fn generic_uses(k: &CfgKernel) -> (bool, bool) {
    let mut any = (false, false);
    for s in k.blocks.iter().flat_map(|b| &b.stmts) {
        match &s.inst {
            Inst::Load { space, .. } | Inst::Store { space, .. } => {
                any.0 |= *space == Space::Generic;
            }
            Inst::Atom { space, .. } if *space == Space::Generic => any = (true, true),
            _ => {}
        }
    }
    any
}

/// The helpers of generic accesses (after the spaces' readers and writers),
/// when the kernel has any: `xaddr` checks a generic address in the space it
/// names and leaves that space in `gsp` (0 global, 1 shared, 2 local), `xoff`
/// is its offset unchecked, and `ld_x`, `st_x`, `atom_x` access that space.
pub(super) fn generic_prelude(k: &CfgKernel) -> String {
    let (any, atomic) = generic_uses(k);
    if !any {
        return String::new();
    }
    let mut out = format!(
        "
const SHARED_TAG: u32 = {stag}u;
const LOCAL_TAG: u32 = {ltag}u;
// The space of the last generic access: 0 global, 1 shared, 2 local.
var<private> gsp: u32;
// A generic address -> its checked offset in the space its high word names
// (left in gsp), or {BAD} after a fault. mode: 0 load, 1 store, 2 atomic.
fn xaddr(a: vec2<u32>, size: u32, align: u32, line: u32, mode: u32, c: ptr<private, vec2<u32>>, span: u32) -> u32 {{
  let o = vec2<u32>(a.x, 0u);
  if (a.y == SHARED_TAG) {{
    gsp = 1u;
    return saddr(o, size, align, line, SHARED_BYTES, RSMEM_BEGIN, RSMEM_END);
  }}
  if (a.y == LOCAL_TAG) {{
    gsp = 2u;
    if (mode == 2u) {{
      // No atomics on local memory: the interpreter checks the alignment, then faults.
      raise(select({oob}u, {mis}u, (a.x % align) != 0u), line, o);
      return {BAD};
    }}
    return saddr(o, size, align, line, LOCAL_BYTES, 0u, 0u);
  }}
  gsp = 0u;
  return gaddr(a, size, align, line, mode != 0u, c, span);
}}
// The same, unchecked.
fn xoff(a: vec2<u32>) -> u32 {{
  if (a.y == SHARED_TAG) {{ gsp = 1u; return a.x; }}
  if (a.y == LOCAL_TAG) {{ gsp = 2u; return a.x; }}
  gsp = 0u;
  return a.x - GB;
}}
fn ld_x(o: u32, size: u32, sign: bool) -> vec2<u32> {{
  switch gsp {{
    case 1u: {{ return ld_s(o, size, sign); }}
    case 2u: {{ return ld_l(o, size, sign); }}
    default: {{ return ld_g(o, size, sign); }}
  }}
}}
fn st_x(o: u32, size: u32, v: vec2<u32>) {{
  switch gsp {{
    case 1u: {{ st_s(o, size, v); }}
    case 2u: {{ st_l(o, size, v); }}
    default: {{ st_g(o, size, v); }}
  }}
}}
",
        stag = GENERIC_SHARED_WINDOW >> 32,
        ltag = GENERIC_LOCAL_WINDOW >> 32,
        oob = fault::CLASS_OUT_OF_BOUNDS,
        mis = fault::CLASS_MISALIGNED,
    );
    if atomic {
        // Unchecked, a local word is updated in place (checked, it faulted).
        out.push_str(
            "fn atom_x(i: u32, op: u32, b: u32, c: u32) -> u32 {
  switch gsp {
    case 1u: { return atom_s(i, op, b, c); }
    case 2u: { let old = rd_l(i); wr_l(i, atom_new(op, old, b, c)); return old; }
    default: { return atom_g(i, op, b, c); }
  }
}
",
        );
    }
    out
}

/// The alignment element `i` of an access of `n` elements of `size` bytes
/// must have: the first the whole access's size (at most 16 bytes, as PTX
/// aligns vectors), the others their own.
pub(super) fn element_align(size: u8, n: usize, i: usize) -> u32 {
    if i == 0 {
        (size as u32 * n as u32).min(16)
    } else {
        size as u32
    }
}

/// How many global or generic access sites of a checked kernel keep the
/// region their last access found (`gaddr`'s cache, two registers each);
/// the sites past them share one cache for loads and one for stores and
/// atomics.
pub(super) const SITE_CACHES: u32 = 16;

/// The most bytes one access takes (a 16-byte vector): the span of the
/// caches that sites of different sizes share (`gc_r`, `gc_w`), whose fast
/// path then misses an access within the last 15 bytes of a region, which
/// the table search then finds.
pub(super) const SHARED_CACHE_SPAN: u32 = 16;

impl KernelWriter<'_> {
    /// The region cache for the next global or generic access site of
    /// `size` bytes (`write`: a store or atomic's, whose cache holds only
    /// writable regions) as `gaddr`'s last two arguments: its name and the
    /// most bytes its accesses take (the site's own `size`, or
    /// [`SHARED_CACHE_SPAN`] for the caches the sites past
    /// [`SITE_CACHES`] share).
    fn site_cache(&mut self, write: bool, base: Val, size: u8) -> (String, u32) {
        if self.site_caches < SITE_CACHES {
            let i = self.site_caches as usize;
            self.site_caches += 1;
            // A form given up hands its caches out again (emit.rs).
            let seed = self.seed_of(base).map(|slot| (slot, write, size as u32));
            self.site_seeds.truncate(i);
            self.site_seeds.push(seed);
            (format!("gc{i}"), size as u32)
        } else if write {
            ("gc_w".into(), SHARED_CACHE_SPAN)
        } else {
            ("gc_r".into(), SHARED_CACHE_SPAN)
        }
    }

    /// [`Self::site_cache`] as `gaddr`'s last two arguments, noted in
    /// [`KernelWriter::site_log`] for the access at `s`, `off` (aligned to
    /// `align`) where a loop being versioned keeps the log.
    fn site_cache_args(
        &mut self,
        write: bool,
        base: Val,
        (size, align): (u8, u32),
        s: &Stmt,
        off: i64,
    ) -> String {
        let (cache, span) = self.site_cache(write, base, size);
        if let Some(log) = &mut self.site_log {
            let key = (s as *const Stmt, off);
            if !log.iter().any(|(k, _, _)| *k == key) {
                log.push((key, cache.clone(), align));
            }
        }
        format!("&{cache}, {span}u")
    }

    /// The declarations of the region caches handed out
    /// ([`Self::site_cache`]): private, so empty at each thread's start,
    /// until `seed_caches` gives them their first guess (seeds.rs).
    pub(super) fn site_caches(&mut self) -> String {
        let mut s = String::from("var<private> gc_r: vec2<u32>;\nvar<private> gc_w: vec2<u32>;\n");
        for i in 0..self.site_caches {
            let _ = writeln!(s, "var<private> gc{i}: vec2<u32>;");
        }
        self.site_seeds.truncate(self.site_caches as usize);
        s.push_str(&self.seed_fn());
        s
    }

    /// The 64-bit address `base + off` as WGSL.
    pub(super) fn addr(&self, base: Val, off: i64) -> String {
        let b = self.v64(base);
        if off == 0 {
            b
        } else {
            format!("add64({b}, {})", self.v64(Val::Imm(off as u64)))
        }
    }

    /// Whether statement `s`'s access to `space` at `base + off` of
    /// `size` bytes aligned to `align` is proven to lie in the space's own
    /// bytes (shared memory: the kernel's static and dynamic bytes, not the
    /// reserved region), its high word 0 and aligned (ranges.rs): `saddr`
    /// would return its offset unchanged.
    pub(super) fn proven(
        &self,
        space: Space,
        s: &Stmt,
        off: i64,
        (size, align): (u8, u32),
    ) -> bool {
        let limit = match space {
            Space::Shared => self.k.shared_static as u64 + self.o.dyn_shared as u64,
            Space::Local => self.k.local_bytes as u64,
            Space::Param => self.k.param_bytes as u64,
            Space::Global | Space::Generic => return false,
        };
        let base = self.ranges.as_ref().and_then(|r| r.base(s));
        base.is_some_and(|b| ranges::in_bounds(b, off, size, align, limit))
    }

    /// Statements computing the checked offset of one access of statement
    /// `s` into `t{n}` (for a generic address, also its space into `gsp`).
    /// A shared, local or parameter access proven in bounds and aligned
    /// ([`Self::proven`]) takes its offset as the unchecked kernel does; the
    /// checks that follow it stay. The third value: whether the offset may
    /// be [`BAD`] (a checked access not proven), which a thread that goes on
    /// after a fault must test before using it.
    pub(super) fn access(
        &mut self,
        space: Space,
        base: Val,
        off: i64,
        (size, align): (u8, u32),
        s: &Stmt,
        rw: Rw,
    ) -> (String, String, bool) {
        let n = self.tmp;
        self.tmp += 1;
        let line = s.line;
        let a = self.addr(base, off);
        let name = format!("t{n}");
        let mut code = String::new();
        let mut may_fault = false;
        if self.o.checked {
            let write = rw != Rw::Read;
            // A global site of a versioned loop's clean copy is proven by
            // the test before the loop (versioned.rs).
            let clean = space == Space::Global
                && self
                    .clean
                    .as_ref()
                    .is_some_and(|c| c.sites.contains_key(&(s as *const Stmt)));
            let elided = clean || self.proven(space, s, off, (size, align));
            may_fault = !elided;
            let call = match space {
                _ if clean => format!("({a}).x - GB"),
                _ if elided => format!("({a}).x"),
                Space::Global => format!(
                    "gaddr({a}, {size}u, {align}u, {line}u, {write}, {})",
                    self.site_cache_args(write, base, (size, align), s, off)
                ),
                Space::Shared => format!(
                    "saddr({a}, {size}u, {align}u, {line}u, SHARED_BYTES, RSMEM_BEGIN, RSMEM_END)"
                ),
                Space::Local => {
                    format!("saddr({a}, {size}u, {align}u, {line}u, LOCAL_BYTES, 0u, 0u)")
                }
                Space::Param => {
                    format!("saddr({a}, {size}u, {align}u, {line}u, PARAM_BYTES, 0u, 0u)")
                }
                Space::Generic => format!(
                    "xaddr({a}, {size}u, {align}u, {line}u, {}u, {})",
                    rw as u32,
                    self.site_cache_args(write, base, (size, align), s, off)
                ),
            };
            let _ = writeln!(code, "        let {name} = {call};");
            if !self.soft && !elided {
                let _ = writeln!(code, "        if ({name} == {BAD}) {{ {EXIT} }}");
            }
            let (checks_at, waiting) = (code.len(), self.waiting_reads.len());
            // The checks that follow the access, each where it applies.
            let shared = matches!(space, Space::Shared | Space::Generic);
            let global = matches!(space, Space::Global | Space::Generic);
            type Check = fn(&str, u8, u32, u32, bool) -> String;
            let checks: [(bool, Check); 3] = [
                (
                    self.shadow && shared && self.sh_known != Some(true),
                    checks::shadow_access,
                ),
                (self.race && shared, checks::race_access),
                (self.ginit && global, checks::ginit_access),
            ];
            if checks[0].0 {
                self.shadow_notes += 1;
            }
            for (on, check) in checks {
                // A proven shared load's initialisation note waits
                // (shadow_reads.rs).
                if on && self.defer_reads && elided && space == Space::Shared && rw == Rw::Read {
                    let note = check(&name, size, line, rw as u32, false);
                    self.waiting_reads.push(note);
                } else if on {
                    code.push_str(&check(
                        &name,
                        size,
                        line,
                        rw as u32,
                        space == Space::Generic,
                    ));
                }
            }
            if may_fault || code.len() > checks_at || self.waiting_reads.len() > waiting {
                self.fault_sites += 1;
            }
            // Where the thread goes on after a fault (KernelWriter::soft),
            // the checks of an access that faulted are skipped with it (a
            // proven access never faults).
            if self.soft && !elided && code.len() > checks_at {
                let checks = code.split_off(checks_at);
                let _ = write!(
                    code,
                    "        if ({name} != {BAD}) {{\n{checks}        }}\n"
                );
            }
        } else {
            let e = match space {
                Space::Global => format!("({a}).x - GB"),
                Space::Generic => format!("xoff({a})"),
                _ => format!("({a}).x"),
            };
            let _ = writeln!(code, "        let {name} = {e};");
        }
        (code, name, may_fault)
    }
}
