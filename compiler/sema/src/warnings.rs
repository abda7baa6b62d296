//! Warning names, defaults and the filtering of diagnostics by the configuration.

use pnet_syntax::{Diagnostic, Severity};

use crate::WarningConfig;

/// Every warning (its name as in `--W<name>`, which is also its diagnostic code) and whether
/// it is on by default.
pub const WARNINGS: &[(&str, bool)] = &[
    ("shadowed-struct", true),
    ("shadowed-function", true),
    ("shadowed-template", true),
    ("shadowed-specialize", true),
    ("unused-field", true),
    ("port-not-connected", true),
    ("unexpected-element", true),
    ("unknown-type", true),
    ("property-overwritten", true),
    ("property-unknown", true),
    ("type-map-duplicate", true),
    ("type-get-duplicate", true),
    ("independent-place", true),
    ("independent-transition", true),
    ("conflicting-port-types", true),
    ("duplicate-external-function", true),
    ("virtual-place-not-tunneled", true),
    ("duplicate-template-parameter", true),
    ("struct-redefined", true),
    ("overwrite-file", true),
    ("default-construction", true),
    ("backup-file", true),
    ("synthesized-anonymous-function", true),
    ("inline_many_output_ports", true),
    ("overwrite-function-name-as", false),
    ("overwrite-function-name-trans", false),
    ("overwrite-template-name-as", false),
];

/// The canonical name of a warning given as written by a user (dashes or underscores).
pub fn canonical(name: &str) -> Option<&'static str> {
    let dashed = name.replace('_', "-");
    WARNINGS
        .iter()
        .map(|(n, _)| *n)
        .find(|n| *n == name || n.replace('_', "-") == dashed)
}

fn default_of(code: &str) -> bool {
    WARNINGS
        .iter()
        .find(|(n, _)| *n == code)
        .is_none_or(|(_, d)| *d)
}

impl WarningConfig {
    /// Whether warning `code` is reported (without scoped overrides).
    pub fn enabled(&self, code: &str) -> bool {
        let explicit = self
            .settings
            .iter()
            .rev()
            .find(|(n, _)| canonical(n).map_or(n.as_str() == code, |c| c == code));
        match explicit {
            Some((_, on)) => *on,
            None => self.all || default_of(code),
        }
    }
}

/// Applies the configuration: drops disabled warnings (a scoped override from a
/// `pnetc.warning.<name>` property wins over the configuration), turns warnings into errors
/// under `--Werror`, and sorts by file and position.
pub fn apply(config: &WarningConfig, diags: Vec<(Diagnostic, Option<bool>)>) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = diags
        .into_iter()
        .filter_map(|(mut d, scoped)| {
            if d.severity == Severity::Warning {
                if !scoped.unwrap_or_else(|| config.enabled(d.code)) {
                    return None;
                }
                if config.error {
                    d.severity = Severity::Error;
                }
            }
            Some(d)
        })
        .collect();
    out.sort_by_key(|d| d.primary_span().map(|s| (s.file, s.start)));
    out.dedup();
    out
}
