//! Static facts about a decoded kernel that let the executor do less work per
//! block without changing what any thread computes.
//!
//! [`registers_to_zero`]: PTX registers start undefined; VGPU gives them 0 so a
//! launch is deterministic. A register that every path writes before it reads it
//! (in each lane) never shows its initial value, so only the others need
//! clearing when a worker starts its next block: for nvcc's code that is usually
//! none of them, and a block's start no longer clears its whole register file.
//!
//! [`store_targets`]: which kernel parameters the addresses of plain global
//! stores derive from, so that the global race checker (global_race.rs) logs
//! only the reads of allocations the kernel may write.

use crate::ast::Space;
use crate::program::{Inst, Op, ParamInfo, Src, StoreTargets};

/// A set of registers as bits.
#[derive(Clone, PartialEq, Eq)]
struct RegSet(Vec<u64>);

impl RegSet {
    fn empty(n: usize) -> RegSet {
        RegSet(vec![0; n.div_ceil(64)])
    }
    fn full(n: usize) -> RegSet {
        RegSet(vec![u64::MAX; n.div_ceil(64)])
    }
    fn has(&self, r: u32) -> bool {
        self.0
            .get(r as usize / 64)
            .is_some_and(|w| w & (1 << (r % 64)) != 0)
    }
    fn add(&mut self, r: u32) {
        if let Some(w) = self.0.get_mut(r as usize / 64) {
            *w |= 1 << (r % 64);
        }
    }
    /// `self ∩= o`; whether `self` changed.
    fn meet(&mut self, o: &RegSet) -> bool {
        let mut changed = false;
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            let n = *a & b;
            changed |= n != *a;
            *a = n;
        }
        changed
    }
}

/// The instructions control may reach right after instruction `pc`.
fn successors(code: &[Inst], pc: usize) -> impl Iterator<Item = usize> {
    let inst = &code[pc];
    let guarded = inst.guard.is_some();
    let (next, jump) = match inst.op {
        Op::Bra { target } => (guarded, Some(target as usize)),
        Op::Exit | Op::Trap => (guarded, None),
        _ => (true, None),
    };
    let n = code.len();
    [next.then_some(pc + 1), jump]
        .into_iter()
        .flatten()
        .filter(move |&s| s < n)
}

/// Registers whose value some lane may read before that lane wrote it (on some
/// path from the entry), and the sources of `shfl.sync`, which read other
/// lanes' registers whatever path those lanes took: the registers a block must
/// start with zeroed. A must-assigned forward dataflow over the decoded code: a
/// register is assigned at an instruction when every path to it passes an
/// unguarded write of it.
pub(crate) fn registers_to_zero(code: &[Inst], nregs: usize) -> Vec<u32> {
    if code.is_empty() {
        return Vec::new();
    }
    let mut assigned: Vec<RegSet> = vec![RegSet::full(nregs); code.len()];
    assigned[0] = RegSet::empty(nregs);
    let dsts: Vec<Vec<u32>> = code.iter().map(|i| i.op.dsts()).collect();
    let mut dirty = vec![true; code.len()];
    let mut any = true;
    while any {
        any = false;
        for pc in 0..code.len() {
            if !std::mem::take(&mut dirty[pc]) {
                continue;
            }
            let mut out = assigned[pc].clone();
            if code[pc].guard.is_none() {
                for &d in &dsts[pc] {
                    out.add(d);
                }
            }
            for s in successors(code, pc) {
                if assigned[s].meet(&out) {
                    dirty[s] = true;
                    any = true;
                }
            }
        }
    }
    let mut zero = RegSet::empty(nregs);
    for (pc, inst) in code.iter().enumerate() {
        let mut reads = inst.op.srcs();
        if let Some((g, _)) = inst.guard {
            reads.push(g);
        }
        for r in reads {
            if !assigned[pc].has(r) {
                zero.add(r);
            }
        }
        if let Op::Shfl { a: Src::Reg(r), .. } = inst.op {
            zero.add(r);
        }
    }
    (0..nregs as u32).filter(|&r| zero.has(r)).collect()
}

/// The bit of a register's provenance that means "not followed".
const UNKNOWN: u64 = 1 << 63;

