//! VGPU: a virtual GPU where every kernel is a vector field and every launch an
//! ensemble integration (one trajectory per thread, Euler or RK4).
//!
//! This crate is the facade: it re-exports the public API of the VGPU crates and
//! holds the `vgpu` command-line tool.
#![deny(missing_docs)]

mod error;
pub use error::Error;
