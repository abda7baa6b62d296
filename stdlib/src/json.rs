//! The JSON encoding of values, used to hand inputs to modules and to read their outputs back.
//!
//! Encoding ([`to_json`]) needs no type; decoding ([`from_json`]) is guided by the port's
//! static type, so that module authors write natural JSON (`3` is an `int`, a `long` or an
//! `unsigned long` depending on the port).
//!
//! | type | JSON | decoding also accepts |
//! |---|---|---|
//! | `control` | `null` | `[]` and the string `"[]"` |
//! | `bool` | `true` / `false` | |
//! | `int`, `long`, `unsigned int`, `unsigned long` | an integer (exact, 64 bits) | a number with an integral value (`3.0`); range-checked |
//! | `float`, `double` | a number; NaN and the infinities as the strings `"NaN"`, `"Infinity"`, `"-Infinity"` | integers; `"nan"`, `"inf"`, `"-inf"` |
//! | `char` | a string of one character, U+0000..U+00FF (bytes 0x80..0xFF are Latin-1) | |
//! | `string` | a string | |
//! | `bigint` | a string of decimal digits with an optional `-` | integers |
//! | `bitset` | an array of the indices of the set bits, ascending | indices in any order, repeated |
//! | `bytearray` | an array of numbers 0..255 | |
//! | `list` | an array | |
//! | `set` | an array, in the language's order | any order, repeated elements |
//! | `map` | an array of `[key, value]` pairs, in key order | an object, when the key type is `string` |
//! | struct | an object with the fields | fields in any order (all of them, no others) |
//! | `shared_P` | a string holding the wrapped value in literal syntax (the type of the wrapped value is not known statically) | as for `any` |
//! | `any` (unknown) | the value's natural encoding (above) | a string holding a value in literal syntax; else `null`, `true`/`false`, integers (as `long`, or `unsigned long` above `i64::MAX`), fractions (`double`), arrays (`list`), objects (struct) |
//!
//! Decoding errors name the path of the offending part: `[3].x: expected unsigned long, found
//! -1`; [`from_json_at`] puts a prefix in front (`outputs.sum[3].x: ...`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;

use num_bigint::BigInt;
use serde_json::{Map as JsonMap, Number, Value as Json};

use crate::value::{Bitset, Shared};
use crate::{Type, Value};

/// Encodes a value as JSON (see the module documentation).
pub fn to_json(v: &Value) -> Json {
    match v {
        Value::Control => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Long(i) => Json::from(*i),
        Value::UInt(i) => Json::from(*i),
        Value::ULong(i) => Json::from(*i),
        Value::Float(x) => float(*x),
        Value::Double(x) => fractional(*x),
        Value::Char(c) => Json::String(char::from(*c as u8).to_string()),
        Value::String(s) => Json::String(s.to_string()),
        Value::Bigint(i) => Json::String(i.to_string()),
        Value::Bitset(b) => Json::Array(b.elements().map(Json::from).collect()),
        Value::Bytearray(bytes) => Json::Array(bytes.iter().map(|b| Json::from(*b)).collect()),
        Value::Shared(s) => Json::String(s.value.to_string()),
        Value::List(l) => Json::Array(l.iter().map(to_json).collect()),
        Value::Set(s) => Json::Array(s.iter().map(to_json).collect()),
        Value::Map(m) => Json::Array(
            m.iter()
                .map(|(k, v)| Json::Array(vec![to_json(k), to_json(v)]))
                .collect(),
        ),
        Value::Struct(fields) => Json::Object(
            fields
                .iter()
                .map(|(n, v)| (n.to_string(), to_json(v)))
                .collect(),
        ),
    }
}

/// A float as a JSON number: the shortest decimal that reads back as the same float, read
/// as a double (so JSON readers that parse to double and narrow to float get the same float
/// back); NaN and the infinities as strings.
fn float(x: f32) -> Json {
    if !x.is_finite() {
        return fractional(f64::from(x));
    }
    match x.to_string().parse::<f64>() {
        Ok(d) if d as f32 == x => fractional(d),
        _ => fractional(f64::from(x)),
    }
}

