//! WGSL read by naga: parsed and validated, for the SPIR-V writer
//! (spirv.rs) and the index proofs (in_bounds.rs).

/// `wgsl` parsed by naga and validated with `caps`, or naga's message.
pub(super) fn validated(
    wgsl: &str,
    caps: naga::valid::Capabilities,
) -> Result<(naga::Module, naga::valid::ModuleInfo), String> {
    let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| e.emit_to_string(wgsl))?;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(|e| format!("{e:?}"))?;
    Ok((module, info))
}
