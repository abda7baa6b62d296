//! Unary and binary operators: evaluation and static typing.

use serde::{Deserialize, Serialize};

/// A unary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UnOp {
    /// `-`
    Neg,
    /// `!`
    Not,
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinOp {
    /// `||`, `:or:` (short-circuit; the compiler emits jumps, evaluation here is strict)
    Or,
    /// `&&`, `:and:` (short-circuit; see `Or`)
    And,
    /// `|` bitwise on integers and bigint
    BitOr,
    /// `&` bitwise on integers and bigint
    BitAnd,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Add,
    Sub,
    Mul,
    /// `/` (float and double only)
    Div,
    /// `div` (integers and bigint, truncating)
    IntDiv,
    /// `mod`, `%`
    Mod,
    /// `**` fractional power (float, double)
    Pow,
    /// `^` integral power (integers, bigint)
    IntPow,
}

use std::cmp::Ordering;

use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::{One, Pow, Signed, ToPrimitive, WrappingMul, Zero};

use crate::{EvalError, Type, TypeError, Value};

impl UnOp {
    /// Every unary operator, in declaration order.
    pub const ALL: [UnOp; 2] = [UnOp::Neg, UnOp::Not];

    /// The operator's spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            UnOp::Neg => "-",
            UnOp::Not => "!",
        }
    }
}

impl BinOp {
    /// Every binary operator, in declaration order (the JIT passes an operator as its index
    /// here).
    pub const ALL: [BinOp; 18] = [
        BinOp::Or,
        BinOp::And,
        BinOp::BitOr,
        BinOp::BitAnd,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::IntDiv,
        BinOp::Mod,
        BinOp::Pow,
        BinOp::IntPow,
    ];

    /// The canonical spelling (`:lt:` and `<` are the same operator; this gives `<`).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::BitOr => "|",
            BinOp::BitAnd => "&",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::IntDiv => "div",
            BinOp::Mod => "mod",
            BinOp::Pow => "**",
            BinOp::IntPow => "^",
        }
    }
}

/// A short name of a value's type for messages (`int`, `list`, `struct`, `shared_P`).
pub(crate) fn kind_name(v: &Value) -> String {
    match v {
        Value::List(_) => "list".into(),
        Value::Set(_) => "set".into(),
        Value::Map(_) => "map".into(),
        Value::Struct(_) => "struct".into(),
        Value::Shared(s) => format!("shared_{}", s.place),
        v => v.ty().to_string(),
    }
}

fn mismatch_unary(op: UnOp, v: &Value) -> EvalError {
    EvalError::TypeMismatch(format!(
        "`{}` cannot be applied to {}",
        op.symbol(),
        kind_name(v)
    ))
}

fn mismatch_binary(op: BinOp, a: &Value, b: &Value) -> EvalError {
    EvalError::TypeMismatch(format!(
        "`{}` cannot be applied to {} and {}",
        op.symbol(),
        kind_name(a),
        kind_name(b)
    ))
}

/// Evaluates a unary operator: `-` negates (int and long wrap, so `-(-2147483648)` is
/// `-2147483648`), `!` is the boolean not.
pub fn eval_unary(op: UnOp, v: &Value) -> Result<Value, EvalError> {
    Ok(match (op, v) {
        (UnOp::Neg, Value::Int(i)) => Value::Int(i.wrapping_neg()),
        (UnOp::Neg, Value::Long(i)) => Value::Long(i.wrapping_neg()),
        (UnOp::Neg, Value::Float(x)) => Value::Float(-x),
        (UnOp::Neg, Value::Double(x)) => Value::Double(-x),
        (UnOp::Neg, Value::Bigint(i)) => Value::bigint(-&**i),
        (UnOp::Not, Value::Bool(b)) => Value::Bool(!b),
        // On an integer, `!` is the bitwise complement: the checker refuses an integer port,
        // but GPI-Space folds constants first (`!0` = -1, `!1U` = 4294967294U, `!5A` = -6A).
        (UnOp::Not, Value::Int(i)) => Value::Int(!i),
        (UnOp::Not, Value::Long(i)) => Value::Long(!i),
        (UnOp::Not, Value::UInt(i)) => Value::UInt(!i),
        (UnOp::Not, Value::ULong(i)) => Value::ULong(!i),
        (UnOp::Not, Value::Bigint(i)) => Value::bigint(-&**i - 1),
        _ => return Err(mismatch_unary(op, v)),
    })
}

