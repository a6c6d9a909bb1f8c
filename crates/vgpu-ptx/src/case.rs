//! The case runner: one launch described by a `case.json` (the format of
//! the repository's ptx-cases/README.md), its buffers from raw little-endian `.bin`
//! files, compared with the expected outputs bit for bit (`exact`) or within
//! `atol + rtol·|want|`, or, with `expect_error`, the fault it must stop with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};
use vgpu_field::Dtype;

use crate::error::{FaultClass, PtxError};
use crate::launch::{ExecOptions, KernelArg, LaunchConfig, LaunchStats, Module};
use crate::limits::{self, read_file_limited, MAX_CASE_JSON_BYTES};

/// How the case runner treats the files a case.json names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaseOptions {
    /// Allow the PTX module and buffer files a case names to lie anywhere
    /// (`vgpu ptx run --allow-outside`). By default each must lie, after every
    /// symbolic link is resolved, inside the case's folder or its parent
    /// folder (the repository's cases share `../kernels.ptx`).
    pub allow_outside: bool,
}

/// A case.json.
#[derive(Debug, Clone, Deserialize)]
pub struct Case {
    /// The PTX module, relative to the case's folder.
    pub ptx: String,
    /// The entry to launch.
    pub entry: String,
    /// Blocks per grid.
    pub grid: [u32; 3],
    /// Threads per block.
    pub block: [u32; 3],
    /// The kernel's arguments, in order.
    pub args: Vec<CaseArg>,
    /// The buffers, by name.
    pub buffers: BTreeMap<String, CaseBuffer>,
    /// Compare bits exactly.
    #[serde(default)]
    pub exact: bool,
    /// Relative tolerance when not exact.
    #[serde(default)]
    pub rtol: f64,
    /// Absolute tolerance when not exact.
    #[serde(default)]
    pub atol: f64,
    /// Dynamic shared memory in bytes.
    #[serde(default)]
    pub shared_bytes: u32,
    /// The fault class the launch must stop with.
    #[serde(default)]
    pub expect_error: Option<String>,
    /// A watchdog limit for this case (instructions per warp; VGPU's extension).
    #[serde(default)]
    pub watchdog: Option<u64>,
    /// Run this case with the global-memory initcheck on
    /// ([`ExecOptions::initcheck`]; VGPU's extension). A buffer without
    /// `init` is then memory the host allocated but did not write.
    #[serde(default)]
    pub initcheck: bool,
}

/// A kernel argument of a case.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum CaseArg {
    /// A scalar of type `s32`, `u32`, `f32`, `s64`, `u64` or `f64`.
    Scalar {
        /// The type.
        #[serde(rename = "type", deserialize_with = "dtype")]
        ty: Dtype,
        /// The value.
        value: serde_json::Number,
    },
    /// A pointer to the named buffer.
    Buffer {
        /// The buffer's name.
        name: String,
    },
}

/// A buffer of a case.
#[derive(Debug, Clone, Deserialize)]
pub struct CaseBuffer {
    /// Element type: `f32`, `f64`, `s32`, `u8`, … ([`Dtype::name`]).
    #[serde(deserialize_with = "dtype")]
    pub dtype: Dtype,
    /// Number of elements.
    pub len: usize,
    /// Initial contents (raw little-endian), else zeros, which the initcheck
    /// counts as never written (allocated, not initialised by the host).
    #[serde(default)]
    pub init: Option<String>,
    /// Expected contents after the launch.
    #[serde(default)]
    pub expect: Option<String>,
}

/// The comparison of one buffer with its expected contents.
#[derive(Debug, Clone)]
pub struct BufferReport {
    /// The buffer's name.
    pub name: String,
    /// Its element type.
    pub dtype: Dtype,
    /// Elements compared.
    pub len: usize,
    /// Elements that differ (beyond the tolerance).
    pub mismatches: usize,
    /// Largest difference in units in the last place (floats) or in value (integers).
    pub max_ulp: u64,
    /// Largest absolute difference.
    pub max_abs: f64,
    /// The first mismatching index, with got and want.
    pub first_mismatch: Option<(usize, f64, f64)>,
}

