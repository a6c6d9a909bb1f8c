//! `vgpu ensemble --method tsit5|dp5|bs3|vern7|rosenbrock23`: an adaptive
//! run through [`Dispatcher::adaptive_with`], its summary and `--json` report.

use super::args::{limits, name_the_adaptive_option, par, parse_span, parse_tolerance, usage};
use super::input::{build_args, parse_saveat, read_rows};
use super::output::{
    adaptive_parts, fallback_note, finish_split, print_backend, write_adaptive_outputs,
};
use super::progress::{draw_progress, with_progress};
use super::EnsembleArgs;
use crate::cli::split::{Figures, Split};
use std::process::ExitCode;
use vgpu::dispatch::{AdaptiveJob, STATUS_NAMES};
use vgpu::field::adaptive::{AdaptiveEnsemble, AdaptiveMethod};
use vgpu::ir::adaptive::AdaptiveRun;
use vgpu::ir::{compile_file, ScalarType};
use vgpu::Dispatcher;

/// `vgpu ensemble --method tsit5|dp5|bs3|vern7|rosenbrock23 …`, whole or one
/// slice: an adaptive ensemble on the CPU or a GPU, through
/// [`Dispatcher::adaptive_with`].
pub(super) fn run(
    a: EnsembleArgs,
    method: AdaptiveMethod,
    split: Option<&Split>,
) -> Result<ExitCode, vgpu::Error> {
    if let Some(dt) = a.dt {
        return Err(usage(format!(
            "--dt {dt}: --dt is the step of the fixed-step methods (rk4, euler); \
             --method {method} chooses its own steps (set the first with --dt0)"
        )));
    }
    let limits = limits(&a)?;
    let k = compile_file(&a.file)?;
    let dim = k.states.len();
    let par = par(&a, &limits);
    if a.n == 0 {
        return Err(usage("--n 0: nothing to integrate"));
    }
    if a.n > u32::MAX as usize {
        return Err(usage(format!("--n {}: at most 2^32 - 1 trajectories", a.n)));
    }
    let mut opts = AdaptiveEnsemble::new(method).par(par);
    if let Some(r) = &a.adaptive.rtol {
        opts = opts.rtol_per_component(parse_tolerance("--rtol", r)?);
    }
    if let Some(t) = &a.adaptive.atol {
        opts = opts.atol_per_component(parse_tolerance("--atol", t)?);
    }
    if let Some(h) = a.adaptive.dt0 {
        opts = opts.dt0(h);
    }
    if let Some(h) = a.adaptive.dtmin {
        opts = opts.dtmin(h);
    }
    if let Some(h) = a.adaptive.dtmax {
        opts = opts.dtmax(h);
    }
    if let Some(m) = a.adaptive.maxiters {
        limits.steps(&format!("--maxiters {m}"), m)?;
        opts = opts.maxiters(m);
    }
    match a.adaptive.controller.as_deref() {
        None | Some("pi") => {}
        Some("i") => {
            opts = opts.controller(vgpu::field::adaptive::PiController {
                beta2: 0.0,
                beta1: 1.0 / f64::from(method.order()),
                ..vgpu::field::adaptive::PiController::for_order(method.order())
            })
        }
        Some(other) => return Err(usage(format!("--controller {other:?}: expected pi or i"))),
    }
    if a.adaptive.gpu_chunk == Some(0) {
        return Err(usage(
            "--gpu-chunk 0: a chunk holds at least one trajectory",
        ));
    }
    let saveat = match &a.adaptive.saveat {
        Some(s) => parse_saveat(s, &limits)?,
        None => Vec::new(),
    };
    let k_save = saveat.len();
    opts = opts.saveat(saveat);
    let spans = match &a.adaptive.tspan {
        Some(path) => {
            let what = format!("(N, 2) = ({}, 2) of (t0, t1) rows", a.n);
            let v = read_rows("--tspan", path, &[a.n, 2], &what, split, &limits)?;
            v.chunks(2).map(|r| (r[0], r[1])).collect()
        }
        None => vec![parse_span(&a.t)?],
    };
    let u0 = match &a.adaptive.u0 {
        Some(path) => {
            let what = format!("(N, state) = ({}, {dim})", a.n);
            Some(read_rows("--u0", path, &[a.n, dim], &what, split, &limits)?)
        }
        None => None,
    };
    let n = split.map_or(a.n, Split::n);
    // Outputs and working states, checked against --max-memory before anything
    // of that size is allocated.
    let elem: u64 = if k.float_type() == ScalarType::F64 {
        8
    } else {
        4
    };
    let per_traj = (dim as u64)
        .saturating_mul(k_save as u64 + 2)
        .saturating_mul(elem)
        .saturating_add(64);
    let what = format!("{n} trajectories of {dim} states, {k_save} save times");
    limits.memory(&what, limits.bytes(&what, n as u64, per_traj)?)?;
    let args = build_args(&k, &a.params, a.n, &limits)?;
    let backend = vgpu::resolve_backend(a.backend.as_deref())?;
    let run = AdaptiveRun {
        n,
        spans,
        u0,
        options: opts,
        slice: split.map(Split::slice),
    };
    let gpu = vgpu::gpu::GpuAdaptiveOptions {
        max_chunk: a.adaptive.gpu_chunk,
        timing: a.kernel_time,
    };
    let engine: vgpu_ir::Engine = a.cpu_engine.parse().map_err(vgpu::Error::Usage)?;
    // The bar counts trajectories the CPU driver finished; a GPU run announces
    // none, so the bar stays hidden there. Long: a million trajectories.
    let draw = draw_progress(&a.progress, n >= 1 << 20)?;
    let mut run = run;
    let r = with_progress(draw, "trajectories", |p| {
        if let Some(p) = p {
            run.options = run.options.clone().progress(p);
        }
        Dispatcher::new().cpu_engine(engine).adaptive_with(
            &AdaptiveJob {
                kernel: &k,
                args: &args,
                run: &run,
                backend,
            },
            &gpu,
        )
    })
    .map_err(name_the_adaptive_option)?;
    let mut shard_json = serde_json::json!({});
    match (split, &a.out) {
        (Some(s), _) => {
            let fig = Figures {
                seconds: r.seconds,
                backend: r.backend.to_string(),
            };
            let parts = adaptive_parts(&r.output);
            if !finish_split(s, &a, &k.name, &parts, fig, &mut shard_json)? {
                return Ok(ExitCode::SUCCESS);
            }
        }
        (None, Some(out)) => write_adaptive_outputs(out, &r.output)?,
        (None, None) => {}
    }
    let counts = r.status_counts();
    let (accepted, rejected) = r.total_steps();
    let note = fallback_note(r.fallback.as_deref());
    let statuses: Vec<String> = STATUS_NAMES
        .iter()
        .zip(counts)
        .filter(|(_, c)| *c > 0)
        .map(|(name, c)| format!("{c} {name}"))
        .collect();
    if a.json {
        let status_counts: serde_json::Map<String, serde_json::Value> = STATUS_NAMES
            .iter()
            .zip(counts)
            .map(|(name, c)| (name.to_string(), c.into()))
            .collect();
        let mut j = serde_json::json!({
            "field": k.name, "file": a.file.display().to_string(), "backend": r.backend.to_string(),
            "adapter": r.adapter, "n": n, "method": method.name(), "seconds": r.seconds,
            "saveat": k_save, "status_counts": status_counts, "accepted_steps": accepted,
            "rejected_steps": rejected, "note": note,
            "kernel_seconds": r.kernel_time.map(|d| d.as_secs_f64()), "gpu_chunks": r.chunks,
        });
        if let (Some(obj), Some(more)) = (j.as_object_mut(), shard_json.as_object()) {
            obj.extend(more.clone());
        }
        println!("{j}");
    } else {
        println!(
            "field {} ({}): {} trajectories, {method} (adaptive)",
            k.name,
            a.file.display(),
            n
        );
        print_backend(&r.backend.to_string(), &r.adapter, &note);
        println!(
            "status: {} | steps: {accepted} accepted, {rejected} rejected | time: {:.6} s",
            statuses.join(", "),
            r.seconds
        );
        if let Some(kt) = r.kernel_time {
            println!(
                "kernel: {:.6} ms on the device ({} dispatches)",
                kt.as_secs_f64() * 1e3,
                r.chunks
            );
        }
        if let Some(out) = &a.out {
            let stem = out.with_extension("");
            let shape = if k_save > 0 {
                format!("{n} × {k_save} × {dim}")
            } else {
                format!("{n} × {dim}")
            };
            println!(
                "wrote {} ({shape}), {}.status.npy, {}.steps.npy",
                out.display(),
                stem.display(),
                stem.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
