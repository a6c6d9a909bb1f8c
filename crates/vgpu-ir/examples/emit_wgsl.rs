//! Prints the WGSL compute shader that the GPU backend generates for a
//! fixed-step ensemble of a `.field` file: what `vgpu ensemble --backend gpu`
//! compiles, to read or to paste into a shader tool.
//!
//! ```sh
//! cargo run -p vgpu-ir --example emit_wgsl -- examples/lorenz.field rk4
//! ```
//! The second argument is the integrator (`rk4` or `euler`, default `rk4`).

use std::process::ExitCode;
use vgpu_ir::Method;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: emit_wgsl FILE.field [rk4|euler]");
        return ExitCode::from(2);
    };
    let method = match args.next().as_deref() {
        None | Some("rk4") => Method::Rk4,
        Some("euler") => Method::Euler,
        Some(other) => {
            eprintln!("emit_wgsl: unknown method `{other}` (rk4 or euler)");
            return ExitCode::from(2);
        }
    };
    let kernel = match vgpu_ir::compile_file(std::path::Path::new(&path)) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    match vgpu_ir::emit_wgsl(&kernel, &method.tableau(), 64) {
        Ok(src) => {
            print!("{src}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
