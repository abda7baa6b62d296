//! DDS topology files (FairRootGroup/DDS): parse and check them, expand them into task
//! instances with DDS's paths and indices, compare two of them.
//!
//! The data flow is `text -> parse() -> (Option<Topology>, diagnostics) -> expand() ->
//! Expanded`. [`model`] holds the declarations with their spans (names resolved to indices);
//! the runner (`pnet-dds-run`) reads [`Topology`] and [`Expanded`] and nothing else.
//!
//! Diagnostics are [`pnet_topology::Diagnostic`]s (stable code, severity, message, byte span
//! into the text given to [`parse`], notes).

pub mod model;

pub use model::*;
pub use pnet_topology::{Diagnostic, Severity};
