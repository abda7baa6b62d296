//! The check of one expression or condition text: parsing it, typing and lowering it, and
//! the record of each check the elaboration makes ([`Check`]), which [`crate::recheck`]
//! re-runs for an edited text.

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pnet_bundle::{Code, SourceFileId, SourceSpan};
use pnet_stdlib::{BinOp, Type};
use pnet_syntax::Diagnostic;
use pnet_syntax::Span;
use pnet_syntax::expr::{Expr, ExprKind};
use pnet_syntax::span::MappedText;

use crate::expr::{Env, Mode, PortSig};

/// One check the elaboration made, and the range of `Elaborated::diagnostics` it produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub kind: CheckKind,
    pub diags: Range<usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CheckKind {
    /// A defun's `<expression>` body: parsed, then lowered in expression mode.
    Expression {
        text: MappedText,
        ports: Vec<PortSig>,
        name: String,
        /// `gspc.we.plugin.create`: `missing_binding` is dropped.
        plugin_create: bool,
    },
    /// The parse of one non-blank `<condition>` text.
    ConditionParse { text: MappedText },
    /// The joined conditions of a transition (its function's, then its own), lowered.
    ConditionLower {
        texts: Vec<MappedText>,
        ports: Vec<PortSig>,
        name: String,
    },
}

impl CheckKind {
    pub(crate) fn texts(&self) -> &[MappedText] {
        match self {
            CheckKind::Expression { text, .. } | CheckKind::ConditionParse { text } => {
                std::slice::from_ref(text)
            }
            CheckKind::ConditionLower { texts, .. } => texts,
        }
    }

    pub(crate) fn texts_mut(&mut self) -> &mut [MappedText] {
        match self {
            CheckKind::Expression { text, .. } | CheckKind::ConditionParse { text } => {
                std::slice::from_mut(text)
            }
            CheckKind::ConditionLower { texts, .. } => texts,
        }
    }

    /// The diagnostics of this check, as the elaboration makes them.
    pub(crate) fn run(&self) -> Vec<Diagnostic> {
        match self {
            CheckKind::Expression {
                text,
                ports,
                name,
                plugin_create,
            } => {
                let (e, bad, mut ds) = parse_expr_diags(text);
                let (_, lowered) =
                    lower_diags(&e, bad, ports, Mode::Expression, name.clone(), None);
                if *plugin_create {
                    ds.extend(lowered.into_iter().filter(|d| d.code != "missing_binding"));
                } else {
                    ds.extend(lowered);
                }
                ds
            }
            CheckKind::ConditionParse { text } => parse_expr_diags(text).2,
            CheckKind::ConditionLower { texts, ports, name } => {
                let exprs = texts.iter().map(|t| parse_expr_diags(t).0);
                match join_conditions(exprs) {
                    Some(joined) => {
                        lower_diags(&joined, false, ports, Mode::Condition, name.clone(), None).1
                    }
                    None => Vec::new(),
                }
            }
        }
    }
}

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
