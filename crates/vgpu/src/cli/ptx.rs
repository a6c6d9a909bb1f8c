//! `vgpu ptx run …` and `vgpu ptx trace …`: run nvcc's PTX on the CPU, checked,
//! or (`--backend gpu|auto`) compiled for the GPU through wgpu.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use vgpu::limits::{parse_size, Limits};
use vgpu::output::OutputSet;
use vgpu::ptx::{self, ExecOptions, KernelArg, LaunchConfig, Module, TraceTarget};
use vgpu::ptx_gpu::PtxRunner;
use vgpu::{Dtype, Error};

/// `vgpu ptx …` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum PtxCommand {
    /// Run a case (case.json, its folder, or a folder of case folders) and compare
    /// with the expected outputs; or run FILE.ptx with --entry/--grid/--block/--arg.
    /// Exit status 0 exactly when every case passes.
    Run(RunArgs),
    /// Run like `run`, printing one thread's trajectory: after each instruction, the
    /// registers it changed.
    Trace(TraceArgs),
}

/// Options of `vgpu ptx run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// A case.json, a case folder, a folder of case folders, or a .ptx file.
    pub input: PathBuf,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// Options of `vgpu ptx trace`.
#[derive(Debug, Args)]
pub(crate) struct TraceArgs {
    /// A case.json (or its folder) or a .ptx file.
    pub input: PathBuf,
    /// The traced thread's block index `X,Y,Z`.
    #[arg(long = "trace-block", default_value = "0,0,0", value_parser = parse_index3)]
    pub trace_block: [u32; 3],
    /// The traced thread's index in its block `X,Y,Z`.
    #[arg(long = "thread", default_value = "0,0,0", value_parser = parse_index3)]
    pub thread: [u32; 3],
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// Launch options shared by `run` and `trace`.
#[derive(Debug, Args)]
pub(crate) struct LaunchArgs {
    /// The .entry to launch (for a .ptx input).
    #[arg(long)]
    pub entry: Option<String>,
    /// Blocks per grid `X,Y,Z` (for a .ptx input).
    #[arg(long, value_parser = parse_dim3)]
    pub grid: Option<[u32; 3]>,
    /// Threads per block `X,Y,Z` (for a .ptx input).
    #[arg(long, value_parser = parse_dim3)]
    pub block: Option<[u32; 3]>,
    /// Dynamic shared memory in bytes (for a .ptx input).
    #[arg(long, default_value_t = 0)]
    pub shared_bytes: u32,
    /// A kernel argument, in order: a scalar `s32:1000`, `u32:…`, `f32:-1.75`,
    /// `s64:…`, `u64:…`, `f64:…`; a buffer file `x.npy` or `x.bin` (raw bytes;
    /// read, and written back after the launch); or a new buffer of zeros
    /// `zeros:f32:1000:out.npy` (written after the launch).
    #[arg(long = "arg", allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// Write buffers into this folder instead of over their input files.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Turn the checker off (misaligned, barrier, race, uninitialized);
    /// out-of-bounds and the watchdog stay errors.
    #[arg(long)]
    pub no_check: bool,
    /// Also report reads of global memory that neither the host initialised nor
    /// any thread wrote before (compute-sanitizer's initcheck; blocks then run
    /// one at a time in block order). A case buffer without `init` and a
    /// `zeros:` buffer count as allocated but not written. On the GPU the
    /// checked kernel keeps a bit per byte of global memory (not with
    /// --unchecked).
    #[arg(long)]
    pub initcheck: bool,
    /// Watchdog: the most instructions one warp may execute.
    #[arg(long, default_value_t = ptx::DEFAULT_WATCHDOG)]
    pub watchdog: u64,
    /// Run blocks one at a time (results are identical; for debugging).
    #[arg(long)]
    pub sequential: bool,
    /// Host memory one launch (or case) may allocate: buffers, their copies,
    /// per-block result slots, per-worker scratch, e.g. `4G`, `512M`
    /// (default: the memory the system reports available).
    #[arg(long, value_parser = parse_size)]
    pub max_memory: Option<u64>,
    /// Threads one launch may run, grid × block (default 2^32).
    #[arg(long, default_value_t = ptx::limits::DEFAULT_MAX_THREADS)]
    pub max_threads: u64,
    /// Where the kernel runs: `cpu` (the checked interpreter), `gpu` (compiled
    /// to WGSL and run through wgpu; an instruction it cannot run is an error
    /// naming it) or `auto` (the GPU when the kernel compiles and an adapter
    /// exists, else the interpreter, counted and said).
    #[arg(long, default_value = "cpu")]
    pub backend: String,
    /// GPU backend: drop the bounds, alignment and watchdog checks from the
    /// compiled kernel (faster; an out-of-bounds access is then not reported).
    #[arg(long)]
    pub unchecked: bool,
    /// GPU backend: also run the shared-memory race check in the compiled
    /// kernel (the interpreter always runs it; as compute-sanitizer's
    /// racecheck, it is slow: about 20 times the checked kernel on an H100).
    #[arg(long)]
    pub racecheck: bool,
    /// GPU backend: after each launch, time this many dispatches of the kernel
    /// alone and print `kernel_seconds` (per dispatch) and `compile_seconds`.
    #[arg(long, default_value_t = 0)]
    pub kernel_time: u32,
    /// Let a case.json name files outside its folder and that folder's parent
    /// (by default each file must lie there after symbolic links are resolved).
    #[arg(long)]
    pub allow_outside: bool,
}

fn parse_dim3(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("`{s}`: expected X[,Y[,Z]]"));
    }
    let mut d = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        d[i] = p
            .parse()
            .map_err(|_| format!("`{s}`: `{p}` is not a non-negative integer"))?;
    }
    Ok(d)
}

