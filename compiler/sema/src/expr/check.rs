//! Type checking and constant folding: turns the AST into a typed tree ([`Node`]) with
//! constant subtrees replaced by their values, resolving references to slots.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use pnet_stdlib::ops::{eval_binary, eval_unary, type_binary, type_unary};
use pnet_stdlib::{BinOp, Builtin, EvalError, Shared, Type, UnOp, Value};
use pnet_syntax::expr::{Expr, ExprKind, Ident};
use pnet_syntax::{Diagnostic, Span};

use super::types::{anonymous_struct, common_type, compatible, type_name};
use super::{Mode, PortSig};

/// A typed, folded expression.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub kind: NodeKind,
    pub ty: Type,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub(crate) enum NodeKind {
    Const(Value),
    /// Read slot `slot`, or the field at `path` inside it.
    Load {
        slot: u16,
        path: Vec<Arc<str>>,
    },
    /// Assign `value` to the slot (or the field at `path`); the node's value is `value`'s.
    Store {
        slot: u16,
        path: Vec<Arc<str>>,
        value: Box<Node>,
    },
    Unary(UnOp, Box<Node>),
    /// Binary operator; `Or`/`And` short-circuit.
    Binary(BinOp, Box<Node>, Box<Node>),
    /// A right-associative operator whose operands have effects or may both fail: the right
    /// operand is evaluated first and parked in slot `temp`.
    RightFirst {
        op: BinOp,
        temp: u16,
        lhs: Box<Node>,
        rhs: Box<Node>,
    },
    Call(Builtin, Vec<Node>),
    Shared(Arc<str>, Box<Node>),
    /// At least two statements; all but the last are evaluated for their effects.
    Seq(Vec<Node>),
    /// Something that had an error (already reported).
    Poison,
}

impl Node {
    fn new(kind: NodeKind, ty: Type, span: Span) -> Node {
        Node { kind, ty, span }
    }

    fn poison(span: Span) -> Node {
        Node::new(NodeKind::Poison, Type::Any, span)
    }

    fn is_poison(&self) -> bool {
        matches!(self.kind, NodeKind::Poison)
    }

    pub fn as_const(&self) -> Option<&Value> {
        match &self.kind {
            NodeKind::Const(v) => Some(v),
            _ => None,
        }
    }

    /// Whether evaluating the node may fail (conservatively: anything but a constant or a
    /// plain read of a slot).
    fn may_fail(&self) -> bool {
        !matches!(&self.kind, NodeKind::Const(_) | NodeKind::Poison)
            && !matches!(&self.kind, NodeKind::Load { path, .. } if path.is_empty())
    }

    /// Whether evaluating the node assigns anything.
    pub fn has_effects(&self) -> bool {
        match &self.kind {
            NodeKind::Const(_) | NodeKind::Load { .. } | NodeKind::Poison => false,
            NodeKind::Store { .. } | NodeKind::RightFirst { .. } => true,
            NodeKind::Unary(_, e) | NodeKind::Shared(_, e) => e.has_effects(),
            NodeKind::Binary(_, a, b) => a.has_effects() || b.has_effects(),
            NodeKind::Call(_, es) | NodeKind::Seq(es) => es.iter().any(Node::has_effects),
        }
    }
}

/// A local variable (or a compiler temporary) and its static type.
#[derive(Clone, Debug)]
pub(crate) struct Local {
    pub name: String,
    pub ty: Type,
}

pub(crate) struct Checker<'a> {
    pub ports: &'a [PortSig],
    pub mode: Mode,
    /// Locals in order of creation: slot `ports.len() + i`.
    pub locals: Vec<Local>,
    /// Per port: the field paths assigned to it (an empty path: the whole port).
    pub assigned: Vec<Vec<Vec<Arc<str>>>>,
    pub diags: Vec<Diagnostic>,
    /// Checking a token value (for messages).
    pub constant: bool,
}

