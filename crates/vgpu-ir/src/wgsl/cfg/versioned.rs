//! Loop versioning of checked kernels: a counted loop through barriers
//! whose visits the watchdog's fits test bounds (bounded.rs, watchdog.rs:
//! `fits_code`) is written twice, and the workgroup takes a copy without
//! checks where it is proven that none could fault in this entry.
//!
//! Before the loop each thread tests, besides the fits test, that it has
//! not faulted (`g_fcls` is 0) and that every global access of the loop
//! stays, at every iteration the bound allows, inside the region its site's
//! cache holds, aligned, its address's high word 0: then `gaddr` would
//! return every one of those offsets unchanged. The sites' addresses must
//! move with the iterations in one of the ways motion.rs follows, so that
//! testing the first and the last iteration tests all:
//!
//! - **fixed**: the base is not written in the loop;
//! - **stepped**: a 64-bit base whose one definition in the loop is
//!   `p = p + c` (an immediate), run in every iteration (`c` positive and
//!   below 2^31: the addresses go up by `c` per iteration);
//! - **indexed**: `p = q + x * s` (`mul.wide` of a 32-bit `x` by an
//!   immediate, `q` fixed), `x` stepped in every iteration by a value that
//!   is the same in all (a fixed register, an immediate, or one computed in
//!   the loop from those before its use): tested in 31 bits, where signed
//!   and unsigned widening agree and nothing wraps.
//!
//! Where every thread passes, `wdok` is 1 and the workgroup runs the copy
//! without the watchdog's test, region tests or fault gates (no site in it
//! can fault, and none had: `g_fcls` stays 0, so each `if (g_fcls == 0u)`
//! holds); otherwise the copy as checked. The copy keeps the instruction
//! count and the barriers' count, which later checks read. Where the copy
//! would still hold a check that can fault (an access not proven, a trap, a
//! barrier's release checks), the loop is written once, as before. With
//! `CfgWgslOptions::speculative_loops` the checked copy is left out (its
//! registers slowed the copy without checks): a workgroup whose test fails
//! sets the fault record's fallback word and returns, and the launch runs
//! again with the full kernel.

use super::motion::{Motion, Step};
use super::writer::{ExprWidth, KernelWriter};
use crate::cfg::Val;
use std::fmt::Write;

impl KernelWriter<'_> {
    /// The test before the loop that one access site passes where it stays
    /// in its region at every iteration `j` from 0 to `kl` (a WGSL u32):
    /// `let`s into `out`, then the condition; `None` where its motion
    /// cannot be tested so (a step not positive, a scale that breaks the
    /// alignment). `off` is the element's offset from the base, `cache`
    /// the site's region cache (`gaddr`'s fast path: `a.x - c.x < c.y`).
    pub(super) fn motion_test(
        &self,
        m: &Motion,
        (off, align): (i64, u32),
        cache: &str,
        kl: &str,
        out: &mut String,
    ) -> Option<String> {
        let n = out.len();
        let am = align.checked_sub(1)?;
        let konst = |v: i64| {
            let v = v as u64;
            format!("vec2<u32>({}u, {}u)", v as u32, (v >> 32) as u32)
        };
        let inside = |a: &str| format!("{a} - {cache}.x < {cache}.y");
        match *m {
            Motion::Fixed(v) => {
                let _ = writeln!(out, "  let va{n} = add64({}, {});", self.v64(v), konst(off));
                Some(format!(
                    "(va{n}.y == 0u && (va{n}.x & {am}u) == 0u && {})",
                    inside(&format!("va{n}.x"))
                ))
            }
            Motion::Stepped { p, delta, step } => {
                if step == 0 || step >= 1 << 31 || step % u64::from(align) != 0 {
                    return None;
                }
                let first = off.checked_add(step as i64 * delta as i64)?;
                let _ = writeln!(
                    out,
                    "  let va{n} = add64({}, {});",
                    self.v64(Val::Reg(p)),
                    konst(first)
                );
                Some(format!(
                    "(va{n}.y == 0u && (va{n}.x & {am}u) == 0u && {kl} <= (0xffffffffu - va{n}.x) / {step}u && {} && {})",
                    inside(&format!("va{n}.x")),
                    inside(&format!("(va{n}.x + {kl} * {step}u)"))
                ))
            }
            Motion::Indexed {
                q,
                x,
                delta,
                s,
                scale,
            } => {
                if scale == 0 || scale > 1 << 16 || scale % u64::from(align) != 0 {
                    return None;
                }
                let s = match s {
                    Step::Val(v) => self.v32(v),
                    Step::Bin(op, a, b) => {
                        let (e, w) = self.bin(op, a, b);
                        if w != ExprWidth::B32 {
                            return None;
                        }
                        e
                    }
                };
                let x = self.v32(Val::Reg(x));
                let _ = writeln!(out, "  let vq{n} = add64({}, {});", self.v64(q), konst(off));
                let _ = writeln!(out, "  let vs{n} = {s};");
                let first = if delta == 1 {
                    format!("{x} + vs{n}")
                } else {
                    x
                };
                let _ = writeln!(out, "  let vx{n} = {first};");
                let last = format!("(vx{n} + {kl} * vs{n})");
                Some(format!(
                    "(vq{n}.y == 0u && (vq{n}.x & {am}u) == 0u && vs{n} <= 0x7fffffffu && vx{n} <= 0x7fffffffu && {kl} <= (0x7fffffffu - vx{n}) / max(vs{n}, 1u) && {last} <= (0xffffffffu - vq{n}.x) / {scale}u && {} && {})",
                    inside(&format!("(vq{n}.x + vx{n} * {scale}u)")),
                    inside(&format!("(vq{n}.x + {last} * {scale}u)"))
                ))
            }
        }
    }
}
