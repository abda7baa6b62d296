//! The net IR. A bundle holds every function (defun) of a net after templates, `use`,
//! `specialize` and inlining were resolved; nets nest through transitions whose function has
//! a `Net` body (a child net, run as such by the engine).

use pnet_stdlib::{Type, Value};
use serde::{Deserialize, Serialize};

use crate::Code;

macro_rules! id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub struct $name(pub u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl From<usize> for $name {
            fn from(i: usize) -> Self {
                $name(i as u32)
            }
        }
    };
}

id!(
    /// Index into [`Bundle::functions`].
    FunctionId
);
id!(
    /// Index into [`Bundle::codes`].
    CodeId
);
id!(
    /// Index into [`Net::places`] of the net it belongs to.
    PlaceId
);
id!(
    /// Index into [`Net::transitions`] of the net it belongs to.
    TransitionId
);
id!(
    /// Index into [`Function::ports`].
    PortId
);
id!(
    /// Index into [`Bundle::files`].
    SourceFileId
);

/// A byte range in one of the bundle's source files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SourceSpan {
    pub file: SourceFileId,
    pub start: u32,
    pub end: u32,
}

/// A source file of the bundle: its path as given to the compiler and its line starts, so that
/// a run-time error can say `file:line:column` without the file at hand.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    pub path: String,
    /// Byte offset of the start of each line (the first is 0).
    pub line_starts: Vec<u32>,
}

impl SourceFile {
    pub fn new(path: impl Into<String>, text: &str) -> SourceFile {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i as u32 + 1));
        SourceFile {
            path: path.into(),
            line_starts,
        }
    }

    /// One-based line and column (in bytes) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let line = self.line_starts.partition_point(|&s| s <= offset).max(1) - 1;
        (line as u32 + 1, offset - self.line_starts[line] + 1)
    }
}

/// A compiled net, ready to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    /// The top-level function (the file's root `defun`).
    pub root: FunctionId,
    pub functions: Vec<Function>,
    /// Bytecode of every expression, condition and other run-time expression.
    pub codes: Vec<Code>,
    /// The struct types declared anywhere in the net, by name (also inlined in [`Type`]s).
    pub structs: Vec<pnet_stdlib::StructType>,
    /// Source files, for error locations.
    pub files: Vec<SourceFile>,
}

impl Bundle {
    pub fn function(&self, id: FunctionId) -> &Function {
        &self.functions[id.index()]
    }

    pub fn code(&self, id: CodeId) -> &Code {
        &self.codes[id.index()]
    }

