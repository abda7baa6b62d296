//! Text forms of the IR (`--emit=ir`, `Display for Bundle`) and of the bytecode
//! (`--emit=bytecode`, [`bytecode_listing`]).
//!
//! # The IR text form
//!
//! `Display for Bundle` prints everything a bundle holds, and [`parse`] reads it back
//! (print -> parse gives an equal bundle; tests/tests/ir_text.rs checks this for every example
//! and corpus net). It is line-based, one item per line; indentation is only for people:
//!
//! ```text
//! bundle root f1 main
//! file 0 "net.xpnet" lines 0 8 16
//! struct point { x: long, y: long }
//!
//! function f0 step  @ net.xpnet:5:3-9:12
//!   inout n : long  @ 6:5-6:30
//!   expression c0
//!
//! function f1 main  @ net.xpnet:1:1-12:9
//!   in n : long = p0 n
//!   net
//!     place p0 n : long  @ net.xpnet:2:5-40
//!       token 3L
//!     transition t0 step priority 0 -> f0 step  @ net.xpnet:4:5-10:18
//!       in n <- p0 n
//!       out n -> p0 n
//!       condition c1
//!
//! code c0 "expression of step" : long  @ net.xpnet:7:7-30
//!   slot 0 port n : long
//!   const 0 1L
//!   0  load        n  @ 7:7-8
//!   1  const       1L
//!   2  add.long
//!   3  store       n
//! ```
//!
//! - Ids (`f0`, `p0`, `t0`, `c0`, slot/const/path/instruction numbers) count up in order; a
//!   name after a referenced id (`p0 n`, `f0 step`) is a label for people and is not read.
//! - Names print bare when they are words (letters, digits, `_.-/+$`), else quoted with
//!   escapes. Values print in literal syntax when that reads back as the same value (see
//!   `pnet_stdlib::literal`), else as `postcard(HEX)` (NaN, infinities, ...). Types print as
//!   in xpnet (`unsigned long`, `list<long>`, `map<int, any>`, `shared_P`); a struct type
//!   prints by name when the `struct` table holds it, else inline (`struct p { x: long }`).
//! - Locations (`@ ...` at the end of a line) are `PATH:LINE:COL-[LINE:]COL` (one-based
//!   columns in bytes; the end is exclusive), without `PATH:` when the file is that of the
//!   enclosing function, transition or code; `#FILE:START..END` (byte offsets) when no file
//!   table entry gives them. A missing location is the default span; the `file` lines (path
//!   and line starts) are optional too, so hand-written nets can leave both out.
//! - Ports of connections, responses and eureka lines, slots in instructions and reads,
//!   constants and field paths are written by name or value when that names them, else as
//!   `port#N`, `slot#N`, `const#N`, `path#N`.
//! - Lines starting with `# ` are comments.
//! - For hand-written nets (`tests/data/engine/*.ir`): the `file` lines and locations may be
//!   left out (the default span), and so may a code's `const` and `path` lines (instructions
//!   that name a constant or a field path add it to the table).
//!
//! Lossy: a module signature whose names hold blanks, commas or parentheses does not read
//! back (C++ identifiers never do).
//!
//! # The bytecode listing
//!
//! [`bytecode_listing`] and `Display for Code` are for people only (names, no tables); an
//! instruction is printed as in the text form (`slot#N`, `const#N`, `path#N` where a name,
//! a literal or a field path would not say which one is meant).

mod print;
mod read;
mod syntax;

use std::fmt::{self, Display, Formatter, Write};

use pnet_stdlib::{BinOp, UnOp};

pub use read::parse;
pub use syntax::TextError;

use crate::bytecode::{Code, OpTy, SlotKind};
use crate::ir::{Bundle, SourceSpan};

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
        // The operands as the IR text form prints them (one printer: `print::Names`).
        let names = print::Names::new(self);
        if !self.reads.is_empty() {
            let reads: Vec<String> = self.reads.iter().map(|&s| names.slot(s)).collect();
            writeln!(f, "  reads {}", reads.join(", "))?;
        }
        let width = self.instrs.len().saturating_sub(1).to_string().len();
        for (i, instr) in self.instrs.iter().enumerate() {
            writeln!(f, "  {i:>width$}  {}", names.instr(instr))?;
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
}

