//! Unit-step jump kernels: an IR kernel whose updates are jumps (`x := e`, the
//! exact flow of a unit-time piece) integrated for `steps` unit steps from its
//! (constant) initial state, one trajectory per output. An element-wise
//! kernel is one step; a row scan is one step per column (⌊t⌋ = the column).
//!
//! * GPU: the compute shader of [`vgpu_ir::wgsl::jumps`] (the step body is the
//!   IR's expressions); scalars and sizes travel in launch
//!   words ([`vgpu_ir::wgsl::meta_words`]), so one compiled kernel serves
//!   every shape.
//! * CPU: the field engine's phased launch
//!   ([`PhasedLaunch::run_flow`], its [`RegisterUpdate::Jump`]): one phase of
//!   `steps` unit steps (Euler, `dt = 1`), the jump targets given at each
//!   step's start by the IR's batched column evaluator ([`IrField`]), one block
//!   of lanes at a time; the last block padded (its extra lanes repeat the last
//!   trajectory) and cut off.
//!
//! Non-finite values are data here (a NaN in, a NaN out, as IEEE says), not a
//! diverging integration: neither backend stops on them.

use crate::{Binding, GpuError, KernelCache, KernelSpec};
use vgpu_field::phase::{FlowKernel, FlowPhase, RegisterUpdate, StageAt, StageIn, StageOut};
use vgpu_field::{
    Barrier, BlockCtx, BlockField, FieldError, LaunchConfig, Method, Par, PhasedLaunch,
};
use vgpu_ir::kernel::{Kernel, Update};
use vgpu_ir::wgsl::jumps::emit_jump_wgsl;
use vgpu_ir::wgsl::meta_words;
use vgpu_ir::{compile, Args, IrError, IrField, ScalarType};

/// Invocations per workgroup on the GPU, lanes per block on the CPU.
const WORKGROUP: u32 = 64;
const CPU_BLOCK: u32 = 256;

/// A compiled jump kernel: the IR, its CPU form and its GPU shader.
#[derive(Debug)]
pub struct JumpKernel {
    /// The kernel as written (jumps).
    pub kernel: Kernel,
    /// The same expressions as rates, for the CPU evaluator ([`IrField`] takes
    /// rates; the phased launch applies them as jumps).
    targets: Kernel,
    /// The initial state (constants).
    init: Vec<f32>,
    /// What a step does to each register: jumps, or holds (no rates: the
    /// shader refuses them).
    updates: Vec<RegisterUpdate>,
    spec: KernelSpec,
}

fn ir_err(op: &'static str, e: IrError) -> GpuError {
    GpuError::FusedKernel {
        op,
        message: e.to_string(),
    }
}

fn unsupported(k: &Kernel, what: &str) -> IrError {
    IrError::Unsupported {
        kernel: k.name.clone(),
        backend: "gpu (fused jump kernel)".into(),
        reason: what.into(),
    }
}

impl JumpKernel {
    /// Compiles `.field` text whose field has only jumps and constant initial
    /// values, and generates its shader.
    pub fn new(op: &'static str, src: &str) -> Result<JumpKernel, GpuError> {
        let kernel = compile(&format!("{op}.field"), src).map_err(|e| ir_err(op, e))?;
        let build = || -> Result<JumpKernel, IrError> {
            if kernel.is_phased() || !kernel.shared.is_empty() || !kernel.fluxes.is_empty() {
                return Err(unsupported(&kernel, "phases, shared sub-fields and flux"));
            }
            if kernel.float_type() != ScalarType::F32 {
                return Err(unsupported(&kernel, "states must be f32"));
            }
            let init = kernel
                .states
                .iter()
                .map(|s| match kernel.constant(s.init) {
                    Some(v) => Ok(v.as_f64() as f32),
                    None => Err(unsupported(&kernel, "initial values must be constants")),
                })
                .collect::<Result<Vec<f32>, IrError>>()?;
            let mut targets = kernel.clone();
            for u in &mut targets.phases[0].updates {
                if let Update::Jump(n) = *u {
                    *u = Update::Rate(n);
                }
            }
            let updates = kernel.phases[0]
                .updates
                .iter()
                .map(|u| match u {
                    Update::Jump(_) => RegisterUpdate::Jump,
                    _ => RegisterUpdate::Hold,
                })
                .collect();
            let wgsl = emit_jump_wgsl(&kernel, &init, WORKGROUP)?;
            vgpu_ir::validate_wgsl(&kernel.name, &wgsl)?;
            let spec = KernelSpec::new(&format!("fused {op}"), wgsl, "main")
                .specialisation(&format!("fused {op} (jumps)"))
                .workgroup_size([WORKGROUP, 1, 1]);
            Ok(JumpKernel {
                kernel: kernel.clone(),
                targets,
                init,
                updates,
                spec,
            })
        };
        build().map_err(|e| ir_err(op, e))
    }

    /// The WGSL the GPU runs.
    pub fn wgsl(&self) -> &str {
        self.spec.wgsl()
    }

