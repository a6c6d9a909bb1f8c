//! The state spaces: global memory (shared by all blocks, word-atomic so blocks
//! can run in parallel), shared memory with its checker shadow (race.rs),
//! per-thread local memory, and the generic address windows.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::ast::Space;
use crate::error::FaultClass;
pub(crate) use crate::error::MemFault;
use crate::race::Shadow;

/// Where module `.global`/`.const` variables are placed.
pub(crate) const GLOBAL_VAR_BASE: u64 = 0x10_0000;
/// Where launch buffers are placed (each 256-aligned, with a gap after it).
pub(crate) const BUFFER_BASE: u64 = 0x1_0000_0000;
/// Gap between buffers, so an access just past one is out of bounds.
pub(crate) const BUFFER_GAP: u64 = 1 << 20;
/// Generic addresses `[SHARED_WINDOW, +4 GiB)` are shared memory.
pub(crate) const SHARED_WINDOW: u64 = 1 << 44;
/// Generic addresses `[LOCAL_WINDOW, +4 GiB)` are local memory.
pub(crate) const LOCAL_WINDOW: u64 = 2 << 44;

/// The space and space-relative address of a generic address.
pub(crate) fn generic_window(a: u64) -> (Space, u64) {
    if (SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&a) {
        (Space::Shared, a - SHARED_WINDOW)
    } else if (LOCAL_WINDOW..LOCAL_WINDOW + (1 << 32)).contains(&a) {
        (Space::Local, a - LOCAL_WINDOW)
    } else {
        (Space::Global, a)
    }
}

fn fault(class: FaultClass, detail: String) -> MemFault {
    MemFault { class, detail }
}

/// One allocation in global memory.
pub(crate) struct Region {
    pub name: String,
    pub base: u64,
    pub len: u64,
    pub writable: bool,
    /// The kernel's stores may write it: the global race checker logs loads
    /// of it (set by the launch from the kernel's store targets).
    pub tracked: bool,
    words: Box<[AtomicU32]>,
    /// The initcheck's shadow (only when it is on): bit `j % 64` of word
    /// `j / 64` is set once byte `j` holds a value the host or a thread wrote.
    init: Option<Box<[AtomicU64]>>,
}

impl Region {
    pub(crate) fn new(name: String, base: u64, bytes: &[u8], writable: bool) -> Region {
        let n = bytes.len().div_ceil(4);
        let words: Box<[AtomicU32]> = (0..n)
            .map(|i| {
                let mut w = [0u8; 4];
                let end = (4 * i + 4).min(bytes.len());
                w[..end - 4 * i].copy_from_slice(&bytes[4 * i..end]);
                AtomicU32::new(u32::from_le_bytes(w))
            })
            .collect();
        Region {
            name,
            base,
            len: bytes.len() as u64,
            writable,
            tracked: false,
            words,
            init: None,
        }
    }

    /// Turns the initcheck on for this allocation: every byte starts
    /// initialised (`host_wrote`) or not.
    pub(crate) fn track_init(&mut self, host_wrote: bool) {
        let fill = if host_wrote { u64::MAX } else { 0 };
        self.init = Some(
            (0..self.len.div_ceil(64))
                .map(|_| AtomicU64::new(fill))
                .collect(),
        );
    }

    /// With the initcheck on: the first of the bytes `[off, off + size)`
    /// that nothing has written, if any.
    #[inline]
    fn first_uninitialised(&self, off: u64, size: u8) -> Option<u64> {
        let bits = self.init.as_ref()?;
        (off..off + size as u64)
            .find(|&j| bits[(j / 64) as usize].load(Relaxed) >> (j % 64) & 1 == 0)
    }

    /// With the initcheck on: marks the bytes `[off, off + size)` written.
    #[inline]
    fn mark_initialised(&self, off: u64, size: u8) {
        if let Some(bits) = &self.init {
            for j in off..off + size as u64 {
                bits[(j / 64) as usize].fetch_or(1 << (j % 64), Relaxed);
            }
        }
    }

