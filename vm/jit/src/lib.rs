//! A Cranelift JIT for the bytecode of expressions and conditions.
//!
//! What is compiled natively: every operation on the scalar types (bool, int, long, unsigned
//! int, unsigned long, float, double, char) whose operand types the bytecode fixes — arithmetic
//! with the interpreter's checks (unsigned underflow, division by zero, negative exponents,
//! float division by a subnormal), comparisons, casts with their range checks, `abs`, `min`,
//! `max`, `sqrt`; slots of scalar type live in registers; scalar struct fields of slots that
//! the code does not assign (`${p.x}`) are loaded straight into registers. Everything else
//! (strings, bigints, bitsets, collections, structs, values of a type unknown at compile time,
//! and the math library) calls the stdlib through the helpers of [`rt`]; failing native
//! checks call the stdlib too, to record exactly the interpreter's error.
//!
//! [`Jit`] owns one `JITModule` and reuses one Cranelift context for every compilation; many
//! codes go into one module and are finalized together. [`Jit::run`] (and [`Jit::run_bool`] for
//! conditions, [`Jit::run_effect`] for expressions whose value is not used) marshals the frame
//! in and out through a buffer of 64-bit words; the generated code is called in exactly one
//! place, [`Jit::call_native`].
//!
//! [`JitFactory`] plugs the JIT into the engine ([`pnet_vm::CodeRunnerFactory`]), in one of the
//! [`JitMode`]s.

mod analysis;
mod codegen;
mod rt;
mod runner;
mod types;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Module, default_libcall_names};
use pnet_bundle::Code;
use pnet_stdlib::Value;
use pnet_vm::{RunError, RunErrorKind};

pub use analysis::Plan;
pub use runner::{JitFactory, JitMode, JitStats};
pub use types::{K, Nt};

use crate::rt::{Fault, RT, bits_of, value_of};

/// Identifies a code compiled by a [`Jit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FnId(u32);

struct Compiled {
    /// Address of the finalized function in `Jit::module`.
    addr: usize,
    plan: Plan,
    code: Arc<Code>,
    /// Where the value ends up.
    result: Res,
    /// Whether anything is written back (native locals, assigned fields).
    writes_back: bool,
}

#[derive(Clone, Copy, Debug)]
enum Res {
    Control,
    Native(Nt),
    /// On the helpers' value stack at this position.
    Dyn(usize),
}

/// A JIT: one Cranelift module with the compiled codes, and the reused contexts.
pub struct Jit {
    module: JITModule,
    ctx: cranelift_codegen::Context,
    fctx: FunctionBuilderContext,
    target: codegen::Target,
    fns: Vec<Compiled>,
    compile_time: Duration,
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jit")
            .field("compiled", &self.fns.len())
            .field("compile_time", &self.compile_time)
            .finish()
    }
}

/// Why a [`Jit`] could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitError(pub String);

impl std::fmt::Display for JitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "jit: {}", self.0)
    }
}

impl std::error::Error for JitError {}

impl Jit {
    /// A JIT for the host machine (little-endian hosts only: generated code and [`Jit::run`]
    /// share scalars in the low bytes of 64-bit words).
    pub fn new() -> Result<Jit, JitError> {
        if cfg!(target_endian = "big") {
            return Err(JitError("big-endian hosts are not supported".into()));
        }
        let e = |m: &dyn std::fmt::Display| JitError(m.to_string());
        let mut flags = settings::builder();
        flags
            .set("use_colocated_libcalls", "false")
            .map_err(|x| e(&x))?;
        flags.set("is_pic", "false").map_err(|x| e(&x))?;
        flags.set("opt_level", "speed").map_err(|x| e(&x))?;
        let isa = cranelift_native::builder()
            .map_err(|x| e(&x))?
            .finish(settings::Flags::new(flags))
            .map_err(|x| e(&x))?;
        let target = codegen::Target {
            ptr: isa.pointer_type(),
            call_conv: isa.default_call_conv(),
            frontend: isa.frontend_config(),
        };
        let module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
        let ctx = module.make_context();
        Ok(Jit {
            module,
            ctx,
            fctx: FunctionBuilderContext::new(),
            target,
            fns: Vec::new(),
            compile_time: Duration::ZERO,
        })
    }

