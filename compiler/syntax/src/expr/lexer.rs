//! The expression lexer: a logos lexer over raw tokens ([`RawTok`]) and an adapter ([`tokenize`])
//! that turns them into the parser's tokens ([`Tok`]), decoding strings and chars, classifying
//! words (keywords, built-ins by arity, `shared_P`) and reporting lexical errors as diagnostics.
//!
//! Lexical decisions:
//! - Comments `/* ... */` nest; an unterminated one runs to the end of the text.
//! - References `${a.b.c}`: whitespace (spaces, tabs, newlines) is allowed around the names and
//!   the dots (`${ a . b }` is `${a.b}`); names are `[A-Za-z_][A-Za-z0-9_]*`.
//! - A number token is `[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?[A-Za-z0-9_]*`: the generous tail
//!   swallows suffixes, hex digits and garbage alike, and `parse_number` decides.
//! - A char literal is one byte between single quotes, no escapes (`'''` is the quote itself).
//! - Characters that start no token are reported (`unexpected_character`) and skipped.

use logos::{FilterResult, Logos};
use pnet_stdlib::{BinOp, Builtin, Value};

use crate::Diagnostic;
use crate::expr::ast::Ident;
use crate::span::MappedText;

/// Raw tokens, as logos recognises them.
#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(skip r"[ \t\r\n\x0C]+")]
pub enum RawTok {
    /// Only emitted for an unterminated comment (terminated ones are skipped).
    #[token("/*", comment)]
    UnterminatedComment,
    /// `${...}`; `false` when no closing `}` follows the allowed characters.
    #[token("${", reference)]
    Ref(bool),
    /// `"..."`; `false` when unterminated.
    #[token("\"", string)]
    Str(bool),
    #[token("'", char_lit)]
    Char(CharLit),
    #[regex(r"[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?[A-Za-z0-9_]*")]
    Num,
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*")]
    Word,
    #[token(":=")]
    Assign,
    #[token("||")]
    OrOr,
    #[token(":or:")]
    OrWord,
    #[token("|")]
    Bar,
    #[token("&&")]
    AndAnd,
    #[token(":and:")]
    AndWord,
    #[token("&")]
    Amp,
    #[token("<")]
    #[token(":lt:")]
    Lt,
    #[token("<=")]
    #[token(":le:")]
    Le,
    #[token(">")]
    #[token(":gt:")]
    Gt,
    #[token(">=")]
    #[token(":ge:")]
    Ge,
    #[token("==")]
    #[token(":eq:")]
    Eq,
    #[token("!=")]
    #[token(":ne:")]
    Ne,
    #[token("!")]
    Bang,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("->")]
    Arrow,
    #[token("*")]
    Star,
    #[token("**")]
    StarStar,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("^")]
    Caret,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token(",")]
    Comma,
    #[token(";")]
    Semi,
}

/// What followed a `'`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CharLit {
    /// `'c'`
    Byte(u8),
    /// `''` or `'ab'`: closed on the same line, but not exactly one byte.
    NotOneByte,
    /// No closing quote on the same line.
    Unterminated,
}

fn comment(lex: &mut logos::Lexer<RawTok>) -> FilterResult<(), ()> {
    let rest = lex.remainder().as_bytes();
    let mut depth = 1usize;
    let mut i = 0;
    while i < rest.len() {
        if rest[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if rest[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                lex.bump(i);
                return FilterResult::Skip;
            }
        } else {
            i += 1;
        }
    }
    lex.bump(rest.len());
    FilterResult::Emit(())
}

fn reference(lex: &mut logos::Lexer<RawTok>) -> bool {
    let rest = lex.remainder().as_bytes();
    let n = rest
        .iter()
        .take_while(|&&b| b.is_ascii_alphanumeric() || b"_. \t\r\n".contains(&b))
        .count();
    if rest.get(n) == Some(&b'}') {
        lex.bump(n + 1);
        true
    } else {
        lex.bump(n);
        false
    }
}

