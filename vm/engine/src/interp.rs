//! The bytecode interpreter: a stack machine over [`Value`]s (see [`pnet_bundle::bytecode`]).
//!
//! The hot path does not allocate for scalar programs: the operand stack lives in a reusable
//! [`Interpreter`], and integer comparisons and arithmetic take fast paths that give exactly
//! the result of the generic [`eval_binary`].

use std::sync::Arc;

use pnet_bundle::{Code, Instr};
use pnet_stdlib::ops::{eval_binary, eval_unary};
use pnet_stdlib::value::MAX_VALUE_DEPTH;
use pnet_stdlib::{BinOp, EvalError, UnOp, Value, make_shared};

use crate::error::{RunError, RunErrorKind};
use crate::tokens::Tokens;

/// Evaluates `code` over `frame` (slot `i` = port `i`, locals after) with a fresh stack.
/// Prefer a reused [`Interpreter`] in loops.
pub fn eval(code: &Code, frame: &mut [Option<Value>]) -> Result<Value, RunError> {
    Interpreter::new().run(code, frame)
}

/// A reusable interpreter: owns the operand stack so that repeated runs do not allocate.
#[derive(Debug, Default)]
pub struct Interpreter {
    stack: Vec<Value>,
}

impl Interpreter {
    pub fn new() -> Interpreter {
        Interpreter {
            stack: Vec::with_capacity(16),
        }
    }

    /// Runs a program and returns its value (the top of the stack at the end; control `[]`
    /// for an empty program). `frame` must have at least `code.slots.len()` slots.
    #[inline]
    pub fn run(&mut self, code: &Code, frame: &mut [Option<Value>]) -> Result<Value, RunError> {
        let r = self.exec(code, frame);
        let v = match r {
            Ok(()) => Ok(self.stack.pop().unwrap_or(Value::Control)),
            Err(e) => Err(e),
        };
        self.clear();
        v
    }

    /// Runs a condition: its value must be a bool. Like [`Interpreter::run`] followed by
    /// [`condition_value`], without moving the value off the stack.
    #[inline]
    pub fn run_bool(&mut self, code: &Code, frame: &mut [Option<Value>]) -> Result<bool, RunError> {
        let r = self.exec(code, frame);
        let b = match (r, self.stack.last()) {
            (Ok(()), Some(Value::Bool(b))) => Ok(*b),
            (Ok(()), _) => Err(not_a_bool(code)),
            (Err(e), _) => Err(e),
        };
        self.clear();
        b
    }

    /// Runs code for its effect on `frame` only: like [`Interpreter::run`] with the value
    /// dropped (an expression, whose value the engine does not use).
    #[inline]
    pub fn run_effect(&mut self, code: &Code, frame: &mut [Option<Value>]) -> Result<(), RunError> {
        let r = self.exec(code, frame);
        self.clear();
        r
    }

    /// Empties the stack (scalars without the generic drop glue).
    #[inline]
    fn clear(&mut self) {
        while let Some(v) = self.stack.pop() {
            drop_fast(v);
        }
    }

