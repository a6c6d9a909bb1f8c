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
//! | `Alias(i)` | `var<storage, read_write>` (another view of binding `i`'s buffer) | — | — |
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

mod dispatch;
mod in_bounds;
mod naga_module;
mod spirv;
mod timestamps;

pub use in_bounds::unproven_wgsl_index;
pub use spirv::naga_spirv;

use crate::hash::hash_parts;
use crate::runtime::GpuContext;
use crate::{AdapterSummary, CacheStats, GpuError};
use dispatch::{compile, read_back, wait_and_map};
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};
use timestamps::Stamps;

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
    loops_bounded: bool,
    zero_workgroup_memory: bool,
    f32_subnormals: bool,
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
            loops_bounded: false,
            zero_workgroup_memory: true,
            f32_subnormals: false,
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

    /// Drops wgpu's loop bounding (a 64-bit count and test in every loop)
    /// and keeps its index clamps.
    ///
    /// # Safety
    ///
    /// Every loop of the kernel must terminate for every input it is
    /// dispatched with (e.g. it counts its own steps and stops: the checked
    /// PTX kernels' watchdog).
    pub unsafe fn with_loops_bounded(mut self) -> Self {
        self.loops_bounded = true;
        self.rehash();
        self
    }

    /// Whether the kernel bounds its own loops
    /// ([`KernelSpec::with_loops_bounded`]).
    pub fn loops_bounded(&self) -> bool {
        self.loops_bounded
    }

    /// Asks that f32 subnormals be kept in the kernel's arithmetic, where the
    /// context can say so ([`GpuContext::declares_f32_subnormals`]): the WGSL is
    /// then compiled to SPIR-V by naga here, with the `DenormPreserve` 32
    /// execution mode added, and passed through to the driver. Elsewhere the
    /// kernel compiles as usual.
    pub fn keep_f32_subnormals(mut self) -> Self {
        self.f32_subnormals = true;
        self.rehash();
        self
    }

    /// Whether wgpu's runtime checks are on (the default; see
    /// [`KernelSpec::without_runtime_checks`]).
    pub fn runtime_checks(&self) -> bool {
        self.runtime_checks
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
        let flags = [
            self.runtime_checks as u8,
            self.loops_bounded as u8,
            self.zero_workgroup_memory as u8,
            self.f32_subnormals as u8,
        ];
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
    /// Binding `i` (an earlier [`Binding::Write`], [`Binding::ReadWrite`] or
    /// [`Binding::Scratch`]) bound again: a second view of the same buffer,
    /// such as `array<atomic<f32>>` beside `array<atomic<u32>>`. Nothing is
    /// uploaded or downloaded through it.
    Alias(usize),
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
            Binding::Alias(i) => BindingKind::Alias(*i),
        }
    }

    /// Bytes bound (an alias: 0; it binds its target's).
    fn len(&self) -> u64 {
        match self {
            Binding::Read(d) | Binding::Uniform(d) => d.len() as u64,
            Binding::Write(d) | Binding::ReadWrite(d) => d.len() as u64,
            Binding::Scratch(n) => *n,
            Binding::Alias(_) => 0,
        }
    }

    fn upload(&self) -> Option<&[u8]> {
        match self {
            Binding::Read(d) | Binding::Uniform(d) => Some(d),
            Binding::ReadWrite(d) => Some(d),
            Binding::Write(_) | Binding::Scratch(_) | Binding::Alias(_) => None,
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
    Alias(usize),
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
    last_run: RunTiming,
    /// The WGSL emitted for control-flow kernels (crate::cfg_kernel).
    cfg_wgsl: crate::cfg_wgsl_memo::EmittedWgsl,
}

/// Where the host-to-host time of the last dispatch went, past compilation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunTiming {
    /// Buffers (re)allocated, bind group built, uploads queued and the passes
    /// encoded: host work before the submission.
    pub upload: Duration,
    /// Submission to completion: the queued uploads' copies, the kernel, the
    /// copies into the staging buffer, and its mapping.
    pub gpu: Duration,
    /// The mapped results copied into the caller's slices.
    pub download: Duration,
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

impl Drop for KernelCache {
    /// Keeps what this cache compiled for the next process (the on-disk
    /// pipeline cache, where the adapter has one).
    fn drop(&mut self) {
        self.ctx.save_pipeline_cache();
    }
}

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
            last_run: RunTiming::default(),
            cfg_wgsl: Default::default(),
        }
    }

    /// How many control-flow kernels (compiled PTX) this cache has written
    /// as WGSL: a launch of a kernel already written with the same options
    /// and checks reuses its WGSL rather than running the emitter again.
    pub fn cfg_kernels_emitted(&self) -> u64 {
        self.cfg_wgsl.emitted()
    }

    /// The memo of control-flow kernels' WGSL (crate::cfg_kernel).
    pub(crate) fn cfg_wgsl(&mut self) -> &mut crate::cfg_wgsl_memo::EmittedWgsl {
        &mut self.cfg_wgsl
    }

    /// Where the last dispatch's time went (upload, GPU, download).
    pub fn last_run(&self) -> RunTiming {
        self.last_run
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
        self.run(spec, bindings, workgroups, 1, true, None)
            .map(|_| ())
    }

    /// Device-side timing: uploads the inputs, runs one warm-up dispatch, then
    /// `iterations` dispatches (one compute pass each) in a single submission
    /// and waits for it. Where the device has timestamp queries it returns the
    /// shortest pass as the GPU's clock measured it (as CUDA events time a
    /// kernel); otherwise (or beyond 2048 passes) the wall time of the
    /// submission divided by `iterations`. Nothing is downloaded. Counts
    /// `iterations + 1` GPU dispatches.
    pub fn time_dispatches(
        &mut self,
        spec: &KernelSpec,
        bindings: &mut [Binding<'_>],
        workgroups: [u32; 3],
        iterations: u32,
    ) -> Result<Duration, GpuError> {
        self.run(spec, bindings, workgroups, 1, false, None)?;
        let n = iterations.max(1);
        let stamps = Stamps::new(self.ctx, n);
        let t = self.run(spec, &mut [], workgroups, n, false, stamps.as_ref())?;
        let shortest = stamps
            .and_then(|s| s.durations(self.ctx, self.timeout).ok())
            .and_then(|d| d.into_iter().filter(|d| !d.is_zero()).min());
        Ok(shortest.unwrap_or(t / n))
    }

    /// The whole dispatch path: checks, the kernel (compiled on a miss), its
    /// resources, uploads, `repeat` passes in one submission, the wait and the
    /// readback. With empty `bindings` (used by timing) the kernel's resources
    /// from the previous call are reused as they are. Returns the time from
    /// submission to completion.
    fn run(
        &mut self,
        spec: &KernelSpec,
        bindings: &mut [Binding<'_>],
        workgroups: [u32; 3],
        repeat: u32,
        readback: bool,
        stamps: Option<&Stamps>,
    ) -> Result<Duration, GpuError> {
        self.ctx.check_alive()?;
        check_launch(&self.ctx.limits, spec, bindings, workgroups)?;
        let reuse = bindings.is_empty();
        let kinds: Vec<BindingKind> = bindings.iter().map(Binding::kind).collect();
        let key = self.kernel_for(spec, &kinds, reuse, readback)?;
        let ctx = self.ctx;
        let kernel = self.kernels.get_mut(&key).expect("compiled above");
        let device = &ctx.device;
        let scope_oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let scope_val = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let host = Instant::now();
        let staging_len = kernel.prepare(ctx, spec, bindings, &kinds, reuse, readback);
        self.stats.bytes_uploaded += kernel.upload(ctx, bindings);
        let readback = readback && staging_len > 0;
        let (encoder, offsets) =
            kernel.encode(ctx, spec, bindings, workgroups, repeat, readback, stamps);
        let upload = host.elapsed();
        let start = Instant::now();
        let index = ctx.queue.submit(Some(encoder.finish()));
        let val = pollster::block_on(scope_val.pop());
        let oom = pollster::block_on(scope_oom.pop());
        if let Some(e) = val.or(oom) {
            return Err(fail(ctx, spec, workgroups, e.to_string()));
        }
        let staging = if readback {
            kernel.staging.as_ref()
        } else {
            None
        };
        let waited = wait_and_map(ctx, index, staging, staging_len, self.spin, self.timeout);
        let elapsed = start.elapsed();
        waited.map_err(|msg| fail(ctx, spec, workgroups, msg))?;
        let downloading = Instant::now();
        if let Some(staging) = staging {
            let copied = read_back(staging, staging_len, bindings, &offsets);
            staging.unmap();
            self.stats.bytes_downloaded +=
                copied.map_err(|msg| fail(ctx, spec, workgroups, msg))?;
        }
        if let Some(msg) = ctx.take_uncaptured() {
            return Err(fail(ctx, spec, workgroups, msg));
        }
        self.stats.gpu_dispatches += repeat as u64;
        self.last_run = RunTiming {
            upload,
            gpu: elapsed,
            download: downloading.elapsed(),
        };
        Ok(elapsed)
    }

    /// The key of `spec`'s kernel, compiled now on a miss (counted), checked
    /// against the binding kinds it was compiled with.
    fn kernel_for(
        &mut self,
        spec: &KernelSpec,
        kinds: &[BindingKind],
        reuse: bool,
        readback: bool,
    ) -> Result<KernelKey, GpuError> {
        let key = self.key(spec);
        match self.kernels.get(&key) {
            None if reuse => {
                return Err(GpuError::Binding {
                    label: spec.label.to_string(),
                    index: 0,
                    reason: "no bindings given and none cached".into(),
                })
            }
            None => {
                let start = Instant::now();
                let kernel = compile(self.ctx, spec, kinds)?;
                self.stats.compile_time += start.elapsed();
                self.stats.compiles += 1;
                self.kernels.insert(key, kernel);
            }
            Some(kernel) => {
                if !reuse && kernel.kinds != kinds {
                    return Err(GpuError::Binding {
                        label: spec.label.to_string(),
                        index: kernel
                            .kinds
                            .iter()
                            .zip(kinds)
                            .position(|(a, b)| a != b)
                            .unwrap_or(kernel.kinds.len().min(kinds.len())),
                        reason: format!(
                            "the kernel was compiled with bindings {:?}, this call gives {:?}",
                            kernel.kinds, kinds
                        ),
                    });
                }
                if readback || !reuse {
                    self.stats.cache_hits += 1;
                }
            }
        }
        Ok(key)
    }
}

/// A dispatch error naming the kernel and its workgroups, or the device loss
/// behind it.
fn fail(ctx: &GpuContext, spec: &KernelSpec, workgroups: [u32; 3], message: String) -> GpuError {
    if let Err(lost) = ctx.check_alive() {
        return lost;
    }
    GpuError::Dispatch {
        label: spec.label.to_string(),
        workgroups,
        message,
    }
}

/// Refuses a dispatch beyond the device's limits before anything is allocated:
/// workgroups per dimension, and each binding's size (non-empty, a multiple of
/// 4 bytes, within the uniform or storage binding limit).
fn check_launch(
    limits: &wgpu::Limits,
    spec: &KernelSpec,
    bindings: &[Binding<'_>],
    workgroups: [u32; 3],
) -> Result<(), GpuError> {
    let max_wg = limits.max_compute_workgroups_per_dimension;
    if workgroups.iter().any(|&w| w > max_wg) {
        return Err(GpuError::Dispatch {
            label: spec.label.to_string(),
            workgroups,
            message: format!("more than {max_wg} workgroups in one dimension"),
        });
    }
    for (index, b) in bindings.iter().enumerate() {
        if let Binding::Alias(target) = *b {
            let writable = bindings.get(target).is_some_and(|t| {
                matches!(
                    t.kind(),
                    BindingKind::Write | BindingKind::ReadWrite | BindingKind::Scratch
                )
            });
            if target >= index || !writable {
                return Err(GpuError::Binding {
                    label: spec.label.to_string(),
                    index,
                    reason: format!(
                        "an alias must name an earlier read-write or scratch binding, not binding {target}"
                    ),
                });
            }
            continue;
        }
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
    Ok(())
}
