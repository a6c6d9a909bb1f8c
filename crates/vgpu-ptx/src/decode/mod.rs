//! Lowering ("decode"): the syntax tree of one entry, with every function it
//! calls inlined, becomes a flat [`Kernel`]: registers as indices, symbols as
//! addresses, opcodes as typed warp operations (warp_ops.rs) or, for the rest,
//! closures, labels as instruction indices.
//!
//! This file holds the lowering state ([`Lower`]) and [`decode_entry`]
//! (module variables, static and dynamic shared memory, parameters, flux
//! atomics); by concern: `layout.rs` (variable sizes and bytes, shared/local
//! allocation), `scopes.rs` (names, function bodies, operands), `selection.rs`
//! (the opcode dispatch), `operand_forms.rs` (`bar.red`, `lop3`, carries,
//! `setp`, `mov`), `memory_ops.rs` (`ld`/`st`, atomics), `inlining.rs`
//! (`call`), `contraction.rs` (`mul` + `add` into `fma`).

use std::collections::{HashMap, HashSet};

use crate::ast::{self, FloatLit, Init, Instruction, Operand, Space, Stmt};
use crate::bit_ops;
use crate::error::PtxError;
use crate::half_ops;
use crate::memory::{generic_window, GLOBAL_VAR_BASE, LOCAL_WINDOW, SHARED_WINDOW};
use crate::program::*;
use crate::semantics::{self, Mods};
use crate::special::special;
use crate::types::*;
use crate::warp_ops::{self, Kind, WarpOp};

mod contraction;
mod inlining;
mod layout;
mod memory_ops;
mod operand_forms;
mod scopes;
mod selection;

use contraction::contraction_plan;
use layout::{elem_size, float_bits, space_of, var_bytes, var_size};
use selection::alu_op;

#[derive(Debug, Clone, Copy)]
enum Bind {
    Reg(u32),
    Sym(Space, u64),
}

struct Lower<'a> {
    m: &'a ast::Module,
    file: &'a str,
    code: Vec<Inst>,
    regs: Vec<RegInfo>,
    /// scopes[0] is the module scope.
    scopes: Vec<HashMap<String, Bind>>,
    /// Lookups stop at this scope index (then go to the module scope).
    floor: usize,
    shared_off: u64,
    dyn_shared_base: u64,
    local_off: u64,
    stack: Vec<String>,
    prefix: String,
    inline_count: u32,
}

