//! The Lorenz ensemble through the field API and the hand-written loop, timed
//! once each: `cargo run --release -p vgpu-demos --example lorenz -- [N] [THREADS]`.
//! (`vgpu bench lorenz` is the benchmark proper.)

use std::time::Instant;
use vgpu_demos::lorenz::{
    checksum, lorenz_field, lorenz_reference, lorenz_reference_lanes, LorenzProblem,
};
use vgpu_field::Par;

fn main() -> Result<(), vgpu_field::FieldError> {
    let mut args = std::env::args().skip(1);
    let n = args.next().and_then(|s| s.parse().ok()).unwrap_or(262_144);
    let threads = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let block = args.next().and_then(|s| s.parse().ok()).unwrap_or(256);
    let p = LorenzProblem::new(n);
    let par = Par::Rayon(threads);
    for _ in 0..2 {
        let t = Instant::now();
        let a = lorenz_field(&p, block, par)?;
        let tf = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let b = lorenz_reference(&p, par)?;
        let tr = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let c = lorenz_reference_lanes(&p, par)?;
        let tl = t.elapsed().as_secs_f64();
        let rate = |s: f64| (n * p.steps) as f64 / s;
        println!(
            "field {:.3e} traj-steps/s; hand-written scalar {:.3e} (ratio {:.2}), 16-lane {:.3e} (ratio {:.2}); checksums {} {} {}",
            rate(tf),
            rate(tr),
            tr / tf,
            rate(tl),
            tl / tf,
            checksum(&a),
            checksum(&b),
            checksum(&c)
        );
    }
    Ok(())
}
