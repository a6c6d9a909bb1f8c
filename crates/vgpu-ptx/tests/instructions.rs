//! Instruction semantics, each checked against the PTX ISA's definition, through
//! small hand-written kernels run by the executor.

use vgpu_ptx::{ExecOptions, KernelArg, LaunchConfig, Module};

const HEAD: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// Runs `body` in one thread with `%A %B %C` (b64), `%a %b %c` (b32),
/// `%fa %fb %fc` (f32) and `%da %db %dc` (f64) loaded from the arguments; the body
/// leaves its result in `%O` (b64).
fn run1(body: &str, a: u64, b: u64, c: u64) -> u64 {
    let src = format!(
        "{HEAD}.visible .entry t(.param .u64 out, .param .b64 pa, .param .b64 pb, .param .b64 pc)\n{{\n\
         .reg .b64 %A, %B, %C, %O, %P;\n.reg .b32 %a, %b, %c, %o, %o2;\n.reg .f32 %fa, %fb, %fc, %fo;\n\
         .reg .f64 %da, %db, %dc, %do;\n.reg .pred %p, %q;\n.reg .b16 %h;\n\
         ld.param.u64 %P, [out];\nld.param.b64 %A, [pa];\nld.param.b64 %B, [pb];\nld.param.b64 %C, [pc];\n\
         cvt.u32.u64 %a, %A;\ncvt.u32.u64 %b, %B;\ncvt.u32.u64 %c, %C;\n\
         mov.b32 %fa, %a;\nmov.b32 %fb, %b;\nmov.b32 %fc, %c;\nmov.b64 %da, %A;\nmov.b64 %db, %B;\nmov.b64 %dc, %C;\n\
         mov.b64 %O, 0;\n{body}\nst.global.b64 [%P], %O;\nret;\n}}\n"
    );
    let m = Module::parse(&src, "t.ptx").unwrap_or_else(|e| panic!("{e}\n{src}"));
    let mut bufs = vec![vec![0u8; 8]];
    let cfg = LaunchConfig {
        grid: [1, 1, 1].into(),
        block: [1, 1, 1].into(),
        shared_bytes: 0,
    };
    let args = [
        KernelArg::Buffer(0),
        KernelArg::U64(a),
        KernelArg::U64(b),
        KernelArg::U64(c),
    ];
    m.launch("t", &cfg, &args, &mut bufs, &ExecOptions::default())
        .unwrap_or_else(|e| panic!("{e}\n{src}"));
    u64::from_le_bytes(bufs[0][..8].try_into().unwrap())
}

fn f32op(inst: &str, a: f32, b: f32, c: f32) -> f32 {
    let body = format!("{inst};\nmov.b32 %o, %fo;\ncvt.u64.u32 %O, %o;");
    f32::from_bits(run1(
        &body,
        a.to_bits() as u64,
        b.to_bits() as u64,
        c.to_bits() as u64,
    ) as u32)
}

fn i32op(inst: &str, a: i64, b: i64, c: i64) -> u32 {
    let body = format!("{inst};\ncvt.u64.u32 %O, %o;");
    run1(&body, a as u64, b as u64, c as u64) as u32
}

fn up(x: f32) -> f32 {
    f32::from_bits(x.to_bits() + 1)
}

#[test]
fn directed_rounding_of_add_mul_fma_div() {
    let t = 2f32.powi(-30);
    assert_eq!(f32op("add.rn.f32 %fo, %fa, %fb", 1.0, t, 0.0), 1.0);
    assert_eq!(f32op("add.rp.f32 %fo, %fa, %fb", 1.0, t, 0.0), up(1.0));
    assert_eq!(f32op("add.rm.f32 %fo, %fa, %fb", 1.0, t, 0.0), 1.0);
    assert_eq!(f32op("add.rz.f32 %fo, %fa, %fb", -1.0, -t, 0.0), -1.0);
    assert_eq!(f32op("add.rm.f32 %fo, %fa, %fb", -1.0, -t, 0.0), -up(1.0));
    let e = f32::EPSILON;
    assert_eq!(
        f32op("mul.rz.f32 %fo, %fa, %fb", 1.0 + e, 1.0 + e, 0.0),
        1.0 + 2.0 * e
    );
    assert_eq!(
        f32op("mul.rp.f32 %fo, %fa, %fb", 1.0 + e, 1.0 + e, 0.0),
        1.0 + 3.0 * e
    );
    assert_eq!(f32op("fma.rm.f32 %fo, %fa, %fb, %fc", 1.0, 1.0, t), 1.0);
    assert_eq!(f32op("fma.rp.f32 %fo, %fa, %fb, %fc", 1.0, 1.0, t), up(1.0));
    assert_eq!(
        f32op("fma.rz.f32 %fo, %fa, %fb, %fc", 1.0 + e, 1.0 + e, -1.0),
        2.0 * e + e * e
    );
    let lo = f32op("div.rm.f32 %fo, %fa, %fb", 1.0, 3.0, 0.0);
    let hi = f32op("div.rp.f32 %fo, %fa, %fb", 1.0, 3.0, 0.0);
    assert_eq!(up(lo), hi);
    assert_eq!(f32op("div.rz.f32 %fo, %fa, %fb", 1.0, 3.0, 0.0), lo);
    assert_eq!(
        f32op("div.rn.f32 %fo, %fa, %fb", 1.0, 3.0, 0.0),
        1.0f32 / 3.0
    );
}

