//! `VGPU.ensemble`: a `.field` kernel integrated over an ensemble, numpy in and out.

use crate::errors::{facade_error, no_panic, vgpu_error};
use numpy::{IntoPyArray, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt};
use std::sync::{Arc, Mutex};
use vgpu::dispatch::Backend;
use vgpu::ir::{compile, Args, Buffer, Integration, Kernel, Method, Par, ScalarType, Value};
use vgpu::{Dispatcher, EnsembleJob, EnsembleRun};

/// Everything an ensemble launch needs, checked and converted (no Python objects).
pub(crate) struct PreparedEnsemble {
    /// The compiled kernel.
    pub kernel: Kernel,
    /// Its arguments.
    pub args: Args,
    /// How to integrate.
    pub integration: Integration,
    /// Where (the facade's rule: the argument, else `VGPU_BACKEND`, else auto).
    pub backend: Backend,
}

impl PreparedEnsemble {
    /// Runs the job (no GIL needed) through the facade's [`Dispatcher`], which
    /// holds the GPU kernel cache (a kernel compiles once per `VGPU` object) and
    /// decides the backend and the CPU fallback exactly as `vgpu ensemble` does.
    pub(crate) fn run(&self, dispatcher: &Mutex<Dispatcher>) -> Result<EnsembleRun, vgpu::Error> {
        let mut d = dispatcher.lock().map_err(|_| {
            vgpu::Error::Usage("VGPU is unusable: an earlier call panicked".to_string())
        })?;
        d.ensemble(&EnsembleJob {
            kernel: &self.kernel,
            args: &self.args,
            integration: &self.integration,
            backend: self.backend,
            kernel_time: None,
            limits: Default::default(),
        })
    }
}

/// A scalar argument of declared type `ty` from a Python bool, int or float.
/// Floats are rounded to the declared float type; an integer type takes only
/// whole numbers in its range.
fn scalar(kernel: &str, name: &str, ty: ScalarType, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let bad = |what: String| {
        PyValueError::new_err(format!(
            "kernel `{kernel}`: parameter `{name}` is declared {ty}, got {what}"
        ))
    };
    let v = if obj.is_instance_of::<PyBool>() {
        Value::Bool(obj.extract::<bool>()?)
    } else if obj.is_instance_of::<PyInt>() {
        match obj.extract::<i64>() {
            Ok(i) => match ty {
                ScalarType::I32 => Value::I32(
                    i32::try_from(i).map_err(|_| bad(format!("{i} (out of i32 range)")))?,
                ),
                ScalarType::U32 => Value::U32(
                    u32::try_from(i).map_err(|_| bad(format!("{i} (out of u32 range)")))?,
                ),
                _ => Value::F64(i as f64),
            },
            Err(_) => return Err(bad(format!("{obj} (out of range)"))),
        }
    } else if let Ok(x) = obj.extract::<f64>() {
        // Python floats and numpy scalars.
        match ty {
            ScalarType::I32 | ScalarType::U32 if x.fract() != 0.0 || !x.is_finite() => {
                return Err(bad(format!("{x} (not a whole number)")))
            }
            ScalarType::I32 if !(i32::MIN as f64..=i32::MAX as f64).contains(&x) => {
                return Err(bad(format!("{x} (out of i32 range)")))
            }
            ScalarType::U32 if !(0.0..=u32::MAX as f64).contains(&x) => {
                return Err(bad(format!("{x} (out of u32 range)")))
            }
            _ => Value::F64(x),
        }
    } else {
        let tname = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        return Err(bad(format!("a {tname}")));
    };
    Ok(v.cast(ty))
}

