//! `pnet2dot`: draws a compiled net (a [`Bundle`]) as a Graphviz `digraph`.
//!
//! The drawing, in Graphviz terms:
//!
//! - places are ellipses: the name, with `--signature` the type (`--full-signatures` spells
//!   struct types out field by field), with `--token` the initial tokens in literal syntax, and
//!   markers `[virtual]` (also a dashed outline), `[generator]`, `[put_token]`,
//!   `[shared_sink]`;
//! - transitions are boxes: rounded for expressions, filled for module calls (`module
//!   NAME.FUNCTION`), 3-D boxes for multi-target modules; a line `if CONDITION` (the source
//!   text of the condition when the sources are at hand, else `[condition]`), `priority N` with
//!   `--priority`, `eureka PORT`, the shared-token flags;
//! - transitions whose function is a net (not inlined) are clusters holding that net, drawn
//!   the same way (recursively), with one `cds` node per port; a port bound to a place of the
//!   child net is joined to it by a thin grey line;
//! - the ports of the root function are `cds` nodes too, joined to the places they bind;
//! - arcs carry the port name (and its type with `--signature`): `connect-in` solid with a
//!   normal arrowhead, `connect-read` dashed, `connect-out` solid with a `vee` arrowhead,
//!   `connect-out-many` a double line, `connect-number-of-tokens` dotted with an `odot`
//!   arrowhead, `connect-inout` (an in and an out of one port on one place) a single edge with
//!   arrowheads at both ends, `connect-response` a purple dashed arc from the transition to
//!   the place of the port it answers;
//! - virtual places appear with `--virtual`; with `--tunnel-connection` the `place-map`s of
//!   child nets are bold dotted lines between the child's virtual place and the parent's real
//!   place (the virtual places on such lines are then drawn even without `--virtual`);
//! - `--not-starts-with P` / `--not-ends-with S` hide every place and transition (a child net
//!   with its whole cluster) whose name starts with `P` / ends with `S`, and their arcs;
//! - a trace ([`Trace`], from `pnetv --trace-out`) colours the transitions it fires and their
//!   arcs red and numbers the steps (`trace #1, #3`); the steps of the trace's loop (unbounded
//!   nets, non-termination) are orange (`loop #1`).
//!
//! The output is deterministic: node ids are `n<I>_p<J>` (place `J` of net instance `I`),
//! `n<I>_t<J>` and `n<I>_port<J>`, net instances numbered in depth-first order from the root
//! (`n0`), and everything is written in IR order. Every label is a quoted DOT string with `"`
//! and `\` escaped, so names and values may contain any character.

use std::collections::BTreeMap;
use std::fmt::Write;

use pnet_bundle::{
    Body, Bundle, Code, ConnectKind, Function, FunctionId, Net, PlaceId, PortDir, PortId,
    SourceSpan, Transition, TransitionId,
};
use pnet_stdlib::Type;

/// What to draw (the command-line options).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `--signature`: types of places and ports.
    pub signature: bool,
    /// `--full-signatures`: like `signature`, with struct types spelled out.
    pub full_signatures: bool,
    /// `--token`: initial tokens.
    pub token: bool,
    /// `--priority`: transition priorities.
    pub priority: bool,
    /// `--virtual`: virtual places.
    pub show_virtual: bool,
    /// `--tunnel-connection`: place-maps of child nets.
    pub tunnel_connection: bool,
    /// `--not-starts-with`: hide places and transitions whose name starts with one of these.
    pub not_starts_with: Vec<String>,
    /// `--not-ends-with`: hide places and transitions whose name ends with one of these.
    pub not_ends_with: Vec<String>,
}

impl Options {
    fn hidden(&self, name: &str) -> bool {
        self.not_starts_with
            .iter()
            .any(|p| name.starts_with(p.as_str()))
            || self
                .not_ends_with
                .iter()
                .any(|s| name.ends_with(s.as_str()))
    }
}

/// The source texts of the bundle's files (by `SourceFileId`), used to show conditions.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    texts: Vec<Option<String>>,
}

impl Sources {
    /// No sources: conditions are drawn as `[condition]`.
    pub fn none() -> Sources {
        Sources::default()
    }

    /// The texts, indexed like `Bundle::files` (`None` where unknown).
    pub fn new(texts: Vec<Option<String>>) -> Sources {
        Sources { texts }
    }