#[test]
fn ftz_sat_and_nan_rules() {
    let sub = f32::from_bits(1);
    assert_eq!(
        f32op("add.ftz.f32 %fo, %fa, %fb", sub, 0.0, 0.0).to_bits(),
        0
    );
    assert_eq!(f32op("add.f32 %fo, %fa, %fb", sub, 0.0, 0.0), sub);
    assert_eq!(f32op("add.sat.f32 %fo, %fa, %fb", 0.75, 0.5, 0.0), 1.0);
    assert_eq!(f32op("mul.sat.f32 %fo, %fa, %fb", -2.0, 0.5, 0.0), 0.0);
    // NaN results are the canonical 0x7fffffff.
    assert_eq!(
        f32op("mul.f32 %fo, %fa, %fb", 0.0, f32::INFINITY, 0.0).to_bits(),
        0x7fff_ffff
    );
    assert_eq!(f32op("min.f32 %fo, %fa, %fb", f32::NAN, 2.0, 0.0), 2.0);
    assert_eq!(f32op("max.f32 %fo, %fa, %fb", -0.0, 0.0, 0.0).to_bits(), 0);
    assert_eq!(
        f32op("min.f32 %fo, %fa, %fb", 0.0, -0.0, 0.0).to_bits(),
        0x8000_0000
    );
    assert_eq!(f32op("copysign.f32 %fo, %fa, %fb", -1.0, 3.0, 0.0), -3.0);
    assert_eq!(f32op("abs.f32 %fo, %fa", -3.5, 0.0, 0.0), 3.5);
    assert_eq!(f32op("neg.f32 %fo, %fa", 3.5, 0.0, 0.0), -3.5);
}

#[test]
fn sqrt_rcp_and_approximations() {
    assert_eq!(f32op("sqrt.rn.f32 %fo, %fa", 2.0, 0.0, 0.0), 2f32.sqrt());
    let lo = f32op("sqrt.rm.f32 %fo, %fa", 2.0, 0.0, 0.0);
    assert_eq!(up(lo), f32op("sqrt.rp.f32 %fo, %fa", 2.0, 0.0, 0.0));
    assert_eq!(f32op("rcp.rn.f32 %fo, %fa", 3.0, 0.0, 0.0), 1.0 / 3.0);
    // ex2.approx.f32: max relative error 2^-22.5 (PTX ISA); lg2.approx: 2^-22 absolute near 1.
    for x in [-3.3f32, -0.5, 0.0, 0.7, 5.25, 20.0] {
        let got = f32op("ex2.approx.f32 %fo, %fa", x, 0.0, 0.0) as f64;
        let want = (x as f64).exp2();
        assert!(
            ((got - want) / want).abs() <= 2f64.powf(-22.5),
            "ex2({x}) = {got}, want {want}"
        );
    }
    for x in [0.3f32, 1.0, 2.0, 1000.0] {
        let got = f32op("lg2.approx.f32 %fo, %fa", x, 0.0, 0.0) as f64;
        assert!(
            (got - (x as f64).log2()).abs() <= 2f64.powi(-22) * (x as f64).log2().abs().max(1.0)
        );
    }
    for x in [0.0f32, 1.0, -2.5, 3.0] {
        let s = f32op("sin.approx.f32 %fo, %fa", x, 0.0, 0.0) as f64;
        assert!((s - (x as f64).sin()).abs() <= 2f64.powf(-20.5));
    }
    let r = f32op("rsqrt.approx.f32 %fo, %fa", 4.0, 0.0, 0.0);
    assert_eq!(r, 0.5);
}

#[test]
fn conversions_with_rounding_and_saturation() {
    let cvt_s32 =
        |inst: &str, x: f32| i32op(&format!("{inst} %o, %fa"), x.to_bits() as i64, 0, 0) as i32;
    assert_eq!(cvt_s32("cvt.rni.s32.f32", 2.5), 2);
    assert_eq!(cvt_s32("cvt.rni.s32.f32", 3.5), 4);
    assert_eq!(cvt_s32("cvt.rmi.s32.f32", -1.5), -2);
    assert_eq!(cvt_s32("cvt.rzi.s32.f32", -1.7), -1);
    assert_eq!(cvt_s32("cvt.rpi.s32.f32", 1.1), 2);
    assert_eq!(cvt_s32("cvt.rzi.s32.f32", 3e10), i32::MAX);
    assert_eq!(cvt_s32("cvt.rzi.s32.f32", f32::NAN), 0);
    assert_eq!(i32op("cvt.sat.u8.s32 %o, %a", 300, 0, 0), 255);
    assert_eq!(
        i32op("cvt.sat.s8.s32 %o, %a", -300, 0, 0) as i32,
        -128i32 as u8 as i32
    );
    assert_eq!(i32op("cvt.u16.u32 %o, %a", 0x12345, 0, 0), 0x2345);
    assert_eq!(f32op("cvt.sat.f32.f32 %fo, %fa", 1.5, 0.0, 0.0), 1.0);
    assert_eq!(f32op("cvt.rmi.f32.f32 %fo, %fa", -0.5, 0.0, 0.0), -1.0);
    // f64 → f32 with each rounding.
    let x = 1.0f64 / 3.0;
    let f = |inst: &str| {
        f32::from_bits(run1(
            &format!("{inst} %fo, %da;\nmov.b32 %o, %fo;\ncvt.u64.u32 %O, %o;"),
            x.to_bits(),
            0,
            0,
        ) as u32)
    };
    assert_eq!(f("cvt.rn.f32.f64"), x as f32);
    assert_eq!(up(f("cvt.rm.f32.f64")), f("cvt.rp.f32.f64"));
    assert_eq!(f("cvt.rz.f32.f64"), f("cvt.rm.f32.f64"));
    // s64 → f32 directed: 2^24 + 1 is not representable.
    let g = |inst: &str| {
        f32::from_bits(run1(
            &format!("{inst} %fo, %A;\nmov.b32 %o, %fo;\ncvt.u64.u32 %O, %o;"),
            (1 << 24) + 1,
            0,
            0,
        ) as u32)
    };
    assert_eq!(g("cvt.rm.f32.s64"), 16777216.0);
    assert_eq!(g("cvt.rp.f32.s64"), 16777218.0);
    // f32 → f16 → f32.
    let h = run1(
        "cvt.rn.f16.f32 %h, %fa;\ncvt.f32.f16 %fo, %h;\nmov.b32 %o, %fo;\ncvt.u64.u32 %O, %o;",
        1.000_976_6_f32.to_bits() as u64,
        0,
        0,
    );
    assert_eq!(f32::from_bits(h as u32), 1.000_976_6);
}

