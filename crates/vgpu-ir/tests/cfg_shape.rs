//! The control-flow shape (vgpu_ir::cfg::shape) and the structured WGSL it
//! allows: loops and ifs with direct barriers where every thread of a block
//! meets them alike, the state machine elsewhere.

mod common;

use common::{param_pointer, plain_options, validate};
use vgpu_ir::cfg::shape::{Shape, Unstructured};
use vgpu_ir::cfg::*;
use vgpu_ir::wgsl::cfg::emit_cfg_wgsl;

fn st(inst: Inst) -> Stmt {
    Stmt {
        inst,
        guard: None,
        line: 3,
    }
}

fn block(stmts: Vec<Stmt>, term: Term) -> Block {
    Block { stmts, term }
}

/// `d = a < b` (signed 32-bit).
fn lt(d: Reg, a: Val, b: Val) -> Stmt {
    st(Inst::Bin {
        op: BinOp::SetpInt {
            cmp: ICmp::Lt,
            signed: true,
            bits: 32,
        },
        d,
        a,
        b,
    })
}

/// `d = a + b` (32-bit).
fn add(d: Reg, a: Val, b: Val) -> Stmt {
    st(Inst::Bin {
        op: BinOp::Add(32),
        d,
        a,
        b,
    })
}

fn kernel(regs: Vec<RegTy>, blocks: Vec<Block>) -> CfgKernel {
    CfgKernel {
        name: "k".into(),
        regs,
        blocks,
        param_bytes: 16,
        shared_static: 256,
        local_bytes: 0,
        globals: vec![],
    }
}

/// A tiled loop in the shape nvcc gives matmul_tiled: a trip count from a
/// parameter (uniform), a guarded load by `%tid` (divergent, barrier-free),
/// two barriers in the loop body, a guarded store after it. `early`: the
/// threads past a `%tid` bound return before the loop instead
/// (cuda-samples' uniform_add), so the barriers are not met alike.
///
/// r0 tid, r1 count (param), r2 i, p3 loop test, p4 tid test, r5 value,
/// r6 pointer.
fn tiled(early: bool) -> CfgKernel {
    use Val::{Imm, Reg as R};
    let regs = vec![
        RegTy::B32,
        RegTy::B32,
        RegTy::B32,
        RegTy::Pred,
        RegTy::Pred,
        RegTy::B32,
        RegTy::B64,
    ];
    let entry = vec![
        st(Inst::Special {
            d: 0,
            s: Special::Tid(0),
        }),
        st(param_pointer(6)),
        st(Inst::Load {
            space: Space::Param,
            size: 4,
            sign: false,
            d: vec![Some(1)],
            base: Imm(8),
            off: 0,
            unused: 0,
        }),
        st(Inst::Un {
            op: UnOp::Mov(32),
            d: 2,
            a: Imm(0),
        }),
        lt(4, R(0), Imm(16)),
    ];
    let shared = |src: Val| {
        st(Inst::Store {
            space: Space::Shared,
            size: 4,
            src: vec![src],
            base: R(0),
            off: 0,
        })
    };
    let blocks = vec![
        // 0: entry; early: threads with tid >= 16 return.
        block(
            entry,
            if early {
                Term::Branch {
                    p: 4,
                    neg: false,
                    then: 1,
                    els: 6,
                }
            } else {
                Term::Jump(1)
            },
        ),
        // 1: loop header; tid < 16 loads.
        block(
            vec![st(Inst::Un {
                op: UnOp::Mov(32),
                d: 5,
                a: Imm(0),
            })],
            Term::Branch {
                p: 4,
                neg: false,
                then: 2,
                els: 3,
            },
        ),
        // 2: the guarded global load.
        block(
            vec![st(Inst::Load {
                space: Space::Global,
                size: 4,
                sign: false,
                d: vec![Some(5)],
                base: R(6),
                off: 0,
                unused: 0,
            })],
            Term::Jump(3),
        ),
        // 3: into shared memory, then the first barrier.
        block(vec![shared(R(5))], Term::Barrier { next: 4, line: 9 }),
        // 4: read it back, the second barrier.
        block(
            vec![st(Inst::Load {
                space: Space::Shared,
                size: 4,
                sign: false,
                d: vec![Some(5)],
                base: Imm(0),
                off: 0,
                unused: 0,
            })],
            Term::Barrier { next: 5, line: 11 },
        ),
        // 5: the uniform trip count.
        block(
            vec![add(2, R(2), Imm(1)), lt(3, R(2), R(1))],
            Term::Branch {
                p: 3,
                neg: false,
                then: 1,
                els: 6,
            },
        ),
        // 6: the end.
        block(vec![], Term::Return),
    ];
    kernel(regs, blocks)
}

