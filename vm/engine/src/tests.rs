//! Data-driven tests: nets written in a compact line format, bytecode in a tiny assembly, and
//! the resulting outputs (or error) checked with expect-test.
//!
//! Net format (one item a line, `#` starts a comment):
//! ```text
//! net NAME                      # starts a function with a net body (the first is the root)
//!   port in|out|inout|tunnel NAME TYPE @PLACE
//!   place NAME TYPE [generator] [sink] [virtual] [= LIT LIT ...]
//!   trans NAME [prio N]
//!     in|read NAME TYPE <- PLACE    # connect-in / connect-read
//!     out NAME TYPE -> PLACE        # connect-out
//!     many NAME TYPE -> PLACE       # connect-out-many
//!     count NAME TYPE <- PLACE      # connect-number-of-tokens
//!     inout NAME TYPE <-> PLACE     # connect-inout
//!     cond ASM                      # condition
//!     expr ASM                      # expression body (default: empty)
//!     module NAME FUNCTION          # module call body
//!     use NET                       # child net body (ports are the child's)
//!     map VIRTUAL -> REAL           # place-map: the child's place VIRTUAL is REAL here
//! end
//! ```
//! Assembly: instructions separated by `;`: `load x`, `load x.a.b`, `store x`, `store x.a`,
//! `const LIT`, `dup`, `pop`, `neg`, `not`, binary operators by name (`lt gt add sub ...`),
//! `jf N`, `jt N`, `jmp N` (absolute targets), `shared PLACE`.
//! Literals: `3` int, `3L` long, `3U`, `3UL`, `"s"` (no spaces), `'c'`, `true`, `false`, `[]`.

use std::sync::Arc;

use expect_test::Expect;
use pnet_bundle::{
    Body, Bundle, Code, CodeId, ConnectKind, Connection, Function, FunctionId, Instr, Module, Net,
    OpTy, Place, PlaceId, Port, PortDir, PortId, Slot, SlotKind, SourceFile, SourceSpan,
    Transition,
};
use pnet_stdlib::{BinOp, Type, UnOp, Value};

use crate::{Interpreter, RunConfig, RunResult, run};

// ------------------------------------------------------------------------------------------
// The assembler.

fn span_at(offset: usize) -> SourceSpan {
    SourceSpan {
        file: pnet_bundle::SourceFileId(0),
        start: offset as u32,
        end: offset as u32 + 1,
    }
}

pub(crate) fn lit(s: &str) -> Value {
    let s = s.trim();
    if s == "[]" {
        return Value::Control;
    }
    if let Some(x) = s.strip_prefix("List(") {
        let x = x.strip_suffix(')').expect("closing paren");
        return Value::List(
            x.split(',')
                .filter(|e| !e.trim().is_empty())
                .map(lit)
                .collect(),
        );
    }
    if s == "true" || s == "false" {
        return Value::Bool(s == "true");
    }
    if let Some(x) = s.strip_prefix('"') {
        return Value::string(x.strip_suffix('"').expect("closing quote"));
    }
    if let Some(x) = s.strip_prefix('\'') {
        return Value::Char(x.as_bytes()[0] as i8);
    }
    if let Some(x) = s.strip_suffix("UL") {
        return Value::ULong(x.parse().expect("ulong"));
    }
    if let Some(x) = s.strip_suffix('U') {
        return Value::UInt(x.parse().expect("uint"));
    }
    if let Some(x) = s.strip_suffix('L') {
        return Value::Long(x.parse().expect("long"));
    }
    Value::Int(s.parse().unwrap_or_else(|_| panic!("literal {s}")))
}

fn ty(s: &str) -> Type {
    match s {
        "long" => Type::Long,
        "int" => Type::Int,
        "uint" => Type::UInt,
        "ulong" => Type::ULong,
        "bool" => Type::Bool,
        "char" => Type::Char,
        "string" => Type::String,
        "control" => Type::Control,
        "bigint" => Type::Bigint,
        "list" => Type::List(Box::new(Type::Any)),
        "any" => Type::Any,
        _ => match s.strip_prefix("shared_") {
            Some(p) => Type::Shared(Arc::from(p)),
            None => panic!("type {s}"),
        },
    }
}