#[test]
fn integer_arithmetic() {
    assert_eq!(
        i32op("mul.hi.s32 %o, %a, %b", -3, 0x4000_0000, 0) as i32,
        -1
    );
    assert_eq!(
        i32op("mul.hi.u32 %o, %a, %b", 0xffff_ffff, 0xffff_ffff, 0),
        0xffff_fffe
    );
    assert_eq!(i32op("mad.hi.u32 %o, %a, %b, %c", 0x8000_0000, 4, 5), 7);
    assert_eq!(
        run1("mul.wide.u32 %O, %a, %b;", 0xffff_ffff, 0xffff_ffff, 0),
        0xffff_fffe_0000_0001
    );
    assert_eq!(
        run1("mul.wide.s32 %O, %a, %b;", -2i64 as u64, 3, 0) as i64,
        -6
    );
    assert_eq!(
        run1("mad.wide.u32 %O, %a, %b, %C;", 0x1_0000, 0x1_0000, 5),
        0x1_0000_0005
    );
    assert_eq!(i32op("div.s32 %o, %a, %b", -7, 2, 0) as i32, -3);
    assert_eq!(i32op("rem.s32 %o, %a, %b", -7, 2, 0) as i32, -1);
    assert_eq!(i32op("div.u32 %o, %a, %b", 7, 0, 0), 0xffff_ffff);
    assert_eq!(
        i32op("add.sat.s32 %o, %a, %b", i32::MAX as i64, 5, 0) as i32,
        i32::MAX
    );
    assert_eq!(
        i32op("sub.sat.s32 %o, %a, %b", i32::MIN as i64, 5, 0) as i32,
        i32::MIN
    );
    assert_eq!(i32op("min.s32 %o, %a, %b", -1, 1, 0) as i32, -1);
    assert_eq!(i32op("min.u32 %o, %a, %b", -1, 1, 0), 1);
    assert_eq!(i32op("max.u32 %o, %a, %b", -1, 1, 0), 0xffff_ffff);
    assert_eq!(i32op("abs.s32 %o, %a", -9, 0, 0), 9);
    assert_eq!(i32op("neg.s32 %o, %a", 9, 0, 0) as i32, -9);
    assert_eq!(i32op("sad.u32 %o, %a, %b, %c", 3, 10, 1), 8);
    assert_eq!(i32op("shr.s32 %o, %a, %b", -8, 40, 0) as i32, -1);
    assert_eq!(i32op("shr.u32 %o, %a, %b", 0x8000_0000, 31, 0), 1);
    assert_eq!(i32op("shl.b32 %o, %a, %b", 1, 33, 0), 0);
    assert_eq!(i32op("mul24.lo.u32 %o, %a, %b", 0x100_0003, 2, 0), 6);
}

#[test]
fn bit_operations() {
    assert_eq!(i32op("brev.b32 %o, %a", 1, 0, 0), 0x8000_0000);
    assert_eq!(i32op("popc.b32 %o, %a", 0xf0f0, 0, 0), 8);
    assert_eq!(
        run1("popc.b64 %o, %A;\ncvt.u64.u32 %O, %o;", u64::MAX, 0, 0),
        64
    );
    assert_eq!(i32op("clz.b32 %o, %a", 1, 0, 0), 31);
    assert_eq!(i32op("clz.b32 %o, %a", 0, 0, 0), 32);
    assert_eq!(i32op("bfind.u32 %o, %a", 0x10, 0, 0), 4);
    assert_eq!(i32op("bfind.u32 %o, %a", 0, 0, 0), 0xffff_ffff);
    assert_eq!(i32op("bfind.shiftamt.u32 %o, %a", 0x10, 0, 0), 27);
    assert_eq!(i32op("bfe.u32 %o, %a, %b, %c", 0xabcd_1234, 8, 8), 0x12);
    assert_eq!(
        i32op("bfe.s32 %o, %a, %b, %c", 0x0000_f000, 12, 4) as i32,
        -1
    );
    assert_eq!(
        i32op("bfi.b32 %o, %a, %b, %c, 8", 0xff, 0x1234_5678, 4),
        0x1234_5ff8
    );
    assert_eq!(
        i32op("prmt.b32 %o, %a, %b, %c", 0x3322_1100, 0x7766_5544, 0x4210),
        0x4422_1100
    );
    assert_eq!(
        i32op("prmt.b32 %o, %a, %b, %c", 0x0000_0080, 0, 0x8888),
        0xffff_ffff
    );
    assert_eq!(i32op("and.b32 %o, %a, %b", 0xff0, 0x0ff, 0), 0x0f0);
    assert_eq!(i32op("xor.b32 %o, %a, %b", 0xff0, 0x0ff, 0), 0xf0f);
    assert_eq!(i32op("not.b32 %o, %a", 0, 0, 0), 0xffff_ffff);
    assert_eq!(i32op("cnot.b32 %o, %a", 0, 0, 0), 1);
}

#[test]
fn predicates_setp_selp_slct_testp() {
    let p = |body: &str, a: i64, b: i64| i32op(&format!("{body};\nselp.u32 %o, 1, 0, %p"), a, b, 0);
    assert_eq!(p("setp.lt.s32 %p, %a, %b", -1, 0), 1);
    assert_eq!(p("setp.lo.u32 %p, %a, %b", -1, 0), 0);
    assert_eq!(
        p("setp.ltu.f32 %p, %fa, %fb", f32::NAN.to_bits() as i64, 0),
        1
    );
    assert_eq!(
        p("setp.lt.f32 %p, %fa, %fb", f32::NAN.to_bits() as i64, 0),
        0
    );
    assert_eq!(
        p("setp.nan.f32 %p, %fa, %fb", f32::NAN.to_bits() as i64, 0),
        1
    );
    assert_eq!(
        p(
            "setp.eq.s32 %q, %a, %a;\nsetp.gt.and.s32 %p, %a, %b, %q",
            2,
            1
        ),
        1
    );
    assert_eq!(
        p(
            "setp.eq.s32 %q, %a, %b;\nsetp.gt.or.s32 %p, %a, %b, !%q",
            0,
            1
        ),
        1
    );
    assert_eq!(p("setp.gt.s32 %q|%p, %a, %b", 2, 1), 0);
    assert_eq!(p("testp.subnormal.f32 %p, %fa", 1, 0), 1);
    assert_eq!(
        p(
            "testp.finite.f32 %p, %fa",
            f32::INFINITY.to_bits() as i64,
            0
        ),
        0
    );
    assert_eq!(i32op("slct.u32.s32 %o, %a, %b, %c", 5, 6, -1), 6);
    assert_eq!(i32op("slct.u32.f32 %o, %a, %b, %c", 5, 6, 0), 5);
    assert_eq!(i32op("set.lt.u32.s32 %o, %a, %b", 1, 2, 0), 0xffff_ffff);
}

