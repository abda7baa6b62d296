//! The reader of the IR text form: [`parse`].
//!
//! Line by line, without recursion except in types (bounded by
//! [`super::syntax::MAX_TYPE_DEPTH`]). Indentation is not significant: a line belongs to the
//! last `function`, `module`, `net`, `place`, `transition` or `code` line before it. Port
//! names of connections are resolved once every function is read (a transition may call a
//! function printed after it). The result goes through [`crate::validate`].

use std::collections::{BTreeMap, HashMap};

use pnet_stdlib::{BinOp, Builtin, StructType, Type, UnOp, Value};

use crate::bytecode::{Code, Instr, OpTy, Slot, SlotKind};
use crate::ir::*;

use super::print::parse_signature;
use super::syntax::{Cur, R, TextError, parse_value};
use super::{binary_mnemonic, op_ty_name, unary_mnemonic};

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Top,
    Function,
    Module,
    Net,
    Place,
    Transition,
    Code,
}

/// Where a port name of a transition goes once resolved.
enum PortUse {
    Connection(usize),
    ResponsePort(usize),
    ResponseTo(usize),
    Eureka(usize),
}

struct Fixup {
    func: usize,
    transition: usize,
    what: PortUse,
    name: String,
    line: usize,
    col: usize,
}

struct Reader {
    root: Option<FunctionId>,
    functions: Vec<Function>,
    /// Whether the function's body line was read.
    has_body: Vec<bool>,
    codes: Vec<Code>,
    structs: Vec<StructType>,
    files: Vec<SourceFile>,
    state: State,
    fixups: Vec<Fixup>,
    tables: Tables,
    /// The line of each `function`, `code` and `file` line and of the `bundle` line, to place
    /// validation errors.
    function_lines: Vec<usize>,
    code_lines: Vec<usize>,
    file_lines: Vec<usize>,
    bundle_line: usize,
}

const MAX_ERRORS: usize = 50;

/// Reads the text form printed by `Display for Bundle` (`pnetc --emit=ir`) back into a bundle,
/// and validates it. Errors carry one-based lines and columns. Never panics.
pub fn parse(text: &str) -> Result<Bundle, Vec<TextError>> {
    let mut r = Reader {
        root: None,
        functions: Vec::new(),
        has_body: Vec::new(),
        codes: Vec::new(),
        structs: Vec::new(),
        files: Vec::new(),
        state: State::Top,
        fixups: Vec::new(),
        tables: Tables::default(),
        function_lines: Vec::new(),
        code_lines: Vec::new(),
        file_lines: Vec::new(),
        bundle_line: 1,
    };
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut c = Cur::new(line, i + 1);
        if c.at_end() || c.rest().starts_with("# ") || c.rest() == "#" {
            continue;
        }
        if let Err(e) = r.line(&mut c) {
            errors.push(e);
            if errors.len() >= MAX_ERRORS {
                return Err(errors);
            }
        }
    }
    let last = text.lines().count() + 1;
    let at_end = |message: String| TextError {
        line: last,
        col: 1,
        message,
    };
    for (i, has) in r.has_body.iter().enumerate() {
        if !has {
            errors.push(at_end(format!(
                "function f{i} has no body (expression, module, modules or net)"
            )));
        }
    }
    for fx in std::mem::take(&mut r.fixups) {
        if let Err(m) = r.fix(&fx) {
            errors.push(TextError {
                line: fx.line,
                col: fx.col,
                message: m,
            });
        }
    }
    let Some(root) = r.root else {
        errors.push(at_end("missing `bundle root fN` line".into()));
        return Err(errors);
    };
    if !errors.is_empty() {
        errors.sort_by_key(|e| (e.line, e.col));
        return Err(errors);
    }
    let bundle = Bundle {
        root,
        functions: r.functions,
        codes: r.codes,
        structs: r.structs,
        files: r.files,
    };
    crate::validate(&bundle).map_err(|m| {
        // The message starts with the item: `code 3 (...)`, `function 2 (...)`, ...
        let item = |prefix: &str, lines: &[usize]| {
            let n = m
                .strip_prefix(prefix)?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()?;
            lines.get(n).copied()
        };
        let line = item("code ", &r.code_lines)
            .or_else(|| item("function ", &r.function_lines))
            .or_else(|| item("source file ", &r.file_lines))
            .unwrap_or(r.bundle_line);
        vec![TextError {
            line,
            col: 1,
            message: format!("invalid bundle: {m}"),
        }]
    })?;
    Ok(bundle)
}

