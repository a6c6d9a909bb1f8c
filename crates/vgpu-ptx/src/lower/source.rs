//! Which instruction of the module each decoded instruction was decoded from.
//!
//! The decoder keeps only the line of an instruction, and its closures are
//! opaque, so the lowering reads the instruction again from the module. A line
//! usually holds one instruction; CUB's inline assembly puts a whole scope on
//! one (`{ .reg …; mov.b64 {lo, hi}, %fd; shfl.sync… lo|p, …; … @p add.f64 …;}`).
//! There the decoded instructions of the line are matched to its instructions
//! in order: the decoder emits each instruction's pieces in source order, so
//! the match of a decoded instruction is the first instruction at or after the
//! previous match whose guard is the decoded guard, whose operands name every
//! register the decoded instruction reads or writes (registers no instruction
//! of the line names are the decoder's own temporaries and say nothing), and
//! which has not yet given a decoded instruction writing the same register (an
//! instruction writes each of its destinations once, so `mov.b64 r0, {lo, hi};
//! @p add.f64 r0, r0, %fd` are told apart).

use std::collections::{HashMap, HashSet};

use crate::ast::{self, Operand};
use crate::program::{Inst, Kernel, Op};

/// For every decoded instruction of `k`, the instruction of `m` it was decoded
/// from, or `None` when its line holds no instruction (the `exit` appended at
/// the end of an entry) or none of the line's instructions fits it.
pub(super) fn sources<'a>(k: &Kernel, m: &'a ast::Module) -> Vec<Option<&'a ast::Instruction>> {
    let mut by_line: HashMap<u32, Vec<&'a ast::Instruction>> = HashMap::new();
    for f in &m.functions {
        for s in f.body.iter().flatten() {
            if let ast::Stmt::Inst(i) = s {
                by_line.entry(i.line).or_default().push(i);
            }
        }
    }
    let mut out = Vec::with_capacity(k.code.len());
    // The match cursor on the current line and the (instruction, register)
    // pairs already written there; both restart when the line changes.
    let mut cursor = 0usize;
    let mut written: HashSet<(usize, u32)> = HashSet::new();
    let mut prev_line = None;
    for inst in &k.code {
        let found = match by_line.get(&inst.line).map(|v| v.as_slice()) {
            None | Some([]) => None,
            Some([one]) => Some(*one),
            Some(line) => {
                if prev_line != Some(inst.line) {
                    cursor = 0;
                    written.clear();
                }
                let dsts = inst.op.dsts();
                let hit = (cursor..line.len()).find(|&j| {
                    dsts.iter().all(|d| !written.contains(&(j, *d))) && fits(k, inst, line[j], line)
                });
                hit.map(|j| {
                    cursor = j;
                    written.extend(dsts.iter().map(|&d| (j, d)));
                    line[j]
                })
            }
        };
        prev_line = Some(inst.line);
        out.push(found);
    }
    out
}

/// Whether `inst` can have been decoded from `ins`, one of the instructions of
/// `line`.
fn fits(k: &Kernel, inst: &Inst, ins: &ast::Instruction, line: &[&ast::Instruction]) -> bool {
    let reg = |r: u32| k.regs[r as usize].name.as_str();
    let guard_ok = match (inst.guard, &ins.guard) {
        (Some((p, neg)), Some((name, n))) => neg == *n && names(reg(p), name),
        (Some(_), None) => false,
        (None, None) => true,
        // A special register read as an operand is decoded unguarded before
        // its (guarded) instruction.
        (None, Some(_)) => matches!(inst.op, Op::Special { .. }),
    };
    if !guard_ok {
        return false;
    }
    let mut mine = Vec::new();
    ins.operands
        .iter()
        .for_each(|o| operand_names(o, &mut mine));
    let mut any = Vec::new();
    for i in line {
        i.operands.iter().for_each(|o| operand_names(o, &mut any));
    }
    inst.op
        .dsts()
        .into_iter()
        .chain(inst.op.srcs())
        .map(reg)
        .all(|r| !any.iter().any(|n| names(r, n)) || mine.iter().any(|n| names(r, n)))
}

