//! The PTX parser: tokens to the syntax tree of [`crate::ast`]. Debug sections
//! (`.section`, `.file`, `.loc`) and pragmas are skipped; every error carries
//! `file:line:col` and what was expected. Nesting (operands, initialisers,
//! scopes) is bounded by [`MAX_NESTING`], so no input overflows the stack.

use crate::ast::*;
use crate::error::PtxError;
use crate::lexer::{lex, Tok, Token};
use crate::limits::MAX_NESTING;

/// Parses PTX text into a [`Module`]. `file` names the text in errors.
pub fn parse_module(text: &str, file: &str) -> Result<Module, PtxError> {
    let toks = lex(text, file)?;
    let mut p = Parser {
        toks,
        pos: 0,
        file: file.to_string(),
        used_bytes_mask: None,
        depth: 0,
    };
    p.module()
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    file: String,
    /// A `used_bytes_mask` pragma waiting for the next instruction.
    used_bytes_mask: Option<u32>,
    /// Levels of operand or initialiser nesting open (at most [`MAX_NESTING`]).
    depth: usize,
}

/// Parses an integer literal (decimal, hex `0x`, octal `0…`, binary `0b`, with an
/// optional `U` suffix).
pub(crate) fn parse_int(w: &str) -> Option<i128> {
    let w = w
        .strip_suffix('U')
        .or_else(|| w.strip_suffix('u'))
        .unwrap_or(w);
    if w.is_empty() {
        return None;
    }
    if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        return i128::from_str_radix(h, 16).ok();
    }
    if let Some(b) = w.strip_prefix("0b").or_else(|| w.strip_prefix("0B")) {
        return i128::from_str_radix(b, 2).ok();
    }
    if w.len() > 1 && w.starts_with('0') && w.bytes().all(|b| b.is_ascii_digit()) {
        return i128::from_str_radix(&w[1..], 8).ok();
    }
    if w.bytes().all(|b| b.is_ascii_digit()) {
        return w.parse().ok();
    }
    None
}

