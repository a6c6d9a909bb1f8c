//! Running a kernel on the CPU: unphased fields through the field engine's
//! executor ([`vgpu_field::Launch`], any Butcher tableau), phased fields
//! (shared sub-fields, barriers, flux) through the batched phase executor here.

use crate::args::{Args, Buffer};
use crate::error::IrError;
use crate::eval::{self, Dims, Frame, Pools, Program, SharedCol, Src, StateCols};
use crate::field::{IrField, IrFloat};
use crate::kernel::{Kernel, NodeId, Update, Variance};
use crate::ops;
use crate::types::{ScalarType, Value};
use rayon::prelude::*;
use vgpu_field::{FieldError, Launch, LaunchConfig, Method, Par};

/// How to integrate a launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Integration {
    /// Number of trajectories.
    pub n: usize,
    /// Trajectories per block.
    pub block: u32,
    /// Start time (unphased fields).
    pub t0: f64,
    /// End time (unphased fields).
    pub t1: f64,
    /// Step.
    pub dt: f64,
    /// Integrator.
    pub method: Method,
    /// CPU parallelism (results are the same bits for any value).
    pub par: Par,
}

impl Integration {
    /// `n` trajectories over `t0..t1` with step `dt`, RK4, blocks of 256 (fewer
    /// when `n` is smaller), [`Par::Auto`].
    pub fn new(n: usize, t0: f64, t1: f64, dt: f64) -> Integration {
        Integration {
            n,
            block: n.clamp(1, 256) as u32,
            t0,
            t1,
            dt,
            method: Method::Rk4,
            par: Par::Auto,
        }
    }
    /// Sets the integrator.
    pub fn method(mut self, m: Method) -> Self {
        self.method = m;
        self
    }
    /// Sets the block size.
    pub fn block(mut self, b: u32) -> Self {
        self.block = b;
        self
    }
    /// Sets the parallelism.
    pub fn par(mut self, p: Par) -> Self {
        self.par = p;
        self
    }

    /// The number of steps covering `t0..t1` (must be a whole number of `dt`).
    ///
    /// # Errors
    /// [`IrError::Launch`] for a bad span or step.
    pub fn steps(&self, kernel: &str) -> Result<usize, IrError> {
        steps_of(kernel, self.t1 - self.t0, self.dt, "t1 - t0")
    }

    fn config(&self, kernel: &str) -> Result<LaunchConfig, IrError> {
        if self.n == 0 {
            return Err(IrError::Launch {
                kernel: kernel.into(),
                message: "n = 0: nothing to integrate".into(),
            });
        }
        if self.n > u32::MAX as usize {
            return Err(IrError::Launch {
                kernel: kernel.into(),
                message: format!("n = {} exceeds 2^32 - 1", self.n),
            });
        }
        LaunchConfig::linear(self.n, self.block).map_err(|e| field_err(kernel, e))
    }
}

fn steps_of(kernel: &str, span: f64, dt: f64, what: &str) -> Result<usize, IrError> {
    if !(dt.is_finite() && dt > 0.0) {
        return Err(IrError::Launch {
            kernel: kernel.into(),
            message: format!("dt = {dt} is not a positive finite step"),
        });
    }
    if !(span.is_finite() && span >= 0.0) {
        return Err(IrError::Launch {
            kernel: kernel.into(),
            message: format!("{what} = {span} is not a finite, non-negative span"),
        });
    }
    let s = (span / dt).round();
    if (s * dt - span).abs() > 1e-9 * span.abs().max(1.0) || s > 1e12 {
        return Err(IrError::Launch {
            kernel: kernel.into(),
            message: format!("{what} = {span} is not a whole number of steps dt = {dt}"),
        });
    }
    Ok(s as usize)
}

fn field_err(kernel: &str, e: FieldError) -> IrError {
    IrError::Launch {
        kernel: kernel.into(),
        message: e.to_string(),
    }
}

