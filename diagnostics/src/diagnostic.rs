//! Diagnostics are data: a severity, a stable code, a message and labelled spans. Only the
//! command-line tools and the language server render them.

use std::fmt;
use std::ops::Range;

use crate::{FileId, Span};

/// How bad a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// The input is wrong; nothing is produced or started.
    Error,
    /// The input is accepted but probably not what was meant.
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

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    pub span: Span,
    pub message: String,
    /// The primary label points at the cause; secondary ones give context.
    pub primary: bool,
}

/// One finding. `code` is stable: for the compiler's errors a snake_case name such as
/// `duplicate_place`, for its warnings the warning's name as used in `--W<name>` (with dashes,
/// e.g. `virtual-place-not-tunneled`); the runtime's front ends use dashed codes with a prefix
/// (`topology-syntax`, `dds-undeclared`, `cxx-compile-failed`).
///
/// `Display` gives the short one-line form: `location: error[code]: message` (the location
/// only when [`Diagnostic::location`] is set), then one `  = note: …` line per note.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static str,
    /// One line, lower case, no final period.
    pub message: String,
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
    /// Where, as text (`file:line:col`), for a diagnostic about something the renderer holds
    /// no text of (a C++ compiler's message, a module of a bundle); `None` for diagnostics
    /// with spans.
    pub location: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            labels: Vec::new(),
            notes: Vec::new(),
            location: None,
        }
    }

    /// An error about the byte range `range` of a single text (file 0), with an unlabelled
    /// primary span (offsets above `u32::MAX` are clamped to it).
    pub fn error_at(
        code: &'static str,
        range: Range<usize>,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic::error(code, message).with_primary(Span::of_range(FileId(0), range), "")
    }

    /// A warning as [`Diagnostic::error_at`].
    pub fn warning_at(
        code: &'static str,
        range: Range<usize>,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic::warning(code, message).with_primary(Span::of_range(FileId(0), range), "")
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    /// Adds the primary label.
    pub fn with_primary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: true,
        });
        self
    }

    /// Adds a secondary label.
    pub fn with_secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: false,
        });
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// Adds each of `notes` (an `Option` adds none or one: a suggestion when one is known).
    pub fn with_notes<N: Into<String>>(mut self, notes: impl IntoIterator<Item = N>) -> Diagnostic {
        self.notes.extend(notes.into_iter().map(Into::into));
        self
    }

    /// Sets the textual [`Diagnostic::location`].
    pub fn with_location(mut self, location: impl Into<String>) -> Diagnostic {
        self.location = Some(location.into());
        self
    }

    /// The span of the first primary label, if any.
    pub fn primary_span(&self) -> Option<Span> {
        self.labels.iter().find(|l| l.primary).map(|l| l.span)
    }

    /// The byte range of the primary span (else of the first label; `0..0` without labels):
    /// for diagnostics of a single text.
    pub fn range(&self) -> Range<usize> {
        self.primary_span()
            .or_else(|| self.labels.first().map(|l| l.span))
            .map_or(0..0, Span::range)
    }

    /// True for [`Severity::Error`].
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(location) = &self.location {
            write!(f, "{location}: ")?;
        }
        write!(f, "{}[{}]: {}", self.severity, self.code, self.message)?;
        for note in &self.notes {
            write!(f, "\n  = note: {note}")?;
        }
        Ok(())
    }
}

/// True if any diagnostic is an error.
pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(Diagnostic::is_error)
}