/// An index `X[,Y[,Z]]`; missing components are 0.
fn parse_index3(s: &str) -> Result<[u32; 3], String> {
    let n = s.split(',').count();
    let mut d = parse_dim3(s)?;
    for v in d.iter_mut().skip(n) {
        *v = 0;
    }
    Ok(d)
}

impl LaunchArgs {
    fn options(&self) -> ExecOptions {
        let mut limits = ptx::Limits {
            max_threads: self.max_threads,
            ..ptx::Limits::default()
        };
        if let Some(m) = self.max_memory {
            limits.max_memory = m;
        }
        ExecOptions {
            check: !self.no_check,
            watchdog: self.watchdog,
            trace: None,
            parallel: !self.sequential,
            limits,
            initcheck: self.initcheck,
            ..ExecOptions::default()
        }
    }

    /// The facade's limits for the buffers this command reads or creates.
    fn host_limits(&self, opts: &ExecOptions) -> Limits {
        Limits {
            max_memory: opts.limits.max_memory,
            ..Limits::default()
        }
    }
}

/// `vgpu ptx …`.
pub(crate) fn run(cmd: PtxCommand) -> Result<ExitCode, Error> {
    match cmd {
        PtxCommand::Run(a) => run_cmd(&a.input, &a.launch, None),
        PtxCommand::Trace(a) => {
            let t = TraceTarget {
                block: a.trace_block,
                thread: a.thread,
            };
            run_cmd(&a.input, &a.launch, Some(t))
        }
    }
}

fn is_ptx(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "ptx")
}

