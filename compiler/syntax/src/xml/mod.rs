//! The xpnet XML front end (roxmltree): a file's text to an AST with spans. Parsing never
//! fails: malformed XML is repaired (`recover.rs`: a half-typed tag keeps the rest of the
//! tree) with a diagnostic at each damage; only if even the repair is rejected, no root.

pub mod ast;
pub mod items;
mod parser;
mod print;
mod recover;
#[cfg(test)]
mod tests;

pub use ast::*;
pub use print::print_ast;

use crate::{Diagnostic, FileId};

/// Parses an xpnet file. Never fails: malformed XML gives an `xml_syntax` error at each
/// damage and the tree of the repaired text (a `File` whose root is `None` only when the text
/// cannot be repaired, e.g. it has no element); unknown elements and attributes are warnings
/// (`unexpected-element`).
///
/// Error codes: `xml_syntax`, `unknown_root`, `missing_attribute`, `invalid_bool`,
/// `missing_body`, `multiple_bodies`, `duplicate_element` (a second `size`, `code`, ...),
/// `missing_element` (`memory-buffer` without `size`, transfer without `global`/`local`),
/// `nesting_too_deep`. Warning code: `unexpected-element` (unknown elements, attributes and
/// stray text).
pub fn parse_file(file: FileId, text: &str) -> (File, Vec<Diagnostic>) {
    parser::parse(file, text)
}
