//! `pnet2dot`: draws a Petri net for Graphviz.
//!
//! Exit codes: 0 success, 1 the net did not compile or a file could not be read or written,
//! 2 usage errors.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pnet_bundle::Bundle;
use pnet_driver::args::{COMPILER_OPTIONS_HELP, option_value, split_flag, take_compiler_option};
use pnet_driver::{ColorMode, load_net};
use pnet2dot::{Options, Sources, Trace};

const USAGE: &str = "\
pnet2dot: draw a Petri net for Graphviz

Usage: pnet2dot [OPTIONS] [NET]
       pnet2dot [OPTIONS] -i NET -o FILE

NET is a bundle written by pnetc (.pnet), an .xpnet file, compiled on the fly, or a workload
description (.workload), lowered to a net and compiled; `-` or nothing reads it from
standard input. The output is a Graphviz digraph: render it with
`dot -Tsvg -o net.svg`.

Options:
  -i, --input FILE         the net (instead of the positional NET)
  -o, --output FILE        write the graph to FILE (default, or `-`: standard output)
      --signature          show the types of places and ports
      --full-signatures    show types with struct types spelled out field by field
      --token              show the initial tokens of places
      --priority           show the priorities of transitions
      --virtual            show virtual places
      --tunnel-connection  show the place-maps (tunnels) between child nets' virtual places
                           and their parents' places
      --not-starts-with P  hide places and transitions whose name starts with P (repeatable)
      --not-ends-with S    hide places and transitions whose name ends with S (repeatable)
      --trace FILE         highlight a counterexample (pnetv --trace-out FILE): its transitions
                           and their arcs in red, numbered by step; a loop in orange
  -V, --version            print the version
  -h, --help               print this help

Drawing: places are ellipses, transitions boxes (rounded: expression, filled: module call,
3-D: multi-target module), child nets that were not inlined clusters with their ports.
Arcs: in solid, read dashed, out with an open (vee) head, out-many doubled, number-of-tokens
dotted, inout one edge with two heads, response purple dashed, tunnel bold dotted.