/// Largest number of bits of a bigint `^` result; larger results are an error (instead of
/// exhausting memory).
pub const MAX_BIGINT_POW_BITS: u64 = 1 << 24;

/// `base ^ exp` by squaring, wrapping.
fn wrapping_pow<T: Copy + WrappingMul + One>(mut base: T, mut exp: u64) -> T {
    let mut acc = T::one();
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc.wrapping_mul(&base);
        }
        exp >>= 1;
        if exp > 0 {
            base = base.wrapping_mul(&base);
        }
    }
    acc
}

/// `base ^ exp` on bigints: a negative exponent is an error, as is a result of more than
/// [`MAX_BIGINT_POW_BITS`] bits.
fn bigint_pow(base: &BigInt, exp: &BigInt) -> Result<BigInt, EvalError> {
    if exp.is_negative() {
        return Err(EvalError::NegativeExponent);
    }
    if exp.is_zero() || base.is_one() {
        return Ok(BigInt::one());
    }
    if base.is_zero() {
        return Ok(BigInt::zero());
    }
    if (-base).is_one() {
        return Ok(if exp.is_even() {
            BigInt::one()
        } else {
            -BigInt::one()
        });
    }
    let too_large = || EvalError::Other("bigint power too large".into());
    let e = exp.to_u32().ok_or_else(too_large)?;
    if base.bits().saturating_mul(u64::from(e)) > MAX_BIGINT_POW_BITS {
        return Err(too_large());
    }
    Ok(Pow::pow(base, e))
}

/// Language equality (`==`): bool, the integer types, char, string, bitset (ignoring trailing
/// zero words), bytearray and bigint compare by value; shared values compare their places and
/// wrapped values; structs compare field by field (every field is compared, so a struct holding
/// a double always fails) and fail with [`EvalError::StructShapeMismatch`] when the field names
/// differ in number, name or order; control, float, double, list, set and map fail with
/// [`EvalError::IncomparableEquality`]; operands of different types fail with
/// [`EvalError::TypeMismatch`].
pub fn lang_eq(a: &Value, b: &Value) -> Result<bool, EvalError> {
    match (a, b) {
        (Value::Control, Value::Control)
        | (Value::Float(_), Value::Float(_))
        | (Value::Double(_), Value::Double(_))
        | (Value::List(_), Value::List(_))
        | (Value::Set(_), Value::Set(_))
        | (Value::Map(_), Value::Map(_)) => Err(EvalError::IncomparableEquality(kind_name(a))),
        (Value::Shared(x), Value::Shared(y)) if x.place == y.place => lang_eq(&x.value, &y.value),
        (Value::Struct(x), Value::Struct(y)) => {
            if x.len() != y.len() || x.iter().zip(y.iter()).any(|((n, _), (m, _))| n != m) {
                return Err(EvalError::StructShapeMismatch);
            }
            let mut all = true;
            for ((_, v), (_, w)) in x.iter().zip(y.iter()) {
                all &= lang_eq(v, w)?;
            }
            Ok(all)
        }
        (Value::Shared(_), _) => Err(mismatch_binary(BinOp::Eq, a, b)),
        _ if a.type_rank() == b.type_rank() => Ok(a == b),
        _ => Err(mismatch_binary(BinOp::Eq, a, b)),
    }
}

