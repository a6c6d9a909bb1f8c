//! Lowering a decoded kernel ([`Kernel`], program.rs) into the IR's control-flow
//! form ([`vgpu_ir::cfg::CfgKernel`]), from which the IR's WGSL room emits the
//! GPU kernel. One decoded instruction becomes one statement (same registers,
//! same guard, same line); branches, returns and barriers end basic blocks.
//!
//! The typed warp operations (warp_ops.rs) map one to one. The decoder's
//! closures are opaque, so for those the instruction is read again from the
//! module at its line (one of several on a line: source.rs) and lowered only
//! where its form is known here (`div.rn`,
//! `sqrt.rn`, `rcp.rn`, `cvt` between f32 and 32-bit integers, integer
//! `min`/`max`/`neg`, `mul.hi`, f16 arithmetic: half.rs); anything else is [`PtxError::Unsupported`]
//! naming the instruction and its line, never a silent approximation.

use vgpu_ir::cfg::{
    self, AtomOp, BinOp, BitOp, Block, CfgKernel, CvtOp, F32Arith, F32Mods, GlobalInit, Inst,
    IntRound, RegTy, Stmt, TernOp, UnOp, Val,
};

use crate::ast::{self, Space};
use crate::error::PtxError;
use crate::program::{Kernel, Op, Src};
use crate::semantics::Mods;
use crate::special::Special;
use crate::types::Ty;
use crate::warp_ops::Kind;

mod float64;
mod half;
mod source;

/// Lowers `k` (decoded from module `m`, read from `file`) into control-flow form.
///
/// # Errors
/// [`PtxError::Unsupported`] for the first instruction the form cannot hold
/// yet, with its line.
pub fn lower_kernel(k: &Kernel, m: &ast::Module, file: &str) -> Result<CfgKernel, PtxError> {
    Lowering::new(k, m, file).run()
}

/// Decodes `entry` of `module` and lowers it: the decoded kernel (for its
/// parameter layout) and its control-flow form.
///
/// # Errors
/// The decoder's errors, and [`lower_kernel`]'s.
pub fn lower_entry(
    module: &crate::launch::Module,
    entry: &str,
) -> Result<(Kernel, CfgKernel), PtxError> {
    let k = module.kernel(entry)?;
    let c = lower_kernel(&k, module.ast(), module.file())?;
    Ok((k, c))
}

struct Lowering<'a> {
    k: &'a Kernel,
    file: &'a str,
    /// The instruction of the module each decoded instruction came from.
    src: Vec<Option<&'a ast::Instruction>>,
}

fn val(s: Src) -> Val {
    match s {
        Src::Reg(r) => Val::Reg(r),
        Src::Imm(x) => Val::Imm(x),
    }
}

/// The IR's space of an access to `s` (a generic address's space is decided
/// at run time, by the interpreter's windows).
fn ir_space(s: Space) -> cfg::Space {
    match s {
        Space::Global | Space::Const => cfg::Space::Global,
        Space::Shared => cfg::Space::Shared,
        Space::Local => cfg::Space::Local,
        Space::Param => cfg::Space::Param,
        Space::Generic => cfg::Space::Generic,
    }
}

fn bits_of(mask: u64) -> u8 {
    mask.count_ones() as u8
}

/// The integer rounding modifier (`.rni` …), if any.
fn int_round(m: &Mods) -> Option<IntRound> {
    [
        ("rzi", IntRound::Zero),
        ("rni", IntRound::Nearest),
        ("rmi", IntRound::Down),
        ("rpi", IntRound::Up),
    ]
    .into_iter()
    .find(|(s, _)| m.has(s))
    .map(|(_, r)| r)
}

fn is_warp_op(op: &Op) -> bool {
    matches!(
        op,
        Op::Shfl { .. }
            | Op::Vote { .. }
            | Op::Redux { .. }
            | Op::ActiveMask { .. }
            | Op::Match { .. }
            | Op::WarpSync { .. }
    )
}

