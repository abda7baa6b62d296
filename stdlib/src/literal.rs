//! Literal syntax: printing values the way GPI-Space shows them, and parsing that syntax back.
//!
//! # Printing
//!
//! Values print in literal syntax, as GPI-Space prints them: `[]`, `true`, `3`, `3L`, `3U`,
//! `3UL`, `3A`, `'c'`, `"s"`, `{ 4096}` / `{}`, `y( 0 127)`, `List (1, 2)`, `Set {1, 2}`,
//! `Map [1 -> 2L]`, `Struct [a := 1, b := 2L]`, `shared_P ("x")`, and the empty forms
//! `List ()`, `Set {}`, `Map []`, `Struct []`, `y()`. Negative numbers print with a leading `-`
//! (`-3L`, `-3A`), which [`parse_literal`] reads back.
//!
//! Deliberate differences from GPI-Space, so that everything except inf/nan reads back exactly:
//! - floats and doubles print the shortest text that reads back as the same number, always with
//!   a `.` or an exponent (`1.5`, `1.0`, `1e20`, `-0.0`, `1.5f`, `1e-7f`) instead of six
//!   significant digits (`1.50000`); infinities print as GPI-Space prints them, `inf`/`-inf`
//!   for doubles and `inff`/`-inff` for floats, NaN as `nan`, and none of them reads back, as
//!   in GPI-Space;
//! - strings print with `"` and `\` escaped (`"a\"b\\c"`), GPI-Space prints them raw.
//!
//! Choices where GPI-Space gives no guidance:
//! - a char is a byte; bytes 0x80..0xFF print as the Unicode characters U+0080..U+00FF
//!   (Latin-1) and `parse_literal` reads any single character up to U+00FF back as that byte;
//! - bytearray bytes print unsigned (`y( 0 255)`); `parse_literal` also accepts -128..-1
//!   (as the bytes 128..255);
//! - bitset words print in decimal, every stored word (trailing zero words included);
//!   `parse_literal` accepts decimal or `0x` hex words. A set of more than 2^16 words (its
//!   elements go up to the largest unsigned long) prints runs of zero words as a skip to a
//!   word index, `{ 1 @288230376151711743 9223372036854775808}` (our extension, see
//!   [`crate::value::bitset`]), which `parse_literal` reads back.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::sync::Arc;

use num_bigint::BigInt;
use num_traits::ToPrimitive;

use crate::value::Shared;
use crate::value::bitset::BitsetBuilder;
use crate::{Type, Value};

/// Why a literal did not parse: a byte offset into the text and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiteralError {
    /// Byte offset of the problem in the parsed text.
    pub offset: usize,
    /// What is wrong (no trailing period).
    pub message: String,
}

impl fmt::Display for LiteralError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for LiteralError {}

/// Maximum nesting of collections, structs and shared values in [`parse_literal`].
pub const MAX_LITERAL_DEPTH: usize = 200;

