//! Damaged bundles for the tests of every bundle reader (pnet-bundle, pnet-tokens, pnet-engine
//! include this file): a small net compiled in the test, and one way to break each kind of
//! reference of the IR. A damaged bundle re-encodes with a correct checksum, so only the
//! validation of the decoded bundle can refuse it.

#![allow(dead_code)]

use pnet_bundle::{
    Body, Bundle, CodeId, ConnectKind, FunctionId, Instr, MemoryBuffer, MemoryTransfer, Net,
    PlaceId, PortId, Response, SourceFileId, SourceSpan, TransferKind, Transition,
};
use pnet_stdlib::Value;

/// The net: a loop with a condition (jumps, constants, slots), struct fields (paths), a child
/// net with a tunnel and a place-map, a module call.
pub const NET: &str = include_str!("net.xpnet");

/// [`NET`], compiled.
pub fn compile() -> Bundle {
    let out = pnet_sema::compile_source(
        std::path::Path::new("damage.xpnet"),
        NET,
        // Keeps `waiter` a child net with its place-map (not inlined).
        &pnet_sema::Options {
            synthesize_virtual_places: true,
            ..pnet_sema::Options::default()
        },
    );
    assert!(!out.has_errors(), "{:#?}", out.diagnostics);
    out.bundle.expect("the test net compiles")
}

fn root_net(b: &mut Bundle) -> &mut Net {
    let root = b.root.index();
    match &mut b.functions[root].body {
        Body::Net(n) => n,
        _ => panic!("the root is a net"),
    }
}

fn transition<'b>(b: &'b mut Bundle, name: &str) -> &'b mut Transition {
    root_net(b)
        .transitions
        .iter_mut()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("transition {name}"))
}

fn function_of(b: &mut Bundle, name: &str) -> usize {
    transition(b, name).function.index()
}

/// The code of transition `name`'s expression.
fn expression(b: &mut Bundle, name: &str) -> usize {
    let f = function_of(b, name);
    match b.functions[f].body {
        Body::Expression(c) => c.index(),
        _ => panic!("{name} has an expression"),
    }
}

fn condition(b: &mut Bundle, name: &str) -> usize {
    transition(b, name).condition.expect("a condition").index()
}

/// The first instruction of code `c` that `pick` changes.
fn instr(b: &mut Bundle, c: usize, pick: impl Fn(Instr) -> Option<Instr>) {
    let code = &mut b.codes[c];
    let i = code
        .instrs
        .iter()
        .position(|&i| pick(i).is_some())
        .expect("an instruction to break");
    code.instrs[i] = pick(code.instrs[i]).unwrap();
}

fn span(file: u32, start: u32, end: u32) -> SourceSpan {
    SourceSpan {
        file: SourceFileId(file),
        start,
        end,
    }
}

