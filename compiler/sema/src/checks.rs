//! The check of one expression or condition text: parsing it, typing and lowering it.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pnet_bundle::{Code, SourceFileId, SourceSpan};
use pnet_stdlib::{BinOp, Type};
use pnet_syntax::Diagnostic;
use pnet_syntax::Span;
use pnet_syntax::expr::{Expr, ExprKind};
use pnet_syntax::span::MappedText;

use crate::expr::{Env, Mode, PortSig};

/// Parses an expression text: the expression, whether it has errors, and the diagnostics.
/// A panic in the parser becomes an `internal_error`.
pub fn parse_expr_diags(text: &MappedText) -> (Expr, bool, Vec<Diagnostic>) {
    let r = catch_unwind(AssertUnwindSafe(|| pnet_syntax::expr::parse(text)));
    match r {
        Ok((e, ds)) => {
            let bad = ds.iter().any(Diagnostic::is_error);
            (e, bad, ds)
        }
        Err(p) => (
            Expr::new(ExprKind::Error, text.whole()),
            true,
            vec![internal_error(text.whole(), &panic_message(&*p))],
        ),
    }
}

pub(crate) fn internal_error(span: Span, msg: &str) -> Diagnostic {
    Diagnostic::error("internal_error", format!("internal compiler error: {msg}"))
        .with_primary(span, "while compiling this")
}

/// Type-checks and lowers a parsed expression: the code and its diagnostics (none but an
/// internal error when the parse already failed, `bad`).
pub fn lower_diags(
    expr: &Expr,
    bad: bool,
    ports: &[PortSig],
    mode: Mode,
    name: String,
    expected: Option<Type>,
) -> (Code, Vec<Diagnostic>) {
    let env_name = name.clone();
    let env = Env {
        ports,
        mode,
        name,
        expected,
    };
    let r = catch_unwind(AssertUnwindSafe(|| crate::expr::lower(expr, &env)));
    match r {
        Ok((code, ds)) => (code, if bad { Vec::new() } else { ds }),
        Err(p) => (
            Code {
                name: env_name,
                instrs: Vec::new(),
                spans: Vec::new(),
                consts: Vec::new(),
                paths: Vec::new(),
                slots: Vec::new(),
                reads: Vec::new(),
                result: Type::Any,
                span: SourceSpan {
                    file: SourceFileId(expr.span.file.0),
                    start: expr.span.start,
                    end: expr.span.end,
                },
            },
            vec![internal_error(expr.span, &panic_message(&*p))],
        ),
    }
}

/// Joins conditions with `&&` (the span of the first), as the elaboration lowers them.
pub fn join_conditions(conds: impl IntoIterator<Item = Expr>) -> Option<Expr> {
    let mut conds = conds.into_iter();
    let first = conds.next()?;
    Some(conds.fold(first, |a, b| {
        let span = a.span;
        Expr::new(ExprKind::Binary(BinOp::And, Box::new(a), Box::new(b)), span)
    }))
}

pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}
