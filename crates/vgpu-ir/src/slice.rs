//! A launch that is one part of a larger one: trajectories `first .. first + n`
//! of a launch of `total`. Every trajectory of a slice sees the launch values it
//! sees in the whole launch (`i`, `bid`, `tid`, `n`, `gdim`), reads the whole
//! launch's buffers at its global index and reports faults by its global index,
//! so a slice computes exactly the rows the whole launch computes for it: the
//! basis of `vgpu ensemble --shard` and of MPI runs.

use crate::error::IrError;

/// Trajectories `first .. first + n` of a launch of `total` (`n` is the
/// launch's own count). `first` is a multiple of the block size, so the slice's
/// blocks are whole blocks of the larger launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// Global index of the slice's first trajectory.
    pub first: usize,
    /// Trajectories of the whole launch.
    pub total: usize,
}

impl Slice {
    /// The whole launch of `n` trajectories.
    pub fn whole(n: usize) -> Slice {
        Slice { first: 0, total: n }
    }

    /// Checks that `n` trajectories from `first` lie in `0..total`, that
    /// `first` starts a block of `block` lanes and that `total` fits the
    /// 32-bit launch values.
    ///
    /// # Errors
    /// [`IrError::Launch`] naming the kernel, the slice and the rule it breaks.
    pub fn check(&self, kernel: &str, n: usize, block: usize) -> Result<(), IrError> {
        let err = |message: String| IrError::Launch {
            kernel: kernel.into(),
            message,
        };
        let end = self.first.checked_add(n);
        if end.is_none_or(|e| e > self.total) {
            return Err(err(format!(
                "slice of {n} trajectories from {} runs past the launch's {}",
                self.first, self.total
            )));
        }
        if self.total > u32::MAX as usize {
            return Err(err(format!("n = {} exceeds 2^32 - 1", self.total)));
        }
        if block == 0 || self.first % block != 0 {
            return Err(err(format!(
                "a slice starts a block: first trajectory {} is not a multiple of the block size {block}",
                self.first
            )));
        }
        Ok(())
    }

    /// Blocks of `block` lanes in the whole launch (`gdim`).
    pub fn blocks(&self, block: usize) -> usize {
        self.total.div_ceil(block.max(1))
    }

    /// Global index of the slice's first block.
    pub fn first_block(&self, block: usize) -> usize {
        self.first / block.max(1)
    }
}
