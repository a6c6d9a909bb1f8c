//! The meaning of each arithmetic, logic, comparison and conversion instruction,
//! written from the PTX ISA's definitions, as closures over register bits. The
//! closure is chosen once at decode time (type, rounding, `.ftz`, `.sat` fixed),
//! so the executor only calls it per lane.

use crate::float::*;
use crate::half_ops::f16_rn;
pub(crate) use crate::modifiers::Mods;
use crate::program::{AluFn, AtomFn};
use crate::types::*;

fn wrap(v: i128, bits: u32) -> u64 {
    (v as u64) & mask(bits)
}

fn sat_int(v: i128, t: Ty) -> i128 {
    let b = t.bits();
    let (lo, hi) = if t.is_signed() {
        (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
    } else {
        (0, (1i128 << b) - 1)
    };
    v.clamp(lo, hi)
}

/// Rounds a float to an integral float value with an integer rounding mode.
fn round_int_f64(x: f64, r: Rnd) -> f64 {
    match r {
        Rnd::N => x.round_ties_even(),
        Rnd::Z => x.trunc(),
        Rnd::M => x.floor(),
        Rnd::P => x.ceil(),
    }
}

/// `f(a, b)`, or NaN when either is NaN (`min/max.NaN`).
fn nan_wins(a: f32, b: f32, f: fn(f32, f32) -> f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        f(a, b)
    }
}

fn fmin64(a: f64, b: f64) -> f64 {
    fminmax(a, b, false)
}

fn fmax64(a: f64, b: f64) -> f64 {
    fminmax(a, b, true)
}

type F32Op = fn(f32, f32, f32, Rnd) -> f32;
type F64Op = fn(f64, f64, f64, Rnd) -> f64;

/// A float operation with `.ftz` and `.sat` handled around it.
fn f32_op(g: F32Op, r: Rnd, ftz: bool, sat: bool) -> AluFn {
    if !ftz && !sat {
        return Box::new(move |a, b, c| bf32(g(f32b(a), f32b(b), f32b(c), r)));
    }
    Box::new(move |a, b, c| {
        let (mut x, mut y, mut z) = (f32b(a), f32b(b), f32b(c));
        if ftz {
            x = ftz32(x);
            y = ftz32(y);
            z = ftz32(z);
        }
        let mut v = g(x, y, z, r);
        if ftz {
            v = ftz32(v);
        }
        if sat {
            v = sat32(v);
        }
        bf32(v)
    })
}

fn f64_op(g: F64Op, r: Rnd, sat: bool) -> AluFn {
    Box::new(move |a, b, c| {
        let mut v = g(f64b(a), f64b(b), f64b(c), r);
        if sat {
            v = sat64(v);
        }
        bf64(v)
    })
}

