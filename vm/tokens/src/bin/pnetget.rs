//! `pnetget`: prints the output tokens of a finished run from its result file.

use std::io::Write;
use std::process::ExitCode;

const USAGE: &str = "\
pnetget: print the output tokens of a finished run

Usage: pnetget [OPTIONS] RESULT [PORT...]

RESULT is a result file written by `gspc-run --result FILE NET` or `gspc wait JOB --result
FILE`. With PORT names, only those ports are printed.

Options:
      --json     print JSON: {\"net\": ..., \"outputs\": {PORT: {\"type\": T, \"tokens\": [...]}}},
                 values in the JSON encoding modules see (runtime/worker/MODULES.md)
  -V, --version  print the version
  -h, --help     print this help

Output: one line `PORT = VALUE` per token (the literal syntax of the expression language),
ports in alphabetical order, the tokens of a port in value order, as gspc-run prints them.
Exit codes: 0 success, 1 the file cannot be read or has no such port, 2 usage errors.
";

fn main() -> ExitCode {
    pnet_stdlib::cli::exit_quietly_on_broken_pipe();
    let mut json = false;
    let mut file = None;
    let mut ports = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "-V" | "--version" => {
                println!("pnetget {}", env!("CARGO_PKG_VERSION"));
                return ExitCode::SUCCESS;
            }
            "--json" => json = true,
            s if s.starts_with('-') && s.len() > 1 => return usage(&format!("unknown option {s}")),
            _ if file.is_none() => file = Some(arg),
            _ => ports.push(arg),
        }
    }
    let Some(file) = file else {
        return usage("no result file given");
    };
    let outputs = match std::fs::read(&file)
        .map_err(|e| e.to_string())
        .and_then(|b| pnet_bundle::result::RunOutputs::decode(&b).map_err(|e| e.to_string()))
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("pnetget: {file}: {e}");
            return ExitCode::from(1);
        }
    };
    let printed = if json {
        pnet_tokens::json(&outputs, &ports).map(|j| format!("{j}\n"))
    } else {
        pnet_tokens::text(&outputs, &ports)
    };
    match printed {
        Ok(s) => {
            let _ = std::io::stdout().lock().write_all(s.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pnetget: {file}: {e}");
            ExitCode::from(1)
        }
    }
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("pnetget: {msg}\nTry 'pnetget --help' for more information.");
    ExitCode::from(2)
}
