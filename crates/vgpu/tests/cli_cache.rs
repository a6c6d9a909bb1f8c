//! `vgpu cache-demo` prints the adapter line first and the counters line last:
//! 2 compiles, 198 cache hits, 200 GPU dispatches on a GPU (lavapipe counts),
//! 200 CPU fallbacks under `VGPU_BACKEND=cpu`.

use std::process::Command;

fn demo(backend: &str) -> (bool, Vec<String>) {
    let out = Command::new(env!("CARGO_BIN_EXE_vgpu"))
        .arg("cache-demo")
        .env("VGPU_BACKEND", backend)
        .output()
        .expect("run vgpu cache-demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    if !out.status.success() {
        eprintln!(
            "stdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (out.status.success(), lines)
}

#[test]
fn cache_demo_on_the_cpu_counts_200_fallbacks() {
    let (ok, lines) = demo("cpu");
    assert!(ok);
    assert!(
        lines[0].starts_with("adapter: none (CPU fallback: VGPU_BACKEND=cpu)"),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines.last().unwrap(),
        "VGPUCache: 0 compiles, 0 cache hits, 0 GPU dispatches, 200 CPU fallbacks"
    );
}

#[test]
fn cache_demo_on_the_gpu_compiles_twice_and_hits_198_times() {
    let (ok, lines) = demo("auto");
    assert!(ok);
    if lines[0].starts_with("adapter: none") {
        assert!(
            std::env::var("VGPU_REQUIRE_GPU").map_or(true, |v| v != "1"),
            "VGPU_REQUIRE_GPU=1 but the demo found no GPU: {}",
            lines[0]
        );
        println!(
            "cache_demo_on_the_gpu_compiles_twice_and_hits_198_times: skipped, no GPU adapter"
        );
        return;
    }
    assert_eq!(
        lines.last().unwrap(),
        "VGPUCache: 2 compiles, 198 cache hits, 200 GPU dispatches, 0 CPU fallbacks"
    );
    // Phase lines: the interleaved phase compiles nothing and dispatches 100 times.
    let phase3 = lines.iter().find(|l| l.starts_with("phase 3")).unwrap();
    assert!(
        phase3.contains("100 calls, 0 compiles, 100 cache hits, 100 GPU dispatches"),
        "{phase3}"
    );
}

#[test]
fn cache_demo_with_a_required_gpu_and_none_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_vgpu"))
        .arg("cache-demo")
        .env("VGPU_BACKEND", "gpu")
        .env("WGPU_BACKEND", "metal")
        .output()
        .expect("run vgpu cache-demo");
    // Metal does not exist on Linux: no adapter, so `gpu` must fail with a message.
    if cfg!(target_os = "linux") {
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no GPU adapter was found"), "{err}");
    }
}