/// A damage: its name and how it breaks a bundle.
pub type Damage = (&'static str, fn(&mut Bundle));

/// Every kind of reference of the IR, broken once.
pub fn damages() -> Vec<Damage> {
    vec![
        ("root function", |b| b.root = FunctionId(40)),
        ("transition's function", |b| {
            transition(b, "step").function = FunctionId(99)
        }),
        ("connection's port", |b| {
            transition(b, "step").connections[0].port = PortId(17)
        }),
        ("connection's place", |b| {
            transition(b, "step").connections[0].place = PlaceId(17)
        }),
        ("connection's direction", |b| {
            // `p` (port 1) is an out port of `step`; `n` (port 0) is inout.
            let t = transition(b, "step");
            let c = t
                .connections
                .iter_mut()
                .find(|c| c.kind == ConnectKind::Out && c.port == PortId(1))
                .expect("an out connection");
            c.kind = ConnectKind::In;
        }),
        ("connection in a child net", |b| {
            let f = function_of(b, "waiter");
            let Body::Net(child) = &mut b.functions[f].body else {
                panic!("waiter is a net")
            };
            child.transitions[0].connections[0].place = PlaceId(9);
        }),
        ("response's port", |b| {
            transition(b, "step").responses.push(Response {
                port: PortId(1),
                to: PortId(9),
                span: SourceSpan::default(),
            })
        }),
        ("eureka port", |b| {
            transition(b, "step").eureka_ports.push(PortId(9))
        }),
        ("condition's code", |b| {
            transition(b, "step").condition = Some(CodeId(999))
        }),
        ("condition's slots", |b| {
            let c = condition(b, "step");
            b.codes[c].slots.clear();
            b.codes[c].reads.clear();
            b.codes[c].instrs.clear();
            b.codes[c].spans.clear();
        }),
        ("place-map's virtual place", |b| {
            transition(b, "waiter").place_map[0].0 = PlaceId(9)
        }),
        ("place-map's real place", |b| {
            transition(b, "waiter").place_map[0].1 = PlaceId(9)
        }),
        ("place-map of a module call", |b| {
            transition(b, "call")
                .place_map
                .push((PlaceId(0), PlaceId(0)))
        }),
        ("port's place", |b| {
            let root = b.root.index();
            b.functions[root].ports[0].place = Some(PlaceId(42));
        }),
        ("port's place outside a net", |b| {
            let f = function_of(b, "step");
            b.functions[f].ports[0].place = Some(PlaceId(0));
        }),
        ("expression's code", |b| {
            let f = function_of(b, "step");
            b.functions[f].body = Body::Expression(CodeId(999));
        }),
        ("code's constant", |b| {
            let c = expression(b, "step");
            instr(b, c, |i| match i {
                Instr::Const(_) => Some(Instr::Const(99)),
                _ => None,
            })
        }),
        ("code's slot", |b| {
            let c = expression(b, "step");
            instr(b, c, |i| match i {
                Instr::Load(_) => Some(Instr::Load(99)),
                _ => None,
            })
        }),
        ("code's field path", |b| {
            let c = expression(b, "step");
            instr(b, c, |i| match i {
                Instr::StorePath(s, _) => Some(Instr::StorePath(s, 99)),
                _ => None,
            })
        }),
        ("code's jump", |b| {
            let c = condition(b, "step");
            instr(b, c, |i| match i {
                Instr::JumpIfFalseElsePop(_) => Some(Instr::JumpIfFalseElsePop(999)),
                _ => None,
            })
        }),
        ("code's shared place name", |b| {
            let c = expression(b, "step");
            instr(b, c, |i| match i {
                Instr::Const(k) => Some(Instr::MakeShared(k)),
                _ => None,
            })
        }),
        ("code's reads", |b| {
            let c = condition(b, "step");
            b.codes[c].reads.push(99);
        }),
        ("code's spans", |b| {
            let c = condition(b, "step");
            b.codes[c].spans.pop();
        }),
        ("instruction's span", |b| {
            let c = condition(b, "step");
            b.codes[c].spans[0].file = SourceFileId(7);
        }),
        ("transition's span", |b| {
            transition(b, "step").span = span(7, 1, 2)
        }),
        ("reversed span", |b| {
            root_net(b).places[0].span = span(0, 9, 3)
        }),
        ("source file", |b| b.files[0].line_starts.clear()),
        ("memory buffer's size", |b| {
            let f = function_of(b, "call");
            b.functions[f].memory_buffers.push(MemoryBuffer {
                name: "buf".into(),
                read_only: false,
                size: CodeId(999),
                alignment: None,
                span: SourceSpan::default(),
            });
        }),
        ("memory transfer's range", |b| {
            let f = function_of(b, "call");
            let ok = expression(b, "step");
            b.functions[f].memory_transfers.push(MemoryTransfer {
                kind: TransferKind::Get,
                global: CodeId(ok as u32),
                local: CodeId(999),
                allow_empty_ranges: false,
                not_modified_in_module_call: false,
                span: SourceSpan::default(),
            });
        }),
        ("module's eureka group", |b| {
            let f = function_of(b, "call");
            let Body::Module(m) = &mut b.functions[f].body else {
                panic!("call is a module call")
            };
            m.eureka_group = Some(CodeId(999));
        }),
        ("empty modules", |b| {
            let f = function_of(b, "call");
            b.functions[f].body = Body::Modules {
                preferences: Vec::new(),
                modules: Vec::new(),
            };
        }),
        ("generator's type", |b| {
            let net = root_net(b);
            let p = net.place_by_name("pairs").expect("place pairs");
            net.places[p.index()].generator = true;
        }),
    ]
}

/// The token a run of [`NET`] takes.
pub fn input() -> Vec<(String, Vec<Value>)> {
    vec![("n".to_string(), vec![Value::Long(3)])]
}
