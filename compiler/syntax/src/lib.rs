//! Syntax of xpnet: the expression language's lexer and parser and the XML front end (source
//! files, spans and diagnostics come from `pnet-diagnostics`). Parsing never fails: every
//! entry point returns what it understood plus diagnostics.
//!
//! This crate knows nothing of salsa, the VM or the language server.

pub mod expr;
#[cfg(test)]
mod render_tests;
pub mod xml;

// Spans, diagnostics and the renderer live in `pnet-diagnostics` (shared with the runtime's
// front ends); the compiler reaches them through this crate.
pub use pnet_diagnostics::{Diagnostic, FileId, Label, Severity, Span};
pub use pnet_diagnostics::{diagnostic, render, span};