impl Display for Bundle {
    /// The IR text form (see the module documentation); [`parse`] reads it back.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&print::bundle_text(self))
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use pnet_stdlib::{Builtin, Type, Value};

    use super::*;
    use crate::bytecode::{Instr, Slot};
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
              21  load        n path#5
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
            file 0 "net.xpnet" lines 0 8 16 17 24 34 43 48
            struct point { x: long, y: long }

            function f0 main  @ net.xpnet:1:1-2
              inout n : long = p0 n  @ 1:1-2
              net
                place p0 n : long  @ net.xpnet:2:3-4
                  token 3L
                  token 4L
                place p1 cleanup : long shared_sink  @ net.xpnet:2:3-4
                transition t0 step priority 1 produce_shared -> f1 step  @ net.xpnet:5:7-8
                  in n <- p0 n  @ 1:1-2
                  out n -> p0 n  @ 1:1-2
                  out s -> p9  @ 1:1-2
                  condition c1
                transition t1 call priority 0 -> f2  @ net.xpnet:8:3-4
                  read n <- p0 n  @ 1:1-2
                  out-many port#7 -> p1 cleanup  @ 1:1-2
                  response r to n  @ 1:1-2
                  eureka r
                  property k = "v \"q\""

            function f1 step  @ net.xpnet:6:7-8
              inout n : long  @ 1:1-2
              out s : shared_cleanup  @ 1:1-2
              expression c0

            function f2  @ net.xpnet:8:13-14
              in n : long  @ 1:1-2
              out r : long  @ 1:1-2
              require gpu
              require fast optional
              property fhg.drts.schedule.num_worker = "2"
              memory-buffer buf size c1 read_only  @ 1:1-2
              memory-get global c1 local c1 not_modified_in_module_call  @ 1:1-2
              module lib "r run (n)" target gpu pass_context  @ 1:1-2
                eureka-group c1
                cinclude "x.hpp"
                cxx "-O2"
                code "int a;\nint b;\n"

            code c0 "expression of step" : long  @ net.xpnet:1:1-2
              slot 0 port n : long
              slot 1 port s : shared_cleanup
              slot 2 local z : any
              const 0 1L
              const 1 true
              const 2 "cleanup"
              path 0 a b
              reads n
               0  load        n  @ 1:1-2
               1  const       1L  @ 1:1-2
               2  add.long  @ 1:1-2
               3  dup  @ 1:1-2
               4  store       z.a.b  @ 1:1-2
               5  load        z.a.b  @ 1:1-2
               6  const       1L  @ 1:1-2
               7  lt.long  @ 1:1-2
               8  jump_if_false_else_pop -> 11  @ 1:1-2
               9  load        n  @ 1:1-2
              10  not  @ 1:1-2
              11  jump_if_true_else_pop -> 13  @ 1:1-2
              12  const       true  @ 1:1-2
              13  pop  @ 1:1-2
              14  load        n  @ 1:1-2
              15  call        abs  @ 1:1-2
              16  make_shared shared_cleanup  @ 1:1-2
              17  store       s  @ 1:1-2
              18  jump        -> 19  @ 1:1-2
              19  load        slot#9  @ 1:1-2
              20  const       const#7  @ 1:1-2
              21  load        n path#5  @ 1:1-2

            code c1 "condition of step" : long  @ net.xpnet:1:1-2
              slot 0 port n : long
              slot 1 port s : shared_cleanup
              slot 2 local z : any
              const 0 1L
              const 1 true
              const 2 "cleanup"
              path 0 a b
              reads n
              0  load        n  @ 1:1-2
              1  const       1L  @ 1:1-2
              2  add.long  @ 1:1-2
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
              21  load        n path#5

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
