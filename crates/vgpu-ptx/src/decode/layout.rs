//! Memory layout of a decoded kernel: the sizes and initial bytes of module
//! variables, shared and local allocations, float literals as bits, and the
//! state space an opcode names.

use super::*;

pub(super) fn elem_size(ty: &str, line: u32, file: &str) -> Result<u64, PtxError> {
    match Ty::parse(ty) {
        Some(t) => Ok(t.bytes() as u64),
        None => Err(PtxError::Semantic {
            file: file.into(),
            line,
            msg: format!("unknown type .{ty}"),
        }),
    }
}

pub(super) fn var_size(v: &ast::VarDecl, file: &str) -> Result<u64, PtxError> {
    let es = elem_size(&v.ty, v.line, file)? * v.vec as u64;
    let mut n = 1u64;
    for d in &v.dims {
        match d {
            Some(k) => n = n.saturating_mul(*k),
            None => {
                // Unsized: the initialiser's length.
                n = n.saturating_mul(v.init.as_ref().map(|i| i.len() as u64).unwrap_or(0));
            }
        }
    }
    if n.saturating_mul(es) > 1 << 28 {
        return Err(PtxError::Semantic {
            file: file.into(),
            line: v.line,
            msg: format!("`{}` is too large", v.name),
        });
    }
    Ok(es * n)
}

/// The initial bytes of a module variable.
pub(super) fn var_bytes(v: &ast::VarDecl, file: &str) -> Result<Vec<u8>, PtxError> {
    let size = var_size(v, file)? as usize;
    let mut out = vec![0u8; size];
    let ty = Ty::parse(&v.ty).expect("checked by var_size");
    let es = ty.bytes() as usize;
    if let Some(init) = &v.init {
        for (i, x) in init.iter().enumerate() {
            let bits: u64 = match (x, ty) {
                (Init::Int(k), t) if t.is_float() => float_bits(FloatLit::Decimal(*k as f64), t),
                (Init::Int(k), _) => *k as u64,
                (Init::Float(f), t) => float_bits(*f, t),
                (Init::Symbol(s), _) => {
                    return Err(PtxError::Unsupported {
                        file: file.into(),
                        line: v.line,
                        what: format!("initialiser `{s}`"),
                        why: "address initialisers are not supported".into(),
                    })
                }
            };
            let at = i * es;
            if at + es > out.len() {
                return Err(PtxError::Semantic {
                    file: file.into(),
                    line: v.line,
                    msg: format!("`{}`: more initial values than elements", v.name),
                });
            }
            out[at..at + es].copy_from_slice(&bits.to_le_bytes()[..es]);
        }
    }
    Ok(out)
}

pub(super) fn float_bits(f: FloatLit, t: Ty) -> u64 {
    let v = match f {
        FloatLit::F32Bits(b) if t == Ty::F32 => return b as u64,
        FloatLit::F64Bits(b) if t == Ty::F64 => return b,
        FloatLit::F32Bits(b) if !t.is_float() => return b as u64,
        FloatLit::F64Bits(b) if !t.is_float() => return b,
        FloatLit::F32Bits(b) => f32::from_bits(b) as f64,
        FloatLit::F64Bits(b) => f64::from_bits(b),
        FloatLit::Decimal(d) => d,
    };
    match t {
        Ty::F32 => (v as f32).to_bits() as u64,
        Ty::F16 => half_ops::f16_rn(v) as u64,
        Ty::Bf16 => half::bf16::from_f64(v).to_bits() as u64,
        Ty::F64 => v.to_bits(),
        // A float literal for an integer type: its bits as f64 (PTX: 0d…) or f32.
        _ => v.to_bits(),
    }
}

pub(super) fn space_of(mods: &[String]) -> Space {
    for m in mods {
        match m.as_str() {
            "global" => return Space::Global,
            "shared" | "shared::cta" | "shared::cluster" => return Space::Shared,
            "local" => return Space::Local,
            "param" | "param::entry" | "param::func" => return Space::Param,
            "const" => return Space::Const,
            _ => {}
        }
    }
    Space::Generic
}

impl Lower<'_> {
    pub(super) fn alloc_shared(&mut self, v: &ast::VarDecl) -> Result<u64, PtxError> {
        let size = var_size(v, self.file)?;
        let align = v
            .align
            .unwrap_or(elem_size(&v.ty, v.line, self.file)? as u32)
            .max(1) as u64;
        let addr = self.shared_off.next_multiple_of(align);
        self.shared_off = addr + size;
        if self.shared_off > 1 << 31 {
            return Err(self.err_sem(v.line, "shared memory over 2 GiB".into()));
        }
        Ok(addr)
    }

    pub(super) fn alloc_local(&mut self, size: u64, align: u64) -> u64 {
        let addr = self.local_off.next_multiple_of(align.max(1));
        self.local_off = addr + size;
        addr
    }
}