fn string(lex: &mut logos::Lexer<RawTok>) -> bool {
    let rest = lex.remainder().as_bytes();
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            b'"' => {
                lex.bump(i + 1);
                return true;
            }
            // `\x` never ends the string, whatever `x` is; the adapter checks the escape.
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    lex.bump(rest.len());
    false
}

fn char_lit(lex: &mut logos::Lexer<RawTok>) -> CharLit {
    let rest = lex.remainder().as_bytes();
    if rest.len() >= 2 && rest[1] == b'\'' {
        lex.bump(2);
        return CharLit::Byte(rest[0]);
    }
    match rest
        .iter()
        .take_while(|&&b| b != b'\n')
        .position(|&b| b == b'\'')
    {
        Some(j) => {
            lex.bump(j + 1);
            CharLit::NotOneByte
        }
        None => {
            // Take the character after the quote (if any, and not a newline) with it.
            let n = lex
                .remainder()
                .chars()
                .next()
                .filter(|&c| c != '\n')
                .map_or(0, char::len_utf8);
            lex.bump(n);
            CharLit::Unterminated
        }
    }
}

/// Tokens as the parser sees them.
#[derive(Clone, Debug)]
pub enum Tok<'a> {
    Assign,
    /// `|| :or: |`
    OrOp(BinOp),
    /// `&& :and: &`
    AndOp(BinOp),
    /// comparisons
    CmpOp(BinOp),
    Plus,
    Minus,
    /// `* /`
    MulOp(BinOp),
    /// `div`
    Div,
    /// `%`
    ModOp(BinOp),
    /// `mod`
    Mod,
    /// `** ^`
    PowOp(BinOp),
    Not,
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Semi,
    Arrow,
    True,
    False,
    Pi,
    E,
    List,
    Set,
    Map,
    Struct,
    /// `y` (bytearray literal)
    Y,
    /// A numeric token, not yet checked.
    Num(&'a str),
    /// A string or char literal.
    Lit(Value),
    Ref(Vec<Ident>),
    Fn1(Builtin),
    Fn2(Builtin),
    Fn3(Builtin),
    /// `shared_P`: the place name `P`.
    Shared(Ident),
    /// An unknown word directly followed by `(`.
    UnknownCall(Ident),
    /// Any other unknown word.
    Unknown(Ident),
    /// A malformed token that was already reported.
    Invalid,
}

impl Tok<'_> {
    /// A short description for "expected ..." lists, by the grammar's terminal name.
    pub fn describe_terminal(name: &str) -> String {
        let name = name.trim_matches('"');
        match name {
            "Num" => "number".into(),
            "Lit" => "literal".into(),
            "Ref" => "reference".into(),
            "Fn1" | "Fn2" | "Fn3" | "Shared" | "UnknownCall" => "function".into(),
            "Unknown" => "identifier".into(),
            "Invalid" => "literal".into(),
            "OrOp" => "`||`".into(),
            "AndOp" => "`&&`".into(),
            "CmpOp" => "comparison".into(),
            "MulOp" => "`*`".into(),
            "ModOp" => "`%`".into(),
            "PowOp" => "`**`".into(),
            other => format!("`{}`", other.replace("\\\"", "\"")),
        }
    }
}