/// Parses a float literal: `0fXXXXXXXX`, `0dXXXXXXXXXXXXXXXX` or decimal.
pub(crate) fn parse_float(w: &str) -> Option<FloatLit> {
    if let Some(h) = w.strip_prefix("0f").or_else(|| w.strip_prefix("0F")) {
        if h.len() == 8 {
            return u32::from_str_radix(h, 16).ok().map(FloatLit::F32Bits);
        }
        return None;
    }
    if let Some(h) = w.strip_prefix("0d").or_else(|| w.strip_prefix("0D")) {
        if h.len() == 16 {
            return u64::from_str_radix(h, 16).ok().map(FloatLit::F64Bits);
        }
        return None;
    }
    if w.contains('.') || w.contains('e') || w.contains('E') {
        return w.parse::<f64>().ok().map(FloatLit::Decimal);
    }
    None
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }
    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k).map(|t| &t.tok)
    }
    fn place(&self) -> (u32, u32) {
        match self.toks.get(self.pos) {
            Some(t) => (t.line, t.col),
            None => self
                .toks
                .last()
                .map(|t| (t.line, t.col + 1))
                .unwrap_or((1, 1)),
        }
    }
    fn err<T>(&self, expected: &str) -> Result<T, PtxError> {
        let (line, col) = self.place();
        let found = match self.peek() {
            None => "end of input".to_string(),
            Some(Tok::Word(w)) => format!("`{w}`"),
            Some(Tok::Str(s)) => format!("\"{s}\""),
            Some(Tok::Punct(c)) => format!("`{c}`"),
        };
        Err(PtxError::Parse {
            file: self.file.clone(),
            line,
            col,
            msg: format!("expected {expected}, found {found}"),
        })
    }
    /// The error for nesting of `what` deeper than [`MAX_NESTING`], at token
    /// `at` (the opening one).
    fn too_deep<T>(&self, at: usize, what: &str) -> Result<T, PtxError> {
        let (line, col) = self.toks.get(at).map_or((1, 1), |t| (t.line, t.col));
        Err(PtxError::Parse {
            file: self.file.clone(),
            line,
            col,
            msg: format!(
                "{what} nested deeper than {MAX_NESTING} levels (the parser's limit, vgpu_ptx::limits::MAX_NESTING)"
            ),
        })
    }
    /// Runs `f` one level of `what` deeper (the token before the current one
    /// opened it), refusing nesting past [`MAX_NESTING`].
    fn nested<T>(
        &mut self,
        what: &str,
        f: impl FnOnce(&mut Self) -> Result<T, PtxError>,
    ) -> Result<T, PtxError> {
        if self.depth >= MAX_NESTING {
            return self.too_deep(self.pos - 1, what);
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }
    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }
    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect_punct(&mut self, c: char) -> Result<(), PtxError> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            self.err(&format!("`{c}`"))
        }
    }
    fn word(&mut self, what: &str) -> Result<String, PtxError> {
        match self.peek() {
            Some(Tok::Word(w)) => {
                let w = w.clone();
                self.pos += 1;
                Ok(w)
            }
            _ => self.err(what),
        }
    }
    fn peek_word(&self) -> Option<&str> {
        match self.peek() {
            Some(Tok::Word(w)) => Some(w),
            _ => None,
        }
    }
    fn line(&self) -> u32 {
        self.place().0
    }
    fn int(&mut self, what: &str) -> Result<i128, PtxError> {
        let neg = self.eat_punct('-');
        match self.peek_word().and_then(parse_int) {
            Some(v) => {
                self.pos += 1;
                Ok(if neg { -v } else { v })
            }
            None => self.err(what),
        }
    }
    fn skip_to_semicolon(&mut self) -> Result<(), PtxError> {
        while let Some(t) = self.peek() {
            let semi = *t == Tok::Punct(';');
            self.pos += 1;
            if semi {
                return Ok(());
            }
        }
        self.err("`;`")
    }
    /// Skips the rest of the current line (`.loc`, `.file` carry no `;`).
    fn skip_line(&mut self, line: u32) {
        while self.pos < self.toks.len() && self.toks[self.pos].line == line {
            self.pos += 1;
        }
    }
    fn skip_braced(&mut self) -> Result<(), PtxError> {
        self.expect_punct('{')?;
        let mut depth = 1;
        while depth > 0 {
            match self.peek() {
                None => return self.err("`}` closing the section"),
                Some(Tok::Punct('{')) => depth += 1,
                Some(Tok::Punct('}')) => depth -= 1,
                _ => {}
            }
            self.pos += 1;
        }
        Ok(())
    }

    fn module(&mut self) -> Result<Module, PtxError> {
        let mut m = Module {
            address_size: 64,
            ..Default::default()
        };
        while let Some(tok) = self.peek().cloned() {
            let line = self.line();
            match tok {
                Tok::Word(w) => match w.as_str() {
                    ".version" => {
                        self.pos += 1;
                        let v = self.word("a version like 9.0")?;
                        let mut it = v.split('.');
                        let maj = it.next().and_then(|s| s.parse().ok());
                        let min = it.next().and_then(|s| s.parse().ok());
                        match (maj, min) {
                            (Some(a), Some(b)) => m.version = Some((a, b)),
                            _ => {
                                self.pos -= 1;
                                return self.err("a version like 9.0");
                            }
                        }
                    }
                    ".target" => {
                        self.pos += 1;
                        m.target.push(self.word("a target like sm_90")?);
                        while self.eat_punct(',') {
                            m.target.push(self.word("a target option")?);
                        }
                    }
                    ".address_size" => {
                        self.pos += 1;
                        let v = self.int("32 or 64")?;
                        if v != 32 && v != 64 {
                            self.pos -= 1;
                            return self.err("32 or 64");
                        }
                        m.address_size = v as u32;
                    }
                    ".file" | ".loc" => {
                        self.pos += 1;
                        self.skip_line(line);
                    }
                    ".section" => {
                        self.pos += 1;
                        self.word("a section name")?;
                        self.skip_braced()?;
                    }
                    ".pragma" => self.skip_to_semicolon()?,
                    _ => self.top_level(&mut m)?,
                },
                _ => return self.err("a directive (.version, .entry, .func, .global, …)"),
            }
        }
        Ok(m)
    }

    fn top_level(&mut self, m: &mut Module) -> Result<(), PtxError> {
        let line = self.line();
        let mut is_extern = false;
        loop {
            match self.peek_word() {
                Some(".visible") | Some(".weak") | Some(".common") => self.pos += 1,
                Some(".extern") => {
                    is_extern = true;
                    self.pos += 1
                }
                _ => break,
            }
        }
        match self.peek_word() {
            Some(".entry") | Some(".func") => {
                let is_entry = self.peek_word() == Some(".entry");
                self.pos += 1;
                let f = self.function(is_entry, line)?;
                m.functions.push(f);
                Ok(())
            }
            Some(".global") | Some(".const") | Some(".shared") => {
                let mut v = self.var_decl()?;
                v.is_extern = is_extern;
                self.expect_punct(';')?;
                m.vars.push(v);
                Ok(())
            }
            _ => self.err("`.entry`, `.func` or a variable declaration"),
        }
    }

    fn param_list(&mut self) -> Result<Vec<Param>, PtxError> {
        self.expect_punct('(')?;
        let mut ps = Vec::new();
        if self.eat_punct(')') {
            return Ok(ps);
        }
        loop {
            let line = self.line();
            let space = match self.word("`.param` or `.reg`")?.as_str() {
                ".param" => Space::Param,
                ".reg" => Space::Local,
                _ => {
                    self.pos -= 1;
                    return self.err("`.param` or `.reg`");
                }
            };
            let (align, _, ty) = self.qualifiers(
                &[".ptr", ".global", ".shared", ".local", ".const"],
                false,
                "a parameter type",
            )?;
            let name = self.word("a parameter name")?;
            let mut count = 1;
            if self.eat_punct('[') {
                count = self.int("an array length")? as u64;
                self.expect_punct(']')?;
            }
            ps.push(Param {
                ty,
                name,
                align,
                count,
                space,
                line,
            });
            if self.eat_punct(')') {
                return Ok(ps);
            }
            self.expect_punct(',')?;
        }
    }

    fn function(&mut self, is_entry: bool, line: u32) -> Result<Function, PtxError> {
        let mut rets = Vec::new();
        if !is_entry && self.is_punct('(') {
            rets = self.param_list()?;
        }
        let name = self.word("a function name")?;
        let params = if self.is_punct('(') {
            self.param_list()?
        } else {
            Vec::new()
        };
        // Performance directives before the body.
        loop {
            match self.peek_word() {
                Some(".maxntid")
                | Some(".reqntid")
                | Some(".minnctapersm")
                | Some(".maxnctapersm")
                | Some(".maxnreg")
                | Some(".reqnctapercluster")
                | Some(".maxclusterrank")
                | Some(".explicitcluster") => {
                    self.pos += 1;
                    while self.peek_word().and_then(parse_int).is_some() {
                        self.pos += 1;
                        if !self.eat_punct(',') {
                            break;
                        }
                    }
                }
                Some(".noreturn") => self.pos += 1,
                Some(".pragma") => self.skip_to_semicolon()?,
                _ => break,
            }
        }
        if self.eat_punct(';') {
            return Ok(Function {
                name,
                is_entry,
                rets,
                params,
                body: None,
                line,
            });
        }
        self.expect_punct('{')?;
        let body = self.body()?;
        Ok(Function {
            name,
            is_entry,
            rets,
            params,
            body: Some(body),
            line,
        })
    }

    /// The qualifiers of a declaration between its state space and its name:
    /// `.align N`, the words of `skip` (passed over), `.v2`/`.v4` when
    /// `vectors`, and the type (the first other dotted word, without its dot).
    /// Returns the alignment, the vector width (1 without one) and the type;
    /// an error naming `what` when there is no type.
    fn qualifiers(
        &mut self,
        skip: &[&str],
        vectors: bool,
        what: &str,
    ) -> Result<(Option<u32>, u32, String), PtxError> {
        let mut align = None;
        let mut ty = None;
        let mut vec = 1;
        loop {
            match self.peek_word() {
                Some(".align") => {
                    self.pos += 1;
                    align = Some(self.int("an alignment")? as u32);
                }
                Some(".v2") if vectors => {
                    vec = 2;
                    self.pos += 1
                }
                Some(".v4") if vectors => {
                    vec = 4;
                    self.pos += 1
                }
                Some(w) if skip.contains(&w) => self.pos += 1,
                Some(w) if w.starts_with('.') && ty.is_none() => {
                    ty = Some(w[1..].to_string());
                    self.pos += 1;
                }
                _ => break,
            }
        }
        match ty {
            Some(t) => Ok((align, vec, t)),
            None => self.err(what),
        }
    }

    fn var_decl(&mut self) -> Result<VarDecl, PtxError> {
        let line = self.line();
        let space = match self.word("a state space")?.as_str() {
            ".global" => Space::Global,
            ".const" => Space::Const,
            ".shared" => Space::Shared,
            ".local" => Space::Local,
            ".param" => Space::Param,
            _ => {
                self.pos -= 1;
                return self.err("a state space");
            }
        };
        let (align, vec, ty) = self.qualifiers(&[".ptr"], true, "a type")?;
        let name = self.word("a variable name")?;
        let mut dims = Vec::new();
        while self.eat_punct('[') {
            if self.eat_punct(']') {
                dims.push(None);
            } else {
                dims.push(Some(self.int("an array length")? as u64));
                self.expect_punct(']')?;
            }
        }
        let mut init = None;
        if self.eat_punct('=') {
            let mut vals = Vec::new();
            self.init_value(&mut vals)?;
            init = Some(vals);
        }
        Ok(VarDecl {
            space,
            align,
            ty,
            vec,
            name,
            dims,
            init,
            is_extern: false,
            line,
        })
    }

    fn init_value(&mut self, out: &mut Vec<Init>) -> Result<(), PtxError> {
        if self.eat_punct('{') {
            return self.nested("braces in an initialiser", |p| {
                if p.eat_punct('}') {
                    return Ok(());
                }
                loop {
                    p.init_value(out)?;
                    if p.eat_punct('}') {
                        return Ok(());
                    }
                    p.expect_punct(',')?;
                }
            });
        }
        let neg = self.eat_punct('-');
        let w = self.word("an initial value")?;
        if let Some(v) = parse_int(&w) {
            out.push(Init::Int(if neg { -v } else { v }));
        } else if let Some(f) = parse_float(&w) {
            let f = if neg { negate_float(f) } else { f };
            out.push(Init::Float(f));
        } else if w == "generic" && self.eat_punct('(') {
            let s = self.word("a symbol")?;
            self.expect_punct(')')?;
            out.push(Init::Symbol(s));
        } else {
            out.push(Init::Symbol(w));
            if self.eat_punct('+') {
                self.int("an offset")?;
            }
        }
        Ok(())
    }

    fn body(&mut self) -> Result<Vec<Stmt>, PtxError> {
        let mut out = Vec::new();
        let mut depth = 1;
        loop {
            let line = self.line();
            match self.peek().cloned() {
                None => return self.err("`}` closing the function body"),
                Some(Tok::Punct('}')) => {
                    self.pos += 1;
                    depth -= 1;
                    if depth == 0 {
                        return Ok(out);
                    }
                    out.push(Stmt::Close);
                }
                Some(Tok::Punct('{')) => {
                    if depth > MAX_NESTING {
                        return self.too_deep(self.pos, "`{ }` scopes in a function body");
                    }
                    self.pos += 1;
                    depth += 1;
                    out.push(Stmt::Open);
                }
                Some(Tok::Punct('@')) => out.push(Stmt::Inst(self.instruction()?)),
                Some(Tok::Word(w)) => {
                    if self.peek_at(1) == Some(&Tok::Punct(':')) && !w.starts_with('.') {
                        self.pos += 2;
                        out.push(Stmt::Label(w, line));
                        continue;
                    }
                    match w.as_str() {
                        ".reg" => {
                            self.pos += 1;
                            out.push(self.reg_decl(line)?);
                        }
                        ".local" | ".shared" | ".param" | ".global" | ".const" => {
                            let v = self.var_decl()?;
                            self.expect_punct(';')?;
                            out.push(Stmt::Var(v));
                        }
                        ".extern" => {
                            self.pos += 1;
                            let mut v = self.var_decl()?;
                            v.is_extern = true;
                            self.expect_punct(';')?;
                            out.push(Stmt::Var(v));
                        }
                        ".loc" | ".file" => {
                            self.pos += 1;
                            self.skip_line(line);
                        }
                        ".pragma" => {
                            if let Some(Token {
                                tok: Tok::Str(p), ..
                            }) = self.toks.get(self.pos + 1)
                            {
                                self.used_bytes_mask = p
                                    .strip_prefix("used_bytes_mask ")
                                    .and_then(|n| parse_int(n.trim()))
                                    .and_then(|n| u32::try_from(n).ok());
                            }
                            self.skip_to_semicolon()?
                        }
                        w if w.starts_with('.') => {
                            return self.err("an instruction, label or declaration")
                        }
                        _ => out.push(Stmt::Inst(self.instruction()?)),
                    }
                }
                Some(_) => return self.err("an instruction, label or declaration"),
            }
        }
    }

    fn reg_decl(&mut self, line: u32) -> Result<Stmt, PtxError> {
        let mut ty = None;
        while let Some(w) = self.peek_word() {
            if !w.starts_with('.') {
                break;
            }
            let w = w[1..].to_string();
            self.pos += 1;
            if w == "v2" || w == "v4" {
                continue;
            }
            ty = Some(w);
        }
        let ty = match ty {
            Some(t) => t,
            None => return self.err("a register type"),
        };
        let mut names = Vec::new();
        loop {
            let name = self.word("a register name")?;
            if self.eat_punct('<') {
                let n = self.int("a register count")?;
                if !(0..=1 << 20).contains(&n) {
                    self.pos -= 1;
                    return self.err("a register count up to 2^20");
                }
                self.expect_punct('>')?;
                for i in 0..n {
                    names.push(format!("{name}{i}"));
                }
            } else {
                names.push(name);
            }
            if self.eat_punct(';') {
                return Ok(Stmt::Reg { ty, names, line });
            }
            self.expect_punct(',')?;
        }
    }

    fn instruction(&mut self) -> Result<Instruction, PtxError> {
        let (line, col) = self.place();
        let mut guard = None;
        if self.eat_punct('@') {
            let neg = self.eat_punct('!');
            guard = Some((self.word("a predicate register")?, neg));
        }
        let op = self.word("an opcode")?;
        if op.starts_with('.') || op.starts_with('%') || op.as_bytes()[0].is_ascii_digit() {
            self.pos -= 1;
            return self.err("an opcode");
        }
        let opcode: Vec<String> = op.split('.').map(|s| s.to_string()).collect();
        if opcode.iter().any(|s| s.is_empty()) {
            self.pos -= 1;
            return self.err("an opcode without empty modifiers");
        }
        let mut operands = Vec::new();
        if !self.eat_punct(';') {
            loop {
                operands.push(self.operand()?);
                if self.eat_punct(';') {
                    break;
                }
                self.expect_punct(',')?;
            }
        }
        Ok(Instruction {
            guard,
            opcode,
            operands,
            line,
            col,
            used_bytes_mask: self.used_bytes_mask.take(),
        })
    }

    fn operand(&mut self) -> Result<Operand, PtxError> {
        let first = self.operand_single()?;
        if self.eat_punct('|') {
            let second = self.operand_single()?;
            return Ok(Operand::Pair(Box::new(first), Box::new(second)));
        }
        Ok(first)
    }

    fn operand_single(&mut self) -> Result<Operand, PtxError> {
        if self.eat_punct('!') {
            return self.nested("`!` before an operand", |p| {
                Ok(Operand::Not(Box::new(p.operand_single()?)))
            });
        }
        if self.eat_punct('[') {
            let mut base = None;
            let mut off: i128 = 0;
            if let Some(w) = self.peek_word() {
                if parse_int(w).is_none() {
                    base = Some(w.to_string());
                    self.pos += 1;
                } else {
                    off = self.int("an address")?;
                }
            } else if self.is_punct('-') {
                off = self.int("an address")?;
            } else {
                return self.err("a register, symbol or address inside `[`");
            }
            while !self.is_punct(']') {
                if self.eat_punct('+') {
                    off += self.int("an offset")?;
                } else if self.eat_punct('-') {
                    off -= self.int("an offset")?;
                } else {
                    return self.err("`+offset` or `]`");
                }
            }
            self.expect_punct(']')?;
            let off = i64::try_from(off).or_else(|_| self.err("an offset that fits 64 bits"))?;
            return Ok(Operand::Address(base, off));
        }
        if self.eat_punct('{') {
            return self.nested("braces in an operand", |p| {
                let mut v = Vec::new();
                loop {
                    v.push(p.operand_single()?);
                    if p.eat_punct('}') {
                        return Ok(Operand::Vector(v));
                    }
                    p.expect_punct(',')?;
                }
            });
        }
        if self.eat_punct('(') {
            return self.nested("parentheses in an operand", |p| {
                let mut v = Vec::new();
                if p.eat_punct(')') {
                    return Ok(Operand::List(v));
                }
                loop {
                    v.push(p.operand_single()?);
                    if p.eat_punct(')') {
                        return Ok(Operand::List(v));
                    }
                    p.expect_punct(',')?;
                }
            });
        }
        let neg = self.eat_punct('-');
        let w = self.word("an operand")?;
        if let Some(v) = parse_int(&w) {
            return Ok(Operand::Int(if neg { -v } else { v }));
        }
        if let Some(f) = parse_float(&w) {
            return Ok(Operand::Float(if neg { negate_float(f) } else { f }));
        }
        if neg || w.as_bytes()[0].is_ascii_digit() || w.starts_with('.') {
            self.pos -= 1;
            return self.err("an operand (register, number or symbol)");
        }
        if w == "_" {
            return Ok(Operand::Sink);
        }
        if self.eat_punct('+') {
            let off = self.int("an offset")?;
            let off = i64::try_from(off).or_else(|_| self.err("an offset that fits 64 bits"))?;
            return Ok(Operand::NameOffset(w, off));
        }
        Ok(Operand::Name(w))
    }
}

fn negate_float(f: FloatLit) -> FloatLit {
    match f {
        FloatLit::F32Bits(b) => FloatLit::F32Bits(b ^ 0x8000_0000),
        FloatLit::F64Bits(b) => FloatLit::F64Bits(b ^ (1 << 63)),
        FloatLit::Decimal(d) => FloatLit::Decimal(-d),
    }
}