fn ref_text(path: &[Ident]) -> String {
    let names: Vec<&str> = path.iter().map(|i| i.name.as_str()).collect();
    format!("${{{}}}", names.join("."))
}

fn path_span(path: &[Ident], whole: Span) -> Span {
    match (path.first(), path.last()) {
        (Some(a), Some(b)) => a.span.to(b.span),
        _ => whole,
    }
}

/// The type of field `name` inside a value of type `ty`.
enum Field {
    Found(Type),
    NotAStruct,
    Missing,
}

fn field_of(ty: &Type, name: &str) -> Field {
    match ty {
        Type::Any => Field::Found(Type::Any),
        Type::Struct(s) => match s.fields.iter().find(|(f, _)| &**f == name) {
            Some((_, t)) => Field::Found(t.clone()),
            None => Field::Missing,
        },
        _ => Field::NotAStruct,
    }
}

impl<'a> Checker<'a> {
    pub fn new(ports: &'a [PortSig], mode: Mode) -> Checker<'a> {
        Checker {
            ports,
            mode,
            locals: Vec::new(),
            assigned: vec![Vec::new(); ports.len()],
            diags: Vec::new(),
            constant: false,
        }
    }

    fn error(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) {
        self.diags
            .push(Diagnostic::error(code, message).with_primary(span, label));
    }

    /// `unknown_field` for `field` of `path` (of type `ty`), with the nearest field's name.
    fn unknown_field(&mut self, path: &[Ident], ty: &Type, field: &Ident) {
        let help = match ty {
            Type::Struct(s) => {
                pnet_stdlib::suggest::nearest(&field.name, s.fields.iter().map(|(n, _)| &**n))
                    .map(|n| format!("help: did you mean `{n}`?"))
            }
            _ => None,
        };
        self.diags.push(
            Diagnostic::error(
                "unknown_field",
                format!(
                    "`{}` (type `{}`) has no field `{}`",
                    ref_text(path),
                    type_name(ty),
                    field.name
                ),
            )
            .with_primary(field.span, "no such field")
            .with_notes(help),
        );
    }

    fn port_index(&self, name: &str) -> Option<usize> {
        self.ports.iter().position(|p| p.name == name)
    }

    fn local_index(&self, name: &str) -> Option<usize> {
        self.locals.iter().position(|l| l.name == name)
    }

    fn local_slot(&self, i: usize) -> u16 {
        (self.ports.len() + i) as u16
    }

    /// Allocates a compiler temporary (a local no program can name).
    fn temp(&mut self, ty: Type) -> u16 {
        let n = self
            .locals
            .iter()
            .filter(|l| l.name.starts_with('%'))
            .count();
        self.locals.push(Local {
            name: format!("%{n}"),
            ty,
        });
        self.local_slot(self.locals.len() - 1)
    }

    pub fn check(&mut self, e: &Expr) -> Node {
        match &e.kind {
            ExprKind::Literal(v) => Node::new(NodeKind::Const(v.clone()), v.ty(), e.span),
            ExprKind::Error => Node::poison(e.span),
            ExprKind::Ref(path) => self.check_ref(path, e.span),
            ExprKind::Assign { target, value } => self.check_assign(target, value, e.span),
            ExprKind::Unary(op, a) => {
                let a = self.check(a);
                self.unary(*op, a, e.span)
            }
            ExprKind::Binary(op, a, b) => self.check_binary(*op, e.op_text(*op), a, b, e.span),
            ExprKind::Call(f, args) => {
                let args: Vec<Node> = args.iter().map(|a| self.check(a)).collect();
                self.call(*f, args, e.span)
            }
            ExprKind::Shared(place, inner) => {
                let inner = self.check(inner);
                let name: Arc<str> = Arc::from(place.name.as_str());
                let ty = Type::Shared(name.clone());
                match inner.as_const() {
                    Some(v) => {
                        let v = Value::Shared(Box::new(Shared {
                            place: name,
                            value: v.clone(),
                        }));
                        Node::new(NodeKind::Const(v), ty, e.span)
                    }
                    None => Node::new(NodeKind::Shared(name, Box::new(inner)), ty, e.span),
                }
            }
            ExprKind::List(es) => {
                let Some(elems) = self.constant_elements(es, "list") else {
                    return Node::poison(e.span);
                };
                let ty = Type::List(Box::new(common_type(elems.iter().map(|(_, t)| t))));
                let v = Value::List(elems.into_iter().map(|(v, _)| v).collect());
                Node::new(NodeKind::Const(v), ty, e.span)
            }
            ExprKind::Set(es) => {
                let Some(elems) = self.constant_elements(es, "set") else {
                    return Node::poison(e.span);
                };
                let ty = Type::Set(Box::new(common_type(elems.iter().map(|(_, t)| t))));
                let v = Value::Set(elems.into_iter().map(|(v, _)| v).collect::<BTreeSet<_>>());
                Node::new(NodeKind::Const(v), ty, e.span)
            }
            ExprKind::Map(kvs) => {
                let keys: Vec<&Expr> = kvs.iter().map(|(k, _)| k).collect();
                let vals: Vec<&Expr> = kvs.iter().map(|(_, v)| v).collect();
                let keys = self.constant_elements(keys, "map");
                let vals = self.constant_elements(vals, "map");
                let (Some(keys), Some(vals)) = (keys, vals) else {
                    return Node::poison(e.span);
                };
                let ty = Type::Map(
                    Box::new(common_type(keys.iter().map(|(_, t)| t))),
                    Box::new(common_type(vals.iter().map(|(_, t)| t))),
                );
                let v = Value::Map(
                    keys.into_iter()
                        .map(|(k, _)| k)
                        .zip(vals.into_iter().map(|(v, _)| v))
                        .collect::<BTreeMap<_, _>>(),
                );
                Node::new(NodeKind::Const(v), ty, e.span)
            }
            ExprKind::Struct(fields) => {
                let exprs: Vec<&Expr> = fields.iter().map(|(_, v)| v).collect();
                let vals = self.constant_elements(exprs, "struct");
                // The parser reports duplicate fields (`duplicate_field`).
                let ok = fields
                    .iter()
                    .enumerate()
                    .all(|(i, (n, _))| fields[..i].iter().all(|(m, _)| m.name != n.name));
                let Some(vals) = vals else {
                    return Node::poison(e.span);
                };
                if !ok {
                    return Node::poison(e.span);
                }
                let mut tys = Vec::new();
                let mut vs = Vec::new();
                for ((name, _), (v, t)) in fields.iter().zip(vals) {
                    let n: Arc<str> = Arc::from(name.name.as_str());
                    tys.push((n.clone(), t));
                    vs.push((n, v));
                }
                Node::new(
                    NodeKind::Const(Value::Struct(vs)),
                    anonymous_struct(tys),
                    e.span,
                )
            }
            ExprKind::Seq(stmts) => {
                let nodes: Vec<Node> = stmts.iter().map(|s| self.check(s)).collect();
                seq(nodes, e.span)
            }
        }
    }

    /// Checks the elements of a collection literal, which must be constants.
    fn constant_elements<'e>(
        &mut self,
        es: impl IntoIterator<Item = &'e Expr>,
        what: &str,
    ) -> Option<Vec<(Value, Type)>> {
        let mut out = Vec::new();
        let mut ok = true;
        for e in es {
            let n = self.check(e);
            match n.kind {
                NodeKind::Const(v) => out.push((v, n.ty)),
                NodeKind::Poison => ok = false,
                // The parser reports elements that are not literals (`non_literal_element`).
                _ if !is_literal(e) => ok = false,
                _ => {
                    ok = false;
                    self.error(
                        "non_constant_element",
                        format!("the elements of a {what} literal must be constants"),
                        n.span,
                        "not a constant",
                    );
                }
            }
        }
        ok.then_some(out)
    }

