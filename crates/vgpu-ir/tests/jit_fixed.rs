//! The fixed-step CPU path on native code (`Engine::Jit`, a block's lanes per
//! call) against the column evaluator (`Engine::Eval`): every unphased
//! `examples/*.field` and the test kernels below, f32 and f64, Euler and RK4,
//! blocks that are and are not a multiple of the vector width: the same bits,
//! and the same error for an out-of-bounds read.

use std::path::PathBuf;

use vgpu_ir::{
    compile, compile_file, run_cpu_on, Args, Buffer, Engine, Integration, IrError, IrField, Kernel,
    Limits, Method, Output, Par, ScalarType, Value,
};

/// Every float operation the lanes compute as vectors or lane by lane, beside
/// integers, selects, casts, buffer reads at per-lane and uniform indices.
const OPS_F32: &str = "field ops(a: f32[], b: i32[], c: u32[], s: f32, m: u32, q: i32, flag: bool) {
    state x = a[i], y = f32(b[i % 3u]), z = 0.5;
    let j = i32(i) - 3;
    let u = c[(i * m) % 4u] >> 2u;
    let w = select(flag && x > 0.0, exp(-x * x), tanh(y) + pow(abs(x), 1.5));
    let e = x * y - s;
    d(x)/dt = sin(x) * cos(y) + log(1.0 + abs(w)) - sqrt(abs(s)) + floor(t) + min(x, y) - max(x, 0.5)
              + f32(j / q) + f32(u % 7u) + fma(x, y, 1.0) + fma(e, 2.0, x) + fma(3.0, x, e)
              + x % 2.0 + init(x) - f32(tid + bid + bdim) + 2.0 / (x + 3.0) - (y - x) / 4.0 - sqrt(abs(y));
    d(y)/dt = -y + select(!(i == 2u) || y <= x, 1.0, -2.5e-3) / 7.0 + e * e * 0.01 + pow(2.0, x - y) * 0.01;
    d(z)/dt = x - abs(z) + f32(f64(x) * 0.5);
}";

const OPS_F64: &str = "field ops64(a: f64[]) {
    state x: f64 = a[i], y: f64 = 1.25;
    let e = x * y - t;
    d(x)/dt = (fma(e, y, x) + fma(y, e, 1.0) + fma(x, y, e) - min(y, e) / max(x, 0.5) + e % 0.75) * 0.01;
    d(y)/dt = 3.0 - (x - y) * (2.0 / (e + 9.0)) + exp(-abs(e)) + f64(f32(x)) - sqrt(abs(x));
}";

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// Arguments for any kernel: buffers of `len` varied values, scalars small.
fn args_for(k: &Kernel, len: usize) -> Args {
    let mut args = Args::new(k);
    for p in &k.params {
        let f = |i: usize| ((i * 37 % 101) as f64 - 40.0) * 0.05;
        if p.buffer {
            let b = match p.ty {
                ScalarType::F64 => Buffer::F64((0..len).map(f).collect()),
                ScalarType::I32 => Buffer::I32((0..len).map(|i| (i % 7) as i32 - 3).collect()),
                ScalarType::U32 | ScalarType::Bool => {
                    Buffer::U32((0..len).map(|i| (i % 5) as u32).collect())
                }
                ScalarType::F32 => Buffer::F32((0..len).map(|i| f(i) as f32).collect()),
            };
            args.buffer(&p.name, b).unwrap();
        } else {
            let v = match p.ty {
                ScalarType::F64 => Value::F64(-1.5),
                ScalarType::F32 => Value::F32(-2.5),
                ScalarType::I32 => Value::I32(-2),
                ScalarType::U32 => Value::U32(3),
                ScalarType::Bool => Value::Bool(true),
            };
            args.scalar(&p.name, v).unwrap();
        }
    }
    args
}

fn bits(o: &Output) -> Vec<u64> {
    (0..o.states.len())
        .map(|i| match o.states.get(i) {
            Value::F32(x) => x.to_bits() as u64,
            Value::F64(x) => x.to_bits(),
            v => panic!("state {v:?}"),
        })
        .collect()
}

fn run(k: &Kernel, args: &Args, integ: &Integration, e: Engine) -> Result<Output, IrError> {
    run_cpu_on(k, args, integ, &Limits::default(), e)
}

