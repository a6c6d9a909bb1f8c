//! The SIMT executor: one block at a time per worker, its threads grouped in
//! 32-lane warps that advance together. Each instruction is applied across the
//! active lanes of a warp in one tight loop (lane-vectorised), as the exact
//! assignment `dst = op(src)` (DESIGN.md: each instruction is a unit-time segment
//! of a piecewise-constant field on the register file, whose exact flow is that
//! assignment).
//!
//! Divergence uses "min-PC" scheduling: a warp runs the lanes at the lowest
//! program counter together; the others wait until the running group reaches
//! them, where they merge again. For the structured control flow nvcc emits this
//! reconverges at the immediate post-dominator, and it is simple and correct.
//! `bar.sync` parks lanes until every thread of the block has arrived (a basin
//! collapse: the block's shared sub-field is exact when the next phase reads it).

use crate::ast::Space;
use crate::error::{Fault, FaultClass, PtxError};
use crate::exec_options::{ExecOptions, TraceStep};
use crate::global_race::GlobalLog;
use crate::memory::*;
use crate::program::*;
use crate::warp_ops::{put, row};
use vgpu_field::{order_block, FluxPlace};

mod memory_access;

const RUN: u8 = 0;
const BAR: u8 = 1;
const EXITED: u8 = 2;
const ABSENT: u8 = 3;

/// An atomic whose old value is never read: flux, applied after the launch in
/// the fixed order of `vgpu_field::flux` (block, barrier interval, thread, the
/// thread's program order; [`order_block`]).
pub(crate) struct Flux {
    pub pc: u32,
    pub addr: u64,
    pub b: u64,
    pub c: u64,
}

/// What one launch shares among its blocks.
pub(crate) struct LaunchCtx<'a> {
    pub k: &'a Kernel,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dyn_shared: u32,
    pub gmem: &'a GlobalMem,
    pub params: &'a [u8],
    pub opts: &'a ExecOptions,
}

/// Reusable per-worker memory (faer's idea: scratch sized once, passed in).
pub(crate) struct Scratch {
    shared: SharedMem,
    local: Vec<u8>,
    warps: Vec<Warp>,
    glog: GlobalLog,
}

impl Scratch {
    pub(crate) fn new(ctx: &LaunchCtx) -> Scratch {
        let nthreads = ctx.block.iter().product::<u32>() as usize;
        let nwarps = nthreads.div_ceil(32);
        let nregs = ctx.k.regs.len().max(1);
        Scratch {
            shared: SharedMem::new(
                (ctx.k.shared_static + ctx.dyn_shared) as usize,
                ctx.opts.check,
                nwarps,
            ),
            local: vec![0; nthreads * ctx.k.local_bytes as usize],
            warps: (0..nwarps)
                .map(|w| Warp {
                    regs: vec![0; nregs * 32],
                    pc: [0; 32],
                    state: [RUN; 32],
                    base: (w * 32) as u32,
                    steps: 0,
                })
                .collect(),
            glog: GlobalLog::default(),
        }
    }
}

struct Warp {
    /// Register `r` of lane `l` is `regs[r * 32 + l]`.
    regs: Vec<u64>,
    pc: [u32; 32],
    state: [u8; 32],
    base: u32,
    steps: u64,
}

/// Results of one block.
pub(crate) struct BlockOut {
    pub thread_instructions: u64,
    /// The block's flux in the fixed order.
    pub flux: Vec<(FluxPlace, Flux)>,
    pub trace: Vec<TraceStep>,
}

#[inline(always)]
fn rd(regs: &[u64], s: Src, l: usize) -> u64 {
    match s {
        Src::Reg(r) => regs[r as usize * 32 + l],
        Src::Imm(v) => v,
    }
}