fn port_dir(w: &str) -> Option<PortDir> {
    Some(match w {
        "in" => PortDir::In,
        "out" => PortDir::Out,
        "inout" => PortDir::InOut,
        "tunnel" => PortDir::Tunnel,
        _ => return None,
    })
}

fn connect_kind(w: &str) -> Option<ConnectKind> {
    Some(match w {
        "in" => ConnectKind::In,
        "read" => ConnectKind::Read,
        "out" => ConnectKind::Out,
        "out-many" => ConnectKind::OutMany,
        "number-of-tokens" => ConnectKind::NumberOfTokens,
        _ => return None,
    })
}

fn flag_words(c: &mut Cur<'_>, allowed: &[&str]) -> R<Vec<bool>> {
    let mut on = vec![false; allowed.len()];
    loop {
        let w = c.peek_bare();
        match allowed.iter().position(|a| *a == w) {
            Some(i) if !w.is_empty() => {
                c.pos += w.len();
                on[i] = true;
            }
            _ => return Ok(on),
        }
    }
}

const OPTYS: &[OpTy] = &[
    OpTy::Bool,
    OpTy::Int,
    OpTy::Long,
    OpTy::UInt,
    OpTy::ULong,
    OpTy::Float,
    OpTy::Double,
    OpTy::Char,
];

impl Reader {
    fn line(&mut self, c: &mut Cur<'_>) -> R<()> {
        let start = c.here();
        let kw = c.peek_bare();
        // Instruction lines start with their index.
        if self.state == State::Code && kw.bytes().all(|b| b.is_ascii_digit()) && !kw.is_empty() {
            return self.instr(c);
        }
        c.pos += kw.len();
        match (kw, self.state) {
            ("bundle", _) => {
                self.bundle_line = c.line;
                c.expect_kw("root")?;
                self.root = Some(FunctionId(c.id("f")?));
                c.label()?;
                c.end()
            }
            ("file", _) => {
                self.expect_index(c, self.files.len(), "")?;
                let path = c.quoted()?;
                c.expect_kw("lines")?;
                let mut line_starts = Vec::new();
                while !c.at_end() {
                    line_starts.push(c.num::<u32>()?);
                }
                self.files.push(SourceFile { path, line_starts });
                self.file_lines.push(c.line);
                Ok(())
            }
            ("struct", State::Top) => {
                let s = c.struct_body(&self.structs, 1)?;
                c.end()?;
                self.structs.push(s);
                Ok(())
            }
            ("function", _) => {
                self.expect_index(c, self.functions.len(), "f")?;
                // The function exists even if the rest of the line is wrong, so that the
                // lines after it do not give errors of their own.
                let files = &self.files;
                let head = (|| {
                    c.ws();
                    let name = if c.rest().is_empty() || c.rest().starts_with('@') {
                        None
                    } else {
                        Some(c.word()?)
                    };
                    let span = c.location(files, None)?;
                    c.end()?;
                    Ok((name, span))
                })();
                let (name, span) = head.clone().unwrap_or_default();
                self.functions.push(Function {
                    name,
                    ports: vec![],
                    body: Body::Expression(CodeId(0)),
                    requires: vec![],
                    properties: vec![],
                    memory_buffers: vec![],
                    memory_transfers: vec![],
                    span,
                });
                self.has_body.push(false);
                self.function_lines.push(c.line);
                self.state = State::Function;
                head.map(|_| ())
            }
            ("code", s) if s != State::Module || !c.rest().trim_start().starts_with('"') => {
                self.code_header(c)
            }
            _ => self.inner(kw, start, c),
        }
    }

    fn expect_index(&self, c: &mut Cur<'_>, next: usize, prefix: &str) -> R<()> {
        c.ws();
        let at = c.here();
        let i = c.id(prefix)?;
        if i as usize != next {
            return Err(c.err_at(at, format!("expected {prefix}{next} here (ids count up)")));
        }
        Ok(())
    }

