//! Diagnostics of every front end (xpnet nets, expressions, workloads, topology strings,
//! nodefiles, DDS topologies, C++ modules) and their rendering, in one place:
//!
//! - [`span`]: file identities, byte spans, texts cut out of files, lines and columns;
//! - [`diagnostic`]: [`Severity`], [`Label`] and [`Diagnostic`] (a stable code, a message,
//!   labelled spans, notes), data that front ends collect and never print;
//! - [`render`]: the one renderer: codespan-reporting's format for terminals and logs (long
//!   lines as windows, at most 50 errors and 50 warnings per file), and the short one-line
//!   form `origin:line:col: error[code]: message` of the runtime's tools;
//! - [`color`]: when to use colours (`--color auto|always|never`, `NO_COLOR`, terminals).
//!
//! This crate depends on nothing of ours.

pub mod color;
pub mod diagnostic;
pub mod render;
pub mod span;

pub use color::ColorMode;
pub use diagnostic::{Diagnostic, Label, Severity, has_errors};
pub use render::RenderFile;
pub use span::{FileId, LineIndex, MappedText, Span, line_col};
