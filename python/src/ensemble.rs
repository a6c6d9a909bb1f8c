//! `VGPU.ensemble`: a `.field` kernel integrated over an ensemble, numpy in and out.

use crate::errors::{no_panic, vgpu_error};
use numpy::{IntoPyArray, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt};
use std::sync::Mutex;
use vgpu_gpu::{run_ensemble_gpu, KernelCache};
use vgpu_ir::{
    compile, run_cpu, Args, Buffer, Integration, Kernel, Method, Par, ScalarType, Value,
};

/// Where an ensemble runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnsembleBackend {
    /// The GPU when there is an adapter and the kernel can run there, otherwise the CPU.
    Auto,
    /// The CPU field executor.
    Cpu,
    /// A GPU (an error where none can run it).
    Gpu,
}

impl EnsembleBackend {
    /// Parses `"auto"`, `"cpu"`, `"gpu"` (a `ValueError` otherwise).
    pub fn parse(name: &str) -> PyResult<Self> {
        match name.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "gpu" => Ok(Self::Gpu),
            _ => Err(PyValueError::new_err(format!(
                "backend={name:?}: expected one of \"auto\", \"gpu\", \"cpu\""
            ))),
        }
    }
}

/// Everything an ensemble launch needs, checked and converted (no Python objects).
pub struct EnsembleJob {
    /// The compiled kernel.
    pub kernel: Kernel,
    /// Its arguments.
    pub args: Args,
    /// How to integrate.
    pub integration: Integration,
    /// Where.
    pub backend: EnsembleBackend,
}

/// The launch's result: final states and flux outputs.
pub struct EnsembleResult {
    /// Trajectories.
    pub n: usize,
    /// State components per trajectory.
    pub dim: usize,
    /// Final states, trajectory-major.
    pub states: Buffer,
    /// Flux outputs by name.
    pub fluxes: Vec<(String, Buffer)>,
    /// Where it ran: `"gpu"` or `"cpu"`.
    pub backend: &'static str,
}

impl EnsembleJob {
    /// Runs the job (no GIL needed). `gpu` holds the GPU kernel cache, created on
    /// first use and kept, so a kernel compiles once per `VGPU` object.
    /// `"auto"` runs on the GPU when there is an adapter and the kernel can run
    /// there (f32, phased or not; phased blocks must fit the device's
    /// workgroups), otherwise on the CPU. GPU runs return the flux outputs too (float
    /// flux summed in the GPU's order: equal to the CPU's to rounding).
    pub fn run(&self, gpu: &Mutex<Option<KernelCache>>) -> Result<EnsembleResult, String> {
        let on_gpu = match self.backend {
            EnsembleBackend::Cpu => false,
            EnsembleBackend::Gpu => true,
            EnsembleBackend::Auto => self.kernel.float_type() == ScalarType::F32,
        };
        if on_gpu {
            let mut slot = gpu
                .lock()
                .map_err(|_| "VGPU is unusable: an earlier call panicked".to_string())?;
            if slot.is_none() {
                match KernelCache::new() {
                    Ok(c) => *slot = Some(c),
                    Err(e) if self.backend == EnsembleBackend::Gpu => return Err(e.to_string()),
                    Err(_) => {}
                }
            }
            if let Some(cache) = slot.as_mut() {
                match run_ensemble_gpu(cache, &self.kernel, &self.args, &self.integration, None) {
                    Ok(out) => {
                        return Ok(EnsembleResult {
                            n: self.integration.n,
                            dim: self.kernel.states.len(),
                            states: Buffer::from(out.states),
                            fluxes: out.fluxes,
                            backend: "gpu",
                        })
                    }
                    // Under auto, what this GPU cannot run runs on the CPU below.
                    Err(e) if self.backend == EnsembleBackend::Auto && e.cpu_can_run() => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        let out =
            run_cpu(&self.kernel, &self.args, &self.integration).map_err(|e| e.to_string())?;
        Ok(EnsembleResult {
            n: out.n,
            dim: out.dim,
            states: out.states,
            fluxes: out.fluxes,
            backend: "cpu",
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

/// A buffer argument of element type `ty` from any array-like (flattened in C
/// order). Floats are converted to the declared float type; an integer buffer
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
    let target = match ty {
        ScalarType::F32 => "float32",
        ScalarType::F64 => "float64",
        ScalarType::I32 => "int32",
        ScalarType::U32 => "uint32",
        ScalarType::Bool => {
            return Err(PyValueError::new_err(format!(
                "kernel `{kernel}`: parameter `{name}`: bool buffers are not supported"
            )))
        }
    };
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
    fn read<T: numpy::Element + Copy>(flat: &Bound<'_, PyAny>) -> PyResult<Vec<T>> {
        let a: PyReadonlyArray1<'_, T> = flat.extract()?;
        Ok(a.as_slice()
            .map(|s| s.to_vec())
            .unwrap_or_else(|_| a.to_vec().unwrap_or_default()))
    }
    Ok(match ty {
        ScalarType::F32 => Buffer::from(read::<f32>(&flat)?),
        ScalarType::F64 => Buffer::from(read::<f64>(&flat)?),
        ScalarType::I32 => Buffer::from(read::<i32>(&flat)?),
        _ => Buffer::from(read::<u32>(&flat)?),
    })
}

/// Compiles `source` (named `file` in messages) and converts the arguments.
#[allow(clippy::too_many_arguments)]
pub fn prepare(
    py: Python<'_>,
    source: &str,
    file: &str,
    n: usize,
    t: (f64, f64),
    dt: f64,
    method: Method,
    params: Option<&Bound<'_, PyDict>>,
    backend: EnsembleBackend,
    block: Option<u32>,
    par: Par,
) -> PyResult<EnsembleJob> {
    let kernel = py
        .detach(|| no_panic("ensemble", || compile(file, source)))
        .map_err(vgpu_error)?
        .map_err(vgpu_error)?;
    let mut args = Args::new(&kernel);
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
    let mut integration = Integration::new(n, t.0, t.1, dt).method(method).par(par);
    if let Some(b) = block {
        integration = integration.block(b);
    }
    Ok(EnsembleJob {
        kernel,
        args,
        integration,
        backend,
    })
}

/// A buffer as a numpy array of the given shape.
pub fn buffer_to_numpy(py: Python<'_>, b: Buffer, shape: &[usize]) -> PyResult<Py<PyAny>> {
    fn arr<T: numpy::Element>(py: Python<'_>, v: Vec<T>, shape: &[usize]) -> PyResult<Py<PyAny>> {
        let a = v.into_pyarray(py);
        Ok(a.reshape(shape)?.into_any().unbind())
    }
    match b {
        Buffer::F32(v) => arr(py, v.to_vec(), shape),
        Buffer::F64(v) => arr(py, v.to_vec(), shape),
        Buffer::I32(v) => arr(py, v.to_vec(), shape),
        Buffer::U32(v) => arr(py, v.to_vec(), shape),
    }
}

/// The result as (states (n, dim), {flux name: 1-D array}, backend).
pub fn result_to_python(
    py: Python<'_>,
    r: EnsembleResult,
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
    Ok((states, fluxes.unbind(), r.backend))
}
