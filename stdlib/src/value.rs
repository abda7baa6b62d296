//! Run-time values.
//!
//! Ordering: values order by type first (in the order of [`Value::type_rank`]), then by value.
//! Floats and doubles order by `total_cmp` so that `Value` is a total order usable in sets and
//! map keys. Note that *language* equality (`==`) is not `PartialEq`: see [`crate::ops`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use num_bigint::BigInt;
use serde::{Deserialize, Serialize};

pub mod bitset;

pub use bitset::Bitset;

/// A `shared_P` value: a wrapped value whose clean-up goes to place `place` (`P`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Shared {
    /// The clean-up place `P`.
    pub place: Arc<str>,
    /// The wrapped value.
    pub value: Value,
}

/// Whether [`Value`] has the primitive representation `#[repr(u8)]` (RFC 2195), which code that
/// reads and writes values through raw pointers (the JIT of `pnet-jit`) relies on: `Value` is
/// then laid out as a `#[repr(C)]` union of one `#[repr(C)]` struct per variant, each starting
/// with the `u8` tag. So the tag is byte 0 (always initialized), the tags are the variants'
/// discriminants (their positions in the declaration: no explicit discriminants), and the
/// payload of a one-field variant `V(T)` is at the offset of `v` in
/// `#[repr(C)] struct { tag: u8, v: T }`. Keep this constant in step with the attribute.
pub const VALUE_REPR_U8: bool = true;

/// A value of the expression language.
///
/// `#[repr(u8)]`: see [`VALUE_REPR_U8`] (the size is unchanged, 32 bytes on 64-bit hosts, and
/// `Option<Value>` still keeps its `None` in an unused tag value).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[repr(u8)]
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

/// The deepest nesting a value may reach at run time (collections, structs and shared values
/// inside each other), as deep as a literal may be written: deeper values would make every
/// walk over them (printing, JSON, serialization, dropping) a risk for the stack.
pub const MAX_VALUE_DEPTH: usize = crate::literal::MAX_LITERAL_DEPTH;

impl Value {
    /// Whether the value nests more than `limit` levels: a scalar is level 0, `List (1)`
    /// level 1, `List (List (1))` level 2. Walks with an explicit stack and stops as soon as
    /// it knows.
    pub fn deeper_than(&self, limit: usize) -> bool {
        // A scalar is level 0: answered without the walk's allocation (field stores and
        // `shared_P` check every value they place).
        if !matches!(
            self,
            Value::List(_) | Value::Set(_) | Value::Map(_) | Value::Struct(_) | Value::Shared(_)
        ) {
            return false;
        }
        let mut stack: Vec<(&Value, usize)> = vec![(self, 0)];
        while let Some((v, d)) = stack.pop() {
            let inner = d + 1;
            let before = stack.len();
            match v {
                Value::List(l) => stack.extend(l.iter().map(|x| (x, inner))),
                Value::Set(s) => stack.extend(s.iter().map(|x| (x, inner))),
                Value::Map(m) => {
                    stack.extend(m.iter().flat_map(|(k, x)| [(k, inner), (x, inner)]));
                }
                Value::Struct(fields) => stack.extend(fields.iter().map(|(_, x)| (x, inner))),
                Value::Shared(sh) => stack.push((&sh.value, inner)),
                _ => {}
            }
            if inner > limit && stack.len() > before {
                return true;
            }
        }
        false
    }

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

    /// A string value.
    pub fn string(s: &str) -> Value {
        Value::String(Arc::from(s))
    }

    /// A bigint value.
    pub fn bigint(i: BigInt) -> Value {
        Value::Bigint(Box::new(i))
    }

    /// The value's dynamic type.
    ///
    /// Collections get the common type of their elements (keys, values) when all agree, and
    /// `Any` when they are empty or hold elements of different types (sets and maps may be
    /// heterogeneous at run time). A struct value has no name of its own: its type is named
    /// [`ANONYMOUS_STRUCT`].
    pub fn ty(&self) -> crate::Type {
        use crate::Type;
        match self {
            Value::Control => Type::Control,
            Value::Bool(_) => Type::Bool,
            Value::Int(_) => Type::Int,
            Value::Long(_) => Type::Long,
            Value::UInt(_) => Type::UInt,
            Value::ULong(_) => Type::ULong,
            Value::Float(_) => Type::Float,
            Value::Double(_) => Type::Double,
            Value::Char(_) => Type::Char,
            Value::String(_) => Type::String,
            Value::Bitset(_) => Type::Bitset,
            Value::Bytearray(_) => Type::Bytearray,
            Value::Bigint(_) => Type::Bigint,
            Value::Shared(s) => Type::Shared(s.place.clone()),
            Value::List(l) => Type::List(Box::new(common_type(l.iter()))),
            Value::Set(s) => Type::Set(Box::new(common_type(s.iter()))),
            Value::Map(m) => Type::Map(
                Box::new(common_type(m.keys())),
                Box::new(common_type(m.values())),
            ),
            Value::Struct(fields) => Type::Struct(Arc::new(crate::StructType {
                name: Arc::from(ANONYMOUS_STRUCT),
                fields: fields.iter().map(|(n, v)| (n.clone(), v.ty())).collect(),
            })),
        }
    }

