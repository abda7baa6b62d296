//! Syntax of xpnet: source files and spans, diagnostics as data, the expression language's
//! lexer and parser, and the XML front end. Parsing never fails: every entry point returns
//! what it understood plus diagnostics.
//!
//! This crate knows nothing of salsa, the VM or the language server.

pub mod diagnostic;
pub mod expr;
pub mod render;
pub mod span;
pub mod xml;

pub use diagnostic::{Diagnostic, Label, Severity};
pub use span::{FileId, Span};
