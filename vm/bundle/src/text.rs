//! Text forms of the IR (`--emit=ir`) and of the bytecode (`--emit=bytecode`).
//!
//! Both are stable (snapshot tests depend on them) and meant for people: ids are printed as
//! `f0` (functions), `c0` (codes), `p0` (places), `t0` (transitions) next to names, constants
//! in literal syntax, slots and paths by name. Source locations appear only as `file:line`
//! after functions, places and transitions.

use std::fmt::{self, Display, Formatter, Write};

use pnet_stdlib::{BinOp, UnOp};

use crate::bytecode::{Code, Instr, OpTy, SlotKind};
use crate::ir::{
    Body, Bundle, ConnectKind, Function, Module, Net, PortDir, Property, Require, SourceSpan,
    TransferKind,
};

fn op_ty_name(t: OpTy) -> Option<&'static str> {
    Some(match t {
        OpTy::Bool => "bool",
        OpTy::Int => "int",
        OpTy::Long => "long",
        OpTy::UInt => "uint",
        OpTy::ULong => "ulong",
        OpTy::Float => "float",
        OpTy::Double => "double",
        OpTy::Char => "char",
        OpTy::Dyn => return None,
    })
}

/// The mnemonic of a unary operator instruction.
pub fn unary_mnemonic(op: UnOp) -> &'static str {
    match op {
        UnOp::Neg => "neg",
        UnOp::Not => "not",
    }
}

/// The mnemonic of a binary operator instruction.
pub fn binary_mnemonic(op: BinOp) -> &'static str {
    match op {
        BinOp::Or => "or",
        BinOp::And => "and",
        BinOp::BitOr => "bit_or",
        BinOp::BitAnd => "bit_and",
        BinOp::Lt => "lt",
        BinOp::Le => "le",
        BinOp::Gt => "gt",
        BinOp::Ge => "ge",
        BinOp::Eq => "eq",
        BinOp::Ne => "ne",
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::Div => "div",
        BinOp::IntDiv => "int_div",
        BinOp::Mod => "mod",
        BinOp::Pow => "pow",
        BinOp::IntPow => "int_pow",
    }
}

fn with_ty(name: &str, t: OpTy) -> String {
    match op_ty_name(t) {
        Some(t) => format!("{name}.{t}"),
        None => name.to_string(),
    }
}

impl Code {
    fn slot_name(&self, s: u16) -> String {
        match self.slots.get(usize::from(s)) {
            Some(slot) => slot.name.clone(),
            None => format!("slot#{s}"),
        }
    }

    fn const_text(&self, c: u32) -> String {
        match self.consts.get(c as usize) {
            Some(v) => v.to_string(),
            None => format!("const#{c}"),
        }
    }

    fn path_text(&self, s: u16, p: u32) -> String {
        match self.paths.get(p as usize) {
            Some(path) => {
                let mut t = self.slot_name(s);
                for f in path {
                    t.push('.');
                    t.push_str(f);
                }
                t
            }
            None => format!("{}.path#{p}", self.slot_name(s)),
        }
    }

