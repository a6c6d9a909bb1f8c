//! The `.field` lexer: text to tokens with positions.

use crate::error::{IrError, Pos};
use crate::source::Cursor;

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    Float(String),
    Int(u64),
    /// An integer with a type suffix: `3u` (u32) or `3i` (i32).
    IntTy(u64, &'static str),
    /// Punctuation and operators, as text (`(`, `:=`, `<<`, …).
    Punct(&'static str),
    Eof,
}

impl Tok {
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Float(v) => format!("number `{v}`"),
            Tok::Int(v) => format!("number `{v}`"),
            Tok::IntTy(v, t) => format!("number `{v}` ({t})"),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::Eof => "end of input".to_string(),
        }
    }
}

/// A token and where it starts.
#[derive(Clone, Debug)]
pub(crate) struct Token {
    pub tok: Tok,
    pub pos: Pos,
}

const PUNCTS: &[&str] = &[
    "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", ":=", "+=", "..", "->", "(", ")", "{", "}",
    "[", "]", ",", ";", ":", "=", "+", "-", "*", "/", "%", "<", ">", "!", "&", "|", "^",
];

/// Splits `src` into tokens; the last one is `Eof`.
pub(crate) fn lex(file: &str, src: &str) -> Result<Vec<Token>, IrError> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let err = |pos: Pos, expected: &str, found: String| IrError::Parse {
        file: file.to_string(),
        pos,
        expected: expected.to_string(),
        found,
    };
    loop {
        let mut cur = Cursor { i, line, col };
        cur.skip_trivia(&chars).map_err(|u| {
            let pos = Pos {
                line: u.line,
                col: u.col,
            };
            err(pos, "`*/` closing this comment", "end of input".into())
        })?;
        (i, line, col) = (cur.i, cur.line, cur.col);
        let Some(&c) = chars.get(i) else { break };
        let pos = Pos { line, col };
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let s: String = chars[start..i].iter().collect();
            col += (i - start) as u32;
            toks.push(Token {
                tok: Tok::Ident(s),
                pos,
            });
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let start = i;
            let mut is_float = false;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            // A `.` starts a fraction unless it is the range operator `..`.
            if i < chars.len() && chars[i] == '.' && chars.get(i + 1) != Some(&'.') {
                is_float = true;
                i += 1;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    is_float = true;
                    i = j;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let s: String = chars[start..i].iter().collect();
            col += (i - start) as u32;
            let suffix = match chars.get(i) {
                Some('u') if !is_float => Some("u32"),
                Some('i') if !is_float => Some("i32"),
                _ => None,
            };
            if let Some(ty) = suffix {
                if !chars
                    .get(i + 1)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
                {
                    let v = s.parse::<u64>().map_err(|_| {
                        err(pos, "an integer that fits in 64 bits", format!("`{s}`"))
                    })?;
                    toks.push(Token {
                        tok: Tok::IntTy(v, ty),
                        pos,
                    });
                    i += 1;
                    col += 1;
                    continue;
                }
            }
            if i < chars.len() && (chars[i].is_ascii_alphabetic() || chars[i] == '_') {
                return Err(err(
                    Pos { line, col },
                    "an operator or separator after a number",
                    format!("`{}`", chars[i]),
                ));
            }
            let tok = if is_float {
                {
                    s.parse::<f64>()
                        .map_err(|_| err(pos, "a number", format!("`{s}`")))?;
                    Tok::Float(s)
                }
            } else {
                match s.parse::<u64>() {
                    Ok(v) => Tok::Int(v),
                    Err(_) => {
                        return Err(err(
                            pos,
                            "an integer that fits in 64 bits",
                            format!("`{s}`"),
                        ))
                    }
                }
            };
            toks.push(Token { tok, pos });
            continue;
        }
        let rest2: String = chars[i..chars.len().min(i + 2)].iter().collect();
        if let Some(p) = PUNCTS.iter().find(|p| p.len() == 2 && rest2 == **p) {
            toks.push(Token {
                tok: Tok::Punct(p),
                pos,
            });
            i += 2;
            col += 2;
            continue;
        }
        if let Some(p) = PUNCTS.iter().find(|p| p.len() == 1 && p.starts_with(c)) {
            toks.push(Token {
                tok: Tok::Punct(p),
                pos,
            });
            i += 1;
            col += 1;
            continue;
        }
        return Err(err(
            pos,
            "a name, a number or an operator",
            format!("`{}`", c.escape_debug()),
        ));
    }
    toks.push(Token {
        tok: Tok::Eof,
        pos: Pos { line, col },
    });
    Ok(toks)
}
