//! The executor's memory instructions: `ld`, `st` and `atom`/`red` over the
//! lanes of a warp, with address resolution (generic windows, 32-bit shared
//! and local addresses) and the checker's alignment, bounds, race and
//! initialisation checks.

use super::*;

impl BlockRun<'_, '_> {
    /// The space and address in it of an access to `space` at `a`. Shared and
    /// local addresses are 32 bits wide and wrap: nvcc computes `base - 64*tid`
    /// in a 32-bit register and accesses `[%r+68]`, whose 64-bit sum exceeds
    /// 2^32 though the address it means is below it.
    #[inline]
    pub(super) fn resolve(&self, space: Space, a: u64) -> (Space, u64) {
        match space {
            Space::Generic => generic_window(a),
            Space::Const => (Space::Global, a),
            Space::Shared | Space::Local => (space, a & 0xffff_ffff),
            s => (s, a),
        }
    }

    fn load(
        &mut self,
        space: Space,
        a: u64,
        size: u8,
        tid: u32,
        line: u32,
    ) -> Result<u64, MemFault> {
        let check = self.ctx.opts.check;
        let (sp, a) = self.resolve(space, a);
        if check {
            check_align(space_name(sp), a, size as u64)?;
        }
        match sp {
            Space::Global => {
                let v = self.ctx.gmem.load(a, size)?;
                if let Some(g) = &mut self.glog {
                    if self.ctx.gmem.tracked(a) {
                        g.lane_access(false, line, tid, size as u32, a);
                    }
                }
                Ok(v)
            }
            Space::Shared => {
                let ctx = self.ctx;
                self.shared.load(a, size, tid, line, &|t| fmt3(ctx.tid3(t)))
            }
            Space::Local => {
                let lb = self.ctx.k.local_bytes;
                let o = local_range(a, size, lb)? + (tid * lb) as usize;
                let mut v = 0u64;
                for i in 0..size as usize {
                    v |= (self.local[o + i] as u64) << (8 * i);
                }
                Ok(v)
            }
            Space::Param => {
                let p = self.ctx.params;
                if a.checked_add(size as u64)
                    .is_none_or(|e| e > p.len() as u64)
                {
                    return Err(MemFault {
                        class: FaultClass::OutOfBounds,
                        detail: format!(
                            "parameter access at byte {a}, the parameters have {} bytes",
                            p.len()
                        ),
                    });
                }
                let mut v = 0u64;
                for i in 0..size as usize {
                    v |= (p[a as usize + i] as u64) << (8 * i);
                }
                Ok(v)
            }
            Space::Const | Space::Generic => unreachable!("resolved"),
        }
    }

    /// A load of bytes the program does not use (`.pragma "used_bytes_mask"`):
    /// bounds and alignment are checked, but it is no read for the race and
    /// initialisation checks.
    fn load_unused(
        &mut self,
        space: Space,
        a: u64,
        size: u8,
        tid: u32,
        line: u32,
    ) -> Result<u64, MemFault> {
        let (sp, ra) = self.resolve(space, a);
        if self.ctx.opts.check {
            check_align(space_name(sp), ra, size as u64)?;
        }
        match sp {
            Space::Shared => self.shared.load_raw(ra, size),
            Space::Global => self.ctx.gmem.load_raw(ra, size),
            _ => self.load(space, a, size, tid, line),
        }
    }

    fn store(
        &mut self,
        space: Space,
        a: u64,
        size: u8,
        v: u64,
        tid: u32,
        line: u32,
    ) -> Result<(), MemFault> {
        let check = self.ctx.opts.check;
        let (sp, a) = self.resolve(space, a);
        if check {
            check_align(space_name(sp), a, size as u64)?;
        }
        match sp {
            Space::Global => {
                self.ctx.gmem.store(a, size, v)?;
                if let Some(g) = &mut self.glog {
                    g.lane_access(true, line, tid, size as u32, a);
                }
                Ok(())
            }
            Space::Shared => {
                let ctx = self.ctx;
                self.shared
                    .store(a, size, v, tid, line, &|t| fmt3(ctx.tid3(t)))
            }
            Space::Local => {
                let lb = self.ctx.k.local_bytes;
                let o = local_range(a, size, lb)? + (tid * lb) as usize;
                for i in 0..size as usize {
                    self.local[o + i] = (v >> (8 * i)) as u8;
                }
                Ok(())
            }
            _ => Err(MemFault {
                class: FaultClass::OutOfBounds,
                detail: "store to the parameter space".into(),
            }),
        }
    }

