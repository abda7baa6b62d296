//! `gspc-run`: runs a net on workers started from a topology and prints its output tokens;
//! its subcommands are the clients of a running job's control socket. Given a DDS topology
//! file (`<topology>`), it runs it as a DDS session (`pnet_dds_run`, options as `gspc-dds`).
//!
//! Exit codes: 0 success, 1 the net did not compile or the run failed, 2 usage errors,
//! 3 the net stopped early (an out port empty or tokens left; only with --require-outputs),
//! 130 cancelled by the user (Ctrl-C, `gspc-run cancel`), 143 cancelled by SIGTERM.

use std::ffi::OsString;
use std::process::ExitCode;

mod client;
mod modules;
mod monitor;
mod run;
mod topo;

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().skip(1).collect();
    match argv.first().and_then(|a| a.to_str()) {
        Some(cmd @ ("put-token" | "workflow-response" | "status" | "close" | "cancel")) => {
            client::main(cmd, &argv[1..])
        }
        _ if runs_dds_topology(&argv) => pnet_dds_run::main_as("gspc-run", &utf8(&argv)),
        _ => run::main(argv),
    }
}

/// The arguments as text for the parsers that take text (client subcommands, DDS sessions):
/// one that is not UTF-8 is a usage error, not a panic.
fn utf8(argv: &[OsString]) -> Vec<String> {
    argv.iter()
        .map(|a| {
            a.to_str().map(str::to_string).unwrap_or_else(|| {
                pnet_stdlib::cli::usage_exit(
                    "gspc-run",
                    &format!("argument '{}' is not valid UTF-8", a.to_string_lossy()),
                )
            })
        })
        .collect()
}

/// True if an argument names a DDS topology file (XML whose root is `<topology>`): those run
/// as DDS sessions (`pnet-dds-run`), nets (`<defun>`, bundles) through the agent.
fn runs_dds_topology(argv: &[OsString]) -> bool {
    argv.iter().filter_map(|a| a.to_str()).any(|a| {
        !a.starts_with('-')
            && a.ends_with(".xml")
            && pnet_stdlib::input::read_text(
                std::path::Path::new(a),
                pnet_stdlib::input::MAX_SOURCE_BYTES,
            )
            .is_ok_and(|t| pnet_dds_run::is_dds_topology(&t))
    })
}

/// Prints a usage error and returns exit code 2.
pub(crate) fn usage_error(msg: &str) -> ExitCode {
    pnet_stdlib::errln!("gspc-run: {msg}\nTry 'gspc-run --help' for more information.");
    ExitCode::from(2)
}
