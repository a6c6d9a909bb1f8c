//! Sharded ensembles (issue 14): one run's trajectories split into contiguous
//! slices that separate processes integrate (`vgpu ensemble --shard I/R` under
//! a job array, or the ranks of `mpirun`), and the pieces joined into the bytes
//! one process writes.
//!
//! * [`ShardSpec`] parses `I/R`; [`ShardSpec::range`] is the one rule for the
//!   slice `[lo, hi)` of shard `I`: whole units (blocks of the launch) split as
//!   `lo = units·I/R`, so slices are contiguous, deterministic and cover `0..N`.
//! * [`Part`]: a per-trajectory output (endpoints, save points, status, step
//!   counts) of a slice, as the rows it owns of an `(N, …)` `.npy`.
//! * [`ShardMeta`]: the sidecar `STEM.shard.json` of a shard's outputs (global
//!   range, total, shard, a hash of the field and every option that affects
//!   the result, output roles, dtypes and global shapes, VGPU version).
//! * [`merge`]: checks the sidecars (same run, complete non-overlapping cover,
//!   no duplicates, shapes agree) and writes each output once, whole or not at
//!   all, by copying every shard's data rows to their byte offset after the
//!   header: the same bytes as one process, without holding them in memory.

use crate::output::OutputSet;
use crate::Error;
use ndarray_npy::npy::header::{Header, Layout};
use ndarray_npy::write_npy;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use vgpu_field::Dtype;

/// Format tag of the sidecar (bumped if its meaning changes).
pub const SHARD_FORMAT: &str = "vgpu-shard-1";

fn usage(m: impl Into<String>) -> Error {
    Error::Usage(m.into())
}

fn io_err(path: &Path, m: impl Into<String>) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source: std::io::Error::other(m.into()),
    }
}

/// Shard `index` of `count` (0-based), as `--shard I/R` writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    /// This shard (0-based).
    pub index: usize,
    /// Shards in all.
    pub count: usize,
}

impl ShardSpec {
    /// Parses `I/R` (`0 ≤ I < R`).
    ///
    /// # Errors
    /// [`Error::Usage`] naming `--shard` for a malformed value, `R = 0` or `I ≥ R`.
    pub fn parse(s: &str) -> Result<ShardSpec, Error> {
        let bad = |why: &str| usage(format!("--shard {s:?}: {why}"));
        let (i, r) = s
            .split_once('/')
            .ok_or_else(|| bad("expected I/R (shard I of R, 0-based), e.g. 0/4"))?;
        let num = |x: &str| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| bad(&format!("{x:?} is not a whole number")))
        };
        let (index, count) = (num(i)?, num(r)?);
        if count == 0 {
            return Err(bad("R = 0 shards"));
        }
        if index >= count {
            return Err(bad(&format!(
                "shard {index} does not exist: shards are 0-based, 0..{count}"
            )));
        }
        Ok(ShardSpec { index, count })
    }

    /// The trajectories `[lo, hi)` of this shard among `total`, cut at
    /// multiples of `unit` (the launch's block: a slice is whole blocks):
    /// `lo = unit·⌊U·I/R⌋` for `U = ⌈total/unit⌉` units, clamped to `total`.
    ///
    /// # Errors
    /// [`Error::Usage`] when there are more shards than units (a shard would
    /// be empty), naming the units and the block option.
    pub fn range(&self, total: usize, unit: usize) -> Result<(usize, usize), Error> {
        let unit = unit.max(1);
        let units = total.div_ceil(unit);
        if self.count > units {
            let what = if unit == 1 {
                format!("{total} trajectories")
            } else {
                format!("{units} blocks of {unit} trajectories (N = {total}; a smaller --block gives more)")
            };
            return Err(usage(format!(
                "--shard {}/{}: {} shards of {what}: at most {units} shards",
                self.index, self.count, self.count
            )));
        }
        let cut = |k: usize| {
            let u = (units as u128 * k as u128 / self.count as u128) as usize;
            u.saturating_mul(unit).min(total)
        };
        Ok((cut(self.index), cut(self.index + 1)))
    }
}