    #[inline(never)]
    fn exec(&mut self, code: &Code, frame: &mut [Option<Value>]) -> Result<(), RunError> {
        if frame.len() < code.slots.len() {
            return Err(RunError::with_span(
                RunErrorKind::BadCode(format!(
                    "{} needs {} slots, the frame has {}",
                    code.name,
                    code.slots.len(),
                    frame.len()
                )),
                code.span,
            ));
        }
        let instrs = &code.instrs[..];
        let stack = &mut self.stack;
        stack.clear();
        let mut pc = 0usize;
        while let Some(&instr) = instrs.get(pc) {
            pc += 1;
            let fail = |kind: RunErrorKind| error_at(code, pc - 1, kind);
            let underflow = || {
                fail(RunErrorKind::BadCode(format!(
                    "stack underflow at {}",
                    pc - 1
                )))
            };
            match instr {
                Instr::Const(i) => {
                    let v = code
                        .consts
                        .get(i as usize)
                        .ok_or_else(|| fail(RunErrorKind::BadCode(format!("no constant {i}"))))?;
                    stack.push(fast_clone(v));
                }
                Instr::Load(s) => match frame.get(s as usize) {
                    Some(Some(v)) => stack.push(fast_clone(v)),
                    Some(None) => return Err(fail(RunErrorKind::Unbound(slot_name(code, s)))),
                    None => return Err(fail(RunErrorKind::BadCode(format!("no slot {s}")))),
                },
                Instr::LoadPath(s, p) => {
                    let path = path(code, p).map_err(fail)?;
                    let root = slot(code, frame, s).map_err(fail)?;
                    let Some(mut v) = root.as_ref() else {
                        return Err(fail(RunErrorKind::Unbound(slot_name(code, s))));
                    };
                    for (k, field) in path.iter().enumerate() {
                        v = field_of(v, field).ok_or_else(|| {
                            fail(RunErrorKind::NoSuchField {
                                reference: reference(code, s, &path[..k]),
                                field: field.clone(),
                            })
                        })?;
                    }
                    stack.push(v.clone());
                }
                Instr::Store(s) => {
                    let v = stack.pop().ok_or_else(underflow)?;
                    *slot_mut(code, frame, s).map_err(fail)? = Some(v);
                }
                Instr::StorePath(s, p) => {
                    let v = stack.pop().ok_or_else(underflow)?;
                    let path = path(code, p).map_err(fail)?;
                    let root = slot_mut(code, frame, s).map_err(fail)?;
                    let root = root.get_or_insert_with(|| Value::Struct(Vec::new()));
                    assign_field(code, s, root, path, v)
                        .map_err(|e| fail(RunErrorKind::Eval(e)))?;
                }
                Instr::Dup => {
                    let v = stack.last().ok_or_else(underflow)?.clone();
                    stack.push(v);
                }
                Instr::Pop => {
                    stack.pop().ok_or_else(underflow)?;
                }
                Instr::Unary(op, _) => {
                    let a = stack.last_mut().ok_or_else(underflow)?;
                    let r = match (op, &*a) {
                        (UnOp::Not, Value::Bool(b)) => Value::Bool(!b),
                        (UnOp::Neg, Value::Long(x)) => Value::Long(x.wrapping_neg()),
                        (UnOp::Neg, Value::Int(x)) => Value::Int(x.wrapping_neg()),
                        _ => eval_unary(op, a).map_err(|e| fail(RunErrorKind::Eval(e)))?,
                    };
                    *a = r;
                }
                Instr::Binary(op, _) => {
                    let n = stack.len();
                    if n < 2 {
                        return Err(underflow());
                    }
                    let (lhs, rhs) = stack.split_at_mut(n - 1);
                    let (a, b) = (&mut lhs[n - 2], &rhs[0]);
                    match fast_binary(op, a, b) {
                        Some(r) => drop_fast(std::mem::replace(a, r)),
                        None => {
                            let r =
                                eval_binary(op, a, b).map_err(|e| fail(RunErrorKind::Eval(e)))?;
                            *a = r;
                        }
                    }
                    if let Some(b) = stack.pop() {
                        drop_fast(b);
                    }
                }
                Instr::Call(f) => {
                    let n = f.arity();
                    if stack.len() < n {
                        return Err(underflow());
                    }
                    let at = stack.len() - n;
                    let r = f
                        .eval(&stack[at..])
                        .map_err(|e| fail(RunErrorKind::Eval(e)))?;
                    stack.truncate(at);
                    stack.push(r);
                }
                Instr::MakeShared(i) => {
                    let place: Arc<str> = match code.consts.get(i as usize) {
                        Some(Value::String(s)) => s.clone(),
                        _ => {
                            return Err(fail(RunErrorKind::BadCode(format!(
                                "MakeShared({i}) needs a string constant"
                            ))));
                        }
                    };
                    let v = stack.pop().ok_or_else(underflow)?;
                    stack.push(make_shared(place, v).map_err(|e| fail(RunErrorKind::Eval(e)))?);
                }
                Instr::Jump(t) => pc = t as usize,
                Instr::JumpIfFalseElsePop(t) | Instr::JumpIfTrueElsePop(t) => {
                    let on = matches!(instr, Instr::JumpIfTrueElsePop(_));
                    match stack.last() {
                        Some(Value::Bool(b)) => {
                            if *b == on {
                                pc = t as usize;
                            } else {
                                stack.pop();
                            }
                        }
                        Some(_) => {
                            let op = if on { "||" } else { "&&" };
                            return Err(fail(RunErrorKind::NotABool(format!(
                                "an operand of {op}"
                            ))));
                        }
                        None => return Err(underflow()),
                    }
                }
            }
        }
        Ok(())
    }
}