/// Language order (`<`, `<=`, `>`, `>=`, `min`, `max`) on two values of the same type among
/// bool, char, string and the numbers; `None` when unordered (a NaN operand, so every
/// comparison with NaN is false). Other operands fail with [`EvalError::TypeMismatch`].
pub fn lang_cmp(a: &Value, b: &Value) -> Result<Option<Ordering>, EvalError> {
    Ok(match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        (Value::Double(x), Value::Double(y)) => x.partial_cmp(y),
        (Value::Bool(_), Value::Bool(_))
        | (Value::Int(_), Value::Int(_))
        | (Value::Long(_), Value::Long(_))
        | (Value::UInt(_), Value::UInt(_))
        | (Value::ULong(_), Value::ULong(_))
        | (Value::Char(_), Value::Char(_))
        | (Value::String(_), Value::String(_))
        | (Value::Bigint(_), Value::Bigint(_)) => Some(a.cmp(b)),
        _ => return Err(mismatch_binary(BinOp::Lt, a, b)),
    })
}

macro_rules! signed_arith {
    ($op:expr, $x:expr, $y:expr, $ctor:path) => {{
        let (x, y) = ($x, $y);
        match $op {
            BinOp::Add => Some($ctor(x.wrapping_add(y))),
            BinOp::Sub => Some($ctor(x.wrapping_sub(y))),
            BinOp::Mul => Some($ctor(x.wrapping_mul(y))),
            BinOp::IntDiv if y == 0 => return Err(EvalError::DivisionByZero),
            BinOp::IntDiv => Some($ctor(x.wrapping_div(y))),
            BinOp::Mod if y == 0 => return Err(EvalError::DivisionByZero),
            BinOp::Mod => Some($ctor(x.wrapping_rem(y))),
            BinOp::IntPow if y < 0 => return Err(EvalError::NegativeExponent),
            BinOp::IntPow => Some($ctor(wrapping_pow(x, y.unsigned_abs().into()))),
            BinOp::BitOr => Some($ctor(x | y)),
            BinOp::BitAnd => Some($ctor(x & y)),
            _ => None,
        }
    }};
}

macro_rules! unsigned_arith {
    ($op:expr, $x:expr, $y:expr, $ctor:path) => {{
        let (x, y) = ($x, $y);
        match $op {
            BinOp::Add => Some($ctor(x.wrapping_add(y))),
            BinOp::Sub => Some($ctor(x.checked_sub(y).ok_or(EvalError::UnsignedUnderflow)?)),
            BinOp::Mul => Some($ctor(x.wrapping_mul(y))),
            BinOp::IntDiv => Some($ctor(x.checked_div(y).ok_or(EvalError::DivisionByZero)?)),
            BinOp::Mod => Some($ctor(x.checked_rem(y).ok_or(EvalError::DivisionByZero)?)),
            BinOp::IntPow => Some($ctor(wrapping_pow(x, y.into()))),
            BinOp::BitOr => Some($ctor(x | y)),
            BinOp::BitAnd => Some($ctor(x & y)),
            _ => None,
        }
    }};
}

macro_rules! fractional_arith {
    ($op:expr, $x:expr, $y:expr, $ctor:path, $min:expr) => {{
        let (x, y) = ($x, $y);
        match $op {
            BinOp::Add => Some($ctor(x + y)),
            BinOp::Sub => Some($ctor(x - y)),
            BinOp::Mul => Some($ctor(x * y)),
            BinOp::Div if y.abs() < $min => return Err(EvalError::DivisionByZero),
            BinOp::Div => Some($ctor(x / y)),
            BinOp::Pow => Some($ctor(x.powf(y))),
            _ => None,
        }
    }};
}

