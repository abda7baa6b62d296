//! Rendering diagnostics for a terminal: `error[code]: message`, then `path:line:column`, the
//! source line and carets (codespan-reporting).

use std::io::IsTerminal;

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label as CsLabel, LabelStyle};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::termcolor::{ColorChoice, StandardStream};
use codespan_reporting::term::{self, Config};
use pnet_sema::LoadedFile;
use pnet_syntax::{Diagnostic, Severity};

/// When to use colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ColorMode {
    /// Colours when stderr is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    Always,
    Never,
}

fn to_codespan(d: &Diagnostic) -> CsDiagnostic<usize> {
    let severity = match d.severity {
        Severity::Error => codespan_reporting::diagnostic::Severity::Error,
        Severity::Warning => codespan_reporting::diagnostic::Severity::Warning,
    };
    let labels = d
        .labels
        .iter()
        .map(|l| {
            let style = if l.primary {
                LabelStyle::Primary
            } else {
                LabelStyle::Secondary
            };
            CsLabel::new(style, l.span.file.0 as usize, l.span.range()).with_message(&l.message)
        })
        .collect();
    CsDiagnostic::new(severity)
        .with_code(d.code)
        .with_message(&d.message)
        .with_labels(labels)
        .with_notes(d.notes.clone())
}

fn simple_files(files: &[LoadedFile]) -> SimpleFiles<String, std::sync::Arc<str>> {
    let mut out = SimpleFiles::new();
    for f in files {
        out.add(f.path.display().to_string(), f.text.clone());
    }
    out
}

/// Renders diagnostics to a string without colours (for tests and for tools that log).
pub fn render_to_string(files: &[LoadedFile], diagnostics: &[Diagnostic]) -> String {
    let files = simple_files(files);
    let config = Config::default();
    let mut out = String::new();
    for d in diagnostics {
        let cs = to_codespan(d);
        if term::emit_to_string(&mut out, &config, &files, &cs).is_err() {
            out.push_str(&fallback(d));
        }
    }
    out
}

/// A one-line rendering used when a span does not fit its file (never expected).
fn fallback(d: &Diagnostic) -> String {
    let sev = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    format!("{sev}[{}]: {}\n", d.code, d.message)
}

/// Renders diagnostics to standard error.
pub fn render_diagnostics(files: &[LoadedFile], diagnostics: &[Diagnostic], color: ColorMode) {
    let choice = match color {
        ColorMode::Always => ColorChoice::Always,
        ColorMode::Never => ColorChoice::Never,
        ColorMode::Auto => {
            if std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
                ColorChoice::Auto
            } else {
                ColorChoice::Never
            }
        }
    };
    let files = simple_files(files);
    let config = Config::default();
    let mut stream = StandardStream::stderr(choice);
    for d in diagnostics {
        let cs = to_codespan(d);
        if term::emit_to_write_style(&mut stream, &config, &files, &cs).is_err() {
            eprint!("{}", fallback(d));
        }
    }
}
