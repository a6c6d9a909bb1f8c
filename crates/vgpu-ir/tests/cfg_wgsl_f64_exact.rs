//! The exact f64 sequences' WGSL (`wgsl/cfg/float64_exact.rs`): every
//! operation emits its integer helper (never WGSL's `fma`, `/` or `sqrt` on
//! f64), the result validates in naga with FLOAT64 and SHADER_INT64, the
//! helpers are left out of kernels that do not need them, and an adapter
//! without SHADER_INT64 is refused naming the line. Bit-for-bit agreement with
//! the interpreter is `crates/vgpu/tests/ptx_gpu_f64_exact.rs`.

mod common;

use common::{plain_options, validate};
use vgpu_ir::cfg::*;
use vgpu_ir::wgsl::cfg::{check_cfg_wgsl, emit_cfg_wgsl, CfgWgslOptions};

fn options(int64: bool) -> CfgWgslOptions {
    CfgWgslOptions {
        block: [32, 1, 1],
        f64: true,
        int64,
        ..plain_options(true)
    }
}

/// Registers: 0, 1 f64; 2 a predicate; 3 a 32-bit word.
fn kernel(insts: Vec<Inst>) -> CfgKernel {
    CfgKernel {
        name: "exact64".into(),
        regs: vec![RegTy::B64, RegTy::B64, RegTy::Pred, RegTy::B32],
        blocks: vec![Block {
            stmts: insts
                .into_iter()
                .map(|inst| Stmt {
                    inst,
                    guard: None,
                    line: 12,
                })
                .collect(),
            term: Term::Return,
        }],
        param_bytes: 0,
        shared_static: 0,
        local_bytes: 0,
        globals: vec![],
    }
}

/// Every exact operation once, with the WGSL call it must emit.
fn every_exact_op() -> Vec<(Inst, &'static str)> {
    use Val::{Imm, Reg as R};
    let cvt = |op, d| Inst::Cvt {
        op: CvtOp::F64(op),
        d,
        a: R(0),
    };
    let mut v = vec![
        (
            Inst::Tern {
                op: TernOp::FmaF64 {
                    neg_ab: true,
                    neg_c: false,
                    round: FloatRound::Nearest,
                },
                d: 0,
                a: R(0),
                b: R(1),
                c: Imm(0x3ff0_0000_0000_0000),
            },
            "fma64(((r0) ^ vec2<u32>(0u, 0x80000000u)), r1, vec2<u32>(0u, 1072693248u))",
        ),
        (
            Inst::Bin {
                op: BinOp::F64(F64Bin::Div),
                d: 1,
                a: R(0),
                b: R(1),
            },
            "div64(r0, r1)",
        ),
        (
            Inst::Tern {
                op: TernOp::FmaF64 {
                    neg_ab: false,
                    neg_c: true,
                    round: FloatRound::Down,
                },
                d: 0,
                a: R(0),
                b: R(1),
                c: R(1),
            },
            "fma64m(r0, r1, ((r1) ^ vec2<u32>(0u, 0x80000000u)), 2u)",
        ),
        (
            Inst::Bin {
                op: BinOp::F64(F64Bin::MulRound(FloatRound::Zero)),
                d: 1,
                a: R(0),
                b: R(1),
            },
            "mul64m(r0, r1, 0u)",
        ),
        (
            Inst::Bin {
                op: BinOp::F64(F64Bin::DivRound(FloatRound::Up)),
                d: 1,
                a: R(0),
                b: R(1),
            },
            "div64m(r0, r1, 3u)",
        ),
        (
            Inst::Un {
                op: UnOp::F64(F64Un::SqrtRound(FloatRound::Down)),
                d: 1,
                a: R(0),
            },
            "sqrt64m(r0, 2u)",
        ),
        (
            Inst::Un {
                op: UnOp::F64(F64Un::RcpRound(FloatRound::Zero)),
                d: 1,
                a: R(0),
            },
            "div64m(vec2<u32>(0u, 0x3ff00000u), r0, 0u)",
        ),
        (
            Inst::Bin {
                op: BinOp::F64(F64Bin::AddRound(FloatRound::Up)),
                d: 1,
                a: R(0),
                b: R(1),
            },
            "add64m(r0, r1, 3u)",
        ),
        (
            Inst::Bin {
                op: BinOp::F64(F64Bin::SubRound(FloatRound::Zero)),
                d: 1,
                a: R(0),
                b: R(1),
            },
            "add64m(r0, (r1) ^ vec2<u32>(0u, 0x80000000u), 0u)",
        ),
        (
            Inst::Bin {
                op: BinOp::F64(F64Bin::Setp(FCmp::Ltu)),
                d: 2,
                a: R(0),
                b: R(1),
            },
            "fcmp64(r0, r1, 8u)",
        ),
        (
            Inst::Un {
                op: UnOp::F64(F64Un::Sqrt),
                d: 1,
                a: R(0),
            },
            "sqrt64(r0)",
        ),
        (
            Inst::Un {
                op: UnOp::F64(F64Un::Rcp),
                d: 1,
                a: R(0),
            },
            "div64(vec2<u32>(0u, 0x3ff00000u), r0)",
        ),
        (
            Inst::Un {
                op: UnOp::F64(F64Un::Rsqrt),
                d: 1,
                a: R(0),
            },
            "div64(vec2<u32>(0u, 0x3ff00000u), sqrt64(r0))",
        ),
    ];
    v.extend([
        (
            cvt(
                F64Cvt::ToInt {
                    bits: 32,
                    signed: true,
                    rnd: IntRound::Nearest,
                },
                3,
            ),
            "(f64_to_int(r0, 32u, true, 1u)).x",
        ),
        (
            cvt(
                F64Cvt::ToInt {
                    bits: 64,
                    signed: false,
                    rnd: IntRound::Down,
                },
                1,
            ),
            "f64_to_int(r0, 64u, false, 2u)",
        ),
        (cvt(F64Cvt::Round(IntRound::Up), 1), "f64_rint(r0, 3u)"),
        (
            cvt(F64Cvt::RoundToF32(IntRound::Zero), 3),
            "xto_f32(f64_rint(r0, 0u), 1u, false, false)",
        ),
        (
            Inst::Cvt {
                op: CvtOp::F64(F64Cvt::RoundFromF32(IntRound::Nearest)),
                d: 1,
                a: R(3),
            },
            "f64_rint(xf32(r3), 1u)",
        ),
        (
            cvt(
                F64Cvt::ToF32 {
                    rnd: FloatRound::Down,
                    ftz: true,
                    sat: false,
                },
                3,
            ),
            "xto_f32(r0, 2u, true, false)",
        ),
        (
            cvt(
                F64Cvt::FromI64 {
                    signed: true,
                    rnd: FloatRound::Zero,
                },
                1,
            ),
            "xi64_to_f64(r0, true, 0u)",
        ),
    ]);
    v
}