/// The closure of a one-result arithmetic/logic instruction and the types of its
/// (up to three) source operands. `op` is the opcode without modifiers.
pub(crate) fn alu(op: &str, m: &Mods) -> Result<(AluFn, Vec<Ty>), String> {
    if let Some(r) = crate::bit_ops::alu(op, m) {
        return r;
    }
    let ty = m.ty().ok_or_else(|| "no type modifier".to_string())?;
    let r = m.rnd();
    let ftz = m.has("ftz");
    let sat = m.has("sat");
    let bits = ty.bits();
    let t2 = vec![ty, ty];
    let t1 = vec![ty];
    let t3 = vec![ty, ty, ty];
    if (ty == Ty::F16 || ty == Ty::Bf16)
        && !matches!(op, "mov" | "selp" | "slct" | "and" | "or" | "xor" | "not")
    {
        return Err(
            format!("{op} on .{ty:?} (half precision arithmetic) is not supported").to_lowercase(),
        );
    }
    let fl32 = ty == Ty::F32;
    let fl64 = ty == Ty::F64;
    let f: AluFn = match op {
        "add" if fl32 => {
            if r == Rnd::N && !ftz && !sat {
                Box::new(|a, b, _| bf32(f32b(a) + f32b(b)))
            } else {
                f32_op(|a, b, _, r| add_f32(a, b, r), r, ftz, sat)
            }
        }
        "sub" if fl32 => {
            if r == Rnd::N && !ftz && !sat {
                Box::new(|a, b, _| bf32(f32b(a) - f32b(b)))
            } else {
                f32_op(|a, b, _, r| add_f32(a, -b, r), r, ftz, sat)
            }
        }
        "mul" if fl32 => {
            if r == Rnd::N && !ftz && !sat {
                Box::new(|a, b, _| bf32(f32b(a) * f32b(b)))
            } else {
                f32_op(|a, b, _, r| mul_f32(a, b, r), r, ftz, sat)
            }
        }
        "fma" | "mad" if fl32 => {
            if r == Rnd::N && !ftz && !sat {
                Box::new(|a, b, c| bf32(f32b(a).mul_add(f32b(b), f32b(c))))
            } else {
                f32_op(fma_f32, r, ftz, sat)
            }
        }
        "div" if fl32 => {
            if m.has("approx") || m.has("full") {
                f32_op(|a, b, _, _| a / b, Rnd::N, ftz, false)
            } else {
                f32_op(|a, b, _, r| div_f32(a, b, r), r, ftz, false)
            }
        }
        "add" if fl64 => f64_op(|a, b, _, r| add_f64(a, b, r), r, sat),
        "sub" if fl64 => f64_op(|a, b, _, r| add_f64(a, -b, r), r, sat),
        "mul" if fl64 => f64_op(|a, b, _, r| mul_f64(a, b, r), r, sat),
        "fma" | "mad" if fl64 => f64_op(fma_f64, r, sat),
        "div" if fl64 => f64_op(|a, b, _, r| div_f64(a, b, r), r, false),
        "abs" if fl32 => {
            if ftz {
                Box::new(|a, _, _| ftz32(f32b(a)).abs().to_bits() as u64)
            } else {
                Box::new(|a, _, _| a & 0x7fff_ffff)
            }
        }
        "neg" if fl32 => {
            if ftz {
                Box::new(|a, _, _| (-ftz32(f32b(a))).to_bits() as u64)
            } else {
                Box::new(|a, _, _| (a ^ 0x8000_0000) & 0xffff_ffff)
            }
        }
        "abs" if fl64 => Box::new(|a, _, _| a & !(1u64 << 63)),
        "neg" if fl64 => Box::new(|a, _, _| a ^ (1u64 << 63)),
        "min" | "max" if fl32 => {
            // `.NaN`: a NaN operand gives NaN instead of losing.
            let g: F32Op = match (op, m.has("NaN")) {
                ("min", false) => |a, b, _, _| fmin32(a, b),
                ("max", false) => |a, b, _, _| fmax32(a, b),
                ("min", true) => |a, b, _, _| nan_wins(a, b, fmin32),
                _ => |a, b, _, _| nan_wins(a, b, fmax32),
            };
            f32_op(g, r, ftz, false)
        }
        "min" if fl64 => Box::new(|a, b, _| bf64(fmin64(f64b(a), f64b(b)))),
        "max" if fl64 => Box::new(|a, b, _| bf64(fmax64(f64b(a), f64b(b)))),
        "copysign" if fl32 => Box::new(|a, b, _| (b & 0x7fff_ffff) | (a & 0x8000_0000)),
        "copysign" if fl64 => Box::new(|a, b, _| (b & !(1u64 << 63)) | (a & (1u64 << 63))),
        "rcp" if fl32 => {
            if m.has("approx") {
                f32_op(|a, _, _, _| 1.0 / a, Rnd::N, ftz, false)
            } else {
                f32_op(|a, _, _, r| div_f32(1.0, a, r), r, ftz, false)
            }
        }
        "rcp" if fl64 => f64_op(|a, _, _, r| div_f64(1.0, a, r), r, false),
        "sqrt" if fl32 => {
            if m.has("approx") {
                f32_op(|a, _, _, _| a.sqrt(), Rnd::N, ftz, false)
            } else {
                f32_op(|a, _, _, r| sqrt_f32(a, r), r, ftz, false)
            }
        }
        "sqrt" if fl64 => f64_op(|a, _, _, r| sqrt_f64(a, r), r, false),
        "rsqrt" if fl32 => f32_op(
            |a, _, _, _| (1.0 / (a as f64).sqrt()) as f32,
            Rnd::N,
            ftz,
            false,
        ),
        "rsqrt" if fl64 => f64_op(|a, _, _, _| 1.0 / a.sqrt(), Rnd::N, false),
        "sin" if fl32 => f32_op(|a, _, _, _| (a as f64).sin() as f32, Rnd::N, ftz, false),
        "cos" if fl32 => f32_op(|a, _, _, _| (a as f64).cos() as f32, Rnd::N, ftz, false),
        "lg2" if fl32 => f32_op(|a, _, _, _| (a as f64).log2() as f32, Rnd::N, ftz, false),
        // The correctly rounded 2^a, on integers (vgpu-ir's cfg/exp2.rs), so
        // the GPU path reproduces it bit for bit; `.ftz` as in f32_op.
        "ex2" if fl32 => Box::new(move |a, _, _| u64::from(vgpu_ir::cfg::ex2_f32(a as u32, ftz))),
        "tanh" if fl32 => f32_op(|a, _, _, _| (a as f64).tanh() as f32, Rnd::N, false, false),
        "testp" => {
            let which = [
                "finite",
                "infinite",
                "number",
                "notanumber",
                "normal",
                "subnormal",
            ]
            .into_iter()
            .find(|w| m.has(w))
            .ok_or(
                "testp without a test (finite, infinite, number, notanumber, normal, subnormal)",
            )?;
            let test: fn(f64, bool) -> bool = match which {
                "finite" => |x, _| x.is_finite(),
                "infinite" => |x, _| x.is_infinite(),
                "number" => |x, _| !x.is_nan(),
                "notanumber" => |x, _| x.is_nan(),
                "normal" => |x, sub| x.is_finite() && x != 0.0 && !sub,
                _ => |_, sub| sub,
            };
            return Ok((
                if fl32 {
                    Box::new(move |a, _, _| {
                        let x = f32b(a);
                        test(x as f64, x.is_subnormal()) as u64
                    })
                } else {
                    Box::new(move |a, _, _| {
                        let x = f64b(a);
                        test(x, x.is_subnormal()) as u64
                    })
                },
                t1,
            ));
        }
        // ---- integer and bit operations ----
        "add" if ty.is_int() => {
            if sat {
                Box::new(move |a, b, _| wrap(sat_int(ival(a, ty) + ival(b, ty), ty), bits))
            } else {
                Box::new(move |a, b, _| a.wrapping_add(b) & mask(bits))
            }
        }
        "sub" if ty.is_int() => {
            if sat {
                Box::new(move |a, b, _| wrap(sat_int(ival(a, ty) - ival(b, ty), ty), bits))
            } else {
                Box::new(move |a, b, _| a.wrapping_sub(b) & mask(bits))
            }
        }
        "mul" | "mad" if ty.is_int() => {
            let mad = op == "mad";
            if m.has("wide") {
                return Ok((
                    Box::new(move |a, b, c| {
                        let p = ival(a, ty).wrapping_mul(ival(b, ty));
                        let p = if mad { p.wrapping_add(c as i128) } else { p };
                        wrap(p, 2 * bits)
                    }),
                    if mad {
                        vec![ty, ty, wide_ty(ty)]
                    } else {
                        vec![ty, ty]
                    },
                ));
            } else if m.has("hi") {
                Box::new(move |a, b, c| {
                    let p = ival(a, ty).wrapping_mul(ival(b, ty)) >> bits;
                    let v = if mad { p.wrapping_add(ival(c, ty)) } else { p };
                    if sat && mad {
                        wrap(sat_int(v, ty), bits)
                    } else {
                        wrap(v, bits)
                    }
                })
            } else {
                Box::new(move |a, b, c| {
                    let p = a.wrapping_mul(b);
                    if mad {
                        p.wrapping_add(c) & mask(bits)
                    } else {
                        p & mask(bits)
                    }
                })
            }
        }
        "mul24" | "mad24" => {
            let mad = op == "mad24";
            let hi = m.has("hi");
            Box::new(move |a, b, c| {
                let x = if ty.is_signed() {
                    sx(a, 24) as i128
                } else {
                    (a & 0xff_ffff) as i128
                };
                let y = if ty.is_signed() {
                    sx(b, 24) as i128
                } else {
                    (b & 0xff_ffff) as i128
                };
                let p = x * y;
                let v = if hi { p >> 16 } else { p };
                let v = if mad { v + ival(c, ty) } else { v };
                wrap(v, 32)
            })
        }
        "sad" => Box::new(move |a, b, c| {
            let (x, y) = (ival(a, ty), ival(b, ty));
            wrap((x - y).abs() + ival(c, ty), bits)
        }),
        "div" if ty.is_int() => Box::new(move |a, b, _| {
            let (x, y) = (ival(a, ty), ival(b, ty));
            if y == 0 {
                mask(bits)
            } else {
                wrap(x.wrapping_div(y), bits)
            }
        }),
        "rem" if ty.is_int() => Box::new(move |a, b, _| {
            let (x, y) = (ival(a, ty), ival(b, ty));
            if y == 0 {
                wrap(x, bits)
            } else {
                wrap(x.wrapping_rem(y), bits)
            }
        }),
        "abs" if ty.is_int() => Box::new(move |a, _, _| wrap(ival(a, ty).abs(), bits)),
        "neg" if ty.is_int() => Box::new(move |a, _, _| wrap(-ival(a, ty), bits)),
        "min" if ty.is_int() => Box::new(move |a, b, _| wrap(ival(a, ty).min(ival(b, ty)), bits)),
        "max" if ty.is_int() => Box::new(move |a, b, _| wrap(ival(a, ty).max(ival(b, ty)), bits)),
        "popc" => {
            return Ok((
                Box::new(move |a, _, _| (a & mask(bits)).count_ones() as u64),
                t1,
            ))
        }
        "clz" => {
            return Ok((
                Box::new(move |a, _, _| ((a & mask(bits)).leading_zeros() - (64 - bits)) as u64),
                t1,
            ));
        }
        "brev" => Box::new(move |a, _, _| (a & mask(bits)).reverse_bits() >> (64 - bits)),
        "bfind" => {
            let shiftamt = m.has("shiftamt");
            return Ok((
                Box::new(move |a, _, _| {
                    let x = a & mask(bits);
                    let x = if ty.is_signed() && (x >> (bits - 1)) & 1 == 1 {
                        !x & mask(bits)
                    } else {
                        x
                    };
                    if x == 0 {
                        return 0xffff_ffff;
                    }
                    let msb = 63 - x.leading_zeros();
                    (if shiftamt { bits - 1 - msb } else { msb }) as u64
                }),
                t1,
            ));
        }
        "and" | "or" | "xor" => {
            let b = if ty == Ty::Pred { 1 } else { bits };
            match op {
                "and" => Box::new(move |x, y, _| x & y & mask(b)),
                "or" => Box::new(move |x, y, _| (x | y) & mask(b)),
                _ => Box::new(move |x, y, _| (x ^ y) & mask(b)),
            }
        }
        "not" => {
            let b = if ty == Ty::Pred { 1 } else { bits };
            Box::new(move |x, _, _| !x & mask(b))
        }
        "cnot" => Box::new(move |x, _, _| ((x & mask(bits)) == 0) as u64),
        "shl" => {
            return Ok((
                Box::new(move |a, b, _| {
                    let s = b as u32;
                    if s >= bits {
                        0
                    } else {
                        (a << s) & mask(bits)
                    }
                }),
                vec![ty, Ty::U32],
            ))
        }
        "shr" => {
            return Ok((
                Box::new(move |a, b, _| {
                    let s = (b as u32).min(bits);
                    if ty.is_signed() {
                        let v = sx(a, bits);
                        wrap((v >> s.min(63)) as i128, bits)
                    } else if s >= bits {
                        0
                    } else {
                        (a & mask(bits)) >> s
                    }
                }),
                vec![ty, Ty::U32],
            ))
        }
        "mov" => {
            let b = if ty == Ty::Pred { 1 } else { bits };
            return Ok((Box::new(move |a, _, _| a & mask(b)), t1));
        }
        "selp" => {
            return Ok((
                Box::new(|a, b, c| if c & 1 != 0 { a } else { b }),
                vec![ty, ty, Ty::Pred],
            ))
        }
        "slct" => {
            let ct = *m.types().last().unwrap_or(&Ty::S32);
            let dt = m.types().first().copied().unwrap_or(ty);
            let cond: fn(u64) -> bool = if ct == Ty::F32 {
                |c| f32b(c) >= 0.0
            } else {
                |c| (c as u32 as i32) >= 0
            };
            return Ok((
                Box::new(move |a, b, c| if cond(c) { a } else { b }),
                vec![dt, dt, ct],
            ));
        }
        _ => {
            return Err(format!(
                "`{op}` with type .{}",
                format!("{ty:?}").to_lowercase()
            ))
        }
    };
    let tys = match op {
        "abs" | "neg" | "not" | "cnot" | "brev" | "rcp" | "sqrt" | "rsqrt" | "sin" | "cos"
        | "lg2" | "ex2" | "tanh" => t1,
        "fma" | "mad" | "mad24" | "sad" => t3,
        "mul" | "mul24" => t2,
        _ => t2,
    };
    Ok((f, tys))
}

