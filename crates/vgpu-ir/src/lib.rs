//! The VGPU kernel IR: a typed, SSA expression arena describing a vector field
//! (states, rates, parameters, buffers, indices, shared sub-fields, barriers and
//! flux outputs); the `.field` language that writes it; its batched CPU
//! evaluator; and the WGSL emitter that runs the same kernel on any GPU.
#![deny(missing_docs)]

pub mod adaptive;
pub mod args;
pub mod ast;
pub mod cfg;
mod check;
pub mod derived;
pub mod error;
mod eval;
pub mod field;
pub mod jacobian;
pub mod jit;
pub mod kernel;
mod lexer;
mod limits;
pub mod ops;
mod parser;
mod phased;
mod run;
mod slice;
pub mod source;
pub mod types;
mod validate;
pub mod wgsl;

pub use args::{Arg, Args, Buffer};
pub use check::{compile, compile_all, compile_file};
pub use error::{IrError, Pos};
pub use field::{IrField, IrFloat};
pub use jit::{Engine, NotCompilable};
pub use kernel::{Builtin, Kernel, Node, NodeId, Phase, Update};
pub use limits::{LimitKind, Limits};
pub use parser::parse;
pub use parser::MAX_EXPR_DEPTH;
pub use run::{run_cpu, run_cpu_on, run_cpu_with, Integration, Output};
pub use slice::Slice;
pub use types::{ScalarType, Value};
pub use vgpu_field::{Method, Par};
pub use wgsl::{emit_wgsl, validate_wgsl};
