//! The client subcommands: `put-token`, `workflow-response`, `status`, `cancel`, talking to a
//! running `gspc-run --control SOCKET`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use pnetc::args::parse_put_arg;

use crate::usage_error;

const AFTER_HELP: &str = "\
Commands:
  put-token          put tokens on put_token=\"true\" places of the running job, in order
  workflow-response  put `[value := VALUE, response_id := ID]` on PLACE and print the value
                     the net answers through its connect-response (waits for the answer)
  status             print the job's workers and task counts
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