/// Parses one value in literal syntax (as printed by `Display`, and as accepted by `-p PORT=VALUE`
/// on the command line): `[]`, `true`, `3`, `-3L`, `3UL`, `3A`, `1.5f`, `'c'`, `"s"`, `{ 1 2}`,
/// `y( 0 127)`, `List (...)`, `Set {...}`, `Map [k -> v]`, `Struct [f := v]`, `shared_P (v)`.
/// Leading and trailing whitespace is allowed.
///
/// As in the expression language (and GPI-Space), a sign is part of a number (`-3L`, `+1f`) and
/// applies after the range check, wrapping for unsigned types: `-1U` is 4294967295U, and
/// `-2147483648` is out of range (so `i32::MIN` prints as a text that does not read back, as in
/// GPI-Space). Bytes of `y(..)` may be written in hex (`y(0x41)`). Duplicate set
/// elements collapse; a duplicate map key keeps the last entry; a duplicate struct field is an
/// error. Nesting deeper than [`MAX_LITERAL_DEPTH`] is an error. Never panics.
pub fn parse_literal(text: &str) -> Result<Value, LiteralError> {
    let mut p = Parser {
        s: text,
        pos: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.ws();
    if p.pos != text.len() {
        return Err(p.err("unexpected text after the value"));
    }
    Ok(v)
}

/// Parses a value in literal syntax for a command line; `what` names it in the message:
/// `-p n: '1L +' is not a value: ... (at character 4)`.
pub fn parse_value_of(what: &str, text: &str) -> Result<Value, String> {
    parse_literal(text).map_err(|e| {
        format!(
            "{what}: '{text}' is not a value: {} (at character {})",
            e.message,
            e.offset + 1
        )
    })
}

/// Parses `NAME=VALUE` (the argument of `-p PORT=VALUE`, `pnetput --place`, `put-token`): a
/// non-empty name, then a value in literal syntax. `flag` names the option and `kind` the
/// name in messages (`-p`, `port`): `-p 'n': expected PORT=VALUE`, `-p '=1': empty port
/// name`, `-p n: '1L +' is not a value: ... (at character 4)`.
pub fn parse_binding(flag: &str, kind: &str, text: &str) -> Result<(String, Value), String> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(format!(
            "{flag} '{text}': expected {}=VALUE",
            kind.to_uppercase()
        ));
    };
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("{flag} '{text}': empty {kind} name"));
    }
    let value = parse_value_of(&format!("{flag} {name}"), value)?;
    Ok((name.to_string(), value))
}

/// Parses a numeric literal token without sign (`23`, `23L`, `23U`, `23UL`, `23A`, `0x1f`,
/// `1.5f`, `1f`, `1.5`, `1e3`; suffixes case-insensitive), range-checked for its type.
/// Used by the expression lexer too.
///
/// Details: integer suffixes are `L`, `U`, `UL`, `A` (bigint) and `F` (`1f` is a float);
/// hex literals (`0x`/`0X`) take `L`, `U`, `UL` (`A` and `F` are hex digits there, so `0x1A` is
/// the int 26); fractional literals are digits, an optional `.` with optional digits, an optional
/// exponent `e[+-]digits`, and an optional `f` suffix (`1.`, `1e-3f`). A fractional literal
/// that overflows to infinity is out of range; one that underflows reads as zero.
pub fn parse_number(text: &str) -> Result<Value, String> {
    parse_number_signed(text, false)
}

/// The value of a number literal preceded by `-`: the sign applies after the range check, and
/// wraps for unsigned types (`-1U` is 4294967295U, as in GPI-Space); floats, doubles, ints,
/// longs and bigints are negated. Other values are returned unchanged.
pub fn negate(v: Value) -> Value {
    match v {
        Value::Int(i) => Value::Int(i.wrapping_neg()),
        Value::Long(i) => Value::Long(i.wrapping_neg()),
        Value::UInt(i) => Value::UInt(i.wrapping_neg()),
        Value::ULong(i) => Value::ULong(i.wrapping_neg()),
        Value::Float(x) => Value::Float(-x),
        Value::Double(x) => Value::Double(-x),
        Value::Bigint(i) => Value::bigint(-&*i),
        other => other,
    }
}

/// [`parse_number`] of `-text` when `negative`: the range check applies to `text`, then the
/// sign ([`negate`]).
fn parse_number_signed(text: &str, negative: bool) -> Result<Value, String> {
    let v = parse_magnitude(text, negative)?;
    Ok(if negative { negate(v) } else { v })
}