    fn check_ref(&mut self, path: &[Ident], span: Span) -> Node {
        let Some(root) = path.first() else {
            return Node::poison(span);
        };
        let (slot, mut ty) = if let Some(i) = self.port_index(&root.name) {
            let port = &self.ports[i];
            let readable = match self.mode {
                Mode::Condition => port.dir.is_input() || port.dir == pnet_bundle::PortDir::Tunnel,
                Mode::Expression => {
                    port.dir.is_input()
                        || port.dir == pnet_bundle::PortDir::Tunnel
                        || !self.assigned[i].is_empty()
                }
                Mode::Value => true,
            };
            if !readable {
                if self.mode == Mode::Condition {
                    self.error(
                        "output_port_in_condition",
                        format!(
                            "`{}` is an output port; a condition sees only input and tunnel ports",
                            root.name
                        ),
                        path_span(path, span),
                        "output port",
                    );
                } else {
                    self.error(
                        "read_before_assignment",
                        format!("output port `{}` is read before it is assigned", root.name),
                        path_span(path, span),
                        "not assigned yet",
                    );
                }
                return Node::poison(span);
            }
            (i as u16, port.ty.clone())
        } else if let Some(i) = self.local_index(&root.name) {
            (self.local_slot(i), self.locals[i].ty.clone())
        } else {
            let why = if self.constant {
                "a constant expression can only read variables it assigned before"
            } else {
                "not a port, and not assigned before"
            };
            let msg = format!("unknown variable `{}`: {why}", root.name);
            let names = self
                .ports
                .iter()
                .map(|p| p.name.as_str())
                .chain(self.locals.iter().map(|l| l.name.as_str()))
                .filter(|n| !n.starts_with('%'));
            let help = pnet_stdlib::suggest::nearest(&root.name, names)
                .map(|n| format!("help: did you mean `${{{n}}}`?"));
            self.diags.push(
                Diagnostic::error("unknown_variable", msg)
                    .with_primary(root.span, "read before any assignment")
                    .with_notes(help),
            );
            return Node::poison(span);
        };
        for (k, field) in path.iter().enumerate().skip(1) {
            match field_of(&ty, &field.name) {
                Field::Found(t) => ty = t,
                Field::NotAStruct => {
                    self.error(
                        "not_a_struct",
                        format!(
                            "`{}` has type `{}`, which has no fields",
                            ref_text(&path[..k]),
                            type_name(&ty)
                        ),
                        field.span,
                        format!("field `{}` of a non-struct", field.name),
                    );
                    return Node::poison(span);
                }
                Field::Missing => {
                    self.unknown_field(&path[..k], &ty, field);
                    return Node::poison(span);
                }
            }
        }
        let path = path[1..]
            .iter()
            .map(|i| Arc::from(i.name.as_str()))
            .collect();
        Node::new(NodeKind::Load { slot, path }, ty, span)
    }