/// Assembles `src` (at byte `offset` of the test file) with the given port slots.
pub(crate) fn asm(name: &str, src: &str, ports: &[(String, Type)], offset: usize) -> Code {
    let mut slots: Vec<Slot> = ports
        .iter()
        .map(|(n, t)| Slot {
            name: n.clone(),
            kind: SlotKind::Port,
            ty: t.clone(),
        })
        .collect();
    let mut code = Code {
        name: name.to_string(),
        instrs: Vec::new(),
        spans: Vec::new(),
        consts: Vec::new(),
        paths: Vec::new(),
        slots: Vec::new(),
        reads: Vec::new(),
        result: Type::Any,
        span: span_at(offset),
    };
    let slot = |n: &str, slots: &mut Vec<Slot>| -> u16 {
        match slots.iter().position(|s| s.name == n) {
            Some(i) => i as u16,
            None => {
                slots.push(Slot {
                    name: n.to_string(),
                    kind: SlotKind::Local,
                    ty: Type::Any,
                });
                (slots.len() - 1) as u16
            }
        }
    };
    for part in src.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (op, arg) = part.split_once(' ').unwrap_or((part, ""));
        let arg = arg.trim();
        let bin = |b| Instr::Binary(b, OpTy::Dyn);
        let instr = match op {
            "load" | "store" => {
                let mut path = arg.split('.');
                let s = slot(path.next().unwrap(), &mut slots);
                let rest: Vec<String> = path.map(String::from).collect();
                if op == "load" && !code.reads.contains(&s) {
                    code.reads.push(s);
                }
                if rest.is_empty() {
                    if op == "load" {
                        Instr::Load(s)
                    } else {
                        Instr::Store(s)
                    }
                } else {
                    code.paths.push(rest);
                    let p = (code.paths.len() - 1) as u32;
                    if op == "load" {
                        Instr::LoadPath(s, p)
                    } else {
                        Instr::StorePath(s, p)
                    }
                }
            }
            "const" | "shared" => {
                code.consts.push(if op == "const" {
                    lit(arg)
                } else {
                    Value::string(arg)
                });
                let c = (code.consts.len() - 1) as u32;
                if op == "const" {
                    Instr::Const(c)
                } else {
                    Instr::MakeShared(c)
                }
            }
            "dup" => Instr::Dup,
            "pop" => Instr::Pop,
            "neg" => Instr::Unary(UnOp::Neg, OpTy::Dyn),
            "not" => Instr::Unary(UnOp::Not, OpTy::Dyn),
            "lt" => bin(BinOp::Lt),
            "le" => bin(BinOp::Le),
            "gt" => bin(BinOp::Gt),
            "ge" => bin(BinOp::Ge),
            "eq" => bin(BinOp::Eq),
            "ne" => bin(BinOp::Ne),
            "add" => bin(BinOp::Add),
            "sub" => bin(BinOp::Sub),
            "mul" => bin(BinOp::Mul),
            "div" => bin(BinOp::Div),
            "idiv" => bin(BinOp::IntDiv),
            "mod" => bin(BinOp::Mod),
            "or" => bin(BinOp::Or),
            "and" => bin(BinOp::And),
            "call" => Instr::Call(pnet_stdlib::Builtin::from_name(arg).expect("builtin")),
            "jf" => Instr::JumpIfFalseElsePop(arg.parse().unwrap()),
            "jt" => Instr::JumpIfTrueElsePop(arg.parse().unwrap()),
            "jmp" => Instr::Jump(arg.parse().unwrap()),
            _ => panic!("instruction {part}"),
        };
        code.instrs.push(instr);
        code.spans
            .push(span_at(offset + src.find(part).unwrap_or(0)));
    }
    code.slots = slots;
    code
}

