//! Run-time values.
//!
//! Ordering: values order by type first (in the order of [`Value::type_rank`]), then by value.
//! Floats and doubles order by `total_cmp` so that `Value` is a total order usable in sets and
//! map keys. Note that *language* equality (`==`) is not `PartialEq`: see [`crate::ops`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use num_bigint::BigInt;
use serde::{Deserialize, Serialize};

/// A bitset, stored as 64-bit words, least significant word first.
/// Equality and ordering ignore trailing zero words.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Bitset {
    pub words: Vec<u64>,
}

/// A `shared_P` value: a wrapped value whose clean-up goes to place `place` (`P`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Shared {
    pub place: Arc<str>,
    pub value: Value,
}

/// A value of the expression language.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Value {
    Control,
    Bool(bool),
    Int(i32),
    Long(i64),
    UInt(u32),
    ULong(u64),
    Float(f32),
    Double(f64),
    /// A signed 8-bit byte.
    Char(i8),
    String(Arc<str>),
    Bitset(Bitset),
    Bytearray(Vec<u8>),
    Bigint(Box<BigInt>),
    Shared(Box<Shared>),
    List(Vec<Value>),
    Set(BTreeSet<Value>),
    Map(BTreeMap<Value, Value>),
    /// Fields in order.
    Struct(Vec<(Arc<str>, Value)>),
}

impl Value {
    /// Rank of the value's type in the cross-type order: control, bool, int, long, uint,
    /// ulong, float, double, char, string, bitset, bytearray, bigint, shared, list, set, map,
    /// struct.
    pub fn type_rank(&self) -> u8 {
        match self {
            Value::Control => 0,
            Value::Bool(_) => 1,
            Value::Int(_) => 2,
            Value::Long(_) => 3,
            Value::UInt(_) => 4,
            Value::ULong(_) => 5,
            Value::Float(_) => 6,
            Value::Double(_) => 7,
            Value::Char(_) => 8,
            Value::String(_) => 9,
            Value::Bitset(_) => 10,
            Value::Bytearray(_) => 11,
            Value::Bigint(_) => 12,
            Value::Shared(_) => 13,
            Value::List(_) => 14,
            Value::Set(_) => 15,
            Value::Map(_) => 16,
            Value::Struct(_) => 17,
        }
    }

    pub fn string(s: &str) -> Value {
        Value::String(Arc::from(s))
    }

    pub fn bigint(i: BigInt) -> Value {
        Value::Bigint(Box::new(i))
    }

    /// The value's dynamic type (element types of empty collections are `Any`).
    pub fn ty(&self) -> crate::Type {
        todo!("stdlib: Value::ty")
    }

    /// Whether this value is a value of the static type `ty` (`Any` accepts everything;
    /// a struct value fits a struct type with the same field names in the same order whose
    /// field values fit).
    pub fn fits(&self, ty: &crate::Type) -> bool {
        let _ = ty;
        todo!("stdlib: Value::fits")
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Value {}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Value {
    /// The total order: type rank first, then value.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let _ = other;
        todo!("stdlib: Ord for Value")
    }
}