    /// One instruction as `mnemonic operands`.
    pub fn instr_text(&self, i: &Instr) -> String {
        let (m, arg) = match *i {
            Instr::Const(c) => ("const".to_string(), self.const_text(c)),
            Instr::Load(s) => ("load".to_string(), self.slot_name(s)),
            Instr::LoadPath(s, p) => ("load".to_string(), self.path_text(s, p)),
            Instr::Store(s) => ("store".to_string(), self.slot_name(s)),
            Instr::StorePath(s, p) => ("store".to_string(), self.path_text(s, p)),
            Instr::Dup => ("dup".to_string(), String::new()),
            Instr::Pop => ("pop".to_string(), String::new()),
            Instr::Unary(op, t) => (with_ty(unary_mnemonic(op), t), String::new()),
            Instr::Binary(op, t) => (with_ty(binary_mnemonic(op), t), String::new()),
            Instr::Call(f) => ("call".to_string(), f.name().to_string()),
            Instr::MakeShared(c) => {
                let place = match self.consts.get(c as usize) {
                    Some(pnet_stdlib::Value::String(s)) => format!("shared_{s}"),
                    _ => self.const_text(c),
                };
                ("make_shared".to_string(), place)
            }
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

impl Display for Code {
    /// ```text
    /// code "expression of t" : long
    ///   slot 0 port a : long
    ///   slot 1 local x : long
    ///   reads a
    ///   0  load        a
    ///   1  const       1L
    ///   2  add.long
    ///   3  dup
    ///   4  store       x
    /// ```
    ///
    /// Operator mnemonics carry the operand type when it is statically known (`add.long`);
    /// `load`/`store` show field paths (`p.x`); jumps show their target index.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(f, "code {:?} : {}", self.name, self.result)?;
        for (i, slot) in self.slots.iter().enumerate() {
            let kind = match slot.kind {
                SlotKind::Port => "port",
                SlotKind::Local => "local",
            };
            writeln!(f, "  slot {i} {kind} {} : {}", slot.name, slot.ty)?;
        }
        if !self.reads.is_empty() {
            let names: Vec<String> = self.reads.iter().map(|&s| self.slot_name(s)).collect();
            writeln!(f, "  reads {}", names.join(", "))?;
        }
        let width = self.instrs.len().saturating_sub(1).to_string().len();
        for (i, instr) in self.instrs.iter().enumerate() {
            writeln!(f, "  {i:>width$}  {}", self.instr_text(instr))?;
        }
        Ok(())
    }
}

/// Every code of the bundle, as `c<i>: ` followed by its listing (`--emit=bytecode`).
pub fn bytecode_listing(bundle: &Bundle) -> String {
    let mut out = String::new();
    for (i, code) in bundle.codes.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let loc = bundle.line(code.span);
        let _ = writeln!(out, "c{i}: {loc}");
        let _ = write!(out, "{code}");
    }
    out
}

impl Bundle {
    /// `path:line` of a span (the text forms' short location).
    pub fn line(&self, span: SourceSpan) -> String {
        match self.files.get(span.file.index()) {
            Some(f) => format!("{}:{}", f.path, f.line_col(span.start).0),
            None => "<unknown>".to_string(),
        }
    }

    fn function_label(&self, id: crate::FunctionId) -> String {
        match self
            .functions
            .get(id.index())
            .and_then(|f| f.name.as_deref())
        {
            Some(n) => format!("f{} {n}", id.0),
            None => format!("f{}", id.0),
        }
    }
}

fn dir_name(d: PortDir) -> &'static str {
    match d {
        PortDir::In => "in",
        PortDir::Out => "out",
        PortDir::InOut => "inout",
        PortDir::Tunnel => "tunnel",
    }
}

fn write_requires(f: &mut Formatter<'_>, indent: &str, requires: &[Require]) -> fmt::Result {
    for r in requires {
        let m = if r.mandatory { "" } else { " (optional)" };
        writeln!(f, "{indent}require {}{m}", r.key)?;
    }
    Ok(())
}

fn write_properties(f: &mut Formatter<'_>, indent: &str, props: &[Property]) -> fmt::Result {
    for p in props {
        writeln!(f, "{indent}property {} = {:?}", p.key, p.value)?;
    }
    Ok(())
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

struct FunctionText<'a> {
    bundle: &'a Bundle,
    id: usize,
    func: &'a Function,
}

