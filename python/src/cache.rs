//! `VgpuCache`: matrix multiplication through VGPU's persistent kernel cache.

use crate::arrays::{into_matrix, shape_str, Matrix};
use crate::errors::{check_result_size, gpu_err};
use crate::errors::{no_panic, vgpu_error};
use numpy::ndarray::{ArrayD, IxDyn};
use numpy::{IntoPyArray, PyArray2, PyArrayDyn, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Mutex, MutexGuard};
use vgpu::GpuError;
use vgpu::{BackendChoice, CacheStats as RustStats, VgpuCache};

/// The counters of a `VgpuCache`.
#[pyclass(name = "CacheStats", module = "vgpu._vgpu", frozen, get_all)]
#[derive(Clone)]
pub struct PyCacheStats {
    /// Kernels compiled: one per distinct shape.
    compiles: u64,
    /// Calls whose kernel was already compiled.
    cache_hits: u64,
    /// Calls run on the GPU.
    gpu_dispatches: u64,
    /// Calls computed on the CPU instead.
    cpu_fallbacks: u64,
    /// Bytes copied from host memory into GPU buffers.
    bytes_uploaded: u64,
    /// Bytes read back from GPU buffers.
    bytes_downloaded: u64,
    /// Seconds spent compiling kernels.
    compile_seconds: f64,
    line: String,
}

impl From<RustStats> for PyCacheStats {
    fn from(s: RustStats) -> Self {
        PyCacheStats {
            compiles: s.compiles,
            cache_hits: s.cache_hits,
            gpu_dispatches: s.gpu_dispatches,
            cpu_fallbacks: s.cpu_fallbacks,
            bytes_uploaded: s.bytes_uploaded,
            bytes_downloaded: s.bytes_downloaded,
            compile_seconds: s.compile_time.as_secs_f64(),
            line: s.to_string(),
        }
    }
}

#[pymethods]
impl PyCacheStats {
    /// The counters as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("compiles", self.compiles)?;
        d.set_item("cache_hits", self.cache_hits)?;
        d.set_item("gpu_dispatches", self.gpu_dispatches)?;
        d.set_item("cpu_fallbacks", self.cpu_fallbacks)?;
        d.set_item("bytes_uploaded", self.bytes_uploaded)?;
        d.set_item("bytes_downloaded", self.bytes_downloaded)?;
        d.set_item("compile_seconds", self.compile_seconds)?;
        Ok(d)
    }

    fn __str__(&self) -> String {
        self.line.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "CacheStats(compiles={}, cache_hits={}, gpu_dispatches={}, cpu_fallbacks={}, \
             bytes_uploaded={}, bytes_downloaded={}, compile_seconds={:.6})",
            self.compiles,
            self.cache_hits,
            self.gpu_dispatches,
            self.cpu_fallbacks,
            self.bytes_uploaded,
            self.bytes_downloaded,
            self.compile_seconds
        )
    }
}

/// Matrix multiplication with a persistent kernel cache (the Rust `VgpuCache`).
#[pyclass(name = "VgpuCache", module = "vgpu._vgpu", frozen)]
pub struct PyVgpuCache {
    inner: Mutex<VgpuCache>,
}

/// A C-contiguous float32 array of `ndim` dimensions (any when `None`),
/// borrowed; errors as [`Matrix::extract`]'s.
fn array<'py>(
    op: &str,
    name: &str,
    obj: &Bound<'py, PyAny>,
    ndim: Option<usize>,
) -> PyResult<PyReadonlyArrayDyn<'py, f32>> {
    let arr: PyReadonlyArrayDyn<'py, f32> = obj.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "{op}: {name} must be a float32 numpy array (vgpu.VGPUCache converts other real dtypes)"
        ))
    })?;
    if let Some(d) = ndim {
        if arr.ndim() != d {
            return Err(PyValueError::new_err(format!(
                "{op}: {name} must be {d}-D, got shape {}",
                shape_str(arr.shape())
            )));
        }
    }
    if !arr.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "{op}: {name} (shape {}) is not C-contiguous; pass np.ascontiguousarray({name})",
            shape_str(arr.shape())
        )));
    }
    Ok(arr)
}

fn slice<'a>(a: &'a PyReadonlyArrayDyn<'_, f32>) -> PyResult<&'a [f32]> {
    a.as_slice()
        .map_err(|e| PyValueError::new_err(format!("array is not contiguous: {e}")))
}

impl PyVgpuCache {
    /// Runs `f` on the cache with the GIL released, panics and errors turned
    /// into Python exceptions.
    fn call<T: Send>(
        &self,
        py: Python<'_>,
        op: &str,
        f: impl FnOnce(&mut VgpuCache) -> Result<T, GpuError> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            no_panic(op, || -> PyResult<T> {
                let mut cache = self.lock()?;
                f(&mut cache).map_err(gpu_err)
            })
        })
        .map_err(vgpu_error)?
    }

    fn lock(&self) -> PyResult<MutexGuard<'_, VgpuCache>> {
        self.inner
            .lock()
            .map_err(|_| vgpu_error("VGPUCache is unusable: an earlier call panicked"))
    }
}

