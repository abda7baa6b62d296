//! `pnetput`: puts input tokens into a bundle, so that it runs without `-p` arguments.

use std::io::{Read, Write};
use std::process::ExitCode;

use pnet_tokens::Target;

const USAGE: &str = "\
pnetput: put input tokens into a compiled net (.pnet bundle)

Usage: pnetput [OPTIONS] [-i] IN.pnet -o OUT.pnet -p PORT=VALUE...

The tokens become initial tokens of the net: every run of OUT.pnet (gspc-run, gspc submit,
pnetv) starts with them, after the place's own tokens and before the run's -p tokens.

Options:
  -i, --if FILE          the bundle to read (\"-\": standard input)
  -o, --of FILE          the bundle to write (\"-\": standard output; may be IN itself)
  -p, --put PORT=VALUE   a token for in port PORT, VALUE in the expression language's literal
                         syntax (3L, \"s\", Struct [a := 1], ...); repeatable
      --place NAME=VALUE a token for the root net's place NAME
  -l, --list             print the in ports, their types and the tokens already put, and exit
  -V, --version          print the version
  -h, --help             print this help

Exit codes: 0 success, 1 the bundle cannot be read or a token does not fit, 2 usage errors.
";

fn main() -> ExitCode {
    pnet_stdlib::cli::exit_quietly_on_broken_pipe();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut input = None;
    let mut output = None;
    let mut puts = Vec::new();
    let mut list = false;
    let mut i = 0;
    while i < argv.len() {
        let arg = argv[i].as_str();
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg, None),
        };
        let mut value = || -> Result<String, ExitCode> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            i += 1;
            argv.get(i)
                .cloned()
                .ok_or_else(|| usage(&format!("{flag} needs a value")))
        };
        match flag {
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "-V" | "--version" => {
                println!("pnetput {}", env!("CARGO_PKG_VERSION"));
                return ExitCode::SUCCESS;
            }
            "-l" | "--list" => list = true,
            "-i" | "--if" => match value() {
                Ok(v) => input = Some(v),
                Err(c) => return c,
            },
            "-o" | "--of" => match value() {
                Ok(v) => output = Some(v),
                Err(c) => return c,
            },
            "-p" | "--put" | "--place" => {
                let text = match value() {
                    Ok(v) => v,
                    Err(c) => return c,
                };
                let kind = if flag == "--place" { "place" } else { "port" };
                match pnet_stdlib::literal::parse_binding(flag, kind, &text) {
                    Ok((name, v)) => puts.push((
                        if flag == "--place" {
                            Target::Place(name)
                        } else {
                            Target::Port(name)
                        },
                        v,
                    )),
                    Err(e) => return usage(&e),
                }
            }
            s if s.starts_with('-') && s.len() > 1 => {
                return usage(&format!("unknown option {s}"));
            }
            _ if input.is_none() => input = Some(arg.to_string()),
            _ => return usage(&format!("unexpected argument {arg}")),
        }
        i += 1;
    }
    let Some(input) = input else {
        return usage("no input bundle given");
    };
    if output.is_none() && !list {
        return usage("no output given (-o OUT.pnet)");
    }
    let bytes = if input == "-" {
        let mut b = Vec::new();
        std::io::stdin().read_to_end(&mut b).map(|_| b)
    } else {
        std::fs::read(&input)
    };
    let mut bundle = match bytes
        .map_err(|e| e.to_string())
        .and_then(|b| pnet_bundle::format::decode(&b).map_err(|e| e.to_string()))
    {
        Ok(b) => b,
        Err(e) => return fail(&format!("{input}: {e}")),
    };
    if list {
        print!("{}", pnet_tokens::listing(&bundle));
        if output.is_none() {
            return ExitCode::SUCCESS;
        }
    }
    for (target, value) in puts {
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
    let written = if output == "-" {
        std::io::stdout().lock().write_all(&bytes)
    } else {
        std::fs::write(&output, &bytes)
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("{output}: {e}")),
    }
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("pnetput: {msg}");
    ExitCode::from(1)
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("pnetput: {msg}\nTry 'pnetput --help' for more information.");
    ExitCode::from(2)
}
