//! One module per subcommand of the `vgpu` command.
pub mod bench_lorenz;
pub mod bench_matmul;
pub mod bench_ptx;
pub mod cache_demo;
pub mod demo;
pub mod ensemble;
pub mod ptx;