    fn func(&mut self, c: &Cur<'_>) -> R<(usize, &mut Function)> {
        let n = self.functions.len();
        match self.functions.last_mut() {
            Some(f) => Ok((n - 1, f)),
            None => Err(c.err_at(0, "this line belongs in a function")),
        }
    }

    fn net(&mut self, c: &Cur<'_>) -> R<(usize, &mut Net)> {
        let (i, f) = self.func(c)?;
        match &mut f.body {
            Body::Net(n) => Ok((i, n)),
            _ => Err(c.err_at(0, "this line belongs in a net")),
        }
    }

    fn transition(&mut self, c: &Cur<'_>) -> R<(usize, usize, &mut Transition)> {
        let (fi, net) = self.net(c)?;
        let n = net.transitions.len();
        match net.transitions.last_mut() {
            Some(t) => Ok((fi, n - 1, t)),
            None => Err(c.err_at(0, "this line belongs in a transition")),
        }
    }

    fn module(&mut self, c: &Cur<'_>) -> R<&mut Module> {
        let (_, f) = self.func(c)?;
        match &mut f.body {
            Body::Module(m) => Ok(m),
            Body::Modules { modules, .. } => match modules.last_mut() {
                Some(m) => Ok(m),
                None => Err(c.err_at(0, "this line belongs in a module")),
            },
            _ => Err(c.err_at(0, "this line belongs in a module")),
        }
    }

    fn set_body(&mut self, c: &Cur<'_>, body: Body) -> R<()> {
        let (i, _) = self.func(c)?;
        if self.has_body[i] {
            return Err(c.err_at(0, format!("function f{i} has a body already")));
        }
        self.functions[i].body = body;
        self.has_body[i] = true;
        Ok(())
    }

    fn code_ref(c: &mut Cur<'_>) -> R<CodeId> {
        Ok(CodeId(c.id("c")?))
    }

    fn require(c: &mut Cur<'_>) -> R<Require> {
        let key = c.word()?;
        let mandatory = !c.kw("optional");
        c.end()?;
        Ok(Require { key, mandatory })
    }

    fn property(c: &mut Cur<'_>) -> R<Property> {
        let key = c.word()?;
        c.expect_sym("=")?;
        let value = c.quoted()?;
        c.end()?;
        Ok(Property { key, value })
    }

