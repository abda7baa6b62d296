//! The printer of the IR text form (`Display for Bundle`, `pnetc --emit=ir`); the reader is
//! [`super::parse`]. See the module documentation of [`super`] for the form.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use pnet_stdlib::Value;

use crate::bytecode::{Code, Instr, SlotKind};
use crate::ir::{
    Body, Bundle, ConnectKind, Function, Module, Net, PortDir, Property, Require, Signature,
    SourceFileId, SourceSpan, TransferKind,
};

use super::syntax::{
    is_word, location_text, quote, type_text, value_text, word, write_struct_body,
};
use super::{binary_mnemonic, op_ty_name, unary_mnemonic};

struct P<'a> {
    b: &'a Bundle,
    out: String,
}

fn flags(pairs: &[(bool, &str)]) -> String {
    let mut s = String::new();
    for (on, name) in pairs {
        if *on {
            s.push(' ');
            s.push_str(name);
        }
    }
    s
}

pub(super) fn dir_name(d: PortDir) -> &'static str {
    match d {
        PortDir::In => "in",
        PortDir::Out => "out",
        PortDir::InOut => "inout",
        PortDir::Tunnel => "tunnel",
    }
}

pub(super) fn connect_name(k: ConnectKind) -> (&'static str, &'static str) {
    match k {
        ConnectKind::In => ("in", "<-"),
        ConnectKind::Read => ("read", "<-"),
        ConnectKind::Out => ("out", "->"),
        ConnectKind::OutMany => ("out-many", "->"),
        ConnectKind::NumberOfTokens => ("number-of-tokens", "<-"),
    }
}

pub(super) fn transfer_name(k: TransferKind) -> &'static str {
    match k {
        TransferKind::Get => "memory-get",
        TransferKind::Put => "memory-put",
        TransferKind::GetPut => "memory-getput",
    }
}

pub(super) fn signature_text(sig: &Signature) -> String {
    let ret = sig
        .result
        .as_deref()
        .map(|r| format!("{r} "))
        .unwrap_or_default();
    format!("{ret}{} ({})", sig.function, sig.args.join(", "))
}

/// Reads [`signature_text`]: `[RESULT ]FUNCTION (ARG, ...)`.
pub(super) fn parse_signature(text: &str) -> Option<Signature> {
    let (head, tail) = text.split_once('(')?;
    let inner = tail.strip_suffix(')')?;
    let mut words = head.split_whitespace();
    let (result, function) = match (words.next(), words.next(), words.next()) {
        (Some(f), None, None) => (None, f),
        (Some(r), Some(f), None) => (Some(r.to_string()), f),
        _ => return None,
    };
    let args = if inner.trim().is_empty() {
        vec![]
    } else {
        inner.split(',').map(|a| a.trim().to_string()).collect()
    };
    Some(Signature {
        result,
        function: function.to_string(),
        args,
    })
}

