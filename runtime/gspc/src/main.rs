//! `gspc`: the persistent runtime's command-line tool.
//!
//! `gspc boot` starts a runtime (the same binary, `gspc daemon`, in its own session) with its
//! workers and returns; the other subcommands are clients of its control socket in the state
//! directory. Exit codes: 0 ok, 1 failure, 2 usage, 3 a waited-for job stopped early (wait
//! --require-outputs), 4 wait --timeout passed, 130 a waited-for job was cancelled.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use pnet_agent::control::RtError;

mod boot;
mod client;
#[path = "../../gspc-run/src/topo.rs"]
mod topo;

const USAGE: &str = "\
gspc: a persistent runtime: boot it once, submit workflows to it, stop it

Usage: gspc COMMAND [OPTIONS]

Commands:
  boot            start a runtime with its workers in the background and print how to
                  reach it
  status          the runtime and each worker: host, pid, capabilities, health, running task
  submit NET      start a workflow (.pnet, or .xpnet compiled on the fly); prints its job id
  wait JOB        wait for a job and print its output tokens (exit 1 failed, 3 stopped
                  early with --require-outputs, 4 --timeout passed, 130 cancelled)
  cancel JOB      cancel a job
  put-token JOB PLACE=VALUE...
                  put tokens on put_token=\"true\" places of a running job
  close JOB       no more tokens will come: the job ends once nothing is left to do
  jobs            the jobs: id, net, state, submitted, running and done tasks
  add-workers DESC
                  start more workers (a topology description like \"compute+CPU:2\")
  remove-workers NAME... | --class C [--count N]
                  stop workers; their tasks run again on others
  stop            stop the runtime: cancel (or --wait for) its jobs, stop its workers
  alloc SIZE [--from FILE]
                  allocate global memory (spread over the workers' working memory); prints
                  the handle and the `global_memory_range` literal to pass to a job
  free HANDLE     free an allocation
  mem-write HANDLE [--offset N] FILE|-
                  write a file's bytes (or stdin's) into an allocation
  mem-read HANDLE [--offset N] --size N [-o FILE]
                  read bytes of an allocation (to stdout, or to FILE)
  selftest        check the installation end to end (compiler, VM, JIT, a local runtime
                  with two workers, a command module, a native module, global memory);
                  one line per check

Options of every command:
      --state-dir DIR   the runtime's private state directory (default: $GSPC_STATE_DIR, else
                        $XDG_RUNTIME_DIR/gspc, else /tmp/gspc-UID/default)
  -h, --help            help of a command (`gspc boot --help`)
  -V, --version         print the version

Exit codes: 0 ok, 1 failure, 2 usage error, 3 the job stopped with an out port empty or
tokens left (wait --require-outputs), 4 the job did not end within wait --timeout, 130 the
job was cancelled (wait).
";

fn main() -> ExitCode {
    let mut argv: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(cmd) = argv.first().cloned() else {
        return usage_error("no command given");
    };
    let Some(cmd) = cmd.to_str() else {
        return usage_error(&format!("unknown command '{}'", cmd.to_string_lossy()));
    };
    let rest_os = argv.split_off(1);
    match cmd {
        "-h" | "--help" | "help" => {
            pnet_stdlib::out!("{USAGE}");
            ExitCode::SUCCESS
        }
        "-V" | "--version" => {
            pnet_stdlib::outln!("gspc {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        "boot" => boot::boot(rest_os),
        "selftest" => pnet_selftest::main_as("gspc selftest", &rest_os),
        // Hidden: the runtime itself, started by `boot`.
        "daemon" => boot::daemon(rest_os),
        "status" | "submit" | "wait" | "cancel" | "put-token" | "close" | "jobs"
        | "add-workers" | "remove-workers" | "stop" | "alloc" | "free" | "mem-write"
        | "mem-read" => client::main(cmd, &rest_os),
        other => usage_error(&format!("unknown command '{other}'")),
    }
}

/// Prints a usage error and returns exit code 2.
pub(crate) fn usage_error(msg: &str) -> ExitCode {
    pnet_stdlib::errln!("gspc: {msg}\nTry 'gspc --help' for more information.");
    ExitCode::from(2)
}

/// Prints an error with its code and returns exit code 1.
pub(crate) fn fail(e: &RtError) -> ExitCode {
    pnet_stdlib::errln!("gspc: error[{}]: {}", e.code, e.message);
    ExitCode::from(1)
}

/// The default state directory: `$GSPC_STATE_DIR`, else `$XDG_RUNTIME_DIR/gspc`, else
/// `/tmp/gspc-UID/default`.
pub(crate) fn default_state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("GSPC_STATE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("gspc");
    }
    PathBuf::from(format!(
        "/tmp/gspc-{}/default",
        pnet_agent::control::current_uid()
    ))
}
