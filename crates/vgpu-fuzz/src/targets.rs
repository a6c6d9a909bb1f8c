//! The targets: each runs one input through VGPU's public API with small
//! limits. `Ok` is an input accepted or refused with a clean error; `Err`
//! describes an error that stands for a bug (panics are caught by
//! [`crate::check`]).

use std::path::{Path, PathBuf};

use ndarray::{Array1, ArrayD};
use ndarray_npy::read_npy;
use vgpu_ir::wgsl::phased::{emit_wgsl_phased, PhasedLayout};
use vgpu_ir::{
    compile_all, emit_wgsl, run_cpu_with, validate_wgsl, Args, Buffer, Integration, IrError,
    Kernel, Method, Par, ScalarType, Value,
};
use vgpu_ptx::{ExecOptions, KernelArg, LaunchConfig, Module};

use crate::{Corpus, FuzzError, Target};

/// What a target did with an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It went through every stage.
    Accepted,
    /// A stage refused it with a clean error.
    Rejected,
}

/// The `.field` target's limits: a fuzzed kernel may ask for anything; the
/// run stays tiny.
const IR_LIMITS: vgpu_ir::Limits = vgpu_ir::Limits {
    max_shared_bytes: 16 * 1024,
    max_flux_elements: 1 << 12,
    max_phase_repetitions: 32,
    max_phase_steps: 64,
    // naga's time grows with the square of a shader's size: 256 KiB is well
    // under a second (docs/FUZZING.md).
    max_wgsl_bytes: 256 << 10,
};

/// Host memory any launch, case or `.npy` may take: 64 MiB.
const MAX_MEMORY: u64 = 64 << 20;

/// Runs inputs of one target; owns a scratch folder (removed on drop) for the
/// targets that read files.
#[derive(Debug)]
pub struct Runner {
    target: Target,
    dir: PathBuf,
    /// case-json: the seeds, to find the folder a mutant came from.
    case_seeds: Vec<Vec<u8>>,
}

impl Drop for Runner {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn io(path: &Path, source: std::io::Error) -> FuzzError {
    FuzzError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl Runner {
    /// A runner for `corpus.target`; the case-json target copies the files of
    /// every seed case into its scratch folder.
    pub fn new(corpus: &Corpus) -> Result<Runner, FuzzError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "vgpu-fuzz-{}-{}-{}",
            corpus.target.name(),
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let mut r = Runner {
            target: corpus.target,
            dir,
            case_seeds: Vec::new(),
        };
        if corpus.target != Target::CaseJson {
            return Ok(r);
        }
        for i in 0..corpus.seeds.len() {
            let d = r.dir.join(format!("c{i}"));
            std::fs::create_dir_all(&d).map_err(|e| io(&d, e))?;
        }
        for f in &corpus.case_files {
            let p = r.dir.join(&f.path);
            std::fs::write(&p, &f.bytes).map_err(|e| io(&p, e))?;
        }
        r.case_seeds = corpus.seeds.clone();
        Ok(r)
    }

    /// The target this runner runs.
    pub fn target(&self) -> Target {
        self.target
    }

    /// Runs `input`; `Err` names an error that stands for a bug.
    pub fn run(&mut self, input: &[u8]) -> Result<Outcome, String> {
        match self.target {
            Target::Field => field(input),
            Target::Ptx => ptx(input),
            Target::CaseJson => self.case_json(input),
            Target::Npy => self.npy(input),
        }
    }