/// Refuses to slice a kernel with flux outputs: they are sums over all
/// trajectories, which a slice cannot write bit-identically (`who` names the
/// slice in the message).
///
/// # Errors
/// [`Error::Usage`] naming the kernel and the slice.
pub fn refuse_flux(k: &vgpu_ir::Kernel, who: &str) -> Result<(), Error> {
    if k.fluxes.is_empty() {
        return Ok(());
    }
    Err(usage(format!(
        "{who}: kernel `{}` has flux outputs (sums over all trajectories); a slice cannot \
         write its share bit-identically: run it in one process",
        k.name
    )))
}

/// FNV-1a (64-bit): the run hash of sharded outputs. Stable across machines
/// and versions of Rust (unlike `std`'s hasher), so shards written on
/// different nodes compare.
#[derive(Debug, Clone)]
pub struct RunHash(u64);

impl Default for RunHash {
    fn default() -> Self {
        RunHash(0xcbf2_9ce4_8422_2325)
    }
}

impl RunHash {
    /// An empty hash.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds bytes, prefixed by their length (so `("ab", "c")` ≠ `("a", "bc")`).
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.mix(&(b.len() as u64).to_le_bytes());
        self.mix(b);
        self
    }
    /// Adds a file's contents (as [`RunHash::bytes`] of them), read in pieces
    /// of 1 MiB: a rank hashing a parameter file holds none of it whole.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file, also when it changes length while read.
    pub fn file(&mut self, path: &Path) -> Result<&mut Self, Error> {
        let err = |e: std::io::Error| Error::Io {
            path: path.display().to_string(),
            source: e,
        };
        let mut f = File::open(path).map_err(err)?;
        let len = f.metadata().map_err(err)?.len();
        self.mix(&len.to_le_bytes());
        let mut buf = vec![0u8; 1 << 20];
        let mut seen = 0u64;
        loop {
            let got = f.read(&mut buf).map_err(err)?;
            if got == 0 {
                break;
            }
            seen += got as u64;
            self.mix(&buf[..got]);
        }
        if seen != len {
            return Err(err(std::io::Error::other(format!(
                "changed while read: {len} bytes announced, {seen} read"
            ))));
        }
        Ok(self)
    }
    fn mix(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= x as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    /// The hash as 16 hex digits.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

/// A slice's rows of one per-trajectory output, in the output's dtype.
#[derive(Debug, Clone, PartialEq)]
pub enum PartData {
    /// `float32`.
    F32(Vec<f32>),
    /// `float64`.
    F64(Vec<f64>),
    /// `uint8` (status codes).
    U8(Vec<u8>),
    /// `uint64` (step counts).
    U64(Vec<u64>),
}

/// One per-trajectory output of a slice: `role` (`out`, `status`, `steps`),
/// its rows (trajectory-major) and the shape of one row.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// `out` (the `--out` file) or the companion's name (`STEM.ROLE.npy`).
    pub role: String,
    /// The slice's rows.
    pub data: PartData,
    /// The shape after the trajectory axis (`[D]`, `[K, D]`, `[]`, `[2]`).
    pub row: Vec<usize>,
}

macro_rules! by_type {
    ($data:expr, $v:ident => $e:expr) => {
        match $data {
            PartData::F32($v) => $e,
            PartData::F64($v) => $e,
            PartData::U8($v) => $e,
            PartData::U64($v) => $e,
        }
    };
}

