//! Train a two-layer MLP on two interleaved spirals, every matmul through VGPU.
//!
//! The data set is generated here: 1000 points on two interleaved spirals (1.5
//! turns each, Gaussian noise), 2 classes. The network is 2 → 64 (ReLU) → 2
//! (softmax, cross-entropy), trained with plain mini-batch SGD (no momentum).
//! Every matrix product of the forward and backward passes, of the accuracy check
//! and of the decision-region grid runs through [`VgpuCache`]: the hidden layer as
//! one fused kernel ([`VgpuCache::matmul_bias_relu`], the bias and the ReLU in the
//! matmul's store), the output layer through [`VgpuCache::matmul_nd`] and the
//! cache's row-wise [`VgpuCache::softmax`]; the gradients' element-wise work is
//! plain ndarray code.
//!
//! It prints the training accuracy and the cache counters (one compile per
//! distinct matmul shape and per fused kernel, every other call a cache hit) and
//! writes a PNG with the loss curve and the learned decision regions.
//!
//! ```text
//! cargo run --release -p vgpu --example mlp -- [--epochs 200] [--out mlp.png]
//! ```
//! `VGPU_BACKEND=auto|gpu|cpu` chooses where the matmuls run. It exits with status
//! 1 when the training accuracy stays under 95%. The same example in Python is
//! `examples/mlp.py`.

use ndarray::{Array1, Array2, ArrayView2, Axis};
use plotters::prelude::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use std::error::Error;
use std::f64::consts::PI;
use std::process::ExitCode;
use std::time::Instant;
use vgpu_gpu::VgpuCache;

/// Points in the data set (half per class).
const POINTS: usize = 1000;
/// Turns of each spiral arm.
const TURNS: f64 = 1.5;
/// Standard deviation of the Gaussian noise added to each point.
const NOISE: f64 = 0.03;
/// Hidden units.
const HIDDEN: usize = 64;
/// Points per SGD step.
const BATCH: usize = 100;
/// SGD step size.
const LEARNING_RATE: f32 = 0.5;
/// Default number of epochs.
const EPOCHS: usize = 200;
/// The decision-region grid covers [-LIM, LIM]².
const LIM: f32 = 1.2;
/// The decision-region grid has GRID × GRID points.
const GRID: usize = 150;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Two interleaved spirals: X (n×2) in [-1, 1]² and the labels (0 or 1).
///
/// Class c's points lie at angle θ + cπ and radius θ / (2π·turns) for θ in
/// [0, 2π·turns] (√-distributed, so the density along the arm is even), plus
/// Gaussian noise (Box–Muller).
fn make_spirals(n: usize, turns: f64, noise: f64, seed: u64) -> (Array2<f32>, Vec<usize>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let gauss = |rng: &mut StdRng| {
        let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]: ln is finite
        let u2: f64 = rng.random();
        (-2.0 * u1.ln()).sqrt() * (2.0 * PI * u2).cos()
    };
    let per = n / 2;
    let mut x = Array2::zeros((2 * per, 2));
    let mut y = Vec::with_capacity(2 * per);
    for class in 0..2 {
        for i in 0..per {
            let theta = rng.random::<f64>().sqrt() * 2.0 * PI * turns;
            let r = theta / (2.0 * PI * turns);
            let angle = theta + class as f64 * PI;
            let row = class * per + i;
            x[[row, 0]] = (r * angle.cos() + noise * gauss(&mut rng)) as f32;
            x[[row, 1]] = (r * angle.sin() + noise * gauss(&mut rng)) as f32;
            y.push(class);
        }
    }
    (x, y)
}

/// A 2-layer perceptron: logits = relu(x·W1 + b1)·W2 + b2.
struct Mlp {
    w1: Array2<f32>,
    b1: Array1<f32>,
    w2: Array2<f32>,
    b2: Array1<f32>,
}