#[test]
fn a_uniform_tiled_loop_is_structured_with_direct_barriers() {
    let k = tiled(false);
    let s = Shape::of(&k).expect("structured");
    assert!(s.loops[1].is_some(), "block 1 heads the loop");
    assert_eq!(s.loops[1].as_ref().unwrap().exit, Some(6));
    assert_eq!(s.ipdom[1], Some(3), "the tid test joins at block 3");
    assert!(s.divergent_branch[1], "the tid test diverges");
    assert!(!s.divergent_branch[5], "the trip count is a parameter's");
    assert!(!s.divergent_block[3] && !s.divergent_block[4]);
    assert!(s.divergent_block[2]);
    assert!(s.barriers_uniform(&k));
    let w = emit_cfg_wgsl(&k, &plain_options(false)).unwrap();
    validate(&w, false);
    assert!(w.contains("fn run_thread("), "{w}");
    assert!(!w.contains("switch pc"), "{w}");
    assert_eq!(w.matches("workgroupBarrier();").count(), 2, "{w}");
    assert!(w.contains("loop {") && w.contains("break;"), "{w}");
}

#[test]
fn an_early_return_before_a_barrier_keeps_the_rounds() {
    let k = tiled(true);
    let s = Shape::of(&k).expect("reducible");
    assert!(s.divergent_branch[0]);
    assert!(!s.barriers_uniform(&k));
    let w = emit_cfg_wgsl(&k, &plain_options(false)).unwrap();
    validate(&w, false);
    assert!(
        w.contains("switch pc") && w.contains("workgroupUniformLoad"),
        "{w}"
    );
    assert!(!w.contains("fn run_thread("), "{w}");
}

/// Checked with barriers: structured, its faults recorded at once without
/// ending the thread, the loop with the barriers counted alike in every
/// thread for the watchdog, stores skipped after a fault.
#[test]
fn a_checked_kernel_with_uniform_barriers_is_structured_and_faults_go_on() {
    let k = tiled(false);
    let w = emit_cfg_wgsl(&k, &plain_options(true)).unwrap();
    validate(&w, false);
    assert!(
        w.contains("fn run_thread(") && !w.contains("switch pc"),
        "{w}"
    );
    // A barrier counts the barriers passed (the time of later faults); the
    // block's end records its earliest fault, the one place `raise_t` is
    // called with a thread's record.
    assert!(
        w.contains("g_nbar = g_nbar + 1u;\n  workgroupBarrier();"),
        "{w}"
    );
    assert_eq!(
        w.matches("raise_t(g_fcls, g_fline, g_fa, lid3(g_ft));")
            .count(),
        1,
        "{w}"
    );
    assert!(!w.contains("raise_t(g_fcls, g_fline, g_fa, g_lid)"), "{w}");
    assert!(!w.contains("pc = 4294967295u; break;"), "{w}");
    assert!(
        w.contains("it1 = it1 + 1u;") && w.contains("if (it1 > words[1] / "),
        "{w}"
    );
    // The loop's watchdog raises without a branch.
    assert!(w.contains("raise_if(steps > words[1], 3u, "), "{w}");
    assert!(w.contains("  g_ft = lidx;\n  run_thread("), "{w}");
    assert!(!w.contains("if (steps > words[1])"), "{w}");
    assert!(w.contains("if (g_fcls == 0u) { st_"), "{w}");
    // Each barrier, then its release's uninitialised-read verdict between it
    // and a second; the block's end, one barrier after which the earliest
    // fault is recorded and, where there is none, the last verdict taken.
    // Each verdict reports through `sh_report`, the one place that unpacks
    // a pending read into the fault's line and thread. The counted loop's
    // watchdog is tested once on entry for the whole workgroup (a barrier
    // and a uniform load: watchdog.rs, `fits_code`).
    assert_eq!(w.matches("workgroupBarrier();").count(), 6, "{w}");
    assert!(
        w.contains("wdok1 = workgroupUniformLoad(&wg_wdfast);"),
        "{w}"
    );
    assert!(w.contains("if (wdok1 == 0u) {"), "{w}");
    assert_eq!(w.matches("sh_report(u);").count(), 3, "{w}");
    assert_eq!(w.matches("raise_lidx(6u").count(), 1, "{w}");
}

