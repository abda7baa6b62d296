//! `gspc`: the persistent runtime's command-line tool.
//!
//! `gspc boot` starts a runtime (the same binary, `gspc daemon`, in its own session) with its
//! workers and returns; the other subcommands are clients of its control socket in the state
//! directory. Exit codes: 0 ok, 1 failure, 2 usage, 3 a waited-for job stopped early (wait
//! --require-outputs), 4 wait --timeout passed, 130 a waited-for job was cancelled.

use std::ffi::OsString;

use clap::{Args, Parser, Subcommand};
use std::process::ExitCode;

use pnet_agent::control::RtError;
pub(crate) use pnet_agent::control::default_state_dir;

mod boot;
mod client;
mod monitor;
#[path = "../../gspc-run/src/topo.rs"]
mod topo;

const AFTER_HELP: &str = "\
Options of every command:
      --state-dir DIR   the runtime's private state directory (default: $GSPC_STATE_DIR, else
                        $XDG_RUNTIME_DIR/gspc, else /tmp/gspc-UID/default)
  -h, --help            help of a command (`gspc boot --help`)

Exit codes: 0 ok, 1 failure, 2 usage error, 3 the job stopped with an out port empty or
tokens left (wait --require-outputs), 4 the job did not end within wait --timeout, 130 the
job was cancelled (wait).

Examples:
  gspc boot --topology 'compute:4'
  gspc wait $(gspc submit net.xpnet -p 'n=5L') --result out.result
  gspc stop";

/// gspc: a persistent runtime: boot it once, submit workflows to it, stop it
#[derive(Parser)]
#[command(
    name = "gspc",
    version,
    after_help = AFTER_HELP,
    disable_help_subcommand = true,
    override_usage = "gspc COMMAND [OPTIONS]"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The rest of a command line, parsed by the command itself (its own `--help`).
#[derive(Args)]
struct Rest {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    args: Vec<OsString>,
}

#[derive(Subcommand)]
enum Command {
    /// Start a runtime with its workers in the background and print how to reach it
    #[command(disable_help_flag = true)]
    Boot(Rest),
    /// The runtime and each worker: host, pid, capabilities, health, running task
    #[command(disable_help_flag = true)]
    Status(Rest),
    /// Start a workflow (NET: .pnet, or .xpnet compiled on the fly); prints its job id
    #[command(disable_help_flag = true)]
    Submit(Rest),
    /// Wait for job JOB and print its output tokens (exit 1 failed, 3 stopped early with
    /// --require-outputs, 4 --timeout passed, 130 cancelled)
    #[command(disable_help_flag = true)]
    Wait(Rest),
    /// Cancel job JOB
    #[command(disable_help_flag = true)]
    Cancel(Rest),
    /// JOB PLACE=VALUE...: put tokens on put_token="true" places of a running job
    #[command(disable_help_flag = true)]
    PutToken(Rest),
    /// JOB: no more tokens will come: the job ends once nothing is left to do
    #[command(disable_help_flag = true)]
    Close(Rest),
    /// The jobs: id, name, state, submitted, running and done tasks, why a job failed
    #[command(disable_help_flag = true)]
    Jobs(Rest),
    /// JOB: the job's tasks: state, worker, when sent, started and ended, retries, error
    #[command(disable_help_flag = true)]
    Tasks(Rest),
    /// JOB -o FILE: the job's tasks as a Chrome trace (Perfetto, chrome://tracing)
    #[command(disable_help_flag = true)]
    Trace(Rest),
    /// JOB [TASK]: what the job's tasks logged (module output, log lines)
    #[command(disable_help_flag = true)]
    Logs(Rest),
    /// DESC: start more workers (a topology description like "compute+CPU:2")
    #[command(disable_help_flag = true)]
    AddWorkers(Rest),
    /// NAME... | --class C [--count N]: stop workers; their tasks run again on others
    #[command(disable_help_flag = true)]
    RemoveWorkers(Rest),
    /// Stop the runtime: cancel (or --wait for) its jobs, stop its workers
    #[command(disable_help_flag = true)]
    Stop(Rest),
    /// SIZE [--from FILE]: allocate global memory (spread over the workers' working memory);
    /// prints the handle and the `global_memory_range` literal to pass to a job
    #[command(disable_help_flag = true)]
    Alloc(Rest),
    /// HANDLE: free an allocation
    #[command(disable_help_flag = true)]
    Free(Rest),
    /// HANDLE [--offset N] FILE|-: write a file's bytes (or stdin's) into an allocation
    #[command(disable_help_flag = true)]
    MemWrite(Rest),
    /// HANDLE [--offset N] --size N [-o FILE]: read bytes of an allocation (to stdout, or to
    /// FILE)
    #[command(disable_help_flag = true)]
    MemRead(Rest),
    /// A live web page of the runtime (workers, jobs, a Gantt chart of tasks, memory): prints
    /// its URL first, serves until stopped
    #[command(disable_help_flag = true)]
    Monitor(Rest),
    /// Check the installation end to end (compiler, VM, JIT, a local runtime with two
    /// workers, a command module, a native module, global memory); one line per check
    #[command(disable_help_flag = true)]
    Selftest(Rest),
    /// The runtime itself, started by `boot`
    #[command(disable_help_flag = true, hide = true)]
    Daemon(Rest),
    /// Print this help
    #[command(hide = true)]
    Help,
}

fn main() -> ExitCode {
    let cli = pnet_stdlib::parse_args!(Cli, "gspc");
    match cli.command {
        Command::Help => {
            use clap::CommandFactory;
            pnet_stdlib::out!("{}", Cli::command().render_help());
            ExitCode::SUCCESS
        }
        Command::Boot(r) => boot::boot(r.args),
        Command::Selftest(r) => pnet_selftest::main_as("gspc selftest", &r.args),
        Command::Daemon(r) => boot::daemon(r.args),
        Command::Status(r) => client::main("status", &r.args),
        Command::Submit(r) => client::main("submit", &r.args),
        Command::Wait(r) => client::main("wait", &r.args),
        Command::Cancel(r) => client::main("cancel", &r.args),
        Command::PutToken(r) => client::main("put-token", &r.args),
        Command::Close(r) => client::main("close", &r.args),
        Command::Jobs(r) => client::main("jobs", &r.args),
        Command::Tasks(r) => client::main("tasks", &r.args),
        Command::Trace(r) => client::main("trace", &r.args),
        Command::Logs(r) => client::main("logs", &r.args),
        Command::AddWorkers(r) => client::main("add-workers", &r.args),
        Command::RemoveWorkers(r) => client::main("remove-workers", &r.args),
        Command::Stop(r) => client::main("stop", &r.args),
        Command::Alloc(r) => client::main("alloc", &r.args),
        Command::Free(r) => client::main("free", &r.args),
        Command::MemWrite(r) => client::main("mem-write", &r.args),
        Command::MemRead(r) => client::main("mem-read", &r.args),
        Command::Monitor(r) => monitor::main(&r.args),
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