struct BlockRun<'a, 'b> {
    ctx: &'a LaunchCtx<'a>,
    bid: [u32; 3],
    shared: &'b mut SharedMem,
    local: &'b mut [u8],
    flux: Vec<(FluxPlace, Flux)>,
    /// The barrier interval the block is in (barriers released so far).
    interval: usize,
    trace: Vec<TraceStep>,
    trace_tid: Option<u32>,
    nthreads: u32,
    nwarps: u32,
    thread_instr: u64,
    /// The CPU's vector features, detected once per block.
    simd: crate::warp_ops::Simd,
    /// The global accesses of this barrier interval, when the checker is on
    /// and the kernel stores to global memory (global_race.rs).
    glog: Option<&'b mut GlobalLog>,
}

impl LaunchCtx<'_> {
    pub(crate) fn tid3(&self, t: u32) -> [u32; 3] {
        let [bx, by, _] = self.block;
        [t % bx, (t / bx) % by, t / (bx * by)]
    }
}

/// Runs block `bid`.
pub(crate) fn run_block(
    ctx: &LaunchCtx,
    bid: [u32; 3],
    sc: &mut Scratch,
) -> Result<BlockOut, PtxError> {
    let nthreads = ctx.block.iter().product::<u32>();
    sc.shared.reset();
    sc.local.fill(0);
    sc.glog.reset();
    for w in sc.warps.iter_mut() {
        for &r in &ctx.k.zero_regs {
            w.regs[r as usize * 32..r as usize * 32 + 32].fill(0);
        }
        w.pc = [0; 32];
        w.steps = 0;
        for l in 0..32 {
            w.state[l] = if w.base + (l as u32) < nthreads {
                RUN
            } else {
                ABSENT
            };
        }
    }
    let trace_tid = ctx.opts.trace.as_ref().and_then(|t| {
        (t.block == bid)
            .then(|| t.thread[0] + ctx.block[0] * (t.thread[1] + ctx.block[1] * t.thread[2]))
    });
    let mut run = BlockRun {
        ctx,
        bid,
        shared: &mut sc.shared,
        local: &mut sc.local,
        flux: Vec::new(),
        interval: 0,
        trace: Vec::new(),
        trace_tid,
        nthreads,
        nwarps: sc.warps.len() as u32,
        thread_instr: 0,
        simd: crate::warp_ops::Simd::detect(),
        glog: (ctx.opts.check && ctx.k.store_targets.some).then_some(&mut sc.glog),
    };
    match run.run(&mut sc.warps) {
        Ok(()) => Ok(BlockOut {
            thread_instructions: run.thread_instr,
            flux: {
                order_block(&mut run.flux);
                run.flux
            },
            trace: run.trace,
        }),
        // A global race earlier in the interval came first.
        Err(e) if !is_race(&e) => Err(run.global_races().err().unwrap_or(e)),
        Err(e) => Err(e),
    }
}

fn is_race(e: &PtxError) -> bool {
    matches!(e, PtxError::Fault(f) if f.class == FaultClass::Race)
}