/// A double as a JSON number; NaN and the infinities as strings.
fn fractional(x: f64) -> Json {
    match Number::from_f64(x) {
        Some(n) => Json::Number(n),
        None if x.is_nan() => Json::String("NaN".into()),
        None if x > 0.0 => Json::String("Infinity".into()),
        None => Json::String("-Infinity".into()),
    }
}

/// Decodes a JSON value as a value of type `ty` (see the module documentation). The error
/// message starts with the path of the offending part, if it is not the whole value.
pub fn from_json(json: &Json, ty: &Type) -> Result<Value, String> {
    from_json_at(json, ty, "")
}

/// Like [`from_json`], with `root` in front of the path in error messages (for example
/// `outputs.sum`).
pub fn from_json_at(json: &Json, ty: &Type, root: &str) -> Result<Value, String> {
    decode(json, ty, 0).map_err(|e| e.render(root))
}

/// The deepest nesting decoded (deeper JSON is an error, not a stack overflow).
const MAX_DEPTH: usize = 200;

#[derive(Debug)]
enum Seg {
    Index(usize),
    Field(String),
    Key,
    MapValue,
    Shared,
}

/// A decoding error: the path (innermost segment first) and the message.
#[derive(Debug)]
struct DecodeError {
    path: Vec<Seg>,
    message: String,
}

impl DecodeError {
    fn new(message: String) -> DecodeError {
        DecodeError {
            path: Vec::new(),
            message,
        }
    }

    fn at(mut self, seg: Seg) -> DecodeError {
        self.path.push(seg);
        self
    }

    fn render(&self, root: &str) -> String {
        let mut p = root.to_string();
        for seg in self.path.iter().rev() {
            match seg {
                Seg::Index(i) => {
                    let _ = write!(p, "[{i}]");
                }
                Seg::Field(f) => {
                    if !p.is_empty() {
                        p.push('.');
                    }
                    p.push_str(f);
                }
                Seg::Key => p.push_str("<key>"),
                Seg::MapValue => p.push_str("<value>"),
                Seg::Shared => p.push_str("<shared>"),
            }
        }
        if p.is_empty() {
            self.message.clone()
        } else {
            format!("{p}: {}", self.message)
        }
    }
}

/// A short description of a JSON value for messages: numbers, booleans and null as they are,
/// strings quoted (shortened), arrays and objects by kind.
fn describe(json: &Json) -> String {
    match json {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) => {
            let mut short: String = s.chars().take(40).collect();
            if short.len() < s.len() {
                short.push_str("...");
            }
            format!("the string {}", Json::String(short))
        }
        Json::Array(a) if a.is_empty() => "an empty array".into(),
        Json::Array(_) => "an array".into(),
        Json::Object(_) => "an object".into(),
    }
}

fn mismatch(expected: &str, json: &Json) -> DecodeError {
    DecodeError::new(format!("expected {expected}, found {}", describe(json)))
}

/// An integer from a JSON number: exact integers, or fractions with an integral value.
fn integer(json: &Json) -> Option<i128> {
    let Json::Number(n) = json else {
        return None;
    };
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    let x = n.as_f64()?;
    // Integral and within ±2^64 (both bounds exact as doubles).
    (x.fract() == 0.0 && x.abs() < 18_446_744_073_709_551_616.0).then_some(x as i128)
}

fn int_of<T: TryFrom<i128>>(json: &Json, ty: &Type) -> Result<T, DecodeError> {
    let what = ty.to_string();
    let i = integer(json).ok_or_else(|| mismatch(&format!("an integer ({what})"), json))?;
    T::try_from(i)
        .map_err(|_| DecodeError::new(format!("expected {what}, found {i} (out of range)")))
}

fn double_of(json: &Json, what: &str) -> Result<f64, DecodeError> {
    match json {
        Json::Number(n) => n.as_f64().ok_or_else(|| mismatch(what, json)),
        Json::String(s) => match s.as_str() {
            "NaN" | "nan" => Ok(f64::NAN),
            "Infinity" | "inf" => Ok(f64::INFINITY),
            "-Infinity" | "-inf" => Ok(f64::NEG_INFINITY),
            _ => Err(mismatch(what, json)),
        },
        _ => Err(mismatch(what, json)),
    }
}