#[pymethods]
impl PyVgpuCache {
    /// `backend`: `"auto"`, `"gpu"` or `"cpu"`; `None` reads `VGPU_BACKEND` (default auto).
    #[new]
    #[pyo3(signature = (backend = None))]
    fn new(py: Python<'_>, backend: Option<&str>) -> PyResult<Self> {
        let choice = match backend {
            None => BackendChoice::from_env(),
            Some(name) => name.parse::<BackendChoice>(),
        }
        .map_err(|e| match backend {
            Some(name) => PyValueError::new_err(format!(
                "backend={name:?}: expected one of \"auto\", \"gpu\", \"cpu\""
            )),
            None => vgpu_error(e),
        })?;
        let cache = py
            .detach(|| no_panic("VGPUCache()", || VgpuCache::with_backend(choice)))
            .map_err(vgpu_error)?
            .map_err(gpu_err)?;
        Ok(PyVgpuCache {
            inner: Mutex::new(cache),
        })
    }

    /// C = A·B for C-contiguous float32 matrices A (m×k) and B (k×n).
    fn matmul<'py>(
        &self,
        py: Python<'py>,
        a: &Bound<'py, PyAny>,
        b: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let a = Matrix::extract("matmul", "a", a)?;
        let b = Matrix::extract("matmul", "b", b)?;
        let (a_data, b_data) = (a.data()?, b.data()?);
        let (a_shape, b_shape) = (a.shape, b.shape);
        check_result_size("matmul", a_shape.0, b_shape.1)?;
        let c = self.call(py, "matmul", |c| c.matmul(a_data, a_shape, b_data, b_shape))?;
        into_matrix(py, c, a_shape.0, b_shape.1)
    }

    /// `max(x, 0)` element-wise for a C-contiguous float32 array of any shape
    /// (NaN stays NaN); the result has `x`'s shape.
    fn relu<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
        let x = array("relu", "x", x, None)?;
        let dims = x.shape().to_vec();
        let data = slice(&x)?;
        let y = self.call(py, "relu", |c| c.relu(data))?;
        ArrayD::from_shape_vec(IxDyn(&dims), y)
            .map(|a| a.into_pyarray(py))
            .map_err(vgpu_error)
    }

    /// `x + bias` for a C-contiguous float32 matrix `x` (rows, cols) and a
    /// float32 vector `bias` (cols,).
    fn bias_add<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        bias: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let x = Matrix::extract("bias_add", "x", x)?;
        let bias = array("bias_add", "bias", bias, Some(1))?;
        let (data, b, shape) = (x.data()?, slice(&bias)?, x.shape);
        let y = self.call(py, "bias_add", |c| c.bias_add(data, shape, b))?;
        into_matrix(py, y, shape.0, shape.1)
    }

    /// Row-wise softmax of a C-contiguous float32 matrix.
    fn softmax<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let x = Matrix::extract("softmax", "x", x)?;
        let (data, shape) = (x.data()?, x.shape);
        let y = self.call(py, "softmax", |c| c.softmax(data, shape))?;
        into_matrix(py, y, shape.0, shape.1)
    }

    /// `max(a @ w + bias, 0)` for C-contiguous float32 `a` (m, k), `w` (k, n)
    /// and `bias` (n,), the epilogue fused into the matmul kernel's store.
    fn matmul_bias_relu<'py>(
        &self,
        py: Python<'py>,
        a: &Bound<'py, PyAny>,
        w: &Bound<'py, PyAny>,
        bias: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let a = Matrix::extract("matmul_bias_relu", "a", a)?;
        let w = Matrix::extract("matmul_bias_relu", "w", w)?;
        let bias = array("matmul_bias_relu", "bias", bias, Some(1))?;
        let (a_data, w_data, b) = (a.data()?, w.data()?, slice(&bias)?);
        let (a_shape, w_shape) = (a.shape, w.shape);
        check_result_size("matmul_bias_relu", a_shape.0, w_shape.1)?;
        let y = self.call(py, "matmul_bias_relu", |c| {
            c.matmul_bias_relu(a_data, a_shape, w_data, w_shape, b)
        })?;
        into_matrix(py, y, a_shape.0, w_shape.1)
    }

    /// The counters since this cache was created.
    #[getter]
    fn stats(&self) -> PyResult<PyCacheStats> {
        Ok(self.lock()?.stats().into())
    }

    /// Where the calls run: `"gpu"` or `"cpu"`.
    #[getter]
    fn backend(&self) -> PyResult<String> {
        Ok(self.lock()?.backend().to_string())
    }

    /// The GPU adapter as a dict (name, backend, device_type, driver), or `None` on the CPU.
    #[getter]
    fn adapter<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let cache = self.lock()?;
        let Some(a) = cache.adapter_info() else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("name", &a.name)?;
        d.set_item("backend", &a.backend)?;
        d.set_item("device_type", &a.device_type)?;
        d.set_item("driver", &a.driver)?;
        Ok(Some(d))
    }

    /// Why the calls run on the CPU, or `None` when they run on the GPU.
    #[getter]
    fn fallback_reason(&self) -> PyResult<Option<String>> {
        Ok(self.lock()?.fallback_reason().map(str::to_string))
    }

    fn __repr__(&self) -> PyResult<String> {
        let cache = self.lock()?;
        Ok(format!(
            "VGPUCache(backend={:?}, {})",
            cache.backend().to_string(),
            cache.adapter_line()
        ))
    }
}
