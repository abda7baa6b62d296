//! The client commands: status, submit, wait, cancel, put-token, close, jobs, add-workers,
//! remove-workers, stop, and the global memory's alloc, free, mem-write, mem-read.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{CommandFactory, FromArgMatches, Parser};
use pnet_agent::control::{
    JobOutcome, JobSummary, RtClient, RtError, RtRequest, RtResponse, RtWorker, RuntimeStatus,
    StopReport, WorkerRef,
};
use pnet_stdlib::Value;
use pnetc::args::{CompilerArgs, parse_number, parse_put_arg};
use pnetc::{ColorMode, load_net, parse_put};

use crate::{default_state_dir, fail, topo, usage_error};

fn help(cmd: &str) -> &'static str {
    match cmd {
        "status" => {
            "\
gspc status: the runtime (pid, address, uptime, jobs) and a table of its workers

Usage: gspc status [--json] [--workers] [--state-dir DIR]

Worker columns: name, host, pid, capabilities, health (`last heartbeat 0.1s ago`; `starting`,
`lost: ...`, `exited: ...`), the task it runs (job/transition), the tasks it holds, and the
tasks it has done. Then the global memory: segments (workers with
working memory), capacity, bytes allocated, allocations, bytes moved into module buffers
(got) and out of them (put), and the same per host. --json prints the same with stable keys
(\"memory\": {\"segments\", \"capacity\", \"allocated\", \"allocations\", \"bytes_got\",
\"bytes_put\", \"hosts\": [{\"host\", \"segments\", \"capacity\", \"allocated\"}]}).

A runtime of more than 100 workers shows the first 100 by name and how many there are in all
(and how many are up; --json adds \"workers_total\" and \"workers_up\"); --workers lists
them all (asked for 1,000 at a time).
"
        }
        "submit" => {
            "\
gspc submit: start a workflow on the runtime and print its job id (at once)

Usage: gspc submit NET [-p PORT=VALUE]... [--name NAME] [--module-path DIR]... [--json]
                   [COMPILER OPTIONS] [--state-dir DIR]

NET is a bundle (.pnet) or an .xpnet file (compiled here). -p puts a token on an input port
(VALUE in the expression language's literal syntax: 3L, \"s\", Struct [a := 1], ...);
repeatable. --name names the job in `gspc jobs` (default: NET's file name). --json prints
{\"job\": N}.

The workers look for this job's modules (lib<module>.so, executables <module>.<function> or
<module>) in each --module-path DIR (repeatable, in order), then in NET's folder, then along
the runtime's module path (gspc boot --module-path, gspc-worker's folder, $PNET_MODULE_PATH).
The folders are made absolute here; they must exist where the workers run.

An in port that gets no -p value and that nothing in the net puts a token on is named in a
warning on stderr.
"
        }
        "wait" => {
            "\
gspc wait: wait for a job to end and print its output tokens like gspc-run

Usage: gspc wait JOB [--json [--values=json|literal]] [--result FILE] [--timeout SECS]
                 [--require-outputs] [--state-dir DIR]

--json prints {\"outputs\": {PORT: {\"type\": T, \"tokens\": [...]}}, \"firings\", \"tasks\",
\"ending\"}: the tokens in the JSON encoding of values (the modules' and `pnetget --json`'s,
see runtime/worker/MODULES.md); --values=literal gives them as strings in the literal
syntax (3L, Struct [...]) instead.
--result FILE also writes the output tokens with their types to FILE (read it with pnetget).
--timeout SECS returns after SECS seconds (a decimal number) if the job has not ended by
then, printing its state on stderr (`gspc: job 3 has not ended after 5 s: running, tasks: 2
running, 4 queued, 10 done`, and `; waiting: ...` when the job waits for a worker; --json:
{\"job\", \"state\": \"timeout\", \"job_state\", \"waited_ms\", \"tasks_running\",
\"tasks_sent\", \"tasks_queued\", \"tasks_done\", \"waiting\"} on stdout; running: started on
a worker, sent: in a worker's queue, queued: in the runtime); the job keeps running.

A job whose net stopped with tokens left on inner places or an out port empty gets a warning
on stderr after its outputs (`gspc: warning: job 3: the net stopped with tokens left on: p
(2); out port `r` is empty; transition `t` lacked a token on `x``); --json includes it as
\"ending\" (see gspc-run --help). With --require-outputs such a job exits with 3.

Exit codes: 0 the job succeeded, 1 it failed (the error names the transition and its
file:line:col), 3 it stopped early (with --require-outputs), 4 the --timeout passed first,
130 it was cancelled.
"
        }
        "cancel" => "gspc cancel: cancel a job\n\nUsage: gspc cancel JOB [--state-dir DIR]\n",
        "put-token" => {
            "\
gspc put-token: put tokens on put_token=\"true\" places of a running job, in order

Usage: gspc put-token JOB PLACE=VALUE... [--close] [--state-dir DIR]

--close then tells the job that no more tokens will come (see `gspc close`).
"
        }
        "close" => {
            "\
gspc close: no more tokens will be put into the job; it ends once nothing is left to do

Usage: gspc close JOB [--state-dir DIR]

(A net with put_token places and without drts.wait_for_output keeps running for its
clients until it is closed.)
"
        }
        "jobs" => {
            "\
gspc jobs: the runtime's jobs: id, name, state, submitted, elapsed, running/queued/done tasks

Usage: gspc jobs [--json] [--state-dir DIR]

NAME is the name given to `gspc submit --name`, else the net's file name. RUNNING counts the
tasks started on a worker, QUEUED those waiting (in the runtime or in a worker's queue).
Then a line per failed job with the reason (`job 3 failed: ...`) and per job that waits for a
worker. --json: [{\"id\", \"name\", \"net\", \"state\", \"error\", \"submitted_unix\",
\"elapsed_ms\", \"tasks_running\", \"tasks_sent\", \"tasks_queued\", \"tasks_done\",
\"waiting\"}].
"
        }
        "tasks" => {
            "\
gspc tasks: a job's tasks (of a running job, or of one of the last ended ones)

Usage: gspc tasks JOB [--json] [--state-dir DIR]

One row per task sent to a worker: its number, transition, state (`sent`: in the worker's
queue, `running`, `done`, `failed`, `cancelled`, `lost`: its worker was lost), worker, when
it was sent, started and ended (seconds since the job started; the start and end as the
worker measured them), retries, and the bytes of its log (`gspc logs`). Then the error of
each failed task. The latest 20,000 ended tasks of a job are kept. --json: {\"job\",
\"tasks\": [{\"task\", \"transition\", \"module\", \"worker\", \"worker_id\", \"state\",
\"sent_us\", \"started_us\", \"ended_us\", \"retries\", \"error\", \"log_bytes\"}], \"queued\",
\"dropped\"}.
"
        }
        "trace" => {
            "\
gspc trace: a job's tasks as a Chrome trace-event file

Usage: gspc trace JOB [-o FILE] [--state-dir DIR]

Writes {\"traceEvents\": [...]} to FILE (default: standard output): one lane per worker, one
slice per ended task from its start on the worker to its end (as the worker measured them),
the time it waited from being sent to its start as an async `queued` slice, a failed task's
error in its slice's args. Open it in Perfetto (ui.perfetto.dev) or chrome://tracing.
"
        }
        "logs" => {
            "\
gspc logs: what a job's tasks logged

Usage: gspc logs JOB [TASK] [--json] [--state-dir DIR]

A command module's standard error and the lines of its standard output before its answer,
a native module's log lines (`Context::log` of pnet-module-sdk, `log` of the C ABI). Each
task keeps the last 64 KiB of its log, a job the last 16 MiB of its tasks' logs. Without
TASK, every task's log, each under a header `== task N (TRANSITION on WORKER)`. --json:
[{\"task\", \"transition\", \"worker\", \"text\", \"dropped\"}].
"
        }
        "add-workers" => {
            "\
gspc add-workers: start more workers on the running runtime and wait until they joined

Usage: gspc add-workers DESC [--nodefile FILE] [--timeout SECS] [--state-dir DIR]

DESC is a topology description like \"compute+CPU:2\"; names that are taken get the next
free number. Without --nodefile, the workers start on the runtime's hosts.
"
        }
        "remove-workers" => {
            "\
gspc remove-workers: stop workers; the tasks they held run again on others

Usage: gspc remove-workers NAME... [--state-dir DIR]
       gspc remove-workers --class CLASS [--count N] [--state-dir DIR]

With --class, idle workers of the class go first; without --count, all of them. A leaf
agent (gspc-leaf) removed stops its workers: they are named after it, LEAF/WORKER.
"
        }
        "stop" => {
            "\
gspc stop: stop the runtime: cancel its running jobs (or --wait for them), stop its
workers, remove its control socket and pid file, and print what was stopped

Usage: gspc stop [--wait] [--state-dir DIR]
"
        }
        "alloc" => {
            "\
gspc alloc: allocate global memory and print its handle and range

Usage: gspc alloc SIZE [--from FILE] [--json] [--state-dir DIR]
       gspc alloc --from FILE [--json] [--state-dir DIR]

SIZE is a number of bytes, or with a unit: 4096, 64K, 16M, 1GiB. The allocation is spread
over the working memory of the runtime's workers; its bytes are not cleared (memory that was
never used is zeros, memory freed earlier keeps its old bytes). With --from FILE it is
filled with the file's bytes (SIZE defaults to the file's size and must not be smaller; the
rest is not cleared either). Prints two
lines: the handle, and the `global_memory_range` literal of the whole allocation to put on a
job's input port (`gspc submit net.xpnet -p 'range=...'`). --json prints {\"handle\": H,
\"size\": N, \"range\": \"...\"}. Free it with `gspc free HANDLE`.
"
        }
        "free" => {
            "gspc free: free an allocation of global memory\n\nUsage: gspc free HANDLE [--state-dir DIR]\n"
        }
        "mem-write" => {
            "\
gspc mem-write: write bytes into an allocation of global memory

Usage: gspc mem-write HANDLE [--offset N] FILE|- [--state-dir DIR]

Writes the bytes of FILE (- : standard input) at byte N (default 0) of the allocation; they
must fit in it.
"
        }
        "mem-read" => {
            "\
gspc mem-read: read bytes of an allocation of global memory

Usage: gspc mem-read HANDLE [--offset N] --size N [-o FILE] [--state-dir DIR]

Reads --size bytes at byte --offset (default 0) of the allocation and writes them to
standard output, or to FILE. Sizes take units like alloc's (4K, 16M).
"
        }
        _ => "",
    }
}

struct Args {
    state_dir: PathBuf,
    json: bool,
    all_workers: bool,
    wait: bool,
    close: bool,
    positional: Vec<String>,
    puts: Vec<(String, Value)>,
    compile: pnet_sema::Options,
    nodefile: Option<PathBuf>,
    class: Option<String>,
    count: Option<u32>,
    timeout: Option<u64>,
    wait_timeout: Option<Duration>,
    require_outputs: bool,
    module_path: Vec<PathBuf>,
    result: Option<PathBuf>,
    from: Option<PathBuf>,
    offset: Option<u64>,
    size: Option<u64>,
    output: Option<PathBuf>,
    name: Option<String>,
    literal: bool,
}

/// Every option of the client commands; [`allowed`] says which command takes which (the
/// others are hidden from its help and refused).
#[derive(Parser)]
struct ClientCli {
    /// The job id, place bindings, sizes, handles or files the command takes
    #[arg(value_name = "ARGS")]
    positional: Vec<String>,
    /// The state directory (see `gspc --help`)
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Print JSON
    #[arg(long)]
    json: bool,
    /// List every worker (a runtime of more than 100 shows the first 100)
    #[arg(long = "workers")]
    all_workers: bool,
    /// Fill the allocation with the bytes of FILE (its size unless SIZE is given)
    #[arg(long, value_name = "FILE")]
    from: Option<PathBuf>,
    /// The byte of the allocation to start at (default 0)
    #[arg(long, value_name = "N")]
    offset: Option<String>,
    /// How many bytes to read
    #[arg(long, value_name = "N")]
    size: Option<String>,
    /// Write the bytes to FILE (default: standard output)
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Wait until the runtime has stopped
    #[arg(long)]
    wait: bool,
    /// Also write the output tokens, with their types, to FILE (see pnetget)
    #[arg(long, value_name = "FILE")]
    result: Option<PathBuf>,
    /// Then tell the job that no more tokens will come
    #[arg(long)]
    close: bool,
    /// Put a token on input port PORT; repeatable
    #[arg(short = 'p', long = "put", value_name = "PORT=VALUE", value_parser = parse_put_arg)]
    puts: Vec<(String, Value)>,
    /// Hosts to start the workers on, one a line
    #[arg(long, value_name = "FILE")]
    nodefile: Option<PathBuf>,
    /// How long to wait, in seconds
    #[arg(long, value_name = "SECS")]
    timeout: Option<String>,
    /// Exit with 3 when the job stopped with an out port empty or tokens left
    #[arg(long)]
    require_outputs: bool,
    /// Where the workers look for this job's modules (repeatable)
    #[arg(long = "module-path", value_name = "DIR")]
    module_path: Vec<PathBuf>,
    /// Remove workers of this class
    #[arg(long, value_name = "CLASS")]
    class: Option<String>,
    /// The job's name in `gspc jobs` (default: the net's file name)
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// How --json gives the tokens: json (the JSON encoding of values, default) or literal
    /// (strings in the literal syntax)
    #[arg(long, value_name = "FORM", value_parser = ["json", "literal"])]
    values: Option<String>,
    /// How many workers of --class to remove
    #[arg(long, value_name = "N")]
    count: Option<u32>,
    #[command(flatten)]
    compile: CompilerArgs,
}

/// The options of `cmd` (by clap id; the positional arguments and --state-dir always).
fn allowed(cmd: &str, id: &str) -> bool {
    const COMPILER: [&str; 6] = [
        "search_paths",
        "no_inline",
        "synthesize_virtual_places",
        "warnings",
        "wall",
        "werror",
    ];
    match id {
        "positional" | "state_dir" | "help" => true,
        "json" => matches!(
            cmd,
            "status" | "submit" | "wait" | "jobs" | "alloc" | "tasks" | "logs"
        ),
        "from" => cmd == "alloc",
        "all_workers" => cmd == "status",
        "offset" => matches!(cmd, "mem-write" | "mem-read"),
        "size" => cmd == "mem-read",
        "output" => matches!(cmd, "mem-read" | "trace"),
        "name" => cmd == "submit",
        "values" => cmd == "wait",
        "wait" => cmd == "stop",
        "result" | "require_outputs" => cmd == "wait",
        "close" => cmd == "put-token",
        "puts" | "module_path" => cmd == "submit",
        "nodefile" => cmd == "add-workers",
        "timeout" => matches!(cmd, "wait" | "add-workers"),
        "class" | "count" => cmd == "remove-workers",
        _ => cmd == "submit" && COMPILER.contains(&id),
    }
}

/// The clap command of `gspc CMD`: its options, and its description, usage and notes from
/// [`help`].
fn command(cmd: &str) -> clap::Command {
    // clap names commands with 'static strings; this runs once per process.
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let text = help(cmd);
    let (about, rest) = text.split_once("\n\n").unwrap_or((text, ""));
    let (usage, notes) = rest.split_once("\n\n").unwrap_or((rest, ""));
    let usage = usage.strip_prefix("Usage: ").unwrap_or(usage);
    let mut c = ClientCli::command()
        .name(leak(format!("gspc {cmd}")))
        .bin_name(leak(format!("gspc {cmd}")))
        .about(leak(about.to_string()))
        .override_usage(leak(usage.trim_end().to_string()))
        .after_help(leak(notes.trim_end().to_string()));
    let ids: Vec<String> = c.get_arguments().map(|a| a.get_id().to_string()).collect();
    for id in ids {
        if !allowed(cmd, &id) {
            c = c.mut_arg(id, |a| a.hide(true));
        }
    }
    c
}

fn parse(cmd: &str, argv: &[OsString]) -> Result<Args, ExitCode> {
    let prog = format!("gspc {cmd}");
    let argv = std::iter::once(OsString::from(&prog))
        .chain(pnetc::args::normalize_warning_flags(argv.iter().cloned()));
    let matches = command(cmd)
        .try_get_matches_from(argv)
        .and_then(|m| ClientCli::from_arg_matches(&m).map(|c| (m, c)));
    let (matches, cli) = match matches {
        Ok(mc) => mc,
        Err(e) => pnet_stdlib::cli::exit_after_parse(
            &prog,
            &e.render().to_string(),
            e.use_stderr(),
            e.exit_code(),
        ),
    };
    // Refuse the options of other commands (argument ids only: a flattened group has an id
    // of its own).
    for arg in command(cmd).get_arguments() {
        let id = arg.get_id().as_str();
        if !allowed(cmd, id)
            && matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
        {
            let flag = arg
                .get_long()
                .map(|l| format!("--{l}"))
                .unwrap_or_else(|| id.to_string());
            return Err(usage_error(&format!("{cmd}: unknown option '{flag}'")));
        }
    }
    let size = |flag: &str, v: &Option<String>| -> Result<Option<u64>, ExitCode> {
        v.as_deref()
            .map(|v| {
                pnet_agent::memory::parse_size(v)
                    .map_err(|m| usage_error(&format!("{cmd}: {flag}: {m}")))
            })
            .transpose()
    };
    let mut a = Args {
        state_dir: cli.state_dir.unwrap_or_else(default_state_dir),
        json: cli.json,
        all_workers: cli.all_workers,
        wait: cli.wait,
        close: cli.close,
        result: cli.result,
        positional: cli.positional,
        puts: cli.puts,
        compile: cli.compile.options(),
        nodefile: cli.nodefile,
        class: cli.class,
        count: cli.count,
        timeout: None,
        wait_timeout: None,
        require_outputs: cli.require_outputs,
        module_path: cli.module_path,
        from: cli.from,
        offset: size("--offset", &cli.offset)?,
        size: size("--size", &cli.size)?,
        output: cli.output,
        name: cli.name,
        literal: cli.values.as_deref() == Some("literal"),
    };
    if a.literal && !a.json {
        return Err(usage_error(&format!(
            "{cmd}: --values=literal goes with --json"
        )));
    }
    if let Some(v) = cli.timeout {
        if cmd == "wait" {
            let secs: f64 = v
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s >= 0.0 && *s < 1e9)
                .ok_or_else(|| {
                    usage_error(&format!(
                        "wait: --timeout: '{v}' is not a number of seconds"
                    ))
                })?;
            // A zero read timeout would mean none at all.
            a.wait_timeout = Some(Duration::from_secs_f64(secs).max(Duration::from_millis(1)));
        } else {
            a.timeout = Some(parse_number("--timeout", &v).map_err(|m| usage_error(&m))?);
        }
    }
    if let Some(p) = a
        .positional
        .iter()
        .find(|p| p.starts_with('-') && p.len() > 1)
    {
        return Err(usage_error(&format!("{cmd}: unknown option '{p}'")));
    }
    Ok(a)
}

fn job_id(cmd: &str, a: &Args) -> Result<u64, ExitCode> {
    match a.positional.first() {
        None => Err(usage_error(&format!("{cmd}: no job id given"))),
        Some(s) => s
            .parse()
            .map_err(|_| usage_error(&format!("{cmd}: '{s}' is not a job id (a number)"))),
    }
}

/// The optional TASK after JOB (`gspc logs JOB TASK`).
fn task_id(a: &Args) -> Result<Option<u64>, ExitCode> {
    a.positional
        .get(1)
        .map(|s| {
            s.parse()
                .map_err(|_| usage_error(&format!("logs: '{s}' is not a task number")))
        })
        .transpose()
}

fn positional_count(cmd: &str, a: &Args, n: usize) -> Result<(), ExitCode> {
    if a.positional.len() > n {
        return Err(usage_error(&format!(
            "{cmd}: unexpected argument '{}'",
            a.positional[n]
        )));
    }
    Ok(())
}

pub fn main(cmd: &str, argv: &[OsString]) -> ExitCode {
    let a = match parse(cmd, argv) {
        Ok(a) => a,
        Err(c) => return c,
    };
    match run(cmd, &a) {
        Ok(c) => c,
        Err(Failure::Usage(c)) => c,
        Err(Failure::Rt(e)) => fail(&e),
    }
}

enum Failure {
    Usage(ExitCode),
    Rt(RtError),
}

impl From<RtError> for Failure {
    fn from(e: RtError) -> Self {
        Failure::Rt(e)
    }
}

impl From<ExitCode> for Failure {
    fn from(c: ExitCode) -> Self {
        Failure::Usage(c)
    }
}

fn unexpected(r: RtResponse) -> Failure {
    Failure::Rt(RtError::new(
        "gspc-protocol",
        format!("unexpected answer from the runtime: {r:?}"),
    ))
}

const SHORT: Option<Duration> = Some(Duration::from_secs(30));

fn run(cmd: &str, a: &Args) -> Result<ExitCode, Failure> {
    // Usage checks first, so that they do not depend on a running runtime.
    match cmd {
        "status" | "jobs" | "stop" => positional_count(cmd, a, 0)?,
        "wait" | "cancel" | "close" | "tasks" | "trace" => {
            job_id(cmd, a)?;
            positional_count(cmd, a, 1)?
        }
        "logs" => {
            job_id(cmd, a)?;
            task_id(a)?;
            positional_count(cmd, a, 2)?
        }
        "put-token" => {
            job_id(cmd, a)?;
            if a.positional.len() < 2 {
                return Err(usage_error("put-token: no PLACE=VALUE given").into());
            }
        }
        "submit" => {
            if a.positional.is_empty() {
                return Err(usage_error("submit: no net given").into());
            }
            positional_count(cmd, a, 1)?
        }
        "add-workers" => {
            if a.positional.is_empty() {
                return Err(usage_error("add-workers: no topology description given").into());
            }
            positional_count(cmd, a, 1)?
        }
        "remove-workers" => {
            if a.positional.is_empty() && a.class.is_none() {
                return Err(usage_error("remove-workers: name workers or give --class").into());
            }
            if a.count.is_some() && a.class.is_none() {
                return Err(usage_error("remove-workers: --count needs --class").into());
            }
        }
        "alloc" => {
            if a.positional.is_empty() && a.from.is_none() {
                return Err(usage_error("alloc: no SIZE given (or --from FILE)").into());
            }
            positional_count(cmd, a, 1)?;
            if let Some(s) = a.positional.first() {
                pnet_agent::memory::parse_size(s)
                    .map_err(|m| usage_error(&format!("alloc: {m}")))?;
            }
        }
        "free" => {
            if a.positional.is_empty() {
                return Err(usage_error("free: no HANDLE given").into());
            }
            positional_count(cmd, a, 1)?
        }
        "mem-write" => {
            if a.positional.len() < 2 {
                return Err(usage_error("mem-write: give HANDLE and FILE (or - for stdin)").into());
            }
            positional_count(cmd, a, 2)?
        }
        "mem-read" => {
            if a.positional.is_empty() {
                return Err(usage_error("mem-read: no HANDLE given").into());
            }
            if a.size.is_none() {
                return Err(usage_error("mem-read: --size is required").into());
            }
            positional_count(cmd, a, 1)?
        }
        _ => {}
    }
    let client = RtClient::open(&a.state_dir)?;
    let stdout = |s: &str| {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(s.as_bytes());
        let _ = out.flush();
    };
    match cmd {
        "status" => {
            let s = status_of(&client, a.all_workers)?;
            if a.json {
                stdout(&format!("{}\n", status_json(&s)));
            } else {
                stdout(&status_table(&s));
            }
            Ok(ExitCode::SUCCESS)
        }
        "alloc" => {
            let data = match &a.from {
                Some(path) => Some(std::fs::read(path).map_err(|e| {
                    RtError::new(
                        "gspc-file",
                        format!("alloc: cannot read {}: {e}", path.display()),
                    )
                })?),
                None => None,
            };
            let size = match (a.positional.first(), &data) {
                (Some(s), d) => {
                    let n = pnet_agent::memory::parse_size(s)
                        .map_err(|m| usage_error(&format!("alloc: {m}")))?;
                    if let Some(d) = d
                        && (d.len() as u64) > n
                    {
                        return Err(usage_error(&format!(
                            "alloc: the file has {} bytes, more than SIZE {n}",
                            d.len()
                        ))
                        .into());
                    }
                    n
                }
                (None, Some(d)) => d.len() as u64,
                (None, None) => 0,
            };
            let (handle, range) = client.mem_alloc(size)?;
            if let Some(d) = &data
                && let Err(e) = client.mem_write(&handle, 0, d)
            {
                // Do not leave a half-filled allocation behind.
                let _ = client.mem_free(&handle);
                return Err(e.into());
            }
            if a.json {
                stdout(&format!(
                    "{}\n",
                    serde_json::json!({"handle": handle, "size": size, "range": range.to_string()})
                ));
            } else {
                stdout(&format!("{handle}\n{range}\n"));
            }
            Ok(ExitCode::SUCCESS)
        }
        "free" => {
            client.mem_free(&a.positional[0])?;
            Ok(ExitCode::SUCCESS)
        }
        "mem-write" => {
            let file = &a.positional[1];
            let data = if file == "-" {
                let mut d = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut d).map_err(|e| {
                    RtError::new("gspc-file", format!("mem-write: cannot read stdin: {e}"))
                })?;
                d
            } else {
                std::fs::read(file).map_err(|e| {
                    RtError::new("gspc-file", format!("mem-write: cannot read {file}: {e}"))
                })?
            };
            client.mem_write(&a.positional[0], a.offset.unwrap_or(0), &data)?;
            Ok(ExitCode::SUCCESS)
        }
        "mem-read" => {
            let bytes =
                client.mem_read(&a.positional[0], a.offset.unwrap_or(0), a.size.unwrap_or(0))?;
            match &a.output {
                Some(path) => std::fs::write(path, &bytes).map_err(|e| {
                    RtError::new(
                        "gspc-file",
                        format!("mem-read: cannot write {}: {e}", path.display()),
                    )
                })?,
                None => {
                    use std::io::Write;
                    let mut out = std::io::stdout().lock();
                    let written = out.write_all(&bytes).and_then(|()| out.flush());
                    if let Err(e) = written
                        && e.kind() != std::io::ErrorKind::BrokenPipe
                    {
                        return Err(RtError::new(
                            "gspc-file",
                            format!("mem-read: cannot write to stdout: {e}"),
                        )
                        .into());
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        "tasks" => {
            let job = job_id(cmd, a)?;
            match client.call(RtRequest::Tasks { job }, SHORT)? {
                RtResponse::Tasks(t) => {
                    if a.json {
                        let v = serde_json::to_value(&t).map_err(|e| {
                            RtError::new("gspc-protocol", format!("tasks as JSON: {e}"))
                        })?;
                        stdout(&format!("{v}\n"));
                    } else {
                        stdout(&tasks_table(&t));
                    }
                    Ok(ExitCode::SUCCESS)
                }
                r => Err(unexpected(r)),
            }
        }
        "trace" => {
            let job = job_id(cmd, a)?;
            match client.call(RtRequest::Tasks { job }, SHORT)? {
                RtResponse::Tasks(t) => {
                    let text = format!("{}\n", pnet_agent::trace::chrome_trace(&t));
                    match &a.output {
                        Some(path) => std::fs::write(path, text).map_err(|e| {
                            RtError::new(
                                "gspc-file",
                                format!("trace: cannot write {}: {e}", path.display()),
                            )
                        })?,
                        None => stdout(&text),
                    }
                    Ok(ExitCode::SUCCESS)
                }
                r => Err(unexpected(r)),
            }
        }
        "logs" => {
            let job = job_id(cmd, a)?;
            let task = task_id(a)?;
            match client.call(RtRequest::Logs { job, task }, SHORT)? {
                RtResponse::Logs(logs) => {
                    if a.json {
                        let v = serde_json::to_value(&logs).map_err(|e| {
                            RtError::new("gspc-protocol", format!("logs as JSON: {e}"))
                        })?;
                        stdout(&format!("{v}\n"));
                        return Ok(ExitCode::SUCCESS);
                    }
                    if logs.is_empty() {
                        match task {
                            Some(t) => pnet_stdlib::errln!(
                                "gspc: task {t} of job {job} logged nothing (or its log is no \
                                 longer kept)"
                            ),
                            None => {
                                pnet_stdlib::errln!("gspc: no task of job {job} logged anything")
                            }
                        }
                    }
                    stdout(&logs_text(&logs, task.is_none()));
                    Ok(ExitCode::SUCCESS)
                }
                r => Err(unexpected(r)),
            }
        }
        "jobs" => match client.call(RtRequest::Jobs, SHORT)? {
            RtResponse::Jobs(jobs) => {
                if a.json {
                    stdout(&format!("{}\n", jobs_json(&jobs)));
                } else {
                    stdout(&jobs_table(&jobs));
                }
                Ok(ExitCode::SUCCESS)
            }
            r => Err(unexpected(r)),
        },
        "submit" => {
            let net = &a.positional[0];
            let path = Path::new(net);
            let bundle = pnet_stdlib::input::read_file(path, pnet_stdlib::input::MAX_SOURCE_BYTES)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))
                .and_then(|bytes| load_net(path, &bytes, &a.compile, ColorMode::Auto))
                .map_err(|m| RtError::new("gspc-net", m))?
                .0;
            let bytes = pnet_bundle::format::encode(&bundle)
                .map_err(|e| RtError::new("gspc-net", format!("{net}: {e}")))?;
            let mut inputs: Vec<(String, Vec<Value>)> = Vec::new();
            for (port, v) in &a.puts {
                match inputs.iter_mut().find(|(p, _)| p == port) {
                    Some((_, vs)) => vs.push(v.clone()),
                    None => inputs.push((port.clone(), vec![v.clone()])),
                }
            }
            let given: Vec<String> = inputs.iter().map(|(p, _)| p.clone()).collect();
            for port in pnet_engine::unfed_in_ports(&bundle, &given) {
                pnet_stdlib::errln!(
                    "gspc: warning: in port `{port}` got no value (-p {port}=...) and nothing \
                     in the net puts a token on it"
                );
            }
            let module_path = job_module_path(&a.module_path, path)?;
            let file = path
                .file_name()
                .map_or_else(|| net.clone(), |n| n.to_string_lossy().into_owned());
            let request = match &a.name {
                Some(name) => RtRequest::SubmitNamed {
                    name: name.clone(),
                    net: file,
                    bundle: bytes,
                    inputs,
                    module_path,
                },
                None => RtRequest::SubmitAt {
                    net: file,
                    bundle: bytes,
                    inputs,
                    module_path,
                },
            };
            match client.call(request, SHORT)? {
                RtResponse::Submitted { job } => {
                    if a.json {
                        stdout(&format!("{}\n", serde_json::json!({ "job": job })));
                    } else {
                        stdout(&format!("{job}\n"));
                    }
                    Ok(ExitCode::SUCCESS)
                }
                r => Err(unexpected(r)),
            }
        }
        "wait" => {
            let job = job_id(cmd, a)?;
            let t0 = Instant::now();
            let answer = match client.call(RtRequest::Wait { job }, a.wait_timeout) {
                Err(e)
                    if e.code == "gspc-connection"
                        && a.wait_timeout.is_some_and(|t| t0.elapsed() >= t) =>
                {
                    return wait_timed_out(
                        &client,
                        job,
                        a.wait_timeout.unwrap_or_default(),
                        a.json,
                    );
                }
                r => r?,
            };
            match answer {
                RtResponse::Outcome { outcome, .. } => {
                    if let (Some(path), JobOutcome::Done { outputs, types, .. }) =
                        (&a.result, &outcome)
                    {
                        let file = pnet_bundle::result::RunOutputs::from_parts(
                            &format!("job {job}"),
                            types,
                            outputs,
                        );
                        let written = file
                            .encode()
                            .map_err(|e| e.to_string())
                            .and_then(|b| std::fs::write(path, b).map_err(|e| e.to_string()));
                        if let Err(e) = written {
                            pnet_stdlib::errln!(
                                "gspc: cannot write the result file {}: {e}",
                                path.display()
                            );
                            return Ok(ExitCode::from(1));
                        }
                    }
                    Ok(print_outcome(job, &outcome, a, a.require_outputs))
                }
                r => Err(unexpected(r)),
            }
        }
        "cancel" => {
            let job = job_id(cmd, a)?;
            match client.call(RtRequest::Cancel { job }, SHORT)? {
                RtResponse::Ok => {
                    pnet_stdlib::errln!("gspc: job {job} cancelled");
                    Ok(ExitCode::SUCCESS)
                }
                r => Err(unexpected(r)),
            }
        }
        "put-token" => {
            let job = job_id(cmd, a)?;
            let mut puts = Vec::new();
            for p in &a.positional[1..] {
                puts.push(parse_put(p).map_err(|m| usage_error(&format!("put-token: {m}")))?);
            }
            for (place, value) in puts {
                match client.call(RtRequest::PutToken { job, place, value }, SHORT)? {
                    RtResponse::Job(pnet_agent::control::Response::Ok) | RtResponse::Ok => {}
                    r => return Err(unexpected(r)),
                }
            }
            if a.close {
                close(&client, job)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        "close" => {
            close(&client, job_id(cmd, a)?)?;
            Ok(ExitCode::SUCCESS)
        }
        "add-workers" => add_workers(&client, a),
        "remove-workers" => {
            match client.call(
                RtRequest::RemoveWorkers {
                    names: a.positional.clone(),
                    class: a.class.clone(),
                    count: a.count,
                },
                SHORT,
            )? {
                RtResponse::Workers(ws) => {
                    pnet_stdlib::outln!("{}", removed_account(&ws));
                    Ok(ExitCode::SUCCESS)
                }
                r => Err(unexpected(r)),
            }
        }
        "stop" => {
            let timeout = if a.wait {
                None
            } else {
                Some(Duration::from_secs(120))
            };
            match client.call(RtRequest::Stop { wait: a.wait }, timeout)? {
                RtResponse::Stopped(r) => {
                    // Wait for the runtime's process to be gone.
                    let t0 = Instant::now();
                    while t0.elapsed() < Duration::from_secs(10) && alive(r.pid) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    pnet_stdlib::outln!("{}", stop_account(&r, alive(r.pid)));
                    Ok(ExitCode::SUCCESS)
                }
                r => Err(unexpected(r)),
            }
        }
        _ => Err(usage_error(&format!("unknown command '{cmd}'")).into()),
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists() && {
        // A zombie counts as gone.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    }
}

fn close(client: &RtClient, job: u64) -> Result<(), Failure> {
    match client.call(RtRequest::Close { job }, SHORT)? {
        RtResponse::Job(pnet_agent::control::Response::Ok) | RtResponse::Ok => Ok(()),
        r => Err(unexpected(r)),
    }
}

fn add_workers(client: &RtClient, a: &Args) -> Result<ExitCode, Failure> {
    let desc = &a.positional[0];
    // Check the description (and the nodefile) here, rendering their diagnostics.
    let plan = topo::plan(Some(desc), a.nodefile.as_deref(), "local", 0)?;
    let hosts = if a.nodefile.is_some() {
        plan.hosts.clone()
    } else {
        Vec::new()
    };
    let started = match client.call(
        RtRequest::AddWorkers {
            topology: desc.clone(),
            hosts,
        },
        SHORT,
    )? {
        RtResponse::Workers(ws) => ws,
        r => return Err(unexpected(r)),
    };
    let timeout = Duration::from_secs(a.timeout.unwrap_or(60));
    let t0 = Instant::now();
    loop {
        let s = match client.call(RtRequest::Status, SHORT)? {
            RtResponse::Status(s) => s,
            r => return Err(unexpected(r)),
        };
        let state = |n: &str| {
            s.workers
                .iter()
                .find(|w| w.name == n)
                .map_or("gone".to_string(), |w| w.state.clone())
        };
        let failed: Vec<String> = started
            .iter()
            .filter(|w| {
                let st = state(&w.name);
                st.starts_with("exited") || st.starts_with("lost") || st == "gone"
            })
            .map(|w| format!("`{}` ({})", w.name, state(&w.name)))
            .collect();
        if !failed.is_empty() {
            return Err(RtError::new(
                "gspc-workers-failed",
                format!("workers did not join: {}", failed.join(", ")),
            )
            .into());
        }
        if started.iter().all(|w| state(&w.name) == "up") {
            break;
        }
        if t0.elapsed() >= timeout {
            return Err(RtError::new(
                "gspc-workers-timeout",
                format!(
                    "the new workers did not all join within {} s (see `gspc status`)",
                    timeout.as_secs()
                ),
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    pnet_stdlib::outln!(
        "gspc: added {} workers{}",
        started.len(),
        worker_list(&started)
    );
    Ok(ExitCode::SUCCESS)
}

fn worker_list(ws: &[WorkerRef]) -> String {
    if ws.is_empty() {
        return String::new();
    }
    format!(
        ": {}",
        ws.iter()
            .map(|w| match w.pid {
                Some(p) => format!("{} (pid {p})", w.name),
                None => w.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `gspc: removed 1 worker: leafA (pid 5); the leaf agent stops its 2 workers: leafA/w0
/// (pid 6), leafA/w1 (pid 7)`: the runtime answers the workers under a removed leaf agent
/// after it, named `LEAF/WORKER`.
fn removed_account(ws: &[WorkerRef]) -> String {
    // `w` is a worker of the leaf agent `leaf`: named `LEAF/WORKER`.
    let is_under = |w: &WorkerRef, leaf: &WorkerRef| {
        w.name
            .strip_prefix(leaf.name.as_str())
            .is_some_and(|r| r.starts_with('/'))
    };
    let (mut top, mut under): (Vec<WorkerRef>, Vec<WorkerRef>) = (Vec::new(), Vec::new());
    for w in ws {
        if top.iter().any(|t| is_under(w, t)) {
            under.push(w.clone());
        } else {
            top.push(w.clone());
        }
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut s = format!(
        "gspc: removed {} worker{}{}",
        top.len(),
        plural(top.len()),
        worker_list(&top)
    );
    if !under.is_empty() {
        let leaves = top
            .iter()
            .filter(|t| under.iter().any(|u| is_under(u, t)))
            .count();
        s.push_str(&format!(
            "; {} {} worker{}{}",
            if leaves == 1 {
                "the leaf agent stops its"
            } else {
                "the leaf agents stop their"
            },
            under.len(),
            plural(under.len()),
            worker_list(&under)
        ));
    }
    s
}

/// The exit code of `gspc wait` when `--timeout` passed before the job ended.
const WAIT_TIMED_OUT: u8 = 4;

/// `--module-path` folders, then the net's folder, made absolute (the runtime and its
/// workers run elsewhere).
fn job_module_path(dirs: &[PathBuf], net: &Path) -> Result<Vec<String>, Failure> {
    let mut out: Vec<String> = Vec::new();
    for d in dirs {
        let abs = std::fs::canonicalize(d)
            .map_err(|e| usage_error(&format!("submit: --module-path {}: {e}", d.display())))?;
        if !abs.is_dir() {
            return Err(usage_error(&format!(
                "submit: --module-path {}: not a folder",
                d.display()
            ))
            .into());
        }
        out.push(abs.display().to_string());
    }
    let folder = match net.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Ok(abs) = std::fs::canonicalize(folder) {
        out.push(abs.display().to_string());
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|d| seen.insert(d.clone()));
    Ok(out)
}

/// `gspc wait --timeout` ran out: say where the job is, exit with [`WAIT_TIMED_OUT`].
fn wait_timed_out(
    client: &RtClient,
    job: u64,
    waited: Duration,
    json: bool,
) -> Result<ExitCode, Failure> {
    let jobs = match client.call(RtRequest::Jobs, SHORT)? {
        RtResponse::Jobs(jobs) => jobs,
        r => return Err(unexpected(r)),
    };
    let Some(j) = jobs.iter().find(|j| j.id == job) else {
        return Err(RtError::new("gspc-no-job", format!("job {job} is gone")).into());
    };
    if json {
        pnet_stdlib::outln!(
            "{}",
            serde_json::json!({
                "job": job,
                "state": "timeout",
                "job_state": j.state,
                "waited_ms": waited.as_millis() as u64,
                "tasks_running": j.tasks_running,
                "tasks_sent": j.tasks_sent,
                "tasks_queued": j.tasks_queued,
                "tasks_done": j.tasks_done,
                "waiting": j.waiting,
            })
        );
    }
    pnet_stdlib::errln!("gspc: {}", timeout_line(j, waited));
    Ok(ExitCode::from(WAIT_TIMED_OUT))
}

/// `job 3 has not ended after 5 s: running, tasks: 2 running, 4 queued, 10 done`, then
/// `; waiting: ...` when the job says what it waits for.
fn timeout_line(j: &JobSummary, waited: Duration) -> String {
    let mut line = format!(
        "job {} has not ended after {} s: {}, tasks: {} running, {} queued, {} done",
        j.id,
        waited.as_secs_f64(),
        j.state,
        j.tasks_running,
        j.tasks_queued + j.tasks_sent,
        j.tasks_done
    );
    if let Some(w) = &j.waiting {
        line.push_str(&format!("; waiting: {w}"));
    }
    line
}

fn print_outcome(job: u64, outcome: &JobOutcome, a: &Args, require_outputs: bool) -> ExitCode {
    let json = a.json;
    match outcome {
        JobOutcome::Done {
            outputs,
            firings,
            tasks,
            ending,
            types,
        } => {
            use std::io::Write;
            let form = match (json, a.literal) {
                (false, _) => pnet_agent::output::Form::Text,
                (true, true) => pnet_agent::output::Form::JsonLiteral,
                (true, false) => pnet_agent::output::Form::Json(types),
            };
            let text = pnet_agent::output::format_outputs(outputs, *firings, *tasks, ending, form);
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            if !ending.is_complete() {
                pnet_stdlib::errln!("gspc: warning: job {job}: {ending}");
            }
            if require_outputs && !ending.is_complete() {
                ExitCode::from(3)
            } else {
                ExitCode::SUCCESS
            }
        }
        JobOutcome::Failed { code, message } => {
            if json {
                pnet_stdlib::outln!(
                    "{}",
                    serde_json::json!({"job": job, "state": "failed", "code": code, "error": message})
                );
            }
            pnet_stdlib::errln!("gspc: error[{code}]: job {job} failed: {message}");
            ExitCode::from(1)
        }
        JobOutcome::Cancelled => {
            if json {
                pnet_stdlib::outln!("{}", serde_json::json!({"job": job, "state": "cancelled"}));
            }
            pnet_stdlib::errln!("gspc: job {job} was cancelled");
            ExitCode::from(130)
        }
    }
}

fn secs(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

/// Workers shown by `gspc status` (without --workers).
const STATUS_WORKERS: u64 = 100;
/// Workers asked for at a time by `gspc status --workers`.
const STATUS_PAGE: u64 = 1000;

/// The runtime's status with its first [`STATUS_WORKERS`] workers, or all of them (asked for
/// a page at a time: one answer never lists thousands).
fn status_of(client: &RtClient, all: bool) -> Result<RuntimeStatus, Failure> {
    let page = |offset: u64, limit: u64| -> Result<RuntimeStatus, Failure> {
        match client.call(RtRequest::StatusPage { offset, limit }, SHORT)? {
            RtResponse::Status(s) => Ok(s),
            r => Err(unexpected(r)),
        }
    };
    let mut s = page(0, if all { STATUS_PAGE } else { STATUS_WORKERS })?;
    while all && (s.workers.len() as u64) < s.workers_total {
        let next = page(s.workers.len() as u64, STATUS_PAGE)?;
        if next.workers.is_empty() {
            break;
        }
        s.workers.extend(next.workers);
        s.workers_total = next.workers_total;
        s.workers_up = next.workers_up;
    }
    Ok(s)
}

/// The human status: one line for the runtime, a table of workers.
fn status_table(s: &RuntimeStatus) -> String {
    let mut out = format!(
        "runtime pid {}, workers connect to {}, up {}, jobs: {} running, {} in total\n\
         state directory {}\n",
        s.pid,
        s.address,
        secs(s.uptime_ms),
        s.jobs_running,
        s.jobs_total,
        s.state_dir
    );
    if let Some(why) = s.journal.strip_prefix("stopped: ") {
        out.push_str(&format!(
            "warning: the journal stopped ({why}): jobs will not survive a crash of the runtime \
             from that point; free space in the state directory, then, once no job runs, \
             `gspc stop` and `gspc boot` again\n"
        ));
    }
    let row = |w: &RtWorker, indent: &str| -> [String; 8] {
        [
            format!("{indent}{}", w.name),
            w.host.clone(),
            w.pid.map_or("-".into(), |p| p.to_string()),
            if w.capabilities.is_empty() {
                "-".into()
            } else {
                w.capabilities.join(",")
            },
            match w.heartbeat_age_ms {
                Some(ms) if w.state == "up" => format!("last heartbeat {} ago", secs(ms)),
                _ => w.state.clone(),
            },
            match (&w.running, w.capacity) {
                (Some(r), _) => format!("{}/{}", r.job, r.transition),
                // A leaf agent: how many tasks its workers run.
                (None, Some(_)) => match w.workers.iter().filter(|u| u.running.is_some()).count() {
                    0 => "-".into(),
                    1 => "1 task".into(),
                    n => format!("{n} tasks"),
                },
                (None, None) => "-".into(),
            },
            match w.capacity {
                Some(c) => format!("{} of {c}", w.in_flight),
                None => w.in_flight.to_string(),
            },
            w.done.to_string(),
        ]
    };
    // A leaf agent's row, then its workers indented under it.
    let mut rows: Vec<[String; 8]> = Vec::with_capacity(s.workers.len());
    for w in &s.workers {
        rows.push(row(w, ""));
        for u in &w.workers {
            rows.push(row(u, "  "));
        }
    }
    let leaves: Vec<&RtWorker> = s.workers.iter().filter(|w| w.capacity.is_some()).collect();
    let under: usize = leaves.iter().map(|l| l.workers.len()).sum();
    let tree = if leaves.is_empty() {
        String::new()
    } else {
        format!(
            " ({} leaf agent{} with {under} worker{} under them; HOLDS of a leaf: its tasks \
             of its capacity)",
            leaves.len(),
            if leaves.len() == 1 { "" } else { "s" },
            if under == 1 { "" } else { "s" },
        )
    };
    if s.workers_total > s.workers.len() as u64 {
        out.push_str(&format!(
            "{} workers ({} up); the first {} by name below (`gspc status --workers` lists \
             all){tree}\n",
            s.workers_total,
            s.workers_up,
            s.workers.len()
        ));
    } else {
        out.push_str(&format!("{} workers{tree}\n", s.workers.len()));
    }
    let head = [
        "NAME",
        "HOST",
        "PID",
        "CAPABILITIES",
        "HEALTH",
        "RUNNING",
        "HOLDS",
        "DONE",
    ];
    out.push_str(&table(&head, &rows));
    out.push_str(&format!("{}\n", s.memory));
    out
}

fn table<const N: usize>(head: &[&str; N], rows: &[[String; N]]) -> String {
    let mut widths = head.map(str::len);
    for r in rows {
        for (k, c) in r.iter().enumerate() {
            widths[k] = widths[k].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (k, c) in cells.iter().enumerate() {
            if k + 1 == N {
                l.push_str(c);
            } else {
                l.push_str(&format!("{c:<w$}  ", w = widths[k]));
            }
        }
        l.trim_end().to_string() + "\n"
    };
    let mut out = line(head.to_vec());
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

fn status_json(s: &RuntimeStatus) -> serde_json::Value {
    let mut j = serde_json::json!({
        "pid": s.pid,
        "address": s.address,
        "state_dir": s.state_dir,
        "uptime_ms": s.uptime_ms,
        "jobs_running": s.jobs_running,
        "jobs_total": s.jobs_total,
        "journal": s.journal,
        "workers": s.workers.iter().map(worker_json).collect::<Vec<_>>(),
        "memory": {
            "segments": s.memory.segments,
            "capacity": s.memory.capacity,
            "allocated": s.memory.allocated,
            "allocations": s.memory.allocations,
            "bytes_got": s.memory.bytes_got,
            "bytes_put": s.memory.bytes_put,
            "hosts": s.memory.hosts.iter().map(|h| serde_json::json!({
                "host": h.host,
                "segments": h.segments,
                "capacity": h.capacity,
                "allocated": h.allocated,
            })).collect::<Vec<_>>(),
        },
    });
    // Only when the list is partial: a small runtime's JSON stays as it was.
    if s.workers_total > s.workers.len() as u64 {
        j["workers_total"] = s.workers_total.into();
        j["workers_up"] = s.workers_up.into();
    }
    j
}

/// A worker of `gspc status --json`; a leaf agent also has `capacity` and its `workers`.
fn worker_json(w: &RtWorker) -> serde_json::Value {
    let mut j = serde_json::json!({
        "name": w.name,
        "host": w.host,
        "pid": w.pid,
        "capabilities": w.capabilities,
        "state": w.state,
        "heartbeat_age_ms": w.heartbeat_age_ms,
        "running": w.running.as_ref().map(|r| serde_json::json!({
            "job": r.job, "transition": r.transition
        })),
        "in_flight": w.in_flight,
        "done": w.done,
    });
    // Only for leaves: other workers' JSON stays as it was.
    if let Some(c) = w.capacity {
        j["capacity"] = c.into();
        j["workers"] = w.workers.iter().map(worker_json).collect::<Vec<_>>().into();
    }
    j
}

fn when(unix: u64) -> String {
    let day = unix % 86_400;
    format!(
        "{:02}:{:02}:{:02}Z",
        day / 3600,
        (day % 3600) / 60,
        day % 60
    )
}

fn jobs_table(jobs: &[JobSummary]) -> String {
    let rows: Vec<[String; 8]> = jobs
        .iter()
        .map(|j| {
            [
                j.id.to_string(),
                j.name.clone().unwrap_or_else(|| j.net.clone()),
                j.state.clone(),
                when(j.submitted_unix),
                secs(j.elapsed_ms),
                j.tasks_running.to_string(),
                (j.tasks_queued + j.tasks_sent).to_string(),
                j.tasks_done.to_string(),
            ]
        })
        .collect();
    table(
        &[
            "JOB",
            "NAME",
            "STATE",
            "SUBMITTED",
            "ELAPSED",
            "RUNNING",
            "QUEUED",
            "DONE",
        ],
        &rows,
    ) + &jobs
        .iter()
        .filter_map(|j| {
            j.error
                .as_ref()
                .map(|e| format!("job {} failed: {e}\n", j.id))
        })
        .collect::<String>()
        + &jobs
            .iter()
            .filter_map(|j| {
                j.waiting
                    .as_ref()
                    .map(|w| format!("job {} waits: {w}\n", j.id))
            })
            .collect::<String>()
}

/// Microseconds since the job started as seconds (`-` for none).
fn at(us: Option<u64>) -> String {
    us.map_or("-".into(), |us| format!("{:.3}", us as f64 / 1e6))
}

fn tasks_table(t: &pnet_agent::control::JobTasks) -> String {
    let rows: Vec<[String; 10]> = t
        .tasks
        .iter()
        .map(|k| {
            [
                k.task.to_string(),
                k.transition.clone(),
                k.state.clone(),
                k.worker.clone(),
                at(Some(k.sent_us)),
                at(k.started_us),
                at(k.ended_us),
                k.retries.to_string(),
                k.log_bytes.to_string(),
                k.module.clone(),
            ]
        })
        .collect();
    let mut out = table(
        &[
            "TASK",
            "TRANSITION",
            "STATE",
            "WORKER",
            "SENT",
            "STARTED",
            "ENDED",
            "RETRIES",
            "LOG",
            "MODULE",
        ],
        &rows,
    );
    for k in t.tasks.iter().filter(|k| k.error.is_some()) {
        out.push_str(&format!(
            "task {} {}: {}\n",
            k.task,
            k.state,
            k.error.as_deref().unwrap_or_default()
        ));
    }
    if t.queued > 0 {
        out.push_str(&format!(
            "{} tasks queued in the runtime, not sent yet\n",
            t.queued
        ));
    }
    if t.dropped > 0 {
        out.push_str(&format!(
            "{} older ended tasks are no longer kept\n",
            t.dropped
        ));
    }
    out
}

fn logs_text(logs: &[pnet_agent::control::TaskLog], headers: bool) -> String {
    let mut out = String::new();
    for l in logs {
        if headers {
            out.push_str(&format!(
                "== task {} ({} on {})\n",
                l.task, l.transition, l.worker
            ));
        }
        if l.dropped > 0 {
            out.push_str(&format!("[... {} bytes cut]\n", l.dropped));
        }
        out.push_str(&l.text);
        if !l.text.ends_with('\n') && !l.text.is_empty() {
            out.push('\n');
        }
    }
    out
}

fn jobs_json(jobs: &[JobSummary]) -> serde_json::Value {
    serde_json::Value::Array(
        jobs.iter()
            .map(|j| {
                serde_json::json!({
                    "id": j.id,
                    "name": j.name.clone().unwrap_or_else(|| j.net.clone()),
                    "net": j.net,
                    "state": j.state,
                    "error": j.error,
                    "submitted_unix": j.submitted_unix,
                    "elapsed_ms": j.elapsed_ms,
                    "tasks_running": j.tasks_running,
                    "tasks_sent": j.tasks_sent,
                    "tasks_queued": j.tasks_queued,
                    "tasks_done": j.tasks_done,
                    "waiting": j.waiting,
                })
            })
            .collect(),
    )
}

/// "stopped runtime pid N: 2 jobs cancelled (3, 5), 4 workers stopped (names, pids), 0 left".
fn stop_account(r: &StopReport, daemon_alive: bool) -> String {
    // "1 job", "2 jobs"
    let n =
        |count: usize, noun: &str| format!("{count} {noun}{}", if count == 1 { "" } else { "s" });
    let ids = |v: &[u64]| {
        if v.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
            )
        }
    };
    let mut s = format!(
        "gspc: stopped runtime pid {}: {} cancelled{}",
        r.pid,
        n(r.cancelled.len(), "job"),
        ids(&r.cancelled)
    );
    if !r.finished.is_empty() {
        s.push_str(&format!(
            ", {} waited for{}",
            n(r.finished.len(), "job"),
            ids(&r.finished)
        ));
    }
    let list = |ws: &[WorkerRef]| {
        if ws.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                ws.iter()
                    .map(|w| format!(
                        "{} pid {}",
                        w.name,
                        w.pid.map_or("?".into(), |p| p.to_string())
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    };
    s.push_str(&format!(
        ", {} stopped{}",
        n(r.workers.len(), "worker"),
        list(&r.workers)
    ));
    if !r.leaves.is_empty() {
        s.push_str(&format!(
            ", {} stopped{}",
            n(r.leaves.len(), "leaf agent"),
            list(&r.leaves)
        ));
    }
    let left = r.left.len() + usize::from(daemon_alive);
    s.push_str(&format!(", {left} left"));
    if left > 0 {
        let mut names: Vec<String> = r.left.iter().map(|w| w.name.clone()).collect();
        if daemon_alive {
            names.push(format!("the runtime itself, pid {}", r.pid));
        }
        s.push_str(&format!(" ({})", names.join(", ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use pnet_agent::control::{HostMemory, MemoryStatus, RtWorker, RunningTask};

    #[test]
    fn stop_account_names_everything() {
        let r = StopReport {
            pid: 42,
            cancelled: vec![3, 5],
            finished: vec![],
            workers: vec![WorkerRef {
                name: "w-h-0".into(),
                host: "h".into(),
                pid: Some(7),
            }],
            left: vec![],
            leaves: vec![],
        };
        assert_eq!(
            stop_account(&r, false),
            "gspc: stopped runtime pid 42: 2 jobs cancelled (3, 5), 1 worker stopped \
             (w-h-0 pid 7), 0 left"
        );
        assert!(stop_account(&r, true).ends_with("1 left (the runtime itself, pid 42)"));
        // Leaf agents: their workers count as workers, the leaves are named apart.
        let leaf = |name: &str, pid| WorkerRef {
            name: name.into(),
            host: "h".into(),
            pid: Some(pid),
        };
        let r = StopReport {
            cancelled: vec![],
            workers: vec![leaf("L/w0", 11), leaf("L/w1", 12)],
            leaves: vec![leaf("L", 10)],
            ..r
        };
        assert_eq!(
            stop_account(&r, false),
            "gspc: stopped runtime pid 42: 0 jobs cancelled, 2 workers stopped (L/w0 pid 11, \
             L/w1 pid 12), 1 leaf agent stopped (L pid 10), 0 left"
        );
    }

    #[test]
    fn removed_account_names_the_workers_under_a_leaf() {
        let w = |name: &str, pid: u32| WorkerRef {
            name: name.into(),
            host: "h".into(),
            pid: Some(pid),
        };
        assert_eq!(
            removed_account(&[
                w("leafA", 5),
                w("leafA/leafA-w0", 6),
                w("leafA/leafA-w1", 7)
            ]),
            "gspc: removed 1 worker: leafA (pid 5); the leaf agent stops its 2 workers: \
             leafA/leafA-w0 (pid 6), leafA/leafA-w1 (pid 7)"
        );
        assert_eq!(
            removed_account(&[w("a", 1), w("a/x", 2), w("b", 3), w("b/y", 4), w("c", 5)]),
            "gspc: removed 3 workers: a (pid 1), b (pid 3), c (pid 5); the leaf agents stop \
             their 2 workers: a/x (pid 2), b/y (pid 4)"
        );
        assert_eq!(
            removed_account(&[w("w", 1)]),
            "gspc: removed 1 worker: w (pid 1)"
        );
        assert_eq!(removed_account(&[]), "gspc: removed 0 workers");
    }

    #[test]
    fn status_table_has_a_row_per_worker() {
        let s = RuntimeStatus {
            pid: 1,
            address: "127.0.0.1:5".into(),
            state_dir: "/tmp/x".into(),
            uptime_ms: 1500,
            jobs_running: 1,
            jobs_total: 2,
            workers: vec![RtWorker {
                name: "w".into(),
                host: "h".into(),
                pid: Some(9),
                capabilities: vec!["A".into(), "B".into()],
                state: "up".into(),
                heartbeat_age_ms: Some(100),
                running: Some(RunningTask {
                    job: 2,
                    transition: "square".into(),
                }),
                in_flight: 1,
                done: 4,
                capacity: None,
                workers: vec![],
            }],
            workers_total: 1,
            workers_up: 1,
            workers_offset: 0,
            memory: MemoryStatus {
                segments: 2,
                capacity: 2 << 20,
                allocated: 4096,
                allocations: 1,
                bytes_got: 1536,
                bytes_put: 0,
                hosts: vec![HostMemory {
                    host: "h".into(),
                    segments: 2,
                    capacity: 2 << 20,
                    allocated: 4096,
                }],
            },
            journal: "on".into(),
        };
        let t = status_table(&s);
        assert!(!t.contains("journal"), "{t}");
        let stopped = RuntimeStatus {
            journal: "stopped: No space left on device (os error 28)".into(),
            ..s.clone()
        };
        assert!(
            status_table(&stopped).lines().nth(2).is_some_and(|l| {
                l.starts_with(
                "warning: the journal stopped (No space left on device (os error 28)): jobs will \
                 not survive a crash"
            )
            }),
            "{}",
            status_table(&stopped)
        );
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("runtime pid 1, workers connect to 127.0.0.1:5, up 1.5s"));
        assert_eq!(lines[2], "1 workers");
        assert!(lines[3].starts_with("NAME  HOST  PID  CAPABILITIES  HEALTH"));
        assert_eq!(
            lines[4],
            "w     h     9    A,B           last heartbeat 0.1s ago  2/square  1      4"
        );
        assert_eq!(
            lines[5],
            "memory: 2 segments, 2 MiB capacity, 4 KiB allocated in 1 allocations; transfers: \
             1.5 KiB got, 0 B put"
        );
        assert_eq!(
            lines[6],
            "  host h: 2 segments, 2 MiB capacity, 4 KiB allocated"
        );
        let j = status_json(&s);
        assert_eq!(j["workers"][0]["running"]["transition"], "square");
        assert_eq!(j["workers"][0]["heartbeat_age_ms"], 100);
        assert_eq!(j["memory"]["allocated"], 4096);
        assert_eq!(j["memory"]["hosts"][0]["capacity"], 2 << 20);
        assert!(j.get("workers_total").is_none(), "{j}");
        // A large runtime's first page: how many there are in all.
        let large = RuntimeStatus {
            workers_total: 5000,
            workers_up: 4998,
            ..s.clone()
        };
        let t = status_table(&large);
        assert_eq!(
            t.lines().nth(2),
            Some(
                "5000 workers (4998 up); the first 1 by name below (`gspc status --workers` \
                 lists all)"
            ),
            "{t}"
        );
        let j = status_json(&large);
        assert_eq!(
            (j["workers_total"].clone(), j["workers_up"].clone()),
            (5000.into(), 4998.into())
        );
        // A leaf agent's row counts the tasks its workers run.
        let busy = s.workers[0].clone();
        let idle = RtWorker {
            running: None,
            ..busy.clone()
        };
        let leaf = |under: Vec<RtWorker>| RtWorker {
            name: "leafA".into(),
            capabilities: vec![],
            running: None,
            capacity: Some(8),
            workers: under,
            ..busy.clone()
        };
        let running_of_leaf = |under: Vec<RtWorker>| {
            let t = status_table(&RuntimeStatus {
                workers: vec![leaf(under)],
                ..s.clone()
            });
            let row = t
                .lines()
                .find(|l| l.starts_with("leafA "))
                .unwrap()
                .to_string();
            row.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .nth(5)
                .map(str::to_string)
        };
        assert_eq!(
            running_of_leaf(vec![busy.clone(), idle.clone(), busy.clone()]).as_deref(),
            Some("2 tasks")
        );
        assert_eq!(
            running_of_leaf(vec![idle.clone(), busy.clone()]).as_deref(),
            Some("1 task")
        );
        assert_eq!(running_of_leaf(vec![idle]).as_deref(), Some("-"));
    }
}