    fn check_assign(&mut self, target: &[Ident], value: &Expr, span: Span) -> Node {
        let value = self.check(value);
        let Some(root) = target.first() else {
            return value;
        };
        let tspan = path_span(target, span);
        let fields: Vec<Arc<str>> = target[1..]
            .iter()
            .map(|i| Arc::from(i.name.as_str()))
            .collect();
        let poisoned = matches!(value.kind, NodeKind::Poison);
        let slot = if let Some(i) = self.port_index(&root.name) {
            match self.mode {
                Mode::Condition => {
                    self.error(
                        "assignment_in_condition",
                        format!("a condition cannot assign the port `{}`", root.name),
                        tspan,
                        "port assigned",
                    );
                    return Node::poison(span);
                }
                Mode::Value => {
                    self.error(
                        "assignment_to_port",
                        format!("this expression cannot assign the port `{}`", root.name),
                        tspan,
                        "port assigned",
                    );
                    return Node::poison(span);
                }
                Mode::Expression => {}
            }
            let port_ty = self.ports[i].ty.clone();
            // Recorded even when the path is bad, so that no `missing_binding` follows.
            self.assigned[i].push(fields.clone());
            let Some(declared) = self.declared_field(&port_ty, target) else {
                return Node::poison(span);
            };
            if !poisoned && !compatible(&value.ty, &declared) {
                self.diags.push(
                    Diagnostic::error(
                        "type_mismatch",
                        format!(
                            "`{}` has type `{}`, but the assigned value has type `{}`",
                            ref_text(target),
                            type_name(&declared),
                            type_name(&value.ty)
                        ),
                    )
                    .with_primary(value.span, format!("this is `{}`", type_name(&value.ty)))
                    .with_secondary(tspan, format!("expects `{}`", type_name(&declared)))
                    .with_notes(literal_help(&value, &declared)),
                );
            }
            i as u16
        } else if let Some(i) = self.local_index(&root.name) {
            let old = self.locals[i].ty.clone();
            if fields.is_empty() {
                if !poisoned && !compatible(&value.ty, &old) {
                    self.diags.push(
                        Diagnostic::error(
                            "type_mismatch",
                            format!(
                                "variable `{}` has type `{}`, but the assigned value has type `{}`",
                                root.name,
                                type_name(&old),
                                type_name(&value.ty)
                            ),
                        )
                        .with_primary(value.span, format!("this is `{}`", type_name(&value.ty)))
                        .with_note("a local variable keeps the type of its first assignment")
                        .with_notes(literal_help(&value, &old)),
                    );
                }
            } else if let Some(ty) = self.with_field(&old, target, 1, &value) {
                self.locals[i].ty = ty;
            } else {
                return Node::poison(span);
            }
            self.local_slot(i)
        } else {
            let ty = if fields.is_empty() {
                value.ty.clone()
            } else {
                nested_struct(&fields, value.ty.clone())
            };
            self.locals.push(Local {
                name: root.name.clone(),
                ty,
            });
            self.local_slot(self.locals.len() - 1)
        };
        let ty = value.ty.clone();
        Node::new(
            NodeKind::Store {
                slot,
                path: fields,
                value: Box::new(value),
            },
            ty,
            span,
        )
    }