/// Splits the text into parser tokens `(start, tok, end)` (byte offsets in `text.text`),
/// pushing a diagnostic for every lexical error.
///
/// `stray` receives the text offsets of characters that start no token (they are skipped, and
/// the parser reports no second error for their statement).
pub fn tokenize<'a>(
    text: &'a MappedText,
    diags: &mut Vec<Diagnostic>,
    stray: &mut Vec<usize>,
) -> Vec<(usize, Tok<'a>, usize)> {
    let src = text.text.as_str();
    let span = |s: usize, e: usize| text.span(s as u32, e as u32);
    let mut raw: Vec<(usize, Result<RawTok, ()>, usize)> = Vec::new();
    let mut lex = RawTok::lexer(src);
    while let Some(t) = lex.next() {
        let r = lex.span();
        raw.push((r.start, t, r.end));
    }
    let mut out = Vec::with_capacity(raw.len());
    for (i, &(s, t, e)) in raw.iter().enumerate() {
        let slice = &src[s..e];
        let tok = match t {
            Err(()) => {
                let c = slice.chars().next().unwrap_or(' ');
                stray.push(s);
                // A lone `=`: an assignment (or a comparison) written as in other languages.
                let d = if c == '=' {
                    Diagnostic::error(
                        "unexpected_character",
                        "unexpected character `=`: use `:=` to assign",
                    )
                    .with_primary(span(s, e), "not an operator")
                    .with_note("help: `:=` assigns (`${x} := 1L`), `==` compares")
                } else {
                    Diagnostic::error(
                        "unexpected_character",
                        format!("unexpected character `{c}`"),
                    )
                    .with_primary(span(s, e), "not part of any token")
                };
                diags.push(d);
                continue;
            }
            Ok(t) => t,
        };
        let tok = match tok {
            RawTok::UnterminatedComment => {
                diags.push(
                    Diagnostic::error("unterminated_comment", "unterminated comment")
                        .with_primary(span(s, s + 2), "this comment is never closed")
                        .with_note("comments nest: every `/*` needs its own `*/`"),
                );
                continue;
            }
            RawTok::Ref(closed) => match reference_path(text, s, e, closed) {
                Ok(path) => Tok::Ref(path),
                Err(d) => {
                    diags.push(d);
                    Tok::Invalid
                }
            },
            RawTok::Str(closed) => {
                if !closed {
                    diags.push(
                        Diagnostic::error("unterminated_string", "unterminated string literal")
                            .with_primary(span(s, e), "no closing `\"`"),
                    );
                    Tok::Invalid
                } else {
                    match unescape(text, s, e) {
                        Ok(v) => Tok::Lit(Value::string(&v)),
                        Err(ds) => {
                            diags.extend(ds);
                            Tok::Invalid
                        }
                    }
                }
            }
            RawTok::Char(c) => match c {
                CharLit::Byte(b) => Tok::Lit(Value::Char(b as i8)),
                CharLit::NotOneByte => {
                    diags.push(
                        Diagnostic::error(
                            "invalid_literal",
                            "a char literal holds exactly one byte",
                        )
                        .with_primary(span(s, e), "not a single byte")
                        .with_note("char literals have no escapes: `'''` is the quote"),
                    );
                    Tok::Invalid
                }
                CharLit::Unterminated => {
                    diags.push(
                        Diagnostic::error("unterminated_char", "unterminated char literal")
                            .with_primary(span(s, e), "no closing `'` on this line"),
                    );
                    Tok::Invalid
                }
            },
            RawTok::Num => Tok::Num(slice),
            RawTok::Word => {
                let next_is_paren = matches!(raw.get(i + 1), Some((_, Ok(RawTok::LParen), _)));
                word(slice, span(s, e), next_is_paren)
            }
            RawTok::Assign => Tok::Assign,
            RawTok::OrOr | RawTok::OrWord => Tok::OrOp(BinOp::Or),
            RawTok::Bar => Tok::OrOp(BinOp::BitOr),
            RawTok::AndAnd | RawTok::AndWord => Tok::AndOp(BinOp::And),
            RawTok::Amp => Tok::AndOp(BinOp::BitAnd),
            RawTok::Lt => Tok::CmpOp(BinOp::Lt),
            RawTok::Le => Tok::CmpOp(BinOp::Le),
            RawTok::Gt => Tok::CmpOp(BinOp::Gt),
            RawTok::Ge => Tok::CmpOp(BinOp::Ge),
            RawTok::Eq => Tok::CmpOp(BinOp::Eq),
            RawTok::Ne => Tok::CmpOp(BinOp::Ne),
            RawTok::Bang => Tok::Not,
            RawTok::Plus => Tok::Plus,
            RawTok::Minus => Tok::Minus,
            RawTok::Arrow => Tok::Arrow,
            RawTok::Star => Tok::MulOp(BinOp::Mul),
            RawTok::StarStar => Tok::PowOp(BinOp::Pow),
            RawTok::Slash => Tok::MulOp(BinOp::Div),
            RawTok::Percent => Tok::ModOp(BinOp::Mod),
            RawTok::Caret => Tok::PowOp(BinOp::IntPow),
            RawTok::LParen => Tok::LParen,
            RawTok::RParen => Tok::RParen,
            RawTok::LBrace => Tok::LBrace,
            RawTok::RBrace => Tok::RBrace,
            RawTok::LBracket => Tok::LBracket,
            RawTok::RBracket => Tok::RBracket,
            RawTok::Comma => Tok::Comma,
            RawTok::Semi => Tok::Semi,
        };
        out.push((s, tok, e));
    }
    out
}

