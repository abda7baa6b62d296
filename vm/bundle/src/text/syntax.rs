//! The pieces of the IR text form that both the printer and the reader use: words and quoted
//! strings, types, values, source locations, and a cursor over one line.
//!
//! The printer checks every piece it prints with the reader's own functions and falls back to
//! a form that always reads back (a quoted word, an inline struct type, a raw value, a raw
//! location), so print -> read gives back the same data by construction.

use std::sync::Arc;

use pnet_stdlib::{StructType, Type, Value};

use crate::ir::{SourceFile, SourceFileId, SourceSpan};

/// An error of the text reader: one-based line and column (in bytes) and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl std::fmt::Display for TextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for TextError {}

/// Maximum nesting of types in the text.
pub const MAX_TYPE_DEPTH: usize = 64;

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_.-/+$#".contains(c)
}

/// Whether `s` prints bare (else it is quoted).
pub fn is_word(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| is_word_char(c) && c != '#')
}

/// `s` quoted, with `"`, `\` and control characters escaped.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `s` bare when it is a word, else quoted.
pub fn word(s: &str) -> String {
    if is_word(s) { s.to_string() } else { quote(s) }
}

/// The text of a value: literal syntax when it reads back as the same value, else
/// `postcard(HEX)` (NaN, infinities, `i32::MIN`, ...).
pub fn value_text(v: &Value) -> String {
    let t = v.to_string();
    if !t.contains('\n')
        && !t.starts_with("postcard(")
        && pnet_stdlib::literal::parse_literal(&t).as_ref() == Ok(v)
    {
        return t;
    }
    let bytes = postcard::to_stdvec(v).unwrap_or_default();
    let mut s = String::from("postcard(");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s.push(')');
    s
}

/// Reads [`value_text`]; an error carries the byte offset of the problem in `text`.
pub fn parse_value(text: &str) -> Result<Value, (usize, String)> {
    let lead = text.len() - text.trim_start().len();
    let t = text.trim();
    if let Some(hex) = t
        .strip_prefix("postcard(")
        .and_then(|h| h.strip_suffix(')'))
    {
        if hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err((lead, "bad hex in postcard(...)".into()));
        }
        let bytes: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0))
            .collect();
        return postcard::from_bytes(&bytes)
            .map_err(|e| (lead, format!("bad postcard value: {e}")));
    }
    pnet_stdlib::literal::parse_literal(t).map_err(|e| (lead + e.offset, e.message))
}

const TYPE_NAMES: &[&str] = &[
    "control",
    "bool",
    "int",
    "long",
    "float",
    "double",
    "char",
    "string",
    "bitset",
    "bytearray",
    "bigint",
    "any",
    "list",
    "set",
    "map",
    "unsigned",
    "struct",
    "shared",
];

fn struct_ref_ok(s: &StructType, structs: &[StructType]) -> bool {
    is_word(&s.name)
        && !TYPE_NAMES.contains(&&*s.name)
        && !s.name.starts_with("shared_")
        && structs.iter().find(|t| t.name == s.name) == Some(s)
}

/// The text of a type; struct types print by name when `structs` resolves the name to the
/// same type, else inline (`struct name { x: long }`).
pub fn type_text(t: &Type, structs: &[StructType]) -> String {
    let mut out = String::new();
    write_type(&mut out, t, structs);
    out
}

fn write_type(out: &mut String, t: &Type, structs: &[StructType]) {
    match t {
        Type::Shared(p) if is_word(p) && !p.contains('.') => {
            out.push_str("shared_");
            out.push_str(p);
        }
        Type::Shared(p) => {
            out.push_str("shared ");
            out.push_str(&quote(p));
        }
        Type::List(e) if !e.is_any() => {
            out.push_str("list<");
            write_type(out, e, structs);
            out.push('>');
        }
        Type::Set(e) if !e.is_any() => {
            out.push_str("set<");
            write_type(out, e, structs);
            out.push('>');
        }
        Type::Map(k, v) if !(k.is_any() && v.is_any()) => {
            out.push_str("map<");
            write_type(out, k, structs);
            out.push_str(", ");
            write_type(out, v, structs);
            out.push('>');
        }
        Type::Struct(s) if struct_ref_ok(s, structs) => out.push_str(&s.name),
        Type::Struct(s) => {
            out.push_str("struct ");
            write_struct_body(out, s, structs);
        }
        other => out.push_str(&other.to_string()),
    }
}

