//! A cached kernel's GPU side of one dispatch: its buffers and bind group,
//! uploads, the encoded passes, the wait for the submission and the readback.
//! [`super::KernelCache::run`] drives these steps in order.

use super::timestamps::Stamps;
use super::{Binding, BindingKind, CachedKernel, KernelSpec, MAP_ALIGN};
use crate::runtime::GpuContext;
use crate::GpuError;
use rayon::prelude::*;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

impl CachedKernel {
    /// Buffers allocated once and grown when a larger size comes, the bind group
    /// rebuilt when they change, the staging buffer sized for the downloads.
    /// Returns the staging bytes the downloads need.
    pub(super) fn prepare(
        &mut self,
        ctx: &GpuContext,
        spec: &KernelSpec,
        bindings: &[Binding<'_>],
        kinds: &[BindingKind],
        reuse: bool,
        readback: bool,
    ) -> u64 {
        let device = &ctx.device;
        let mut stale = self.bind_group.is_none();
        let mut staging_len = 0u64;
        for (i, b) in bindings.iter().enumerate() {
            let kind = kinds[i];
            if let BindingKind::Alias(target) = kind {
                // The target's buffer and size (checked earlier than this one).
                let len = self.bound_sizes[target];
                if self.bound_sizes[i] != len {
                    self.bound_sizes[i] = len;
                    stale = true;
                }
                continue;
            }
            let len = b.len();
            let have = self.buffers[i].as_ref().map_or(0, |buf| buf.size());
            if have < len {
                let usage = if kind == BindingKind::Uniform {
                    wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST
                } else {
                    wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_DST
                        | wgpu::BufferUsages::COPY_SRC
                };
                self.buffers[i] = Some(device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&spec.label),
                    size: len,
                    usage,
                    mapped_at_creation: false,
                }));
                stale = true;
            }
            if self.bound_sizes[i] != len {
                self.bound_sizes[i] = len;
                stale = true;
            }
            if kind.downloads() {
                staging_len = staging_len.next_multiple_of(MAP_ALIGN) + len;
            }
        }
        if stale && !reuse {
            let entries: Vec<wgpu::BindGroupEntry<'_>> = self
                .buffers
                .iter()
                .zip(&self.bound_sizes)
                .enumerate()
                .map(|(i, (buf, &size))| wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: match kinds[i] {
                            BindingKind::Alias(target) => &self.buffers[target],
                            _ => buf,
                        }
                        .as_ref()
                        .expect("allocated above"),
                        offset: 0,
                        size: NonZeroU64::new(size),
                    }),
                })
                .collect();
            self.bind_group = Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&spec.label),
                layout: &self.layout,
                entries: &entries,
            }));
        }
        let staging_len = staging_len.next_multiple_of(4);
        if readback && staging_len > 0 {
            let have = self.staging.as_ref().map_or(0, |s| s.size());
            if have < staging_len {
                self.staging = Some(device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("vgpu staging"),
                    size: staging_len,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }));
            }
        }
        staging_len
    }

    /// Writes the uploading bindings into their buffers; returns the bytes.
    pub(super) fn upload(&self, ctx: &GpuContext, bindings: &[Binding<'_>]) -> u64 {
        let mut bytes = 0;
        for (i, b) in bindings.iter().enumerate() {
            if let Some(data) = b.upload() {
                let buf = self.buffers[i].as_ref().expect("allocated by prepare");
                ctx.queue.write_buffer(buf, 0, data);
                bytes += data.len() as u64;
            }
        }
        bytes
    }

    /// `repeat` compute passes, each with the pipeline and bind group set, then
    /// (with `readback`) the copies of the downloading bindings into the staging
    /// buffer; returns the encoder and each download's (binding, staging offset).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn encode(
        &self,
        ctx: &GpuContext,
        spec: &KernelSpec,
        bindings: &[Binding<'_>],
        workgroups: [u32; 3],
        repeat: u32,
        readback: bool,
        stamps: Option<&Stamps>,
    ) -> (wgpu::CommandEncoder, Vec<(usize, u64)>) {
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some(&spec.label),
            });
        let bind_group = self.bind_group.as_ref().expect("built by prepare");
        for i in 0..repeat {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(&spec.label),
                timestamp_writes: stamps.map(|s| s.writes(i)),
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, bind_group, &[]);
            pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
        }
        if let Some(s) = stamps {
            s.encode_readback(&mut encoder);
        }
        let mut offsets = Vec::new();
        if readback {
            let staging = self.staging.as_ref().expect("allocated by prepare");
            let mut off = 0u64;
            for (i, b) in bindings.iter().enumerate() {
                if b.kind().downloads() {
                    off = off.next_multiple_of(MAP_ALIGN);
                    let buf = self.buffers[i].as_ref().expect("allocated by prepare");
                    encoder.copy_buffer_to_buffer(buf, 0, staging, off, b.len());
                    offsets.push((i, off));
                    off += b.len();
                }
            }
        }
        (encoder, offsets)
    }
}

