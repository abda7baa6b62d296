//! `pnetget`: prints the output tokens of a finished run from its result file.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

const AFTER_HELP: &str = "\
Output: one line `PORT = VALUE` per token (the literal syntax of the expression language),
ports in alphabetical order, the tokens of a port in value order, as gspc-run prints them.
Exit codes: 0 success, 1 the file cannot be read or has no such port, 2 usage errors.

Examples:
  gspc-run --result out.result net.pnet -p 'n=5L' && pnetget out.result
  pnetget --json out.result sum";

/// pnetget: print the output tokens of a finished run
///
/// RESULT is a result file written by `gspc-run --result FILE NET` or `gspc wait JOB --result
/// FILE`. With PORT names, only those ports are printed.
#[derive(Parser)]
#[command(name = "pnetget", version, after_help = AFTER_HELP)]
struct Cli {
    /// The result file
    #[arg(value_name = "RESULT")]
    file: PathBuf,
    /// Only these ports
    #[arg(value_name = "PORT")]
    ports: Vec<String>,
    /// Print JSON: {"net": ..., "outputs": {PORT: {"type": T, "tokens": [...]}}}, values in
    /// the JSON encoding modules see (runtime/worker/MODULES.md)
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    pnet_stdlib::cli::exit_quietly_on_broken_pipe();
    let cli = pnet_stdlib::parse_args!(Cli, "pnetget");
    let (json, ports) = (cli.json, cli.ports);
    let file = cli.file.display().to_string();
    let outputs =
        match pnet_stdlib::input::read_file(&cli.file, pnet_stdlib::input::MAX_BINARY_BYTES)
            .map_err(|e| e.to_string())
            .and_then(|b| pnet_bundle::result::RunOutputs::decode(&b).map_err(|e| e.to_string()))
        {
            Ok(o) => o,
            Err(e) => {
                pnet_stdlib::errln!("pnetget: {file}: {e}");
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
            pnet_stdlib::out!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            pnet_stdlib::errln!("pnetget: {file}: {e}");
            ExitCode::from(1)
        }
    }
}
