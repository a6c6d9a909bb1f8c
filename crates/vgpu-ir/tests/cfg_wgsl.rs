//! The control-flow form's WGSL passes naga's validation: every operation,
//! every memory space, sub-word stores, barriers (the uniform round loop),
//! checked and unchecked, with and without f64.

mod common;

use common::{param_pointer, plain_options, validate};
use vgpu_ir::cfg::*;
use vgpu_ir::wgsl::cfg::{check_cfg_wgsl, emit_cfg_wgsl, CfgWgslOptions};

fn st(inst: Inst) -> Stmt {
    Stmt {
        inst,
        guard: None,
        line: 7,
    }
}

/// A kernel that uses every instruction kind once, a loop, and a barrier.
fn everything() -> CfgKernel {
    use Val::{Imm, Reg as R};
    let regs = vec![
        RegTy::B32,
        RegTy::B32,
        RegTy::B64,
        RegTy::Pred,
        RegTy::B64,
        RegTy::B32,
    ];
    let mut s = vec![
        st(Inst::Special {
            d: 0,
            s: Special::Tid(0),
        }),
        st(param_pointer(2)),
        st(Inst::Load {
            space: Space::Global,
            size: 2,
            sign: true,
            d: vec![Some(1), None],
            base: R(2),
            off: 4,
            unused: 0,
        }),
        st(Inst::Store {
            space: Space::Global,
            size: 1,
            src: vec![R(1)],
            base: R(2),
            off: -1,
        }),
        st(Inst::Store {
            space: Space::Shared,
            size: 4,
            src: vec![R(1)],
            base: R(0),
            off: 0,
        }),
        st(Inst::Store {
            space: Space::Local,
            size: 8,
            src: vec![R(2)],
            base: Imm(0),
            off: 0,
        }),
    ];
    for op in [
        UnOp::Mov(16),
        UnOp::Mov(64),
        UnOp::Not(32),
        UnOp::Neg(64),
        UnOp::NegF32,
        UnOp::AbsF32,
        UnOp::SqrtF32Rn,
        UnOp::RcpF32Rn,
    ] {
        s.push(st(Inst::Un { op, d: 5, a: R(1) }));
    }
    for op in [
        BinOp::AddF32,
        BinOp::SubF32,
        BinOp::MulF32,
        BinOp::DivF32Rn,
        BinOp::MinF32,
        BinOp::MaxF32,
        BinOp::Add(64),
        BinOp::Sub(8),
        BinOp::MulLo(64),
        BinOp::MulHi32 { signed: true },
        BinOp::MulWide { signed: false },
        BinOp::Min {
            bits: 64,
            signed: true,
        },
        BinOp::Max {
            bits: 16,
            signed: false,
        },
        BinOp::And(64),
        BinOp::Or(32),
        BinOp::Xor(1),
        BinOp::Shl(64),
        BinOp::ShrU(32),
        BinOp::ShrS(64),
        BinOp::SetpInt {
            cmp: ICmp::Le,
            signed: true,
            bits: 64,
        },
        BinOp::SetpF32(FCmp::Ltu),
    ] {
        s.push(st(Inst::Bin {
            op,
            d: 4,
            a: R(2),
            b: Imm(3),
        }));
    }
    for op in [
        TernOp::FmaF32 {
            neg_ab: true,
            neg_c: false,
        },
        TernOp::MadLo(64),
        TernOp::MadWide { signed: true },
        TernOp::Selp(64),
    ] {
        s.push(st(Inst::Tern {
            op,
            d: 4,
            a: R(1),
            b: R(0),
            c: R(3),
        }));
    }
    for op in [
        CvtOp::Int {
            sbits: 16,
            signed: true,
            dbits: 64,
        },
        CvtOp::I32ToF32Rn { signed: true },
        CvtOp::F32ToI32 {
            signed: false,
            rnd: IntRound::Nearest,
        },
        CvtOp::F32Round(IntRound::Down),
    ] {
        s.push(st(Inst::Cvt { op, d: 5, a: R(1) }));
    }
    for (i, op) in [
        AtomOp::Add,
        AtomOp::AddF32,
        AtomOp::Min { signed: true },
        AtomOp::Max { signed: false },
        AtomOp::Cas,
        AtomOp::Dec,
    ]
    .into_iter()
    .enumerate()
    {
        s.push(st(Inst::Atom {
            space: if i % 2 == 0 {
                Space::Global
            } else {
                Space::Shared
            },
            op,
            d: (i % 3 != 0).then_some(1),
            base: R(2),
            off: 0,
            b: R(0),
            c: Imm(5),
        }));
    }
    // f64 in registers (line 11): every operation and conversion.
    let f64_ops = [
        Inst::Bin {
            op: BinOp::F64(F64Bin::Add),
            d: 4,
            a: R(2),
            b: R(4),
        },
        Inst::Bin {
            op: BinOp::F64(F64Bin::Sub),
            d: 4,
            a: R(4),
            b: Imm(0x3ff0_0000_0000_0000),
        },
        Inst::Bin {
            op: BinOp::F64(F64Bin::Mul),
            d: 2,
            a: R(2),
            b: R(4),
        },
        Inst::Bin {
            op: BinOp::F64(F64Bin::Min),
            d: 2,
            a: R(2),
            b: R(4),
        },
        Inst::Bin {
            op: BinOp::F64(F64Bin::Max),
            d: 2,
            a: R(2),
            b: R(4),
        },
        Inst::Un {
            op: UnOp::F64(F64Un::Neg),
            d: 4,
            a: R(4),
        },
        Inst::Un {
            op: UnOp::F64(F64Un::Abs),
            d: 4,
            a: R(4),
        },
        Inst::Cvt {
            op: CvtOp::F64(F64Cvt::FromI32 { signed: true }),
            d: 4,
            a: R(1),
        },
        Inst::Cvt {
            op: CvtOp::F64(F64Cvt::FromI32 { signed: false }),
            d: 4,
            a: R(1),
        },
        Inst::Cvt {
            op: CvtOp::F64(F64Cvt::FromI64Rn { signed: true }),
            d: 4,
            a: R(2),
        },
        Inst::Cvt {
            op: CvtOp::F64(F64Cvt::FromI64Rn { signed: false }),
            d: 4,
            a: R(2),
        },
        Inst::Cvt {
            op: CvtOp::F64(F64Cvt::FromF32),
            d: 4,
            a: R(1),
        },
        Inst::Cvt {
            op: CvtOp::F64(F64Cvt::ToF32Rn),
            d: 5,
            a: R(4),
        },
    ];
    s.extend(f64_ops.into_iter().map(|inst| Stmt {
        inst,
        guard: None,
        line: 11,
    }));
    s.push(Stmt {
        inst: Inst::Un {
            op: UnOp::Mov(32),
            d: 1,
            a: Imm(1),
        },
        guard: Some((3, true)),
        line: 9,
    });
    CfgKernel {
        name: "everything".into(),
        regs,
        blocks: vec![
            Block {
                stmts: s,
                term: Term::Barrier { next: 1, line: 8 },
            },
            Block {
                stmts: vec![],
                term: Term::Branch {
                    p: 3,
                    neg: false,
                    then: 0,
                    els: 2,
                },
            },
            Block {
                stmts: vec![],
                term: Term::Trap { line: 10 },
            },
        ],
        param_bytes: 8,
        shared_static: 1024,
        local_bytes: 8,
        globals: vec![],
    }
}

