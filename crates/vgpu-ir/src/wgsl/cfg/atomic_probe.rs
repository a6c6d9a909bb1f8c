//! The kernel of vgpu-gpu's f32 atomic-add probe: `acc[i]` (uploaded with the
//! first operand's bits) becomes `atomicAdd(&acc[i], b[i])` through the
//! device's f32 atomics, exactly as compiled PTX's global `atom.add.f32` runs
//! under [`super::CfgWgslOptions::f32_atomic_add`].

/// The probe's WGSL (entry `main`, workgroup size 64): binding 0 the second
/// operands' bits (`array<u32>`), binding 1 the accumulators
/// (`array<atomic<f32>>`, one per pair). Needs `SHADER_FLOAT32_ATOMIC`.
pub fn atomic_add_f32_probe_wgsl() -> &'static str {
    "
@group(0) @binding(0) var<storage, read> b: array<u32>;
@group(0) @binding(1) var<storage, read_write> acc: array<atomic<f32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let i = id.x;
  if (i >= arrayLength(&acc)) { return; }
  atomicAdd(&acc[i], bitcast<f32>(b[i]));
}
"
}
