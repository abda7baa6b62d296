//! The xpnet XML front end (roxmltree): a file's text to an AST with spans. Parsing never
//! fails: malformed XML gives a diagnostic and whatever could be understood (possibly no root).

pub mod ast;

pub use ast::*;
