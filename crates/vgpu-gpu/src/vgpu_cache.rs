//! `VgpuCache`: matrix multiplication through the kernel cache, with a CPU fallback.

use crate::backend::{ActiveBackend, BackendChoice};
use crate::matmul::{check_shapes, cpu, tile::Tile, wgsl};
use crate::{AdapterSummary, Binding, CacheStats, GpuError, KernelCache, KernelSpec};
use ndarray::{Array2, ArrayView2};
use std::collections::HashMap;
use std::time::Duration;

/// The compiled-kernel description of one matmul shape.
#[derive(Debug, Clone)]
struct MatmulKernel {
    spec: KernelSpec,
    workgroups: [u32; 3],
}

/// Matrix multiplication with a persistent GPU kernel cache: one compiled kernel
/// and one set of buffers per shape (M, K, N), rebound before every dispatch; only
/// the new data is uploaded. Without a GPU (none found under `VGPU_BACKEND=auto`,
/// `VGPU_BACKEND=cpu`, or a lost device) every call runs on the CPU GEMM and is
/// counted as a CPU fallback.
///
/// ```no_run
/// let mut cache = vgpu_gpu::VgpuCache::new()?;
/// let a = vec![1.0f32; 16 * 16];
/// let b = vec![2.0f32; 16 * 16];
/// let c = cache.matmul(&a, (16, 16), &b, (16, 16))?;
/// assert_eq!(c[0], 32.0);
/// println!("{}", cache.stats()); // VGPUCache: 1 compiles, 0 cache hits, 1 GPU dispatches, 0 CPU fallbacks
/// # Ok::<(), vgpu_gpu::GpuError>(())
/// ```
#[derive(Debug)]
pub struct VgpuCache {
    choice: BackendChoice,
    gpu: Option<KernelCache>,
    /// Counters of a GPU cache that was dropped because its device was lost.
    lost_stats: CacheStats,
    fallback_reason: Option<String>,
    adapter: Option<AdapterSummary>,
    cpu_fallbacks: u64,
    tile: Option<Tile>,
    /// Matmul kernels by (M, K, N, with the bias+relu epilogue).
    kernels: HashMap<(usize, usize, usize, bool), MatmulKernel>,
}

impl VgpuCache {
    /// A cache for the backend chosen by `VGPU_BACKEND` (default `auto`).
    pub fn new() -> Result<Self, GpuError> {
        Self::with_backend(BackendChoice::from_env()?)
    }

    /// A cache for an explicit backend choice. `Gpu` with no adapter is
    /// [`GpuError::NoAdapter`]; `Auto` with no adapter runs on the CPU.
    pub fn with_backend(choice: BackendChoice) -> Result<Self, GpuError> {
        let (gpu, fallback_reason) = match choice {
            BackendChoice::Cpu => (None, Some("VGPU_BACKEND=cpu".to_string())),
            BackendChoice::Gpu => (Some(KernelCache::new()?), None),
            BackendChoice::Auto => match KernelCache::new() {
                Ok(k) => (Some(k), None),
                Err(e) => (None, Some(e.to_string())),
            },
        };
        let adapter = gpu.as_ref().map(|g| g.adapter().clone());
        Ok(VgpuCache {
            choice,
            gpu,
            lost_stats: CacheStats::default(),
            fallback_reason,
            adapter,
            cpu_fallbacks: 0,
            tile: None,
            kernels: HashMap::new(),
        })
    }

    /// Uses this tile for the register-blocked kernel on every shape it can take
    /// (K and N multiples of 4), instead of choosing by size.
    pub fn with_tile(mut self, tile: Tile) -> Result<Self, GpuError> {
        tile.validate()?;
        self.tile = Some(tile);
        self.kernels.clear();
        Ok(self)
    }

    /// What the user asked for.
    pub fn choice(&self) -> BackendChoice {
        self.choice
    }

    /// Where the calls run now.
    pub fn backend(&self) -> ActiveBackend {
        if self.gpu.is_some() {
            ActiveBackend::Gpu
        } else {
            ActiveBackend::Cpu
        }
    }

