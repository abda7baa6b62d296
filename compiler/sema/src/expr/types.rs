//! Relations between static types: compatibility (used for assignments, port/place checks and
//! token values) and the helpers for anonymous struct types.

use std::sync::Arc;

use pnet_stdlib::{StructType, Type};

/// Whether a value of static type `actual` may be used where `declared` is expected.
///
/// The rules: `Any` (on either side) is compatible with everything; element types of lists,
/// sets and maps are compared recursively; `shared_P` needs the same place; structs are
/// compared structurally: the same field names in the same order with compatible field types
/// (the struct's name does not matter, so an anonymous `Struct [a := 1L]` literal fits a
/// declared struct `s { a: long }`). Everything else must be equal; there is no promotion.
pub fn compatible(actual: &Type, declared: &Type) -> bool {
    actual.compatible(declared)
}

/// Whether the type mentions `Any` anywhere (it is not fully known).
pub fn has_any(ty: &Type) -> bool {
    match ty {
        Type::Any => true,
        Type::List(t) | Type::Set(t) => has_any(t),
        Type::Map(k, v) => has_any(k) || has_any(v),
        Type::Struct(s) => s.fields.iter().any(|(_, t)| has_any(t)),
        _ => false,
    }
}

/// The compiler-made name of an anonymous struct type with these fields, e.g.
/// `struct{a: long, b: int}`.
pub fn anonymous_struct_name(fields: &[(Arc<str>, Type)]) -> String {
    let mut name = String::from("struct{");
    for (i, (f, t)) in fields.iter().enumerate() {
        if i > 0 {
            name.push_str(", ");
        }
        name.push_str(f);
        name.push_str(": ");
        name.push_str(&type_name(t));
    }
    name.push('}');
    name
}

/// An anonymous struct type (the type of a `Struct [..]` literal or of a local variable built
/// by field assignments).
pub fn anonymous_struct(fields: Vec<(Arc<str>, Type)>) -> Type {
    let name = anonymous_struct_name(&fields);
    Type::Struct(Arc::new(StructType {
        name: Arc::from(name),
        fields,
    }))
}

/// The common type of collection elements: their type if they all agree, else `Any`.
/// No types at all (an empty collection) give `Any`.
pub fn common_type<'a>(mut tys: impl Iterator<Item = &'a Type>) -> Type {
    let Some(first) = tys.next() else {
        return Type::Any;
    };
    if tys.all(|t| t == first) {
        first.clone()
    } else {
        Type::Any
    }
}

pub use pnet_stdlib::type_name;

#[cfg(test)]
mod tests {
    use super::*;

    fn st(name: &str, fields: &[(&str, Type)]) -> Type {
        Type::Struct(Arc::new(StructType {
            name: Arc::from(name),
            fields: fields
                .iter()
                .map(|(n, t)| (Arc::from(*n), t.clone()))
                .collect(),
        }))
    }

    #[test]
    fn compatibility() {
        let l = |t: Type| Type::List(Box::new(t));
        let cases: Vec<(Type, Type, bool)> = vec![
            (Type::Int, Type::Int, true),
            (Type::Int, Type::Long, false),
            (Type::Any, Type::Long, true),
            (Type::Long, Type::Any, true),
            (l(Type::Any), l(Type::Long), true),
            (l(Type::Int), l(Type::Long), false),
            (l(Type::Int), Type::Set(Box::new(Type::Int)), false),
            (
                Type::Map(Box::new(Type::Int), Box::new(Type::Any)),
                Type::Map(Box::new(Type::Int), Box::new(Type::String)),
                true,
            ),
            (
                Type::Map(Box::new(Type::Int), Box::new(Type::Any)),
                Type::Map(Box::new(Type::Long), Box::new(Type::String)),
                false,
            ),
            (
                Type::Shared(Arc::from("p")),
                Type::Shared(Arc::from("p")),
                true,
            ),
            (
                Type::Shared(Arc::from("p")),
                Type::Shared(Arc::from("q")),
                false,
            ),
            (
                st("anon", &[("a", Type::Long)]),
                st("s", &[("a", Type::Long)]),
                true,
            ),
            (
                st("anon", &[("a", Type::Int)]),
                st("s", &[("a", Type::Long)]),
                false,
            ),
            (
                st("anon", &[("b", Type::Long)]),
                st("s", &[("a", Type::Long)]),
                false,
            ),
            (
                st("anon", &[("a", Type::Long), ("b", Type::Long)]),
                st("s", &[("b", Type::Long), ("a", Type::Long)]),
                false,
            ),
            (
                st("anon", &[("a", Type::Long)]),
                st("s", &[("a", Type::Long), ("b", Type::Int)]),
                false,
            ),
            (
                st("anon", &[("a", Type::Any)]),
                st("s", &[("a", Type::Long)]),
                true,
            ),
            (st("anon", &[]), st("s", &[]), true),
            (st("anon", &[]), Type::Control, false),
        ];
        for (actual, declared, want) in cases {
            assert_eq!(
                compatible(&actual, &declared),
                want,
                "{actual:?} vs {declared:?}"
            );
        }
    }

    #[test]
    fn any_detection_and_common_type() {
        assert!(has_any(&Type::List(Box::new(Type::Any))));
        assert!(!has_any(&Type::Map(
            Box::new(Type::Int),
            Box::new(Type::Long)
        )));
        assert!(has_any(&st("s", &[("a", Type::Any)])));
        assert_eq!(common_type([Type::Int, Type::Int].iter()), Type::Int);
        assert_eq!(common_type([Type::Int, Type::Long].iter()), Type::Any);
        assert_eq!(common_type([].iter()), Type::Any);
    }
}
