//! The worker description parser (see the crate docs and `grammar/topology.md`).

use crate::Diagnostic;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

/// The capability every worker with working memory (`shm > 0`) has implicitly.
pub const GPI_CAPABILITY: &str = "GPI";

/// A parsed topology: the worker descriptions in the order written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    /// One entry per description.
    pub classes: Vec<WorkerClass>,
}

/// One worker description, e.g. `compute+CPU#0:24x2,1073741824/9000`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerClass {
    /// The first capability: GPI-Space names worker types by it. Several descriptions may
    /// share a name (`compute+CPU compute+GPU`).
    pub name: String,
    /// All capabilities, without duplicates, in the order written: the name first, then the
    /// others, then the implicit `GPI` when `shm > 0` and `GPI` was not written.
    pub capabilities: Vec<String>,
    /// `#socket`: the hwloc package (logical index) the workers are bound to.
    pub socket: Option<u32>,
    /// Workers on each host (default 1).
    pub per_node: u32,
    /// At most this many hosts get workers of this description; 0 (default) = all hosts.
    pub max_nodes: u32,
    /// Bytes of working memory per worker (default 0).
    pub shm: u64,
    /// `/basePort`: instance `i` on a host listens on `base_port + i`.
    pub base_port: Option<u16>,
    /// Byte range of the description in the parsed text.
    pub span: Range<usize>,
}

impl WorkerClass {
    /// A description with the defaults (`name` alone, one worker per host on every host).
    pub fn new(name: &str) -> Self {
        WorkerClass {
            name: name.to_string(),
            capabilities: vec![name.to_string()],
            socket: None,
            per_node: 1,
            max_nodes: 0,
            shm: 0,
            base_port: None,
            span: 0..0,
        }
    }

    /// True if both describe the same workers (everything but the span is equal).
    pub fn same_workers(&self, other: &WorkerClass) -> bool {
        WorkerClass {
            span: 0..0,
            ..self.clone()
        } == WorkerClass {
            span: 0..0,
            ..other.clone()
        }
    }
}

impl Topology {
    /// True if both describe the same workers in the same order (spans are ignored).
    pub fn same_workers(&self, other: &Topology) -> bool {
        self.classes.len() == other.classes.len()
            && self
                .classes
                .iter()
                .zip(&other.classes)
                .all(|(a, b)| a.same_workers(b))
    }
}

impl fmt::Display for WorkerClass {
    /// The canonical description: defaults are left out, and so is an implicit trailing `GPI`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut caps: &[String] = &self.capabilities;
        if self.shm > 0 && caps.len() > 1 && caps.last().is_some_and(|c| c == GPI_CAPABILITY) {
            caps = &caps[..caps.len() - 1];
        }
        if caps.is_empty() {
            f.write_str(&self.name)?;
        } else {
            f.write_str(&caps.join("+"))?;
        }
        if let Some(socket) = self.socket {
            write!(f, "#{socket}")?;
        }
        if self.per_node != 1 || self.max_nodes != 0 || self.shm != 0 || self.base_port.is_some() {
            write!(f, ":{}", self.per_node)?;
            if self.max_nodes != 0 {
                write!(f, "x{}", self.max_nodes)?;
            }
            if self.shm != 0 {
                write!(f, ",{}", self.shm)?;
            }
            if let Some(port) = self.base_port {
                write!(f, "/{port}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Topology {
    /// The canonical topology string: the descriptions separated by one space. It parses
    /// back to the same topology (up to spans).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, class) in self.classes.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{class}")?;
        }
        Ok(())
    }
}

/// Parses a worker topology string. Never fails: returns the descriptions it understood
/// (a description with an error keeps its valid parts and defaults for the rest; one without
/// any valid capability name is dropped) and the diagnostics, in text order.
pub fn parse_topology(text: &str) -> (Topology, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let mut classes: Vec<WorkerClass> = Vec::new();
    // The first description with given (sorted) capabilities and socket: a map, not a scan
    // of the earlier descriptions (that was quadratic in long generated topologies).
    let mut seen: HashMap<(Vec<String>, Option<u32>), usize> = HashMap::new();
    let mut any = false;
    for (start, chunk) in words(text) {
        any = true;
        let mut parser = Parser {
            text: chunk,
            base: start,
            pos: 0,
            diagnostics: Vec::new(),
        };
        let class = parser.description();
        diagnostics.append(&mut parser.diagnostics);
        if let Some(class) = class {
            let mut key = class.capabilities.clone();
            key.sort();
            let first = *seen.entry((key, class.socket)).or_insert(classes.len());
            if let Some(earlier) = classes.get(first) {
                diagnostics.push(
                    Diagnostic::warning_at(
                        "topology-duplicate-class",
                        class.span.clone(),
                        format!(
                            "`{}` has the same capabilities and socket as `{}`",
                            &text[class.span.clone()],
                            &text[earlier.span.clone()]
                        ),
                    )
                    .with_note(format!(
                        "the earlier description is at bytes {}..{}; both start workers, \
                         consider adding up their numbers in one description",
                        earlier.span.start, earlier.span.end
                    )),
                );
            }
            classes.push(class);
        }
    }
    if !any {
        diagnostics.push(
            Diagnostic::error_at(
                "topology-empty",
                0..text.len(),
                "the topology describes no workers",
            )
            .with_note("write e.g. `worker:4` for four workers of class `worker` on each host"),
        );
    }
    (Topology { classes }, diagnostics)
}

/// Maximal runs of non-white-space characters with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = text.char_indices().peekable();
    std::iter::from_fn(move || {
        while rest.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let (start, _) = *rest.peek()?;
        let mut end = start;
        while let Some((i, c)) = rest.next_if(|(_, c)| !c.is_whitespace()) {
            end = i + c.len_utf8();
        }
        Some((start, &text[start..end]))
    })
}