/// The IR's form of a decoded warp operation (one to one).
fn warp_op(op: &Op) -> cfg::WarpOp {
    use crate::program::{ReduxOp as R, ShflMode as S, VoteMode as V};
    match *op {
        Op::Shfl {
            mode,
            d,
            p,
            a,
            b,
            c,
        } => cfg::WarpOp::Shfl {
            mode: match mode {
                S::Up => cfg::ShflMode::Up,
                S::Down => cfg::ShflMode::Down,
                S::Bfly => cfg::ShflMode::Bfly,
                S::Idx => cfg::ShflMode::Idx,
            },
            d,
            p,
            a: val(a),
            b: val(b),
            c: val(c),
        },
        Op::Vote { mode, d, a, neg } => cfg::WarpOp::Vote {
            mode: match mode {
                V::All => cfg::VoteMode::All,
                V::Any => cfg::VoteMode::Any,
                V::Uni => cfg::VoteMode::Uni,
                V::Ballot => cfg::VoteMode::Ballot,
            },
            d,
            a: val(a),
            neg,
        },
        Op::Redux {
            op,
            signed,
            d,
            a,
            mask,
        } => cfg::WarpOp::Redux {
            op: match op {
                R::Add => cfg::ReduxOp::Add,
                R::Min => cfg::ReduxOp::Min,
                R::Max => cfg::ReduxOp::Max,
                R::And => cfg::ReduxOp::And,
                R::Or => cfg::ReduxOp::Or,
                R::Xor => cfg::ReduxOp::Xor,
            },
            signed,
            d,
            a: val(a),
            mask: val(mask),
        },
        Op::ActiveMask { d } => cfg::WarpOp::ActiveMask { d },
        Op::Match { all, d, p, a } => cfg::WarpOp::Match {
            all,
            d,
            p,
            a: val(a),
        },
        _ => cfg::WarpOp::Sync,
    }
}

impl<'a> Lowering<'a> {
    fn new(k: &'a Kernel, m: &'a ast::Module, file: &'a str) -> Self {
        let src = source::sources(k, m);
        Lowering { k, file, src }
    }

    /// Decoded instruction `at` cannot be lowered, `why`: its line and, where
    /// it was matched to one, its instruction as written.
    fn unsupported(&self, at: usize, why: &str) -> PtxError {
        let what = self.src[at].map_or("instruction".into(), |i| i.opcode_text());
        PtxError::Unsupported {
            file: self.file.into(),
            line: self.k.code[at].line,
            what,
            why: format!("not on the GPU path yet: {why}"),
        }
    }