    /// Whether this value is a value of the static type `ty` (`Any` accepts everything;
    /// a struct value fits a struct type with the same field names in the same order whose
    /// field values fit; a shared value fits `shared_P` when its place is `P`, whatever it
    /// wraps).
    pub fn fits(&self, ty: &crate::Type) -> bool {
        use crate::Type;
        match (self, ty) {
            (_, Type::Any) => true,
            (Value::Control, Type::Control)
            | (Value::Bool(_), Type::Bool)
            | (Value::Int(_), Type::Int)
            | (Value::Long(_), Type::Long)
            | (Value::UInt(_), Type::UInt)
            | (Value::ULong(_), Type::ULong)
            | (Value::Float(_), Type::Float)
            | (Value::Double(_), Type::Double)
            | (Value::Char(_), Type::Char)
            | (Value::String(_), Type::String)
            | (Value::Bitset(_), Type::Bitset)
            | (Value::Bytearray(_), Type::Bytearray)
            | (Value::Bigint(_), Type::Bigint) => true,
            (Value::Shared(s), Type::Shared(p)) => s.place == *p,
            (Value::List(l), Type::List(t)) => l.iter().all(|v| v.fits(t)),
            (Value::Set(s), Type::Set(t)) => s.iter().all(|v| v.fits(t)),
            (Value::Map(m), Type::Map(k, v)) => m.iter().all(|(a, b)| a.fits(k) && b.fits(v)),
            (Value::Struct(fields), Type::Struct(st)) => {
                fields.len() == st.fields.len()
                    && fields
                        .iter()
                        .zip(st.fields.iter())
                        .all(|((n, v), (m, t))| n == m && v.fits(t))
            }
            _ => false,
        }
    }
}

/// The name [`Value::ty`] gives to the type of a struct value (struct values carry no name).
pub const ANONYMOUS_STRUCT: &str = "_struct";

/// The common type of some values: their type if all agree, `Any` if none or if they differ.
fn common_type<'a>(mut it: impl Iterator<Item = &'a Value>) -> crate::Type {
    let Some(first) = it.next() else {
        return crate::Type::Any;
    };
    let mut t = first.ty();
    for v in it {
        match t.lub(&v.ty()) {
            Some(u) => t = u,
            None => return crate::Type::Any,
        }
    }
    t
}

impl PartialEq for Shared {
    fn eq(&self, other: &Self) -> bool {
        self.place == other.place && self.value == other.value
    }
}

impl Eq for Shared {}

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
    /// The total order: type rank first, then value. Floats and doubles by `total_cmp`
    /// (so `-0.0 < 0.0` and NaN is ordered), chars as signed bytes, strings and bytearrays
    /// bytewise, bitsets as unsigned numbers ignoring trailing zero words, shared values by
    /// (place, value), lists, sets and maps lexicographically over their elements (entries),
    /// structs field by field (name, then value) and then by number of fields.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (self, other) {
            (Value::Control, Value::Control) => Ordering::Equal,
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Long(a), Value::Long(b)) => a.cmp(b),
            (Value::UInt(a), Value::UInt(b)) => a.cmp(b),
            (Value::ULong(a), Value::ULong(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => a.total_cmp(b),
            (Value::Double(a), Value::Double(b)) => a.total_cmp(b),
            (Value::Char(a), Value::Char(b)) => a.cmp(b),
            (Value::String(a), Value::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Value::Bitset(a), Value::Bitset(b)) => a.cmp(b),
            (Value::Bytearray(a), Value::Bytearray(b)) => a.cmp(b),
            (Value::Bigint(a), Value::Bigint(b)) => a.cmp(b),
            (Value::Shared(a), Value::Shared(b)) => a
                .place
                .as_bytes()
                .cmp(b.place.as_bytes())
                .then_with(|| a.value.cmp(&b.value)),
            (Value::List(a), Value::List(b)) => a.cmp(b),
            (Value::Set(a), Value::Set(b)) => a.iter().cmp(b.iter()),
            (Value::Map(a), Value::Map(b)) => a.iter().cmp(b.iter()),
            (Value::Struct(a), Value::Struct(b)) => a
                .iter()
                .map(|(n, v)| (n.as_bytes(), v))
                .cmp(b.iter().map(|(n, v)| (n.as_bytes(), v))),
            _ => self.type_rank().cmp(&other.type_rank()),
        }
    }
}

#[cfg(test)]
mod tests;