    /// Compiles `codes` into the module and finalizes them together; `None` for a code that
    /// is not compiled (it breaks the bytecode's invariants, or Cranelift refused it).
    pub fn compile(&mut self, codes: &[&Code]) -> Vec<Option<FnId>> {
        let start = Instant::now();
        let mut declared = Vec::with_capacity(codes.len());
        for code in codes {
            declared.push(self.define(code));
        }
        let ok = self.module.finalize_definitions().is_ok();
        let out = declared
            .into_iter()
            .map(|d| {
                let (func, plan, code) = d?;
                if !ok {
                    return None;
                }
                let addr = self.module.get_finalized_function(func) as usize;
                let id = FnId(self.fns.len() as u32);
                let result = match plan.end_state() {
                    Some(st) => match st.last() {
                        None => Res::Control,
                        Some(K::N(t)) => Res::Native(*t),
                        Some(K::D) => Res::Dyn(st.len() - 1),
                    },
                    None => Res::Control,
                };
                let writes_back =
                    plan.natives.iter().any(|n| n.local) || plan.fields.iter().any(|f| f.stored);
                self.fns.push(Compiled {
                    addr,
                    plan,
                    code,
                    result,
                    writes_back,
                });
                Some(id)
            })
            .collect();
        self.compile_time += start.elapsed();
        out
    }

    fn define(&mut self, code: &Code) -> Option<(cranelift_module::FuncId, Plan, Arc<Code>)> {
        let plan = analysis::analyse(code)?;
        self.module.clear_context(&mut self.ctx);
        codegen::translate(
            &mut self.ctx.func,
            &mut self.fctx,
            code,
            &plan,
            &self.target,
        );
        let mut sig = self.module.make_signature();
        sig.params
            .push(cranelift_codegen::ir::AbiParam::new(self.target.ptr));
        sig.returns.push(cranelift_codegen::ir::AbiParam::new(
            cranelift_codegen::ir::types::I32,
        ));
        let func = self.module.declare_anonymous_function(&sig).ok()?;
        let r = self.module.define_function(func, &mut self.ctx);
        self.module.clear_context(&mut self.ctx);
        r.ok()?;
        Some((func, plan, Arc::new(code.clone())))
    }

    /// The analysis of a compiled code.
    pub fn plan(&self, id: FnId) -> Option<&Plan> {
        self.fns.get(id.0 as usize).map(|c| &c.plan)
    }

    /// Time spent compiling so far.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// Runs compiled code `id` (compiled from `code`) over `frame`: the interpreter's value,
    /// frame and error. `None` when the frame does not meet what the code was compiled for (a
    /// scalar slot or field holding no value or a value of another type, a short frame): run
    /// the interpreter then; nothing was changed. `buf` is scratch space, reused across runs.
    #[inline]
    pub fn run(
        &self,
        id: FnId,
        code: &Code,
        frame: &mut [Option<Value>],
        buf: &mut Vec<u64>,
    ) -> Option<Result<Value, RunError>> {
        let c = self.fns.get(id.0 as usize)?;
        let status = self.exec(c, code, frame, buf)?;
        if status != 0 {
            let e = error(status, code);
            if c.plan.uses_dyn {
                clear_stack();
            }
            return Some(Err(e));
        }
        // The value is built last, straight into the result (no copy of a freshly written
        // `Value` afterwards, which stalls on store forwarding).
        Some(Ok(match c.result {
            Res::Control => {
                if c.plan.uses_dyn {
                    clear_stack();
                }
                Value::Control
            }
            Res::Native(t) => {
                if c.plan.uses_dyn {
                    clear_stack();
                }
                value_of(t, buf[c.plan.result_word()])
            }
            Res::Dyn(pos) => {
                let v = take_dyn(pos);
                clear_stack();
                v
            }
        }))
    }