/// The result of a launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// Trajectories.
    pub n: usize,
    /// State components per trajectory.
    pub dim: usize,
    /// Final states, trajectory-major (`n × dim`), in the field's float type.
    pub states: Buffer,
    /// Flux outputs, by name, in declaration order.
    pub fluxes: Vec<(String, Buffer)>,
    /// Steps taken (summed over phases for a phased field).
    pub steps: usize,
}

impl Output {
    /// The final states as `f64`, trajectory-major.
    pub fn states_f64(&self) -> Vec<f64> {
        (0..self.states.len())
            .map(|i| self.states.get(i).as_f64())
            .collect()
    }
    /// A flux output by name.
    pub fn flux(&self, name: &str) -> Option<&Buffer> {
        self.fluxes.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }
}

/// Runs `kernel` on the CPU: every trajectory from its initial state (and each
/// block's shared sub-fields from theirs) through the field's phases.
///
/// # Errors
/// Missing/unknown arguments, out-of-bounds reads (naming buffer, trajectory
/// and place), a state that becomes NaN or infinite, a bad launch.
pub fn run_cpu(kernel: &Kernel, args: &Args, integ: &Integration) -> Result<Output, IrError> {
    args.check_complete()?;
    match kernel.float_type() {
        ScalarType::F64 => run_typed::<f64>(kernel, args, integ),
        _ => run_typed::<f32>(kernel, args, integ),
    }
}

/// The initial states (trajectory-major, `blocks · block · dim`, padding lanes
/// repeating the last trajectory).
fn initial_states<T: IrFloat>(
    k: &Kernel,
    args: &Args,
    cfg: &LaunchConfig,
    n: usize,
) -> Result<Vec<T>, IrError> {
    let dim = k.states.len();
    let lanes = cfg.threads_per_block();
    let blocks = cfg.num_blocks();
    let roots: Vec<NodeId> = k.states.iter().map(|s| s.init).collect();
    let var = k.variance();
    let reach = k.reachable(&roots);
    let dims = Dims {
        bdim: lanes as u32,
        gdim: blocks as u32,
        n: n as u32,
        rep: 0,
    };
    let uni = eval::uniform_values(k, &reach, &var, args, dims)?;
    let prog = Program::build(k, &roots, &var, &uni);
    let mut states = vec![T::ZERO; blocks * lanes * dim];
    if dim == 0 {
        return Ok(states);
    }
    let empty: [T; 0] = [];
    let faults: Vec<Option<IrError>> = states
        .par_chunks_mut(lanes * dim)
        .enumerate()
        .map_init(
            || Pools::new(prog.slots, lanes),
            |pools, (b, chunk)| {
                let first = b * lanes;
                let fr = Frame {
                    k,
                    args,
                    lanes,
                    first,
                    block: b as u32,
                    bdim: lanes as u32,
                    h: T::cols(&empty),
                    h0: T::cols(&empty),
                    t: Value::F64(0.0).cast(T::TYPE),
                    shared: &[],
                    last: n.saturating_sub(first).min(lanes),
                };
                let mut fault = None;
                eval::run(&prog.lane, pools, &fr, &mut fault);
                eval::run(&prog.vary, pools, &fr, &mut fault);
                if let Some(f) = fault {
                    if first + f.lane < n {
                        return Some(f.into_error(k, first, lanes as u32));
                    }
                }
                for (s, st) in k.states.iter().enumerate() {
                    let src = prog.src[st.init.index()].expect("compiled");
                    for l in 0..lanes {
                        chunk[l * dim + s] =
                            T::from_value(eval::read_src(src, T::TYPE, pools, &fr, l));
                    }
                }
                None
            },
        )
        .collect();
    if let Some(e) = faults.into_iter().flatten().next() {
        return Err(e);
    }
    Ok(states)
}