    fn run(&self) -> Result<CfgKernel, PtxError> {
        let k = self.k;
        let code = &k.code;
        let n = code.len();
        // Leaders: the entry, branch targets, and what follows a block's end.
        let mut leader = vec![false; n + 1];
        leader[0] = true;
        leader[n] = true;
        for (i, inst) in code.iter().enumerate() {
            match inst.op {
                Op::Bra { target } => {
                    leader[(target as usize).min(n)] = true;
                    leader[i + 1] = true;
                }
                Op::Exit | Op::Trap | Op::Bar { .. } => leader[i + 1] = true,
                // A strong load ends its block: the thread yields there.
                Op::Ld { .. } if inst.yields => leader[i + 1] = true,
                _ if is_warp_op(&inst.op) => {
                    // A warp operation is a block of its own (its id orders it).
                    leader[i] = true;
                    leader[i + 1] = true;
                }
                _ => {}
            }
        }
        // Block ids: one per leader before n, then the fall-off-the-end return block.
        let mut block_of = vec![0u32; n + 1];
        let mut nb = 0u32;
        for i in 0..=n {
            if leader[i] {
                if i < n {
                    nb += 1;
                }
                block_of[i] = nb.saturating_sub(1);
            } else {
                block_of[i] = block_of[i - 1];
            }
        }
        let end_block = nb; // returns
        block_of[n] = end_block;
        let target = |i: usize| -> u32 {
            if i >= n {
                end_block
            } else {
                block_of[i]
            }
        };
        let mut blocks: Vec<Block> = Vec::new();
        let mut cur: Vec<Stmt> = Vec::new();
        for (i, inst) in code.iter().enumerate() {
            let line = inst.line;
            let guard = inst.guard;
            let term = match &inst.op {
                Op::Bra { target: t } => Some(match guard {
                    None => cfg::Term::Jump(target(*t as usize)),
                    Some((p, neg)) => cfg::Term::Branch {
                        p,
                        neg,
                        then: target(*t as usize),
                        els: target(i + 1),
                    },
                }),
                Op::Exit => Some(match guard {
                    None => cfg::Term::Return,
                    Some((p, neg)) => cfg::Term::Branch {
                        p,
                        neg,
                        then: end_block,
                        els: target(i + 1),
                    },
                }),
                Op::Trap if guard.is_none() => Some(cfg::Term::Trap { line }),
                Op::Bar { red: None } if guard.is_none() => Some(cfg::Term::Barrier {
                    next: target(i + 1),
                    line,
                }),
                Op::Trap | Op::Bar { .. } => {
                    return Err(self.unsupported(i, "a guarded trap or barrier, or bar.red"))
                }
                Op::Nop => None,
                op if is_warp_op(op) => Some(cfg::Term::Warp {
                    op: warp_op(op),
                    guard,
                    next: target(i + 1),
                    line,
                }),
                op => {
                    cur.push(Stmt {
                        inst: self.inst(op, i)?,
                        guard,
                        line,
                    });
                    // After a strong load (where a warp may spin on a flag
                    // another sets) the thread lets the others run, as the
                    // interpreter's warp does.
                    inst.yields.then(|| cfg::Term::Yield {
                        next: target(i + 1),
                    })
                }
            };
            let ends = term.is_some() || leader[i + 1];
            if ends {
                let term = term.unwrap_or(cfg::Term::Jump(target(i + 1)));
                blocks.push(Block {
                    stmts: std::mem::take(&mut cur),
                    term,
                });
            }
        }
        debug_assert_eq!(blocks.len() as u32, end_block);
        blocks.push(Block {
            stmts: Vec::new(),
            term: cfg::Term::Return,
        });
        let regs = k
            .regs
            .iter()
            .map(|r| match r.ty {
                Ty::Pred => RegTy::Pred,
                t if t.bits() > 32 => RegTy::B64,
                _ => RegTy::B32,
            })
            .collect();
        let ck = CfgKernel {
            name: k.name.clone(),
            regs,
            blocks,
            param_bytes: k.param_bytes,
            shared_static: k.shared_static,
            local_bytes: k.local_bytes,
            globals: k
                .globals
                .iter()
                .map(|g| GlobalInit {
                    name: g.name.clone(),
                    addr: g.addr,
                    bytes: g.bytes.clone(),
                    writable: g.writable,
                })
                .collect(),
        };
        ck.validate().map_err(|m| PtxError::Launch {
            entry: k.name.clone(),
            msg: format!("lowering produced a malformed kernel: {m}"),
        })?;
        Ok(ck)
    }