    /// The initcheck's report of a read of byte `off` of this allocation.
    fn uninitialised(&self, off: u64, what: &str) -> MemFault {
        fault(
            FaultClass::Uninitialized,
            crate::exec_options::uninitialised_global_message(
                what,
                self.base + off,
                Some((&self.name, self.base, self.len)),
                "initcheck",
            ),
        )
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out: Vec<u8> = self
            .words
            .iter()
            .flat_map(|w| w.load(Relaxed).to_le_bytes())
            .collect();
        out.truncate(self.len as usize);
        out
    }

    #[inline(always)]
    pub(crate) fn load_at(&self, off: u64, size: u8) -> u64 {
        let o = off as usize;
        match size {
            4 if o % 4 == 0 => self.words[o / 4].load(Relaxed) as u64,
            8 if o % 4 == 0 => {
                self.words[o / 4].load(Relaxed) as u64
                    | ((self.words[o / 4 + 1].load(Relaxed) as u64) << 32)
            }
            _ => {
                let mut v = 0u64;
                for i in 0..size as usize {
                    let b = o + i;
                    let w = self.words[b / 4].load(Relaxed);
                    v |= (((w >> (8 * (b % 4))) & 0xff) as u64) << (8 * i);
                }
                v
            }
        }
    }

    #[inline(always)]
    pub(crate) fn store_at(&self, off: u64, size: u8, v: u64) {
        let o = off as usize;
        match size {
            4 if o % 4 == 0 => self.words[o / 4].store(v as u32, Relaxed),
            8 if o % 4 == 0 => {
                self.words[o / 4].store(v as u32, Relaxed);
                self.words[o / 4 + 1].store((v >> 32) as u32, Relaxed);
            }
            _ => {
                for i in 0..size as usize {
                    let b = o + i;
                    let sh = 8 * (b % 4);
                    let byte = ((v >> (8 * i)) & 0xff) as u32;
                    self.words[b / 4].fetch_and(!(0xff << sh), Relaxed);
                    self.words[b / 4].fetch_or(byte << sh, Relaxed);
                }
            }
        }
    }
}

/// Global memory: the launch's buffers and the module's variables.
pub(crate) struct GlobalMem {
    pub regions: Vec<Region>,
}

impl GlobalMem {
    #[inline]
    fn find(&self, addr: u64, size: u8, write: bool) -> Result<(&Region, u64), MemFault> {
        for r in &self.regions {
            if addr >= r.base && addr < r.base + r.len.max(1) {
                let off = addr - r.base;
                if off + size as u64 > r.len {
                    return Err(fault(
                        FaultClass::OutOfBounds,
                        format!(
                            "global {}-byte access at 0x{addr:x} runs past the end of `{}` (byte {off} of {})",
                            size, r.name, r.len
                        ),
                    ));
                }
                if write && !r.writable {
                    return Err(fault(
                        FaultClass::OutOfBounds,
                        format!("write to read-only `{}` at 0x{addr:x}", r.name),
                    ));
                }
                return Ok((r, off));
            }
        }
        let near = self
            .regions
            .iter()
            .map(|r| {
                let d = if addr < r.base {
                    r.base - addr
                } else {
                    addr - (r.base + r.len)
                };
                (d, r)
            })
            .min_by_key(|(d, _)| *d);
        let hint = match near {
            Some((d, r)) if addr >= r.base + r.len => {
                format!(
                    " ({d} bytes past the end of `{}`, {} bytes at 0x{:x})",
                    r.name, r.len, r.base
                )
            }
            Some((d, r)) => format!(" ({d} bytes before `{}` at 0x{:x})", r.name, r.base),
            None => String::new(),
        };
        Err(fault(
            FaultClass::OutOfBounds,
            format!("global {size}-byte access at 0x{addr:x} is in no allocation{hint}"),
        ))
    }

