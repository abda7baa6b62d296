//! The run-time helpers that generated code calls: `extern "C"` functions of plain integers
//! and floats (no pointers), so that none of them needs `unsafe`.
//!
//! Values that are not native scalars (strings, bigints, bitsets, collections, structs, and
//! scalars of a type unknown at compile time) live in a thread-local [`Rt`]: a value stack
//! indexed by the static stack position, the frame (moved in for the duration of one run), the
//! running code (for constants, paths and names) and the error of a failed run. Every helper
//! that can fail returns a status (`0` ok, else the error is recorded in [`Rt::err`]).
//!
//! The helpers evaluate with the very functions the interpreter uses
//! (`eval_binary`, `eval_unary`, `Builtin::eval`), and the error helpers of native code
//! recompute the failing operation with them, so errors are the interpreter's by construction.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use pnet_bundle::Code;
use pnet_engine::{RunErrorKind, assign_field, field_of, reference};
use pnet_stdlib::ops::{eval_binary, eval_unary};
use pnet_stdlib::{BinOp, Builtin, EvalError, UnOp, Value, make_shared};

use crate::types::Nt;

/// The thread's state for calls out of generated code.
#[derive(Debug, Default)]
pub(crate) struct Rt {
    pub code: Option<Arc<Code>>,
    pub frame: Vec<Option<Value>>,
    pub stack: Vec<Value>,
    pub err: Option<Fault>,
}

/// A recorded error; `Unbound` is named by the caller, which has the code.
#[derive(Debug)]
pub(crate) enum Fault {
    Kind(RunErrorKind),
    Unbound(u16),
}

thread_local! {
    pub(crate) static RT: RefCell<Rt> = RefCell::new(Rt::default());
}

pub(crate) const BINOPS: [BinOp; 18] = BinOp::ALL;

pub(crate) fn binop_index(op: BinOp) -> u32 {
    BINOPS.iter().position(|o| *o == op).unwrap_or(0) as u32
}

pub(crate) fn unop_index(op: UnOp) -> u32 {
    match op {
        UnOp::Neg => 0,
        UnOp::Not => 1,
    }
}

fn unop(i: u32) -> UnOp {
    if i == 0 { UnOp::Neg } else { UnOp::Not }
}

pub(crate) fn builtin_index(f: Builtin) -> u32 {
    Builtin::ALL.iter().position(|b| *b == f).unwrap_or(0) as u32
}

/// Runs `f` on the thread's state; a panic or an unavailable state becomes a recorded error
/// (status 1) instead of unwinding into generated code.
fn with_rt(f: impl FnOnce(&mut Rt) -> Result<(), Fault>) -> i32 {
    let r = RT.try_with(|rt| {
        let Ok(mut rt) = rt.try_borrow_mut() else {
            return 1;
        };
        match catch_unwind(AssertUnwindSafe(|| f(&mut rt))) {
            Ok(Ok(())) => 0,
            Ok(Err(e)) => {
                rt.err = Some(e);
                1
            }
            Err(_) => {
                rt.err = Some(bad("a run-time helper panicked"));
                1
            }
        }
    });
    r.unwrap_or(1)
}

fn bad(m: &str) -> Fault {
    Fault::Kind(RunErrorKind::BadCode(format!("jit: {m}")))
}

fn eval_err(e: EvalError) -> Fault {
    Fault::Kind(RunErrorKind::Eval(e))
}

fn code(rt: &Rt) -> Result<Arc<Code>, Fault> {
    rt.code.clone().ok_or_else(|| bad("no code installed"))
}

fn put(rt: &mut Rt, pos: u32, v: Value) -> Result<(), Fault> {
    let p = pos as usize;
    if rt.stack.len() <= p {
        rt.stack.resize(p + 1, Value::Control);
    }
    rt.stack[p] = v;
    Ok(())
}

fn get(rt: &Rt, pos: u32) -> Result<&Value, Fault> {
    rt.stack
        .get(pos as usize)
        .ok_or_else(|| bad("stack position"))
}

