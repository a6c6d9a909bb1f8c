//! The PTX throughput workloads: nvcc's `matmul_naive` and `lorenz_rk4` (see
//! ptx-cases/) as launches — geometry, arguments and input buffers — for
//! the criterion bench and `vgpu bench ptx`, so both measure the same thing.

use vgpu_ptx::{KernelArg, LaunchConfig};

/// One launch's geometry, arguments and initial buffers.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Grid and block.
    pub cfg: LaunchConfig,
    /// The kernel's arguments.
    pub args: Vec<KernelArg>,
    /// Initial global buffers (copy them for each launch).
    pub buffers: Vec<Vec<u8>>,
}

/// `n` deterministic values in [-0.5, 0.5) (xorshift from `seed`).
pub fn inputs(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        })
        .collect()
}

/// Little-endian bytes of f32 values.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `matmul_naive(A, B, C, M, K, N)` for square `n × n` `a` and `b`: 16 × 16
/// blocks; buffer 2 is `C`.
pub fn matmul_naive(n: usize, a: &[f32], b: &[f32]) -> Workload {
    let blocks = n.div_ceil(16) as u32;
    let nn = KernelArg::S32(n as i32);
    Workload {
        cfg: LaunchConfig {
            grid: [blocks, blocks, 1].into(),
            block: [16, 16, 1].into(),
            shared_bytes: 0,
        },
        args: vec![
            KernelArg::Buffer(0),
            KernelArg::Buffer(1),
            KernelArg::Buffer(2),
            nn,
            nn,
            nn,
        ],
        buffers: vec![f32_bytes(a), f32_bytes(b), vec![0u8; n * n * 4]],
    }
}

/// `lorenz_rk4(state, rho, dt, steps, n)`: `state` holds `x y z` of each of the
/// `rho.len()` trajectories (buffer 0, updated in place); blocks of 256.
pub fn lorenz_rk4(state: &[f32], rho: &[f32], dt: f32, steps: usize) -> Workload {
    let n = rho.len();
    Workload {
        cfg: LaunchConfig {
            grid: [n.div_ceil(256) as u32, 1, 1].into(),
            block: [256, 1, 1].into(),
            shared_bytes: 0,
        },
        args: vec![
            KernelArg::Buffer(0),
            KernelArg::Buffer(1),
            KernelArg::F32(dt),
            KernelArg::S32(steps as i32),
            KernelArg::S32(n as i32),
        ],
        buffers: vec![f32_bytes(state), f32_bytes(rho)],
    }
}
