//! The WGSL a [`crate::KernelCache`] has emitted for control-flow kernels
//! (compiled PTX), by kernel, options and checks: a launch of a kernel whose
//! WGSL was emitted before with the same options takes it from here instead
//! of running the emitter and its analyses again (value ranges, loop proofs,
//! fma regions: `lorenz_rk4`'s took 40–46 ms per launch on a 2-core host,
//! twice its kernel time on an H100). The kernel itself is the key (compared
//! whole), so a kernel that differs in anything is emitted anew.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use vgpu_ir::cfg::CfgKernel;
use vgpu_ir::error::IrError;
use vgpu_ir::wgsl::cfg::{emit_cfg_kernel, CfgChecks, CfgWgsl, CfgWgslOptions};

/// The most kernels kept; past it the memo starts again empty (kernels are
/// few in a process; each entry holds its kernel and its WGSL).
const MAX_KERNELS: usize = 64;

/// One emitted kernel: what it was emitted from, and its WGSL.
#[derive(Debug)]
struct Entry {
    kernel: CfgKernel,
    opts: CfgWgslOptions,
    checks: CfgChecks,
    wgsl: CfgWgsl,
}

/// Emitted WGSL by (kernel, options, checks) ([module documentation](self)).
#[derive(Debug, Default)]
pub(crate) struct EmittedWgsl {
    /// Entries by the hash of what they were emitted from.
    by_hash: HashMap<u64, Vec<Entry>>,
    /// How many kernels were emitted (not taken from the memo).
    emitted: u64,
}

impl EmittedWgsl {
    /// `k`'s WGSL for `opts` and `checks`: the one emitted before, else
    /// [`emit_cfg_kernel`]'s, kept.
    ///
    /// # Errors
    /// The emitter's ([`emit_cfg_kernel`]); a refused kernel is not kept.
    pub(crate) fn get(
        &mut self,
        k: &CfgKernel,
        opts: &CfgWgslOptions,
        checks: CfgChecks,
    ) -> Result<CfgWgsl, IrError> {
        let mut h = DefaultHasher::new();
        (k, opts, checks).hash(&mut h);
        let key = h.finish();
        let found = self.by_hash.get(&key).and_then(|es| {
            es.iter()
                .find(|e| e.opts == *opts && e.checks == checks && e.kernel == *k)
        });
        if let Some(e) = found {
            return Ok(e.wgsl.clone());
        }
        let wgsl = emit_cfg_kernel(k, opts, checks)?;
        self.emitted += 1;
        if self.by_hash.values().map(Vec::len).sum::<usize>() >= MAX_KERNELS {
            self.by_hash.clear();
        }
        self.by_hash.entry(key).or_default().push(Entry {
            kernel: k.clone(),
            opts: *opts,
            checks,
            wgsl: wgsl.clone(),
        });
        Ok(wgsl)
    }

    /// How many kernels were emitted rather than taken from the memo.
    pub(crate) fn emitted(&self) -> u64 {
        self.emitted
    }
}
