//! Contraction: a `mul` whose single-use result feeds an `add/sub` of the same
//! basic block and type becomes one fused multiply-add, as ptxas contracts them.
//! The PTX ISA allows it for `.f32`, `.f64`, `.f16` and `.f16x2` without a
//! rounding modifier ("mul/add sequences with no rounding modifiers may be
//! optimized to use fused-multiply-add instructions on the target device"); the
//! statements may sit in different `{ }` blocks (nvcc's inline assembly for
//! `__hmul2` and `__hadd2` puts each in its own), since ptxas sees through them.

use super::*;

impl Lower<'_> {
    /// `add/sub.f32` whose operand `which` (1 or 2) is the single-use result of a
    /// `mul.f32` (neither with a rounding modifier): one fused multiply-add, as
    /// ptxas contracts them (the PTX ISA allows it for exactly these forms).
    pub(super) fn contracted(
        &mut self,
        ins: &Instruction,
        mul: &Instruction,
        which: usize,
    ) -> Result<(), PtxError> {
        let g = self.guard(ins)?;
        let mods = Mods(&ins.opcode[1..]);
        let (class, ftz) = is_contractible(ins, &["add", "sub"]).expect("planned");
        let sub = ins.opcode[0] == "sub";
        // d = x*y + c   (add), x*y - c (sub, mul first), c - x*y (sub, mul second)
        let (nx, nc) = match (sub, which) {
            (false, _) => (false, false),
            (true, 1) => (false, true),
            _ => (true, false),
        };
        let (kind, f, ty) = match class {
            Class::Float(ty) => (
                warp_ops::contracted(ty, ftz, nx, nc),
                semantics::contracted(ty, ftz, nx, nc),
                ty,
            ),
            Class::Half { x2 } => {
                // One correctly rounded half fma per lane of the pair; a negation
                // flips the sign bit of each half (exact, as in `neg.f16`).
                let (fma, tys) =
                    half_ops::alu("fma", &mods, x2).map_err(|e| self.unsupported(ins, e))?;
                let sign: u64 = if x2 { 0x8000_8000 } else { 0x8000 };
                let (sx, sc) = (if nx { sign } else { 0 }, if nc { sign } else { 0 });
                let f: AluFn = Box::new(move |a, b, c| fma(a ^ sx, b, c ^ sc));
                (None, f, tys[0])
            }
        };
        let d = self.dst(ins, &ins.operands[0])?;
        let x = self.src(mul, &mul.operands[1], ty)?;
        let y = self.src(mul, &mul.operands[2], ty)?;
        let other = self.src(ins, &ins.operands[3 - which], ty)?;
        self.emit(alu_op(kind, f, d, [x, y, other]), g, ins.line);
        Ok(())
    }
}

/// What a contractible `mul`/`add`/`sub` computes on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    /// `.f32` or `.f64`.
    Float(Ty),
    /// `.f16` (`x2: false`) or `.f16x2` (two halves in a 32-bit register).
    Half { x2: bool },
}

fn is_contractible(ins: &Instruction, ops: &[&str]) -> Option<(Class, bool)> {
    if !ops.contains(&ins.opcode[0].as_str()) || ins.operands.len() != 3 {
        return None;
    }
    let m = Mods(&ins.opcode[1..]);
    if m.0
        .iter()
        .any(|x| matches!(x.as_str(), "rn" | "rz" | "rm" | "rp" | "sat"))
    {
        return None;
    }
    let class = if m.has("f16x2") {
        Class::Half { x2: true }
    } else {
        match m.ty()? {
            Ty::F16 => Class::Half { x2: false },
            ty @ (Ty::F32 | Ty::F64) => Class::Float(ty),
            _ => return None,
        }
    };
    Some((class, m.has("ftz")))
}

fn names_in(o: &Operand, out: &mut Vec<String>) {
    match o {
        Operand::Name(n) | Operand::NameOffset(n, _) => out.push(n.clone()),
        Operand::Address(Some(n), _) => out.push(n.clone()),
        Operand::Vector(v) | Operand::List(v) => v.iter().for_each(|x| names_in(x, out)),
        Operand::Not(x) => names_in(x, out),
        Operand::Pair(a, b) => {
            names_in(a, out);
            names_in(b, out)
        }
        _ => {}
    }
}

/// Which `add/sub` statements become one fma with an earlier `mul` of the same
/// basic block: statement index → (mul statement index, operand 1 or 2). The mul's
/// result must have no other use, and its sources must not change in between.
pub(super) fn contraction_plan(body: &[Stmt]) -> HashMap<usize, (usize, usize)> {
    let mut count: HashMap<String, usize> = HashMap::new();
    for s in body {
        if let Stmt::Inst(i) = s {
            let mut v = Vec::new();
            i.operands.iter().for_each(|o| names_in(o, &mut v));
            if let Some((g, _)) = &i.guard {
                v.push(g.clone());
            }
            for n in v {
                *count.entry(n).or_default() += 1;
            }
        }
    }
    let mut plan = HashMap::new();
    let mut last_def: HashMap<String, usize> = HashMap::new();
    for (si, s) in body.iter().enumerate() {
        let Stmt::Inst(i) = s else {
            if let Stmt::Label(..) = s {
                last_def.clear();
            }
            continue;
        };
        if let Some((class, ftz)) = is_contractible(i, &["add", "sub"]) {
            'ops: for which in [1usize, 2] {
                let Operand::Name(n) = &i.operands[which] else {
                    continue;
                };
                let Some(&mi) = last_def.get(n) else { continue };
                let Stmt::Inst(mul) = &body[mi] else { continue };
                if is_contractible(mul, &["mul"]) != Some((class, ftz))
                    || mul.guard != i.guard
                    || count.get(n) != Some(&2)
                {
                    continue;
                }
                for src in &mul.operands[1..] {
                    if let Operand::Name(sn) = src {
                        if last_def.get(sn).is_some_and(|&d| d > mi) {
                            continue 'ops;
                        }
                    }
                }
                plan.insert(si, (mi, which));
                break;
            }
        }
        if let Some(Operand::Name(d)) = i.operands.first() {
            last_def.insert(d.clone(), si);
        }
        if let Some(Operand::Pair(a, b)) = i.operands.first() {
            for x in [a, b] {
                if let Operand::Name(d) = &**x {
                    last_def.insert(d.clone(), si);
                }
            }
        }
        if matches!(
            i.opcode[0].as_str(),
            "bra" | "ret" | "exit" | "call" | "bar" | "barrier"
        ) {
            last_def.clear();
        }
    }
    plan
}