    /// Runs `n` trajectories for `steps` unit steps on the GPU of `cache`;
    /// returns the final states, trajectory-major (`n × dim`).
    pub fn run_gpu(
        &self,
        cache: &mut KernelCache,
        args: &Args,
        n: usize,
        steps: usize,
    ) -> Result<Vec<f32>, GpuError> {
        let op = "jump kernel";
        let k = &self.kernel;
        let (n32, steps32) = (u32::try_from(n), u32::try_from(steps));
        let (Ok(n32), Ok(steps32)) = (n32, steps32) else {
            return Err(GpuError::FusedShape {
                op,
                reason: format!("{n} trajectories of {steps} steps exceed 2^32"),
            });
        };
        let meta = meta_words(k, args, n32, steps32, 0.0, 1.0).map_err(|e| ir_err(op, e))?;
        let buffers: Vec<Vec<u8>> = (0..k.params.len())
            .filter_map(|i| args.buffer_at(i))
            .map(|b| {
                let mut v = b.to_le_bytes();
                if v.is_empty() {
                    v = vec![0; 4];
                }
                v
            })
            .collect();
        let mut out = vec![0.0f32; n * k.states.len()];
        let groups = n.div_ceil(WORKGROUP as usize).max(1);
        let x = groups.min(65535);
        let workgroups = [x as u32, groups.div_ceil(x) as u32, 1];
        let mut fault = [u32::MAX, 0, 0, 0];
        let mut bindings = vec![
            Binding::write(&mut out[..]),
            Binding::read(&meta[..]),
            Binding::read_write(&mut fault[..]),
        ];
        for b in &buffers {
            bindings.push(Binding::Read(b));
        }
        cache.dispatch(&self.spec, &mut bindings, workgroups)?;
        if fault[0] != u32::MAX {
            // The callers check every shape first: a read out of range is a VGPU bug.
            return Err(GpuError::FusedKernel {
                op,
                message: format!(
                    "`{}` read index {} out of range (trajectory {}, source {})",
                    k.name,
                    fault[2],
                    fault[0],
                    k.sites
                        .get(fault[1] as usize)
                        .map(|p| p.to_string())
                        .unwrap_or_default()
                ),
            });
        }
        Ok(out)
    }

    /// The same on the CPU, through the field engine's phased launch (see the
    /// module documentation).
    pub fn run_cpu(&self, args: &Args, n: usize, steps: usize) -> Result<Vec<f32>, GpuError> {
        let op = "jump kernel";
        let launch_err = |e: FieldError| GpuError::FusedShape {
            op,
            reason: e.to_string(),
        };
        let blocks = u32::try_from(n.div_ceil(CPU_BLOCK as usize).max(1)).map_err(|_| {
            GpuError::FusedShape {
                op,
                reason: format!("{n} trajectories need more than 2^32 blocks of {CPU_BLOCK}"),
            }
        })?;
        let cfg = LaunchConfig::new(blocks, CPU_BLOCK).map_err(launch_err)?;
        let field =
            IrField::new(&self.targets, args, n, CPU_BLOCK, blocks).map_err(|e| ir_err(op, e))?;
        let flow = JumpFlow {
            field,
            phases: [FlowPhase::fixed(vec![steps], self.updates.clone())],
        };
        // Every lane of every block, the padding included, starts at the constants.
        let mut states: Vec<f32> = self
            .init
            .iter()
            .copied()
            .cycle()
            .take(cfg.total_threads() * self.init.len())
            .collect();
        let unit_steps = Barrier {
            dt: 1.0,
            method: Method::Euler,
            ..Barrier::default()
        };
        let run = PhasedLaunch::new(cfg)
            .barrier(unit_steps)
            .par(Par::Auto)
            .stop_on_non_finite(false)
            .run_flow(&flow, &(), &mut states, &mut []);
        if let Some(e) = flow.field.take_fault() {
            return Err(ir_err(op, e));
        }
        run.map_err(launch_err)?;
        states.truncate(n * self.init.len());
        Ok(states)
    }
}

/// A jump kernel as the phased launch's [`FlowKernel`]: one phase whose
/// registers jump ([`RegisterUpdate::Jump`]) to the values the column
/// evaluator gives at each step's first stage, or hold.
struct JumpFlow<'a> {
    /// The kernel with its jumps written as rates ([`JumpKernel::targets`]).
    field: IrField<'a>,
    phases: [FlowPhase; 1],
}

impl<'a> FlowKernel<f32> for JumpFlow<'a> {
    type Params = ();
    type Scratch = <IrField<'a> as BlockField<f32>>::Scratch;

    fn dim(&self) -> usize {
        BlockField::<f32>::dim(&self.field)
    }

    fn shared(&self) -> &[vgpu_field::phase::SharedDecl] {
        &[]
    }

    fn phases(&self) -> &[FlowPhase] {
        &self.phases
    }

    fn scratch(&self, lanes: usize) -> Self::Scratch {
        BlockField::<f32>::scratch(&self.field, lanes)
    }

    fn stage(
        &self,
        at: StageAt<f32>,
        ctx: &BlockCtx<'_, ()>,
        input: &StageIn<'_, f32>,
        scratch: &mut Self::Scratch,
        out: &mut StageOut<'_, f32>,
    ) -> Result<(), FieldError> {
        // Jump targets are read at the first stage only (Euler has no other).
        if out.first_stage() {
            self.field
                .eval_block(at.t, input.h, input.h0, ctx, scratch, out.jumps());
        }
        Ok(())
    }
}