    /// The allocation holding every access `[addrs[l], addrs[l] + size)` of the
    /// lanes `l` of `em` (a writable one for a store), when all are naturally
    /// aligned and below the generic windows; `None` sends the caller to the
    /// checked per-lane path, which names the fault. On success `addrs` holds,
    /// in each lane outside `em`, the first active lane's address (so a loop over
    /// all 32 lanes stays inside the allocation).
    #[inline(always)]
    fn span(&self, addrs: &mut [u64; 32], em: u32, size: u8, write: bool) -> Option<&Region> {
        if em == 0 {
            return None;
        }
        if em != u32::MAX {
            let a0 = addrs[em.trailing_zeros() as usize];
            for (l, a) in addrs.iter_mut().enumerate() {
                if em & (1 << l) == 0 {
                    *a = a0;
                }
            }
        }
        let a0 = addrs[em.trailing_zeros() as usize];
        let r = self
            .regions
            .iter()
            .find(|r| a0 >= r.base && a0 - r.base < r.len)?;
        // The last offset a `size`-byte access may start at.
        let last = r.len.checked_sub(size as u64)?;
        let (mut bits, mut out) = (0u64, false);
        for &a in addrs.iter() {
            bits |= a;
            out |= a.wrapping_sub(r.base) > last;
        }
        // Sizes are powers of two; a region lies below the generic windows.
        // With the initcheck on, loads take the per-lane path, which checks
        // and names each lane's bytes.
        if bits & (size as u64 - 1) != 0
            || out
            || (write && !r.writable)
            || (!write && r.init.is_some())
        {
            return None;
        }
        Some(r)
    }

    /// Loads `size` bytes at `addrs[l]` into `out[l]` for the lanes of `em`, when
    /// [`GlobalMem::span`] finds their allocation (then every lane of `out` is
    /// written, those outside `em` with the first active lane's value), and
    /// returns it; `None` (nothing loaded) if not.
    #[inline(always)]
    pub(crate) fn load_warp(
        &self,
        addrs: &mut [u64; 32],
        em: u32,
        size: u8,
        out: &mut [u64; 32],
    ) -> Option<&Region> {
        let r = self.span(addrs, em, size, false)?;
        // The words and the base in locals: the atomic loads would otherwise
        // make the loop reload them from the region for every lane.
        let w: &[AtomicU32] = &r.words;
        let base = r.base;
        match size {
            4 => {
                for (o, &a) in out.iter_mut().zip(addrs.iter()) {
                    *o = w[((a - base) >> 2) as usize].load(Relaxed) as u64;
                }
            }
            8 => {
                for (o, &a) in out.iter_mut().zip(addrs.iter()) {
                    let i = ((a - base) >> 2) as usize;
                    *o = w[i].load(Relaxed) as u64 | ((w[i + 1].load(Relaxed) as u64) << 32);
                }
            }
            _ => {
                for (o, &a) in out.iter_mut().zip(addrs.iter()) {
                    *o = r.load_at(a - r.base, size);
                }
            }
        }
        Some(r)
    }

    /// Stores the low `size` bytes of `vals[l]` at `addrs[l]` for the lanes of
    /// `em`, when [`GlobalMem::span`] finds their allocation, and returns it;
    /// `None` (nothing stored) if not.
    #[inline(always)]
    pub(crate) fn store_warp(
        &self,
        addrs: &mut [u64; 32],
        em: u32,
        size: u8,
        vals: &[u64; 32],
    ) -> Option<&Region> {
        let r = self.span(addrs, em, size, true)?;
        if r.init.is_some() {
            for (l, &a) in addrs.iter().enumerate() {
                if em & (1 << l) != 0 {
                    r.mark_initialised(a - r.base, size);
                }
            }
        }
        if em == u32::MAX && size == 4 {
            let (w, base): (&[AtomicU32], u64) = (&r.words, r.base);
            for (&v, &a) in vals.iter().zip(addrs.iter()) {
                w[((a - base) >> 2) as usize].store(v as u32, Relaxed);
            }
            return Some(r);
        }
        for (l, (&v, &a)) in vals.iter().zip(addrs.iter()).enumerate() {
            if em & (1 << l) != 0 {
                r.store_at(a - r.base, size, v);
            }
        }
        Some(r)
    }

