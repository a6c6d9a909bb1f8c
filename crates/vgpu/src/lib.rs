//! VGPU facade