fn word(w: &str, span: crate::Span, next_is_paren: bool) -> Tok<'_> {
    match w {
        "true" => return Tok::True,
        "false" => return Tok::False,
        "pi" => return Tok::Pi,
        "e" => return Tok::E,
        "div" => return Tok::Div,
        "mod" => return Tok::Mod,
        "List" => return Tok::List,
        "Set" => return Tok::Set,
        "Map" => return Tok::Map,
        "Struct" => return Tok::Struct,
        "y" => return Tok::Y,
        _ => {}
    }
    if let Some(place) = w.strip_prefix("shared_")
        && !place.is_empty()
    {
        let start = span.start + "shared_".len() as u32;
        return Tok::Shared(Ident {
            name: place.to_string(),
            span: crate::Span::new(span.file, start.min(span.end), span.end),
        });
    }
    if let Some(b) = Builtin::from_name(w) {
        return match b.arity() {
            1 => Tok::Fn1(b),
            2 => Tok::Fn2(b),
            _ => Tok::Fn3(b),
        };
    }
    let ident = Ident {
        name: w.to_string(),
        span,
    };
    if next_is_paren {
        Tok::UnknownCall(ident)
    } else {
        Tok::Unknown(ident)
    }
}

fn is_ident(s: &str) -> bool {
    let mut cs = s.bytes();
    matches!(cs.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && cs.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The path of `${...}` at `s..e`.
fn reference_path(
    text: &MappedText,
    s: usize,
    e: usize,
    closed: bool,
) -> Result<Vec<Ident>, Diagnostic> {
    let span = |a: usize, b: usize| text.span(a as u32, b as u32);
    if !closed {
        return Err(
            Diagnostic::error("invalid_reference", "unterminated reference")
                .with_primary(span(s, e), "expected `}` after the name")
                .with_note("a reference is `${name}` or `${name.field.field}`"),
        );
    }
    let inner_start = s + 2;
    let inner = &text.text[inner_start..e - 1];
    let mut path = Vec::new();
    let mut off = inner_start;
    for part in inner.split('.') {
        let lead = part.len() - part.trim_start().len();
        let name = part.trim();
        let (a, b) = (off + lead, off + lead + name.len());
        if !is_ident(name) {
            let (msg, sp) = if name.is_empty() {
                ("empty name in reference".to_string(), span(s, e))
            } else {
                (format!("`{name}` is not a valid name"), span(a, b))
            };
            return Err(Diagnostic::error("invalid_reference", msg)
                .with_primary(sp, "in this reference")
                .with_note("a reference is `${name}` or `${name.field.field}`"));
        }
        path.push(Ident {
            name: name.to_string(),
            span: span(a, b),
        });
        off += part.len() + 1;
    }
    Ok(path)
}

/// Decodes the string literal at `s..e` (quotes included).
fn unescape(text: &MappedText, s: usize, e: usize) -> Result<String, Vec<Diagnostic>> {
    let body = &text.text[s + 1..e - 1];
    let mut out = String::with_capacity(body.len());
    let mut errs = Vec::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some((_, c @ ('"' | '\\'))) => out.push(c),
            Some((j, c)) => {
                let (a, b) = (s + 1 + i, s + 1 + j + c.len_utf8());
                errs.push(
                    Diagnostic::error("invalid_escape", format!("invalid escape `\\{c}`"))
                        .with_primary(text.span(a as u32, b as u32), "unknown escape")
                        .with_note("strings know only the escapes `\\\"` and `\\\\`"),
                );
            }
            None => {}
        }
    }
    if errs.is_empty() { Ok(out) } else { Err(errs) }
}
