//! The hook through which another evaluator (the Cranelift JIT of `pnet-jit`) runs codes
//! instead of the interpreter. The engine knows only these traits, so `pnet-engine` does not
//! depend on any code generator.

use std::fmt;

use pnet_bundle::{Bundle, Code, CodeId};
use pnet_stdlib::{Type, Value};

use crate::error::RunError;
use crate::interp::Interpreter;

/// Makes a [`CodeRunner`] for each engine (set in [`crate::RunConfig::runner`]).
pub trait CodeRunnerFactory: fmt::Debug + Send + Sync {
    /// The runner of one engine over `bundle`, made when the engine is made (a JIT may compile
    /// the bundle's codes here, "at bundle load").
    fn runner(&self, bundle: &Bundle) -> Box<dyn CodeRunner>;
}

/// Runs the codes of one bundle.
pub trait CodeRunner: fmt::Debug + Send {
    /// Runs code `id` (which is `code`) over `frame`, like [`Interpreter::run`]: same value,
    /// same frame afterwards, same error (kind and span). `interp` is there for the codes the
    /// runner does not compile.
    fn run(
        &mut self,
        id: CodeId,
        code: &Code,
        frame: &mut [Option<Value>],
        interp: &mut Interpreter,
    ) -> Result<Value, RunError>;

    /// Runs a condition: [`CodeRunner::run`] followed by [`crate::condition_value`] (a runner
    /// may skip building the [`Value`]).
    fn run_bool(
        &mut self,
        id: CodeId,
        code: &Code,
        frame: &mut [Option<Value>],
        interp: &mut Interpreter,
    ) -> Result<bool, RunError> {
        let v = self.run(id, code, frame, interp)?;
        crate::interp::condition_value(code, v)
    }

    /// Runs code for its effect on `frame` only (an expression's value is not used): like
    /// [`CodeRunner::run`] with the value dropped (a runner may skip building it).
    fn run_effect(
        &mut self,
        id: CodeId,
        code: &Code,
        frame: &mut [Option<Value>],
        interp: &mut Interpreter,
    ) -> Result<(), RunError> {
        self.run(id, code, frame, interp).map(drop)
    }

    /// Fires a loop transition up to `max` times, as the engine would fire it on its own
    /// (see [`drive_loop`]), with `token` the value on its place: returns the firings done
    /// (each one [`CodeRunner::run_bool`] and [`CodeRunner::run_effect`]) and why it stopped;
    /// `token` is then the place's value (unless the last firing failed). A default method,
    /// so that each runner's codes are called directly, not through the trait object.
    fn run_loop(
        &mut self,
        l: &Loop,
        token: &mut Value,
        frame: &mut Vec<Option<Value>>,
        max: u64,
        interp: &mut Interpreter,
    ) -> (u64, LoopEnd) {
        drive_loop(
            l,
            token,
            frame,
            max,
            &mut RunnerCodes {
                runner: self,
                interp,
                l,
            },
        )
    }
}

/// The two codes of a [`Loop`], as [`drive_loop`] runs them.
pub trait LoopCodes {
    /// Runs the condition over `frame`.
    fn condition(&mut self, frame: &mut [Option<Value>]) -> Result<bool, RunError>;
    /// Runs the expression over `frame` (its value is not used).
    fn expression(&mut self, frame: &mut [Option<Value>]) -> Result<(), RunError>;
}

/// A loop's codes through a runner's [`CodeRunner::run_bool`] and
/// [`CodeRunner::run_effect`] (called directly: `R` is the runner's own type).
pub struct RunnerCodes<'a, R: ?Sized> {
    pub runner: &'a mut R,
    pub interp: &'a mut Interpreter,
    pub l: &'a Loop<'a>,
}

