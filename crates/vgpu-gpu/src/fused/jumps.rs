//! Unit-step jump kernels: an IR kernel whose updates are jumps (`x := e`, the
//! exact flow of a unit-time piece) integrated for `steps` unit steps from its
//! (constant) initial state, one trajectory per output. An element-wise
//! kernel is one step; a row scan is one step per column (⌊t⌋ = the column).
//!
//! * GPU: a compute shader whose step body is the IR's expressions, emitted by
//!   [`vgpu_ir::wgsl::emit_expressions`]; scalars and sizes travel in launch
//!   words ([`vgpu_ir::wgsl::meta_words`]), so one compiled kernel serves
//!   every shape.
//! * CPU: the IR's batched column evaluator ([`IrField`]), one block of lanes at
//!   a time, the state replaced by the jump targets after each step.
//!
//! Non-finite values are data here (a NaN in, a NaN out, as IEEE says), not a
//! diverging integration: neither backend stops on them.

use crate::{Binding, GpuError, KernelCache, KernelSpec};
use rayon::prelude::*;
use std::fmt::Write;
use vgpu_field::{BlockCtx, BlockField, LaunchConfig};
use vgpu_ir::kernel::{Builtin, Kernel, Node, Update};
use vgpu_ir::wgsl::{emit_expressions, emit_prelude, meta_words, ParamSlots};
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
    /// rates; the driver applies them as jumps).
    targets: Kernel,
    /// The initial state (constants).
    init: Vec<f32>,
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
            let wgsl = shader(&kernel, &init)?;
            vgpu_ir::validate_wgsl(&kernel.name, &wgsl)?;
            let spec = KernelSpec::new(&format!("fused {op}"), wgsl, "main")
                .specialisation(&format!("fused {op} (jumps)"))
                .workgroup_size([WORKGROUP, 1, 1]);
            Ok(JumpKernel {
                kernel: kernel.clone(),
                targets,
                init,
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

    /// The same on the CPU, through the IR's column evaluator.
    pub fn run_cpu(&self, args: &Args, n: usize, steps: usize) -> Result<Vec<f32>, GpuError> {
        let op = "jump kernel";
        let dim = self.kernel.states.len();
        let lanes = CPU_BLOCK as usize;
        let blocks = n.div_ceil(lanes).max(1);
        let cfg =
            LaunchConfig::new(blocks as u32, CPU_BLOCK).map_err(|e| GpuError::FusedShape {
                op,
                reason: e.to_string(),
            })?;
        let field = IrField::new(&self.targets, args, n, CPU_BLOCK, blocks as u32)
            .map_err(|e| ir_err(op, e))?;
        let mut out = vec![0.0f32; n * dim];
        out.par_chunks_mut(lanes * dim).enumerate().try_for_each(
            |(b, chunk)| -> Result<(), GpuError> {
                let ctx = BlockCtx::new(&cfg, b, &()).map_err(|e| GpuError::FusedShape {
                    op,
                    reason: e.to_string(),
                })?;
                let mut sc = BlockField::<f32>::scratch(&field, lanes);
                // Columns: state `s` of lane `l` at `s·lanes + l`.
                let mut h: Vec<f32> = self
                    .init
                    .iter()
                    .flat_map(|&v| std::iter::repeat_n(v, lanes))
                    .collect();
                let h0 = h.clone();
                let mut next = h.clone();
                for step in 0..steps {
                    field.eval_block(step as f32, &h, &h0, &ctx, &mut sc, &mut next);
                    for (s, u) in self.kernel.phases[0].updates.iter().enumerate() {
                        if matches!(u, Update::Jump(_)) {
                            h[s * lanes..(s + 1) * lanes]
                                .copy_from_slice(&next[s * lanes..(s + 1) * lanes]);
                        }
                    }
                }
                for (l, lane) in chunk.chunks_mut(dim).enumerate() {
                    for (s, v) in lane.iter_mut().enumerate() {
                        *v = h[s * lanes + l];
                    }
                }
                Ok(())
            },
        )?;
        match field.take_fault() {
            Some(e) => Err(ir_err(op, e)),
            None => Ok(out),
        }
    }
}

/// The shader: the bindings and helpers of every generated shader
/// ([`emit_prelude`]: `0` states out, `1` launch words, `2` the fault record,
/// then one per buffer, read through bounds-checked `ld` functions), the step
/// function `jump` and the entry point.
fn shader(k: &Kernel, init: &[f32]) -> Result<String, IrError> {
    let dim = k.states.len();
    let slots = ParamSlots::of(k);
    let leaf = |node: &Node, index: Option<&str>| -> Result<String, IrError> {
        Ok(match *node {
            Node::State(s) => format!("h.v{s}"),
            Node::Builtin(Builtin::Global) => "gid".into(),
            Node::Builtin(Builtin::Count) => "launch[0]".into(),
            Node::Builtin(Builtin::Time) => "t".into(),
            Node::Param(p) => {
                let w = format!("launch[{}]", slots.scalar[p as usize]);
                match k.params[p as usize].ty {
                    ScalarType::F32 => format!("bitcast<f32>({w})"),
                    ScalarType::I32 => format!("bitcast<i32>({w})"),
                    ScalarType::U32 => w,
                    _ => format!("({w} != 0u)"),
                }
            }
            Node::Load { buf, site, .. } => {
                format!("ld{buf}(u32({}), {site}u, gid)", index.unwrap_or("0u"))
            }
            other => return Err(unsupported(k, &format!("{other:?} in a fused kernel"))),
        })
    };
    let roots: Vec<_> = k.phases[0]
        .updates
        .iter()
        .filter_map(|u| match u {
            Update::Jump(n) | Update::Rate(n) => Some(*n),
            Update::Hold => None,
        })
        .collect();
    if k.phases[0]
        .updates
        .iter()
        .any(|u| matches!(u, Update::Rate(_)))
    {
        return Err(unsupported(k, "rates (`d(x)/dt`): write jumps (`x :=`)"));
    }
    let (lets, values) = emit_expressions(k, &roots, &leaf)?;
    let mut values = values.into_iter();
    let next: Vec<String> = k.phases[0]
        .updates
        .iter()
        .enumerate()
        .map(|(s, u)| match u {
            Update::Hold => format!("h.v{s}"),
            _ => values.next().unwrap_or_default(),
        })
        .collect();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// Generated by vgpu-gpu from field `{}` ({}): unit steps of its jumps, one invocation per trajectory.",
        k.name, k.source
    );
    emit_prelude(&mut s, k, &slots);
    let fields: Vec<String> = (0..dim).map(|j| format!("v{j}: f32")).collect();
    let _ = writeln!(s, "struct S {{ {} }}", fields.join(", "));
    let _ = writeln!(
        s,
        "fn jump(t: f32, h: S, gid: u32) -> S {{\n{lets}    return S({});\n}}",
        next.join(", ")
    );
    let inits: Vec<String> = init
        .iter()
        .map(|&v| vgpu_ir::wgsl::literal(vgpu_ir::Value::F32(v)))
        .collect();
    let _ = writeln!(
        s,
        "@compute @workgroup_size({WORKGROUP})\nfn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{"
    );
    let _ = writeln!(
        s,
        "    let gid = (wid.y * nwg.x + wid.x) * {WORKGROUP}u + lid;\n    if (gid >= launch[0]) {{ return; }}\n    var h = S({});\n    for (var step = 0u; step < launch[1]; step = step + 1u) {{\n        h = jump(f32(step), h, gid);\n    }}",
        inits.join(", ")
    );
    for j in 0..dim {
        let _ = writeln!(s, "    out[gid * {dim}u + {j}u] = h.v{j};");
    }
    s.push_str("}\n");
    Ok(s)
}
