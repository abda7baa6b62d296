//! Static typing of expressions and conditions, constant evaluation, and lowering to bytecode.
//!
//! The pipeline: [`check`] types the AST and folds constant subtrees into a typed tree,
//! resolving references to slots (ports first, then locals in order of first assignment);
//! [`emit`] turns that tree into a [`Code`]. Operator and built-in typing and evaluation come
//! from the stdlib (`type_unary`, `type_binary`, `Builtin::check`, ...); nothing is re-derived
//! here.
//!
//! Typing rules beyond the stdlib's operator tables:
//! - A reference to a port has the port's type; `${a.b}` goes through struct fields (through
//!   `Any` it gives `Any`; through anything else it is `not_a_struct`).
//! - A reference that is not a port is a local variable, typed by its first assignment; reading
//!   it before is `unknown_variable`; later assignments must be [`compatible`] with that type,
//!   except that field assignments add fields to a local struct.
//! - Field assignments to ports must name declared fields and match their types.
//! - Collection literals need constant elements (`non_constant_element`); their element type
//!   is the elements' common type, else `Any`. `Struct [..]` literals have an anonymous struct
//!   type, compatible with any struct type of the same field names, order and types.
//! - Modes: see [`Mode`]. In `Expression` mode an output port may be read once it was assigned.

mod check;
mod emit;
mod eval;
mod types;

#[cfg(test)]
mod tests;

/// A port's direction ([`PortSig::dir`]).
pub use pnet_bundle::PortDir;
use pnet_bundle::{Code, Slot, SlotKind};
use pnet_stdlib::{Type, Value};
use pnet_syntax::Diagnostic;
use pnet_syntax::expr::Expr;

pub use types::{anonymous_struct, anonymous_struct_name, common_type, compatible, has_any};

use check::{Checker, NodeKind, uncovered, value_help};
use emit::{Emitter, source_span};
use types::type_name;

/// What an expression is used for; decides which references it may read and write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A transition's `<expression>` body: reads input ports, must assign every output port
    /// (`missing_binding` otherwise), may use local variables.
    Expression,
    /// A `<condition>`: must be `bool`; sees only input and tunnel ports.
    Condition,
    /// A run-time expression over the input ports that yields a value: eureka-group,
    /// memory-buffer `size`/`alignment`, memory transfer `global`/`local`. May use locals.
    Value,
}

/// A port as seen by an expression: slot `i` is port `i`.
#[derive(Clone, Debug, PartialEq)]
pub struct PortSig {
    pub name: String,
    pub dir: PortDir,
    pub ty: Type,
}

/// Where and how an expression is lowered.
#[derive(Clone, Debug)]
pub struct Env<'a> {
    pub ports: &'a [PortSig],
    pub mode: Mode,
    /// For listings and messages: `expression of update_A`, `condition of update_A`, ...
    pub name: String,
    /// For `Mode::Value`: the type the result must have, if any.
    pub expected: Option<Type>,
}