fn to_buffer<T: IrFloat>(v: Vec<T>) -> Buffer {
    match T::TYPE {
        ScalarType::F64 => Buffer::F64(v.iter().map(|x| x.to_f64()).collect()),
        _ => Buffer::F32(v.iter().map(|x| x.to_f64() as f32).collect()),
    }
}

fn run_typed<T: IrFloat>(k: &Kernel, args: &Args, integ: &Integration) -> Result<Output, IrError> {
    let cfg = integ.config(&k.name)?;
    let dim = k.states.len();
    let n = integ.n;
    let mut states = initial_states::<T>(k, args, &cfg, n)?;
    if k.is_phased() {
        let (steps, fluxes) = run_phased::<T>(k, args, integ, &cfg, &mut states)?;
        states.truncate(n * dim);
        return Ok(Output {
            n,
            dim,
            states: to_buffer(states),
            fluxes,
            steps,
        });
    }
    let steps = integ.steps(&k.name)?;
    let field = IrField::new(
        k,
        args,
        n,
        cfg.threads_per_block() as u32,
        cfg.num_blocks() as u32,
    )?;
    let launch = Launch::new(cfg)
        .method(integ.method)
        .t0(integ.t0)
        .dt(integ.dt)
        .steps(steps)
        .par(integ.par);
    let r = launch.run(&field, &(), &mut states);
    if let Some(e) = field.take_fault() {
        return Err(e);
    }
    match r {
        Ok(_) => {}
        Err(FieldError::NonFinite {
            trajectory,
            component,
            t,
            value,
            ..
        }) => {
            return Err(IrError::NonFinite {
                kernel: k.name.clone(),
                state: k.states[component].name.clone(),
                trajectory: trajectory.min(n - 1),
                value,
                t,
            })
        }
        Err(e) => return Err(field_err(&k.name, e)),
    }
    states.truncate(n * dim);
    let fluxes = vec![];
    Ok(Output {
        n,
        dim,
        states: to_buffer(states),
        fluxes,
        steps,
    })
}

/// One phase repetition, compiled.
struct Plan {
    prog: Program,
    phase: usize,
    steps: usize,
}

fn zero_of(ty: ScalarType) -> Value {
    Value::U32(0).cast(ty)
}

