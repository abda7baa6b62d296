//! Run-time errors of the interpreter and the engine.

use std::fmt;

use pnet_bundle::SourceSpan;
use pnet_stdlib::EvalError;

/// What went wrong.
#[derive(Clone, Debug, PartialEq)]
pub enum RunErrorKind {
    /// An operator or built-in failed (division by zero, ...).
    Eval(EvalError),
    /// A reference to a slot (port or local variable) that holds no value.
    Unbound(String),
    /// A field path that does not exist in the referenced value.
    NoSuchField { reference: String, field: String },
    /// A connected output port without a value after the expression ran (`missing_binding`).
    MissingBinding { port: String },
    /// A value that does not fit its port (or place) type.
    TypeMismatch {
        port: String,
        value: String,
        ty: String,
    },
    /// A condition or a short-circuit operand that is not a bool.
    NotABool(String),
    /// A generator place ran out of values.
    GeneratorExhausted { place: String, ty: String },
    /// No `shared_sink` place with this name for the clean-up of a `shared_P` value.
    NoSharedSink { place: String },
    /// A module call met by a driver that cannot run modules.
    ModuleCall { module: String, function: String },
    /// A module call failed (reported by the driver).
    TaskFailed { module: String, message: String },
    /// The run config's firing limit was reached.
    MaxFirings(u64),
    /// Wrong job inputs (unknown port, value of the wrong type, ...).
    Input(String),
    /// The bundle is malformed or uses something the engine does not support.
    Bundle(String),
    /// Bytecode that breaks its invariants (stack underflow, bad index, ...).
    BadCode(String),
    /// A memory buffer's size or alignment that is not an `unsigned long`.
    Memory(String),
}

impl fmt::Display for RunErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunErrorKind::Eval(e) => write!(f, "{e}"),
            RunErrorKind::Unbound(name) => write!(f, "${{{name}}} has no value"),
            RunErrorKind::NoSuchField { reference, field } => {
                write!(f, "${{{reference}}} has no field `{field}`")
            }
            RunErrorKind::MissingBinding { port } => {
                write!(f, "missing_binding: output port `{port}` has no value")
            }
            RunErrorKind::TypeMismatch { port, value, ty } => {
                write!(f, "value {value} of port `{port}` is not of type {ty}")
            }
            RunErrorKind::NotABool(what) => write!(f, "{what} is not a bool"),
            RunErrorKind::GeneratorExhausted { place, ty } => {
                write!(
                    f,
                    "generator place `{place}` ran out of values of type {ty}"
                )
            }
            RunErrorKind::NoSharedSink { place } => {
                write!(
                    f,
                    "no shared_sink place `{place}` for the clean-up of a shared_{place} value"
                )
            }
            RunErrorKind::ModuleCall { module, function } => write!(
                f,
                "module call `{module}::{function}` needs workers (this driver runs expressions only)"
            ),
            RunErrorKind::TaskFailed { module, message } => {
                write!(f, "module call `{module}` failed: {message}")
            }
            RunErrorKind::MaxFirings(n) => {
                write!(f, "the firing limit of {n} was reached (runaway net?)")
            }
            RunErrorKind::Input(m) => write!(f, "bad input: {m}"),
            RunErrorKind::Bundle(m) => write!(f, "bad bundle: {m}"),
            RunErrorKind::BadCode(m) => write!(f, "bad bytecode: {m}"),
            RunErrorKind::Memory(m) => write!(f, "{m}"),
        }
    }
}

/// A run-time error (boxed, so that results stay small on the hot path); the details are
/// reachable through `Deref`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunError(pub Box<RunErrorData>);

impl std::ops::Deref for RunError {
    type Target = RunErrorData;

    fn deref(&self) -> &RunErrorData {
        &self.0
    }
}

impl std::ops::DerefMut for RunError {
    fn deref_mut(&mut self) -> &mut RunErrorData {
        &mut self.0
    }
}

/// A run-time error with its context: the failing instruction's span (and its `file:line:col`
/// once the engine knows the bundle) and the transition it happened in.
#[derive(Clone, Debug, PartialEq)]
pub struct RunErrorData {
    pub kind: RunErrorKind,
    /// Span of the failing instruction, if the error came from bytecode.
    pub span: Option<SourceSpan>,
    /// `file:line:col` of `span`.
    pub at: Option<String>,
    /// Name of the transition that failed.
    pub transition: Option<String>,
    /// `file:line:col` of that transition.
    pub transition_at: Option<String>,
}

impl RunError {
    pub fn new(kind: RunErrorKind) -> RunError {
        RunError(Box::new(RunErrorData {
            kind,
            span: None,
            at: None,
            transition: None,
            transition_at: None,
        }))
    }

    pub fn with_span(kind: RunErrorKind, span: SourceSpan) -> RunError {
        let mut e = RunError::new(kind);
        e.span = Some(span);
        e
    }

    pub(crate) fn bundle(m: impl Into<String>) -> RunError {
        RunError::new(RunErrorKind::Bundle(m.into()))
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(t) = &self.transition {
            write!(f, "in transition `{t}`")?;
            if let Some(at) = &self.transition_at {
                write!(f, " ({at})")?;
            }
            write!(f, ": ")?;
        }
        write!(f, "{}", self.kind)?;
        if let Some(at) = &self.at {
            write!(f, " at {at}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RunError {}