/// `name { f: T, g: U }`.
pub fn write_struct_body(out: &mut String, s: &StructType, structs: &[StructType]) {
    out.push_str(&word(&s.name));
    out.push_str(" {");
    for (i, (n, t)) in s.fields.iter().enumerate() {
        out.push_str(if i == 0 { " " } else { ", " });
        out.push_str(&word(n));
        out.push_str(": ");
        write_type(out, t, structs);
    }
    out.push_str(" }");
}

/// A cursor over one line of text.
pub struct Cur<'a> {
    pub s: &'a str,
    pub pos: usize,
    pub line: usize,
}

pub type R<T> = Result<T, TextError>;

impl<'a> Cur<'a> {
    pub fn new(s: &'a str, line: usize) -> Cur<'a> {
        Cur { s, pos: 0, line }
    }

    pub fn err_at(&self, pos: usize, message: impl Into<String>) -> TextError {
        TextError {
            line: self.line,
            col: pos + 1,
            message: message.into(),
        }
    }

    pub fn err(&self, message: impl Into<String>) -> TextError {
        self.err_at(self.pos, message)
    }

    pub fn rest(&self) -> &'a str {
        self.s.get(self.pos..).unwrap_or("")
    }

    pub fn ws(&mut self) {
        let r = self.rest();
        self.pos += r.len() - r.trim_start().len();
    }

    /// The position of the next non-blank.
    pub fn here(&mut self) -> usize {
        self.ws();
        self.pos
    }

    pub fn at_end(&mut self) -> bool {
        self.ws();
        self.rest().is_empty()
    }