    /// [`Jit::run`] of a condition: its value as a bool, or the interpreter's error
    /// ([`pnet_vm::condition_value`] when the value is not a bool). No [`Value`] is built for
    /// a native bool result.
    #[inline]
    pub fn run_bool(
        &self,
        id: FnId,
        code: &Code,
        frame: &mut [Option<Value>],
        buf: &mut Vec<u64>,
    ) -> Option<Result<bool, RunError>> {
        let c = self.fns.get(id.0 as usize)?;
        let status = self.exec(c, code, frame, buf)?;
        let r = if status != 0 {
            Err(error(status, code))
        } else if let Res::Native(Nt::Bool) = c.result {
            Ok(buf[c.plan.result_word()] as u8 != 0)
        } else {
            pnet_vm::condition_value(code, result_value(c, buf))
        };
        if c.plan.uses_dyn {
            clear_stack();
        }
        Some(r)
    }

    /// [`Jit::run`] for the effect on the frame only: the value is dropped (not built).
    #[inline]
    pub fn run_effect(
        &self,
        id: FnId,
        code: &Code,
        frame: &mut [Option<Value>],
        buf: &mut Vec<u64>,
    ) -> Option<Result<(), RunError>> {
        let c = self.fns.get(id.0 as usize)?;
        let status = self.exec(c, code, frame, buf)?;
        let r = if status == 0 {
            Ok(())
        } else {
            Err(error(status, code))
        };
        if c.plan.uses_dyn {
            clear_stack();
        }
        Some(r)
    }

    /// Marshals the frame in, runs the code, writes native locals and assigned fields back:
    /// the status (0: ok, else 1 + the failing instruction); the result is left in `buf` or on
    /// the helpers' value stack. `None` (nothing changed) when the frame does not fit.
    #[inline]
    fn exec(
        &self,
        c: &Compiled,
        code: &Code,
        frame: &mut [Option<Value>],
        buf: &mut Vec<u64>,
    ) -> Option<i32> {
        let plan = &c.plan;
        if frame.len() < code.slots.len() {
            return None;
        }
        let nn = plan.natives.len();
        let len = plan.buf_len();
        if buf.len() < len {
            buf.resize(len, 0);
        }
        // Every word the code reads is written here (no clearing of the buffer; the flag
        // words of inputs are not read: see `codegen`).
        let (vals, rest) = buf.split_at_mut(nn);
        let (flags, rest) = rest.split_at_mut(nn);
        for ((ns, val), flag) in plan.natives.iter().zip(vals).zip(flags) {
            match frame.get(usize::from(ns.slot))? {
                Some(v) => {
                    *val = bits_of(ns.ty, v)?;
                    if ns.local {
                        *flag = 1;
                    }
                }
                None if ns.local => {
                    *val = 0;
                    *flag = 0;
                }
                None => return None,
            }
        }
        for (f, word) in plan.fields.iter().zip(rest) {
            let mut v = frame.get(usize::from(f.slot))?.as_ref()?;
            for name in code.paths.get(f.paths[0] as usize)? {
                v = rt::field_of(v, name)?;
            }
            *word = bits_of(f.ty, v)?;
        }
        let status = if plan.uses_dyn {
            let installed = RT.try_with(|rt| {
                let Ok(mut rt) = rt.try_borrow_mut() else {
                    return false;
                };
                rt.code = Some(c.code.clone());
                rt.frame.clear();
                rt.frame.extend(frame.iter_mut().map(Option::take));
                rt.stack.clear();
                rt.stack.resize(plan.max_depth + 1, Value::Control);
                rt.err = None;
                true
            });
            if installed != Ok(true) {
                return None;
            }
            let status = self.call_native(c, buf);
            let _ = RT.try_with(|rt| {
                if let Ok(mut rt) = rt.try_borrow_mut() {
                    for (dst, src) in frame.iter_mut().zip(rt.frame.drain(..)) {
                        *dst = src;
                    }
                    rt.code = None;
                }
            });
            status
        } else {
            self.call_native(c, buf)
        };
        if c.writes_back {
            write_back(plan, code, frame, buf);
        }
        Some(status)
    }

