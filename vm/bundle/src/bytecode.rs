//! The bytecode of expressions and conditions: a stack machine over [`Value`]s with numbered
//! slots for ports and local variables.
//!
//! Execution model: a `Code` runs with a frame of `slots.len()` slots (slot `i` = port `i` of
//! the function for expression bodies and conditions; locals after the ports). Slots of input
//! ports are filled before running; the others start empty (reading an empty slot whose path
//! exists nowhere is a run-time error, except as the root of an assignment, which creates an
//! empty struct). The value left on the stack at the end is the program's value.

use pnet_stdlib::{BinOp, Builtin, Type, UnOp, Value};
use serde::{Deserialize, Serialize};

use crate::SourceSpan;

/// Operand type of an arithmetic or comparison instruction when the compiler knows it is a
/// scalar; `Dyn` otherwise. The interpreter and the JIT may specialise on it; the result must
/// not differ from the generic evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpTy {
    Bool,
    Int,
    Long,
    UInt,
    ULong,
    Float,
    Double,
    Char,
    Dyn,
}

impl OpTy {
    pub fn of(ty: &Type) -> OpTy {
        match ty {
            Type::Bool => OpTy::Bool,
            Type::Int => OpTy::Int,
            Type::Long => OpTy::Long,
            Type::UInt => OpTy::UInt,
            Type::ULong => OpTy::ULong,
            Type::Float => OpTy::Float,
            Type::Double => OpTy::Double,
            Type::Char => OpTy::Char,
            _ => OpTy::Dyn,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Instr {
    /// Push `consts[i]`.
    Const(u32),
    /// Push a copy of slot `s`.
    Load(u16),
    /// Push a copy of the field at `paths[p]` inside slot `s` (`${s.a.b}`).
    LoadPath(u16, u32),
    /// Pop into slot `s`.
    Store(u16),
    /// Pop into the field at `paths[p]` inside slot `s`, creating the struct and fields as
    /// needed (a missing root becomes `Struct []`, missing fields are appended).
    StorePath(u16, u32),
    Dup,
    Pop,
    Unary(UnOp, OpTy),
    /// Strict binary operator (`Or`/`And` are compiled to jumps, never emitted here).
    Binary(BinOp, OpTy),
    /// Call a built-in with its arity's values from the stack (first argument deepest).
    Call(Builtin),
    /// Wrap the top of stack as `shared_<consts[i] as string>`.
    MakeShared(u32),
    /// Unconditional jump to instruction index.
    Jump(u32),
    /// If the top (a bool) is false, jump and keep it; else pop it. (`&&`)
    JumpIfFalseElsePop(u32),
    /// If the top (a bool) is true, jump and keep it; else pop it. (`||`)
    JumpIfTrueElsePop(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SlotKind {
    /// Slot of the function's port with this index (same as the slot index).
    Port,
    Local,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slot {
    pub name: String,
    pub kind: SlotKind,
    pub ty: Type,
}

/// One compiled expression or condition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Code {
    /// What this is, for listings: `expression of t`, `condition of t`, ...
    pub name: String,
    pub instrs: Vec<Instr>,
    /// The source span of each instruction (same length as `instrs`), for run-time errors.
    pub spans: Vec<SourceSpan>,
    pub consts: Vec<Value>,
    /// Field paths used by `LoadPath`/`StorePath`.
    pub paths: Vec<Vec<String>>,
    pub slots: Vec<Slot>,
    /// Slots the code reads (for conditions: the places to enumerate).
    pub reads: Vec<u16>,
    /// The static type of the program's value.
    pub result: Type,
    /// The span of the whole expression.
    pub span: SourceSpan,
}