/// C = A·B through the cache (non-contiguous views, such as transposes, are copied first).
fn mm(
    cache: &mut VgpuCache,
    a: ArrayView2<'_, f32>,
    b: ArrayView2<'_, f32>,
) -> Result<Array2<f32>> {
    Ok(cache.matmul_nd(a, b)?)
}

/// relu(A·W + bias) through the cache's fused kernel.
fn mm_bias_relu(
    cache: &mut VgpuCache,
    a: ArrayView2<'_, f32>,
    w: ArrayView2<'_, f32>,
    bias: &Array1<f32>,
) -> Result<Array2<f32>> {
    let (a_std, w_std) = (a.as_standard_layout(), w.as_standard_layout());
    let (Some(a_s), Some(w_s), Some(b_s)) = (a_std.as_slice(), w_std.as_slice(), bias.as_slice())
    else {
        return Err("standard-layout arrays are contiguous".into());
    };
    let h = cache.matmul_bias_relu(a_s, a.dim(), w_s, w.dim(), b_s)?;
    Ok(Array2::from_shape_vec((a.nrows(), w.ncols()), h)?)
}

/// Row-wise softmax through the cache.
fn softmax(cache: &mut VgpuCache, z: Array2<f32>) -> Result<Array2<f32>> {
    let shape = z.dim();
    let z = z.as_standard_layout().into_owned();
    let Some(zs) = z.as_slice() else {
        return Err("standard-layout arrays are contiguous".into());
    };
    Ok(Array2::from_shape_vec(shape, cache.softmax(zs, shape)?)?)
}

impl Mlp {
    /// He-initialised weights (normal, std √(2/fan_in) and √(1/hidden)), zero biases.
    fn init(inputs: usize, hidden: usize, classes: usize, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut normal = |std: f64| {
            let u1: f64 = 1.0 - rng.random::<f64>();
            let u2: f64 = rng.random();
            ((-2.0 * u1.ln()).sqrt() * (2.0 * PI * u2).cos() * std) as f32
        };
        let s1 = (2.0 / inputs as f64).sqrt();
        let w1 = Array2::from_shape_simple_fn((inputs, hidden), || normal(s1));
        let s2 = (1.0 / hidden as f64).sqrt();
        let w2 = Array2::from_shape_simple_fn((hidden, classes), || normal(s2));
        Mlp {
            w1,
            b1: Array1::zeros(hidden),
            w2,
            b2: Array1::zeros(classes),
        }
    }

    /// The logits for the rows of `x`: both matmuls through the cache (the
    /// hidden layer's bias and ReLU fused into its matmul).
    fn logits(&self, cache: &mut VgpuCache, x: ArrayView2<'_, f32>) -> Result<Array2<f32>> {
        let h = mm_bias_relu(cache, x, self.w1.view(), &self.b1)?;
        Ok(mm(cache, h.view(), self.w2.view())? + &self.b2)
    }

    /// The predicted class of each row of `x`.
    fn predict(&self, cache: &mut VgpuCache, x: ArrayView2<'_, f32>) -> Result<Vec<usize>> {
        let z = self.logits(cache, x)?;
        Ok(z.rows()
            .into_iter()
            .map(|r| argmax(r.iter().copied()))
            .collect())
    }

