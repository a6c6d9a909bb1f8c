//! Tests of the value ranges (ranges.rs) on small hand-built kernels, and of
//! the checked WGSL that skips `saddr` where they prove an access.

use super::*;
use crate::cfg::{Block, Space};
use crate::wgsl::cfg::{emit_cfg_wgsl, CfgWgslOptions};

fn st(inst: Inst) -> Stmt {
    Stmt {
        inst,
        guard: None,
        line: 7,
    }
}

fn bin(op: BinOp, d: Reg, a: Val, b: Val) -> Stmt {
    st(Inst::Bin { op, d, a, b })
}

fn tid(d: Reg, i: u8) -> Stmt {
    st(Inst::Special {
        d,
        s: Special::Tid(i),
    })
}

/// A 4-byte load of shared memory at `base + off` into `d`.
fn ld(d: Reg, base: Val, off: i64) -> Stmt {
    ld_in(Space::Shared, d, base, off)
}

fn ld_in(space: Space, d: Reg, base: Val, off: i64) -> Stmt {
    st(Inst::Load {
        space,
        size: 4,
        sign: false,
        d: vec![Some(d)],
        base,
        off,
        unused: 0,
    })
}

fn r(x: Reg) -> Val {
    Val::Reg(x)
}

fn imm(x: u64) -> Val {
    Val::Imm(x)
}

/// A kernel of `nregs` 32-bit registers, 2048 shared bytes.
fn kernel(nregs: usize, blocks: Vec<Block>) -> CfgKernel {
    CfgKernel {
        name: "k".into(),
        regs: vec![RegTy::B32; nregs],
        blocks,
        param_bytes: 32,
        shared_static: 2048,
        local_bytes: 0,
        globals: vec![],
    }
}

fn one_block(nregs: usize, stmts: Vec<Stmt>) -> CfgKernel {
    kernel(
        nregs,
        vec![Block {
            stmts,
            term: Term::Return,
        }],
    )
}

/// The range of the base of statement `i` of block `b` for blocks of
/// `block` threads.
fn base_at(k: &CfgKernel, block: [u32; 3], b: usize, i: usize) -> Option<Range> {
    Ranges::of(k, block, 0).base(&k.blocks[b].stmts[i])
}

/// Whether the 4-byte, 4-aligned access of statement `i` of block `b` is
/// proven inside the kernel's 2048 shared bytes.
fn proven(k: &CfgKernel, block: [u32; 3], b: usize, i: usize) -> bool {
    let Inst::Load { off, .. } = k.blocks[b].stmts[i].inst else {
        panic!("not a load");
    };
    base_at(k, block, b, i).is_some_and(|x| in_bounds(x, off, 4, 4, 2048))
}

/// `matmul_tiled`'s tile address: `1024 + (tid.y << 6) + (tid.x << 2)`.
fn tile(off: i64) -> CfgKernel {
    one_block(
        8,
        vec![
            tid(0, 0),
            tid(1, 1),
            bin(BinOp::Shl(32), 2, r(1), imm(6)),
            bin(BinOp::Shl(32), 3, r(0), imm(2)),
            st(Inst::Un {
                op: UnOp::Mov(32),
                d: 4,
                a: imm(1024),
            }),
            bin(BinOp::Add(32), 5, r(4), r(2)),
            bin(BinOp::Add(32), 6, r(5), r(3)),
            ld(7, r(6), off),
        ],
    )
}

#[test]
fn a_tid_derived_address_is_proven() {
    let k = tile(0);
    let b = base_at(&k, [16, 16, 1], 0, 7).expect("a range");
    assert_eq!((b.lo, b.hi), (1024, 1024 + 15 * 64 + 15 * 4));
    assert!(b.tz >= 2, "{b:?}");
    assert!(proven(&k, [16, 16, 1], 0, 7));
    // Past the shared bytes by one word: not proven.
    assert!(!proven(&tile(4), [16, 16, 1], 0, 7));
    // A larger block reaches past them: not proven.
    assert!(!proven(&k, [16, 17, 1], 0, 7));
    assert!(!proven(&k, [17, 16, 1], 0, 7));
}