    /// The declared type of the field a port assignment targets; reports paths through
    /// non-structs and unknown fields.
    fn declared_field(&mut self, port_ty: &Type, target: &[Ident]) -> Option<Type> {
        let mut ty = port_ty.clone();
        for (k, field) in target.iter().enumerate().skip(1) {
            match field_of(&ty, &field.name) {
                Field::Found(t) => ty = t,
                Field::NotAStruct => {
                    self.error(
                        "not_a_struct",
                        format!(
                            "cannot assign a field of `{}`: its type `{}` is not a struct",
                            ref_text(&target[..k]),
                            type_name(&ty)
                        ),
                        field.span,
                        "field of a non-struct",
                    );
                    return None;
                }
                Field::Missing => {
                    self.unknown_field(&target[..k], &ty, field);
                    return None;
                }
            }
        }
        Some(ty)
    }

    /// The type of local `target[0]` (now `ty`) after assigning `value` to the field path
    /// `target[k..]`: existing fields keep their type, missing ones are appended.
    fn with_field(&mut self, ty: &Type, target: &[Ident], k: usize, value: &Node) -> Option<Type> {
        let Some(field) = target.get(k) else {
            if !matches!(value.kind, NodeKind::Poison) && !compatible(&value.ty, ty) {
                self.diags.push(
                    Diagnostic::error(
                        "type_mismatch",
                        format!(
                            "`{}` has type `{}`, but the assigned value has type `{}`",
                            ref_text(target),
                            type_name(ty),
                            type_name(&value.ty)
                        ),
                    )
                    .with_primary(value.span, format!("this is `{}`", type_name(&value.ty)))
                    .with_notes(literal_help(value, ty)),
                );
            }
            return Some(ty.clone());
        };
        match ty {
            Type::Any => Some(Type::Any),
            Type::Struct(s) => {
                let mut fields = s.fields.clone();
                match fields.iter().position(|(f, _)| **f == *field.name) {
                    Some(i) => {
                        let t = fields[i].1.clone();
                        fields[i].1 = self.with_field(&t, target, k + 1, value)?;
                    }
                    None => {
                        let rest: Vec<Arc<str>> = target[k + 1..]
                            .iter()
                            .map(|i| Arc::from(i.name.as_str()))
                            .collect();
                        fields.push((
                            Arc::from(field.name.as_str()),
                            nested_struct(&rest, value.ty.clone()),
                        ));
                    }
                }
                if fields == s.fields {
                    Some(ty.clone())
                } else {
                    Some(anonymous_struct(fields))
                }
            }
            _ => {
                self.error(
                    "not_a_struct",
                    format!(
                        "cannot assign a field of `{}`: its type `{}` is not a struct",
                        ref_text(&target[..k]),
                        type_name(ty)
                    ),
                    field.span,
                    "field of a non-struct",
                );
                None
            }
        }
    }

