//! The inputs of `vgpu ensemble` read from the options and files: the
//! kernel's arguments (`--param`: numbers, `linspace:A:B`, 1-D `.npy`), save
//! times (`--saveat`), and numeric `.npy` arrays such as `--u0` and `--tspan`
//! (a slice reads only its rows).

use super::args::usage;
use crate::cli::split::Split;
use ndarray::Array1;
use ndarray_npy::read_npy;
use std::path::Path;
use vgpu::ir::{Arg, Args, Buffer, Kernel, ScalarType, Value};
use vgpu::Limits;

/// `vals` as a buffer of the parameter's type.
fn typed(vals: Vec<f64>, ty: ScalarType) -> Buffer {
    match ty {
        ScalarType::F64 => Buffer::F64(vals.into()),
        ScalarType::I32 => Buffer::I32(vals.iter().map(|&v| v as i32).collect()),
        ScalarType::U32 => Buffer::U32(vals.iter().map(|&v| v as u32).collect()),
        _ => Buffer::F32(vals.iter().map(|&v| v as f32).collect()),
    }
}

/// A 1-D `.npy` parameter array as a buffer of the parameter's type.
fn read_buffer(path: &str, ty: ScalarType, limits: &Limits) -> Result<Buffer, vgpu::Error> {
    let io = |e: String| vgpu::Error::Io {
        path: path.into(),
        source: std::io::Error::other(e),
    };
    macro_rules! try_read {
        ($t:ty, $wrap:expr) => {
            if let Ok(a) = read_npy::<_, Array1<$t>>(path) {
                return Ok($wrap(a.to_vec()).cast(ty));
            }
        };
    }
    if !std::path::Path::new(path).exists() {
        return Err(io("no such file".into()));
    }
    // The header's shape must fit in the file and in memory before the read.
    let shape = limits.npy(std::path::Path::new(path))?;
    if shape.len() != 1 {
        return Err(io(format!(
            "a parameter array must be 1-D, this one has shape {shape:?}"
        )));
    }
    try_read!(f32, |v: Vec<f32>| Buffer::F32(v.into()));
    try_read!(f64, |v: Vec<f64>| Buffer::F64(v.into()));
    try_read!(i32, |v: Vec<i32>| Buffer::I32(v.into()));
    try_read!(u32, |v: Vec<u32>| Buffer::U32(v.into()));
    try_read!(i64, |v: Vec<i64>| Buffer::F64(
        v.iter().map(|&x| x as f64).collect()
    ));
    Err(io(
        "not a 1-D .npy array of f32, f64, i32, u32 or i64".into()
    ))
}

/// Builds the arguments from `--param` options.
pub(super) fn build_args(
    k: &Kernel,
    params: &[String],
    n: usize,
    limits: &Limits,
) -> Result<Args, vgpu::Error> {
    let mut args = Args::new(k);
    for p in params {
        let (name, value) = p
            .split_once('=')
            .ok_or_else(|| usage(format!("--param {p:?}: expected NAME=VALUE")))?;
        let decl = k.params.iter().find(|q| q.name == name);
        let ty = decl.map(|d| d.ty).unwrap_or(ScalarType::F32);
        let is_buffer = decl.is_some_and(|d| d.buffer);
        let arg = if let Some(spec) = value.strip_prefix("linspace:") {
            let (a, b) = spec
                .split_once(':')
                .ok_or_else(|| usage(format!("--param {p:?}: expected linspace:A:B")))?;
            let a: f64 = a
                .parse()
                .map_err(|_| usage(format!("--param {p:?}: {a:?} is not a number")))?;
            let b: f64 = b
                .parse()
                .map_err(|_| usage(format!("--param {p:?}: {b:?} is not a number")))?;
            // numpy.linspace(a, b, n): a + i·(b − a)/(n − 1), in f64.
            let step = if n > 1 { (b - a) / (n - 1) as f64 } else { 0.0 };
            Arg::Buffer(typed((0..n).map(|i| a + i as f64 * step).collect(), ty))
        } else if value.ends_with(".npy") {
            Arg::Buffer(read_buffer(value, ty, limits)?)
        } else {
            let v: f64 = value.parse().map_err(|_| {
                usage(format!(
                    "--param {p:?}: expected a number, linspace:A:B or FILE.npy"
                ))
            })?;
            if is_buffer {
                return Err(usage(format!(
                    "--param {p:?}: `{name}` is a buffer: give linspace:A:B or FILE.npy"
                )));
            }
            Arg::Scalar(Value::F64(v))
        };
        args.set(name, arg)?;
    }
    args.check_complete()?;
    Ok(args)
}

