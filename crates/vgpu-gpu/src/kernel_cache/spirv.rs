//! SPIR-V that computes f32 as PTX does: a kernel's WGSL parsed and
//! validated by naga, written as SPIR-V with the options wgpu's Vulkan
//! backend uses for a module with its runtime checks (bounds clamped, loops
//! bounded; workgroup memory zeroed by the driver), then given SPIR-V's
//! float controls (the `DenormPreserve` capability, the
//! `SPV_KHR_float_controls` extension and the `DenormPreserve 32` execution
//! mode on the entry point) and `NoContraction` on every float result
//! (`no_contraction`). Without that mode a Vulkan driver may flush f32
//! subnormals in arithmetic and conversions; NVIDIA's does (on the H100,
//! `add.f32` of two subnormals came out 0 in 2048 of 4096 pairs:
//! `benchmarks/device/f32_subnormal.sh`), where PTX without `.ftz` keeps
//! them. All additions are found in one reading of the module and written
//! in one pass (`with_additions`).

use super::naga_module::validated;
use super::KernelSpec;
use crate::runtime::GpuContext;

/// SPIR-V's `OpExtension`.
const OP_EXTENSION: u32 = 10;
/// SPIR-V's `OpEntryPoint`.
const OP_ENTRY_POINT: u32 = 15;
/// SPIR-V's `OpExecutionMode`.
const OP_EXECUTION_MODE: u32 = 16;
/// SPIR-V's `OpCapability`.
const OP_CAPABILITY: u32 = 17;
/// The `DenormPreserve` capability.
const CAP_DENORM_PRESERVE: u32 = 4464;
/// The `DenormPreserve` execution mode.
const MODE_DENORM_PRESERVE: u32 = 4459;
/// SPIR-V's `OpExtInstImport`.
const OP_EXT_INST_IMPORT: u32 = 11;
/// SPIR-V's `OpExtInst`.
const OP_EXT_INST: u32 = 12;
/// SPIR-V's `OpDecorate`.
const OP_DECORATE: u32 = 71;
/// The annotation instructions (`OpDecorate` … `OpGroupMemberDecorate`,
/// `OpDecorateId`, `OpDecorateString`, `OpMemberDecorateString`).
const ANNOTATIONS: [u32; 8] = [71, 72, 73, 74, 75, 332, 5632, 5633];
/// The float arithmetic whose results get `NoContraction`: `OpFNegate`,
/// `OpFAdd`, `OpFSub`, `OpFMul`, `OpFDiv`.
const FLOAT_ARITH: [u32; 5] = [127, 129, 131, 133, 136];
/// GLSL.std.450's `Fma`.
const GLSL_FMA: u32 = 50;
/// The `NoContraction` decoration.
const DEC_NO_CONTRACTION: u32 = 42;

/// `spec`'s WGSL as SPIR-V declaring f32 subnormals kept and float results
/// uncontracted (module documentation), or naga's message.
pub(super) fn float_controlled(ctx: &GpuContext, spec: &KernelSpec) -> Result<Vec<u32>, String> {
    use naga::back::spv;
    let (module, info) = validated(&spec.wgsl, ctx.naga_capabilities())?;
    let indices_proven = super::in_bounds::unproven_index(&module, &info).is_none();
    let options = writer_options(spec, ctx.robust_buffers(), indices_proven);
    let pipeline = spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: spec.entry.to_string(),
    };
    let words =
        spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| e.to_string())?;
    let insts = instructions(&words)?;
    let mut adds = denorm_preserve(&insts, &spec.entry)?;
    adds.extend(no_contraction(&insts)?);
    Ok(with_additions(&words, &insts, adds))
}

