//! The one block scheduler of the CPU executors: a launch's blocks, each
//! owning its consecutive piece of one output slice, run in parallel on
//! rayon's pool or one after the other on the calling thread, as [`Par`]
//! says; each worker keeps one scratch value for all the blocks it runs
//! (sized up front by the caller's `work`; rayon splits a launch into more
//! jobs than it has workers, so scratch goes back to a pool when a job ends
//! and the next job takes it), and the blocks' results come back in block
//! order, whatever order they ran in. A block may fail
//! ([`try_run_blocks`]): blocks after a failing block are not started, and
//! the error returned is the lowest failing block's, whatever the thread
//! count. The field executor, the phased executor, the IR runners, the jump
//! kernels and the PTX interpreter schedule their blocks here, so
//! `Par::Seq` is one thread and results are ordered the same way everywhere.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

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
    W: Send,
    R: Send,
{
    let done = try_run_blocks(par, out, piece, work, |w, b, p| {
        Ok::<R, Infallible>(run(w, b, p))
    })?;
    Ok(done.unwrap_or_else(|never| match never {}))
}

/// [`run_blocks`] for blocks that may fail: `run` returns `Err` for a block
/// that failed, and no block after it is started (in parallel, blocks already
/// running finish). The outer result is the scheduler's (a thread pool that
/// cannot be built); the inner one is the blocks' results in block order, or
/// the error of the lowest failing block: every block before it ran, so the
/// error chosen does not depend on the thread count or on timing. With
/// [`Par::Seq`] the blocks run in order on the calling thread and stop at the
/// first failure.
///
/// # Errors
/// As [`run_blocks`].
///
/// # Panics
/// As [`run_blocks`].
pub fn try_run_blocks<T, W, R, E>(
    par: Par,
    out: &mut [T],
    piece: usize,
    work: impl Fn() -> W + Sync + Send,
    run: impl Fn(&mut W, usize, &mut [T]) -> Result<R, E> + Sync + Send,
) -> Result<Result<Vec<R>, E>, FieldError>
where
    T: Send,
    W: Send,
    R: Send,
    E: Send,
{
    assert!(piece > 0, "a block owns at least one value");
    par.run(|parallel| {
        if !parallel {
            let mut w = work();
            return Ok(out
                .chunks_mut(piece)
                .enumerate()
                .map(|(b, p)| run(&mut w, b, p))
                .collect());
        }
        let nblocks = out.len().div_ceil(piece);
        // The lowest failing block so far: blocks above it are not started.
        let cutoff = AtomicUsize::new(usize::MAX);
        let failed: Mutex<Option<(usize, E)>> = Mutex::new(None);
        let pool = ScratchPool(Mutex::new(Vec::new()));
        let ran: Vec<Option<R>> = out
            .par_chunks_mut(piece)
            .enumerate()
            .map_init(
                || pool.take(&work),
                |w, (b, p)| {
                    if b > cutoff.load(Ordering::Relaxed) {
                        return None;
                    }
                    match run(w.get(), b, p) {
                        Ok(r) => Some(r),
                        Err(e) => {
                            let mut f = failed.lock().unwrap_or_else(PoisonError::into_inner);
                            if f.as_ref().is_none_or(|&(fb, _)| b < fb) {
                                *f = Some((b, e));
                            }
                            cutoff.fetch_min(b, Ordering::Relaxed);
                            None
                        }
                    }
                },
            )
            .collect();
        Ok(
            match failed.into_inner().unwrap_or_else(PoisonError::into_inner) {
                Some((_, e)) => Err(e),
                // No block failed, so none was skipped: every slot is filled.
                None => {
                    let all: Vec<R> = ran.into_iter().flatten().collect();
                    debug_assert_eq!(all.len(), nblocks);
                    Ok(all)
                }
            },
        )
    })
}

/// [`try_run_blocks`] for blocks that own no output values: `run(scratch, b)`
/// for every block `b` in `0..nblocks`.
///
/// # Errors
/// As [`try_run_blocks`].
pub fn try_run_indexed<W, R, E>(
    par: Par,
    nblocks: usize,
    work: impl Fn() -> W + Sync + Send,
    run: impl Fn(&mut W, usize) -> Result<R, E> + Sync + Send,
) -> Result<Result<Vec<R>, E>, FieldError>
where
    W: Send,
    R: Send,
    E: Send,
{
    // One zero-sized placeholder per block: no memory.
    try_run_blocks(par, &mut vec![(); nblocks], 1, work, |w, b, _| run(w, b))
}