/// Decodes entry `entry` of module `m` into a [`Kernel`].
pub(crate) fn decode_entry(m: &ast::Module, file: &str, entry: &str) -> Result<Kernel, PtxError> {
    let f = m
        .functions
        .iter()
        .find(|f| f.is_entry && f.name == entry && f.body.is_some())
        .ok_or_else(|| {
            let names: Vec<&str> = m
                .functions
                .iter()
                .filter(|f| f.is_entry)
                .map(|f| f.name.as_str())
                .collect();
            PtxError::Launch {
                entry: entry.to_string(),
                msg: format!("no such .entry; the module has: {}", names.join(", ")),
            }
        })?;
    let mut lw = Lower {
        m,
        file,
        code: Vec::new(),
        regs: Vec::new(),
        scopes: vec![HashMap::new()],
        floor: 1,
        shared_off: 0,
        dyn_shared_base: 0,
        local_off: 0,
        stack: vec![entry.to_string()],
        prefix: String::new(),
        inline_count: 0,
    };
    // Module variables.
    let mut globals = Vec::new();
    let mut gaddr = GLOBAL_VAR_BASE;
    for v in &m.vars {
        match v.space {
            Space::Global | Space::Const => {
                let align = v
                    .align
                    .unwrap_or(elem_size(&v.ty, v.line, file)? as u32)
                    .max(1) as u64;
                gaddr = gaddr.next_multiple_of(align.max(16));
                let bytes = var_bytes(v, file)?;
                let size = bytes.len() as u64;
                lw.scopes[0].insert(v.name.clone(), Bind::Sym(Space::Global, gaddr));
                globals.push(GlobalVar {
                    name: v.name.clone(),
                    addr: gaddr,
                    bytes,
                    writable: v.space == Space::Global,
                });
                gaddr += size.max(1) + 256;
            }
            Space::Shared if !v.is_extern => {
                let addr = lw.alloc_shared(v)?;
                lw.scopes[0].insert(v.name.clone(), Bind::Sym(Space::Shared, addr));
            }
            _ => {}
        }
    }
    // Static shared memory of the entry body, to place the dynamic part after it.
    let body = f.body.as_ref().expect("checked above");
    let mut max_align = 16u64;
    for s in body {
        if let Stmt::Var(v) = s {
            if v.space == Space::Shared && !v.is_extern {
                let addr = lw.alloc_shared(v)?;
                lw.scopes[0].insert(
                    format!("\u{0}entry-shared:{}", v.name),
                    Bind::Sym(Space::Shared, addr),
                );
            }
            if v.space == Space::Shared {
                max_align = max_align.max(v.align.unwrap_or(1) as u64);
            }
        }
    }
    for v in &m.vars {
        if v.space == Space::Shared && v.is_extern {
            max_align = max_align.max(v.align.unwrap_or(1) as u64);
        }
    }
    lw.dyn_shared_base = lw.shared_off.next_multiple_of(max_align);
    for v in &m.vars {
        if v.space == Space::Shared && v.is_extern {
            lw.scopes[0].insert(v.name.clone(), Bind::Sym(Space::Shared, lw.dyn_shared_base));
        }
    }
    // Kernel parameters.
    let mut params = Vec::new();
    let mut poff = 0u32;
    let mut pscope = HashMap::new();
    for p in &f.params {
        let es = elem_size(&p.ty, p.line, file)? as u32;
        let size = es * p.count as u32;
        let align = p.align.unwrap_or(es).max(1);
        poff = poff.next_multiple_of(align);
        pscope.insert(p.name.clone(), Bind::Sym(Space::Param, poff as u64));
        params.push(ParamInfo {
            name: p.name.clone(),
            ty: p.ty.clone(),
            size,
            offset: poff,
        });
        poff += size;
    }
    lw.scopes.push(pscope);
    lw.floor = 1;
    lw.function_body(body, true)?;
    // Deferred (flux) atomics: their old value is never read.
    let read: HashSet<u32> = lw
        .code
        .iter()
        .flat_map(|i| {
            let mut v = i.op.srcs();
            if let Some((g, _)) = i.guard {
                v.push(g)
            }
            v
        })
        .collect();
    let mut needs_ordered = false;
    for inst in &mut lw.code {
        if let Op::Atom {
            d, deferred, space, ..
        } = &mut inst.op
        {
            *deferred = match d {
                None => true,
                Some(r) => !read.contains(r),
            };
            if !*deferred && matches!(space, Space::Global | Space::Generic) {
                needs_ordered = true;
            }
        }
    }
    let zero_regs = crate::analysis::registers_to_zero(&lw.code, lw.regs.len());
    let store_targets = crate::analysis::store_targets(&lw.code, lw.regs.len(), &params);
    Ok(Kernel {
        name: entry.to_string(),
        zero_regs,
        store_targets,
        code: lw.code,
        regs: lw.regs,
        params,
        param_bytes: poff,
        shared_static: lw.dyn_shared_base as u32,
        local_bytes: lw.local_off.next_multiple_of(8) as u32,
        globals,
        needs_ordered_blocks: needs_ordered,
    })
}

impl Lower<'_> {
    fn err_sem(&self, line: u32, msg: String) -> PtxError {
        PtxError::Semantic {
            file: self.file.into(),
            line,
            msg,
        }
    }
    fn unsupported(&self, ins: &Instruction, why: impl Into<String>) -> PtxError {
        PtxError::Unsupported {
            file: self.file.into(),
            line: ins.line,
            what: ins.opcode_text(),
            why: why.into(),
        }
    }
}
