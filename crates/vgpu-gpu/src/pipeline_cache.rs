//! The on-disk pipeline cache: compiled pipelines kept between processes, so that
//! a second run of the same kernel on the same adapter and driver skips the
//! driver's compilation (issue 16 item 3).
//!
//! Where the adapter has [`wgpu::Features::PIPELINE_CACHE`] (Vulkan), the shared
//! device ([`crate::GpuContext`]) opens one [`wgpu::PipelineCache`] per process,
//! seeded from a file, passes it to every pipeline it creates, and writes the
//! cache's data back when a [`crate::KernelCache`] that compiled something is
//! dropped (or on [`crate::GpuContext::save_pipeline_cache`]). The file lives in
//! `$VGPU_PIPELINE_CACHE` (a directory), else `$XDG_CACHE_HOME/vgpu`, else
//! `$HOME/.cache/vgpu`; `VGPU_PIPELINE_CACHE=off` (or `0`, or empty) switches it
//! off. Its name is wgpu's key for the adapter (vendor and device ids).
//!
//! The cache is an optimisation and never fails a run: a missing, unreadable,
//! truncated or corrupted file starts an empty cache, and a write that fails is
//! recorded ([`PipelineCacheInfo::save_error`]) and otherwise ignored. The data
//! is framed (magic, length, hash of the bytes) so that a damaged file is
//! discarded before it reaches the driver; wgpu then checks its own header
//! (backend, adapter, driver version) and the driver checks its own.

use crate::hash::hash_parts;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The environment variable naming the cache's directory (or `off`).
pub const PIPELINE_CACHE_ENV: &str = "VGPU_PIPELINE_CACHE";

/// The first bytes of a cache file: the format's name and version.
const MAGIC: &[u8; 8] = b"VGPUPC01";
/// Magic, payload length (u64 LE), payload hash (u64 LE).
const FRAME_HEADER: usize = 24;

/// What the process's pipeline cache is doing, for reports (`--json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineCacheInfo {
    /// The cache file.
    pub path: PathBuf,
    /// Bytes of cached pipelines loaded from the file when the device was
    /// created (0: no usable file, a cold start).
    pub loaded_bytes: usize,
    /// Bytes written by the last save in this process (0: nothing saved yet).
    pub saved_bytes: usize,
    /// Why the last save failed, if it did.
    pub save_error: Option<String>,
}

/// The process's pipeline cache and the file behind it.
pub(crate) struct DiskPipelineCache {
    cache: wgpu::PipelineCache,
    /// A pipeline was compiled since the last save.
    dirty: AtomicBool,
    state: Mutex<PipelineCacheInfo>,
}

/// The directory the cache lives in, from the environment; `None` when switched off
/// or when no home or cache directory is known.
fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os(PIPELINE_CACHE_ENV) {
        Some(v) => {
            let s = v.to_string_lossy();
            if s.is_empty() || s == "off" || s == "0" {
                None
            } else {
                Some(PathBuf::from(v))
            }
        }
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(|d| PathBuf::from(d).join("vgpu"))
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|d| !d.is_empty())
                    .map(|h| PathBuf::from(h).join(".cache").join("vgpu"))
            }),
    }
}

/// `payload` framed for the file.
fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(FRAME_HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&hash_parts(&[payload]).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of a framed file, or `None` when the file is not one whole,
/// undamaged frame.
fn unframe(bytes: &[u8]) -> Option<&[u8]> {
    let (header, payload) = bytes.split_at_checked(FRAME_HEADER)?;
    if &header[..8] != MAGIC {
        return None;
    }
    let len = u64::from_le_bytes(header[8..16].try_into().ok()?);
    let hash = u64::from_le_bytes(header[16..24].try_into().ok()?);
    (len == payload.len() as u64 && hash == hash_parts(&[payload])).then_some(payload)
}

/// Writes `bytes` to `path` whole or not at all (a temporary file beside it, then
/// a rename), creating the directory.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

impl DiskPipelineCache {
    /// Opens the cache for `device` on the adapter `info`, or `None` when the
    /// device lacks [`wgpu::Features::PIPELINE_CACHE`], wgpu has no cache key for
    /// the backend, or the cache is switched off.
    pub(crate) fn open(
        device: &wgpu::Device,
        info: &wgpu::AdapterInfo,
        features: wgpu::Features,
    ) -> Option<Self> {
        if !features.contains(wgpu::Features::PIPELINE_CACHE) {
            return None;
        }
        let key = wgpu::util::pipeline_cache_key(info)?;
        let path = cache_dir()?.join(format!("{key}.bin"));
        let file = std::fs::read(&path).ok();
        let data = file.as_deref().and_then(unframe);
        // SAFETY: `data` is the payload of a frame this module wrote from
        // `PipelineCache::get_data` (magic, length and hash checked above, so a
        // truncated or damaged file never gets here); wgpu validates its own
        // header (backend, adapter, driver validation key, size) and, with
        // `fallback`, starts empty when the data does not fit this device.
        let cache = unsafe {
            device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: Some("vgpu pipeline cache"),
                data,
                fallback: true,
            })
        };
        Some(DiskPipelineCache {
            cache,
            dirty: AtomicBool::new(false),
            state: Mutex::new(PipelineCacheInfo {
                path,
                loaded_bytes: data.map_or(0, <[u8]>::len),
                saved_bytes: 0,
                save_error: None,
            }),
        })
    }

    /// The cache to pass to pipeline creation.
    pub(crate) fn cache(&self) -> &wgpu::PipelineCache {
        &self.cache
    }

    /// Notes that a pipeline was compiled through the cache.
    pub(crate) fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }

    /// Writes the cache's data to its file when a pipeline was compiled since the
    /// last save and the data differs in size from what is there. Never fails:
    /// an error is recorded.
    pub(crate) fn save(&self) {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return;
        }
        let Some(data) = self.cache.get_data() else {
            return;
        };
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let known = if state.saved_bytes > 0 {
            state.saved_bytes
        } else {
            state.loaded_bytes
        };
        if data.len() == known {
            return;
        }
        match write_whole(&state.path, &frame(&data)) {
            Ok(()) => {
                state.saved_bytes = data.len();
                state.save_error = None;
            }
            Err(e) => state.save_error = Some(format!("{}: {e}", state.path.display())),
        }
    }

    /// What the cache is doing now.
    pub(crate) fn info(&self) -> Option<PipelineCacheInfo> {
        self.state.lock().ok().map(|s| s.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_round_trips_and_damage_is_refused() {
        let payload: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let framed = frame(&payload);
        assert_eq!(unframe(&framed), Some(&payload[..]));
        // Truncated, extended, one byte flipped, wrong magic, empty: refused.
        assert_eq!(unframe(&framed[..framed.len() - 1]), None);
        let mut longer = framed.clone();
        longer.push(0);
        assert_eq!(unframe(&longer), None);
        let mut flipped = framed.clone();
        flipped[FRAME_HEADER + 500] ^= 1;
        assert_eq!(unframe(&flipped), None);
        let mut magic = framed.clone();
        magic[0] = b'X';
        assert_eq!(unframe(&magic), None);
        assert_eq!(unframe(&[]), None);
        assert_eq!(unframe(&framed[..10]), None);
        // An empty payload is a valid frame.
        assert_eq!(unframe(&frame(&[])), Some(&[][..]));
    }

    #[test]
    fn a_write_is_whole_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("vgpu-pc-test-{}", std::process::id()));
        let path = dir.join("sub").join("cache.bin");
        write_whole(&path, b"first").unwrap();
        write_whole(&path, b"second, longer").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second, longer");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("cache.bin")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