// ------------------------------------------------------------------------------------------
// The net format.

/// A transition being read: its index, its ports, its body lines.
type OpenTrans = (usize, Vec<(String, Type)>, Vec<String>);

struct Builder<'s> {
    text: &'s str,
    bundle: Bundle,
    /// Net functions by name (child nets may be used before they are defined).
    nets: Vec<(String, FunctionId)>,
    /// Transitions whose `use` is resolved at the end: (net fn, transition, child name).
    uses: Vec<(FunctionId, usize, String)>,
    /// Place-maps resolved at the end: (net fn, transition, child's place, place here).
    maps: Vec<(FunctionId, usize, String, String)>,
}

fn offset_of(text: &str, line: &str) -> usize {
    line.as_ptr() as usize - text.as_ptr() as usize
}

pub(crate) fn build(text: &str) -> Bundle {
    let mut b = Builder {
        text,
        bundle: Bundle {
            root: FunctionId(0),
            functions: Vec::new(),
            codes: Vec::new(),
            structs: Vec::new(),
            files: vec![SourceFile::new("test.xpnet", text)],
        },
        nets: Vec::new(),
        uses: Vec::new(),
        maps: Vec::new(),
    };
    b.parse();
    b.bundle
}

impl Builder<'_> {
    fn net_mut(&mut self, f: FunctionId) -> &mut Net {
        match &mut self.bundle.functions[f.index()].body {
            Body::Net(n) => n,
            _ => unreachable!(),
        }
    }

    fn place(&mut self, f: FunctionId, name: &str) -> PlaceId {
        let net = self.net_mut(f);
        net.place_by_name(name)
            .unwrap_or_else(|| panic!("no place {name}"))
    }

    fn parse(&mut self) {
        let text = self.text;
        let mut net: Option<FunctionId> = None;
        let mut trans: Option<OpenTrans> = None;
        let lines: Vec<&str> = text.lines().collect();
        let mut pending_places: Vec<(FunctionId, usize, String)> = Vec::new();
        for raw in lines {
            let line = raw.split('#').next().unwrap().trim();
            if line.is_empty() {
                continue;
            }
            let off = offset_of(text, raw) + (raw.len() - raw.trim_start().len());
            let words: Vec<&str> = line.split_whitespace().collect();
            let f = net.unwrap_or(FunctionId(0));
            match words[0] {
                "net" => {
                    self.finish_trans(f, trans.take());
                    let id = FunctionId(self.bundle.functions.len() as u32);
                    self.bundle.functions.push(Function {
                        name: Some(words[1].to_string()),
                        ports: Vec::new(),
                        body: Body::Net(Net::default()),
                        requires: Vec::new(),
                        properties: Vec::new(),
                        memory_buffers: Vec::new(),
                        memory_transfers: Vec::new(),
                        span: span_at(off),
                    });
                    self.nets.push((words[1].to_string(), id));
                    net = Some(id);
                }
                "port" => {
                    let dir = match words[1] {
                        "in" => PortDir::In,
                        "out" => PortDir::Out,
                        "tunnel" => PortDir::Tunnel,
                        _ => PortDir::InOut,
                    };
                    let place = words[4].strip_prefix('@').unwrap().to_string();
                    let fun = &mut self.bundle.functions[f.index()];
                    fun.ports.push(Port {
                        name: words[2].to_string(),
                        dir,
                        ty: ty(words[3]),
                        place: None,
                        span: span_at(off),
                    });
                    pending_places.push((f, fun.ports.len() - 1, place));
                }
                "place" => {
                    let toks = line.split_once('=').map(|(_, t)| t).unwrap_or("");
                    let tokens = toks.split_whitespace().map(lit).collect();
                    self.net_mut(f).places.push(Place {
                        name: words[1].to_string(),
                        ty: ty(words[2]),
                        is_virtual: words.contains(&"virtual"),
                        put_token: words.contains(&"put_token"),
                        shared_sink: words.contains(&"sink"),
                        generator: words.contains(&"generator"),
                        tokens,
                        properties: Vec::new(),
                        span: span_at(off),
                    });
                }
                "trans" => {
                    self.finish_trans(f, trans.take());
                    let prio = match words.get(2) {
                        Some(&"prio") => words[3].parse().unwrap(),
                        _ => 0,
                    };
                    let fid = FunctionId(self.bundle.functions.len() as u32);
                    self.bundle.functions.push(Function {
                        name: Some(words[1].to_string()),
                        ports: Vec::new(),
                        body: Body::Expression(CodeId(u32::MAX)),
                        requires: Vec::new(),
                        properties: Vec::new(),
                        memory_buffers: Vec::new(),
                        memory_transfers: Vec::new(),
                        span: span_at(off),
                    });
                    let net = self.net_mut(f);
                    net.transitions.push(Transition {
                        priority: prio,
                        ..Transition::new(words[1], fid, Vec::new(), span_at(off))
                    });
                    trans = Some((net.transitions.len() - 1, Vec::new(), Vec::new()));
                }
                "in" | "read" | "out" | "many" | "count" | "inout" => {
                    let (ti, ports, _) = trans.as_mut().expect("connection outside trans");
                    let (name, tyname, place) = (words[1], words[2], words[4]);
                    let place = self.place(f, place);
                    let tfid = self.net_mut(f).transitions[*ti].function;
                    let port = match ports.iter().position(|(n, _)| n == name) {
                        Some(i) => PortId(i as u32),
                        None => {
                            ports.push((name.to_string(), ty(tyname)));
                            let dir = match words[0] {
                                "out" | "many" => PortDir::Out,
                                "inout" => PortDir::InOut,
                                _ => PortDir::In,
                            };
                            self.bundle.functions[tfid.index()].ports.push(Port {
                                name: name.to_string(),
                                dir,
                                ty: ty(tyname),
                                place: None,
                                span: span_at(off),
                            });
                            PortId((ports.len() - 1) as u32)
                        }
                    };
                    let port_ref = &mut self.bundle.functions[tfid.index()].ports[port.index()];
                    let outward = matches!(words[0], "out" | "many");
                    if port_ref.dir == PortDir::In && outward
                        || port_ref.dir == PortDir::Out && !outward
                    {
                        port_ref.dir = PortDir::InOut;
                    }
                    let kinds: &[ConnectKind] = match words[0] {
                        "in" => &[ConnectKind::In],
                        "read" => &[ConnectKind::Read],
                        "out" => &[ConnectKind::Out],
                        "many" => &[ConnectKind::OutMany],
                        "count" => &[ConnectKind::NumberOfTokens],
                        _ => &[ConnectKind::In, ConnectKind::Out],
                    };
                    let net = self.net_mut(f);
                    for &kind in kinds {
                        net.transitions[*ti].connections.push(Connection {
                            kind,
                            port,
                            place,
                            span: span_at(off),
                        });
                    }
                }
                "map" => {
                    let (ti, _, _) = trans.as_ref().expect("map outside trans");
                    self.maps
                        .push((f, *ti, words[1].to_string(), words[3].to_string()));
                }
                "cond" | "expr" | "module" | "use" => {
                    let (_, _, bodies) = trans.as_mut().expect("body outside trans");
                    let _ = off;
                    bodies.push(format!("{off}|{line}"));
                }
                "end" => {
                    self.finish_trans(f, trans.take());
                    net = None;
                }
                w => panic!("line starting with {w}"),
            }
        }
        self.finish_trans(net.unwrap_or(FunctionId(0)), trans.take());
        for (f, port, place) in pending_places {
            let p = self.place(f, &place);
            self.bundle.functions[f.index()].ports[port].place = Some(p);
        }
        for (f, t, child) in std::mem::take(&mut self.uses) {
            let cid = self
                .nets
                .iter()
                .find(|(n, _)| *n == child)
                .expect("child net")
                .1;
            let net = self.net_mut(f);
            let old = net.transitions[t].function;
            net.transitions[t].function = cid;
            // Map the connection ports (declared on the placeholder function) by name.
            let names: Vec<String> = self.bundle.functions[old.index()]
                .ports
                .iter()
                .map(|p| p.name.clone())
                .collect();
            let child_ports: Vec<String> = self.bundle.functions[cid.index()]
                .ports
                .iter()
                .map(|p| p.name.clone())
                .collect();
            let net = self.net_mut(f);
            for c in &mut net.transitions[t].connections {
                let name = &names[c.port.index()];
                c.port = PortId(
                    child_ports
                        .iter()
                        .position(|n| n == name)
                        .expect("child port") as u32,
                );
            }
        }
        for (f, t, virt, real) in std::mem::take(&mut self.maps) {
            let child = self.net_mut(f).transitions[t].function;
            let v = self.place(child, &virt);
            let r = self.place(f, &real);
            self.net_mut(f).transitions[t].place_map.push((v, r));
        }
    }

    fn finish_trans(&mut self, f: FunctionId, trans: Option<OpenTrans>) {
        let Some((ti, ports, bodies)) = trans else {
            return;
        };
        let tname = self.net_mut(f).transitions[ti].name.clone();
        let tfid = self.net_mut(f).transitions[ti].function;
        let mut body = None;
        for b in bodies {
            let (off, line) = b.split_once('|').unwrap();
            let off: usize = off.parse().unwrap();
            let (kw, rest) = line.split_once(' ').unwrap_or((line, ""));
            let rest_off = off + kw.len() + 1;
            match kw {
                "cond" | "expr" => {
                    let what = if kw == "cond" {
                        "condition"
                    } else {
                        "expression"
                    };
                    let code = asm(&format!("{what} of {tname}"), rest, &ports, rest_off);
                    self.bundle.codes.push(code);
                    let id = CodeId((self.bundle.codes.len() - 1) as u32);
                    if kw == "cond" {
                        self.net_mut(f).transitions[ti].condition = Some(id);
                    } else {
                        body = Some(Body::Expression(id));
                    }
                }
                "module" => {
                    let w: Vec<&str> = rest.split_whitespace().collect();
                    body = Some(Body::Module(Module::new(
                        w[0],
                        w[1],
                        Vec::new(),
                        span_at(off),
                    )));
                }
                _ => self.uses.push((f, ti, rest.trim().to_string())),
            }
        }
        let body = body.unwrap_or_else(|| {
            self.bundle
                .codes
                .push(asm(&format!("expression of {tname}"), "", &ports, 0));
            Body::Expression(CodeId((self.bundle.codes.len() - 1) as u32))
        });
        self.bundle.functions[tfid.index()].body = body;
    }
}

