//! Values of the xpnet expression language, their static types, their literal syntax
//! (parse and print), the operators and the built-in functions with their type signatures.
//!
//! This crate depends on nothing else in the workspace: the compiler, the VM and the runtime
//! all share it.

pub mod builtins;
pub mod cli;
pub mod error;
pub mod input;
pub mod json;
pub mod literal;
pub mod ops;
pub mod suggest;
pub mod ty;
pub mod value;

pub use builtins::{Builtin, make_shared};
pub use error::{EvalError, TypeError};
pub use ops::{BinOp, UnOp};
pub use ty::{StructType, Type, type_name};
pub use value::{Bitset, Shared, Value};
