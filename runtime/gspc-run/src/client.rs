//! The client subcommands: `put-token`, `workflow-response`, `status`, `cancel`, talking to a
//! running `gspc-run --control SOCKET`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use pnet_driver::args::{option_value, split_flag};
use pnet_driver::parse_put;

use crate::usage_error;

const USAGE: &str = "\
gspc-run client subcommands: talk to a job started with `gspc-run --control SOCKET NET`

Usage:
  gspc-run put-token --control SOCKET PLACE=VALUE...
      put tokens on put_token=\"true\" places of the running job, in order
  gspc-run workflow-response --control SOCKET PLACE=VALUE
      put `[value := VALUE, response_id := ID]` on PLACE and print the value the net answers
      through its connect-response (waits for the answer)
  gspc-run status --control SOCKET [--json]
      print the job's workers and task counts
  gspc-run close --control SOCKET
      stop accepting clients: the job ends once nothing is left to do (a net with put_token
      places and no drts.wait_for_output otherwise keeps serving clients)
  gspc-run cancel --control SOCKET
      cancel the job (its workers stop; gspc-run exits with code 130)

Options:
      --control SOCKET        the job's control socket
      --wait-for-socket SECS  wait up to SECS seconds for the socket to appear (default 0)
      --json                  (status) print JSON
  -h, --help                  print this help

VALUE is in the expression language's literal syntax (3L, \"s\", [], Struct [a := 1], ...).
";

struct ClientArgs {
    control: PathBuf,
    puts: Vec<(String, pnet_stdlib::Value)>,
    json: bool,
    wait: Duration,
}

fn parse(cmd: &str, argv: &[String]) -> Result<ClientArgs, ExitCode> {
    let mut control = None;
    let mut puts = Vec::new();
    let mut json = false;
    let mut wait = Duration::ZERO;
    let mut i = 0;
    while i < argv.len() {
        let arg = argv[i].as_str();
        let (flag, inline) = split_flag(arg);
        let value = |i: &mut usize| -> Result<String, ExitCode> {
            option_value(argv, i, flag, inline).map_err(|m| usage_error(&m))
        };
        match flag {
            "-h" | "--help" => {
                pnet_stdlib::out!("{USAGE}");
                return Err(ExitCode::SUCCESS);
            }
            "--control" => control = Some(PathBuf::from(value(&mut i)?)),
            "--json" if cmd == "status" => json = true,
            "--wait-for-socket" => {
                let v = value(&mut i)?;
                let secs: f64 = v.parse().map_err(|_| {
                    usage_error(&format!("--wait-for-socket: '{v}' is not a number"))
                })?;
                wait = Duration::from_secs_f64(secs.max(0.0));
            }
            _ if arg.starts_with('-') => {
                return Err(usage_error(&format!("{cmd}: unknown option '{arg}'")));
            }
            _ if cmd == "put-token" || cmd == "workflow-response" => {
                puts.push(parse_put(arg).map_err(|m| usage_error(&m))?);
            }
            _ => return Err(usage_error(&format!("{cmd}: unexpected argument '{arg}'"))),
        }
        i += 1;
    }
    let Some(control) = control else {
        return Err(usage_error(&format!("{cmd}: --control SOCKET is required")));
    };
    match cmd {
        "put-token" if puts.is_empty() => {
            return Err(usage_error("put-token: no PLACE=VALUE given"));
        }
        "workflow-response" if puts.len() != 1 => {
            return Err(usage_error(
                "workflow-response: give exactly one PLACE=VALUE",
            ));
        }
        _ => {}
    }
    Ok(ClientArgs {
        control,
        puts,
        json,
        wait,
    })
}

fn wait_for(socket: &Path, wait: Duration) {
    let start = Instant::now();
    while !socket.exists() && start.elapsed() < wait {
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn main(cmd: &str, argv: &[String]) -> ExitCode {
    let args = match parse(cmd, argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    wait_for(&args.control, args.wait);
    let socket = args.control.as_path();
    let fail = |msg: String| {
        eprintln!("gspc-run {cmd}: {msg}");
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
