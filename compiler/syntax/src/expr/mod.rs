//! The expression language: AST, lexer (logos) and parser (lalrpop, grammar in
//! `grammar/expr.lalrpop`).

pub mod ast;
#[cfg(test)]
mod depth_tests;
pub mod format;
pub mod lexer;
mod parser;
pub mod printer;
#[cfg(test)]
mod tests;

pub use ast::{Expr, ExprKind, Ident, word_form};
pub use parser::MAX_EXPR_DEPTH;
pub use printer::{to_sexpr, to_source};

use crate::span::MappedText;
use crate::{Diagnostic, FileId};

/// Parses an expression program (statements separated by `;`). Never fails: on errors the tree
/// contains `ExprKind::Error` nodes and the diagnostics say what was wrong. Spans are mapped
/// to file spans through `text`.
pub fn parse(text: &MappedText) -> (Expr, Vec<Diagnostic>) {
    parser::parse(text)
}

/// Parses a string as if it were file `FileId(0)` from offset 0 (for tests and tools).
pub fn parse_str(text: &str) -> (Expr, Vec<Diagnostic>) {
    parse(&MappedText::verbatim(text, FileId(0), 0))
}
