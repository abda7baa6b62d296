//! The one renderer of [`Diagnostic`]s for terminals and logs (codespan-reporting's format:
//! `error[code]: message`, `path:line:column`, the source line and carets), with output that
//! stays bounded however large or broken the input is:
//!
//! - a source line longer than [`MAX_LINE_COLUMNS`] is shown as a window around the labels on
//!   it, cut with `...` (the line and column numbers stay those of the file);
//! - at most [`MAX_PER_FILE`] errors and as many warnings are shown per file, then one line
//!   `... and K more errors in <file>`.
//!
//! Each shown diagnostic costs at most one pass over its file, so the whole rendering is
//! linear in the input.
//!
//! The short form ([`render_short`], [`Diagnostic::render_short`]) is one line per
//! diagnostic, `origin:line:col: error[code]: message` plus `  = note: …` lines, with the same
//! cap: for logs and control-socket answers of the runtime (`dds-run`, the agent).

use std::collections::BTreeMap;
use std::ops::Range;

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label as CsLabel, LabelStyle};
use codespan_reporting::files::{Error as FilesError, Files};
use codespan_reporting::term::termcolor::WriteColor;
use codespan_reporting::term::{self, Config};

use crate::{ColorMode, Diagnostic, LineIndex, Severity};

/// Lines longer than this many characters are shown as a window around the labels.
pub const MAX_LINE_COLUMNS: usize = 200;

/// At most this many errors, and as many warnings, are shown per file.
pub const MAX_PER_FILE: usize = 50;

/// Characters of context shown before the first label in a windowed line.
const CONTEXT_BEFORE: usize = 60;

const CUT: &str = "...";

/// A file the diagnostics point into: `FileId(i)` is `files[i]`.
#[derive(Clone, Copy, Debug)]
pub struct RenderFile<'a> {
    /// The name shown (usually the path).
    pub name: &'a str,
    pub text: &'a str,
}

/// Renders diagnostics without colours (for tests and for tools that log).
pub fn render_to_string(files: &[RenderFile], diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    render(files, diagnostics, &mut |item| match item {
        Item::Diagnostic(view, d) => {
            if term::emit_to_string(&mut out, &Config::default(), view, d).is_err() {
                out.push_str(&fallback(d));
            }
        }
        Item::Text(s) => out.push_str(s),
    });
    out
}

/// Renders diagnostics to a terminal stream (colours as the stream says).
pub fn render_to_writer<W: WriteColor>(
    files: &[RenderFile],
    diagnostics: &[Diagnostic],
    w: &mut W,
) -> std::io::Result<()> {
    let mut result = Ok(());
    render(files, diagnostics, &mut |item| {
        if result.is_err() {
            return;
        }
        result = match item {
            Item::Diagnostic(view, d) => {
                match term::emit_to_write_style(w, &Config::default(), view, d) {
                    Ok(()) => Ok(()),
                    Err(FilesError::Io(e)) => Err(e),
                    Err(_) => w.write_all(fallback(d).as_bytes()),
                }
            }
            Item::Text(s) => w.write_all(s.as_bytes()),
        };
    });
    result
}

/// Renders diagnostics to standard error, with colours as `color` says.
pub fn render_to_stderr(files: &[RenderFile], diagnostics: &[Diagnostic], color: ColorMode) {
    let mut stream = color.stderr();
    let _ = render_to_writer(files, diagnostics, &mut stream);
}

impl Diagnostic {
    /// The short form of a diagnostic of `text` (whose name is `origin`, e.g. a file name or
    /// `--topology`): `origin:line:col: error[code]: message`, then one `  = note: …` line per
    /// note. Lines and columns count from 1, columns in characters, at the start of
    /// [`Diagnostic::range`].
    pub fn render_short(&self, origin: &str, text: &str) -> String {
        let (line, col) = crate::line_col(text, self.range().start);
        self.short_at(origin, line, col)
    }

    fn short_at(&self, origin: &str, line: usize, col: usize) -> String {
        let mut out = format!(
            "{origin}:{line}:{col}: {}[{}]: {}",
            self.severity, self.code, self.message
        );
        for note in &self.notes {
            out.push_str("\n  = note: ");
            out.push_str(note);
        }
        out
    }
}

