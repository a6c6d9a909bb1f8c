//! [`Dim3`]: CUDA's `dim3` / `uint3`, a 3-D extent or index (x fastest). The
//! vocabulary of launch geometry, below both the launch configuration and the
//! errors that name places.

use std::fmt;

/// A 3-D extent or index, as CUDA's `dim3` / `uint3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dim3 {
    /// Fastest-varying axis.
    pub x: u32,
    /// Middle axis.
    pub y: u32,
    /// Slowest-varying axis.
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    /// `(x, 1, 1)`, a 1-D extent.
    pub const fn linear(x: u32) -> Self {
        Dim3 { x, y: 1, z: 1 }
    }

    /// `x·y·z`, the number of points of this extent.
    pub const fn count(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }

    /// The linear index of `idx` inside extent `self` (x fastest).
    pub const fn linearize(self, idx: Dim3) -> u64 {
        idx.x as u64 + self.x as u64 * (idx.y as u64 + self.y as u64 * idx.z as u64)
    }

    /// The 3-D index of linear index `i` inside extent `self` (x fastest).
    /// Requires every component of `self` to be non-zero.
    pub const fn delinearize(self, i: u64) -> Dim3 {
        let x = (i % self.x as u64) as u32;
        let rest = i / self.x as u64;
        let y = (rest % self.y as u64) as u32;
        let z = (rest / self.y as u64) as u32;
        Dim3 { x, y, z }
    }

    pub(crate) fn axes(self) -> [u64; 3] {
        [self.x as u64, self.y as u64, self.z as u64]
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3::linear(x)
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3::new(x, y, 1)
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3::new(x, y, z)
    }
}

impl From<[u32; 3]> for Dim3 {
    fn from([x, y, z]: [u32; 3]) -> Self {
        Dim3::new(x, y, z)
    }
}

impl From<Dim3> for [u32; 3] {
    fn from(d: Dim3) -> Self {
        [d.x, d.y, d.z]
    }
}
