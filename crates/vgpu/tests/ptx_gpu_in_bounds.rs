//! Every fixed-size index of the repository's PTX kernels, as the GPU path
//! emits them (checked and `--unchecked`; the repository's cases also with
//! `--racecheck`, and in the form for a device whose `fma` flushes
//! subnormals, `VGPU_PTX_EXACT_FMA=flush-model`), is proven in
//! bounds by vgpu-gpu (`unproven_wgsl_index`), so that they compile
//! without naga's index clamps: the kernels clamp their own shared and
//! local indices, and the padded tiles' `min(base, last) + k` is below the
//! padded length. An emitter change that leaves one index unproven costs
//! the whole kernel naga's clamps (4–7 ms of `matmul_tiled` on the H100)
//! and fails here with the function and expression. Skipped without an
//! adapter unless `VGPU_REQUIRE_GPU=1`.

mod common;

use common::ptx_gpu::no_adapter;
use std::path::PathBuf;
use std::process::Command;

#[test]
fn every_repository_kernels_fixed_size_indices_are_proven_in_bounds() {
    if no_adapter() {
        return;
    }
    let repo = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let tmp = std::env::temp_dir().join(format!("vgpu-in-bounds-{}", std::process::id()));
    let mut checked = 0;
    for (dir, fma) in [
        ("ptx-cases", ""),
        ("ptx-cases", "flush-model"),
        ("ptx-cases/corpus/cuda-samples", ""),
        ("ptx-cases/corpus/cub", ""),
    ] {
        // The race check's arrays in the repository's cases only.
        let modes: &[&str] = if dir == "ptx-cases" {
            &["checked", "--unchecked", "--racecheck"]
        } else {
            &["checked", "--unchecked"]
        };
        for &mode in modes {
            let dump = tmp.join(dir.replace('/', "_") + fma).join(mode);
            std::fs::create_dir_all(&dump).unwrap();
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_vgpu"));
            cmd.args(["ptx", "run"])
                .arg(repo.join(dir))
                .args(["--backend", "gpu", "--out-dir"])
                .arg(tmp.join("out"))
                .env("VGPU_DUMP_WGSL", &dump);
            if !fma.is_empty() {
                cmd.env("VGPU_PTX_EXACT_FMA", fma);
            }
            if mode != "checked" {
                cmd.arg(mode);
            }
            let out = cmd.output().unwrap();
            assert!(
                out.status.success(),
                "{dir} {fma} {mode}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dump)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            files.sort();
            assert!(!files.is_empty(), "{dir} {fma} {mode}: no WGSL dumped");
            for f in files {
                let wgsl = std::fs::read_to_string(&f).unwrap();
                let verdict = vgpu::gpu::unproven_wgsl_index(&wgsl);
                assert_eq!(verdict, Ok(None), "{dir} {fma} {mode}: {}", f.display());
                checked += 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(
        checked >= 3 * (8 + 8) + 2 * (37 + 37),
        "only {checked} kernels dumped"
    );
}
