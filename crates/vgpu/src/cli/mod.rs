//! One module per subcommand of the `vgpu` command.
pub(crate) mod bench_adaptive;
pub(crate) mod bench_lorenz;
pub(crate) mod bench_matmul;
pub(crate) mod bench_ptx;
pub(crate) mod cache_demo;
pub(crate) mod demo;
pub(crate) mod ensemble;
pub(crate) mod merge;
#[cfg(feature = "mpi")]
mod mpi_write;
pub(crate) mod ptx;
pub(crate) mod split;
