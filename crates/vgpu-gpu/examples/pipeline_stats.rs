//! The driver's own statistics of compiled compute kernels: each SPIR-V file
//! named on the command line (as `VGPU_DUMP_SPV=DIR` writes them; a `.wgsl`
//! file is first written as SPIR-V by naga with its default options,
//! `vgpu_gpu::naga_spirv`) made into a
//! Vulkan compute pipeline with `VK_KHR_pipeline_executable_properties`, and
//! what the driver says of it (on NVIDIA: the register count, which sets how
//! many blocks share a multiprocessor; on lavapipe: instruction counts),
//! one JSON object per file on standard output:
//!
//! ```text
//! cargo run --release -p vgpu-gpu --example pipeline_stats -- DIR/*.spv
//! {"file":"cfg_matmul_tiled.spv","executable":"…","stats":{"Register Count":72,…}}
//! ```
//!
//! The pipeline layout is read from the module: every variable with a
//! descriptor set and binding is a storage buffer (storage class
//! `StorageBuffer`) or a uniform buffer (`Uniform`). The device is the first
//! with the extension, with every feature it has enabled (int64, f64,
//! zero-initialised workgroup memory, …), so that any module VGPU writes for
//! it compiles.

use ash::vk;
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::path::Path;

/// SPIR-V's `OpEntryPoint`.
const OP_ENTRY_POINT: u32 = 15;
/// SPIR-V's `OpVariable`.
const OP_VARIABLE: u32 = 59;
/// SPIR-V's `OpDecorate`.
const OP_DECORATE: u32 = 71;
/// The `Binding` decoration.
const DEC_BINDING: u32 = 33;
/// The `DescriptorSet` decoration.
const DEC_DESCRIPTOR_SET: u32 = 34;
/// The `Uniform` storage class.
const SC_UNIFORM: u32 = 2;
/// The `StorageBuffer` storage class.
const SC_STORAGE_BUFFER: u32 = 12;

/// A module's entry point and its resources: (set, binding) -> descriptor type.
#[derive(Debug)]
struct Interface {
    entry: String,
    bindings: BTreeMap<(u32, u32), vk::DescriptorType>,
}

/// The entry point and descriptor bindings of the SPIR-V module `words`.
fn interface(words: &[u32]) -> Result<Interface, String> {
    if words.len() < 5 || words[0] != 0x0723_0203 {
        return Err("not a SPIR-V module (magic number)".into());
    }
    let mut entry = None;
    let mut set = BTreeMap::new();
    let mut binding = BTreeMap::new();
    let mut class = BTreeMap::new();
    let mut i = 5;
    while i < words.len() {
        let (op, n) = (words[i] & 0xffff, (words[i] >> 16) as usize);
        if n == 0 || i + n > words.len() {
            return Err(format!("instruction at word {i} runs past the module"));
        }
        let w = &words[i..i + n];
        match op {
            OP_ENTRY_POINT if entry.is_none() && n > 3 => {
                let bytes: Vec<u8> = w[3..].iter().flat_map(|x| x.to_le_bytes()).collect();
                let name = CStr::from_bytes_until_nul(&bytes)
                    .map_err(|_| "entry point name without its nul".to_string())?;
                entry = Some(name.to_string_lossy().into_owned());
            }
            OP_DECORATE if n >= 4 && w[2] == DEC_DESCRIPTOR_SET => {
                set.insert(w[1], w[3]);
            }
            OP_DECORATE if n >= 4 && w[2] == DEC_BINDING => {
                binding.insert(w[1], w[3]);
            }
            OP_VARIABLE if n >= 4 => {
                class.insert(w[2], w[3]);
            }
            _ => {}
        }
        i += n;
    }
    let mut bindings = BTreeMap::new();
    for (id, &b) in &binding {
        let s = set.get(id).copied().unwrap_or(0);
        let ty = match class.get(id) {
            Some(&SC_STORAGE_BUFFER) => vk::DescriptorType::STORAGE_BUFFER,
            Some(&SC_UNIFORM) => vk::DescriptorType::UNIFORM_BUFFER,
            other => {
                return Err(format!(
                    "binding {s}.{b}: storage class {other:?} not handled"
                ))
            }
        };
        bindings.insert((s, b), ty);
    }
    let entry = entry.ok_or("no entry point")?;
    Ok(Interface { entry, bindings })
}

/// One executable of a pipeline: its name and its statistics as (name,
/// value as a JSON literal).
type Executable = (String, Vec<(String, String)>);

/// A Vulkan device with pipeline executable statistics.
struct Gpu {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    exec: ash::khr::pipeline_executable_properties::Device,
    name: String,
}

