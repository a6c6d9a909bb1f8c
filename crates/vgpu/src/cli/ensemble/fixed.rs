//! `vgpu ensemble --method euler|rk4`: a fixed-step run through
//! [`Dispatcher::ensemble`], its summary and `--json` report.

use super::args::{ir_limits, limits, name_the_option, par, parse_span, usage};
use super::input::build_args;
use super::output::{fallback_note, finish_split, print_backend, states_part, write_outputs};
use super::progress::{draw_progress, with_progress};
use super::EnsembleArgs;
use crate::cli::split::{Figures, Split};
use std::process::ExitCode;
use std::time::Instant;
use vgpu::field::Method;
use vgpu::ir::{compile_file, Integration};
use vgpu::{Dispatcher, EnsembleJob};

/// `vgpu ensemble --method euler|rk4`, whole or one slice; `wall` is when the
/// command started (the report's `wall_seconds`).
pub(super) fn run(
    a: EnsembleArgs,
    method: Method,
    split: Option<&Split>,
    wall: Instant,
) -> Result<ExitCode, vgpu::Error> {
    let adaptive_only = [
        ("--rtol", a.adaptive.rtol.is_some()),
        ("--atol", a.adaptive.atol.is_some()),
        ("--dt0", a.adaptive.dt0.is_some()),
        ("--dtmin", a.adaptive.dtmin.is_some()),
        ("--dtmax", a.adaptive.dtmax.is_some()),
        ("--maxiters", a.adaptive.maxiters.is_some()),
        ("--u0", a.adaptive.u0.is_some()),
        ("--tspan", a.adaptive.tspan.is_some()),
        ("--saveat", a.adaptive.saveat.is_some()),
    ];
    if let Some((flag, _)) = adaptive_only.iter().find(|(_, given)| *given) {
        return Err(usage(format!(
            "{flag} applies to the adaptive methods (tsit5, dp5, bs3, vern7), not to --method {method}"
        )));
    }
    let k = compile_file(&a.file)?;
    let (t0, t1) = parse_span(&a.t)?;
    let limits = limits(&a)?;
    let par = par(&a, &limits);
    if let Some(s) = split {
        vgpu::shard::refuse_flux(&k, &format!("ensemble: {}", s.name()))?;
    }
    let engine: vgpu_ir::Engine = a.cpu_engine.parse().map_err(vgpu::Error::Usage)?;
    let integ = Integration {
        n: split.map_or(a.n, Split::n),
        block: a.block,
        t0,
        t1,
        dt: a.dt.unwrap_or(0.001),
        method,
        par,
        progress: None,
        slice: split.map(Split::slice),
    };
    limits.ensemble(&k, &integ)?;
    let args = build_args(&k, &a.params, a.n, &limits)?;
    let backend = vgpu::resolve_backend(a.backend.as_deref())?;
    let dim = k.states.len();
    // The bar counts the CPU executor's trajectory-steps; a GPU run announces no
    // work, so the bar stays hidden there.
    let steps_guess = integ.steps(&k.name).unwrap_or(0).max(1);
    let long = (a.n as f64) * (steps_guess as f64) * (dim.max(1) as f64) > 2e8;
    let draw = draw_progress(&a.progress, long)?;
    let run = with_progress(draw, "trajectory-steps", |p| {
        let integ = match p {
            Some(p) => integ.clone().progress(p),
            None => integ.clone(),
        };
        Dispatcher::new().cpu_engine(engine).ensemble(&EnsembleJob {
            kernel: &k,
            args: &args,
            integration: &integ,
            backend,
            kernel_time: a.kernel_time,
            limits: ir_limits(&a),
        })
    })
    .map_err(name_the_option)?;
    let note = fallback_note(run.fallback.as_deref());
    let (states, fluxes, steps, seconds, kernel_time) = (
        &run.states,
        &run.fluxes,
        run.steps,
        run.seconds,
        run.kernel_time,
    );
    let adapter = &run.adapter;
    let backend = run.backend.to_string();
    let n = integ.n;
    let traj_steps = n as f64 * steps as f64 / seconds;
    let mut j = serde_json::json!({
        "field": k.name, "file": a.file.display().to_string(), "backend": backend, "adapter": adapter,
        "n": n, "steps": steps, "method": method.name(), "seconds": seconds,
        "kernel_seconds": kernel_time.map(|d| d.as_secs_f64()), "traj_steps_per_s": traj_steps,
        "note": note,
    });
    if let Some(p) = run.gpu_phases {
        j["phases"] = serde_json::json!({
            "prepare_seconds": p.prepare.as_secs_f64(), "compile_seconds": p.compile.as_secs_f64(),
            "device_seconds": p.device.as_secs_f64(), "check_seconds": p.check.as_secs_f64(),
            "upload_seconds": p.upload.as_secs_f64(), "gpu_seconds": p.gpu.as_secs_f64(),
            "download_seconds": p.download.as_secs_f64(),
        });
    }
    if let Some(setup) = run.gpu_setup {
        j["setup_seconds"] = setup.as_secs_f64().into();
    }
    if run.gpu_phases.is_some() {
        // The on-disk pipeline cache (written back when the process's kernel
        // cache is dropped): what this run started from.
        if let Some(pc) = vgpu::gpu::GpuContext::get()
            .ok()
            .and_then(|c| c.pipeline_cache())
        {
            j["pipeline_cache"] = serde_json::json!({
                "path": pc.path.display().to_string(), "loaded_bytes": pc.loaded_bytes,
            });
        }
    }
    match (split, &a.out) {
        (Some(s), _) => {
            let fig = Figures {
                seconds,
                backend: backend.clone(),
            };
            if !finish_split(s, &a, &k.name, &[states_part(states, dim)], fig, &mut j)? {
                return Ok(ExitCode::SUCCESS);
            }
        }
        (None, Some(out)) => {
            let start = Instant::now();
            write_outputs(out, n, dim, states, fluxes)?;
            j["output_seconds"] = start.elapsed().as_secs_f64().into();
        }
        (None, None) => {}
    }
    j["wall_seconds"] = wall.elapsed().as_secs_f64().into();
    if a.json {
        println!("{j}");
    } else {
        println!(
            "field {} ({}): {} trajectories × {} steps ({})",
            k.name,
            a.file.display(),
            n,
            steps,
            method
        );
        print_backend(&backend, adapter, &note);
        match kernel_time {
            Some(kt) => println!("time: {seconds:.6} s end to end, {:.6} s kernel ({traj_steps:.3e} trajectory-steps/s)", kt.as_secs_f64()),
            None => println!("time: {seconds:.6} s ({traj_steps:.3e} trajectory-steps/s)"),
        }
        if let Some(out) = &a.out {
            println!("wrote {} ({} × {})", out.display(), n, dim);
        }
    }
    Ok(ExitCode::SUCCESS)
}
