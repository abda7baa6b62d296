//! The xpnet XML front end (roxmltree): a file's text to an AST with spans. Parsing never
//! fails: malformed XML gives a diagnostic and whatever could be understood (possibly no root).

pub mod ast;
mod parser;
mod print;
mod recover;
#[cfg(test)]
mod tests;

pub use ast::*;
pub use print::print_ast;

use crate::{Diagnostic, FileId};

/// Parses an xpnet file. Never fails: malformed XML gives a diagnostic and a `File` whose
/// root may be `None`; unknown elements and attributes are warnings (`unexpected-element`).
///
/// Error codes: `xml_syntax`, `unknown_root`, `missing_attribute`, `invalid_bool`,
/// `missing_body`, `multiple_bodies`, `duplicate_element` (a second `size`, `code`, ...),
/// `missing_element` (`memory-buffer` without `size`, transfer without `global`/`local`),
/// `nesting_too_deep`. Warning code: `unexpected-element` (unknown elements, attributes and
/// stray text).
pub fn parse_file(file: FileId, text: &str) -> (File, Vec<Diagnostic>) {
    parser::parse(file, text)
}
