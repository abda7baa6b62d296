//! The hook through which another evaluator (the Cranelift JIT of `pnet-jit`) runs codes
//! instead of the interpreter. The engine knows only these traits, so `pnet-vm` does not
//! depend on any code generator.

use std::fmt;

use pnet_bundle::{Bundle, Code, CodeId};
use pnet_stdlib::Value;

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
}
