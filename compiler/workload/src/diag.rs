//! Diagnostics are the compiler's own ([`pnet_syntax::Diagnostic`]: a stable code, a severity,
//! a message, labelled spans and notes); only the tools render them. A workload is parsed on
//! its own, so every span points into [`FILE`], the text given to [`crate::parse`]: a tool
//! registers that text as file 0 to render them.

use std::ops::Range;

pub use pnet_syntax::{Diagnostic, FileId, Label, Severity, Span};

/// The file of every workload span: the parsed text.
pub const FILE: FileId = FileId(0);

/// A byte range of the parsed text as a span of [`FILE`].
pub fn span(r: Range<usize>) -> Span {
    let at = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
    Span::new(FILE, at(r.start), at(r.end))
}

/// The primary span of a workload diagnostic as a byte range of the parsed text.
pub fn primary_range(d: &Diagnostic) -> Range<usize> {
    d.primary_span()
        .map_or(0..0, |s| s.start as usize..s.end as usize)
}

/// An error at byte range `at` (codes `workload-...`, see the table in `grammar/workload.md`).
pub(crate) fn error(
    code: &'static str,
    at: Range<usize>,
    message: impl Into<String>,
) -> Diagnostic {
    Diagnostic::error(code, message).with_primary(span(at), "")
}

/// A warning at byte range `at`.
pub(crate) fn warning(
    code: &'static str,
    at: Range<usize>,
    message: impl Into<String>,
) -> Diagnostic {
    Diagnostic::warning(code, message).with_primary(span(at), "")
}

/// Secondary labels and notes by byte ranges.
pub(crate) trait Build {
    /// Adds a secondary label (e.g. "first defined here").
    fn label(self, at: Range<usize>, message: impl Into<String>) -> Self;
    /// Adds a help line.
    fn note(self, note: impl Into<String>) -> Self;
}

impl Build for Diagnostic {
    fn label(self, at: Range<usize>, message: impl Into<String>) -> Self {
        self.with_secondary(span(at), message)
    }

    fn note(self, note: impl Into<String>) -> Self {
        self.with_note(note)
    }
}