    /// `path:line:column` of a span.
    pub fn location(&self, span: SourceSpan) -> String {
        match self.files.get(span.file.index()) {
            Some(f) => {
                let (l, c) = f.line_col(span.start);
                format!("{}:{}:{}", f.path, l, c)
            }
            None => "<unknown>".to_string(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PortDir {
    In,
    Out,
    /// Both an in and an out port of one name.
    InOut,
    /// Connects to a `virtual` place of the parent.
    Tunnel,
}

impl PortDir {
    pub fn is_input(self) -> bool {
        matches!(self, PortDir::In | PortDir::InOut)
    }

    pub fn is_output(self) -> bool {
        matches!(self, PortDir::Out | PortDir::InOut)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Port {
    pub name: String,
    pub dir: PortDir,
    pub ty: Type,
    /// For functions with a net body: the place of that net the port is bound to.
    pub place: Option<PlaceId>,
    pub span: SourceSpan,
}

/// A property, flattened: `fhg.drts.schedule.num_worker` -> `"2"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Property {
    pub key: String,
    pub value: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Require {
    pub key: String,
    pub mandatory: bool,
}

/// A function (`defun`) after elaboration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Function {
    pub name: Option<String>,
    pub ports: Vec<Port>,
    pub body: Body,
    pub requires: Vec<Require>,
    pub properties: Vec<Property>,
    pub memory_buffers: Vec<MemoryBuffer>,
    pub memory_transfers: Vec<MemoryTransfer>,
    pub span: SourceSpan,
}

impl Function {
    pub fn port(&self, id: PortId) -> &Port {
        &self.ports[id.index()]
    }

    pub fn port_by_name(&self, name: &str) -> Option<PortId> {
        self.ports
            .iter()
            .position(|p| p.name == name)
            .map(PortId::from)
    }

    pub fn property(&self, key: &str) -> Option<&str> {
        self.properties
            .iter()
            .rev()
            .find(|p| p.key == key)
            .map(|p| p.value.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Body {
    /// Runs inside the engine. Its code has one slot per port (slot `i` = port `i`) followed
    /// by its local variables; after running, the out ports' slots hold the outputs.
    Expression(CodeId),
    /// A call of a module function, run by a worker.
    Module(Module),
    /// Several implementations, one per target, with the preference order.
    Modules {
        preferences: Vec<String>,
        modules: Vec<Module>,
    },
    /// A child net.
    Net(Net),
}

/// A module function's signature: `ret? name (args)`. Names are port or memory-buffer names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    pub result: Option<String>,
    pub function: String,
    pub args: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Module {
    /// The module (library) name.
    pub name: String,
    pub signature: Signature,
    pub target: Option<String>,
    pub pass_context: bool,
    pub require_function_unloads_without_rest: bool,
    pub require_module_unloads_without_rest: bool,
    /// Code computing the eureka group (a string), with the function's ports as slots.
    pub eureka_group: Option<CodeId>,
    pub cincludes: Vec<String>,
    pub ld_flags: Vec<String>,
    pub cxx_flags: Vec<String>,
    /// Inline C++ code.
    pub code: Option<String>,
    pub span: SourceSpan,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryBuffer {
    pub name: String,
    pub read_only: bool,
    /// Size in bytes (`unsigned long`), over the function's ports.
    pub size: CodeId,
    pub alignment: Option<CodeId>,
    pub span: SourceSpan,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TransferKind {
    Get,
    Put,
    GetPut,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryTransfer {
    pub kind: TransferKind,
    pub global: CodeId,
    pub local: CodeId,
    pub allow_empty_ranges: bool,
    pub not_modified_in_module_call: bool,
    pub span: SourceSpan,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Net {
    pub places: Vec<Place>,
    pub transitions: Vec<Transition>,
}

impl Net {
    pub fn place(&self, id: PlaceId) -> &Place {
        &self.places[id.index()]
    }

    pub fn transition(&self, id: TransitionId) -> &Transition {
        &self.transitions[id.index()]
    }

    pub fn place_by_name(&self, name: &str) -> Option<PlaceId> {
        self.places
            .iter()
            .position(|p| p.name == name)
            .map(PlaceId::from)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Place {
    pub name: String,
    pub ty: Type,
    pub is_virtual: bool,
    pub put_token: bool,
    pub shared_sink: bool,
    pub generator: bool,
    /// Initial tokens (constant expressions evaluated at compile time).
    pub tokens: Vec<Value>,
    pub properties: Vec<Property>,
    pub span: SourceSpan,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConnectKind {
    /// `connect-in` (and the consuming half of `connect-inout`).
    In,
    /// `connect-read`.
    Read,
    /// `connect-out` (and the producing half of `connect-inout`).
    Out,
    /// `connect-out-many`: each element of the list port becomes a token.
    OutMany,
    /// `connect-number-of-tokens`: the port sees the place's token count.
    NumberOfTokens,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Connection {
    pub kind: ConnectKind,
    /// A port of the transition's function.
    pub port: PortId,
    /// A place of the net holding the transition.
    pub place: PlaceId,
    pub span: SourceSpan,
}

/// `connect-response port to`: the port's value answers the pending response named by the
/// input port `to`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub port: PortId,
    pub to: PortId,
    pub span: SourceSpan,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Transition {
    pub name: String,
    pub priority: u16,
    pub function: FunctionId,
    pub connections: Vec<Connection>,
    pub responses: Vec<Response>,
    /// `connect-eureka`: output ports whose value (a set of group names) cancels groups.
    pub eureka_ports: Vec<PortId>,
    /// The function's and the transition's conditions joined with `&&`; slots are the
    /// function's ports (slot `i` = port `i`).
    pub condition: Option<CodeId>,
    /// `place-map virtual real` of a child net that was not inlined: the child's virtual
    /// place and this net's real place.
    pub place_map: Vec<(PlaceId, PlaceId)>,
    pub requires: Vec<Require>,
    pub properties: Vec<Property>,
    pub produce_shared: bool,
    pub consume_shared: bool,
    pub passthrough_shared: bool,
    pub span: SourceSpan,
}