/// Type-checks an expression, folds constants (reporting evaluation errors of constant parts
/// at compile time), and lowers it to bytecode. Diagnostics carry file spans; the code's
/// `SourceSpan`s use `SourceFileId(file.0)`.
///
/// The code is always produced; when there are error diagnostics it must not be run.
/// `Code::reads` lists the port slots whose incoming value the code reads (never locals, and
/// in `Expression` mode never out-only ports, which are only read after being assigned),
/// ascending.
pub fn lower(expr: &Expr, env: &Env<'_>) -> (Code, Vec<Diagnostic>) {
    let mut checker = Checker::new(env.ports, env.mode);
    let node = checker.check(expr);
    let poisoned = matches!(node.kind, NodeKind::Poison);

    match env.mode {
        Mode::Expression => {
            for (i, port) in env.ports.iter().enumerate() {
                // An `inout` port holds its input value unless assigned.
                if port.dir != PortDir::Out {
                    continue;
                }
                let paths: Vec<&[std::sync::Arc<str>]> =
                    checker.assigned[i].iter().map(|p| p.as_slice()).collect();
                if let Some(missing) = uncovered(&port.ty, &paths) {
                    let msg = if missing.is_empty() {
                        format!("output port `{}` is never assigned", port.name)
                    } else {
                        let names: Vec<&str> = missing.iter().map(|s| &**s).collect();
                        format!(
                            "field `{}.{}` of output port `{}` is never assigned",
                            port.name,
                            names.join("."),
                            port.name
                        )
                    };
                    checker.diags.push(
                        Diagnostic::error("missing_binding", msg)
                            .with_primary(expr.span, format!("assign `${{{}}}` here", port.name)),
                    );
                }
            }
        }
        Mode::Condition => {
            if !poisoned && !compatible(&node.ty, &Type::Bool) {
                checker.diags.push(
                    Diagnostic::error(
                        "condition_not_bool",
                        format!(
                            "a condition must be `bool`, but this has type `{}`",
                            type_name(&node.ty)
                        ),
                    )
                    .with_primary(node.span, format!("this is `{}`", type_name(&node.ty))),
                );
            }
        }
        Mode::Value => {
            if let Some(expected) = &env.expected
                && !poisoned
                && !compatible(&node.ty, expected)
            {
                checker.diags.push(
                    Diagnostic::error(
                        "type_mismatch",
                        format!(
                            "expected a value of type `{}`, found `{}`",
                            type_name(expected),
                            type_name(&node.ty)
                        ),
                    )
                    .with_primary(node.span, format!("this is `{}`", type_name(&node.ty))),
                );
            }
        }
    }

    let mut emitter = Emitter::default();
    emitter.emit(&node, true);
    emitter.thread_jumps();
    // Ports whose value comes from outside: in an expression body an out-only port is only
    // read after the body assigned it.
    let mut reads: Vec<u16> = emitter
        .reads
        .iter()
        .copied()
        .filter(|&s| {
            env.ports
                .get(usize::from(s))
                .is_some_and(|p| !(env.mode == Mode::Expression && p.dir == PortDir::Out))
        })
        .collect();
    reads.sort_unstable();

    let mut slots: Vec<Slot> = env
        .ports
        .iter()
        .map(|p| Slot {
            name: p.name.clone(),
            kind: SlotKind::Port,
            ty: p.ty.clone(),
        })
        .collect();
    slots.extend(checker.locals.iter().map(|l| Slot {
        name: l.name.clone(),
        kind: SlotKind::Local,
        ty: l.ty.clone(),
    }));

    let code = Code {
        name: env.name.clone(),
        instrs: emitter.instrs,
        spans: emitter.spans,
        consts: emitter.consts,
        paths: emitter.paths,
        slots,
        reads,
        result: node.ty.clone(),
        span: source_span(expr.span),
    };
    (code, checker.diags)
}

/// Evaluates a constant expression (a token `<value>`) and checks it against the place's type.
///
/// The expression may use local variables (`${x} := 1L; ${x} + 1L`), nothing else.
/// Errors: every static error of the expression, `constant_evaluation` for evaluation errors,
/// and `type_mismatch` when the value does not fit `expected`.
pub fn eval_const(expr: &Expr, expected: &Type) -> Result<Value, Vec<Diagnostic>> {
    let mut checker = Checker::new(&[], Mode::Value);
    checker.constant = true;
    let node = checker.check(expr);
    if checker.diags.iter().any(Diagnostic::is_error) || matches!(node.kind, NodeKind::Poison) {
        return Err(checker.diags);
    }
    let mismatch = |found: &str, span, help: Option<String>| {
        vec![
            Diagnostic::error(
                "type_mismatch",
                format!(
                    "this token value has type `{found}`, but the place has type `{}`",
                    type_name(expected)
                ),
            )
            .with_primary(span, format!("this is `{found}`"))
            .with_notes(help),
        ]
    };
    if !compatible(&node.ty, expected) {
        let help = node.as_const().and_then(|v| value_help(v, expected));
        return Err(mismatch(&type_name(&node.ty), node.span, help));
    }
    let value = eval::eval(&node, checker.locals.len()).map_err(|(err, span)| {
        vec![
            Diagnostic::error(
                "constant_evaluation",
                format!("evaluating this token value fails: {err}"),
            )
            .with_primary(span, err.to_string()),
        ]
    })?;
    if !value.fits(expected) {
        let help = value_help(&value, expected);
        return Err(mismatch(&type_name(&value.ty()), node.span, help));
    }
    Ok(value)
}