    /// Writes the mutant case.json into the folder of the seed it shares the
    /// longest prefix plus suffix with (a function of the input alone), and
    /// runs it.
    fn case_json(&mut self, input: &[u8]) -> Result<Outcome, String> {
        let common = |s: &[u8]| {
            let p = s.iter().zip(input).take_while(|(a, b)| a == b).count();
            let q = s
                .iter()
                .rev()
                .zip(input.iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            p + q
        };
        let best = (0..self.case_seeds.len())
            .max_by_key(|&i| (common(&self.case_seeds[i]), std::cmp::Reverse(i)))
            .unwrap_or(0);
        let path = self.dir.join(format!("c{best}")).join("case.json");
        if let Err(e) = std::fs::write(&path, input) {
            return Err(format!(
                "the harness could not write {}: {e}",
                path.display()
            ));
        }
        let opts = ExecOptions {
            watchdog: 200_000,
            parallel: false,
            limits: vgpu_ptx::Limits {
                max_memory: MAX_MEMORY,
                max_threads: 1 << 14,
            },
            ..ExecOptions::default()
        };
        Ok(
            match vgpu_ptx::run_case_with(&path, &opts, &vgpu_ptx::CaseOptions::default()) {
                Ok(_) => Outcome::Accepted,
                Err(_) => Outcome::Rejected,
            },
        )
    }

    /// The CLI's `.npy` path: the header check of `vgpu::Limits::npy`, then,
    /// when it passes, the reads `vgpu ensemble` (1-D) and `vgpu ptx run`
    /// (any shape) do.
    fn npy(&mut self, input: &[u8]) -> Result<Outcome, String> {
        let path = self.dir.join("in.npy");
        if let Err(e) = std::fs::write(&path, input) {
            return Err(format!(
                "the harness could not write {}: {e}",
                path.display()
            ));
        }
        let limits = vgpu::Limits {
            max_memory: MAX_MEMORY,
            max_steps: 1000,
            max_threads: 1,
        };
        let Ok(shape) = limits.npy(&path) else {
            return Ok(Outcome::Rejected);
        };
        let mut read = 0;
        if shape.len() == 1 {
            read += usize::from(read_npy::<_, Array1<f32>>(&path).is_ok());
            read += usize::from(read_npy::<_, Array1<f64>>(&path).is_ok());
            read += usize::from(read_npy::<_, Array1<i32>>(&path).is_ok());
            read += usize::from(read_npy::<_, Array1<u32>>(&path).is_ok());
            read += usize::from(read_npy::<_, Array1<i64>>(&path).is_ok());
        }
        read += usize::from(read_npy::<_, ArrayD<f32>>(&path).is_ok());
        read += usize::from(read_npy::<_, ArrayD<f64>>(&path).is_ok());
        read += usize::from(read_npy::<_, ArrayD<i32>>(&path).is_ok());
        read += usize::from(read_npy::<_, ArrayD<u32>>(&path).is_ok());
        read += usize::from(read_npy::<_, ArrayD<i64>>(&path).is_ok());
        read += usize::from(read_npy::<_, ArrayD<u64>>(&path).is_ok());
        read += usize::from(read_npy::<_, ArrayD<u8>>(&path).is_ok());
        read += usize::from(read_npy::<_, ArrayD<i8>>(&path).is_ok());
        Ok(if read > 0 {
            Outcome::Accepted
        } else {
            Outcome::Rejected
        })
    }
}

/// Arguments for every parameter: buffers of 16 small elements (negative ones
/// for `i32`, so indices go out of range), scalars 2 (or 1.5, true).
fn field_args(k: &Kernel) -> Result<Args, String> {
    let mut a = Args::new(k);
    for p in &k.params {
        let r = if p.buffer {
            let b: Buffer = match p.ty {
                ScalarType::F32 => (0..16).map(|i| i as f32 * 0.25).collect::<Vec<_>>().into(),
                ScalarType::F64 => (0..16).map(|i| i as f64 * 0.25).collect::<Vec<_>>().into(),
                ScalarType::I32 => (0..16).map(|i| i % 5 - 2).collect::<Vec<i32>>().into(),
                _ => (0..16).map(|i| i % 5).collect::<Vec<u32>>().into(),
            };
            a.buffer(&p.name, b)
        } else {
            let v = match p.ty {
                ScalarType::F32 => Value::F32(1.5),
                ScalarType::F64 => Value::F64(1.5),
                ScalarType::I32 => Value::I32(2),
                ScalarType::U32 => Value::U32(2),
                ScalarType::Bool => Value::Bool(true),
            };
            a.scalar(&p.name, v)
        };
        r.map_err(|e| format!("argument `{}` of a checked kernel: {e}", p.name))?;
    }
    Ok(a)
}

/// `Err` with a description when `e` stands for a bug rather than bad input:
/// a parse, type or limit error without a place, an ill-formed kernel, WGSL
/// naga refuses, a parameter mismatch for arguments built from the kernel.
fn ir_error(stage: &str, e: IrError) -> Result<(), String> {
    match e {
        IrError::Parse { pos, .. } | IrError::Type { pos, .. } | IrError::Limit { pos, .. }
            if pos.line >= 1 && pos.col >= 1 =>
        {
            Ok(())
        }
        IrError::OutOfBounds { .. }
        | IrError::NonFinite { .. }
        | IrError::Launch { .. }
        | IrError::Conflict { .. }
        | IrError::Unsupported { .. } => Ok(()),
        e => Err(format!("{stage}: {e}")),
    }
}

/// `.field`: compile every field, run 8 trajectories of 2 steps (Euler, RK4)
/// on the CPU, emit WGSL (phased or not) and validate it with naga.
fn field(input: &[u8]) -> Result<Outcome, String> {
    let Ok(src) = std::str::from_utf8(input) else {
        return Ok(Outcome::Rejected);
    };
    let kernels = match compile_all("fuzz.field", src) {
        Ok(ks) => ks,
        Err(e) => return ir_error("compile", e).map(|()| Outcome::Rejected),
    };
    let mut outcome = Outcome::Accepted;
    let mut refused = |r: Result<(), String>| {
        outcome = Outcome::Rejected;
        r
    };
    for k in &kernels {
        let args = field_args(k)?;
        let integ = |m: Method| {
            Integration::new(8, 0.0, 2.0, 1.0)
                .method(m)
                .block(4)
                .par(Par::Seq)
        };
        for m in [Method::Euler, Method::Rk4] {
            if let Err(e) = run_cpu_with(k, &args, &integ(m), &IR_LIMITS) {
                refused(ir_error("run_cpu", e))?;
            }
        }
        let wgsl = if k.is_phased() {
            PhasedLayout::new_with(k, &args, &integ(Method::Rk4), &IR_LIMITS)
                .and_then(|l| emit_wgsl_phased(k, Method::Rk4, &l))
                .map(|w| w.source)
        } else {
            emit_wgsl(k, &Method::Rk4.tableau(), 4)
        };
        // As the GPU backend does: the shader's size checked before naga.
        match wgsl.and_then(|w| IR_LIMITS.check_wgsl(k, &w).map(|()| w)) {
            Ok(w) => validate_wgsl(&k.name, &w)
                .map_err(|e| format!("naga refused the WGSL of a checked kernel: {e}"))?,
            Err(e) => refused(ir_error("wgsl", e))?,
        }
    }
    Ok(outcome)
}

/// PTX: parse, then decode and launch every entry on 2 blocks of 32 threads:
/// 8-byte parameters get a zeroed 4 KiB buffer (f64 a scalar), others a small
/// scalar chosen by the input's hash; a small watchdog and memory limit.
fn ptx(input: &[u8]) -> Result<Outcome, String> {
    let Ok(text) = std::str::from_utf8(input) else {
        return Ok(Outcome::Rejected);
    };
    let Ok(m) = Module::parse(text, "fuzz.ptx") else {
        return Ok(Outcome::Rejected);
    };
    let scalar = [0u32, 1, 32, 1000, u32::MAX][(crate::rng::fnv1a(input) % 5) as usize];
    let opts = ExecOptions {
        watchdog: 20_000,
        parallel: false,
        limits: vgpu_ptx::Limits {
            max_memory: MAX_MEMORY,
            max_threads: 1 << 12,
        },
        ..ExecOptions::default()
    };
    let mut outcome = Outcome::Rejected;
    for e in m.entries() {
        let Ok(k) = m.kernel(e) else { continue };
        let mut bufs = Vec::new();
        let args: Vec<KernelArg> = k
            .params
            .iter()
            .map(|p| match (p.size, p.ty.as_str()) {
                (8, "f64") => KernelArg::F64(scalar as f64),
                (8, _) => {
                    bufs.push(vec![0u8; 4096]);
                    KernelArg::Buffer(bufs.len() - 1)
                }
                (_, "f32") => KernelArg::F32(scalar as f32),
                _ => KernelArg::U32(scalar),
            })
            .collect();
        let cfg = LaunchConfig {
            grid: [2, 1, 1].into(),
            block: [32, 1, 1].into(),
            shared_bytes: 256,
        };
        if vgpu_ptx::launch(&k, &cfg, &args, &mut bufs, &opts).is_ok() {
            outcome = Outcome::Accepted;
        }
    }
    Ok(outcome)
}
