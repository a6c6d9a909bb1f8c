//! What a launch is asked for beside its arguments ([`ExecOptions`]: the
//! checker, the watchdog, a trace, parallel blocks, the resource limits, the
//! initcheck) and the steps of the trace it records ([`TraceStep`]).

use crate::limits::Limits;
use crate::types::Ty;

/// Options of a launch.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Run the checker (misaligned access, barrier divergence, shared-memory races
    /// and uninitialised reads). Out-of-bounds accesses and the watchdog are
    /// always errors: there is no memory past an allocation.
    pub check: bool,
    /// Watchdog: the most instructions one warp may execute.
    pub watchdog: u64,
    /// Record one thread's trajectory.
    pub trace: Option<TraceTarget>,
    /// Run blocks in parallel on all cores (results are the same either way).
    pub parallel: bool,
    /// Resource limits checked before anything is allocated (threads, memory).
    pub limits: Limits,
    /// The global-memory initcheck (off by default; compute-sanitizer's
    /// `initcheck`): a load, vector load, sub-word load or atomic that reads a
    /// global byte neither the host initialised nor any thread wrote before
    /// is a [`crate::FaultClass::Uninitialized`] fault naming the thread,
    /// block, address, allocation and PTX line. "Before" is the
    /// interpreter's order: with the initcheck on, blocks run one at a time
    /// in linear block order (x fastest), each block's warps in its schedule,
    /// so a read of what an earlier block wrote is not reported. Costs one
    /// shadow bit per byte of global memory.
    pub initcheck: bool,
    /// The buffers (by index) the host allocated but did not write (a
    /// `cudaMalloc` with no copy or memset; a case's buffer without `init`):
    /// with [`ExecOptions::initcheck`] their bytes start uninitialised. Every
    /// other buffer, and the module's variables, start initialised.
    pub uninitialised_buffers: Vec<usize>,
    /// The buffers' names in messages, by index (a case's buffer names);
    /// `buffer i` where absent.
    pub buffer_names: Vec<String>,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            check: true,
            watchdog: DEFAULT_WATCHDOG,
            trace: None,
            parallel: true,
            limits: Limits::default(),
            initcheck: false,
            uninitialised_buffers: Vec::new(),
            buffer_names: Vec::new(),
        }
    }
}

impl ExecOptions {
    /// Buffer `i`'s name in messages: `buffer i (name)`, or `buffer i`
    /// without a name.
    pub fn buffer_name(&self, i: usize) -> String {
        match self.buffer_names.get(i) {
            Some(n) => format!("buffer {i} ({n})"),
            None => format!("buffer {i}"),
        }
    }
}

/// The initcheck's message for a `what` (`read of`, `atomic on`) of global
/// byte `at`, inside the allocation `name` of `len` bytes at `base` where it
/// is known; `by` names the checker (`initcheck`, or the GPU's kernel check).
pub fn uninitialised_global_message(
    what: &str,
    at: u64,
    region: Option<(&str, u64, u64)>,
    by: &str,
) -> String {
    match region {
        Some((name, base, len)) => format!(
            "{what} global byte 0x{at:x} (byte {} of `{name}`, {len} bytes at 0x{base:x}) that neither the host initialised nor any thread wrote before ({by})",
            at - base
        ),
        None => format!(
            "{what} global byte 0x{at:x} that neither the host initialised nor any thread wrote before ({by})"
        ),
    }
}

/// The default watchdog limit: instructions per warp.
pub const DEFAULT_WATCHDOG: u64 = 1 << 26;

/// The thread whose trajectory a trace records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceTarget {
    /// Block index.
    pub block: [u32; 3],
    /// Thread index in the block.
    pub thread: [u32; 3],
}

/// One step of a traced thread: the PTX line it executed and the registers it
/// wrote (name, declared type, new bits).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStep {
    /// 1-based PTX line.
    pub line: u32,
    /// Registers written by this instruction.
    pub writes: Vec<(String, Ty, u64)>,
}
