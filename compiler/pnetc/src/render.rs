//! Rendering diagnostics for a terminal: `error[code]: message`, then `path:line:column`, the
//! source line and carets (codespan-reporting, through the one renderer in
//! [`pnet_syntax::render`]).

use std::io::IsTerminal;

use codespan_reporting::term::termcolor::{ColorChoice, StandardStream};
use pnet_sema::LoadedFile;
use pnet_syntax::Diagnostic;
use pnet_syntax::render::{self, RenderFile};

/// When to use colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ColorMode {
    /// Colours when stderr is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    Always,
    Never,
}

/// Calls `f` with the files as the renderer takes them (`FileId(i)` is `files[i]`).
fn with_files<T>(files: &[LoadedFile], f: impl FnOnce(&[RenderFile]) -> T) -> T {
    let names: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    let rf: Vec<RenderFile> = files
        .iter()
        .zip(&names)
        .map(|(l, name)| RenderFile {
            name,
            text: &l.text,
        })
        .collect();
    f(&rf)
}

/// Renders diagnostics to a string without colours (for tests and for tools that log). Long
/// lines are shown as windows and at most 50 errors (and 50 warnings) per file
/// ([`pnet_syntax::render`]).
pub fn render_to_string(files: &[LoadedFile], diagnostics: &[Diagnostic]) -> String {
    with_files(files, |rf| render::render_to_string(rf, diagnostics))
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
    let mut stream = StandardStream::stderr(choice);
    with_files(files, |rf| {
        let _ = render::render_to_writer(rf, diagnostics, &mut stream);
    });
}