/// A `mul` contracted into the `add/sub` after it: `(±a)·b + (±c)` with one
/// rounding (`nx` negates the product, `nc` the addend), as ptxas fuses them.
pub(crate) fn contracted(ty: Ty, ftz: bool, nx: bool, nc: bool) -> AluFn {
    if ty == Ty::F64 {
        Box::new(move |a, b, c| {
            let (mut a, c) = (f64b(a), f64b(c));
            if nx {
                a = -a
            }
            bf64(a.mul_add(f64b(b), if nc { -c } else { c }))
        })
    } else {
        Box::new(move |a, b, c| {
            let (mut a, mut b, mut c) = (f32b(a), f32b(b), f32b(c));
            if ftz {
                a = ftz32(a);
                b = ftz32(b);
                c = ftz32(c);
            }
            if nx {
                a = -a
            }
            let v = a.mul_add(b, if nc { -c } else { c });
            bf32(if ftz { ftz32(v) } else { v })
        })
    }
}

/// The type twice as wide (`mul.wide`).
pub(crate) fn wide_ty(t: Ty) -> Ty {
    match t {
        Ty::U16 => Ty::U32,
        Ty::S16 => Ty::S32,
        Ty::U32 => Ty::U64,
        Ty::S32 => Ty::S64,
        Ty::B16 => Ty::B32,
        Ty::B32 => Ty::B64,
        other => other,
    }
}