/// The most bytes [`try_run_blocks`] holds per block for results of type `R`:
/// a slot per block while the blocks run, and the results in block order.
/// For callers that check a launch's memory before running it.
pub const fn result_bytes_per_block<R>() -> u64 {
    (std::mem::size_of::<Option<R>>() + std::mem::size_of::<R>()) as u64
}

/// Scratch values of finished jobs, for the next job to take.
struct ScratchPool<W>(Mutex<Vec<W>>);

/// A scratch value taken from a [`ScratchPool`], returned to it when dropped.
struct Pooled<'p, W> {
    w: Option<W>,
    pool: &'p ScratchPool<W>,
}

impl<W> ScratchPool<W> {
    fn take(&self, work: impl Fn() -> W) -> Pooled<'_, W> {
        // Taken under the lock, made (if the pool is empty) outside it.
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let w = kept.unwrap_or_else(work);
        Pooled {
            w: Some(w),
            pool: self,
        }
    }
}

impl<W> Pooled<'_, W> {
    fn get(&mut self) -> &mut W {
        self.w.as_mut().expect("present until dropped")
    }
}

impl<W> Drop for Pooled<'_, W> {
    fn drop(&mut self) {
        if let Some(w) = self.w.take() {
            self.pool
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(w);
        }
    }
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

    /// Blocks that fail: the error is the lowest failing block's for every
    /// parallelism, even when a higher block fails first in time; every
    /// block below it ran, and with `Par::Seq` no block after it started.
    #[test]
    fn the_lowest_failing_block_is_the_error_for_every_par() {
        for par in [Par::Seq, Par::Auto, Par::Rayon(1), Par::Rayon(3)] {
            let mut out = vec![0usize; 200];
            let started: Vec<AtomicUsize> = (0..200).map(|_| AtomicUsize::new(0)).collect();
            let r = try_run_blocks(
                par,
                &mut out,
                1,
                || (),
                |_, b, p| {
                    started[b].fetch_add(1, Ordering::Relaxed);
                    p[0] = 1;
                    match b {
                        // Block 37 fails late, after block 150 has had time to fail.
                        37 => {
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            Err(format!("block {b}"))
                        }
                        90 | 150 => Err(format!("block {b}")),
                        _ => Ok(b),
                    }
                },
            )
            .unwrap();
            assert_eq!(r, Err("block 37".to_string()), "{par:?}");
            let ran = |b: usize| started[b].load(Ordering::Relaxed);
            assert!((0..=37).all(|b| ran(b) == 1 && out[b] == 1), "{par:?}");
            assert!((0..200).all(|b| ran(b) <= 1), "{par:?}");
            if par == Par::Seq {
                assert!((38..200).all(|b| ran(b) == 0 && out[b] == 0));
            }
        }
    }

    /// In parallel, blocks after a failing block are not started: block 0
    /// fails at once, the others take a millisecond each, so only the
    /// blocks already running when it failed run.
    #[test]
    fn blocks_after_a_failure_do_not_start() {
        for par in [Par::Auto, Par::Rayon(3)] {
            let started = AtomicUsize::new(0);
            let r = try_run_indexed(
                par,
                300,
                || (),
                |_, b| {
                    started.fetch_add(1, Ordering::Relaxed);
                    if b == 0 {
                        return Err(b);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(r, Err(0), "{par:?}");
            let n = started.load(Ordering::Relaxed);
            assert!(
                n < 150,
                "{par:?}: {n} of 300 blocks started after block 0 failed"
            );
        }
    }

    /// With no failure every block runs and the results are in order; the
    /// scratch is made once per worker, not once per rayon job.
    #[test]
    fn no_failure_all_results_in_order_scratch_per_worker() {
        for (par, workers) in [(Par::Seq, 1), (Par::Rayon(1), 1), (Par::Rayon(3), 3)] {
            let made = AtomicUsize::new(0);
            let r = try_run_indexed(
                par,
                5000,
                || made.fetch_add(1, Ordering::Relaxed),
                |_, b| Ok::<usize, ()>(b * 2),
            )
            .unwrap()
            .unwrap();
            assert_eq!(r, (0..5000).map(|b| b * 2).collect::<Vec<_>>(), "{par:?}");
            let made = made.load(Ordering::Relaxed);
            assert!(
                (1..=workers).contains(&made),
                "{par:?}: {made} scratch values"
            );
        }
    }
}
