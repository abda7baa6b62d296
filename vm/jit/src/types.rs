//! Static kinds of stack entries and slots: a native scalar of a known type, or a dynamic
//! value kept by the run-time helpers.

use cranelift_codegen::ir::types;
use pnet_stdlib::{Type, Value};

/// A scalar type that generated code holds in a machine register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Nt {
    Bool,
    Int,
    Long,
    UInt,
    ULong,
    Float,
    Double,
    Char,
}

impl Nt {
    pub const ALL: [Nt; 8] = [
        Nt::Bool,
        Nt::Int,
        Nt::Long,
        Nt::UInt,
        Nt::ULong,
        Nt::Float,
        Nt::Double,
        Nt::Char,
    ];

    pub fn of_type(t: &Type) -> Option<Nt> {
        Some(match t {
            Type::Bool => Nt::Bool,
            Type::Int => Nt::Int,
            Type::Long => Nt::Long,
            Type::UInt => Nt::UInt,
            Type::ULong => Nt::ULong,
            Type::Float => Nt::Float,
            Type::Double => Nt::Double,
            Type::Char => Nt::Char,
            _ => return None,
        })
    }

    pub fn of_value(v: &Value) -> Option<Nt> {
        Some(match v {
            Value::Bool(_) => Nt::Bool,
            Value::Int(_) => Nt::Int,
            Value::Long(_) => Nt::Long,
            Value::UInt(_) => Nt::UInt,
            Value::ULong(_) => Nt::ULong,
            Value::Float(_) => Nt::Float,
            Value::Double(_) => Nt::Double,
            Value::Char(_) => Nt::Char,
            _ => return None,
        })
    }

    pub fn tag(self) -> u32 {
        self as u32
    }

    pub fn clif(self) -> types::Type {
        match self {
            Nt::Bool | Nt::Char => types::I8,
            Nt::Int | Nt::UInt => types::I32,
            Nt::Long | Nt::ULong => types::I64,
            Nt::Float => types::F32,
            Nt::Double => types::F64,
        }
    }

    pub fn is_int(self) -> bool {
        matches!(self, Nt::Int | Nt::Long | Nt::UInt | Nt::ULong)
    }

    pub fn is_signed_int(self) -> bool {
        matches!(self, Nt::Int | Nt::Long)
    }

    pub fn is_float(self) -> bool {
        matches!(self, Nt::Float | Nt::Double)
    }

    pub fn is_number(self) -> bool {
        self.is_int() || self.is_float()
    }
}

/// The kind of a stack entry at a program point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum K {
    /// A native scalar in a register.
    N(Nt),
    /// A value on the helpers' value stack at this entry's position.
    D,
}
