//! Reference counting of `shared_P` values.
//!
//! Model: a shared value's identity is the value itself (wrapped value + clean-up place). Its
//! count is the number of occurrences in live tokens: tokens on places that are not
//! `shared_sink` places and tokens held by running tasks and child nets. A shared nested in
//! another shared's wrapped value counts once per live outer shared: when the outer is born
//! (count 0 -> 1) its inner shareds are acquired, when it dies (1 -> 0) they are released.
//! A dead shared's wrapped value goes to the `shared_sink` place `P`; tokens on sink places
//! hold no references (so the nested shareds of a clean-up value are cleaned up too).
//!
//! A firing acquires the shareds of what it produces before it releases those of what it
//! consumed, so a pass-through never drops a count to zero.

use std::collections::BTreeMap;

use pnet_stdlib::{Type, Value};

/// The counts of the live shareds (the engine's, and the coloured explorer's rebuilt from a
/// marking before a firing).
#[derive(Clone, Debug, Default)]
pub struct SharedTable {
    counts: BTreeMap<Value, u64>,
}

impl SharedTable {
    /// Counts the shareds in `v` once more.
    pub fn acquire(&mut self, v: &Value) {
        match v {
            Value::Shared(s) => {
                if let Some(c) = self.counts.get_mut(v) {
                    *c += 1;
                } else {
                    self.counts.insert(v.clone(), 1);
                    self.acquire(&s.value);
                }
            }
            Value::List(xs) => xs.iter().for_each(|x| self.acquire(x)),
            Value::Set(xs) => xs.iter().for_each(|x| self.acquire(x)),
            Value::Map(m) => m.iter().for_each(|(k, x)| {
                self.acquire(k);
                self.acquire(x)
            }),
            Value::Struct(fs) => fs.iter().for_each(|(_, x)| self.acquire(x)),
            _ => {}
        }
    }

    /// Counts the shareds in `v` once less; those that die are appended to `dead` (outer
    /// before inner).
    pub fn release(&mut self, v: &Value, dead: &mut Vec<Value>) {
        match v {
            Value::Shared(s) => {
                let Some(c) = self.counts.get_mut(v) else {
                    return;
                };
                *c -= 1;
                if *c == 0 {
                    self.counts.remove(v);
                    dead.push(v.clone());
                    self.release(&s.value, dead);
                }
            }
            Value::List(xs) => xs.iter().for_each(|x| self.release(x, dead)),
            Value::Set(xs) => xs.iter().for_each(|x| self.release(x, dead)),
            Value::Map(m) => m.iter().for_each(|(k, x)| {
                self.release(k, dead);
                self.release(x, dead)
            }),
            Value::Struct(fs) => fs.iter().for_each(|(_, x)| self.release(x, dead)),
            _ => {}
        }
    }
}

/// Appends clones of the outermost shareds inside `v` to `out`.
pub fn collect(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Shared(_) => out.push(v.clone()),
        Value::List(xs) => xs.iter().for_each(|x| collect(x, out)),
        Value::Set(xs) => xs.iter().for_each(|x| collect(x, out)),
        Value::Map(m) => m.iter().for_each(|(k, x)| {
            collect(k, out);
            collect(x, out)
        }),
        Value::Struct(fs) => fs.iter().for_each(|(_, x)| collect(x, out)),
        _ => {}
    }
}

/// Whether a value of this type may contain a shared.
pub fn may_hold_shared(ty: &Type) -> bool {
    match ty {
        Type::Shared(_) | Type::Any => true,
        Type::List(t) | Type::Set(t) => may_hold_shared(t),
        Type::Map(k, v) => may_hold_shared(k) || may_hold_shared(v),
        Type::Struct(s) => s.fields.iter().any(|(_, t)| may_hold_shared(t)),
        _ => false,
    }
}

/// Whether a type names a shared anywhere (not counting `Any`).
pub fn mentions_shared(ty: &Type) -> bool {
    match ty {
        Type::Shared(_) => true,
        Type::List(t) | Type::Set(t) => mentions_shared(t),
        Type::Map(k, v) => mentions_shared(k) || mentions_shared(v),
        Type::Struct(s) => s.fields.iter().any(|(_, t)| mentions_shared(t)),
        _ => false,
    }
}

/// Whether a value contains a shared.
pub(crate) fn holds_shared(v: &Value) -> bool {
    match v {
        Value::Shared(_) => true,
        Value::List(xs) => xs.iter().any(holds_shared),
        Value::Set(xs) => xs.iter().any(holds_shared),
        Value::Map(m) => m.iter().any(|(k, x)| holds_shared(k) || holds_shared(x)),
        Value::Struct(fs) => fs.iter().any(|(_, x)| holds_shared(x)),
        _ => false,
    }
}