#[test]
fn the_switch_option_keeps_the_state_machine() {
    let k = tiled(false);
    let mut o = plain_options(false);
    o.structured = false;
    let w = emit_cfg_wgsl(&k, &o).unwrap();
    validate(&w, false);
    assert!(
        w.contains("switch pc") && !w.contains("fn run_thread("),
        "{w}"
    );
}

/// A barrier-free loop: checked, structured, its watchdog at the header.
#[test]
fn a_checked_loop_without_barriers_is_structured_with_its_watchdog() {
    let mut k = tiled(false);
    for b in &mut k.blocks {
        if let Term::Barrier { next, .. } = b.term {
            b.term = Term::Jump(next);
        }
    }
    let w = emit_cfg_wgsl(&k, &plain_options(true)).unwrap();
    validate(&w, false);
    assert!(w.contains("fn run_thread("), "{w}");
    // The fault ends the thread: its line noted, recorded at the end.
    assert!(w.contains("if (steps > words[1]) { g_wd = "), "{w}");
    assert!(
        w.contains("if (g_wd != 0u) { g_fcls = 3u; g_fline = g_wd - 1u;"),
        "{w}"
    );
    assert!(!w.contains("pc = 4294967295u; break;"), "{w}");
}

#[test]
fn unstructured_control_flow_is_named() {
    use Val::Imm;
    let regs = vec![RegTy::Pred];
    let test = vec![lt(0, Imm(1), Imm(2))];
    let br = |then, els| Term::Branch {
        p: 0,
        neg: false,
        then,
        els,
    };
    // 0 -> 1 | 2, 1 <-> 2: a loop entered at both blocks.
    let irreducible = kernel(
        regs.clone(),
        vec![
            block(test.clone(), br(1, 2)),
            block(test.clone(), br(2, 3)),
            block(test.clone(), br(1, 3)),
            block(vec![], Term::Return),
        ],
    );
    assert_eq!(
        Shape::of(&irreducible).unwrap_err(),
        Unstructured::Irreducible
    );
    // 0 -> 1; 1 -> 2 | 3; 2 -> 1 | 4: one loop leaving to 3 and to 4.
    let two_exits = kernel(
        regs.clone(),
        vec![
            block(vec![], Term::Jump(1)),
            block(test.clone(), br(2, 3)),
            block(test.clone(), br(1, 4)),
            block(vec![], Term::Return),
            block(vec![], Term::Return),
        ],
    );
    assert_eq!(
        Shape::of(&two_exits).unwrap_err(),
        Unstructured::LoopExits(1)
    );
    // 0 -> 1 -> 1: no way out.
    let endless = kernel(
        regs.clone(),
        vec![block(vec![], Term::Jump(1)), block(vec![], Term::Jump(1))],
    );
    assert_eq!(Shape::of(&endless).unwrap_err(), Unstructured::NoExit(0));
    // Each still compiles, as the state machine.
    for k in [irreducible, two_exits, endless] {
        let w = emit_cfg_wgsl(&k, &plain_options(false)).unwrap();
        validate(&w, false);
        assert!(w.contains("switch pc"), "{w}");
    }
}

/// `n` nested ifs: block `i` goes on to `i + 1` or straight to the end.
fn nested(n: u32) -> CfgKernel {
    use Val::Imm;
    let mut blocks: Vec<Block> = (0..n)
        .map(|i| {
            block(
                vec![lt(0, Imm(i as u64), Imm(7))],
                Term::Branch {
                    p: 0,
                    neg: false,
                    then: i + 1,
                    els: n + 1,
                },
            )
        })
        .collect();
    blocks.push(block(vec![], Term::Jump(n + 1)));
    blocks.push(block(vec![], Term::Return));
    kernel(vec![RegTy::Pred], blocks)
}

/// 200 nested ifs: past the nesting limit the kernel keeps the state
/// machine, found without recursing through all 200 levels.
#[test]
fn nesting_past_the_limit_keeps_the_state_machine() {
    let k = nested(200);
    assert!(Shape::of(&k).is_ok());
    let w = emit_cfg_wgsl(&k, &plain_options(false)).unwrap();
    validate(&w, false);
    assert!(w.contains("switch pc") && !w.contains("fn run_thread("));
    // 20 levels fit (the innermost if, both of whose arms go straight to
    // the end, is written as nothing).
    let w = emit_cfg_wgsl(&nested(20), &plain_options(false)).unwrap();
    validate(&w, false);
    assert!(
        w.contains("fn run_thread(") && w.matches("if (r0 != 0u) {").count() == 19,
        "{w}"
    );
}
