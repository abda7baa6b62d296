//! Local variables of expressions: inlay hints after the target of each assignment to a local
//! (`${x} := ...`, `${s.f} := ...`), its type (`: long`), as the expression's type check
//! gives it (a local has the type of its first assignment; ports get theirs from the `${...}`
//! reference hints, `tokens::inlay_hints`); and a local's definition, its first assignment.

use std::path::Path;

use pnet_sema::expr::{Env, Mode, PortDir, PortSig, lower};
use pnet_stdlib::Type;
use pnet_syntax::expr::{self, Expr, ExprKind};

use crate::analysis::Analysis;
use crate::features::{Loc, NearScopes};
use crate::tokens::expression_texts;

/// `(offset, label)`: after each assignment target that is a local variable in `start..end`,
/// its type.
pub fn local_hints(a: &Analysis, path: &Path, start: u32, end: u32) -> Vec<(u32, String)> {
    let (Some(doc), Some(l)) = (a.docs.get(path), a.locate(path).into_iter().next()) else {
        return Vec::new();
    };
    // the places and transitions in the range only, parsed alone
    let Some(root) = a.root_in(l, Some((start, end))) else {
        return Vec::new();
    };
    // built at the first text in the range
    let mut index = None;
    // a port's direction does not change the locals' types: every port may be read and
    // assigned (the type check's diagnostics are not wanted here)
    let dir = PortDir::InOut;
    let mut out = Vec::new();
    for text in expression_texts(&root) {
        let whole = text.whole();
        if whole.end < start || whole.start > end || !text.text.contains(":=") {
            continue;
        }
        let index = index.get_or_insert_with(|| NearScopes::new(a, l, start, end));
        let Some(scope) = index.at(whole.start, whole.end) else {
            continue;
        };
        let ports: Vec<PortSig> = scope
            .ports
            .iter()
            .map(|p| PortSig {
                name: p.name.clone(),
                dir,
                ty: p.ty.clone().unwrap_or(Type::Any),
            })
            .collect();
        let (tree, _) = expr::parse(text);
        let env = Env {
            ports: &ports,
            mode: Mode::Expression,
            name: String::new(),
            expected: None,
        };
        let (code, _) = lower(&tree, &env);
        let locals: Vec<(&str, &Type)> = code
            .slots
            .iter()
            .skip(ports.len())
            .map(|s| (s.name.as_str(), &s.ty))
            .collect();
        tree.walk(&mut |e: &Expr| {
            let ExprKind::Assign { target, .. } = &e.kind else {
                return;
            };
            let Some(&(_, ty)) = target
                .first()
                .and_then(|root| locals.iter().find(|(n, _)| *n == root.name))
            else {
                return;
            };
            let mut ty = ty.clone();
            for seg in &target[1..] {
                ty = match &ty {
                    Type::Struct(st) => match st.fields.iter().find(|(n, _)| **n == *seg.name) {
                        Some((_, t)) => t.clone(),
                        None => return,
                    },
                    _ => return,
                };
            }
            // after the reference's `}`
            let Some(last) = target.last() else {
                return;
            };
            let after = last.span.end as usize;
            let Some(close) = doc.text.get(after..).and_then(|s| s.find('}')) else {
                return;
            };
            let at = (after + close + 1) as u32;
            if (start..=end).contains(&at) {
                let name = match &ty {
                    Type::Struct(st) => st.name.to_string(),
                    t => t.to_string(),
                };
                out.push((at, format!(": {name}")));
            }
        });
    }
    out
}

/// For a `${name...}` of a local variable at `offset`: the target of its first assignment in
/// the same expression text (`None` for a port, or outside a reference).
pub fn local_definition(a: &Analysis, path: &Path, offset: u32) -> Option<Loc> {
    let l = a.locate(path).into_iter().next()?;
    let root = a.root_in(l, Some((offset, offset)))?;
    let text = expression_texts(&root).into_iter().find(|t| {
        let w = t.whole();
        w.start <= offset && offset <= w.end
    })?;
    let (tree, _) = expr::parse(text);
    let mut name = None;
    tree.walk(&mut |e: &Expr| {
        let path = match &e.kind {
            ExprKind::Ref(p) => p,
            ExprKind::Assign { target, .. } => target,
            _ => return,
        };
        if let (Some(root), Some(last)) = (path.first(), path.last())
            && root.span.start <= offset
            && offset <= last.span.end
        {
            name = Some(root.name.clone());
        }
    });
    let name = name?;
    let (start, end) = (text.whole().start, text.whole().end);
    let scopes = NearScopes::new(a, l, start, end);
    let scope = scopes.at(start, end);
    if scope.is_some_and(|s| s.ports.iter().any(|p| p.name == name)) {
        return None;
    }
    // its first assignment in the text
    let mut assigned = Vec::new();
    tree.walk(&mut |e: &Expr| {
        if let ExprKind::Assign { target, .. } = &e.kind
            && target.first().is_some_and(|r| r.name == name)
        {
            assigned.push(target[0].span);
        }
    });
    let span = assigned.into_iter().min_by_key(|s| s.start)?;
    Some(Loc {
        path: path.to_path_buf(),
        start: span.start,
        end: span.end,
    })
}