    pub fn end(&mut self) -> R<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.err(format!("unexpected text: {}", self.rest())))
        }
    }

    /// Consumes `sym` (after blanks) if it comes next.
    pub fn sym(&mut self, sym: &str) -> bool {
        self.ws();
        if self.rest().starts_with(sym) {
            self.pos += sym.len();
            true
        } else {
            false
        }
    }

    pub fn expect_sym(&mut self, sym: &str) -> R<()> {
        if self.sym(sym) {
            Ok(())
        } else {
            Err(self.err(format!("expected `{sym}`")))
        }
    }

    /// The bare word that comes next, without consuming it.
    pub fn peek_bare(&mut self) -> &'a str {
        self.ws();
        let r = self.rest();
        if r.starts_with("->") {
            return "";
        }
        let n = r.find(|c: char| !is_word_char(c)).unwrap_or(r.len());
        &r[..n]
    }

    /// Consumes the keyword `kw` if it comes next as a whole bare word.
    pub fn kw(&mut self, kw: &str) -> bool {
        if self.peek_bare() == kw {
            self.pos += kw.len();
            true
        } else {
            false
        }
    }

    pub fn expect_kw(&mut self, kw: &str) -> R<()> {
        if self.kw(kw) {
            Ok(())
        } else {
            Err(self.err(format!("expected `{kw}`")))
        }
    }

    /// A bare word or a quoted string.
    pub fn word(&mut self) -> R<String> {
        self.ws();
        if self.rest().starts_with('"') {
            return self.quoted();
        }
        let w = self.peek_bare();
        if w.is_empty() {
            return Err(self.err("expected a name"));
        }
        self.pos += w.len();
        Ok(w.to_string())
    }

    pub fn quoted(&mut self) -> R<String> {
        self.ws();
        let start = self.pos;
        if !self.sym("\"") {
            return Err(self.err("expected a quoted string"));
        }
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, '"')) => out.push('"'),
                    Some((_, '\\')) => out.push('\\'),
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((_, 'r')) => out.push('\r'),
                    Some((j, 'u')) => {
                        let r = &self.rest()[j + 1..];
                        let close = r.find('}');
                        let c = r
                            .strip_prefix('{')
                            .and(close)
                            .and_then(|e| u32::from_str_radix(&r[1..e], 16).ok())
                            .and_then(char::from_u32);
                        match (c, close) {
                            (Some(c), Some(e)) => {
                                out.push(c);
                                // Skip the `{...}` part.
                                for _ in 0..=e {
                                    chars.next();
                                }
                            }
                            _ => return Err(self.err_at(self.pos + j, "bad \\u{...} escape")),
                        }
                    }
                    _ => return Err(self.err_at(self.pos + i, "bad escape")),
                },
                c => out.push(c),
            }
        }
        Err(self.err_at(start, "unterminated string"))
    }

    /// A number (decimal).
    pub fn num<T: std::str::FromStr>(&mut self) -> R<T> {
        let w = self.peek_bare();
        let v = w
            .parse::<T>()
            .map_err(|_| self.err(format!("expected a number, found `{w}`")))?;
        self.pos += w.len();
        Ok(v)
    }

    /// An id written `<prefix><number>` (`p3`).
    pub fn id(&mut self, prefix: &str) -> R<u32> {
        let w = self.peek_bare();
        match w.strip_prefix(prefix).and_then(|n| n.parse::<u32>().ok()) {
            Some(n) => {
                self.pos += w.len();
                Ok(n)
            }
            None => Err(self.err(format!("expected {prefix}<number>, found `{w}`"))),
        }
    }

    /// Skips an optional label (one word) before `@`, `->` or the end of the line.
    pub fn label(&mut self) -> R<()> {
        self.ws();
        let r = self.rest();
        if r.is_empty() || r.starts_with('@') || r.starts_with("->") {
            return Ok(());
        }
        self.word().map(|_| ())
    }

    /// A type.
    pub fn ty(&mut self, structs: &[StructType]) -> R<Type> {
        self.ty_depth(structs, 0)
    }

    fn ty_depth(&mut self, structs: &[StructType], depth: usize) -> R<Type> {
        if depth > MAX_TYPE_DEPTH {
            return Err(self.err("type nested too deeply"));
        }
        self.ws();
        let start = self.pos;
        if self.kw("unsigned") {
            if self.kw("int") {
                return Ok(Type::UInt);
            }
            if self.kw("long") {
                return Ok(Type::ULong);
            }
            return Err(self.err("expected `int` or `long` after `unsigned`"));
        }
        if self.kw("shared") {
            return Ok(Type::Shared(Arc::from(self.quoted()?)));
        }
        if self.kw("struct") {
            let s = self.struct_body(structs, depth + 1)?;
            return Ok(Type::Struct(Arc::new(s)));
        }
        let w = self.peek_bare();
        if w.is_empty() {
            return Err(self.err("expected a type"));
        }
        self.pos += w.len();
        let elem = |c: &mut Self| -> R<Option<Box<Type>>> {
            if c.rest().starts_with('<') {
                c.pos += 1;
                let t = c.ty_depth(structs, depth + 1)?;
                c.expect_sym(">")?;
                Ok(Some(Box::new(t)))
            } else {
                Ok(None)
            }
        };
        Ok(match w {
            "list" => Type::List(elem(self)?.unwrap_or(Box::new(Type::Any))),
            "set" => Type::Set(elem(self)?.unwrap_or(Box::new(Type::Any))),
            "map" => {
                if self.rest().starts_with('<') {
                    self.pos += 1;
                    let k = self.ty_depth(structs, depth + 1)?;
                    self.expect_sym(",")?;
                    let v = self.ty_depth(structs, depth + 1)?;
                    self.expect_sym(">")?;
                    Type::Map(Box::new(k), Box::new(v))
                } else {
                    Type::Map(Box::new(Type::Any), Box::new(Type::Any))
                }
            }
            "any" => Type::Any,
            "stack" => return Err(self.err_at(start, "write `list`, not `stack`")),
            _ => match Type::from_name(w) {
                Some(t) => t,
                None => match structs.iter().find(|s| &*s.name == w) {
                    Some(s) => Type::Struct(Arc::new(s.clone())),
                    None => return Err(self.err_at(start, format!("unknown type `{w}`"))),
                },
            },
        })
    }

    /// `name { f: T, ... }`.
    pub fn struct_body(&mut self, structs: &[StructType], depth: usize) -> R<StructType> {
        let name = self.word()?;
        self.expect_sym("{")?;
        let mut fields = Vec::new();
        if !self.sym("}") {
            loop {
                let f = self.word()?;
                self.expect_sym(":")?;
                let t = self.ty_depth(structs, depth)?;
                fields.push((Arc::from(f), t));
                if self.sym("}") {
                    break;
                }
                self.expect_sym(",")?;
            }
        }
        Ok(StructType {
            name: Arc::from(name),
            fields,
        })
    }

    /// An optional location `@ ...` at the end of the line ([`SourceSpan::default`] when
    /// absent).
    pub fn location(&mut self, files: &[SourceFile], ctx: Option<SourceFileId>) -> R<SourceSpan> {
        self.ws();
        if !self.sym("@") {
            return Ok(SourceSpan::default());
        }
        self.ws();
        let at = self.pos;
        let text = self.rest().trim_end();
        self.pos = self.s.len();
        parse_location(text, files, ctx).map_err(|m| self.err_at(at, m))
    }
}