    /// The GPU adapter in use (`None` on the CPU).
    pub fn adapter_info(&self) -> Option<&AdapterSummary> {
        self.gpu.as_ref().and(self.adapter.as_ref())
    }

    /// Why the calls run on the CPU (`None` on the GPU).
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// A line saying where the calls run: `adapter: <name> | <backend> | <type>` or
    /// `adapter: none (CPU fallback: <reason>)`.
    pub fn adapter_line(&self) -> String {
        match (self.adapter_info(), self.fallback_reason()) {
            (Some(a), _) => format!("adapter: {a}"),
            (None, reason) => format!(
                "adapter: none (CPU fallback: {})",
                reason.unwrap_or("no GPU")
            ),
        }
    }

    /// The counters: compiles, cache hits, GPU dispatches, CPU fallbacks, bytes
    /// uploaded and downloaded, total compile time.
    pub fn stats(&self) -> CacheStats {
        let mut s = self
            .gpu
            .as_ref()
            .map(KernelCache::stats)
            .unwrap_or_default();
        s.compiles += self.lost_stats.compiles;
        s.cache_hits += self.lost_stats.cache_hits;
        s.gpu_dispatches += self.lost_stats.gpu_dispatches;
        s.bytes_uploaded += self.lost_stats.bytes_uploaded;
        s.bytes_downloaded += self.lost_stats.bytes_downloaded;
        s.compile_time += self.lost_stats.compile_time;
        s.cpu_fallbacks = self.cpu_fallbacks;
        s
    }

    /// C = A·B for row-major A (`a_shape` = (m, k)) and B (`b_shape` = (k, n));
    /// returns row-major C (m×n). Errors name the shapes: [`GpuError::ShapeMismatch`],
    /// [`GpuError::EmptyMatrix`], [`GpuError::DataLength`].
    pub fn matmul(
        &mut self,
        a: &[f32],
        a_shape: (usize, usize),
        b: &[f32],
        b_shape: (usize, usize),
    ) -> Result<Vec<f32>, GpuError> {
        let (m, _, n) = check_shapes(a, a_shape, b, b_shape)?;
        let mut c = vec![0.0f32; m * n];
        self.matmul_into(a, a_shape, b, b_shape, &mut c)?;
        Ok(c)
    }

    /// [`VgpuCache::matmul`] writing into `c` (m·n elements, checked).
    pub fn matmul_into(
        &mut self,
        a: &[f32],
        a_shape: (usize, usize),
        b: &[f32],
        b_shape: (usize, usize),
        c: &mut [f32],
    ) -> Result<(), GpuError> {
        let (m, k, n) = check_shapes(a, a_shape, b, b_shape)?;
        if c.len() != m * n {
            return Err(GpuError::DataLength {
                operand: "C",
                shape: (m, n),
                len: c.len(),
                expected: m * n,
            });
        }
        self.on_gpu_or_cpu(
            c,
            |this, c| this.gpu_matmul(a, b, c, m, k, n, None),
            |c| {
                cpu::matmul_into(a, b, c, m, k, n);
                Ok(())
            },
        )
    }

    /// Runs `gpu` on the GPU when there is one; on the CPU (`cpu`, counted as a
    /// CPU fallback) when there is none, when the device was lost (the GPU is
    /// then dropped for good), or, under `auto`, when the operands are too large
    /// for the device. `s` is what both write into.
    pub(crate) fn on_gpu_or_cpu<S: ?Sized, T>(
        &mut self,
        s: &mut S,
        gpu: impl FnOnce(&mut Self, &mut S) -> Result<T, GpuError>,
        cpu: impl FnOnce(&mut S) -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        if self.gpu.is_some() {
            match gpu(self, s) {
                Ok(v) => return Ok(v),
                Err(GpuError::DeviceLost { adapter, reason }) => {
                    self.drop_gpu(format!("the GPU device {adapter:?} was lost: {reason}"));
                }
                // Too large for this device: this call runs on the CPU.
                Err(GpuError::TooLarge { .. }) if self.choice == BackendChoice::Auto => {}
                Err(e) => return Err(e),
            }
        }
        self.cpu_fallbacks += 1;
        cpu(s)
    }