#[test]
fn add_with_carry_builds_64_bit_sums() {
    let body = "add.cc.u32 %o, %a, %b;\naddc.u32 %o2, 0, 0;\ncvt.u64.u32 %O, %o2;";
    assert_eq!(run1(body, 0xffff_ffff, 1, 0), 1);
    assert_eq!(run1(body, 5, 1, 0), 0);
}

fn run_block(src: &str, entry: &str, block: u32, grid: u32, n_out: usize) -> Vec<u32> {
    let m = Module::parse(&format!("{HEAD}{src}"), "w.ptx").unwrap_or_else(|e| panic!("{e}"));
    let mut bufs = vec![vec![0u8; 4 * n_out]];
    let cfg = LaunchConfig {
        grid: [grid, 1, 1].into(),
        block: [block, 1, 1].into(),
        shared_bytes: 0,
    };
    m.launch(
        entry,
        &cfg,
        &[KernelArg::Buffer(0)],
        &mut bufs,
        &ExecOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    bufs[0]
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

const WARP_KERNEL: &str = ".visible .entry w(.param .u64 out)\n{\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n.reg .pred %p<3>;\n\
ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 4;\nadd.s64 %rd3, %rd1, %rd2;\nBODY\nst.global.u32 [%rd3], %r2;\nret;\n}\n";

fn warp(body: &str) -> Vec<u32> {
    run_block(&WARP_KERNEL.replace("BODY", body), "w", 32, 1, 32)
}

#[test]
fn shfl_sync_modes() {
    let v = warp("mul.lo.u32 %r3, %r1, 10;\nshfl.sync.down.b32 %r2, %r3, 1, 31, -1;");
    assert_eq!(v[0], 10);
    assert_eq!(v[30], 310);
    assert_eq!(v[31], 310, "past the end: own value");
    let v = warp("mul.lo.u32 %r3, %r1, 10;\nshfl.sync.up.b32 %r2, %r3, 2, 0, -1;");
    assert_eq!((v[0], v[1], v[2], v[31]), (0, 10, 0, 290));
    let v = warp("shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;");
    assert_eq!((v[0], v[1], v[6], v[7]), (1, 0, 7, 6));
    let v = warp("shfl.sync.idx.b32 %r2, %r1, 5, 31, -1;");
    assert!(v.iter().all(|&x| x == 5));
    // Segments of 8 lanes (c = 0x1807): idx 2 reads lane 2 of each segment.
    let v = warp("shfl.sync.idx.b32 %r2, %r1, 2, 0x1807, -1;");
    assert_eq!((v[0], v[9], v[31]), (2, 10, 26));
    // The predicate output says whether the source lane was in range.
    let v = warp("shfl.sync.down.b32 %r3|%p1, %r1, 16, 31, -1;\nselp.u32 %r2, 1, 0, %p1;");
    assert_eq!((v[15], v[16]), (1, 0));
}

#[test]
fn vote_sync_modes() {
    let v = warp("setp.lt.u32 %p1, %r1, 4;\nvote.sync.ballot.b32 %r2, %p1, -1;");
    assert!(v.iter().all(|&x| x == 0xf));
    let v = warp(
        "setp.lt.u32 %p1, %r1, 40;\nvote.sync.all.pred %p2, %p1, -1;\nselp.u32 %r2, 1, 0, %p2;",
    );
    assert!(v.iter().all(|&x| x == 1));
    let v = warp(
        "setp.eq.u32 %p1, %r1, 31;\nvote.sync.any.pred %p2, %p1, -1;\nselp.u32 %r2, 1, 0, %p2;",
    );
    assert!(v.iter().all(|&x| x == 1));
    let v = warp(
        "setp.eq.u32 %p1, %r1, 31;\nvote.sync.uni.pred %p2, %p1, -1;\nselp.u32 %r2, 1, 0, %p2;",
    );
    assert!(v.iter().all(|&x| x == 0));
    let v = warp("setp.lt.u32 %p1, %r1, 4;\nvote.sync.ballot.b32 %r2, !%p1, -1;");
    assert!(v.iter().all(|&x| x == 0xffff_fff0));
}

#[test]
fn divergent_branches_reconverge() {
    // Odd lanes take one path, even lanes the other; then all add 100.
    let v = warp(
        "and.b32 %r4, %r1, 1;\nsetp.eq.u32 %p1, %r4, 0;\n@%p1 bra $EVEN;\nmul.lo.u32 %r2, %r1, 3;\nbra.uni $JOIN;\n\
         $EVEN:\nmul.lo.u32 %r2, %r1, 2;\n$JOIN:\nadd.u32 %r2, %r2, 100;\nactivemask.b32 %r5;\nsetp.eq.u32 %p2, %r5, -1;\n@!%p2 mov.u32 %r2, 0;",
    );
    for (i, &x) in v.iter().enumerate() {
        let want = if i % 2 == 0 { 2 * i } else { 3 * i } as u32 + 100;
        assert_eq!(
            x, want,
            "lane {i}: all lanes are active again after the join"
        );
    }
}

#[test]
fn global_atomics_integer_and_deterministic_flux() {
    // The old values meet in one word that thread 0 of each block stores (every
    // thread storing it would be a write-after-write race the checker reports).
    let src = ".visible .entry a(.param .u64 out)\n{\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n.reg .f32 %f<3>;\n.reg .pred %p<2>;\n\
        ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\n\
        atom.global.add.u32 %r2, [%rd1], 1;\nred.global.add.u32 [%rd1+4], %r1;\n\
        atom.global.max.s32 %r3, [%rd1+8], %r1;\natom.global.inc.u32 %r4, [%rd1+12], 3;\n\
        atom.global.or.b32 %r5, [%rd1+16], %r1;\ncvt.rn.f32.u32 %f1, %r1;\nred.global.add.f32 [%rd1+20], %f1;\n\
        atom.global.exch.b32 %r6, [%rd1+24], 7;\natom.global.cas.b32 %r6, [%rd1+28], 0, 9;\n\
        atom.global.dec.u32 %r6, [%rd1+32], 5;\natom.global.xor.b32 %r6, [%rd1+36], 1;\n\
        add.u32 %r7, %r2, %r3;\nadd.u32 %r7, %r7, %r4;\nadd.u32 %r7, %r7, %r5;\nadd.u32 %r7, %r7, %r6;\nsetp.eq.u32 %p1, %r1, 0;\n@%p1 st.global.u32 [%rd1+40], %r7;\nret;\n}\n";
    let v = run_block(src, "a", 64, 2, 11);
    assert_eq!(v[0], 128, "add: every thread counted once");
    assert_eq!(v[1], 2 * (0..64).sum::<u32>(), "red.add");
    assert_eq!(v[2], 63, "max");
    assert_eq!(v[3], 128 % 4, "inc wraps at 3: 0,1,2,3,0,…");
    assert_eq!(v[4], 63, "or");
    assert_eq!(
        f32::from_bits(v[5]),
        2.0 * (0..64).sum::<u32>() as f32,
        "f32 flux sum"
    );
    assert_eq!(v[6], 7);
    assert_eq!(v[7], 9, "cas: first thread swaps 0 for 9");
    let dec = (0..128).fold(0u32, |x, _| if x == 0 || x > 5 { 5 } else { x - 1 });
    assert_eq!(v[8], dec, "dec wraps to 5 at 0");
    assert_eq!(v[9], 0, "xor 128 times");
    // Same bits on every run, sequential or parallel.
    for _ in 0..3 {
        assert_eq!(run_block(src, "a", 64, 2, 11), v);
    }
}

#[test]
fn flux_lands_thread_by_thread_not_instruction_by_instruction() {
    // Two threads of one warp, two f32 reds each: thread 0 adds 1e8 then
    // -1e8, thread 1 adds 1 then 0. In the fixed order (thread, then the
    // thread's program order) the sum is 1; instruction by instruction
    // (1e8 + 1 rounds to 1e8) it would be 0.
    let src = ".visible .entry f(.param .u64 out)\n{\n.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n.reg .f32 %f<3>;\n.reg .pred %p<2>;\n\
        ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nsetp.eq.u32 %p1, %r1, 0;\n\
        selp.f32 %f1, 0f4CBEBC20, 0f3F800000, %p1;\nselp.f32 %f2, 0fCCBEBC20, 0f00000000, %p1;\n\
        red.global.add.f32 [%rd1], %f1;\nred.global.add.f32 [%rd1], %f2;\nret;\n}\n";
    assert_eq!(f32::from_bits(0x4CBE_BC20), 1e8);
    let v = run_block(src, "f", 2, 1, 1);
    assert_eq!(f32::from_bits(v[0]), 1.0);
}

#[test]
fn shared_atomics_and_called_functions() {
    let src = ".func (.param .b32 r) twice(.param .b32 x)\n{\n.reg .b32 %t<3>;\nld.param.b32 %t1, [x];\nshl.b32 %t2, %t1, 1;\nst.param.b32 [r], %t2;\nret;\n}\n\
        .visible .entry s(.param .u64 out)\n{\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n.reg .pred %p<2>;\n.shared .align 4 .b8 acc[4];\n\
        ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nsetp.ne.u32 %p1, %r1, 0;\n@%p1 bra $W;\nst.shared.u32 [acc], 0;\n$W:\nbar.sync 0;\n\
        {\n.param .b32 a0;\n.param .b32 r0;\nst.param.b32 [a0], %r1;\ncall.uni (r0), twice, (a0);\nld.param.b32 %r2, [r0];\n}\n\
        atom.shared.add.u32 %r3, [acc], %r2;\nbar.sync 0;\n@%p1 bra $E;\nld.shared.u32 %r4, [acc];\nst.global.u32 [%rd1], %r4;\n$E:\nret;\n}\n";
    let v = run_block(src, "s", 128, 1, 1);
    assert_eq!(v[0], 2 * (0..128).sum::<u32>());
}

#[test]
fn unsupported_instruction_names_itself_and_its_line() {
    let src = format!("{HEAD}.visible .entry u()\n{{\n.reg .b32 %r<3>;\nmov.u32 %r1, 1;\nwmma.load.a.sync.aligned.row.m16n16k16.f16 {{%r1}}, [%r2];\nret;\n}}\n");
    let m = Module::parse(&src, "u.ptx").unwrap();
    let e = m.kernel("u").err().expect("unsupported").to_string();
    assert!(e.contains("u.ptx:8") && e.contains("wmma.load"), "{e}");
}

#[test]
fn half_precision_arithmetic_runs_as_nvcc_writes_it() {
    // cvt f32 -> f16 (exact round to nearest even), add/fma on .f16 (.b16
    // registers), f16x2 halves packed with mov, and back to f32.
    let body = "cvt.rn.f16.f32 %h, %fa;\n.reg .b16 %h2, %h3, %h4;\ncvt.rn.f16.f32 %h2, %fb;\n\
                add.f16 %h3, %h, %h2;\nfma.rn.f16 %h4, %h3, %h2, %h;\n\
                mov.b32 %o, {%h3, %h4};\nadd.f16x2 %o2, %o, %o;\n\
                mov.b32 {%h3, %h4}, %o2;\ncvt.f32.f16 %fo, %h4;\nmov.b32 %o, %fo;\ncvt.u64.u32 %O, %o;";
    let (a, b) = (1.5f32, 2049.0f32); // 2049 is a tie in f16: to even, 2048
    let got = f32::from_bits(run1(body, a.to_bits() as u64, b.to_bits() as u64, 0) as u32);
    // h3 = 1.5 + 2048 = 2049.5 -> 2050; h4 = 2050 * 2048 + 1.5 -> inf (over 65504);
    // doubled: inf.
    assert_eq!(got, f32::INFINITY);
    let (a, b) = (0.75f32, 0.5f32);
    let got = f32::from_bits(run1(body, a.to_bits() as u64, b.to_bits() as u64, 0) as u32);
    // h3 = 1.25; h4 = 1.25 * 0.5 + 0.75 = 1.375; doubled: 2.75.
    assert_eq!(got, 2.75);
    let src = format!("{HEAD}.visible .entry u()\n{{\n.reg .b16 %h<3>;\nmov.b16 %h1, 0;\ndiv.rn.f16 %h2, %h1, %h1;\nret;\n}}\n");
    let e = Module::parse(&src, "u.ptx")
        .unwrap()
        .kernel("u")
        .err()
        .expect("unsupported");
    let e = e.to_string();
    assert!(e.contains("u.ptx:8") && e.contains("div.rn.f16"), "{e}");
}

#[test]
fn match_sync_any_and_all() {
    // match.any: the lanes holding the same value as this one.
    let v = warp("rem.u32 %r3, %r1, 3;\nmatch.any.sync.b32 %r2, %r3, -1;");
    for (l, &m) in v.iter().enumerate() {
        let want = (0..32u32)
            .filter(|j| j % 3 == l as u32 % 3)
            .fold(0, |m, j| m | (1 << j));
        assert_eq!(m, want, "lane {l}");
    }
    // Only the active lanes take part: lanes 0..10 run it, the rest skip it.
    let v = warp(
        "mov.u32 %r2, 0;\nsetp.ge.u32 %p1, %r1, 10;\n@%p1 bra $S;\nand.b32 %r3, %r1, 1;\n\
         match.any.sync.b32 %r2, %r3, 1023;\n$S:",
    );
    for (l, &m) in v.iter().enumerate() {
        let want = if l < 10 {
            (0..10u32)
                .filter(|j| j % 2 == l as u32 % 2)
                .fold(0, |m, j| m | (1 << j))
        } else {
            0
        };
        assert_eq!(m, want, "lane {l}");
    }
    // match.all: the mask when every lane agrees, else 0; the predicate says which.
    let v = warp("mov.u32 %r3, 7;\nmatch.all.sync.b32 %r2|%p1, %r3, -1;\nselp.u32 %r4, 5, 9, %p1;\nadd.u32 %r2, %r2, %r4;");
    assert!(
        v.iter().all(|&x| x == 0xffff_ffffu32.wrapping_add(5)),
        "{v:?}"
    );
    let v = warp(
        "match.all.sync.b32 %r2|%p1, %r1, -1;\nselp.u32 %r4, 5, 9, %p1;\nadd.u32 %r2, %r2, %r4;",
    );
    assert!(v.iter().all(|&x| x == 9), "{v:?}");
}

#[test]
fn bar_red_reduces_a_predicate_over_the_block() {
    let block = |body: &str| run_block(&WARP_KERNEL.replace("BODY", body), "w", 96, 2, 96);
    // __syncthreads_count: how many of the 96 threads have tid < 50.
    let v = block("setp.lt.u32 %p1, %r1, 50;\nbar.red.popc.u32 %r2, 0, %p1;");
    assert!(v.iter().all(|&x| x == 50), "{v:?}");
    let v = block("setp.lt.u32 %p1, %r1, 50;\nbar.red.popc.u32 %r2, 0, !%p1;");
    assert!(v.iter().all(|&x| x == 46), "{v:?}");
    // __syncthreads_and / __syncthreads_or.
    let pred = |setp: &str, red: &str| {
        block(&format!(
            "{setp};\nbar.red.{red}.pred %p2, 0, %p1;\nselp.u32 %r2, 1, 0, %p2;"
        ))
    };
    assert!(pred("setp.lt.u32 %p1, %r1, 96", "and")
        .iter()
        .all(|&x| x == 1));
    assert!(pred("setp.lt.u32 %p1, %r1, 95", "and")
        .iter()
        .all(|&x| x == 0));
    assert!(pred("setp.eq.u32 %p1, %r1, 95", "or")
        .iter()
        .all(|&x| x == 1));
    assert!(pred("setp.gt.u32 %p1, %r1, 95", "or")
        .iter()
        .all(|&x| x == 0));
    // A thread count is refused, naming the instruction.
    let src = format!("{HEAD}.visible .entry u()\n{{\n.reg .b32 %r<3>;\n.reg .pred %p;\nbar.red.popc.u32 %r1, 0, 64, %p;\nret;\n}}\n");
    let e = Module::parse(&src, "u.ptx")
        .unwrap()
        .kernel("u")
        .err()
        .expect("refused");
    assert!(e.to_string().contains("bar.red.popc.u32"), "{e}");
}

#[test]
fn funnel_shifts_masks_and_extensions_as_nvcc_writes_them() {
    let (a, b) = (0x89ab_cdef_i64, 0x0123_4567_i64);
    assert_eq!(i32op("shf.l.wrap.b32 %o, %a, %b, %c", a, b, 8), 0x2345_6789);
    assert_eq!(i32op("shf.r.wrap.b32 %o, %a, %b, %c", a, b, 8), 0x6789_abcd);
    assert_eq!(
        i32op("shf.l.wrap.b32 %o, %a, %b, %c", a, b, 40),
        0x2345_6789
    );
    assert_eq!(i32op("shf.l.clamp.b32 %o, %a, %b, %c", a, b, 40), a as u32);
    assert_eq!(i32op("shf.r.clamp.b32 %o, %a, %b, 32", a, b, 0), b as u32);
    assert_eq!(i32op("bmsk.wrap.b32 %o, 1, 2", 0, 0, 0), 6);
    assert_eq!(i32op("bmsk.clamp.b32 %o, %a, %b", 8, 40, 0), 0xffff_ff00);
    assert_eq!(i32op("bmsk.wrap.b32 %o, %a, %b", 8, 40, 0), 0xff00);
    assert_eq!(i32op("szext.wrap.u32 %o, 0xffffffff, 0", 0, 0, 0), 0);
    assert_eq!(i32op("szext.clamp.s32 %o, %a, %b", 0xf0, 8, 0), 0xffff_fff0);
    assert_eq!(
        i32op("szext.wrap.s32 %o, %a, %b", 0x1234_56f8, 40, 0),
        0xffff_fff8
    );
    assert_eq!(
        i32op("szext.clamp.u32 %o, %a, %b", 0x1234_56f8, 40, 0),
        0x1234_56f8
    );
    assert_eq!(i32op("bfe.u32 %o, %a, %b, %c", 0x8000_0000, 28, 8), 8);
    assert_eq!(
        i32op("bfe.s32 %o, %a, %b, %c", 0x8000_0000, 40, 3),
        u32::MAX
    );
    assert_eq!(
        run1("bfe.s64 %O, %A, %b, %c;", 0x8000_0000_0000_0000, 60, 4),
        u64::MAX - 7
    );
    assert_eq!(run1("bfe.u64 %O, %A, %b, %c;", 0xf0, 4, 64), 0xf);
    assert_eq!(
        i32op("bfi.b32 %o, %a, %b, %c, 8", 0xff, 0x1234_5678, 28),
        0xf234_5678
    );
    assert_eq!(
        run1("bfi.b64 %O, %A, %B, %c, 1;", 1, 0, 63),
        1 << 63,
        "bfi.b64"
    );
    assert_eq!(run1("brev.b64 %O, %A;", 1, 0, 0), 1 << 63, "brev.b64");
    assert_eq!(run1("clz.b64 %o, %A;\ncvt.u64.u32 %O, %o;", 1, 0, 0), 63);
    assert_eq!(run1("clz.b64 %o, %A;\ncvt.u64.u32 %O, %o;", 0, 0, 0), 64);
    assert_eq!(i32op("clz.b32 %o, %a", 0x8000_0000, 0, 0), 0);
    assert_eq!(i32op("popc.b32 %o, %a", 0xffff_ffff, 0, 0), 32);
}

#[test]
fn fns_lop3_dp4a_dp2a_and_prmt_modes() {
    assert_eq!(i32op("fns.b32 %o, 0xaaaaaaaa, 3, 1", 0, 0, 0), 3);
    assert_eq!(i32op("fns.b32 %o, 0xaaaaaaaa, 2, -1", 0, 0, 0), 1);
    assert_eq!(i32op("fns.b32 %o, %a, %b, %c", 0xaaaa_aaaa, 31, -2), 29);
    assert_eq!(i32op("fns.b32 %o, %a, %b, %c", 0xaaaa_aaaa, 2, 0), u32::MAX);
    let (a, b, c) = (0x1234_5678_i64, 0x9abc_def0_i64, 0x0f0f_3c3c_i64);
    let (ua, ub, uc) = (a as u32, b as u32, c as u32);
    assert_eq!(
        i32op("lop3.b32 %o, %a, %b, %c, 0x1a", a, b, c),
        ((ua & ub) | uc) ^ ua
    );
    assert_eq!(
        i32op("lop3.b32 %o, %a, %b, %c, 0x96", a, b, c),
        ua ^ ub ^ uc
    );
    // With a boolean operation: p = (d != 0) op q.
    let pred = |inst: &str, x: i64| {
        let body = format!(
            "setp.ne.u32 %q, %c, 0;\n{inst};\nselp.u32 %o2, 1, 0, %p;\ncvt.u64.u32 %O, %o2;"
        );
        run1(&body, x as u64, 0, 1) as u32
    };
    assert_eq!(pred("lop3.and.b32 %o|%p, %a, %b, %b, 0xf0, %q", 5), 1);
    assert_eq!(pred("lop3.and.b32 %o|%p, %a, %b, %b, 0xf0, %q", 0), 0);
    assert_eq!(pred("lop3.or.b32 _|%p, %a, %b, %b, 0xf0, %q", 0), 1);
    // dp4a / dp2a: c plus byte (half) products, each operand's signedness its own.
    let (x, y) = (0x80ff_0102_i64, 0x7f02_ff03_i64);
    assert_eq!(
        i32op("dp4a.u32.u32 %o, %a, %b, %c", x, y, 10),
        10 + 6 + 255 + 510 + 128 * 127
    );
    assert_eq!(
        i32op("dp4a.s32.s32 %o, %a, %b, %c", x, y, 10),
        (10 + 6 - 1 - 2 - 128 * 127) as u32
    );
    assert_eq!(
        i32op("dp4a.s32.u32 %o, %a, %b, %c", x, y, 10),
        (10 + 6 + 255 - 2 - 128 * 127) as u32
    );
    assert_eq!(
        i32op("dp4a.u32.s32 %o, %a, %b, %c", x, y, 10),
        (10 + 6 - 1 + 510 + 128 * 127) as u32
    );
    let (x, y) = (0xffff_0003_i64, 0x807f_ff02_i64);
    assert_eq!(
        i32op("dp2a.lo.u32.u32 %o, %a, %b, %c", x, y, 1),
        1 + 6 + 65535 * 255
    );
    assert_eq!(i32op("dp2a.lo.s32.s32 %o, %a, %b, %c", x, y, 1), 8);
    assert_eq!(
        i32op("dp2a.hi.s32.u32 %o, %a, %b, %c", x, y, 0),
        (3 * 127 - 128) as u32
    );
    assert_eq!(
        i32op("dp2a.hi.u32.s32 %o, %a, %b, %c", x, y, 0),
        (3 * 127 + 65535 * -128) as u32
    );
    let (a, b) = (0x3322_1100_i64, 0x7766_5544_i64);
    assert_eq!(i32op("prmt.b32.f4e %o, %a, %b, 1", a, b, 0), 0x4433_2211);
    assert_eq!(i32op("prmt.b32.b4e %o, %a, %b, 1", a, b, 0), 0x6677_0011);
    assert_eq!(i32op("prmt.b32.b4e %o, %a, %b, 3", a, b, 0), 0x0011_2233);
    assert_eq!(i32op("prmt.b32.rc8 %o, %a, %b, 2", a, b, 0), 0x2222_2222);
    assert_eq!(i32op("prmt.b32.ecl %o, %a, %b, 1", a, b, 0), 0x3322_1111);
    assert_eq!(i32op("prmt.b32.ecr %o, %a, %b, 2", a, b, 0), 0x2222_1100);
    assert_eq!(i32op("prmt.b32.rc16 %o, %a, %b, 3", a, b, 0), 0x3322_3322);
}

#[test]
fn bit_instructions_with_bad_modifiers_are_refused_with_their_line() {
    for (inst, why) in [
        ("shf.l.b32 %o, %a, %b, %c", "clamp"),
        ("shf.wrap.b32 %o, %a, %b, %c", ".l and .r"),
        ("bmsk.b32 %o, %a, %b", "clamp"),
        ("szext.wrap.b32 %o, %a, %b", ".s32 or .u32"),
        ("dp4a.u32 %o, %a, %b, %c", "two types"),
        ("dp2a.u32.u32 %o, %a, %b, %c", ".lo and .hi"),
        ("lop3.b32 %o, %a, %b, %c, 256", "0..255"),
        ("lop3.or.b32 %o, %a, %b, %c, 1, %q", "d|p"),
    ] {
        let src = format!(
            "{HEAD}.visible .entry t()\n{{\n.reg .b32 %o, %a, %b, %c;\n.reg .pred %q;\n{inst};\nret;\n}}\n"
        );
        let m = Module::parse(&src, "bad.ptx").unwrap();
        let e = m
            .kernel("t")
            .err()
            .unwrap_or_else(|| panic!("{inst} decoded"));
        let s = e.to_string();
        assert!(s.contains("bad.ptx:8") && s.contains(why), "{inst}: {s}");
    }
}

#[test]
fn warp_size_constant_and_special_registers() {
    // nvcc writes `% warpSize` as `rem.u32 %r, %r, WARP_SZ`.
    assert_eq!(i32op("rem.u32 %o, %a, WARP_SZ", 77, 0, 0), 13);
    assert_eq!(i32op("mov.u32 %o, WARP_SZ", 0, 0, 0), 32);
    assert_eq!(i32op("mov.u32 %o, %nsmid", 0, 0, 0), 1);
    assert_eq!(i32op("mov.u32 %o, %envreg3", 0, 0, 0), 0);
    // No shared memory: the reserved region (1 KiB, 288 bytes usable) starts at 0.
    assert_eq!(
        i32op("mov.u32 %o, %reserved_smem_offset_cap", 0, 0, 0),
        1024
    );
    assert_eq!(i32op("mov.u32 %o, %reserved_smem_offset_end", 0, 0, 0), 288);
    assert_eq!(i32op("mov.u32 %o, %cluster_nctarank", 0, 0, 0), 1);
    assert_eq!(i32op("mov.u32 %o, %lanemask_ge", 0, 0, 0), u32::MAX);
    assert!(run1("mov.u64 %O, %globaltimer;", 0, 0, 0) > 0);
    let body = "mov.u64 %A, %clock64;\nmov.u64 %B, %clock64;\nsub.s64 %O, %B, %A;";
    assert_eq!(run1(body, 0, 0, 0), 1, "one instruction between the reads");
}

#[test]
fn half_mul_then_add_without_rounding_contract_into_one_fma_as_ptxas_does() {
    // a = b = 1 + 3·2^-10 (0x3C03): a·b = 1 + 6·2^-10 + 9·2^-20, rounded to f16
    // 1 + 6·2^-10 (0x3C06). With c = -(1 + 6·2^-10) the rounded product plus c is
    // 0; one fused rounding gives 9·2^-20 = 144·2^-24 (0x0090, subnormal).
    let pair = |h: u64| h | (h << 16);
    let (a, c) = (pair(0x3C03), pair(0xBC06));
    // Each in its own `{ }` block, as nvcc's inline assembly for __hmul2/__hadd2.
    let fused = "{ mul.f16x2 %o, %a, %b; }\n{ add.f16x2 %o2, %o, %c; }\ncvt.u64.u32 %O, %o2;";
    assert_eq!(run1(fused, a, a, c), pair(0x0090));
    // c - a·b: one fma with the product negated; a·b - c: with the addend negated.
    let sub2 = "{ mul.f16x2 %o, %a, %b; }\n{ sub.f16x2 %o2, %c, %o; }\ncvt.u64.u32 %O, %o2;";
    assert_eq!(run1(sub2, a, a, pair(0x3C06)), pair(0x8090));
    let sub1 = "{ mul.f16x2 %o, %a, %b; }\n{ sub.f16x2 %o2, %o, %c; }\ncvt.u64.u32 %O, %o2;";
    assert_eq!(run1(sub1, a, a, pair(0x3C06)), pair(0x0090));
    // A rounding modifier on either keeps two roundings.
    let rn = "{ mul.rn.f16x2 %o, %a, %b; }\n{ add.f16x2 %o2, %o, %c; }\ncvt.u64.u32 %O, %o2;";
    assert_eq!(run1(rn, a, a, c), 0);
    // A second use of the product keeps it rounded (xor twice: the sum unchanged).
    let reused = "mul.f16x2 %o, %a, %b;\nadd.f16x2 %o2, %o, %c;\nxor.b32 %o2, %o2, %o;\n\
                  xor.b32 %o2, %o2, %o;\ncvt.u64.u32 %O, %o2;";
    assert_eq!(run1(reused, a, a, c), 0);
    // Scalar .f16 on .b16 registers alike.
    let scalar =
        ".reg .b16 %x, %y, %z, %w, %m, %s;\nmov.b32 {%x, %y}, %a;\nmov.b32 {%z, %w}, %c;\n\
                  mul.f16 %m, %x, %x;\nadd.f16 %s, %m, %z;\ncvt.u64.u16 %O, %s;";
    assert_eq!(run1(scalar, a, 0, c), 0x0090);
}
