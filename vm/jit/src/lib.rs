//! A Cranelift JIT for the bytecode of expressions and conditions.
//!
//! What is compiled natively: every operation on the scalar types (bool, int, long, unsigned
//! int, unsigned long, float, double, char) whose operand types the bytecode fixes — arithmetic
//! with the interpreter's checks (unsigned underflow, division by zero, negative exponents,
//! float division by a subnormal), comparisons, casts (integer-to-integer ones wrap,
//! float-to-integer ones are range-checked), `abs`, `min`, `max`, `sqrt`; slots of scalar type
//! live in registers; scalar struct fields of slots that the code does not assign (`${p.x}`)
//! are loaded straight into registers. Everything else
//! (strings, bigints, bitsets, collections, structs, values of a type unknown at compile time,
//! and the math library) calls the stdlib through the helpers of [`rt`]. A failing native check
//! calls nothing: it leaves the operands in an error record in the buffer and returns, and the
//! error is made from the record with the stdlib (exactly the interpreter's error). Division
//! and remainder by a constant need no check (but `-1`, done by hand) and become shifts and
//! multiplications (Cranelift's "magic number" rewrites).
//!
//! [`Jit`] owns one `JITModule` and reuses one Cranelift context for every compilation; many
//! codes go into one module and are finalized together. [`Jit::run`] (and [`Jit::run_bool`] for
//! conditions, [`Jit::run_effect`] for expressions whose value is not used) runs a compiled code
//! over a frame (`&mut [Option<Value>]`) in one of two ways:
//!
//! - direct (codes that call no helper on dynamic values, when the layout of `Value` checks
//!   out: [`layout`]): the generated code gets a pointer to the frame, checks the tag byte of
//!   each native slot, loads the payloads, and writes the native locals it assigned back into
//!   their slots itself; only struct fields and the result go through a buffer of words.
//! - buffered (everything else): the frame's scalars are marshalled in and out through a
//!   buffer of 64-bit words.
//!
//! All of the crate's `unsafe` code is in this file, in the section "The unsafe code" at its
//! end: the two calls into generated code ([`Jit::call_buffered`], [`Jit::call_direct`]) and
//! the raw reads and the write with which [`layout::Layout::probe`] checks the layout of
//! `Value` (every other module is `#[deny(unsafe_code)]`).
//!
//! [`JitFactory`] plugs the JIT into the engine ([`pnet_engine::CodeRunnerFactory`]), in one of the
//! [`JitMode`]s.

#[deny(unsafe_code)]
mod analysis;
#[deny(unsafe_code)]
mod codegen;
#[deny(unsafe_code)]
mod layout;
#[deny(unsafe_code)]
mod rt;
#[deny(unsafe_code)]
mod runner;
#[deny(unsafe_code)]
mod types;

use std::mem::size_of;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Module, default_libcall_names};
use pnet_bundle::Code;
use pnet_engine::{RunError, RunErrorKind};
use pnet_stdlib::Value;

pub use analysis::Plan;
pub use runner::{JitFactory, JitMode, JitStats};
pub use types::{K, Nt};

use crate::analysis::Words;
use crate::layout::Layout;
use crate::rt::{Fault, RT, bits_of, value_of};

/// Identifies a code compiled by a [`Jit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FnId(u32);

pub(crate) struct Compiled {
    /// Address of the finalized function in `Jit::module`.
    addr: usize,
    plan: Plan,
    code: Arc<Code>,
    /// Where the value ends up.
    result: Res,
    /// Whether anything is written back by `Jit::exec` (native locals when buffered,
    /// assigned fields).
    writes_back: bool,
    /// The code reads and writes its native slots in the frame itself (see `codegen`).
    direct: bool,
    /// Direct, and nothing for `Jit::exec` to do around the call (no field inputs, no value
    /// stack): the fast paths of `run`, `run_bool` and `run_effect` apply.
    lean: bool,
    /// `code.slots.len()`: the shortest frame the code runs on.
    min_frame: usize,
    /// Where things are in the buffer shared with the code.
    words: Words,
}

