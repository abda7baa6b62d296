//! Static typing of expressions and conditions, constant evaluation, and lowering to bytecode.

use pnet_bundle::{Code, PortDir};
use pnet_stdlib::{Type, Value};
use pnet_syntax::Diagnostic;
use pnet_syntax::expr::Expr;

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
pub fn lower(expr: &Expr, env: &Env<'_>) -> (Code, Vec<Diagnostic>) {
    let _ = (expr, env);
    todo!("sema: expr::lower")
}

/// Evaluates a constant expression (a token `<value>`) and checks it against the place's type.
pub fn eval_const(expr: &Expr, expected: &Type) -> Result<Value, Vec<Diagnostic>> {
    let _ = (expr, expected);
    todo!("sema: expr::eval_const")
}