/// naga's SPIR-V options for `spec`: index clamps and loop bounding as its
/// runtime checks say (no loop bounding where the kernel bounds its own
/// loops, no index clamps where every fixed-size index is proven in bounds,
/// `indices_proven`: `in_bounds`), buffer clamps only where the device's
/// buffers are not robust ([`GpuContext::robust_buffers`]).
fn writer_options(
    spec: &KernelSpec,
    robust_buffers: bool,
    indices_proven: bool,
) -> naga::back::spv::Options<'static> {
    use naga::back::spv;
    let restrict = naga::proc::BoundsCheckPolicy::Restrict;
    let unchecked = naga::proc::BoundsCheckPolicy::Unchecked;
    let checks = spec.runtime_checks;
    // Buffer indices unclamped where the device makes stray accesses
    // harmless (robustBufferAccess2), as wgpu's own Vulkan path does.
    let buffer_checks = checks && !robust_buffers;
    spv::Options {
        lang_version: (1, 3),
        flags: spv::WriterFlags::empty(),
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: if checks && !indices_proven {
                restrict
            } else {
                unchecked
            },
            buffer: if buffer_checks { restrict } else { unchecked },
            image_load: if checks { restrict } else { unchecked },
            binding_array: unchecked,
        },
        // Workgroup variables initialised to zero by the driver (Vulkan
        // 1.3's shaderZeroInitializeWorkgroupMemory): naga's polyfill, a
        // loop and a barrier, made reduce_sum_atomic 5x slower on lavapipe.
        zero_initialize_workgroup_memory: if spec.zero_workgroup_memory {
            spv::ZeroInitializeWorkgroupMemoryMode::Native
        } else {
            spv::ZeroInitializeWorkgroupMemoryMode::None
        },
        force_loop_bounding: checks && !spec.loops_bounded,
        ..spv::Options::default()
    }
}

/// naga's SPIR-V for the WGSL module `wgsl` with naga's default writer
/// options (validated with every capability naga has), or naga's message:
/// a module's SPIR-V apart from any device, as the `pipeline_stats` example
/// reads `.wgsl` files (what VGPU gives a driver, float controls and its
/// checks' options included, is `VGPU_DUMP_SPV`'s).
///
/// # Errors
/// naga's parse, validation or writer message.
pub fn naga_spirv(wgsl: &str) -> Result<Vec<u32>, String> {
    let (m, info) = validated(wgsl, naga::valid::Capabilities::all())?;
    naga::back::spv::write_vec(&m, &info, &Default::default(), None).map_err(|e| e.to_string())
}

/// Instructions to add: after the module's instruction at the index, these
/// words.
type Additions = Vec<(usize, Vec<u32>)>;

/// `words` (parsed as `insts`) with `adds` written in, each group after its
/// instruction, in the order given.
fn with_additions(words: &[u32], insts: &[&[u32]], mut adds: Additions) -> Vec<u32> {
    adds.sort_by_key(|a| a.0);
    let mut out = words[..5].to_vec();
    let mut next = adds.iter().peekable();
    for (j, w) in insts.iter().enumerate() {
        out.extend_from_slice(w);
        while let Some((_, a)) = next.next_if(|a| a.0 == j) {
            out.extend(a);
        }
    }
    out
}

/// An instruction's opcode.
fn opcode(w: &[u32]) -> u32 {
    w[0] & 0xffff
}

/// Every float `+ − × ÷` and GLSL `Fma` result decorated
/// `NoContraction`: a driver may otherwise fuse a multiply and a following
/// add into one rounding, and split an `Fma` into two (GLSL.std.450: `Fma`
/// is one operation only where its result is `precise`). PTX's `mul.rn`,
/// `add.rn` are never contracted and its `fma.rn` is one rounding; on the
/// H100 the `lorenz_rk4` case differed from the interpreter (232 of 900
/// words) with the device's `fma` undecorated while the probes, small
/// kernels, found it fused. The decorations go after the module's last
/// annotation.
fn no_contraction(insts: &[&[u32]]) -> Result<Additions, String> {
    let glsl: Vec<u32> = insts
        .iter()
        .filter(|w| opcode(w) == OP_EXT_INST_IMPORT && w.len() > 2)
        .filter(|w| name(&w[2..]) == b"GLSL.std.450")
        .map(|w| w[1])
        .collect();
    let ids: Vec<u32> = insts
        .iter()
        .filter_map(|w| {
            let float = FLOAT_ARITH.contains(&opcode(w)) && w.len() > 2;
            let fma =
                opcode(w) == OP_EXT_INST && w.len() > 4 && glsl.contains(&w[3]) && w[4] == GLSL_FMA;
            (float || fma).then(|| w[2])
        })
        .collect();
    let Some(last) = insts.iter().rposition(|w| ANNOTATIONS.contains(&opcode(w))) else {
        return Err("no annotation in the SPIR-V".into());
    };
    let decorations = ids
        .iter()
        .flat_map(|&id| [(3 << 16) | OP_DECORATE, id, DEC_NO_CONTRACTION])
        .collect();
    Ok(vec![(last, decorations)])
}

