//! `VGPU`: the field engine from Python: the equivalence demos (and, as the
//! front ends land, `.field` ensembles and PTX cases).

use crate::ensemble::{
    adaptive_error, adaptive_to_python, kernel_and_args, prepare, result_to_python,
    PreparedAdaptive,
};
use crate::errors::{facade_error, no_panic, vgpu_error};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;
use vgpu::demos::{run_all, DemoOptions, DemoReport};
use vgpu::field::{Method, Par};
use vgpu::Dispatcher;

/// Parses an integrator name (`"euler"`, `"rk4"`), as a `ValueError` when unknown.
pub(crate) fn parse_method(name: &str) -> PyResult<Method> {
    name.parse::<Method>().map_err(|_| {
        PyValueError::new_err(format!("method={name:?}: expected \"euler\" or \"rk4\""))
    })
}

/// `threads`: `None` for rayon's current pool, `0` for one per core, `1` sequential.
pub(crate) fn parse_threads(threads: Option<usize>) -> Par {
    match threads {
        None => Par::Auto,
        Some(1) => Par::Seq,
        Some(n) => Par::Rayon(n),
    }
}

fn report_dict<'py>(py: Python<'py>, r: &DemoReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", r.name)?;
    d.set_item("passed", r.passed)?;
    d.set_item("max_error", r.max_error)?;
    d.set_item("tolerance", r.tolerance)?;
    d.set_item("trajectories", r.trajectories)?;
    d.set_item("steps", r.steps)?;
    d.set_item("seconds", r.elapsed.as_secs_f64())?;
    d.set_item("note", &r.note)?;
    Ok(d)
}

/// The field engine.
#[pyclass(name = "VGPU", module = "vgpu._vgpu", frozen)]
pub struct PyVgpu {
    /// The facade's dispatcher: backend choice, CPU fallback, and the GPU kernel
    /// cache of `.field` ensembles (created on first GPU use).
    dispatcher: Mutex<Dispatcher>,
}

#[pymethods]
impl PyVgpu {
    #[new]
    fn new() -> Self {
        PyVgpu {
            dispatcher: Mutex::new(Dispatcher::new()),
        }
    }