impl Part {
    /// Elements of one row.
    pub fn row_len(&self) -> usize {
        self.row.iter().product()
    }
    /// The element type.
    pub fn elem_type(&self) -> Dtype {
        match self.data {
            PartData::F32(_) => Dtype::F32,
            PartData::F64(_) => Dtype::F64,
            PartData::U64(_) => Dtype::U64,
            PartData::U8(_) => Dtype::U8,
        }
    }
    /// Bytes of one element.
    pub fn elem_bytes(&self) -> usize {
        self.elem_type().size()
    }
    /// Rows held.
    pub fn rows(&self) -> usize {
        let len = by_type!(&self.data, v => v.len());
        len.checked_div(self.row_len()).unwrap_or(0)
    }
    /// The numpy dtype descriptor (`'<f4'`, …), as the `.npy` header spells it.
    pub fn dtype(&self) -> String {
        format!("'{}'", self.elem_type().npy_descr())
    }
    /// The shape of an array of `rows` rows.
    pub fn shape(&self, rows: usize) -> Vec<usize> {
        std::iter::once(rows)
            .chain(self.row.iter().copied())
            .collect()
    }
    /// Writes the rows as an `.npy` of shape `(rows, row…)`.
    ///
    /// # Errors
    /// The writer's message.
    pub fn write_npy(&self, path: &Path) -> Result<(), String> {
        let shape = ndarray::IxDyn(&self.shape(self.rows()));
        by_type!(&self.data, v => {
            let a = ndarray::ArrayD::from_shape_vec(shape, v.clone()).map_err(|e| e.to_string())?;
            write_npy(path, &a).map_err(|e| e.to_string())
        })
    }
    /// Creates `file` as a zeroed `.npy` of `total` rows (the header the
    /// single-process writer writes); returns the byte offset of its data.
    ///
    /// # Errors
    /// The writer's message.
    pub fn write_header(&self, file: &File, total: usize) -> Result<u64, String> {
        crate::npy::write_zeroed(file, self.elem_type(), &self.shape(total))?;
        data_offset(file, total as u64 * self.row_bytes())
    }
    /// The rows as little-endian bytes (the `.npy` data of the slice).
    pub fn le_bytes(&self) -> Vec<u8> {
        match &self.data {
            PartData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            PartData::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            PartData::U8(v) => v.clone(),
            PartData::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }
    /// Bytes of one row.
    pub fn row_bytes(&self) -> u64 {
        (self.row_len() * self.elem_bytes()) as u64
    }
}

/// The byte offset of a zeroed `.npy`'s data of `data_bytes` bytes: its
/// header's length (the file's length less the data's).
fn data_offset(file: &File, data_bytes: u64) -> Result<u64, String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    len.checked_sub(data_bytes)
        .ok_or_else(|| "the .npy is shorter than its data".to_string())
}

/// Where an output of role `role` goes beside `out` (`out` itself for `out`).
pub fn role_path(out: &Path, role: &str) -> PathBuf {
    if role == "out" {
        return out.to_path_buf();
    }
    PathBuf::from(format!("{}.{role}.npy", out.with_extension("").display()))
}

/// The sidecar of the shard whose `--out` is `out`: `STEM.shard.json`.
pub fn sidecar_path(out: &Path) -> PathBuf {
    PathBuf::from(format!("{}.shard.json", out.with_extension("").display()))
}

/// One output of a shard as its sidecar records it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputMeta {
    /// `out`, `status`, `steps`.
    pub role: String,
    /// The file's name (beside the sidecar).
    pub file: String,
    /// numpy dtype descriptor.
    pub dtype: String,
    /// Shape of the whole run's array (`N` first).
    pub shape: Vec<usize>,
}

/// The sidecar `STEM.shard.json` of one shard.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardMeta {
    /// VGPU's version that wrote it.
    pub version: String,
    /// Hash of the field source and every option that affects the result.
    pub run_hash: String,
    /// The field's name.
    pub field: String,
    /// The executor that ran it (`cpu`).
    pub backend: String,
    /// This shard.
    pub shard: ShardSpec,
    /// Its trajectories `[lo, hi)`.
    pub range: (usize, usize),
    /// Trajectories of the whole run.
    pub total: usize,
    /// Its outputs.
    pub outputs: Vec<OutputMeta>,
}

impl ShardMeta {
    /// The sidecar's JSON text.
    pub fn to_json(&self) -> String {
        let outputs: Vec<serde_json::Value> = self
            .outputs
            .iter()
            .map(|o| {
                serde_json::json!({"role": o.role, "file": o.file, "dtype": o.dtype, "shape": o.shape})
            })
            .collect();
        let j = serde_json::json!({
            "format": SHARD_FORMAT, "version": self.version, "run_hash": self.run_hash,
            "field": self.field, "backend": self.backend,
            "shard": [self.shard.index, self.shard.count],
            "range": [self.range.0, self.range.1], "total": self.total, "outputs": outputs,
        });
        format!("{j:#}\n")
    }