impl BufferReport {
    /// Every element matches.
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }
}

/// The outcome of a case.
#[derive(Debug)]
pub struct CaseReport {
    /// The case.json path.
    pub path: PathBuf,
    /// The entry.
    pub entry: String,
    /// Per expected buffer.
    pub buffers: Vec<BufferReport>,
    /// The launch's error, if it stopped with one.
    pub error: Option<PtxError>,
    /// The fault class the case expects.
    pub expect_error: Option<String>,
    /// The launch's statistics (when it completed).
    pub stats: Option<LaunchStats>,
    /// The PTX module the case ran (resolved, with symbolic links followed).
    pub ptx_path: PathBuf,
}

impl CaseReport {
    /// The case passes: expected buffers all match, or the expected fault occurred.
    pub fn passed(&self) -> bool {
        match (&self.expect_error, &self.error) {
            (Some(class), Some(e)) => e
                .fault()
                .map(|f| f.class.as_str() == class)
                .unwrap_or(false),
            (Some(_), None) => false,
            (None, Some(_)) => false,
            (None, None) => self.buffers.iter().all(|b| b.passed()),
        }
    }
}

/// A case's element type, by [`Dtype::parse`]'s names.
fn dtype<'de, D: Deserializer<'de>>(d: D) -> Result<Dtype, D::Error> {
    let s = String::deserialize(d)?;
    Dtype::parse(&s).ok_or_else(|| {
        serde::de::Error::custom(format!("unknown dtype `{s}` (one of {})", Dtype::names()))
    })
}

/// Reads buffer file `file` of a case: a regular file of exactly `bytes`
/// bytes (never read further than that).
fn read_bin(
    dir: &Path,
    file: &str,
    bytes: u64,
    what: &str,
    copts: &CaseOptions,
) -> Result<Vec<u8>, PtxError> {
    let p = resolve(dir, file, what, copts)?;
    let data = read_file_limited(&p, bytes, what)?;
    if data.len() as u64 != bytes {
        return Err(PtxError::Case {
            path: p.display().to_string(),
            msg: format!("{what}: {} bytes, the case says {bytes}", data.len()),
        });
    }
    Ok(data)
}

/// The file `name` of the case in folder `dir`, with symbolic links resolved.
/// Unless `copts.allow_outside`, it must lie inside the case's folder or that
/// folder's parent (both resolved); the file is not opened otherwise.
pub fn resolve(
    dir: &Path,
    name: &str,
    what: &str,
    copts: &CaseOptions,
) -> Result<PathBuf, PtxError> {
    let joined = dir.join(name);
    let cerr = |msg: String| PtxError::Case {
        path: joined.display().to_string(),
        msg,
    };
    let target = joined
        .canonicalize()
        .map_err(|e| cerr(format!("{what}: {e}")))?;
    if copts.allow_outside {
        return Ok(target);
    }
    let case_dir = dir
        .canonicalize()
        .map_err(|e| cerr(format!("the case's folder: {e}")))?;
    let root = case_dir.parent().unwrap_or(&case_dir);
    if !target.starts_with(root) {
        return Err(cerr(format!(
            "{what} resolves to {}, outside the case's folder and its parent ({}); \
             --allow-outside (CaseOptions::allow_outside) allows it",
            target.display(),
            root.display()
        )));
    }
    Ok(target)
}