/// A buffer argument of element type `ty` from a 1-D array-like. Floats are converted to the declared float type; an integer buffer
/// takes only integer arrays.
fn buffer<'py>(
    kernel: &str,
    name: &str,
    ty: ScalarType,
    obj: &Bound<'py, PyAny>,
) -> PyResult<Buffer> {
    let py = obj.py();
    let np = py.import("numpy")?;
    let arr = np.call_method1("asarray", (obj,)).map_err(|e| {
        PyValueError::new_err(format!(
            "kernel `{kernel}`: parameter `{name}` is not an array of numbers: {e}"
        ))
    })?;
    let ndim: usize = arr.getattr("ndim")?.extract()?;
    if ndim != 1 {
        let shape = arr.getattr("shape")?.str()?.to_string();
        return Err(PyValueError::new_err(format!(
            "kernel `{kernel}`: parameter `{name}` must be a 1-D array, got shape {shape}"
        )));
    }
    let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
    let dtype = arr.getattr("dtype")?.str()?.to_string();
    let ok = match ty {
        ScalarType::F32 | ScalarType::F64 => "biuf".contains(kind.as_str()),
        ScalarType::I32 | ScalarType::U32 => "biu".contains(kind.as_str()),
        ScalarType::Bool => kind == "b",
    };
    if !ok {
        return Err(PyValueError::new_err(format!(
            "kernel `{kernel}`: parameter `{name}` is declared {ty}[], got an array of dtype {dtype}"
        )));
    }
    // numpy reads the one vocabulary's descriptors (`<f4`, …) as dtypes.
    let target = ty.dtype().map(|d| d.npy_descr()).ok_or_else(|| {
        PyValueError::new_err(format!(
            "kernel `{kernel}`: parameter `{name}`: bool buffers are not supported"
        ))
    })?;
    if matches!(ty, ScalarType::I32 | ScalarType::U32) {
        // Refuse values the cast would wrap.
        let (lo, hi): (i128, i128) = if ty == ScalarType::I32 {
            (i32::MIN as i128, i32::MAX as i128)
        } else {
            (0, u32::MAX as i128)
        };
        if arr.getattr("size")?.extract::<usize>()? > 0 {
            let min: i128 = arr.call_method0("min")?.call_method0("item")?.extract()?;
            let max: i128 = arr.call_method0("max")?.call_method0("item")?.extract()?;
            if min < lo || max > hi {
                return Err(PyValueError::new_err(format!(
                    "kernel `{kernel}`: parameter `{name}` is declared {ty}[], but its values span {min}..={max}"
                )));
            }
        }
    }
    let flat = np.call_method1("ascontiguousarray", (arr.call_method0("ravel")?, target))?;
    // One copy, straight into the buffer's shared allocation (`ascontiguousarray`
    // made the array contiguous, so `as_slice` holds).
    fn read<T: numpy::Element + Copy>(flat: &Bound<'_, PyAny>) -> PyResult<Arc<[T]>> {
        let a: PyReadonlyArray1<'_, T> = flat.extract()?;
        Ok(match a.as_slice() {
            Ok(s) => Arc::from(s),
            Err(_) => Arc::from(a.to_vec()?),
        })
    }
    Ok(match ty {
        ScalarType::F32 => Buffer::F32(read(&flat)?),
        ScalarType::F64 => Buffer::F64(read(&flat)?),
        ScalarType::I32 => Buffer::I32(read(&flat)?),
        _ => Buffer::U32(read(&flat)?),
    })
}

/// Compiles `source` (named `file` in messages) and converts the arguments.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prepare(
    py: Python<'_>,
    source: &str,
    file: &str,
    n: usize,
    t: (f64, f64),
    dt: f64,
    method: Method,
    params: Option<&Bound<'_, PyDict>>,
    backend: Backend,
    block: Option<u32>,
    par: Par,
    shard: Option<(usize, usize)>,
) -> PyResult<PreparedEnsemble> {
    let kernel = py
        .detach(|| no_panic("ensemble", || compile(file, source)))
        .map_err(vgpu_error)?
        .map_err(vgpu_error)?;
    let mut integration = Integration::new(n, t.0, t.1, dt).method(method).par(par);
    if let Some(b) = block {
        integration = integration.block(b);
    }
    // shard=(i, r): the rows [lo, hi) of the whole run, cut at whole blocks
    // (the rule of `vgpu ensemble --shard`), with the whole run's indices.
    if let Some((index, count)) = shard {
        let who = format!("shard=({index}, {count})");
        let spec = vgpu::shard::ShardSpec::parse(&format!("{index}/{count}"))
            .map_err(|e| PyValueError::new_err(e.to_string().replace("--shard", "shard=")))?;
        let (lo, hi) = spec
            .range(n, integration.block as usize)
            .map_err(|e| PyValueError::new_err(e.to_string().replace("--shard", "shard=")))?;
        vgpu::shard::refuse_flux(&kernel, &who).map_err(facade_error)?;
        integration.n = hi - lo;
        integration = integration.slice(vgpu::ir::Slice {
            first: lo,
            total: n,
        });
    }
    // Sizes first: nothing is allocated for an ensemble beyond the limits.
    vgpu::Limits::default()
        .ensemble(&kernel, &integration)
        .map_err(facade_error)?;
    let args = args_from(&kernel, params)?;
    Ok(PreparedEnsemble {
        kernel,
        args,
        integration,
        backend,
    })
}

