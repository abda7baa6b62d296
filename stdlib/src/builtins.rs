//! Built-in functions: names, arities, type signatures and evaluation.

use serde::{Deserialize, Serialize};

use std::cmp::Ordering;
use std::sync::Arc;

use num_bigint::BigInt;
use num_traits::{FromPrimitive, Signed, ToPrimitive};

use crate::ops::{FRACTIONAL, NUMBERS, SIGNED, in_kinds, kind_error, kind_name, lang_cmp};
use crate::value::{Bitset, MAX_VALUE_DEPTH};
use crate::{EvalError, Shared, Type, TypeError, Value};

/// A built-in function of the expression language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Builtin {
    Abs,
    Floor,
    Ceil,
    Round,
    Sin,
    Cos,
    Sqrt,
    Log,
    ToInt,
    ToLong,
    ToUInt,
    ToULong,
    ToFloat,
    ToDouble,
    ToBigint,
    BitsetCount,
    BitsetToHex,
    BitsetFromHex,
    StackEmpty,
    StackTop,
    StackPop,
    StackSize,
    SetEmpty,
    SetTop,
    SetPop,
    SetSize,
    MapSize,
    MapEmpty,
    Min,
    Max,
    BitsetInsert,
    BitsetDelete,
    BitsetIsElement,
    BitsetOr,
    BitsetAnd,
    BitsetXor,
    StackPush,
    StackJoin,
    SetInsert,
    SetErase,
    SetIsElement,
    SetIsSubset,
    MapUnassign,
    MapIsAssigned,
    MapGetAssignment,
    MapAssign,
}