    fn inner(&mut self, kw: &str, start: usize, c: &mut Cur<'_>) -> R<()> {
        let st = self.state;
        let func_ctx = self.functions.last().map(|f| f.span.file);
        match (kw, st) {
            ("require", State::Function) => {
                let r = Self::require(c)?;
                self.func(c)?.1.requires.push(r);
            }
            ("property", State::Function) => {
                let p = Self::property(c)?;
                self.func(c)?.1.properties.push(p);
            }
            ("memory-buffer", State::Function) => {
                let name = c.word()?;
                c.expect_kw("size")?;
                let size = Self::code_ref(c)?;
                let alignment = if c.kw("alignment") {
                    Some(Self::code_ref(c)?)
                } else {
                    None
                };
                let read_only = c.kw("read_only");
                let span = c.location(&self.files, func_ctx)?;
                c.end()?;
                self.func(c)?.1.memory_buffers.push(MemoryBuffer {
                    name,
                    read_only,
                    size,
                    alignment,
                    span,
                });
            }
            ("memory-get" | "memory-put" | "memory-getput", State::Function) => {
                let kind = match kw {
                    "memory-get" => TransferKind::Get,
                    "memory-put" => TransferKind::Put,
                    _ => TransferKind::GetPut,
                };
                c.expect_kw("global")?;
                let global = Self::code_ref(c)?;
                c.expect_kw("local")?;
                let local = Self::code_ref(c)?;
                let fl = flag_words(c, &["allow_empty_ranges", "not_modified_in_module_call"])?;
                let span = c.location(&self.files, func_ctx)?;
                c.end()?;
                self.func(c)?.1.memory_transfers.push(MemoryTransfer {
                    kind,
                    global,
                    local,
                    allow_empty_ranges: fl[0],
                    not_modified_in_module_call: fl[1],
                    span,
                });
            }
            ("expression", State::Function) => {
                let id = Self::code_ref(c)?;
                c.end()?;
                self.set_body(c, Body::Expression(id))?;
            }
            ("modules", State::Function) => {
                c.expect_kw("preferences")?;
                let mut preferences = Vec::new();
                while !c.at_end() {
                    preferences.push(c.word()?);
                }
                self.set_body(
                    c,
                    Body::Modules {
                        preferences,
                        modules: vec![],
                    },
                )?;
            }
            ("module", State::Function | State::Module) => {
                let name = c.word()?;
                let sig_at = c.here();
                let sig = c.quoted()?;
                let signature = parse_signature(&sig)
                    .ok_or_else(|| c.err_at(sig_at, "expected \"[RESULT ]FUNCTION (ARGS)\""))?;
                let target = if c.kw("target") {
                    Some(c.word()?)
                } else {
                    None
                };
                let fl = flag_words(
                    c,
                    &[
                        "pass_context",
                        "require_function_unloads_without_rest",
                        "require_module_unloads_without_rest",
                    ],
                )?;
                let span = c.location(&self.files, func_ctx)?;
                c.end()?;
                let m = Module {
                    name,
                    signature,
                    target,
                    pass_context: fl[0],
                    require_function_unloads_without_rest: fl[1],
                    require_module_unloads_without_rest: fl[2],
                    eureka_group: None,
                    cincludes: vec![],
                    ld_flags: vec![],
                    cxx_flags: vec![],
                    code: None,
                    span,
                };
                let (i, _) = self.func(c)?;
                let open = self.has_body[i];
                match &mut self.functions[i].body {
                    Body::Modules { modules, .. } if open => modules.push(m),
                    _ => self.set_body(c, Body::Module(m))?,
                }
                self.state = State::Module;
            }
            ("eureka-group", State::Module) => {
                let id = Self::code_ref(c)?;
                c.end()?;
                self.module(c)?.eureka_group = Some(id);
            }
            ("cinclude" | "ld" | "cxx" | "code", State::Module) => {
                let s = c.quoted()?;
                c.end()?;
                let m = self.module(c)?;
                match kw {
                    "cinclude" => m.cincludes.push(s),
                    "ld" => m.ld_flags.push(s),
                    "cxx" => m.cxx_flags.push(s),
                    _ => m.code = Some(s),
                }
            }
            ("net", State::Function) => {
                c.end()?;
                self.set_body(c, Body::Net(Net::default()))?;
                self.state = State::Net;
            }
            ("place", State::Net | State::Place | State::Transition) => {
                let (_, net) = self.net(c)?;
                let next = net.places.len();
                self.expect_index(c, next, "p")?;
                let (files, structs) = (&self.files, &self.structs);
                let head = (|| {
                    let name = c.word()?;
                    c.expect_sym(":")?;
                    let ty = c.ty(structs)?;
                    let fl = flag_words(c, &["virtual", "put_token", "shared_sink", "generator"])?;
                    let span = c.location(files, None)?;
                    c.end()?;
                    Ok((name, ty, fl, span))
                })();
                let (name, ty, fl, span) = head.clone().unwrap_or((
                    String::new(),
                    Type::Any,
                    vec![false; 4],
                    SourceSpan::default(),
                ));
                self.net(c)?.1.places.push(Place {
                    name,
                    ty,
                    is_virtual: fl[0],
                    put_token: fl[1],
                    shared_sink: fl[2],
                    generator: fl[3],
                    tokens: vec![],
                    properties: vec![],
                    span,
                });
                self.state = State::Place;
                head?;
            }
            ("token", State::Place) => {
                let at = c.here();
                let v = parse_value(c.rest()).map_err(|(o, m)| c.err_at(at + o, m))?;
                if let Some(p) = self.net(c)?.1.places.last_mut() {
                    p.tokens.push(v);
                }
            }
            ("property", State::Place) => {
                let p = Self::property(c)?;
                if let Some(pl) = self.net(c)?.1.places.last_mut() {
                    pl.properties.push(p);
                }
            }
            ("transition", State::Net | State::Place | State::Transition) => {
                let (_, net) = self.net(c)?;
                let next = net.transitions.len();
                self.expect_index(c, next, "t")?;
                let files = &self.files;
                let head = (|| {
                    let name = c.word()?;
                    c.expect_kw("priority")?;
                    let priority = c.num::<u16>()?;
                    let fl = flag_words(
                        c,
                        &["produce_shared", "consume_shared", "passthrough_shared"],
                    )?;
                    c.expect_sym("->")?;
                    let function = FunctionId(c.id("f")?);
                    c.label()?;
                    let span = c.location(files, None)?;
                    c.end()?;
                    Ok((name, priority, fl, function, span))
                })();
                let (name, priority, fl, function, span) = head.clone().unwrap_or((
                    String::new(),
                    0,
                    vec![false; 3],
                    FunctionId(0),
                    SourceSpan::default(),
                ));
                self.net(c)?.1.transitions.push(Transition {
                    name,
                    priority,
                    function,
                    connections: vec![],
                    responses: vec![],
                    eureka_ports: vec![],
                    condition: None,
                    place_map: vec![],
                    requires: vec![],
                    properties: vec![],
                    produce_shared: fl[0],
                    consume_shared: fl[1],
                    passthrough_shared: fl[2],
                    span,
                });
                self.state = State::Transition;
                head?;
            }
            (_, State::Transition) if connect_kind(kw).is_some() => {
                let kind = connect_kind(kw).unwrap_or(ConnectKind::In);
                let port_at = c.here();
                let port = c.word()?;
                let arrow = if matches!(kind, ConnectKind::Out | ConnectKind::OutMany) {
                    "->"
                } else {
                    "<-"
                };
                c.expect_sym(arrow)?;
                let place = PlaceId(c.id("p")?);
                c.label()?;
                let (fi, ti, t) = self.transition(c)?;
                let ctx = Some(t.span.file);
                let span = c.location(&self.files, ctx)?;
                c.end()?;
                let (_, _, t) = self.transition(c)?;
                t.connections.push(Connection {
                    kind,
                    port: PortId(0),
                    place,
                    span,
                });
                let what = PortUse::Connection(t.connections.len() - 1);
                self.fixup(fi, ti, what, port, c.line, port_at);
            }
            ("response", State::Transition) => {
                let a_at = c.here();
                let a = c.word()?;
                c.expect_kw("to")?;
                let b_at = c.here();
                let b = c.word()?;
                let (fi, ti, t) = self.transition(c)?;
                let ctx = Some(t.span.file);
                let span = c.location(&self.files, ctx)?;
                c.end()?;
                let (_, _, t) = self.transition(c)?;
                t.responses.push(Response {
                    port: PortId(0),
                    to: PortId(0),
                    span,
                });
                let n = t.responses.len() - 1;
                self.fixup(fi, ti, PortUse::ResponsePort(n), a, c.line, a_at);
                self.fixup(fi, ti, PortUse::ResponseTo(n), b, c.line, b_at);
            }
            ("eureka", State::Transition) => {
                let at = c.here();
                let p = c.word()?;
                c.end()?;
                let (fi, ti, t) = self.transition(c)?;
                t.eureka_ports.push(PortId(0));
                let n = t.eureka_ports.len() - 1;
                self.fixup(fi, ti, PortUse::Eureka(n), p, c.line, at);
            }
            ("condition", State::Transition) => {
                let id = Self::code_ref(c)?;
                c.end()?;
                let (_, _, t) = self.transition(c)?;
                if t.condition.is_some() {
                    return Err(c.err_at(start, "a second condition"));
                }
                t.condition = Some(id);
            }
            ("place-map", State::Transition) => {
                let v = PlaceId(c.id("p")?);
                c.label()?;
                c.expect_sym("->")?;
                let r = PlaceId(c.id("p")?);
                c.label()?;
                c.end()?;
                self.transition(c)?.2.place_map.push((v, r));
            }
            ("require", State::Transition) => {
                let r = Self::require(c)?;
                self.transition(c)?.2.requires.push(r);
            }
            ("property", State::Transition) => {
                let p = Self::property(c)?;
                self.transition(c)?.2.properties.push(p);
            }
            (_, State::Function) if port_dir(kw).is_some() => {
                let dir = port_dir(kw).unwrap_or(PortDir::In);
                let name = c.word()?;
                c.expect_sym(":")?;
                let ty = c.ty(&self.structs)?;
                let place = if c.sym("=") {
                    let p = PlaceId(c.id("p")?);
                    c.label()?;
                    Some(p)
                } else {
                    None
                };
                let span = c.location(&self.files, func_ctx)?;
                c.end()?;
                let (i, _) = self.func(c)?;
                if self.has_body[i] {
                    return Err(c.err_at(start, "ports come before the body"));
                }
                self.functions[i].ports.push(Port {
                    name,
                    dir,
                    ty,
                    place,
                    span,
                });
            }
            ("slot", State::Code) => {
                let code = self.code_mut(c)?;
                let next = code.slots.len();
                c.ws();
                let at = c.here();
                if c.num::<usize>()? != next {
                    return Err(c.err_at(at, format!("expected slot {next} here")));
                }
                let kind = if c.kw("port") {
                    SlotKind::Port
                } else if c.kw("local") {
                    SlotKind::Local
                } else {
                    return Err(c.err("expected `port` or `local`"));
                };
                let name = c.word()?;
                c.expect_sym(":")?;
                let ty = c.ty(&self.structs)?;
                c.end()?;
                if let Ok(i) = u16::try_from(next) {
                    self.tables.slots.entry(name.clone()).or_insert(i);
                }
                self.code_mut(c)?.slots.push(Slot { name, kind, ty });
            }
            ("const", State::Code) => {
                let code = self.code_mut(c)?;
                let next = code.consts.len();
                c.ws();
                let at = c.here();
                if c.num::<usize>()? != next {
                    return Err(c.err_at(at, format!("expected const {next} here")));
                }
                let at = c.here();
                let v = parse_value(c.rest()).map_err(|(o, m)| c.err_at(at + o, m))?;
                let code = self
                    .codes
                    .last_mut()
                    .ok_or_else(|| c.err_at(0, "no code"))?;
                code.consts.push(v);
                note(&mut self.tables.consts, &code.consts);
            }
            ("path", State::Code) => {
                let code = self.code_mut(c)?;
                let next = code.paths.len();
                c.ws();
                let at = c.here();
                if c.num::<usize>()? != next {
                    return Err(c.err_at(at, format!("expected path {next} here")));
                }
                let mut fields = Vec::new();
                while !c.at_end() {
                    fields.push(c.word()?);
                }
                let code = self
                    .codes
                    .last_mut()
                    .ok_or_else(|| c.err_at(0, "no code"))?;
                code.paths.push(fields);
                note(&mut self.tables.paths, &code.paths);
            }
            ("reads", State::Code) => {
                let mut reads = Vec::new();
                while !c.at_end() {
                    let at = c.here();
                    let w = c.word()?;
                    let s = slot_of(&self.tables, &w).map_err(|m| c.err_at(at, m))?;
                    reads.push(s);
                }
                self.code_mut(c)?.reads = reads;
            }
            _ => return Err(c.err_at(start, format!("unexpected `{kw}` here"))),
        }
        Ok(())
    }