/// Renders the diagnostics of one text in the short form ([`Diagnostic::render_short`]), one
/// per line, but at most [`MAX_PER_FILE`] errors and as many warnings, then
/// `origin: ... and K more errors`. Linear in the text and the number of diagnostics.
pub fn render_short(file: &RenderFile, diagnostics: &[Diagnostic]) -> String {
    let (origin, text) = (file.name, file.text);
    let lines = LineIndex::new(text);
    let mut out = String::new();
    let (mut errors, mut warnings) = (0, 0);
    for d in diagnostics {
        let shown = if d.is_error() {
            &mut errors
        } else {
            &mut warnings
        };
        *shown += 1;
        if *shown > MAX_PER_FILE {
            continue;
        }
        let (line, col) = lines.line_col(text, d.range().start);
        out.push_str(&d.short_at(origin, line, col));
        out.push('\n');
    }
    for (n, what) in [(errors, "errors"), (warnings, "warnings")] {
        if n > MAX_PER_FILE {
            out.push_str(&format!(
                "{origin}: ... and {} more {what} (only the first {MAX_PER_FILE} are shown)\n",
                n - MAX_PER_FILE
            ));
        }
    }
    out
}

enum Item<'v, 'a> {
    Diagnostic(&'v View<'a>, &'v CsDiagnostic<usize>),
    Text(&'v str),
}

/// A one-line rendering when codespan-reporting refuses a diagnostic (never expected: spans
/// are clamped into their files).
fn fallback(d: &CsDiagnostic<usize>) -> String {
    let sev = match d.severity {
        codespan_reporting::diagnostic::Severity::Warning => "warning",
        _ => "error",
    };
    format!(
        "{sev}[{}]: {}\n",
        d.code.as_deref().unwrap_or(""),
        d.message
    )
}

fn render(files: &[RenderFile], diagnostics: &[Diagnostic], emit: &mut dyn FnMut(Item)) {
    let bases: Vec<Base> = files.iter().map(|f| Base::new(f.name, f.text)).collect();
    // (file index or usize::MAX for none, severity) -> (shown, hidden)
    let mut counts: BTreeMap<(usize, Severity), (usize, usize)> = BTreeMap::new();
    for d in diagnostics {
        let file = d
            .primary_span()
            .or_else(|| d.labels.first().map(|l| l.span))
            .map_or(usize::MAX, |s| s.file.0 as usize);
        let count = counts.entry((file, d.severity)).or_default();
        if count.0 >= MAX_PER_FILE {
            count.1 += 1;
            continue;
        }
        count.0 += 1;
        let (view, cs) = View::new(&bases, d);
        emit(Item::Diagnostic(&view, &cs));
    }
    for ((file, severity), (_, hidden)) in counts {
        if hidden == 0 {
            continue;
        }
        let what = match (severity, hidden) {
            (Severity::Error, 1) => "error",
            (Severity::Error, _) => "errors",
            (Severity::Warning, 1) => "warning",
            (Severity::Warning, _) => "warnings",
        };
        let place = match bases.get(file) {
            Some(b) => format!(" in {}", b.name),
            None => String::new(),
        };
        emit(Item::Text(&format!(
            "note: ... and {hidden} more {what}{place} (only the first {MAX_PER_FILE} are shown)\n\n"
        )));
    }
}

/// A file as given, with its line starts.
struct Base<'a> {
    name: &'a str,
    text: &'a str,
    line_starts: Vec<usize>,
}

impl<'a> Base<'a> {
    fn new(name: &'a str, text: &'a str) -> Base<'a> {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Base {
            name,
            text,
            line_starts,
        }
    }

    fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset) - 1
    }

    /// The byte range of line `i` without its line break.
    fn line(&self, i: usize) -> Range<usize> {
        let start = self.line_starts[i];
        let end = self
            .line_starts
            .get(i + 1)
            .map_or(self.text.len(), |&n| n - 1);
        let end = if self.text[start..end].ends_with('\r') {
            end - 1
        } else {
            end
        };
        start..end
    }

    /// `offset` clamped into the text and down onto a character boundary.
    fn floor(&self, offset: usize) -> usize {
        let mut at = offset.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }
}

/// The files as shown for one diagnostic: the files as given, except that a file with a long
/// line the diagnostic shows is replaced by a copy where long lines are windows (same number
/// of lines, so line numbers stay right; columns are mapped back to the file's).
struct View<'a> {
    bases: &'a [Base<'a>],
    windowed: BTreeMap<usize, Windowed>,
}

