//! Static types of the expression language.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A named struct type with ordered fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StructType {
    /// The struct's name as declared (`point`), or a compiler-made name for anonymous ones.
    pub name: Arc<str>,
    /// The fields in order: name and type.
    pub fields: Vec<(Arc<str>, Type)>,
}

/// A type's name in messages (compiler diagnostics and run-time errors such as an exhausted
/// generator): the `Display` form, as written in xpnet (`unsigned int`, `list<long>`, `any`).
/// The one spelling the compiler, the engine and the explorer share.
pub fn type_name(ty: &Type) -> String {
    ty.to_string()
}

/// What a type attribute says for a type: a struct's own name, else [`type_name`] (for
/// quick fixes that declare a place, and for messages about a struct by name).
pub fn attribute_name(ty: &Type) -> String {
    match ty {
        Type::Struct(st) => st.name.to_string(),
        t => type_name(t),
    }
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

/// The built-in type names of xpnet type attributes (besides `shared_<PLACE>` and struct
/// names), as [`Type::from_name`] reads them: for completion and "did you mean".
pub const BUILTIN_TYPE_NAMES: &[&str] = &[
    "control",
    "bool",
    "int",
    "long",
    "unsigned int",
    "unsigned long",
    "float",
    "double",
    "char",
    "string",
    "bitset",
    "bytearray",
    "bigint",
    "list",
    "set",
    "map",
    "stack",
];

impl Type {
    /// The type named by an xpnet type attribute, for the built-in names: `control bool int
    /// long "unsigned int" "unsigned long" float double char string bitset bytearray bigint
    /// list set map stack`, and `shared_<PLACE>`. Struct names are resolved by the compiler.
    ///
    /// `list` and `stack` are `List(Any)`, `set` is `Set(Any)`, `map` is `Map(Any, Any)`.
    /// Inner whitespace of the two-word names is not normalised: exactly one space.
    pub fn from_name(name: &str) -> Option<Type> {
        Some(match name {
            "control" => Type::Control,
            "bool" => Type::Bool,
            "int" => Type::Int,
            "long" => Type::Long,
            "unsigned int" => Type::UInt,
            "unsigned long" => Type::ULong,
            "float" => Type::Float,
            "double" => Type::Double,
            "char" => Type::Char,
            "string" => Type::String,
            "bitset" => Type::Bitset,
            "bytearray" => Type::Bytearray,
            "bigint" => Type::Bigint,
            "list" | "stack" => Type::List(Box::new(Type::Any)),
            "set" => Type::Set(Box::new(Type::Any)),
            "map" => Type::Map(Box::new(Type::Any), Box::new(Type::Any)),
            _ => {
                let place = name.strip_prefix("shared_")?;
                if !is_identifier(place) {
                    return None;
                }
                Type::Shared(Arc::from(place))
            }
        })
    }

    /// The most precise type that a value of type `self` and a value of type `other` may both
    /// have, or `None` when no value has both types. `Any` unifies with everything (giving the
    /// other type), collections unify element-wise, struct types unify when their field names
    /// agree in order and their field types unify (the result keeps `self`'s name), shared
    /// types when they name the same place.
    pub fn unify(&self, other: &Type) -> Option<Type> {
        self.merge(other, false)
    }

    /// The most precise type that describes both every value of type `self` and every value of
    /// type `other`, or `None` when the types are incompatible (`unify` fails). Unlike
    /// [`Type::unify`], `Any` wins: `lub(list<any>, list<long>)` is `list<any>`. Used for the
    /// element types of collections built from both (`stack_join`, `stack_push`, ...).
    pub fn lub(&self, other: &Type) -> Option<Type> {
        self.merge(other, true)
    }

    /// The walk shared by `unify` (`Any` gives way) and `lub` (`any_wins`).
    fn merge(&self, other: &Type, any_wins: bool) -> Option<Type> {
        match (self, other) {
            (Type::Any, _) | (_, Type::Any) if any_wins => Some(Type::Any),
            (Type::Any, t) | (t, Type::Any) => Some(t.clone()),
            (Type::List(a), Type::List(b)) => Some(Type::List(Box::new(a.merge(b, any_wins)?))),
            (Type::Set(a), Type::Set(b)) => Some(Type::Set(Box::new(a.merge(b, any_wins)?))),
            (Type::Map(k1, v1), Type::Map(k2, v2)) => Some(Type::Map(
                Box::new(k1.merge(k2, any_wins)?),
                Box::new(v1.merge(v2, any_wins)?),
            )),
            (Type::Struct(a), Type::Struct(b)) => {
                if a == b {
                    return Some(self.clone());
                }
                if a.fields.len() != b.fields.len() {
                    return None;
                }
                let fields = a
                    .fields
                    .iter()
                    .zip(b.fields.iter())
                    .map(|((n, t), (m, u))| {
                        (n == m).then(|| Some((n.clone(), t.merge(u, any_wins)?)))?
                    })
                    .collect::<Option<Vec<_>>>()?;
                Some(Type::Struct(Arc::new(StructType {
                    name: a.name.clone(),
                    fields,
                })))
            }
            (a, b) if a == b => Some(a.clone()),
            _ => None,
        }
    }

    /// Whether a value of type `self` may also be of type `other` (`unify` succeeds).
    pub fn compatible(&self, other: &Type) -> bool {
        // The same walk as `unify`, without building the unified type.
        match (self, other) {
            (Type::Any, _) | (_, Type::Any) => true,
            (Type::List(a), Type::List(b)) | (Type::Set(a), Type::Set(b)) => a.compatible(b),
            (Type::Map(k1, v1), Type::Map(k2, v2)) => k1.compatible(k2) && v1.compatible(v2),
            (Type::Struct(a), Type::Struct(b)) => {
                a.fields.len() == b.fields.len()
                    && a.fields
                        .iter()
                        .zip(&b.fields)
                        .all(|((n, t), (m, u))| n == m && t.compatible(u))
            }
            (a, b) => a == b,
        }
    }

    /// Whether this is `Any`.
    pub fn is_any(&self) -> bool {
        matches!(self, Type::Any)
    }

    /// int, long, unsigned int, unsigned long, bigint.
    pub fn is_integral(&self) -> bool {
        matches!(
            self,
            Type::Int | Type::Long | Type::UInt | Type::ULong | Type::Bigint
        )
    }

    /// float, double.
    pub fn is_fractional(&self) -> bool {
        matches!(self, Type::Float | Type::Double)
    }

    /// The numbers: int, long, unsigned int, unsigned long, float, double, bigint.
    pub fn is_number(&self) -> bool {
        self.is_integral() || self.is_fractional()
    }
}

/// Whether `s` matches `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_identifier(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
