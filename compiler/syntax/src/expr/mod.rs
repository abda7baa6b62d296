//! The expression language: AST, lexer (logos) and parser (lalrpop, grammar in
//! `grammar/expr.lalrpop`).

pub mod ast;

pub use ast::{Expr, ExprKind, Ident};

use crate::span::MappedText;
use crate::{Diagnostic, FileId};

/// Parses an expression program (statements separated by `;`). Never fails: on errors the tree
/// contains `ExprKind::Error` nodes and the diagnostics say what was wrong. Spans are mapped
/// to file spans through `text`.
pub fn parse(text: &MappedText) -> (Expr, Vec<Diagnostic>) {
    let _ = text;
    todo!("syntax: expr::parse")
}

/// Parses a string as if it were file `FileId(0)` from offset 0 (for tests and tools).
pub fn parse_str(text: &str) -> (Expr, Vec<Diagnostic>) {
    parse(&MappedText::verbatim(text, FileId(0), 0))
}