    fn fixup(
        &mut self,
        func: usize,
        transition: usize,
        what: PortUse,
        name: String,
        line: usize,
        at: usize,
    ) {
        self.fixups.push(Fixup {
            func,
            transition,
            what,
            name,
            line,
            col: at + 1,
        });
    }

    fn fix(&mut self, fx: &Fixup) -> Result<(), String> {
        let Some(Body::Net(net)) = self.functions.get(fx.func).map(|f| &f.body) else {
            return Err("no net".into());
        };
        let Some(t) = net.transitions.get(fx.transition) else {
            return Err("no transition".into());
        };
        let port = match fx.name.strip_prefix("port#") {
            Some(n) => PortId(
                n.parse::<u32>()
                    .map_err(|_| format!("bad port `{}`", fx.name))?,
            ),
            None => {
                let callee = self
                    .functions
                    .get(t.function.index())
                    .ok_or_else(|| format!("no function f{}", t.function.0))?;
                callee
                    .port_by_name(&fx.name)
                    .ok_or_else(|| format!("f{} has no port `{}`", t.function.0, fx.name))?
            }
        };
        let Some(Body::Net(net)) = self.functions.get_mut(fx.func).map(|f| &mut f.body) else {
            return Err("no net".into());
        };
        let Some(t) = net.transitions.get_mut(fx.transition) else {
            return Err("no transition".into());
        };
        let slot = match fx.what {
            PortUse::Connection(i) => t.connections.get_mut(i).map(|c| &mut c.port),
            PortUse::ResponsePort(i) => t.responses.get_mut(i).map(|r| &mut r.port),
            PortUse::ResponseTo(i) => t.responses.get_mut(i).map(|r| &mut r.to),
            PortUse::Eureka(i) => t.eureka_ports.get_mut(i),
        };
        if let Some(s) = slot {
            *s = port;
        }
        Ok(())
    }