    /// Unary operators. As in GPI-Space, an operator on a constant is evaluated before it is
    /// typed: the static argument kinds apply only where a port or a local is involved (`!0`
    /// is the bitwise complement -1; `!${i}` with an int port is a type error).
    fn unary(&mut self, op: UnOp, a: Node, span: Span) -> Node {
        if a.is_poison() {
            return Node::poison(span);
        }
        let typed = type_unary(op, &a.ty);
        if let Some(v) = a.as_const()
            && let Some(node) = self.fold(eval_unary(op, v), &typed, span)
        {
            return node;
        }
        let ty = match typed {
            Ok(t) => t,
            Err(err) => return self.type_error(err.message, span),
        };
        Node::new(NodeKind::Unary(op, Box::new(a)), ty, span)
    }

    /// A `type_error` at `span`; the result is poison, so that the enclosing operators do not
    /// report again.
    fn type_error(&mut self, message: String, span: Span) -> Node {
        self.diags
            .push(Diagnostic::error("type_error", message.clone()).with_primary(span, message));
        Node::poison(span)
    }

    /// The `type_error` of a binary operation, out of line: `check_binary` recurses once per
    /// nesting level, and its frame stays small (deep expressions on a 2 MiB stack).
    #[cold]
    #[inline(never)]
    fn binary_type_error(
        &mut self,
        op: BinOp,
        written: &str,
        message: String,
        a: &Node,
        b: &Node,
        span: Span,
    ) {
        // The stdlib quotes the operator's symbol; the user may have written its word.
        let message = if written == op.symbol() {
            message
        } else {
            message.replace(&format!("`{}`", op.symbol()), &format!("`{written}`"))
        };
        let mut d = Diagnostic::error("type_error", message.clone()).with_primary(span, message);
        if a.ty != b.ty {
            d = d
                .with_secondary(a.span, format!("this is `{}`", type_name(&a.ty)))
                .with_secondary(b.span, format!("this is `{}`", type_name(&b.ty)));
            // One constant operand of another numeric type: its literal in the type of the
            // other (`${n} + 1` with a long `n`: `1L`).
            let help = match (a.as_const(), b.as_const()) {
                (None, Some(_)) => literal_help(b, &a.ty),
                (Some(_), None) => literal_help(a, &b.ty),
                _ => None,
            };
            d = d.with_notes(help);
        }
        self.diags.push(d);
    }