    fn inst(&self, op: &Op, at: usize) -> Result<Inst, PtxError> {
        Ok(match op {
            Op::Warp(w) => {
                let (d, a, b, c) = (w.d, val(w.a), val(w.b), val(w.c));
                let bin = |op| Inst::Bin { op, d, a, b };
                let un = |op| Inst::Un { op, d, a };
                let tern = |op| Inst::Tern { op, d, a, b, c };
                match w.kind {
                    Kind::AddF32 => bin(BinOp::AddF32),
                    Kind::SubF32 => bin(BinOp::SubF32),
                    Kind::MulF32 => bin(BinOp::MulF32),
                    Kind::FmaF32 => tern(TernOp::FmaF32 {
                        neg_ab: false,
                        neg_c: false,
                    }),
                    Kind::FmsF32 => tern(TernOp::FmaF32 {
                        neg_ab: false,
                        neg_c: true,
                    }),
                    Kind::FnmaF32 => tern(TernOp::FmaF32 {
                        neg_ab: true,
                        neg_c: false,
                    }),
                    Kind::AbsF32 => un(UnOp::AbsF32),
                    Kind::NegF32 => un(UnOp::NegF32),
                    Kind::MinF32 => bin(BinOp::MinF32),
                    Kind::MaxF32 => bin(BinOp::MaxF32),
                    Kind::Add(m) => bin(BinOp::Add(bits_of(m))),
                    Kind::Sub(m) => bin(BinOp::Sub(bits_of(m))),
                    Kind::MulLo(m) => bin(BinOp::MulLo(bits_of(m))),
                    Kind::MadLo(m) => tern(TernOp::MadLo(bits_of(m))),
                    Kind::And(m) => bin(BinOp::And(bits_of(m))),
                    Kind::Or(m) => bin(BinOp::Or(bits_of(m))),
                    Kind::Xor(m) => bin(BinOp::Xor(bits_of(m))),
                    Kind::Not(m) => un(UnOp::Not(bits_of(m))),
                    Kind::Mov(m) => un(UnOp::Mov(bits_of(m))),
                    Kind::Shl(bits) => bin(BinOp::Shl(bits as u8)),
                    Kind::ShrU(bits) => bin(BinOp::ShrU(bits as u8)),
                    Kind::ShrS(bits) => bin(BinOp::ShrS(bits as u8)),
                    Kind::MulWide { signed } => bin(BinOp::MulWide { signed }),
                    Kind::MadWide { signed } => tern(TernOp::MadWide { signed }),
                    Kind::Selp => {
                        let bits = self.k.regs[d as usize].ty.bits().max(1) as u8;
                        tern(TernOp::Selp(bits))
                    }
                    Kind::CvtInt {
                        sbits,
                        signed,
                        dmask,
                    } => Inst::Cvt {
                        op: CvtOp::Int {
                            sbits: sbits as u8,
                            signed,
                            dbits: bits_of(dmask),
                        },
                        d,
                        a,
                    },
                    Kind::SetpInt { cmp, signed, bits } => bin(BinOp::SetpInt {
                        cmp,
                        signed,
                        bits: bits as u8,
                    }),
                    Kind::SetpF32(c) => bin(BinOp::SetpF32(c)),
                }
            }
            Op::Special { d, s } => Inst::Special {
                d: *d,
                s: match s {
                    Special::Tid(i) => cfg::Special::Tid(*i),
                    Special::Ntid(i) => cfg::Special::Ntid(*i),
                    Special::Ctaid(i) => cfg::Special::Ctaid(*i),
                    Special::Nctaid(i) => cfg::Special::Nctaid(*i),
                    Special::LaneId => cfg::Special::LaneId,
                    Special::WarpId => cfg::Special::WarpId,
                    Special::NWarpId => cfg::Special::NWarpId,
                    Special::LaneMask(m) => cfg::Special::LaneMask(*m),
                    Special::DynSmem => cfg::Special::DynSmem,
                    Special::TotalSmem => cfg::Special::TotalSmem,
                    Special::SmId | Special::GridId => cfg::Special::Const(0),
                    Special::NSmId => cfg::Special::Const(1),
                    Special::Zero => cfg::Special::Const(0),
                    Special::One => cfg::Special::Const(1),
                    Special::Clock
                    | Special::ClockHi
                    | Special::Clock64
                    | Special::GlobalTimer
                    | Special::GlobalTimerLo
                    | Special::GlobalTimerHi => {
                        return Err(self.unsupported(at,
                            "a clock (the interpreter counts the warp's instructions, which the GPU does not)",
                        ))
                    }
                    Special::ReservedSmemOffset => cfg::Special::ReservedSmemBegin,
                    Special::ReservedSmemEnd => cfg::Special::ReservedSmemEnd,
                    Special::ReservedSmemCap | Special::AggrSmem => {
                        cfg::Special::ReservedSmemCap
                    }
                },
            },
            Op::Ld {
                space,
                size,
                sign,
                d,
                addr,
                unused,
                ..
            } => Inst::Load {
                space: ir_space(*space),
                size: *size,
                sign: *sign,
                d: d.iter().map(|&r| (r != u32::MAX).then_some(r)).collect(),
                base: val(addr.base),
                off: addr.off,
                unused: *unused,
            },
            Op::St {
                space,
                size,
                src,
                addr,
                ..
            } => Inst::Store {
                space: ir_space(*space),
                size: *size,
                src: src.iter().map(|&s| val(s)).collect(),
                base: val(addr.base),
                off: addr.off,
            },
            Op::Alu { d, a, b, c, .. } => self.alu(at, *d, [val(*a), val(*b), val(*c)])?,
            Op::Atom {
                space,
                size,
                d,
                addr,
                b,
                c,
                ..
            } => {
                if *size != 4 {
                    return Err(self.unsupported(at, "atomics on other than 32-bit words"));
                }
                let space = ir_space(*space);
                if !matches!(
                    space,
                    cfg::Space::Global | cfg::Space::Shared | cfg::Space::Generic
                ) {
                    return Err(self.unsupported(at, "atomics outside global and shared memory"));
                }
                Inst::Atom {
                    space,
                    op: self.atom_op(at)?,
                    d: *d,
                    base: val(addr.base),
                    off: addr.off,
                    b: val(*b),
                    c: val(*c),
                }
            }
            _ => return Err(self.unsupported(at, "this operation")),
        })
    }