/// The value of a condition as a bool (an error if it is not a bool).
#[inline]
pub fn condition_value(code: &Code, v: Value) -> Result<bool, RunError> {
    match v {
        Value::Bool(b) => Ok(b),
        _ => Err(not_a_bool(code)),
    }
}

#[cold]
#[inline(never)]
fn not_a_bool(code: &Code) -> RunError {
    RunError::with_span(
        RunErrorKind::NotABool(format!("the value of {}", code.name)),
        code.span,
    )
}

/// Empties a frame and gives it `n` slots, without the generic drop glue for scalars.
#[inline]
pub(crate) fn reset_frame(frame: &mut Vec<Option<Value>>, n: usize) {
    for s in frame.iter_mut() {
        clear_slot(s);
    }
    if frame.len() != n {
        frame.resize_with(n, || None);
    }
}

/// Makes `frame` the frame of a firing: `n` slots, those in `clear` emptied (the others are
/// the takes' slots, which the caller fills).
#[inline(always)]
pub(crate) fn firing_frame(frame: &mut Vec<Option<Value>>, n: usize, clear: &[usize]) {
    if frame.len() != n {
        frame.resize_with(n, || None);
    }
    for &k in clear {
        clear_slot(&mut frame[k]);
    }
}

#[cold]
#[inline(never)]
fn error_at(code: &Code, pc: usize, kind: RunErrorKind) -> RunError {
    RunError::with_span(kind, code.spans.get(pc).copied().unwrap_or(code.span))
}

/// Whether a value owns nothing (a bitwise copy of it is a clone, dropping it is a no-op).
#[inline(always)]
pub(crate) fn is_scalar(v: &Value) -> bool {
    matches!(
        v,
        Value::Control
            | Value::Bool(_)
            | Value::Int(_)
            | Value::Long(_)
            | Value::UInt(_)
            | Value::ULong(_)
            | Value::Float(_)
            | Value::Double(_)
            | Value::Char(_)
    )
}

/// Empties a slot, without the generic drop glue for scalars (and without reading a scalar:
/// only its tag).
#[inline(always)]
pub(crate) fn clear_slot(slot: &mut Option<Value>) {
    match slot {
        None => {}
        Some(v) if is_scalar(v) => std::mem::forget(slot.take()),
        Some(_) => *slot = None,
    }
}

/// Puts `new` into `slot`, which holds nothing that needs dropping (`None` or a scalar).
#[inline(always)]
fn put_plain(slot: &mut Option<Value>, new: Value) {
    std::mem::forget(slot.replace(new));
}

/// Runs `$write` with `$s` bound to a closure building a copy of the scalar `$v` variant by
/// variant (tag and payload, as typed code writes them), or `$other` if `$v` is not a scalar.
/// (A closure, so that the copy is built where it is stored, after any call in between.) A
/// copy of a whole value (32 bytes) right after typed code wrote it, or a temporary `Value`
/// read back in other pieces than it was written, stalls on store forwarding; a value built
/// in each arm goes straight to its destination.
macro_rules! with_scalar_copy {
    ($v:expr, |$s:ident| $write:expr, $other:expr) => {
        match *$v {
            Value::Long(x) => {
                let $s = move || Value::Long(x);
                $write
            }
            Value::Int(x) => {
                let $s = move || Value::Int(x);
                $write
            }
            Value::ULong(x) => {
                let $s = move || Value::ULong(x);
                $write
            }
            Value::UInt(x) => {
                let $s = move || Value::UInt(x);
                $write
            }
            Value::Bool(x) => {
                let $s = move || Value::Bool(x);
                $write
            }
            Value::Char(x) => {
                let $s = move || Value::Char(x);
                $write
            }
            Value::Double(x) => {
                let $s = move || Value::Double(x);
                $write
            }
            Value::Float(x) => {
                let $s = move || Value::Float(x);
                $write
            }
            Value::Control => {
                let $s = || Value::Control;
                $write
            }
            _ => $other,
        }
    };
}

