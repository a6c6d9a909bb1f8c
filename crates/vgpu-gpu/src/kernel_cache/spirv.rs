//! SPIR-V that keeps f32 subnormals: a kernel's WGSL parsed and validated by
//! naga, written as SPIR-V with the options wgpu's Vulkan backend uses for
//! a module with its runtime checks (bounds clamped, loops bounded; workgroup
//! memory zeroed by the driver), then
//! given SPIR-V's float controls: the `DenormPreserve` capability, the
//! `SPV_KHR_float_controls` extension and the `DenormPreserve 32` execution
//! mode on the entry point. Without that mode a Vulkan driver may flush f32
//! subnormals in arithmetic and conversions; NVIDIA's does (on the H100,
//! `add.f32` of two subnormals came out 0 in 2048 of 4096 pairs:
//! `benchmarks/device/f32_subnormal.sh`), where PTX without `.ftz` keeps
//! them.

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

/// `spec`'s WGSL as SPIR-V declaring f32 subnormals kept (module
/// documentation), or naga's message.
pub(super) fn denorm_preserving(ctx: &GpuContext, spec: &KernelSpec) -> Result<Vec<u32>, String> {
    use naga::back::spv;
    let module =
        naga::front::wgsl::parse_str(&spec.wgsl).map_err(|e| e.emit_to_string(&spec.wgsl))?;
    let info =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), ctx.naga_capabilities())
            .validate(&module)
            .map_err(|e| format!("{e:?}"))?;
    let restrict = naga::proc::BoundsCheckPolicy::Restrict;
    let unchecked = naga::proc::BoundsCheckPolicy::Unchecked;
    let checks = spec.runtime_checks;
    let options = spv::Options {
        lang_version: (1, 3),
        flags: spv::WriterFlags::empty(),
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: if checks { restrict } else { unchecked },
            buffer: if checks { restrict } else { unchecked },
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
        force_loop_bounding: checks,
        ..spv::Options::default()
    };
    let pipeline = spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: spec.entry.to_string(),
    };
    let words =
        spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| e.to_string())?;
    add_denorm_preserve(words, &spec.entry)
}

/// `words` with f32 subnormals declared kept for entry point `entry`: the
/// capability after the module's capabilities, the extension after it, and
/// the execution mode after the entry point's first one.
fn add_denorm_preserve(words: Vec<u32>, entry: &str) -> Result<Vec<u32>, String> {
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
    let op = |w: &[u32]| w[0] & 0xffff;
    let name = |w: &[u32]| -> Vec<u8> {
        w.iter()
            .flat_map(|x| x.to_le_bytes())
            .take_while(|&b| b != 0)
            .collect()
    };
    let func = insts
        .iter()
        .find(|w| op(w) == OP_ENTRY_POINT && w.len() > 3 && name(&w[3..]) == entry.as_bytes())
        .map(|w| w[2])
        .ok_or_else(|| format!("no entry point `{entry}` in the SPIR-V"))?;
    let last_cap = insts
        .iter()
        .rposition(|w| op(w) == OP_CAPABILITY)
        .ok_or("no capability in the SPIR-V")?;
    let mode = insts
        .iter()
        .position(|w| op(w) == OP_EXECUTION_MODE && w[1] == func)
        .ok_or_else(|| format!("no execution mode for `{entry}` in the SPIR-V"))?;
    let mut ext = b"SPV_KHR_float_controls".to_vec();
    ext.resize(ext.len() / 4 * 4 + 4, 0);
    let ext_words: Vec<u32> = ext
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut out = words[..5].to_vec();
    for (j, w) in insts.iter().enumerate() {
        out.extend_from_slice(w);
        if j == last_cap {
            out.extend([(2 << 16) | OP_CAPABILITY, CAP_DENORM_PRESERVE]);
            out.push(((1 + ext_words.len() as u32) << 16) | OP_EXTENSION);
            out.extend(&ext_words);
        }
        if j == mode {
            out.extend([
                (4 << 16) | OP_EXECUTION_MODE,
                func,
                MODE_DENORM_PRESERVE,
                32,
            ]);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// naga's SPIR-V for a small compute kernel.
    fn spirv() -> Vec<u32> {
        let src = "@group(0) @binding(0) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(4) fn main(@builtin(global_invocation_id) g: vec3<u32>) { b[g.x] = b[g.x] + 1e-40; }";
        let m = naga::front::wgsl::parse_str(src).unwrap();
        let info = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty(),
        )
        .validate(&m)
        .unwrap();
        naga::back::spv::write_vec(&m, &info, &Default::default(), None).unwrap()
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
    fn the_capability_extension_and_mode_are_added_in_their_sections() {
        let before = spirv();
        let after = add_denorm_preserve(before.clone(), "main").unwrap();
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
    fn a_missing_entry_point_or_a_truncated_module_is_an_error() {
        let w = spirv();
        assert!(add_denorm_preserve(w.clone(), "other")
            .unwrap_err()
            .contains("no entry point `other`"));
        let mut cut = w.clone();
        cut.push((5 << 16) | OP_EXECUTION_MODE);
        assert!(add_denorm_preserve(cut, "main")
            .unwrap_err()
            .contains("malformed"));
        assert!(add_denorm_preserve(vec![0; 3], "main").is_err());
    }
}
