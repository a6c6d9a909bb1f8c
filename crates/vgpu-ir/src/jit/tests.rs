//! Native code against the column evaluator, call by call: every operation
//! on ordinary and edge values (NaN, ±∞, ±0, saturating casts, integer
//! division by 0 and MIN / −1, shifts past 31, out-of-bounds reads).

use super::ScalarSet;
use crate::args::{Args, Buffer};
use crate::check::compile;
use crate::eval::Dims;
use crate::eval::IrFloat;
use crate::field::IrField;
use crate::kernel::Kernel;
use crate::types::Value;
use vgpu_field::{BlockCtx, BlockField, LaunchConfig};

const EDGE: &str = "field edge(a: f32[], b: i32[], c: u32[], q: i32, r: u32, flag: bool) {
    state x = a[i], y = 0.5, z = -1.0;
    let m = b[i % 4u];
    let w = c[i % 4u] + n;
    let xi = i32(x * 1000.0);
    let yu = u32(y * 3.0e9);
    let di = m / q + m % q + xi / (q + 1) + xi % m + m / (q - 1) + m % (q - 1);
    let du = w / r + w % r + (w << u32(xi)) + (w >> 33u) + u32(m >> 35u) + (w & 240u) + (w | 3u) + (w ^ 7u);
    let cmp = select(x < y && !(x == z) || x >= 2.0, 1.0, 0.0) + select(x != x, 5.0, 0.0)
        + select(m <= q, 1.0, 2.0) + select(w > r, 3.0, 4.0) + select(flag, 0.25, 0.5)
        + select(x > z, 1.5, 2.5) + select(y <= z, 7.0, 8.0) + select(xi >= m, 9.0, 10.0);
    d(x)/dt = f32(di) + f32(du) + f32(yu) + cmp + f32(-m) + f32(abs(m)) + f32(min(m, q)) + f32(max(w, r))
        + f32(!w) + f32(!m) + f32(min(w, r)) + f32(max(m, q)) + f32(m * q - m) + f32(f64(x) * 3.0) - f32(u32(x)) + f32(i32(flag)) + f32(x > 0.0);
    d(y)/dt = sin(x) + cos(y) + exp(z) + log(abs(x)) + tanh(x) + sqrt(abs(y)) + floor(x) + pow(abs(x), y)
        + min(x, y) + max(x, z) + x % y + fma(x, y, z) + abs(z) - x / y - (y - x) * (z + 1.0);
    d(z)/dt = f32(i) + f32(tid) + f32(bid) + t * 2.0 + init(x) + f32(b[i32(x)]) + f32(c[u32(y)]);
}";

fn same<T: IrFloat>(a: &[T], b: &[T]) -> bool {
    a.iter().zip(b).all(|(x, y)| {
        x.to_bits_u64() == y.to_bits_u64() || (x.to_f64().is_nan() && y.to_f64().is_nan())
    })
}

/// Every trajectory of `n`, at every pair of `values` for two of its states
/// and at two times: the native rates and fault equal the evaluator's.
fn native_equals_evaluator<T: IrFloat>(k: &Kernel, args: &Args, n: usize, values: &[f64]) {
    let cfg = LaunchConfig::linear(n, 1).unwrap();
    let field = IrField::new(k, args, n, 1, n as u32).unwrap();
    let dims = Dims {
        bdim: 1,
        gdim: n as u32,
        n: n as u32,
        rep: 0,
    };
    let set = ScalarSet::compile(&[k], args, dims).unwrap();
    let dim = k.states.len();
    let mut sc = BlockField::<T>::scratch(&field, 1);
    let mut faults = 0;
    for i in 0..n {
        let ctx = BlockCtx::new(&cfg, i, &()).unwrap();
        for (j, &u) in values.iter().enumerate() {
            for &v in values.iter().skip(j % 3) {
                let y: Vec<T> = (0..dim)
                    .map(|s| T::from_f64([u, v, -u * 0.5][s % 3]))
                    .collect();
                let y0: Vec<T> = y.iter().map(|&x| x * T::from_f64(0.75)).collect();
                for t in [0.0, -2.5] {
                    let t = T::from_f64(t);
                    let (mut d1, mut d2) = (vec![T::ZERO; dim], vec![T::ZERO; dim]);
                    field.eval_block(t, &y, &y0, &ctx, &mut sc, &mut d1);
                    let f = set.call(0, t, &y, &y0, [i as u32, 0, i as u32, 0], &mut d2);
                    assert!(same(&d1, &d2), "trajectory {i}, y = {y:?}:\n{d1:?}\n{d2:?}");
                    if let Some(f) = f {
                        faults += 1;
                        field.record(f, i);
                    }
                }
            }
        }
    }
    // The evaluator recorded its faults as it ran, the native code through
    // the same recorder: both saw the first one.
    if faults > 0 {
        assert!(field.take_fault().is_some());
    }
}

const VALUES: [f64; 14] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.3,
    2.75,
    -3.5,
    1e9,
    -7e12,
    3e38,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    1e-40,
];

#[test]
fn every_operation_gives_the_evaluators_bits() {
    let k = compile("edge.field", EDGE).unwrap();
    for (q, r) in [(0i32, 0u32), (-1, 5), (3, 40), (i32::MIN, u32::MAX)] {
        let mut args = Args::new(&k);
        args.buffer("a", vec![0.5f32, -2.0, 3.25, 9.0, -1.0, 0.0])
            .unwrap()
            .buffer("b", vec![i32::MIN, -1, 7, 0])
            .unwrap()
            .buffer("c", vec![u32::MAX, 0, 17, 1 << 31])
            .unwrap()
            .scalar("q", Value::I32(q))
            .unwrap()
            .scalar("r", Value::U32(r))
            .unwrap()
            .scalar("flag", Value::Bool(q == 0))
            .unwrap();
        native_equals_evaluator::<f32>(&k, &args, 6, &VALUES);
    }
}

#[test]
fn f64_kernels_give_the_evaluators_bits() {
    let src = "field e64(a: f64[], p: f64) {
        state x: f64 = a[i], y: f64 = 1.25;
        let e = x * y - t;
        d(x)/dt = fma(e, y, x) + fma(y, e, 1.0) - min(y, e) / max(x, 0.5) + e % 0.75 + pow(abs(e), p) + f64(i32(x));
        d(y)/dt = 3.0 - (x - y) * (2.0 / (e + 9.0)) + exp(-abs(e)) + sin(x) * cos(y) + tanh(e) + log(abs(y)) + sqrt(abs(x)) + floor(y) + f64(f32(x)) + a[u32(abs(y))];
    }";
    let k = compile("e64.field", src).unwrap();
    let mut args = Args::new(&k);
    args.buffer("a", Buffer::F64(vec![0.5, -2.0, 1e300].into()))
        .unwrap()
        .scalar("p", Value::F64(1.5))
        .unwrap();
    native_equals_evaluator::<f64>(&k, &args, 3, &VALUES);
}

#[test]
fn what_it_cannot_compile_is_named() {
    let k = compile(
        "barrier_reverse.field",
        include_str!("../../../../examples/barrier_reverse.field"),
    )
    .unwrap();
    let args = Args::new(&k);
    let dims = Dims {
        bdim: 4,
        gdim: 1,
        n: 4,
        rep: 0,
    };
    let e = ScalarSet::compile(&[&k], &args, dims).err().unwrap();
    assert!(
        e.to_string().contains("not compilable") && e.to_string().contains("phases"),
        "{e}"
    );
}