fn array<'a>(json: &'a Json, ty: &Type) -> Result<&'a Vec<Json>, DecodeError> {
    match json {
        Json::Array(a) => Ok(a),
        _ => Err(mismatch(&format!("an array ({ty})"), json)),
    }
}

fn decode(json: &Json, ty: &Type, depth: usize) -> Result<Value, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(DecodeError::new(format!(
            "nested deeper than {MAX_DEPTH} levels"
        )));
    }
    let depth = depth + 1;
    Ok(match ty {
        Type::Control => match json {
            Json::Null => Value::Control,
            Json::Array(a) if a.is_empty() => Value::Control,
            Json::String(s) if s == "[]" => Value::Control,
            _ => return Err(mismatch("null (control)", json)),
        },
        Type::Bool => match json {
            Json::Bool(b) => Value::Bool(*b),
            _ => return Err(mismatch("true or false (bool)", json)),
        },
        Type::Int => Value::Int(int_of(json, ty)?),
        Type::Long => Value::Long(int_of(json, ty)?),
        Type::UInt => Value::UInt(int_of(json, ty)?),
        Type::ULong => Value::ULong(int_of(json, ty)?),
        Type::Double => Value::Double(double_of(json, "a number (double)")?),
        Type::Float => {
            let x = double_of(json, "a number (float)")?;
            let f = x as f32;
            if f.is_infinite() && x.is_finite() {
                return Err(DecodeError::new(format!(
                    "expected float, found {} (out of range)",
                    describe(json)
                )));
            }
            Value::Float(f)
        }
        Type::Char => {
            let Json::String(s) = json else {
                return Err(mismatch("a string of one character (char)", json));
            };
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => match u8::try_from(u32::from(c)) {
                    Ok(b) => Value::Char(b as i8),
                    Err(_) => {
                        return Err(DecodeError::new(format!(
                            "expected a character up to U+00FF (char), found {}",
                            describe(json)
                        )));
                    }
                },
                _ => return Err(mismatch("a string of one character (char)", json)),
            }
        }
        Type::String => match json {
            Json::String(s) => Value::String(Arc::from(s.as_str())),
            _ => return Err(mismatch("a string", json)),
        },
        Type::Bigint => match json {
            Json::String(s) => match parse_bigint(s) {
                Some(i) => Value::bigint(i),
                None => return Err(mismatch("a decimal integer (bigint)", json)),
            },
            _ => match integer(json) {
                Some(i) => Value::bigint(BigInt::from(i)),
                None => return Err(mismatch("an integer or a string of digits (bigint)", json)),
            },
        },
        Type::Bitset => {
            let items = array(json, ty)?;
            let mut elements = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let bit = integer(item)
                    .and_then(|b| u64::try_from(b).ok())
                    .ok_or_else(|| {
                        DecodeError::new(format!(
                            "expected a bit index 0..={}, found {}",
                            u64::MAX,
                            describe(item)
                        ))
                        .at(Seg::Index(i))
                    })?;
                elements.push(bit);
            }
            Value::Bitset(Bitset::from_elements(elements))
        }
        Type::Bytearray => {
            let items = array(json, ty)?;
            let mut bytes = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let b = integer(item)
                    .and_then(|b| u8::try_from(b).ok())
                    .ok_or_else(|| {
                        DecodeError::new(format!(
                            "expected a byte 0..=255, found {}",
                            describe(item)
                        ))
                        .at(Seg::Index(i))
                    })?;
                bytes.push(b);
            }
            Value::Bytearray(bytes)
        }
        Type::Shared(place) => Value::Shared(Box::new(Shared {
            place: place.clone(),
            value: decode(json, &Type::Any, depth).map_err(|e| e.at(Seg::Shared))?,
        })),
        Type::List(t) => Value::List(
            array(json, ty)?
                .iter()
                .enumerate()
                .map(|(i, item)| decode(item, t, depth).map_err(|e| e.at(Seg::Index(i))))
                .collect::<Result<_, _>>()?,
        ),
        Type::Set(t) => Value::Set(
            array(json, ty)?
                .iter()
                .enumerate()
                .map(|(i, item)| decode(item, t, depth).map_err(|e| e.at(Seg::Index(i))))
                .collect::<Result<BTreeSet<_>, _>>()?,
        ),
        Type::Map(k, v) => decode_map(json, ty, k, v, depth)?,
        Type::Struct(st) => {
            let Json::Object(obj) = json else {
                return Err(mismatch(&format!("an object ({ty})"), json));
            };
            let mut fields = Vec::with_capacity(st.fields.len());
            for (name, t) in &st.fields {
                let Some(item) = obj.get(&**name) else {
                    return Err(DecodeError::new(format!(
                        "missing field `{name}` of {}",
                        st.name
                    )));
                };
                let value =
                    decode(item, t, depth).map_err(|e| e.at(Seg::Field(name.to_string())))?;
                fields.push((name.clone(), value));
            }
            if let Some(extra) = obj
                .keys()
                .find(|k| !st.fields.iter().any(|(n, _)| **n == *k.as_str()))
            {
                return Err(DecodeError::new(format!(
                    "unknown field `{extra}` (not in {})",
                    st.name
                )));
            }
            Value::Struct(fields)
        }
        Type::Any => decode_any(json, depth)?,
    })
}

