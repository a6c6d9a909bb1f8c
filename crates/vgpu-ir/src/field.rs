//! [`IrField`]: an unphased IR kernel as the field engine's [`BlockField`], so it
//! runs through the one CPU executor ([`vgpu_field::Launch`]) and its
//! integrators (Butcher tableaus).

use crate::args::Args;
use crate::error::IrError;
pub use crate::eval::IrFloat;
use crate::eval::{self, Dims, Fault, Frame, Io, Plan, Pools, Program, Resolved, Src, CHUNK};
use crate::jit::{Engine, NotCompilable};
use crate::kernel::{Kernel, Node, Update, Variance};
use crate::slice::Slice;
use crate::types::Value;
use std::sync::Mutex;
use vgpu_field::{BlockCtx, BlockField};

/// An unphased kernel bound to its arguments and launch size, ready for
/// [`vgpu_field::Launch::run`]. Trajectories past `n` (padding of the last
/// block) repeat trajectory `n − 1`, so they never fault.
///
/// Its varying float arithmetic runs as fused chains (one pass over the lanes
/// per chain, values in registers, rates written in place); see
/// [`IrField::chains`].
pub struct IrField<'a> {
    k: &'a Kernel,
    args: &'a Args,
    prog: Program,
    plan: Plan,
    rates: Vec<Src>,
    n: usize,
    bdim: u32,
    /// Global index of trajectory 0 and of block 0 (a [`Slice`] of a larger launch).
    offset: usize,
    block0: u32,
    fault: Mutex<Option<IrError>>,
    fault_traj: Mutex<usize>,
    /// The rates as native code over a block's lanes ([`IrField::engine`]).
    #[cfg(feature = "jit")]
    native: Option<crate::jit::LaneKernel<'a>>,
    /// Why the evaluator runs though [`Engine::Jit`] was asked for.
    fallback: Option<NotCompilable>,
    gdim: u32,
    total: u32,
    /// Whether every buffer read's index is fixed for the launch (no read
    /// whose index follows the state or the time): then which reads fault
    /// does not depend on the states ([`BlockField::faults_ignore_state`]).
    fixed_reads: bool,
}

/// Per-worker memory of an [`IrField`]: the columns of one block, the fused
/// chains resolved for its size, their constants.
pub struct IrScratch<T> {
    pools: Pools,
    block: Option<usize>,
    chains: Resolved,
    consts: Vec<T>,
}

impl<'a> IrField<'a> {
    /// Binds `k` (unphased) to `args` for a launch of `n` trajectories in blocks of `bdim`.
    ///
    /// # Errors
    /// Missing arguments, out-of-bounds reads at uniform indices, a phased kernel,
    /// a kernel that fails [`Kernel::validate`] ([`IrError::Malformed`]).
    pub fn new(
        k: &'a Kernel,
        args: &'a Args,
        n: usize,
        bdim: u32,
        gdim: u32,
    ) -> Result<Self, IrError> {
        Self::build(k, args, n, bdim, gdim, Slice::whole(n))
    }

    /// Binds `k` for `n` trajectories in blocks of `bdim` that are the slice
    /// `slice` of a larger launch: the kernel reads the global `i`, `bid`, `n`
    /// and `gdim` ([`Slice`]).
    ///
    /// # Errors
    /// Those of [`IrField::new`]; [`IrError::Launch`] for a slice that
    /// [`Slice::check`] refuses.
    pub fn new_slice(
        k: &'a Kernel,
        args: &'a Args,
        n: usize,
        bdim: u32,
        slice: Slice,
    ) -> Result<Self, IrError> {
        slice.check(&k.name, n, bdim as usize)?;
        let gdim = slice.blocks(bdim as usize) as u32;
        Self::build(k, args, n, bdim, gdim, slice)
    }