impl BlockRun<'_, '_> {
    /// Runs the block's warps, barrier interval after barrier interval, to the
    /// end.
    fn run(&mut self, warps: &mut [Warp]) -> Result<(), PtxError> {
        let ctx = self.ctx;
        let run = self;
        loop {
            // Round after round until no warp yielded (a warp yields after a
            // strong load, where it may be spinning on another warp's store).
            loop {
                let mut yielded = false;
                for w in warps.iter_mut() {
                    yielded |= run.run_warp(w)?;
                }
                if !yielded {
                    break;
                }
            }
            // Every lane is parked at a barrier or has exited.
            let mut waiting: Option<(u32, u32)> = None; // (tid, pc)
            let mut exited: Option<(u32, u32)> = None;
            for w in warps.iter() {
                for l in 0..32 {
                    let t = w.base + l as u32;
                    match w.state[l] {
                        BAR => {
                            if let Some((t0, pc0)) = waiting {
                                if pc0 != w.pc[l] && ctx.opts.check {
                                    let k = ctx.k;
                                    return Err(run.fault(
                                        FaultClass::Barrier,
                                        t,
                                        k.code[w.pc[l] as usize].line,
                                        format!(
                                            "threads wait at different barriers: this one here, thread {} at PTX line {}",
                                            fmt3(ctx.tid3(t0)),
                                            k.code[pc0 as usize].line
                                        ),
                                    ));
                                }
                            } else {
                                waiting = Some((t, w.pc[l]));
                            }
                        }
                        EXITED if exited.is_none() => exited = Some((t, w.pc[l])),
                        _ => {}
                    }
                }
            }
            let Some((_, bpc)) = waiting else { break };
            if let (Some((t, epc)), true) = (exited, ctx.opts.check) {
                let k = ctx.k;
                return Err(run.fault(
                    FaultClass::Barrier,
                    t,
                    k.code[bpc as usize].line,
                    format!(
                        "bar.sync at PTX line {} is not reached by every thread of the block: this thread exited at PTX line {}",
                        k.code[bpc as usize].line,
                        k.code[epc as usize].line
                    ),
                ));
            }
            if let Op::Bar { red: Some(r) } = &ctx.k.code[bpc as usize].op {
                bar_reduce(r, warps);
            }
            for w in warps.iter_mut() {
                for l in 0..32 {
                    if w.state[l] == BAR {
                        w.state[l] = RUN;
                        w.pc[l] += 1;
                    }
                }
            }
            run.interval += 1;
            run.global_races()?;
            if let Some(p) = run.shared.shadow.as_mut().and_then(|s| s.barrier()) {
                return Err(run.uninitialized(p));
            }
        }
        run.global_races()?;
        if let Some(p) = run.shared.shadow.as_mut().and_then(|s| s.pending.take()) {
            return Err(run.uninitialized(p));
        }
        Ok(())
    }

    /// Checks the global log early when it is full (global_race.rs, bound).
    #[inline]
    fn check_full_log(&mut self) -> Result<(), PtxError> {
        if self.glog.as_ref().is_some_and(|g| g.full()) {
            self.global_races()?;
        }
        Ok(())
    }

    /// Checks the barrier interval's global accesses (global_race.rs) and
    /// starts a new log.
    fn global_races(&mut self) -> Result<(), PtxError> {
        let Some(log) = self.glog.as_mut() else {
            return Ok(());
        };
        let ctx = self.ctx;
        let race = log.check(self.nwarps as usize, &|t| fmt3(ctx.tid3(t)));
        match race {
            Some(r) => Err(self.fault_here(FaultClass::Race, r.tid, r.line, r.detail)),
            None => Ok(()),
        }
    }
}

/// `bar.red`: the reduction over the threads parked at the barrier, written to
/// each of them.
fn bar_reduce(r: &BarRed, warps: &mut [Warp]) {
    let (mut count, mut all, mut any) = (0u64, true, false);
    for w in warps.iter() {
        for l in (0..32).filter(|&l| w.state[l] == BAR) {
            let v = (rd(&w.regs, r.c, l) & 1 == 1) != r.neg;
            count += v as u64;
            all &= v;
            any |= v;
        }
    }
    let res = match r.op {
        BarRedOp::Popc => count,
        BarRedOp::And => all as u64,
        BarRedOp::Or => any as u64,
    };
    for w in warps.iter_mut() {
        for l in (0..32).filter(|&l| w.state[l] == BAR) {
            w.regs[r.d as usize * 32 + l] = res;
        }
    }
}

fn fmt3(t: [u32; 3]) -> String {
    format!("({},{},{})", t[0], t[1], t[2])
}

impl BlockRun<'_, '_> {
    /// A runtime fault of thread `tid` at PTX `line`. A read of shared memory
    /// that nothing wrote, made earlier in this barrier interval, is reported
    /// instead (it came first, and may be the cause) unless this is a race.
    fn fault(&self, class: FaultClass, tid: u32, line: u32, detail: String) -> PtxError {
        if class != FaultClass::Race {
            if let Some(p) = self.shared.shadow.as_ref().and_then(|s| s.pending) {
                return self.uninitialized(p);
            }
        }
        self.fault_here(class, tid, line, detail)
    }

