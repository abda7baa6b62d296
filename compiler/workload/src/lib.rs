//! Workload descriptions (the AIMES "formal workload description"): a concrete text syntax,
//! a parser that never fails and reports diagnostics, semantic checks, and the lowering of a
//! workload into an xpnet net whose tasks are calls of the command module `workload_exec`.
//!
//! The syntax, the diagnostics and the lowering are documented in `grammar/workload.md`.
//!
//! ```
//! let (w, diags) = pnet_workload::parse("task hello { out s: STRING; EXECUTABLE = 'echo'; ARGUMENTS = 'hi'; }");
//! assert!(diags.is_empty());
//! let xpnet = pnet_workload::lower(&w);
//! assert!(xpnet.contains("<module name=\"workload_exec\" function=\"t1_hello\"/>"));
//! ```

pub mod ast;
pub mod check;
pub mod diag;
pub mod lexer;
pub mod lower;
pub mod parser;

#[cfg(test)]
mod tests;

pub use ast::Workload;
pub use diag::{Diagnostic, FILE, Label, Severity};
pub use lower::lower;

/// The file name extension of workload descriptions (`fan.workload`).
pub const EXTENSION: &str = "workload";

/// Parses and checks a workload description. Never fails and never panics: problems are
/// diagnostics (errors and warnings), sorted by position.
pub fn parse(text: &str) -> (Workload, Vec<Diagnostic>) {
    let (w, mut diags) = parser::parse_syntax(text);
    let (_, more) = check::check(&w);
    diags.extend(more);
    diags.sort_by_key(|d| {
        let r = diag::primary_range(d);
        (r.start, r.end)
    });
    (w, diags)
}

/// True when a path names a workload description (its extension is `.workload`).
pub fn is_workload_path(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e == EXTENSION)
}