/// The number `text` without its sign, range-checked; `negative` only for messages.
fn parse_magnitude(text: &str, negative: bool) -> Result<Value, String> {
    let b = text.as_bytes();
    let shown = || {
        if negative {
            format!("-{text}")
        } else {
            text.to_string()
        }
    };
    let (digits, suffix, radix) = if b.len() > 1 && b[0] == b'0' && (b[1] == b'x' || b[1] == b'X') {
        let n = b[2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        (&text[2..2 + n], &text[2 + n..], 16)
    } else {
        let int_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let mut end = int_len;
        let mut fractional = false;
        if b.get(end) == Some(&b'.') {
            fractional = true;
            end += 1;
            end += b[end..].iter().take_while(|c| c.is_ascii_digit()).count();
        }
        if matches!(b.get(end), Some(b'e' | b'E')) {
            let mut e = end + 1;
            if matches!(b.get(e), Some(b'+' | b'-')) {
                e += 1;
            }
            let exp_digits = b[e.min(b.len())..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            if exp_digits > 0 {
                fractional = true;
                end = e + exp_digits;
            }
        }
        if int_len == 0 {
            return Err(format!("invalid number `{}`", shown()));
        }
        if fractional {
            let num = &text[..end];
            let suffix = &text[end..];
            return match suffix {
                "" => match num.parse::<f64>() {
                    Ok(x) if x.is_finite() => Ok(Value::Double(x)),
                    _ => Err(format!("{} is out of range for double", shown())),
                },
                "f" | "F" => match num.parse::<f32>() {
                    Ok(x) if x.is_finite() => Ok(Value::Float(x)),
                    _ => Err(format!("{} is out of range for float", shown())),
                },
                _ => Err(format!("invalid suffix `{suffix}` in number `{}`", shown())),
            };
        }
        (&text[..int_len], &text[int_len..], 10)
    };
    if digits.is_empty() {
        return Err(format!("invalid number `{}`", shown()));
    }
    let Some(magnitude) = BigInt::parse_bytes(digits.as_bytes(), radix) else {
        return Err(format!("invalid number `{}`", shown()));
    };
    let out_of_range = |ty: &str| format!("{} is out of range for {ty}", shown());
    match suffix.to_ascii_lowercase().as_str() {
        "" => magnitude
            .to_i32()
            .map(Value::Int)
            .ok_or_else(|| out_of_range("int")),
        "l" => magnitude
            .to_i64()
            .map(Value::Long)
            .ok_or_else(|| out_of_range("long")),
        "u" => magnitude
            .to_u32()
            .map(Value::UInt)
            .ok_or_else(|| out_of_range("unsigned int")),
        "ul" => magnitude
            .to_u64()
            .map(Value::ULong)
            .ok_or_else(|| out_of_range("unsigned long")),
        "a" if radix == 10 => Ok(Value::bigint(magnitude)),
        "f" if radix == 10 => match digits.parse::<f32>() {
            Ok(x) if x.is_finite() => Ok(Value::Float(x)),
            _ => Err(out_of_range("float")),
        },
        _ => Err(format!("invalid suffix `{suffix}` in number `{}`", shown())),
    }
}

/// The hand-written literal parser; `pos` is always at a char boundary.
struct Parser<'a> {
    s: &'a str,
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, message: impl Into<String>) -> LiteralError {
        LiteralError {
            offset: self.pos,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    fn peek_char(&self) -> Option<char> {
        self.s.get(self.pos..).and_then(|r| r.chars().next())
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), LiteralError> {
        self.ws();
        if self.eat(b) {
            Ok(())
        } else {
            Err(self.err(format!("expected `{}`", char::from(b))))
        }
    }

    /// Scans `[A-Za-z0-9_]*` (plus `+`/`-` right after an exponent `e` of a decimal number when
    /// `number`), returning the token.
    fn token(&mut self, number: bool) -> &str {
        let start = self.pos;
        let bytes = self.s.as_bytes();
        let hex = bytes[start..].starts_with(b"0x") || bytes[start..].starts_with(b"0X");
        while let Some(b) = self.peek() {
            let sign_after_exp = number
                && !hex
                && (b == b'+' || b == b'-')
                && self.pos > start
                && matches!(bytes[self.pos - 1], b'e' | b'E');
            if b.is_ascii_alphanumeric() || b == b'_' || (number && b == b'.') || sign_after_exp {
                self.pos += 1;
            } else {
                break;
            }
        }
        &self.s[start..self.pos]
    }

    fn enter(&mut self) -> Result<(), LiteralError> {
        self.depth += 1;
        if self.depth > MAX_LITERAL_DEPTH {
            return Err(self.err("literal nested too deeply"));
        }
        Ok(())
    }

    fn value(&mut self) -> Result<Value, LiteralError> {
        self.ws();
        let start = self.pos;
        let Some(b) = self.peek() else {
            return Err(self.err("expected a value"));
        };
        match b {
            b'[' => {
                self.pos += 1;
                self.expect(b']')?;
                Ok(Value::Control)
            }
            b'\'' => self.char_lit(),
            b'"' => self.string_lit(),
            b'{' => self.bitset(),
            b'-' | b'+' | b'0'..=b'9' => self.number(),
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let word = self.token(false);
                match word {
                    "true" => Ok(Value::Bool(true)),
                    "false" => Ok(Value::Bool(false)),
                    "y" => self.bytearray(),
                    "List" => {
                        self.enter()?;
                        let items = self.sequence(b'(', b')', Self::value)?;
                        self.depth -= 1;
                        Ok(Value::List(items))
                    }
                    "Set" => {
                        self.enter()?;
                        let items = self.sequence(b'{', b'}', Self::value)?;
                        self.depth -= 1;
                        Ok(Value::Set(items.into_iter().collect::<BTreeSet<_>>()))
                    }
                    "Map" => {
                        self.enter()?;
                        let items = self.sequence(b'[', b']', |p| {
                            let k = p.value()?;
                            p.ws();
                            if !p.s[p.pos..].starts_with("->") {
                                return Err(p.err("expected `->`"));
                            }
                            p.pos += 2;
                            let v = p.value()?;
                            Ok((k, v))
                        })?;
                        self.depth -= 1;
                        Ok(Value::Map(items.into_iter().collect::<BTreeMap<_, _>>()))
                    }
                    "Struct" => {
                        self.enter()?;
                        let items = self.sequence(b'[', b']', |p| {
                            p.ws();
                            let at = p.pos;
                            let name = p.token(false).to_string();
                            if !crate::ty::is_identifier(&name) {
                                p.pos = at;
                                return Err(p.err("expected a field name"));
                            }
                            p.ws();
                            if !p.s[p.pos..].starts_with(":=") {
                                return Err(p.err("expected `:=`"));
                            }
                            p.pos += 2;
                            let v = p.value()?;
                            Ok((at, Arc::<str>::from(name), v))
                        })?;
                        self.depth -= 1;
                        let mut fields: Vec<(Arc<str>, Value)> = Vec::with_capacity(items.len());
                        for (at, name, v) in items {
                            if fields.iter().any(|(n, _)| *n == name) {
                                return Err(LiteralError {
                                    offset: at,
                                    message: format!("duplicate field `{name}`"),
                                });
                            }
                            fields.push((name, v));
                        }
                        Ok(Value::Struct(fields))
                    }
                    w => match w.strip_prefix("shared_") {
                        Some(place) if crate::ty::is_identifier(place) => {
                            let place = Arc::<str>::from(place);
                            self.enter()?;
                            self.expect(b'(')?;
                            let value = self.value()?;
                            self.expect(b')')?;
                            self.depth -= 1;
                            Ok(Value::Shared(Box::new(Shared { place, value })))
                        }
                        _ => {
                            let w = w.to_string();
                            self.pos = start;
                            Err(self.err(format!("unknown literal `{w}`")))
                        }
                    },
                }
            }
            _ => Err(self.err("expected a value")),
        }
    }

    /// `open item (, item)* close` or `open close`, with whitespace anywhere.
    fn sequence<T>(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Result<T, LiteralError>,
    ) -> Result<Vec<T>, LiteralError> {
        self.expect(open)?;
        let mut items = Vec::new();
        self.ws();
        if self.eat(close) {
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            self.ws();
            if self.eat(close) {
                return Ok(items);
            }
            if !self.eat(b',') {
                return Err(self.err(format!("expected `,` or `{}`", char::from(close))));
            }
        }
    }

    fn number(&mut self) -> Result<Value, LiteralError> {
        let start = self.pos;
        let negative = self.eat(b'-');
        if !negative {
            self.eat(b'+');
        }
        if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
            return Err(self.err("expected a digit"));
        }
        let tok = self.token(true);
        parse_number_signed(tok, negative).map_err(|message| LiteralError {
            offset: start,
            message,
        })
    }

    fn char_lit(&mut self) -> Result<Value, LiteralError> {
        self.pos += 1;
        let Some(c) = self.peek_char() else {
            return Err(self.err("unterminated char literal"));
        };
        let Ok(byte) = u8::try_from(u32::from(c)) else {
            return Err(self.err("a char literal holds a single byte"));
        };
        self.pos += c.len_utf8();
        if !self.eat(b'\'') {
            return Err(self.err("expected `'` closing the char literal"));
        }
        Ok(Value::Char(byte as i8))
    }

    fn string_lit(&mut self) -> Result<Value, LiteralError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek_char() else {
                return Err(self.err("unterminated string literal"));
            };
            match c {
                '"' => {
                    self.pos += 1;
                    return Ok(Value::String(Arc::from(out)));
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some(e @ (b'"' | b'\\')) => {
                            out.push(char::from(e));
                            self.pos += 1;
                        }
                        _ => return Err(self.err("only `\\\"` and `\\\\` are escapes")),
                    }
                }
                c => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }

    /// `{w0 w1 ...}`, each word decimal or `0x` hex; `@i` skips to word `i` (see
    /// [`crate::value::bitset`]).
    fn bitset(&mut self) -> Result<Value, LiteralError> {
        self.pos += 1;
        let mut b = BitsetBuilder::new();
        loop {
            self.ws();
            if self.eat(b'}') {
                return Ok(Value::Bitset(b.finish()));
            }
            let start = self.pos;
            let skip = self.eat(b'@');
            if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
                return Err(self.err(if skip {
                    "expected a word index after `@`"
                } else {
                    "expected a bitset word, `@` or `}`"
                }));
            }
            let tok = self.token(false);
            let parsed = match tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => tok.parse::<u64>(),
            };
            let what = if skip { "word index" } else { "bitset word" };
            let n = parsed.map_err(|_| LiteralError {
                offset: start,
                message: format!("invalid {what} `{tok}`"),
            })?;
            let added = if skip { b.skip_to(n) } else { b.push(n) };
            added.map_err(|e| LiteralError {
                offset: start,
                message: e.to_string(),
            })?;
        }
    }

    fn bytearray(&mut self) -> Result<Value, LiteralError> {
        self.expect(b'(')?;
        let mut bytes = Vec::new();
        loop {
            self.ws();
            if self.eat(b')') {
                return Ok(Value::Bytearray(bytes));
            }
            let start = self.pos;
            let negative = self.eat(b'-');
            if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
                return Err(self.err("expected a byte or `)`"));
            }
            let tok = self.token(false);
            let n = match tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
                Some(hex) => u16::from_str_radix(hex, 16),
                None => tok.parse::<u16>(),
            };
            let byte = n.ok().and_then(|n| {
                if negative {
                    (1..=128).contains(&n).then(|| (256 - n) as u8)
                } else {
                    u8::try_from(n).ok()
                }
            });
            match byte {
                Some(b) => bytes.push(b),
                None => {
                    return Err(LiteralError {
                        offset: start,
                        message: format!("invalid byte `{}`", &self.s[start..self.pos]),
                    });
                }
            }
        }
    }
}