/// A scalar value from its bits (the low bits of `bits` hold the value).
pub(crate) fn value_of(t: Nt, bits: u64) -> Value {
    match t {
        Nt::Bool => Value::Bool(bits as u8 != 0),
        Nt::Int => Value::Int(bits as u32 as i32),
        Nt::Long => Value::Long(bits as i64),
        Nt::UInt => Value::UInt(bits as u32),
        Nt::ULong => Value::ULong(bits),
        Nt::Float => Value::Float(f32::from_bits(bits as u32)),
        Nt::Double => Value::Double(f64::from_bits(bits)),
        Nt::Char => Value::Char(bits as u8 as i8),
    }
}

/// The bits of a scalar value of type `t`; `None` if the value is not of type `t`.
#[inline(always)]
pub(crate) fn bits_of(t: Nt, v: &Value) -> Option<u64> {
    Some(match (t, v) {
        (Nt::Bool, Value::Bool(b)) => u64::from(*b),
        (Nt::Int, Value::Int(x)) => u64::from(*x as u32),
        (Nt::Long, Value::Long(x)) => *x as u64,
        (Nt::UInt, Value::UInt(x)) => u64::from(*x),
        (Nt::ULong, Value::ULong(x)) => *x,
        (Nt::Float, Value::Float(x)) => u64::from(x.to_bits()),
        (Nt::Double, Value::Double(x)) => x.to_bits(),
        (Nt::Char, Value::Char(x)) => u64::from(*x as u8),
        _ => return None,
    })
}

fn nt(tag: u32) -> Nt {
    Nt::ALL.get(tag as usize).copied().unwrap_or(Nt::Long)
}

// ---------------------------------------------------------------------------------------------
// Helpers on the value stack (`pos` is the static stack position).

pub(crate) extern "C" fn h_const(pos: u32, i: u32) -> i32 {
    with_rt(|rt| {
        let v = code(rt)?
            .consts
            .get(i as usize)
            .cloned()
            .ok_or_else(|| bad("constant"))?;
        put(rt, pos, v)
    })
}

pub(crate) extern "C" fn h_box(pos: u32, tag: u32, bits: u64) -> i32 {
    with_rt(|rt| put(rt, pos, value_of(nt(tag), bits)))
}

pub(crate) extern "C" fn h_dup(pos: u32) -> i32 {
    with_rt(|rt| {
        let v = get(rt, pos)?.clone();
        put(rt, pos + 1, v)
    })
}

pub(crate) extern "C" fn h_load(pos: u32, slot: u32) -> i32 {
    with_rt(|rt| {
        let v = match rt.frame.get(slot as usize) {
            Some(Some(v)) => v.clone(),
            Some(None) => return Err(Fault::Unbound(slot as u16)),
            None => return Err(bad("slot")),
        };
        put(rt, pos, v)
    })
}

pub(crate) extern "C" fn h_load_path(pos: u32, slot: u32, path: u32) -> i32 {
    with_rt(|rt| {
        let code = code(rt)?;
        let path = code.paths.get(path as usize).ok_or_else(|| bad("path"))?;
        let mut v = match rt.frame.get(slot as usize) {
            Some(Some(v)) => v,
            Some(None) => return Err(Fault::Unbound(slot as u16)),
            None => return Err(bad("slot")),
        };
        for (k, field) in path.iter().enumerate() {
            v = field_of(v, field).ok_or_else(|| {
                Fault::Kind(RunErrorKind::NoSuchField {
                    reference: reference(&code, slot as u16, &path[..k]),
                    field: field.clone(),
                })
            })?;
        }
        let v = v.clone();
        put(rt, pos, v)
    })
}

pub(crate) extern "C" fn h_store(pos: u32, slot: u32) -> i32 {
    with_rt(|rt| {
        let v = std::mem::replace(
            rt.stack.get_mut(pos as usize).ok_or_else(|| bad("stack"))?,
            Value::Control,
        );
        *rt.frame.get_mut(slot as usize).ok_or_else(|| bad("slot"))? = Some(v);
        Ok(())
    })
}

