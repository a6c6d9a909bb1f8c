//! One module per subcommand of the `vgpu` command.
