//! The one block scheduler of the CPU executors: a launch's blocks, each
//! owning its consecutive piece of one output slice, run in parallel on
//! rayon's pool or one after the other on the calling thread, as [`Par`]
//! says; each worker keeps one scratch value for all the blocks it runs
//! (sized up front by the caller's `work`), and the blocks' results come
//! back in block order, whatever order they ran in. The field executor, the
//! phased executor, the IR runners and the jump kernels schedule their
//! blocks through [`run_blocks`], so `Par::Seq` is one thread and results
//! are ordered the same way everywhere.

use crate::error::FieldError;
use crate::par::Par;
use rayon::prelude::*;

/// Runs `run(scratch, b, piece_b)` for every block `b` of `out`, where
/// `piece_b` is `out[b·piece .. (b+1)·piece]` (the last piece may be
/// shorter), under `par`: blocks in parallel for [`Par::Auto`] and
/// [`Par::Rayon`], in order on the calling thread for [`Par::Seq`]. `work`
/// makes one scratch value per worker (once for [`Par::Seq`]). Returns the
/// blocks' results in block order.
///
/// # Errors
/// [`FieldError::ThreadPool`] if [`Par::Rayon`] asks for a pool that cannot
/// be built.
///
/// # Panics
/// If `piece` is 0 (a block owns at least one value; callers with no state
/// give each block a placeholder value).
pub fn run_blocks<T, W, R>(
    par: Par,
    out: &mut [T],
    piece: usize,
    work: impl Fn() -> W + Sync + Send,
    run: impl Fn(&mut W, usize, &mut [T]) -> R + Sync + Send,
) -> Result<Vec<R>, FieldError>
where
    T: Send,
    R: Send,
{
    assert!(piece > 0, "a block owns at least one value");
    par.run(|parallel| {
        Ok(if parallel {
            out.par_chunks_mut(piece)
                .enumerate()
                .map_init(&work, |w, (b, p)| run(w, b, p))
                .collect()
        } else {
            let mut w = work();
            out.chunks_mut(piece)
                .enumerate()
                .map(|(b, p)| run(&mut w, b, p))
                .collect()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::thread::ThreadId;

    /// Each block writes its index into its piece; the results are the
    /// block indices in order, for every parallelism; `Par::Seq` runs on
    /// the calling thread with one scratch value.
    #[test]
    fn blocks_in_order_for_every_par() {
        for par in [Par::Seq, Par::Auto, Par::Rayon(1), Par::Rayon(3)] {
            let mut out = vec![0usize; 103];
            let made = AtomicUsize::new(0);
            let r = run_blocks(
                par,
                &mut out,
                10,
                || made.fetch_add(1, Ordering::Relaxed),
                |_, b, p| {
                    p.fill(b);
                    (b, p.len(), std::thread::current().id())
                },
            )
            .unwrap();
            assert_eq!(r.len(), 11, "{par:?}");
            for (i, &(b, len, _)) in r.iter().enumerate() {
                assert_eq!((b, len), (i, if i == 10 { 3 } else { 10 }), "{par:?}");
            }
            assert!(out.iter().enumerate().all(|(i, &v)| v == i / 10), "{par:?}");
            if par == Par::Seq {
                let here: ThreadId = std::thread::current().id();
                assert!(r.iter().all(|&(_, _, t)| t == here));
                assert_eq!(made.load(Ordering::Relaxed), 1);
            }
        }
    }
}
