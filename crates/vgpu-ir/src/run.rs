//! Running a kernel on the CPU, one way through the field engine: unphased
//! fields through its executor ([`vgpu_field::Launch`]), phased fields (shared
//! sub-fields, barriers, flux) through its phased launch
//! ([`vgpu_field::PhasedLaunch::run_flow`]); both with any Butcher tableau.

use crate::args::{Args, Buffer};
use crate::error::IrError;
use crate::eval::{self, Dims, Frame, Pools, Program, StateCols};
use crate::field::{IrField, IrFloat};
use crate::jit::Engine;
use crate::kernel::{Kernel, NodeId};
use crate::limits::Limits;
use crate::phased::{steps_of, IrPhased};
use crate::slice::Slice;
use crate::types::{ScalarType, Value};

use vgpu_field::executor::Progress;
use vgpu_field::{run_blocks, Barrier, FieldError, Launch, LaunchConfig, Method, Par};

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
    /// Where to report the trajectory-steps done while the CPU run advances
    /// (for progress bars); `None` costs nothing.
    pub progress: Option<Progress>,
    /// This launch is a slice of a larger one (its `n` trajectories from
    /// `slice.first` of `slice.total`): the kernel sees the larger launch's
    /// indices and counts. `None`: the whole launch.
    pub slice: Option<Slice>,
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
            progress: None,
            slice: None,
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
    /// Runs trajectories `slice.first .. slice.first + n` of a launch of
    /// `slice.total` ([`Slice`]).
    pub fn slice(mut self, slice: Slice) -> Self {
        self.slice = Some(slice);
        self
    }
    /// The slice this launch is: [`Integration::slice`], or the whole launch.
    pub fn window(&self) -> Slice {
        self.slice.unwrap_or(Slice::whole(self.n))
    }
    /// Reports the work done to `p` as the CPU run advances.
    pub fn progress(mut self, p: Progress) -> Self {
        self.progress = Some(p);
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
        let cfg = LaunchConfig::linear(self.n, self.block).map_err(|e| field_err(kernel, e))?;
        self.window()
            .check(kernel, self.n, cfg.threads_per_block())?;
        Ok(cfg)
    }
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
    run_cpu_with(kernel, args, integ, &Limits::default())
}

/// [`run_cpu`] with the sizes the kernel may take from its input (shared
/// sub-field bytes, flux elements, phase repetitions) held against `limits`
/// instead of [`Limits::default`].
///
/// # Errors
/// Those of [`run_cpu`]; [`IrError::Limit`] for a size over `limits`, before
/// anything of that size is allocated; [`IrError::Malformed`] for a kernel
/// that fails [`Kernel::validate`].
pub fn run_cpu_with(
    kernel: &Kernel,
    args: &Args,
    integ: &Integration,
    limits: &Limits,
) -> Result<Output, IrError> {
    run_cpu_on(kernel, args, integ, limits, Engine::default())
}

/// [`run_cpu_with`] on the CPU engine `engine` for unphased fields
/// ([`Engine::Jit`]: the rates as native code where the kernel and host allow
/// it, else the column evaluator; [`Engine::Eval`]: the evaluator). Same bits.
///
/// # Errors
/// Those of [`run_cpu_with`].
pub fn run_cpu_on(
    kernel: &Kernel,
    args: &Args,
    integ: &Integration,
    limits: &Limits,
    engine: Engine,
) -> Result<Output, IrError> {
    kernel.validate()?;
    args.check_complete()?;
    if let Some(e) = kernel.events.first() {
        return Err(IrError::Launch {
            kernel: kernel.name.clone(),
            message: format!(
                "event `{}` ({}:{}): events run with the adaptive methods (tsit5, dp5, bs3, \
                 vern7, rosenbrock23), not with fixed steps",
                e.name, e.pos.line, e.pos.col
            ),
        });
    }
    match kernel.float_type() {
        ScalarType::F64 => run_typed::<f64>(kernel, args, integ, limits, engine),
        _ => run_typed::<f32>(kernel, args, integ, limits, engine),
    }
}