    fn code_mut(&mut self, c: &Cur<'_>) -> R<&mut Code> {
        self.codes
            .last_mut()
            .ok_or_else(|| c.err_at(0, "this line belongs in a code"))
    }

    fn code_header(&mut self, c: &mut Cur<'_>) -> R<()> {
        self.expect_index(c, self.codes.len(), "c")?;
        let (files, structs) = (&self.files, &self.structs);
        let head = (|| {
            let name = c.quoted()?;
            c.expect_sym(":")?;
            let result = c.ty(structs)?;
            let span = c.location(files, None)?;
            c.end()?;
            Ok((name, result, span))
        })();
        let (name, result, span) =
            head.clone()
                .unwrap_or((String::new(), Type::Any, SourceSpan::default()));
        self.code_lines.push(c.line);
        self.tables = Tables::default();
        self.codes.push(Code {
            name,
            instrs: vec![],
            spans: vec![],
            consts: vec![],
            paths: vec![],
            slots: vec![],
            reads: vec![],
            result,
            span,
        });
        self.state = State::Code;
        head.map(|_| ())
    }

    fn instr(&mut self, c: &mut Cur<'_>) -> R<()> {
        let files = &self.files;
        let Some(code) = self.codes.last_mut() else {
            return Err(c.err("this line belongs in a code"));
        };
        let ctx = Some(code.span.file);
        c.ws();
        let at = c.here();
        let n = c.num::<usize>()?;
        if n != code.instrs.len() {
            return Err(c.err_at(
                at,
                format!("expected instruction {} here", code.instrs.len()),
            ));
        }
        // The operands end at the location (which the printer keeps out of operands).
        let ops_at = c.pos;
        let rest = c.rest();
        let (ops, loc) = match rest.find(" @ ") {
            Some(i) => (&rest[..i], Some(ops_at + i)),
            None => (rest, None),
        };
        let span = match loc {
            Some(l) => {
                let mut lc = Cur::new(c.s, c.line);
                lc.pos = l;
                lc.location(files, ctx)?
            }
            None => SourceSpan::default(),
        };
        let mut oc = Cur::new(&c.s[..ops_at + ops.len()], c.line);
        oc.pos = ops_at;
        let instr = read_instr(&mut oc, code, &mut self.tables)?;
        code.instrs.push(instr);
        code.spans.push(span);
        Ok(())
    }
}