/// Compares `got` with `want`, element by element.
pub fn compare(
    name: &str,
    dtype: Dtype,
    got: &[u8],
    want: &[u8],
    exact: bool,
    rtol: f64,
    atol: f64,
) -> BufferReport {
    let es = dtype.size();
    let n = got.len().min(want.len()) / es;
    // In bounds: i < n, and both hold n elements.
    let bits = |data: &[u8], i: usize| dtype.bits_at(data, i).unwrap_or(0);
    let mut r = BufferReport {
        name: name.into(),
        dtype,
        len: n,
        mismatches: 0,
        max_ulp: 0,
        max_abs: 0.0,
        first_mismatch: None,
    };
    for i in 0..n {
        let (gb, wb) = (bits(got, i), bits(want, i));
        let (g, go) = (dtype.value_f64(gb), dtype.ordinal(gb));
        let (w, wo) = (dtype.value_f64(wb), dtype.ordinal(wb));
        let bits_eq = gb == wb;
        let ulp = (go - wo).unsigned_abs().min(u64::MAX as u128) as u64;
        let ok = if exact {
            bits_eq
        } else {
            bits_eq || (g.is_nan() && w.is_nan()) || (g - w).abs() <= atol + rtol * w.abs()
        };
        if !bits_eq {
            r.max_ulp = r.max_ulp.max(ulp);
            let d = (g - w).abs();
            if d.is_finite() {
                r.max_abs = r.max_abs.max(d);
            } else {
                r.max_abs = f64::INFINITY;
            }
        }
        if !ok {
            r.mismatches += 1;
            if r.first_mismatch.is_none() {
                r.first_mismatch = Some((i, g, w));
            }
        }
    }
    if got.len() != want.len() {
        r.mismatches += 1;
    }
    r
}

/// Reads a case.json: a regular file of at most [`MAX_CASE_JSON_BYTES`].
pub fn load_case(path: &Path) -> Result<Case, PtxError> {
    let bytes = read_file_limited(path, MAX_CASE_JSON_BYTES, "case.json")?;
    parse_case(&bytes).map_err(|msg| PtxError::Case {
        path: path.display().to_string(),
        msg,
    })
}

/// Parses the bytes of a case.json (UTF-8 JSON of the [`Case`] format).
pub fn parse_case(bytes: &[u8]) -> Result<Case, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 text ({e})"))?;
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// Runs the case at `path` (a case.json, or a folder holding one), its files
/// confined to the case's folder and its parent (see [`CaseOptions`]).
pub fn run_case(path: &Path, opts: &ExecOptions) -> Result<CaseReport, PtxError> {
    run_case_with(path, opts, &CaseOptions::default())
}

/// Runs the case at `path` with `copts`. Every size the case declares (buffer
/// lengths × element sizes, their total, the launch geometry) is checked
/// against `opts.limits` before anything is allocated, and files are read only
/// up to the size their declaration implies.
pub fn run_case_with(
    path: &Path,
    opts: &ExecOptions,
    copts: &CaseOptions,
) -> Result<CaseReport, PtxError> {
    run_case_on(path, opts, copts, &mut |m, entry, cfg, args, bufs, opts| {
        m.launch(entry, cfg, args, bufs, opts)
    })
}

/// How a case's launch is carried out: the module, entry, geometry, arguments,
/// global memory (updated in place) and options, as [`Module::launch`] takes
/// them. A fault comes back as [`PtxError::Fault`].
pub type Launcher<'a> = dyn FnMut(
        &Module,
        &str,
        &LaunchConfig,
        &[KernelArg],
        &mut [Vec<u8>],
        &ExecOptions,
    ) -> Result<LaunchStats, PtxError>
    + 'a;