fn offset(file: &SourceFile, line: u32, col: u32) -> Option<u32> {
    let start = *file.line_starts.get((line as usize).checked_sub(1)?)?;
    start.checked_add(col.checked_sub(1)?)
}

/// Reads a location: `#F:START..END` (raw), `[PATH:]L:C-C2` or `[PATH:]L:C-L2:C2` (`PATH`
/// bare or quoted; without it, the file is `ctx`).
pub fn parse_location(
    text: &str,
    files: &[SourceFile],
    ctx: Option<SourceFileId>,
) -> Result<SourceSpan, String> {
    let num = |s: &str| s.parse::<u32>().map_err(|_| format!("bad number `{s}`"));
    if let Some(raw) = text.strip_prefix('#') {
        let (f, range) = raw.split_once(':').ok_or("expected #FILE:START..END")?;
        let (a, b) = range.split_once("..").ok_or("expected #FILE:START..END")?;
        return Ok(SourceSpan {
            file: SourceFileId(num(f)?),
            start: num(a)?,
            end: num(b)?,
        });
    }
    let (left, right) = text.rsplit_once('-').ok_or("expected LINE:COL-...")?;
    let mut parts = left.rsplitn(3, ':');
    let col = num(parts.next().unwrap_or(""))?;
    let line = num(parts.next().ok_or("expected LINE:COL")?)?;
    let file = match parts.next() {
        None => ctx.ok_or("a location without a file here")?,
        Some(p) => {
            let path = if p.starts_with('"') {
                let mut c = Cur::new(p, 0);
                let s = c.quoted().map_err(|e| e.message)?;
                c.end().map_err(|e| e.message)?;
                s
            } else {
                p.to_string()
            };
            let i = files
                .iter()
                .position(|f| f.path == path)
                .ok_or_else(|| format!("unknown file `{path}`"))?;
            SourceFileId(i as u32)
        }
    };
    let (line2, col2) = match right.split_once(':') {
        Some((l, c)) => (num(l)?, num(c)?),
        None => (line, num(right)?),
    };
    let f = files
        .get(file.index())
        .ok_or("the location's file is not in the files table")?;
    let bad = || format!("no such position in {}", f.path);
    Ok(SourceSpan {
        file,
        start: offset(f, line, col).ok_or_else(bad)?,
        end: offset(f, line2, col2).ok_or_else(bad)?,
    })
}

/// The text of a location (without `@`), relative to the file `ctx` when it is the span's.
pub fn location_text(span: SourceSpan, files: &[SourceFile], ctx: Option<SourceFileId>) -> String {
    // `line_col` needs line starts from 0 in order (validation checks it; printing does not
    // rely on validation).
    let usable = |f: &&SourceFile| {
        f.line_starts.first() == Some(&0) && f.line_starts.windows(2).all(|w| w[0] <= w[1])
    };
    if let Some(f) = files.get(span.file.index()).filter(usable) {
        let (l, c) = f.line_col(span.start);
        let (l2, c2) = f.line_col(span.end);
        let end = if l2 == l {
            c2.to_string()
        } else {
            format!("{l2}:{c2}")
        };
        let short = format!("{l}:{c}-{end}");
        let text = if ctx == Some(span.file) {
            short
        } else {
            format!("{}:{short}", word(&f.path))
        };
        if parse_location(&text, files, ctx) == Ok(span) {
            return text;
        }
    }
    format!("#{}:{}..{}", span.file.0, span.start, span.end)
}
