//! The client subcommands: `put-token`, `workflow-response`, `status`, `cancel`, talking to a
//! running `gspc-run --control SOCKET`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use pnet_agent::control::{JobTasks, Request, Response};
use pnetc::args::parse_put_arg;

use crate::usage_error;

const AFTER_HELP: &str = "\
Commands:
  put-token          put tokens on put_token=\"true\" places of the running job, in order
  workflow-response  put `[value := VALUE, response_id := ID]` on PLACE and print the value
                     the net answers through its connect-response (waits for the answer)
  status             print the job's workers and task counts, and the tasks on workers
                     (the longest there first, with their inputs)
  close              stop accepting clients: the job ends once nothing is left to do (a net
                     with put_token places and no drts.wait_for_output otherwise keeps
                     serving clients)
  cancel             cancel the job (its workers stop; gspc-run exits with code 130)

VALUE is in the expression language's literal syntax (3L, \"s\", [], Struct [a := 1], ...).

Examples:
  gspc-run --control job.sock net.xpnet &
  gspc-run put-token --control job.sock 'in=1L' 'in=2L'
  gspc-run status --control job.sock --wait-for-socket 5 --json";

/// gspc-run client subcommands: talk to a job started with `gspc-run --control SOCKET NET`
#[derive(Parser)]
#[command(
    after_help = AFTER_HELP,
    override_usage = "gspc-run put-token --control SOCKET PLACE=VALUE...
       gspc-run workflow-response --control SOCKET PLACE=VALUE
       gspc-run status --control SOCKET [--json]
       gspc-run close --control SOCKET
       gspc-run cancel --control SOCKET"
)]
struct ClientCli {
    /// The job's control socket
    #[arg(long, value_name = "SOCKET", required = true)]
    control: Option<PathBuf>,
    /// Wait up to SECS seconds for the socket to appear
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    wait_for_socket: f64,
    /// (status) print JSON
    #[arg(long)]
    json: bool,
    /// (put-token, workflow-response) the tokens
    #[arg(value_name = "PLACE=VALUE", value_parser = parse_put_arg)]
    puts: Vec<(String, pnet_stdlib::Value)>,
}

struct ClientArgs {
    control: PathBuf,
    puts: Vec<(String, pnet_stdlib::Value)>,
    json: bool,
    wait: Duration,
}

fn parse(cmd: &str, argv: &[OsString]) -> Result<ClientArgs, ExitCode> {
    let prog = format!("gspc-run {cmd}");
    let argv = std::iter::once(OsString::from(&prog)).chain(argv.iter().cloned());
    let cli = pnet_stdlib::parse_args!(ClientCli, &prog, argv);
    if cli.json && cmd != "status" {
        return Err(usage_error(&format!("{cmd}: unknown option '--json'")));
    }
    let takes_tokens = cmd == "put-token" || cmd == "workflow-response";
    if !takes_tokens && !cli.puts.is_empty() {
        return Err(usage_error(&format!(
            "{cmd}: unexpected argument '{}={}'",
            cli.puts[0].0, cli.puts[0].1
        )));
    }
    match cmd {
        "put-token" if cli.puts.is_empty() => {
            return Err(usage_error("put-token: no PLACE=VALUE given"));
        }
        "workflow-response" if cli.puts.len() != 1 => {
            return Err(usage_error(
                "workflow-response: give exactly one PLACE=VALUE",
            ));
        }
        _ => {}
    }
    Ok(ClientArgs {
        control: cli.control.unwrap_or_default(),
        puts: cli.puts,
        json: cli.json,
        wait: Duration::from_secs_f64(cli.wait_for_socket.max(0.0)),
    })
}

