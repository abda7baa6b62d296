//! Bytecode generation from the typed tree.

use std::sync::Arc;

use pnet_bundle::{Instr, OpTy, SourceFileId, SourceSpan};
use pnet_stdlib::{BinOp, Type, Value};
use pnet_syntax::Span;

use super::check::{Node, NodeKind};

pub(crate) fn source_span(span: Span) -> SourceSpan {
    SourceSpan {
        file: SourceFileId(span.file.0),
        start: span.start,
        end: span.end,
    }
}

#[derive(Default)]
pub(crate) struct Emitter {
    pub instrs: Vec<Instr>,
    pub spans: Vec<SourceSpan>,
    pub consts: Vec<Value>,
    pub paths: Vec<Vec<String>>,
    /// Slots read by `Load`/`LoadPath`.
    pub reads: Vec<u16>,
}

/// The operand type of an operator whose operands have these types.
fn op_ty(a: &Type, b: &Type) -> OpTy {
    if a == b { OpTy::of(a) } else { OpTy::Dyn }
}

impl Emitter {
    fn push(&mut self, i: Instr, span: Span) -> usize {
        self.instrs.push(i);
        self.spans.push(source_span(span));
        self.instrs.len() - 1
    }

    fn konst(&mut self, v: &Value) -> u32 {
        // Same type and equal value: `Value`'s order compares the type first.
        match self.consts.iter().position(|c| c == v && same_shape(c, v)) {
            Some(i) => i as u32,
            None => {
                self.consts.push(v.clone());
                (self.consts.len() - 1) as u32
            }
        }
    }

    fn path(&mut self, p: &[Arc<str>]) -> u32 {
        let p: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        match self.paths.iter().position(|q| *q == p) {
            Some(i) => i as u32,
            None => {
                self.paths.push(p);
                (self.paths.len() - 1) as u32
            }
        }
    }

    fn here(&self) -> u32 {
        self.instrs.len() as u32
    }

    fn patch(&mut self, at: usize, target: u32) {
        self.instrs[at] = match self.instrs[at] {
            Instr::Jump(_) => Instr::Jump(target),
            Instr::JumpIfFalseElsePop(_) => Instr::JumpIfFalseElsePop(target),
            Instr::JumpIfTrueElsePop(_) => Instr::JumpIfTrueElsePop(target),
            other => other,
        };
    }

    /// Emits `n`; leaves its value on the stack iff `want`.
    pub fn emit(&mut self, n: &Node, want: bool) {
        match &n.kind {
            NodeKind::Const(v) => {
                if want {
                    let c = self.konst(v);
                    self.push(Instr::Const(c), n.span);
                }
            }
            NodeKind::Poison => {
                if want {
                    let c = self.konst(&Value::Control);
                    self.push(Instr::Const(c), n.span);
                }
            }
            NodeKind::Load { slot, path } => {
                // A read whose value is dropped has no effect (its errors are static ones).
                if want {
                    if !self.reads.contains(slot) {
                        self.reads.push(*slot);
                    }
                    if path.is_empty() {
                        self.push(Instr::Load(*slot), n.span);
                    } else {
                        let p = self.path(path);
                        self.push(Instr::LoadPath(*slot, p), n.span);
                    }
                }
            }
            NodeKind::Store { slot, path, value } => {
                self.emit(value, true);
                if want {
                    self.push(Instr::Dup, n.span);
                }
                if path.is_empty() {
                    self.push(Instr::Store(*slot), n.span);
                } else {
                    let p = self.path(path);
                    self.push(Instr::StorePath(*slot, p), n.span);
                }
            }
            NodeKind::Unary(op, a) => {
                self.emit(a, true);
                self.push(Instr::Unary(*op, OpTy::of(&a.ty)), n.span);
                self.drop_unless(want, n.span);
            }
            NodeKind::Binary(op @ (BinOp::Or | BinOp::And), a, b) => {
                self.emit(a, true);
                let jump = if *op == BinOp::Or {
                    Instr::JumpIfTrueElsePop(0)
                } else {
                    Instr::JumpIfFalseElsePop(0)
                };
                let at = self.push(jump, n.span);
                self.emit(b, true);
                let end = self.here();
                self.patch(at, end);
                self.drop_unless(want, n.span);
            }
            NodeKind::Binary(op, a, b) => {
                self.emit(a, true);
                self.emit(b, true);
                self.push(Instr::Binary(*op, op_ty(&a.ty, &b.ty)), n.span);
                self.drop_unless(want, n.span);
            }
            NodeKind::RightFirst { op, temp, lhs, rhs } => {
                self.emit(rhs, true);
                self.push(Instr::Store(*temp), n.span);
                self.emit(lhs, true);
                self.push(Instr::Load(*temp), n.span);
                self.push(Instr::Binary(*op, op_ty(&lhs.ty, &rhs.ty)), n.span);
                self.drop_unless(want, n.span);
            }
            NodeKind::Call(f, args) => {
                for a in args {
                    self.emit(a, true);
                }
                self.push(Instr::Call(*f), n.span);
                self.drop_unless(want, n.span);
            }
            NodeKind::Shared(place, e) => {
                self.emit(e, true);
                let c = self.konst(&Value::String(place.clone()));
                self.push(Instr::MakeShared(c), n.span);
                self.drop_unless(want, n.span);
            }
            NodeKind::Seq(stmts) => {
                let last = stmts.len().saturating_sub(1);
                for (i, s) in stmts.iter().enumerate() {
                    self.emit(s, want && i == last);
                }
            }
        }
    }

    /// Jump threading: a conditional jump that lands on a conditional jump of the same kind
    /// (chains like `a || b || c`) goes straight to the final target, because the value it
    /// keeps makes the second jump taken too. Targets only grow, so this terminates.
    pub fn thread_jumps(&mut self) {
        for i in 0..self.instrs.len() {
            let mut instr = self.instrs[i];
            loop {
                let next = match instr {
                    Instr::JumpIfTrueElsePop(t) => match self.instrs.get(t as usize) {
                        Some(Instr::JumpIfTrueElsePop(u)) if *u > t => Instr::JumpIfTrueElsePop(*u),
                        _ => break,
                    },
                    Instr::JumpIfFalseElsePop(t) => match self.instrs.get(t as usize) {
                        Some(Instr::JumpIfFalseElsePop(u)) if *u > t => {
                            Instr::JumpIfFalseElsePop(*u)
                        }
                        _ => break,
                    },
                    _ => break,
                };
                instr = next;
            }
            self.instrs[i] = instr;
        }
    }

    fn drop_unless(&mut self, want: bool, span: Span) {
        if !want {
            self.push(Instr::Pop, span);
        }
    }
}

/// Values that compare equal but print differently (a bitset with trailing zero words) are
/// kept apart, so that listings show what was written.
fn same_shape(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Bitset(x), Value::Bitset(y)) => x == y && x.word_len() == y.word_len(),
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
        _ => true,
    }
}