/// [`run_case_with`] with the launch done by `launcher` (the interpreter, or a
/// compiled GPU kernel): the case's checks, files and comparisons are the same
/// for every backend.
pub fn run_case_on(
    path: &Path,
    opts: &ExecOptions,
    copts: &CaseOptions,
    launcher: &mut Launcher<'_>,
) -> Result<CaseReport, PtxError> {
    let path = if path.is_dir() {
        path.join("case.json")
    } else {
        path.to_path_buf()
    };
    let case = load_case(&path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let cerr = |msg: String| PtxError::Case {
        path: path.display().to_string(),
        msg,
    };
    if let Some(c) = &case.expect_error {
        if FaultClass::parse(c).is_none() {
            return Err(cerr(format!("unknown expect_error class `{c}`")));
        }
    }
    let ptx_path = resolve(&dir, &case.ptx, "`ptx`", copts)?;
    // Sizes first, all of them, before the module or any buffer is read.
    let l = &opts.limits;
    let mut sizes = Vec::new();
    for (name, b) in &case.buffers {
        let es = b.dtype.size();
        let what = format!(
            "{}: buffer `{name}` ({} × {})",
            path.display(),
            b.len,
            b.dtype
        );
        let bytes = l.bytes(&what, b.len as u64, es as u64)?;
        l.memory(&what, bytes)?;
        sizes.push(bytes);
    }
    let total = limits::sum(l, &format!("{}: the buffers", path.display()), &sizes)?;
    l.memory(&format!("{}: the buffers", path.display()), total)?;
    let module = Module::from_file(&ptx_path)?;
    let names: Vec<&String> = case.buffers.keys().collect();
    let mut bufs = Vec::new();
    for ((name, b), &bytes) in case.buffers.iter().zip(&sizes) {
        bufs.push(match &b.init {
            Some(f) => read_bin(&dir, f, bytes, &format!("buffer `{name}` init"), copts)?,
            None => vec![0u8; bytes as usize],
        });
    }
    let mut args = Vec::new();
    for (i, a) in case.args.iter().enumerate() {
        args.push(match a {
            CaseArg::Buffer { name } => KernelArg::Buffer(
                names
                    .iter()
                    .position(|n| *n == name)
                    .ok_or_else(|| cerr(format!("argument {i}: no buffer `{name}`")))?,
            ),
            CaseArg::Scalar { ty, value } => scalar(*ty, value)
                .ok_or_else(|| cerr(format!("argument {i}: bad {ty} scalar {value}")))?,
        });
    }
    let cfg = LaunchConfig {
        grid: case.grid.into(),
        block: case.block.into(),
        shared_bytes: case.shared_bytes,
    };
    let mut opts = opts.clone();
    if let Some(w) = case.watchdog {
        opts.watchdog = opts.watchdog.min(w);
    }
    opts.initcheck |= case.initcheck;
    opts.uninitialised_buffers = case
        .buffers
        .values()
        .enumerate()
        .filter(|(_, b)| b.init.is_none())
        .map(|(i, _)| i)
        .collect();
    opts.buffer_names = names.iter().map(|n| n.to_string()).collect();
    let mut report = CaseReport {
        path: path.clone(),
        entry: case.entry.clone(),
        buffers: Vec::new(),
        error: None,
        expect_error: case.expect_error.clone(),
        stats: None,
        ptx_path,
    };
    match launcher(&module, &case.entry, &cfg, &args, &mut bufs, &opts) {
        Err(e @ PtxError::Fault(_)) => report.error = Some(e),
        Err(e) => return Err(e),
        Ok(stats) => report.stats = Some(stats),
    }
    if report.error.is_none() {
        for ((name, b), got) in case.buffers.iter().zip(&bufs) {
            if let Some(f) = &b.expect {
                let what = format!("buffer `{name}` expect");
                let want = read_bin(&dir, f, got.len() as u64, &what, copts)?;
                report.buffers.push(compare(
                    name, b.dtype, got, &want, case.exact, case.rtol, case.atol,
                ));
            }
        }
    }
    Ok(report)
}

/// The types of a kernel's scalar arguments ([`scalar`]).
pub const SCALAR_TYPES: [Dtype; 6] = [
    Dtype::I32,
    Dtype::U32,
    Dtype::I64,
    Dtype::U64,
    Dtype::F32,
    Dtype::F64,
];

/// A scalar argument of type `ty` (`s32`, `u32`, `f32`, `s64`, `u64` or
/// `f64`) and value `v`; `None` for another type or a value it cannot hold.
pub fn scalar(ty: Dtype, v: &serde_json::Number) -> Option<KernelArg> {
    Some(match ty {
        Dtype::I32 => KernelArg::S32(i32::try_from(v.as_i64()?).ok()?),
        Dtype::U32 => KernelArg::U32(u32::try_from(v.as_u64()?).ok()?),
        Dtype::I64 => KernelArg::S64(v.as_i64()?),
        Dtype::U64 => KernelArg::U64(v.as_u64()?),
        Dtype::F32 => KernelArg::F32(v.as_f64()? as f32),
        Dtype::F64 => KernelArg::F64(v.as_f64()?),
        _ => return None,
    })
}
