//! The generic kernel cache: compile a WGSL kernel once per key, keep its buffers,
//! bind group and readback buffer, and run it again and again.
//!
//! # Model
//!
//! A kernel is described by a [`KernelSpec`]: its WGSL source, entry point, a
//! specialisation string (the shape, or anything else the source was generated
//! for), its workgroup size, pipeline-overridable constants and whether wgpu's
//! runtime checks stay on. Everything that changes the compiled code goes into
//! the spec's key, together with the adapter ([`KernelKey`]).
//!
//! A dispatch passes the kernel's bindings in order: `bindings[i]` is
//! `@group(0) @binding(i)` in the WGSL. Each [`Binding`] says how data moves:
//!
//! | [`Binding`] | WGSL declaration | host → GPU | GPU → host |
//! |---|---|---|---|
//! | `Read(&[u8])` | `var<storage, read>` | uploaded | — |
//! | `Write(&mut [u8])` | `var<storage, read_write>` | — | downloaded into the slice |
//! | `ReadWrite(&mut [u8])` | `var<storage, read_write>` | uploaded | downloaded into the slice |
//! | `Uniform(&[u8])` | `var<uniform>` | uploaded | — |
//! | `Scratch(bytes)` | `var<storage, read_write>` | — | — |
//!
//! The bound range of each buffer is exactly the data's length, so `arrayLength`
//! in the kernel sees the length of this call's data. A `Write` buffer is not
//! cleared between calls: the kernel must write every element it is expected to.
//!
//! # What is cached, per key
//!
//! * the shader module and compute pipeline (compiled once: [`CacheStats::compiles`],
//!   [`CacheStats::compile_time`]; every later dispatch is a [`CacheStats::cache_hits`]);
//! * one GPU buffer per binding, allocated on first use and replaced by a larger one
//!   only when a call brings more data than it holds;
//! * the bind group, rebuilt only when a buffer or a bound length changes, and set
//!   before every dispatch (a stale binding can never leak from another kernel:
//!   each key owns its buffers and its bind group);
//! * one staging buffer for readback, reused (grown the same way).
//!
//! One dispatch is: upload the inputs (`queue.write_buffer`), encode one compute
//! pass and the copies into the staging buffer, one submit, `map_async` and a
//! blocking `poll` on that submission, copy out, unmap.
//!
//! # Errors
//!
//! Compilation and dispatch run inside wgpu error scopes, so a bad shader, a binding
//! the shader does not declare, or an out-of-memory come back as [`GpuError`]s
//! naming the kernel. A lost device comes back as [`GpuError::DeviceLost`].
//!
//! # Example
//!
//! ```no_run
//! use vgpu_gpu::{Binding, KernelCache, KernelSpec};
//! let wgsl = "
//!   @group(0) @binding(0) var<storage, read> x: array<f32>;
//!   @group(0) @binding(1) var<storage, read_write> y: array<f32>;
//!   @compute @workgroup_size(64)
//!   fn main(@builtin(global_invocation_id) id: vec3<u32>) {
//!       if (id.x < arrayLength(&x)) { y[id.x] = 2.0 * x[id.x]; }
//!   }";
//! let spec = KernelSpec::new("double", wgsl, "main").workgroup_size([64, 1, 1]);
//! let mut cache = KernelCache::new()?;
//! let x = vec![1.0f32; 1000];
//! let mut y = vec![0.0f32; 1000];
//! cache.dispatch(&spec, &mut [Binding::read(&x), Binding::write(&mut y)], [16, 1, 1])?;
//! assert_eq!(y[999], 2.0);
//! # Ok::<(), vgpu_gpu::GpuError>(())
//! ```

use crate::runtime::GpuContext;
use crate::{AdapterSummary, CacheStats, GpuError};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A 64-bit hash of byte strings, each prefixed by its length (so that the parts'
/// boundaries count). Deterministic across runs (SipHash with fixed keys).
pub(crate) fn hash_parts(parts: &[&[u8]]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in parts {
        p.len().hash(&mut h);
        h.write(p);
    }
    h.finish()
}

/// Everything that changes a kernel's compiled code: the spec's digest (source,
/// entry point, specialisation, workgroup size, constants, checks) and the adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelKey {
    /// Hash of the spec's source, entry, specialisation, workgroup size, constants, checks.
    pub spec: u64,
    /// Hash of the adapter (name, backend, driver, PCI ids).
    pub adapter: u64,
}