impl FunctionText<'_> {
    fn write_module(&self, f: &mut Formatter<'_>, m: &Module) -> fmt::Result {
        let sig = &m.signature;
        let ret = sig
            .result
            .as_deref()
            .map(|r| format!("{r} "))
            .unwrap_or_default();
        write!(
            f,
            "  module {} \"{ret}{} ({})\"",
            m.name,
            sig.function,
            sig.args.join(", ")
        )?;
        if let Some(t) = &m.target {
            write!(f, " target {t}")?;
        }
        writeln!(
            f,
            "{}",
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
            ])
        )?;
        if let Some(c) = m.eureka_group {
            writeln!(f, "    eureka-group c{}", c.0)?;
        }
        for c in &m.cincludes {
            writeln!(f, "    cinclude {c}")?;
        }
        for c in &m.ld_flags {
            writeln!(f, "    ld {c}")?;
        }
        for c in &m.cxx_flags {
            writeln!(f, "    cxx {c}")?;
        }
        if let Some(code) = &m.code {
            writeln!(f, "    code ({} lines)", code.lines().count())?;
        }
        Ok(())
    }

    fn write_net(&self, f: &mut Formatter<'_>, net: &Net) -> fmt::Result {
        writeln!(f, "  net")?;
        for (i, p) in net.places.iter().enumerate() {
            writeln!(
                f,
                "    place p{i} {} : {}{}  @ {}",
                p.name,
                p.ty,
                flags(&[
                    (p.is_virtual, "virtual"),
                    (p.put_token, "put_token"),
                    (p.shared_sink, "shared_sink"),
                    (p.generator, "generator"),
                ]),
                self.bundle.line(p.span)
            )?;
            for t in &p.tokens {
                writeln!(f, "      token {t}")?;
            }
            write_properties(f, "      ", &p.properties)?;
        }
        let place = |id: crate::PlaceId| match net.places.get(id.index()) {
            Some(p) => format!("p{} {}", id.0, p.name),
            None => format!("p{}", id.0),
        };
        for (i, t) in net.transitions.iter().enumerate() {
            writeln!(
                f,
                "    transition t{i} {} priority {} -> {}{}  @ {}",
                t.name,
                t.priority,
                self.bundle.function_label(t.function),
                flags(&[
                    (t.produce_shared, "produce_shared"),
                    (t.consume_shared, "consume_shared"),
                    (t.passthrough_shared, "passthrough_shared"),
                ]),
                self.bundle.line(t.span)
            )?;
            let callee = self.bundle.functions.get(t.function.index());
            let port = |id: crate::PortId| match callee.and_then(|c| c.ports.get(id.index())) {
                Some(p) => p.name.clone(),
                None => format!("port#{}", id.0),
            };
            for c in &t.connections {
                let (kind, arrow) = match c.kind {
                    ConnectKind::In => ("in", "<-"),
                    ConnectKind::Read => ("read", "<-"),
                    ConnectKind::NumberOfTokens => ("number-of-tokens", "<-"),
                    ConnectKind::Out => ("out", "->"),
                    ConnectKind::OutMany => ("out-many", "->"),
                };
                writeln!(
                    f,
                    "      {kind} {} {arrow} {}",
                    port(c.port),
                    place(c.place)
                )?;
            }
            for r in &t.responses {
                writeln!(f, "      response {} to {}", port(r.port), port(r.to))?;
            }
            for e in &t.eureka_ports {
                writeln!(f, "      eureka {}", port(*e))?;
            }
            if let Some(c) = t.condition {
                writeln!(f, "      condition c{}", c.0)?;
            }
            for (v, r) in &t.place_map {
                let child = match callee.map(|c| &c.body) {
                    Some(Body::Net(n)) => match n.places.get(v.index()) {
                        Some(p) => format!("p{} {}", v.0, p.name),
                        None => format!("p{}", v.0),
                    },
                    _ => format!("p{}", v.0),
                };
                writeln!(f, "      place-map {child} -> {}", place(*r))?;
            }
            write_requires(f, "      ", &t.requires)?;
            write_properties(f, "      ", &t.properties)?;
        }
        Ok(())
    }
}

