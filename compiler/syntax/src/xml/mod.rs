//! The xpnet XML front end (roxmltree): a file's text to an AST with spans. Parsing never
//! fails: malformed XML gives a diagnostic and whatever could be understood (possibly no root).

pub mod ast;

pub use ast::*;

use crate::{Diagnostic, FileId};

/// Parses an xpnet file. Never fails: malformed XML gives a diagnostic and a `File` whose
/// root may be `None`; unknown elements and attributes are warnings (`unexpected-element`).
pub fn parse_file(file: FileId, text: &str) -> (File, Vec<Diagnostic>) {
    let _ = (file, text);
    todo!("syntax: xml::parse_file")
}
