//! `pnetput`: puts input tokens into a bundle, so that it runs without `-p` arguments.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};
use pnet_stdlib::Value;
use pnet_tokens::Target;

const AFTER_HELP: &str = "\
Exit codes: 0 success, 1 the bundle cannot be read or a token does not fit, 2 usage errors.

Examples:
  pnetput net.pnet -o net-5.pnet -p 'n=5L'        a bundle that runs with n = 5
  pnetput -l net-5.pnet                           its in ports and the tokens put";

/// pnetput: put input tokens into a compiled net (.pnet bundle)
///
/// NET (or -i FILE) is the bundle to read, -o FILE the bundle to write (`-`: standard input,
/// standard output; it may be NET itself). The tokens become initial tokens of the net: every
/// run of the bundle written (gspc-run, gspc submit, pnetv) starts with them, after the
/// place's own tokens and before the run's -p tokens.
#[derive(Parser)]
#[command(
    name = "pnetput",
    version,
    after_help = AFTER_HELP,
    override_usage = "pnetput [OPTIONS] [-i] NET -o FILE -p PORT=VALUE..."
)]
struct Cli {
    #[command(flatten)]
    io: pnet_stdlib::cli::InputOutput,
    /// A token for in port PORT, VALUE in the expression language's literal syntax (3L, "s",
    /// Struct [a := 1], ...); repeatable
    #[arg(short = 'p', long = "put", value_name = "PORT=VALUE", value_parser = parse_port)]
    puts: Vec<(String, Value)>,
    /// A token for the root net's place NAME; repeatable
    #[arg(long = "place", value_name = "NAME=VALUE", value_parser = parse_place)]
    places: Vec<(String, Value)>,
    /// Print the in ports, their types and the tokens already put, and exit
    #[arg(short = 'l', long)]
    list: bool,
}

fn parse_port(s: &str) -> Result<(String, Value), String> {
    pnet_stdlib::literal::parse_binding("-p", "port", s)
}

fn parse_place(s: &str) -> Result<(String, Value), String> {
    pnet_stdlib::literal::parse_binding("--place", "place", s)
}

fn main() -> ExitCode {
    pnet_stdlib::cli::exit_quietly_on_broken_pipe();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    pnet_stdlib::cli::generate_if_asked("pnetput", argv.get(1..).unwrap_or_default(), Cli::command);
    let matches = Cli::command()
        .try_get_matches_from(argv)
        .and_then(|m| Cli::from_arg_matches(&m).map(|c| (m, c)));
    let (matches, cli) = match matches {
        Ok(mc) => mc,
        Err(e) => pnet_stdlib::cli::exit_after_parse(
            "pnetput",
            &e.render().to_string(),
            e.use_stderr(),
            e.exit_code(),
        ),
    };
    // -p and --place tokens in command-line order (a port and a place may be one place).
    let indices = |id: &str| -> Vec<usize> {
        matches
            .indices_of(id)
            .map(|i| i.collect())
            .unwrap_or_default()
    };
    let mut puts: Vec<(usize, Target, Value)> = Vec::new();
    for (i, (name, v)) in indices("puts").into_iter().zip(cli.puts) {
        puts.push((i, Target::Port(name), v));
    }
    for (i, (name, v)) in indices("places").into_iter().zip(cli.places) {
        puts.push((i, Target::Place(name), v));
    }
    puts.sort_by_key(|(i, _, _)| *i);
    let list = cli.list;
    let Some(input_path) = cli.io.input().map(PathBuf::from) else {
        pnet_stdlib::cli::usage_exit("pnetput", "no input bundle given");
    };
    let output = cli.io.output;
    if output.is_none() && !list {
        pnet_stdlib::cli::usage_exit("pnetput", "no output given (-o OUT.pnet)");
    }
    let input = input_path.display().to_string();
    let bytes = if input == "-" {
        pnet_stdlib::input::read_limited(std::io::stdin(), pnet_stdlib::input::MAX_BINARY_BYTES)
    } else {
        pnet_stdlib::input::read_file(&input_path, pnet_stdlib::input::MAX_BINARY_BYTES)
    };
    let mut bundle = match bytes
        .map_err(|e| e.to_string())
        .and_then(|b| pnet_bundle::format::decode(&b).map_err(|e| e.to_string()))
    {
        Ok(b) => b,
        Err(e) => return fail(&format!("{input}: {e}")),
    };
    if list {
        pnet_stdlib::out!("{}", pnet_tokens::listing(&bundle));
        if output.is_none() {
            return ExitCode::SUCCESS;
        }
    }
    for (_, target, value) in puts {
        if let Err(e) = pnet_tokens::put(&mut bundle, &target, value) {
            return fail(&format!("{input}: {e}"));
        }
    }
    let Some(output) = output else {
        return ExitCode::SUCCESS;
    };
    let bytes = match pnet_bundle::format::encode(&bundle) {
        Ok(b) => b,
        Err(e) => return fail(&e.to_string()),
    };
    let written = if output.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(&bytes)
            .and_then(|()| out.flush())
            .map_err(|e| format!("cannot write to standard output: {e}"))
    } else {
        pnet_stdlib::cli::write_file(&output, &bytes)
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(msg: &str) -> ExitCode {
    pnet_stdlib::errln!("pnetput: {msg}");
    ExitCode::from(1)
}