/// Both engines, Euler and RK4, a few block sizes: the same bits.
fn same_on_both(k: &Kernel, args: &Args, n: usize, dt: f64) {
    for block in [n.min(64), 77, 5] {
        let cfg = vgpu_field::LaunchConfig::linear(n, block as u32).unwrap();
        let f = IrField::new(k, args, n, block as u32, cfg.num_blocks() as u32)
            .unwrap()
            .engine(Engine::Jit);
        assert!(f.is_native(), "{}: {:?}", k.name, f.fallback());
        for m in [Method::Euler, Method::Rk4] {
            let integ = Integration::new(n, 0.0, 20.0 * dt, dt)
                .method(m)
                .block(block as u32)
                .par(Par::Rayon(2));
            let what = format!("{} {m:?} block {block}", k.name);
            match (
                run(k, args, &integ, Engine::Jit),
                run(k, args, &integ, Engine::Eval),
            ) {
                (Ok(jit), Ok(eval)) => assert_eq!(bits(&jit), bits(&eval), "{what}"),
                (jit, eval) => panic!("{what}: {jit:?} vs {eval:?}"),
            }
        }
    }
}

#[test]
fn the_test_kernels_give_the_evaluators_bits() {
    for src in [OPS_F32, OPS_F64] {
        let k = compile("ops.field", src).unwrap();
        let args = args_for(&k, 200);
        same_on_both(&k, &args, 200, 0.001);
    }
}

#[test]
fn every_unphased_example_gives_the_evaluators_bits() {
    let mut count = 0;
    for e in std::fs::read_dir(example("")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "field") {
            continue;
        }
        let k = compile_file(&p).unwrap();
        if k.is_phased() || !k.events.is_empty() {
            continue;
        }
        let args = args_for(&k, 300);
        same_on_both(&k, &args, 300, 0.001);
        count += 1;
    }
    assert!(count >= 3, "{count} unphased examples");
}

#[test]
fn an_out_of_bounds_read_is_the_evaluators_error() {
    let k = compile(
        "oob.field",
        "field oob(a: f32[]) { state x = 1.0; d(x)/dt = a[i + 3u] * x; }",
    )
    .unwrap();
    let mut args = Args::new(&k);
    args.buffer("a", vec![0.5f32; 40]).unwrap();
    let integ = Integration::new(40, 0.0, 0.1, 0.01).block(16);
    let jit = run(&k, &args, &integ, Engine::Jit).unwrap_err();
    let eval = run(&k, &args, &integ, Engine::Eval).unwrap_err();
    assert_eq!(jit.to_string(), eval.to_string());
    assert!(jit.to_string().contains('a'), "{jit}");
}

/// `a[i]` is one vector load while every lane of the vector is live and
/// inside the buffer; a buffer that ends inside a vector (37 values for 40
/// trajectories) takes the lane-by-lane read there, which names the read as
/// the evaluator does; one that covers the launch gives the evaluator's bits
/// with padding lanes (blocks of 16 and 7 over 40).
#[test]
fn a_read_at_i_past_the_end_is_the_evaluators_error() {
    let k = compile(
        "at_i.field",
        "field at_i(a: f32[]) { state x = 1.0; d(x)/dt = a[i] * x - x * x; }",
    )
    .unwrap();
    for (len, block) in [(37usize, 16u32), (37, 7), (40, 16), (40, 7)] {
        let mut args = Args::new(&k);
        args.buffer("a", (0..len).map(|v| v as f32 * 0.25).collect::<Vec<f32>>())
            .unwrap();
        let integ = Integration::new(40, 0.0, 0.1, 0.01).block(block);
        let (jit, eval) = (
            run(&k, &args, &integ, Engine::Jit),
            run(&k, &args, &integ, Engine::Eval),
        );
        match (jit, eval) {
            (Ok(j), Ok(e)) => {
                assert_eq!(len, 40);
                assert_eq!(bits(&j), bits(&e), "len {len} block {block}");
            }
            (Err(j), Err(e)) => {
                assert_eq!(len, 37);
                assert_eq!(j.to_string(), e.to_string());
                assert!(j.to_string().contains("37"), "{j}");
            }
            (j, e) => panic!("len {len} block {block}: {j:?} vs {e:?}"),
        }
    }
}

#[test]
fn a_block_narrower_than_a_vector_runs_on_the_evaluator_and_says_why() {
    let k = compile_file(&example("lorenz.field")).unwrap();
    let args = args_for(&k, 3);
    let f = IrField::new(&k, &args, 3, 3, 1)
        .unwrap()
        .engine(Engine::Jit);
    assert!(!f.is_native());
    let why = f.fallback().unwrap().to_string();
    assert!(why.contains("narrower than one vector"), "{why}");
    let eval = IrField::new(&k, &args, 3, 3, 1)
        .unwrap()
        .engine(Engine::Eval);
    assert!(!eval.is_native() && eval.fallback().is_none());
}