/// Waits for submission `index` and, with a `staging` buffer, for its mapping:
/// the map callback says the submission is done; without one the queue is
/// asked to say so. On failure the staging buffer is unmapped and the message
/// says what happened.
pub(super) fn wait_and_map(
    ctx: &GpuContext,
    index: wgpu::SubmissionIndex,
    staging: Option<&wgpu::Buffer>,
    staging_len: u64,
    spin: Duration,
    timeout: Duration,
) -> Result<(), String> {
    let mapped = Arc::new(AtomicU8::new(0));
    if let Some(staging) = staging {
        let flag = Arc::clone(&mapped);
        staging
            .slice(..staging_len)
            .map_async(wgpu::MapMode::Read, move |r| {
                flag.store(if r.is_ok() { 1 } else { 2 }, Ordering::SeqCst)
            });
    }
    let done = Arc::new(AtomicU8::new(0));
    if staging.is_none() {
        let done = Arc::clone(&done);
        ctx.queue
            .on_submitted_work_done(move || done.store(1, Ordering::SeqCst));
    }
    let polled = wait(
        &ctx.device,
        index,
        &done,
        &mapped,
        staging.is_some(),
        spin,
        timeout,
    );
    let unmapped = |msg: String| {
        if let Some(s) = staging {
            s.unmap();
        }
        Err(msg)
    };
    if let Err(e) = polled {
        return unmapped(format!("waiting for the GPU: {e}"));
    }
    match (staging, mapped.load(Ordering::SeqCst)) {
        (None, _) | (Some(_), 1) => Ok(()),
        (Some(_), 0) => unmapped(format!(
            "the readback buffer was not mapped within {timeout:?}"
        )),
        (Some(_), _) => unmapped("mapping the readback buffer failed".to_string()),
    }
}

