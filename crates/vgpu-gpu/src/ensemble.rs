//! IR ensembles on the GPU: the WGSL [`vgpu_ir::emit_wgsl`] generates from a
//! kernel runs through the [`KernelCache`] (compiled once per kernel, integrator
//! and workgroup size), one invocation per trajectory integrating all of its
//! steps in a single dispatch.

use crate::error::GpuError;
use crate::kernel_cache::{Binding, KernelCache, KernelSpec};
use std::time::{Duration, Instant};
use vgpu_ir::wgsl::{emit_wgsl, meta_words};
use vgpu_ir::{Args, Buffer, Integration, IrError, Kernel, Node};

/// Invocations per workgroup of generated ensemble kernels.
pub const ENSEMBLE_WORKGROUP: u32 = 64;

/// An error of a GPU ensemble: the kernel's (IR) or the device's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnsembleError {
    /// The kernel, its arguments or its results.
    #[error(transparent)]
    Ir(#[from] IrError),
    /// The GPU.
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

/// The result of a GPU ensemble.
#[derive(Debug, Clone)]
pub struct GpuEnsemble {
    /// Final states, trajectory-major (`n × dim`).
    pub states: Vec<f32>,
    /// Steps integrated.
    pub steps: usize,
    /// Host-to-host time of the dispatch (upload, kernel, download; the first
    /// call includes the compilation).
    pub end_to_end: Duration,
    /// Device time of one dispatch, when asked for ([`run_ensemble_gpu`]'s `timing`).
    pub kernel_time: Option<Duration>,
    /// Whether this call compiled the kernel (a cache miss).
    pub compiled: bool,
}

/// The kernel spec of `k` integrated with `integ.method`.
///
/// # Errors
/// [`IrError::Unsupported`] for `f64` or phased kernels.
pub fn ensemble_spec(k: &Kernel, integ: &Integration) -> Result<KernelSpec, IrError> {
    let tableau = integ.method.tableau();
    let wgsl = emit_wgsl(k, &tableau, ENSEMBLE_WORKGROUP)?;
    Ok(KernelSpec::new(&format!("field {}", k.name), wgsl, "main")
        .specialisation(&format!("ensemble {} {}", k.name, tableau.name()))
        .workgroup_size([ENSEMBLE_WORKGROUP, 1, 1]))
}

fn bytes(b: &Buffer) -> Vec<u8> {
    let mut v = b.to_le_bytes();
    if v.is_empty() {
        v = vec![0; 4];
    }
    v
}

/// Runs `k` over `integ` on the GPU of `cache`. With `timing = Some(iters)` it
/// also measures the device time of one dispatch over `iters` dispatches.
///
/// # Errors
/// Unsupported kernels, missing arguments, bad launches, out-of-bounds reads
/// (the lowest faulting trajectory, its place), non-finite states, GPU errors.
pub fn run_ensemble_gpu(
    cache: &mut KernelCache,
    k: &Kernel,
    args: &Args,
    integ: &Integration,
    timing: Option<u32>,
) -> Result<GpuEnsemble, EnsembleError> {
    args.check_complete()?;
    let spec = ensemble_spec(k, integ)?;
    let steps = integ.steps(&k.name)?;
    if integ.n == 0 || integ.n > u32::MAX as usize {
        return Err(IrError::Launch {
            kernel: k.name.clone(),
            message: format!("n = {} is out of range 1..2^32", integ.n),
        }
        .into());
    }
    let n = integ.n;
    let dim = k.states.len();
    let meta = meta_words(k, args, n as u32, steps as u32, integ.t0, integ.dt)?;
    let buffers: Vec<Vec<u8>> = (0..k.params.len())
        .filter_map(|i| args.buffer_at(i).map(bytes))
        .collect();
    let mut out = vec![0.0f32; n * dim];
    let mut fault = [u32::MAX, 0, 0, 0];
    let groups = n.div_ceil(ENSEMBLE_WORKGROUP as usize);
    let x = groups.min(65535);
    let workgroups = [x as u32, groups.div_ceil(x) as u32, 1];
    let compiled = !cache.is_compiled(&spec);
    let start = Instant::now();
    {
        let mut bindings = vec![
            Binding::write(&mut out[..]),
            Binding::read(&meta[..]),
            Binding::read_write(&mut fault[..]),
        ];
        for b in &buffers {
            bindings.push(Binding::Read(b));
        }
        cache.dispatch(&spec, &mut bindings, workgroups)?;
    }
    let end_to_end = start.elapsed();
    if fault[0] != u32::MAX {
        let site = fault[1];
        let buf = k.nodes.iter().find_map(|nd| match nd {
            Node::Load { buf, site: s, .. } if *s == site => Some(*buf as usize),
            _ => None,
        });
        let (name, len) = match buf {
            Some(b) => (
                k.params[b].name.clone(),
                args.buffer_at(b).map(|x| x.len()).unwrap_or(0),
            ),
            None => ("?".into(), 0),
        };
        let traj = fault[0] as usize;
        let bdim = ENSEMBLE_WORKGROUP as usize;
        return Err(IrError::OutOfBounds {
            kernel: k.name.clone(),
            buffer: name,
            len,
            index: fault[2] as i64,
            trajectory: traj,
            block: traj / bdim,
            thread: traj % bdim,
            file: k.source.clone(),
            pos: k.sites.get(site as usize).copied().unwrap_or_default(),
        }
        .into());
    }
    for (i, v) in out.iter().enumerate() {
        if !v.is_finite() {
            return Err(IrError::NonFinite {
                kernel: k.name.clone(),
                state: k.states[i % dim].name.clone(),
                trajectory: i / dim,
                value: *v as f64,
                t: integ.t0 + steps as f64 * integ.dt,
            }
            .into());
        }
    }
    let kernel_time = match timing {
        Some(iters) => {
            let mut scratch_out = vec![0.0f32; n * dim];
            let mut scratch_fault = [u32::MAX, 0, 0, 0];
            let mut bindings = vec![
                Binding::write(&mut scratch_out[..]),
                Binding::read(&meta[..]),
                Binding::read_write(&mut scratch_fault[..]),
            ];
            for b in &buffers {
                bindings.push(Binding::Read(b));
            }
            Some(cache.time_dispatches(&spec, &mut bindings, workgroups, iters)?)
        }
        None => None,
    };
    Ok(GpuEnsemble {
        states: out,
        steps,
        end_to_end,
        kernel_time,
        compiled,
    })
}