/// The initial states (trajectory-major, `blocks · block · dim`, padding lanes
/// repeating the last trajectory), blocks spread as `par` says.
fn initial_states<T: IrFloat>(
    k: &Kernel,
    args: &Args,
    cfg: &LaunchConfig,
    n: usize,
    par: Par,
    slice: Slice,
) -> Result<Vec<T>, IrError> {
    let dim = k.states.len();
    let lanes = cfg.threads_per_block();
    let blocks = cfg.num_blocks();
    let (offset, block0) = (slice.first, slice.first_block(lanes));
    let roots: Vec<NodeId> = k.states.iter().map(|s| s.init).collect();
    let var = k.variance();
    let reach = k.reachable(&roots);
    let dims = Dims {
        bdim: lanes as u32,
        gdim: slice.blocks(lanes) as u32,
        n: slice.total as u32,
        rep: 0,
    };
    let uni = eval::uniform_values(k, &reach, &var, args, dims)?;
    let prog = Program::build(k, &roots, &var, &uni);
    let mut states = vec![T::ZERO; blocks * lanes * dim];
    if dim == 0 {
        return Ok(states);
    }
    let empty: [T; 0] = [];
    // One block's initial states into `chunk`; a fault of a live lane is its error.
    let block = |pools: &mut Pools, b: usize, chunk: &mut [T]| -> Option<IrError> {
        let first = b * lanes;
        let fr = Frame {
            k,
            args,
            lanes,
            first: offset + first,
            block: (block0 + b) as u32,
            bdim: lanes as u32,
            h: T::cols(&empty),
            h0: T::cols(&empty),
            t: Value::F64(0.0).cast(T::TYPE),
            shared: None,
            last: n.saturating_sub(first).min(lanes),
        };
        let mut fault = None;
        eval::run(&prog.lane, pools, &fr, &mut fault);
        eval::run(&prog.vary, pools, &fr, &mut fault);
        if let Some(f) = fault {
            if first + f.lane < n {
                return Some(f.into_error(k, offset + first, lanes as u32));
            }
        }
        for (s, st) in k.states.iter().enumerate() {
            let src = prog.src[st.init.index()].expect("compiled");
            for l in 0..lanes {
                chunk[l * dim + s] = T::from_value(eval::read_src(src, T::TYPE, pools, &fr, l));
            }
        }
        None
    };
    // Blocks in parallel under the launch's `Par` (one thread for `Par::Seq`),
    // faults collected in block order.
    let faults: Vec<Option<IrError>> = run_blocks(
        par,
        &mut states,
        lanes * dim,
        || Pools::new(prog.slots, lanes),
        block,
    )
    .map_err(|e| field_err(&k.name, e))?;
    if let Some(e) = faults.into_iter().flatten().next() {
        return Err(e);
    }
    Ok(states)
}

/// The final states as a buffer of their own type: one copy, no conversion.
fn to_buffer<T: IrFloat>(v: &[T]) -> Buffer {
    match T::cols(v) {
        StateCols::F32(s) => Buffer::F32(s.into()),
        StateCols::F64(s) => Buffer::F64(s.into()),
    }
}

/// A launch's error as the kernel's: a non-finite state by its name.
fn launch_error(k: &Kernel, n: usize, slice: Slice, e: FieldError) -> IrError {
    match e {
        FieldError::NonFinite {
            trajectory,
            component,
            t,
            value,
            ..
        } => IrError::NonFinite {
            kernel: k.name.clone(),
            state: k.states[component].name.clone(),
            trajectory: slice.first + trajectory.min(n - 1),
            value,
            t,
        },
        e => field_err(&k.name, e),
    }
}

fn run_typed<T: IrFloat>(
    k: &Kernel,
    args: &Args,
    integ: &Integration,
    limits: &Limits,
    engine: Engine,
) -> Result<Output, IrError> {
    let cfg = integ.config(&k.name)?;
    let dim = k.states.len();
    let n = integ.n;
    let slice = integ.window();
    let mut states = initial_states::<T>(k, args, &cfg, n, integ.par, slice)?;
    let (steps, fluxes) = if k.is_phased() {
        run_phased::<T>(k, args, integ, limits, &cfg, &mut states)?
    } else {
        let steps = integ.steps(&k.name)?;
        let field =
            IrField::new_slice(k, args, n, cfg.threads_per_block() as u32, slice)?.engine(engine);
        let mut launch = Launch::new(cfg)
            .method(integ.method)
            .t0(integ.t0)
            .dt(integ.dt)
            .steps(steps)
            .par(integ.par);
        if let Some(p) = &integ.progress {
            launch = launch.progress(p.clone());
        }
        let r = launch.run(&field, &(), &mut states);
        if let Some(e) = field.take_fault() {
            return Err(e);
        }
        r.map_err(|e| launch_error(k, n, slice, e))?;
        (steps, vec![])
    };
    states.truncate(n * dim);
    Ok(Output {
        n,
        dim,
        states: to_buffer(&states),
        fluxes,
        steps,
    })
}

/// A phased field through [`vgpu_field::PhasedLaunch::run_flow`]: returns the
/// steps per trajectory and the flux outputs.
fn run_phased<T: IrFloat>(
    k: &Kernel,
    args: &Args,
    integ: &Integration,
    limits: &Limits,
    cfg: &LaunchConfig,
    states: &mut [T],
) -> Result<(usize, Vec<(String, Buffer)>), IrError> {
    let lanes = cfg.threads_per_block();
    if integ.n % lanes != 0 {
        return Err(IrError::Launch {
            kernel: k.name.clone(),
            message: format!(
                "a field with phases runs whole blocks: n = {} is not a multiple of the block size {lanes}",
                integ.n
            ),
        });
    }
    let slice = integ.window();
    let kernel = IrPhased::new(k, args, lanes, cfg.num_blocks(), integ.dt, limits, slice)?;
    let mut flux = kernel.flux_buffers();
    let barrier = Barrier {
        dt: integ.dt,
        method: integ.method,
        ..Barrier::default()
    };
    let mut launch = vgpu_field::PhasedLaunch::new(*cfg)
        .barrier(barrier)
        .par(integ.par);
    if let Some(p) = &integ.progress {
        launch = launch.progress(p.clone());
    }
    let r = launch.run_flow(&kernel, &(), states, &mut flux);
    if let Err(e) = r {
        return Err(match kernel.take_fault(&e) {
            Some(fault) => fault,
            None => launch_error(k, integ.n, slice, e),
        });
    }
    Ok((kernel.total_steps(), kernel.flux_outputs(flux)))
}