/// A compute kernel to run through a [`KernelCache`]: WGSL source and everything
/// that specialises it. Build it once and reuse it; it is cheap to clone (the
/// source is shared) and its key is computed when it is built.
#[derive(Debug, Clone)]
pub struct KernelSpec {
    label: Arc<str>,
    wgsl: Arc<str>,
    entry: Arc<str>,
    specialisation: Arc<str>,
    workgroup_size: [u32; 3],
    constants: Vec<(String, f64)>,
    runtime_checks: bool,
    zero_workgroup_memory: bool,
    digest: u64,
}

impl KernelSpec {
    /// A kernel named `label` (used in error messages and GPU debug labels), with
    /// WGSL source `wgsl` and compute entry point `entry`. Defaults: no
    /// specialisation, workgroup size `[1, 1, 1]` (state the one written in the
    /// source, it is part of the key), no constants, wgpu's runtime checks on,
    /// workgroup memory zero-initialised.
    pub fn new(label: &str, wgsl: impl Into<Arc<str>>, entry: &str) -> Self {
        let mut s = KernelSpec {
            label: label.into(),
            wgsl: wgsl.into(),
            entry: entry.into(),
            specialisation: "".into(),
            workgroup_size: [1, 1, 1],
            constants: Vec::new(),
            runtime_checks: true,
            zero_workgroup_memory: true,
            digest: 0,
        };
        s.rehash();
        s
    }

    /// What the source was generated for (a shape, a dtype, …): part of the key.
    pub fn specialisation(mut self, s: &str) -> Self {
        self.specialisation = s.into();
        self.rehash();
        self
    }

    /// The workgroup size the kernel declares: part of the key.
    pub fn workgroup_size(mut self, size: [u32; 3]) -> Self {
        self.workgroup_size = size;
        self.rehash();
        self
    }

    /// Values for the WGSL `override` constants (by name): part of the key.
    pub fn constant(mut self, name: &str, value: f64) -> Self {
        self.constants.push((name.to_string(), value));
        self.rehash();
        self
    }

    /// Whether the kernel relies on workgroup memory starting at zero (the WGSL
    /// default, on). A kernel that writes its workgroup memory before reading it
    /// can turn this off to save the clearing at the start of every workgroup.
    pub fn zero_workgroup_memory(mut self, on: bool) -> Self {
        self.zero_workgroup_memory = on;
        self.rehash();
        self
    }

    /// Turns off wgpu's runtime checks (index clamping on buffers and arrays,
    /// loop bounding), which cost throughput in tight loops.
    ///
    /// # Safety
    ///
    /// The kernel must never index out of bounds and every loop must terminate,
    /// for every input it is dispatched with: the GPU no longer checks.
    pub unsafe fn without_runtime_checks(mut self) -> Self {
        self.runtime_checks = false;
        self.rehash();
        self
    }

    fn rehash(&mut self) {
        let wg: Vec<u8> = self
            .workgroup_size
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut consts = Vec::new();
        for (name, value) in &self.constants {
            consts.extend_from_slice(&(name.len() as u64).to_le_bytes());
            consts.extend_from_slice(name.as_bytes());
            consts.extend_from_slice(&value.to_bits().to_le_bytes());
        }
        let flags = [self.runtime_checks as u8, self.zero_workgroup_memory as u8];
        self.digest = hash_parts(&[
            self.wgsl.as_bytes(),
            self.entry.as_bytes(),
            self.specialisation.as_bytes(),
            &wg,
            &consts,
            &flags,
        ]);
    }

    /// The kernel's label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The WGSL source.
    pub fn wgsl(&self) -> &str {
        &self.wgsl
    }

    /// The entry point.
    pub fn entry(&self) -> &str {
        &self.entry
    }

