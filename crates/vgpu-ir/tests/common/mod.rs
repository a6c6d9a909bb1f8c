//! What the control-flow WGSL tests share.

/// Parses and validates `src` with naga (every validation flag; with
/// `FLOAT64` and `SHADER_INT64` where `f64`), panicking with naga's message
/// and the source.
pub(crate) fn validate(src: &str, f64: bool) {
    let module = naga::front::wgsl::parse_str(src)
        .unwrap_or_else(|e| panic!("{}\n{src}", e.emit_to_string(src)));
    let caps = if f64 {
        naga::valid::Capabilities::FLOAT64 | naga::valid::Capabilities::SHADER_INT64
    } else {
        naga::valid::Capabilities::empty()
    };
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{e:?}\n{src}"));
}

/// The kernel's first parameter, a 64-bit pointer, loaded into register `d`.
#[allow(dead_code)] // each test crate compiles this module; not all use it
pub(crate) fn param_pointer(d: vgpu_ir::cfg::Reg) -> vgpu_ir::cfg::Inst {
    vgpu_ir::cfg::Inst::Load {
        space: vgpu_ir::cfg::Space::Param,
        size: 8,
        sign: false,
        d: vec![Some(d)],
        base: vgpu_ir::cfg::Val::Imm(0),
        off: 0,
        unused: 0,
    }
}

/// Options for a 64-thread block without f64, int64, the device's fma or f32
/// atomics.
#[allow(dead_code)] // each test crate compiles this module; not all use it
pub(crate) fn plain_options(checked: bool) -> vgpu_ir::wgsl::cfg::CfgWgslOptions {
    vgpu_ir::wgsl::cfg::CfgWgslOptions::plain([64, 1, 1], checked)
}
