//! VGPU's PTX front end: the PTX that nvcc emits, parsed, decoded and run on the
//! CPU as fields.
//!
//! Each PTX instruction is a unit-time segment of a piecewise-constant field on
//! a thread's register file; its exact flow is the assignment `dst = op(src)`,
//! which the executor applies exactly (DESIGN.md, Exactness). Each thread is one
//! trajectory; the threads of a block advance together (SIMT, 32-lane warps);
//! `bar.sync` is a basin collapse of the block; `atom`/`red` whose result is not
//! read are flux, summed after the launch in a fixed order.
//!
//! A launch's geometry is vgpu-field's [`LaunchConfig`] (re-exported here,
//! with [`Dim3`]), checked against CUDA's limits there, and its blocks run
//! through vgpu-field's block scheduler ([`vgpu_field::blocks`]).
//!
//! ```no_run
//! use vgpu_ptx::{Module, LaunchConfig, KernelArg, ExecOptions};
//! let m = Module::from_file("kernels.ptx".as_ref())?;
//! let mut bufs = vec![vec![0u8; 4000]];
//! let cfg = LaunchConfig { grid: 4.into(), block: 256.into(), shared_bytes: 0 };
//! let args = [KernelArg::Buffer(0), KernelArg::F32(2.5), KernelArg::S32(1000)];
//! m.launch("scale", &cfg, &args, &mut bufs, &ExecOptions::default())?;
//! # Ok::<(), vgpu_ptx::PtxError>(())
//! ```
#![deny(missing_docs)]

mod analysis;
pub mod ast;
mod bit_ops;
pub mod case;
mod decode;
pub mod error;
mod exec;
mod exec_options;
mod float;
mod global_race;
mod half_ops;
mod launch;
mod lexer;
pub mod limits;
pub mod lower;
mod memory;
mod modifiers;
mod operand;
pub mod parser;
mod program;
mod race;
mod semantics;
mod special;
pub mod trace;
mod types;
mod warp_ops;

pub use case::{
    run_case, run_case_on, run_case_with, BufferReport, Case, CaseOptions, CaseReport, Launcher,
};
pub use error::{Fault, FaultClass, PtxError};
pub use exec_options::uninitialised_global_message;
pub use launch::{
    launch, param_bytes, Dim3, ExecOptions, KernelArg, LaunchConfig, LaunchStats, Module,
    TraceStep, TraceTarget, DEFAULT_WATCHDOG,
};
pub use limits::Limits;
pub use program::{Kernel, ParamInfo, RegInfo};
pub use types::Ty;
