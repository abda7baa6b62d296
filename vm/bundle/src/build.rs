//! Constructors for building IR by hand, as tests and benchmarks do: every field that such
//! code leaves empty gets its empty value, so a hand-built net states only what matters.

use pnet_stdlib::{Type, Value};

use crate::{
    Body, Code, Connection, Function, FunctionId, Instr, Module, Place, PlaceId, Port, PortDir,
    Signature, Slot, SlotKind, SourceSpan, Transition,
};

impl Code {
    /// A program over port slots `slots` (slot `i` = port `i`); every instruction gets `span`;
    /// `reads` are the slots its `Load`s read.
    pub fn with_slots(
        name: &str,
        slots: &[(&str, Type)],
        instrs: Vec<Instr>,
        consts: Vec<Value>,
        span: SourceSpan,
    ) -> Code {
        let mut reads: Vec<u16> = instrs
            .iter()
            .filter_map(|i| match i {
                Instr::Load(s) => Some(*s),
                _ => None,
            })
            .collect();
        reads.sort_unstable();
        reads.dedup();
        Code {
            name: name.to_string(),
            spans: vec![span; instrs.len()],
            instrs,
            consts,
            paths: Vec::new(),
            slots: slots
                .iter()
                .map(|(n, t)| Slot {
                    name: n.to_string(),
                    kind: SlotKind::Port,
                    ty: t.clone(),
                })
                .collect(),
            reads,
            result: Type::Any,
            span,
        }
    }
}

impl Function {
    /// A named function without requirements, properties or memory transfers.
    pub fn new(name: &str, ports: Vec<Port>, body: Body, span: SourceSpan) -> Function {
        Function {
            name: Some(name.to_string()),
            ports,
            body,
            requires: Vec::new(),
            properties: Vec::new(),
            memory_buffers: Vec::new(),
            memory_transfers: Vec::new(),
            span,
        }
    }
}

impl Port {
    pub fn new(name: &str, dir: PortDir, ty: Type, place: Option<u32>, span: SourceSpan) -> Port {
        Port {
            name: name.to_string(),
            dir,
            ty,
            place: place.map(PlaceId),
            span,
        }
    }
}

impl Place {
    /// A plain place (not virtual, no put_token, not a sink or generator) with initial tokens.
    pub fn new(name: &str, ty: Type, tokens: Vec<Value>, span: SourceSpan) -> Place {
        Place {
            name: name.to_string(),
            ty,
            is_virtual: false,
            put_token: false,
            shared_sink: false,
            generator: false,
            tokens,
            properties: Vec::new(),
            span,
        }
    }
}

impl Transition {
    /// A transition of priority 0 without condition, responses, eureka ports, place-map,
    /// requirements, properties or shared handling.
    pub fn new(
        name: &str,
        function: FunctionId,
        connections: Vec<Connection>,
        span: SourceSpan,
    ) -> Transition {
        Transition {
            name: name.to_string(),
            priority: 0,
            function,
            connections,
            responses: Vec::new(),
            eureka_ports: Vec::new(),
            condition: None,
            place_map: Vec::new(),
            requires: Vec::new(),
            properties: Vec::new(),
            produce_shared: false,
            consume_shared: false,
            passthrough_shared: false,
            span,
        }
    }
}

impl Module {
    /// A call of `function` (with signature arguments `args`) in module `name`, without
    /// target, context, eureka group or C++ parts.
    pub fn new(name: &str, function: &str, args: Vec<String>, span: SourceSpan) -> Module {
        Module {
            name: name.to_string(),
            signature: Signature {
                result: None,
                function: function.to_string(),
                args,
            },
            target: None,
            pass_context: false,
            require_function_unloads_without_rest: false,
            require_module_unloads_without_rest: false,
            eureka_group: None,
            cincludes: Vec::new(),
            ld_flags: Vec::new(),
            cxx_flags: Vec::new(),
            code: None,
            span,
        }
    }
}