#[test]
fn every_operation_validates_checked_and_unchecked() {
    let k = everything();
    for checked in [true, false] {
        let o = CfgWgslOptions {
            block: [64, 2, 1],
            dyn_shared: 100,
            f64: true,
            int64: true,
            ..plain_options(checked)
        };
        validate(&emit_cfg_wgsl(&k, &o).unwrap(), true);
    }
}

#[test]
fn f32_exact_operations_need_f64_and_name_the_line() {
    let k = everything();
    let o = CfgWgslOptions {
        block: [32, 1, 1],
        ..plain_options(true)
    };
    let e = check_cfg_wgsl(&k, &o).unwrap_err().to_string();
    assert!(e.contains("line 7") && e.contains("SHADER_F64"), "{e}");
}

#[test]
fn f64_registers_need_int64_and_name_the_line() {
    let k = everything();
    let o = CfgWgslOptions {
        block: [32, 1, 1],
        f64: true,
        ..plain_options(true)
    };
    let e = check_cfg_wgsl(&k, &o).unwrap_err().to_string();
    assert!(e.contains("line 11") && e.contains("SHADER_INT64"), "{e}");
}

#[test]
fn malformed_kernels_are_refused() {
    let mut k = everything();
    k.blocks[1].term = Term::Jump(99);
    let o = CfgWgslOptions {
        block: [32, 1, 1],
        f64: true,
        int64: true,
        ..plain_options(true)
    };
    let e = emit_cfg_wgsl(&k, &o).unwrap_err().to_string();
    assert!(e.contains("block 99 out of range"), "{e}");
}