struct Windowed {
    text: String,
    line_starts: Vec<usize>,
    /// For a windowed line: (where its shown content starts in `text`, the column in the
    /// file's line, counted in characters from 0, of the content's first character).
    cuts: BTreeMap<usize, (usize, usize)>,
}

/// The window of a long line: the byte range shown, with `...` before and/or after.
struct Window {
    line: usize,
    shown: Range<usize>,
}

impl<'a> View<'a> {
    /// The view for `d`, and `d` converted with spans into the view.
    fn new(bases: &'a [Base<'a>], d: &Diagnostic) -> (View<'a>, CsDiagnostic<usize>) {
        // Labels clamped into their files.
        let labels: Vec<(usize, Range<usize>, &crate::Label)> = d
            .labels
            .iter()
            .filter_map(|l| {
                let file = l.span.file.0 as usize;
                let base = bases.get(file)?;
                let start = base.floor(l.span.start as usize);
                let end = base.floor(l.span.end as usize).max(start);
                Some((file, start..end, l))
            })
            .collect();
        let mut windowed = BTreeMap::new();
        let files: std::collections::BTreeSet<usize> = labels.iter().map(|l| l.0).collect();
        let mut maps: BTreeMap<usize, Vec<Window>> = BTreeMap::new();
        for file in files {
            let base = &bases[file];
            // Anchors: where each label starts and ends, by line.
            let mut anchors: BTreeMap<usize, usize> = BTreeMap::new();
            for (_, r, _) in labels.iter().filter(|l| l.0 == file) {
                for at in [r.start, r.end] {
                    let line = base.line_of(at);
                    let a = anchors.entry(line).or_insert(at);
                    *a = (*a).min(at);
                }
            }
            let long = |i: usize| {
                let r = base.line(i);
                r.len() > MAX_LINE_COLUMNS && base.text[r].chars().count() > MAX_LINE_COLUMNS
            };
            // The lines shown: those with labels and those between (multi-line labels).
            let (first, last) = match (anchors.keys().next(), anchors.keys().next_back()) {
                (Some(&a), Some(&b)) => (a, b),
                _ => continue,
            };
            if !(first..=last).any(long) {
                continue;
            }
            let (w, windows) = Windowed::new(base, &anchors);
            windowed.insert(file, w);
            maps.insert(file, windows);
        }
        let view = View { bases, windowed };
        let cs_labels = labels
            .into_iter()
            .map(|(file, r, l)| {
                let r = match (view.windowed.get(&file), maps.get(&file)) {
                    (Some(w), Some(windows)) => {
                        let base = &bases[file];
                        let start = w.map(base, windows, r.start);
                        let end = w.map(base, windows, r.end).max(start);
                        start..end
                    }
                    _ => r,
                };
                let style = if l.primary {
                    LabelStyle::Primary
                } else {
                    LabelStyle::Secondary
                };
                CsLabel::new(style, file, r).with_message(&l.message)
            })
            .collect();
        let severity = match d.severity {
            Severity::Error => codespan_reporting::diagnostic::Severity::Error,
            Severity::Warning => codespan_reporting::diagnostic::Severity::Warning,
        };
        let cs = CsDiagnostic::new(severity)
            .with_code(d.code)
            .with_message(&d.message)
            .with_labels(cs_labels)
            .with_notes(d.notes.clone());
        (view, cs)
    }
}

