//! [`IrField`]: an unphased IR kernel as the field engine's [`BlockField`], so it
//! runs through the one CPU executor ([`vgpu_field::Launch`]) and its
//! integrators (Butcher tableaus).

use crate::args::Args;
use crate::error::IrError;
use crate::eval::{self, Dims, Fault, Frame, Pools, Program, Src, StateCols};
use crate::kernel::{Kernel, Update, Variance};
use crate::types::{ScalarType, Value};
use std::sync::Mutex;
use vgpu_field::{BlockCtx, BlockField, Real};

/// The float types a kernel's state can have (`f32`, `f64`), seen by the evaluator.
pub trait IrFloat: Real {
    /// The IR type.
    const TYPE: ScalarType;
    #[doc(hidden)]
    fn cols(s: &[Self]) -> StateCols<'_>;
    #[doc(hidden)]
    fn from_value(v: Value) -> Self;
    #[doc(hidden)]
    fn pool(p: &Pools) -> &[Self];
}

impl IrFloat for f32 {
    const TYPE: ScalarType = ScalarType::F32;
    fn cols(s: &[f32]) -> StateCols<'_> {
        StateCols::F32(s)
    }
    fn from_value(v: Value) -> f32 {
        match v {
            Value::F32(x) => x,
            other => other.as_f64() as f32,
        }
    }
    fn pool(p: &Pools) -> &[f32] {
        &p.f32s
    }
}

impl IrFloat for f64 {
    const TYPE: ScalarType = ScalarType::F64;
    fn cols(s: &[f64]) -> StateCols<'_> {
        StateCols::F64(s)
    }
    fn from_value(v: Value) -> f64 {
        v.as_f64()
    }
    fn pool(p: &Pools) -> &[f64] {
        &p.f64s
    }
}

/// An unphased kernel bound to its arguments and launch size, ready for
/// [`vgpu_field::Launch::run`]. Trajectories past `n` (padding of the last
/// block) repeat trajectory `n − 1`, so they never fault.
pub struct IrField<'a> {
    k: &'a Kernel,
    args: &'a Args,
    prog: Program,
    rates: Vec<Src>,
    n: usize,
    bdim: u32,
    fault: Mutex<Option<IrError>>,
    fault_traj: Mutex<usize>,
}

/// Per-worker memory of an [`IrField`]: the columns of one block.
pub struct IrScratch {
    pools: Pools,
    block: Option<usize>,
}

impl<'a> IrField<'a> {
    /// Binds `k` (unphased) to `args` for a launch of `n` trajectories in blocks of `bdim`.
    ///
    /// # Errors
    /// Missing arguments, out-of-bounds reads at uniform indices, a phased kernel.
    pub fn new(
        k: &'a Kernel,
        args: &'a Args,
        n: usize,
        bdim: u32,
        gdim: u32,
    ) -> Result<Self, IrError> {
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
            n: n as u32,
            rep: 0,
        };
        let uni = eval::uniform_values(k, &reach, &var, args, dims)?;
        let prog = Program::build(k, &roots, &var, &uni);
        let zero = Src::Imm(Value::F64(0.0).cast(k.float_type()));
        let rates = phase
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
        Ok(IrField {
            k,
            args,
            prog,
            rates,
            n,
            bdim,
            fault: Mutex::new(None),
            fault_traj: Mutex::new(usize::MAX),
        })
    }

    /// The first out-of-bounds read seen while running (lowest trajectory).
    pub fn take_fault(&self) -> Option<IrError> {
        self.fault.lock().ok().and_then(|mut f| f.take())
    }

    fn record(&self, f: Fault, first: usize) {
        let traj = first + f.lane;
        if traj >= self.n {
            return;
        }
        if let (Ok(mut best), Ok(mut slot)) = (self.fault_traj.lock(), self.fault.lock()) {
            if traj < *best {
                *best = traj;
                *slot = Some(f.into_error(self.k, first, self.bdim));
            }
        }
    }

    /// Whether any instruction varies per lane (so `rho[i]` is hoisted).
    pub fn hoisted(&self) -> usize {
        self.prog.lane.len()
    }
}

impl<T: IrFloat> BlockField<T> for IrField<'_> {
    type Params = ();
    type Scratch = IrScratch;

    fn dim(&self) -> usize {
        self.k.states.len()
    }

    fn scratch(&self, lanes: usize) -> IrScratch {
        IrScratch {
            pools: Pools::new(self.prog.slots, lanes),
            block: None,
        }
    }

    fn eval_block(
        &self,
        t: T,
        h: &[T],
        h0: &[T],
        ctx: &BlockCtx<'_, ()>,
        sc: &mut IrScratch,
        dh: &mut [T],
    ) {
        let lanes = ctx.lanes();
        let first = ctx.first();
        // Padding lanes (past n) repeat trajectory n − 1.
        let active = self.n.saturating_sub(first).min(lanes);
        let fr = Frame {
            k: self.k,
            args: self.args,
            lanes,
            first,
            block: ctx.block_linear() as u32,
            bdim: self.bdim,
            h: T::cols(h),
            h0: T::cols(h0),
            t: Value::F64(t.to_f64()).cast(T::TYPE),
            shared: &[],
            last: active,
        };
        let mut fault = None;
        if sc.block != Some(ctx.block_linear()) {
            eval::run(&self.prog.lane, &mut sc.pools, &fr, &mut fault);
            sc.block = Some(ctx.block_linear());
        }
        eval::run(&self.prog.vary, &mut sc.pools, &fr, &mut fault);
        if let Some(f) = fault {
            self.record(f, first);
        }
        for (k, src) in self.rates.iter().enumerate() {
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