/// Which parameters the address of each plain global store derives from: a
/// flow-insensitive provenance analysis over the registers. A parameter load
/// gives its destination that parameter; an operation gives its destination
/// the union of its sources'; a load of 8 bytes or more from memory (a pointer
/// may be stored there) or of a parameter at a register address is "unknown".
/// Narrower loads and parameters carry none (a 32-bit value is an index, not a
/// pointer).
pub(crate) fn store_targets(code: &[Inst], nregs: usize, params: &[ParamInfo]) -> StoreTargets {
    let param_bit = |off: i64| -> u64 {
        params
            .iter()
            .position(|p| off >= p.offset as i64 && off < (p.offset + p.size) as i64)
            .map_or(UNKNOWN, |i| {
                if params[i].size < 8 {
                    0
                } else if i < 63 {
                    1 << i
                } else {
                    UNKNOWN
                }
            })
    };
    let src = |prov: &[u64], s: &Src| match s {
        Src::Reg(r) => prov.get(*r as usize).copied().unwrap_or(0),
        Src::Imm(_) => 0,
    };
    let mut prov = vec![0u64; nregs];
    let mut changed = true;
    while changed {
        changed = false;
        for inst in code {
            let gen = match &inst.op {
                Op::Ld {
                    space: Space::Param,
                    addr,
                    ..
                } => match addr.base {
                    Src::Imm(b) => param_bit(b as i64 + addr.off),
                    Src::Reg(_) => UNKNOWN,
                },
                Op::Ld { size, .. } | Op::Atom { size, .. } => {
                    if *size >= 8 {
                        UNKNOWN
                    } else {
                        0
                    }
                }
                Op::Special { .. } => 0,
                op => op
                    .srcs()
                    .iter()
                    .map(|&r| src(&prov, &Src::Reg(r)))
                    .fold(0, |a, b| a | b),
            };
            for d in inst.op.dsts() {
                if let Some(p) = prov.get_mut(d as usize) {
                    if *p | gen != *p {
                        *p |= gen;
                        changed = true;
                    }
                }
            }
        }
    }
    let mut t = StoreTargets {
        any: false,
        params: vec![false; params.len()],
        some: false,
    };
    for inst in code {
        if let Op::St {
            space: Space::Global | Space::Generic,
            addr,
            ..
        } = &inst.op
        {
            t.some = true;
            let p = src(&prov, &addr.base);
            t.any |= p & UNKNOWN != 0;
            for (i, b) in t.params.iter_mut().enumerate().take(63) {
                *b |= p & (1 << i) != 0;
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use crate::launch::Module;

    fn zero_names(body: &str) -> Vec<String> {
        let text = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{{\n.reg .pred %p<3>;\n.reg .b32 %r<9>;\n{body}\n}}\n"
        );
        let k = Module::parse(&text, "t.ptx").unwrap().kernel("k").unwrap();
        k.zero_regs
            .iter()
            .map(|&r| k.regs[r as usize].name.clone())
            .collect()
    }

    #[test]
    fn registers_written_before_every_read_need_no_clearing() {
        let z = zero_names("mov.u32 %r1, %tid.x;\nadd.s32 %r2, %r1, 1;\nret;");
        assert!(z.is_empty(), "{z:?}");
    }

    #[test]
    fn a_read_reached_by_a_path_without_a_write_needs_clearing() {
        // %r2 is written only when %p1 holds; %r3 only on one side of a branch.
        let z = zero_names(
            "mov.u32 %r1, %tid.x;\nsetp.eq.s32 %p1, %r1, 0;\n@%p1 mov.u32 %r2, 5;\nadd.s32 %r4, %r2, 1;\n\
             @%p1 bra L;\nmov.u32 %r3, 1;\nL:\nadd.s32 %r5, %r3, %r1;\nret;",
        );
        assert_eq!(z, ["%r2", "%r3"]);
    }

    #[test]
    fn a_loop_carried_register_written_before_the_loop_needs_none() {
        let z = zero_names(
            "mov.u32 %r1, 0;\nL:\nadd.s32 %r1, %r1, 1;\nsetp.lt.s32 %p1, %r1, 10;\n@%p1 bra L;\nret;",
        );
        assert!(z.is_empty(), "{z:?}");
    }

    #[test]
    fn shuffle_sources_are_always_cleared() {
        let z = zero_names("mov.u32 %r1, %tid.x;\nshfl.sync.down.b32 %r2, %r1, 1, 31, -1;\nret;");
        assert_eq!(z, ["%r1"]);
    }

    #[test]
    fn store_targets_follow_pointers_from_parameters() {
        let text = ".version 8.0\n.target sm_90\n.address_size 64\n\
            .visible .entry k(.param .u64 a, .param .u64 b, .param .u64 c)\n{\n\
            .reg .b32 %r<4>;\n.reg .b64 %rd<9>;\n.reg .f32 %f<3>;\n\
            ld.param.u64 %rd1, [a];\nld.param.u64 %rd2, [b];\nld.param.u64 %rd3, [c];\n\
            cvta.to.global.u64 %rd4, %rd1;\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd5, %r1, 4;\n\
            add.s64 %rd6, %rd4, %rd5;\nld.global.f32 %f1, [%rd6];\nld.global.u32 %r2, [%rd6];\n\
            mul.wide.u32 %rd7, %r2, 4;\nadd.s64 %rd8, %rd2, %rd7;\nst.global.f32 [%rd8], %f1;\nret;\n}\n";
        let k = Module::parse(text, "t.ptx").unwrap().kernel("k").unwrap();
        let t = super::store_targets(&k.code, k.regs.len(), &k.params);
        // b is written (through an index loaded from a); a and c are not.
        assert!(t.some && !t.any, "{t:?}");
        assert_eq!(t.params, [false, true, false]);
    }
}