impl Windowed {
    /// A copy of `base` where every line longer than [`MAX_LINE_COLUMNS`] is cut to a window
    /// starting a little before its anchor (or at its start).
    fn new(base: &Base, anchors: &BTreeMap<usize, usize>) -> (Windowed, Vec<Window>) {
        let mut text = String::with_capacity(base.text.len().min(1 << 20));
        let mut line_starts = Vec::with_capacity(base.line_starts.len());
        let mut cuts = BTreeMap::new();
        let mut windows = Vec::new();
        for i in 0..base.line_starts.len() {
            line_starts.push(text.len());
            let r = base.line(i);
            let line = &base.text[r.clone()];
            let next = base.line_starts.get(i + 1).copied();
            let eol = &base.text[r.end..next.unwrap_or(base.text.len())];
            if line.len() <= MAX_LINE_COLUMNS || line.chars().count() <= MAX_LINE_COLUMNS {
                text.push_str(line);
                text.push_str(eol);
                continue;
            }
            // Window: from CONTEXT_BEFORE characters before the anchor, MAX_LINE_COLUMNS long.
            // (An anchor may sit on the line break: clamp it into the line.)
            let anchor = anchors
                .get(&i)
                .map_or(0, |&a| a.saturating_sub(r.start).min(line.len()));
            let before = line[..anchor].chars().rev().take(CONTEXT_BEFORE);
            let mut from = anchor - before.map(char::len_utf8).sum::<usize>();
            let mut to = from
                + line[from..]
                    .chars()
                    .take(MAX_LINE_COLUMNS)
                    .map(char::len_utf8)
                    .sum::<usize>();
            if to == line.len() {
                // At the end of the line: show the last MAX_LINE_COLUMNS characters.
                from = line.len()
                    - line
                        .chars()
                        .rev()
                        .take(MAX_LINE_COLUMNS)
                        .map(char::len_utf8)
                        .sum::<usize>();
                to = line.len();
            }
            if from > 0 {
                text.push_str(CUT);
            }
            let column = line[..from].chars().count();
            cuts.insert(i, (text.len(), column));
            text.push_str(&line[from..to]);
            if to < line.len() {
                text.push_str(CUT);
            }
            text.push_str(eol);
            windows.push(Window {
                line: i,
                shown: r.start + from..r.start + to,
            });
        }
        (
            Windowed {
                text,
                line_starts,
                cuts,
            },
            windows,
        )
    }

    /// Where file offset `at` is in the windowed text (clamped into the window of its line).
    fn map(&self, base: &Base, windows: &[Window], at: usize) -> usize {
        let line = base.line_of(at);
        let start = base.line_starts[line];
        match windows.binary_search_by_key(&line, |w| w.line) {
            Ok(k) => {
                let w = &windows[k];
                let (content, _) = self.cuts[&line];
                content + at.clamp(w.shown.start, w.shown.end) - w.shown.start
            }
            // Before this line, every windowed line changed length.
            Err(_) => self.line_starts[line] + (at - start),
        }
    }

    fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset) - 1
    }

    fn line_range(&self, i: usize) -> Option<Range<usize>> {
        let start = *self.line_starts.get(i)?;
        let end = self
            .line_starts
            .get(i + 1)
            .copied()
            .unwrap_or(self.text.len());
        Some(start..end)
    }
}