/// The first index of each slot name, constant and field path of the code being read, so that
/// reading a code is not quadratic in its size.
#[derive(Default)]
struct Tables {
    slots: HashMap<String, u16>,
    consts: BTreeMap<Value, u32>,
    paths: BTreeMap<Vec<String>, u32>,
}

fn slot_of(tables: &Tables, w: &str) -> Result<u16, String> {
    if let Some(n) = w.strip_prefix("slot#") {
        return n.parse::<u16>().map_err(|_| format!("bad slot `{w}`"));
    }
    tables
        .slots
        .get(w)
        .copied()
        .ok_or_else(|| format!("no slot `{w}`"))
}

fn index_after(w: &str, prefix: &str) -> Option<Result<u32, String>> {
    w.strip_prefix(prefix)
        .map(|n| n.parse::<u32>().map_err(|_| format!("bad `{w}`")))
}

/// The first index of `v` in `table`, appended when absent (hand-written codes may leave out
/// their constant and path tables).
fn intern<T: Ord + Clone>(index: &mut BTreeMap<T, u32>, table: &mut Vec<T>, v: T) -> u32 {
    match index.get(&v) {
        Some(&i) => i,
        None => {
            let i = table.len() as u32;
            index.insert(v.clone(), i);
            table.push(v);
            i
        }
    }
}

/// Records the index of the item just pushed on `table` unless an earlier one is equal.
fn note<T: Ord + Clone>(index: &mut BTreeMap<T, u32>, table: &[T]) {
    if let Some(v) = table.last() {
        index.entry(v.clone()).or_insert(table.len() as u32 - 1);
    }
}