impl Display for FunctionText<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let func = self.func;
        let name = func
            .name
            .as_deref()
            .map(|n| format!(" {n}"))
            .unwrap_or_default();
        writeln!(
            f,
            "function f{}{name}  @ {}",
            self.id,
            self.bundle.line(func.span)
        )?;
        let places = match &func.body {
            Body::Net(n) => Some(n),
            _ => None,
        };
        for p in &func.ports {
            write!(f, "  {} {} : {}", dir_name(p.dir), p.name, p.ty)?;
            if let Some(pl) = p.place {
                match places.and_then(|n| n.places.get(pl.index())) {
                    Some(place) => write!(f, " = p{} {}", pl.0, place.name)?,
                    None => write!(f, " = p{}", pl.0)?,
                }
            }
            writeln!(f)?;
        }
        write_requires(f, "  ", &func.requires)?;
        write_properties(f, "  ", &func.properties)?;
        for b in &func.memory_buffers {
            write!(f, "  memory-buffer {} size c{}", b.name, b.size.0)?;
            if let Some(a) = b.alignment {
                write!(f, " alignment c{}", a.0)?;
            }
            writeln!(f, "{}", flags(&[(b.read_only, "read_only")]))?;
        }
        for t in &func.memory_transfers {
            let kind = match t.kind {
                TransferKind::Get => "memory-get",
                TransferKind::Put => "memory-put",
                TransferKind::GetPut => "memory-getput",
            };
            writeln!(
                f,
                "  {kind} global c{} local c{}{}",
                t.global.0,
                t.local.0,
                flags(&[
                    (t.allow_empty_ranges, "allow_empty_ranges"),
                    (t.not_modified_in_module_call, "not_modified_in_module_call"),
                ])
            )?;
        }
        match &func.body {
            Body::Expression(c) => writeln!(f, "  expression c{}", c.0),
            Body::Module(m) => self.write_module(f, m),
            Body::Modules {
                preferences,
                modules,
            } => {
                writeln!(f, "  modules preferences ({})", preferences.join(", "))?;
                modules.iter().try_for_each(|m| self.write_module(f, m))
            }
            Body::Net(n) => self.write_net(f, n),
        }
    }
}

