//! `pnet2dot`: draws a Petri net for Graphviz.
//!
//! Exit codes: 0 success, 1 the net did not compile or a file could not be read or written,
//! 2 usage errors.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use pnet_bundle::Bundle;
use pnet2dot::{Options, Sources, Trace};
use pnetc::args::CompilerArgs;
use pnetc::{ColorMode, load_net};

const AFTER_HELP: &str = "\
Drawing: places are ellipses, transitions boxes (rounded: expression, filled: module call,
3-D: multi-target module), child nets that were not inlined clusters with their ports.
Arcs: in solid, read dashed, out with an open (vee) head, out-many doubled, number-of-tokens
dotted, inout one edge with two heads, response purple dashed, tunnel bold dotted.

Trace files: pnetv's JSON object (\"transitions\": names, \"loop\": names), or {\"trace\": [...]}
or a plain array of transition names (or root-net indices, or {\"transition\": name} objects).

Examples:
  pnet2dot net.xpnet | dot -Tsvg -o net.svg
  pnetv net.xpnet --trace-out t.json; pnet2dot --trace t.json net.xpnet -o net.dot";

/// pnet2dot: draw a Petri net for Graphviz
///
/// NET is a bundle written by pnetc (.pnet), an .xpnet file, compiled on the fly, or a
/// workload description (.workload), lowered to a net and compiled; `-` or nothing reads it
/// from standard input. The output is a Graphviz digraph, written to -o FILE (without -o, or
/// with `-o -`, to standard output): render it with `dot -Tsvg -o net.svg`.
#[derive(Parser)]
#[command(name = "pnet2dot", version, after_help = AFTER_HELP)]
struct Cli {
    #[command(flatten)]
    io: pnet_stdlib::cli::InputOutput,
    /// Show the types of places and ports
    #[arg(long)]
    signature: bool,
    /// Show types with struct types spelled out field by field
    #[arg(long)]
    full_signatures: bool,
    /// Show the initial tokens of places
    #[arg(long)]
    token: bool,
    /// Show the priorities of transitions
    #[arg(long)]
    priority: bool,
    /// Show virtual places
    #[arg(long = "virtual")]
    show_virtual: bool,
    /// Show the place-maps (tunnels) between child nets' virtual places and their parents'
    /// places
    #[arg(long)]
    tunnel_connection: bool,
    /// Hide places and transitions whose name starts with P (repeatable)
    #[arg(long, value_name = "P")]
    not_starts_with: Vec<String>,
    /// Hide places and transitions whose name ends with S (repeatable)
    #[arg(long, value_name = "S")]
    not_ends_with: Vec<String>,
    /// Highlight a counterexample (pnetv --trace-out FILE): its transitions and their arcs in
    /// red, numbered by step; a loop in orange
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    #[command(flatten)]
    compile: CompilerArgs,
}

struct Args {
    input: Option<PathBuf>,
    output: Option<PathBuf>,
    trace: Option<PathBuf>,
    draw: Options,
    compile: pnet_sema::Options,
}

fn parse_args() -> Args {
    let cli = pnet_stdlib::parse_args!(Cli, "pnet2dot", pnetc::args::args_os());
    Args {
        input: cli.io.input().map(Path::to_path_buf),
        output: cli.io.output,
        trace: cli.trace,
        draw: Options {
            signature: cli.signature,
            full_signatures: cli.full_signatures,
            token: cli.token,
            priority: cli.priority,
            show_virtual: cli.show_virtual,
            tunnel_connection: cli.tunnel_connection,
            not_starts_with: cli.not_starts_with,
            not_ends_with: cli.not_ends_with,
        },
        compile: cli.compile.options(),
    }
}

/// The net and its sources (for conditions), or the exit code.
fn load(args: &Args) -> Result<(Bundle, Sources), ExitCode> {
    let stdin = args.input.as_deref().is_none_or(|p| p == Path::new("-"));
    let (path, bytes) = if stdin {
        if std::io::stdin().is_terminal() {
            pnet_stdlib::cli::usage_exit("pnet2dot", "no net given");
        }
        match pnet_stdlib::input::read_limited(
            std::io::stdin(),
            pnet_stdlib::input::MAX_SOURCE_BYTES,
        ) {
            Ok(bytes) => (PathBuf::from("<stdin>"), bytes),
            Err(e) => {
                pnet_stdlib::errln!("pnet2dot: cannot read standard input: {e}");
                return Err(ExitCode::from(1));
            }
        }
    } else {
        let path = args.input.clone().unwrap_or_default();
        match pnet_stdlib::input::read_file(&path, pnet_stdlib::input::MAX_SOURCE_BYTES) {
            Ok(b) => (path, b),
            Err(e) => {
                pnet_stdlib::errln!("pnet2dot: cannot read {}: {e}", path.display());
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
            pnet_stdlib::errln!("pnet2dot: {msg}");
            Err(ExitCode::from(1))
        }
    }
}

fn read_trace(path: &Path) -> Result<Trace, ExitCode> {
    let path_text = path.display();
    let text =
        pnet_stdlib::input::read_text(path, pnet_stdlib::input::MAX_SOURCE_BYTES).map_err(|e| {
            pnet_stdlib::errln!("pnet2dot: cannot read the trace {path_text}: {e}");
            ExitCode::from(1)
        })?;
    pnet2dot::parse_trace(&text).map_err(|e| {
        pnet_stdlib::errln!("pnet2dot: {path_text}: not a trace: {e}");
        ExitCode::from(1)
    })
}

fn write_output(output: Option<&Path>, dot: &str) -> Result<(), ExitCode> {
    let result = match output {
        None => {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            match out.write_all(dot.as_bytes()).and_then(|()| out.flush()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                r => r,
            }
        }
        Some(path) => {
            return pnet_stdlib::cli::write_file(path, dot).map_err(|e| {
                pnet_stdlib::errln!("pnet2dot: {e}");
                ExitCode::from(1)
            });
        }
    };
    result.map_err(|e| {
        pnet_stdlib::errln!("pnet2dot: cannot write the graph: {e}");
        ExitCode::from(1)
    })
}

fn run() -> Result<(), ExitCode> {
    let args = parse_args();
    let trace = args.trace.as_deref().map(read_trace).transpose()?;
    let (bundle, sources) = load(&args)?;
    let rendered = pnet2dot::render(&bundle, &sources, &args.draw, trace.as_ref());
    for w in &rendered.warnings {
        pnet_stdlib::errln!("pnet2dot: warning: {w}");
    }
    let output = args.output.as_deref().filter(|o| *o != Path::new("-"));
    write_output(output, &rendered.dot)
}

fn main() -> ExitCode {
    pnet_stdlib::cli::exit_quietly_on_broken_pipe();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}