fn decode_map(
    json: &Json,
    ty: &Type,
    k: &Type,
    v: &Type,
    depth: usize,
) -> Result<Value, DecodeError> {
    let mut map = BTreeMap::new();
    match json {
        Json::Object(obj) if matches!(k, Type::String) => {
            for (key, item) in obj {
                let value = decode(item, v, depth).map_err(|e| e.at(Seg::Field(key.clone())))?;
                map.insert(Value::String(Arc::from(key.as_str())), value);
            }
        }
        Json::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let pair = match item {
                    Json::Array(pair) if pair.len() == 2 => pair,
                    _ => {
                        return Err(mismatch("a [key, value] pair", item).at(Seg::Index(i)));
                    }
                };
                let key =
                    decode(&pair[0], k, depth).map_err(|e| e.at(Seg::Key).at(Seg::Index(i)))?;
                let value = decode(&pair[1], v, depth)
                    .map_err(|e| e.at(Seg::MapValue).at(Seg::Index(i)))?;
                if map.insert(key.clone(), value).is_some() {
                    return Err(DecodeError::new(format!("duplicate key {key}")).at(Seg::Index(i)));
                }
            }
        }
        _ => {
            let what = if matches!(k, Type::String) {
                format!("an array of [key, value] pairs or an object ({ty})")
            } else {
                format!("an array of [key, value] pairs ({ty})")
            };
            return Err(mismatch(&what, json));
        }
    }
    Ok(Value::Map(map))
}

/// Decodes a value of unknown type: a string holds literal syntax, the rest is read
/// naturally.
fn decode_any(json: &Json, depth: usize) -> Result<Value, DecodeError> {
    Ok(match json {
        Json::Null => Value::Control,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Long(i)
            } else if let Some(u) = n.as_u64() {
                Value::ULong(u)
            } else {
                Value::Double(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) => crate::literal::parse_literal(s).map_err(|e| {
            DecodeError::new(format!(
                "expected a value in literal syntax (the type is not known), found {}: {} at \
                 offset {}",
                describe(json),
                e.message,
                e.offset
            ))
        })?,
        Json::Array(items) => Value::List(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| decode_any_nested(item, depth, Seg::Index(i)))
                .collect::<Result<_, _>>()?,
        ),
        Json::Object(obj) => Value::Struct(
            obj.iter()
                .map(|(k, item)| {
                    Ok((
                        Arc::from(k.as_str()),
                        decode_any_nested(item, depth, Seg::Field(k.clone()))?,
                    ))
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

fn decode_any_nested(json: &Json, depth: usize, seg: Seg) -> Result<Value, DecodeError> {
    decode(json, &Type::Any, depth).map_err(|e| e.at(seg))
}

/// A decimal integer with an optional sign, nothing else (no spaces, no suffix).
fn parse_bigint(s: &str) -> Option<BigInt> {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Builds the JSON object of a module's ports: names with encoded values, in order.
pub fn object<'a>(ports: impl IntoIterator<Item = (&'a str, &'a Value)>) -> JsonMap<String, Json> {
    ports
        .into_iter()
        .map(|(n, v)| (n.to_string(), to_json(v)))
        .collect()
}

#[cfg(test)]
mod tests;
