//! DDS topology files (FairRootGroup/DDS): parse and check them, expand them into task
//! instances with DDS's paths and indices, compare two of them.
//!
//! The data flow is `text -> parse() -> (Option<Topology>, diagnostics) -> expand() ->
//! Expanded`. [`model`] holds the declarations with their spans (names resolved to indices);
//! the runner (`pnet-dds-run`) reads [`Topology`] and [`Expanded`] and nothing else.
//!
//! Diagnostics are [`pnet_diagnostics::Diagnostic`]s (stable code, severity, message, a
//! primary span whose [`Diagnostic::range`] is the byte range in the text given to
//! [`parse()`], notes).
//!
//! # Processing
//!
//! 1. The text is parsed as XML (roxmltree; no DTD).
//! 2. Unless [`ParseOptions::substitute`] is false, every `${name}` whose name is a `<var>` of
//!    the file or a [`ParseOptions::vars`] entry (which wins) is replaced by the value,
//!    textually, before anything is checked. Values may use other variables; the value is
//!    XML-escaped so it means the same in an attribute and in text. Unknown `${name}`s stay
//!    (the shell sees them at run time). Spans point into the original text.
//! 3. The schema `topology.xsd` is checked: element order and multiplicity, required and
//!    unknown attributes, enumerations, names (`[a-zA-Z0-9#@~_-]+`, 1 to 128 characters),
//!    numbers (`n` from 1 to 4294967295), no nested groups.
//! 4. DDS's rules: every name used is declared, once; trigger args and `maxinstances` / `gpu`
//!    values are numbers; the expansion stays below [`MAX_TASKS`] task instances.
//!
//! # Instances, paths and ids
//!
//! See [`expand()`]. An id is DDS's: boost's `crc_optimal<64, 0x04C11DB7, 0, 0, false, false>`
//! of the instance's path with indices followed by its declaration's hash string
//! ([`task_hash_string`], [`collection_hash_string`]). The ids of DDS's test files
//! (`topology_test_7_maps_*.txt`, `topology_test_diff.txt`) are reproduced exactly; for tasks
//! with requirements, properties, triggers or assets the hash string's form is a guess.
//!
//! # Diagnostic codes
//!
//! | code | severity | meaning |
//! | --- | --- | --- |
//! | `dds-xml` | error | the text is not well-formed XML (or not UTF-8) |
//! | `dds-root` | error | the root element is not `<topology>` |
//! | `dds-unknown-element` | error | an element the schema does not allow here |
//! | `dds-nested-group` | error | a `<group>` inside a `<group>` |
//! | `dds-schema-order` | error | an element out of the schema's order |
//! | `dds-too-many` | error | an element more often than allowed (two `<main>`, two `<exe>`) |
//! | `dds-missing-element` | error | a required element is missing (`<decltask>`, `<main>`, `<exe>`, `<tasks>`, a `<name>` in `<tasks>`) |
//! | `dds-unexpected-text` | error | text where only elements (or nothing) may be |
//! | `dds-unknown-attribute` | error | an attribute the schema does not allow |
//! | `dds-missing-attribute` | error | a required attribute is missing |
//! | `dds-bad-value` | error | an attribute value outside its enumeration, a bad boolean, a bad `n` |
//! | `dds-empty-value` | error | an empty `<exe>`/`<env>` or an empty required string value |
//! | `dds-bad-name` | error | a name that is empty, longer than 128 characters or has other characters than `a-zA-Z0-9#@~_-` |
//! | `dds-undeclared` | error | a reference to a name that is not declared |
//! | `dds-duplicate` | error | a reference to a name declared more than once; a group name twice in `<main>`; a variable declared twice and used |
//! | `dds-duplicate-unused` | warning | a name declared more than once but never used |
//! | `dds-repeated-reference` | warning | a task names the same requirement, property, trigger or asset twice |
//! | `dds-bad-trigger-arg` | error | a trigger's `arg` is not a number of restarts |
//! | `dds-bad-requirement` | error | a `maxinstances` value that is not a number from 1, a `gpu` value that is not a number |
//! | `dds-var-cycle` | error | variables that use each other in a cycle (or a value that grows beyond 1 MiB) |
//! | `dds-read` | error | (`gspc-topology` only) the file cannot be read |
//! | `dds-too-large` | error | more than [`MAX_TASKS`] task instances, or substitution beyond 64 MiB |

pub mod crc;
pub mod expand;
pub mod model;
pub mod parse;
pub mod report;
mod subst;
#[cfg(test)]
mod tests;

pub use expand::{
    Counts, ExpandSink, collection_hash_string, count, expand, expand_into, instance_id,
    required_agents, task_hash_string,
};
pub use model::*;
pub use parse::{ParseOptions, parse};
pub use pnet_diagnostics::{Diagnostic, Severity};
pub use report::{Diff, DiffEntry, diff, write_expansion_json, write_expansion_text};

/// The most task instances a topology may expand to (DDS's largest test has half a million).
pub const MAX_TASKS: u64 = 20_000_000;

/// True for the codes of violations of the schema `topology.xsd` (including XML that is not
/// well-formed); false for DDS's semantic rules (`dds-undeclared`, `dds-duplicate`, ...).
pub fn is_schema_code(code: &str) -> bool {
    matches!(
        code,
        "dds-xml"
            | "dds-root"
            | "dds-unknown-element"
            | "dds-nested-group"
            | "dds-schema-order"
            | "dds-too-many"
            | "dds-missing-element"
            | "dds-unexpected-text"
            | "dds-unknown-attribute"
            | "dds-missing-attribute"
            | "dds-bad-value"
            | "dds-empty-value"
            | "dds-bad-name"
    )
}

/// Parses bytes: like [`parse()`], with a `dds-xml` error if the bytes are not UTF-8.
pub fn parse_bytes(bytes: &[u8], options: &ParseOptions) -> (Option<Topology>, Vec<Diagnostic>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse(text, options),
        Err(e) => {
            let at = e.valid_up_to();
            (
                None,
                vec![Diagnostic::error_at(
                    "dds-xml",
                    at..at + e.error_len().unwrap_or(0),
                    "the file is not UTF-8".to_string(),
                )],
            )
        }
    }
}