    fn fault_here(&self, class: FaultClass, tid: u32, line: u32, detail: String) -> PtxError {
        PtxError::Fault(Box::new(Fault {
            class,
            entry: self.ctx.k.name.clone(),
            block: self.bid,
            thread: self.ctx.tid3(tid),
            line,
            detail,
        }))
    }

    /// The checker's report of a read of shared memory nothing wrote.
    fn uninitialized(&self, p: crate::race::PendingRead) -> PtxError {
        self.fault_here(
            FaultClass::Uninitialized,
            p.tid,
            p.line,
            format!(
                "read of shared byte 0x{:x} that nothing wrote (nor did any other thread before the next barrier)",
                p.byte
            ),
        )
    }

    fn mem_fault(&self, e: MemFault, tid: u32, line: u32) -> PtxError {
        self.fault(e.class, tid, line, e.detail)
    }

    /// Runs a warp until all its lanes are parked at a barrier or exited
    /// (`Ok(false)`), or until it yields after a strong load (`.volatile`,
    /// `.relaxed`, `.acquire`: `Ok(true)`), so that a warp spinning on a flag
    /// another warp sets lets that warp run (forward progress, as the GPU's
    /// schedulers give; cooperative groups' multi-warp tiles wait that way).
    fn run_warp(&mut self, w: &mut Warp) -> Result<bool, PtxError> {
        let k = self.ctx.k;
        let code = &k.code;
        let limit = self.ctx.opts.watchdog;
        loop {
            // The group: running lanes at the lowest pc.
            let mut pc = u32::MAX;
            for l in 0..32 {
                if w.state[l] == RUN && w.pc[l] < pc {
                    pc = w.pc[l];
                }
            }
            if pc == u32::MAX {
                return Ok(false);
            }
            let mut mask = 0u32;
            let mut next_other = u32::MAX;
            for l in 0..32 {
                if w.state[l] == RUN {
                    if w.pc[l] == pc {
                        mask |= 1 << l;
                    } else if w.pc[l] < next_other {
                        next_other = w.pc[l];
                    }
                }
            }
            // Run the group until it diverges, parks, or reaches another group.
            loop {
                if pc as usize >= code.len() {
                    for l in lanes(mask) {
                        w.state[l] = EXITED;
                        w.pc[l] = code.len().saturating_sub(1) as u32;
                    }
                    break;
                }
                let inst = &code[pc as usize];
                w.steps += 1;
                self.thread_instr += mask.count_ones() as u64;
                if w.steps > limit {
                    let l = mask.trailing_zeros();
                    return Err(self.fault(
                        FaultClass::Watchdog,
                        w.base + l,
                        inst.line,
                        format!("the warp executed more than {limit} instructions (raise the limit with --watchdog)"),
                    ));
                }
                let emask = match inst.guard {
                    None => mask,
                    Some((p, neg)) => mask & pred_mask(&w.regs, p, neg),
                };
                match &inst.op {
                    Op::Bra { target } => {
                        let target = *target;
                        if emask == mask {
                            pc = target;
                        } else if emask == 0 {
                            pc += 1;
                        } else {
                            for l in lanes(mask) {
                                w.pc[l] = if emask & (1 << l) != 0 {
                                    target
                                } else {
                                    pc + 1
                                };
                            }
                            break;
                        }
                        if self.trace_hit(w, emask) {
                            self.record(inst, w, &[]);
                        }
                        if pc >= next_other {
                            for l in lanes(mask) {
                                w.pc[l] = pc;
                            }
                            break;
                        }
                        continue;
                    }
                    Op::Exit | Op::Bar { .. } | Op::Trap if emask != 0 => {
                        if let Op::Trap = inst.op {
                            let l = emask.trailing_zeros();
                            return Err(self.fault(
                                FaultClass::Trap,
                                w.base + l,
                                inst.line,
                                "the kernel executed trap".into(),
                            ));
                        }
                        let st = if let Op::Exit = inst.op { EXITED } else { BAR };
                        for l in lanes(emask) {
                            w.state[l] = st;
                            w.pc[l] = pc;
                        }
                        if self.trace_hit(w, emask) {
                            self.record(inst, w, &[]);
                        }
                        mask &= !emask;
                        pc += 1;
                        if mask == 0 {
                            break;
                        }
                    }
                    _ => {
                        if emask != 0 {
                            // The typed warp operations (most instructions)
                            // go straight to their loop, not through `exec`'s
                            // large frame.
                            if let Op::Warp(op) = &inst.op {
                                crate::warp_ops::exec(&mut w.regs, op, emask, self.simd);
                            } else {
                                self.exec(pc, inst, w, emask)?;
                            }
                            if self.trace_hit(w, emask) {
                                let d = inst.op.dsts();
                                self.record(inst, w, &d);
                            }
                            if inst.yields {
                                for l in lanes(mask) {
                                    w.pc[l] = pc + 1;
                                }
                                return Ok(true);
                            }
                        }
                        pc += 1;
                    }
                }
                if pc >= next_other {
                    for l in lanes(mask) {
                        w.pc[l] = pc;
                    }
                    break;
                }
            }
        }
    }

