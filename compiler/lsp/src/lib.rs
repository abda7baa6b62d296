//! `pnet-lsp`: a language server for xpnet on top of `pnet-sema`'s salsa queries.
//!
//! [`analysis`] holds the state (database, open buffers, one workspace per open document),
//! [`features`] answers requests from the facts sema records, [`server`] speaks the protocol.

pub mod actions;
pub mod analysis;
pub mod features;
pub mod format;
pub mod generate;
pub mod hints;
pub mod line_index;
pub mod rename;
pub mod server;
pub mod tokens;