// ------------------------------------------------------------------------------------------
// Showing results without depending on the stdlib's printer.

pub(crate) fn show(v: &Value) -> String {
    match v {
        Value::Control => "[]".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(x) => x.to_string(),
        Value::Long(x) => format!("{x}L"),
        Value::UInt(x) => format!("{x}U"),
        Value::ULong(x) => format!("{x}UL"),
        Value::Char(c) => format!("'{}'", *c as u8 as char),
        Value::String(s) => format!("\"{s}\""),
        Value::Bigint(b) => format!("{b}A"),
        Value::Shared(s) => format!("shared_{} ({})", s.place, show(&s.value)),
        Value::List(xs) => format!(
            "List ({})",
            xs.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        Value::Struct(fs) => format!(
            "Struct [{}]",
            fs.iter()
                .map(|(n, v)| format!("{n} := {}", show(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => format!("{other:?}"),
    }
}

fn show_result(r: &Result<RunResult, crate::RunError>) -> String {
    match r {
        Ok(r) => {
            let mut s = String::new();
            for (port, vs) in &r.outputs {
                let vs: Vec<String> = vs.iter().map(show).collect();
                s += &format!("{port}: {}\n", vs.join(" "));
            }
            s += &format!("firings: {}\n", r.stats.firings);
            s
        }
        Err(e) => format!("error: {e}\n"),
    }
}

fn run_text(
    text: &str,
    inputs: &[(&str, &str)],
    config: &RunConfig,
) -> Result<RunResult, crate::RunError> {
    let bundle = build(text);
    crate::validate(&bundle).unwrap_or_else(|e| panic!("invalid test bundle: {e}"));
    let inputs: Vec<(String, Vec<Value>)> = inputs
        .iter()
        .map(|(p, vs)| (p.to_string(), vs.split_whitespace().map(lit).collect()))
        .collect();
    run(&bundle, &inputs, config)
}

/// Runs a net with the default config and checks the outputs (or the error).
fn check(text: &str, inputs: &[(&str, &str)], expect: Expect) {
    expect.assert_eq(&show_result(&run_text(text, inputs, &RunConfig::default())));
}

fn check_config(text: &str, config: &RunConfig, expect: Expect) {
    expect.assert_eq(&show_result(&run_text(text, &[], config)));
}

/// Runs a code over the given slot values and shows the value, the frame after, or the error.
fn check_code(src: &str, slots: &[(&str, Option<&str>)], expect: Expect) {
    let ports: Vec<(String, Type)> = slots
        .iter()
        .map(|(n, _)| (n.to_string(), Type::Any))
        .collect();
    let code = asm("test", src, &ports, 0);
    let mut frame: Vec<Option<Value>> = slots.iter().map(|(_, v)| v.map(lit)).collect();
    frame.resize(code.slots.len(), None);
    let r = Interpreter::new().run(&code, &mut frame);
    let mut out = match r {
        Ok(v) => format!("value: {}\n", show(&v)),
        Err(e) => match e.span {
            Some(sp) => format!("error: {e} (byte {})\n", sp.start),
            None => format!("error: {e}\n"),
        },
    };
    for (s, v) in code.slots.iter().zip(&frame) {
        out += &format!(
            "{}: {}\n",
            s.name,
            v.as_ref().map(show).unwrap_or_else(|| "-".into())
        );
    }
    expect.assert_eq(&out);
}

thread_local! {
    /// How the engine's runner loops ended on this thread, by kind (see `count_loop`).
    static LOOP_ENDS: std::cell::RefCell<std::collections::BTreeMap<&'static str, u64>> =
        Default::default();
    /// Whether the enabling search resumes after tokens known to fail (on this thread).
    static SCAN_CACHE: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

pub(crate) fn scan_cache_on() -> bool {
    SCAN_CACHE.with(|c| c.get())
}

pub(crate) fn set_scan_cache(on: bool) {
    SCAN_CACHE.with(|c| c.set(on));
}

/// Counts the end of a runner loop (for tests that must reach each kind).
pub(crate) fn count_loop(end: &crate::LoopEnd) {
    let kind = match end {
        crate::LoopEnd::Budget => "budget",
        crate::LoopEnd::Disabled => "disabled",
        crate::LoopEnd::Condition(_) => "condition",
        crate::LoopEnd::Expression(_) => "expression",
        crate::LoopEnd::Missing => "missing",
        crate::LoopEnd::Mismatch(_) => "mismatch",
    };
    LOOP_ENDS.with(|m| *m.borrow_mut().entry(kind).or_insert(0) += 1);
}

/// The loop ends counted on this thread so far.
pub(crate) fn loop_ends() -> std::collections::BTreeMap<&'static str, u64> {
    LOOP_ENDS.with(|m| m.borrow().clone())
}

mod batch_tests;
mod ending_tests;
mod interp_tests;
mod memory_tests;
mod net_tests;
mod place_map_tests;