    /// Whether the allocation holding `addr` is tracked by the race checker.
    pub(crate) fn tracked(&self, addr: u64) -> bool {
        self.regions
            .iter()
            .any(|r| r.tracked && addr >= r.base && addr - r.base < r.len)
    }

    /// A load the program uses: with the initcheck on, its bytes must have
    /// been written (by the host or a thread).
    #[inline]
    pub(crate) fn load(&self, addr: u64, size: u8) -> Result<u64, MemFault> {
        let (r, off) = self.find(addr, size, false)?;
        if let Some(j) = r.first_uninitialised(off, size) {
            return Err(r.uninitialised(j, "read of"));
        }
        Ok(r.load_at(off, size))
    }

    /// A load of bytes the program does not use: bounds only.
    #[inline]
    pub(crate) fn load_raw(&self, addr: u64, size: u8) -> Result<u64, MemFault> {
        let (r, off) = self.find(addr, size, false)?;
        Ok(r.load_at(off, size))
    }

    #[inline]
    pub(crate) fn store(&self, addr: u64, size: u8, v: u64) -> Result<(), MemFault> {
        let (r, off) = self.find(addr, size, true)?;
        r.store_at(off, size, v);
        r.mark_initialised(off, size);
        Ok(())
    }

    /// An atomic whose old value is applied after the launch (flux): bounds
    /// now, and with the initcheck on, its bytes must have been written
    /// before (the atomic reads them); they count as written from here on.
    pub(crate) fn flux_target(&self, addr: u64, size: u8) -> Result<(), MemFault> {
        let (r, off) = self.find(addr, size, false)?;
        if let Some(j) = r.first_uninitialised(off, size) {
            return Err(r.uninitialised(j, "atomic on"));
        }
        r.mark_initialised(off, size);
        Ok(())
    }

    /// Read-modify-write. VGPU never runs two global atomics at once (flux is
    /// applied after the launch; kernels that read an atomic's old value run
    /// their blocks one at a time), so this load-then-store is atomic.
    pub(crate) fn rmw(&self, addr: u64, size: u8, f: &dyn Fn(u64) -> u64) -> Result<u64, MemFault> {
        let (r, off) = self.find(addr, size, true)?;
        if let Some(j) = r.first_uninitialised(off, size) {
            return Err(r.uninitialised(j, "atomic on"));
        }
        let old = r.load_at(off, size);
        r.store_at(off, size, f(old));
        Ok(old)
    }
}

/// Checks natural alignment.
#[inline]
pub(crate) fn check_align(space: &str, addr: u64, align: u64) -> Result<(), MemFault> {
    if addr % align != 0 {
        return Err(fault(
            FaultClass::Misaligned,
            format!("{space} access of {align} bytes at 0x{addr:x} is not {align}-byte aligned"),
        ));
    }
    Ok(())
}

/// A block's shared memory.
pub(crate) struct SharedMem {
    /// The kernel's bytes, the padding to the reserved region, and the
    /// reserved region's usable bytes (`crate::special::reserved_region`).
    pub data: Vec<u8>,
    pub shadow: Option<Shadow>,
    /// The kernel's own bytes (static plus dynamic).
    user: u64,
    /// Where the reserved region begins (`%reserved_smem_offset_begin`).
    reserved: u64,
}

impl SharedMem {
    /// A block's shared memory: `user` bytes of the kernel's, then the region
    /// reserved for system software, for a block of `nwarps` warps; `check`:
    /// with the checker's shadow.
    pub(crate) fn new(user: usize, check: bool, nwarps: usize) -> SharedMem {
        let (begin, end, _) = crate::special::reserved_region(user as u64);
        let mut m = SharedMem {
            data: vec![0; end as usize],
            shadow: check.then(|| Shadow::new(end as usize, nwarps)),
            user: user as u64,
            reserved: begin,
        };
        m.reset();
        m
    }