impl<R: CodeRunner + ?Sized> LoopCodes for RunnerCodes<'_, R> {
    #[inline(always)]
    fn condition(&mut self, frame: &mut [Option<Value>]) -> Result<bool, RunError> {
        let l = self.l;
        self.runner
            .run_bool(l.cond, l.cond_code, frame, self.interp)
    }

    #[inline(always)]
    fn expression(&mut self, frame: &mut [Option<Value>]) -> Result<(), RunError> {
        let l = self.l;
        self.runner
            .run_effect(l.expr, l.expr_code, frame, self.interp)
    }
}

/// A loop's codes through the interpreter alone.
pub(crate) struct Interpreted<'a> {
    pub(crate) interp: &'a mut Interpreter,
    pub(crate) l: &'a Loop<'a>,
}

impl LoopCodes for Interpreted<'_> {
    #[inline(always)]
    fn condition(&mut self, frame: &mut [Option<Value>]) -> Result<bool, RunError> {
        self.interp.run_bool(self.l.cond_code, frame)
    }

    #[inline(always)]
    fn expression(&mut self, frame: &mut [Option<Value>]) -> Result<(), RunError> {
        self.interp.run_effect(self.l.expr_code, frame)
    }
}

/// A transition that loops on one token (see [`CodeRunner::run_loop`]): one port, connected
/// in and out (`connect-inout`) to one place holding exactly that token, a scalar type, a
/// condition over the port and an expression.
#[derive(Debug)]
pub struct Loop<'a> {
    pub cond: CodeId,
    pub cond_code: &'a Code,
    pub expr: CodeId,
    pub expr_code: &'a Code,
    /// The port's slot (in both codes' frames).
    pub slot: usize,
    /// The expression's frame size and the slots emptied before each firing (those of the
    /// other ports and the locals).
    pub frame: usize,
    pub clear: &'a [usize],
    /// The port's type: the value the expression leaves must fit it.
    pub ty: &'a Type,
}

/// Why [`CodeRunner::run_loop`] stopped.
#[derive(Debug)]
pub enum LoopEnd {
    /// It fired as often as it was allowed to.
    Budget,
    /// The condition does not hold for the token (which is still the place's).
    Disabled,
    /// The condition failed (the token is still the place's).
    Condition(RunError),
    /// The last firing (counted) failed in its expression; its token is consumed.
    Expression(RunError),
    /// The last firing (counted) left no value in the port; its token is consumed.
    Missing,
    /// The last firing (counted) left a value of another type in the port (this one).
    Mismatch(Value),
}

/// The loop of [`CodeRunner::run_loop`], running the codes through `codes`. Every step is
/// the engine's: the re-examination of the transition (the condition over a frame of its
/// slots with a copy of the token), then the firing (the expression over a frame with the
/// token moved in, the other slots empty, the value left in the port type-checked and moved
/// back to the place).
#[inline]
pub fn drive_loop<C: LoopCodes + ?Sized>(
    l: &Loop,
    token: &mut Value,
    frame: &mut Vec<Option<Value>>,
    max: u64,
    codes: &mut C,
) -> (u64, LoopEnd) {
    use crate::interp::{clear_slot, reset_frame, set_clone};
    let mut n = 0;
    while n < max {
        reset_frame(frame, l.cond_code.slots.len());
        set_clone(&mut frame[l.slot], Some(token));
        match codes.condition(frame) {
            Ok(true) => {}
            Ok(false) => return (n, LoopEnd::Disabled),
            Err(e) => return (n, LoopEnd::Condition(e)),
        }
        n += 1;
        crate::interp::firing_frame(frame, l.frame, l.clear);
        set_clone(&mut frame[l.slot], Some(token));
        if let Err(e) = codes.expression(frame) {
            return (n, LoopEnd::Expression(e));
        }
        match &frame[l.slot] {
            None => return (n, LoopEnd::Missing),
            Some(v) if !crate::engine::fits(v, l.ty) => {
                return (n, LoopEnd::Mismatch(v.clone()));
            }
            Some(v) => crate::interp::copy_scalar(token, v),
        }
        clear_slot(&mut frame[l.slot]);
    }
    (n, LoopEnd::Budget)
}