    /// `written`: the operator as written (`:eq:` or `==`), which messages quote.
    fn check_binary(&mut self, op: BinOp, written: &str, a: &Expr, b: &Expr, span: Span) -> Node {
        // Right-associative operators evaluate their right operand first.
        let right_first = matches!(op, BinOp::Pow | BinOp::IntPow);
        let (a, b) = if right_first {
            let b = self.check(b);
            (self.check(a), b)
        } else {
            let a = self.check(a);
            (a, self.check(b))
        };
        if a.is_poison() || b.is_poison() {
            return Node::poison(span);
        }
        let typed = type_binary(op, &a.ty, &b.ty);
        // Constants first (see `unary`): `'a' + 'b'` = "ab".
        if let (Some(va), Some(vb)) = (a.as_const(), b.as_const())
            && let Some(node) = self.fold(eval_binary(op, va, vb), &typed, span)
        {
            return node;
        }
        let ty = match typed {
            Ok(t) => t,
            Err(err) => {
                self.binary_type_error(op, written, err.message, &a, &b, span);
                return Node::poison(span);
            }
        };
        if matches!(op, BinOp::Or | BinOp::And) {
            // `true || x` and `false && x` never evaluate `x`; `false || x` and `true && x`
            // are `x` when `x` is known to be a bool.
            if let Some(Value::Bool(l)) = a.as_const() {
                if *l == (op == BinOp::Or) {
                    return konst(Value::Bool(*l), ty, span);
                }
                if b.ty == Type::Bool {
                    return b;
                }
            }
        }
        // The order shows when an operand assigns, or when both may fail (which error is
        // reported): `(${a} div ${z}) ^ (${a} - ${b})` reports the subtraction's.
        if right_first && (a.has_effects() || b.has_effects() || (a.may_fail() && b.may_fail())) {
            let temp = self.temp(b.ty.clone());
            return Node::new(
                NodeKind::RightFirst {
                    op,
                    temp,
                    lhs: Box::new(a),
                    rhs: Box::new(b),
                },
                ty,
                span,
            );
        }
        Node::new(NodeKind::Binary(op, Box::new(a), Box::new(b)), ty, span)
    }

    fn call(&mut self, f: Builtin, args: Vec<Node>, span: Span) -> Node {
        if args.len() != f.arity() {
            self.error(
                "wrong_arity",
                format!(
                    "`{}` takes {} argument(s), not {}",
                    f.name(),
                    f.arity(),
                    args.len()
                ),
                span,
                "wrong number of arguments",
            );
            return Node::poison(span);
        }
        if args.iter().any(Node::is_poison) {
            return Node::poison(span);
        }
        let tys: Vec<Type> = args.iter().map(|a| a.ty.clone()).collect();
        let typed = f.check(&tys);
        // Constants first (see `unary`): `sin (3)`, `int (true)`, `min ("b", "a")`.
        let consts: Option<Vec<Value>> = args.iter().map(|a| a.as_const().cloned()).collect();
        if let Some(vs) = consts
            && let Some(node) = self.fold(f.eval(&vs), &typed, span)
        {
            return node;
        }
        let ty = match typed {
            Ok(t) => t,
            Err(err) => return self.type_error(err.message, span),
        };
        Node::new(NodeKind::Call(f, args), ty, span)
    }

    /// The outcome of evaluating an operation on constants, before its static typing
    /// `typed` decides anything: the folded constant; poison after a reported evaluation
    /// error when the operands do not type either; `None` to go on (the operation stays in
    /// the code after an evaluation error of well-typed operands, or gets its type error
    /// when the constants do not fit the operation at all).
    fn fold<E>(
        &mut self,
        evaluated: Result<Value, EvalError>,
        typed: &Result<Type, E>,
        span: Span,
    ) -> Option<Node> {
        match evaluated {
            Ok(v) => {
                let ty = typed.as_ref().map_or_else(|_| v.ty(), Type::clone);
                Some(konst(v, ty, span))
            }
            Err(err) if typed.is_ok() || !is_type_mismatch(&err) => {
                self.eval_error(err, span);
                typed.is_err().then(|| Node::poison(span))
            }
            Err(_) => None,
        }
    }