    fn build(
        k: &'a Kernel,
        args: &'a Args,
        n: usize,
        bdim: u32,
        gdim: u32,
        slice: Slice,
    ) -> Result<Self, IrError> {
        k.validate()?;
        args.check_complete()?;
        if k.is_phased() {
            return Err(IrError::Launch {
                kernel: k.name.clone(),
                message: "this field has phases: run it with `run_cpu`, not as a plain field"
                    .into(),
            });
        }
        let phase = &k.phases[0];
        let roots = k.phase_roots(phase);
        let var = k.variance();
        let reach = k.reachable(&roots);
        let dims = Dims {
            bdim,
            gdim,
            n: slice.total as u32,
            rep: 0,
        };
        let uni = eval::uniform_values(k, &reach, &var, args, dims)?;
        let prog = Program::build(k, &roots, &var, &uni);
        let zero = Src::Imm(Value::F64(0.0).cast(k.float_type()));
        let rates: Vec<Src> = phase
            .updates
            .iter()
            .map(|u| match u {
                Update::Rate(r) => prog.src[r.index()].expect("compiled"),
                _ => zero,
            })
            .collect();
        if phase.updates.iter().any(|u| matches!(u, Update::Jump(_))) {
            return Err(IrError::Launch {
                kernel: k.name.clone(),
                message: "`x := …` jumps need a phase (they are unit-time segments)".into(),
            });
        }
        let plan = Plan::build(&prog, &rates, k.float_type());
        let fixed_reads = reach.iter().all(|n| {
            !matches!(k.nodes[n.index()], Node::Load { .. }) || var[n.index()] != Variance::Varying
        });
        Ok(IrField {
            k,
            args,
            prog,
            plan,
            rates,
            n,
            bdim,
            offset: slice.first,
            block0: slice.first_block(bdim as usize) as u32,
            fault: Mutex::new(None),
            fault_traj: Mutex::new(usize::MAX),
            #[cfg(feature = "jit")]
            native: None,
            fallback: None,
            gdim,
            total: slice.total as u32,
            fixed_reads,
        })
    }

    /// Runs the rates on `engine`: with [`Engine::Jit`], compiles them to
    /// native code over a block's lanes ([`crate::jit`]), or, where that is
    /// not possible ([`IrField::fallback`] says why), keeps the evaluator.
    /// Same bits either way.
    pub fn engine(mut self, engine: Engine) -> Self {
        self.fallback = None;
        #[cfg(feature = "jit")]
        {
            self.native = None;
            if engine == Engine::Jit {
                let dims = Dims {
                    bdim: self.bdim,
                    gdim: self.gdim,
                    n: self.total,
                    rep: 0,
                };
                match crate::jit::LaneKernel::compile(self.k, self.args, dims) {
                    Ok(kernel) => self.native = Some(kernel),
                    Err(e) => self.fallback = Some(e),
                }
            }
        }
        #[cfg(not(feature = "jit"))]
        if engine == Engine::Jit {
            self.fallback = crate::jit::available().err();
        }
        self
    }

    /// Whether the rates run as native code.
    pub fn is_native(&self) -> bool {
        #[cfg(feature = "jit")]
        {
            self.native.is_some()
        }
        #[cfg(not(feature = "jit"))]
        {
            false
        }
    }

    /// Why the evaluator runs though [`Engine::Jit`] was asked for.
    pub fn fallback(&self) -> Option<&NotCompilable> {
        self.fallback.as_ref()
    }

    /// The first out-of-bounds read seen while running (lowest trajectory).
    pub fn take_fault(&self) -> Option<IrError> {
        self.fault.lock().ok().and_then(|mut f| f.take())
    }

    pub(crate) fn record(&self, f: Fault, first: usize) {
        let traj = first + f.lane;
        if traj >= self.n {
            return;
        }
        if let (Ok(mut best), Ok(mut slot)) = (self.fault_traj.lock(), self.fault.lock()) {
            if traj < *best {
                *best = traj;
                *slot = Some(f.into_error(self.k, self.offset + first, self.bdim));
            }
        }
    }

    /// Whether any instruction varies per lane (so `rho[i]` is hoisted).
    pub fn hoisted(&self) -> usize {
        self.prog.lane.len()
    }

    /// The fused float arithmetic: `(chains, nodes)`, each chain one pass over
    /// the lanes computing its nodes with the values in registers.
    pub fn chains(&self) -> (usize, usize) {
        self.plan.chains()
    }
}

impl<T: IrFloat> BlockField<T> for IrField<'_> {
    type Params = ();
    type Scratch = IrScratch<T>;

    fn dim(&self) -> usize {
        self.k.states.len()
    }

    /// Reads fault by trajectory and site alone when no read's index varies
    /// in time or with the state (`rho[i]`, `a[0]`); `x[int(h)]` does not.
    fn faults_ignore_state(&self) -> bool {
        self.fixed_reads
    }

    fn scratch(&self, lanes: usize) -> IrScratch<T> {
        IrScratch {
            pools: Pools::new(self.prog.slots, lanes),
            block: None,
            chains: Resolved::new(&self.plan, lanes),
            consts: self.plan.const_columns(),
        }
    }

    fn eval_block(
        &self,
        t: T,
        h: &[T],
        h0: &[T],
        ctx: &BlockCtx<'_, ()>,
        sc: &mut IrScratch<T>,
        dh: &mut [T],
    ) {
        #[cfg(feature = "jit")]
        if let Some(native) = &self.native {
            let first = ctx.first();
            let live = self.n.saturating_sub(first).min(ctx.lanes());
            let bid = self.block0 + ctx.block_linear() as u32;
            // An out-of-bounds read: the evaluator runs the block and names it.
            if !native.call(t, h, h0, dh, (self.offset + first) as u32, live, bid) {
                return;
            }
        }
        let fused = self.plan.ty() == T::TYPE;
        self.eval(t, h, h0, ctx, sc, dh, fused);
    }
}

