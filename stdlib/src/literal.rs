//! Literal syntax: printing values the way GPI-Space shows them, and parsing that syntax back.

use std::fmt;

use crate::{Type, Value};

/// Why a literal did not parse: a byte offset into the text and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiteralError {
    pub offset: usize,
    pub message: String,
}

/// Parses one value in literal syntax (as printed by `Display`, and as accepted by `-p PORT=VALUE`
/// on the command line): `[]`, `true`, `3`, `-3L`, `3UL`, `3A`, `1.5f`, `'c'`, `"s"`, `{ 1 2}`,
/// `y( 0 127)`, `List (...)`, `Set {...}`, `Map [k -> v]`, `Struct [f := v]`, `shared_P (v)`.
/// Leading and trailing whitespace is allowed.
pub fn parse_literal(text: &str) -> Result<Value, LiteralError> {
    let _ = text;
    todo!("stdlib: parse_literal")
}

/// Parses a numeric literal token without sign (`23`, `23L`, `23U`, `23UL`, `23A`, `0x1f`,
/// `1.5f`, `1f`, `1.5`, `1e3`; suffixes case-insensitive), range-checked for its type.
/// Used by the expression lexer too.
pub fn parse_number(text: &str) -> Result<Value, String> {
    let _ = text;
    todo!("stdlib: parse_number")
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let _ = f;
        todo!("stdlib: Display for Value")
    }
}

impl fmt::Display for Type {
    /// Type names as written in xpnet (`unsigned long`, `list`, struct names, `shared_P`);
    /// element types, where known, as `list<long>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let _ = f;
        todo!("stdlib: Display for Type")
    }
}
