//! numpy arrays at the boundary: checking what comes in, wrapping what goes out.

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray2, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A borrowed, C-contiguous float32 matrix: its data and its (rows, columns).
pub(crate) struct Matrix<'py> {
    array: PyReadonlyArray2<'py, f32>,
    /// (rows, columns).
    pub shape: (usize, usize),
}

impl<'py> Matrix<'py> {
    /// Checks that `obj` is a 2-D, C-contiguous float32 numpy array; `op` and `name`
    /// (`"matmul"`, `"a"`) name it in the error. Wrong dtype, dimension count or
    /// layout raise `ValueError`, a non-array `TypeError`. (`vgpu.VGPUCache`
    /// converts array-likes before calling, so only direct callers see these.)
    pub(crate) fn extract(op: &str, name: &str, obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        let array: PyReadonlyArray2<'py, f32> = match obj.extract() {
            Ok(a) => a,
            Err(_) => {
                return Err(match obj.cast::<PyUntypedArray>() {
                    Ok(arr) => PyValueError::new_err(format!(
                        "{op}: {name} must be a 2-D float32 array, got a {}-D {} array of shape {}",
                        arr.ndim(),
                        arr.dtype(),
                        shape_str(arr.shape())
                    )),
                    Err(_) => PyTypeError::new_err(format!(
                        "{op}: {name} must be a numpy array, got {}",
                        obj.get_type()
                            .name()
                            .map(|n| n.to_string())
                            .unwrap_or_default()
                    )),
                })
            }
        };
        let dims = array.shape();
        let shape = (dims[0], dims[1]);
        if !array.is_c_contiguous() {
            return Err(PyValueError::new_err(format!(
                "{op}: {name} (shape {}) is not C-contiguous; pass np.ascontiguousarray({name})",
                shape_str(dims)
            )));
        }
        Ok(Matrix { array, shape })
    }

    /// The row-major data (no copy).
    pub(crate) fn data(&self) -> PyResult<&[f32]> {
        self.array
            .as_slice()
            .map_err(|e| PyValueError::new_err(format!("array is not contiguous: {e}")))
    }
}

/// A vector of `rows × cols` row-major values as a numpy array, without copying.
pub(crate) fn into_matrix<'py>(
    py: Python<'py>,
    data: Vec<f32>,
    rows: usize,
    cols: usize,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let len = data.len();
    Array2::from_shape_vec((rows, cols), data)
        .map(|a| a.into_pyarray(py))
        .map_err(|e| {
            crate::errors::vgpu_error(format!(
                "result of {len} values does not fill a {rows}×{cols} matrix: {e}"
            ))
        })
}

/// A shape as numpy prints it: `(3, 4)`, `(5,)`.
pub(crate) fn shape_str(dims: &[usize]) -> String {
    match dims {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
