//! Suggestions for diagnostics: the nearest of some names to a misspelled one, and how to
//! write a value so that it has a given type (`100` for a `long` port: `100L`; a struct
//! value with a missing field: which one).
//!
//! One helper for every front end: the compiler (unknown places, ports, types, fields,
//! templates, functions), the runtime's tools (`gspc-run -p`) and the language server.

use num_bigint::BigInt;
use num_traits::ToPrimitive;

use crate::{Type, Value};

/// The edit distance (insertions, deletions, substitutions and swaps of two neighbours, each
/// costing 1) between `a` and `b`, counted in characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the optimal-string-alignment table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate nearest to `name` by [`edit_distance`], if it is near enough to be a likely
/// misspelling: at most one edit for names of up to four characters, at most a third of the
/// longer name's length otherwise, and never more than half of it (`limt` → `limit`, `maxx`
/// → `max`, `plce` → `place`; `p` is not a misspelling of `v`). A candidate equal to `name`
/// is not suggested; ties go to the first candidate; an ASCII case difference alone always
/// counts as near.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        if c == name {
            continue;
        }
        let d = if c.eq_ignore_ascii_case(name) {
            0
        } else {
            edit_distance(name, c)
        };
        let longer = name.chars().count().max(c.chars().count());
        let limit = if longer <= 4 { 1 } else { longer / 3 };
        // Half of the longer name at most: `p` is not a misspelling of `v`.
        if d <= limit && 2 * d <= longer && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `did you mean `NAME`?` for the [`nearest`] candidate, if any.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    nearest(name, candidates).map(|c| format!("did you mean `{c}`?"))
}

/// `value` converted to the numeric type `ty`, when it is a number whose value `ty` can hold
/// exactly (`100` as `long`: `100L`; `1.5` as `float`: `1.5f`; `-1` as `unsigned long`:
/// none). `None` for other values and types.
pub fn number_as(value: &Value, ty: &Type) -> Option<Value> {
    let int: Option<BigInt> = match value {
        Value::Int(i) => Some(BigInt::from(*i)),
        Value::Long(i) => Some(BigInt::from(*i)),
        Value::UInt(i) => Some(BigInt::from(*i)),
        Value::ULong(i) => Some(BigInt::from(*i)),
        Value::Bigint(i) => Some((**i).clone()),
        _ => None,
    };
    let frac: Option<f64> = match value {
        Value::Float(x) => Some(f64::from(*x)),
        Value::Double(x) => Some(*x),
        _ => int.as_ref().and_then(|i| {
            let x = i.to_f64()?;
            // Only integers a double holds exactly.
            (x.abs() < 9_007_199_254_740_992.0).then_some(x)
        }),
    };
    if let Some(i) = &int {
        let v = match ty {
            Type::Int => i.to_i32().map(Value::Int),
            Type::Long => i.to_i64().map(Value::Long),
            Type::UInt => i.to_u32().map(Value::UInt),
            Type::ULong => i.to_u64().map(Value::ULong),
            Type::Bigint => Some(Value::Bigint(Box::new(i.clone()))),
            _ => None,
        };
        if v.is_some() {
            return v;
        }
    }
    let x = frac?;
    match ty {
        Type::Double => Some(Value::Double(x)),
        Type::Float => {
            let f = x as f32;
            (f64::from(f) == x).then_some(Value::Float(f))
        }
        Type::Int | Type::Long | Type::UInt | Type::ULong | Type::Bigint
            if int.is_none() && x.fract() == 0.0 && x.is_finite() =>
        {
            number_as(&Value::Bigint(Box::new(BigInt::from(x as i128))), ty)
        }
        _ => None,
    }
}

/// Why `value` is not of type `ty`, as a hint for the user, when one is known: the literal
/// to write for a number of another numeric type (`write 100L`), the missing, extra or
/// mistyped field of a struct value (`field `hi` is missing`), the element of a collection
/// that does not fit. `None` when the value fits or nothing better than "not of type" is
/// known.
pub fn mismatch_hint(value: &Value, ty: &Type) -> Option<String> {
    if value.fits(ty) {
        return None;
    }
    if let Some(v) = number_as(value, ty) {
        return Some(format!("write {v}"));
    }
    match (value, ty) {
        (Value::Struct(fields), Type::Struct(st)) => {
            let missing: Vec<&str> = st
                .fields
                .iter()
                .filter(|(n, _)| !fields.iter().any(|(m, _)| m == n))
                .map(|(n, _)| &**n)
                .collect();
            let extra: Vec<&str> = fields
                .iter()
                .filter(|(n, _)| !st.fields.iter().any(|(m, _)| m == n))
                .map(|(n, _)| &**n)
                .collect();
            let mut parts = Vec::new();
            if !missing.is_empty() {
                parts.push(format!(
                    "{} {} missing",
                    fields_list(&missing),
                    if missing.len() == 1 { "is" } else { "are" }
                ));
            }
            for e in &extra {
                let mut s = format!("field `{e}` is not in {}", type_name_of(ty));
                if let Some(c) = nearest(e, missing.iter().copied()) {
                    s.push_str(&format!(" (did you mean `{c}`?)"));
                }
                parts.push(s);
            }
            if parts.is_empty() {
                // Same names: a field of the wrong type, or the fields in another order.
                for ((n, v), (_, t)) in fields.iter().zip(st.fields.iter()) {
                    if !v.fits(t) {
                        let inner = mismatch_hint(v, t)
                            .map(|h| format!(": {h}"))
                            .unwrap_or_default();
                        return Some(format!("field `{n}` is not of type {t}{inner}"));
                    }
                }
                let order: Vec<&str> = st.fields.iter().map(|(n, _)| &**n).collect();
                return Some(format!(
                    "write the fields in the order {}",
                    order.join(", ")
                ));
            }
            Some(parts.join("; "))
        }
        (Value::List(_), Type::List(t)) | (Value::Set(_), Type::Set(t)) => {
            let bad = match value {
                Value::Set(s) => s.iter().find(|v| !v.fits(t)),
                Value::List(l) => l.iter().find(|v| !v.fits(t)),
                _ => None,
            }?;
            let inner = mismatch_hint(bad, t)
                .map(|h| format!(": {h}"))
                .unwrap_or_default();
            Some(format!("element {bad} is not of type {t}{inner}"))
        }
        _ => None,
    }
}

