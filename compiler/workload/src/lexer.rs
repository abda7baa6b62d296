//! The lexer (logos). Hyphenated names (`INPUT-OUTPUT`, `step-2`) are lexed as words and
//! `-` and joined by the parser when nothing separates them, so that `a.x->b.y` lexes as
//! `a . x -> b . y`.

use logos::Logos;

/// A token kind.
#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(skip r"[ \t\r\n\x0C]+")]
#[logos(skip(r"(#|//)[^\n]*", allow_greedy = true))]
pub enum Tok {
    #[regex(r"[A-Za-z][A-Za-z0-9_]*")]
    Word,
    #[regex(r"[0-9]+")]
    Number,
    /// `'...'` (raw: no escapes, like the seed grammar's STRING); `false` when unterminated.
    #[token("'", single_quoted)]
    Single(bool),
    /// `"..."` with the escapes `\\`, `\"`, `\n`, `\t`; `false` when unterminated.
    #[token("\"", double_quoted)]
    Double(bool),
    #[token("->")]
    Arrow,
    #[token("-")]
    Minus,
    #[token(".")]
    Dot,
    #[token(":")]
    Colon,
    #[token(";")]
    Semi,
    #[token(",")]
    Comma,
    #[token("=")]
    Eq,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    /// Any other character (logos errors are mapped to this).
    Unknown,
}

fn single_quoted(lex: &mut logos::Lexer<Tok>) -> bool {
    match lex.remainder().find('\'') {
        Some(i) => {
            lex.bump(i + 1);
            true
        }
        None => {
            lex.bump(lex.remainder().len());
            false
        }
    }
}

fn double_quoted(lex: &mut logos::Lexer<Tok>) -> bool {
    let rest = lex.remainder().as_bytes();
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            b'\\' => i += 2,
            b'"' => {
                lex.bump(i + 1);
                return true;
            }
            _ => i += 1,
        }
    }
    lex.bump(rest.len());
    false
}

/// A token with its byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
}

/// Splits `text` into tokens; never fails (unknown characters become [`Tok::Unknown`]).
pub fn tokenize(text: &str) -> Vec<Token> {
    let mut lex = Tok::lexer(text);
    let mut out = Vec::new();
    while let Some(r) = lex.next() {
        let span = lex.span();
        out.push(Token {
            kind: r.unwrap_or(Tok::Unknown),
            start: span.start,
            end: span.end.min(text.len()),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Tok> {
        tokenize(text).into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn arrows_ports_and_hyphens() {
        use Tok::*;
        assert_eq!(
            kinds("a.x->b.y INPUT-OUTPUT # comment\n[3]"),
            [
                Word, Dot, Word, Arrow, Word, Dot, Word, Word, Minus, Word, LBracket, Number,
                RBracket
            ]
        );
        assert_eq!(
            kinds("'it''s' \"a\\\"b\" 'open"),
            [Single(true), Single(true), Double(true), Single(false)]
        );
        assert_eq!(kinds("\"x\\"), [Double(false)]);
        assert_eq!(kinds("@ // c\n$"), [Unknown, Unknown]);
    }
}