    fn eval_error(&mut self, err: EvalError, span: Span) {
        self.error(
            "constant_evaluation",
            format!("evaluating this constant expression fails: {err}"),
            span,
            err.to_string(),
        );
    }
}

/// `help: write `100L`` when `value` is a constant number that `ty` can hold (the literal
/// with the suffix of `ty`); for a constant of another kind, what
/// [`pnet_stdlib::suggest::mismatch_hint`] knows (a struct's missing field).
fn literal_help(value: &Node, ty: &Type) -> Option<String> {
    value_help(value.as_const()?, ty)
}

/// [`literal_help`] for a value.
pub(crate) fn value_help(v: &Value, ty: &Type) -> Option<String> {
    if let Some(w) = pnet_stdlib::suggest::number_as(v, ty) {
        return Some(format!("help: write `{w}`"));
    }
    pnet_stdlib::suggest::mismatch_hint(v, ty).map(|h| format!("help: {h}"))
}

/// Elements the parser accepts as literals (it reports the others): literals, collection
/// literals, `shared_P (..)` and negated numbers.
fn is_literal(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Literal(_)
        | ExprKind::List(_)
        | ExprKind::Set(_)
        | ExprKind::Map(_)
        | ExprKind::Struct(_)
        | ExprKind::Shared(..)
        | ExprKind::Error => true,
        ExprKind::Unary(UnOp::Neg, inner) => matches!(inner.kind, ExprKind::Literal(_)),
        _ => false,
    }
}

/// A constant node; the value's own type refines a statically unknown one.
/// Whether a constant's evaluation failed for its operands' types (then the static type
/// error says more), not for their values (`sqrt (-4)`).
fn is_type_mismatch(err: &EvalError) -> bool {
    matches!(err, EvalError::TypeMismatch(_))
}

fn konst(v: Value, ty: Type, span: Span) -> Node {
    let ty = if ty == Type::Any { v.ty() } else { ty };
    Node::new(NodeKind::Const(v), ty, span)
}

/// `Struct [f1 := Struct [f2 := .. ty]]` as a type.
fn nested_struct(fields: &[Arc<str>], ty: Type) -> Type {
    fields
        .iter()
        .rev()
        .fold(ty, |t, f| anonymous_struct(vec![(f.clone(), t)]))
}

/// A statement sequence: statements without effects whose values are dropped go away.
fn seq(nodes: Vec<Node>, span: Span) -> Node {
    let n = nodes.len();
    let mut kept: Vec<Node> = nodes
        .into_iter()
        .enumerate()
        .filter(|(i, s)| *i + 1 == n || !matches!(s.kind, NodeKind::Const(_) | NodeKind::Poison))
        .map(|(_, s)| s)
        .collect();
    match kept.len() {
        0 => Node::new(NodeKind::Const(Value::Control), Type::Control, span),
        1 => kept.pop().unwrap_or_else(|| Node::poison(span)),
        _ => {
            let ty = kept.last().map(|s| s.ty.clone()).unwrap_or(Type::Any);
            Node::new(NodeKind::Seq(kept), ty, span)
        }
    }
}

/// Whether the assigned `paths` cover every part of a value of type `ty`; if not, the first
/// field path (relative) that is missing.
pub(crate) fn uncovered(ty: &Type, paths: &[&[Arc<str>]]) -> Option<Vec<Arc<str>>> {
    if paths.is_empty() {
        return Some(Vec::new());
    }
    if paths.iter().any(|p| p.is_empty()) {
        return None;
    }
    let Type::Struct(s) = ty else {
        // Only fields of something not known to be a struct were assigned: the run-time type
        // check of the output decides.
        return None;
    };
    for (name, fty) in &s.fields {
        let sub: Vec<&[Arc<str>]> = paths
            .iter()
            .filter(|p| p[0] == *name)
            .map(|p| &p[1..])
            .collect();
        if let Some(mut rest) = uncovered(fty, &sub) {
            rest.insert(0, name.clone());
            return Some(rest);
        }
    }
    None
}