fn read_instr(c: &mut Cur<'_>, code: &mut Code, tables: &mut Tables) -> R<Instr> {
    c.ws();
    let at = c.here();
    let m = c.peek_bare();
    c.pos += m.len();
    let (name, ty) = match m.split_once('.') {
        Some((n, t)) => match OPTYS.iter().find(|o| op_ty_name(**o) == Some(t)) {
            Some(o) => (n, *o),
            None => return Err(c.err_at(at, format!("unknown operand type `{t}`"))),
        },
        None => (m, OpTy::Dyn),
    };
    let e = |c: &Cur<'_>, at: usize, r: Result<u32, String>| r.map_err(|m| c.err_at(at, m));
    let jump = |c: &mut Cur<'_>| -> R<u32> {
        c.expect_sym("->")?;
        c.num::<u32>()
    };
    let instr = match name {
        "const" => {
            c.ws();
            let at = c.here();
            let text = c.rest().trim_end();
            c.pos = c.s.len();
            match index_after(text, "const#") {
                Some(r) => Instr::Const(e(c, at, r)?),
                None => {
                    let v = parse_value(text).map_err(|(o, m)| c.err_at(at + o, m))?;
                    Instr::Const(intern(&mut tables.consts, &mut code.consts, v))
                }
            }
        }
        "make_shared" => {
            c.ws();
            let at = c.here();
            let w = c.word()?;
            match index_after(&w, "const#") {
                Some(r) => Instr::MakeShared(e(c, at, r)?),
                None => {
                    let place = w
                        .strip_prefix("shared_")
                        .ok_or_else(|| c.err_at(at, "expected shared_PLACE or const#N"))?;
                    Instr::MakeShared(intern(
                        &mut tables.consts,
                        &mut code.consts,
                        Value::string(place),
                    ))
                }
            }
        }
        "load" | "store" => {
            c.ws();
            let at = c.here();
            let w = c.word()?;
            let (slot_text, fields) = match w.split_once('.') {
                Some((s, f)) => (s, Some(f)),
                None => (w.as_str(), None),
            };
            let s = slot_of(tables, slot_text).map_err(|m| c.err_at(at, m))?;
            let path = match fields {
                Some(f) => {
                    let want: Vec<String> = f.split('.').map(str::to_string).collect();
                    Some(intern(&mut tables.paths, &mut code.paths, want))
                }
                None => {
                    let at = c.here();
                    let next = c.peek_bare();
                    match index_after(next, "path#") {
                        Some(r) => {
                            c.pos += next.len();
                            Some(e(c, at, r)?)
                        }
                        None => None,
                    }
                }
            };
            match (name, path) {
                ("load", None) => Instr::Load(s),
                ("load", Some(p)) => Instr::LoadPath(s, p),
                (_, None) => Instr::Store(s),
                (_, Some(p)) => Instr::StorePath(s, p),
            }
        }
        "dup" => Instr::Dup,
        "pop" => Instr::Pop,
        "call" => {
            let at = c.here();
            let w = c.word()?;
            Instr::Call(
                Builtin::from_name(&w)
                    .ok_or_else(|| c.err_at(at, format!("unknown built-in `{w}`")))?,
            )
        }
        "jump" => Instr::Jump(jump(c)?),
        "jump_if_false_else_pop" => Instr::JumpIfFalseElsePop(jump(c)?),
        "jump_if_true_else_pop" => Instr::JumpIfTrueElsePop(jump(c)?),
        _ => {
            if let Some(op) = UnOp::ALL.iter().find(|o| unary_mnemonic(**o) == name) {
                Instr::Unary(*op, ty)
            } else if let Some(op) = BinOp::ALL.iter().find(|o| binary_mnemonic(**o) == name) {
                Instr::Binary(*op, ty)
            } else {
                return Err(c.err_at(at, format!("unknown instruction `{m}`")));
            }
        }
    };
    if ty != OpTy::Dyn && !matches!(instr, Instr::Unary(..) | Instr::Binary(..)) {
        return Err(c.err_at(at, format!("`{name}` takes no operand type")));
    }
    c.end()?;
    Ok(instr)
}