/// A comparison of `setp`/`set` as a closure over the two source bits.
pub(crate) fn compare(
    cmp: &str,
    ty: Ty,
    ftz: bool,
) -> Result<Box<dyn Fn(u64, u64) -> bool + Send + Sync>, String> {
    if ty.is_float() {
        if ty != Ty::F32 && ty != Ty::F64 {
            return Err(format!("setp on .{ty:?}").to_lowercase());
        }
        let g: fn(f64, f64) -> bool = match cmp {
            "eq" => |a, b| a == b,
            "ne" => |a, b| a != b && !a.is_nan() && !b.is_nan(),
            "lt" => |a, b| a < b,
            "le" => |a, b| a <= b,
            "gt" => |a, b| a > b,
            "ge" => |a, b| a >= b,
            "equ" => |a, b| a == b || a.is_nan() || b.is_nan(),
            "neu" => |a, b| a != b,
            "ltu" => |a, b| a < b || a.is_nan() || b.is_nan(),
            "leu" => |a, b| a <= b || a.is_nan() || b.is_nan(),
            "gtu" => |a, b| a > b || a.is_nan() || b.is_nan(),
            "geu" => |a, b| a >= b || a.is_nan() || b.is_nan(),
            "num" => |a, b| !a.is_nan() && !b.is_nan(),
            "nan" => |a, b| a.is_nan() || b.is_nan(),
            _ => return Err(format!("comparison `{cmp}` on a float type")),
        };
        return Ok(if ty == Ty::F32 {
            if ftz {
                Box::new(move |a, b| g(ftz32(f32b(a)) as f64, ftz32(f32b(b)) as f64))
            } else {
                Box::new(move |a, b| g(f32b(a) as f64, f32b(b) as f64))
            }
        } else {
            Box::new(move |a, b| g(f64b(a), f64b(b)))
        });
    }
    let signed = ty.is_signed();
    let g: fn(i128, i128) -> bool = match cmp {
        "eq" => |a, b| a == b,
        "ne" => |a, b| a != b,
        "lt" | "lo" => |a, b| a < b,
        "le" | "ls" => |a, b| a <= b,
        "gt" | "hi" => |a, b| a > b,
        "ge" | "hs" => |a, b| a >= b,
        _ => return Err(format!("comparison `{cmp}` on an integer type")),
    };
    // lo/ls/hi/hs are unsigned whatever the type.
    let ty = if matches!(cmp, "lo" | "ls" | "hi" | "hs") || !signed {
        match ty.bits() {
            8 => Ty::U8,
            16 => Ty::U16,
            32 => Ty::U32,
            _ => Ty::U64,
        }
    } else {
        ty
    };
    if ty == Ty::Pred {
        return Ok(Box::new(move |a, b| g((a & 1) as i128, (b & 1) as i128)));
    }
    Ok(Box::new(move |a, b| g(ival(a, ty), ival(b, ty))))
}

