//! GPU timestamps around timed compute passes, where the device has them
//! (`TIMESTAMP_QUERY`): the device time of each pass as the GPU clock measured
//! it, as CUDA events measure a kernel, rather than the host's wall time of a
//! submission divided by its passes.

use crate::runtime::GpuContext;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most passes timed with timestamps in one submission (two queries each;
/// WebGPU allows 4096 queries per set). Longer timings use the wall time.
pub(super) const MAX_STAMPED_PASSES: u32 = 2048;

/// A query set of two timestamps per pass and the buffers they are resolved
/// into and read back from.
pub(super) struct Stamps {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
    passes: u32,
}

impl Stamps {
    /// Timestamps for `passes` passes, or `None` where the device has no
    /// timestamp queries or `passes` is beyond [`MAX_STAMPED_PASSES`].
    pub(super) fn new(ctx: &GpuContext, passes: u32) -> Option<Stamps> {
        if !ctx.has_timestamps() || passes == 0 || passes > MAX_STAMPED_PASSES {
            return None;
        }
        let bytes = 2 * passes as u64 * wgpu::QUERY_SIZE as u64;
        let set = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("vgpu timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * passes,
        });
        let buffer = |usage, label| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        Some(Stamps {
            set,
            resolve: buffer(
                wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                "vgpu timestamps resolved",
            ),
            read: buffer(
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                "vgpu timestamps read",
            ),
            passes,
        })
    }

    /// The timestamp writes of pass `pass`: one at its start, one at its end.
    pub(super) fn writes(&self, pass: u32) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(2 * pass),
            end_of_pass_write_index: Some(2 * pass + 1),
        }
    }

    /// Resolves the queries and copies them where the host can map them; after
    /// the timed passes, in the same encoder.
    pub(super) fn encode_readback(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.resolve_query_set(&self.set, 0..2 * self.passes, &self.resolve, 0);
        encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.read, 0, self.read.size());
    }

    /// Each pass's device time, once the submission that wrote them is done.
    ///
    /// # Errors
    /// The mapping failed or did not finish within `timeout`.
    pub(super) fn durations(
        &self,
        ctx: &GpuContext,
        timeout: Duration,
    ) -> Result<Vec<Duration>, String> {
        let state = Arc::new(AtomicU8::new(0));
        let flag = Arc::clone(&state);
        self.read
            .slice(..)
            .map_async(wgpu::MapMode::Read, move |r| {
                flag.store(if r.is_ok() { 1 } else { 2 }, Ordering::SeqCst)
            });
        let start = Instant::now();
        while state.load(Ordering::SeqCst) == 0 {
            if start.elapsed() > timeout {
                return Err(format!("timestamps not mapped within {timeout:?}"));
            }
            ctx.device
                .poll(wgpu::PollType::Wait {
                    submission_index: None,
                    timeout: Some(timeout),
                })
                .map_err(|e| e.to_string())?;
        }
        if state.load(Ordering::SeqCst) != 1 {
            return Err("mapping the timestamps failed".into());
        }
        let period = ctx.queue.get_timestamp_period() as f64;
        let ticks: Vec<u64> = {
            let view = self
                .read
                .slice(..)
                .get_mapped_range()
                .map_err(|e| e.to_string())?;
            view.chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        };
        self.read.unmap();
        Ok(ticks
            .chunks_exact(2)
            .map(|p| Duration::from_nanos((p[1].saturating_sub(p[0]) as f64 * period) as u64))
            .collect())
    }
}
