//! Worker topologies: GPI-Space's worker description string, nodefiles, placement plans and
//! the local machine's hardware (through hwloc).
//!
//! # The worker description string
//!
//! A topology is a list of worker descriptions separated by white space. Each description
//! says which workers to start on every host:
//!
//! ```text
//! Caps ('#' socket)? (':' perNode ('x' maxNodes)? (',' shmBytes)? ('/' basePort)?)?
//! Caps = id ('+' id)*          id = [A-Za-z_][A-Za-z0-9_]*
//! ```
//!
//! * `Caps` are the capabilities the workers offer; the FIRST one is the worker class name
//!   (GPI-Space names worker types by it). Transitions that `require` a capability run only
//!   on workers that have it.
//! * `#socket` pins the workers to that socket (hwloc package, logical index, as `lstopo`
//!   prints `Package L#n`).
//! * `perNode` workers are started on each host (default 1), on at most `maxNodes` hosts
//!   (default 0 = all hosts), each with `shmBytes` bytes of working memory (default 0; a value
//!   above 0 adds the implicit capability `GPI`), listening from `basePort` upwards (one port
//!   per instance on a host; default: none, the system chooses).
//!
//! ```
//! use pnet_topology::parse_topology;
//!
//! let (topology, diagnostics) = parse_topology(
//!     "compute+CPU:24,1073741824 compute+GPU:2,1073741824 reduce:4,2147483648 init:1x1",
//! );
//! assert!(diagnostics.is_empty());
//! assert_eq!(topology.classes.len(), 4);
//! assert_eq!(topology.classes[0].name, "compute");
//! assert_eq!(topology.classes[0].capabilities, ["compute", "CPU", "GPI"]);
//! assert_eq!(topology.classes[0].per_node, 24);
//! assert_eq!(topology.classes[3].max_nodes, 1);
//! // `Display` prints the canonical form, which parses back to the same topology.
//! assert_eq!(topology.to_string(),
//!     "compute+CPU:24,1073741824 compute+GPU:2,1073741824 reduce:4,2147483648 init:1x1");
//! ```
//!
//! Parsing never fails: [`parse_topology`] returns what it understood plus [`Diagnostic`]s.
//! The codes are stable:
//!
//! | code | severity | meaning |
//! | --- | --- | --- |
//! | `topology-empty` | error | the text holds no description |
//! | `topology-syntax` | error | a missing or unexpected part (`compute:`, `compute+`, `a:1#2`) |
//! | `topology-bad-name` | error | a capability name that is not `[A-Za-z_][A-Za-z0-9_]*` |
//! | `topology-bad-number` | error | not a decimal number, or out of range |
//! | `topology-bad-port` | error | base port 0, or `basePort + perNode - 1` above 65535 |
//! | `topology-zero-workers` | warning | `perNode` is 0: the description starts no workers |
//! | `topology-duplicate-capability` | warning | a capability named twice in one description |
//! | `topology-duplicate-class` | warning | the same capabilities and socket as an earlier description |
//! | `topology-no-such-socket` | error | [`check_sockets`]: a `#socket` the local machine lacks |
//! | `topology-too-many-workers` | error | [`check_worker_count`]: more than [`MAX_PLANNED_WORKERS`] workers |
//! | `nodefile-bad-host` | error | a nodefile line that is not a host name or IP address |
//! | `nodefile-duplicate-host` | warning | a host listed twice (only the first counts) |
//! | `nodefile-empty` | error | a nodefile without hosts |
//!
//! Two descriptions may share a class name (`compute+CPU` and `compute+GPU` above): that is
//! GPI-Space's usual style, so it is not diagnosed; only descriptions with identical
//! capability sets and socket get `topology-duplicate-class`.
//!
//! # Nodefiles and plans
//!
//! [`parse_nodefile`] reads one host a line; [`plan`] expands a topology over the hosts into
//! the list of workers to start ([`Plan`], printed by `--dry-run`).

pub mod hwloc;
mod nodefile;
mod parse;
mod plan;

pub use nodefile::{local_hostname, parse_nodefile};
pub use parse::{
    GPI_CAPABILITY, Topology, WorkerClass, check_local_sockets, check_sockets, parse_topology,
};
pub use plan::{
    MAX_PLANNED_WORKERS, Plan, PlannedWorker, check_worker_count, default_topology,
    default_topology_with_memory, plan, plan_with_limit, worker_count,
};

// The diagnostics are the shared ones (`pnet-diagnostics`), of a single text (file 0):
// `Diagnostic::range` is the byte range in the parsed text.
pub use pnet_diagnostics::{Diagnostic, Severity, has_errors};

#[cfg(test)]
mod tests {
    use super::*;
    use pnet_diagnostics::RenderFile;
    use pnet_diagnostics::render::{MAX_PER_FILE, render_short};

    /// A diagnostic as the unit tests show it: `error code@start..end: message`.
    pub(crate) fn brief(d: &Diagnostic) -> String {
        let r = d.range();
        format!(
            "{} {}@{}..{}: {}",
            d.severity, d.code, r.start, r.end, d.message
        )
    }

    /// A generated 23 KB topology with thousands of errors and warnings: the rendering is
    /// capped, and parsing is not quadratic (it compared every description with every
    /// earlier one).
    #[test]
    fn a_long_topology_with_many_errors_renders_bounded() {
        let text: String = (0..2500)
            .map(|i| format!("w{}:x{i} ", i % 3))
            .chain((0..1000).map(|_| "dup:1 ".to_string()))
            .collect();
        assert!(text.len() > 23_000);
        let start = std::time::Instant::now();
        let (topology, diagnostics) = parse_topology(&text);
        assert_eq!(topology.classes.len(), 3500);
        let errors = diagnostics.iter().filter(|d| d.is_error()).count();
        assert_eq!(errors, 2500);
        assert_eq!(diagnostics.len() - errors, 2500 - 3 + 999);
        let file = RenderFile {
            name: "--topology",
            text: &text,
        };
        let out = render_short(&file, &diagnostics);
        // Only a sanity bound: it finishes.
        assert!(start.elapsed().as_secs() < 60);
        assert_eq!(out.matches("error[").count(), MAX_PER_FILE);
        assert_eq!(out.matches("warning[").count(), MAX_PER_FILE);
        assert!(out.contains("--topology: ... and 2450 more errors (only the first 50"));
        assert!(out.contains("... and 3446 more warnings"), "{out}");
        assert!(out.len() < 30_000, "{} bytes", out.len());
        // The positions are those `render_short` gives.
        let first = diagnostics[0].render_short("--topology", &text);
        assert!(out.starts_with(&format!("{first}\n")), "{out}");
    }

    #[test]
    fn diagnostics_have_origin_position_code_and_notes() {
        let d = Diagnostic::error_at("topology-syntax", 3..4, "expected a number")
            .with_note("write `a:4`");
        assert_eq!(
            d.render_short("--topology", "ab c"),
            "--topology:1:4: error[topology-syntax]: expected a number\n  = note: write `a:4`"
        );
        assert_eq!(brief(&d), "error topology-syntax@3..4: expected a number");
        assert!(has_errors(&[d]));
        assert!(!has_errors(&[Diagnostic::warning_at("w", 0..0, "w")]));
    }
}
