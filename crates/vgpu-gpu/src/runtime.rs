//! The process-wide wgpu runtime: instance, adapter, device and queue, created once,
//! lazily, and shared by every [`crate::KernelCache`] of the process.
//!
//! Adapters are sought on the primary backends (Vulkan, Metal, DX12) first and
//! on GL only when they find none. The instance honours wgpu's own environment variables (`WGPU_BACKEND`,
//! `WGPU_ADAPTER_NAME`, `WGPU_POWER_PREF`, and the instance flags). wgpu's default
//! handler for uncaptured errors panics; this runtime installs one that records the
//! error instead, and a device-lost callback that marks the device lost, so that a
//! failing GPU turns into a [`GpuError`] (and, under `auto`, a CPU fallback), never a panic.

use crate::pipeline_cache::{DiskPipelineCache, PipelineCacheInfo};
use crate::GpuError;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What the adapter is: the line VGPU prints before it computes anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterSummary {
    /// The adapter's name, e.g. `NVIDIA H200` or `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub name: String,
    /// The graphics API wgpu uses for it: `Vulkan`, `Metal`, `Dx12`, `Gl`.
    pub backend: String,
    /// `DiscreteGpu`, `IntegratedGpu`, `VirtualGpu`, `Cpu` or `Other`.
    pub device_type: String,
    /// The driver and its version, as the driver reports them.
    pub driver: String,
}

impl fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} | {} | {}", self.name, self.backend, self.device_type)?;
        if !self.driver.is_empty() {
            write!(f, " | {}", self.driver)?;
        }
        Ok(())
    }
}

/// The shared device: created once per process by [`GpuContext::get`].
pub struct GpuContext {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) limits: wgpu::Limits,
    summary: AdapterSummary,
    adapter_hash: u64,
    lost: Arc<AtomicBool>,
    lost_reason: Arc<Mutex<Option<String>>>,
    uncaptured: Arc<Mutex<Option<String>>>,
    init_time: Duration,
    features: wgpu::Features,
    /// [`GpuContext::robust_buffers`].
    robust_buffers: bool,
    pipeline_cache: Option<DiskPipelineCache>,
    /// Whether WGSL's f32 `fma` is fused here ([`crate::fma_probe`]), once probed.
    pub(crate) fma_f32_fused: OnceLock<bool>,
    /// Whether the f32 atomic add is PTX's here ([`crate::atomic_probe`]), once probed.
    pub(crate) f32_atomic_add_exact: OnceLock<bool>,
    /// subnormal_probe.rs's verdict, once run.
    pub(crate) f32_subnormals_kept: OnceLock<crate::SubnormalProbe>,
}

impl fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter", &self.summary)
            .field("lost", &self.is_lost())
            .finish()
    }
}

static CONTEXT: OnceLock<Result<GpuContext, GpuError>> = OnceLock::new();