    /// Runs every equivalence demo (scale, matmul, relax, reverse, tree-sum,
    /// histogram) and returns one report dict per demo. `None` keeps a default.
    #[pyo3(signature = (n = None, mat = None, block = None, method = None, dt = None, t_end = None, scale = None, threads = None, seed = None))]
    #[allow(clippy::too_many_arguments)]
    fn demos<'py>(
        &self,
        py: Python<'py>,
        n: Option<usize>,
        mat: Option<(usize, usize, usize)>,
        block: Option<u32>,
        method: Option<&str>,
        dt: Option<f64>,
        t_end: Option<f64>,
        scale: Option<f32>,
        threads: Option<usize>,
        seed: Option<u64>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let d = DemoOptions::default();
        let opts = DemoOptions {
            n: n.unwrap_or(d.n),
            mat: mat.unwrap_or(d.mat),
            block: block.unwrap_or(d.block),
            method: method.map(parse_method).transpose()?.unwrap_or(d.method),
            dt: dt.unwrap_or(d.dt),
            t_end: t_end.unwrap_or(d.t_end),
            s: scale.unwrap_or(d.s),
            par: threads.map_or(d.par, |t| parse_threads(Some(t))),
            seed: seed.unwrap_or(d.seed),
        };
        let results = py
            .detach(|| no_panic("demos", || run_all(&opts)))
            .map_err(vgpu_error)?;
        let mut reports = Vec::with_capacity(results.len());
        for r in results {
            reports.push(report_dict(py, &r.map_err(vgpu_error)?)?);
        }
        Ok(reports)
    }

    /// Integrates `n` trajectories of the `.field` kernel in `source` (named
    /// `file` in error messages) over `t` with step `dt`; returns the final
    /// states (n, dim), the flux outputs {name: 1-D array} and where it ran.
    /// `backend`: "auto", "gpu" or "cpu"; `None` reads `VGPU_BACKEND` (default auto).
    #[pyo3(signature = (source, file, n, t, dt, method = "rk4", params = None, backend = None, block = None, threads = None, shard = None))]
    #[allow(clippy::too_many_arguments)]
    fn ensemble(
        &self,
        py: Python<'_>,
        source: &str,
        file: &str,
        n: usize,
        t: (f64, f64),
        dt: f64,
        method: &str,
        params: Option<&Bound<'_, PyDict>>,
        backend: Option<&str>,
        block: Option<u32>,
        threads: Option<usize>,
        shard: Option<(usize, usize)>,
    ) -> PyResult<(Py<PyAny>, Py<PyDict>, &'static str)> {
        let method = parse_method(method)?;
        let backend = vgpu::resolve_backend(backend)
            .map_err(|e| PyValueError::new_err(format!("{e} (\"auto\", \"gpu\" or \"cpu\")")))?;
        if n == 0 {
            return Err(PyValueError::new_err("ensemble: n must be at least 1"));
        }
        let job = prepare(
            py,
            source,
            file,
            n,
            t,
            dt,
            method,
            params,
            backend,
            block,
            parse_threads(threads),
            shard,
        )?;
        let result = py
            .detach(|| no_panic("ensemble", || job.run(&self.dispatcher)))
            .map_err(vgpu_error)?
            .map_err(facade_error)?;
        result_to_python(py, result)
    }

    /// Integrates `n` trajectories of an unphased `.field` kernel with an
    /// adaptive embedded pair (`tsit5`, `dp5`, `bs3`, `vern7`) on the CPU.
    /// `tspan`: one `(t0, t1)` or `n` of them (flat, `2n` values); `u0`: `None`
    /// or `n × dim` values; `rtol`/`atol`: one value or one per state. Returns
    /// (values (n, dim), or (n, K, dim) with `saveat`; status (n,) uint8;
    /// steps (n, 2) uint64).
    #[pyo3(signature = (source, file, n, tspan, method, rtol, atol, dt0 = None, dtmin = None, dtmax = None, maxiters = None, saveat = None, u0 = None, params = None, backend = None, threads = None, shard = None))]
    #[allow(clippy::too_many_arguments)]
    fn ensemble_adaptive(
        &self,
        py: Python<'_>,
        source: &str,
        file: &str,
        n: usize,
        tspan: Vec<f64>,
        method: &str,
        rtol: Vec<f64>,
        atol: Vec<f64>,
        dt0: Option<f64>,
        dtmin: Option<f64>,
        dtmax: Option<f64>,
        maxiters: Option<u64>,
        saveat: Option<Vec<f64>>,
        u0: Option<Vec<f64>>,
        params: Option<&Bound<'_, PyDict>>,
        backend: Option<&str>,
        threads: Option<usize>,
        shard: Option<(usize, usize)>,
    ) -> PyResult<(Py<PyAny>, Py<PyAny>, Py<PyAny>)> {
        use vgpu::dispatch::MethodChoice;
        use vgpu::field::adaptive::AdaptiveEnsemble;
        let MethodChoice::Adaptive(m) =
            MethodChoice::parse(method, "method=").map_err(facade_error)?
        else {
            return Err(PyValueError::new_err(format!(
                "method={method:?} is a fixed-step method; ensemble_adaptive takes tsit5, dp5, bs3, vern7 or rosenbrock23"
            )));
        };
        let backend = vgpu::resolve_backend(backend)
            .map_err(|e| PyValueError::new_err(format!("{e} (\"auto\", \"gpu\" or \"cpu\")")))?;
        if n == 0 {
            return Err(PyValueError::new_err("ensemble: n must be at least 1"));
        }
        if tspan.len() != 2 && Some(tspan.len()) != n.checked_mul(2) {
            return Err(PyValueError::new_err(format!(
                "ensemble: tspan must be (t0, t1) or an (n, 2) = ({n}, 2) array, got {} values",
                tspan.len()
            )));
        }
        if let Some(m) = maxiters {
            vgpu::Limits::default()
                .steps(&format!("maxiters={m}"), m)
                .map_err(facade_error)?;
        }
        let mut opts = AdaptiveEnsemble::new(m)
            .rtol_per_component(rtol)
            .atol_per_component(atol)
            .par(parse_threads(threads));
        if let Some(h) = dt0 {
            opts = opts.dt0(h);
        }
        if let Some(h) = dtmin {
            opts = opts.dtmin(h);
        }
        if let Some(h) = dtmax {
            opts = opts.dtmax(h);
        }
        if let Some(k) = maxiters {
            opts = opts.maxiters(k);
        }
        if let Some(s) = saveat {
            opts = opts.saveat(s);
        }
        let (kernel, args) = kernel_and_args(py, source, file, params)?;
        // shard=(i, r): trajectories [lo, hi) of the whole run (one trajectory
        // per unit, the rule of `vgpu ensemble --shard`), globally indexed.
        let (mut spans, mut u0): (Vec<(f64, f64)>, _) =
            (tspan.chunks(2).map(|r| (r[0], r[1])).collect(), u0);
        let (run_n, slice) = match shard {
            None => (n, None),
            Some((index, count)) => {
                let spec = vgpu::shard::ShardSpec::parse(&format!("{index}/{count}"))
                    .and_then(|s| s.range(n, 1))
                    .map_err(|e| {
                        PyValueError::new_err(e.to_string().replace("--shard", "shard="))
                    })?;
                let (lo, hi) = spec;
                if spans.len() == n && n > 1 {
                    spans = spans[lo..hi].to_vec();
                }
                if let Some(v) = u0.as_mut() {
                    let dim = kernel.states.len();
                    if v.len() == n * dim {
                        *v = v[lo * dim..hi * dim].to_vec();
                    }
                }
                (
                    hi - lo,
                    Some(vgpu::ir::Slice {
                        first: lo,
                        total: n,
                    }),
                )
            }
        };
        let job = PreparedAdaptive {
            kernel,
            args,
            run: vgpu::ir::adaptive::AdaptiveRun {
                n: run_n,
                spans,
                u0,
                options: opts,
                slice,
            },
            backend,
        };
        let result = py
            .detach(|| no_panic("ensemble", || job.run(&self.dispatcher)))
            .map_err(vgpu_error)?
            .map_err(adaptive_error)?;
        adaptive_to_python(py, result)
    }

    /// Runs a PTX case (`case.json` or its folder) and returns its report.
    /// `backend`: `"cpu"` (the checked interpreter, the default, as `vgpu ptx
    /// run`), `"gpu"` (compiled to WGSL and run through wgpu; what it cannot
    /// run raises, naming the instruction and PTX line) or `"auto"` (the GPU
    /// where the kernel compiles and an adapter exists, else the interpreter;
    /// the report's `fallbacks` say why). `racecheck`: on the GPU, the
    /// shared-memory race check too (the interpreter always runs it when
    /// `check`).
    #[pyo3(signature = (path, check = true, parallel = true, initcheck = false, backend = None, racecheck = false))]
    #[allow(clippy::too_many_arguments)]
    fn ptx_case<'py>(
        &self,
        py: Python<'py>,
        path: &str,
        check: bool,
        parallel: bool,
        initcheck: bool,
        backend: Option<&str>,
        racecheck: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        crate::ptx::ptx_case(py, path, check, parallel, initcheck, backend, racecheck)
    }

    fn __repr__(&self) -> String {
        "VGPU()".to_string()
    }
}
