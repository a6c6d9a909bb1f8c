//! Resource limits of a launch and of the case runner: every size taken from
//! input (grid × block, buffer lengths × element size, shared and local bytes,
//! the per-block result slots of a launch, the length of a file) is computed
//! with overflow-checked arithmetic and compared with an explicit limit
//! **before** anything is allocated. A refusal is a [`PtxError::Limit`] naming
//! the quantity, what it needs, the limit and the option that raises it.
//!
//! Files are read only when they are regular files (never a device or a pipe,
//! which could be read forever), and never past the size their declaration
//! implies.

use std::io::Read;
use std::path::Path;

use crate::error::PtxError;

/// The default of [`Limits::max_threads`]: 2³² threads in one launch.
pub const DEFAULT_MAX_THREADS: u64 = 1 << 32;

/// The largest case.json the case runner reads: 16 MiB.
pub const MAX_CASE_JSON_BYTES: u64 = 16 << 20;

/// The largest `.ptx` file [`crate::Module::from_file`] reads: 256 MiB.
pub const MAX_PTX_FILE_BYTES: u64 = 256 << 20;

/// The deepest nesting the PTX parser accepts, of each kind: braces and
/// parentheses in an operand (`{ {…} }`, `( … )`), `!` before an operand,
/// braces in a variable's initialiser, and `{ }` scopes in a function body.
/// Real PTX nests one or two levels; the parser (recursive for operands and
/// initialisers) and the decoder (a name lookup walks the open scopes) stay
/// small on any stack. Deeper input is a [`PtxError::Parse`] at the opening
/// token naming this limit.
pub const MAX_NESTING: usize = 256;

/// The deepest chain of calls the decoder inlines (`call` of a function
/// that calls another, …; recursion is refused outright): each level is a
/// few stack frames of the decoder. Deeper is a [`PtxError::Unsupported`] at
/// the call naming this limit.
pub const MAX_CALL_DEPTH: usize = 64;

/// The most instructions one decoded kernel may hold, its inlined calls
/// included (a function calling the next one twice, twenty levels deep, is
/// 2²⁰ copies of the last one's body). Checked before each call is inlined;
/// more is a [`PtxError::Unsupported`] at the call naming this limit.
pub const MAX_KERNEL_INSTRUCTIONS: usize = 1 << 20;

/// Limits on what one launch (or one case) may ask of this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of host memory a launch or case may allocate: its buffers, the
    /// copies the launch works on, each worker's shared/local/register scratch
    /// and one result slot per block (`--max-memory`). Default: the memory the
    /// system reports available (`MemAvailable` of `/proc/meminfo`), or
    /// unlimited where the system does not say.
    pub max_memory: u64,
    /// Threads of one launch, grid × block (`--max-threads`); default
    /// [`DEFAULT_MAX_THREADS`].
    pub max_threads: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_memory: available_memory().unwrap_or(u64::MAX),
            max_threads: DEFAULT_MAX_THREADS,
        }
    }
}

pub use vgpu_field::resources::{available_memory, human_bytes};
use vgpu_field::resources::{check_count, MemoryBudget, Refusal};

impl From<Refusal> for PtxError {
    fn from(r: Refusal) -> Self {
        PtxError::Limit {
            quantity: r.quantity,
            need: r.need,
            limit: r.limit,
            flag: r.flag,
        }
    }
}

impl Limits {
    fn budget(&self) -> MemoryBudget {
        MemoryBudget {
            max_bytes: self.max_memory,
            flag: "--max-memory",
        }
    }

    /// `count × size` bytes, overflow-checked, for `what`.
    pub fn bytes(&self, what: &str, count: u64, size: u64) -> Result<u64, PtxError> {
        Ok(self.budget().bytes(what, count, size)?)
    }

    /// Refuses `bytes` of host memory for `what` beyond [`Limits::max_memory`].
    pub fn memory(&self, what: &str, bytes: u64) -> Result<(), PtxError> {
        Ok(self.budget().check(what, bytes)?)
    }

    /// Refuses a launch of more than [`Limits::max_threads`] threads.
    pub fn threads(&self, what: &str, threads: u64) -> Result<(), PtxError> {
        Ok(check_count(
            what,
            threads,
            self.max_threads,
            "threads",
            "--max-threads",
        )?)
    }
}

/// The sum of `parts`, overflow-checked, for `what`.
pub(crate) fn sum(limits: &Limits, what: &str, parts: &[u64]) -> Result<u64, PtxError> {
    Ok(limits.budget().sum(what, parts)?)
}

/// Reads `path` only if it is a regular file of at most `max` bytes (checked
/// on its metadata first, and again while reading, so a file that grows is
/// still read no further than `max + 1` bytes). `what` names the file's role in
/// the error (`case.json`, `buffer `x` init`, …). No error quotes the file's
/// contents.
pub fn read_file_limited(path: &Path, max: u64, what: &str) -> Result<Vec<u8>, PtxError> {
    let ferr = |msg: String| PtxError::Case {
        path: path.display().to_string(),
        msg,
    };
    let meta = std::fs::metadata(path).map_err(|e| ferr(format!("{what}: {e}")))?;
    if !meta.is_file() {
        return Err(ferr(format!(
            "{what}: not a regular file (a device, pipe or folder is not read)"
        )));
    }
    let too_big = |len: String| {
        ferr(format!(
            "{what}: {len}, more than the {} this file may hold",
            human_bytes(max)
        ))
    };
    if meta.len() > max {
        return Err(too_big(human_bytes(meta.len())));
    }
    let f = std::fs::File::open(path).map_err(|e| ferr(format!("{what}: {e}")))?;
    let mut data = Vec::with_capacity(meta.len() as usize);
    f.take(max.saturating_add(1))
        .read_to_end(&mut data)
        .map_err(|e| ferr(format!("{what}: {e}")))?;
    if data.len() as u64 > max {
        return Err(too_big("it grew while being read".into()));
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_and_sums_overflow_into_errors() {
        let l = Limits {
            max_memory: 1 << 30,
            max_threads: 1 << 20,
        };
        assert_eq!(l.bytes("x", 1 << 20, 4).unwrap(), 4 << 20);
        let e = l.bytes("buffer `x`", 1 << 62, 8).unwrap_err().to_string();
        assert!(e.contains("buffer `x`") && e.contains("2^64"), "{e}");
        assert!(sum(&l, "s", &[u64::MAX, 1]).is_err());
        let e = l.memory("buffers", 2 << 30).unwrap_err().to_string();
        assert!(
            e.contains("2.0 GiB") && e.contains("1.0 GiB") && e.contains("--max-memory"),
            "{e}"
        );
        let e = l.threads("grid", 1 << 21).unwrap_err().to_string();
        assert!(
            e.contains("1048576 threads") && e.contains("--max-threads"),
            "{e}"
        );
    }

    #[test]
    fn devices_and_long_files_are_not_read() {
        let e = read_file_limited(Path::new("/dev/zero"), 1 << 20, "buffer")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let dir = std::env::temp_dir().join(format!("vgpu-ptx-limits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("ten.bin");
        std::fs::write(&p, [7u8; 10]).unwrap();
        assert_eq!(read_file_limited(&p, 10, "b").unwrap(), vec![7u8; 10]);
        let e = read_file_limited(&p, 9, "b").unwrap_err().to_string();
        assert!(e.contains("10 B") && e.contains("9 B"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