/// One `fma.rn.f32` with both negations: `d = -(a b) - c`.
fn one_fma() -> CfgKernel {
    use Val::Reg as R;
    CfgKernel {
        name: "one_fma".into(),
        regs: vec![RegTy::B32; 4],
        blocks: vec![Block {
            stmts: vec![st(Inst::Tern {
                op: TernOp::FmaF32 {
                    neg_ab: true,
                    neg_c: true,
                },
                d: 3,
                a: R(0),
                b: R(1),
                c: R(2),
            })],
            term: Term::Return,
        }],
        param_bytes: 0,
        shared_static: 0,
        local_bytes: 0,
        globals: vec![],
    }
}

/// An f32 fma of registers or immediates.
fn fma(d: Reg, a: Val, b: Val, c: Val) -> Stmt {
    st(Inst::Tern {
        op: TernOp::FmaF32 {
            neg_ab: false,
            neg_c: false,
        },
        d,
        a,
        b,
        c,
    })
}

/// Where the device's fma is guarded (f64, subnormals not kept), a block's
/// fmas are one speculative region: they run on the device's fma, a value
/// tested (once, against the smallest threshold with the fewest tests:
/// 2^-48 here) only where its bound (magnitude.rs) may be below 2^-126, and
/// only where a test fired does the block run again with the in-place
/// guard, from the register it overwrote (r0) restored, as a loop over its
/// fmas.
#[test]
fn a_blocks_guarded_fmas_run_bare_in_one_speculative_region() {
    use Val::{Imm, Reg as R};
    let k = CfgKernel {
        name: "region".into(),
        regs: vec![RegTy::B32; 6],
        blocks: vec![Block {
            stmts: vec![
                fma(2, R(0), R(0), R(1)),
                fma(3, R(2), Imm(2f32.to_bits() as u64), R(0)),
                st(Inst::Bin {
                    op: BinOp::MulF32,
                    d: 4,
                    a: R(3),
                    b: R(3),
                }),
                fma(5, R(4), R(2), R(3)),
                fma(0, R(5), R(0), R(1)),
            ],
            term: Term::Return,
        }],
        param_bytes: 0,
        shared_static: 0,
        local_bytes: 0,
        globals: vec![],
    };
    let mut o = CfgWgslOptions {
        native_fma_f32: true,
        f64: true,
        ..plain_options(false)
    };
    let w = emit_cfg_wgsl(&k, &o).unwrap();
    validate(&w, true);
    let region = &w[w.find("var sus0 = false;").expect(&w)..];
    let (fast, slow) = region.split_once("if (sus0) {").expect(&w);
    assert!(
        fast.contains("let sv0_0 = r0;") && slow.contains("r0 = sv0_0;"),
        "{w}"
    );
    assert_eq!(fast.matches("dev_fma(").count(), 4, "{w}");
    // The second run a loop over the four fmas (wgsl/cfg/second_run.rs: at
    // most r0, r1 and r2 live at any of them, all three at the second), its
    // one guarded fma after the switch.
    assert!(slow.contains("switch fk0 {"), "{w}");
    assert_eq!(slow.matches("case ").count(), 4, "{w}");
    assert_eq!(slow.matches("fma_native_f32(").count(), 1, "{w}");
    assert!(slow.contains("if (fk0 == 4u) { break; }"), "{w}");
    // r0 and r1 at the first fma (bounds 2^-48, so r2 = r0·r0 + r1 has
    // 2^-96: the fma rule's cancellation); r3 = 2·r2 + r0 then 2^-96 too;
    // r4 = r3·r3 (2^-192) before the third, tested (2^-48), whose result
    // r5 = r4·r2 + r3 is then bounded by 2^-144 only: tested; the fourth's
    // operands and result bounded (r5·r0 + r1: 2^-96). At 2^-64 r2 would
    // need a test too.
    assert_eq!(fast.matches("tiny(").count(), 4, "{w}");
    assert!(fast.contains("sus0 = sus0 | tiny(r0) | tiny(r1);"), "{w}");
    assert!(fast.contains("sus0 = sus0 | tiny(r4);"), "{w}");
    assert!(fast.contains("sus0 = sus0 | tiny(r5);"), "{w}");
    assert!(w.contains("abs(f(x)) < 3.5527137e-15f"), "{w}");
    // Where the device keeps subnormals in its fma: no region.
    o.f32_subnormals = true;
    let kept = emit_cfg_wgsl(&k, &o).unwrap();
    assert!(
        !kept.contains("var sus") && !kept.contains("tiny("),
        "{kept}"
    );
}

