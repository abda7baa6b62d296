//! Rendering diagnostics for a terminal: `error[code]: message`, then `path:line:column`, the
//! source line and carets (codespan-reporting, through the one renderer in
//! [`pnet_diagnostics::render`]), coloured as [`ColorMode`] says.

use pnet_sema::LoadedFile;
use pnet_syntax::Diagnostic;
use pnet_syntax::render::{self, RenderFile};

pub use pnet_diagnostics::ColorMode;

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
/// ([`pnet_diagnostics::render`]).
pub fn render_to_string(files: &[LoadedFile], diagnostics: &[Diagnostic]) -> String {
    with_files(files, |rf| render::render_to_string(rf, diagnostics))
}

/// Renders diagnostics to standard error.
pub fn render_diagnostics(files: &[LoadedFile], diagnostics: &[Diagnostic], color: ColorMode) {
    with_files(files, |rf| {
        render::render_to_stderr(rf, diagnostics, color);
    });
}