impl<'f> Files<'f> for View<'_> {
    type FileId = usize;
    type Name = &'f str;
    type Source = &'f str;

    fn name(&'f self, id: usize) -> Result<&'f str, FilesError> {
        Ok(self.bases.get(id).ok_or(FilesError::FileMissing)?.name)
    }

    fn source(&'f self, id: usize) -> Result<&'f str, FilesError> {
        match self.windowed.get(&id) {
            Some(w) => Ok(&w.text),
            None => Ok(self.bases.get(id).ok_or(FilesError::FileMissing)?.text),
        }
    }

    fn line_index(&'f self, id: usize, byte_index: usize) -> Result<usize, FilesError> {
        match self.windowed.get(&id) {
            Some(w) => Ok(w.line_of(byte_index)),
            None => Ok(self
                .bases
                .get(id)
                .ok_or(FilesError::FileMissing)?
                .line_of(byte_index)),
        }
    }

    fn line_range(&'f self, id: usize, line_index: usize) -> Result<Range<usize>, FilesError> {
        let range = match self.windowed.get(&id) {
            Some(w) => w.line_range(line_index),
            None => {
                let b = self.bases.get(id).ok_or(FilesError::FileMissing)?;
                b.line_starts.get(line_index).map(|&s| {
                    s..b.line_starts
                        .get(line_index + 1)
                        .copied()
                        .unwrap_or(b.text.len())
                })
            }
        };
        range.ok_or(FilesError::LineTooLarge {
            given: line_index,
            max: usize::MAX,
        })
    }

    fn column_number(
        &'f self,
        id: usize,
        line_index: usize,
        byte_index: usize,
    ) -> Result<usize, FilesError> {
        let source = self.source(id)?;
        let range = self.line_range(id, line_index)?;
        let cut = self
            .windowed
            .get(&id)
            .and_then(|w| w.cuts.get(&line_index).copied());
        let (from, column) = match cut {
            Some((content, column)) => (content, column),
            None => (range.start, 0),
        };
        let to = byte_index.clamp(from, range.end.min(source.len()));
        let shown = source.get(from..to).map_or(0, |s| s.chars().count());
        Ok(column + shown + 1)
    }
}

#[cfg(test)]
mod tests {
    use codespan_reporting::files::SimpleFiles;

    use super::*;
    use crate::{FileId, Span};

    fn file<'a>(name: &'a str, text: &'a str) -> Vec<RenderFile<'a>> {
        vec![RenderFile { name, text }]
    }

    /// What plain codespan-reporting gives (the format must not change for normal input).
    fn plain(name: &str, text: &str, ds: &[Diagnostic]) -> String {
        let mut files = SimpleFiles::new();
        files.add(name.to_string(), text.to_string());
        let bases = [Base::new(name, text)];
        let mut out = String::new();
        for d in ds {
            let (_, cs) = View::new(&bases, d);
            term::emit_to_string(&mut out, &Config::default(), &files, &cs).unwrap();
        }
        out
    }

    fn error_at(start: u32, end: u32) -> Diagnostic {
        Diagnostic::error("some_error", "something is wrong")
            .with_primary(Span::new(FileId(0), start, end), "here")
            .with_note("a note")
    }

    #[test]
    fn short_lines_render_as_codespan_does() {
        let text = "<defun>\n  <expression>${a} := 1 +</expression>\n</defun>\n";
        let ds = [
            error_at(23, 27),
            Diagnostic::warning("a-warning", "careful")
                .with_primary(Span::new(FileId(0), 0, 7), "this")
                .with_secondary(Span::new(FileId(0), 47, 55), "and that"),
            // Multi-line, and out of the file (clamped).
            error_at(2, 49),
            error_at(500, 600),
        ];
        let got = render_to_string(&file("a.xpnet", text), &ds);
        assert_eq!(got, plain("a.xpnet", text, &ds));
        assert!(got.contains("a.xpnet:2:16"), "{got}");
    }

    #[test]
    fn a_long_line_is_shown_as_a_window_around_the_label() {
        // One 100 KB line; the label far inside it.
        let text = format!(
            "first\n{}${{x}}{}\nlast\n",
            "a".repeat(50_000),
            "b".repeat(50_000)
        );
        let at = text.find('$').unwrap() as u32;
        let got = render_to_string(&file("long.xpnet", &text), &[error_at(at, at + 4)]);
        assert!(got.len() < 2000, "{} bytes:\n{got}", got.len());
        // Line and column are the file's.
        assert!(got.contains("long.xpnet:2:50001"), "{got}");
        let shown = got.lines().find(|l| l.contains("${x}")).expect("the line");
        assert!(
            shown.contains("...aaa") && shown.ends_with("bbb..."),
            "{shown}"
        );
        // The carets are under `${x}`.
        let carets = got.lines().find(|l| l.contains("^^^^")).expect("carets");
        let col = shown.find("${x}").unwrap();
        assert_eq!(carets.find('^'), Some(col), "{got}");
        assert!(!carets.contains("^^^^^"));
        // At the very start and the very end of the line.
        let got = render_to_string(&file("long.xpnet", &text), &[error_at(6, 7)]);
        assert!(got.contains("long.xpnet:2:1"), "{got}");
        assert!(got.len() < 2000, "{got}");
        let end = text.rfind('b').unwrap() as u32;
        let got = render_to_string(&file("long.xpnet", &text), &[error_at(end, end + 1)]);
        assert!(got.contains("long.xpnet:2:100004"), "{got}");
        assert!(got.len() < 2000, "{got}");
        // A label over the whole long line, and one from the first line to the last.
        let got = render_to_string(
            &file("long.xpnet", &text),
            &[error_at(6, at + 50_010), error_at(0, text.len() as u32)],
        );
        assert!(got.len() < 4000, "{got}");
    }

    #[test]
    fn labels_on_the_line_break_of_a_long_crlf_line() {
        let text = format!("{}\r\nnext\r\n", "q".repeat(5000));
        for at in [5000u32, 5001, 5002] {
            let got = render_to_string(&file("crlf.xpnet", &text), &[error_at(at, at + 1)]);
            assert!(got.contains("error[some_error]"), "{got}");
            assert!(got.len() < 2000, "{got}");
        }
        let got = render_to_string(&file("crlf.xpnet", &text), &[error_at(4990, 5003)]);
        assert!(got.contains("crlf.xpnet:1:4991"), "{got}");
        assert!(got.len() < 2000, "{got}");
    }

    #[test]
    fn multibyte_characters_around_the_window() {
        let text = format!("{}é${{x}}{}", "ü".repeat(3000), "€".repeat(3000));
        let at = text.find('$').unwrap() as u32;
        let got = render_to_string(&file("u.xpnet", &text), &[error_at(at, at + 4)]);
        assert!(got.contains("u.xpnet:1:3002"), "{got}");
        assert!(got.chars().count() < 1500, "{got}");
        // A span that does not fall on character boundaries is moved onto them.
        let got = render_to_string(&file("u.xpnet", &text), &[error_at(at - 1, at + 1)]);
        assert!(got.contains("error[some_error]"), "{got}");
    }

    #[test]
    fn at_most_fifty_errors_and_fifty_warnings_per_file() {
        let text = "x\n".repeat(10_000);
        let mut ds = Vec::new();
        for i in 0..10_000u32 {
            ds.push(error_at(2 * i, 2 * i + 1));
            if i % 2 == 0 {
                ds.push(
                    Diagnostic::warning("w", "w").with_primary(Span::new(FileId(1), 0, 1), "w"),
                );
            }
        }
        ds.push(Diagnostic::error("no_label", "nowhere"));
        let files = [
            RenderFile {
                name: "a.xpnet",
                text: &text,
            },
            RenderFile {
                name: "b.xpnet",
                text: "y\n",
            },
        ];
        let got = render_to_string(&files, &ds);
        assert_eq!(got.matches("error[some_error]").count(), MAX_PER_FILE);
        assert_eq!(got.matches("warning[w]").count(), MAX_PER_FILE);
        assert!(got.contains("error[no_label]: nowhere"));
        assert!(
            got.contains("... and 9950 more errors in a.xpnet (only the first 50 are shown)"),
            "{got}"
        );
        assert!(
            got.contains("... and 4950 more warnings in b.xpnet"),
            "{got}"
        );
        // The first ones are the ones shown.
        assert!(got.contains("a.xpnet:50:1") && !got.contains("a.xpnet:51:1"));
    }

    #[test]
    fn the_short_form_has_origin_position_code_and_notes() {
        let d = Diagnostic::error_at("topology-syntax", 6..7, "expected a number")
            .with_note("write `a:4`");
        assert_eq!(
            d.render_short("--topology", "ab\ncä d"),
            "--topology:2:3: error[topology-syntax]: expected a number\n  = note: write `a:4`"
        );
        // Display: the textual location when there is one.
        assert_eq!(
            d.to_string(),
            "error[topology-syntax]: expected a number\n  = note: write `a:4`"
        );
        let d = Diagnostic::error("cxx-io", "cannot write m.cpp").with_location("pnetc");
        assert_eq!(d.to_string(), "pnetc: error[cxx-io]: cannot write m.cpp");
        // Capped per severity, positions from one index.
        let text = "x\n".repeat(100);
        let ds: Vec<_> = (0..60)
            .map(|i| Diagnostic::error_at("e", 2 * i..2 * i + 1, "e"))
            .chain([Diagnostic::warning_at("w", 198..199, "w")])
            .collect();
        let file = RenderFile {
            name: "nodes",
            text: &text,
        };
        let got = render_short(&file, &ds);
        assert_eq!(got.matches("error[e]").count(), MAX_PER_FILE);
        assert!(got.starts_with("nodes:1:1: error[e]: e\nnodes:2:1: error[e]: e\n"));
        assert!(got.contains("nodes:100:1: warning[w]: w\n"), "{got}");
        assert!(
            got.ends_with("nodes: ... and 10 more errors (only the first 50 are shown)\n"),
            "{got}"
        );
    }

    #[test]
    fn writing_to_a_stream_gives_the_same_text() {
        let text = format!("{}\n", "z".repeat(1000));
        let ds: Vec<_> = (0..60).map(|i| error_at(i * 10, i * 10 + 3)).collect();
        let files = file("s.xpnet", &text);
        let mut buf = codespan_reporting::term::termcolor::NoColor::new(Vec::new());
        render_to_writer(&files, &ds, &mut buf).unwrap();
        let got = String::from_utf8(buf.into_inner()).unwrap();
        assert_eq!(got, render_to_string(&files, &ds));
    }
}
