//! `pnet-verify`: the verifier behind `pnetv`.
//!
//! Inputs: Place/Transition nets in PNML ([`pnml`]) and coloured nets as compiled bundles
//! ([`coloured`]). Analyses: explicit state-space exploration with packed markings
//! ([`explore`], [`store`]), SCC-based termination and liveness ([`graph`]), and
//! semi-positive place/transition invariants ([`invariants`]). [`report`] turns the results
//! into verdicts, a terminal report and JSON.
//!
//! The core does no I/O: callers read files and write reports.
//!
//! # Trace files (`pnetv --trace-out FILE`, read by `pnet2dot --trace FILE`)
//!
//! A counterexample is written as one JSON object:
//!
//! ```json
//! {
//!   "format": "pnet-trace",
//!   "version": 1,
//!   "net": "path/of/the/net.pnml",
//!   "kind": "deadlock",
//!   "transitions": ["take_left_1", "take_right_2"],
//!   "steps": [
//!     { "index": 0, "id": "t3", "name": "take_left_1", "location": "model.pnml:120:7" }
//!   ]
//! }
//! ```
//!
//! `transitions` is the firing sequence from the initial marking, by transition name, in
//! firing order; it is all a reader needs. `steps` gives, per firing, the transition's
//! index in the net (`index`: the PNML document order, or the bundle's `TransitionId` in the
//! root net), its PNML id (`id`; for bundles the name again) and the source location.
//! `kind` is one of `deadlock`, `unsafe`, `unbounded` (then `loop` lists the transitions
//! that can be repeated forever after `transitions`, each repetition adding tokens),
//! `nontermination` (then `loop` is a cycle reached by `transitions`), `token-limit`.

pub mod backward;
pub mod coloured;
pub mod explore;
pub mod graph;
pub mod invariants;
pub mod pnml;
pub mod pt;
pub mod ptnet;
pub mod report;
pub mod store;
#[cfg(test)]
mod test_rng;

pub use explore::{PtOptions, Reduction};
pub use pnml::{PnmlError, parse_pnml};
pub use ptnet::PtNet;

/// Why an exploration stopped at its memory limit, for reports.
pub fn memory_stop(limit: u64, states: u64) -> String {
    format!(
        "stopped at --max-memory {} MiB: the {states} states kept took more than that",
        limit >> 20
    )
}

/// The default of `--max-memory`: half of this machine's memory (`MemTotal` of
/// `/proc/meminfo`), or 4 GiB where that cannot be read.
pub fn default_max_memory() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
    });
    total.map_or(4 << 30, |t| t / 2)
}
