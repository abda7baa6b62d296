//! `gspc-run`: runs a net on this machine and prints its output tokens.
//!
//! Exit codes: 0 success, 1 the net did not compile or the run failed, 2 usage errors.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use pnet_bundle::Bundle;
use pnet_driver::args::{COMPILER_OPTIONS_HELP, take_compiler_option};
use pnet_driver::{ColorMode, load_net, parse_put};
use pnet_stdlib::Value;

const USAGE: &str = "\
gspc-run: run a Petri net and print its output tokens

Usage: gspc-run [OPTIONS] NET

NET is a bundle written by pnetc (.pnet) or an .xpnet file, compiled on the fly.

Options:
  -p, --put PORT=VALUE     put a token on input port PORT before the run; VALUE in the
                           expression language's literal syntax (3L, \"s\", Struct [a := 1], ...);
                           repeatable, also for several tokens on one port
      --json               print the result as JSON
      --seed N             seed of the random choice among enabled transitions (a fixed
                           default; the same seed repeats a run exactly)
      --max-firings N      stop with an error after N firings (a guard against runaway nets)
      --jit MODE           how to run expressions and conditions: auto (default: compile to
                           native code what pays off once it is hot, interpret the rest), on
                           (compile everything at load), off (interpret everything); without
                           this option, the environment variable PNET_JIT, if set
      --emit jit-stats     print what the JIT compiled and ran to stderr after the run
  -V, --version            print the version
  -h, --help               print this help

Output: one line `PORT = VALUE` per output token, ports in alphabetical order, the tokens of
a port in the value order of the language.
";

struct Args {
    net: String,
    puts: Vec<(String, Value)>,
    json: bool,
    config: pnet_vm::RunConfig,
    compile: pnet_sema::Options,
    jit: pnet_jit::JitMode,
    jit_stats: bool,
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("gspc-run: {msg}\nTry 'gspc-run --help' for more information.");
    ExitCode::from(2)
}

fn parse_args(argv: &[String]) -> Result<Args, ExitCode> {
    let mut net = None;
    let mut puts = Vec::new();
    let mut json = false;
    let mut config = pnet_vm::RunConfig::default();
    let mut compile = pnet_sema::Options::default();
    let mut jit = match std::env::var("PNET_JIT") {
        Ok(v) => pnet_jit::JitMode::parse(&v)
            .ok_or_else(|| usage_error(&format!("PNET_JIT: '{v}' is not one of auto, on, off")))?,
        Err(_) => pnet_jit::JitMode::Auto,
    };
    let mut jit_stats = false;
    let mut i = 0;
    while i < argv.len() {
        match take_compiler_option(argv, i, &mut compile) {
            Err(msg) => return Err(usage_error(&msg)),
            Ok(n) if n > 0 => {
                i += n;
                continue;
            }
            Ok(_) => {}
        }
        let arg = argv[i].as_str();
        let (flag, inline_value) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg, None),
        };
        let take_value = |i: &mut usize| -> Result<String, ExitCode> {
            if let Some(v) = &inline_value {
                return Ok(v.clone());
            }
            *i += 1;
            argv.get(*i)
                .cloned()
                .ok_or_else(|| usage_error(&format!("{flag} needs a value")))
        };
        match flag {
            "-h" | "--help" => {
                println!("{USAGE}\n{COMPILER_OPTIONS_HELP}");
                return Err(ExitCode::SUCCESS);
            }
            "-V" | "--version" => {
                println!("gspc-run {}", env!("CARGO_PKG_VERSION"));
                return Err(ExitCode::SUCCESS);
            }
            "-p" | "--put" => {
                let v = take_value(&mut i)?;
                puts.push(parse_put(&v).map_err(|m| usage_error(&m))?);
            }
            "--json" => json = true,
            "--seed" => {
                let v = take_value(&mut i)?;
                config.seed = v
                    .parse()
                    .map_err(|_| usage_error(&format!("--seed: '{v}' is not a number")))?;
            }
            "--max-firings" => {
                let v = take_value(&mut i)?;
                let n: u64 = v
                    .parse()
                    .map_err(|_| usage_error(&format!("--max-firings: '{v}' is not a number")))?;
                config.max_firings = Some(n);
            }
            "--jit" => {
                let v = take_value(&mut i)?;
                jit = pnet_jit::JitMode::parse(&v).ok_or_else(|| {
                    usage_error(&format!("--jit: '{v}' is not one of auto, on, off"))
                })?;
            }
            "--emit" => {
                let v = take_value(&mut i)?;
                if v != "jit-stats" {
                    return Err(usage_error(&format!("--emit: '{v}' is not jit-stats")));
                }
                jit_stats = true;
            }
            _ if arg.starts_with("-p") && arg.len() > 2 => {
                puts.push(parse_put(&arg[2..]).map_err(|m| usage_error(&m))?);
            }
            _ if arg.starts_with('-') => {
                return Err(usage_error(&format!("unknown option '{arg}'")));
            }
            _ => {
                if net.is_some() {
                    return Err(usage_error(&format!("more than one net ('{arg}')")));
                }
                net = Some(arg.to_string());
            }
        }
        i += 1;
    }
    let Some(net) = net else {
        return Err(usage_error("no net given"));
    };
    Ok(Args {
        net,
        puts,
        json,
        config,
        compile,
        jit,
        jit_stats,
    })
}

fn load(args: &Args) -> Result<Bundle, ExitCode> {
    let path = Path::new(&args.net);
    let loaded = std::fs::read(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
        .and_then(|bytes| load_net(path, &bytes, &args.compile, ColorMode::Auto));
    loaded.map(|(bundle, _)| bundle).map_err(|msg| {
        eprintln!("gspc-run: {msg}");
        ExitCode::from(1)
    })
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let bundle = match load(&args) {
        Ok(b) => b,
        Err(code) => return code,
    };
    // Group the puts by port, keeping their order.
    let mut inputs: Vec<(String, Vec<Value>)> = Vec::new();
    for (port, v) in &args.puts {
        match inputs.iter_mut().find(|(p, _)| p == port) {
            Some((_, vs)) => vs.push(v.clone()),
            None => inputs.push((port.clone(), vec![v.clone()])),
        }
    }
    let jit = std::sync::Arc::new(pnet_jit::JitFactory::new(args.jit));
    let mut config = args.config.clone();
    if args.jit != pnet_jit::JitMode::Off {
        config.runner = Some(jit.clone());
    }
    let result = pnet_vm::run(&bundle, &inputs, &config);
    if args.jit_stats {
        let mut stats = jit.stats();
        stats.mode = Some(args.jit);
        eprint!("{stats}");
    }
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("gspc-run: error: {e}");
            return ExitCode::from(1);
        }
    };
    let mut outputs: Vec<(String, Vec<Value>)> = result.outputs;
    outputs.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, tokens) in &mut outputs {
        tokens.sort();
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if args.json {
        let ports: serde_json::Map<String, serde_json::Value> = outputs
            .iter()
            .map(|(p, ts)| {
                (
                    p.clone(),
                    ts.iter()
                        .map(|t| serde_json::Value::String(t.to_string()))
                        .collect(),
                )
            })
            .collect();
        let doc = serde_json::json!({ "outputs": ports, "firings": result.stats.firings });
        writeln!(out, "{doc}")
    } else {
        outputs
            .iter()
            .flat_map(|(p, ts)| ts.iter().map(move |t| (p, t)))
            .try_for_each(|(p, t)| writeln!(out, "{p} = {t}"))
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gspc-run: cannot write the result: {e}");
            ExitCode::from(1)
        }
    }
}