impl GpuContext {
    /// The process's GPU context, created on the first call (instance, adapter,
    /// device, queue); later calls return the same one, or the same error.
    ///
    /// An error here means "no usable GPU"; under `VGPU_BACKEND=auto` callers fall
    /// back to the CPU.
    pub fn get() -> Result<&'static GpuContext, GpuError> {
        CONTEXT
            .get_or_init(Self::create)
            .as_ref()
            .map_err(Clone::clone)
    }

    fn create() -> Result<GpuContext, GpuError> {
        let start = Instant::now();
        let wgpu_backend = std::env::var("WGPU_BACKEND").unwrap_or_else(|_| "unset".into());
        quiet_device_select_layer();
        let adapter = if std::env::var_os("WGPU_BACKEND").is_some() {
            // The user named the backends: ask only those.
            pollster::block_on(choose_adapter(&instance_for(wgpu::Backends::all())))
        } else {
            // The primary backends (Vulkan, Metal, DX12) first; GL only when they
            // find nothing, since probing GL on a headless machine makes EGL print
            // errors (e.g. about XDG_RUNTIME_DIR) even when Vulkan works.
            pollster::block_on(choose_adapter(&instance_for(wgpu::Backends::PRIMARY))).or_else(
                |primary| {
                    pollster::block_on(choose_adapter(&instance_for(wgpu::Backends::SECONDARY)))
                        .map_err(|secondary| {
                            format!("Vulkan/Metal/DX12: {primary}; GL: {secondary}")
                        })
                },
            )
        }
        .map_err(|reason| GpuError::NoAdapter {
            wgpu_backend: wgpu_backend.clone(),
            reason,
        })?;
        let info = adapter.get_info();
        let summary = AdapterSummary {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: [info.driver.as_str(), info.driver_info.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" "),
        };
        // Ask for everything the adapter offers: large matrices need the large
        // storage-buffer limits, and nothing here is meant to be portable-by-limit.
        let limits = adapter.limits();
        // Optional features the generated kernels use where present: f64 (the
        // correctly rounded f32 division and fma of compiled PTX).
        // Timestamp queries time kernels on the GPU's clock (`--kernel-time`).
        // A pipeline cache keeps compiled pipelines between processes (`pipeline_cache`).
        // 64-bit integers move compiled PTX's f64 registers (`has_int64`).
        // f32 atomics add compiled PTX's global `atom.add.f32` (`has_f32_atomic_add`).
        // SPIR-V passthrough on Vulkan lets compiled PTX declare that f32
        // subnormals are kept (`declares_f32_subnormals`).
        let passthrough = if info.backend == wgpu::Backend::Vulkan {
            wgpu::Features::PASSTHROUGH_SHADERS
        } else {
            wgpu::Features::empty()
        };
        let features = adapter.features()
            & (wgpu::Features::SHADER_F64
                | wgpu::Features::SHADER_INT64
                | wgpu::Features::TIMESTAMP_QUERY
                | wgpu::Features::PIPELINE_CACHE
                | wgpu::Features::SHADER_FLOAT32_ATOMIC
                | passthrough);
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("vgpu"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| GpuError::DeviceRequest {
            adapter: summary.name.clone(),
            reason: e.to_string(),
        })?;
        let lost = Arc::new(AtomicBool::new(false));
        let lost_reason = Arc::new(Mutex::new(None));
        {
            let lost = Arc::clone(&lost);
            let lost_reason = Arc::clone(&lost_reason);
            device.set_device_lost_callback(move |reason, message| {
                lost.store(true, Ordering::SeqCst);
                if let Ok(mut r) = lost_reason.lock() {
                    *r = Some(format!("{reason:?}: {message}"));
                }
            });
        }
        let uncaptured = Arc::new(Mutex::new(None));
        {
            let uncaptured = Arc::clone(&uncaptured);
            device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                if let Ok(mut u) = uncaptured.lock() {
                    u.get_or_insert_with(|| e.to_string());
                }
            }));
        }
        let adapter_hash = crate::hash::hash_parts(&[
            summary.name.as_bytes(),
            summary.backend.as_bytes(),
            summary.driver.as_bytes(),
            &info.vendor.to_le_bytes(),
            &info.device.to_le_bytes(),
        ]);
        let pipeline_cache = DiskPipelineCache::open(&device, &info, features);
        let robust_buffers = robust_buffer_access2(&device);
        Ok(GpuContext {
            robust_buffers,
            fma_f32_fused: OnceLock::new(),
            f32_atomic_add_exact: OnceLock::new(),
            f32_subnormals_kept: OnceLock::new(),
            pipeline_cache,
            device,
            queue,
            limits,
            summary,
            adapter_hash,
            lost,
            lost_reason,
            uncaptured,
            init_time: start.elapsed(),
            features,
        })
    }

    /// The adapter this context runs on.
    pub fn adapter(&self) -> &AdapterSummary {
        &self.summary
    }

    /// How long creating the instance, adapter, device and queue took.
    pub fn init_time(&self) -> Duration {
        self.init_time
    }

    /// The device limits in force (the adapter's own limits).
    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// Whether every storage-buffer access out of its binding's range is
    /// harmless on this device: Vulkan's `robustBufferAccess2`
    /// (`VK_EXT_robustness2`, enabled by wgpu wherever the device has it)
    /// makes such a load read zero and such a store do nothing. wgpu then
    /// compiles WGSL without naga's clamps of buffer indices, and so does
    /// the SPIR-V passthrough (`kernel_cache/spirv.rs`).
    pub fn robust_buffers(&self) -> bool {
        self.robust_buffers
    }

    /// Whether the device has timestamp queries (`TIMESTAMP_QUERY`, requested
    /// whenever the adapter offers it): kernels are then timed on the GPU's clock.
    pub fn has_timestamps(&self) -> bool {
        self.features.contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// Whether the device has `SHADER_F64` (requested whenever the adapter offers it).
    pub fn has_f64(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_F64)
    }

    /// Whether the device has f32 atomics on storage buffers
    /// (`SHADER_FLOAT32_ATOMIC`: `atomicAdd` on `atomic<f32>`), requested
    /// whenever the adapter offers them.
    pub fn has_f32_atomic_add(&self) -> bool {
        self.features
            .contains(wgpu::Features::SHADER_FLOAT32_ATOMIC)
    }

    /// Whether the device has 64-bit integers in shaders (`SHADER_INT64`), which
    /// compiled PTX's f64 registers need beside `SHADER_F64`.
    pub fn has_int64(&self) -> bool {
        self.features.contains(wgpu::Features::SHADER_INT64)
    }

    /// Whether kernels asking for it ([`crate::KernelSpec::keep_f32_subnormals`])
    /// are compiled to SPIR-V by naga here and declare `DenormPreserve` for
    /// f32 (Vulkan's float controls): the adapter is Vulkan with SPIR-V
    /// passthrough. Whether the driver then keeps them is the subnormal
    /// probe's finding (`crate::f32_subnormals_kept`). Without the
    /// declaration, a driver may flush f32 subnormals in arithmetic
    /// (NVIDIA's does: `benchmarks/device/f32_subnormal.sh`).
    pub fn declares_f32_subnormals(&self) -> bool {
        self.features.contains(wgpu::Features::PASSTHROUGH_SHADERS)
    }

    /// naga's validation capabilities for this device's features.
    pub(crate) fn naga_capabilities(&self) -> naga::valid::Capabilities {
        use naga::valid::Capabilities as C;
        let mut c = C::empty();
        c.set(C::FLOAT64, self.has_f64());
        c.set(C::SHADER_INT64, self.has_int64());
        c.set(
            C::SHADER_FLOAT32_ATOMIC,
            self.features
                .contains(wgpu::Features::SHADER_FLOAT32_ATOMIC),
        );
        c
    }

    /// The on-disk pipeline cache, where the adapter has one and it is not
    /// switched off (`VGPU_PIPELINE_CACHE=off`): its file, what was loaded from it
    /// and what this process saved (see [`crate::pipeline_cache`]).
    pub fn pipeline_cache(&self) -> Option<PipelineCacheInfo> {
        self.pipeline_cache
            .as_ref()
            .and_then(DiskPipelineCache::info)
    }

    /// The wgpu pipeline cache to compile with, if any.
    pub(crate) fn wgpu_pipeline_cache(&self) -> Option<&wgpu::PipelineCache> {
        self.pipeline_cache.as_ref().map(DiskPipelineCache::cache)
    }

    /// Notes a compilation through the pipeline cache.
    pub(crate) fn pipeline_compiled(&self) {
        if let Some(c) = &self.pipeline_cache {
            c.mark_dirty();
        }
    }

    /// Writes the pipeline cache to its file if a pipeline was compiled since
    /// the last save. Every [`crate::KernelCache`] does this when dropped; call it
    /// from a long-lived process that keeps its caches. Never fails (see
    /// [`PipelineCacheInfo::save_error`]).
    pub fn save_pipeline_cache(&self) {
        if let Some(c) = &self.pipeline_cache {
            c.save();
        }
    }

    /// Destroys the shared device, as a driver reset would lose it: the device-lost
    /// callback fires, every later dispatch of the process fails with
    /// [`GpuError::DeviceLost`] and every [`crate::VgpuCache`] falls back to the CPU.
    /// There is no way back within the process. Meant for testing that path.
    pub fn destroy(&self) {
        self.device.destroy();
        // Backends report the loss through the callback; make sure it is seen even
        // where the callback runs only on the next poll.
        let _ = self.device.poll(wgpu::PollType::Poll);
        self.lost.store(true, Ordering::SeqCst);
        if let Ok(mut r) = self.lost_reason.lock() {
            r.get_or_insert_with(|| "destroyed".to_string());
        }
    }

    /// Whether the device-lost callback has fired.
    pub fn is_lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// A hash naming the adapter (name, backend, driver, PCI ids): part of every kernel key.
    pub(crate) fn adapter_hash(&self) -> u64 {
        self.adapter_hash
    }

    /// [`GpuError::DeviceLost`] if the device is lost, with the driver's reason.
    pub(crate) fn check_alive(&self) -> Result<(), GpuError> {
        if self.is_lost() {
            let reason = self
                .lost_reason
                .lock()
                .ok()
                .and_then(|r| r.clone())
                .unwrap_or_else(|| "unknown reason".into());
            return Err(GpuError::DeviceLost {
                adapter: self.summary.name.clone(),
                reason,
            });
        }
        Ok(())
    }

    /// Takes the first error that escaped every error scope, if any.
    pub(crate) fn take_uncaptured(&self) -> Option<String> {
        self.uncaptured.lock().ok().and_then(|mut u| u.take())
    }
}