    /// The hash of everything in the spec (the adapter is added by the cache).
    pub fn digest(&self) -> u64 {
        self.digest
    }
}

/// One binding of a dispatch: `bindings[i]` is `@group(0) @binding(i)`.
/// Lengths are in bytes, non-zero and a multiple of 4. See the module docs for
/// which WGSL declaration each variant needs.
#[derive(Debug)]
pub enum Binding<'a> {
    /// A read-only storage buffer, uploaded from this data.
    Read(&'a [u8]),
    /// A read-write storage buffer the kernel writes; downloaded into this slice.
    Write(&'a mut [u8]),
    /// A read-write storage buffer, uploaded from and downloaded into this slice.
    ReadWrite(&'a mut [u8]),
    /// A uniform buffer, uploaded from this data.
    Uniform(&'a [u8]),
    /// A read-write storage buffer of this many bytes, neither uploaded nor
    /// downloaded (scratch space; its contents persist between dispatches).
    Scratch(u64),
}

impl<'a> Binding<'a> {
    /// [`Binding::Read`] from typed data (`f32`, `u32`, `i32`, …).
    pub fn read<T: bytemuck::Pod>(data: &'a [T]) -> Self {
        Binding::Read(bytemuck::cast_slice(data))
    }

    /// [`Binding::Write`] into typed data.
    pub fn write<T: bytemuck::Pod>(data: &'a mut [T]) -> Self {
        Binding::Write(bytemuck::cast_slice_mut(data))
    }

    /// [`Binding::ReadWrite`] on typed data.
    pub fn read_write<T: bytemuck::Pod>(data: &'a mut [T]) -> Self {
        Binding::ReadWrite(bytemuck::cast_slice_mut(data))
    }

    /// [`Binding::Uniform`] from typed data.
    pub fn uniform<T: bytemuck::Pod>(data: &'a [T]) -> Self {
        Binding::Uniform(bytemuck::cast_slice(data))
    }

    fn kind(&self) -> BindingKind {
        match self {
            Binding::Read(_) => BindingKind::Read,
            Binding::Write(_) => BindingKind::Write,
            Binding::ReadWrite(_) => BindingKind::ReadWrite,
            Binding::Uniform(_) => BindingKind::Uniform,
            Binding::Scratch(_) => BindingKind::Scratch,
        }
    }

    fn len(&self) -> u64 {
        match self {
            Binding::Read(d) | Binding::Uniform(d) => d.len() as u64,
            Binding::Write(d) | Binding::ReadWrite(d) => d.len() as u64,
            Binding::Scratch(n) => *n,
        }
    }

    fn upload(&self) -> Option<&[u8]> {
        match self {
            Binding::Read(d) | Binding::Uniform(d) => Some(d),
            Binding::ReadWrite(d) => Some(d),
            Binding::Write(_) | Binding::Scratch(_) => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BindingKind {
    Read,
    Write,
    ReadWrite,
    Uniform,
    Scratch,
}

impl BindingKind {
    fn downloads(self) -> bool {
        matches!(self, BindingKind::Write | BindingKind::ReadWrite)
    }
}

/// A compiled kernel and the resources it owns.
struct CachedKernel {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    kinds: Vec<BindingKind>,
    buffers: Vec<Option<wgpu::Buffer>>,
    bound_sizes: Vec<u64>,
    bind_group: Option<wgpu::BindGroup>,
    staging: Option<wgpu::Buffer>,
}

/// The generic kernel cache (see the module docs). One per user (it is `&mut`
/// per dispatch); all caches of a process share one device ([`GpuContext`]).
pub struct KernelCache {
    ctx: &'static GpuContext,
    kernels: HashMap<KernelKey, CachedKernel>,
    stats: CacheStats,
    timeout: Duration,
    spin: Duration,
}

impl std::fmt::Debug for KernelCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelCache")
            .field("adapter", self.ctx.adapter())
            .field("kernels", &self.kernels.len())
            .field("stats", &self.stats)
            .finish()
    }
}

const MAP_ALIGN: u64 = wgpu::MAP_ALIGNMENT;

impl KernelCache {
    /// A cache on the process's shared GPU device (created on first use).
    /// Fails when there is no usable adapter ([`GpuError::NoAdapter`]).
    pub fn new() -> Result<Self, GpuError> {
        Ok(Self::with_context(GpuContext::get()?))
    }

    /// A cache on a given context.
    pub fn with_context(ctx: &'static GpuContext) -> Self {
        KernelCache {
            ctx,
            kernels: HashMap::new(),
            stats: CacheStats::default(),
            timeout: Duration::from_secs(600),
            spin: Duration::from_micros(500),
        }
    }

    /// How long a dispatch spins on non-blocking polls before it blocks on the
    /// fence (default 500 µs): spinning answers a small kernel sooner than a
    /// blocking wait wakes up.
    pub fn set_spin(&mut self, spin: Duration) {
        self.spin = spin;
    }

    /// How long one dispatch may wait for the GPU before it fails (default 600 s).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// The adapter the cache runs on.
    pub fn adapter(&self) -> &AdapterSummary {
        self.ctx.adapter()
    }

    /// The shared GPU context.
    pub fn context(&self) -> &'static GpuContext {
        self.ctx
    }

    /// The counters so far (`cpu_fallbacks` is always 0 here: a kernel cache
    /// only runs on the GPU; [`crate::VgpuCache`] counts its fallbacks).
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// The number of compiled kernels held.
    pub fn len(&self) -> usize {
        self.kernels.len()
    }

    /// Whether no kernel has been compiled yet.
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }

    /// The key `spec` has on this cache's adapter.
    pub fn key(&self, spec: &KernelSpec) -> KernelKey {
        KernelKey {
            spec: spec.digest,
            adapter: self.ctx.adapter_hash(),
        }
    }

    /// Whether `spec` is compiled already.
    pub fn is_compiled(&self, spec: &KernelSpec) -> bool {
        self.kernels.contains_key(&self.key(spec))
    }

    /// Runs `spec` once over `workgroups`, uploading the inputs and downloading
    /// the outputs (see [`Binding`]) into the caller's slices. Compiles the kernel
    /// on its first dispatch; every later one is a cache hit.
    pub fn dispatch(
        &mut self,
        spec: &KernelSpec,
        bindings: &mut [Binding<'_>],
        workgroups: [u32; 3],
    ) -> Result<(), GpuError> {
        self.run(spec, bindings, workgroups, 1, true).map(|_| ())
    }

    /// Device-side timing: uploads the inputs, runs one warm-up dispatch, then
    /// `iterations` dispatches (one compute pass each) in a single submission,
    /// waits for it, and returns the wall time of that submission divided by
    /// `iterations`. Nothing is downloaded. Counts `iterations + 1` GPU dispatches.
    pub fn time_dispatches(
        &mut self,
        spec: &KernelSpec,
        bindings: &mut [Binding<'_>],
        workgroups: [u32; 3],
        iterations: u32,
    ) -> Result<Duration, GpuError> {
        self.run(spec, bindings, workgroups, 1, false)?;
        let n = iterations.max(1);
        let t = self.run(spec, &mut [], workgroups, n, false)?;
        Ok(t / n)
    }

    fn fail(&self, spec: &KernelSpec, workgroups: [u32; 3], message: String) -> GpuError {
        if let Err(lost) = self.ctx.check_alive() {
            return lost;
        }
        GpuError::Dispatch {
            label: spec.label.to_string(),
            workgroups,
            message,
        }
    }

    /// The whole dispatch path. With empty `bindings` (used by timing) the kernel's
    /// resources from the previous call are reused as they are.
    fn run(
        &mut self,
        spec: &KernelSpec,
        bindings: &mut [Binding<'_>],
        workgroups: [u32; 3],
        repeat: u32,
        readback: bool,
    ) -> Result<Duration, GpuError> {
        self.ctx.check_alive()?;
        let limits = &self.ctx.limits;
        let max_wg = limits.max_compute_workgroups_per_dimension;
        if workgroups.iter().any(|&w| w > max_wg) {
            return Err(GpuError::Dispatch {
                label: spec.label.to_string(),
                workgroups,
                message: format!("more than {max_wg} workgroups in one dimension"),
            });
        }
        let reuse = bindings.is_empty();
        for (index, b) in bindings.iter().enumerate() {
            let len = b.len();
            let max = if b.kind() == BindingKind::Uniform {
                limits.max_uniform_buffer_binding_size
            } else {
                limits.max_storage_buffer_binding_size
            }
            .min(limits.max_buffer_size);
            let reason = if len == 0 {
                Some("empty (bindings need at least 4 bytes)".to_string())
            } else if len % 4 != 0 {
                Some(format!("{len} bytes is not a multiple of 4"))
            } else if len > max {
                Some(format!(
                    "{len} bytes exceeds the device's limit of {max} bytes"
                ))
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(GpuError::Binding {
                    label: spec.label.to_string(),
                    index,
                    reason,
                });
            }
        }

        let key = self.key(spec);
        let kinds: Vec<BindingKind> = bindings.iter().map(Binding::kind).collect();
        if !self.kernels.contains_key(&key) {
            if reuse {
                return Err(GpuError::Binding {
                    label: spec.label.to_string(),
                    index: 0,
                    reason: "no bindings given and none cached".into(),
                });
            }
            let start = Instant::now();
            let kernel = compile(self.ctx, spec, &kinds)?;
            self.stats.compile_time += start.elapsed();
            self.stats.compiles += 1;
            self.kernels.insert(key, kernel);
        } else if readback || !reuse {
            self.stats.cache_hits += 1;
        }
        let device = &self.ctx.device;
        let queue = &self.ctx.queue;
        let kernel = self.kernels.get_mut(&key).expect("inserted above");
        if !reuse && kernel.kinds != kinds {
            return Err(GpuError::Binding {
                label: spec.label.to_string(),
                index: kernel
                    .kinds
                    .iter()
                    .zip(&kinds)
                    .position(|(a, b)| a != b)
                    .unwrap_or(kernel.kinds.len().min(kinds.len())),
                reason: format!(
                    "the kernel was compiled with bindings {:?}, this call gives {:?}",
                    kernel.kinds, kinds
                ),
            });
        }

        let scope_oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let scope_val = device.push_error_scope(wgpu::ErrorFilter::Validation);

        // Buffers: allocate once, grow when a larger size comes.
        let mut stale = kernel.bind_group.is_none();
        let mut staging_len = 0u64;
        for (i, b) in bindings.iter().enumerate() {
            let len = b.len();
            let kind = kinds[i];
            let have = kernel.buffers[i].as_ref().map_or(0, |buf| buf.size());
            if have < len {
                let usage = if kind == BindingKind::Uniform {
                    wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST
                } else {
                    wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_DST
                        | wgpu::BufferUsages::COPY_SRC
                };
                kernel.buffers[i] = Some(device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&spec.label),
                    size: len,
                    usage,
                    mapped_at_creation: false,
                }));
                stale = true;
            }
            if kernel.bound_sizes[i] != len {
                kernel.bound_sizes[i] = len;
                stale = true;
            }
            if kind.downloads() {
                staging_len = staging_len.next_multiple_of(MAP_ALIGN) + len;
            }
        }
        if stale && !reuse {
            let entries: Vec<wgpu::BindGroupEntry<'_>> = kernel
                .buffers
                .iter()
                .zip(&kernel.bound_sizes)
                .enumerate()
                .map(|(i, (buf, &size))| wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: buf.as_ref().expect("allocated above"),
                        offset: 0,
                        size: NonZeroU64::new(size),
                    }),
                })
                .collect();
            kernel.bind_group = Some(device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&spec.label),
                layout: &kernel.layout,
                entries: &entries,
            }));
        }
        let staging_len = staging_len.next_multiple_of(4);
        if readback && staging_len > 0 {
            let have = kernel.staging.as_ref().map_or(0, |s| s.size());
            if have < staging_len {
                kernel.staging = Some(device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("vgpu staging"),
                    size: staging_len,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }));
            }
        }

        // Uploads.
        for (i, b) in bindings.iter().enumerate() {
            if let Some(data) = b.upload() {
                let buf = kernel.buffers[i].as_ref().expect("allocated above");
                queue.write_buffer(buf, 0, data);
                self.stats.bytes_uploaded += data.len() as u64;
            }
        }

        // Encode: `repeat` passes, each with the pipeline and bind group set.
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some(&spec.label),
        });
        let bind_group = kernel.bind_group.as_ref().expect("built above");
        for _ in 0..repeat {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(&spec.label),
                timestamp_writes: None,
            });
            pass.set_pipeline(&kernel.pipeline);
            pass.set_bind_group(0, bind_group, &[]);
            pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
        }
        let mut offsets = Vec::new();
        if readback && staging_len > 0 {
            let staging = kernel.staging.as_ref().expect("allocated above");
            let mut off = 0u64;
            for (i, b) in bindings.iter().enumerate() {
                if kinds[i].downloads() {
                    off = off.next_multiple_of(MAP_ALIGN);
                    let buf = kernel.buffers[i].as_ref().expect("allocated above");
                    encoder.copy_buffer_to_buffer(buf, 0, staging, off, b.len());
                    offsets.push((i, off));
                    off += b.len();
                }
            }
        }
        let start = Instant::now();
        let index = queue.submit(Some(encoder.finish()));
        let val = pollster::block_on(scope_val.pop());
        let oom = pollster::block_on(scope_oom.pop());
        if let Some(e) = val.or(oom) {
            return Err(self.fail(spec, workgroups, e.to_string()));
        }

        let mapped = Arc::new(AtomicU8::new(0));
        let staging = if readback && staging_len > 0 {
            let staging = kernel.staging.as_ref().expect("allocated above");
            let flag = Arc::clone(&mapped);
            staging
                .slice(..staging_len)
                .map_async(wgpu::MapMode::Read, move |r| {
                    flag.store(if r.is_ok() { 1 } else { 2 }, Ordering::SeqCst)
                });
            Some(staging)
        } else {
            None
        };
        // With a readback, the map callback says the submission is done; without
        // one, ask the queue to say so.
        let done = Arc::new(AtomicU8::new(0));
        if staging.is_none() {
            let done = Arc::clone(&done);
            queue.on_submitted_work_done(move || done.store(1, Ordering::SeqCst));
        }
        let polled = wait(
            device,
            index,
            &done,
            &mapped,
            staging.is_some(),
            self.spin,
            self.timeout,
        );
        let elapsed = start.elapsed();
        if let Err(e) = polled {
            if let Some(s) = staging {
                s.unmap();
            }
            let msg = format!("waiting for the GPU: {e}");
            return Err(self.fail(spec, workgroups, msg));
        }
        if let Some(staging) = staging {
            let state = mapped.load(Ordering::SeqCst);
            if state != 1 {
                staging.unmap();
                let msg = if state == 0 {
                    format!(
                        "the readback buffer was not mapped within {:?}",
                        self.timeout
                    )
                } else {
                    "mapping the readback buffer failed".to_string()
                };
                return Err(self.fail(spec, workgroups, msg));
            }
            {
                let view = match staging.slice(..staging_len).get_mapped_range() {
                    Ok(v) => v,
                    Err(e) => {
                        staging.unmap();
                        return Err(self.fail(spec, workgroups, e.to_string()));
                    }
                };
                for &(i, off) in &offsets {
                    let off = off as usize;
                    match &mut bindings[i] {
                        Binding::Write(out) | Binding::ReadWrite(out) => {
                            let n = out.len();
                            out.copy_from_slice(&view[off..off + n]);
                            self.stats.bytes_downloaded += n as u64;
                        }
                        _ => unreachable!("only downloading bindings have offsets"),
                    }
                }
            }
            staging.unmap();
        }
        if let Some(msg) = self.ctx.take_uncaptured() {
            return Err(self.fail(spec, workgroups, msg));
        }
        self.stats.gpu_dispatches += repeat as u64;
        Ok(elapsed)
    }
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

/// Compiles `spec` (shader module, bind group layout from `kinds`, pipeline) inside
/// a validation error scope.
fn compile(
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
    let module = if spec.runtime_checks {
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
        cache: None,
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