#[test]
fn a_loop_carried_induction_variable_is_not_proven() {
    // r1 = tid.x << 2 before the loop; the loop loads [r1] and steps r1 by
    // 4 while r1 < 64: the first load (before the loop) is proven, the
    // loop's is not (flow-insensitive on the definitions).
    let k = kernel(
        4,
        vec![
            Block {
                stmts: vec![
                    tid(0, 0),
                    bin(BinOp::Shl(32), 1, r(0), imm(2)),
                    ld(3, r(1), 0),
                ],
                term: Term::Jump(1),
            },
            Block {
                stmts: vec![
                    ld(3, r(1), 0),
                    bin(BinOp::Add(32), 1, r(1), imm(4)),
                    bin(
                        BinOp::SetpInt {
                            cmp: crate::cfg::ICmp::Lt,
                            signed: false,
                            bits: 32,
                        },
                        2,
                        r(1),
                        imm(64),
                    ),
                ],
                term: Term::Branch {
                    p: 2,
                    neg: false,
                    then: 1,
                    els: 2,
                },
            },
            Block {
                stmts: vec![],
                term: Term::Return,
            },
        ],
    );
    assert!(proven(&k, [8, 1, 1], 0, 2));
    assert!(!proven(&k, [8, 1, 1], 1, 0));
    // Widened to every value of the register.
    assert_eq!(base_at(&k, [8, 1, 1], 1, 0), Some(Range::full(32)));
}

#[test]
fn a_loaded_value_is_not_proven() {
    let k = one_block(
        4,
        vec![
            ld(0, imm(0), 0),
            bin(BinOp::Shl(32), 1, r(0), imm(2)),
            ld(2, r(1), 0),
            // Masked to a small range it is proven again.
            bin(BinOp::And(32), 3, r(0), imm(0x3fc)),
            ld(2, r(3), 0),
        ],
    );
    assert!(!proven(&k, [1, 1, 1], 0, 2));
    assert!(proven(&k, [1, 1, 1], 0, 4));
}

#[test]
fn a_wrapping_add_is_not_proven() {
    // tid.x + 0xfffffff0 wraps to 0..16 for tid.x >= 16: every value of
    // 32 bits, though some threads' addresses are in bounds.
    let k = one_block(
        4,
        vec![
            tid(0, 0),
            bin(BinOp::Add(32), 1, r(0), imm(0xffff_fff0)),
            bin(BinOp::Shl(32), 2, r(1), imm(2)),
            ld(3, r(2), 0),
            // A subtraction that may go below zero, likewise.
            bin(BinOp::Sub(32), 2, r(0), imm(4)),
            ld(3, r(2), 0),
            // A 16-bit add wraps at 2^16.
            bin(BinOp::Add(16), 2, r(0), imm(0xfffe)),
            ld(3, r(2), 0),
        ],
    );
    // An 8-bit add that wraps for tid.x >= 6 (250..255, then 0..9), less
    // 240, times 4: unwrapped, 40..100 would be in bounds; 0 - 240 is not.
    let k8 = one_block(
        4,
        vec![
            tid(0, 0),
            bin(BinOp::Add(8), 1, r(0), imm(250)),
            bin(BinOp::Sub(32), 2, r(1), imm(240)),
            bin(BinOp::Shl(32), 3, r(2), imm(2)),
            ld(3, r(3), 0),
        ],
    );
    assert!(!proven(&k8, [16, 1, 1], 0, 4));
    // Where it cannot wrap (tid.x < 6), proven.
    assert!(proven(&k8, [6, 1, 1], 0, 4));
    assert_eq!(base_at(&k, [32, 1, 1], 0, 3), Some(Range::full(32)));
    assert!(!proven(&k, [32, 1, 1], 0, 3));
    assert!(!proven(&k, [32, 1, 1], 0, 5));
    assert!(!proven(&k, [32, 1, 1], 0, 7));
    // Without wrapping (one thread: tid.x = 0 - 4 still wraps): the same.
    assert!(!proven(&k, [1, 1, 1], 0, 5));
}

