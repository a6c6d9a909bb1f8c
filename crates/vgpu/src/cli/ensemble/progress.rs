//! The CPU progress bar of `vgpu ensemble` (`--progress`), drawn on stderr.

use super::args::usage;
use indicatif::ProgressDrawTarget;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use vgpu::field::executor::Progress;

/// Whether to draw a progress bar: `--progress auto` (when the run is `long`),
/// `always` or `never`, and only when stderr is a terminal.
pub(super) fn draw_progress(progress: &str, long: bool) -> Result<bool, vgpu::Error> {
    Ok(match progress {
        "auto" => long,
        "always" => true,
        "never" => false,
        other => {
            return Err(usage(format!(
                "--progress {other:?}: expected auto, always or never"
            )))
        }
    } && std::io::stderr().is_terminal())
}

/// Runs `f`, handing it a [`Progress`] counter when `draw`, and meanwhile draws
/// the counter as a bar on stderr (`unit`s done of the total: trajectory-steps
/// for fixed steps, trajectories for adaptive runs), redrawn ten times a second
/// and cleared at the end.
pub(super) fn with_progress<R>(draw: bool, unit: &str, f: impl FnOnce(Option<Progress>) -> R) -> R {
    if !draw {
        return f(None);
    }
    let p = Progress::new();
    // Hidden until the run has announced its work.
    let bar = indicatif::ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
    if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
        "{{bar:40}} {{human_pos}}/{{human_len}} {unit} ({{percent}}%, {{elapsed}} elapsed, eta {{eta}})"
    )) {
        bar.set_style(style);
    }
    let stop = AtomicBool::new(false);
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                if p.total() > 0 && bar.is_hidden() {
                    bar.set_draw_target(ProgressDrawTarget::stderr());
                }
                bar.set_length(p.total());
                bar.set_position(p.done());
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let r = f(Some(p.clone()));
        stop.store(true, Ordering::Relaxed);
        r
    });
    bar.finish_and_clear();
    r
}
