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