/// What the fast path of a lean code did: small enough for a register, so that the caller
/// builds its own result where it returns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lean {
    /// Ran; the value (of a condition).
    Bool(bool),
    /// Ran (the value is not asked for).
    Done,
    /// Ran and failed with this status (1 + the failing instruction).
    Failed(i32),
    /// A native slot does not hold what the code was compiled for: nothing was changed, run
    /// the interpreter.
    Fallback,
    /// Not a lean code (or the buffer is short): take the full path.
    NotRun,
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
    /// The layout of frame slots, when generated code may access them directly.
    layout: Option<Layout>,
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jit")
            .field("compiled", &self.fns.len())
            .field("compile_time", &self.compile_time)
            .field("direct", &self.layout.is_some())
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
    /// share scalars in the low bytes of 64-bit words). Its code accesses frames directly when
    /// the layout of `Value` checks out ([`Jit::direct`]).
    pub fn new() -> Result<Jit, JitError> {
        let mut jit = Jit::new_buffered()?;
        jit.layout = Layout::probe();
        Ok(jit)
    }

    /// A JIT whose code always gets the frame's scalars through a buffer of words (as when the
    /// layout checks fail): for comparison and tests.
    pub fn new_buffered() -> Result<Jit, JitError> {
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
            layout: None,
        })
    }

    /// Whether codes compiled from now on may access frames directly (see the crate docs).
    pub fn direct(&self) -> bool {
        self.layout.is_some()
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
                let (func, plan, code, direct) = d?;
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
                let writes_back = (!direct && plan.natives.iter().any(|n| n.local))
                    || plan.fields.iter().any(|f| f.stored);
                let words = plan.words(direct);
                let lean = direct && !plan.uses_dyn && plan.fields.is_empty();
                let min_frame = code.slots.len();
                self.fns.push(Compiled {
                    addr,
                    plan,
                    code,
                    result,
                    writes_back,
                    direct,
                    lean,
                    min_frame,
                    words,
                });
                Some(id)
            })
            .collect();
        self.compile_time += start.elapsed();
        out
    }

    fn define(&mut self, code: &Code) -> Option<(cranelift_module::FuncId, Plan, Arc<Code>, bool)> {
        let plan = analysis::analyse(code)?;
        let layout = self.layout.filter(|_| !plan.uses_dyn);
        self.module.clear_context(&mut self.ctx);
        codegen::translate(
            &mut self.ctx.func,
            &mut self.fctx,
            code,
            &plan,
            &self.target,
            layout.as_ref(),
        );
        let sig = codegen::signature(&self.target, layout.is_some());
        let func = self.module.declare_anonymous_function(&sig).ok()?;
        let r = self.module.define_function(func, &mut self.ctx);
        self.module.clear_context(&mut self.ctx);
        r.ok()?;
        Some((func, plan, Arc::new(code.clone()), layout.is_some()))
    }

    /// The machine code Cranelift makes for `code` (its `VCode` listing), for checking what
    /// an operation compiles to; `None` if it is not compiled.
    pub fn machine_code(&mut self, code: &Code) -> Option<String> {
        let plan = analysis::analyse(code)?;
        let layout = self.layout.filter(|_| !plan.uses_dyn);
        let mut ctx = self.module.make_context();
        codegen::translate(
            &mut ctx.func,
            &mut self.fctx,
            code,
            &plan,
            &self.target,
            layout.as_ref(),
        );
        ctx.set_disasm(true);
        let isa = self.module.isa();
        let mut ctrl = cranelift_codegen::control::ControlPlane::default();
        let compiled = ctx.compile(isa, &mut ctrl).ok()?;
        compiled.vcode.clone()
    }

    /// Whether compiled code `id` accesses frames directly (see the crate docs).
    pub fn is_direct(&self, id: FnId) -> bool {
        self.fns.get(id.0 as usize).is_some_and(|c| c.direct)
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
        if let (true, Res::Native(t)) = (c.lean, c.result)
            && let Some(status) = self.call_lean(c, frame, buf)
        {
            return match status {
                0 => Some(Ok(value_of(t, buf[c.words.result]))),
                ..0 => None,
                _ => Some(Err(error(c, status, code, buf))),
            };
        }
        self.run_full(c, code, frame, buf)
    }

    /// [`Jit::run`] beyond its fast path.
    #[inline(never)]
    fn run_full(
        &self,
        c: &Compiled,
        code: &Code,
        frame: &mut [Option<Value>],
        buf: &mut Vec<u64>,
    ) -> Option<Result<Value, RunError>> {
        let status = self.exec(c, code, frame, buf)?;
        if status != 0 {
            let e = error(c, status, code, buf);
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
                value_of(t, buf[c.words.result])
            }
            Res::Dyn(pos) => {
                let v = take_dyn(pos);
                clear_stack();
                v
            }
        }))
    }

    /// [`Jit::run`] of a condition: its value as a bool, or the interpreter's error
    /// ([`pnet_engine::condition_value`] when the value is not a bool). No [`Value`] is built for
    /// a native bool result.
    #[inline]
    pub fn run_bool(
        &self,
        id: FnId,
        code: &Code,
        frame: &mut [Option<Value>],
        buf: &mut Vec<u64>,
    ) -> Option<Result<bool, RunError>> {
        // The common case returns at once, straight into the result (building it in a
        // temporary and copying that stalls on store-to-load forwarding).
        match self.lean_bool(id, frame, buf) {
            Lean::Bool(b) => Some(Ok(b)),
            Lean::Fallback => None,
            Lean::Failed(status) => Some(Err(self.lean_error(id, status, code, buf))),
            Lean::Done | Lean::NotRun => {
                let c = self.fns.get(id.0 as usize)?;
                self.run_bool_full(c, code, frame, buf)
            }
        }
    }

    /// The fast path of [`Jit::run_bool`] (a lean code with a native bool value): what
    /// happened, in a register (see [`Lean`]).
    #[inline(always)]
    pub(crate) fn lean_bool(&self, id: FnId, frame: &mut [Option<Value>], buf: &mut [u64]) -> Lean {
        match self.lean_fn(id, true) {
            Some(c) => self.lean_bool_of(c, frame, buf),
            None => Lean::NotRun,
        }
    }

    /// Code `id` if it takes the fast paths (`bool`: as a condition, with a native bool
    /// value), resolved once for many runs (see `JitRunner::run_loop`).
    #[inline(always)]
    pub(crate) fn lean_fn(&self, id: FnId, bool: bool) -> Option<&Compiled> {
        self.fns
            .get(id.0 as usize)
            .filter(|c| c.lean && (!bool || matches!(c.result, Res::Native(Nt::Bool))))
    }

    /// The words of the buffer that code `c` needs.
    pub(crate) fn words(c: &Compiled) -> usize {
        c.words.len
    }

    /// [`Jit::lean_bool`] of a code from [`Jit::lean_fn`] (with `bool`).
    #[inline(always)]
    pub(crate) fn lean_bool_of(
        &self,
        c: &Compiled,
        frame: &mut [Option<Value>],
        buf: &mut [u64],
    ) -> Lean {
        match self.call_lean(c, frame, buf) {
            Some(0) => Lean::Bool(buf.get(c.words.result).is_some_and(|w| *w as u8 != 0)),
            Some(status) if status > 0 => Lean::Failed(status),
            Some(_) => Lean::Fallback,
            None => Lean::NotRun,
        }
    }

    /// The fast path of [`Jit::run_effect`] (a lean code).
    #[inline(always)]
    pub(crate) fn lean_effect(
        &self,
        id: FnId,
        frame: &mut [Option<Value>],
        buf: &mut [u64],
    ) -> Lean {
        match self.lean_fn(id, false) {
            Some(c) => self.lean_effect_of(c, frame, buf),
            None => Lean::NotRun,
        }
    }

    /// [`Jit::lean_effect`] of a code from [`Jit::lean_fn`].
    #[inline(always)]
    pub(crate) fn lean_effect_of(
        &self,
        c: &Compiled,
        frame: &mut [Option<Value>],
        buf: &mut [u64],
    ) -> Lean {
        match self.call_lean(c, frame, buf) {
            Some(0) => Lean::Done,
            Some(status) if status > 0 => Lean::Failed(status),
            Some(_) => Lean::Fallback,
            None => Lean::NotRun,
        }
    }

    /// The error of a lean run that ended with `status` (> 0).
    #[cold]
    #[inline(never)]
    pub(crate) fn lean_error(&self, id: FnId, status: i32, code: &Code, buf: &[u64]) -> RunError {
        match self.fns.get(id.0 as usize) {
            Some(c) => error(c, status, code, buf),
            None => RunError::new(RunErrorKind::BadCode(format!(
                "jit: no compiled code {id:?}"
            ))),
        }
    }

    /// [`Jit::run_bool`] beyond its fast path.
    #[inline(never)]
    fn run_bool_full(
        &self,
        c: &Compiled,
        code: &Code,
        frame: &mut [Option<Value>],
        buf: &mut Vec<u64>,
    ) -> Option<Result<bool, RunError>> {
        let status = self.exec(c, code, frame, buf)?;
        if status == 0
            && !c.plan.uses_dyn
            && let Res::Native(Nt::Bool) = c.result
        {
            return Some(Ok(buf[c.words.result] as u8 != 0));
        }
        Some(finish_bool(c, status, code, buf))
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
        match self.lean_effect(id, frame, buf) {
            Lean::Done => Some(Ok(())),
            Lean::Fallback => None,
            Lean::Failed(status) => Some(Err(self.lean_error(id, status, code, buf))),
            Lean::Bool(_) | Lean::NotRun => {
                let c = self.fns.get(id.0 as usize)?;
                self.run_effect_full(c, code, frame, buf)
            }
        }
    }

    /// [`Jit::run_effect`] beyond its fast path.
    #[inline(never)]
    fn run_effect_full(
        &self,
        c: &Compiled,
        code: &Code,
        frame: &mut [Option<Value>],
        buf: &mut Vec<u64>,
    ) -> Option<Result<(), RunError>> {
        let status = self.exec(c, code, frame, buf)?;
        if status == 0 && !c.plan.uses_dyn {
            return Some(Ok(()));
        }
        Some(finish_effect(c, status, code, buf))
    }

    /// The fast path of a lean code: the status of the call, or `None` when the frame or the
    /// buffer is too short (the full path sorts that out).
    #[inline(always)]
    fn call_lean(&self, c: &Compiled, frame: &mut [Option<Value>], buf: &mut [u64]) -> Option<i32> {
        if frame.len() < c.min_frame || buf.len() < c.words.len {
            return None;
        }
        Some(self.call_direct(c, frame, buf))
    }

    /// Runs the code over the frame, writes native locals and assigned fields back: the status
    /// (0: ok, else 1 + the failing instruction); the result is left in `buf` or on the
    /// helpers' value stack. `None` (nothing changed) when the frame does not fit.
    #[inline(always)]
    fn exec(
        &self,
        c: &Compiled,
        code: &Code,
        frame: &mut [Option<Value>],
        buf: &mut Vec<u64>,
    ) -> Option<i32> {
        if frame.len() < code.slots.len() || frame.len() < c.min_frame {
            return None;
        }
        let len = c.words.len;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        if !c.plan.fields.is_empty() {
            load_fields(c, code, frame, buf)?;
        }
        if c.direct {
            // The code checks and loads its native slots itself (-1: they do not fit, and
            // nothing was changed) and writes its native locals back.
            let status = self.call_direct(c, frame, buf);
            if status < 0 {
                return None;
            }
            if c.writes_back {
                write_back(c, code, frame, buf);
            }
            return Some(status);
        }
        self.exec_buffered(c, frame, buf)
    }

    /// The buffered hand-over (see the crate docs).
    #[inline]
    fn exec_buffered(
        &self,
        c: &Compiled,
        frame: &mut [Option<Value>],
        buf: &mut [u64],
    ) -> Option<i32> {
        let plan = &c.plan;
        let nn = plan.natives.len();
        // Every word the code reads is written here (no clearing of the buffer; the flag
        // words of inputs are not read: see `codegen`).
        let (vals, rest) = buf.split_at_mut(nn);
        let (flags, _) = rest.split_at_mut(nn);
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
            let status = self.call_buffered(c, buf);
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
            self.call_buffered(c, buf)
        };
        if c.writes_back {
            write_back(c, &c.code, frame, buf);
        }
        Some(status)
    }
}

