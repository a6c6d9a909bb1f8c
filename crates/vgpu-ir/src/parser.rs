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

/// The deepest expression the language accepts: the longest path from an
/// expression to a leaf, where parentheses, unary and binary operators, calls
/// and indices each count one level, and so does each operator of a
/// left-nested chain (`x + x + … + x` with N operators is N deep). It bounds
/// the recursion of the parser and of every later pass over the syntax tree
/// (type checking, lowering, dropping), so hostile input cannot overflow the
/// stack; deeper input is a parse error naming this limit and the place.
pub const MAX_EXPR_DEPTH: u32 = 256;

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
                let count = self.unary()?.0;
                Some((var, count))
            } else {
                None
            };
            let over = if self.is_kw("over") {
                self.bump();
                Some(self.unary()?.0)
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
        if self.is_kw("event") {
            return Ok(Item::Event(self.event()?));
        }
        Ok(Item::Stmt(self.stmt()?))
    }

    /// `event NAME: EXPR [rising|falling|both] { ACTION* }` or
    /// `event NAME: EXPR [rising|falling|both] terminate;`, where an ACTION is `x := EXPR;` or
    /// `terminate;`.
    fn event(&mut self) -> Result<EventDecl, IrError> {
        let pos = self.pos();
        self.kw("event")?;
        let (name, _) = self.ident("the event's name")?;
        self.punct(":")?;
        let condition = self.expr()?;
        let direction = match self.peek() {
            Tok::Ident(s) if s == "rising" => Crossing::Rising,
            Tok::Ident(s) if s == "falling" => Crossing::Falling,
            Tok::Ident(s) if s == "both" => Crossing::Both,
            _ => Crossing::Both,
        };
        if matches!(self.peek(), Tok::Ident(s) if s == "rising" || s == "falling" || s == "both") {
            self.bump();
        }
        let mut actions = Vec::new();
        if self.is_kw("terminate") {
            actions.push(EventAction::Terminate(self.pos()));
            self.bump();
            self.punct(";")?;
        } else {
            if !self.is_punct("{") {
                return Err(self.expected(
                    "a direction (`rising`, `falling`, `both`), `{` starting the event's actions, or `terminate;`",
                ));
            }
            self.bump();
            while !self.eat_punct("}") {
                let apos = self.pos();
                if self.is_kw("terminate") {
                    self.bump();
                    self.punct(";")?;
                    actions.push(EventAction::Terminate(apos));
                    continue;
                }
                let (state, _) = self.ident("a jump `x := …;` or `terminate;`")?;
                if !self.is_punct(":=") {
                    return Err(self.expected("`:=` (an event's jump: `x := value;`)"));
                }
                self.bump();
                let value = self.expr()?;
                self.punct(";")?;
                actions.push(EventAction::Jump {
                    state,
                    value,
                    pos: apos,
                });
            }
        }
        Ok(EventDecl {
            name,
            condition,
            direction,
            actions,
            pos,
        })
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
        Ok(self.expr_h()?.0)
    }

    /// The error for an expression nested deeper than [`MAX_EXPR_DEPTH`] at `pos`.
    fn too_deep(&self, pos: Pos) -> IrError {
        IrError::Parse {
            file: self.file.to_string(),
            pos,
            expected: format!(
                "an expression nested at most {MAX_EXPR_DEPTH} deep (parentheses, operators, \
                 calls and indices each count one level, each operator of a chain too: \
                 split long chains with `let`)"
            ),
            found: self
                .toks
                .iter()
                .find(|t| t.pos == pos)
                .map_or_else(|| "a deeper one".into(), |t| t.tok.describe()),
        }
    }

    /// Enters one level of the parser's own recursion.
    fn enter(&mut self) -> Result<(), IrError> {
        if self.depth >= MAX_EXPR_DEPTH {
            return Err(self.too_deep(self.pos()));
        }
        self.depth += 1;
        Ok(())
    }

    /// A node of height `h` (a leaf has height 1), refused above [`MAX_EXPR_DEPTH`].
    fn node(&self, kind: ExprKind, pos: Pos, h: u32) -> Result<(Expr, u32), IrError> {
        if h > MAX_EXPR_DEPTH {
            return Err(self.too_deep(pos));
        }
        Ok((Expr { kind, pos }, h))
    }

    /// An expression and its height (the longest path from it to a leaf).
    fn expr_h(&mut self) -> Result<(Expr, u32), IrError> {
        self.enter()?;
        let r = self.binary(0);
        self.depth -= 1;
        r
    }

    /// The binary operator at the cursor, with its precedence level (0 binds
    /// least: `||`, then `&&`, comparisons, `|`, `^`, `&`, shifts, `+ -`, `* / %`).
    fn peek_binop(&self) -> Option<(usize, BinOp)> {
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
        let Tok::Punct(p) = self.peek() else {
            return None;
        };
        LEVELS
            .iter()
            .enumerate()
            .find_map(|(level, ops)| ops.iter().find(|(s, _)| s == p).map(|(_, op)| (level, *op)))
    }

    /// Operators binding at least as tightly as `min_level`, left-associative,
    /// by precedence climbing: a chain is built in a loop, and the parser
    /// recurses only where precedence rises (at most once per level).
    fn binary(&mut self, min_level: usize) -> Result<(Expr, u32), IrError> {
        let (mut lhs, mut h) = self.unary()?;
        while let Some((level, op)) = self.peek_binop() {
            if level < min_level {
                break;
            }
            let pos = self.pos();
            self.bump();
            let (rhs, rh) = self.binary(level + 1)?;
            // Comparisons do not chain: `a < b < c` is an error, not `(a < b) < c`.
            if op.is_comparison() {
                if let Some((l, next)) = self.peek_binop() {
                    if l == level {
                        return Err(self.expected(&format!(
                            "no second comparison `{}` (comparisons do not chain; use `&&`)",
                            next.symbol()
                        )));
                    }
                }
            }
            // A left-nested chain is as deep as it is long: counted here, so
            // that every later pass over the tree recurses a bounded depth.
            (lhs, h) = self.node(
                ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                pos,
                1 + h.max(rh),
            )?;
        }
        Ok((lhs, h))
    }

    fn unary(&mut self) -> Result<(Expr, u32), IrError> {
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
            self.enter()?;
            let e = self.unary();
            self.depth -= 1;
            let (e, h) = e?;
            return self.node(ExprKind::Unary(op, Box::new(e)), pos, h + 1);
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<(Expr, u32), IrError> {
        let pos = self.pos();
        match self.peek().clone() {
            Tok::Float(v) => {
                self.bump();
                self.node(ExprKind::Float(v), pos, 1)
            }
            Tok::Int(v) => {
                self.bump();
                self.node(ExprKind::Int(v), pos, 1)
            }
            Tok::IntTy(v, ty) => {
                // `3u` is `u32(3)`, `3i` is `i32(3)`.
                self.bump();
                let lit = Expr {
                    kind: ExprKind::Int(v),
                    pos,
                };
                self.node(ExprKind::Call(ty.to_string(), vec![lit]), pos, 2)
            }
            Tok::Punct("(") => {
                self.bump();
                let e = self.expr_h()?;
                self.punct(")")?;
                Ok(e)
            }
            Tok::Ident(s) if s == "true" || s == "false" => {
                self.bump();
                self.node(ExprKind::Bool(s == "true"), pos, 1)
            }
            Tok::Ident(s) if !is_keyword(&s) || ScalarType::from_name(&s).is_some() => {
                self.bump();
                if self.eat_punct("(") {
                    let mut args = Vec::new();
                    let mut h = 0;
                    if !self.is_punct(")") {
                        loop {
                            let (a, ah) = self.expr_h()?;
                            args.push(a);
                            h = h.max(ah);
                            if !self.eat_punct(",") {
                                break;
                            }
                        }
                    }
                    self.punct(")")?;
                    self.node(ExprKind::Call(s, args), pos, h + 1)
                } else if self.eat_punct("[") {
                    let (idx, h) = self.expr_h()?;
                    self.punct("]")?;
                    self.node(ExprKind::Index(s, Box::new(idx)), pos, h + 1)
                } else {
                    self.node(ExprKind::Name(s), pos, 1)
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
            | "event"
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
