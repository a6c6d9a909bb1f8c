//! `vgpu ensemble --cpu-engine jit|eval`: the adaptive CPU path on native
//! code and on the column evaluator writes the same bytes (endpoints, save
//! points, statuses, step counts); an unknown engine exits 2 naming it.

mod common;
use common::{example, fresh_dir, vgpu, vgpu_ok};

#[test]
fn both_engines_write_the_same_bytes() {
    let dir = fresh_dir("cpu-engine", "same");
    let mut outs = vec![];
    for engine in ["jit", "eval"] {
        let out = dir.join(format!("{engine}.npy"));
        let args: Vec<String> = [
            "ensemble",
            &example("lorenz.field"),
            "--n",
            "64",
            "--t",
            "0:1",
            "--method",
            "tsit5",
            "--rtol",
            "1e-6",
            "--atol",
            "1e-6",
            "--saveat",
            "0:1:5",
            "--param",
            "rho=linspace:0:21",
            "--backend",
            "cpu",
            "--cpu-engine",
            engine,
            "--out",
            &out.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        vgpu_ok(&args);
        let stem = dir.join(engine);
        let read = |suffix: &str| std::fs::read(format!("{}{suffix}", stem.display())).unwrap();
        outs.push([read(".npy"), read(".status.npy"), read(".steps.npy")]);
    }
    assert!(outs[0] == outs[1], "jit and eval outputs differ");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_engine_is_named() {
    let (code, _, err) = vgpu(&[
        "ensemble",
        &example("lorenz.field"),
        "--n",
        "4",
        "--t",
        "0:1",
        "--method",
        "tsit5",
        "--param",
        "rho=linspace:0:21",
        "--backend",
        "cpu",
        "--cpu-engine",
        "llvm",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown CPU engine `llvm`"), "{err}");
}