fn run_phased<T: IrFloat>(
    k: &Kernel,
    args: &Args,
    integ: &Integration,
    cfg: &LaunchConfig,
    states: &mut [T],
) -> Result<(usize, Vec<(String, Buffer)>), IrError> {
    let lanes = cfg.threads_per_block();
    let blocks = cfg.num_blocks();
    let n = integ.n;
    let launch_err = |m: String| IrError::Launch {
        kernel: k.name.clone(),
        message: m,
    };
    if n % lanes != 0 {
        return Err(launch_err(format!(
            "a field with phases runs whole blocks: n = {n} is not a multiple of the block size {lanes}"
        )));
    }
    if integ.method != Method::Euler {
        return Err(launch_err(format!(
            "a field with phases integrates with euler (its phases are piecewise-constant segments), not {}",
            integ.method
        )));
    }
    let dt = integ.dt;
    let var = k.variance();
    let base = Dims {
        bdim: lanes as u32,
        gdim: blocks as u32,
        n: n as u32,
        rep: 0,
    };
    // Lengths and initial values of shared sub-fields and flux outputs.
    let mut uniform_roots: Vec<NodeId> = vec![];
    for s in &k.shared {
        uniform_roots.push(s.len);
        uniform_roots.push(s.init);
    }
    for f in &k.fluxes {
        uniform_roots.push(f.len);
    }
    for p in &k.phases {
        uniform_roots.extend(p.repeat);
    }
    let reach = k.reachable(&uniform_roots);
    let uni = eval::uniform_values(k, &reach, &var, args, base)?;
    let u32_of = |id: NodeId| match uni[id.index()] {
        Some(Value::U32(v)) => v as usize,
        _ => 0,
    };
    let shared_init: Vec<SharedCol> = k
        .shared
        .iter()
        .map(|s| {
            let len = u32_of(s.len);
            let v = uni[s.init.index()].expect("uniform");
            match v {
                Value::F32(x) => SharedCol::F32(vec![x; len]),
                Value::F64(x) => SharedCol::F64(vec![x; len]),
                Value::I32(x) => SharedCol::Int(vec![x as u32; len]),
                Value::U32(x) => SharedCol::Int(vec![x; len]),
                Value::Bool(x) => SharedCol::Bool(vec![x; len]),
            }
        })
        .collect();
    let flux_lens: Vec<usize> = k.fluxes.iter().map(|f| u32_of(f.len)).collect();
    // Compile every phase repetition.
    let mut plans = Vec::new();
    let mut total_steps = 0;
    for (pi, p) in k.phases.iter().enumerate() {
        let reps = p.repeat.map(u32_of).unwrap_or(1);
        for rep in 0..reps {
            let dims = Dims {
                rep: rep as u32,
                ..base
            };
            let mut roots = k.phase_roots(p);
            let span = p.span.expect("phased");
            roots.push(span);
            let reach = k.reachable(&roots);
            let uni = eval::uniform_values(k, &reach, &var, args, dims)?;
            let span_v = uni[span.index()].map(|v| v.as_f64()).unwrap_or(f64::NAN);
            let steps = steps_of(
                &k.name,
                span_v,
                dt,
                &format!("the span of phase `{}`", p.name),
            )?;
            let unit = dt == 1.0;
            let needs_unit = p.updates.iter().any(|u| matches!(u, Update::Jump(_)))
                || p.drives
                    .iter()
                    .any(|d| !k.shared[d.shared as usize].ty.is_float())
                || p.emits
                    .iter()
                    .any(|e| !k.fluxes[e.flux as usize].ty.is_float());
            if needs_unit && !unit {
                return Err(launch_err(format!(
                    "phase `{}` has jumps or integer drives/emits: they are unit-time segments and need dt = 1 (got {dt})",
                    p.name
                )));
            }
            total_steps += steps;
            plans.push(Plan {
                prog: Program::build(k, &k.phase_roots(p), &var, &uni),
                phase: pi,
                steps,
            });
        }
    }
    let dim = k.states.len();
    let chunk = (lanes * dim).max(1);
    let mut dummy = vec![T::ZERO; blocks];
    let st: &mut [T] = if dim == 0 { &mut dummy } else { states };
    type Logs = Vec<Vec<(usize, Value)>>;
    let run_block = |b: usize, chunk: &mut [T]| -> Result<Logs, IrError> {
        let first = b * lanes;
        let mut h = vec![T::ZERO; lanes * dim];
        for l in 0..lanes {
            for s in 0..dim {
                h[s * lanes + l] = chunk[l * dim + s];
            }
        }
        let h0 = h.clone();
        let mut shared = shared_init.clone();
        let mut logs: Logs = vec![vec![]; k.fluxes.len()];
        for plan in &plans {
            let p = &k.phases[plan.phase];
            let mut pools = Pools::new(plan.prog.slots, lanes);
            let mut lane_done = false;
            for s in 0..plan.steps {
                let t = Value::F64(s as f64 * dt).cast(T::TYPE);
                let mut fault = None;
                {
                    let fr = Frame {
                        k,
                        args,
                        lanes,
                        first,
                        block: b as u32,
                        bdim: lanes as u32,
                        h: T::cols(&h),
                        h0: T::cols(&h0),
                        t,
                        shared: &shared,
                        last: lanes,
                    };
                    if !lane_done {
                        eval::run(&plan.prog.lane, &mut pools, &fr, &mut fault);
                        lane_done = true;
                    }
                    eval::run(&plan.prog.vary, &mut pools, &fr, &mut fault);
                    if let Some(f) = fault {
                        return Err(f.into_error(k, first, lanes as u32));
                    }
                }
                // Everything reads the step's start; now apply the step.
                let read = |src: Src, ty: ScalarType, l: usize, h: &[T], shared: &[SharedCol]| {
                    let fr = Frame {
                        k,
                        args,
                        lanes,
                        first,
                        block: b as u32,
                        bdim: lanes as u32,
                        h: T::cols(h),
                        h0: T::cols(&h0),
                        t,
                        shared,
                        last: lanes,
                    };
                    eval::read_src(src, ty, &pools, &fr, l)
                };
                // Drives: contributions summed per element in lane order.
                let mut rates: Vec<Vec<Option<Value>>> =
                    shared.iter().map(|c| vec![None; c.len()]).collect();
                for d in &p.drives {
                    let sty = k.shared[d.shared as usize].ty;
                    let len = shared[d.shared as usize].len();
                    for l in 0..lanes {
                        if let Some(g) = d.guard {
                            if read(
                                plan.prog.src[g.index()].expect("compiled"),
                                ScalarType::Bool,
                                l,
                                &h,
                                &shared,
                            ) != Value::Bool(true)
                            {
                                continue;
                            }
                        }
                        let i = eval::index_of(read(
                            plan.prog.src[d.index.index()].expect("compiled"),
                            k.ty(d.index),
                            l,
                            &h,
                            &shared,
                        ));
                        if i < 0 || i as usize >= len {
                            return Err(eval::oob(
                                k,
                                &k.shared[d.shared as usize].name,
                                len,
                                i,
                                first + l,
                                lanes as u32,
                                k.sites[d.site as usize],
                            ));
                        }
                        let v = read(
                            plan.prog.src[d.value.index()].expect("compiled"),
                            sty,
                            l,
                            &h,
                            &shared,
                        );
                        let slot = &mut rates[d.shared as usize][i as usize];
                        *slot = Some(match *slot {
                            None => v,
                            Some(acc) => {
                                ops::binary(crate::kernel::BinOp::Add, acc, v).expect("typed")
                            }
                        });
                    }
                }
                // Emits, in lane order.
                for e in &p.emits {
                    let fty = k.fluxes[e.flux as usize].ty;
                    let len = flux_lens[e.flux as usize];
                    for l in 0..lanes {
                        if let Some(g) = e.guard {
                            if read(
                                plan.prog.src[g.index()].expect("compiled"),
                                ScalarType::Bool,
                                l,
                                &h,
                                &shared,
                            ) != Value::Bool(true)
                            {
                                continue;
                            }
                        }
                        let i = eval::index_of(read(
                            plan.prog.src[e.index.index()].expect("compiled"),
                            k.ty(e.index),
                            l,
                            &h,
                            &shared,
                        ));
                        if i < 0 || i as usize >= len {
                            return Err(eval::oob(
                                k,
                                &k.fluxes[e.flux as usize].name,
                                len,
                                i,
                                first + l,
                                lanes as u32,
                                k.sites[e.site as usize],
                            ));
                        }
                        let v = read(
                            plan.prog.src[e.value.index()].expect("compiled"),
                            fty,
                            l,
                            &h,
                            &shared,
                        );
                        let amount = if fty.is_float() {
                            ops::binary(crate::kernel::BinOp::Mul, Value::F64(dt).cast(fty), v)
                                .expect("typed")
                        } else {
                            v
                        };
                        logs[e.flux as usize].push((i as usize, amount));
                    }
                }
                // States: Euler (y + dt·r, as the field engine's stepper) or jumps.
                let mut next = h.clone();
                let dtt = T::from_f64(dt);
                for (s, u) in p.updates.iter().enumerate() {
                    match u {
                        Update::Hold => {}
                        Update::Rate(r) => {
                            let src = plan.prog.src[r.index()].expect("compiled");
                            for l in 0..lanes {
                                let v = T::from_value(read(src, T::TYPE, l, &h, &shared));
                                next[s * lanes + l] = h[s * lanes + l] + dtt * v;
                            }
                        }
                        Update::Jump(r) => {
                            let src = plan.prog.src[r.index()].expect("compiled");
                            for l in 0..lanes {
                                next[s * lanes + l] =
                                    T::from_value(read(src, T::TYPE, l, &h, &shared));
                            }
                        }
                    }
                }
                h = next;
                for (si, r) in rates.into_iter().enumerate() {
                    let sty = k.shared[si].ty;
                    for (e, rate) in r.into_iter().enumerate() {
                        if let Some(rate) = rate {
                            let cur = shared[si].get(e, sty);
                            let delta = if sty.is_float() {
                                ops::binary(
                                    crate::kernel::BinOp::Mul,
                                    Value::F64(dt).cast(sty),
                                    rate,
                                )
                                .expect("typed")
                            } else {
                                rate
                            };
                            let v =
                                ops::binary(crate::kernel::BinOp::Add, cur, delta).expect("typed");
                            match (&mut shared[si], v) {
                                (SharedCol::F32(c), Value::F32(x)) => c[e] = x,
                                (SharedCol::F64(c), Value::F64(x)) => c[e] = x,
                                (SharedCol::Int(c), Value::I32(x)) => c[e] = x as u32,
                                (SharedCol::Int(c), Value::U32(x)) => c[e] = x,
                                _ => {}
                            }
                        }
                    }
                }
            }
        }
        for l in 0..lanes {
            for s in 0..dim {
                chunk[l * dim + s] = h[s * lanes + l];
            }
        }
        // Non-finite states, lowest lane first.
        for l in 0..lanes {
            for s in 0..dim {
                let v = h[s * lanes + l];
                if !v.is_finite() {
                    return Err(IrError::NonFinite {
                        kernel: k.name.clone(),
                        state: k.states[s].name.clone(),
                        trajectory: first + l,
                        value: v.to_f64(),
                        t: total_steps as f64 * dt,
                    });
                }
            }
        }
        Ok(logs)
    };
    let results: Vec<Result<Logs, IrError>> = integ
        .par
        .run(|parallel| {
            Ok(if parallel {
                st.par_chunks_mut(chunk)
                    .enumerate()
                    .map(|(b, c)| run_block(b, c))
                    .collect()
            } else {
                st.chunks_mut(chunk)
                    .enumerate()
                    .map(|(b, c)| run_block(b, c))
                    .collect()
            })
        })
        .map_err(|e| field_err(&k.name, e))?;
    let mut acc: Vec<Vec<Value>> = k
        .fluxes
        .iter()
        .zip(&flux_lens)
        .map(|(f, &len)| vec![zero_of(f.ty); len])
        .collect();
    let mut all = Vec::with_capacity(results.len());
    for r in results {
        all.push(r?);
    }
    for logs in &all {
        for (fi, log) in logs.iter().enumerate() {
            for &(i, amount) in log {
                acc[fi][i] =
                    ops::binary(crate::kernel::BinOp::Add, acc[fi][i], amount).expect("typed");
            }
        }
    }
    let fluxes = k
        .fluxes
        .iter()
        .zip(acc)
        .map(|(f, vals)| {
            let b = match f.ty {
                ScalarType::F32 => Buffer::F32(
                    vals.iter()
                        .map(|v| if let Value::F32(x) = v { *x } else { 0.0 })
                        .collect(),
                ),
                ScalarType::F64 => Buffer::F64(vals.iter().map(|v| v.as_f64()).collect()),
                ScalarType::I32 => Buffer::I32(
                    vals.iter()
                        .map(|v| if let Value::I32(x) = v { *x } else { 0 })
                        .collect(),
                ),
                _ => Buffer::U32(
                    vals.iter()
                        .map(|v| if let Value::U32(x) = v { *x } else { 0 })
                        .collect(),
                ),
            };
            (f.name.clone(), b)
        })
        .collect();
    let _ = Variance::Uniform;
    let _ = StateCols::F32(&[]);
    Ok((total_steps, fluxes))
}