/// Copies the mapped staging buffer into the downloading bindings at their
/// offsets; returns the bytes copied. The caller unmaps.
pub(super) fn read_back(
    staging: &wgpu::Buffer,
    staging_len: u64,
    bindings: &mut [Binding<'_>],
    offsets: &[(usize, u64)],
) -> Result<u64, String> {
    let view = staging
        .slice(..staging_len)
        .get_mapped_range()
        .map_err(|e| e.to_string())?;
    let mut bytes = 0;
    for &(i, off) in offsets {
        let off = off as usize;
        if let Binding::Write(out) | Binding::ReadWrite(out) = &mut bindings[i] {
            let n = out.len();
            // Large results are copied on all cores.
            out.par_chunks_mut(1 << 20)
                .zip(view[off..off + n].par_chunks(1 << 20))
                .for_each(|(d, s)| d.copy_from_slice(s));
            bytes += n as u64;
        }
    }
    Ok(bytes)
}

/// Waits for submission `index`: first by spinning on non-blocking polls for up to
/// `spin` (a blocking fence wait can cost tens of microseconds of wake-up latency,
/// more than a small kernel takes), then by a blocking wait of at most `timeout`.
/// Done when the staging buffer is mapped (with `readback`), else when the queue
/// reports the submission done; a callback that another thread's poll is about to
/// run is waited for too.
fn wait(
    device: &wgpu::Device,
    index: wgpu::SubmissionIndex,
    done: &AtomicU8,
    mapped: &AtomicU8,
    readback: bool,
    spin: Duration,
    timeout: Duration,
) -> Result<(), wgpu::PollError> {
    let finished = || {
        if readback {
            mapped.load(Ordering::SeqCst) != 0
        } else {
            done.load(Ordering::SeqCst) != 0
        }
    };
    let start = Instant::now();
    while start.elapsed() < spin {
        device.poll(wgpu::PollType::Poll)?;
        if finished() {
            return Ok(());
        }
        std::hint::spin_loop();
    }
    device.poll(wgpu::PollType::Wait {
        submission_index: Some(index),
        timeout: Some(timeout),
    })?;
    // The submission is done, but its callbacks may not have run yet: they run
    // at the end of whichever poll collected them, and with several threads
    // sharing the device (the process-wide context), that can be another
    // thread's poll, still between collecting and firing them. Keep polling
    // until ours has run.
    while !finished() {
        if start.elapsed() >= spin + timeout {
            break;
        }
        device.poll(wgpu::PollType::Poll)?;
        std::thread::yield_now();
    }
    Ok(())
}

/// With `VGPU_DUMP_SPV=DIR` in the environment, writes the SPIR-V given to
/// the driver for `spec` to `DIR/<label>.spv` (the label's characters other
/// than letters, digits, `-` and `_` as `_`), for reading it or compiling it
/// apart (the `pipeline_stats` example: the driver's register counts).
///
/// # Errors
/// [`GpuError::Compile`] naming the file when it cannot be written.
fn dump_spirv(spec: &KernelSpec, words: &[u32]) -> Result<(), GpuError> {
    let Some(dir) = std::env::var_os("VGPU_DUMP_SPV") else {
        return Ok(());
    };
    let name: String = spec
        .label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = std::path::Path::new(&dir).join(format!("{name}.spv"));
    std::fs::write(&path, bytemuck::cast_slice::<u32, u8>(words)).map_err(|e| GpuError::Compile {
        label: spec.label.to_string(),
        entry: spec.entry.to_string(),
        message: format!("VGPU_DUMP_SPV: cannot write {}: {e}", path.display()),
    })
}

/// Compiles `spec` (shader module, bind group layout from `kinds`, pipeline) inside
/// a validation error scope.
pub(super) fn compile(
    ctx: &GpuContext,
    spec: &KernelSpec,
    kinds: &[BindingKind],
) -> Result<CachedKernel, GpuError> {
    let device = &ctx.device;
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(&spec.label),
        source: wgpu::ShaderSource::Wgsl(std::borrow::Cow::Borrowed(&spec.wgsl)),
    };
    let module = if spec.f32_subnormals
        && ctx.declares_f32_subnormals()
        && spec.constants.is_empty()
    {
        let words =
            super::spirv::float_controlled(ctx, spec).map_err(|message| GpuError::Compile {
                label: spec.label.to_string(),
                entry: spec.entry.to_string(),
                message,
            })?;
        dump_spirv(spec, &words)?;
        let entry = wgpu::PassthroughShaderEntryPoint {
            name: std::borrow::Cow::Borrowed(&spec.entry),
            workgroup_size: (
                spec.workgroup_size[0],
                spec.workgroup_size[1],
                spec.workgroup_size[2],
            ),
        };
        // SAFETY: the words are naga's own SPIR-V for WGSL that naga
        // validated (spirv.rs), plus the float-controls capability,
        // extension and execution mode, which Vulkan 1.2 drivers accept, and
        // NoContraction decorations, core SPIR-V.
        unsafe {
            device.create_shader_module_passthrough(wgpu::ShaderModuleDescriptorPassthrough {
                label: Some(&spec.label),
                entry_points: std::borrow::Cow::Borrowed(std::slice::from_ref(&entry)),
                spirv: Some(std::borrow::Cow::Owned(words)),
                ..Default::default()
            })
        }
    } else if spec.runtime_checks && spec.loops_bounded {
        let checks = wgpu::ShaderRuntimeChecks {
            force_loop_bounding: false,
            ..wgpu::ShaderRuntimeChecks::checked()
        };
        // SAFETY: the spec's creator promised, through the `unsafe`
        // `KernelSpec::with_loops_bounded`, that every loop terminates.
        unsafe { device.create_shader_module_trusted(desc, checks) }
    } else if spec.runtime_checks {
        device.create_shader_module(desc)
    } else {
        // SAFETY: the spec's creator promised, through the `unsafe`
        // `KernelSpec::without_runtime_checks`, that the kernel stays in bounds
        // and terminates.
        unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
    };
    let entries: Vec<wgpu::BindGroupLayoutEntry> = kinds
        .iter()
        .enumerate()
        .map(|(i, kind)| wgpu::BindGroupLayoutEntry {
            binding: i as u32,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: match kind {
                    BindingKind::Uniform => wgpu::BufferBindingType::Uniform,
                    BindingKind::Read => wgpu::BufferBindingType::Storage { read_only: true },
                    _ => wgpu::BufferBindingType::Storage { read_only: false },
                },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect();
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(&spec.label),
        entries: &entries,
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(&spec.label),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let constants: Vec<(&str, f64)> = spec
        .constants
        .iter()
        .map(|(n, v)| (n.as_str(), *v))
        .collect();
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(&spec.label),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some(&spec.entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants: &constants,
            zero_initialize_workgroup_memory: spec.zero_workgroup_memory,
        },
        cache: ctx.wgpu_pipeline_cache(),
    });
    if let Some(e) = pollster::block_on(scope.pop()) {
        return Err(GpuError::Compile {
            label: spec.label.to_string(),
            entry: spec.entry.to_string(),
            message: e.to_string(),
        });
    }
    if let Some(msg) = ctx.take_uncaptured() {
        return Err(GpuError::Compile {
            label: spec.label.to_string(),
            entry: spec.entry.to_string(),
            message: msg,
        });
    }
    ctx.pipeline_compiled();
    Ok(CachedKernel {
        pipeline,
        layout,
        kinds: kinds.to_vec(),
        buffers: kinds.iter().map(|_| None).collect(),
        bound_sizes: vec![0; kinds.len()],
        bind_group: None,
        staging: None,
    })
}
