//! Unary and binary operators: evaluation and static typing.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UnOp {
    /// `-`
    Neg,
    /// `!`
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinOp {
    /// `||`, `:or:` (short-circuit; the compiler emits jumps, evaluation here is strict)
    Or,
    /// `&&`, `:and:` (short-circuit; see `Or`)
    And,
    /// `|` bitwise on integers and bigint
    BitOr,
    /// `&` bitwise on integers and bigint
    BitAnd,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Add,
    Sub,
    Mul,
    /// `/` (float and double only)
    Div,
    /// `div` (integers and bigint, truncating)
    IntDiv,
    /// `mod`, `%`
    Mod,
    /// `**` fractional power (float, double)
    Pow,
    /// `^` integral power (integers, bigint)
    IntPow,
}

use crate::{EvalError, Type, TypeError, Value};

impl UnOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnOp::Neg => "-",
            UnOp::Not => "!",
        }
    }
}

impl BinOp {
    /// The canonical spelling (`:lt:` and `<` are the same operator; this gives `<`).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::BitOr => "|",
            BinOp::BitAnd => "&",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::IntDiv => "div",
            BinOp::Mod => "mod",
            BinOp::Pow => "**",
            BinOp::IntPow => "^",
        }
    }
}

/// Evaluates a unary operator.
pub fn eval_unary(op: UnOp, v: &Value) -> Result<Value, EvalError> {
    let _ = (op, v);
    todo!("stdlib: eval_unary")
}

/// Evaluates a binary operator strictly (both operands already evaluated; `Or`/`And` on two
/// bools give the logical result).
pub fn eval_binary(op: BinOp, a: &Value, b: &Value) -> Result<Value, EvalError> {
    let _ = (op, a, b);
    todo!("stdlib: eval_binary")
}

/// The static result type of a unary operator, or why it does not apply.
pub fn type_unary(op: UnOp, t: &Type) -> Result<Type, TypeError> {
    let _ = (op, t);
    todo!("stdlib: type_unary")
}

/// The static result type of a binary operator, or why it does not apply.
pub fn type_binary(op: BinOp, a: &Type, b: &Type) -> Result<Type, TypeError> {
    let _ = (op, a, b);
    todo!("stdlib: type_binary")
}