/// Mesa's implicit Vulkan layer `VK_LAYER_MESA_device_select` picks a default
/// GPU for a display: on a headless machine it connects to Wayland and makes
/// libwayland print `error: XDG_RUNTIME_DIR is invalid or not set` although
/// nothing failed. VGPU draws nothing and chooses its adapter itself, so the
/// layer is switched off (its own documented variable, `NODEVICE_SELECT=1`)
/// unless the user set that variable. Runs once, inside the context's
/// `OnceLock` initialisation, before any Vulkan call of the process.
fn quiet_device_select_layer() {
    if cfg!(target_os = "linux") && std::env::var_os("NODEVICE_SELECT").is_none() {
        std::env::set_var("NODEVICE_SELECT", "1");
    }
}

/// A wgpu instance over `backends`, unless `WGPU_BACKEND` names others; the
/// other instance options from wgpu's environment variables.
fn instance_for(backends: wgpu::Backends) -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    wgpu::Instance::new(desc.with_env())
}

/// Picks the adapter: `WGPU_ADAPTER_NAME` (substring, case-insensitive) if set,
/// otherwise wgpu's choice under `WGPU_POWER_PREF` (default: high performance).
async fn choose_adapter(instance: &wgpu::Instance) -> Result<wgpu::Adapter, String> {
    if let Ok(wanted) = std::env::var("WGPU_ADAPTER_NAME") {
        let wanted = wanted.to_lowercase();
        let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        return adapters
            .into_iter()
            .find(|a| a.get_info().name.to_lowercase().contains(&wanted))
            .ok_or_else(|| format!("WGPU_ADAPTER_NAME={wanted:?} matches none of {names:?}"));
    }
    instance
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::from_env()
                .unwrap_or(wgpu::PowerPreference::HighPerformance),
            force_fallback_adapter: false,
            compatible_surface: None,
            apply_limit_buckets: false,
        })
        .await
        .map_err(|e| e.to_string())
}

/// Whether `device` is a Vulkan device with `robustBufferAccess2` enabled:
/// wgpu-hal enables it whenever it enables `VK_EXT_robustness2` and the
/// physical device has the feature (as its own choice of naga's buffer
/// bounds-check policy assumes).
fn robust_buffer_access2(device: &wgpu::Device) -> bool {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use ash::vk;
        // SAFETY: the device is only read (its enabled extensions, its
        // physical device's features through the instance it was made from),
        // while `device` keeps it alive.
        unsafe {
            let Some(hal) = device.as_hal::<wgpu::hal::api::Vulkan>() else {
                return false;
            };
            if !hal
                .enabled_device_extensions()
                .contains(&ash::ext::robustness2::NAME)
            {
                return false;
            }
            let mut r2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
            let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut r2);
            hal.shared_instance()
                .raw_instance()
                .get_physical_device_features2(hal.raw_physical_device(), &mut f2);
            r2.robust_buffer_access2 == vk::TRUE
        }
    }
    #[cfg(target_arch = "wasm32")]
    {
        let _ = device;
        false
    }
}
