//! Worker topologies: GPI-Space's worker description string, nodefiles, placement plans and
//! the local machine's hardware (through hwloc).
//!
//! # The worker description string
//!
//! A topology is a list of worker descriptions separated by white space. Each description
//! says which workers to start on every host:
//!
//! ```text
//! Caps ('#' socket)? (':' perNode ('x' maxNodes)? (',' shmBytes)? ('/' basePort)?)?
//! Caps = id ('+' id)*          id = [A-Za-z_][A-Za-z0-9_]*
//! ```
//!
//! * `Caps` are the capabilities the workers offer; the FIRST one is the worker class name
//!   (GPI-Space names worker types by it). Transitions that `require` a capability run only
//!   on workers that have it.
//! * `#socket` pins the workers to that socket (hwloc package, logical index, as `lstopo`
//!   prints `Package L#n`).
//! * `perNode` workers are started on each host (default 1), on at most `maxNodes` hosts
//!   (default 0 = all hosts), each with `shmBytes` bytes of working memory (default 0; a value
//!   above 0 adds the implicit capability `GPI`), listening from `basePort` upwards (one port
//!   per instance on a host; default: none, the system chooses).
//!
//! ```
//! use pnet_topology::parse_topology;
//!
//! let (topology, diagnostics) = parse_topology(
//!     "compute+CPU:24,1073741824 compute+GPU:2,1073741824 reduce:4,2147483648 init:1x1",
//! );
//! assert!(diagnostics.is_empty());
//! assert_eq!(topology.classes.len(), 4);
//! assert_eq!(topology.classes[0].name, "compute");
//! assert_eq!(topology.classes[0].capabilities, ["compute", "CPU", "GPI"]);
//! assert_eq!(topology.classes[0].per_node, 24);
//! assert_eq!(topology.classes[3].max_nodes, 1);
//! // `Display` prints the canonical form, which parses back to the same topology.
//! assert_eq!(topology.to_string(),
//!     "compute+CPU:24,1073741824 compute+GPU:2,1073741824 reduce:4,2147483648 init:1x1");
//! ```
//!
//! Parsing never fails: [`parse_topology`] returns what it understood plus [`Diagnostic`]s.
//! The codes are stable:
//!
//! | code | severity | meaning |
//! | --- | --- | --- |
//! | `topology-empty` | error | the text holds no description |
//! | `topology-syntax` | error | a missing or unexpected part (`compute:`, `compute+`, `a:1#2`) |
//! | `topology-bad-name` | error | a capability name that is not `[A-Za-z_][A-Za-z0-9_]*` |
//! | `topology-bad-number` | error | not a decimal number, or out of range |
//! | `topology-bad-port` | error | base port 0, or `basePort + perNode - 1` above 65535 |
//! | `topology-zero-workers` | warning | `perNode` is 0: the description starts no workers |
//! | `topology-duplicate-capability` | warning | a capability named twice in one description |
//! | `topology-duplicate-class` | warning | the same capabilities and socket as an earlier description |
//! | `topology-no-such-socket` | error | [`check_sockets`]: a `#socket` the local machine lacks |
//! | `topology-too-many-workers` | error | [`check_worker_count`]: more than [`MAX_PLANNED_WORKERS`] workers |
//! | `nodefile-bad-host` | error | a nodefile line that is not a host name or IP address |
//! | `nodefile-duplicate-host` | warning | a host listed twice (only the first counts) |
//! | `nodefile-empty` | error | a nodefile without hosts |
//!
//! Two descriptions may share a class name (`compute+CPU` and `compute+GPU` above): that is
//! GPI-Space's usual style, so it is not diagnosed; only descriptions with identical
//! capability sets and socket get `topology-duplicate-class`.
//!
//! # Nodefiles and plans
//!
//! [`parse_nodefile`] reads one host a line; [`plan`] expands a topology over the hosts into
//! the list of workers to start ([`Plan`], printed by `--dry-run`).

pub mod hwloc;
mod nodefile;
mod parse;
mod plan;

pub use nodefile::{local_hostname, parse_nodefile};
pub use parse::{
    GPI_CAPABILITY, Topology, WorkerClass, check_local_sockets, check_sockets, parse_topology,
};
pub use plan::{
    MAX_PLANNED_WORKERS, Plan, PlannedWorker, check_worker_count, default_topology, plan,
    plan_with_limit, worker_count,
};

use std::fmt;
use std::ops::Range;

/// How bad a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The input is wrong; do not start anything.
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

