//! Small helpers of the coloured explorer: the reference counting of `shared_P` values (by
//! value identity), recomputed from the marking.

use std::collections::BTreeSet;

use pnet_stdlib::Value;

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

pub(crate) use pnet_engine::{may_hold_shared, mentions_shared};

#[cfg(test)]
mod tests {
    use super::*;
    use pnet_engine::generator_value;
    use pnet_stdlib::Type;
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
        assert_eq!(pnet_stdlib::type_name(&Type::UInt), "unsigned int");
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
