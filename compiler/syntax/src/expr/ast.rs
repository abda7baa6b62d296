//! The expression AST. Spans are file spans (already mapped through [`crate::span::MappedText`]).

use pnet_stdlib::{BinOp, Builtin, UnOp, Value};

use crate::Span;

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
    /// For a `Binary` node: its operator was written in its word form (`:eq:`, `:lt:`,
    /// `:and:`, ...), which messages quote as written (see [`word_form`]).
    pub word_op: bool,
}

/// The word form of a binary operator (`:eq:` for `==`), if it has one.
pub fn word_form(op: BinOp) -> Option<&'static str> {
    Some(match op {
        BinOp::Or => ":or:",
        BinOp::And => ":and:",
        BinOp::Lt => ":lt:",
        BinOp::Le => ":le:",
        BinOp::Gt => ":gt:",
        BinOp::Ge => ":ge:",
        BinOp::Eq => ":eq:",
        BinOp::Ne => ":ne:",
        _ => return None,
    })
}

impl Expr {
    /// How the operator of this `Binary` node was written: its word form or its symbol.
    pub fn op_text(&self, op: BinOp) -> &'static str {
        match word_form(op) {
            Some(w) if self.word_op => w,
            _ => op.symbol(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A scalar literal, a bitset `{..}` or bytearray `y(..)` literal, `[]`, `true`, `pi`, `e`.
    Literal(Value),
    /// `${a.b.c}`: the root name and the field path (at least one element).
    Ref(Vec<Ident>),
    /// `target := value`; the parser only builds it with a `Ref` target (anything else is a
    /// diagnostic and an `Error` node).
    Assign {
        target: Vec<Ident>,
        value: Box<Expr>,
    },
    Unary(UnOp, Box<Expr>),
    /// Every binary operator, `||`/`&&` included (they short-circuit when evaluated).
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// A built-in function applied to exactly `arity` arguments.
    Call(Builtin, Vec<Expr>),
    /// `shared_P (e)`: the place name `P` and the wrapped expression.
    Shared(Ident, Box<Expr>),
    /// `List (e, ...)`
    List(Vec<Expr>),
    /// `Set {e, ...}`
    Set(Vec<Expr>),
    /// `Map [k -> v, ...]`
    Map(Vec<(Expr, Expr)>),
    /// `Struct [f := e, ...]`
    Struct(Vec<(Ident, Expr)>),
    /// Statements separated by `;`. An empty program is `Seq(vec![])` (its value is control).
    Seq(Vec<Expr>),
    /// Something that did not parse; a diagnostic was reported for it.
    Error,
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr {
            kind,
            span,
            word_op: false,
        }
    }

    /// Visits this expression and every subexpression, parents before children.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Expr)) {
        f(self);
        match &self.kind {
            ExprKind::Literal(_) | ExprKind::Ref(_) | ExprKind::Error => {}
            ExprKind::Assign { value, .. } => value.walk(f),
            ExprKind::Unary(_, e) | ExprKind::Shared(_, e) => e.walk(f),
            ExprKind::Binary(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            ExprKind::Call(_, es) | ExprKind::List(es) | ExprKind::Set(es) | ExprKind::Seq(es) => {
                es.iter().for_each(|e| e.walk(f))
            }
            ExprKind::Map(kvs) => kvs.iter().for_each(|(k, v)| {
                k.walk(f);
                v.walk(f);
            }),
            ExprKind::Struct(fs) => fs.iter().for_each(|(_, e)| e.walk(f)),
        }
    }
}
