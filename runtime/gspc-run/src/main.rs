//! `gspc-run`: runs a net on workers started from a topology and prints its output tokens;
//! its subcommands are the clients of a running job's control socket.
//!
//! Exit codes: 0 success, 1 the net did not compile or the run failed, 2 usage errors,
//! 130 cancelled by the user.

use std::process::ExitCode;

mod client;
mod run;
mod topo;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match argv.first().map(String::as_str) {
        Some(cmd @ ("put-token" | "workflow-response" | "status" | "close" | "cancel")) => {
            client::main(cmd, &argv[1..])
        }
        _ => run::main(&argv),
    }
}

/// Prints a usage error and returns exit code 2.
pub(crate) fn usage_error(msg: &str) -> ExitCode {
    eprintln!("gspc-run: {msg}\nTry 'gspc-run --help' for more information.");
    ExitCode::from(2)
}