    /// One plain SGD step on the batch (x, y); returns its mean cross-entropy.
    /// Five matmuls through the cache: two forward (the first with its bias and
    /// ReLU fused, the second followed by the cache's softmax), three backward
    /// (dW2 = hᵀ·d2, dh = d2·W2ᵀ, dW1 = xᵀ·dz).
    fn sgd_step(
        &mut self,
        cache: &mut VgpuCache,
        x: ArrayView2<'_, f32>,
        y: &[usize],
        lr: f32,
    ) -> Result<f32> {
        let b = x.nrows();
        let h = mm_bias_relu(cache, x, self.w1.view(), &self.b1)?;
        let z2 = mm(cache, h.view(), self.w2.view())? + &self.b2;
        let mut d2 = softmax(cache, z2)?;
        let mut loss = 0.0f32;
        for (mut row, &label) in d2.rows_mut().into_iter().zip(y) {
            loss -= row[label].max(1e-12).ln();
            row[label] -= 1.0;
        }
        d2 /= b as f32;
        let g_w2 = mm(cache, h.t(), d2.view())?;
        let dh = mm(cache, d2.view(), self.w2.t())?;
        // relu'(z1): h > 0 exactly where z1 > 0.
        let dz = dh * h.mapv(|v| if v > 0.0 { 1.0 } else { 0.0 });
        let g_w1 = mm(cache, x.t(), dz.view())?;
        self.w2.scaled_add(-lr, &g_w2);
        self.b2.scaled_add(-lr, &d2.sum_axis(Axis(0)));
        self.w1.scaled_add(-lr, &g_w1);
        self.b1.scaled_add(-lr, &dz.sum_axis(Axis(0)));
        Ok(loss / b as f32)
    }
}

/// The index of the largest value (the first one on ties).
fn argmax(values: impl Iterator<Item = f32>) -> usize {
    values
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |best, (i, v)| {
            if v > best.1 {
                (i, v)
            } else {
                best
            }
        })
        .0
}

/// What [`train`] returns.
struct Training {
    net: Mlp,
    /// Mean batch loss of each epoch.
    losses: Vec<f32>,
    /// On the whole training set, after the last epoch.
    accuracy: f64,
    seconds: f64,
}

/// Trains a fresh MLP with plain mini-batch SGD, shuffling the points every epoch.
fn train(
    cache: &mut VgpuCache,
    x: &Array2<f32>,
    y: &[usize],
    epochs: usize,
    seed: u64,
) -> Result<Training> {
    let n = x.nrows();
    if n % BATCH != 0 {
        return Err(format!("{n} points do not split into batches of {BATCH}").into());
    }
    let classes = y.iter().max().map_or(0, |m| m + 1);
    let mut net = Mlp::init(x.ncols(), HIDDEN, classes, seed);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..n).collect();
    let mut losses = Vec::with_capacity(epochs);
    let start = Instant::now();
    for _ in 0..epochs {
        order.shuffle(&mut rng);
        let mut total = 0.0;
        for idx in order.chunks(BATCH) {
            let xb = x.select(Axis(0), idx);
            let yb: Vec<usize> = idx.iter().map(|&i| y[i]).collect();
            total += net.sgd_step(cache, xb.view(), &yb, LEARNING_RATE)?;
        }
        losses.push(total / (n / BATCH) as f32);
    }
    let predicted = net.predict(cache, x.view())?;
    let correct = predicted.iter().zip(y).filter(|(p, t)| p == t).count();
    Ok(Training {
        net,
        losses,
        accuracy: correct as f64 / n as f64,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// The predicted class on a GRID × GRID grid over [-LIM, LIM]², row 0 at y = -LIM.
fn decision_grid(cache: &mut VgpuCache, net: &Mlp) -> Result<Array2<usize>> {
    let tick = |i: usize| -LIM + 2.0 * LIM * i as f32 / (GRID - 1) as f32;
    let pts = Array2::from_shape_fn((GRID * GRID, 2), |(p, c)| {
        if c == 0 {
            tick(p % GRID)
        } else {
            tick(p / GRID)
        }
    });
    let classes = net.predict(cache, pts.view())?;
    Ok(Array2::from_shape_vec((GRID, GRID), classes)?)
}

const LIGHT: [RGBColor; 2] = [RGBColor(198, 219, 239), RGBColor(253, 208, 162)];
const DARK: [RGBColor; 2] = [RGBColor(33, 113, 181), RGBColor(217, 72, 1)];

/// Writes the PNG: the loss curve (log scale) left, the decision regions with the
/// training points right.
fn plot(
    path: &str,
    run: &Training,
    grid: &Array2<usize>,
    x: &Array2<f32>,
    y: &[usize],
) -> Result<()> {
    let root = BitMapBackend::new(path, (1100, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, 2));

    let lo = run
        .losses
        .iter()
        .copied()
        .fold(f32::INFINITY, f32::min)
        .max(1e-6);
    let hi = run
        .losses
        .iter()
        .copied()
        .fold(0.0, f32::max)
        .max(lo * 1.01);
    let mut loss = ChartBuilder::on(&panels[0])
        .caption("training loss", ("sans-serif", 22))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(55)
        .build_cartesian_2d(1..run.losses.len().max(2), (lo * 0.9..hi * 1.1).log_scale())?;
    loss.configure_mesh()
        .x_desc("epoch")
        .y_desc("mean cross-entropy")
        .draw()?;
    loss.draw_series(LineSeries::new(
        run.losses.iter().enumerate().map(|(i, &l)| (i + 1, l)),
        RED.stroke_width(2),
    ))?;

    let mut regions = ChartBuilder::on(&panels[1])
        .caption(
            format!(
                "decision regions (training accuracy {:.1}%)",
                100.0 * run.accuracy
            ),
            ("sans-serif", 22),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(45)
        .build_cartesian_2d(-LIM..LIM, -LIM..LIM)?;
    regions.configure_mesh().disable_mesh().draw()?;
    let cell = 2.0 * LIM / (GRID - 1) as f32;
    regions.draw_series(grid.indexed_iter().map(|((row, col), &class)| {
        let (cx, cy) = (-LIM + col as f32 * cell, -LIM + row as f32 * cell);
        Rectangle::new(
            [
                (cx - cell / 2.0, cy - cell / 2.0),
                (cx + cell / 2.0, cy + cell / 2.0),
            ],
            LIGHT[class.min(1)].filled(),
        )
    }))?;
    regions.draw_series(
        x.rows()
            .into_iter()
            .zip(y)
            .map(|(p, &c)| Circle::new((p[0], p[1]), 2, DARK[c.min(1)].filled())),
    )?;
    root.present()?;
    Ok(())
}

/// Command-line options: `--epochs N`, `--out PATH`.
fn parse_args() -> Result<(usize, String)> {
    let mut epochs = EPOCHS;
    let mut out = "mlp.png".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--epochs" => {
                let v = args.next().ok_or("--epochs needs a value")?;
                epochs = v.parse().map_err(|e| format!("--epochs {v:?}: {e}"))?;
            }
            "--out" => out = args.next().ok_or("--out needs a path")?,
            other => {
                return Err(
                    format!("unknown argument {other:?} (expected --epochs N, --out PATH)").into(),
                )
            }
        }
    }
    Ok((epochs, out))
}

