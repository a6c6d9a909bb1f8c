//! [`Par`]: parallelism as an explicit value, as in faer.

use crate::error::FieldError;

/// How an executor spreads blocks over threads. Results do not depend on it:
/// every choice gives the same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Par {
    /// One thread, blocks in order.
    Seq,
    /// A rayon pool of `n` threads; `0` means rayon's default (one per core).
    /// When `n` differs from the current pool's size, a local pool of `n`
    /// threads is built for the call.
    Rayon(usize),
    /// The current rayon pool, whatever its size.
    #[default]
    Auto,
}

impl Par {
    /// Runs `f` under this parallelism: directly for [`Par::Seq`], inside a rayon
    /// pool of the requested size otherwise. `f` receives `true` when it may use
    /// rayon's parallel iterators.
    ///
    /// # Errors
    /// [`FieldError::ThreadPool`] if a local pool cannot be built; errors of `f`.
    pub fn run<R: Send>(
        self,
        f: impl FnOnce(bool) -> Result<R, FieldError> + Send,
    ) -> Result<R, FieldError> {
        match self {
            Par::Seq => f(false),
            Par::Auto => f(true),
            Par::Rayon(n) => {
                if n == 0 || n == rayon::current_num_threads() {
                    return f(true);
                }
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .map_err(|e| FieldError::ThreadPool {
                        threads: n,
                        why: e.to_string(),
                    })?;
                pool.install(|| f(true))
            }
        }
    }

    /// The number of threads this value uses.
    pub fn threads(self) -> usize {
        match self {
            Par::Seq => 1,
            Par::Rayon(0) | Par::Auto => rayon::current_num_threads(),
            Par::Rayon(n) => n,
        }
    }
}
