//! The DDS front end (pnet-dds), in one place.

use pnet_dds::{Expanded, ParseOptions, Topology};
use pnet_topology::Diagnostic;

/// Parses a topology text with `--var` values (which replace the file's `<var>`s).
pub fn parse(text: &str, vars: &[(String, String)]) -> (Option<Topology>, Vec<Diagnostic>) {
    let options = ParseOptions {
        vars: vars.to_vec(),
        ..ParseOptions::default()
    };
    pnet_dds::parse(text, &options)
}

/// Expands a topology into its instances.
pub fn expand(topology: &Topology) -> Expanded {
    pnet_dds::expand(topology)
}