fn type_name_of(ty: &Type) -> String {
    let name = crate::ty::attribute_name(ty);
    match ty {
        Type::Struct(_) => format!("`{name}`"),
        _ => name,
    }
}

fn fields_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    if names.len() == 1 {
        format!("field {}", quoted[0])
    } else {
        format!("fields {}", quoted.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StructType;
    use std::sync::Arc;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("limt", "limit"), 1);
        assert_eq!(edit_distance("maxx", "max"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("é", "e"), 1);
    }

    #[test]
    fn nearest_names() {
        let ports = ["limit", "start", "n"];
        assert_eq!(nearest("limt", ports), Some("limit"));
        assert_eq!(nearest("strat", ports), Some("start"));
        assert_eq!(nearest("m", ports), None);
        assert_eq!(nearest("nn", ports), Some("n"));
        assert_eq!(nearest("limit", ports), None);
        assert_eq!(nearest("xyz", ports), None);
        assert_eq!(nearest("maxx", ["min", "max", "abs"]), Some("max"));
        assert_eq!(nearest("LIMIT", ports), Some("limit"));
        assert_eq!(nearest("counterr", ["counter", "done"]), Some("counter"));
        assert_eq!(
            did_you_mean("dnoe", ["counter", "done"]).as_deref(),
            Some("did you mean `done`?")
        );
        assert_eq!(did_you_mean("x", Vec::<&str>::new()), None);
    }

    #[test]
    fn numbers() {
        let hint = |v: Value, t: Type| mismatch_hint(&v, &t);
        assert_eq!(
            hint(Value::Int(100), Type::Long).as_deref(),
            Some("write 100L")
        );
        assert_eq!(
            hint(Value::Int(100), Type::ULong).as_deref(),
            Some("write 100UL")
        );
        assert_eq!(hint(Value::Long(7), Type::Int).as_deref(), Some("write 7"));
        assert_eq!(hint(Value::Int(-1), Type::UInt), None);
        assert_eq!(
            hint(Value::Int(2), Type::Double).as_deref(),
            Some("write 2.0")
        );
        assert_eq!(
            hint(Value::Double(0.5), Type::Float).as_deref(),
            Some("write 0.5f")
        );
        assert_eq!(hint(Value::Double(0.1), Type::Float), None);
        assert_eq!(
            hint(Value::Double(3.0), Type::Long).as_deref(),
            Some("write 3L")
        );
        assert_eq!(hint(Value::Double(3.5), Type::Long), None);
        assert_eq!(hint(Value::Long(1), Type::Long), None);
        assert_eq!(hint(Value::Int(1), Type::String), None);
    }

    fn range() -> Type {
        Type::Struct(Arc::new(StructType {
            name: Arc::from("range"),
            fields: vec![(Arc::from("lo"), Type::Long), (Arc::from("hi"), Type::Long)],
        }))
    }

    fn value(fields: &[(&str, Value)]) -> Value {
        Value::Struct(
            fields
                .iter()
                .map(|(n, v)| (Arc::from(*n), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn structs() {
        let hint = |v: Value| mismatch_hint(&v, &range());
        assert_eq!(
            hint(value(&[("lo", Value::Long(0))])).as_deref(),
            Some("field `hi` is missing")
        );
        assert_eq!(
            hint(value(&[])).as_deref(),
            Some("fields `lo`, `hi` are missing")
        );
        assert_eq!(
            hint(value(&[("lo", Value::Long(0)), ("hii", Value::Long(1))])).as_deref(),
            Some("field `hi` is missing; field `hii` is not in `range` (did you mean `hi`?)")
        );
        assert_eq!(
            hint(value(&[("lo", Value::Long(0)), ("hi", Value::Int(1))])).as_deref(),
            Some("field `hi` is not of type long: write 1L")
        );
        assert_eq!(
            hint(value(&[("hi", Value::Long(0)), ("lo", Value::Long(1))])).as_deref(),
            Some("write the fields in the order lo, hi")
        );
        assert_eq!(
            mismatch_hint(
                &Value::List(vec![Value::Int(1)]),
                &Type::List(Box::new(Type::Long))
            )
            .as_deref(),
            Some("element 1 is not of type long: write 1L")
        );
    }
}