#[test]
fn native_fma_f32_is_the_adapters_fma_and_needs_no_f64() {
    let k = one_fma();
    let mut o = CfgWgslOptions {
        block: [32, 1, 1],
        native_fma_f32: true,
        ..plain_options(true)
    };
    check_cfg_wgsl(&k, &o).unwrap();
    let native = emit_cfg_wgsl(&k, &o).unwrap();
    validate(&native, false);
    assert!(
        native.contains("bitcast<u32>(fma(f(r0 ^ 0x80000000u), f(r1), f(r2 ^ 0x80000000u)))"),
        "{native}"
    );
    assert!(!native.contains("fma_f32"), "{native}");
    // With f64: the guarded form, a suspect result (subnormal operand, zero
    // or subnormal result of nonzero factors) computed on the emulation in
    // place; its test on the bits, or comparing floats where the device keeps
    // subnormals in comparisons.
    o.f64 = true;
    let guarded = emit_cfg_wgsl(&k, &o).unwrap();
    validate(&guarded, true);
    assert!(
        guarded.contains("fma_native_f32(r0 ^ 0x80000000u, r1, r2 ^ 0x80000000u)")
            && guarded.contains("if (fma_suspect(a, b, c, r)) { return fma_f32(a, b, c); }")
            && guarded.contains("let m = min(a & 0x7fffffffu, b & 0x7fffffffu);"),
        "{guarded}"
    );
    o.f32_subnormal_compares = true;
    let compares = emit_cfg_wgsl(&k, &o).unwrap();
    validate(&compares, true);
    assert!(
        compares.contains("let aa = abs(f(a));") && !compares.contains("min(abs("),
        "{compares}"
    );
    o.f32_subnormal_compares = false;
    // A device that keeps f32 subnormals in its fma: the bare fma again.
    o.f32_subnormals = true;
    let kept = emit_cfg_wgsl(&k, &o).unwrap();
    validate(&kept, true);
    assert!(
        kept.contains("bitcast<u32>(fma(f(r0 ^ 0x80000000u), f(r1), f(r2 ^ 0x80000000u)))")
            && !kept.contains("fma_native_f32(r0"),
        "{kept}"
    );
    o.f32_subnormals = false;
    // Off: the f64 emulation, which needs SHADER_F64.
    o.native_fma_f32 = false;
    o.f64 = false;
    let e = check_cfg_wgsl(&k, &o).unwrap_err().to_string();
    assert!(e.contains("line 7") && e.contains("SHADER_F64"), "{e}");
    o.f64 = true;
    let emulated = emit_cfg_wgsl(&k, &o).unwrap();
    validate(&emulated, true);
    assert!(
        emulated.contains("fma_f32(r0 ^ 0x80000000u, r1, r2 ^ 0x80000000u)"),
        "{emulated}"
    );
    assert!(
        !emulated.contains("fma_native_f32(r") && !emulated.contains("fma(f(r"),
        "{emulated}"
    );
}