    fn trace_hit(&self, w: &Warp, emask: u32) -> bool {
        match self.trace_tid {
            Some(t) => t >= w.base && t < w.base + 32 && emask & (1 << (t - w.base)) != 0,
            None => false,
        }
    }

    fn record(&mut self, inst: &Inst, w: &Warp, dsts: &[u32]) {
        let l = (self.trace_tid.unwrap_or(0) - w.base) as usize;
        let regs = &self.ctx.k.regs;
        self.trace.push(TraceStep {
            line: inst.line,
            writes: dsts
                .iter()
                .map(|&r| {
                    (
                        regs[r as usize].name.clone(),
                        regs[r as usize].ty,
                        w.regs[r as usize * 32 + l],
                    )
                })
                .collect(),
        });
    }

    /// Applies one non-control instruction to the lanes of `em`.
    fn exec(&mut self, pc: u32, inst: &Inst, w: &mut Warp, em: u32) -> Result<(), PtxError> {
        let regs = &mut w.regs;
        match &inst.op {
            Op::Warp(op) => crate::warp_ops::exec(regs, op, em, self.simd),
            Op::Alu { f, d, a, b, c } => {
                let d = *d as usize * 32;
                if em == u32::MAX {
                    for l in 0..32 {
                        let v = f(rd(regs, *a, l), rd(regs, *b, l), rd(regs, *c, l));
                        regs[d + l] = v;
                    }
                } else {
                    for l in lanes(em) {
                        let v = f(rd(regs, *a, l), rd(regs, *b, l), rd(regs, *c, l));
                        regs[d + l] = v;
                    }
                }
            }
            Op::Alu2 { f, d, d2, a, b, c } => {
                for l in lanes(em) {
                    let (x, y) = f(rd(regs, *a, l), rd(regs, *b, l), rd(regs, *c, l));
                    if *d != u32::MAX {
                        regs[*d as usize * 32 + l] = x;
                    }
                    if *d2 != u32::MAX {
                        regs[*d2 as usize * 32 + l] = y;
                    }
                }
            }
            Op::Ld {
                space,
                size,
                sign,
                d,
                addr,
                unused,
                order,
            } => {
                let (line, base) = (inst.line, w.base);
                if let Some(s) = &mut self.shared.shadow {
                    // The lanes' loads are one warp instruction.
                    s.next_instance(*order);
                }
                self.exec_ld(line, *space, *size, *sign, d, addr, *unused, regs, base, em)?;
                self.check_full_log()?;
            }
            Op::St {
                space,
                size,
                src,
                addr,
                order,
            } => {
                if let Some(s) = &mut self.shared.shadow {
                    // The lanes' stores are one warp instruction.
                    s.next_instance(*order);
                }
                self.exec_st(inst.line, *space, *size, src, addr, regs, w.base, em)?;
                self.check_full_log()?;
            }
            Op::Atom { .. } => self.exec_atom(pc, inst, regs, w.base, em)?,
            Op::Shfl { .. }
            | Op::Vote { .. }
            | Op::Redux { .. }
            | Op::Match { .. }
            | Op::Special { .. } => self.exec_cold(inst, w, em),
            Op::ActiveMask { d } => {
                for l in lanes(em) {
                    regs[*d as usize * 32 + l] = em as u64;
                }
            }
            Op::WarpSync { mask } => {
                let l = em.trailing_zeros() as usize;
                let m = rd(regs, *mask, l) as u32;
                if let Some(s) = &mut self.shared.shadow {
                    s.warp_sync(w.base / 32, m, em);
                }
                if let Some(g) = &mut self.glog {
                    g.warp_sync(w.base, m, em);
                }
            }
            Op::Nop | Op::Bra { .. } | Op::Bar { .. } | Op::Exit | Op::Trap => {}
        }
        Ok(())
    }

