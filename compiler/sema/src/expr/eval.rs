//! A direct evaluator of the typed tree, for token values that are not plain constants
//! (`${x} := 1L; ${x} + 1L`). Token values have no ports: slots are locals only.

use std::sync::Arc;

use pnet_stdlib::ops::{eval_binary, eval_unary};
use pnet_stdlib::{BinOp, EvalError, Shared, Value};
use pnet_syntax::Span;

use super::check::{Node, NodeKind};

type Result<T> = std::result::Result<T, (EvalError, Span)>;

pub(crate) fn eval(node: &Node, nslots: usize) -> Result<Value> {
    let mut slots = vec![None; nslots];
    Eval { slots: &mut slots }.eval(node)
}

struct Eval<'a> {
    slots: &'a mut Vec<Option<Value>>,
}

fn other(msg: String, span: Span) -> (EvalError, Span) {
    (EvalError::Other(msg), span)
}

/// The field at `path` inside `v`.
fn get_path<'v>(v: &'v Value, path: &[Arc<str>]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, f| match v {
        Value::Struct(fields) => fields.iter().find(|(n, _)| n == f).map(|(_, v)| v),
        _ => None,
    })
}

/// Sets the field at `path` inside `v`, creating structs and fields as needed.
fn set_path(v: &mut Value, path: &[Arc<str>], x: Value) -> bool {
    let Some((first, rest)) = path.split_first() else {
        *v = x;
        return true;
    };
    let Value::Struct(fields) = v else {
        return false;
    };
    let i = match fields.iter().position(|(n, _)| n == first) {
        Some(i) => i,
        None => {
            fields.push((first.clone(), Value::Struct(Vec::new())));
            fields.len() - 1
        }
    };
    set_path(&mut fields[i].1, rest, x)
}

impl Eval<'_> {
    fn eval(&mut self, n: &Node) -> Result<Value> {
        match &n.kind {
            NodeKind::Const(v) => Ok(v.clone()),
            NodeKind::Poison => Err(other(
                "an erroneous expression cannot be evaluated".into(),
                n.span,
            )),
            NodeKind::Load { slot, path } => {
                let root = self.slots.get(usize::from(*slot)).and_then(Option::as_ref);
                root.and_then(|v| get_path(v, path))
                    .cloned()
                    .ok_or_else(|| other("read of a variable without a value".into(), n.span))
            }
            NodeKind::Store { slot, path, value } => {
                let x = self.eval(value)?;
                let Some(cell) = self.slots.get_mut(usize::from(*slot)) else {
                    return Err(other("bad slot".into(), n.span));
                };
                let root = cell.get_or_insert_with(|| Value::Struct(Vec::new()));
                if !set_path(root, path, x.clone()) {
                    return Err(other(
                        "assignment to a field of a non-struct".into(),
                        n.span,
                    ));
                }
                Ok(x)
            }
            NodeKind::Unary(op, a) => {
                let a = self.eval(a)?;
                eval_unary(*op, &a).map_err(|e| (e, n.span))
            }
            NodeKind::Binary(op @ (BinOp::Or | BinOp::And), a, b) => {
                let a = self.eval(a)?;
                match a {
                    Value::Bool(x) if x == (*op == BinOp::Or) => Ok(a),
                    Value::Bool(_) => self.eval(b),
                    _ => Err((
                        EvalError::TypeMismatch(format!("`{}` needs bool operands", op.symbol())),
                        n.span,
                    )),
                }
            }
            NodeKind::Binary(op, a, b) => {
                let a = self.eval(a)?;
                let b = self.eval(b)?;
                eval_binary(*op, &a, &b).map_err(|e| (e, n.span))
            }
            NodeKind::RightFirst { op, lhs, rhs, .. } => {
                let b = self.eval(rhs)?;
                let a = self.eval(lhs)?;
                eval_binary(*op, &a, &b).map_err(|e| (e, n.span))
            }
            NodeKind::Call(f, args) => {
                let vs = args
                    .iter()
                    .map(|a| self.eval(a))
                    .collect::<Result<Vec<_>>>()?;
                f.eval(&vs).map_err(|e| (e, n.span))
            }
            NodeKind::Shared(place, e) => {
                let value = self.eval(e)?;
                Ok(Value::Shared(Box::new(Shared {
                    place: place.clone(),
                    value,
                })))
            }
            NodeKind::Seq(stmts) => {
                let mut last = Value::Control;
                for s in stmts {
                    last = self.eval(s)?;
                }
                Ok(last)
            }
        }
    }
}