    /// The operation of the `atom`/`red` decoded at `at`, read again from its line.
    fn atom_op(&self, at: usize) -> Result<AtomOp, PtxError> {
        let ins = match self.src[at] {
            Some(i) if i.opcode[0] == "atom" || i.opcode[0] == "red" => i,
            _ => return Err(self.unsupported(at, "the atomic could not be found on its line")),
        };
        let mods = Mods(&ins.opcode[1..]);
        let ty = mods.ty();
        let signed = ty.is_some_and(|t| t.is_signed());
        let float = ty == Some(Ty::F32);
        let op = [
            "add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec",
        ]
        .into_iter()
        .find(|o| mods.has(o));
        Ok(match (op, float) {
            (Some("add"), false) => AtomOp::Add,
            (Some("add"), true) => AtomOp::AddF32,
            (Some("min"), false) => AtomOp::Min { signed },
            (Some("max"), false) => AtomOp::Max { signed },
            (Some("min"), true) => AtomOp::MinF32,
            (Some("max"), true) => AtomOp::MaxF32,
            (Some("and"), false) => AtomOp::And,
            (Some("or"), false) => AtomOp::Or,
            (Some("xor"), false) => AtomOp::Xor,
            (Some("exch"), _) => AtomOp::Exch,
            (Some("cas"), _) => AtomOp::Cas,
            (Some("inc"), false) => AtomOp::Inc,
            (Some("dec"), false) => AtomOp::Dec,
            _ => return Err(self.unsupported(at, "this atomic operation")),
        })
    }