    /// The instructions rare in hot loops (warp collectives, special
    /// registers), kept out of [`BlockRun::exec`] so that its frame stays small.
    #[inline(never)]
    fn exec_cold(&mut self, inst: &Inst, w: &mut Warp, em: u32) {
        let regs = &mut w.regs;
        match &inst.op {
            Op::Special { d, s } => {
                let ctx = self.ctx;
                for l in lanes(em) {
                    let t = w.base + l as u32;
                    let tid = ctx.tid3(t);
                    let sc = crate::special::SpecialCtx {
                        tid,
                        ntid: ctx.block,
                        ctaid: self.bid,
                        nctaid: ctx.grid,
                        lane: l as u32,
                        warp: w.base / 32,
                        nwarps: self.nwarps,
                        steps: w.steps,
                        shared_static: ctx.k.shared_static,
                        dyn_shared: ctx.dyn_shared,
                    };
                    let v = crate::special::value(*s, &sc);
                    regs[*d as usize * 32 + l] = v;
                }
            }
            Op::Shfl {
                mode,
                d,
                p,
                a,
                b,
                c,
            } => {
                let mut vals = [0u64; 32];
                for (l, v) in vals.iter_mut().enumerate() {
                    *v = rd(regs, *a, l);
                }
                let mut outs = [(0u64, false); 32];
                for l in lanes(em) {
                    let bval = (rd(regs, *b, l) & 0x1f) as i32;
                    let cv = rd(regs, *c, l) as u32;
                    let seg = ((cv >> 8) & 0x1f) as i32;
                    let cval = (cv & 0x1f) as i32;
                    let lane = l as i32;
                    let max_lane = (lane & seg) | (cval & !seg);
                    let min_lane = lane & seg;
                    let (j, ok) = match mode {
                        ShflMode::Up => (lane - bval, lane - bval >= max_lane),
                        ShflMode::Down => (lane + bval, lane + bval <= max_lane),
                        ShflMode::Bfly => (lane ^ bval, (lane ^ bval) <= max_lane),
                        ShflMode::Idx => {
                            let j = min_lane | (bval & !seg);
                            (j, j <= max_lane)
                        }
                    };
                    let j = if ok && (0..32).contains(&j) { j } else { lane };
                    outs[l] = (vals[j as usize] & 0xffff_ffff, ok);
                }
                for l in lanes(em) {
                    regs[*d as usize * 32 + l] = outs[l].0;
                    if let Some(p) = p {
                        regs[*p as usize * 32 + l] = outs[l].1 as u64;
                    }
                }
            }
            Op::Vote { mode, d, a, neg } => {
                let mut ballot = 0u32;
                for l in lanes(em) {
                    if ((rd(regs, *a, l) & 1) == 1) != *neg {
                        ballot |= 1 << l;
                    }
                }
                let v = match mode {
                    VoteMode::All => (ballot == em) as u64,
                    VoteMode::Any => (ballot != 0) as u64,
                    VoteMode::Uni => (ballot == em || ballot == 0) as u64,
                    VoteMode::Ballot => ballot as u64,
                };
                for l in lanes(em) {
                    regs[*d as usize * 32 + l] = v;
                }
            }
            Op::Redux {
                op,
                signed,
                d,
                a,
                mask,
            } => {
                let mut out = [0u64; 32];
                for l in lanes(em) {
                    let group = rd(regs, *mask, l) as u32 & em;
                    out[l] = redux(*op, *signed, regs, *a, group);
                }
                put(regs, *d, &out, em);
            }
            Op::Match { all, d, p, a } => {
                let vals = row(regs, *a);
                let mut out = [0u64; 32];
                let mut same = true;
                for l in lanes(em) {
                    let m = lanes(em)
                        .filter(|&j| vals[j] == vals[l])
                        .fold(0u32, |m, j| m | (1 << j));
                    out[l] = m as u64;
                    same &= m == em;
                }
                if *all {
                    out = [if same { em as u64 } else { 0 }; 32];
                }
                put(regs, *d, &out, em);
                if let Some(p) = p {
                    put(regs, *p, &[same as u64; 32], em);
                }
            }
            _ => unreachable!("exec_cold is called for these operations only"),
        }
        let _ = self.nthreads;
    }
}

