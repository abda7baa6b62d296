//! The syntax tree of a workload description, with byte spans.

use std::fmt;
use std::ops::Range;

/// A byte range in the source text.
pub type Span = Range<usize>;

/// A whole workload description: tasks and relations, in source order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Workload {
    pub tasks: Vec<Task>,
    pub relations: Vec<Relation>,
}

/// A name as written (`INPUT-OUTPUT`, `step-2`, `x`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name {
    pub text: String,
    pub span: Span,
}

impl Name {
    /// The name as used in the net: `-` becomes `_`.
    pub fn mangled(&self) -> String {
        mangle(&self.text)
    }
}

/// `-` becomes `_` (xpnet names are `[A-Za-z_][A-Za-z0-9_]*`).
pub fn mangle(s: &str) -> String {
    s.replace('-', "_")
}

/// A string literal: its value (escapes resolved) and its span (quotes included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Str {
    pub value: String,
    pub span: Span,
}

/// `KEY = 'value';`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Property {
    pub key: Name,
    pub value: Str,
    pub span: Span,
}

/// The seed's port types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortType {
    /// A location (of a file): a `string` in the net.
    Uri,
    /// Text: a `string` in the net.
    String,
    /// A number: a `long` in the net.
    Integer,
}

impl PortType {
    pub fn parse(s: &str) -> Option<PortType> {
        match s {
            "URI" => Some(PortType::Uri),
            "STRING" => Some(PortType::String),
            "INTEGER" => Some(PortType::Integer),
            _ => None,
        }
    }

    /// The xpnet type of one value.
    pub fn xpnet(self) -> &'static str {
        match self {
            PortType::Uri | PortType::String => "string",
            PortType::Integer => "long",
        }
    }
}

impl fmt::Display for PortType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PortType::Uri => "URI",
            PortType::String => "STRING",
            PortType::Integer => "INTEGER",
        })
    }
}

/// `in NAME: TYPE [= 'value'];` or `out NAME: TYPE;`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port {
    pub name: Name,
    /// `None` when the type was missing or unknown (a diagnostic was reported).
    pub ty: Option<PortType>,
    /// The seed's PORT_VALUE (inputs only): the value the port has when no relation feeds it.
    pub value: Option<Str>,
    pub span: Span,
}

/// RELATION_TIME
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeKind {
    None,
    Concurrent,
    SequentialStart,
    SequentialEnd,
}

/// RELATION_SPACE
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpaceKind {
    None,
    Communication,
    InputOutput,
}

/// One word of a `( ... )` kind list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `NONE`: no constraint (in time and in space)
    None,
    Time(TimeKind),
    Space(SpaceKind),
}

impl Kind {
    pub fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "NONE" => Kind::None,
            "CONCURRENT" => Kind::Time(TimeKind::Concurrent),
            "SEQUENTIAL_START" => Kind::Time(TimeKind::SequentialStart),
            "SEQUENTIAL_END" => Kind::Time(TimeKind::SequentialEnd),
            "COMMUNICATION" => Kind::Space(SpaceKind::Communication),
            "INPUT-OUTPUT" => Kind::Space(SpaceKind::InputOutput),
            _ => return None,
        })
    }
}

/// The time and space kinds of a task or a relation (`NONE` when not given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kinds {
    pub time: TimeKind,
    pub time_span: Option<Span>,
    pub space: SpaceKind,
    pub space_span: Option<Span>,
}

impl Default for Kinds {
    fn default() -> Self {
        Kinds {
            time: TimeKind::None,
            time_span: None,
            space: SpaceKind::None,
            space_span: None,
        }
    }
}

/// `task NAME [N] (KINDS) { members }`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub name: Name,
    /// CARDINALITY: 0 (also when not written) means unspecified, which runs one instance.
    pub cardinality: u32,
    pub cardinality_span: Option<Span>,
    /// How the task's instances relate to each other.
    pub kinds: Kinds,
    pub inputs: Vec<Port>,
    pub outputs: Vec<Port>,
    pub properties: Vec<Property>,
    pub span: Span,
}

impl Task {
    /// The number of instances that run (unspecified = 1).
    pub fn instances(&self) -> u32 {
        self.cardinality.max(1)
    }

    pub fn property(&self, key: &str) -> Option<&Property> {
        self.properties.iter().find(|p| p.key.text == key)
    }
}

/// `TASK[.PORT]`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub task: Name,
    pub port: Option<Name>,
}

impl Endpoint {
    pub fn span(&self) -> Span {
        match &self.port {
            Some(p) => self.task.span.start..p.span.end,
            None => self.task.span.clone(),
        }
    }
}

/// `relation TAIL[.PORT] -> HEAD[.PORT] (KINDS) [{ properties }];`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relation {
    pub tail: Endpoint,
    pub head: Endpoint,
    pub kinds: Kinds,
    pub properties: Vec<Property>,
    pub span: Span,
}