    /// Reads the bundle's source files from disk, where they still are.
    pub fn read_bundle_files(bundle: &Bundle) -> Sources {
        Sources {
            texts: bundle
                .files
                .iter()
                .map(|f| std::fs::read_to_string(&f.path).ok())
                .collect(),
        }
    }

    fn text(&self, span: SourceSpan) -> Option<&str> {
        let text = self.texts.get(span.file.index())?.as_deref()?;
        text.get(span.start as usize..span.end as usize)
    }
}

/// One firing of a trace: the transition's name and/or its index in the root net.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceStep {
    pub name: Option<String>,
    pub index: Option<usize>,
}

/// A counterexample to highlight.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// `deadlock`, `unsafe`, ... when the file says.
    pub kind: Option<String>,
    /// The firing sequence from the initial marking.
    pub steps: Vec<TraceStep>,
    /// A loop that can follow `steps` forever (may be empty).
    pub cycle: Vec<TraceStep>,
}

/// Parses a trace file. Accepted, in this order of preference:
///
/// 1. `pnetv --trace-out`'s object (`"format": "pnet-trace"`): the firing sequence is
///    `"transitions"` (names) or else `"steps"` (objects with `"name"` and/or `"index"`); the
///    loop is `"loop"` (names) or `"loop_steps"`; `"kind"` is shown in the graph's label;
/// 2. an object `{"trace": [...]}`;
/// 3. a plain array.
///
/// The elements of an array are transition names, root-net transition indices (numbers), or
/// objects with `"transition"` or `"name"` and/or `"index"`.
pub fn parse_trace(text: &str) -> Result<Trace, String> {
    use serde_json::Value as J;
    let doc: J = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    fn steps(v: &J, what: &str) -> Result<Vec<TraceStep>, String> {
        let J::Array(items) = v else {
            return Err(format!("`{what}` is not an array"));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                step(item).ok_or_else(|| {
                    format!("`{what}`[{i}] is not a transition name, index or step object")
                })
            })
            .collect()
    }
    fn step(v: &J) -> Option<TraceStep> {
        match v {
            J::String(s) => Some(TraceStep {
                name: Some(s.clone()),
                index: None,
            }),
            J::Number(n) => Some(TraceStep {
                name: None,
                index: Some(usize::try_from(n.as_u64()?).ok()?),
            }),
            J::Object(o) => {
                let name = o
                    .get("transition")
                    .or_else(|| o.get("name"))
                    .and_then(J::as_str)
                    .map(str::to_string);
                let index = o
                    .get("index")
                    .and_then(J::as_u64)
                    .and_then(|n| usize::try_from(n).ok());
                (name.is_some() || index.is_some()).then_some(TraceStep { name, index })
            }
            _ => None,
        }
    }
    match &doc {
        J::Array(_) => Ok(Trace {
            kind: None,
            steps: steps(&doc, "trace")?,
            cycle: Vec::new(),
        }),
        J::Object(o) => {
            let kind = o.get("kind").and_then(J::as_str).map(str::to_string);
            let main = if let Some(v) = o.get("transitions") {
                steps(v, "transitions")?
            } else if let Some(v) = o.get("steps") {
                steps(v, "steps")?
            } else if let Some(v) = o.get("trace") {
                steps(v, "trace")?
            } else {
                return Err("expected a `transitions`, `steps` or `trace` array".to_string());
            };
            let cycle = if let Some(v) = o.get("loop") {
                steps(v, "loop")?
            } else if let Some(v) = o.get("loop_steps") {
                steps(v, "loop_steps")?
            } else {
                Vec::new()
            };
            Ok(Trace {
                kind,
                steps: main,
                cycle,
            })
        }
        _ => Err("expected a JSON object or array".to_string()),
    }
}

/// The DOT text and what could not be drawn as asked (trace steps naming no transition, nets
/// nested too deeply).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rendered {
    pub dot: String,
    pub warnings: Vec<String>,
}

/// Child nets deeper than this are drawn as plain boxes (a guard against recursive bundles).
const MAX_DEPTH: usize = 64;
/// At most this many net instances are drawn; the rest are plain boxes.
const MAX_INSTANCES: usize = 10_000;
/// At most this many initial tokens are listed per place.
const MAX_TOKENS: usize = 8;
/// Longer token texts and conditions are cut.
const MAX_TEXT: usize = 72;