/// Characters that end a capability name or a number.
const DELIMITERS: &[char] = &['+', '#', ':', ',', '/'];

const SHAPE_NOTE: &str = "a description is `caps#socket:perNode x maxNodes,shmBytes/basePort` \
                          with everything after the capabilities optional, e.g. \
                          `compute+CPU#0:4x2,1048576/9000`; descriptions are separated by \
                          white space";

/// Parses one description (a white-space free chunk).
struct Parser<'a> {
    text: &'a str,
    base: usize,
    pos: usize,
    diagnostics: Vec<Diagnostic>,
}

/// What a number stands for, for messages and range checks.
#[derive(Clone, Copy)]
enum NumberKind {
    Socket,
    PerNode,
    MaxNodes,
    Shm,
    Port,
}

impl NumberKind {
    fn what(self) -> &'static str {
        match self {
            NumberKind::Socket => "a socket number",
            NumberKind::PerNode => "the number of workers per node",
            NumberKind::MaxNodes => "the maximal number of nodes",
            NumberKind::Shm => "the working memory size in bytes",
            NumberKind::Port => "the base port",
        }
    }

    fn max(self) -> u64 {
        match self {
            NumberKind::Socket | NumberKind::PerNode | NumberKind::MaxNodes => u64::from(u32::MAX),
            NumberKind::Shm => u64::MAX,
            NumberKind::Port => u64::from(u16::MAX),
        }
    }
}

