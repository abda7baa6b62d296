//! Constructors for building IR by hand, as tests and benchmarks do: every field that such
//! code leaves empty gets its empty value, so a hand-built net states only what matters.

use pnet_stdlib::{Type, Value};

use crate::{
    Body, Code, Function, Instr, Place, PlaceId, Port, PortDir, Slot, SlotKind, SourceSpan,
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
