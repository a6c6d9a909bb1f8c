//! Generic addresses and yields in the control-flow form's WGSL: loads,
//! sub-word stores and atomics on [`Space::Generic`] and a
//! [`Term::Yield`] pass naga's validation, checked and unchecked, in a kernel
//! with barriers only, one with warp operations, and one with neither (the
//! yield alone makes it run in rounds).

mod common;

use common::{param_pointer, plain_options, validate};
use vgpu_ir::cfg::*;
use vgpu_ir::wgsl::cfg::emit_cfg_wgsl;

fn st(inst: Inst) -> Stmt {
    Stmt {
        inst,
        guard: None,
        line: 7,
    }
}

/// Generic accesses of every kind, then a strong load's yield, then `end`.
fn generic(end: Term) -> CfgKernel {
    use Val::{Imm, Reg as R};
    let s = vec![
        st(param_pointer(1)),
        st(Inst::Store {
            space: Space::Generic,
            size: 1,
            src: vec![R(0)],
            base: R(1),
            off: 3,
        }),
        st(Inst::Store {
            space: Space::Generic,
            size: 8,
            src: vec![R(1), R(1)],
            base: R(1),
            off: 16,
        }),
        st(Inst::Atom {
            space: Space::Generic,
            op: AtomOp::Add,
            d: Some(0),
            base: R(1),
            off: 0,
            b: Imm(1),
            c: Imm(0),
        }),
        st(Inst::Atom {
            space: Space::Generic,
            op: AtomOp::Cas,
            d: None,
            base: R(1),
            off: 4,
            b: Imm(1),
            c: Imm(2),
        }),
        st(Inst::Load {
            space: Space::Generic,
            size: 2,
            sign: true,
            d: vec![Some(0), None],
            base: R(1),
            off: 8,
            unused: 0,
        }),
    ];
    CfgKernel {
        name: "generic".into(),
        regs: vec![RegTy::B32, RegTy::B64, RegTy::Pred],
        blocks: vec![
            Block {
                stmts: s,
                term: Term::Yield { next: 1 },
            },
            Block {
                stmts: vec![],
                term: end,
            },
            Block {
                stmts: vec![],
                term: Term::Return,
            },
        ],
        param_bytes: 8,
        shared_static: 64,
        local_bytes: 32,
        globals: vec![],
    }
}

#[test]
fn generic_accesses_and_yields_validate() {
    let ends = [
        Term::Barrier { next: 2, line: 8 },
        Term::Warp {
            op: WarpOp::Vote {
                mode: VoteMode::Ballot,
                d: 0,
                a: Val::Reg(2),
                neg: false,
            },
            guard: None,
            next: 2,
            line: 9,
        },
        Term::Jump(2),
    ];
    for end in ends {
        let k = generic(end);
        assert!(k.has_yields());
        for checked in [true, false] {
            let o = plain_options(checked);
            let src = emit_cfg_wgsl(&k, &o).unwrap();
            validate(&src, false);
            let check = if checked { "xaddr(" } else { "xoff(" };
            assert!(
                src.contains(check) && src.contains("atom_x("),
                "{end:?}\n{src}"
            );
            // The round loop is there (a yielding thread's pc has bit 31).
            assert!(src.contains("2147483648u"), "{end:?}\n{src}");
        }
    }
}

#[test]
fn generic_atomics_are_valid_in_kernels() {
    let mut k = generic(Term::Return);
    k.blocks[0].stmts[3] = st(Inst::Atom {
        space: Space::Local,
        op: AtomOp::Add,
        d: None,
        base: Val::Imm(0),
        off: 0,
        b: Val::Imm(1),
        c: Val::Imm(0),
    });
    let e = k.validate().unwrap_err();
    assert!(e.contains("an atomic in Local memory"), "{e}");
    k.blocks[0].stmts[3].inst = Inst::Atom {
        space: Space::Generic,
        op: AtomOp::Add,
        d: None,
        base: Val::Imm(0),
        off: 0,
        b: Val::Imm(1),
        c: Val::Imm(0),
    };
    k.validate().unwrap();
}