/// The instructions after the header, each as its words.
fn instructions(words: &[u32]) -> Result<Vec<&[u32]>, String> {
    if words.len() < 5 {
        return Err("SPIR-V shorter than its header".into());
    }
    let mut insts = Vec::new();
    let mut i = 5;
    while i < words.len() {
        let n = (words[i] >> 16) as usize;
        if n == 0 || i + n > words.len() {
            return Err(format!("malformed SPIR-V instruction at word {i}"));
        }
        insts.push(&words[i..i + n]);
        i += n;
    }
    Ok(insts)
}

/// A literal string's bytes (up to its NUL).
fn name(w: &[u32]) -> Vec<u8> {
    w.iter()
        .flat_map(|x| x.to_le_bytes())
        .take_while(|&b| b != 0)
        .collect()
}

/// F32 subnormals declared kept for entry point `entry`: the capability
/// after the module's capabilities, the extension after it, and the
/// execution mode after the entry point's first one.
fn denorm_preserve(insts: &[&[u32]], entry: &str) -> Result<Additions, String> {
    let func = insts
        .iter()
        .find(|w| opcode(w) == OP_ENTRY_POINT && w.len() > 3 && name(&w[3..]) == entry.as_bytes())
        .map(|w| w[2])
        .ok_or_else(|| format!("no entry point `{entry}` in the SPIR-V"))?;
    let last_cap = insts
        .iter()
        .rposition(|w| opcode(w) == OP_CAPABILITY)
        .ok_or("no capability in the SPIR-V")?;
    let mode = insts
        .iter()
        .position(|w| opcode(w) == OP_EXECUTION_MODE && w[1] == func)
        .ok_or_else(|| format!("no execution mode for `{entry}` in the SPIR-V"))?;
    let mut ext = b"SPV_KHR_float_controls".to_vec();
    ext.resize(ext.len() / 4 * 4 + 4, 0);
    let mut cap = vec![(2 << 16) | OP_CAPABILITY, CAP_DENORM_PRESERVE];
    cap.push(((1 + ext.len() as u32 / 4) << 16) | OP_EXTENSION);
    cap.extend(
        ext.chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
    let mode_words = vec![
        (4 << 16) | OP_EXECUTION_MODE,
        func,
        MODE_DENORM_PRESERVE,
        32,
    ];
    Ok(vec![(last_cap, cap), (mode, mode_words)])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `words` with the additions `f` finds in them.
    fn apply(
        words: Vec<u32>,
        f: impl Fn(&[&[u32]]) -> Result<Additions, String>,
    ) -> Result<Vec<u32>, String> {
        let insts = instructions(&words)?;
        let adds = f(&insts)?;
        Ok(with_additions(&words, &insts, adds))
    }

    /// naga's SPIR-V for a small compute kernel.
    fn spirv() -> Vec<u32> {
        let src = "@group(0) @binding(0) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(4) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  b[g.x] = b[g.x] + 1e-40;
  b[0] = fma(b[1], b[2], b[3]) * b[4];
}";
        super::naga_spirv(src).unwrap()
    }

    /// An instruction: its opcode and its words.
    type Inst = (u32, Vec<u32>);

    /// The instructions after the header, each as its words.
    fn insts(w: &[u32]) -> Vec<Vec<u32>> {
        let mut out = Vec::new();
        let mut i = 5;
        while i < w.len() {
            let n = (w[i] >> 16) as usize;
            out.push(w[i..i + n].to_vec());
            i += n;
        }
        out
    }

    #[test]
    fn loop_bounding_and_clamps_follow_the_spec_the_device_and_the_proof() {
        use naga::proc::BoundsCheckPolicy::{Restrict, Unchecked};
        let spec = KernelSpec::new("k", "", "main");
        let o = writer_options(&spec, false, false);
        assert!(o.force_loop_bounding);
        assert_eq!(
            (
                o.bounds_check_policies.index,
                o.bounds_check_policies.buffer
            ),
            (Restrict, Restrict)
        );
        // Robust buffers: no buffer clamps, the array clamps kept.
        let o = writer_options(&spec, true, false);
        assert_eq!(
            (
                o.bounds_check_policies.index,
                o.bounds_check_policies.buffer
            ),
            (Restrict, Unchecked)
        );
        assert!(o.force_loop_bounding);
        // Every fixed-size index proven in bounds: no array clamps either.
        let o = writer_options(&spec, true, true);
        assert_eq!(
            (
                o.bounds_check_policies.index,
                o.bounds_check_policies.buffer
            ),
            (Unchecked, Unchecked)
        );
        let o = writer_options(&spec, false, true);
        assert_eq!(o.bounds_check_policies.buffer, Restrict);
        // SAFETY: only options are computed, nothing runs.
        let bounded = unsafe { spec.clone().with_loops_bounded() };
        let o = writer_options(&bounded, false, false);
        assert!(!o.force_loop_bounding);
        assert_eq!(o.bounds_check_policies.index, Restrict);
        assert_ne!(bounded.digest(), spec.digest());
        // SAFETY: as above.
        let bare = unsafe { spec.without_runtime_checks() };
        let o = writer_options(&bare, false, false);
        assert!(!o.force_loop_bounding);
        assert_eq!(
            (
                o.bounds_check_policies.index,
                o.bounds_check_policies.buffer
            ),
            (Unchecked, Unchecked)
        );
    }

    #[test]
    fn the_capability_extension_and_mode_are_added_in_their_sections() {
        let before = spirv();
        let after = apply(before.clone(), |i| denorm_preserve(i, "main")).unwrap();
        assert_eq!(after.len(), before.len() + 2 + 7 + 4);
        let ops: Vec<Inst> = insts(&after)
            .into_iter()
            .map(|w| (w[0] & 0xffff, w))
            .collect();
        let at = |pred: &dyn Fn(&Inst) -> bool| ops.iter().position(pred).unwrap();
        let cap = at(&|(o, w)| *o == OP_CAPABILITY && w[1] == CAP_DENORM_PRESERVE);
        let ext = at(&|(o, _)| *o == OP_EXTENSION);
        let mode = at(&|(o, w)| *o == OP_EXECUTION_MODE && w[2] == MODE_DENORM_PRESERVE);
        let entry = at(&|(o, _)| *o == OP_ENTRY_POINT);
        // Capabilities, then extensions, then (after the memory model) entry
        // points, then execution modes, as SPIR-V's layout requires.
        assert!(ops[..cap].iter().all(|(o, _)| *o == OP_CAPABILITY));
        assert_eq!(ext, cap + 1);
        assert!(entry < mode);
        let func = ops[entry].1[2];
        assert_eq!(
            ops[mode].1,
            vec![
                (4 << 16) | OP_EXECUTION_MODE,
                func,
                MODE_DENORM_PRESERVE,
                32
            ]
        );
        let name: Vec<u8> = ops[ext].1[1..]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert!(name.starts_with(b"SPV_KHR_float_controls\0"));
    }

    #[test]
    fn float_arithmetic_and_fma_are_decorated_no_contraction_after_the_annotations() {
        let before = spirv();
        let after = apply(before.clone(), no_contraction).unwrap();
        let ops: Vec<Inst> = insts(&after)
            .into_iter()
            .map(|w| (w[0] & 0xffff, w))
            .collect();
        let results: Vec<u32> = ops
            .iter()
            .filter(|(o, w)| FLOAT_ARITH.contains(o) || (*o == OP_EXT_INST && w[4] == GLSL_FMA))
            .map(|(_, w)| w[2])
            .collect();
        // The add, the fma and the multiply.
        assert_eq!(results.len(), 3, "{ops:?}");
        let decorated: Vec<(usize, u32)> = ops
            .iter()
            .enumerate()
            .filter(|(_, (o, w))| *o == OP_DECORATE && w[2] == DEC_NO_CONTRACTION)
            .map(|(i, (_, w))| (i, w[1]))
            .collect();
        assert_eq!(decorated.iter().map(|d| d.1).collect::<Vec<_>>(), results);
        // Together, right after the module's other annotations.
        let first = decorated[0].0;
        assert!(ANNOTATIONS.contains(&ops[first - 1].0));
        assert!(ops[first + 3..]
            .iter()
            .all(|(o, _)| !ANNOTATIONS.contains(o)));
        assert_eq!(after.len(), before.len() + 3 * 3);
    }

    #[test]
    fn a_missing_entry_point_or_a_truncated_module_is_an_error() {
        let w = spirv();
        assert!(apply(w.clone(), |i| denorm_preserve(i, "other"))
            .unwrap_err()
            .contains("no entry point `other`"));
        let mut cut = w.clone();
        cut.push((5 << 16) | OP_EXECUTION_MODE);
        assert!(apply(cut, |i| denorm_preserve(i, "main"))
            .unwrap_err()
            .contains("malformed"));
        assert!(apply(vec![0; 3], |i| denorm_preserve(i, "main")).is_err());
    }
}