/// A numeric `.npy` array as `f64` values with its shape (f64, f32, i64, i32).
fn read_numeric(
    flag: &str,
    path: &std::path::Path,
    limits: &Limits,
) -> Result<(Vec<usize>, Vec<f64>), vgpu::Error> {
    let io = |e: String| vgpu::Error::Io {
        path: format!("{flag} {}", path.display()),
        source: std::io::Error::other(e),
    };
    if !path.exists() {
        return Err(io("no such file".into()));
    }
    let shape = limits.npy(path)?;
    macro_rules! try_read {
        ($t:ty) => {
            if let Ok(a) = read_npy::<_, ndarray::ArrayD<$t>>(path) {
                let shape = a.shape().to_vec();
                return Ok((shape, a.iter().map(|&v| v as f64).collect()));
            }
        };
    }
    try_read!(f64);
    try_read!(f32);
    try_read!(i64);
    try_read!(i32);
    Err(io(format!(
        "not a .npy array of f64, f32, i64 or i32 (shape {shape:?})"
    )))
}

/// `--saveat`: `T0:T1:K` (numpy.linspace(T0, T1, K)) or a 1-D `.npy`.
pub(super) fn parse_saveat(s: &str, limits: &Limits) -> Result<Vec<f64>, vgpu::Error> {
    if s.ends_with(".npy") {
        let (shape, v) = read_numeric("--saveat", std::path::Path::new(s), limits)?;
        if shape.len() != 1 {
            return Err(usage(format!(
                "--saveat {s}: save times must be a 1-D array, this one has shape {shape:?}"
            )));
        }
        return Ok(v);
    }
    let parts: Vec<&str> = s.split(':').collect();
    let [a, b, k] = parts[..] else {
        return Err(usage(format!(
            "--saveat {s:?}: expected T0:T1:K or FILE.npy"
        )));
    };
    let num = |x: &str| {
        x.trim()
            .parse::<f64>()
            .map_err(|_| usage(format!("--saveat {s:?}: {x:?} is not a number")))
    };
    let (a, b) = (num(a)?, num(b)?);
    let k: usize = k
        .trim()
        .parse()
        .ok()
        .filter(|&k| k >= 1)
        .ok_or_else(|| usage(format!("--saveat {s:?}: K must be a whole number ≥ 1")))?;
    limits.memory(
        &format!("--saveat {s:?}"),
        limits.bytes(&format!("--saveat {s:?}"), k as u64, 8)?,
    )?;
    let step = if k > 1 { (b - a) / (k - 1) as f64 } else { 0.0 };
    Ok((0..k)
        .map(|i| if i + 1 == k { b } else { a + i as f64 * step })
        .collect())
}

/// An (N, …) `.npy` option (`--u0`, `--tspan`) as `f64` values in row order,
/// refused unless its shape is `shape` (`what` says it in the error). A slice
/// reads only its rows.
pub(super) fn read_rows(
    flag: &str,
    path: &Path,
    shape: &[usize],
    what: &str,
    split: Option<&Split>,
    limits: &Limits,
) -> Result<Vec<f64>, vgpu::Error> {
    let want = |got: &[usize]| {
        if got != shape {
            return Err(usage(format!(
                "{flag} {}: expected shape {what}, got {got:?}",
                path.display()
            )));
        }
        Ok(())
    };
    match split {
        Some(s) => vgpu::shard::read_npy_rows(path, s.lo, s.hi, limits, &want),
        None => {
            let (got, v) = read_numeric(flag, path, limits)?;
            want(&got)?;
            Ok(v)
        }
    }
}
