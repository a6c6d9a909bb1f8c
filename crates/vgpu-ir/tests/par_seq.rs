//! `Par::Seq` runs on the calling thread only: with rayon's global pool busy
//! (its one worker blocked), a sequential run still completes. A run that used
//! rayon anywhere (initial states, blocks, adaptive groups) would wait for the blocked worker.

use std::sync::mpsc;
use std::time::Duration;
use vgpu_field::adaptive::{AdaptiveEnsemble, AdaptiveMethod};
use vgpu_ir::adaptive::{run_adaptive_cpu_on, AdaptiveRun};
use vgpu_ir::{compile, run_cpu, Args, Engine, Integration, Par};

#[test]
fn par_seq_never_waits_for_rayon() {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global()
        .expect("this test binary configures the global pool once");
    let (release, blocked) = mpsc::channel::<()>();
    rayon::spawn(move || {
        let _ = blocked.recv();
    });
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let k = compile(
            "decay.field",
            "field decay(x0: f32[]) { state x = x0[i]; d(x)/dt = -x; }",
        )
        .unwrap();
        let mut args = Args::new(&k);
        args.buffer("x0", vec![1.0f32; 1000]).unwrap();
        let integ = Integration::new(1000, 0.0, 1.0, 0.01)
            .block(64)
            .par(Par::Seq);
        let unphased = run_cpu(&k, &args, &integ).map(|o| o.states.len());
        // A phased field (shared sub-field, barriers, flux) too.
        let tree = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/tree_sum.field"
        ))
        .unwrap();
        let k = compile("tree_sum.field", &tree).unwrap();
        let mut args = Args::new(&k);
        args.buffer("x", vec![1.0f32; 1024]).unwrap();
        args.scalar("steps", vgpu_ir::Value::U32(6)).unwrap();
        let integ = Integration::new(1024, 0.0, 0.0, 1.0)
            .block(64)
            .par(Par::Seq);
        let phased = run_cpu(&k, &args, &integ).map(|o| o.flux("total").map(|b| b.get(0).as_f64()));
        // An adaptive ensemble (the lanes of native whole steps, in groups).
        let k = compile(
            "lorenz.field",
            include_str!("../../../examples/lorenz.field"),
        )
        .unwrap();
        let mut args = Args::new(&k);
        args.buffer("rho", vec![28.0f32; 100]).unwrap();
        let run = AdaptiveRun {
            n: 100,
            spans: vec![(0.0, 1.0)],
            u0: None,
            options: AdaptiveEnsemble::new(AdaptiveMethod::Tsit5).par(Par::Seq),
            slice: None,
        };
        let adaptive = run_adaptive_cpu_on(&k, &args, &run, Engine::Jit).map(|o| o.stats.len());
        assert_eq!(adaptive.ok(), Some(100));
        let _ = done.send(unphased.and_then(|n| phased.map(|t| (n, t))));
    });
    let got = finished.recv_timeout(Duration::from_secs(20));
    let _ = release.send(());
    let (n, total) = got
        .expect("Par::Seq waited for the busy rayon pool")
        .expect("run");
    assert_eq!(n, 1000);
    assert_eq!(total, Some(1024.0));
}