impl Builtin {
    /// Every built-in, for completion and documentation.
    pub const ALL: &'static [Builtin] = &[
        Builtin::Abs,
        Builtin::Floor,
        Builtin::Ceil,
        Builtin::Round,
        Builtin::Sin,
        Builtin::Cos,
        Builtin::Sqrt,
        Builtin::Log,
        Builtin::ToInt,
        Builtin::ToLong,
        Builtin::ToUInt,
        Builtin::ToULong,
        Builtin::ToFloat,
        Builtin::ToDouble,
        Builtin::ToBigint,
        Builtin::BitsetCount,
        Builtin::BitsetToHex,
        Builtin::BitsetFromHex,
        Builtin::StackEmpty,
        Builtin::StackTop,
        Builtin::StackPop,
        Builtin::StackSize,
        Builtin::SetEmpty,
        Builtin::SetTop,
        Builtin::SetPop,
        Builtin::SetSize,
        Builtin::MapSize,
        Builtin::MapEmpty,
        Builtin::Min,
        Builtin::Max,
        Builtin::BitsetInsert,
        Builtin::BitsetDelete,
        Builtin::BitsetIsElement,
        Builtin::BitsetOr,
        Builtin::BitsetAnd,
        Builtin::BitsetXor,
        Builtin::StackPush,
        Builtin::StackJoin,
        Builtin::SetInsert,
        Builtin::SetErase,
        Builtin::SetIsElement,
        Builtin::SetIsSubset,
        Builtin::MapUnassign,
        Builtin::MapIsAssigned,
        Builtin::MapGetAssignment,
        Builtin::MapAssign,
    ];

    /// The name as written in expressions (`abs`, `int`, `bitset_insert`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Abs => "abs",
            Builtin::Floor => "floor",
            Builtin::Ceil => "ceil",
            Builtin::Round => "round",
            Builtin::Sin => "sin",
            Builtin::Cos => "cos",
            Builtin::Sqrt => "sqrt",
            Builtin::Log => "log",
            Builtin::ToInt => "int",
            Builtin::ToLong => "long",
            Builtin::ToUInt => "uint",
            Builtin::ToULong => "ulong",
            Builtin::ToFloat => "float",
            Builtin::ToDouble => "double",
            Builtin::ToBigint => "bigint",
            Builtin::BitsetCount => "bitset_count",
            Builtin::BitsetToHex => "bitset_tohex",
            Builtin::BitsetFromHex => "bitset_fromhex",
            Builtin::StackEmpty => "stack_empty",
            Builtin::StackTop => "stack_top",
            Builtin::StackPop => "stack_pop",
            Builtin::StackSize => "stack_size",
            Builtin::SetEmpty => "set_empty",
            Builtin::SetTop => "set_top",
            Builtin::SetPop => "set_pop",
            Builtin::SetSize => "set_size",
            Builtin::MapSize => "map_size",
            Builtin::MapEmpty => "map_empty",
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::BitsetInsert => "bitset_insert",
            Builtin::BitsetDelete => "bitset_delete",
            Builtin::BitsetIsElement => "bitset_is_element",
            Builtin::BitsetOr => "bitset_or",
            Builtin::BitsetAnd => "bitset_and",
            Builtin::BitsetXor => "bitset_xor",
            Builtin::StackPush => "stack_push",
            Builtin::StackJoin => "stack_join",
            Builtin::SetInsert => "set_insert",
            Builtin::SetErase => "set_erase",
            Builtin::SetIsElement => "set_is_element",
            Builtin::SetIsSubset => "set_is_subset",
            Builtin::MapUnassign => "map_unassign",
            Builtin::MapIsAssigned => "map_is_assigned",
            Builtin::MapGetAssignment => "map_get_assignment",
            Builtin::MapAssign => "map_assign",
        }
    }

    /// The built-in called `name`, if any.
    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.iter().copied().find(|b| b.name() == name)
    }

    /// Number of arguments (1, 2 or 3).
    pub fn arity(self) -> usize {
        match self {
            Builtin::MapAssign => 3,
            Builtin::Min
            | Builtin::Max
            | Builtin::BitsetInsert
            | Builtin::BitsetDelete
            | Builtin::BitsetIsElement
            | Builtin::BitsetOr
            | Builtin::BitsetAnd
            | Builtin::BitsetXor
            | Builtin::StackPush
            | Builtin::StackJoin
            | Builtin::SetInsert
            | Builtin::SetErase
            | Builtin::SetIsElement
            | Builtin::SetIsSubset
            | Builtin::MapUnassign
            | Builtin::MapIsAssigned
            | Builtin::MapGetAssignment => 2,
            _ => 1,
        }
    }

    /// A human-readable signature for documentation and hover, e.g.
    /// `bitset_insert (bitset, unsigned long) -> bitset`.
    pub fn signature(self) -> &'static str {
        match self {
            Builtin::Abs => "abs (T) -> T, T one of int, long, float, double, bigint",
            Builtin::Floor => "floor (T) -> T, T a number (integers unchanged)",
            Builtin::Ceil => "ceil (T) -> T, T a number (integers unchanged)",
            Builtin::Round => {
                "round (T) -> T, T a number (halves away from zero; integers unchanged)"
            }
            Builtin::Sin => "sin (T) -> T, T one of float, double",
            Builtin::Cos => "cos (T) -> T, T one of float, double",
            Builtin::Sqrt => "sqrt (T) -> T, T one of float, double",
            Builtin::Log => "log (T) -> T, T one of float, double",
            Builtin::ToInt => "int (number) -> int",
            Builtin::ToLong => "long (number) -> long",
            Builtin::ToUInt => "uint (number) -> unsigned int",
            Builtin::ToULong => "ulong (number) -> unsigned long",
            Builtin::ToFloat => "float (number) -> float",
            Builtin::ToDouble => "double (number) -> double",
            Builtin::ToBigint => "bigint (number) -> bigint",
            Builtin::BitsetCount => "bitset_count (bitset) -> unsigned long",
            Builtin::BitsetToHex => "bitset_tohex (bitset) -> string",
            Builtin::BitsetFromHex => "bitset_fromhex (string) -> bitset",
            Builtin::StackEmpty => "stack_empty (list) -> bool",
            Builtin::StackTop => "stack_top (list<T>) -> T",
            Builtin::StackPop => "stack_pop (list<T>) -> list<T>",
            Builtin::StackSize => "stack_size (list) -> unsigned long",
            Builtin::SetEmpty => "set_empty (set) -> bool",
            Builtin::SetTop => "set_top (set<T>) -> T",
            Builtin::SetPop => "set_pop (set<T>) -> set<T>",
            Builtin::SetSize => "set_size (set) -> unsigned long",
            Builtin::MapSize => "map_size (map) -> unsigned long",
            Builtin::MapEmpty => "map_empty (map) -> bool",
            Builtin::Min => "min (T, T) -> T, T a number type",
            Builtin::Max => "max (T, T) -> T, T a number type",
            Builtin::BitsetInsert => "bitset_insert (bitset, unsigned long) -> bitset",
            Builtin::BitsetDelete => "bitset_delete (bitset, unsigned long) -> bitset",
            Builtin::BitsetIsElement => "bitset_is_element (bitset, unsigned long) -> bool",
            Builtin::BitsetOr => "bitset_or (bitset, bitset) -> bitset",
            Builtin::BitsetAnd => "bitset_and (bitset, bitset) -> bitset",
            Builtin::BitsetXor => "bitset_xor (bitset, bitset) -> bitset",
            Builtin::StackPush => "stack_push (list<T>, T) -> list<T>",
            Builtin::StackJoin => "stack_join (list<T>, list<T>) -> list<T>",
            Builtin::SetInsert => "set_insert (set<T>, T) -> set<T>",
            Builtin::SetErase => "set_erase (set<T>, T) -> set<T>",
            Builtin::SetIsElement => "set_is_element (set<T>, T) -> bool",
            Builtin::SetIsSubset => "set_is_subset (set<T>, set<T>) -> bool",
            Builtin::MapUnassign => "map_unassign (map<K, V>, K) -> map<K, V>",
            Builtin::MapIsAssigned => "map_is_assigned (map<K, V>, K) -> bool",
            Builtin::MapGetAssignment => "map_get_assignment (map<K, V>, K) -> V",
            Builtin::MapAssign => "map_assign (map<K, V>, K, V) -> map<K, V>",
        }
    }

    /// The static result type for these argument types, or why they do not fit.
    ///
    /// `Any` arguments pass where some concrete type would. Container results are
    /// conservative: `stack_push (list<any>, long)` is `list<any>` (the list's other elements
    /// are still unknown), see [`Type::lub`]; adding elements of another type
    /// (`stack_push`, `stack_join`, `set_insert`, `map_assign`) gives a container of the
    /// union, `Any`; `stack_top (list<T>)` is `T`. Sizes and `bitset_count` are `unsigned
    /// long` (GPI-Space compares `bitset_count` with an `unsigned long` port). `floor`,
    /// `ceil` and `round` take every number and give the argument's type. The math
    /// functions `sin cos sqrt log` take float and double; on constant integers they are
    /// folded before typing (see [`Builtin::eval`]).
    pub fn check(self, args: &[Type]) -> Result<Type, TypeError> {
        let name = self.name();
        if args.len() != self.arity() {
            let n = self.arity();
            return Err(TypeError::new(format!(
                "`{name}` takes {n} argument{}, found {}",
                if n == 1 { "" } else { "s" },
                args.len()
            )));
        }
        let want = |i: usize, ty: Type| -> Result<Type, TypeError> {
            args[i].unify(&ty).ok_or_else(|| {
                TypeError::new(format!(
                    "`{name}` expects `{ty}` as argument {}, found `{}`",
                    i + 1,
                    args[i]
                ))
            })
        };
        let kind = |i: usize, kinds: &[&str]| -> Result<Type, TypeError> {
            if in_kinds(&args[i], kinds) {
                Ok(args[i].clone())
            } else {
                Err(kind_error(name, kinds, &args[i]))
            }
        };
        let list = |i: usize| -> Result<Type, TypeError> {
            match want(i, Type::List(Box::new(Type::Any)))? {
                Type::List(e) => Ok(*e),
                _ => Ok(Type::Any),
            }
        };
        let set = |i: usize| -> Result<Type, TypeError> {
            match want(i, Type::Set(Box::new(Type::Any)))? {
                Type::Set(e) => Ok(*e),
                _ => Ok(Type::Any),
            }
        };
        let map = |i: usize| -> Result<(Type, Type), TypeError> {
            match want(i, Type::Map(Box::new(Type::Any), Box::new(Type::Any)))? {
                Type::Map(k, v) => Ok((*k, *v)),
                _ => Ok((Type::Any, Type::Any)),
            }
        };
        // An element argument `i` that must fit the element type `elem`; gives the lub.
        let elem = |i: usize, elem: &Type| -> Result<Type, TypeError> {
            elem.lub(&args[i]).ok_or_else(|| {
                TypeError::new(format!(
                    "`{name}` expects an element of type `{elem}` as argument {}, found `{}`",
                    i + 1,
                    args[i]
                ))
            })
        };
        // Adding elements of another type gives a container of the union of both types
        // (`stack_join (List (1), List (2L))` = `List (1, 2L)`), like a mixed literal: the
        // union is `Any`.
        let union = |a: &Type, b: &Type| a.lub(b).unwrap_or(Type::Any);
        Ok(match self {
            Builtin::Abs => kind(0, SIGNED)?,
            // As in GPI-Space, also on every integer type: the argument, unchanged.
            Builtin::Floor | Builtin::Ceil | Builtin::Round => kind(0, NUMBERS)?,
            Builtin::Sin | Builtin::Cos | Builtin::Sqrt | Builtin::Log => kind(0, FRACTIONAL)?,
            Builtin::ToInt
            | Builtin::ToLong
            | Builtin::ToUInt
            | Builtin::ToULong
            | Builtin::ToFloat
            | Builtin::ToDouble
            | Builtin::ToBigint => {
                kind(0, NUMBERS)?;
                match self {
                    Builtin::ToInt => Type::Int,
                    Builtin::ToLong => Type::Long,
                    Builtin::ToUInt => Type::UInt,
                    Builtin::ToULong => Type::ULong,
                    Builtin::ToFloat => Type::Float,
                    Builtin::ToDouble => Type::Double,
                    _ => Type::Bigint,
                }
            }
            Builtin::BitsetCount => {
                want(0, Type::Bitset)?;
                Type::ULong
            }
            Builtin::BitsetToHex => {
                want(0, Type::Bitset)?;
                Type::String
            }
            Builtin::BitsetFromHex => {
                want(0, Type::String)?;
                Type::Bitset
            }
            Builtin::StackEmpty => {
                list(0)?;
                Type::Bool
            }
            Builtin::StackTop => list(0)?,
            Builtin::StackPop => Type::List(Box::new(list(0)?)),
            Builtin::StackSize => {
                list(0)?;
                Type::ULong
            }
            Builtin::SetEmpty => {
                set(0)?;
                Type::Bool
            }
            Builtin::SetTop => set(0)?,
            Builtin::SetPop => Type::Set(Box::new(set(0)?)),
            Builtin::SetSize => {
                set(0)?;
                Type::ULong
            }
            Builtin::MapSize => {
                map(0)?;
                Type::ULong
            }
            Builtin::MapEmpty => {
                map(0)?;
                Type::Bool
            }
            Builtin::Min | Builtin::Max => {
                let t = args[0].unify(&args[1]).ok_or_else(|| {
                    TypeError::new(format!(
                        "arguments of `{name}` must have the same type, found `{}` and `{}`",
                        args[0], args[1]
                    ))
                })?;
                if !in_kinds(&t, NUMBERS) {
                    return Err(kind_error(name, &["numbers"], &t));
                }
                t
            }
            Builtin::BitsetInsert | Builtin::BitsetDelete => {
                want(0, Type::Bitset)?;
                want(1, Type::ULong)?;
                Type::Bitset
            }
            Builtin::BitsetIsElement => {
                want(0, Type::Bitset)?;
                want(1, Type::ULong)?;
                Type::Bool
            }
            Builtin::BitsetOr | Builtin::BitsetAnd | Builtin::BitsetXor => {
                want(0, Type::Bitset)?;
                want(1, Type::Bitset)?;
                Type::Bitset
            }
            Builtin::StackPush => {
                let e = list(0)?;
                Type::List(Box::new(union(&e, &args[1])))
            }
            Builtin::StackJoin => {
                let e = list(0)?;
                let f = list(1)?;
                Type::List(Box::new(union(&e, &f)))
            }
            Builtin::SetInsert => {
                let e = set(0)?;
                Type::Set(Box::new(union(&e, &args[1])))
            }
            Builtin::SetErase => {
                let e = set(0)?;
                elem(1, &e)?;
                Type::Set(Box::new(e))
            }
            Builtin::SetIsElement => {
                let e = set(0)?;
                elem(1, &e)?;
                Type::Bool
            }
            Builtin::SetIsSubset => {
                let e = set(0)?;
                let f = set(1)?;
                if e.unify(&f).is_none() {
                    return Err(TypeError::new(format!(
                        "`{name}` expects sets of the same type, found `{}` and `{}`",
                        args[0], args[1]
                    )));
                }
                Type::Bool
            }
            Builtin::MapUnassign => {
                let (k, v) = map(0)?;
                elem(1, &k)?;
                Type::Map(Box::new(k), Box::new(v))
            }
            Builtin::MapIsAssigned => {
                let (k, _) = map(0)?;
                elem(1, &k)?;
                Type::Bool
            }
            Builtin::MapGetAssignment => {
                let (k, v) = map(0)?;
                elem(1, &k)?;
                v
            }
            Builtin::MapAssign => {
                let (k, v) = map(0)?;
                Type::Map(Box::new(union(&k, &args[1])), Box::new(union(&v, &args[2])))
            }
        })
    }

    /// Evaluates the function (pure: arguments are not changed).
    ///
    /// Run-time errors: `sqrt` of a negative, `log` of a non-positive number, `stack_top`,
    /// `stack_pop`, `set_top`, `set_pop` of an empty container, `map_get_assignment` of a
    /// missing key, a float-to-integer cast whose value does not fit (see [`cast`]),
    /// `bitset_fromhex` of a malformed string (or of a word beyond the largest unsigned
    /// long's: see [`crate::value::bitset`]), and arguments of the wrong type or number
    /// ([`EvalError::TypeMismatch`]). Bitset elements go up to the largest unsigned long.
    ///
    /// Other choices: `abs` wraps (`abs(-2147483648)` is `-2147483648`); `min (a, b)` is `b`
    /// when `b < a` and `a` otherwise, `max (a, b)` is `b` when `a < b` and `a` otherwise (as
    /// C++'s `std::min`/`std::max`, so NaN operands give `a`); `set_is_subset (a, b)` is
    /// whether `a` is a subset of `b`; `bitset_tohex` prints every stored word in lowercase
    /// (skipping runs of zero words in sets of more than 2^16 words, see
    /// [`Bitset::to_hex`]); `bitset_fromhex` accepts 1 to 16 hex digits (either case) per
    /// word; `bitset_and` keeps the shorter length, `bitset_or`/`bitset_xor` the longer.
    pub fn eval(self, args: &[Value]) -> Result<Value, EvalError> {
        let name = self.name();
        if args.len() != self.arity() {
            return Err(EvalError::TypeMismatch(format!(
                "`{name}` takes {} arguments, found {}",
                self.arity(),
                args.len()
            )));
        }
        let bad = || {
            EvalError::TypeMismatch(format!(
                "`{name}` cannot be applied to {}",
                args.iter().map(kind_name).collect::<Vec<_>>().join(" and ")
            ))
        };
        let empty = || EvalError::EmptyContainer(name);
        Ok(match (self, args) {
            (Builtin::Abs, [Value::Int(i)]) => Value::Int(i.wrapping_abs()),
            (Builtin::Abs, [Value::Long(i)]) => Value::Long(i.wrapping_abs()),
            (Builtin::Abs, [Value::Float(x)]) => Value::Float(x.abs()),
            (Builtin::Abs, [Value::Double(x)]) => Value::Double(x.abs()),
            (Builtin::Abs, [Value::Bigint(i)]) => Value::bigint(i.abs()),
            (Builtin::Sqrt, [Value::Float(x)]) if *x < 0.0 => {
                return Err(EvalError::SqrtOfNegative);
            }
            (Builtin::Sqrt, [Value::Double(x)]) if *x < 0.0 => {
                return Err(EvalError::SqrtOfNegative);
            }
            (Builtin::Log, [Value::Float(x)]) if *x <= 0.0 => {
                return Err(EvalError::LogOfNonPositive);
            }
            (Builtin::Log, [Value::Double(x)]) if *x <= 0.0 => {
                return Err(EvalError::LogOfNonPositive);
            }
            (
                Builtin::Floor | Builtin::Ceil | Builtin::Round,
                [
                    v @ (Value::Int(_)
                    | Value::Long(_)
                    | Value::UInt(_)
                    | Value::ULong(_)
                    | Value::Bigint(_)),
                ],
            ) => v.clone(),
            (
                Builtin::Floor
                | Builtin::Ceil
                | Builtin::Round
                | Builtin::Sin
                | Builtin::Cos
                | Builtin::Sqrt
                | Builtin::Log,
                [Value::Float(x)],
            ) => Value::Float(math(self, f64::from(*x)) as f32),
            (
                Builtin::Floor
                | Builtin::Ceil
                | Builtin::Round
                | Builtin::Sin
                | Builtin::Cos
                | Builtin::Sqrt
                | Builtin::Log,
                [Value::Double(x)],
            ) => Value::Double(math(self, *x)),
            // The math functions on an integer give a double (GPI-Space folds `sin (3)`,
            // `sqrt (4U)`; the checker refuses integer ports).
            (Builtin::Sin | Builtin::Cos | Builtin::Sqrt | Builtin::Log, [v])
                if v.ty().is_integral() =>
            {
                let x = match cast(Builtin::ToDouble, v)? {
                    Value::Double(x) => x,
                    _ => return Err(bad()),
                };
                return self.eval(&[Value::Double(x)]);
            }
            (
                Builtin::ToInt
                | Builtin::ToLong
                | Builtin::ToUInt
                | Builtin::ToULong
                | Builtin::ToFloat
                | Builtin::ToDouble
                | Builtin::ToBigint,
                [v],
            ) => cast(self, v)?,
            (Builtin::BitsetCount, [Value::Bitset(b)]) => Value::ULong(b.count()),
            (Builtin::BitsetToHex, [Value::Bitset(b)]) => Value::String(b.to_hex().into()),
            (Builtin::BitsetFromHex, [Value::String(s)]) => Value::Bitset(bitset_fromhex(s)?),
            (Builtin::StackEmpty, [Value::List(l)]) => Value::Bool(l.is_empty()),
            (Builtin::StackTop, [Value::List(l)]) => l.last().cloned().ok_or_else(empty)?,
            (Builtin::StackPop, [Value::List(l)]) => match l.split_last() {
                Some((_, rest)) => Value::List(rest.to_vec()),
                None => return Err(empty()),
            },
            (Builtin::StackSize, [Value::List(l)]) => Value::ULong(l.len() as u64),
            (Builtin::SetEmpty, [Value::Set(s)]) => Value::Bool(s.is_empty()),
            (Builtin::SetTop, [Value::Set(s)]) => s.first().cloned().ok_or_else(empty)?,
            (Builtin::SetPop, [Value::Set(s)]) => {
                let first = s.first().ok_or_else(empty)?;
                Value::Set(s.iter().filter(|v| *v != first).cloned().collect())
            }
            (Builtin::SetSize, [Value::Set(s)]) => Value::ULong(s.len() as u64),
            (Builtin::MapSize, [Value::Map(m)]) => Value::ULong(m.len() as u64),
            (Builtin::MapEmpty, [Value::Map(m)]) => Value::Bool(m.is_empty()),
            // Any two values of one ordered type (numbers, bool, char, string): the checker
            // admits numbers only, but constants are folded first (`min ("b", "a")` = "a").
            (Builtin::Min | Builtin::Max, [a, b]) => {
                let ord = lang_cmp(a, b).map_err(|_| bad())?;
                let pick_b = match self {
                    Builtin::Min => ord == Some(Ordering::Greater),
                    _ => ord == Some(Ordering::Less),
                };
                if pick_b { b.clone() } else { a.clone() }
            }
            (Builtin::BitsetInsert, [Value::Bitset(b), Value::ULong(i)]) => {
                Value::Bitset(b.inserted(*i))
            }
            (Builtin::BitsetDelete, [Value::Bitset(b), Value::ULong(i)]) => {
                Value::Bitset(b.deleted(*i))
            }
            (Builtin::BitsetIsElement, [Value::Bitset(b), Value::ULong(i)]) => {
                Value::Bool(b.contains(*i))
            }
            (Builtin::BitsetOr, [Value::Bitset(a), Value::Bitset(b)]) => Value::Bitset(a.or(b)),
            (Builtin::BitsetXor, [Value::Bitset(a), Value::Bitset(b)]) => Value::Bitset(a.xor(b)),
            (Builtin::BitsetAnd, [Value::Bitset(a), Value::Bitset(b)]) => Value::Bitset(a.and(b)),
            (Builtin::StackPush, [Value::List(l), v]) => {
                nestable(name, v)?;
                let mut l = l.clone();
                l.push(v.clone());
                Value::List(l)
            }
            (Builtin::StackJoin, [Value::List(a), Value::List(b)]) => {
                let mut l = Vec::with_capacity(a.len() + b.len());
                l.extend_from_slice(a);
                l.extend_from_slice(b);
                Value::List(l)
            }
            (Builtin::SetInsert, [Value::Set(s), v]) => {
                nestable(name, v)?;
                let mut s = s.clone();
                s.insert(v.clone());
                Value::Set(s)
            }
            (Builtin::SetErase, [Value::Set(s), v]) => {
                let mut s = s.clone();
                s.remove(v);
                Value::Set(s)
            }
            (Builtin::SetIsElement, [Value::Set(s), v]) => Value::Bool(s.contains(v)),
            (Builtin::SetIsSubset, [Value::Set(a), Value::Set(b)]) => Value::Bool(a.is_subset(b)),
            (Builtin::MapUnassign, [Value::Map(m), k]) => {
                let mut m = m.clone();
                m.remove(k);
                Value::Map(m)
            }
            (Builtin::MapIsAssigned, [Value::Map(m), k]) => Value::Bool(m.contains_key(k)),
            (Builtin::MapGetAssignment, [Value::Map(m), k]) => match m.get(k) {
                Some(v) => v.clone(),
                None => return Err(EvalError::MissingKey(k.to_string())),
            },
            (Builtin::MapAssign, [Value::Map(m), k, v]) => {
                nestable(name, k)?;
                nestable(name, v)?;
                let mut m = m.clone();
                m.insert(k.clone(), v.clone());
                Value::Map(m)
            }
            _ => return Err(bad()),
        })
    }
}

