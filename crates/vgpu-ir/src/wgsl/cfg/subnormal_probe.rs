//! The kernel of vgpu-gpu's f32 subnormal probe: for each pair `(a, b)` the
//! bits of `a + b`, `a * b`, `a - b`, `a < b` (1 or 0), the plain f32
//! arithmetic compiled PTX runs, and `fma(a, 2, b)`, whose product is exact
//! so that fused and unfused devices agree except where one flushes
//! subnormals ([`super::CfgWgslOptions::f32_subnormals`]).

/// The probe's WGSL (entry `main`, workgroup size 64): binding 0 the pairs'
/// bits (`array<u32>`, `a` then `b`) and last the bits of 2.0 (read, so no
/// compiler folds it), binding 1 five result words per pair.
pub fn f32_subnormal_probe_wgsl() -> &'static str {
    "
@group(0) @binding(0) var<storage, read> ab: array<u32>;
@group(0) @binding(1) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let i = id.x;
  if (i >= arrayLength(&o) / 5u) { return; }
  let a = bitcast<f32>(ab[2u * i]);
  let b = bitcast<f32>(ab[2u * i + 1u]);
  let two = bitcast<f32>(ab[arrayLength(&ab) - 1u]);
  o[5u * i] = bitcast<u32>(a + b);
  o[5u * i + 1u] = bitcast<u32>(a * b);
  o[5u * i + 2u] = bitcast<u32>(a - b);
  o[5u * i + 3u] = select(0u, 1u, a < b);
  o[5u * i + 4u] = bitcast<u32>(fma(a, two, b));
}
"
}