    /// The GPU's kernel cache, after checking that operands of these shapes
    /// (4-byte elements) fit its buffers ([`GpuError::TooLarge`] if not).
    pub(crate) fn gpu_for(
        &mut self,
        operands: &[(&'static str, (usize, usize))],
    ) -> Result<&mut KernelCache, GpuError> {
        let gpu = self.gpu.as_mut().ok_or_else(|| GpuError::NoAdapter {
            wgpu_backend: std::env::var("WGPU_BACKEND").unwrap_or_else(|_| "unset".into()),
            reason: "no GPU in this cache".into(),
        })?;
        let limits = gpu.context().limits();
        let max = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size);
        for &(operand, shape) in operands {
            let bytes = (shape.0 as u64)
                .saturating_mul(shape.1 as u64)
                .saturating_mul(4);
            if bytes > max {
                return Err(GpuError::TooLarge {
                    operand,
                    shape,
                    reason: format!(
                        "{bytes} bytes exceeds the device's buffer limit of {max} bytes"
                    ),
                });
            }
        }
        Ok(gpu)
    }

    /// C = A·B on ndarray views (any layout; non-contiguous views are copied).
    pub fn matmul_nd(
        &mut self,
        a: ArrayView2<'_, f32>,
        b: ArrayView2<'_, f32>,
    ) -> Result<Array2<f32>, GpuError> {
        let a_shape = a.dim();
        let b_shape = b.dim();
        let a_std = a.as_standard_layout();
        let b_std = b.as_standard_layout();
        // A standard-layout array always has a contiguous slice.
        let (Some(a_s), Some(b_s)) = (a_std.as_slice(), b_std.as_slice()) else {
            unreachable!("as_standard_layout gives a contiguous array")
        };
        let c = self.matmul(a_s, a_shape, b_s, b_shape)?;
        Array2::from_shape_vec((a_shape.0, b_shape.1), c).map_err(|e| GpuError::TooLarge {
            operand: "C",
            shape: (a_shape.0, b_shape.1),
            reason: e.to_string(),
        })
    }

    /// Device-side time of one matmul of this shape: the inputs are uploaded once,
    /// then `iterations` dispatches run in one submission without readback
    /// ([`KernelCache::time_dispatches`]). Needs the GPU backend.
    pub fn time_matmul_device(
        &mut self,
        a: &[f32],
        a_shape: (usize, usize),
        b: &[f32],
        b_shape: (usize, usize),
        iterations: u32,
    ) -> Result<Duration, GpuError> {
        let (m, k, n) = check_shapes(a, a_shape, b, b_shape)?;
        if self.gpu.is_none() {
            return Err(GpuError::NoAdapter {
                wgpu_backend: std::env::var("WGPU_BACKEND").unwrap_or_else(|_| "unset".into()),
                reason: format!(
                    "device-side timing needs the GPU; running on the CPU because: {}",
                    self.fallback_reason().unwrap_or("no GPU")
                ),
            });
        }
        let kernel = self.kernel_for(m, k, n, false)?;
        let mut c = vec![0.0f32; m * n];
        let gpu = self.gpu.as_mut().expect("checked above");
        gpu.time_dispatches(
            &kernel.spec,
            &mut [Binding::read(a), Binding::read(b), Binding::write(&mut c)],
            kernel.workgroups,
            iterations,
        )
    }

    /// The WGSL source the GPU runs for this shape (for inspection and tests).
    pub fn kernel_source(&mut self, m: usize, k: usize, n: usize) -> Result<String, GpuError> {
        Ok(self.kernel_for(m, k, n, false)?.spec.wgsl().to_string())
    }

    fn drop_gpu(&mut self, reason: String) {
        if let Some(g) = self.gpu.take() {
            self.lost_stats = g.stats();
        }
        self.fallback_reason = Some(reason);
    }

    fn kernel_for(
        &mut self,
        m: usize,
        k: usize,
        n: usize,
        fused: bool,
    ) -> Result<MatmulKernel, GpuError> {
        if let Some(kern) = self.kernels.get(&(m, k, n, fused)) {
            return Ok(kern.clone());
        }
        let groups = |len: usize, per: u32| -> Result<u32, GpuError> {
            u32::try_from(len.div_ceil(per as usize)).map_err(|_| GpuError::TooLarge {
                operand: "C",
                shape: (m, n),
                reason: "more workgroups than a dispatch can hold".into(),
            })
        };
        let vec4_ok = k % 4 == 0 && n % 4 == 0;
        let tile = match self.tile {
            Some(t) if vec4_ok => Some(t),
            Some(_) => None,
            None if vec4_ok && m >= 128 && n >= 128 => {
                let large = (m.div_ceil(128)) * (n.div_ceil(128));
                Some(if large >= 256 {
                    Tile::LARGE
                } else {
                    Tile::MEDIUM
                })
            }
            None => None,
        };
        let epilogue = if fused {
            Some(wgsl::Epilogue {
                wgsl: crate::fused::epilogue_wgsl()?,
            })
        } else {
            None
        };
        let name = if fused { "matmul_bias_relu" } else { "matmul" };
        let kernel = match tile {
            Some(t) => {
                let src = wgsl::blocked_with(m, k, n, &t, epilogue.as_ref());
                // SAFETY: every global access of the generated kernel is guarded by
                // an explicit bounds test against the baked shape, workgroup arrays
                // are indexed within their declared sizes, and all loops have
                // constant trip counts (see matmul::wgsl). The epilogue reads
                // `bias[(row·N + col) % N]` = `bias[col]` only in the guarded
                // store (col < N), and the bias binding holds N values (checked).
                let spec = unsafe {
                    KernelSpec::new(name, src, "main")
                        .specialisation(&format!("{m}x{k}x{n}/blocked {t}/{name}"))
                        .workgroup_size([t.bn / t.tn, t.bm / t.tm, 1])
                        .zero_workgroup_memory(false)
                        .without_runtime_checks()
                };
                MatmulKernel {
                    spec,
                    workgroups: [groups(n, t.bn)?, groups(m, t.bm)?, 1],
                }
            }
            None => {
                let e = wgsl::TILED_EDGE;
                let src = wgsl::tiled_with(m, k, n, epilogue.as_ref());
                // SAFETY: as above, for the tiled kernel.
                let spec = unsafe {
                    KernelSpec::new(name, src, "main")
                        .specialisation(&format!("{m}x{k}x{n}/tiled {e}/{name}"))
                        .workgroup_size([e, e, 1])
                        .zero_workgroup_memory(false)
                        .without_runtime_checks()
                };
                MatmulKernel {
                    spec,
                    workgroups: [groups(n, e)?, groups(m, e)?, 1],
                }
            }
        };
        self.kernels.insert((m, k, n, fused), kernel.clone());
        Ok(kernel)
    }

    /// C = A·B on the GPU, with `bias` (one per column) and the IR-generated
    /// epilogue `max(acc + bias, 0)` fused into the store when given.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn gpu_matmul(
        &mut self,
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
        m: usize,
        k: usize,
        n: usize,
        bias: Option<&[f32]>,
    ) -> Result<(), GpuError> {
        self.gpu_for(&[("A", (m, k)), ("B", (k, n)), ("C", (m, n))])?;
        let kernel = self.kernel_for(m, k, n, bias.is_some())?;
        let gpu = self.gpu.as_mut().expect("checked by gpu_for");
        let mut bindings = vec![Binding::read(a), Binding::read(b), Binding::write(c)];
        if let Some(bias) = bias {
            bindings.push(Binding::read(bias));
        }
        gpu.dispatch(&kernel.spec, &mut bindings, kernel.workgroups)
    }
}