/// A problem found in a topology string or a nodefile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Stable code, e.g. `topology-syntax` (see the table in the crate docs).
    pub code: &'static str,
    /// Error or warning.
    pub severity: Severity,
    /// One line, lower case, no final period.
    pub message: String,
    /// Byte offsets into the parsed text.
    pub span: Range<usize>,
    /// Extra help lines.
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, span: Range<usize>, message: String) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            message,
            span,
            notes: Vec::new(),
        }
    }

    pub fn warning(code: &'static str, span: Range<usize>, message: String) -> Self {
        Diagnostic {
            code,
            severity: Severity::Warning,
            message,
            span,
            notes: Vec::new(),
        }
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// True for [`Severity::Error`].
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Renders the diagnostic for a terminal: `origin:line:col: error[code]: message`, then
    /// one `  = note: …` line per note. `origin` is a file name or e.g. `--topology`; `text`
    /// is the text the span refers to (lines and columns count from 1, columns in characters).
    pub fn render(&self, origin: &str, text: &str) -> String {
        let (line, col) = line_col(text, self.span.start);
        self.render_at(origin, line, col)
    }

    fn render_at(&self, origin: &str, line: usize, col: usize) -> String {
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

impl fmt::Display for Diagnostic {
    /// The short form `code@start..end: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}@{}..{}: {}",
            self.code, self.span.start, self.span.end, self.message
        )
    }
}

/// At most this many errors, and as many warnings, are rendered by [`render_all`].
pub const MAX_RENDERED: usize = 50;

/// Renders diagnostics of one text as [`Diagnostic::render`] does, one per line, but at most
/// [`MAX_RENDERED`] errors and as many warnings, then `... and K more errors`. Linear in the
/// text and the number of diagnostics (the positions come from one index of line starts).
pub fn render_all(origin: &str, text: &str, diagnostics: &[Diagnostic]) -> String {
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
        if *shown > MAX_RENDERED {
            continue;
        }
        let (line, col) = lines.line_col(text, d.span.start);
        out.push_str(&d.render_at(origin, line, col));
        out.push('\n');
    }
    for (n, what) in [(errors, "errors"), (warnings, "warnings")] {
        if n > MAX_RENDERED {
            out.push_str(&format!(
                "{origin}: ... and {} more {what} (only the first {MAX_RENDERED} are shown)\n",
                n - MAX_RENDERED
            ));
        }
    }
    out
}

/// The starts of a text's lines, for many [`line_col`] look-ups.
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        LineIndex {
            starts: std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
        }
    }

    /// As [`line_col`], for the text this index was made from, in time proportional to the
    /// length of the line.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        (line, text[start..offset].chars().count() + 1)
    }
}

/// True if any diagnostic is an error.
pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(Diagnostic::is_error)
}

/// 1-based line and column (in characters) of byte `offset` in `text`; offsets past the end or
/// inside a character are clamped.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_lines_and_characters() {
        let text = "ab\ncä d\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 1));
        // byte 6 is after "cä" (ä has two bytes)
        assert_eq!(line_col(text, 6), (2, 3));
        // inside ä: clamped to its start
        assert_eq!(line_col(text, 5), (2, 2));
        assert_eq!(line_col(text, 100), (3, 1));
    }

    #[test]
    fn the_line_index_agrees_with_line_col() {
        let text = "ab\ncä d\n\nxyz";
        let index = LineIndex::new(text);
        for offset in 0..=text.len() + 2 {
            assert_eq!(
                index.line_col(text, offset),
                line_col(text, offset),
                "{offset}"
            );
        }
    }

    /// A generated 23 KB topology with thousands of errors and warnings: the rendering is
    /// capped, and parsing is not quadratic (it compared every description with every
    /// earlier one).
    #[test]
    fn a_long_topology_with_many_errors_renders_bounded() {
        let text: String = (0..2500)
            .map(|i| format!("w{}:x{i} ", i % 3))
            .chain((0..1000).map(|_| "dup:1 ".to_string()))
            .collect();
        assert!(text.len() > 23_000);
        let start = std::time::Instant::now();
        let (topology, diagnostics) = parse_topology(&text);
        assert_eq!(topology.classes.len(), 3500);
        let errors = diagnostics.iter().filter(|d| d.is_error()).count();
        assert_eq!(errors, 2500);
        assert_eq!(diagnostics.len() - errors, 2500 - 3 + 999);
        let out = render_all("--topology", &text, &diagnostics);
        // Only a sanity bound: it finishes.
        assert!(start.elapsed().as_secs() < 60);
        assert_eq!(out.matches("error[").count(), MAX_RENDERED);
        assert_eq!(out.matches("warning[").count(), MAX_RENDERED);
        assert!(out.contains("--topology: ... and 2450 more errors (only the first 50"));
        assert!(out.contains("... and 3446 more warnings"), "{out}");
        assert!(out.len() < 30_000, "{} bytes", out.len());
        // The positions are those `render` gives.
        let first = diagnostics[0].render("--topology", &text);
        assert!(out.starts_with(&format!("{first}\n")), "{out}");
    }

    #[test]
    fn render_has_origin_position_code_and_notes() {
        let d = Diagnostic::error("topology-syntax", 3..4, "expected a number".into())
            .note("write `a:4`");
        assert_eq!(
            d.render("--topology", "ab c"),
            "--topology:1:4: error[topology-syntax]: expected a number\n  = note: write `a:4`"
        );
        assert_eq!(d.to_string(), "topology-syntax@3..4: expected a number");
        assert!(has_errors(&[d]));
        assert!(!has_errors(&[Diagnostic::warning("w", 0..0, "w".into())]));
    }
}