/// The value of a successful run.
#[inline]
fn result_value(c: &Compiled, buf: &[u64]) -> Value {
    match c.result {
        Res::Control => Value::Control,
        Res::Native(t) => value_of(t, buf[c.words.result]),
        Res::Dyn(pos) => take_dyn(pos),
    }
}

/// The rest of [`Jit::run_bool`]: an error, a value that is not a native bool, a run that
/// used the helpers' value stack.
#[cold]
#[inline(never)]
fn finish_bool(c: &Compiled, status: i32, code: &Code, buf: &[u64]) -> Result<bool, RunError> {
    let r = if status != 0 {
        Err(error(c, status, code, buf))
    } else if let Res::Native(Nt::Bool) = c.result {
        Ok(buf[c.words.result] as u8 != 0)
    } else {
        pnet_engine::condition_value(code, result_value(c, buf))
    };
    if c.plan.uses_dyn {
        clear_stack();
    }
    r
}

/// The rest of [`Jit::run_effect`]: an error, a run that used the helpers' value stack.
#[cold]
#[inline(never)]
fn finish_effect(c: &Compiled, status: i32, code: &Code, buf: &[u64]) -> Result<(), RunError> {
    let r = if status == 0 {
        Ok(())
    } else {
        Err(error(c, status, code, buf))
    };
    if c.plan.uses_dyn {
        clear_stack();
    }
    r
}