#[test]
fn a_misaligned_address_is_not_proven() {
    let k = one_block(
        4,
        vec![
            tid(0, 0),
            // Multiples of 2 only.
            bin(BinOp::Shl(32), 1, r(0), imm(1)),
            ld(3, r(1), 0),
            // Multiples of 4 at an offset of 2.
            bin(BinOp::Shl(32), 2, r(0), imm(2)),
            ld(3, r(2), 2),
            ld(3, r(2), 8),
        ],
    );
    assert!(!proven(&k, [16, 1, 1], 0, 2));
    assert!(!proven(&k, [16, 1, 1], 0, 4));
    assert!(proven(&k, [16, 1, 1], 0, 5));
    // One value, misaligned; and aligned.
    assert!(!in_bounds(Range::konst(6), 0, 4, 4, 2048));
    assert!(in_bounds(Range::konst(6), 2, 4, 4, 2048));
}

#[test]
fn a_guarded_definition_and_a_second_definition_reach_a_read() {
    let mut guarded = bin(BinOp::Add(32), 1, r(1), imm(4096));
    guarded.guard = Some((2, false));
    let k = one_block(
        4,
        vec![
            tid(0, 0),
            bin(BinOp::Shl(32), 1, r(0), imm(2)),
            ld(3, r(1), 0),
            // Possibly out of bounds where the guard holds.
            guarded,
            ld(3, r(1), 0),
            // An unguarded definition ends both.
            bin(BinOp::And(32), 1, r(1), imm(0x7fc)),
            ld(3, r(1), 0),
        ],
    );
    assert!(proven(&k, [16, 1, 1], 0, 2));
    assert!(!proven(&k, [16, 1, 1], 0, 4));
    assert!(proven(&k, [16, 1, 1], 0, 6));
}

#[test]
fn a_register_read_before_any_definition_is_not_proven() {
    // r1's initial value reaches the load on the path that skips block 1.
    let k = kernel(
        3,
        vec![
            Block {
                stmts: vec![tid(0, 0)],
                term: Term::Branch {
                    p: 2,
                    neg: false,
                    then: 1,
                    els: 2,
                },
            },
            Block {
                stmts: vec![bin(BinOp::Shl(32), 1, r(0), imm(2))],
                term: Term::Jump(2),
            },
            Block {
                stmts: vec![ld(2, r(1), 0)],
                term: Term::Return,
            },
        ],
    );
    assert!(!proven(&k, [16, 1, 1], 2, 0));
}

#[test]
fn immediates_and_negative_offsets_are_bounded() {
    assert!(in_bounds(Range::konst(28), 0, 4, 4, 32));
    assert!(!in_bounds(Range::konst(30), 0, 4, 4, 32));
    assert!(!in_bounds(Range::konst(32), 0, 4, 4, 32));
    let b = Range {
        lo: 16,
        hi: 32,
        tz: 2,
    };
    assert!(in_bounds(b, -16, 4, 4, 2048));
    assert!(!in_bounds(b, -20, 4, 4, 2048));
    // An immediate's 64 bits: its high word is not 0.
    assert!(!in_bounds(Range::konst(1 << 32), 0, 4, 4, 2048));
}

/// The statements `t{n} = saddr(...)` of `w`.
fn saddr_calls(w: &str) -> usize {
    w.matches("= saddr(").count()
}

#[test]
fn checked_wgsl_skips_saddr_only_where_proven() {
    // The tile load proven, a loaded address not, a parameter at an
    // immediate proven.
    let mut k = tile(0);
    k.blocks[0].stmts.push(ld(1, r(7), 0));
    k.blocks[0].stmts.push(ld_in(Space::Param, 2, imm(28), 0));
    let o = CfgWgslOptions::plain([16, 16, 1], true);
    let w = emit_cfg_wgsl(&k, &o).expect("WGSL");
    assert_eq!(saddr_calls(&w), 1, "{w}");
    assert!(w.contains("saddr(w64(r7), 4u, 4u, 7u, SHARED_BYTES"), "{w}");
    // The initialisation check stays on the proven access.
    assert_eq!(w.matches("sh_rd(t").count(), 2, "{w}");
    // Blocks of 32 × 16 reach past the tile: every shared access checked.
    let o = CfgWgslOptions::plain([32, 16, 1], true);
    let w = emit_cfg_wgsl(&k, &o).expect("WGSL");
    assert_eq!(saddr_calls(&w), 2, "{w}");
    // Unchecked: no saddr at all.
    let o = CfgWgslOptions::plain([16, 16, 1], false);
    assert_eq!(saddr_calls(&emit_cfg_wgsl(&k, &o).expect("WGSL")), 0);
}