/// An element may go into a container only if the result nests at most
/// [`MAX_VALUE_DEPTH`] levels (a loop that keeps wrapping a list in a list fails with a
/// message instead of building a value no walk can handle).
fn nestable(name: &str, v: &Value) -> Result<(), EvalError> {
    if v.deeper_than(MAX_VALUE_DEPTH - 1) {
        return Err(EvalError::Other(format!(
            "{name}: the result would nest deeper than {MAX_VALUE_DEPTH} levels"
        )));
    }
    Ok(())
}

/// `shared_P (v)`: wraps `v` for reference counting on the cleanup place `place` (one level
/// deeper, so it is checked like a container's element).
pub fn make_shared(place: Arc<str>, value: Value) -> Result<Value, EvalError> {
    if value.deeper_than(MAX_VALUE_DEPTH - 1) {
        // The name is built only for the message.
        nestable(&format!("shared_{place}"), &value)?;
    }
    Ok(Value::Shared(Box::new(Shared { place, value })))
}

/// The math functions on a double (arguments already checked).
fn math(f: Builtin, x: f64) -> f64 {
    match f {
        Builtin::Floor => x.floor(),
        Builtin::Ceil => x.ceil(),
        Builtin::Round => x.round(),
        Builtin::Sin => x.sin(),
        Builtin::Cos => x.cos(),
        Builtin::Sqrt => x.sqrt(),
        _ => x.ln(),
    }
}

