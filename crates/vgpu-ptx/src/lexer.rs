//! The PTX lexer: words, numbers, strings and punctuation with their line:col;
//! comments skipped.

use crate::error::PtxError;
use vgpu_ir::source::Cursor;

/// The kind of a token.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// A word: identifier, directive (`.reg`), opcode (`ld.global.f32`),
    /// register (`%r1`) or number (`42`, `0f3F800000`, `1.5`).
    Word(String),
    /// A string literal (contents).
    Str(String),
    /// One punctuation character.
    Punct(char),
}

/// A token with its place.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub tok: Tok,
    pub line: u32,
    pub col: u32,
}

fn word_start(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.')
}

fn word_cont(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.')
}

/// Splits PTX text into tokens.
pub(crate) fn lex(text: &str, file: &str) -> Result<Vec<Token>, PtxError> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let err = |line: u32, col: u32, msg: String| PtxError::Parse {
        file: file.to_string(),
        line,
        col,
        msg,
    };
    loop {
        let mut cur = Cursor { i, line, col };
        cur.skip_trivia(&chars)
            .map_err(|u| err(u.line, u.col, "unterminated /* comment".into()))?;
        (i, line, col) = (cur.i, cur.line, cur.col);
        let Some(&c) = chars.get(i) else { break };
        let (tl, tc) = (line, col);
        if c == '"' {
            let mut s = String::new();
            i += 1;
            col += 1;
            loop {
                match chars.get(i) {
                    None | Some('\n') => return Err(err(tl, tc, "unterminated string".into())),
                    Some('"') => {
                        i += 1;
                        col += 1;
                        break;
                    }
                    Some(&ch) => {
                        s.push(ch);
                        i += 1;
                        col += 1;
                    }
                }
            }
            toks.push(Token {
                tok: Tok::Str(s),
                line: tl,
                col: tc,
            });
            continue;
        }
        if word_start(c) {
            let start = i;
            i += 1;
            while i < chars.len() {
                let ch = chars[i];
                let exponent_sign = (ch == '+' || ch == '-')
                    && chars[start].is_ascii_digit()
                    && matches!(chars[i - 1], 'e' | 'E')
                    && !chars[start..i].iter().any(|&x| x == 'x' || x == 'X')
                    && !matches!(chars.get(start + 1), Some('f' | 'd' | 'F' | 'D'));
                if word_cont(ch) || exponent_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            let w: String = chars[start..i].iter().collect();
            col += (i - start) as u32;
            toks.push(Token {
                tok: Tok::Word(w),
                line: tl,
                col: tc,
            });
            continue;
        }
        if "{}[]()<>,;:+-@!|=*".contains(c) {
            toks.push(Token {
                tok: Tok::Punct(c),
                line: tl,
                col: tc,
            });
            i += 1;
            col += 1;
            continue;
        }
        return Err(err(tl, tc, format!("unexpected character {c:?}")));
    }
    Ok(toks)
}
