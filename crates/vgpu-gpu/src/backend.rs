//! Backend choice: `VGPU_BACKEND=auto|gpu|cpu`.

use crate::GpuError;
use std::fmt;
use std::str::FromStr;

/// Which executor VGPU should use, as asked by the user.
///
/// Read from the environment variable `VGPU_BACKEND` by [`BackendChoice::from_env`];
/// unset means [`BackendChoice::Auto`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// Use a GPU adapter when wgpu finds one, otherwise the CPU (counted as CPU fallbacks).
    #[default]
    Auto,
    /// Require a GPU adapter: none found is an error ([`GpuError::NoAdapter`]).
    Gpu,
    /// Never touch the GPU: every call runs on the CPU (counted as CPU fallbacks).
    Cpu,
}

impl BackendChoice {
    /// The name of the environment variable read by [`BackendChoice::from_env`].
    pub const ENV: &'static str = "VGPU_BACKEND";

    /// Reads `VGPU_BACKEND` (`auto`, `gpu` or `cpu`, any case; unset or empty means `auto`).
    pub fn from_env() -> Result<Self, GpuError> {
        match std::env::var(Self::ENV) {
            Ok(v) if v.trim().is_empty() => Ok(Self::Auto),
            Ok(v) => v.parse(),
            Err(std::env::VarError::NotPresent) => Ok(Self::Auto),
            Err(std::env::VarError::NotUnicode(v)) => Err(GpuError::BadBackendEnv {
                value: v.to_string_lossy().into_owned(),
            }),
        }
    }
}

impl FromStr for BackendChoice {
    type Err = GpuError;
    fn from_str(s: &str) -> Result<Self, GpuError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "gpu" => Ok(Self::Gpu),
            "cpu" => Ok(Self::Cpu),
            _ => Err(GpuError::BadBackendEnv {
                value: s.to_string(),
            }),
        }
    }
}

impl fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Gpu => "gpu",
            Self::Cpu => "cpu",
        })
    }
}

/// The executor a [`crate::VgpuCache`] actually runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActiveBackend {
    /// A wgpu device (a real GPU, or lavapipe on the CPU).
    Gpu,
    /// The CPU GEMM fallback.
    Cpu,
}

impl fmt::Display for ActiveBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Gpu => "gpu",
            Self::Cpu => "cpu",
        })
    }
}
