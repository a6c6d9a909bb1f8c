//! Counters of a kernel cache: what was compiled, reused, dispatched, moved.

use std::fmt;
use std::time::Duration;

/// What a [`crate::KernelCache`] or [`crate::VgpuCache`] has done since it was created.
///
/// `Display` prints the line of the original VGPU demo:
/// `VGPUCache: 2 compiles, 198 cache hits, 200 GPU dispatches, 0 CPU fallbacks`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Kernels compiled (shader module + pipeline created): one per distinct key.
    pub compiles: u64,
    /// Dispatches whose kernel was already compiled.
    pub cache_hits: u64,
    /// Dispatches run on the GPU (each one submit, with or without readback).
    pub gpu_dispatches: u64,
    /// Calls computed on the CPU instead (no adapter, `VGPU_BACKEND=cpu`, lost device).
    pub cpu_fallbacks: u64,
    /// Bytes written from host memory into GPU buffers.
    pub bytes_uploaded: u64,
    /// Bytes read back from GPU buffers into host memory.
    pub bytes_downloaded: u64,
    /// Total time spent compiling kernels (shader module + pipeline creation).
    pub compile_time: Duration,
}

impl fmt::Display for CacheStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "VGPUCache: {} compiles, {} cache hits, {} GPU dispatches, {} CPU fallbacks",
            self.compiles, self.cache_hits, self.gpu_dispatches, self.cpu_fallbacks
        )
    }
}