impl Display for Bundle {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(f, "bundle root {}", self.function_label(self.root))?;
        for s in &self.structs {
            let fields: Vec<String> = s.fields.iter().map(|(n, t)| format!("{n}: {t}")).collect();
            writeln!(f, "struct {} {{ {} }}", s.name, fields.join(", "))?;
        }
        for (id, func) in self.functions.iter().enumerate() {
            writeln!(f)?;
            write!(
                f,
                "{}",
                FunctionText {
                    bundle: self,
                    id,
                    func
                }
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use pnet_stdlib::{Builtin, Type, Value};

    use super::*;
    use crate::bytecode::Slot;
    use crate::ir::*;

    fn span(start: u32) -> SourceSpan {
        SourceSpan {
            file: SourceFileId(0),
            start,
            end: start + 1,
        }
    }

    fn code() -> Code {
        Code {
            name: "expression of step".into(),
            instrs: vec![
                Instr::Load(0),
                Instr::Const(0),
                Instr::Binary(BinOp::Add, OpTy::Long),
                Instr::Dup,
                Instr::StorePath(2, 0),
                Instr::LoadPath(2, 0),
                Instr::Const(0),
                Instr::Binary(BinOp::Lt, OpTy::Long),
                Instr::JumpIfFalseElsePop(11),
                Instr::Load(0),
                Instr::Unary(UnOp::Not, OpTy::Dyn),
                Instr::JumpIfTrueElsePop(13),
                Instr::Const(1),
                Instr::Pop,
                Instr::Load(0),
                Instr::Call(Builtin::Abs),
                Instr::MakeShared(2),
                Instr::Store(1),
                Instr::Jump(19),
                Instr::Load(9),
                Instr::Const(7),
                Instr::LoadPath(0, 5),
            ],
            spans: vec![span(0); 22],
            consts: vec![Value::Long(1), Value::Bool(true), Value::string("cleanup")],
            paths: vec![vec!["a".into(), "b".into()]],
            slots: vec![
                Slot {
                    name: "n".into(),
                    kind: SlotKind::Port,
                    ty: Type::Long,
                },
                Slot {
                    name: "s".into(),
                    kind: SlotKind::Port,
                    ty: Type::Shared("cleanup".into()),
                },
                Slot {
                    name: "z".into(),
                    kind: SlotKind::Local,
                    ty: Type::Any,
                },
            ],
            reads: vec![0],
            result: Type::Long,
            span: span(0),
        }
    }

    #[test]
    fn code_listing() {
        expect![[r#"
            code "expression of step" : long
              slot 0 port n : long
              slot 1 port s : shared_cleanup
              slot 2 local z : any
              reads n
               0  load        n
               1  const       1L
               2  add.long
               3  dup
               4  store       z.a.b
               5  load        z.a.b
               6  const       1L
               7  lt.long
               8  jump_if_false_else_pop -> 11
               9  load        n
              10  not
              11  jump_if_true_else_pop -> 13
              12  const       true
              13  pop
              14  load        n
              15  call        abs
              16  make_shared shared_cleanup
              17  store       s
              18  jump        -> 19
              19  load        slot#9
              20  const       const#7
              21  load        n.path#5
        "#]]
        .assert_eq(&code().to_string());
    }

    #[test]
    fn bundle_ir_and_bytecode() {
        let port = |name: &str, dir, ty, place| Port {
            name: name.into(),
            dir,
            ty,
            place,
            span: span(0),
        };
        let expr_fn = Function {
            name: Some("step".into()),
            ports: vec![
                port("n", PortDir::InOut, Type::Long, None),
                port("s", PortDir::Out, Type::Shared("cleanup".into()), None),
            ],
            body: Body::Expression(CodeId(0)),
            requires: vec![],
            properties: vec![],
            memory_buffers: vec![],
            memory_transfers: vec![],
            span: span(40),
        };
        let module = Module {
            name: "lib".into(),
            signature: Signature {
                result: Some("r".into()),
                function: "run".into(),
                args: vec!["n".into()],
            },
            target: Some("gpu".into()),
            pass_context: true,
            require_function_unloads_without_rest: false,
            require_module_unloads_without_rest: false,
            eureka_group: Some(CodeId(1)),
            cincludes: vec!["x.hpp".into()],
            ld_flags: vec![],
            cxx_flags: vec!["-O2".into()],
            code: Some("int a;\nint b;\n".into()),
            span: span(0),
        };
        let mod_fn = Function {
            name: None,
            ports: vec![
                port("n", PortDir::In, Type::Long, None),
                port("r", PortDir::Out, Type::Long, None),
            ],
            body: Body::Module(module),
            requires: vec![
                Require {
                    key: "gpu".into(),
                    mandatory: true,
                },
                Require {
                    key: "fast".into(),
                    mandatory: false,
                },
            ],
            properties: vec![Property {
                key: "fhg.drts.schedule.num_worker".into(),
                value: "2".into(),
            }],
            memory_buffers: vec![MemoryBuffer {
                name: "buf".into(),
                read_only: true,
                size: CodeId(1),
                alignment: None,
                span: span(0),
            }],
            memory_transfers: vec![MemoryTransfer {
                kind: TransferKind::Get,
                global: CodeId(1),
                local: CodeId(1),
                allow_empty_ranges: false,
                not_modified_in_module_call: true,
                span: span(0),
            }],
            span: span(60),
        };
        let place = |name: &str, ty, tokens| Place {
            name: name.into(),
            ty,
            is_virtual: false,
            put_token: false,
            shared_sink: false,
            generator: false,
            tokens,
            properties: vec![],
            span: span(10),
        };
        let mut cleanup = place("cleanup", Type::Long, vec![]);
        cleanup.shared_sink = true;
        let net = Net {
            places: vec![
                place("n", Type::Long, vec![Value::Long(3), Value::Long(4)]),
                cleanup,
            ],
            transitions: vec![
                Transition {
                    name: "step".into(),
                    priority: 1,
                    function: FunctionId(1),
                    connections: vec![
                        Connection {
                            kind: ConnectKind::In,
                            port: PortId(0),
                            place: PlaceId(0),
                            span: span(0),
                        },
                        Connection {
                            kind: ConnectKind::Out,
                            port: PortId(0),
                            place: PlaceId(0),
                            span: span(0),
                        },
                        Connection {
                            kind: ConnectKind::Out,
                            port: PortId(1),
                            place: PlaceId(9),
                            span: span(0),
                        },
                    ],
                    responses: vec![],
                    eureka_ports: vec![],
                    condition: Some(CodeId(1)),
                    place_map: vec![],
                    requires: vec![],
                    properties: vec![],
                    produce_shared: true,
                    consume_shared: false,
                    passthrough_shared: false,
                    span: span(30),
                },
                Transition {
                    name: "call".into(),
                    priority: 0,
                    function: FunctionId(2),
                    connections: vec![
                        Connection {
                            kind: ConnectKind::Read,
                            port: PortId(0),
                            place: PlaceId(0),
                            span: span(0),
                        },
                        Connection {
                            kind: ConnectKind::OutMany,
                            port: PortId(7),
                            place: PlaceId(1),
                            span: span(0),
                        },
                    ],
                    responses: vec![Response {
                        port: PortId(1),
                        to: PortId(0),
                        span: span(0),
                    }],
                    eureka_ports: vec![PortId(1)],
                    condition: None,
                    place_map: vec![],
                    requires: vec![],
                    properties: vec![Property {
                        key: "k".into(),
                        value: "v \"q\"".into(),
                    }],
                    produce_shared: false,
                    consume_shared: false,
                    passthrough_shared: false,
                    span: span(50),
                },
            ],
        };
        let root = Function {
            name: Some("main".into()),
            ports: vec![port("n", PortDir::InOut, Type::Long, Some(PlaceId(0)))],
            body: Body::Net(net),
            requires: vec![],
            properties: vec![],
            memory_buffers: vec![],
            memory_transfers: vec![],
            span: span(0),
        };
        let mut cond = code();
        cond.name = "condition of step".into();
        cond.instrs.truncate(3);
        cond.spans.truncate(3);
        let bundle = Bundle {
            root: FunctionId(0),
            functions: vec![root, expr_fn, mod_fn],
            codes: vec![code(), cond],
            structs: vec![pnet_stdlib::StructType {
                name: "point".into(),
                fields: vec![("x".into(), Type::Long), ("y".into(), Type::Long)],
            }],
            files: vec![SourceFile::new(
                "net.xpnet",
                "<defun>\n  <net>\n\n</net>\n  <defun>\n</defun>\n<x/>\n",
            )],
        };
        expect![[r#"
            bundle root f0 main
            struct point { x: long, y: long }

            function f0 main  @ net.xpnet:1
              inout n : long = p0 n
              net
                place p0 n : long  @ net.xpnet:2
                  token 3L
                  token 4L
                place p1 cleanup : long shared_sink  @ net.xpnet:2
                transition t0 step priority 1 -> f1 step produce_shared  @ net.xpnet:5
                  in n <- p0 n
                  out n -> p0 n
                  out s -> p9
                  condition c1
                transition t1 call priority 0 -> f2  @ net.xpnet:8
                  read n <- p0 n
                  out-many port#7 -> p1 cleanup
                  response r to n
                  eureka r
                  property k = "v \"q\""

            function f1 step  @ net.xpnet:6
              inout n : long
              out s : shared_cleanup
              expression c0

            function f2  @ net.xpnet:8
              in n : long
              out r : long
              require gpu
              require fast (optional)
              property fhg.drts.schedule.num_worker = "2"
              memory-buffer buf size c1 read_only
              memory-get global c1 local c1 not_modified_in_module_call
              module lib "r run (n)" target gpu pass_context
                eureka-group c1
                cinclude x.hpp
                cxx -O2
                code (2 lines)
        "#]]
        .assert_eq(&bundle.to_string());
        expect![[r#"
            c0: net.xpnet:1
            code "expression of step" : long
              slot 0 port n : long
              slot 1 port s : shared_cleanup
              slot 2 local z : any
              reads n
               0  load        n
               1  const       1L
               2  add.long
               3  dup
               4  store       z.a.b
               5  load        z.a.b
               6  const       1L
               7  lt.long
               8  jump_if_false_else_pop -> 11
               9  load        n
              10  not
              11  jump_if_true_else_pop -> 13
              12  const       true
              13  pop
              14  load        n
              15  call        abs
              16  make_shared shared_cleanup
              17  store       s
              18  jump        -> 19
              19  load        slot#9
              20  const       const#7
              21  load        n.path#5

            c1: net.xpnet:1
            code "condition of step" : long
              slot 0 port n : long
              slot 1 port s : shared_cleanup
              slot 2 local z : any
              reads n
              0  load        n
              1  const       1L
              2  add.long
        "#]]
        .assert_eq(&bytecode_listing(&bundle));
    }
}