fn run() -> Result<bool> {
    let (epochs, out) = parse_args()?;
    let mut cache = VgpuCache::new()?;
    println!("{}", cache.adapter_line());
    let (x, y) = make_spirals(POINTS, TURNS, NOISE, 0);
    let run = train(&mut cache, &x, &y, epochs, 1)?;
    println!(
        "{epochs} epochs of SGD ({} batches of {BATCH}) in {:.2} s: final loss {:.4}, training accuracy {:.1}%",
        POINTS / BATCH,
        run.seconds,
        run.losses.last().copied().unwrap_or(f32::NAN),
        100.0 * run.accuracy
    );
    let grid = decision_grid(&mut cache, &run.net)?;
    let stats = cache.stats();
    println!("{stats}");
    println!(
        "  bytes uploaded {}, downloaded {}, compile time {:.3} s",
        stats.bytes_uploaded,
        stats.bytes_downloaded,
        stats.compile_time.as_secs_f64()
    );
    plot(&out, &run, &grid, &x, &y)?;
    println!("wrote {out}");
    Ok(run.accuracy >= 0.95)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("training accuracy stayed under 95%");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernels of one training run: per SGD step (all batches are full) the
    /// fused x·W1 (100×2·2×64), four plain matmuls of four shapes (h·W2, hᵀ·d2,
    /// d2·W2ᵀ, xᵀ·dz) and softmax's two kernels (row scan, normalisation: one
    /// compile for every shape); 2 more shapes for the accuracy check.
    const TRAINING_KERNELS: u64 = 9;

    #[test]
    fn spirals_are_balanced_and_bounded() {
        let (x, y) = make_spirals(POINTS, TURNS, NOISE, 0);
        assert_eq!(x.dim(), (POINTS, 2));
        assert_eq!(y.iter().filter(|&&c| c == 1).count(), POINTS / 2);
        assert!(x.iter().all(|v| v.abs() < 1.0 + 5.0 * NOISE as f32));
        // The two arms interleave: class 1 is class 0 turned by π (before noise),
        // so the class means are both near the origin.
        for c in 0..2 {
            let rows: Vec<usize> = (0..POINTS).filter(|&i| y[i] == c).collect();
            let mean = x.select(Axis(0), &rows).mean_axis(Axis(0)).unwrap();
            assert!(mean.iter().all(|m| m.abs() < 0.3), "class {c} mean {mean}");
        }
    }

    #[test]
    fn mlp_reaches_95_percent_with_every_matmul_cached() {
        let mut cache = VgpuCache::new().expect("a VGPU cache");
        let (x, y) = make_spirals(POINTS, TURNS, NOISE, 0);
        let epochs = 150;
        let run = train(&mut cache, &x, &y, epochs, 1).expect("training");
        assert!(
            run.accuracy >= 0.95,
            "training accuracy {:.3}",
            run.accuracy
        );
        assert!(run.losses.last().unwrap() < &run.losses[0]);
        // Per step: 1 fused matmul, 4 matmuls, 1 softmax (2 dispatches); 2 for the accuracy.
        let steps = (epochs * (POINTS / BATCH)) as u64;
        let (calls, dispatches) = (6 * steps + 2, 7 * steps + 2);
        let s = cache.stats();
        if s.cpu_fallbacks == 0 {
            assert_eq!(s.compiles, TRAINING_KERNELS, "{s}");
            assert_eq!(s.cache_hits, dispatches - TRAINING_KERNELS, "{s}");
            assert_eq!(s.gpu_dispatches, dispatches, "{s}");
        } else {
            assert_eq!(s.cpu_fallbacks, calls, "{s}");
        }
        if std::env::var("VGPU_REQUIRE_GPU").as_deref() == Ok("1") {
            assert_eq!(
                s.cpu_fallbacks,
                0,
                "a GPU was required: {}",
                cache.adapter_line()
            );
        }
    }

    #[test]
    fn plot_writes_a_png() {
        let mut cache = VgpuCache::new().expect("a VGPU cache");
        let (x, y) = make_spirals(200, TURNS, NOISE, 3);
        let run = train(&mut cache, &x, &y, 2, 1).expect("training");
        let grid = decision_grid(&mut cache, &run.net).expect("grid");
        assert_eq!(grid.dim(), (GRID, GRID));
        let path = std::env::temp_dir().join(format!("vgpu-mlp-test-{}.png", std::process::id()));
        let path_str = path.to_str().unwrap().to_string();
        plot(&path_str, &run, &grid, &x, &y).expect("plot");
        let bytes = std::fs::read(&path).expect("the PNG");
        std::fs::remove_file(&path).ok();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert!(
            bytes.len() > 10_000,
            "a 1100×500 chart, {} bytes",
            bytes.len()
        );
    }

    #[test]
    fn softmax_rows_sum_to_one_and_argmax_picks_first_max() {
        let mut cache = VgpuCache::new().expect("a VGPU cache");
        let z = softmax(
            &mut cache,
            ndarray::array![[1.0f32, 2.0, 3.0], [1000.0, 1000.0, -1000.0]],
        )
        .expect("softmax");
        for row in z.rows() {
            assert!((row.sum() - 1.0).abs() < 1e-6);
        }
        assert!((z[[1, 0]] - 0.5).abs() < 1e-6);
        assert_eq!(argmax([1.0f32, 3.0, 3.0].into_iter()), 1);
    }
}