impl<'a> Parser<'a> {
    fn span(&self, range: Range<usize>) -> Range<usize> {
        self.base + range.start..self.base + range.end
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// Span of the character at `pos` (empty at the end).
    fn here(&self) -> Range<usize> {
        let len = self.peek().map_or(0, char::len_utf8);
        self.span(self.pos..self.pos + len)
    }

    /// Consumes a run of characters up to a delimiter (and, for numbers, up to an `x` that
    /// follows at least one character).
    fn run(&mut self, number: bool) -> (Range<usize>, &'a str) {
        let text = self.text;
        let start = self.pos;
        for (i, c) in text[start..].char_indices() {
            if DELIMITERS.contains(&c) || (number && c == 'x' && i > 0) {
                self.pos = start + i;
                return (self.span(start..self.pos), &text[start..self.pos]);
            }
        }
        self.pos = text.len();
        (self.span(start..self.pos), &text[start..])
    }

    fn description(&mut self) -> Option<WorkerClass> {
        let caps = self.capabilities();
        let mut socket = None;
        let mut per_node = 1;
        let mut per_node_span = None;
        let mut max_nodes = 0;
        let mut shm = 0;
        let mut base_port = None;
        let mut port_span = None;
        if self.eat('#') {
            socket = self.number(NumberKind::Socket, '#').map(|(n, _)| n as u32);
        }
        if self.eat(':') {
            if let Some((n, span)) = self.number(NumberKind::PerNode, ':') {
                per_node = n as u32;
                per_node_span = Some(span);
            }
            if self.eat('x') {
                max_nodes = self
                    .number(NumberKind::MaxNodes, 'x')
                    .map_or(0, |(n, _)| n as u32);
            }
            if self.eat(',') {
                shm = self.number(NumberKind::Shm, ',').map_or(0, |(n, _)| n);
            }
            if self.eat('/')
                && let Some((n, span)) = self.number(NumberKind::Port, '/')
            {
                base_port = Some(n as u16);
                port_span = Some(span);
            }
        }
        if self.pos < self.text.len() {
            self.unexpected();
        }
        let (name, _) = caps.first()?.clone();
        if let (Some(span), 0) = (per_node_span, per_node) {
            self.diagnostics.push(
                Diagnostic::warning_at(
                    "topology-zero-workers",
                    span,
                    format!("`{name}` starts no workers: 0 per node"),
                )
                .with_note(
                    "leave the description out, or give at least 1 worker per node (a root \
                     whose workers join through `gspc-leaf` agents starts none: then this is \
                     expected)",
                ),
            );
        }
        if let (Some(port), Some(span)) = (base_port, port_span) {
            // an unusable base port is reported and dropped
            base_port = None;
            let last = u32::from(port).saturating_add(per_node.saturating_sub(1));
            if port == 0 {
                self.diagnostics.push(
                    Diagnostic::error_at("topology-bad-port", span, "base port 0 is not a port")
                        .with_note("leave out `/basePort` to let the system choose the ports"),
                );
            } else if last <= u32::from(u16::MAX) {
                base_port = Some(port);
            } else {
                self.diagnostics.push(Diagnostic::error_at(
                    "topology-bad-port",
                    span,
                    format!(
                        "{per_node} workers per node from base port {port} need ports up to \
                         {last}, above 65535"
                    ),
                ));
            }
        }
        let mut capabilities: Vec<String> = caps.into_iter().map(|(c, _)| c).collect();
        if shm > 0 && !capabilities.iter().any(|c| c == GPI_CAPABILITY) {
            capabilities.push(GPI_CAPABILITY.to_string());
        }
        Some(WorkerClass {
            name,
            capabilities,
            socket,
            per_node,
            max_nodes,
            shm,
            base_port,
            span: self.span(0..self.text.len()),
        })
    }

    /// `id ('+' id)*`; returns the valid, distinct names.
    fn capabilities(&mut self) -> Vec<(String, Range<usize>)> {
        let mut caps: Vec<(String, Range<usize>)> = Vec::new();
        let mut after_plus = false;
        loop {
            let (span, word) = self.run(false);
            if word.is_empty() {
                let (message, span) = match (self.peek(), after_plus) {
                    (Some(c), _) => (
                        format!("expected a capability name, found `{c}`"),
                        self.here(),
                    ),
                    (None, true) => (
                        "expected a capability name after `+`".to_string(),
                        self.span(self.pos - 1..self.pos),
                    ),
                    // unreachable: chunks are never empty
                    (None, false) => ("expected a capability name".to_string(), self.here()),
                };
                self.diagnostics.push(
                    Diagnostic::error_at("topology-syntax", span, message).with_note(SHAPE_NOTE),
                );
            } else if !is_name(word) {
                let mut d = Diagnostic::error_at(
                    "topology-bad-name",
                    span,
                    format!("`{word}` is not a capability name"),
                )
                .with_note("capability names match `[A-Za-z_][A-Za-z0-9_]*`");
                if word.contains('=') || word.contains('.') || word.contains('-') {
                    d = d.with_note("use `_` instead of other punctuation");
                }
                self.diagnostics.push(d);
            } else if let Some((_, first)) = caps.iter().find(|(c, _)| c == word) {
                let first = first.clone();
                self.diagnostics.push(
                    Diagnostic::warning_at(
                        "topology-duplicate-capability",
                        span,
                        format!("capability `{word}` is named twice"),
                    )
                    .with_note(format!(
                        "first named at bytes {}..{}",
                        first.start, first.end
                    )),
                );
            } else {
                caps.push((word.to_string(), span));
            }
            if self.eat('+') {
                after_plus = true;
            } else {
                return caps;
            }
        }
    }

    /// A decimal number after `delimiter` (already consumed).
    fn number(&mut self, kind: NumberKind, delimiter: char) -> Option<(u64, Range<usize>)> {
        let delimiter_span = self.span(self.pos - 1..self.pos);
        let (span, word) = self.run(true);
        let what = kind.what();
        if word.is_empty() {
            let found = self
                .peek()
                .map_or_else(|| "nothing".to_string(), |c| format!("`{c}`"));
            self.diagnostics.push(
                Diagnostic::error_at(
                    "topology-syntax",
                    delimiter_span,
                    format!("expected {what} after `{delimiter}`, found {found}"),
                )
                .with_note(SHAPE_NOTE),
            );
            return None;
        }
        if !word.bytes().all(|b| b.is_ascii_digit()) {
            let mut d = Diagnostic::error_at(
                "topology-bad-number",
                span,
                format!("`{word}` is not a number: expected {what}"),
            )
            .with_note("numbers are written with the decimal digits 0-9 only");
            if let NumberKind::Shm = kind {
                d = d.with_note("give the size in bytes, e.g. 1073741824 for 1 GiB");
            }
            self.diagnostics.push(d);
            return None;
        }
        match word.parse::<u64>() {
            Ok(n) if n <= kind.max() => Some((n, span)),
            _ => {
                self.diagnostics.push(Diagnostic::error_at(
                    "topology-bad-number",
                    span,
                    format!("{what} `{word}` is too large (at most {})", kind.max()),
                ));
                None
            }
        }
    }

    /// Reports the rest of the chunk as unexpected.
    fn unexpected(&mut self) {
        let rest = &self.text[self.pos..];
        let span = self.span(self.pos..self.text.len());
        let mut d = Diagnostic::error_at("topology-syntax", span, format!("unexpected `{rest}`"));
        let seen_colon = self.text[..self.pos].contains(':');
        match rest.chars().next() {
            Some('#') if seen_colon => {
                d = d.with_note("the socket goes before `:`, as in `compute#0:4`");
            }
            Some(':') => d = d.with_note("a description has at most one `:`"),
            Some('x' | ',' | '/') if !seen_colon => {
                d = d.with_note("`x maxNodes`, `,shmBytes` and `/basePort` follow `:perNode`");
            }
            Some('x' | ',' | '/') => {
                d = d.with_note("the parts after `:` come in the order `perNode x maxNodes,shmBytes/basePort`, each at most once");
            }
            _ => {}
        }
        self.diagnostics.push(d.with_note(SHAPE_NOTE));
        self.pos = self.text.len();
    }
}

/// `[A-Za-z_][A-Za-z0-9_]*`
pub(crate) fn is_name(word: &str) -> bool {
    let mut bytes = word.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Checks the `#socket` of every description against the number of sockets of the machine
/// (`topology-no-such-socket`). Use it when planning for the local host.
pub fn check_sockets(topology: &Topology, sockets: u32) -> Vec<Diagnostic> {
    topology
        .classes
        .iter()
        .filter_map(|class| {
            let socket = class.socket?;
            (socket >= sockets).then(|| {
                let has = match sockets {
                    0 => "no sockets".to_string(),
                    1 => "1 socket (0)".to_string(),
                    n => format!("{n} sockets (0 to {})", n - 1),
                };
                Diagnostic::error_at(
                    "topology-no-such-socket",
                    class.span.clone(),
                    format!(
                        "`{}` is pinned to socket {socket}, but this machine has {has}",
                        class
                    ),
                )
                .with_note("sockets are hwloc packages, numbered from 0 as `lstopo` shows them")
            })
        })
        .collect()
}

/// [`check_sockets`] against the local machine's socket count ([`crate::hwloc::socket_count`]).
pub fn check_local_sockets(topology: &Topology) -> Vec<Diagnostic> {
    check_sockets(topology, crate::hwloc::socket_count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};
    use proptest::prelude::*;

    /// Renders the classes and diagnostics of a parse.
    fn render(text: &str) -> String {
        let (topology, diagnostics) = parse_topology(text);
        let mut out = String::new();
        for c in &topology.classes {
            out.push_str(&format!(
                "class {} caps={} socket={:?} per_node={} max_nodes={} shm={} port={:?} @{}..{}\n",
                c.name,
                c.capabilities.join("+"),
                c.socket,
                c.per_node,
                c.max_nodes,
                c.shm,
                c.base_port,
                c.span.start,
                c.span.end
            ));
        }
        for d in &diagnostics {
            out.push_str(&format!("{}\n", crate::tests::brief(d)));
        }
        out
    }

    fn check(text: &str, expected: Expect) {
        expected.assert_eq(&render(text));
    }

    #[test]
    fn spec_example() {
        let text = "compute+CPU:24,1073741824 compute+GPU:2,1073741824 reduce:4,2147483648 \
                    IO+load:2,16777216 IO+store:2,16777216 init:1x1";
        check(
            text,
            expect![[r#"
                class compute caps=compute+CPU+GPI socket=None per_node=24 max_nodes=0 shm=1073741824 port=None @0..25
                class compute caps=compute+GPU+GPI socket=None per_node=2 max_nodes=0 shm=1073741824 port=None @26..50
                class reduce caps=reduce+GPI socket=None per_node=4 max_nodes=0 shm=2147483648 port=None @51..70
                class IO caps=IO+load+GPI socket=None per_node=2 max_nodes=0 shm=16777216 port=None @71..89
                class IO caps=IO+store+GPI socket=None per_node=2 max_nodes=0 shm=16777216 port=None @90..109
                class init caps=init socket=None per_node=1 max_nodes=1 shm=0 port=None @110..118
            "#]],
        );
        let (topology, _) = parse_topology(text);
        assert_eq!(topology.to_string(), text);
    }

    #[test]
    fn gpi_space_help_examples() {
        // from `sdpa boot --help` (without the `16*2**20` expressions, which were shell maths)
        check(
            "INIT:1x1,0 LOAD:2,16777216 WRITE:2x4,16777216 WRITE+LOAD:2",
            expect![[r#"
                class INIT caps=INIT socket=None per_node=1 max_nodes=1 shm=0 port=None @0..10
                class LOAD caps=LOAD+GPI socket=None per_node=2 max_nodes=0 shm=16777216 port=None @11..26
                class WRITE caps=WRITE+GPI socket=None per_node=2 max_nodes=4 shm=16777216 port=None @27..45
                class WRITE caps=WRITE+LOAD socket=None per_node=2 max_nodes=0 shm=0 port=None @46..58
            "#]],
        );
    }

    #[test]
    fn every_part() {
        check(
            "  work#1:3x2,5/9000\n\t_a_1+B2 ",
            expect![[r#"
                class work caps=work+GPI socket=Some(1) per_node=3 max_nodes=2 shm=5 port=Some(9000) @2..19
                class _a_1 caps=_a_1+B2 socket=None per_node=1 max_nodes=0 shm=0 port=None @21..28
            "#]],
        );
        let (t, d) = parse_topology("work#1:3x2,5/9000 a+GPI:1,7 GPI:2,3 b+GPI");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(t.to_string(), "work#1:3x2,5/9000 a:1,7 GPI:2,3 b+GPI");
        assert_eq!(t.classes[1].capabilities, ["a", "GPI"]);
        assert_eq!(t.classes[2].capabilities, ["GPI"]);
    }

    #[test]
    fn grammar_doc_examples() {
        // the examples of grammar/topology.md
        let (t, d) = parse_topology("work#0:12 work#1:12 io:2x4,16777216/9000");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(t.classes[1].socket, Some(1));
        assert_eq!(t.classes[2].base_port, Some(9000));
        assert_eq!(t.classes[2].max_nodes, 4);
        let (_, d) = parse_topology("a:2#1");
        assert_eq!(
            d[0].render_short("--topology", "a:2#1"),
            "--topology:1:4: error[topology-syntax]: unexpected `#1`\n  \
             = note: the socket goes before `:`, as in `compute#0:4`\n  \
             = note: a description is `caps#socket:perNode x maxNodes,shmBytes/basePort` with \
             everything after the capabilities optional, e.g. `compute+CPU#0:4x2,1048576/9000`; \
             descriptions are separated by white space"
        );
    }

    #[test]
    fn empty_input() {
        check(
            "",
            expect![[r#"
                error topology-empty@0..0: the topology describes no workers
            "#]],
        );
        check(
            " \n\t ",
            expect![[r#"
                error topology-empty@0..4: the topology describes no workers
            "#]],
        );
    }

    #[test]
    fn missing_parts() {
        check(
            "compute:",
            expect![[r#"
                class compute caps=compute socket=None per_node=1 max_nodes=0 shm=0 port=None @0..8
                error topology-syntax@7..8: expected the number of workers per node after `:`, found nothing
            "#]],
        );
        check(
            "compute+",
            expect![[r#"
                class compute caps=compute socket=None per_node=1 max_nodes=0 shm=0 port=None @0..8
                error topology-syntax@7..8: expected a capability name after `+`
            "#]],
        );
        check(
            "a+:2",
            expect![[r#"
                class a caps=a socket=None per_node=2 max_nodes=0 shm=0 port=None @0..4
                error topology-syntax@2..3: expected a capability name, found `:`
            "#]],
        );
        check(
            ":4",
            expect![[r#"
                error topology-syntax@0..1: expected a capability name, found `:`
            "#]],
        );
        check(
            "a#",
            expect![[r#"
                class a caps=a socket=None per_node=1 max_nodes=0 shm=0 port=None @0..2
                error topology-syntax@1..2: expected a socket number after `#`, found nothing
            "#]],
        );
        check(
            "a:2x,5",
            expect![[r#"
                class a caps=a+GPI socket=None per_node=2 max_nodes=0 shm=5 port=None @0..6
                error topology-syntax@3..4: expected the maximal number of nodes after `x`, found `,`
            "#]],
        );
        check(
            "a:,5/",
            expect![[r#"
                class a caps=a+GPI socket=None per_node=1 max_nodes=0 shm=5 port=None @0..5
                error topology-syntax@1..2: expected the number of workers per node after `:`, found `,`
                error topology-syntax@4..5: expected the base port after `/`, found nothing
            "#]],
        );
    }

    #[test]
    fn bad_numbers() {
        check(
            "#x",
            expect![[r#"
                error topology-syntax@0..1: expected a capability name, found `#`
                error topology-bad-number@1..2: `x` is not a number: expected a socket number
            "#]],
        );
        check(
            "a#x",
            expect![[r#"
                class a caps=a socket=None per_node=1 max_nodes=0 shm=0 port=None @0..3
                error topology-bad-number@2..3: `x` is not a number: expected a socket number
            "#]],
        );
        check(
            "load:2,16*2**20 b:4294967296 c:1x99999999999999999999999 d:1/65536 e:1,18446744073709551616",
            expect![[r#"
                class load caps=load socket=None per_node=2 max_nodes=0 shm=0 port=None @0..15
                class b caps=b socket=None per_node=1 max_nodes=0 shm=0 port=None @16..28
                class c caps=c socket=None per_node=1 max_nodes=0 shm=0 port=None @29..56
                class d caps=d socket=None per_node=1 max_nodes=0 shm=0 port=None @57..66
                class e caps=e socket=None per_node=1 max_nodes=0 shm=0 port=None @67..91
                error topology-bad-number@7..15: `16*2**20` is not a number: expected the working memory size in bytes
                error topology-bad-number@18..28: the number of workers per node `4294967296` is too large (at most 4294967295)
                error topology-bad-number@33..56: the maximal number of nodes `99999999999999999999999` is too large (at most 4294967295)
                error topology-bad-number@61..66: the base port `65536` is too large (at most 65535)
                error topology-bad-number@71..91: the working memory size in bytes `18446744073709551616` is too large (at most 18446744073709551615)
            "#]],
        );
        check(
            "a:1G b:-1 c:+1",
            expect![[r#"
                class a caps=a socket=None per_node=1 max_nodes=0 shm=0 port=None @0..4
                class b caps=b socket=None per_node=1 max_nodes=0 shm=0 port=None @5..9
                class c caps=c socket=None per_node=1 max_nodes=0 shm=0 port=None @10..14
                error topology-bad-number@2..4: `1G` is not a number: expected the number of workers per node
                error topology-bad-number@7..9: `-1` is not a number: expected the number of workers per node
                error topology-syntax@11..12: expected the number of workers per node after `:`, found `+`
                error topology-syntax@12..14: unexpected `+1`
            "#]],
        );
    }

    #[test]
    fn bad_names() {
        check(
            "1st:2 my-worker+ok é+x a.b",
            expect![[r#"
                class ok caps=ok socket=None per_node=1 max_nodes=0 shm=0 port=None @6..18
                class x caps=x socket=None per_node=1 max_nodes=0 shm=0 port=None @19..23
                error topology-bad-name@0..3: `1st` is not a capability name
                error topology-bad-name@6..15: `my-worker` is not a capability name
                error topology-bad-name@19..21: `é` is not a capability name
                error topology-bad-name@24..27: `a.b` is not a capability name
            "#]],
        );
    }

    #[test]
    fn misplaced_parts() {
        check(
            "a:2#1 b:1:2 c,5 d:1x2x3 e/9",
            expect![[r#"
                class a caps=a socket=None per_node=2 max_nodes=0 shm=0 port=None @0..5
                class b caps=b socket=None per_node=1 max_nodes=0 shm=0 port=None @6..11
                class c caps=c socket=None per_node=1 max_nodes=0 shm=0 port=None @12..15
                class d caps=d socket=None per_node=1 max_nodes=2 shm=0 port=None @16..23
                class e caps=e socket=None per_node=1 max_nodes=0 shm=0 port=None @24..27
                error topology-syntax@3..5: unexpected `#1`
                error topology-syntax@9..11: unexpected `:2`
                error topology-syntax@13..15: unexpected `,5`
                error topology-syntax@21..23: unexpected `x3`
                error topology-syntax@25..27: unexpected `/9`
            "#]],
        );
        let (_, d) = parse_topology("a:2#1");
        assert_eq!(
            d[0].notes[0],
            "the socket goes before `:`, as in `compute#0:4`"
        );
    }

    #[test]
    fn warnings() {
        check(
            "a+b+a:0 b+a a#1 a#1:2,7 a+GPI#1",
            expect![[r#"
                class a caps=a+b socket=None per_node=0 max_nodes=0 shm=0 port=None @0..7
                class b caps=b+a socket=None per_node=1 max_nodes=0 shm=0 port=None @8..11
                class a caps=a socket=Some(1) per_node=1 max_nodes=0 shm=0 port=None @12..15
                class a caps=a+GPI socket=Some(1) per_node=2 max_nodes=0 shm=7 port=None @16..23
                class a caps=a+GPI socket=Some(1) per_node=1 max_nodes=0 shm=0 port=None @24..31
                warning topology-duplicate-capability@4..5: capability `a` is named twice
                warning topology-zero-workers@6..7: `a` starts no workers: 0 per node
                warning topology-duplicate-class@8..11: `b+a` has the same capabilities and socket as `a+b+a:0`
                warning topology-duplicate-class@24..31: `a+GPI#1` has the same capabilities and socket as `a#1:2,7`
            "#]],
        );
        let (_, d) = parse_topology("a b");
        assert!(d.is_empty());
    }

    #[test]
    fn ports() {
        check(
            "a:2/0 b:3/65534 c:2/65534",
            expect![[r#"
                class a caps=a socket=None per_node=2 max_nodes=0 shm=0 port=None @0..5
                class b caps=b socket=None per_node=3 max_nodes=0 shm=0 port=None @6..15
                class c caps=c socket=None per_node=2 max_nodes=0 shm=0 port=Some(65534) @16..25
                error topology-bad-port@4..5: base port 0 is not a port
                error topology-bad-port@10..15: 3 workers per node from base port 65534 need ports up to 65536, above 65535
            "#]],
        );
    }

    /// Found by the `topology_string` fuzz target: the last port of a huge worker count
    /// overflowed (a panic in debug builds, a wrapped port accepted in release builds).
    #[test]
    fn a_huge_worker_count_with_a_base_port_is_an_error_not_an_overflow() {
        let (t, d) = parse_topology("a:4294967295/9");
        assert!(t.classes.iter().all(|c| c.base_port.is_none()));
        assert!(
            d.iter()
                .any(|d| d.code == "topology-bad-port" && d.message.contains("above 65535")),
            "{d:?}"
        );
    }

    #[test]
    fn sockets_are_checked() {
        let (t, _) = parse_topology("a#0 b#1:2 c");
        let d = check_sockets(&t, 1);
        assert_eq!(d.len(), 1);
        assert_eq!(
            crate::tests::brief(&d[0]),
            "error topology-no-such-socket@4..9: `b#1:2` is pinned to socket 1, but this machine has \
             1 socket (0)"
        );
        assert!(check_sockets(&t, 2).is_empty());
        assert_eq!(check_sockets(&t, 0).len(), 2);
        // the local machine has at least socket 0
        let (t, _) = parse_topology("a#0 b#4000000000");
        let d = check_local_sockets(&t);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].range(), 4..16);
    }

    #[test]
    fn display_leaves_out_defaults() {
        let (t, d) = parse_topology("a:1 b:1x0,0 c#0:1");
        assert!(d.is_empty());
        assert_eq!(t.to_string(), "a b c#0");
        assert_eq!(Topology::default().to_string(), "");
        assert_eq!(WorkerClass::new("w").to_string(), "w");
    }

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("GPI".to_string()),
            "[A-Za-z_][A-Za-z0-9_]{0,6}",
            "x[0-9]{0,2}",
        ]
    }

    fn class() -> impl Strategy<Value = WorkerClass> {
        (
            proptest::collection::vec(name(), 1..4),
            proptest::option::of(any::<u32>()),
            any::<u32>(),
            prop_oneof![Just(0u32), any::<u32>()],
            prop_oneof![Just(0u64), any::<u64>()],
            proptest::option::of(1u16..=u16::MAX),
        )
            .prop_map(|(names, socket, per_node, max_nodes, shm, port)| {
                let mut capabilities: Vec<String> = Vec::new();
                for n in names {
                    if !capabilities.contains(&n) {
                        capabilities.push(n);
                    }
                }
                if shm > 0 && !capabilities.iter().any(|c| c == GPI_CAPABILITY) {
                    capabilities.push(GPI_CAPABILITY.into());
                }
                // the last instance's port must fit: base + per_node - 1 <= 65535
                let base_port = port.and_then(|p| {
                    let limit = 65536u32.checked_sub(per_node.max(1))?;
                    u16::try_from(u32::from(p).min(limit)).ok()
                });
                WorkerClass {
                    name: capabilities[0].clone(),
                    capabilities,
                    socket,
                    per_node,
                    max_nodes,
                    shm,
                    base_port: base_port.filter(|&p| p > 0),
                    span: 0..0,
                }
            })
    }

    proptest! {
        #[test]
        fn never_panics(text in "[ -~\t\néä]{0,40}") {
            let (topology, diagnostics) = parse_topology(&text);
            for d in &diagnostics {
                prop_assert!(d.range().start <= d.range().end && d.range().end <= text.len());
                prop_assert!(text.is_char_boundary(d.range().start) && text.is_char_boundary(d.range().end));
            }
            // whatever was understood prints canonically and parses back without errors
            if !topology.classes.is_empty() {
                let printed = topology.to_string();
                let (again, d2) = parse_topology(&printed);
                prop_assert!(!crate::has_errors(&d2), "{printed}: {d2:?}");
                prop_assert!(again.same_workers(&topology), "{printed}");
            }
        }

        #[test]
        fn never_panics_on_topology_alphabet(text in "[a-c0-9+#:x,/ ]{0,30}") {
            let (topology, diagnostics) = parse_topology(&text);
            if !crate::has_errors(&diagnostics) {
                let (again, _) = parse_topology(&topology.to_string());
                prop_assert!(again.same_workers(&topology));
            }
        }

        #[test]
        fn display_round_trips(classes in proptest::collection::vec(class(), 1..5)) {
            let topology = Topology { classes };
            let printed = topology.to_string();
            let (again, diagnostics) = parse_topology(&printed);
            prop_assert!(!crate::has_errors(&diagnostics), "{printed}: {diagnostics:?}");
            prop_assert!(again.same_workers(&topology), "{printed}");
            prop_assert_eq!(again.to_string(), printed);
        }
    }
}
