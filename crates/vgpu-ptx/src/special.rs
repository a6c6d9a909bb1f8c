//! PTX's special registers (`%tid.x`, `%laneid`, `%clock64`, …) and the
//! predefined constant `WARP_SZ`: their names, and the value each has in a
//! VGPU launch.
//!
//! Every special register the PTX ISA defines has a defined value here. Those
//! that describe real hardware VGPU does not have are given fixed, documented
//! values, so that a run is deterministic:
//!
//! - `%smid` 0, `%nsmid` 1 (one virtual SM), `%gridid` 0, `%current_graph_exec` 0
//!   (not launched from a graph);
//! - `%clock`, `%clock64`, `%clock_hi`: the warp's count of executed instructions
//!   (its steps), the 32-bit forms its low and high halves; `%globaltimer`
//!   (with `_lo`/`_hi`): the same count read as nanoseconds;
//! - `%envreg0..31` and the performance counters `%pm0..7`, `%pm0_64..7_64`: 0;
//! - clusters: every launch is a grid of one-CTA clusters (`%cluster_ctaid` 0,
//!   `%cluster_nctaid` 1, `%clusterid` = `%ctaid`, `%nclusterid` = `%nctaid`,
//!   `%cluster_ctarank` 0, `%cluster_nctarank` 1, `%is_explicit_cluster` 0);
//! - shared memory: `%dynamic_smem_size` is the dynamic bytes;
//!   `%total_smem_size` the static plus dynamic bytes in units of the shared
//!   memory allocation unit (128 bytes on sm_80 and later, as the ISA says:
//!   "returned in multiples of shared memory allocation unit size"). Behind
//!   them lies the region reserved for NVIDIA system software (1 KiB per block
//!   from sm_80), laid out as an sm_8x/sm_90 GPU reports it: it begins at
//!   `%total_smem_size` (`%reserved_smem_offset_begin` = `_0` = `_1`),
//!   `%reserved_smem_offset_end` is 288 bytes on (what cooperative groups'
//!   multi-warp tiles may use for their barriers and exchange slots, found
//!   through `%reserved_smem_offset_1`) and `%reserved_smem_offset_cap` 1 KiB
//!   on; `%aggr_smem_size` counts the kernel's bytes and the reserved KiB. The
//!   288 bytes from `begin` are real, zeroed, initialised memory of the block;
//!   the padding before `begin` and the bytes from `end` are out of bounds
//!   ([`reserved_region`]).

/// A special register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NWarpId,
    /// `%lanemask_eq/lt/le/gt/ge`: 0..5.
    LaneMask(u8),
    Clock,
    ClockHi,
    Clock64,
    GlobalTimer,
    GlobalTimerLo,
    GlobalTimerHi,
    SmId,
    NSmId,
    GridId,
    DynSmem,
    TotalSmem,
    AggrSmem,
    /// `%reserved_smem_offset_begin` and `_<0|1>`.
    ReservedSmemOffset,
    /// `%reserved_smem_offset_end`.
    ReservedSmemEnd,
    ReservedSmemCap,
    /// `%envreg<n>`, `%pm<n>`, `%pm<n>_64`, `%current_graph_exec`,
    /// `%is_explicit_cluster`, `%cluster_ctaid.*`, `%cluster_ctarank`: 0.
    Zero,
    /// `%cluster_nctaid.*`, `%cluster_nctarank`: 1.
    One,
}

/// Shared memory's allocation unit on sm_80 and later, in bytes.
pub(crate) const SMEM_UNIT: u64 = 128;
/// Bytes of the reserved region from its beginning that system software's
/// users may rely on (cooperative groups asserts its multi-warp scratch fits).
pub(crate) const RESERVED_SMEM_USABLE: u64 = 288;
/// The reserved region's capacity per block on sm_80 and later.
pub(crate) const RESERVED_SMEM_CAP: u64 = 1024;

/// The reserved shared region of a block whose kernel uses `user` bytes of
/// shared memory: `(begin, end, cap)` offsets in the block's shared window.
pub(crate) fn reserved_region(user: u64) -> (u64, u64, u64) {
    let begin = user.div_ceil(SMEM_UNIT) * SMEM_UNIT;
    (
        begin,
        begin + RESERVED_SMEM_USABLE,
        begin + RESERVED_SMEM_CAP,
    )
}

/// The value of the constant `WARP_SZ` (nvcc emits it for `warpSize`).
pub(crate) const WARP_SZ: u64 = 32;

