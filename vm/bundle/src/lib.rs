//! The contract between the compiler and the VM: a typed net IR (dense vectors indexed by
//! typed ids), the bytecode of expressions and conditions, a source map, and the binary
//! `.pnet` bundle that carries them (magic, format version, CRC-32, postcard payload).
//!
//! Every part has a text form (`Display`): `pnetc --emit=ir` and `--emit=bytecode`.

mod build;
pub mod bytecode;
pub mod format;
pub mod inputs;
pub mod ir;
pub mod nesting;
pub mod result;
#[cfg(feature = "testing")]
pub mod testing;
pub mod text;
pub mod validate;

pub use bytecode::{Code, Instr, OpTy, Slot, SlotKind};
pub use format::{BundleError, FORMAT_VERSION, MAGIC};
pub use ir::*;
pub use validate::validate;