/// Writes a float or double: shortest round-trip text with a `.` or an exponent, `nan`, or an
/// infinity with the suffix (`inf`/`-inf` for doubles, `inff`/`-inff` for floats, as GPI-Space
/// prints them).
fn write_fractional(f: &mut fmt::Formatter<'_>, debug: String, suffix: &str) -> fmt::Result {
    match debug.as_str() {
        "NaN" => f.write_str("nan"),
        "inf" | "-inf" => write!(f, "{debug}{suffix}"),
        _ => write!(f, "{debug}{suffix}"),
    }
}

fn write_list<T>(
    f: &mut fmt::Formatter<'_>,
    items: impl Iterator<Item = T>,
    mut each: impl FnMut(&mut fmt::Formatter<'_>, T) -> fmt::Result,
) -> fmt::Result {
    for (i, item) in items.enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        each(f, item)?;
    }
    Ok(())
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Control => f.write_str("[]"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Long(i) => write!(f, "{i}L"),
            Value::UInt(i) => write!(f, "{i}U"),
            Value::ULong(i) => write!(f, "{i}UL"),
            Value::Float(x) => write_fractional(f, format!("{x:?}"), "f"),
            Value::Double(x) => write_fractional(f, format!("{x:?}"), ""),
            Value::Char(c) => write!(f, "'{}'", char::from(*c as u8)),
            Value::String(s) => {
                f.write_char('"')?;
                for c in s.chars() {
                    if c == '"' || c == '\\' {
                        f.write_char('\\')?;
                    }
                    f.write_char(c)?;
                }
                f.write_char('"')
            }
            Value::Bitset(b) => write!(f, "{b}"),
            Value::Bytearray(bytes) => {
                f.write_str("y(")?;
                for b in bytes {
                    write!(f, " {b}")?;
                }
                f.write_char(')')
            }
            Value::Bigint(i) => write!(f, "{i}A"),
            Value::Shared(s) => write!(f, "shared_{} ({})", s.place, s.value),
            Value::List(l) => {
                f.write_str("List (")?;
                write_list(f, l.iter(), |f, v| write!(f, "{v}"))?;
                f.write_char(')')
            }
            Value::Set(s) => {
                f.write_str("Set {")?;
                write_list(f, s.iter(), |f, v| write!(f, "{v}"))?;
                f.write_char('}')
            }
            Value::Map(m) => {
                f.write_str("Map [")?;
                write_list(f, m.iter(), |f, (k, v)| write!(f, "{k} -> {v}"))?;
                f.write_char(']')
            }
            Value::Struct(fields) => {
                f.write_str("Struct [")?;
                write_list(f, fields.iter(), |f, (n, v)| write!(f, "{n} := {v}"))?;
                f.write_char(']')
            }
        }
    }
}