    /// A closure-decoded one-result instruction, read again at its line.
    fn alu(&self, at: usize, d: u32, [a, b, c]: [Val; 3]) -> Result<Inst, PtxError> {
        let Some(ins) = self.src[at] else {
            return Err(self.unsupported(at, "the instruction could not be found on its line"));
        };
        let op = ins.opcode[0].as_str();
        let mods = Mods(&ins.opcode[1..]);
        let tys = mods.types();
        let ftz = mods.has("ftz") || mods.has("sat");
        let no = |why: &str| Err(self.unsupported(at, why));
        let tern = |op| Inst::Tern { op, d, a, b, c };
        if let Some(bit) = self.bit_op(at, ins, d)? {
            return Ok(tern(TernOp::Bit(bit)));
        }
        if let Some(h) = self.half(at, ins, [a, b, c])? {
            return Ok(tern(TernOp::Half(h)));
        }
        if let Some(i) = self.float64(at, ins, d, [a, b, c])? {
            return Ok(i);
        }
        if op == "setp" && tys == [Ty::F32] && mods.has("ftz") {
            let bool_op = ["and", "or", "xor"].iter().any(|b| mods.has(b));
            let cmp = ins
                .opcode
                .get(1)
                .and_then(|c| crate::warp_ops::float_cmp(c));
            return match cmp {
                Some(c) if !bool_op => Ok(Inst::Bin {
                    op: BinOp::SetpF32Ftz(c),
                    d,
                    a,
                    b,
                }),
                _ => no("setp.ftz.f32 with a boolean combination"),
            };
        }
        if tys == [Ty::F32] {
            if let Some(mut f) = f32_arith(op, &mods) {
                if matches!(f, F32Arith::Add | F32Arith::Sub) {
                    if let Some((neg_ab, neg_c)) = self.contraction(at, ins, [a, b, c])? {
                        f = F32Arith::Fma { neg_ab, neg_c };
                    }
                }
                // `.sat` exists on add, sub, mul, fma and mad only; the
                // interpreter ignores it elsewhere.
                let m = F32Mods {
                    ftz: mods.has("ftz"),
                    sat: mods.has("sat") && matches!(op, "add" | "sub" | "mul" | "fma" | "mad"),
                };
                return Ok(tern(TernOp::F32Mod { op: f, m }));
            }
        }
        Ok(match (op, tys.as_slice()) {
            // `div.approx.f32` and `div.full.f32` are within 2 ulp in PTX; the
            // interpreter computes them correctly rounded, and so does this.
            ("div", [Ty::F32])
                if (mods.has("rn") || mods.has("approx") || mods.has("full")) && !ftz =>
            {
                Inst::Bin {
                    op: BinOp::DivF32Rn,
                    d,
                    a,
                    b,
                }
            }
            ("sqrt", [Ty::F32]) if mods.has("rn") && !ftz => Inst::Un {
                op: UnOp::SqrtF32Rn,
                d,
                a,
            },
            ("rcp", [Ty::F32]) if mods.has("rn") && !ftz => Inst::Un {
                op: UnOp::RcpF32Rn,
                d,
                a,
            },
            ("min" | "max", [t]) if t.is_int() && t.bits() <= 64 && !mods.has("relu") => {
                let bits = t.bits() as u8;
                let signed = t.is_signed();
                let op = if op == "min" {
                    BinOp::Min { bits, signed }
                } else {
                    BinOp::Max { bits, signed }
                };
                Inst::Bin { op, d, a, b }
            }
            ("rsqrt", [Ty::F32]) if mods.has("approx") && !ftz => Inst::Un {
                op: UnOp::RsqrtF32,
                d,
                a,
            },
            ("lg2", [Ty::F32]) if mods.has("approx") && !ftz => Inst::Un {
                op: UnOp::Lg2F32,
                d,
                a,
            },
            ("ex2", [Ty::F32]) if mods.has("approx") => Inst::Un {
                op: UnOp::Ex2F32 { ftz },
                d,
                a,
            },
            ("div" | "rem", [t]) if t.is_int() && t.bits() <= 32 => {
                let (bits, signed) = (t.bits() as u8, t.is_signed());
                let op = if op == "div" {
                    BinOp::Div { bits, signed }
                } else {
                    BinOp::Rem { bits, signed }
                };
                Inst::Bin { op, d, a, b }
            }
            ("mul", [t]) if mods.has("wide") && t.is_int() && t.bits() == 16 => Inst::Bin {
                op: BinOp::MulWide16 {
                    signed: t.is_signed(),
                },
                d,
                a,
                b,
            },
            ("bmsk", [Ty::B32]) => Inst::Bin {
                op: BinOp::Bmsk {
                    clamp: mods.has("clamp"),
                },
                d,
                a,
                b,
            },
            ("popc" | "clz" | "brev", [t @ (Ty::B32 | Ty::B64)]) => {
                let bits = t.bits() as u8;
                let op = match op {
                    "popc" => UnOp::Popc(bits),
                    "clz" => UnOp::Clz(bits),
                    _ => UnOp::Brev(bits),
                };
                Inst::Un { op, d, a }
            }
            ("bfind", [t @ (Ty::U32 | Ty::S32)]) => Inst::Un {
                op: UnOp::Bfind {
                    signed: *t == Ty::S32,
                    shiftamt: mods.has("shiftamt"),
                },
                d,
                a,
            },
            ("neg", [t]) if t.is_int() => Inst::Un {
                op: UnOp::Neg(t.bits() as u8),
                d,
                a,
            },
            ("mul", [t]) if mods.has("hi") && t.is_int() && t.bits() == 32 => Inst::Bin {
                op: BinOp::MulHi32 {
                    signed: t.is_signed(),
                },
                d,
                a,
                b,
            },
            ("cvt", [dt, at]) if !ftz => match (dt, at) {
                (Ty::F32, Ty::S32 | Ty::U32)
                    if !mods.has("rz") && !mods.has("rm") && !mods.has("rp") =>
                {
                    Inst::Cvt {
                        op: CvtOp::I32ToF32Rn {
                            signed: *at == Ty::S32,
                        },
                        d,
                        a,
                    }
                }
                (Ty::S32 | Ty::U32, Ty::F32) if int_round(&mods).is_some() => Inst::Cvt {
                    op: CvtOp::F32ToI32 {
                        signed: *dt == Ty::S32,
                        rnd: int_round(&mods).expect("checked"),
                    },
                    d,
                    a,
                },
                (Ty::F16, Ty::F32) if mods.has("rn") => Inst::Cvt {
                    op: CvtOp::F32ToF16Rn,
                    d,
                    a,
                },
                (Ty::F32, Ty::F16) if !mods.has("rn") && int_round(&mods).is_none() => Inst::Cvt {
                    op: CvtOp::F16ToF32,
                    d,
                    a,
                },
                (Ty::F32, Ty::F32) if int_round(&mods).is_some() => Inst::Cvt {
                    op: CvtOp::F32Round(int_round(&mods).expect("checked")),
                    d,
                    a,
                },
                _ => return no("this conversion"),
            },
            _ => return no("this instruction form"),
        })
    }