/// Whether the decoded register `reg` is the one written `name`: the same, or
/// an inlined callee's copy (`callee#N:name`).
pub(super) fn names(reg: &str, name: &str) -> bool {
    reg == name
        || reg
            .strip_suffix(name)
            .is_some_and(|prefix| prefix.ends_with(':') && prefix.contains('#'))
}

/// The names an operand mentions (registers, symbols, address bases).
fn operand_names<'a>(o: &'a Operand, out: &mut Vec<&'a str>) {
    match o {
        Operand::Name(n) | Operand::NameOffset(n, _) | Operand::Address(Some(n), _) => out.push(n),
        Operand::Vector(v) | Operand::List(v) => v.iter().for_each(|o| operand_names(o, out)),
        Operand::Not(o) => operand_names(o, out),
        Operand::Pair(a, b) => {
            operand_names(a, out);
            operand_names(b, out);
        }
        Operand::Address(None, _) | Operand::Int(_) | Operand::Float(_) | Operand::Sink => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `body` as the only entry of a module and matches it.
    fn matched(body: &str) -> Vec<Option<String>> {
        let text = format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n\n.visible .entry k(\n.param .u64 p\n)\n{{\n{body}\n}}\n"
        );
        let module = crate::launch::Module::parse(&text, "t.ptx").expect("parses");
        let k = module.kernel("k").expect("decodes");
        sources(&k, module.ast())
            .into_iter()
            .map(|s| s.map(|i| format!("{} {:?}", i.opcode_text(), i.operands.first())))
            .collect()
    }

    #[test]
    fn one_line_scope_is_matched_in_order() {
        let m = matched(
            ".reg .f64 %fd<3>;\n.reg .b32 %r<3>;\n\
             { .reg .u32 lo; .reg .u32 hi; .reg .pred p; .reg .f64 r0; mov.b64 %fd1, %fd2; \
             mov.b64 {lo, hi}, %fd2; shfl.sync.down.b32 lo|p, lo, %r1, 31, -1; \
             shfl.sync.down.b32 hi|p, hi, %r1, 31, -1; mov.b64 r0, {lo, hi}; \
             @p add.f64 %fd1, %fd1, r0;}\nret;",
        );
        let names: Vec<&str> = m
            .iter()
            .map(|s| s.as_deref().map_or("-", |s| s.split(' ').next().unwrap()))
            .collect();
        // mov, the two halves of the unpack, two shuffles, the pack, the
        // guarded add, then `ret`'s exit and the one appended at the end.
        assert_eq!(
            names,
            [
                "mov.b64",
                "mov.b64",
                "mov.b64",
                "shfl.sync.down.b32",
                "shfl.sync.down.b32",
                "mov.b64",
                "add.f64",
                "ret",
                "ret"
            ]
        );
        // The unpack is the second instruction, the pack the fifth.
        assert!(m[1].as_deref().unwrap().contains("Vector"));
        assert!(m[5].as_deref().unwrap().contains("\"r0\""));
    }

    #[test]
    fn same_destination_twice_on_a_line() {
        let m = matched(
            ".reg .b32 %r<4>;\n\
             add.s32 %r1, %r2, %r3; mul.lo.s32 %r1, %r1, %r2; sub.s32 %r1, %r1, 7;\nret;",
        );
        let ops: Vec<&str> = m
            .iter()
            .map(|s| s.as_deref().map_or("-", |s| s.split(' ').next().unwrap()))
            .collect();
        assert_eq!(ops, ["add.s32", "mul.lo.s32", "sub.s32", "ret", "ret"]);
    }

    #[test]
    fn inlined_names_match_their_source() {
        assert!(names("f#2:%r1", "%r1"));
        assert!(names("%r1", "%r1"));
        assert!(!names("%r11", "%r1"));
        assert!(!names("x%r1", "%r1"));
    }
}