/// Waits until the job listens on `socket` (or `wait` has passed): the file appears when the
/// job binds it, the job listens a moment later (milliseconds on a loaded machine, during
/// which a client would be refused).
fn wait_for(socket: &Path, wait: Duration) {
    let start = Instant::now();
    while start.elapsed() < wait {
        if socket.exists() && std::os::unix::net::UnixStream::connect(socket).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many tasks on workers `status` lists (the longest running).
const MAX_LISTED: usize = 10;

/// One line per task sent to a worker and not answered, the longest running first (`now_us`:
/// the job's clock), at most [`MAX_LISTED`]:
/// `  task 3 `work` (m.f) running for 12.3s on worker-vm-0: x = 3L`; `running (sent 12.3s
/// ago) on` for the task a worker runs now when the agent does not know when it started, and
/// `sent 12.3s ago to` for one queued on the worker behind it.
fn tasks_on_workers(t: &JobTasks, now_us: u64) -> String {
    let mut open: Vec<_> = t
        .tasks
        .iter()
        .filter(|k| k.state == "running" || k.state == "sent")
        .collect();
    open.sort_by_key(|k| {
        (
            k.state != "running",
            k.started_us.unwrap_or(u64::MAX),
            k.sent_us,
            k.task,
        )
    });
    let mut out = String::new();
    for k in open.iter().take(MAX_LISTED) {
        let ago = |us: u64| now_us.saturating_sub(us) as f64 / 1e6;
        let when = match k.started_us {
            Some(us) => format!("running for {:.1}s on", ago(us)),
            None if k.state == "running" => format!("running (sent {:.1}s ago) on", ago(k.sent_us)),
            None => format!("sent {:.1}s ago to", ago(k.sent_us)),
        };
        out.push_str(&format!(
            "  task {} `{}` ({}) {when} {}",
            k.task, k.transition, k.module, k.worker
        ));
        if let Some(inputs) = k.inputs.as_deref().filter(|i| !i.is_empty()) {
            out.push_str(&format!(": {inputs}"));
        }
        out.push('\n');
    }
    if open.len() > MAX_LISTED {
        out.push_str(&format!(
            "  ... and {} more tasks on workers\n",
            open.len() - MAX_LISTED
        ));
    }
    out
}

pub fn main(cmd: &str, argv: &[OsString]) -> ExitCode {
    let args = match parse(cmd, argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    wait_for(&args.control, args.wait);
    let socket = args.control.as_path();
    let fail = |msg: String| {
        pnet_stdlib::errln!("gspc-run {cmd}: {msg}");
        ExitCode::from(1)
    };
    match cmd {
        "put-token" => {
            for (place, value) in &args.puts {
                if let Err(e) = pnet_agent::control::put_token(socket, place, value) {
                    return fail(e);
                }
            }
            ExitCode::SUCCESS
        }
        "workflow-response" => {
            let (place, value) = &args.puts[0];
            match pnet_agent::control::workflow_response(socket, place, value) {
                Ok(v) => {
                    pnet_stdlib::outln!("{v}");
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            }
        }
        "status" => match pnet_agent::control::status(socket) {
            Ok(s) => {
                if args.json {
                    match serde_json::to_string(&s) {
                        Ok(j) => pnet_stdlib::outln!("{j}"),
                        Err(e) => return fail(e.to_string()),
                    }
                } else {
                    pnet_stdlib::out!("{s}");
                    // The tasks on workers, longest first: what a job that seems stuck waits
                    // for (the records are kept while the job has a control socket).
                    let tasks = pnet_agent::control::request(socket, &Request::Tasks);
                    if let Ok(Response::Tasks(t)) = tasks {
                        pnet_stdlib::out!("{}", tasks_on_workers(&t, s.elapsed_ms * 1000));
                    }
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        "close" => match pnet_agent::control::close(socket) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(e),
        },
        _ => match pnet_agent::control::cancel(socket) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use pnet_agent::control::TaskInfo;

    use super::*;

    fn task(task: u64, state: &str, sent_us: u64, started_us: Option<u64>) -> TaskInfo {
        TaskInfo {
            task,
            transition: "work".into(),
            module: "m.f".into(),
            worker_id: 0,
            worker: format!("w-{task}"),
            state: state.into(),
            sent_us,
            started_us,
            ended_us: None,
            retries: 0,
            error: None,
            log_bytes: 0,
            inputs: Some(format!("x = {task}L")),
        }
    }

    #[test]
    fn status_lists_the_tasks_on_workers_longest_running_first() {
        let t = JobTasks {
            tasks: vec![
                task(0, "done", 0, Some(0)),
                task(1, "running", 1_000_000, Some(2_000_000)),
                task(2, "running", 0, Some(500_000)),
                task(3, "sent", 3_000_000, None),
                task(4, "running", 4_000_000, None),
            ],
            ..JobTasks::default()
        };
        assert_eq!(
            tasks_on_workers(&t, 12_500_000),
            "  task 2 `work` (m.f) running for 12.0s on w-2: x = 2L\n  \
             task 1 `work` (m.f) running for 10.5s on w-1: x = 1L\n  \
             task 4 `work` (m.f) running (sent 8.5s ago) on w-4: x = 4L\n  \
             task 3 `work` (m.f) sent 9.5s ago to w-3: x = 3L\n"
        );
        let many = JobTasks {
            tasks: (0..12).map(|i| task(i, "running", 0, Some(i))).collect(),
            ..JobTasks::default()
        };
        let text = tasks_on_workers(&many, 1);
        assert_eq!(text.lines().count(), MAX_LISTED + 1, "{text}");
        assert!(
            text.ends_with("  ... and 2 more tasks on workers\n"),
            "{text}"
        );
    }
}