/// Draws the bundle's root net.
pub fn render(
    bundle: &Bundle,
    sources: &Sources,
    options: &Options,
    trace: Option<&Trace>,
) -> Rendered {
    let instances = collect_instances(bundle);
    let mut w = Writer {
        bundle,
        sources,
        opts: options,
        out: String::new(),
        warnings: Vec::new(),
        marks: BTreeMap::new(),
        instances: &instances,
    };
    if instances.len() >= MAX_INSTANCES {
        w.warnings.push(format!(
            "the net has more than {MAX_INSTANCES} child net instances; the rest are drawn as boxes"
        ));
    }
    if let Some(t) = trace {
        w.resolve_trace(t);
    }
    w.graph(trace);
    Rendered {
        dot: w.out,
        warnings: w.warnings,
    }
}

/// A net drawn once: the root or a child net under a transition of its parent instance.
struct Instance<'a> {
    func: &'a Function,
    net: &'a Net,
    /// The parent instance and the transition there whose function this net is.
    parent: Option<(usize, TransitionId)>,
}

/// Net instances in depth-first order; the index is the `n<I>` of node ids.
fn collect_instances(bundle: &Bundle) -> Vec<Instance<'_>> {
    let mut out = Vec::new();
    let Some(root) = bundle.functions.get(bundle.root.index()) else {
        return out;
    };
    let Body::Net(net) = &root.body else {
        return out;
    };
    out.push(Instance {
        func: root,
        net,
        parent: None,
    });
    let mut stack = vec![bundle.root];
    walk(bundle, 0, &mut stack, &mut out);
    out
}

fn walk<'a>(
    bundle: &'a Bundle,
    inst: usize,
    stack: &mut Vec<FunctionId>,
    out: &mut Vec<Instance<'a>>,
) {
    let net = out[inst].net;
    for (i, t) in net.transitions.iter().enumerate() {
        if out.len() >= MAX_INSTANCES || stack.len() >= MAX_DEPTH || stack.contains(&t.function) {
            continue;
        }
        let Some(f) = bundle.functions.get(t.function.index()) else {
            continue;
        };
        let Body::Net(child) = &f.body else {
            continue;
        };
        out.push(Instance {
            func: f,
            net: child,
            parent: Some((inst, TransitionId::from(i))),
        });
        let me = out.len() - 1;
        stack.push(t.function);
        walk(bundle, me, stack, out);
        stack.pop();
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Mark {
    Step(usize),
    Loop(usize),
}

struct Writer<'a> {
    bundle: &'a Bundle,
    sources: &'a Sources,
    opts: &'a Options,
    out: String,
    warnings: Vec<String>,
    /// Trace steps per (instance, transition).
    marks: BTreeMap<(usize, TransitionId), Vec<Mark>>,
    instances: &'a [Instance<'a>],
}

