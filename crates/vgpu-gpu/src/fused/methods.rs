//! The fused kernels as methods of [`VgpuCache`]: on its GPU (counted in its
//! stats: one compile per kernel, and per shape for `matmul_bias_relu`, then
//! cache hits), or on the CPU (counted as CPU fallbacks) when there is no GPU,
//! under `VGPU_BACKEND=cpu`, or after the device was lost.

use super::{bias_relu, check_bias, check_matrix, run, Op};
use crate::matmul::{check_shapes, cpu};
use crate::{GpuError, VgpuCache};

impl VgpuCache {
    /// `max(x, 0)` element-wise (generated from the IR; see [`crate::fused`]).
    /// NaN stays NaN.
    ///
    /// # Errors
    /// An empty `x` ([`GpuError::FusedShape`]); GPU errors.
    pub fn relu(&mut self, x: &[f32]) -> Result<Vec<f32>, GpuError> {
        check_matrix("relu", "x", x, (1, x.len()))?;
        let n = x.len();
        self.on_gpu_or_cpu(
            &mut (),
            |this, _| {
                let gpu = this.gpu_for(&[("x", (1, n))])?;
                run(Op::Relu, &[("x", x)], None, n, 1, Some(gpu))
            },
            |_| run(Op::Relu, &[("x", x)], None, n, 1, None),
        )
    }

    /// `x[r, c] + bias[c]` for a row-major `x` of `shape` = (rows, cols);
    /// `bias` has `cols` values.
    ///
    /// # Errors
    /// Empty `x`, `x` not filling `shape`, `bias.len() != cols`
    /// ([`GpuError::FusedShape`], naming the shapes); GPU errors.
    pub fn bias_add(
        &mut self,
        x: &[f32],
        shape: (usize, usize),
        bias: &[f32],
    ) -> Result<Vec<f32>, GpuError> {
        let n = check_matrix("bias_add", "x", x, shape)?;
        check_bias("bias_add", bias, shape.1)?;
        let bufs = [("x", x), ("b", bias)];
        let cols = Some(shape.1);
        self.on_gpu_or_cpu(
            &mut (),
            |this, _| {
                let gpu = this.gpu_for(&[("x", shape)])?;
                run(Op::BiasAdd, &bufs, cols, n, 1, Some(gpu))
            },
            |_| run(Op::BiasAdd, &bufs, cols, n, 1, None),
        )
    }

    /// Row-wise softmax of a row-major `x` of `shape` = (rows, cols): one
    /// trajectory per row integrates the online softmax over the columns, then
    /// an element-wise kernel normalises (two dispatches; see [`crate::fused`]
    /// for the integration and for `−∞`, `+∞` and NaN).
    ///
    /// # Errors
    /// Empty `x`, `x` not filling `shape` ([`GpuError::FusedShape`]); GPU errors.
    pub fn softmax(&mut self, x: &[f32], shape: (usize, usize)) -> Result<Vec<f32>, GpuError> {
        check_matrix("softmax", "x", x, shape)?;
        self.on_gpu_or_cpu(
            &mut (),
            |this, _| {
                let gpu = this.gpu_for(&[("x", shape)])?;
                super::softmax(x, shape, Some(gpu))
            },
            |_| super::softmax(x, shape, None),
        )
    }

    /// `max(A·W + bias, 0)` for row-major A (`a_shape` = (m, k)), W (`w_shape`
    /// = (k, n)) and `bias` (n values): the tiled matmul kernel with the
    /// epilogue generated from the IR's `bias_relu` fused into its store, one
    /// compiled kernel per shape. On the CPU: the GEMM, then `bias_relu`
    /// through the IR's evaluator (the GPU accumulates in a different order:
    /// results agree to the matmul's rounding).
    ///
    /// # Errors
    /// The matmul's shape errors ([`GpuError::ShapeMismatch`],
    /// [`GpuError::EmptyMatrix`], [`GpuError::DataLength`]), a bias of the
    /// wrong length ([`GpuError::FusedShape`]); GPU errors.
    pub fn matmul_bias_relu(
        &mut self,
        a: &[f32],
        a_shape: (usize, usize),
        w: &[f32],
        w_shape: (usize, usize),
        bias: &[f32],
    ) -> Result<Vec<f32>, GpuError> {
        let (m, k, n) = check_shapes(a, a_shape, w, w_shape)?;
        check_bias("matmul_bias_relu", bias, n)?;
        let mut c = vec![0.0f32; m * n];
        self.on_gpu_or_cpu(
            &mut c,
            |this, c| this.gpu_matmul(a, w, c, m, k, n, Some(bias)),
            |c| {
                cpu::matmul_into(a, w, c, m, k, n);
                let out = bias_relu(c, bias, None)?;
                c.copy_from_slice(&out);
                Ok(())
            },
        )?;
        Ok(c)
    }
}
