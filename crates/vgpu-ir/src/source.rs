//! What the `.field` lexer and vgpu-ptx's PTX lexer share: skipping
//! whitespace and C-style comments over a source's characters while keeping
//! the 1-based line and column that every parse error names.

/// A position in a source being lexed: the index of the next character and
/// its 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// Index into the characters.
    pub i: usize,
    /// Line (1-based).
    pub line: u32,
    /// Column (1-based, in characters).
    pub col: u32,
}

impl Default for Cursor {
    /// The start of a source.
    fn default() -> Self {
        Cursor {
            i: 0,
            line: 1,
            col: 1,
        }
    }
}

/// An unclosed `/*` comment: where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnclosedComment {
    /// Line of the `/*`.
    pub line: u32,
    /// Column of the `/*`.
    pub col: u32,
}

impl Cursor {
    /// Moves past whitespace, `// …` line comments and `/* … */` comments,
    /// to the next character that is none of them (or the end).
    ///
    /// # Errors
    /// [`UnclosedComment`] for a `/*` without its `*/`.
    pub fn skip_trivia(&mut self, chars: &[char]) -> Result<(), UnclosedComment> {
        while let Some(&c) = chars.get(self.i) {
            let next = chars.get(self.i + 1);
            if c == '\n' {
                self.i += 1;
                self.line += 1;
                self.col = 1;
            } else if c.is_whitespace() {
                self.i += 1;
                self.col += 1;
            } else if c == '/' && next == Some(&'/') {
                while self.i < chars.len() && chars[self.i] != '\n' {
                    self.i += 1;
                    self.col += 1;
                }
            } else if c == '/' && next == Some(&'*') {
                let start = UnclosedComment {
                    line: self.line,
                    col: self.col,
                };
                self.i += 2;
                self.col += 2;
                loop {
                    match chars.get(self.i) {
                        None => return Err(start),
                        Some('*') if chars.get(self.i + 1) == Some(&'/') => {
                            self.i += 2;
                            self.col += 2;
                            break;
                        }
                        Some('\n') => {
                            self.line += 1;
                            self.col = 1;
                        }
                        Some(_) => self.col += 1,
                    }
                    self.i += 1;
                }
            } else {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(s: &str) -> Result<Cursor, UnclosedComment> {
        let chars: Vec<char> = s.chars().collect();
        let mut c = Cursor::default();
        c.skip_trivia(&chars)?;
        Ok(c)
    }

    #[test]
    fn trivia_is_skipped_with_lines_and_columns() {
        assert_eq!(skip("x").unwrap(), Cursor::default());
        let c = skip("  // a\n\t/* b\n c */  x").unwrap();
        assert_eq!((c.i, c.line, c.col), (20, 3, 8));
        assert_eq!(skip("/**/").unwrap().i, 4);
        assert_eq!(
            skip("\n  /* open\n").unwrap_err(),
            UnclosedComment { line: 2, col: 3 }
        );
    }
}