impl IrField<'_> {
    /// The field at `(t, h)`: through the fused chains, or (`fused = false`,
    /// the reference the chains must equal) node by node.
    #[allow(clippy::too_many_arguments)]
    fn eval<T: IrFloat>(
        &self,
        t: T,
        h: &[T],
        h0: &[T],
        ctx: &BlockCtx<'_, ()>,
        sc: &mut IrScratch<T>,
        dh: &mut [T],
        fused: bool,
    ) {
        let lanes = ctx.lanes();
        let first = ctx.first();
        // Padding lanes (past n) repeat trajectory n − 1.
        let active = self.n.saturating_sub(first).min(lanes);
        let fr = Frame {
            k: self.k,
            args: self.args,
            lanes,
            first: self.offset + first,
            block: self.block0 + ctx.block_linear() as u32,
            bdim: self.bdim,
            h: T::cols(h),
            h0: T::cols(h0),
            t: Value::F64(t.to_f64()).cast(T::TYPE),
            shared: None,
            last: active,
        };
        let mut fault = None;
        if sc.block != Some(ctx.block_linear()) {
            eval::run(&self.prog.lane, &mut sc.pools, &fr, &mut fault);
            sc.block = Some(ctx.block_linear());
        }
        if fused {
            if self.plan.reads_time() {
                sc.consts[..CHUNK].fill(t);
            }
            let mut io = Io {
                h,
                h0,
                consts: &sc.consts,
                dh,
                lanes,
            };
            eval::fused_run(
                &self.plan,
                &sc.chains,
                &mut sc.pools,
                &mut io,
                |ins, pools| eval::run(ins, pools, &fr, &mut fault),
            );
        } else {
            eval::run(&self.prog.vary, &mut sc.pools, &fr, &mut fault);
        }
        if let Some(f) = fault {
            self.record(f, first);
        }
        for (k, src) in self.rates.iter().enumerate() {
            if fused && self.plan.is_direct(k) {
                continue;
            }
            let out = &mut dh[k * lanes..(k + 1) * lanes];
            match *src {
                Src::Col(c) => out.copy_from_slice(
                    &T::pool(&sc.pools)[c as usize * lanes..c as usize * lanes + lanes],
                ),
                Src::State(j) => {
                    out.copy_from_slice(&h[j as usize * lanes..(j as usize + 1) * lanes])
                }
                Src::Init(j) => {
                    out.copy_from_slice(&h0[j as usize * lanes..(j as usize + 1) * lanes])
                }
                Src::Imm(v) => out.fill(T::from_value(v)),
                Src::Time => out.fill(t),
            }
        }
    }
}