/// Parses the output of `bitset_tohex` as GPI-Space reads it (see [`Bitset::from_hex`]):
/// `0x`, then zero or more words, each `/` and 1 to 16 hex digits, lowest word first; the
/// trailing `/` is optional (`"0x"` and `"0x/"` are the empty set).
pub fn bitset_fromhex(s: &str) -> Result<Bitset, EvalError> {
    Bitset::from_hex(s).map_err(|e| EvalError::Other(format!("bitset_fromhex: {e}")))
}

/// A numeric cast (`int`, `long`, `uint`, `ulong`, `float`, `double`, `bigint`) of a number.
///
/// Integer-to-integer casts (from `int`, `uint`, `long`, `ulong` or `bigint`) wrap modulo 2^N
/// like C++20's conversions, as in GPI-Space: the result is the low N bits of the two's
/// complement value (`uint(-1)` = 4294967295U, `int(4127196168U)` = -167771128). Floats and
/// doubles convert to integers by truncating toward zero, and NaN, infinities and values out of
/// range fail with [`EvalError::OutOfRange`] (undefined behaviour in C++, so we keep them
/// errors); integers convert to float/double by rounding to nearest; a finite value that becomes
/// infinite as a float or double (`float(1e300)`, a huge bigint) fails, while infinities and
/// NaN convert to themselves. Non-numbers are [`EvalError::TypeMismatch`].
pub fn cast(to: Builtin, v: &Value) -> Result<Value, EvalError> {
    enum Num {
        I(i128),
        B(BigInt),
        F(f64),
    }
    let n = match v {
        // `int (true)` = 1: GPI-Space folds casts of constant bools (the checker refuses a
        // bool port).
        Value::Bool(b) => Num::I(i128::from(*b)),
        Value::Int(i) => Num::I((*i).into()),
        Value::Long(i) => Num::I((*i).into()),
        Value::UInt(i) => Num::I((*i).into()),
        Value::ULong(i) => Num::I((*i).into()),
        Value::Bigint(i) => match i.to_i128() {
            Some(i) => Num::I(i),
            None => Num::B((**i).clone()),
        },
        Value::Float(x) => Num::F((*x).into()),
        Value::Double(x) => Num::F(*x),
        _ => {
            return Err(EvalError::TypeMismatch(format!(
                "`{}` cannot be applied to {}",
                to.name(),
                kind_name(v)
            )));
        }
    };
    let out = || EvalError::OutOfRange(format!("{}({v})", to.name()));
    // Integral targets: go through a BigInt (or i128) after truncation.
    let integral = |n: &Num| -> Result<BigInt, EvalError> {
        match n {
            Num::I(i) => Ok(BigInt::from(*i)),
            Num::B(b) => Ok(b.clone()),
            Num::F(x) => {
                if x.is_finite() {
                    BigInt::from_f64(x.trunc()).ok_or_else(out)
                } else {
                    Err(out())
                }
            }
        }
    };
    let to_f64 = |n: &Num| -> f64 {
        match n {
            Num::I(i) => *i as f64,
            Num::B(b) => b.to_f64().unwrap_or(if b.is_negative() {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }),
            Num::F(x) => *x,
        }
    };
    let source_finite = !matches!(n, Num::F(x) if !x.is_finite());
    // The low 64 bits of an integer's two's complement (integer-to-integer casts wrap).
    let low_bits = |n: &Num| -> Option<u64> {
        match n {
            Num::I(i) => Some(*i as u64),
            Num::B(b) => {
                let low = b.magnitude().iter_u64_digits().next().unwrap_or(0);
                Some(if b.is_negative() {
                    low.wrapping_neg()
                } else {
                    low
                })
            }
            Num::F(_) => None,
        }
    };
    Ok(match to {
        Builtin::ToInt => match low_bits(&n) {
            Some(w) => Value::Int(w as u32 as i32),
            None => Value::Int(integral(&n)?.to_i32().ok_or_else(out)?),
        },
        Builtin::ToLong => match low_bits(&n) {
            Some(w) => Value::Long(w as i64),
            None => Value::Long(integral(&n)?.to_i64().ok_or_else(out)?),
        },
        Builtin::ToUInt => match low_bits(&n) {
            Some(w) => Value::UInt(w as u32),
            None => Value::UInt(integral(&n)?.to_u32().ok_or_else(out)?),
        },
        Builtin::ToULong => match low_bits(&n) {
            Some(w) => Value::ULong(w),
            None => Value::ULong(integral(&n)?.to_u64().ok_or_else(out)?),
        },
        Builtin::ToBigint => Value::bigint(integral(&n)?),
        Builtin::ToDouble => {
            let x = to_f64(&n);
            if source_finite && !x.is_finite() {
                return Err(out());
            }
            Value::Double(x)
        }
        Builtin::ToFloat => {
            let x = match &n {
                Num::I(i) => *i as f32,
                Num::B(b) => b.to_f32().unwrap_or(f32::INFINITY),
                Num::F(x) => *x as f32,
            };
            if source_finite && !x.is_finite() {
                return Err(out());
            }
            Value::Float(x)
        }
        _ => {
            return Err(EvalError::Other(format!("`{}` is not a cast", to.name())));
        }
    })
}

#[cfg(test)]
mod tests;
