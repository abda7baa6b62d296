//! Built-in functions: names, arities, type signatures and evaluation.

use serde::{Deserialize, Serialize};

use crate::{EvalError, Type, TypeError, Value};

/// A built-in function of the expression language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Builtin {
    Abs,
    Floor,
    Ceil,
    Round,
    Sin,
    Cos,
    Sqrt,
    Log,
    ToInt,
    ToLong,
    ToUInt,
    ToULong,
    ToFloat,
    ToDouble,
    ToBigint,
    BitsetCount,
    BitsetToHex,
    BitsetFromHex,
    StackEmpty,
    StackTop,
    StackPop,
    StackSize,
    SetEmpty,
    SetTop,
    SetPop,
    SetSize,
    MapSize,
    MapEmpty,
    Min,
    Max,
    BitsetInsert,
    BitsetDelete,
    BitsetIsElement,
    BitsetOr,
    BitsetAnd,
    BitsetXor,
    StackPush,
    StackJoin,
    SetInsert,
    SetErase,
    SetIsElement,
    SetIsSubset,
    MapUnassign,
    MapIsAssigned,
    MapGetAssignment,
    MapAssign,
}

impl Builtin {
    /// Every built-in, for completion and documentation.
    pub const ALL: &'static [Builtin] = &[
        Builtin::Abs,
        Builtin::Floor,
        Builtin::Ceil,
        Builtin::Round,
        Builtin::Sin,
        Builtin::Cos,
        Builtin::Sqrt,
        Builtin::Log,
        Builtin::ToInt,
        Builtin::ToLong,
        Builtin::ToUInt,
        Builtin::ToULong,
        Builtin::ToFloat,
        Builtin::ToDouble,
        Builtin::ToBigint,
        Builtin::BitsetCount,
        Builtin::BitsetToHex,
        Builtin::BitsetFromHex,
        Builtin::StackEmpty,
        Builtin::StackTop,
        Builtin::StackPop,
        Builtin::StackSize,
        Builtin::SetEmpty,
        Builtin::SetTop,
        Builtin::SetPop,
        Builtin::SetSize,
        Builtin::MapSize,
        Builtin::MapEmpty,
        Builtin::Min,
        Builtin::Max,
        Builtin::BitsetInsert,
        Builtin::BitsetDelete,
        Builtin::BitsetIsElement,
        Builtin::BitsetOr,
        Builtin::BitsetAnd,
        Builtin::BitsetXor,
        Builtin::StackPush,
        Builtin::StackJoin,
        Builtin::SetInsert,
        Builtin::SetErase,
        Builtin::SetIsElement,
        Builtin::SetIsSubset,
        Builtin::MapUnassign,
        Builtin::MapIsAssigned,
        Builtin::MapGetAssignment,
        Builtin::MapAssign,
    ];

    /// The name as written in expressions (`abs`, `int`, `bitset_insert`, ...).
    pub fn name(self) -> &'static str {
        todo!("stdlib: Builtin::name")
    }

    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.iter().copied().find(|b| b.name() == name)
    }

    /// Number of arguments (1, 2 or 3).
    pub fn arity(self) -> usize {
        todo!("stdlib: Builtin::arity")
    }

    /// A human-readable signature for documentation and hover, e.g.
    /// `bitset_insert (bitset, unsigned long) -> bitset`.
    pub fn signature(self) -> &'static str {
        todo!("stdlib: Builtin::signature")
    }

    /// The static result type for these argument types, or why they do not fit.
    pub fn check(self, args: &[Type]) -> Result<Type, TypeError> {
        let _ = args;
        todo!("stdlib: Builtin::check")
    }

    /// Evaluates the function (pure: arguments are not changed).
    pub fn eval(self, args: &[Value]) -> Result<Value, EvalError> {
        let _ = args;
        todo!("stdlib: Builtin::eval")
    }
}
