//! The compiler driver shared by the command-line tools that take `.xpnet` files (`pnetc`,
//! and later `gspc-run`, `pnetv`, `pnet2dot`): rendering diagnostics with codespan-reporting,
//! and the command-line syntax of compiler options (`-I`, `--W<name>[=bool]`, ...).

pub mod args;
pub mod net;
pub mod render;

pub use net::{load_net, parse_put, parse_value};
pub use render::{ColorMode, render_diagnostics};