/// Whether a node is computed per lane (for tests and reports).
pub fn lane_nodes(k: &Kernel) -> usize {
    k.variance()
        .iter()
        .filter(|v| **v == Variance::Lane)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Buffer;
    use crate::check::compile;
    use vgpu_field::LaunchConfig;

    /// Every float operation, on both sides of the accumulator, beside integer,
    /// select and cast nodes the chains leave to the column evaluator.
    const OPS_F32: &str = "field ops(a: f32[], b: i32[], c: u32[], s: f32, m: u32, q: i32, flag: bool) {
        state x = a[i], y = f32(b[i % 3u]), z = 0.5;
        let j = i32(i) - 3;
        let u = c[(i * m) % 4u] >> 2u;
        let w = select(flag && x > 0.0, exp(-x * x), tanh(y) + pow(abs(x), 1.5));
        let e = x * y - s;
        d(x)/dt = sin(x) * cos(y) + log(1.0 + abs(w)) - sqrt(abs(s)) + floor(t) + min(x, y) - max(x, 0.5)
                  + f32(j / q) + f32(u % 7u) + fma(x, y, 1.0) + fma(e, 2.0, x) + fma(3.0, x, e)
                  + x % 2.0 + init(x) - f32(tid + bid + bdim) + 2.0 / (x + 3.0) - (y - x) / 4.0;
        d(y)/dt = -y + select(!(i == 2u) || y <= x, 1.0, -2.5e-3) / 7.0 + e * e + pow(2.0, x - y);
        d(z)/dt = x;
    }";

    const OPS_F64: &str = "field ops64(a: f64[]) {
        state x: f64 = a[i], y: f64 = 1.25;
        let e = x * y - t;
        d(x)/dt = fma(e, y, x) + fma(y, e, 1.0) + fma(x, y, e) - min(y, e) / max(x, 0.5) + e % 0.75;
        d(y)/dt = 3.0 - (x - y) * (2.0 / (e + 9.0)) + exp(-abs(e));
    }";

    fn same_bits<T: IrFloat>(a: &[T], b: &[T]) -> bool {
        a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits_u64() == y.to_bits_u64() || (!x.is_finite() && !y.is_finite()))
    }

    /// Fused and node-by-node evaluation of every block of a launch of `n`
    /// trajectories in blocks of `lanes` (a size that leaves short passes).
    fn fused_equals_nodes<T: IrFloat>(k: &Kernel, args: &Args, n: usize, lanes: u32) {
        let cfg = LaunchConfig::linear(n, lanes).unwrap();
        let f = IrField::new(k, args, n, lanes, cfg.num_blocks() as u32).unwrap();
        let (chains, nodes) = f.chains();
        assert!(
            chains >= 3 && nodes > chains,
            "{chains} chains, {nodes} nodes"
        );
        let lanes = lanes as usize;
        let dim = BlockField::<T>::dim(&f);
        for b in 0..cfg.num_blocks() {
            let ctx = BlockCtx::new(&cfg, b, &()).unwrap();
            let h: Vec<T> = (0..dim * lanes)
                .map(|v| T::from_f64(((v * 37 % 101) as f64 - 50.0) * 0.173))
                .collect();
            let h0: Vec<T> = h.iter().map(|&v| v * T::from_f64(0.5)).collect();
            let mut s1 = BlockField::<T>::scratch(&f, lanes);
            let mut s2 = BlockField::<T>::scratch(&f, lanes);
            let (mut d1, mut d2) = (vec![T::ZERO; dim * lanes], vec![T::ZERO; dim * lanes]);
            for t in [0.0, 1.625] {
                let t = T::from_f64(t);
                f.eval(t, &h, &h0, &ctx, &mut s1, &mut d1, true);
                f.eval(t, &h, &h0, &ctx, &mut s2, &mut d2, false);
                assert!(same_bits(&d1, &d2), "block {b}, t = {t}:\n{d1:?}\n{d2:?}");
            }
        }
        assert!(f.take_fault().is_none());
    }

    #[test]
    fn chains_compute_the_bits_of_node_by_node_evaluation() {
        let k = compile("ops.field", OPS_F32).unwrap();
        let mut args = Args::new(&k);
        args.buffer(
            "a",
            (0..200).map(|i| i as f32 * 0.31 - 9.0).collect::<Vec<_>>(),
        )
        .unwrap()
        .buffer("b", vec![3i32, -4, 5])
        .unwrap()
        .buffer("c", vec![7u32, 900, 12, 5])
        .unwrap()
        .scalar("s", Value::F32(-2.5))
        .unwrap()
        .scalar("m", Value::U32(3))
        .unwrap()
        .scalar("q", Value::I32(-2))
        .unwrap()
        .scalar("flag", Value::Bool(true))
        .unwrap();
        // 77 lanes: whole chunks, a two- and a one-register pass, single lanes.
        fused_equals_nodes::<f32>(&k, &args, 200, 77);
        fused_equals_nodes::<f32>(&k, &args, 200, 128);
        let k = compile("ops64.field", OPS_F64).unwrap();
        let mut args = Args::new(&k);
        args.buffer(
            "a",
            Buffer::F64((0..90).map(|i| i as f64 * 0.7 - 20.0).collect()),
        )
        .unwrap();
        fused_equals_nodes::<f64>(&k, &args, 90, 45);
    }

    /// `examples/lorenz.field` with `n` values of ρ.
    fn lorenz(n: usize) -> (Kernel, Args) {
        let k = compile(
            "lorenz.field",
            include_str!("../../../examples/lorenz.field"),
        )
        .unwrap();
        let mut args = Args::new(&k);
        args.buffer("rho", vec![2.0f32; n]).unwrap();
        (k, args)
    }

    #[test]
    fn lorenz_is_four_chains_writing_its_rates() {
        let (k, args) = lorenz(64);
        let f = IrField::new(&k, &args, 64, 64, 1).unwrap();
        // dx: (y − x)·10; dy: (ρ − z)·x − y; x·y; dz: x·y − (8/3)·z.
        assert_eq!(f.chains(), (4, 8));
        assert!((0..3).all(|r| f.plan.is_direct(r)));
        assert_eq!(f.hoisted(), 2, "rho[i] and i, once per block");
    }

    #[test]
    fn a_cpu_run_reports_its_trajectory_steps() {
        let (k, args) = lorenz(300);
        let p = vgpu_field::executor::Progress::new();
        let integ = crate::Integration::new(300, 0.0, 0.05, 0.001)
            .block(128)
            .progress(p.clone());
        crate::run_cpu(&k, &args, &integ).unwrap();
        // 3 blocks of 128 (the launch pads 300 to 384) × 50 steps.
        assert_eq!(p.total(), 384 * 50);
        assert_eq!(p.done(), p.total());
    }
}