/// The special register named `name` (`%tid.x`, `%clock64` …), if it is one.
pub(crate) fn special(name: &str) -> Option<Special> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((base, d)) = name.split_once('.') {
        let d = dim(d)?;
        return Some(match base {
            "%tid" => Special::Tid(d),
            "%ntid" => Special::Ntid(d),
            "%ctaid" | "%clusterid" => Special::Ctaid(d),
            "%nctaid" | "%nclusterid" => Special::Nctaid(d),
            "%cluster_ctaid" => Special::Zero,
            "%cluster_nctaid" => Special::One,
            _ => return None,
        });
    }
    let numbered = |prefix: &str, suffix: &str, n: u32| {
        name.strip_prefix(prefix)
            .and_then(|r| r.strip_suffix(suffix))
            .and_then(|d| (!d.is_empty() && d.len() <= 2).then_some(d))
            .and_then(|d| d.parse::<u32>().ok())
            .is_some_and(|i| i < n && (i == 0 || !name[prefix.len()..].starts_with('0')))
    };
    if numbered("%envreg", "", 32) || numbered("%pm", "_64", 8) || numbered("%pm", "", 8) {
        return Some(Special::Zero);
    }
    if numbered("%reserved_smem_offset_", "", 2) {
        return Some(Special::ReservedSmemOffset);
    }
    Some(match name {
        "%laneid" => Special::LaneId,
        "%warpid" => Special::WarpId,
        "%nwarpid" => Special::NWarpId,
        "%lanemask_eq" => Special::LaneMask(0),
        "%lanemask_lt" => Special::LaneMask(1),
        "%lanemask_le" => Special::LaneMask(2),
        "%lanemask_gt" => Special::LaneMask(3),
        "%lanemask_ge" => Special::LaneMask(4),
        "%clock" => Special::Clock,
        "%clock_hi" => Special::ClockHi,
        "%clock64" => Special::Clock64,
        "%globaltimer" => Special::GlobalTimer,
        "%globaltimer_lo" => Special::GlobalTimerLo,
        "%globaltimer_hi" => Special::GlobalTimerHi,
        "%smid" => Special::SmId,
        "%nsmid" => Special::NSmId,
        "%gridid" => Special::GridId,
        "%dynamic_smem_size" => Special::DynSmem,
        "%total_smem_size" => Special::TotalSmem,
        "%aggr_smem_size" => Special::AggrSmem,
        "%reserved_smem_offset_begin" => Special::ReservedSmemOffset,
        "%reserved_smem_offset_end" => Special::ReservedSmemEnd,
        "%reserved_smem_offset_cap" => Special::ReservedSmemCap,
        "%current_graph_exec" | "%is_explicit_cluster" | "%cluster_ctarank" => Special::Zero,
        "%cluster_nctarank" => Special::One,
        _ => return None,
    })
}

/// What a thread's special registers are read from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpecialCtx {
    pub tid: [u32; 3],
    pub ntid: [u32; 3],
    pub ctaid: [u32; 3],
    pub nctaid: [u32; 3],
    /// The lane in the warp, 0..32.
    pub lane: u32,
    /// The warp's index in the block.
    pub warp: u32,
    /// Warps in the block.
    pub nwarps: u32,
    /// Instructions the warp has executed.
    pub steps: u64,
    pub shared_static: u32,
    pub dyn_shared: u32,
}

