//! Launch geometry: [`Dim3`] and [`LaunchConfig`], CUDA's
//! `<<<grid, block, shared_bytes>>>`, and CUDA's limits on them, checked in one
//! place for every executor (the field and phased executors, the IR runners
//! and the PTX interpreter).
//!
//! Trajectories are numbered as CUDA numbers threads: the linear index of a
//! thread in its block is `x + y·bx + z·bx·by`, of a block in the grid
//! `x + y·gx + z·gx·gy`, and the global trajectory index is
//! `block_linear · threads_per_block + thread_linear`.

pub use crate::dim3::Dim3;
use crate::error::FieldError;

/// CUDA's per-block trajectory limit.
pub const MAX_THREADS_PER_BLOCK: u64 = 1024;
/// CUDA's per-axis block limits (x, y, z).
pub const MAX_BLOCK_DIM: [u64; 3] = [1024, 1024, 64];
/// CUDA's per-axis grid limits (x, y, z).
pub const MAX_GRID_DIM: [u64; 3] = [(1 << 31) - 1, 65535, 65535];
/// CUDA's most shared memory per block, static and dynamic together: 228 KiB
/// (compute capability 9.0).
pub const MAX_SHARED_BYTES_PER_BLOCK: u64 = 228 * 1024;

/// A validated `<<<grid, block, shared_bytes>>>`: `grid.count() · block.count()`
/// trajectories.
///
/// Build it with [`LaunchConfig::new`] (or [`LaunchConfig::linear`], then
/// [`LaunchConfig::with_shared_bytes`]); the fields are public, and every
/// executor validates again before it runs, so a hand-built value with bad
/// dimensions is still refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Number of blocks (basins) on each axis.
    pub grid: Dim3,
    /// Number of trajectories per block on each axis.
    pub block: Dim3,
    /// Dynamic shared memory per block in bytes (CUDA's third `<<<>>>`
    /// argument, PTX's `extern .shared`). The PTX interpreter gives it to each
    /// block; the field executors and the IR runners size their shared
    /// sub-fields from the kernel and do not read it.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// A launch of `grid` blocks of `block` trajectories each, with no dynamic
    /// shared memory.
    ///
    /// # Errors
    /// [`FieldError::ZeroDimension`] if any component is zero,
    /// [`FieldError::BlockTooLarge`] if a block holds more than 1024 trajectories,
    /// [`FieldError::DimensionTooLarge`] if an axis exceeds CUDA's limit.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Result<Self, FieldError> {
        let cfg = LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_bytes: 0,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// A 1-D launch covering at least `n` trajectories with blocks of `block`
    /// trajectories: `grid = ceil(n / block)`. Trajectories past `n` exist (as in
    /// CUDA) and the kernel guards them.
    ///
    /// # Errors
    /// As [`LaunchConfig::new`]; `n = 0` is a zero grid.
    pub fn linear(n: usize, block: u32) -> Result<Self, FieldError> {
        if block == 0 {
            return Err(FieldError::ZeroDimension {
                which: "block",
                dims: Dim3::linear(0),
            });
        }
        let blocks = n.div_ceil(block as usize);
        let gx = u32::try_from(blocks).map_err(|_| FieldError::DimensionTooLarge {
            which: "grid",
            dims: Dim3::linear(u32::MAX),
            axis: 'x',
            limit: MAX_GRID_DIM[0],
        })?;
        LaunchConfig::new(Dim3::linear(gx), Dim3::linear(block))
    }

    /// This launch with `bytes` of dynamic shared memory per block.
    ///
    /// # Errors
    /// [`FieldError::SharedTooLarge`] if `bytes` exceeds
    /// [`MAX_SHARED_BYTES_PER_BLOCK`].
    pub fn with_shared_bytes(self, bytes: u32) -> Result<Self, FieldError> {
        let cfg = LaunchConfig {
            shared_bytes: bytes,
            ..self
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the dimensions and the dynamic shared memory (see
    /// [`LaunchConfig::new`] and [`LaunchConfig::with_shared_bytes`]).
    ///
    /// # Errors
    /// As [`LaunchConfig::validate_with_shared`] for a kernel with no static
    /// shared memory.
    pub fn validate(&self) -> Result<(), FieldError> {
        self.validate_with_shared(0)
    }

    /// Checks the dimensions against CUDA's limits, and the shared memory of a
    /// block of a kernel declaring `static_bytes` of its own plus this launch's
    /// dynamic bytes against [`MAX_SHARED_BYTES_PER_BLOCK`].
    ///
    /// # Errors
    /// [`FieldError::ZeroDimension`], [`FieldError::BlockTooLarge`],
    /// [`FieldError::DimensionTooLarge`] as [`LaunchConfig::new`];
    /// [`FieldError::SharedTooLarge`] for too much shared memory.
    pub fn validate_with_shared(&self, static_bytes: u64) -> Result<(), FieldError> {
        for (which, dims) in [("grid", self.grid), ("block", self.block)] {
            if dims.x == 0 || dims.y == 0 || dims.z == 0 {
                return Err(FieldError::ZeroDimension { which, dims });
            }
        }
        let threads = self.block.count();
        if threads > MAX_THREADS_PER_BLOCK {
            return Err(FieldError::BlockTooLarge {
                dims: self.block,
                threads,
                limit: MAX_THREADS_PER_BLOCK,
            });
        }
        for (which, dims, limits) in [
            ("grid", self.grid, MAX_GRID_DIM),
            ("block", self.block, MAX_BLOCK_DIM),
        ] {
            for ((v, limit), axis) in dims.axes().into_iter().zip(limits).zip(['x', 'y', 'z']) {
                if v > limit {
                    return Err(FieldError::DimensionTooLarge {
                        which,
                        dims,
                        axis,
                        limit,
                    });
                }
            }
        }
        let total = static_bytes.saturating_add(self.shared_bytes as u64);
        if total > MAX_SHARED_BYTES_PER_BLOCK {
            return Err(FieldError::SharedTooLarge {
                static_bytes,
                dynamic_bytes: self.shared_bytes,
                total,
                limit: MAX_SHARED_BYTES_PER_BLOCK,
            });
        }
        Ok(())
    }

    /// Trajectories per block (`block.count()`).
    pub fn threads_per_block(&self) -> usize {
        self.block.count() as usize
    }

    /// Number of blocks (`grid.count()`).
    pub fn num_blocks(&self) -> usize {
        self.grid.count() as usize
    }

    /// Total trajectories, `grid.count() · block.count()`.
    pub fn total_threads(&self) -> usize {
        self.num_blocks() * self.threads_per_block()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linearize_roundtrip() {
        let e = Dim3::new(3, 4, 5);
        for i in 0..e.count() {
            assert_eq!(e.linearize(e.delinearize(i)), i);
        }
        assert_eq!(e.delinearize(1 + 3 * 2 + 12 * 4), Dim3::new(1, 2, 4));
    }

    #[test]
    fn linear_covers_n() {
        let c = LaunchConfig::linear(1000, 256).unwrap();
        assert_eq!(c.grid, Dim3::linear(4));
        assert_eq!(c.total_threads(), 1024);
    }

    /// CUDA's limits, each refused naming itself: threads per block, each
    /// axis of grid and block, shared memory (static and dynamic together).
    #[test]
    fn cuda_limits_are_refused_naming_the_limit() {
        let e = LaunchConfig::new(1, (32, 32, 2)).unwrap_err();
        assert!(matches!(e, FieldError::BlockTooLarge { threads: 2048, .. }));
        assert!(
            e.to_string().contains("limit of 1024 threads per block"),
            "{e}"
        );
        let e = LaunchConfig::new(1, (1, 1, 65)).unwrap_err();
        assert!(e.to_string().contains("limit of 64 on axis z"), "{e}");
        let e = LaunchConfig::new((1u32 << 31, 1, 1), 1).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("2147483648") && s.contains("2147483647"), "{s}");
        let e = LaunchConfig::new((1, 1, 65536), 1).unwrap_err();
        assert!(e.to_string().contains("65535 on axis z"), "{e}");
        assert!(LaunchConfig::new(((1u32 << 31) - 1, 65535, 65535), (1024, 1, 1)).is_ok());

        let c = LaunchConfig::new(2, 32).unwrap();
        let limit = MAX_SHARED_BYTES_PER_BLOCK as u32;
        assert_eq!(c.with_shared_bytes(limit).unwrap().shared_bytes, limit);
        let e = c.with_shared_bytes(limit + 1).unwrap_err();
        assert!(matches!(
            e,
            FieldError::SharedTooLarge { total: 233473, .. }
        ));
        let c = c.with_shared_bytes(1000).unwrap();
        assert!(c
            .validate_with_shared(MAX_SHARED_BYTES_PER_BLOCK - 1000)
            .is_ok());
        let e = c
            .validate_with_shared(MAX_SHARED_BYTES_PER_BLOCK - 999)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("233473 bytes of shared memory per block (232473 static + 1000 dynamic)")
                && e.contains("228 KiB"),
            "{e}"
        );
    }
}
