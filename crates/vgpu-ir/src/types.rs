//! Scalar types and values of the kernel IR (and of the `.field` language):
//! the field engine's one vocabulary ([`vgpu_field::scalar`]), shared with the
//! phased executor's shared arrays and flux buffers, so a kernel's values
//! pass to it as they are.

pub use vgpu_field::scalar::{ScalarType, Value};
