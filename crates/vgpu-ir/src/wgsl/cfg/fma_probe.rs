//! The kernel of vgpu-gpu's f32 fma probe: `out[i]` is the f32 fma of triple
//! `i` (bits at `abc[3i..3i + 3]`, read from a storage buffer so that no
//! compiler can fold them), computed as the control-flow kernels compute
//! `fma.rn.f32` under [`super::CfgWgslOptions::native_fma_f32`].

use super::prelude::{dev_fma_wgsl, fma_suspect_wgsl, F64_PRELUDE, INT_PRELUDE};

/// The probe's WGSL (entry `main`, workgroup size 64, bindings `abc` and
/// `out`): with `f64`, `fma_native_f32` of the prelude (the device's `fma`,
/// zero or subnormal operands and results on the exact emulation), as the
/// emitter uses it with SHADER_F64 (its test of the device's result in the
/// form `compares` picks, as [`super::CfgWgslOptions::f32_subnormal_compares`]
/// does); without, the bare WGSL `fma`. `abc` holds one word after the
/// triples, which must be 0 (the emulation's opaque flag, `opq`, is read
/// from it).
pub fn fma_probe_wgsl(f64: bool, compares: bool) -> String {
    let (f64_prelude, suspect, call) = if f64 {
        (
            F64_PRELUDE,
            fma_suspect_wgsl(compares),
            "fma_native_f32(a, b, c)",
        )
    } else {
        ("", "", "dev_fma(a, b, c)")
    };
    let dev = dev_fma_wgsl(false);
    format!(
        "{INT_PRELUDE}{f64_prelude}{suspect}{dev}
@group(0) @binding(0) var<storage, read> abc: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
var<private> opq: bool;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {{
  opq = abc[arrayLength(&abc) - 1u] == 0xffffffffu;
  let i = id.x;
  if (i >= arrayLength(&out)) {{ return; }}
  let a = abc[3u * i];
  let b = abc[3u * i + 1u];
  let c = abc[3u * i + 2u];
  out[i] = {call};
}}
"
    )
}