/// Evaluates a binary operator strictly (both operands already evaluated; `Or`/`And` on two
/// bools give the logical result).
///
/// Arithmetic follows the spec: int/long `+ - * ^` wrap, unsigned `+ * ^` wrap and `-` below
/// zero fails, `div`/`mod` truncate toward zero (`i32::MIN div -1` wraps to `i32::MIN`,
/// `i32::MIN mod -1` is 0), float `/` fails for a divisor whose magnitude is below the smallest
/// normal number (a NaN divisor gives NaN), `**` is `powf`, `0 ^ 0` is 1, `+` concatenates
/// strings and fails on bools. Comparisons use [`lang_cmp`], `==`/`!=` use [`lang_eq`].
pub fn eval_binary(op: BinOp, a: &Value, b: &Value) -> Result<Value, EvalError> {
    match op {
        BinOp::Or | BinOp::And => match (a, b) {
            (Value::Bool(x), Value::Bool(y)) => Ok(Value::Bool(if op == BinOp::Or {
                *x || *y
            } else {
                *x && *y
            })),
            _ => Err(mismatch_binary(op, a, b)),
        },
        BinOp::Eq => lang_eq(a, b).map(Value::Bool),
        BinOp::Ne => lang_eq(a, b).map(|e| Value::Bool(!e)),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            let ord = lang_cmp(a, b).map_err(|_| mismatch_binary(op, a, b))?;
            Ok(Value::Bool(ord.is_some_and(|o| match op {
                BinOp::Lt => o.is_lt(),
                BinOp::Le => o.is_le(),
                BinOp::Gt => o.is_gt(),
                _ => o.is_ge(),
            })))
        }
        _ => {
            let r = match (a, b) {
                (Value::Int(x), Value::Int(y)) => signed_arith!(op, *x, *y, Value::Int),
                (Value::Long(x), Value::Long(y)) => signed_arith!(op, *x, *y, Value::Long),
                (Value::UInt(x), Value::UInt(y)) => unsigned_arith!(op, *x, *y, Value::UInt),
                (Value::ULong(x), Value::ULong(y)) => unsigned_arith!(op, *x, *y, Value::ULong),
                (Value::Float(x), Value::Float(y)) => {
                    fractional_arith!(op, *x, *y, Value::Float, f32::MIN_POSITIVE)
                }
                (Value::Double(x), Value::Double(y)) => {
                    fractional_arith!(op, *x, *y, Value::Double, f64::MIN_POSITIVE)
                }
                (Value::Bigint(x), Value::Bigint(y)) => {
                    let (x, y) = (&**x, &**y);
                    match op {
                        BinOp::Add => Some(x + y),
                        BinOp::Sub => Some(x - y),
                        BinOp::Mul => Some(x * y),
                        BinOp::IntDiv | BinOp::Mod if y.is_zero() => {
                            return Err(EvalError::DivisionByZero);
                        }
                        BinOp::IntDiv => Some(x / y),
                        BinOp::Mod => Some(x % y),
                        BinOp::IntPow => Some(bigint_pow(x, y)?),
                        BinOp::BitOr => Some(x | y),
                        BinOp::BitAnd => Some(x & y),
                        _ => None,
                    }
                    .map(Value::bigint)
                }
                (Value::String(x), Value::String(y)) if op == BinOp::Add => {
                    let mut s = String::with_capacity(x.len() + y.len());
                    s.push_str(x);
                    s.push_str(y);
                    Some(Value::String(s.into()))
                }
                // `'a' + 'b'` = "ab": GPI-Space folds constant chars into a string (the
                // checker refuses char ports). A byte above 0x7f becomes U+0080..U+00FF.
                (Value::Char(x), Value::Char(y)) if op == BinOp::Add => Some(Value::String(
                    [*x, *y]
                        .iter()
                        .map(|c| char::from(*c as u8))
                        .collect::<String>()
                        .into(),
                )),
                _ => None,
            };
            r.ok_or_else(|| mismatch_binary(op, a, b))
        }
    }
}

