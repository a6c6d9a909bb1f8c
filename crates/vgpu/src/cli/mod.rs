//! One module per subcommand of the `vgpu` command.
pub mod bench_lorenz;
pub mod demo;