pub(crate) extern "C" fn h_store_path(pos: u32, slot: u32, path: u32) -> i32 {
    with_rt(|rt| {
        let code = code(rt)?;
        let path = code.paths.get(path as usize).ok_or_else(|| bad("path"))?;
        let v = std::mem::replace(
            rt.stack.get_mut(pos as usize).ok_or_else(|| bad("stack"))?,
            Value::Control,
        );
        let root = rt.frame.get_mut(slot as usize).ok_or_else(|| bad("slot"))?;
        let root = root.get_or_insert_with(|| Value::Struct(Vec::new()));
        assign_field(&code, slot as u16, root, path, v).map_err(eval_err)
    })
}

pub(crate) extern "C" fn h_unary(pos: u32, op: u32) -> i32 {
    with_rt(|rt| {
        let r = eval_unary(unop(op), get(rt, pos)?).map_err(eval_err)?;
        put(rt, pos, r)
    })
}

pub(crate) extern "C" fn h_binary(pos: u32, op: u32) -> i32 {
    with_rt(|rt| {
        let op = *BINOPS.get(op as usize).ok_or_else(|| bad("operator"))?;
        let r = eval_binary(op, get(rt, pos)?, get(rt, pos + 1)?).map_err(eval_err)?;
        put(rt, pos, r)
    })
}

pub(crate) extern "C" fn h_call(pos: u32, f: u32) -> i32 {
    with_rt(|rt| {
        let f = *Builtin::ALL.get(f as usize).ok_or_else(|| bad("builtin"))?;
        let (at, n) = (pos as usize, f.arity());
        let args = rt.stack.get(at..at + n).ok_or_else(|| bad("stack"))?;
        let r = f.eval(args).map_err(eval_err)?;
        put(rt, pos, r)
    })
}

pub(crate) extern "C" fn h_shared(pos: u32, i: u32) -> i32 {
    with_rt(|rt| {
        let place = match code(rt)?.consts.get(i as usize) {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(bad("shared place")),
        };
        let v = std::mem::replace(
            rt.stack.get_mut(pos as usize).ok_or_else(|| bad("stack"))?,
            Value::Control,
        );
        let v = make_shared(place, v).map_err(eval_err)?;
        put(rt, pos, v)
    })
}

/// The truth of the value at `pos` for `&&` (`or == 0`) and `||` (`or == 1`): 0 false,
/// 1 true, 2 not a bool (error recorded).
pub(crate) extern "C" fn h_truth(pos: u32, or: u32) -> i32 {
    let mut truth = 0;
    let st = with_rt(|rt| match get(rt, pos)? {
        Value::Bool(b) => {
            truth = i32::from(*b);
            Ok(())
        }
        _ => {
            let op = if or == 1 { "||" } else { "&&" };
            Err(Fault::Kind(RunErrorKind::NotABool(format!(
                "an operand of {op}"
            ))))
        }
    });
    if st != 0 { 2 } else { truth }
}

// ---------------------------------------------------------------------------------------------
// Errors of native code: generated code leaves a record in the buffer (no call), and the
// error is made from it with the stdlib, so it is the interpreter's by construction.

/// The error record of a failed run: three words of the buffer (`Words::err`). Word 0 says
/// what failed: [`ErrRecord::HELPER`] (a helper recorded the error in [`Rt::err`]), or a
/// native check (kind in bits 0-7, an operator, built-in or slot index in bits 8-31, the
/// operands' type tag in bits 32-39); words 1 and 2 hold the bits of the operands.
pub(crate) struct ErrRecord;

impl ErrRecord {
    pub const HELPER: u64 = 0;
    const BINARY: u64 = 1;
    const CALL: u64 = 2;
    const UNBOUND: u64 = 3;

    pub fn binary(op: BinOp, t: Nt) -> u64 {
        Self::BINARY | u64::from(binop_index(op)) << 8 | u64::from(t.tag()) << 32
    }

    pub fn call(f: Builtin, t: Nt) -> u64 {
        Self::CALL | u64::from(builtin_index(f)) << 8 | u64::from(t.tag()) << 32
    }

    pub fn unbound(slot: u16) -> u64 {
        Self::UNBOUND | u64::from(slot) << 8
    }

