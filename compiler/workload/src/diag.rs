//! Diagnostics: data (a stable code, a severity, a message, a byte span, secondary labels and
//! notes); only the tools render them.

use std::fmt;
use std::ops::Range;

/// How bad a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The workload cannot be lowered.
    Error,
    /// The workload is accepted but probably not what was meant.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// A secondary location (e.g. "first defined here").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Range<usize>,
    pub message: String,
}

/// A problem found in a workload description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Stable code, `workload-...` (see the table in `grammar/workload.md`).
    pub code: &'static str,
    pub severity: Severity,
    /// One line, lower case, no final period.
    pub message: String,
    /// Byte offsets into the parsed text (the primary location).
    pub span: Range<usize>,
    /// Other locations that explain the problem.
    pub labels: Vec<Label>,
    /// Extra help lines.
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, span: Range<usize>, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            span,
            labels: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn warning(code: &'static str, span: Range<usize>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, span, message)
        }
    }

    /// Adds a secondary label.
    pub fn label(mut self, span: Range<usize>, message: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// A plain one-diagnostic rendering: `origin:line:col: error[code]: message` and one
    /// `  = note: ...` line per note (lines and columns count from 1, columns in characters).
    pub fn render(&self, origin: &str, text: &str) -> String {
        let (line, col) = line_col(text, self.span.start);
        let mut out = format!(
            "{origin}:{line}:{col}: {}[{}]: {}",
            self.severity, self.code, self.message
        );
        for l in &self.labels {
            let (line, col) = line_col(text, l.span.start);
            out.push_str(&format!("\n  {origin}:{line}:{col}: {}", l.message));
        }
        for note in &self.notes {
            out.push_str("\n  = note: ");
            out.push_str(note);
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    /// The short form `code@start..end: message` (used by the tests).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}@{}..{}: {}",
            self.code, self.span.start, self.span.end, self.message
        )
    }
}

/// The 1-based line and column (in characters) of byte `offset` of `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}