/// The owner of a result's memory while numpy arrays view it: the base
/// object of the arrays [`buffer_to_numpy`] returns without a copy.
#[pyclass(frozen)]
struct ResultMemory {
    /// Held, never read: dropping it frees the memory numpy views.
    _buffer: Buffer,
}

/// A buffer as a numpy array of the given shape. A buffer nothing else holds
/// (a run's results) becomes the array's memory as it is, without a copy (an
/// ensemble's 2^23 × 3 endpoints are 100 MB); a shared one is copied.
pub(crate) fn buffer_to_numpy(py: Python<'_>, b: Buffer, shape: &[usize]) -> PyResult<Py<PyAny>> {
    fn arr<T: numpy::Element + Clone>(
        py: Python<'_>,
        mut data: Arc<[T]>,
        shape: &[usize],
        wrap: fn(Arc<[T]>) -> Buffer,
    ) -> PyResult<Py<PyAny>> {
        if shape.iter().product::<usize>() != data.len() {
            return Err(vgpu_error(format!(
                "a result of {} values cannot have the shape {shape:?}",
                data.len()
            )));
        }
        let Some(unique) = Arc::get_mut(&mut data) else {
            let a = data.to_vec().into_pyarray(py);
            return Ok(a.reshape(shape)?.into_any().unbind());
        };
        let ptr = unique.as_mut_ptr();
        // Moving the Arc moves no data: `ptr` stays valid while the owner lives.
        let owner = Bound::new(
            py,
            ResultMemory {
                _buffer: wrap(data),
            },
        )?;
        // SAFETY: `ptr` points to the product of `shape` elements (checked
        // above), held by the owner's Arc alone, which is never read, written
        // or reallocated from Rust again; the owner becomes the array's base
        // object, so the memory lives as long as the array (and its views).
        let a = unsafe {
            let view =
                numpy::ndarray::ArrayViewMut::from_shape_ptr(numpy::ndarray::IxDyn(shape), ptr);
            numpy::PyArrayDyn::<T>::borrow_from_array(&view, owner.into_any())
        };
        Ok(a.into_any().unbind())
    }
    match b {
        Buffer::F32(v) => arr(py, v, shape, Buffer::F32),
        Buffer::F64(v) => arr(py, v, shape, Buffer::F64),
        Buffer::I32(v) => arr(py, v, shape, Buffer::I32),
        Buffer::U32(v) => arr(py, v, shape, Buffer::U32),
    }
}

/// The result as (states (n, dim), {flux name: 1-D array}, backend).
pub(crate) fn result_to_python(
    py: Python<'_>,
    r: EnsembleRun,
) -> PyResult<(Py<PyAny>, Py<PyDict>, &'static str)> {
    if r.states.len() != r.n * r.dim {
        return Err(vgpu_error(format!(
            "ensemble: {} state values for {} trajectories of {} components",
            r.states.len(),
            r.n,
            r.dim
        )));
    }
    let states = buffer_to_numpy(py, r.states, &[r.n, r.dim])?;
    let fluxes = PyDict::new(py);
    for (name, b) in r.fluxes {
        let len = b.len();
        fluxes.set_item(name, buffer_to_numpy(py, b, &[len])?)?;
    }
    let backend = match r.backend {
        vgpu::ActiveBackend::Gpu => "gpu",
        vgpu::ActiveBackend::Cpu => "cpu",
    };
    Ok((states, fluxes.unbind(), backend))
}

