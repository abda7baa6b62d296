//! Small helpers of the coloured explorer that mirror the engine's run-time rules: generator
//! values and the reference counting of `shared_P` values (by value identity).

use std::collections::BTreeSet;

use num_bigint::BigInt;
use pnet_stdlib::{Type, Value};

/// The `n`-th value of a generator place of type `ty` (as the engine computes it), or `None`
/// when the type has run out.
pub(crate) fn generator_value(ty: &Type, n: u128) -> Option<Value> {
    Some(match ty {
        Type::Int => Value::Int(i32::try_from(n).ok()?),
        Type::Long => Value::Long(i64::try_from(n).ok()?),
        Type::UInt => Value::UInt(u32::try_from(n).ok()?),
        Type::ULong => Value::ULong(u64::try_from(n).ok()?),
        Type::Char => Value::Char(i8::try_from(n.checked_add(u128::from(b'a'))?).ok()?),
        Type::String => {
            let mut m = n.checked_add(1)?;
            let mut s = Vec::new();
            while m > 0 {
                m -= 1;
                s.push(b'a' + (m % 26) as u8);
                m /= 26;
            }
            s.reverse();
            Value::string(std::str::from_utf8(&s).ok()?)
        }
        Type::Bigint => Value::bigint(BigInt::from(n)),
        _ => return None,
    })
}

/// The name of a generator type in error messages (as the engine spells it).
pub(crate) fn type_name(ty: &Type) -> String {
    match ty {
        Type::Int => "int".into(),
        Type::Long => "long".into(),
        Type::UInt => "unsigned int".into(),
        Type::ULong => "unsigned long".into(),
        Type::Char => "char".into(),
        Type::String => "string".into(),
        Type::Bigint => "bigint".into(),
        _ => ty.to_string(),
    }
}

/// Appends the outermost shareds inside `v` to `out`.
pub(crate) fn collect_shareds(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Shared(_) => out.push(v.clone()),
        Value::List(xs) => xs.iter().for_each(|x| collect_shareds(x, out)),
        Value::Set(xs) => xs.iter().for_each(|x| collect_shareds(x, out)),
        Value::Map(m) => m.iter().for_each(|(k, x)| {
            collect_shareds(k, out);
            collect_shareds(x, out)
        }),
        Value::Struct(fs) => fs.iter().for_each(|(_, x)| collect_shareds(x, out)),
        _ => {}
    }
}

/// The live shareds, given the outermost shareds of the tokens that hold references: those
/// and, transitively, the shareds nested in a live shared's wrapped value (the engine's
/// count of an inner shared is the number of live outer shareds holding it).
pub(crate) fn live_shareds(mut outer: Vec<Value>) -> BTreeSet<Value> {
    let mut live = BTreeSet::new();
    while let Some(s) = outer.pop() {
        if live.contains(&s) {
            continue;
        }
        if let Value::Shared(b) = &s {
            collect_shareds(&b.value, &mut outer);
        }
        live.insert(s);
    }
    live
}

/// Whether a value of this type may contain a shared.
pub(crate) fn may_hold_shared(ty: &Type) -> bool {
    match ty {
        Type::Shared(_) | Type::Any => true,
        Type::List(t) | Type::Set(t) => may_hold_shared(t),
        Type::Map(k, v) => may_hold_shared(k) || may_hold_shared(v),
        Type::Struct(s) => s.fields.iter().any(|(_, t)| may_hold_shared(t)),
        _ => false,
    }
}

/// Whether a type names a shared anywhere (not counting `Any`).
pub(crate) fn mentions_shared(ty: &Type) -> bool {
    match ty {
        Type::Shared(_) => true,
        Type::List(t) | Type::Set(t) => mentions_shared(t),
        Type::Map(k, v) => mentions_shared(k) || mentions_shared(v),
        Type::Struct(s) => s.fields.iter().any(|(_, t)| mentions_shared(t)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn shared(place: &str, v: Value) -> Value {
        Value::Shared(Box::new(pnet_stdlib::Shared {
            place: Arc::from(place),
            value: v,
        }))
    }

    #[test]
    fn generator_sequences_match_the_spec() {
        let s: Vec<String> = [0u128, 25, 26, 701, 702]
            .iter()
            .filter_map(|&n| generator_value(&Type::String, n))
            .map(|v| v.to_string())
            .collect();
        assert_eq!(s, ["\"a\"", "\"z\"", "\"aa\"", "\"zz\"", "\"aaa\""]);
        assert_eq!(generator_value(&Type::Char, 0), Some(Value::Char(97)));
        assert_eq!(generator_value(&Type::Char, 30), Some(Value::Char(127)));
        assert_eq!(generator_value(&Type::Char, 31), None);
        assert_eq!(generator_value(&Type::ULong, 3), Some(Value::ULong(3)));
        assert_eq!(generator_value(&Type::Int, 1u128 << 31), None);
        assert_eq!(generator_value(&Type::Bool, 0), None);
        assert_eq!(type_name(&Type::UInt), "unsigned int");
    }

    #[test]
    fn nested_shareds_live_through_their_outer_shared() {
        let inner = shared("c", Value::Long(1));
        let outer = shared("c", Value::List(vec![inner.clone(), Value::Long(2)]));
        let live = live_shareds(vec![outer.clone()]);
        assert!(live.contains(&inner) && live.contains(&outer));
        assert_eq!(live.len(), 2);
        let mut found = Vec::new();
        collect_shareds(
            &Value::Struct(vec![(Arc::from("x"), outer.clone())]),
            &mut found,
        );
        assert_eq!(found, vec![outer]);
        assert!(live_shareds(Vec::new()).is_empty());
        assert!(may_hold_shared(&Type::List(Box::new(Type::Any))));
        assert!(!mentions_shared(&Type::Any));
    }
}