/// The interpreter's error for a failed run (status = 1 + the failing instruction), from the
/// error record the code left in `buf`.
#[cold]
#[inline(never)]
fn error(c: &Compiled, status: i32, code: &Code, buf: &[u64]) -> RunError {
    let pc = (status as usize).wrapping_sub(1);
    let record = buf
        .get(c.words.err..c.words.err + 3)
        .map_or([0; 3], |w| [w[0], w[1], w[2]]);
    let fault = rt::ErrRecord::fault(record).or_else(take_fault);
    let kind = match fault {
        Some(Fault::Kind(k)) => k,
        Some(Fault::Unbound(s)) => RunErrorKind::Unbound(pnet_engine::slot_name(code, s)),
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

/// The field inputs into the buffer; `None` if one is missing or of another type.
#[inline]
fn load_fields(c: &Compiled, code: &Code, frame: &[Option<Value>], buf: &mut [u64]) -> Option<()> {
    for (f, word) in c.plan.fields.iter().zip(&mut buf[c.words.fields..]) {
        let mut v = frame.get(usize::from(f.slot))?.as_ref()?;
        for name in code.paths.get(f.paths[0] as usize)? {
            v = pnet_engine::field_of(v, name)?;
        }
        *word = bits_of(f.ty, v)?;
    }
    Some(())
}

/// Native locals (when buffered) and assigned struct fields back into the frame.
#[inline]
fn write_back(c: &Compiled, code: &Code, frame: &mut [Option<Value>], buf: &[u64]) {
    let plan = &c.plan;
    if !c.direct {
        for (j, ns) in plan.natives.iter().enumerate() {
            if ns.local
                && buf[c.words.flags + j] as u8 != 0
                && let Some(slot) = frame.get_mut(usize::from(ns.slot))
            {
                set_scalar(slot, ns.ty, buf[j]);
            }
        }
    }
    // Assigned struct fields in place (their paths exist: checked on entry).
    for (k, f) in plan.fields.iter().enumerate() {
        if f.stored
            && let Some(path) = code.paths.get(f.paths[0] as usize)
            && let Some(Some(root)) = frame.get_mut(usize::from(f.slot))
            && let Some(v) = rt::field_mut(root, path)
        {
            *v = value_of(f.ty, buf[c.words.fields + k]);
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

// ---------------------------------------------------------------------------------------------
// The unsafe code (all of the crate's).
//
// The layout argument, on which every block below rests: `pnet_stdlib::Value` is
// `#[repr(u8)]` (`pnet_stdlib::value::VALUE_REPR_U8`, checked before any raw access). By RFC
// 2195 it is then a `#[repr(C)]` union of one `#[repr(C)]` struct `{ tag: u8, fields.. }` per
// variant: byte 0 of every `Value` is its tag (always initialized), and the payload of a
// scalar variant `V(T)` is at `offset_of!(Variant<T>, v)` of `#[repr(C)] struct Variant<T> {
// tag: u8, v: T }` (`layout::payload_offset`). The only niche of such an enum is its tag's
// unused values, so when `size_of::<Option<Value>>() == size_of::<Value>()` (checked before any
// raw access), `Some(v)` has exactly the bytes of `v` and `None` is one unused tag value in
// byte 0: byte 0 of an `Option<Value>` is always initialized, and writing a variant's tag and a
// valid payload into a slot makes it `Some` of that variant. `Layout::probe` checks each of
// these facts on sample values (tags distinct, `None`'s tag none of them, payloads read back
// at their offsets inside `Some`, a written slot reads back as the value) before direct access
// is used at all.

/// Whether the layout argument above applies to this build.
fn layout_argument_holds() -> bool {
    pnet_stdlib::value::VALUE_REPR_U8 && size_of::<Option<Value>>() == size_of::<Value>()
}

/// The tag byte of a value (byte 0); `None` if `Value` is not `#[repr(u8)]`.
pub(crate) fn tag_of_value(v: &Value) -> Option<u8> {
    if !pnet_stdlib::value::VALUE_REPR_U8 {
        return None;
    }
    let p = (v as *const Value).cast::<u8>();
    // SAFETY: `p` points to a live `Value` borrowed for this call; by the layout argument
    // (`#[repr(u8)]`, checked above) its byte 0 is the tag, which is initialized.
    Some(unsafe { p.read() })
}

/// The tag byte of a frame slot (byte 0); `None` if the layout argument does not hold.
pub(crate) fn tag_of_slot(slot: &Option<Value>) -> Option<u8> {
    if !layout_argument_holds() {
        return None;
    }
    let p = (slot as *const Option<Value>).cast::<u8>();
    // SAFETY: `p` points to a live `Option<Value>` borrowed for this call. By the layout
    // argument (checked above) byte 0 is the tag of the `Some` value or `None`'s tag value,
    // initialized either way.
    Some(unsafe { p.read() })
}

/// The payload of the scalar in a `Some` slot of type `t`, read at byte offset `off`; `None`
/// if the slot holds no scalar of type `t`, or `off` is not the variant's payload offset.
pub(crate) fn payload_of_slot(slot: &Option<Value>, t: Nt, off: usize) -> Option<u64> {
    let v = slot.as_ref()?;
    if !layout_argument_holds() || Nt::of_value(v) != Some(t) || off != layout::payload_offset(t) {
        return None;
    }
    let p = (slot as *const Option<Value>).cast::<u8>();
    // SAFETY: `slot` is `Some(v)` with `v` a scalar of variant `t`, whose payload is at
    // `payload_offset(t)` == `off`, `payload_size(t)` bytes, inside the value (layout
    // argument, checked above); every read below is within those initialized bytes, unaligned
    // reads of plain integers.
    Some(unsafe {
        let q = p.add(off);
        match layout::payload_size(t) {
            1 => u64::from(q.read()),
            4 => u64::from(q.cast::<u32>().read_unaligned()),
            _ => q.cast::<u64>().read_unaligned(),
        }
    })
}

/// Writes the scalar `t` with the given bits into `slot` the way generated code does: the
/// slot's first 16 bytes at once, the tag byte at 0, the payload at `off`, zeros in between
/// and after. Does nothing unless `slot` holds no heap data (`None` or a scalar), `tag` is the
/// tag of `t`'s variant, `off` its payload offset, and the payload lies in the first 8 bytes
/// after the tag or is the second 8.
pub(crate) fn write_slot(slot: &mut Option<Value>, t: Nt, tag: u8, off: usize, bits: u64) {
    let v = value_of(t, bits);
    let size = layout::payload_size(t);
    if !layout_argument_holds()
        || cfg!(target_endian = "big")
        || size_of::<Value>() < 16
        || off != layout::payload_offset(t)
        || !(off + size <= 8 || off == 8)
        || tag_of_value(&v) != Some(tag)
        || slot.as_ref().is_some_and(|v| Nt::of_value(v).is_none())
    {
        return;
    }
    // A valid payload of `t` (a bool is 0 or 1).
    let Some(bits) = bits_of(t, &v) else {
        return;
    };
    let image: [u64; 2] = if off == 8 {
        [u64::from(tag), bits]
    } else {
        [u64::from(tag) | bits << (8 * off), 0]
    };
    let p = (slot as *mut Option<Value>).cast::<[u64; 2]>();
    // SAFETY: `slot` is borrowed mutably for this call and holds `None` or a scalar (checked
    // above): nothing owned is overwritten. The 16 bytes written are inside the value (its
    // size is at least 16, checked), unaligned writes are fine. By the layout argument
    // (checked above) they make the slot `Some(value_of(t, bits))`: the tag of `t`'s variant
    // (checked) at byte 0, a valid payload of type `t` at its offset (checked; a little-endian
    // host, checked), and zeros in bytes that are padding of that variant.
    unsafe { p.write_unaligned(image) }
}

impl Jit {
    /// Calls the buffered code of `c` (see `codegen`).
    #[inline]
    fn call_buffered(&self, c: &Compiled, buf: &mut [u64]) -> i32 {
        if c.direct || buf.len() < c.words.len {
            return -1;
        }
        let ptr = c.addr as *const u8;
        // SAFETY: `c` is one of `self.fns`, so `c.addr` is the address of a function that
        // `self.module` compiled and finalized (`Jit::compile`) and still owns: the module
        // lives as long as `self`, which is borrowed for this call, and never frees code. Not
        // being direct, the function was built by `codegen::translate` with exactly the
        // signature `extern "C" fn(*mut u64) -> i32` (`codegen::signature`: one pointer
        // parameter, an i32 result, the host's default calling convention, which is the C
        // one). It reads and writes only the words `0..c.words.len` of its argument, and `buf`
        // (checked above) has at least that many: the pointer is valid for the whole call,
        // which borrows `buf` mutably. It calls only the helpers of `rt`, which take plain
        // integers and floats, never unwind (they catch panics) and never call back into
        // generated code.
        let entry =
            unsafe { std::mem::transmute::<*const u8, extern "C" fn(*mut u64) -> i32>(ptr) };
        entry(buf.as_mut_ptr())
    }

    /// Calls the direct code of `c` over `frame` (see `codegen`): -1 (nothing changed) when a
    /// native slot does not hold what the code was compiled for.
    #[inline(always)]
    fn call_direct(&self, c: &Compiled, frame: &mut [Option<Value>], buf: &mut [u64]) -> i32 {
        if !c.direct || frame.len() < c.min_frame || buf.len() < c.words.len {
            return -1;
        }
        let ptr = c.addr as *const u8;
        // SAFETY: `c.addr` is a finalized function of `self.module`, alive while `self` is
        // borrowed (see `call_buffered`). `c.direct` is set (in `Jit::compile`, from
        // `Jit::define`) only for a code without helpers on dynamic values (`!uses_dyn`)
        // that `codegen::translate` built with `self.layout`, which is set once, in
        // `Jit::new`, from a `Layout::probe` that verified the layout argument at the top of
        // this section; the function's signature is `extern "C" fn(*mut Option<Value>, *mut
        // u64) -> i32` (`codegen::signature`, the host's C convention). Its memory accesses:
        // - `buf`: only the words `0..c.words.len`, which `buf` has (checked above).
        // - the frame: only the slots of `c.plan.natives`, all below `c.min_frame` ==
        //   `c.code.slots.len()` (`analysis::analyse` rejects other slot indices), which
        //   `frame` has (checked above), at `slot * layout.slot_size` (the stride of
        //   `[Option<Value>]`: `slot_size` is `size_of::<Value>()`, which the probe found
        //   equal to `size_of::<Option<Value>>()`).
        //   On entry it reads each such slot's tag byte (initialized: layout argument) and,
        //   only if the tag is its type's, the payload at the type's offset (initialized).
        //   Before anything else it returns -1 unless every input slot holds its type and
        //   every local slot holds its type or `None`. On exit it writes, into each local
        //   slot it assigned, the slot's first 16 bytes (`codegen::Gen::write_slot`): the tag
        //   byte of the local's type, a valid payload of that type at its offset (its bools
        //   are 0 or 1), zeros in the padding, exactly as `write_slot` below, whose result
        //   `Layout::probe` checked for every type: the slot held no heap data, and it now
        //   holds `Some` of that type (layout argument). Nothing else in the frame is touched: the code
        //   calls no helper on dynamic values (`!uses_dyn`), only the pure helpers of `rt`
        //   (plain integers and floats, never unwinding, never calling back).
        // The frame and `buf` are borrowed mutably for the whole call.
        let entry = unsafe {
            std::mem::transmute::<*const u8, extern "C" fn(*mut Option<Value>, *mut u64) -> i32>(
                ptr,
            )
        };
        entry(frame.as_mut_ptr(), buf.as_mut_ptr())
    }
}