impl P<'_> {
    fn loc(&self, span: SourceSpan, ctx: Option<SourceFileId>) -> String {
        if span == SourceSpan::default() {
            String::new()
        } else {
            format!("  @ {}", location_text(span, &self.b.files, ctx))
        }
    }

    fn ty(&self, t: &pnet_stdlib::Type) -> String {
        type_text(t, &self.b.structs)
    }

    fn function_label(&self, id: crate::FunctionId) -> String {
        match self
            .b
            .functions
            .get(id.index())
            .and_then(|f| f.name.as_deref())
        {
            Some(n) => format!("f{} {}", id.0, word(n)),
            None => format!("f{}", id.0),
        }
    }

    fn requires(&mut self, indent: &str, requires: &[Require]) {
        for r in requires {
            let m = if r.mandatory { "" } else { " optional" };
            let _ = writeln!(self.out, "{indent}require {}{m}", word(&r.key));
        }
    }

    fn properties(&mut self, indent: &str, props: &[Property]) {
        for p in props {
            let _ = writeln!(
                self.out,
                "{indent}property {} = {}",
                word(&p.key),
                quote(&p.value)
            );
        }
    }

    fn module(&mut self, m: &Module, ctx: Option<SourceFileId>) {
        let _ = write!(
            self.out,
            "  module {} {}",
            word(&m.name),
            quote(&signature_text(&m.signature))
        );
        if let Some(t) = &m.target {
            let _ = write!(self.out, " target {}", word(t));
        }
        let _ = writeln!(
            self.out,
            "{}{}",
            flags(&[
                (m.pass_context, "pass_context"),
                (
                    m.require_function_unloads_without_rest,
                    "require_function_unloads_without_rest"
                ),
                (
                    m.require_module_unloads_without_rest,
                    "require_module_unloads_without_rest"
                ),
            ]),
            self.loc(m.span, ctx)
        );
        if let Some(c) = m.eureka_group {
            let _ = writeln!(self.out, "    eureka-group c{}", c.0);
        }
        for c in &m.cincludes {
            let _ = writeln!(self.out, "    cinclude {}", quote(c));
        }
        for c in &m.ld_flags {
            let _ = writeln!(self.out, "    ld {}", quote(c));
        }
        for c in &m.cxx_flags {
            let _ = writeln!(self.out, "    cxx {}", quote(c));
        }
        if let Some(code) = &m.code {
            let _ = writeln!(self.out, "    code {}", quote(code));
        }
    }

    fn port_name(&self, func: crate::FunctionId, port: crate::PortId) -> String {
        let ports = self
            .b
            .functions
            .get(func.index())
            .map(|f| &f.ports[..])
            .unwrap_or(&[]);
        match ports.get(port.index()) {
            Some(p)
                if super::syntax::is_word(&p.name)
                    && ports.iter().position(|q| q.name == p.name) == Some(port.index()) =>
            {
                p.name.clone()
            }
            _ => format!("port#{}", port.0),
        }
    }

    fn net(&mut self, net: &Net) {
        let _ = writeln!(self.out, "  net");
        for (i, p) in net.places.iter().enumerate() {
            let _ = writeln!(
                self.out,
                "    place p{i} {} : {}{}{}",
                word(&p.name),
                self.ty(&p.ty),
                flags(&[
                    (p.is_virtual, "virtual"),
                    (p.put_token, "put_token"),
                    (p.shared_sink, "shared_sink"),
                    (p.generator, "generator"),
                ]),
                self.loc(p.span, None)
            );
            for t in &p.tokens {
                let _ = writeln!(self.out, "      token {}", value_text(t));
            }
            self.properties("      ", &p.properties);
        }
        let place = |id: crate::PlaceId| match net.places.get(id.index()) {
            Some(p) => format!("p{} {}", id.0, word(&p.name)),
            None => format!("p{}", id.0),
        };
        for (i, t) in net.transitions.iter().enumerate() {
            let ctx = Some(t.span.file);
            let _ = writeln!(
                self.out,
                "    transition t{i} {} priority {}{} -> {}{}",
                word(&t.name),
                t.priority,
                flags(&[
                    (t.produce_shared, "produce_shared"),
                    (t.consume_shared, "consume_shared"),
                    (t.passthrough_shared, "passthrough_shared"),
                ]),
                self.function_label(t.function),
                self.loc(t.span, None)
            );
            for c in &t.connections {
                let (kind, arrow) = connect_name(c.kind);
                let _ = writeln!(
                    self.out,
                    "      {kind} {} {arrow} {}{}",
                    self.port_name(t.function, c.port),
                    place(c.place),
                    self.loc(c.span, ctx)
                );
            }
            for r in &t.responses {
                let _ = writeln!(
                    self.out,
                    "      response {} to {}{}",
                    self.port_name(t.function, r.port),
                    self.port_name(t.function, r.to),
                    self.loc(r.span, ctx)
                );
            }
            for &e in &t.eureka_ports {
                let _ = writeln!(self.out, "      eureka {}", self.port_name(t.function, e));
            }
            if let Some(c) = t.condition {
                let _ = writeln!(self.out, "      condition c{}", c.0);
            }
            for &(v, r) in &t.place_map {
                // The virtual place is the child net's.
                let child = match self.b.functions.get(t.function.index()).map(|f| &f.body) {
                    Some(Body::Net(n)) => n.places.get(v.index()).map(|p| word(&p.name)),
                    _ => None,
                };
                let v = match child {
                    Some(n) => format!("p{} {n}", v.0),
                    None => format!("p{}", v.0),
                };
                let _ = writeln!(self.out, "      place-map {v} -> {}", place(r));
            }
            self.requires("      ", &t.requires);
            self.properties("      ", &t.properties);
        }
    }

    fn function(&mut self, id: usize, func: &Function) {
        let ctx = Some(func.span.file);
        let _ = writeln!(
            self.out,
            "{}",
            format!(
                "function {}",
                self.function_label(crate::FunctionId(id as u32))
            ) + &self.loc(func.span, None)
        );
        let places = match &func.body {
            Body::Net(n) => Some(&n.places),
            _ => None,
        };
        for p in &func.ports {
            let place = match p.place {
                Some(id) => match places.and_then(|ps| ps.get(id.index())) {
                    Some(pl) => format!(" = p{} {}", id.0, word(&pl.name)),
                    None => format!(" = p{}", id.0),
                },
                None => String::new(),
            };
            let _ = writeln!(
                self.out,
                "  {} {} : {}{place}{}",
                dir_name(p.dir),
                word(&p.name),
                self.ty(&p.ty),
                self.loc(p.span, ctx)
            );
        }
        self.requires("  ", &func.requires);
        self.properties("  ", &func.properties);
        for m in &func.memory_buffers {
            let align = m
                .alignment
                .map(|c| format!(" alignment c{}", c.0))
                .unwrap_or_default();
            let _ = writeln!(
                self.out,
                "  memory-buffer {} size c{}{align}{}{}",
                word(&m.name),
                m.size.0,
                flags(&[(m.read_only, "read_only")]),
                self.loc(m.span, ctx)
            );
        }
        for t in &func.memory_transfers {
            let _ = writeln!(
                self.out,
                "  {} global c{} local c{}{}{}",
                transfer_name(t.kind),
                t.global.0,
                t.local.0,
                flags(&[
                    (t.allow_empty_ranges, "allow_empty_ranges"),
                    (t.not_modified_in_module_call, "not_modified_in_module_call"),
                ]),
                self.loc(t.span, ctx)
            );
        }
        match &func.body {
            Body::Expression(c) => {
                let _ = writeln!(self.out, "  expression c{}", c.0);
            }
            Body::Module(m) => self.module(m, ctx),
            Body::Modules {
                preferences,
                modules,
            } => {
                let prefs: Vec<String> = preferences.iter().map(|p| word(p)).collect();
                let _ = writeln!(self.out, "  modules preferences {}", prefs.join(" "));
                for m in modules {
                    self.module(m, ctx);
                }
            }
            Body::Net(n) => self.net(n),
        }
    }

    fn code(&mut self, id: usize, code: &Code) {
        let ctx = Some(code.span.file);
        let names = Names::new(code);
        let _ = writeln!(
            self.out,
            "code c{id} {} : {}{}",
            quote(&code.name),
            self.ty(&code.result),
            self.loc(code.span, None)
        );
        for (i, slot) in code.slots.iter().enumerate() {
            let kind = match slot.kind {
                SlotKind::Port => "port",
                SlotKind::Local => "local",
            };
            let _ = writeln!(
                self.out,
                "  slot {i} {kind} {} : {}",
                word(&slot.name),
                self.ty(&slot.ty)
            );
        }
        for (i, v) in code.consts.iter().enumerate() {
            let _ = writeln!(self.out, "  const {i} {}", value_text(v));
        }
        for (i, path) in code.paths.iter().enumerate() {
            let fields: Vec<String> = path.iter().map(|f| word(f)).collect();
            let _ = writeln!(self.out, "  path {i} {}", fields.join(" ").trim_end());
        }
        if !code.reads.is_empty() {
            let names: Vec<String> = code.reads.iter().map(|&s| names.slot(s)).collect();
            let _ = writeln!(self.out, "  reads {}", names.join(" "));
        }
        let width = code.instrs.len().saturating_sub(1).to_string().len();
        for (i, instr) in code.instrs.iter().enumerate() {
            let span = code.spans.get(i).copied().unwrap_or_default();
            let _ = writeln!(
                self.out,
                "  {i:>width$}  {}{}",
                names.instr(instr),
                self.loc(span, ctx)
            );
        }
        if code.spans.len() != code.instrs.len() {
            // Validation rejects this; print what there is so that it shows.
            let _ = writeln!(
                self.out,
                "  # {} spans for {} instructions",
                code.spans.len(),
                code.instrs.len()
            );
        }
    }
}