Trace files: pnetv's JSON object (\"transitions\": names, \"loop\": names), or {\"trace\": [...]}
or a plain array of transition names (or root-net indices, or {\"transition\": name} objects).
";

struct Args {
    input: Option<String>,
    output: Option<String>,
    trace: Option<String>,
    draw: Options,
    compile: pnet_sema::Options,
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("pnet2dot: {msg}\nTry 'pnet2dot --help' for more information.");
    ExitCode::from(2)
}

fn parse_args(argv: &[String]) -> Result<Args, ExitCode> {
    let mut args = Args {
        input: None,
        output: None,
        trace: None,
        draw: Options::default(),
        compile: pnet_sema::Options::default(),
    };
    let mut i = 0;
    let set_input = |input: &mut Option<String>, v: String| -> Result<(), ExitCode> {
        if let Some(old) = input {
            return Err(usage_error(&format!(
                "more than one net ('{old}' and '{v}')"
            )));
        }
        *input = Some(v);
        Ok(())
    };
    while i < argv.len() {
        match take_compiler_option(argv, i, &mut args.compile) {
            Err(msg) => return Err(usage_error(&msg)),
            Ok(n) if n > 0 => {
                i += n;
                continue;
            }
            Ok(_) => {}
        }
        let arg = argv[i].as_str();
        let (flag, inline_value) = split_flag(arg);
        let take_value = |i: &mut usize| -> Result<String, ExitCode> {
            option_value(argv, i, flag, inline_value).map_err(|m| usage_error(&m))
        };
        let no_value = || -> Result<(), ExitCode> {
            match &inline_value {
                Some(_) => Err(usage_error(&format!("{flag} takes no value"))),
                None => Ok(()),
            }
        };
        match flag {
            "-h" | "--help" => {
                println!("{USAGE}\n{COMPILER_OPTIONS_HELP}");
                return Err(ExitCode::SUCCESS);
            }
            "-V" | "--version" => {
                println!("pnet2dot {}", env!("CARGO_PKG_VERSION"));
                return Err(ExitCode::SUCCESS);
            }
            "--signature" => {
                no_value()?;
                args.draw.signature = true;
            }
            "--full-signatures" => {
                no_value()?;
                args.draw.full_signatures = true;
            }
            "--token" => {
                no_value()?;
                args.draw.token = true;
            }
            "--priority" => {
                no_value()?;
                args.draw.priority = true;
            }
            "--virtual" => {
                no_value()?;
                args.draw.show_virtual = true;
            }
            "--tunnel-connection" => {
                no_value()?;
                args.draw.tunnel_connection = true;
            }
            "--not-starts-with" => {
                let v = take_value(&mut i)?;
                args.draw.not_starts_with.push(v);
            }
            "--not-ends-with" => {
                let v = take_value(&mut i)?;
                args.draw.not_ends_with.push(v);
            }
            "--trace" => {
                let v = take_value(&mut i)?;
                if args.trace.replace(v).is_some() {
                    return Err(usage_error("--trace given twice"));
                }
            }
            "-i" | "--input" => {
                let v = take_value(&mut i)?;
                set_input(&mut args.input, v)?;
            }
            "-o" | "--output" => {
                let v = take_value(&mut i)?;
                if args.output.replace(v).is_some() {
                    return Err(usage_error("-o given twice"));
                }
            }
            "-" => set_input(&mut args.input, arg.to_string())?,
            _ if arg.starts_with('-') => {
                return Err(usage_error(&format!("unknown option '{arg}'")));
            }
            _ => set_input(&mut args.input, arg.to_string())?,
        }
        i += 1;
    }
    Ok(args)
}

/// The net and its sources (for conditions), or the exit code.
fn load(args: &Args) -> Result<(Bundle, Sources), ExitCode> {
    let stdin = matches!(args.input.as_deref(), None | Some("-"));
    let (path, bytes) = if stdin {
        if std::io::stdin().is_terminal() {
            return Err(usage_error("no net given"));
        }
        let mut bytes = Vec::new();
        if let Err(e) = std::io::stdin().read_to_end(&mut bytes) {
            eprintln!("pnet2dot: cannot read standard input: {e}");
            return Err(ExitCode::from(1));
        }
        (PathBuf::from("<stdin>"), bytes)
    } else {
        let path = PathBuf::from(args.input.as_deref().unwrap_or_default());
        match std::fs::read(&path) {
            Ok(b) => (path, b),
            Err(e) => {
                eprintln!("pnet2dot: cannot read {}: {e}", path.display());
                return Err(ExitCode::from(1));
            }
        }
    };
    match load_net(&path, &bytes, &args.compile, ColorMode::Auto) {
        // A bundle: read its sources from disk when they are still there.
        Ok((b, files)) if files.is_empty() => {
            let sources = Sources::read_bundle_files(&b);
            Ok((b, sources))
        }
        Ok((b, files)) => {
            let sources = Sources::new(files.iter().map(|f| Some(f.text.to_string())).collect());
            Ok((b, sources))
        }
        Err(msg) => {
            eprintln!("pnet2dot: {msg}");
            Err(ExitCode::from(1))
        }
    }
}

fn read_trace(path: &str) -> Result<Trace, ExitCode> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        eprintln!("pnet2dot: cannot read the trace {path}: {e}");
        ExitCode::from(1)
    })?;
    pnet2dot::parse_trace(&text).map_err(|e| {
        eprintln!("pnet2dot: {path}: not a trace: {e}");
        ExitCode::from(1)
    })
}

fn write_output(output: Option<&str>, dot: &str) -> Result<(), ExitCode> {
    let result = match output {
        None | Some("-") => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            match out.write_all(dot.as_bytes()).and_then(|()| out.flush()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                r => r,
            }
        }
        Some(path) => std::fs::write(Path::new(path), dot),
    };
    result.map_err(|e| {
        eprintln!(
            "pnet2dot: cannot write {}: {e}",
            output.unwrap_or("the graph")
        );
        ExitCode::from(1)
    })
}

fn run(argv: &[String]) -> Result<(), ExitCode> {
    let args = parse_args(argv)?;
    let trace = args.trace.as_deref().map(read_trace).transpose()?;
    let (bundle, sources) = load(&args)?;
    let rendered = pnet2dot::render(&bundle, &sources, &args.draw, trace.as_ref());
    for w in &rendered.warnings {
        eprintln!("pnet2dot: warning: {w}");
    }
    write_output(args.output.as_deref(), &rendered.dot)
}

fn main() -> ExitCode {
    pnet_stdlib::cli::exit_quietly_on_broken_pipe();
    let mut argv = Vec::new();
    for a in std::env::args_os().skip(1) {
        match a.into_string() {
            Ok(s) => argv.push(s),
            Err(a) => {
                return usage_error(&format!("argument '{}' is not UTF-8", a.to_string_lossy()));
            }
        }
    }
    match run(&argv) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}
