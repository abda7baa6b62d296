//! Static types of the expression language.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A named struct type with ordered fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StructType {
    /// The struct's name as declared (`point`), or a compiler-made name for anonymous ones.
    pub name: Arc<str>,
    pub fields: Vec<(Arc<str>, Type)>,
}

/// A static type. `Any` is the union of all types, used where a type is not yet known
/// (the element type of a `list` port, the result of `stack_top` on such a list, ...).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Type {
    Control,
    Bool,
    Int,
    Long,
    UInt,
    ULong,
    Float,
    Double,
    Char,
    String,
    Bitset,
    Bytearray,
    Bigint,
    /// `shared_<place>`: the clean-up place's name.
    Shared(Arc<str>),
    List(Box<Type>),
    Set(Box<Type>),
    Map(Box<Type>, Box<Type>),
    Struct(Arc<StructType>),
    Any,
}

impl Type {
    /// The type named by an xpnet type attribute, for the built-in names: `control bool int
    /// long "unsigned int" "unsigned long" float double char string bitset bytearray bigint
    /// list set map stack`, and `shared_<PLACE>`. Struct names are resolved by the compiler.
    pub fn from_name(name: &str) -> Option<Type> {
        let _ = name;
        todo!("stdlib: Type::from_name")
    }
}
