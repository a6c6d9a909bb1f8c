//! `vgpu bench lorenz`: the Lorenz ensemble through the field API and as
//! `examples/lorenz.field` through the kernel-IR evaluator, beside the
//! hand-written Rust + rayon loops, in one run.

use clap::Args;
use std::process::ExitCode;
use std::time::Instant;
use vgpu::field::lorenz::{self, LorenzProblem};
use vgpu::field::Par;

/// Options of `vgpu bench lorenz`.
#[derive(Debug, Args)]
pub(crate) struct LorenzArgs {
    /// Trajectories (ρ = linspace(0, 21, N)).
    #[arg(long, default_value_t = 262_144)]
    pub n: usize,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Trajectories per block of the field launch.
    #[arg(long, default_value_t = 256)]
    pub block: u32,
    /// Timed runs of each variant; the fastest counts.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Skip the hand-written reference loops (field version only).
    #[arg(long)]
    pub no_reference: bool,
    /// Skip the `.field` variant (examples/lorenz.field through the IR evaluator).
    #[arg(long)]
    pub no_ir: bool,
}

/// `examples/lorenz.field`, the same problem in the field language.
const LORENZ_FIELD: &str = include_str!("../../../../examples/lorenz.field");

/// The problem as `examples/lorenz.field` run by the kernel-IR evaluator
/// (`vgpu ensemble`'s CPU path), endpoints trajectory-major.
fn lorenz_ir(p: &LorenzProblem, block: u32, par: Par) -> Result<Vec<f32>, vgpu::Error> {
    let k = vgpu::compile("examples/lorenz.field", LORENZ_FIELD)?;
    let mut args = vgpu::Args::new(&k);
    args.buffer("rho", p.rho())?;
    let dt = p.dt as f64;
    let integ = vgpu::Integration::new(p.n, 0.0, p.steps as f64 * dt, dt)
        .method(vgpu::field::Method::Rk4)
        .block(block)
        .par(par);
    match vgpu::run_cpu(&k, &args, &integ)?.states {
        vgpu::ir::Buffer::F32(v) => Ok(v.to_vec()),
        other => Err(vgpu::Error::Usage(format!(
            "bench lorenz: lorenz.field gave {:?} states, expected f32",
            other.ty()
        ))),
    }
}

struct Timed {
    seconds: f64,
    checksum: f64,
}

fn best_of(
    repeats: usize,
    mut f: impl FnMut() -> Result<Vec<f32>, vgpu::Error>,
) -> Result<Timed, vgpu::Error> {
    let mut best = f64::INFINITY;
    let mut sum = 0.0;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let u = f()?;
        best = best.min(t.elapsed().as_secs_f64());
        sum = lorenz::checksum(&u);
    }
    Ok(Timed {
        seconds: best,
        checksum: sum,
    })
}

/// Runs the benchmark and prints its figures.
pub(crate) fn run(args: LorenzArgs) -> Result<ExitCode, vgpu::Error> {
    if args.n == 0 {
        return Err(vgpu::Error::Usage(
            "bench lorenz: --n must be at least 1".into(),
        ));
    }
    let p = LorenzProblem::new(args.n);
    let par = Par::Rayon(args.threads);
    let threads = par.threads();
    let work = (p.n * p.steps) as f64;
    let field = best_of(args.repeats, || {
        Ok(lorenz::lorenz_field(&p, args.block, par)?)
    })?;
    let ir = if args.no_ir {
        None
    } else {
        Some(best_of(args.repeats, || lorenz_ir(&p, args.block, par))?)
    };
    let refs = if args.no_reference {
        None
    } else {
        let scalar = best_of(args.repeats, || Ok(lorenz::lorenz_reference(&p, par)?))?;
        let lanes = best_of(args.repeats, || {
            Ok(lorenz::lorenz_reference_lanes(&p, par)?)
        })?;
        Some((scalar, lanes))
    };
    let rate = |t: &Timed| work / t.seconds;
    if args.json {
        let mut obj = serde_json::json!({
            "n": p.n,
            "steps": p.steps,
            "seconds": field.seconds,
            "traj_steps_per_s": rate(&field),
            "checksum": field.checksum,
            "threads": threads,
            "block": args.block,
        });
        if let Some((scalar, lanes)) = &refs {
            let r = |t: &Timed| {
                serde_json::json!({
                    "seconds": t.seconds,
                    "traj_steps_per_s": rate(t),
                    "checksum": t.checksum,
                    "field_ratio": t.seconds / field.seconds,
                })
            };
            obj["reference_scalar"] = r(scalar);
            obj["reference_lanes"] = r(lanes);
        }
        if let Some(ir) = &ir {
            obj["ir_field"] = serde_json::json!({
                "seconds": ir.seconds,
                "traj_steps_per_s": rate(ir),
                "checksum": ir.checksum,
                "field_ratio": ir.seconds / field.seconds,
            });
            if let Some((scalar, lanes)) = &refs {
                obj["ir_field"]["vs_reference_lanes"] = (lanes.seconds / ir.seconds).into();
                obj["ir_field"]["vs_reference_scalar"] = (scalar.seconds / ir.seconds).into();
            }
        }
        println!("{obj}");
    } else {
        println!(
            "Lorenz ensemble, f32, N = {}, {} RK4 steps of dt = {}, {threads} threads, best of {}",
            p.n,
            p.steps,
            p.dt,
            args.repeats.max(1)
        );
        println!(
            "{:<34} {:>10} {:>16} {:>22} {:>8}",
            "variant", "seconds", "traj-steps/s", "checksum", "ratio"
        );
        let line = |name: &str, t: &Timed| {
            println!(
                "{name:<34} {:>10.4} {:>16.3e} {:>22.10} {:>8.2}",
                t.seconds,
                rate(t),
                t.checksum,
                t.seconds / field.seconds
            )
        };
        line("field API (vgpu)", &field);
        if let Some(ir) = &ir {
            line(".field through the IR evaluator", ir);
        }
        if let Some((scalar, lanes)) = &refs {
            line("hand-written, scalar per trajectory", scalar);
            line("hand-written, 16-lane chunks", lanes);
            println!(
                "ratio = reference seconds / field seconds (> 1: the field version is faster); checksums equal: {}",
                scalar.checksum == field.checksum
                    && lanes.checksum == field.checksum
                    && ir.as_ref().is_none_or(|t| t.checksum == field.checksum)
            );
            if let Some(ir) = &ir {
                println!(
                    ".field throughput ÷ hand-written: {:.2} (16-lane chunks), {:.2} (scalar)",
                    lanes.seconds / ir.seconds,
                    scalar.seconds / ir.seconds
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_file_computes_the_hand_written_bits() {
        let mut p = LorenzProblem::new(300);
        p.steps = 50;
        let ir = lorenz_ir(&p, 64, Par::Rayon(2)).unwrap();
        let hand = lorenz::lorenz_reference_lanes(&p, Par::Seq).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&ir), bits(&hand));
    }
}