    /// Reads a sidecar.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file: unreadable, not JSON, or a field missing.
    pub fn read(path: &Path) -> Result<ShardMeta, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            io_err(
                path,
                format!("{e} (the shard metadata `vgpu ensemble --shard` writes beside its --out)"),
            )
        })?;
        let j: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| io_err(path, format!("not shard metadata: {e}")))?;
        let bad = |what: &str| {
            io_err(
                path,
                format!("not shard metadata: `{what}` missing or malformed"),
            )
        };
        let s = |k: &str| j[k].as_str().map(str::to_string).ok_or_else(|| bad(k));
        let u =
            |v: &serde_json::Value, k: &str| v.as_u64().map(|x| x as usize).ok_or_else(|| bad(k));
        if j["format"].as_str() != Some(SHARD_FORMAT) {
            return Err(bad("format"));
        }
        let outputs = j["outputs"]
            .as_array()
            .ok_or_else(|| bad("outputs"))?
            .iter()
            .map(|o| {
                Ok(OutputMeta {
                    role: o["role"]
                        .as_str()
                        .ok_or_else(|| bad("outputs.role"))?
                        .into(),
                    file: o["file"]
                        .as_str()
                        .ok_or_else(|| bad("outputs.file"))?
                        .into(),
                    dtype: o["dtype"]
                        .as_str()
                        .ok_or_else(|| bad("outputs.dtype"))?
                        .into(),
                    shape: o["shape"]
                        .as_array()
                        .ok_or_else(|| bad("outputs.shape"))?
                        .iter()
                        .map(|x| u(x, "outputs.shape"))
                        .collect::<Result<_, _>>()?,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(ShardMeta {
            version: s("version")?,
            run_hash: s("run_hash")?,
            field: s("field")?,
            backend: s("backend")?,
            shard: ShardSpec {
                index: u(&j["shard"][0], "shard")?,
                count: u(&j["shard"][1], "shard")?,
            },
            range: (u(&j["range"][0], "range")?, u(&j["range"][1], "range")?),
            total: u(&j["total"], "total")?,
            outputs,
        })
    }
}

/// The sidecar of a shard named on `vgpu merge`'s command line: the
/// `.shard.json` itself, or the shard's `--out` file.
pub fn sidecar_of(arg: &Path) -> PathBuf {
    if arg.to_string_lossy().ends_with(".shard.json") {
        arg.to_path_buf()
    } else {
        sidecar_path(arg)
    }
}

/// What [`merge`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeReport {
    /// Trajectories of the run.
    pub total: usize,
    /// Shards joined.
    pub shards: usize,
    /// Files written, with their shapes.
    pub files: Vec<(PathBuf, Vec<usize>)>,
}

/// Joins the shards named by `args` (their `--out` files or sidecars) into
/// `out` and its companions: the bytes one process writes. Every check runs
/// before anything is written; the outputs appear together or not at all.
///
/// # Errors
/// [`Error::Usage`] naming the shard file: metadata of another run (hash,
/// total, shard count, field, backend, outputs differ), a duplicate, a
/// missing shard (its range named), a data file whose header or size does
/// not match its metadata; [`Error::Io`] for reads and writes.
pub fn merge(args: &[PathBuf], out: &Path) -> Result<MergeReport, Error> {
    if args.is_empty() {
        return Err(usage("merge: no shards given"));
    }
    let mut shards: Vec<(PathBuf, ShardMeta)> = args
        .iter()
        .map(|a| {
            let side = sidecar_of(a);
            ShardMeta::read(&side).map(|m| (side, m))
        })
        .collect::<Result<_, _>>()?;
    let (p0, m0) = shards[0].clone();
    for (p, m) in &shards[1..] {
        let differ = |what: &str, a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| {
            usage(format!(
                "merge: {} is from another run than {}: {what} {a:?} ≠ {b:?}; nothing written",
                p.display(),
                p0.display()
            ))
        };
        if m.run_hash != m0.run_hash {
            return Err(differ(
                "run hash (field and options)",
                &m.run_hash,
                &m0.run_hash,
            ));
        }
        if m.total != m0.total {
            return Err(differ("trajectories", &m.total, &m0.total));
        }
        if m.shard.count != m0.shard.count {
            return Err(differ("shard count", &m.shard.count, &m0.shard.count));
        }
        if m.backend != m0.backend {
            return Err(differ("backend", &m.backend, &m0.backend));
        }
        let roles = |m: &ShardMeta| {
            m.outputs
                .iter()
                .map(|o| (o.role.clone(), o.dtype.clone(), o.shape.clone()))
                .collect::<Vec<_>>()
        };
        if roles(m) != roles(&m0) {
            return Err(differ("outputs", &roles(m), &roles(&m0)));
        }
    }
    shards.sort_by_key(|(_, m)| (m.shard.index, m.range));
    for w in shards.windows(2) {
        if w[0].1.shard.index == w[1].1.shard.index {
            return Err(usage(format!(
                "merge: shard {}/{} given twice ({} and {}); nothing written",
                w[0].1.shard.index,
                w[0].1.shard.count,
                w[0].0.display(),
                w[1].0.display()
            )));
        }
    }
    let mut at = 0;
    for (p, m) in &shards {
        let (lo, hi) = m.range;
        if lo > at {
            return Err(usage(format!(
                "merge: trajectories {at}..{lo} of {} are missing (a shard before {} of {}); nothing written",
                m0.total,
                m.shard.index,
                m.shard.count
            )));
        }
        if lo < at || hi < lo || hi > m0.total {
            return Err(usage(format!(
                "merge: {} covers trajectories {lo}..{hi}, which overlap or leave 0..{}; nothing written",
                p.display(),
                m0.total
            )));
        }
        at = hi;
    }
    if at != m0.total {
        let have: Vec<usize> = shards.iter().map(|(_, m)| m.shard.index).collect();
        let missing: Vec<String> = (0..m0.shard.count)
            .filter(|i| !have.contains(i))
            .map(|i| format!("{i}/{}", m0.shard.count))
            .collect();
        return Err(usage(format!(
            "merge: trajectories {at}..{} are missing (shard {} not given); nothing written",
            m0.total,
            missing.join(", ")
        )));
    }
    // Every shard's data file: its header must be the slice of the output.
    let mut plan = Vec::new();
    for o in &m0.outputs {
        let mut sources = Vec::new();
        for (side, m) in &shards {
            let file = side.with_file_name(
                m.outputs
                    .iter()
                    .find(|x| x.role == o.role)
                    .map(|x| x.file.clone())
                    .unwrap_or_default(),
            );
            let rows = m.range.1 - m.range.0;
            let offset = check_data(&file, &o.dtype, &o.shape, rows)?;
            sources.push((file, offset, m.range));
        }
        plan.push((o, sources));
    }
    let mut set = OutputSet::new();
    let mut files = Vec::new();
    for (o, sources) in &plan {
        let dest = role_path(out, &o.role);
        set.write(&dest, |tmp| {
            let f = File::create(tmp).map_err(|e| e.to_string())?;
            let base = zeroed_like(&f, &o.dtype, &o.shape)?;
            let row_bytes = row_bytes(&o.dtype, &o.shape)?;
            let mut f = f;
            for (src, off, (lo, hi)) in sources {
                let mut r = File::open(src).map_err(|e| format!("{}: {e}", src.display()))?;
                r.seek(SeekFrom::Start(*off)).map_err(|e| e.to_string())?;
                f.seek(SeekFrom::Start(base + *lo as u64 * row_bytes))
                    .map_err(|e| e.to_string())?;
                let len = (*hi - *lo) as u64 * row_bytes;
                let copied = std::io::copy(&mut r.take(len), &mut f).map_err(|e| e.to_string())?;
                if copied != len {
                    return Err(format!("{}: shorter than its header says", src.display()));
                }
            }
            f.flush().map_err(|e| e.to_string())
        })?;
        files.push((dest, o.shape.clone()));
    }
    set.commit()?;
    Ok(MergeReport {
        total: m0.total,
        shards: shards.len(),
        files,
    })
}

/// The element type of an output's dtype descriptor in shard metadata.
fn written_dtype(descr: &str) -> Result<Dtype, String> {
    Dtype::from_npy_descr(descr)
        .filter(|d| *d != Dtype::F16)
        .ok_or_else(|| format!("dtype {descr} is not one vgpu writes"))
}

/// Bytes of one row of an output of `dtype` and whole shape `shape`.
fn row_bytes(dtype: &str, shape: &[usize]) -> Result<u64, String> {
    let elem = written_dtype(dtype)?.size() as u64;
    shape[1..]
        .iter()
        .try_fold(elem, |a, &x| a.checked_mul(x as u64))
        .ok_or_else(|| format!("shape {shape:?} overflows"))
}

/// Creates the zeroed `.npy` of `dtype` and `shape`; returns its data offset.
fn zeroed_like(file: &File, dtype: &str, shape: &[usize]) -> Result<u64, String> {
    crate::npy::write_zeroed(file, written_dtype(dtype)?, shape)?;
    data_offset(file, shape[0] as u64 * row_bytes(dtype, shape)?)
}

/// Checks that `file` is an `.npy` of `dtype`, C order, shape `(rows,
/// shape[1..])` and the size that says; returns the offset of its data.
fn check_data(file: &Path, dtype: &str, shape: &[usize], rows: usize) -> Result<u64, Error> {
    let mut f = File::open(file).map_err(|e| Error::Io {
        path: file.display().to_string(),
        source: e,
    })?;
    let h =
        Header::from_reader(&mut f).map_err(|e| io_err(file, format!("not a .npy file: {e}")))?;
    let want: Vec<usize> = std::iter::once(rows)
        .chain(shape[1..].iter().copied())
        .collect();
    let d = h.type_descriptor.to_string();
    if d != dtype || h.shape != want || matches!(h.layout, Layout::Fortran) {
        return Err(usage(format!(
            "merge: {}: dtype {d}, shape {:?}, but its shard metadata says dtype {dtype}, shape {want:?}; nothing written",
            file.display(),
            h.shape
        )));
    }
    let offset = f.stream_position().map_err(|e| Error::Io {
        path: file.display().to_string(),
        source: e,
    })?;
    let rb = row_bytes(dtype, shape).map_err(|e| io_err(file, e))?;
    let need = (rows as u64)
        .checked_mul(rb)
        .and_then(|b| b.checked_add(offset))
        .ok_or_else(|| io_err(file, "size overflows"))?;
    let len = f
        .metadata()
        .map_err(|e| Error::Io {
            path: file.display().to_string(),
            source: e,
        })?
        .len();
    if len != need {
        return Err(usage(format!(
            "merge: {} has {len} bytes, its header says {need}: truncated or altered; nothing written",
            file.display()
        )));
    }
    Ok(offset)
}

/// Rows `lo..hi` of a numeric `.npy` (little-endian f64, f32, i64 or i32,
/// C order) as `f64`s, reading only those rows: the header is parsed, `check`
/// judges its shape (the caller's message for a wrong one), the file's size
/// is checked against the header, the rows' bytes against `limits`, and only
/// then are they allocated and read at `offset + lo · row bytes`. What a
/// slice reads of `--u0` and `--tspan`.
///
/// # Errors
/// [`Error::Io`] naming the file: not a `.npy`, another element type or
/// order, rows beyond its first axis, a size that does not match its header;
/// `check`'s error; [`Error::Limit`] beyond `limits`.
pub fn read_npy_rows(
    path: &Path,
    lo: usize,
    hi: usize,
    limits: &crate::Limits,
    check: &dyn Fn(&[usize]) -> Result<(), Error>,
) -> Result<Vec<f64>, Error> {
    let io = |e: std::io::Error| Error::Io {
        path: path.display().to_string(),
        source: e,
    };
    let mut f = File::open(path).map_err(io)?;
    let h =
        Header::from_reader(&mut f).map_err(|e| io_err(path, format!("not a .npy file: {e}")))?;
    check(&h.shape)?;
    let d = h.type_descriptor.to_string();
    let Some(dt) = Dtype::from_npy_descr(&d)
        .filter(|t| matches!(t, Dtype::F64 | Dtype::I64 | Dtype::F32 | Dtype::I32))
    else {
        return Err(io_err(
            path,
            format!("dtype {d}: a slice reads little-endian f64, f32, i64 or i32 rows"),
        ));
    };
    let elem = dt.size() as u64;
    if matches!(h.layout, Layout::Fortran) && h.shape.len() > 1 {
        return Err(io_err(
            path,
            "Fortran order: a slice reads C-order rows (numpy.ascontiguousarray before numpy.save)",
        ));
    }
    let rows = h.shape.first().copied().unwrap_or(1);
    if lo > hi || hi > rows {
        return Err(io_err(
            path,
            format!("rows {lo}..{hi} of an array of {rows} rows"),
        ));
    }
    let row_elems = h
        .shape
        .iter()
        .skip(1)
        .try_fold(1u64, |a, &x| a.checked_mul(x as u64));
    let offset = f.stream_position().map_err(io)?;
    let sizes = row_elems.and_then(|r| {
        let row = r.checked_mul(elem)?;
        let total = row.checked_mul(rows as u64)?.checked_add(offset)?;
        Some((row, total))
    });
    let Some((row_bytes, total)) = sizes else {
        return Err(io_err(path, format!("shape {:?} overflows", h.shape)));
    };
    let len = f.metadata().map_err(io)?.len();
    if len != total {
        return Err(io_err(
            path,
            format!("{len} bytes, its header says {total}: truncated or altered"),
        ));
    }
    let what = format!("{} rows {lo}..{hi}", path.display());
    let bytes = limits.bytes(&what, (hi - lo) as u64, row_bytes)?;
    limits.memory(&what, bytes.saturating_mul(2))?;
    let mut raw = vec![0u8; bytes as usize];
    f.seek(SeekFrom::Start(offset + lo as u64 * row_bytes))
        .and_then(|_| f.read_exact(&mut raw))
        .map_err(io)?;
    Ok((0..raw.len() / dt.size())
        .map(|i| dt.value_f64(dt.bits_at(&raw, i).unwrap_or(0)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_refuse() {
        assert_eq!(
            ShardSpec::parse("1/4").unwrap(),
            ShardSpec { index: 1, count: 4 }
        );
        for bad in ["1", "a/2", "2/2", "0/0", "-1/2", "1/2/3", ""] {
            let e = ShardSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains("--shard"), "{bad}: {e}");
        }
    }

    #[test]
    fn ranges_are_whole_units_and_cover() {
        for (total, unit, count) in [(1000, 256, 3), (10, 1, 10), (7, 1, 3), (1024, 64, 16)] {
            let mut at = 0;
            for index in 0..count {
                let (lo, hi) = ShardSpec { index, count }.range(total, unit).unwrap();
                assert_eq!(lo, at);
                assert!(hi > lo, "{total} {unit} {count}: empty shard {index}");
                assert!(lo % unit == 0);
                at = hi;
            }
            assert_eq!(at, total);
        }
        let e = ShardSpec { index: 0, count: 5 }
            .range(1000, 256)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 4 shards"), "{e}");
    }

    #[test]
    fn a_slice_reads_only_its_rows() {
        let d = std::env::temp_dir().join(format!("vgpu-shard-rows-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let a = ndarray::Array2::from_shape_fn((7, 3), |(i, j)| (10 * i + j) as f32);
        let p = d.join("a.npy");
        write_npy(&p, &a).unwrap();
        let ok = |_: &[usize]| Ok(());
        let l = crate::Limits::default();
        let v = read_npy_rows(&p, 2, 5, &l, &ok).unwrap();
        let want: Vec<f64> = a
            .slice(ndarray::s![2..5, ..])
            .iter()
            .map(|&x| x as f64)
            .collect();
        assert_eq!(v, want);
        assert!(read_npy_rows(&p, 5, 8, &l, &ok).is_err());
        let refuse = |s: &[usize]| Err(usage(format!("shape {s:?}")));
        let e = read_npy_rows(&p, 0, 1, &l, &refuse)
            .unwrap_err()
            .to_string();
        assert!(e.contains("[7, 3]"), "{e}");
        // Cut short: refused before any row is read.
        let b = std::fs::read(&p).unwrap();
        std::fs::write(&p, &b[..b.len() - 4]).unwrap();
        let e = read_npy_rows(&p, 0, 1, &l, &ok).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
    }

    #[test]
    fn a_file_hashes_as_its_bytes_read_in_pieces() {
        let d = std::env::temp_dir().join(format!("vgpu-shard-hash-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let b: Vec<u8> = (0..(3u32 << 19)).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(d.join("f.bin"), &b).unwrap();
        let mut a = RunHash::new();
        a.file(&d.join("f.bin")).unwrap();
        let mut want = RunHash::new();
        want.bytes(&b);
        assert_eq!(a.hex(), want.hex());
        let mut other = RunHash::new();
        other.bytes(&b[1..]);
        assert_ne!(a.hex(), other.hex());
    }

    #[test]
    fn the_header_is_the_single_writers() {
        let d = std::env::temp_dir().join(format!("vgpu-shard-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = Part {
            role: "out".into(),
            data: PartData::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
            row: vec![3],
        };
        let whole = d.join("whole.npy");
        p.write_npy(&whole).unwrap();
        let f = File::create(d.join("z.npy")).unwrap();
        let off = p.write_header(&f, 2).unwrap();
        let mut bytes = std::fs::read(d.join("z.npy")).unwrap();
        bytes[off as usize..].copy_from_slice(&p.le_bytes());
        assert_eq!(bytes, std::fs::read(&whole).unwrap());
        assert_eq!(p.dtype(), "'<f4'");
    }
}