/// The value of special register `s` for the thread `c` describes.
pub(crate) fn value(s: Special, c: &SpecialCtx) -> u64 {
    let (begin, end, cap) = reserved_region(c.shared_static as u64 + c.dyn_shared as u64);
    match s {
        Special::Tid(i) => c.tid[i as usize] as u64,
        Special::Ntid(i) => c.ntid[i as usize] as u64,
        Special::Ctaid(i) => c.ctaid[i as usize] as u64,
        Special::Nctaid(i) => c.nctaid[i as usize] as u64,
        Special::LaneId => c.lane as u64,
        Special::WarpId => c.warp as u64,
        Special::NWarpId => c.nwarps as u64,
        Special::LaneMask(kind) => {
            let eq = 1u64 << c.lane;
            (match kind {
                0 => eq,
                1 => eq - 1,
                2 => (eq << 1) - 1,
                3 => !((eq << 1) - 1),
                _ => !(eq - 1),
            }) & 0xffff_ffff
        }
        Special::Clock | Special::GlobalTimerLo => c.steps & 0xffff_ffff,
        Special::ClockHi | Special::GlobalTimerHi => c.steps >> 32,
        Special::Clock64 | Special::GlobalTimer => c.steps,
        Special::SmId | Special::GridId | Special::Zero => 0,
        Special::NSmId | Special::One => 1,
        Special::DynSmem => c.dyn_shared as u64,
        Special::TotalSmem | Special::ReservedSmemOffset => begin,
        Special::ReservedSmemEnd => end,
        Special::ReservedSmemCap | Special::AggrSmem => cap,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(lane: u32, steps: u64) -> SpecialCtx {
        SpecialCtx {
            tid: [37, 1, 0],
            ntid: [64, 2, 1],
            ctaid: [3, 0, 2],
            nctaid: [4, 1, 3],
            lane,
            warp: 1,
            nwarps: 4,
            steps,
            shared_static: 256,
            dyn_shared: 1024,
        }
    }

    fn val(name: &str, c: &SpecialCtx) -> u64 {
        value(special(name).unwrap_or_else(|| panic!("{name} unknown")), c)
    }

    #[test]
    fn thread_geometry() {
        let c = ctx(5, 0);
        assert_eq!(val("%tid.x", &c), 37);
        assert_eq!(val("%tid.y", &c), 1);
        assert_eq!(val("%ntid.x", &c), 64);
        assert_eq!(val("%ctaid.z", &c), 2);
        assert_eq!(val("%nctaid.x", &c), 4);
        assert_eq!(val("%laneid", &c), 5);
        assert_eq!(val("%warpid", &c), 1);
        assert_eq!(val("%nwarpid", &c), 4);
        assert!(special("%tid.w").is_none());
        assert!(special("%tid").is_none());
    }

    #[test]
    fn lane_masks_follow_the_isa() {
        let c = ctx(5, 0);
        assert_eq!(val("%lanemask_eq", &c), 1 << 5);
        assert_eq!(val("%lanemask_lt", &c), 0b11111);
        assert_eq!(val("%lanemask_le", &c), 0b111111);
        assert_eq!(val("%lanemask_gt", &c), 0xffff_ffc0);
        assert_eq!(val("%lanemask_ge", &c), 0xffff_ffe0);
        let c = ctx(31, 0);
        assert_eq!(val("%lanemask_gt", &c), 0);
        assert_eq!(val("%lanemask_le", &c), 0xffff_ffff);
        let c = ctx(0, 0);
        assert_eq!(val("%lanemask_lt", &c), 0);
        assert_eq!(val("%lanemask_ge", &c), 0xffff_ffff);
    }

    #[test]
    fn clocks_count_the_warps_steps() {
        let c = ctx(0, 0x1_2345_6789);
        assert_eq!(val("%clock", &c), 0x2345_6789);
        assert_eq!(val("%clock_hi", &c), 1);
        assert_eq!(val("%clock64", &c), 0x1_2345_6789);
        assert_eq!(val("%globaltimer", &c), 0x1_2345_6789);
        assert_eq!(val("%globaltimer_lo", &c), 0x2345_6789);
        assert_eq!(val("%globaltimer_hi", &c), 1);
    }

    #[test]
    fn machine_and_environment() {
        let c = ctx(0, 9);
        assert_eq!(val("%smid", &c), 0);
        assert_eq!(val("%nsmid", &c), 1);
        assert_eq!(val("%gridid", &c), 0);
        assert_eq!(val("%current_graph_exec", &c), 0);
        for i in 0..32 {
            assert_eq!(val(&format!("%envreg{i}"), &c), 0);
        }
        for i in 0..8 {
            assert_eq!(val(&format!("%pm{i}"), &c), 0);
            assert_eq!(val(&format!("%pm{i}_64"), &c), 0);
        }
        assert!(special("%envreg32").is_none());
        assert!(special("%envreg01").is_none());
        assert!(special("%pm8").is_none());
        assert!(special("%pm8_64").is_none());
        assert!(special("%envreg").is_none());
    }

    #[test]
    fn clusters_are_one_cta() {
        let c = ctx(0, 0);
        assert_eq!(val("%clusterid.x", &c), 3);
        assert_eq!(val("%nclusterid.z", &c), 3);
        assert_eq!(val("%cluster_ctaid.y", &c), 0);
        assert_eq!(val("%cluster_nctaid.x", &c), 1);
        assert_eq!(val("%cluster_ctarank", &c), 0);
        assert_eq!(val("%cluster_nctarank", &c), 1);
        assert_eq!(val("%is_explicit_cluster", &c), 0);
    }

    #[test]
    fn shared_memory_sizes_and_the_empty_reserved_region() {
        let c = ctx(0, 0);
        assert_eq!(val("%dynamic_smem_size", &c), 1024);
        // 256 + 1024 bytes: already a multiple of the 128-byte unit.
        assert_eq!(val("%total_smem_size", &c), 1280);
        assert_eq!(val("%aggr_smem_size", &c), 1280 + 1024);
        assert_eq!(val("%reserved_smem_offset_begin", &c), 1280);
        assert_eq!(val("%reserved_smem_offset_end", &c), 1280 + 288);
        assert_eq!(val("%reserved_smem_offset_0", &c), 1280);
        assert_eq!(val("%reserved_smem_offset_1", &c), 1280);
        assert_eq!(val("%reserved_smem_offset_cap", &c), 1280 + 1024);
        // 100 bytes round up to one unit.
        let c = SpecialCtx {
            shared_static: 100,
            dyn_shared: 0,
            ..c
        };
        assert_eq!(val("%total_smem_size", &c), 128);
        assert_eq!(val("%reserved_smem_offset_1", &c), 128);
        assert_eq!(val("%reserved_smem_offset_end", &c), 128 + 288);
        assert!(special("%reserved_smem_offset_2").is_none());
    }

    #[test]
    fn warp_size_constant() {
        assert_eq!(WARP_SZ, 32);
        assert!(special("WARP_SZ").is_none(), "a constant, not a register");
    }
}