    /// The fault a record describes; `None` for [`ErrRecord::HELPER`] (take [`Rt::err`]).
    pub fn fault(words: [u64; 3]) -> Option<Fault> {
        let [w, a, b] = words;
        let index = ((w >> 8) & 0xff_ffff) as usize;
        let t = nt((w >> 32) as u32);
        let r = match w & 0xff {
            Self::BINARY => {
                let op = BINOPS.get(index).copied().unwrap_or(BinOp::Add);
                eval_binary(op, &value_of(t, a), &value_of(t, b))
            }
            Self::CALL => {
                let f = Builtin::ALL.get(index).copied().unwrap_or(Builtin::Abs);
                f.eval(&[value_of(t, a)])
            }
            Self::UNBOUND => return Some(Fault::Unbound(index as u16)),
            _ => return None,
        };
        Some(match r {
            Err(e) => eval_err(e),
            Ok(v) => bad(&format!("native check failed but the stdlib gives {v}")),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Pure helpers (no state): exactly the stdlib's arithmetic.

fn wrapping_pow<T: Copy>(mut base: T, mut exp: u64, one: T, mul: impl Fn(T, T) -> T) -> T {
    let mut acc = one;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = mul(acc, base);
        }
        exp >>= 1;
        if exp > 0 {
            base = mul(base, base);
        }
    }
    acc
}

pub(crate) extern "C" fn h_pow32(x: u32, e: u64) -> u32 {
    wrapping_pow(x, e, 1, u32::wrapping_mul)
}

pub(crate) extern "C" fn h_pow64(x: u64, e: u64) -> u64 {
    wrapping_pow(x, e, 1, u64::wrapping_mul)
}

pub(crate) extern "C" fn h_powf32(x: f32, y: f32) -> f32 {
    x.powf(y)
}

pub(crate) extern "C" fn h_powf64(x: f64, y: f64) -> f64 {
    x.powf(y)
}

/// The math functions as `Builtin::eval` computes them (on a double).
pub(crate) extern "C" fn h_math(f: u32, x: f64) -> f64 {
    match Builtin::ALL.get(f as usize) {
        Some(Builtin::Floor) => x.floor(),
        Some(Builtin::Ceil) => x.ceil(),
        Some(Builtin::Round) => x.round(),
        Some(Builtin::Sin) => x.sin(),
        Some(Builtin::Cos) => x.cos(),
        Some(Builtin::Sqrt) => x.sqrt(),
        _ => x.ln(),
    }
}

// ---------------------------------------------------------------------------------------------
// Struct paths, as the interpreter does them.

/// The field at `path` inside `v`, for writing.
pub(crate) fn field_mut<'v>(mut v: &'v mut Value, path: &[String]) -> Option<&'v mut Value> {
    for name in path {
        let Value::Struct(fields) = v else {
            return None;
        };
        v = fields
            .iter_mut()
            .find(|(n, _)| &**n == name.as_str())
            .map(|(_, x)| x)?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_records_give_the_stdlib_errors() {
        let rec = |w, a, b| ErrRecord::fault([w, a, b]);
        let div = ErrRecord::binary(BinOp::IntDiv, Nt::Long);
        assert!(matches!(
            rec(div, 7, 0),
            Some(Fault::Kind(RunErrorKind::Eval(EvalError::DivisionByZero)))
        ));
        let sub = ErrRecord::binary(BinOp::Sub, Nt::UInt);
        assert!(matches!(
            rec(sub, 1, 2),
            Some(Fault::Kind(RunErrorKind::Eval(
                EvalError::UnsignedUnderflow
            )))
        ));
        // int(3e9) is out of range: the stdlib's own message.
        let cast = ErrRecord::call(Builtin::ToInt, Nt::Double);
        match rec(cast, 3e9f64.to_bits(), 0) {
            Some(Fault::Kind(RunErrorKind::Eval(EvalError::OutOfRange(m)))) => {
                assert_eq!(m, "int(3000000000.0)")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            rec(ErrRecord::unbound(513), 0, 0),
            Some(Fault::Unbound(513))
        ));
        assert!(rec(ErrRecord::HELPER, 1, 2).is_none());
        // A record of a check that does not fail is a bug, reported as such.
        assert!(matches!(
            rec(div, 7, 1),
            Some(Fault::Kind(RunErrorKind::BadCode(_)))
        ));
    }
}
