//! Bundle validation: every index in range, every code well-formed, so that the engine and
//! the interpreter never index out of bounds on a malformed bundle. The one copy lives in
//! [`mod@pnet_bundle::validate`] (every decoded bundle passes it); the engine runs it again at
//! load for bundles built in memory.

pub use pnet_bundle::validate::{generator_type, validate};
