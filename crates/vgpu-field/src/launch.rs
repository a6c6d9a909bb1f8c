//! Launch geometry: [`Dim3`] and [`LaunchConfig`], CUDA's `<<<grid, block>>>`.
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

/// A validated `<<<grid, block>>>`: `grid.count() · block.count()` trajectories.
///
/// Build it with [`LaunchConfig::new`] (or [`LaunchConfig::linear`]); the
/// fields are public for reading, and every executor validates again before it
/// runs, so a hand-built value with bad dimensions is still refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Number of blocks (basins) on each axis.
    pub grid: Dim3,
    /// Number of trajectories per block on each axis.
    pub block: Dim3,
}

impl LaunchConfig {
    /// A launch of `grid` blocks of `block` trajectories each.
    ///
    /// # Errors
    /// [`FieldError::ZeroDimension`] if any component is zero,
    /// [`FieldError::BlockTooLarge`] if a block holds more than 1024 trajectories,
    /// [`FieldError::DimensionTooLarge`] if an axis exceeds CUDA's limit.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Result<Self, FieldError> {
        let cfg = LaunchConfig {
            grid: grid.into(),
            block: block.into(),
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

    /// Checks the dimensions (see [`LaunchConfig::new`]).
    ///
    /// # Errors
    /// As [`LaunchConfig::new`].
    pub fn validate(&self) -> Result<(), FieldError> {
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
}