fn run_cmd(input: &Path, la: &LaunchArgs, trace: Option<TraceTarget>) -> Result<ExitCode, Error> {
    let mut opts = la.options();
    opts.trace = trace;
    let backend = vgpu::resolve_backend(Some(&la.backend))?;
    if la.initcheck && la.unchecked && backend != vgpu::BackendChoice::Cpu {
        return Err(Error::Usage(
            "--initcheck is a check of the checked GPU kernel: drop --unchecked (or use --backend cpu)".into(),
        ));
    }
    if la.racecheck && (la.unchecked || backend == vgpu::BackendChoice::Cpu) {
        return Err(Error::Usage(
            "--racecheck adds the race check to the checked GPU kernel: use --backend gpu or auto without --unchecked (the interpreter always checks races)".into(),
        ));
    }
    let mut runner = PtxRunner::new(backend, !la.unchecked);
    runner.time_iterations = la.kernel_time;
    runner.racecheck = la.racecheck;
    if is_ptx(input) {
        let code = run_ptx_file(input, la, &mut opts, &mut runner)?;
        report_backend(&runner);
        return Ok(code);
    }
    // Cases: one, or a folder of them.
    let cases: Vec<PathBuf> = if input.is_dir() && !input.join("case.json").is_file() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(input)
            .map_err(|e| Error::Io {
                path: input.display().to_string(),
                source: e,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("case.json").is_file())
            .collect();
        v.sort();
        if v.is_empty() {
            return Err(Error::Usage(format!(
                "{}: no case.json in it or in its sub-folders",
                input.display()
            )));
        }
        v
    } else {
        vec![input.to_path_buf()]
    };
    // Every case runs, whatever the others did: one that fails, or cannot run
    // (its PTX does not parse, a buffer file is missing), is reported with its
    // reason and counted, and the next one runs.
    let (mut pass, mut fail, mut error) = (0usize, 0usize, 0usize);
    let copts = ptx::CaseOptions {
        allow_outside: la.allow_outside,
    };
    for c in &cases {
        let r = match ptx::run_case_on(c, &opts, &copts, &mut |m, e, g, a, b, o| {
            runner.launch(m, e, g, a, b, o)
        }) {
            Ok(r) => r,
            Err(e) if cases.len() > 1 => {
                println!("case {}\n  ERROR: {e}", c.display());
                error += 1;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        if print_report(&r) {
            pass += 1;
        } else {
            fail += 1;
        }
        if trace.is_some() {
            if let Some(s) = &r.stats {
                let src = ptx_source(&r.ptx_path);
                print!("{}", ptx::trace::format_trace(&s.trace, src.as_deref()));
            }
        }
    }
    report_backend(&runner);
    let all_pass = fail == 0 && error == 0;
    if cases.len() > 1 {
        if all_pass {
            println!("{} cases: all pass", cases.len());
        } else {
            println!(
                "{} cases: {pass} pass, {fail} fail, {error} error (SOME FAIL)",
                cases.len()
            );
        }
    }
    Ok(if all_pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The text of a PTX module that already parsed (to show traced lines), read
/// within the same bound as [`Module::from_file`].
fn ptx_source(path: &Path) -> Option<String> {
    ptx::limits::read_file_limited(path, ptx::limits::MAX_PTX_FILE_BYTES, "PTX module")
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
}

fn print_report(r: &ptx::CaseReport) -> bool {
    println!("case {} (entry `{}`)", r.path.display(), r.entry);
    for b in &r.buffers {
        if b.passed() {
            println!(
                "  {:<12} {}[{}]  match (max ulp {}, max abs {:e})",
                b.name, b.dtype, b.len, b.max_ulp, b.max_abs
            );
        } else {
            let (i, got, want) = b.first_mismatch.unwrap_or((0, f64::NAN, f64::NAN));
            println!(
                "  {:<12} {}[{}]  MISMATCH: {} elements, max ulp {}, max abs {:e}, first at index {i}: got {got:e}, want {want:e}",
                b.name, b.dtype, b.len, b.mismatches, b.max_ulp, b.max_abs
            );
        }
    }
    match (&r.expect_error, &r.error) {
        (Some(c), Some(e)) => println!("  expected {c}: {e}"),
        (Some(c), None) => println!("  expected a `{c}` error; the kernel ran to completion"),
        (None, Some(e)) => println!("  error: {e}"),
        (None, None) => {}
    }
    if let Some(s) = r.stats.as_ref().filter(|s| s.thread_instructions > 0) {
        println!("  {} thread-instructions", s.thread_instructions);
    }
    let ok = r.passed();
    println!("  {}", if ok { "PASS" } else { "FAIL" });
    ok
}

/// A buffer of a .ptx launch: where it came from and goes.
struct BufSpec {
    path: PathBuf,
    npy_dtype: Option<Dtype>,
    shape: Vec<usize>,
}

/// `held + bytes`, refused beyond the memory limit.
fn hold(limits: &Limits, what: &str, held: u64, bytes: u64) -> Result<u64, Error> {
    let total = held.saturating_add(bytes);
    limits.memory(what, total)?;
    Ok(total)
}

/// Says where the launches ran when it was not the interpreter alone.
fn report_backend(r: &PtxRunner) {
    if r.backend() == vgpu::BackendChoice::Cpu {
        return;
    }
    println!(
        "backend {:?}: {} launch(es) on the GPU ({} compiled), {} fell back to the interpreter",
        r.backend(),
        r.gpu_launches,
        r.gpu_compiles,
        r.fallbacks.len()
    );
    for f in &r.fallbacks {
        println!("  fallback: {f}");
    }
    if let Some(kept) = r.f32_subnormals {
        println!(
            "f32 subnormals {}",
            if kept {
                "kept (the kernel declares DenormPreserve and the device honours it)"
            } else {
                "not declared kept: a device that flushes them differs from PTX on subnormal operands and results"
            }
        );
    }
    if let Some(native) = r.native_fma_f32 {
        let how = if native && r.fma_f32_guarded {
            "native, guarded (the device's fma, fused, may flush subnormals: a run of fmas where a value its bounds do not keep normal is zero or tiny runs again with its suspect fmas emulated)"
        } else if native {
            "native (the device's fma, fused)"
        } else {
            "emulated (exact, in f64)"
        };
        println!("fma_f32 {how}");
    }
    if let Some(native) = r.native_atomic_f32 {
        let how = if native {
            "native (the device's f32 atomics)"
        } else {
            "compare-and-swap loop"
        };
        println!("atom.add.f32 {how}");
    }
    if let Some(t) = r.kernel_seconds {
        println!("kernel_seconds {t:e}");
        println!("compile_seconds {:e}", r.compile_seconds());
    }
}

fn run_ptx_file(
    path: &Path,
    la: &LaunchArgs,
    opts: &mut ExecOptions,
    runner: &mut PtxRunner,
) -> Result<ExitCode, Error> {
    let usage = |m: &str| Error::Usage(m.to_string());
    let entry = la
        .entry
        .as_deref()
        .ok_or_else(|| usage("a .ptx input needs --entry NAME"))?;
    let grid = la
        .grid
        .ok_or_else(|| usage("a .ptx input needs --grid X,Y,Z"))?;
    let block = la
        .block
        .ok_or_else(|| usage("a .ptx input needs --block X,Y,Z"))?;
    let module = Module::from_file(path)?;
    let limits = la.host_limits(opts);
    // Host memory of the buffers read or created so far (overflow-checked).
    let mut held = 0u64;
    let mut args = Vec::new();
    let mut bufs: Vec<Vec<u8>> = Vec::new();
    let mut specs: Vec<BufSpec> = Vec::new();
    for (i, a) in la.args.iter().enumerate() {
        let bad = |m: String| Error::Usage(format!("--arg {i} `{a}`: {m}"));
        if let Some((ty, v)) = a.split_once(':').and_then(|(t, v)| {
            Dtype::parse(t)
                .filter(|d| ptx::case::SCALAR_TYPES.contains(d))
                .map(|d| (d, v))
        }) {
            let num: serde_json::Number = v
                .parse()
                .map_err(|_| bad(format!("`{v}` is not a number")))?;
            args.push(
                ptx::case::scalar(ty, &num)
                    .ok_or_else(|| bad(format!("`{v}` does not fit {ty}")))?,
            );
            continue;
        }
        if let Some(rest) = a.strip_prefix("zeros:") {
            let parts: Vec<&str> = rest.splitn(3, ':').collect();
            if parts.len() != 3 {
                return Err(bad("expected zeros:DTYPE:LEN:PATH".into()));
            }
            let dt = Dtype::parse(parts[0]).ok_or_else(|| {
                bad(format!(
                    "unknown dtype `{}` (one of {})",
                    parts[0],
                    Dtype::names()
                ))
            })?;
            let len: usize = parts[1]
                .parse()
                .map_err(|_| bad(format!("`{}` is not a length", parts[1])))?;
            let p = PathBuf::from(parts[2]);
            let npy = p.extension().is_some_and(|e| e == "npy");
            let what = format!("--arg {i} `zeros:{dt}:{len}`");
            let bytes = limits.bytes(&what, len as u64, dt.size() as u64)?;
            held = hold(&limits, &what, held, bytes)?;
            // Allocated, not written by the host: the initcheck's view.
            opts.uninitialised_buffers.push(bufs.len());
            bufs.push(vec![0u8; bytes as usize]);
            specs.push(BufSpec {
                path: p,
                npy_dtype: npy.then_some(dt),
                shape: vec![len],
            });
        } else {
            let p = PathBuf::from(a);
            match p.extension().and_then(|e| e.to_str()) {
                Some("npy") => {
                    let shape = limits.npy(&p)?;
                    let count = shape.iter().product::<u64>();
                    let what = format!("--arg {i} `{}`", p.display());
                    // At most 8 bytes per element.
                    held = hold(&limits, &what, held, limits.bytes(&what, count, 8)?)?;
                    let (dt, bytes, shape) = vgpu::npy::read_bytes(&p)
                        .map_err(|m| Error::Usage(format!("{}: {m}", p.display())))?;
                    bufs.push(bytes);
                    specs.push(BufSpec {
                        path: p,
                        npy_dtype: Some(dt),
                        shape,
                    });
                }
                Some("bin") => {
                    let room = limits.max_memory.saturating_sub(held);
                    let what = format!(
                        "--arg {i} (at most {} left by --max-memory)",
                        vgpu::limits::human_bytes(room)
                    );
                    let bytes = ptx::limits::read_file_limited(&p, room, &what)?;
                    let n = bytes.len();
                    held += n as u64;
                    bufs.push(bytes);
                    specs.push(BufSpec {
                        path: p,
                        npy_dtype: None,
                        shape: vec![n],
                    });
                }
                _ => {
                    return Err(bad(
                        "expected TYPE:VALUE, a .npy or .bin file, or zeros:DTYPE:LEN:PATH".into(),
                    ))
                }
            }
        }
        args.push(KernelArg::Buffer(bufs.len() - 1));
    }
    let cfg = LaunchConfig {
        grid: grid.into(),
        block: block.into(),
        shared_bytes: la.shared_bytes,
    };
    let stats = runner.launch(&module, entry, &cfg, &args, &mut bufs, opts)?;
    // Every buffer is written whole or not at all, and all of them together
    // (an input written back in place is never left half-written).
    let mut outputs = OutputSet::new();
    let mut written = Vec::new();
    for (b, s) in bufs.iter().zip(&specs) {
        let out = match &la.out_dir {
            Some(d) => d.join(s.path.file_name().unwrap_or_default()),
            None => s.path.clone(),
        };
        outputs.write(&out, |tmp| match s.npy_dtype {
            Some(dt) => vgpu::npy::write_bytes(tmp, dt, b, &s.shape),
            None => std::fs::write(tmp, b).map_err(|e| e.to_string()),
        })?;
        written.push(out);
    }
    outputs.commit()?;
    for out in written {
        println!("wrote {}", out.display());
    }
    if opts.trace.is_some() {
        let src = ptx_source(path);
        print!("{}", ptx::trace::format_trace(&stats.trace, src.as_deref()));
    }
    println!("{} thread-instructions", stats.thread_instructions);
    Ok(ExitCode::SUCCESS)
}
