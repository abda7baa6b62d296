//! Errors of evaluation (run time, or compile time when constants are folded) and of typing.

use std::fmt;

/// An error raised while evaluating an operator, a built-in function or a literal.
/// The `Display` text is the user-facing message (no trailing period).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvalError {
    DivisionByZero,
    /// `a - b` on unsigned types with `b > a`.
    UnsignedUnderflow,
    SqrtOfNegative,
    LogOfNonPositive,
    /// `^` with a negative exponent on signed integers or bigint.
    NegativeExponent,
    /// `stack_top`, `stack_pop`, `set_top`, `set_pop` on an empty container (names the function).
    EmptyContainer(&'static str),
    /// `map_get_assignment` of a missing key (the key, printed).
    MissingKey(String),
    /// `==`/`!=` on float, double, control, list, set or map (names the type).
    IncomparableEquality(String),
    /// Struct `==` with different field names or order.
    StructShapeMismatch,
    /// A literal or cast whose value does not fit its type.
    OutOfRange(String),
    /// Operand types that the operation does not accept (a dynamic type error).
    TypeMismatch(String),
    /// Anything else, with its message (`bitset_fromhex` of a malformed string, ...).
    Other(String),
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::DivisionByZero => write!(f, "division by zero"),
            EvalError::UnsignedUnderflow => write!(f, "unsigned subtraction below zero"),
            EvalError::SqrtOfNegative => write!(f, "sqrt of a negative number"),
            EvalError::LogOfNonPositive => write!(f, "log of a non-positive number"),
            EvalError::NegativeExponent => write!(f, "negative exponent"),
            EvalError::EmptyContainer(func) => write!(f, "{func} of an empty container"),
            EvalError::MissingKey(key) => write!(f, "map has no key {key}"),
            EvalError::IncomparableEquality(ty) => {
                write!(f, "values of type {ty} cannot be compared for equality")
            }
            EvalError::StructShapeMismatch => {
                write!(f, "structs with different fields cannot be compared")
            }
            EvalError::OutOfRange(what) => write!(f, "value out of range: {what}"),
            EvalError::TypeMismatch(what) => write!(f, "type error: {what}"),
            EvalError::Other(msg) => write!(f, "{msg}"),
        }
    }
}

impl std::error::Error for EvalError {}

/// A static type error; the message is user-facing (no trailing period).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeError {
    pub message: String,
}

impl TypeError {
    pub fn new(message: impl Into<String>) -> Self {
        TypeError {
            message: message.into(),
        }
    }
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TypeError {}