/// The first index of each slot name, constant and field path of a code, so that printing a
/// code is not quadratic in its size.
pub(super) struct Names<'a> {
    code: &'a Code,
    slots: HashMap<&'a str, u16>,
    consts: BTreeMap<&'a Value, u32>,
    paths: BTreeMap<&'a [String], u32>,
}

impl<'a> Names<'a> {
    pub(super) fn new(code: &'a Code) -> Names<'a> {
        let mut n = Names {
            code,
            slots: HashMap::new(),
            consts: BTreeMap::new(),
            paths: BTreeMap::new(),
        };
        for (i, s) in code.slots.iter().enumerate() {
            if let Ok(i) = u16::try_from(i) {
                n.slots.entry(&s.name).or_insert(i);
            }
        }
        for (i, v) in code.consts.iter().enumerate() {
            n.consts.entry(v).or_insert(i as u32);
        }
        for (i, p) in code.paths.iter().enumerate() {
            n.paths.entry(p).or_insert(i as u32);
        }
        n
    }

    /// A slot operand: its name when that names it, else `slot#N`.
    pub(super) fn slot(&self, s: u16) -> String {
        match self.code.slots.get(usize::from(s)) {
            Some(slot)
                if is_word(&slot.name)
                    && !slot.name.contains('.')
                    && self.slots.get(slot.name.as_str()) == Some(&s) =>
            {
                slot.name.clone()
            }
            _ => format!("slot#{s}"),
        }
    }

    fn path(&self, s: u16, p: u32) -> String {
        let slot = self.slot(s);
        match self.code.paths.get(p as usize) {
            Some(path)
                if !path.is_empty()
                    && path.iter().all(|f| is_word(f) && !f.contains('.'))
                    && self.paths.get(&path[..]) == Some(&p) =>
            {
                format!("{slot}.{}", path.join("."))
            }
            _ => format!("{slot} path#{p}"),
        }
    }

    fn constant(&self, c: u32) -> String {
        match self.code.consts.get(c as usize) {
            Some(v) if self.consts.get(v) == Some(&c) => {
                let t = value_text(v);
                if t.contains(" @") {
                    format!("const#{c}")
                } else {
                    t
                }
            }
            _ => format!("const#{c}"),
        }
    }

    fn shared(&self, c: u32) -> String {
        match self.code.consts.get(c as usize) {
            Some(v @ Value::String(s)) if is_word(s) && self.consts.get(v) == Some(&c) => {
                format!("shared_{s}")
            }
            _ => format!("const#{c}"),
        }
    }

    /// One instruction of the text form, as `mnemonic operands` (also the bytecode
    /// listing's, `Display for Code`).
    pub(super) fn instr(&self, i: &Instr) -> String {
        let (m, arg) = match *i {
            Instr::Const(c) => ("const".to_string(), self.constant(c)),
            Instr::Load(s) => ("load".to_string(), self.slot(s)),
            Instr::LoadPath(s, p) => ("load".to_string(), self.path(s, p)),
            Instr::Store(s) => ("store".to_string(), self.slot(s)),
            Instr::StorePath(s, p) => ("store".to_string(), self.path(s, p)),
            Instr::Dup => ("dup".to_string(), String::new()),
            Instr::Pop => ("pop".to_string(), String::new()),
            Instr::Unary(op, t) => (with_ty(unary_mnemonic(op), t), String::new()),
            Instr::Binary(op, t) => (with_ty(binary_mnemonic(op), t), String::new()),
            Instr::Call(f) => ("call".to_string(), f.name().to_string()),
            Instr::MakeShared(c) => ("make_shared".to_string(), self.shared(c)),
            Instr::Jump(t) => ("jump".to_string(), format!("-> {t}")),
            Instr::JumpIfFalseElsePop(t) => {
                ("jump_if_false_else_pop".to_string(), format!("-> {t}"))
            }
            Instr::JumpIfTrueElsePop(t) => ("jump_if_true_else_pop".to_string(), format!("-> {t}")),
        };
        if arg.is_empty() {
            m
        } else {
            format!("{m:<11} {arg}")
        }
    }
}

fn with_ty(name: &str, t: crate::OpTy) -> String {
    match op_ty_name(t) {
        Some(t) => format!("{name}.{t}"),
        None => name.to_string(),
    }
}

/// The whole bundle in the text form.
pub(super) fn bundle_text(b: &Bundle) -> String {
    let mut p = P {
        b,
        out: String::new(),
    };
    let root = p.function_label(b.root);
    let _ = writeln!(p.out, "bundle root {root}");
    for (i, f) in b.files.iter().enumerate() {
        let lines: Vec<String> = f.line_starts.iter().map(|l| l.to_string()).collect();
        let _ = writeln!(
            p.out,
            "file {i} {} lines {}",
            quote(&f.path),
            lines.join(" ")
        );
    }
    for (i, s) in b.structs.iter().enumerate() {
        let mut line = String::from("struct ");
        write_struct_body(&mut line, s, &b.structs[..i]);
        let _ = writeln!(p.out, "{line}");
    }
    for (id, func) in b.functions.iter().enumerate() {
        let _ = writeln!(p.out);
        p.function(id, func);
    }
    for (id, code) in b.codes.iter().enumerate() {
        let _ = writeln!(p.out);
        p.code(id, code);
    }
    p.out
}