    /// Lane `l`'s address; with the checker, a vector access (`vector`: its bytes
    /// in all) must be aligned to its whole size.
    fn lane_addr(
        &self,
        regs: &[u64],
        addr: &Addr,
        l: usize,
        vector: Option<u64>,
        tid: u32,
        line: u32,
    ) -> Result<u64, PtxError> {
        let a = rd(regs, addr.base, l).wrapping_add(addr.off as u64);
        let Some(bytes) = vector.filter(|_| self.ctx.opts.check) else {
            return Ok(a);
        };
        if a % bytes != 0 {
            return Err(self.fault(
                FaultClass::Misaligned,
                tid,
                line,
                format!("vector access of {bytes} bytes at 0x{a:x} is not {bytes}-byte aligned"),
            ));
        }
        Ok(a)
    }

    /// `ld` for the lanes of `em` of the warp whose first thread is `base`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_ld(
        &mut self,
        line: u32,
        space: Space,
        size: u8,
        sign: bool,
        d: &[u32],
        addr: &Addr,
        unused: u32,
        regs: &mut [u64],
        base: u32,
        em: u32,
    ) -> Result<(), PtxError> {
        let n = d.len() as u64;
        let vector = (n > 1).then_some(n * size as u64);
        let mut rest = em;
        if let ([r], Space::Param, Src::Imm(_)) = (d, space, addr.base) {
            // Every lane reads the same parameter: read it once.
            let l = em.trailing_zeros() as usize;
            let tid = base + l as u32;
            let a = rd(regs, addr.base, l).wrapping_add(addr.off as u64);
            let v = self
                .load(space, a, size, tid, line)
                .map_err(|e| self.mem_fault(e, tid, line))?;
            let v = if sign {
                crate::types::sx(v, size as u32 * 8) as u64
            } else {
                v
            };
            if *r != u32::MAX {
                put(regs, *r, &[v; 32], em);
            }
            return Ok(());
        }
        if let ([r], true) = (d, global_like(space)) {
            // Fast path: the warp's scalar accesses inside one allocation. A
            // whole warp's unsigned load goes straight into the destination
            // row (every lane is written; no staging copy).
            let mut addrs = addr_row(regs, addr);
            let direct = em == u32::MAX && !sign && *r != u32::MAX;
            let mut v = [0u64; 32];
            let out = if direct {
                reg_row_mut(regs, *r)
            } else {
                &mut v
            };
            if let Some(reg) = self.ctx.gmem.load_warp(&mut addrs, em, size, out) {
                if let (Some(g), true) = (&mut self.glog, reg.tracked) {
                    g.access(false, line, base, em, size as u32, &addrs);
                }
                if !direct {
                    if sign {
                        for x in v.iter_mut() {
                            *x = crate::types::sx(*x, size as u32 * 8) as u64;
                        }
                    }
                    if *r != u32::MAX {
                        put(regs, *r, &v, em);
                    }
                }
                rest = 0;
            }
        }
        for l in lanes(rest) {
            let tid = base + l as u32;
            let a = self.lane_addr(regs, addr, l, vector, tid, line)?;
            for (i, &r) in d.iter().enumerate() {
                let ai = a.wrapping_add(i as u64 * size as u64);
                let v = if i < 32 && unused & (1 << i) != 0 {
                    self.load_unused(space, ai, size, tid, line)
                } else {
                    self.load(space, ai, size, tid, line)
                }
                .map_err(|e| self.mem_fault(e, tid, line))?;
                if r != u32::MAX {
                    regs[r as usize * 32 + l] = if sign {
                        crate::types::sx(v, size as u32 * 8) as u64
                    } else {
                        v
                    };
                }
            }
        }
        Ok(())
    }

    /// `st` for the lanes of `em`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_st(
        &mut self,
        line: u32,
        space: Space,
        size: u8,
        src: &[Src],
        addr: &Addr,
        regs: &mut [u64],
        base: u32,
        em: u32,
    ) -> Result<(), PtxError> {
        let n = src.len() as u64;
        let vector = (n > 1).then_some(n * size as u64);
        let mut rest = em;
        if let ([v], true) = (src, global_like(space)) {
            // Fast path: the warp's scalar accesses inside one allocation,
            // the values read from the source's row in place.
            let mut addrs = addr_row(regs, addr);
            let imm;
            let vals: &[u64; 32] = match *v {
                Src::Reg(r) => (&regs[r as usize * 32..r as usize * 32 + 32])
                    .try_into()
                    .expect("32 lanes"),
                Src::Imm(x) => {
                    imm = [x; 32];
                    &imm
                }
            };
            if self
                .ctx
                .gmem
                .store_warp(&mut addrs, em, size, vals)
                .is_some()
            {
                if let Some(g) = &mut self.glog {
                    g.access(true, line, base, em, size as u32, &addrs);
                }
                rest = 0;
            }
        }
        for l in lanes(rest) {
            let tid = base + l as u32;
            let a = self.lane_addr(regs, addr, l, vector, tid, line)?;
            for (i, s) in src.iter().enumerate() {
                let v = rd(regs, *s, l);
                self.store(
                    space,
                    a.wrapping_add(i as u64 * size as u64),
                    size,
                    v,
                    tid,
                    line,
                )
                .map_err(|e| self.mem_fault(e, tid, line))?;
            }
        }
        Ok(())
    }

    /// `atom`/`red` for the lanes of `em`, in lane order.
    pub(super) fn exec_atom(
        &mut self,
        pc: u32,
        inst: &Inst,
        regs: &mut [u64],
        base: u32,
        em: u32,
    ) -> Result<(), PtxError> {
        let Op::Atom {
            space,
            size,
            f,
            d,
            addr,
            b,
            c,
            deferred,
            order,
        } = &inst.op
        else {
            return Ok(());
        };
        let line = inst.line;
        if let Some(s) = &mut self.shared.shadow {
            // The lanes' atomics are one warp instruction.
            s.next_instance(*order);
        }
        for l in lanes(em) {
            let tid = base + l as u32;
            let a = rd(regs, addr.base, l).wrapping_add(addr.off as u64);
            let (bv, cv) = (rd(regs, *b, l), rd(regs, *c, l));
            let (sp, ra) = self.resolve(*space, a);
            let res = (|| {
                check_align(space_name(sp), ra, *size as u64)?;
                match sp {
                    Space::Shared => self.shared.rmw(ra, *size, tid, line, &|o| f(o, bv, cv)),
                    Space::Global => {
                        if *deferred {
                            self.ctx.gmem.flux_target(ra, *size)?;
                            let place = FluxPlace {
                                segment: self.interval,
                                step: 0,
                                lane: tid as usize,
                            };
                            let fx = Flux {
                                pc,
                                addr: ra,
                                b: bv,
                                c: cv,
                            };
                            self.flux.push((place, fx));
                            Ok(0)
                        } else {
                            self.ctx.gmem.rmw(ra, *size, &|o| f(o, bv, cv))
                        }
                    }
                    _ => Err(MemFault {
                        class: FaultClass::OutOfBounds,
                        detail: "atomic on local memory".into(),
                    }),
                }
            })();
            let old = res.map_err(|e| self.mem_fault(e, tid, line))?;
            if let Some(d) = d {
                regs[*d as usize * 32 + l] = old;
            }
        }
        Ok(())
    }
}
