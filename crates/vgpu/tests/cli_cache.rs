//! `vgpu cache-demo` prints the adapter line first and the counters line last:
//! 2 compiles, 198 cache hits, 200 GPU dispatches on a GPU (lavapipe counts),
//! 200 CPU fallbacks under `VGPU_BACKEND=cpu`.

mod common;
use common::vgpu_env;

fn demo(backend: &str) -> (bool, Vec<String>) {
    let (code, stdout, stderr) = vgpu_env(&["cache-demo"], &[("VGPU_BACKEND", backend)]);
    if code != 0 {
        eprintln!("stdout:\n{stdout}\nstderr:\n{stderr}");
    }
    (code == 0, stdout.lines().map(str::to_string).collect())
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
    let (code, _, err) = vgpu_env(
        &["cache-demo"],
        &[("VGPU_BACKEND", "gpu"), ("WGPU_BACKEND", "metal")],
    );
    // Metal does not exist on Linux: no adapter, so `gpu` must fail with a message.
    if cfg!(target_os = "linux") {
        assert_ne!(code, 0);
        assert!(err.contains("no GPU adapter was found"), "{err}");
    }
}