    /// Resets for the next block (same size). The reserved region starts
    /// zeroed and initialised (system software's memory, not the kernel's).
    pub(crate) fn reset(&mut self) {
        self.data.fill(0);
        if let Some(s) = &mut self.shadow {
            s.reset();
            s.mark_initialised(self.reserved as usize..self.data.len());
        }
    }

    #[inline]
    fn bounds(&self, addr: u64, size: u8) -> Result<usize, MemFault> {
        match addr.checked_add(size as u64) {
            Some(e) if e <= self.user => Ok(addr as usize),
            Some(e) if addr >= self.reserved && e <= self.data.len() as u64 => Ok(addr as usize),
            _ => Err(fault(
                FaultClass::OutOfBounds,
                format!(
                    "shared {size}-byte access at 0x{addr:x}, the block has {} bytes of shared memory (and the {} bytes reserved for system software at 0x{:x})",
                    self.user,
                    self.data.len() as u64 - self.reserved,
                    self.reserved
                ),
            )),
        }
    }

    /// A load by thread `tid` (its linear index in the block) at PTX `line`;
    /// `who` formats a thread index for the checker's messages.
    #[inline]
    pub(crate) fn load(
        &mut self,
        addr: u64,
        size: u8,
        tid: u32,
        line: u32,
        who: &dyn Fn(u32) -> String,
    ) -> Result<u64, MemFault> {
        let a = self.bounds(addr, size)?;
        if let Some(s) = &mut self.shadow {
            for b in a..a + size as usize {
                s.read(b, tid, line, who)?;
            }
        }
        let mut v = 0u64;
        for i in 0..size as usize {
            v |= (self.data[a + i] as u64) << (8 * i);
        }
        Ok(v)
    }

    /// A load the checker does not see (bytes the program does not use).
    pub(crate) fn load_raw(&self, addr: u64, size: u8) -> Result<u64, MemFault> {
        let a = self.bounds(addr, size)?;
        let mut v = 0u64;
        for i in 0..size as usize {
            v |= (self.data[a + i] as u64) << (8 * i);
        }
        Ok(v)
    }

    /// A store by thread `tid` at PTX `line`.
    #[inline]
    pub(crate) fn store(
        &mut self,
        addr: u64,
        size: u8,
        v: u64,
        tid: u32,
        line: u32,
        who: &dyn Fn(u32) -> String,
    ) -> Result<(), MemFault> {
        let a = self.bounds(addr, size)?;
        if let Some(s) = &mut self.shadow {
            for (i, b) in (a..a + size as usize).enumerate() {
                let same = self.data[b] == (v >> (8 * i)) as u8;
                s.write_value(b, tid, line, who, same)?;
            }
        }
        for i in 0..size as usize {
            self.data[a + i] = (v >> (8 * i)) as u8;
        }
        Ok(())
    }

    /// An atomic: must be initialised; not a race with other atomics.
    pub(crate) fn rmw(
        &mut self,
        addr: u64,
        size: u8,
        tid: u32,
        line: u32,
        f: &dyn Fn(u64) -> u64,
    ) -> Result<u64, MemFault> {
        let a = self.bounds(addr, size)?;
        if let Some(s) = &mut self.shadow {
            for b in a..a + size as usize {
                s.atomic(b, tid, line)?;
            }
        }
        let mut old = 0u64;
        for i in 0..size as usize {
            old |= (self.data[a + i] as u64) << (8 * i);
        }
        let new = f(old);
        for i in 0..size as usize {
            self.data[a + i] = (new >> (8 * i)) as u8;
        }
        Ok(old)
    }
}

/// Bounds check for a thread's local memory.
#[inline]
pub(crate) fn local_range(addr: u64, size: u8, local_bytes: u32) -> Result<usize, MemFault> {
    if addr
        .checked_add(size as u64)
        .is_none_or(|e| e > local_bytes as u64)
    {
        return Err(fault(
            FaultClass::OutOfBounds,
            format!("local {size}-byte access at 0x{addr:x}, the thread has {local_bytes} bytes of local memory"),
        ));
    }
    Ok(addr as usize)
}