/// An adaptive ensemble ready to run: kernel, arguments, trajectories and the
/// driver's options (no Python objects).
pub(crate) struct PreparedAdaptive {
    /// The compiled kernel.
    pub kernel: Kernel,
    /// Its arguments.
    pub args: Args,
    /// Trajectories, spans, initial states, options.
    pub run: vgpu::ir::adaptive::AdaptiveRun,
    /// Where (CPU; `auto` notes the fallback, `gpu` is refused by the facade).
    pub backend: Backend,
}

impl PreparedAdaptive {
    /// Runs it through the facade's [`Dispatcher::adaptive`] (the rule the
    /// `vgpu` command follows).
    pub(crate) fn run(
        &self,
        dispatcher: &Mutex<Dispatcher>,
    ) -> Result<vgpu::dispatch::AdaptiveEnsembleRun, vgpu::Error> {
        let mut d = dispatcher.lock().map_err(|_| {
            vgpu::Error::Usage("VGPU is unusable: an earlier call panicked".to_string())
        })?;
        d.adaptive(&vgpu::dispatch::AdaptiveJob {
            kernel: &self.kernel,
            args: &self.args,
            run: &self.run,
            backend: self.backend,
        })
    }
}

/// The arguments of an adaptive kernel from `params` (as [`prepare`] converts them).
pub(crate) fn kernel_and_args(
    py: Python<'_>,
    source: &str,
    file: &str,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Kernel, Args)> {
    let kernel = py
        .detach(|| no_panic("ensemble", || compile(file, source)))
        .map_err(vgpu_error)?
        .map_err(vgpu_error)?;
    let args = args_from(&kernel, params)?;
    Ok((kernel, args))
}

/// The kernel's arguments from `params` (names to Python numbers or
/// array-likes, converted to the declared types), complete.
fn args_from(kernel: &Kernel, params: Option<&Bound<'_, PyDict>>) -> PyResult<Args> {
    let mut args = Args::new(kernel);
    if let Some(params) = params {
        for (key, value) in params.iter() {
            let name: String = key.extract().map_err(|_| {
                PyValueError::new_err(format!(
                    "params: keys must be parameter names (str), got {key}"
                ))
            })?;
            let Some(decl) = kernel.params.iter().find(|p| p.name == name) else {
                // Let the kernel's own error name the known parameters.
                args.scalar(&name, Value::F64(0.0)).map_err(vgpu_error)?;
                continue;
            };
            if decl.buffer {
                let b = buffer(&kernel.name, &name, decl.ty, &value)?;
                args.buffer(&name, b).map_err(vgpu_error)?;
            } else {
                let v = scalar(&kernel.name, &name, decl.ty, &value)?;
                args.scalar(&name, v).map_err(vgpu_error)?;
            }
        }
    }
    args.check_complete().map_err(vgpu_error)?;
    Ok(args)
}

/// An adaptive run's error as a Python exception: the options and shapes the
/// caller gave (the driver's refusals, usage) as `ValueError`, the rest as
/// [`facade_error`] maps them.
pub(crate) fn adaptive_error(e: vgpu::Error) -> PyErr {
    match e {
        vgpu::Error::Adaptive(a) => PyValueError::new_err(format!("ensemble: {a}")),
        other => facade_error(other),
    }
}

/// The adaptive result as (values (n, dim) or (n, K, dim), status (n,) uint8,
/// steps (n, 2) uint64 [accepted, rejected]).
pub(crate) fn adaptive_to_python(
    py: Python<'_>,
    r: vgpu::dispatch::AdaptiveEnsembleRun,
) -> PyResult<(Py<PyAny>, Py<PyAny>, Py<PyAny>)> {
    let o = r.output;
    let (n, d, k) = (o.n, o.dim, o.saveat.len());
    let values = if k > 0 {
        buffer_to_numpy(py, o.saved, &[n, k, d])?
    } else {
        buffer_to_numpy(py, o.end, &[n, d])?
    };
    let status: Vec<u8> = o.stats.iter().map(|s| s.status.code()).collect();
    let steps: Vec<u64> = o
        .stats
        .iter()
        .flat_map(|s| [s.accepted, s.rejected])
        .collect();
    let status = status.into_pyarray(py).into_any().unbind();
    let steps = steps.into_pyarray(py).reshape([n, 2])?.into_any().unbind();
    Ok((values, status, steps))
}