#[test]
fn every_exact_operation_emits_its_integer_sequence_and_validates() {
    let ops = every_exact_op();
    let k = kernel(ops.iter().map(|(i, _)| i.clone()).collect());
    let src = emit_cfg_wgsl(&k, &options(true)).unwrap();
    validate(&src, true);
    for (_, call) in &ops {
        assert!(src.contains(call), "{call} missing:\n{src}");
    }
    for helper in ["fn xround(", "fn fma64(", "fn div64(", "fn sqrt64("] {
        assert!(src.contains(helper), "{helper} missing");
    }
    // No device f64 arithmetic in the sequences: they are integer code, with
    // no f64 value anywhere.
    let prelude = &src[src.find("struct U128").unwrap()..];
    let prelude = &prelude[..prelude.find("@group").unwrap_or(prelude.len())];
    let code: String = prelude
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect();
    for op in ["fma(", "sqrt(", "<f64>", ": f64", "-> f64", " f64("] {
        assert!(!code.contains(op), "the exact prelude uses {op}");
    }
}

#[test]
fn each_exact_operation_alone_validates() {
    for (inst, call) in every_exact_op() {
        let src = emit_cfg_wgsl(&kernel(vec![inst]), &options(true)).unwrap();
        validate(&src, true);
        assert!(src.contains(call), "{call}");
    }
}

#[test]
fn kernels_without_exact_operations_leave_the_helpers_out() {
    let k = kernel(vec![Inst::Bin {
        op: BinOp::F64(F64Bin::Add),
        d: 0,
        a: Val::Reg(0),
        b: Val::Reg(1),
    }]);
    let src = emit_cfg_wgsl(&k, &options(true)).unwrap();
    validate(&src, true);
    assert!(!src.contains("fn fma64(") && !src.contains("struct U128"));
}

#[test]
fn exact_f64_operations_need_int64_and_name_the_line() {
    for (inst, _) in every_exact_op() {
        let e = check_cfg_wgsl(&kernel(vec![inst]), &options(false))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 12") && e.contains("SHADER_INT64"), "{e}");
    }
}