/// Puts a copy of `v` into `slot` (the old value dropped first); see [`with_scalar_copy`].
#[inline(always)]
pub(crate) fn set_clone(slot: &mut Option<Value>, v: Option<&Value>) {
    clear_slot(slot);
    let Some(v) = v else {
        return;
    };
    with_scalar_copy!(v, |s| put_plain(slot, s()), put_plain(slot, v.clone()))
}

/// Makes `dst` a copy of `v` (scalars without the generic clone; see [`with_scalar_copy`]).
#[inline(always)]
pub(crate) fn copy_scalar(dst: &mut Value, v: &Value) {
    if is_scalar(dst) {
        // Nothing to drop (and no call of the generic drop glue).
        with_scalar_copy!(
            v,
            |s| std::mem::forget(std::mem::replace(dst, s())),
            *dst = v.clone()
        )
    } else {
        *dst = v.clone();
    }
}

/// Moves token `j` of `q` into `slot` (the old value dropped first): the front token is
/// popped, another one replaced by the front one. Returns false if there is no token `j`.
#[inline(always)]
pub(crate) fn take_token(slot: &mut Option<Value>, q: &mut Tokens, j: usize) -> bool {
    clear_slot(slot);
    if j != 0 {
        *slot = q.swap_remove_front(j);
        return slot.is_some();
    }
    let Some(v) = q.front() else {
        return false;
    };
    with_scalar_copy!(
        v,
        |s| {
            put_plain(slot, s());
            // A scalar: the popped copy owns nothing.
            std::mem::forget(q.pop_front());
        },
        *slot = q.pop_front()
    );
    true
}

/// Moves (`last`) or copies the value in `slot` (if any) to the back of `q`.
#[inline(always)]
pub(crate) fn put_token(slot: &mut Option<Value>, q: &mut Tokens, last: bool) {
    let Some(v) = slot.as_ref() else {
        return;
    };
    with_scalar_copy!(
        v,
        |s| {
            q.push_back_with(s);
            if last {
                clear_slot(slot);
            }
        },
        {
            if let Some(v) = if last { slot.take() } else { slot.clone() } {
                q.push_back(v);
            }
        }
    );
}

/// Clones scalars without the out-of-line generic clone.
#[inline(always)]
pub(crate) fn fast_clone(v: &Value) -> Value {
    with_scalar_copy!(v, |s| s(), v.clone())
}

/// Drops a value, skipping the out-of-line drop glue for scalars (which own nothing).
#[inline(always)]
pub(crate) fn drop_fast(v: Value) {
    if is_scalar(&v) {
        std::mem::forget(v);
    } else {
        drop(v);
    }
}

/// Integer fast paths; `None` means "use the generic operator". Only cases whose result is
/// fixed by the spec (wrapping `+ - *` on signed, wrapping `+ *` and non-negative `-` on
/// unsigned, comparisons) are here.
#[inline(always)]
fn fast_binary(op: BinOp, a: &Value, b: &Value) -> Option<Value> {
    macro_rules! cmp {
        ($x:expr, $y:expr) => {
            match op {
                BinOp::Lt => Some(Value::Bool($x < $y)),
                BinOp::Le => Some(Value::Bool($x <= $y)),
                BinOp::Gt => Some(Value::Bool($x > $y)),
                BinOp::Ge => Some(Value::Bool($x >= $y)),
                BinOp::Eq => Some(Value::Bool($x == $y)),
                BinOp::Ne => Some(Value::Bool($x != $y)),
                _ => None,
            }
        };
    }
    match (a, b) {
        (Value::Long(x), Value::Long(y)) => match op {
            BinOp::Add => Some(Value::Long(x.wrapping_add(*y))),
            BinOp::Sub => Some(Value::Long(x.wrapping_sub(*y))),
            BinOp::Mul => Some(Value::Long(x.wrapping_mul(*y))),
            _ => cmp!(x, y),
        },
        (Value::Int(x), Value::Int(y)) => match op {
            BinOp::Add => Some(Value::Int(x.wrapping_add(*y))),
            BinOp::Sub => Some(Value::Int(x.wrapping_sub(*y))),
            BinOp::Mul => Some(Value::Int(x.wrapping_mul(*y))),
            _ => cmp!(x, y),
        },
        // Unsigned subtraction below zero falls through to the stdlib for its error.
        (Value::ULong(x), Value::ULong(y)) => match op {
            BinOp::Add => Some(Value::ULong(x.wrapping_add(*y))),
            BinOp::Sub => x.checked_sub(*y).map(Value::ULong),
            BinOp::Mul => Some(Value::ULong(x.wrapping_mul(*y))),
            _ => cmp!(x, y),
        },
        (Value::UInt(x), Value::UInt(y)) => match op {
            BinOp::Add => Some(Value::UInt(x.wrapping_add(*y))),
            BinOp::Sub => x.checked_sub(*y).map(Value::UInt),
            BinOp::Mul => Some(Value::UInt(x.wrapping_mul(*y))),
            _ => cmp!(x, y),
        },
        _ => None,
    }
}