/// `cvt.dtype.atype` with its rounding, `.ftz` and `.sat` modifiers.
pub(crate) fn cvt(m: &Mods) -> Result<(AluFn, Ty), String> {
    let ts = m.types();
    if ts.len() != 2 {
        return Err("cvt needs a destination and a source type".into());
    }
    let (dt, at) = (ts[0], ts[1]);
    let ftz = m.has("ftz");
    let sat = m.has("sat");
    let irnd = m.irnd();
    let r = m.rnd();
    // Source value as f64 (exact for every source type).
    let src_f: Box<dyn Fn(u64) -> f64 + Send + Sync> = match at {
        Ty::F32 => {
            if ftz {
                Box::new(|a| ftz32(f32b(a)) as f64)
            } else {
                Box::new(|a| f32b(a) as f64)
            }
        }
        Ty::F64 => Box::new(f64b),
        Ty::F16 => Box::new(|a| half::f16::from_bits(a as u16).to_f64()),
        Ty::Bf16 => Box::new(|a| half::bf16::from_bits(a as u16).to_f64()),
        _ => Box::new(move |a| ival(a, at) as f64),
    };
    let f: AluFn = if dt.is_int() && at.is_int() {
        Box::new(move |a, _, _| {
            let v = ival(a, at);
            let v = if sat { sat_int(v, dt) } else { v };
            wrap(v, dt.bits())
        })
    } else if dt.is_int() {
        // float → integer: round with the integer mode, saturate, NaN → 0.
        let ir = irnd.unwrap_or(Rnd::Z);
        Box::new(move |a, _, _| {
            let x = src_f(a);
            if x.is_nan() {
                return 0;
            }
            let y = round_int_f64(x, ir);
            let v = if y >= 1.7e38 {
                i128::MAX
            } else if y <= -1.7e38 {
                i128::MIN
            } else {
                y as i128
            };
            wrap(sat_int(v, dt), dt.bits())
        })
    } else if at.is_int() {
        // integer → float
        let src_t = at;
        match dt {
            Ty::F32 => Box::new(move |a, _, _| {
                let mut v = int_to_f32(ival(a, src_t), r);
                if sat {
                    v = sat32(v)
                }
                bf32(v)
            }),
            Ty::F64 => Box::new(move |a, _, _| {
                let mut v = int_to_f64(ival(a, src_t), r);
                if sat {
                    v = sat64(v)
                }
                bf64(v)
            }),
            Ty::F16 => {
                // Integers beyond 2^53 overflow f16 however they round to f64.
                Box::new(move |a, _, _| f16_rn(ival(a, src_t) as f64) as u64)
            }
            Ty::Bf16 => Box::new(move |a, _, _| {
                half::bf16::from_f64(ival(a, src_t) as f64).to_bits() as u64
            }),
            _ => return Err("cvt to a non-float".into()),
        }
    } else {
        // float → float
        match dt {
            Ty::F32 => {
                if at == Ty::F32 || irnd.is_some() {
                    let ir = irnd;
                    Box::new(move |a, _, _| {
                        let x = src_f(a);
                        let mut v = match ir {
                            Some(ir) => round_int_f64(x, ir) as f32,
                            None => round_to_f32(x, 0.0, r),
                        };
                        if ftz {
                            v = ftz32(v)
                        }
                        if sat {
                            v = sat32(v)
                        }
                        bf32(v)
                    })
                } else {
                    Box::new(move |a, _, _| {
                        let mut v = round_to_f32(src_f(a), 0.0, r);
                        if ftz {
                            v = ftz32(v)
                        }
                        if sat {
                            v = sat32(v)
                        }
                        bf32(v)
                    })
                }
            }
            Ty::F64 => {
                let ir = irnd;
                Box::new(move |a, _, _| {
                    let x = src_f(a);
                    let mut v = match ir {
                        Some(ir) => round_int_f64(x, ir),
                        None => x,
                    };
                    if sat {
                        v = sat64(v)
                    }
                    bf64(v)
                })
            }
            Ty::F16 => {
                if r != Rnd::N {
                    return Err("cvt to .f16 with a directed rounding".into());
                }
                Box::new(move |a, _, _| f16_rn(src_f(a)) as u64)
            }
            Ty::Bf16 => {
                if r != Rnd::N {
                    return Err("cvt to .bf16 with a directed rounding".into());
                }
                Box::new(move |a, _, _| half::bf16::from_f64(src_f(a)).to_bits() as u64)
            }
            _ => return Err("cvt to a non-float".into()),
        }
    };
    Ok((f, at))
}