/// `redux.sync` of register `a` over the lanes of `group`.
fn redux(op: ReduxOp, signed: bool, regs: &[u64], a: Src, group: u32) -> u64 {
    let vals: Vec<u64> = lanes(group).map(|l| rd(regs, a, l) & 0xffff_ffff).collect();
    let key = |v: u64| {
        if signed {
            v as u32 as i32 as i64
        } else {
            v as i64
        }
    };
    match op {
        ReduxOp::Add => vals.iter().fold(0u64, |s, v| s.wrapping_add(*v)) & 0xffff_ffff,
        ReduxOp::Min => vals.iter().copied().min_by_key(|v| key(*v)).unwrap_or(0),
        ReduxOp::Max => vals.iter().copied().max_by_key(|v| key(*v)).unwrap_or(0),
        ReduxOp::And => vals.iter().fold(0xffff_ffff, |s, v| s & v),
        ReduxOp::Or => vals.iter().fold(0, |s, v| s | v),
        ReduxOp::Xor => vals.iter().fold(0, |s, v| s ^ v),
    }
}

/// The lanes whose predicate register `p` is true (false when `neg`).
#[inline(always)]
fn pred_mask(regs: &[u64], p: u32, neg: bool) -> u32 {
    let row: &[u64; 32] = (&regs[p as usize * 32..p as usize * 32 + 32])
        .try_into()
        .expect("32 lanes");
    let mut m = 0u32;
    for (l, &v) in row.iter().enumerate() {
        m |= ((v & 1) as u32) << l;
    }
    if neg {
        !m
    } else {
        m
    }
}

/// The address of every lane, computed in one pass from the base register's
/// row (no copy of the row, no closure: this is on every global access).
#[inline(always)]
fn addr_row(regs: &[u64], addr: &Addr) -> [u64; 32] {
    let off = addr.off as u64;
    let mut out = [0u64; 32];
    match addr.base {
        Src::Reg(r) => {
            let b: &[u64; 32] = (&regs[r as usize * 32..r as usize * 32 + 32])
                .try_into()
                .expect("32 lanes");
            for (o, &x) in out.iter_mut().zip(b) {
                *o = x.wrapping_add(off);
            }
        }
        Src::Imm(v) => out = [v.wrapping_add(off); 32],
    }
    out
}

/// Register `r`'s row of 32 lanes.
#[inline(always)]
fn reg_row_mut(regs: &mut [u64], r: u32) -> &mut [u64; 32] {
    (&mut regs[r as usize * 32..r as usize * 32 + 32])
        .try_into()
        .expect("32 lanes")
}

/// A space whose addresses may be global memory (a generic address below the
/// shared and local windows is).
fn global_like(s: Space) -> bool {
    matches!(s, Space::Global | Space::Generic)
}

fn space_name(s: Space) -> &'static str {
    match s {
        Space::Global => "global",
        Space::Shared => "shared",
        Space::Local => "local",
        Space::Param => "param",
        Space::Const => "const",
        Space::Generic => "generic",
    }
}

/// Iterates the set bits of a lane mask.
#[inline(always)]
fn lanes(mut m: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}