    /// The bit-manipulation instruction `ins` (decoded into destination `d`),
    /// or `None` when it is not one.
    fn bit_op(&self, at: usize, ins: &ast::Instruction, d: u32) -> Result<Option<BitOp>, PtxError> {
        let mods = Mods(&ins.opcode[1..]);
        let int_at = |i: usize| match ins.operands.get(i) {
            Some(ast::Operand::Int(v)) => Some(*v),
            _ => None,
        };
        Ok(Some(match (ins.opcode[0].as_str(), mods.ty()) {
            ("bfi", Some(t @ (Ty::B32 | Ty::B64))) => {
                // A register length: the decoder packs position and length into
                // a temporary first (two decoded instructions on this line).
                if self.k.regs[d as usize].name == "bfi.poslen" {
                    BitOp::PackPosLen
                } else {
                    BitOp::Bfi {
                        bits: t.bits() as u8,
                        len: int_at(4).map(|v| (v as u64 & 0xff) as u32),
                    }
                }
            }
            ("bfe", Some(t @ (Ty::U32 | Ty::S32 | Ty::U64 | Ty::S64))) => BitOp::Bfe {
                bits: t.bits() as u8,
                signed: t.is_signed(),
            },
            ("prmt", Some(Ty::B32)) => BitOp::Prmt(crate::bit_ops::prmt_mode(&mods)),
            ("lop3", Some(Ty::B32)) => {
                // `lop3.{or,and}` decodes to the table and then the predicate.
                if self.k.regs[d as usize].ty == Ty::Pred {
                    BitOp::Lop3Pred { or: mods.has("or") }
                } else {
                    match int_at(4) {
                        Some(v @ 0..=255) => BitOp::Lop3(v as u8),
                        _ => return Err(self.unsupported(at, "lop3 without an immediate table")),
                    }
                }
            }
            ("shf", Some(Ty::B32)) => BitOp::Shf {
                left: mods.has("l"),
                clamp: mods.has("clamp"),
            },
            ("szext", Some(t @ (Ty::U32 | Ty::S32))) => BitOp::Szext {
                clamp: mods.has("clamp"),
                signed: t == Ty::S32,
            },
            ("fns", _) => BitOp::Fns,
            ("dp4a" | "dp2a", _) => {
                let tys = mods.types();
                let [at, bt] = tys[..] else {
                    return Err(self.unsupported(at, "dp4a/dp2a without two types"));
                };
                let (sa, sb) = (at == Ty::S32, bt == Ty::S32);
                if ins.opcode[0] == "dp4a" {
                    BitOp::Dp4a { sa, sb }
                } else {
                    BitOp::Dp2a {
                        sa,
                        sb,
                        hi: mods.has("hi"),
                    }
                }
            }
            ("mov", Some(t)) => {
                let bits = t.bits();
                match (ins.operands.first(), ins.operands.get(1)) {
                    // `{…} = a`: the part whose register is `d`.
                    (Some(ast::Operand::Vector(parts)), _) if (2..=4).contains(&parts.len()) => {
                        let name = &self.k.regs[d as usize].name;
                        let part = parts.iter().position(
                            |p| matches!(p, ast::Operand::Name(n) if source::names(name, n)),
                        );
                        let w = bits / parts.len() as u32;
                        match part {
                            Some(i) if matches!(w, 8 | 16 | 32) => BitOp::Unpack {
                                w: w as u8,
                                i: i as u8,
                            },
                            _ => return Err(self.unsupported(at, "this vector mov")),
                        }
                    }
                    // `d = {a, b}`.
                    (_, Some(ast::Operand::Vector(parts)))
                        if parts.len() == 2 && matches!(bits, 16 | 32 | 64) =>
                    {
                        BitOp::Pack {
                            w: (bits / 2) as u8,
                        }
                    }
                    (_, Some(ast::Operand::Vector(_))) | (Some(ast::Operand::Vector(_)), _) => {
                        return Err(self.unsupported(at, "this vector mov"))
                    }
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        }))
    }
}

/// The f32 operation `op` with modifiers `mods` as an [`F32Arith`] where it
/// has `.ftz` or `.sat`, or is an approximate square root or reciprocal
/// (which the interpreter computes correctly rounded), rounded to nearest:
/// the forms the plain f32 operations do not take. Not `min`/`max` with
/// `.NaN`, `.xorsign` or `.abs`, nor a directed rounding.
fn f32_arith(op: &str, mods: &Mods) -> Option<F32Arith> {
    let modded = mods.has("ftz") || mods.has("sat");
    let approx = mods.has("approx");
    if mods.rnd() != crate::float::Rnd::N
        || mods.has("NaN")
        || mods.has("xorsign")
        || mods.has("abs")
    {
        return None;
    }
    let f = match op {
        "add" => F32Arith::Add,
        "sub" => F32Arith::Sub,
        "mul" => F32Arith::Mul,
        "div" if mods.has("rn") || approx || mods.has("full") => F32Arith::Div,
        "min" => F32Arith::Min,
        "max" => F32Arith::Max,
        "abs" => F32Arith::Abs,
        "neg" => F32Arith::Neg,
        "sqrt" if mods.has("rn") || approx => F32Arith::Sqrt,
        "rcp" if mods.has("rn") || approx => F32Arith::Rcp,
        "rsqrt" if approx => F32Arith::Rsqrt,
        "lg2" if approx => F32Arith::Lg2,
        "fma" | "mad" => F32Arith::Fma {
            neg_ab: false,
            neg_c: false,
        },
        _ => return None,
    };
    let approx_root = matches!(f, F32Arith::Sqrt | F32Arith::Rcp) && approx;
    (modded || approx_root).then_some(f)
}

#[cfg(test)]
mod tests {
    /// The GPU path's generic windows are the interpreter's.
    #[test]
    fn generic_windows_are_the_interpreters() {
        use crate::memory::{LOCAL_WINDOW, SHARED_WINDOW};
        assert_eq!(vgpu_ir::cfg::GENERIC_SHARED_WINDOW, SHARED_WINDOW);
        assert_eq!(vgpu_ir::cfg::GENERIC_LOCAL_WINDOW, LOCAL_WINDOW);
    }

    /// The GPU path's layout of the shared memory reserved for system
    /// software is the interpreter's.
    #[test]
    fn reserved_region_is_the_interpreters() {
        for user in [0u64, 1, 100, 127, 128, 129, 1000, 49_152] {
            assert_eq!(
                crate::special::reserved_region(user),
                vgpu_ir::cfg::reserved_smem(user),
                "{user} bytes"
            );
        }
    }
}