    /// The one place that runs generated code.
    fn call_native(&self, c: &Compiled, buf: &mut [u64]) -> i32 {
        if buf.len() < c.plan.buf_len() {
            return -1;
        }
        let ptr = c.addr as *const u8;
        // SAFETY: `c` is one of `self.fns`, so `c.addr` is the address of a function that
        // `self.module` compiled and finalized (`Jit::compile`) and still owns: the module
        // lives as long as `self`, which is borrowed for this call, and never frees code. The
        // function was built by `codegen::translate` with exactly the signature
        // `extern "C" fn(*mut u64) -> i32` (one pointer parameter, an i32 result, the host's
        // default calling convention, which is the C one). It reads and writes only the words
        // `0..c.plan.buf_len()` of its argument, and `buf` (checked above) has at least that
        // many: the pointer is valid for the whole call, which borrows `buf` mutably. It
        // calls only the helpers of `rt`, which take plain integers and floats, never unwind
        // (they catch panics) and never call back into generated code.
        let entry =
            unsafe { std::mem::transmute::<*const u8, extern "C" fn(*mut u64) -> i32>(ptr) };
        entry(buf.as_mut_ptr())
    }
}

/// The value of a successful run.
#[inline]
fn result_value(c: &Compiled, buf: &[u64]) -> Value {
    match c.result {
        Res::Control => Value::Control,
        Res::Native(t) => value_of(t, buf[c.plan.result_word()]),
        Res::Dyn(pos) => take_dyn(pos),
    }
}

/// The interpreter's error for a failed run (status = 1 + the failing instruction).
#[cold]
#[inline(never)]
fn error(status: i32, code: &Code) -> RunError {
    let pc = (status as usize).wrapping_sub(1);
    let kind = match take_fault() {
        Some(Fault::Kind(k)) => k,
        Some(Fault::Unbound(s)) => RunErrorKind::Unbound(rt::slot_name(code, s)),
        None => RunErrorKind::BadCode(format!("jit: error {status} without a cause")),
    };
    RunError::with_span(kind, code.spans.get(pc).copied().unwrap_or(code.span))
}

/// Empties the helpers' value stack after a run that used it.
fn clear_stack() {
    let _ = RT.try_with(|rt| {
        if let Ok(mut rt) = rt.try_borrow_mut() {
            rt.stack.clear();
        }
    });
}

/// Puts a scalar into a frame slot, in place when the slot already holds that type (no drop
/// of the old value, no new `Option`).
#[inline]
fn set_scalar(slot: &mut Option<Value>, t: Nt, bits: u64) {
    match (slot, t) {
        (Some(Value::Long(x)), Nt::Long) => *x = bits as i64,
        (Some(Value::ULong(x)), Nt::ULong) => *x = bits,
        (Some(Value::Int(x)), Nt::Int) => *x = bits as u32 as i32,
        (Some(Value::UInt(x)), Nt::UInt) => *x = bits as u32,
        (Some(Value::Double(x)), Nt::Double) => *x = f64::from_bits(bits),
        (Some(Value::Bool(x)), Nt::Bool) => *x = bits as u8 != 0,
        (slot, t) => *slot = Some(value_of(t, bits)),
    }
}

/// Native locals and assigned struct fields back into the frame.
#[inline]
fn write_back(plan: &Plan, code: &Code, frame: &mut [Option<Value>], buf: &[u64]) {
    let nn = plan.natives.len();
    for (j, ns) in plan.natives.iter().enumerate() {
        if ns.local
            && buf[nn + j] as u8 != 0
            && let Some(slot) = frame.get_mut(usize::from(ns.slot))
        {
            set_scalar(slot, ns.ty, buf[j]);
        }
    }
    // Assigned struct fields in place (their paths exist: checked on entry).
    for (k, f) in plan.fields.iter().enumerate() {
        if f.stored
            && let Some(path) = code.paths.get(f.paths[0] as usize)
            && let Some(Some(root)) = frame.get_mut(usize::from(f.slot))
            && let Some(v) = rt::field_mut(root, path)
        {
            *v = value_of(f.ty, buf[2 * nn + k]);
        }
    }
}

fn take_dyn(pos: usize) -> Value {
    RT.try_with(|rt| {
        rt.try_borrow_mut().ok().and_then(|mut rt| {
            rt.stack
                .get_mut(pos)
                .map(|v| std::mem::replace(v, Value::Control))
        })
    })
    .ok()
    .flatten()
    .unwrap_or(Value::Control)
}

fn take_fault() -> Option<Fault> {
    RT.try_with(|rt| rt.try_borrow_mut().ok().and_then(|mut rt| rt.err.take()))
        .ok()
        .flatten()
}