fn slot<'f>(
    code: &Code,
    frame: &'f [Option<Value>],
    s: u16,
) -> Result<&'f Option<Value>, RunErrorKind> {
    match (code.slots.get(s as usize), frame.get(s as usize)) {
        (Some(_), Some(v)) => Ok(v),
        _ => Err(RunErrorKind::BadCode(format!("no slot {s}"))),
    }
}

fn slot_mut<'f>(
    code: &Code,
    frame: &'f mut [Option<Value>],
    s: u16,
) -> Result<&'f mut Option<Value>, RunErrorKind> {
    match (code.slots.get(s as usize), frame.get_mut(s as usize)) {
        (Some(_), Some(v)) => Ok(v),
        _ => Err(RunErrorKind::BadCode(format!("no slot {s}"))),
    }
}

fn path(code: &Code, p: u32) -> Result<&[String], RunErrorKind> {
    code.paths
        .get(p as usize)
        .map(|p| &p[..])
        .ok_or_else(|| RunErrorKind::BadCode(format!("no path {p}")))
}

/// A slot's name in messages (`slot N` when the code has no such slot).
pub fn slot_name(code: &Code, s: u16) -> String {
    code.slots
        .get(s as usize)
        .map(|s| s.name.clone())
        .unwrap_or_else(|| format!("slot {s}"))
}

/// `name.a.b`: a slot and a field path, as messages show a reference.
pub fn reference(code: &Code, s: u16, path: &[String]) -> String {
    let mut r = slot_name(code, s);
    for f in path {
        r.push('.');
        r.push_str(f);
    }
    r
}

/// The field `name` of a struct value.
pub fn field_of<'v>(v: &'v Value, name: &str) -> Option<&'v Value> {
    match v {
        Value::Struct(fields) => fields.iter().find(|(n, _)| &**n == name).map(|(_, v)| v),
        _ => None,
    }
}

/// Assigns `v` at `path` inside `root` (the value of slot `slot` of `code`), creating fields
/// (as empty structs on the way): the interpreter's and the JIT's (`pnet-jit`'s runtime)
/// assignment to a field path. Fails when a parent on the path is not a struct, or when the
/// result would nest deeper than [`MAX_VALUE_DEPTH`] levels (a loop that keeps assigning a
/// struct to its own field would otherwise build a value no walk can handle).
pub fn assign_field(
    code: &Code,
    slot: u16,
    root: &mut Value,
    path: &[String],
    v: Value,
) -> Result<(), EvalError> {
    if v.deeper_than(MAX_VALUE_DEPTH.saturating_sub(path.len())) {
        return Err(EvalError::Other(format!(
            "cannot assign to ${{{}}}: the result would nest deeper than {MAX_VALUE_DEPTH} levels",
            reference(code, slot, path)
        )));
    }
    let mut cur = root;
    for (k, name) in path.iter().enumerate() {
        let Value::Struct(fields) = cur else {
            return Err(EvalError::TypeMismatch(format!(
                "cannot assign to field `{}` of ${{{}}}: not a struct",
                path[k],
                reference(code, slot, &path[..k])
            )));
        };
        let i = match fields.iter().position(|(n, _)| &**n == name.as_str()) {
            Some(i) => i,
            None => {
                fields.push((Arc::from(name.as_str()), Value::Struct(Vec::new())));
                fields.len() - 1
            }
        };
        cur = &mut fields[i].1;
    }
    *cur = v;
    Ok(())
}