/// The atomic operation `(old, b, c) -> new` of `atom`/`red`.
pub(crate) fn atomic(op: &str, ty: Ty) -> Result<AtomFn, String> {
    let bits = ty.bits();
    let f: AtomFn = match (op, ty) {
        ("add", Ty::F32) => Box::new(|o, b, _| bf32(ftz32(ftz32(f32b(o)) + ftz32(f32b(b))))),
        ("add", Ty::F64) => Box::new(|o, b, _| bf64(f64b(o) + f64b(b))),
        ("min", Ty::F32) => Box::new(|o, b, _| bf32(fmin32(f32b(o), f32b(b)))),
        ("max", Ty::F32) => Box::new(|o, b, _| bf32(fmax32(f32b(o), f32b(b)))),
        ("min", Ty::F64) => Box::new(|o, b, _| bf64(fmin64(f64b(o), f64b(b)))),
        ("max", Ty::F64) => Box::new(|o, b, _| bf64(fmax64(f64b(o), f64b(b)))),
        (_, t) if t.is_float() => return Err(format!("atom.{op} on a float type")),
        ("add", _) => Box::new(move |o, b, _| o.wrapping_add(b) & mask(bits)),
        ("min", _) => Box::new(move |o, b, _| wrap(ival(o, ty).min(ival(b, ty)), bits)),
        ("max", _) => Box::new(move |o, b, _| wrap(ival(o, ty).max(ival(b, ty)), bits)),
        ("and", _) => Box::new(move |o, b, _| o & b & mask(bits)),
        ("or", _) => Box::new(move |o, b, _| (o | b) & mask(bits)),
        ("xor", _) => Box::new(move |o, b, _| (o ^ b) & mask(bits)),
        ("exch", _) => Box::new(move |_, b, _| b & mask(bits)),
        ("cas", _) => Box::new(move |o, b, c| {
            if (o & mask(bits)) == (b & mask(bits)) {
                c & mask(bits)
            } else {
                o
            }
        }),
        ("inc", _) => Box::new(move |o, b, _| {
            let (o, b) = (o & mask(bits), b & mask(bits));
            if o >= b {
                0
            } else {
                o + 1
            }
        }),
        ("dec", _) => Box::new(move |o, b, _| {
            let (o, b) = (o & mask(bits), b & mask(bits));
            if o == 0 || o > b {
                b
            } else {
                o - 1
            }
        }),
        _ => return Err(format!("atomic operation `{op}`")),
    };
    Ok(f)
}
