//! `vgpu merge SHARD… --out FILE`: joins the outputs of `vgpu ensemble
//! --shard I/R` runs into the bytes of one run (`vgpu::shard::merge`).

use clap::Args as ClapArgs;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `vgpu merge`.
#[derive(Debug, ClapArgs)]
pub(crate) struct MergeArgs {
    /// The shards: each one's --out file (or its STEM.shard.json), any order.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// The merged output (its companions STEM.status.npy, STEM.steps.npy beside it).
    #[arg(long)]
    pub out: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Runs `vgpu merge`.
pub(crate) fn run(a: MergeArgs) -> Result<ExitCode, vgpu::Error> {
    let r = vgpu::shard::merge(&a.shards, &a.out)?;
    if a.json {
        let files: Vec<serde_json::Value> = r
            .files
            .iter()
            .map(|(p, s)| serde_json::json!({"file": p.display().to_string(), "shape": s}))
            .collect();
        println!(
            "{}",
            serde_json::json!({"trajectories": r.total, "shards": r.shards, "files": files})
        );
    } else {
        for (p, s) in &r.files {
            println!("wrote {} {s:?}", p.display());
        }
        println!("merged {} shards, {} trajectories", r.shards, r.total);
    }
    Ok(ExitCode::SUCCESS)
}
