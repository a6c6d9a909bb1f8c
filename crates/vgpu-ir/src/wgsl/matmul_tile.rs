//! The tile configuration of the register-blocked matmul kernel
//! ([`super::matmul::blocked`]).

use std::fmt;
use std::str::FromStr;

/// Tile sizes of the register-blocked kernel: a workgroup computes a `bm×bn`
/// tile of C, stepping through K in slabs of `bk`; each invocation holds `tm×tn`
/// accumulators. Written `BMxBNxBKxTMxTN`, e.g. `128x128x8x8x8` (the default for large matrices).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tile {
    /// Rows of C per workgroup.
    pub bm: u32,
    /// Columns of C per workgroup.
    pub bn: u32,
    /// Depth of the K slab staged in workgroup memory.
    pub bk: u32,
    /// Rows of C per invocation.
    pub tm: u32,
    /// Columns of C per invocation.
    pub tn: u32,
}

/// A tile configuration the generator cannot build, or one written wrongly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("matmul tile {tile:?}: {reason}")]
pub struct BadTile {
    /// The tile as given.
    pub tile: String,
    /// What is wrong.
    pub reason: String,
}

impl Default for Tile {
    fn default() -> Self {
        Tile::LARGE
    }
}

impl Tile {
    /// 128×128 per workgroup, K slabs of 8, 8×8 per invocation (256 invocations):
    /// the throughput configuration for large matrices. On the H200 (Vulkan) at
    /// N=4096 it measured 41.7 TFLOP/s device-side against 30.8 for K slabs of 16
    /// (benchmarks/results/h200-2026-12-02).
    pub const LARGE: Tile = Tile {
        bm: 128,
        bn: 128,
        bk: 8,
        tm: 8,
        tn: 8,
    };

    /// 64×64 per workgroup, K slabs of 16, 4×4 per invocation (256 invocations):
    /// for medium matrices, where 128×128 tiles leave the GPU's cores idle.
    pub const MEDIUM: Tile = Tile {
        bm: 64,
        bn: 64,
        bk: 16,
        tm: 4,
        tn: 4,
    };

    /// Invocations per workgroup.
    pub fn threads(&self) -> u32 {
        (self.bm / self.tm.max(1)) * (self.bn / self.tn.max(1))
    }

    /// Checks that the kernel generator can build this tile and that it fits the
    /// usual device limits (≤ 256 invocations, ≤ 16 KiB of workgroup memory).
    pub fn validate(&self) -> Result<(), BadTile> {
        let bad = |reason: &str| BadTile {
            tile: self.to_string(),
            reason: reason.to_string(),
        };
        let Tile { bm, bn, bk, tm, tn } = *self;
        if [bm, bn, bk, tm, tn].contains(&0) {
            return Err(bad("every size must be positive"));
        }
        if tm % 4 != 0 || tn % 4 != 0 || bk % 4 != 0 {
            return Err(bad("TM, TN and BK must be multiples of 4"));
        }
        if bm % tm != 0 || bn % tn != 0 {
            return Err(bad("BM must be a multiple of TM and BN of TN"));
        }
        let threads = self.threads();
        if threads > 256 {
            return Err(bad("more than 256 invocations per workgroup"));
        }
        if (bm * bk / 4) % threads != 0 || bm * bk / 4 < threads {
            return Err(bad(
                "BM·BK/4 must be a positive multiple of the invocations",
            ));
        }
        if (bk * bn / 4) % threads != 0 || bk * bn / 4 < threads {
            return Err(bad(
                "BK·BN/4 must be a positive multiple of the invocations",
            ));
        }
        if (bm + bn) * bk * 4 > 16 * 1024 {
            return Err(bad("more than 16 KiB of workgroup memory"));
        }
        Ok(())
    }
}

impl fmt::Display for Tile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{}x{}x{}x{}",
            self.bm, self.bn, self.bk, self.tm, self.tn
        )
    }
}

impl FromStr for Tile {
    type Err = BadTile;
    fn from_str(s: &str) -> Result<Self, BadTile> {
        let parts: Result<Vec<u32>, _> = s.split('x').map(|p| p.trim().parse::<u32>()).collect();
        match parts.as_deref() {
            Ok([bm, bn, bk, tm, tn]) => {
                let t = Tile {
                    bm: *bm,
                    bn: *bn,
                    bk: *bk,
                    tm: *tm,
                    tn: *tn,
                };
                t.validate()?;
                Ok(t)
            }
            _ => Err(BadTile {
                tile: s.to_string(),
                reason: "expected BMxBNxBKxTMxTN, five positive integers".into(),
            }),
        }
    }
}