impl fmt::Display for Type {
    /// Type names as written in xpnet (`unsigned long`, `list`, struct names, `shared_P`);
    /// element types, where known, as `list<long>`, `set<int>`, `map<int, any>` (`list`, `set`
    /// and `map` when nothing is known); `any` for `Any`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Control => f.write_str("control"),
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Long => f.write_str("long"),
            Type::UInt => f.write_str("unsigned int"),
            Type::ULong => f.write_str("unsigned long"),
            Type::Float => f.write_str("float"),
            Type::Double => f.write_str("double"),
            Type::Char => f.write_str("char"),
            Type::String => f.write_str("string"),
            Type::Bitset => f.write_str("bitset"),
            Type::Bytearray => f.write_str("bytearray"),
            Type::Bigint => f.write_str("bigint"),
            Type::Shared(p) => write!(f, "shared_{p}"),
            Type::List(t) if t.is_any() => f.write_str("list"),
            Type::List(t) => write!(f, "list<{t}>"),
            Type::Set(t) if t.is_any() => f.write_str("set"),
            Type::Set(t) => write!(f, "set<{t}>"),
            Type::Map(k, v) if k.is_any() && v.is_any() => f.write_str("map"),
            Type::Map(k, v) => write!(f, "map<{k}, {v}>"),
            Type::Struct(s) => f.write_str(&s.name),
            Type::Any => f.write_str("any"),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
