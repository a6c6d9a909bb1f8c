//! The `.field` recursive-descent parser (grammar in docs/FIELD_LANGUAGE.md).

use crate::ast::*;
use crate::error::{IrError, Pos};
use crate::lexer::{lex, Tok, Token};
use crate::types::ScalarType;

/// Parses `.field` text holding one or more fields. `file` names the source in
/// error messages.
pub fn parse(file: &str, src: &str) -> Result<Vec<FieldDecl>, IrError> {
    let toks = lex(file, src)?;
    let mut p = Parser {
        file,
        toks,
        at: 0,
        depth: 0,
    };
    let mut fields = Vec::new();
    while !p.is_eof() {
        fields.push(p.field()?);
    }
    if fields.is_empty() {
        return Err(p.expected("`field`"));
    }
    Ok(fields)
}

/// Deepest nesting of expressions accepted (keeps the parser's stack bounded).
const MAX_DEPTH: u32 = 200;

struct Parser<'a> {
    file: &'a str,
    toks: Vec<Token>,
    at: usize,
    depth: u32,
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.at].tok
    }
    fn peek2(&self) -> &Tok {
        &self.toks[(self.at + 1).min(self.toks.len() - 1)].tok
    }
    fn pos(&self) -> Pos {
        self.toks[self.at].pos
    }
    fn is_eof(&self) -> bool {
        matches!(self.peek(), Tok::Eof)
    }
    fn bump(&mut self) -> Token {
        let t = self.toks[self.at].clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }
    fn expected(&self, what: &str) -> IrError {
        IrError::Parse {
            file: self.file.to_string(),
            pos: self.pos(),
            expected: what.to_string(),
            found: self.peek().describe(),
        }
    }
    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }
    fn is_kw(&self, k: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == k)
    }
    fn eat_punct(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.bump();
            true
        } else {
            false
        }
    }
    fn punct(&mut self, p: &str) -> Result<(), IrError> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{p}`")))
        }
    }
    fn kw(&mut self, k: &str) -> Result<(), IrError> {
        if self.is_kw(k) {
            self.bump();
            Ok(())
        } else {
            Err(self.expected(&format!("`{k}`")))
        }
    }
    fn ident(&mut self, what: &str) -> Result<(String, Pos), IrError> {
        match self.peek().clone() {
            Tok::Ident(s) if !is_keyword(&s) => {
                let pos = self.pos();
                self.bump();
                Ok((s, pos))
            }
            _ => Err(self.expected(what)),
        }
    }
    fn scalar_type(&mut self) -> Result<ScalarType, IrError> {
        if let Tok::Ident(s) = self.peek() {
            if let Some(t) = ScalarType::from_name(s) {
                self.bump();
                return Ok(t);
            }
        }
        Err(self.expected("a type (`f32`, `f64`, `i32`, `u32` or `bool`)"))
    }

    fn field(&mut self) -> Result<FieldDecl, IrError> {
        let pos = self.pos();
        self.kw("field")?;
        let (name, _) = self.ident("the field's name")?;
        self.punct("(")?;
        let mut params = Vec::new();
        if !self.is_punct(")") {
            loop {
                let (pname, ppos) = self.ident("a parameter name")?;
                self.punct(":")?;
                let ty = self.scalar_type()?;
                let buffer = if self.eat_punct("[") {
                    self.punct("]")?;
                    true
                } else {
                    false
                };
                params.push(ParamDecl {
                    name: pname,
                    ty,
                    buffer,
                    pos: ppos,
                });
                if !self.eat_punct(",") {
                    break;
                }
            }
        }
        self.punct(")")?;
        self.punct("{")?;
        let mut items = Vec::new();
        while !self.is_punct("}") {
            items.push(self.item()?);
        }
        self.punct("}")?;
        Ok(FieldDecl {
            name,
            params,
            items,
            pos,
        })
    }

    fn item(&mut self) -> Result<Item, IrError> {
        if self.is_kw("state") {
            self.bump();
            let mut decls = Vec::new();
            loop {
                let (name, pos) = self.ident("a state name")?;
                let ty = if self.eat_punct(":") {
                    Some(self.scalar_type()?)
                } else {
                    None
                };
                self.punct("=")?;
                let init = self.expr()?;
                decls.push(StateDecl {
                    name,
                    ty,
                    init,
                    pos,
                });
                if !self.eat_punct(",") {
                    break;
                }
            }
            self.punct(";")?;
            return Ok(Item::State(decls));
        }
        if self.is_kw("shared") {
            self.bump();
            let (name, pos) = self.ident("the shared sub-field's name")?;
            self.punct(":")?;
            let ty = self.scalar_type()?;
            self.punct("[")?;
            let len = self.expr()?;
            self.punct("]")?;
            self.punct("=")?;
            let init = self.expr()?;
            self.punct(";")?;
            return Ok(Item::Shared(SharedDecl {
                name,
                ty,
                len,
                init,
                pos,
            }));
        }
        if self.is_kw("flux") {
            self.bump();
            let (name, pos) = self.ident("the flux output's name")?;
            self.punct(":")?;
            let ty = self.scalar_type()?;
            self.punct("[")?;
            let len = self.expr()?;
            self.punct("]")?;
            self.punct(";")?;
            return Ok(Item::Flux(FluxDecl { name, ty, len, pos }));
        }
        if self.is_kw("phase") {
            let pos = self.pos();
            self.bump();
            let (name, _) = self.ident("the phase's name")?;
            let repeat = if self.is_kw("for") {
                self.bump();
                let (var, _) = self.ident("the repetition variable")?;
                self.kw("in")?;
                let zpos = self.pos();
                match self.bump().tok {
                    Tok::Int(0) => {}
                    _ => {
                        return Err(IrError::Parse {
                            file: self.file.to_string(),
                            pos: zpos,
                            expected: "`0` (repetitions count from 0)".into(),
                            found: self.toks[self.at - 1].tok.describe(),
                        })
                    }
                }
                self.punct("..")?;
                let count = self.unary()?;
                Some((var, count))
            } else {
                None
            };
            let over = if self.is_kw("over") {
                self.bump();
                Some(self.unary()?)
            } else {
                None
            };
            self.punct("{")?;
            let mut body = Vec::new();
            while !self.is_punct("}") {
                body.push(self.stmt()?);
            }
            self.punct("}")?;
            return Ok(Item::Phase(PhaseDecl {
                name,
                repeat,
                over,
                body,
                pos,
            }));
        }
        Ok(Item::Stmt(self.stmt()?))
    }

    fn stmt(&mut self) -> Result<Stmt, IrError> {
        let pos = self.pos();
        if self.is_kw("let") {
            self.bump();
            let (name, _) = self.ident("the name to bind")?;
            let ty = if self.eat_punct(":") {
                Some(self.scalar_type()?)
            } else {
                None
            };
            self.punct("=")?;
            let value = self.expr()?;
            self.punct(";")?;
            return Ok(Stmt::Let {
                name,
                ty,
                value,
                pos,
            });
        }
        if self.is_kw("emit") {
            self.bump();
            let (flux, _) = self.ident("a flux output's name")?;
            self.punct("[")?;
            let index = self.expr()?;
            self.punct("]")?;
            self.punct("+=")?;
            let value = self.expr()?;
            let guard = self.guard()?;
            self.punct(";")?;
            return Ok(Stmt::Emit {
                flux,
                index,
                value,
                guard,
                pos,
            });
        }
        if self.is_kw("d") && matches!(self.peek2(), Tok::Punct("(")) {
            self.bump();
            self.punct("(")?;
            let (name, _) = self.ident("a state or shared sub-field name")?;
            let index = if self.eat_punct("[") {
                let e = self.expr()?;
                self.punct("]")?;
                Some(e)
            } else {
                None
            };
            self.punct(")")?;
            self.punct("/")?;
            self.kw("dt")?;
            return match index {
                None => {
                    if self.is_punct("+=") {
                        return Err(self.expected("`=` (a state has one rate: `d(x)/dt = …`)"));
                    }
                    self.punct("=")?;
                    let value = self.expr()?;
                    self.punct(";")?;
                    Ok(Stmt::Rate {
                        state: name,
                        value,
                        pos,
                    })
                }
                Some(index) => {
                    if self.is_punct("=") {
                        return Err(self.expected(
                            "`+=` (every trajectory adds to a shared element's rate: `d(s[k])/dt += …`)",
                        ));
                    }
                    self.punct("+=")?;
                    let value = self.expr()?;
                    let guard = self.guard()?;
                    self.punct(";")?;
                    Ok(Stmt::Drive {
                        shared: name,
                        index,
                        value,
                        guard,
                        pos,
                    })
                }
            };
        }
        if let Tok::Ident(_) = self.peek() {
            if matches!(self.peek2(), Tok::Punct(":=")) {
                let (state, _) = self.ident("a state name")?;
                self.punct(":=")?;
                let value = self.expr()?;
                self.punct(";")?;
                return Ok(Stmt::Jump { state, value, pos });
            }
        }
        Err(self.expected("a statement (`state`, `shared`, `flux`, `let`, `d(x)/dt = …`, `x := …`, `emit`, `phase`)"))
    }

    fn guard(&mut self) -> Result<Option<Expr>, IrError> {
        if self.is_kw("if") {
            self.bump();
            Ok(Some(self.expr()?))
        } else {
            Ok(None)
        }
    }

    fn expr(&mut self) -> Result<Expr, IrError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            return Err(self.expected(&format!("an expression nested at most {MAX_DEPTH} deep")));
        }
        let r = self.binary(0);
        self.depth -= 1;
        r
    }

    fn binary(&mut self, min_level: usize) -> Result<Expr, IrError> {
        const LEVELS: &[&[(&str, BinOp)]] = &[
            &[("||", BinOp::Or)],
            &[("&&", BinOp::And)],
            &[
                ("==", BinOp::Eq),
                ("!=", BinOp::Ne),
                ("<", BinOp::Lt),
                ("<=", BinOp::Le),
                (">", BinOp::Gt),
                (">=", BinOp::Ge),
            ],
            &[("|", BinOp::BitOr)],
            &[("^", BinOp::BitXor)],
            &[("&", BinOp::BitAnd)],
            &[("<<", BinOp::Shl), (">>", BinOp::Shr)],
            &[("+", BinOp::Add), ("-", BinOp::Sub)],
            &[("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Rem)],
        ];
        if min_level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(min_level + 1)?;
        loop {
            let op = LEVELS[min_level]
                .iter()
                .find(|(s, _)| self.is_punct(s))
                .map(|(_, op)| *op);
            let Some(op) = op else { break };
            let pos = self.pos();
            self.bump();
            let rhs = self.binary(min_level + 1)?;
            // Comparisons do not chain: `a < b < c` is an error, not `(a < b) < c`.
            if op.is_comparison() {
                if let Some(p) = LEVELS[min_level].iter().find(|(s, _)| self.is_punct(s)) {
                    return Err(self.expected(&format!(
                        "no second comparison `{}` (comparisons do not chain; use `&&`)",
                        p.0
                    )));
                }
            }
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                pos,
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, IrError> {
        let pos = self.pos();
        let op = if self.is_punct("-") {
            Some(UnaryOp::Neg)
        } else if self.is_punct("!") {
            Some(UnaryOp::Not)
        } else {
            None
        };
        if let Some(op) = op {
            self.bump();
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                self.depth -= 1;
                return Err(
                    self.expected(&format!("an expression nested at most {MAX_DEPTH} deep"))
                );
            }
            let e = self.unary();
            self.depth -= 1;
            return Ok(Expr {
                kind: ExprKind::Unary(op, Box::new(e?)),
                pos,
            });
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, IrError> {
        let pos = self.pos();
        match self.peek().clone() {
            Tok::Float(v) => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Float(v),
                    pos,
                })
            }
            Tok::Int(v) => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Int(v),
                    pos,
                })
            }
            Tok::IntTy(v, ty) => {
                // `3u` is `u32(3)`, `3i` is `i32(3)`.
                self.bump();
                let lit = Expr {
                    kind: ExprKind::Int(v),
                    pos,
                };
                Ok(Expr {
                    kind: ExprKind::Call(ty.to_string(), vec![lit]),
                    pos,
                })
            }
            Tok::Punct("(") => {
                self.bump();
                let e = self.expr()?;
                self.punct(")")?;
                Ok(e)
            }
            Tok::Ident(s) if s == "true" || s == "false" => {
                self.bump();
                Ok(Expr {
                    kind: ExprKind::Bool(s == "true"),
                    pos,
                })
            }
            Tok::Ident(s) if !is_keyword(&s) || ScalarType::from_name(&s).is_some() => {
                self.bump();
                if self.eat_punct("(") {
                    let mut args = Vec::new();
                    if !self.is_punct(")") {
                        loop {
                            args.push(self.expr()?);
                            if !self.eat_punct(",") {
                                break;
                            }
                        }
                    }
                    self.punct(")")?;
                    Ok(Expr {
                        kind: ExprKind::Call(s, args),
                        pos,
                    })
                } else if self.eat_punct("[") {
                    let idx = self.expr()?;
                    self.punct("]")?;
                    Ok(Expr {
                        kind: ExprKind::Index(s, Box::new(idx)),
                        pos,
                    })
                } else {
                    Ok(Expr {
                        kind: ExprKind::Name(s),
                        pos,
                    })
                }
            }
            _ => Err(self.expected("an expression")),
        }
    }
}

/// Words that cannot name a variable.
fn is_keyword(s: &str) -> bool {
    matches!(
        s,
        "field"
            | "state"
            | "shared"
            | "flux"
            | "phase"
            | "let"
            | "emit"
            | "for"
            | "in"
            | "over"
            | "if"
            | "true"
            | "false"
            | "f32"
            | "f64"
            | "i32"
            | "u32"
            | "bool"
    )
}