impl Gpu {
    /// The first device with `VK_KHR_pipeline_executable_properties`, every
    /// feature it has enabled.
    fn open() -> Result<Gpu, String> {
        let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("Vulkan loader: {e}"))?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let instance = unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
        }
        .map_err(|e| format!("vkCreateInstance: {e}"))?;
        let wanted = ash::khr::pipeline_executable_properties::NAME;
        let pdevs = unsafe { instance.enumerate_physical_devices() }.map_err(|e| e.to_string())?;
        for pd in pdevs {
            let exts = unsafe { instance.enumerate_device_extension_properties(pd) }
                .map_err(|e| e.to_string())?;
            if !exts
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(wanted))
            {
                continue;
            }
            let props = unsafe { instance.get_physical_device_properties(pd) };
            let name = props
                .device_name_as_c_str()
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
            let Some(family) = families
                .iter()
                .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            else {
                continue;
            };
            let mut v11 = vk::PhysicalDeviceVulkan11Features::default();
            let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
            let mut v13 = vk::PhysicalDeviceVulkan13Features::default();
            let mut f2 = vk::PhysicalDeviceFeatures2::default()
                .push_next(&mut v11)
                .push_next(&mut v12)
                .push_next(&mut v13);
            unsafe { instance.get_physical_device_features2(pd, &mut f2) };
            let mut pe = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
                .pipeline_executable_info(true);
            let mut f2 = f2.push_next(&mut pe);
            // As wgpu opens the device: robustBufferAccess (among the core
            // features, all enabled) and robustBufferAccess2 where the device
            // has it, which change the code the driver writes for buffers.
            let r2_name = ash::ext::robustness2::NAME;
            let has_r2 = exts
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(r2_name));
            let mut r2 =
                vk::PhysicalDeviceRobustness2FeaturesEXT::default().robust_buffer_access2(true);
            let mut ext_names = vec![wanted.as_ptr()];
            if has_r2 {
                ext_names.push(r2_name.as_ptr());
                f2 = f2.push_next(&mut r2);
            }
            let prio = [1.0f32];
            let queues = [vk::DeviceQueueCreateInfo::default()
                .queue_family_index(family as u32)
                .queue_priorities(&prio)];
            let info = vk::DeviceCreateInfo::default()
                .queue_create_infos(&queues)
                .enabled_extension_names(&ext_names)
                .push_next(&mut f2);
            let device = unsafe { instance.create_device(pd, &info, None) }
                .map_err(|e| format!("vkCreateDevice ({name}): {e}"))?;
            let exec = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
            return Ok(Gpu {
                _entry: entry,
                instance,
                device,
                exec,
                name,
            });
        }
        Err(format!("no Vulkan device has {}", wanted.to_string_lossy()))
    }

    /// The statistics of each executable of a compute pipeline made of `words`:
    /// (executable name, [(statistic, value)]).
    fn stats(&self, words: &[u32]) -> Result<Vec<Executable>, String> {
        let itf = interface(words)?;
        let d = &self.device;
        let mut sets: BTreeMap<u32, Vec<vk::DescriptorSetLayoutBinding>> = BTreeMap::new();
        for (&(s, b), &ty) in &itf.bindings {
            sets.entry(s).or_default().push(
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(ty)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE),
            );
        }
        let nsets = sets.keys().next_back().map_or(0, |s| s + 1);
        let mut layouts = Vec::new();
        for s in 0..nsets {
            let b = sets.remove(&s).unwrap_or_default();
            let l = unsafe {
                d.create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&b),
                    None,
                )
            }
            .map_err(|e| e.to_string())?;
            layouts.push(l);
        }
        let result = (|| {
            let layout = unsafe {
                d.create_pipeline_layout(
                    &vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts),
                    None,
                )
            }
            .map_err(|e| e.to_string())?;
            let module = unsafe {
                d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(words), None)
            }
            .map_err(|e| format!("vkCreateShaderModule: {e}"));
            let module = match module {
                Ok(m) => m,
                Err(e) => {
                    unsafe { d.destroy_pipeline_layout(layout, None) };
                    return Err(e);
                }
            };
            let name = std::ffi::CString::new(itf.entry.clone()).map_err(|e| e.to_string())?;
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(&name);
            let info = vk::ComputePipelineCreateInfo::default()
                .stage(stage)
                .layout(layout)
                .flags(vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR);
            let pipeline =
                unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) }
                    .map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"));
            unsafe { d.destroy_shader_module(module, None) };
            let pipeline = match pipeline {
                Ok(p) => p[0],
                Err(e) => {
                    unsafe { d.destroy_pipeline_layout(layout, None) };
                    return Err(e);
                }
            };
            let out = self.read(pipeline);
            unsafe {
                d.destroy_pipeline(pipeline, None);
                d.destroy_pipeline_layout(layout, None);
            }
            out
        })();
        for l in layouts {
            unsafe { d.destroy_descriptor_set_layout(l, None) };
        }
        result
    }

    /// The statistics of `pipeline`'s executables.
    fn read(&self, pipeline: vk::Pipeline) -> Result<Vec<Executable>, String> {
        let execs = unsafe {
            self.exec.get_pipeline_executable_properties(
                &vk::PipelineInfoKHR::default().pipeline(pipeline),
            )
        }
        .map_err(|e| format!("vkGetPipelineExecutablePropertiesKHR: {e}"))?;
        let mut out = Vec::new();
        for (i, p) in execs.iter().enumerate() {
            let info = vk::PipelineExecutableInfoKHR::default()
                .pipeline(pipeline)
                .executable_index(i as u32);
            let stats = unsafe { self.exec.get_pipeline_executable_statistics(&info) }
                .map_err(|e| format!("vkGetPipelineExecutableStatisticsKHR: {e}"))?;
            let mut kv = Vec::new();
            for s in &stats {
                let name = s
                    .name_as_c_str()
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // The value as a JSON literal (null for a format not
                // known, or a float JSON cannot hold).
                let v = unsafe {
                    match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => {
                            (s.value.b32 != 0).to_string()
                        }
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::FLOAT64
                            if s.value.f64.is_finite() =>
                        {
                            s.value.f64.to_string()
                        }
                        _ => "null".to_string(),
                    }
                };
                kv.push((name, v));
            }
            let pname = p
                .name_as_c_str()
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((pname, kv));
        }
        Ok(out)
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// `s` as a JSON string.
fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn main() -> std::process::ExitCode {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: pipeline_stats FILE.spv...");
        return std::process::ExitCode::from(2);
    }
    let gpu = match Gpu::open() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("pipeline_stats: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    eprintln!("pipeline_stats: {}", gpu.name);
    let mut failed = false;
    for f in &files {
        let base = Path::new(f)
            .file_name()
            .map_or(f.clone(), |n| n.to_string_lossy().into_owned());
        let words = match std::fs::read(f) {
            Ok(b) if f.ends_with(".wgsl") => {
                match vgpu_gpu::naga_spirv(&String::from_utf8_lossy(&b)) {
                    Ok(w) => w,
                    Err(e) => {
                        eprintln!("{f}: {e}");
                        failed = true;
                        continue;
                    }
                }
            }
            Ok(b) if b.len() % 4 == 0 => b
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect::<Vec<u32>>(),
            Ok(b) => {
                eprintln!("{f}: {} bytes, not a whole number of words", b.len());
                failed = true;
                continue;
            }
            Err(e) => {
                eprintln!("{f}: {e}");
                failed = true;
                continue;
            }
        };
        match gpu.stats(&words) {
            Ok(execs) => {
                for (name, kv) in execs {
                    let body: Vec<String> = kv
                        .iter()
                        .map(|(k, v)| format!("{}:{v}", json_str(k)))
                        .collect();
                    println!(
                        "{{\"file\":{},\"executable\":{},\"stats\":{{{}}}}}",
                        json_str(&base),
                        json_str(&name),
                        body.join(",")
                    );
                }
            }
            Err(e) => {
                eprintln!("{f}: {e}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// naga's SPIR-V of a WGSL kernel with a storage buffer, a read-only
    /// one in another group and a uniform.
    fn module() -> Vec<u32> {
        let src = "@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(1) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<uniform> u: vec4<u32>;
@compute @workgroup_size(64) fn kern(@builtin(global_invocation_id) g: vec3<u32>) {
  a[g.x] = b[g.x] + u.x;
}";
        vgpu_gpu::naga_spirv(src).unwrap()
    }

    #[test]
    fn the_interface_is_read_from_the_module() {
        let itf = interface(&module()).unwrap();
        assert_eq!(itf.entry, "kern");
        let b: Vec<_> = itf.bindings.into_iter().collect();
        assert_eq!(
            b,
            vec![
                ((0, 0), vk::DescriptorType::STORAGE_BUFFER),
                ((0, 3), vk::DescriptorType::UNIFORM_BUFFER),
                ((1, 2), vk::DescriptorType::STORAGE_BUFFER),
            ]
        );
    }

    #[test]
    fn a_file_that_is_not_spirv_is_refused() {
        assert!(interface(&[1, 2, 3, 4, 5, 6]).is_err());
        assert!(vgpu_gpu::naga_spirv("fn (").is_err());
        let mut m = module();
        m.truncate(m.len() - 1);
        let last = m.len() - 1;
        m[last] = 0x0010_0000 | 59; // an OpVariable running past the end
        assert!(interface(&m).unwrap_err().contains("runs past"));
    }
}