fn show_kinds(kinds: &[&str]) -> String {
    match kinds {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

pub(crate) const NUMBERS: &[&str] = &[
    "int",
    "long",
    "unsigned int",
    "unsigned long",
    "float",
    "double",
    "bigint",
];
pub(crate) const SIGNED: &[&str] = &["int", "long", "float", "double", "bigint"];
const INTEGRAL: &[&str] = &["int", "long", "unsigned int", "unsigned long", "bigint"];
pub(crate) const FRACTIONAL: &[&str] = &["float", "double"];
const ORDERED: &[&str] = &[
    "bool",
    "char",
    "string",
    "int",
    "long",
    "unsigned int",
    "unsigned long",
    "float",
    "double",
    "bigint",
];
const ADDABLE: &[&str] = &[
    "int",
    "long",
    "unsigned int",
    "unsigned long",
    "float",
    "double",
    "bigint",
    "string",
    "bool",
];

/// Whether `t` is `Any` or one of the named types.
pub(crate) fn in_kinds(t: &Type, kinds: &[&str]) -> bool {
    t.is_any() || kinds.iter().any(|k| Type::from_name(k).as_ref() == Some(t))
}

/// The error "`op` expects K, found `t`".
pub(crate) fn kind_error(what: &str, kinds: &[&str], t: &Type) -> TypeError {
    TypeError::new(format!(
        "`{what}` expects {}, found `{t}`",
        show_kinds(kinds)
    ))
}

/// The static result type of a unary operator, or why it does not apply: `-` takes int, long,
/// float, double and bigint; `!` takes bool (and not the integers). `Any` passes and gives
/// `Any` for `-`, `bool` for `!`.
pub fn type_unary(op: UnOp, t: &Type) -> Result<Type, TypeError> {
    match op {
        UnOp::Neg if in_kinds(t, SIGNED) => Ok(t.clone()),
        UnOp::Neg => Err(kind_error("-", SIGNED, t)),
        UnOp::Not if in_kinds(t, &["bool"]) => Ok(Type::Bool),
        UnOp::Not => Err(kind_error("!", &["bool"], t)),
    }
}

/// The static result type of a binary operator, or why it does not apply.
///
/// Both operands must have the same type (after [`Type::unify`], so `Any` takes the other
/// operand's type); that type must be accepted by the operator: `|| &&` bool; `| & div mod ^`
/// int, long, unsigned int, unsigned long, bigint; `< <= > >=` bool, char, string, numbers;
/// `== !=` any type (float, double, control, list, set, map fail only when evaluated); `+`
/// numbers, string and bool (bool fails when evaluated); `- *` numbers; `/ **` float, double.
/// Comparisons give bool, everything else the operands' type (`Any + Any` is `Any`).
pub fn type_binary(op: BinOp, a: &Type, b: &Type) -> Result<Type, TypeError> {
    let sym = op.symbol();
    let Some(t) = a.unify(b) else {
        return Err(TypeError::new(format!(
            "operands of `{sym}` must have the same type, found `{a}` and `{b}`"
        )));
    };
    let (kinds, result): (&[&str], Type) = match op {
        BinOp::Or | BinOp::And => (&["bool"], Type::Bool),
        BinOp::Eq | BinOp::Ne => return Ok(Type::Bool),
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => (ORDERED, Type::Bool),
        BinOp::BitOr | BinOp::BitAnd | BinOp::IntDiv | BinOp::Mod | BinOp::IntPow => {
            (INTEGRAL, t.clone())
        }
        BinOp::Add => (ADDABLE, t.clone()),
        BinOp::Sub | BinOp::Mul => (NUMBERS, t.clone()),
        BinOp::Div | BinOp::Pow => (FRACTIONAL, t.clone()),
    };
    if !in_kinds(&t, kinds) {
        let kinds = if op == BinOp::Add {
            &["numbers", "string"][..]
        } else if kinds == NUMBERS {
            &["numbers"][..]
        } else {
            kinds
        };
        return Err(kind_error(sym, kinds, &t));
    }
    Ok(result)
}

#[cfg(test)]
pub(crate) mod tests;