/// Escapes a string for a quoted DOT string (an `escString` label): `"` and `\` escaped,
/// line breaks as `\n`, other control characters shown as `\u{..}`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {
                let _ = write!(out, "\\\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

fn quote(s: &str) -> String {
    format!("\"{}\"", escape(s))
}

/// The label: lines joined (each escaped) with `\n`.
fn label(lines: &[String]) -> String {
    let parts: Vec<String> = lines.iter().map(|l| escape(l)).collect();
    format!("\"{}\"", parts.join("\\n"))
}

fn cut(s: &str) -> String {
    if s.chars().count() <= MAX_TEXT {
        return s.to_string();
    }
    let mut t: String = s.chars().take(MAX_TEXT - 3).collect();
    t.push_str("...");
    t
}

/// A type with struct types spelled out: `point {x: double, y: double}`.
fn full_type(t: &Type) -> String {
    match t {
        Type::Struct(s) => {
            let fields: Vec<String> = s
                .fields
                .iter()
                .map(|(n, t)| format!("{n}: {}", full_type(t)))
                .collect();
            format!("{} {{{}}}", s.name, fields.join(", "))
        }
        Type::List(e) if !e.is_any() => format!("list<{}>", full_type(e)),
        Type::Set(e) if !e.is_any() => format!("set<{}>", full_type(e)),
        Type::Map(k, v) if !(k.is_any() && v.is_any()) => {
            format!("map<{}, {}>", full_type(k), full_type(v))
        }
        t => t.to_string(),
    }
}

fn unescape_xml(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn port_dir_name(d: PortDir) -> &'static str {
    match d {
        PortDir::In => "in",
        PortDir::Out => "out",
        PortDir::InOut => "inout",
        PortDir::Tunnel => "tunnel",
    }
}

const TRACE_COLOR: &str = "red";
const LOOP_COLOR: &str = "darkorange";

impl<'a> Writer<'a> {
    fn line(&mut self, depth: usize, s: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn ty(&self, t: &Type) -> String {
        if self.opts.full_signatures {
            full_type(t)
        } else {
            t.to_string()
        }
    }

    fn signature(&self) -> bool {
        self.opts.signature || self.opts.full_signatures
    }

    // ------------------------------------------------------------------ trace

    fn resolve_trace(&mut self, trace: &Trace) {
        let seqs = [(&trace.steps, false), (&trace.cycle, true)];
        for (steps, is_loop) in seqs {
            for (i, s) in steps.iter().enumerate() {
                let mark = if is_loop {
                    Mark::Loop(i + 1)
                } else {
                    Mark::Step(i + 1)
                };
                match self.find_transition(s) {
                    Some(key) => self.marks.entry(key).or_default().push(mark),
                    None => {
                        let what = match (&s.name, s.index) {
                            (Some(n), _) => format!("`{n}`"),
                            (None, Some(i)) => format!("#{i}"),
                            (None, None) => "?".to_string(),
                        };
                        let seq = if is_loop { "loop step" } else { "trace step" };
                        self.warnings
                            .push(format!("{seq} {}: no transition {what} in the net", i + 1));
                    }
                }
            }
        }
    }

    /// By name in the root net, else by index in the root net, else by name in a child net.
    fn find_transition(&self, s: &TraceStep) -> Option<(usize, TransitionId)> {
        let root = self.instances.first()?;
        if let Some(name) = &s.name
            && let Some(i) = root.net.transitions.iter().position(|t| &t.name == name)
        {
            return Some((0, TransitionId::from(i)));
        }
        if let Some(i) = s.index
            && i < root.net.transitions.len()
            && s.name
                .as_ref()
                .is_none_or(|n| n == &root.net.transitions[i].name)
        {
            return Some((0, TransitionId::from(i)));
        }
        let name = s.name.as_ref()?;
        self.instances
            .iter()
            .enumerate()
            .skip(1)
            .find_map(|(k, inst)| {
                inst.net
                    .transitions
                    .iter()
                    .position(|t| &t.name == name)
                    .map(|i| (k, TransitionId::from(i)))
            })
    }

    fn marks_of(&self, inst: usize, t: TransitionId) -> &[Mark] {
        self.marks.get(&(inst, t)).map_or(&[], Vec::as_slice)
    }

    fn mark_color(marks: &[Mark]) -> Option<&'static str> {
        if marks.iter().any(|m| matches!(m, Mark::Step(_))) {
            Some(TRACE_COLOR)
        } else if marks.is_empty() {
            None
        } else {
            Some(LOOP_COLOR)
        }
    }

    fn mark_lines(marks: &[Mark]) -> Vec<String> {
        let steps: Vec<String> = marks
            .iter()
            .filter_map(|m| match m {
                Mark::Step(i) => Some(format!("#{i}")),
                Mark::Loop(_) => None,
            })
            .collect();
        let loops: Vec<String> = marks
            .iter()
            .filter_map(|m| match m {
                Mark::Loop(i) => Some(format!("#{i}")),
                Mark::Step(_) => None,
            })
            .collect();
        let mut out = Vec::new();
        if !steps.is_empty() {
            out.push(format!("trace {}", steps.join(", ")));
        }
        if !loops.is_empty() {
            out.push(format!("loop {}", loops.join(", ")));
        }
        out
    }

    // ------------------------------------------------------------------ graph

    fn graph(&mut self, trace: Option<&Trace>) {
        let name = self
            .instances
            .first()
            .and_then(|i| i.func.name.clone())
            .unwrap_or_else(|| "net".to_string());
        self.line(0, &format!("digraph {} {{", quote(&name)));
        let mut title = vec![name.clone()];
        if let Some(t) = trace {
            let kind = t
                .kind
                .as_deref()
                .map(|k| format!(" ({k})"))
                .unwrap_or_default();
            let mut s = format!("trace{kind}: {} steps", t.steps.len());
            if !t.cycle.is_empty() {
                let _ = write!(s, ", then a loop of {}", t.cycle.len());
            }
            title.push(s);
        }
        self.line(
            1,
            &format!(
                "graph [rankdir=LR, fontname=\"Helvetica\", labelloc=t, label={}];",
                label(&title)
            ),
        );
        self.line(1, "node [fontname=\"Helvetica\", fontsize=11];");
        self.line(1, "edge [fontname=\"Helvetica\", fontsize=9];");
        if self.instances.is_empty() {
            let what = match self.bundle.functions.get(self.bundle.root.index()) {
                Some(_) => "the root function is not a net",
                None => "the bundle has no root function",
            };
            self.line(
                1,
                &format!("\"root\" [shape=box, style=dashed, label={}];", quote(what)),
            );
            self.warnings.push(what.to_string());
        } else {
            self.net(0, 1);
        }
        self.line(0, "}");
    }

    fn place_id(inst: usize, p: PlaceId) -> String {
        format!("\"n{inst}_p{}\"", p.0)
    }

    fn transition_id(inst: usize, t: TransitionId) -> String {
        format!("\"n{inst}_t{}\"", t.0)
    }

    fn port_id(inst: usize, p: PortId) -> String {
        format!("\"n{inst}_port{}\"", p.0)
    }

    /// Virtual places of instance `inst` that a place-map of the parent's transition names.
    fn tunneled(&self, inst: usize) -> Vec<PlaceId> {
        let Some((parent, t)) = self.instances.get(inst).and_then(|i| i.parent) else {
            return Vec::new();
        };
        match self.instances[parent].net.transitions.get(t.index()) {
            Some(t) => t.place_map.iter().map(|(v, _)| *v).collect(),
            None => Vec::new(),
        }
    }

    /// Real places of instance `inst` named by the place-maps of its transitions.
    fn tunnel_targets(&self, inst: usize) -> Vec<PlaceId> {
        let net = self.instances[inst].net;
        net.transitions
            .iter()
            .flat_map(|t| t.place_map.iter().map(|(_, r)| *r))
            .collect()
    }

    fn place_visible(&self, inst: usize, p: PlaceId) -> bool {
        let Some(place) = self
            .instances
            .get(inst)
            .and_then(|i| i.net.places.get(p.index()))
        else {
            return false;
        };
        if self.opts.hidden(&place.name) {
            return false;
        }
        !place.is_virtual
            || self.opts.show_virtual
            || (self.opts.tunnel_connection
                && (self.tunneled(inst).contains(&p) || self.tunnel_targets(inst).contains(&p)))
    }

    fn transition_visible(&self, t: &Transition) -> bool {
        !self.opts.hidden(&t.name)
    }

    /// The child instance drawn for transition `t` of instance `inst`, if any.
    fn child_of(&self, inst: usize, t: TransitionId) -> Option<usize> {
        self.instances
            .iter()
            .position(|i| i.parent == Some((inst, t)))
    }

    fn net(&mut self, inst: usize, depth: usize) {
        let Instance { func, net, .. } = self.instances[inst];
        // Places.
        for (i, p) in net.places.iter().enumerate() {
            let pid = PlaceId::from(i);
            if !self.place_visible(inst, pid) {
                continue;
            }
            let mut lines = vec![p.name.clone()];
            if self.signature() {
                lines.push(format!(": {}", self.ty(&p.ty)));
            }
            if self.opts.token && !p.tokens.is_empty() {
                for v in p.tokens.iter().take(MAX_TOKENS) {
                    lines.push(cut(&v.to_string()));
                }
                if p.tokens.len() > MAX_TOKENS {
                    lines.push(format!("... {} more", p.tokens.len() - MAX_TOKENS));
                }
            }
            for (on, m) in [
                (p.is_virtual, "[virtual]"),
                (p.generator, "[generator]"),
                (p.put_token, "[put_token]"),
                (p.shared_sink, "[shared_sink]"),
            ] {
                if on {
                    lines.push(m.to_string());
                }
            }
            let mut attrs = format!("shape=ellipse, label={}", label(&lines));
            if p.is_virtual {
                attrs.push_str(", style=dashed");
            } else if p.put_token || p.generator || p.shared_sink {
                attrs.push_str(", peripheries=2");
            }
            self.line(depth, &format!("{} [{attrs}];", Self::place_id(inst, pid)));
        }
        // The function's ports (attachment points of the parent's arcs for child nets).
        self.ports(inst, func, depth);
        // Transitions.
        for (i, t) in net.transitions.iter().enumerate() {
            let tid = TransitionId::from(i);
            if !self.transition_visible(t) {
                continue;
            }
            match self.child_of(inst, tid) {
                Some(child) => self.cluster(inst, tid, t, child, depth),
                None => self.transition(inst, tid, t, depth),
            }
        }
        // Tunnels: place-maps of child nets.
        if self.opts.tunnel_connection {
            for (i, t) in net.transitions.iter().enumerate() {
                let tid = TransitionId::from(i);
                let Some(child) = self.child_of(inst, tid) else {
                    continue;
                };
                if !self.transition_visible(t) {
                    continue;
                }
                for (v, r) in &t.place_map {
                    if self.place_visible(child, *v) && self.place_visible(inst, *r) {
                        self.line(
                            depth,
                            &format!(
                                "{} -> {} [style=\"dotted,bold\", dir=none, color=\"gray30\", label=\"tunnel\"];",
                                Self::place_id(inst, *r),
                                Self::place_id(child, *v)
                            ),
                        );
                    }
                }
            }
        }
    }

    /// Port nodes of instance `inst`'s function and their bindings to its places.
    fn ports(&mut self, inst: usize, func: &Function, depth: usize) {
        let is_child = inst > 0;
        for (i, port) in func.ports.iter().enumerate() {
            if port.dir == PortDir::Tunnel {
                continue;
            }
            // The root's ports matter only where they are bound to a place.
            if !is_child && port.place.is_none() {
                continue;
            }
            let pid = PortId::from(i);
            let mut lines = vec![format!("{} {}", port_dir_name(port.dir), port.name)];
            if self.signature() {
                lines.push(format!(": {}", self.ty(&port.ty)));
            }
            self.line(
                depth,
                &format!(
                    "{} [shape=cds, fontsize=9, height=0.3, label={}];",
                    Self::port_id(inst, pid),
                    label(&lines)
                ),
            );
            if let Some(pl) = port.place
                && self.place_visible(inst, pl)
            {
                let (from, to, dir) = match port.dir {
                    PortDir::Out => (
                        Self::place_id(inst, pl),
                        Self::port_id(inst, pid),
                        "forward",
                    ),
                    PortDir::InOut => (Self::port_id(inst, pid), Self::place_id(inst, pl), "both"),
                    _ => (
                        Self::port_id(inst, pid),
                        Self::place_id(inst, pl),
                        "forward",
                    ),
                };
                self.line(
                    depth,
                    &format!("{from} -> {to} [color=\"gray60\", arrowsize=0.6, dir={dir}];"),
                );
            }
        }
    }

    fn condition_text(&self, code: &Code) -> Option<String> {
        // The condition's pieces (the function's and the transition's, joined by `&&`) may
        // lie apart: merge the instructions' spans into runs not separated by XML markup.
        let mut spans: Vec<SourceSpan> = code
            .spans
            .iter()
            .copied()
            .chain([code.span])
            .filter(|s| s.start < s.end)
            .collect();
        spans.sort_by_key(|s| (s.file.0, s.start, s.end));
        let mut runs: Vec<SourceSpan> = Vec::new();
        for s in spans {
            if let Some(last) = runs.last_mut()
                && last.file == s.file
            {
                if s.start <= last.end {
                    last.end = last.end.max(s.end);
                    continue;
                }
                let gap = SourceSpan {
                    file: s.file,
                    start: last.end,
                    end: s.start,
                };
                if self
                    .sources
                    .text(gap)
                    .is_some_and(|g| !g.contains(['<', '>']))
                {
                    last.end = s.end;
                    continue;
                }
            }
            runs.push(s);
        }
        let parts: Vec<String> = runs
            .iter()
            .filter_map(|s| self.sources.text(*s))
            .map(|t| unescape_xml(&t.split_whitespace().collect::<Vec<_>>().join(" ")))
            .filter(|t| !t.is_empty())
            .collect();
        (!parts.is_empty()).then(|| cut(&parts.join(" && ")))
    }

    fn transition_lines(
        &self,
        inst: usize,
        tid: TransitionId,
        t: &Transition,
        func: Option<&Function>,
    ) -> Vec<String> {
        let mut lines = vec![t.name.clone()];
        match func.map(|f| &f.body) {
            Some(Body::Module(m)) => {
                lines.push(format!("module {}.{}", m.name, m.signature.function))
            }
            Some(Body::Modules { modules, .. }) => {
                let targets: Vec<String> = modules
                    .iter()
                    .map(|m| match &m.target {
                        Some(t) => format!("{}.{} [{t}]", m.name, m.signature.function),
                        None => format!("{}.{}", m.name, m.signature.function),
                    })
                    .collect();
                lines.push(format!("modules {}", targets.join(", ")));
            }
            Some(Body::Net(_)) => {
                if let Some(n) = func.and_then(|f| f.name.as_deref())
                    && n != t.name
                {
                    lines.push(format!("net {n}"));
                }
            }
            Some(Body::Expression(_)) => {}
            None => lines.push("[unknown function]".to_string()),
        }
        if let Some(c) = t.condition {
            match self
                .bundle
                .codes
                .get(c.index())
                .and_then(|code| self.condition_text(code))
            {
                Some(text) => lines.push(format!("if {text}")),
                None => lines.push("[condition]".to_string()),
            }
        }
        if self.opts.priority {
            lines.push(format!("priority {}", t.priority));
        }
        for e in &t.eureka_ports {
            lines.push(format!("eureka {}", port_name(func, *e)));
        }
        for (on, m) in [
            (t.produce_shared, "[produce_shared]"),
            (t.consume_shared, "[consume_shared]"),
            (t.passthrough_shared, "[passthrough_shared]"),
        ] {
            if on {
                lines.push(m.to_string());
            }
        }
        lines.extend(Self::mark_lines(self.marks_of(inst, tid)));
        lines
    }

    fn transition(&mut self, inst: usize, tid: TransitionId, t: &Transition, depth: usize) {
        let func = self.bundle.functions.get(t.function.index());
        let lines = self.transition_lines(inst, tid, t, func);
        let (shape, style) = match func.map(|f| &f.body) {
            Some(Body::Expression(_)) => ("box", "rounded"),
            Some(Body::Module(_)) => ("box", "filled"),
            Some(Body::Modules { .. }) => ("box3d", "filled"),
            // A child net drawn as a box: nested too deeply or recursive.
            Some(Body::Net(_)) => ("box", "dashed,bold"),
            None => ("box", "dashed"),
        };
        let marks = self.marks_of(inst, tid).to_vec();
        let mut attrs = format!("shape={shape}, style=\"{style}\", label={}", label(&lines));
        if style.contains("filled") {
            attrs.push_str(", fillcolor=\"lightsteelblue1\"");
        }
        if let Some(color) = Self::mark_color(&marks) {
            let _ = write!(attrs, ", color={color}, fontcolor={color}, penwidth=2.5");
        }
        let node = Self::transition_id(inst, tid);
        self.line(depth, &format!("{node} [{attrs}];"));
        let color = Self::mark_color(&marks);
        self.arcs(inst, t, func, color, depth, |_| node.clone());
    }

    fn cluster(
        &mut self,
        inst: usize,
        tid: TransitionId,
        t: &Transition,
        child: usize,
        depth: usize,
    ) {
        let func = self.instances[child].func;
        let marks = self.marks_of(inst, tid).to_vec();
        let lines = self.transition_lines(inst, tid, t, Some(func));
        self.line(depth, &format!("subgraph \"cluster_n{child}\" {{"));
        let color = Self::mark_color(&marks);
        let pen = match color {
            Some(c) => format!(", color={c}, fontcolor={c}, penwidth=2.5"),
            None => ", color=\"gray40\"".to_string(),
        };
        self.line(
            depth + 1,
            &format!(
                "graph [style=rounded, labeljust=l, label={}{pen}];",
                label(&lines)
            ),
        );
        self.net(child, depth + 1);
        self.line(depth, "}");
        self.arcs(inst, t, Some(func), color, depth, |p| {
            Self::port_id(child, p)
        });
    }

    /// The arcs of transition `t` of instance `inst`; `end(port)` is the node an arc to or
    /// from that port attaches to (the transition, or a port node of a child net).
    fn arcs(
        &mut self,
        inst: usize,
        t: &Transition,
        func: Option<&Function>,
        color: Option<&str>,
        depth: usize,
        end: impl Fn(PortId) -> String,
    ) {
        let highlight = color
            .map(|c| format!(", color={c}, fontcolor={c}, penwidth=2"))
            .unwrap_or_default();
        let port_label = |p: PortId| -> String {
            let name = port_name(func, p);
            match func.and_then(|f| f.ports.get(p.index())) {
                Some(port) if self.signature() => format!("{name} : {}", self.ty(&port.ty)),
                _ => name,
            }
        };
        // An in and an out of one port on one place is a connect-inout: one edge.
        let is_inout = |kind: ConnectKind, port: PortId, place: PlaceId| -> bool {
            let other = match kind {
                ConnectKind::In => ConnectKind::Out,
                ConnectKind::Out => ConnectKind::In,
                _ => return false,
            };
            t.connections
                .iter()
                .any(|c| c.kind == other && c.port == port && c.place == place)
        };
        let mut drawn_inout: Vec<(PortId, PlaceId)> = Vec::new();
        let mut out: Vec<String> = Vec::new();
        for c in &t.connections {
            if !self.place_visible(inst, c.place) {
                continue;
            }
            let place = Self::place_id(inst, c.place);
            let node = end(c.port);
            let lbl = quote(&port_label(c.port));
            let line = if is_inout(c.kind, c.port, c.place) {
                if drawn_inout.contains(&(c.port, c.place)) {
                    continue;
                }
                drawn_inout.push((c.port, c.place));
                format!(
                    "{place} -> {node} [dir=both, arrowhead=normal, arrowtail=vee, label={lbl}{highlight}];"
                )
            } else {
                match c.kind {
                    ConnectKind::In => {
                        format!("{place} -> {node} [arrowhead=normal, label={lbl}{highlight}];")
                    }
                    ConnectKind::Read => {
                        format!(
                            "{place} -> {node} [style=dashed, arrowhead=normal, label={lbl}{highlight}];"
                        )
                    }
                    ConnectKind::NumberOfTokens => {
                        format!(
                            "{place} -> {node} [style=dotted, arrowhead=odot, label={lbl}{highlight}];"
                        )
                    }
                    ConnectKind::Out => {
                        format!("{node} -> {place} [arrowhead=vee, label={lbl}{highlight}];")
                    }
                    ConnectKind::OutMany => {
                        let col = color.unwrap_or("black");
                        let fc = color
                            .map(|c| format!(", fontcolor={c}, penwidth=2"))
                            .unwrap_or_default();
                        format!(
                            "{node} -> {place} [color=\"{col}:invis:{col}\", arrowhead=vee, label={}{fc}];",
                            quote(&format!("{}*", port_label(c.port)))
                        )
                    }
                }
            };
            out.push(line);
        }
        // Responses: from the transition to the place the answered port came from.
        for r in &t.responses {
            let from = t
                .connections
                .iter()
                .find(|c| c.port == r.to && matches!(c.kind, ConnectKind::In | ConnectKind::Read))
                .map(|c| c.place);
            let text = quote(&format!(
                "response {} to {}",
                port_name(func, r.port),
                port_name(func, r.to)
            ));
            if let Some(pl) = from
                && self.place_visible(inst, pl)
            {
                out.push(format!(
                    "{} -> {} [style=dashed, color=purple, fontcolor=purple, arrowhead=vee, label={text}];",
                    end(r.port),
                    Self::place_id(inst, pl)
                ));
            }
        }
        for line in out {
            self.line(depth, &line);
        }
    }
}

fn port_name(func: Option<&Function>, p: PortId) -> String {
    match func.and_then(|f| f.ports.get(p.index())) {
        Some(port) => port.name.clone(),
        None => format!("port#{}", p.0),
    }
}

#[cfg(test)]
mod tests;
