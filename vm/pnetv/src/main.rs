//! `pnetv`: the Petri net verifier.
//!
//! Exit codes: 0 the analysis is complete and found no deadlock and no unbounded place;
//! 1 the input could not be read, parsed or compiled, or the analysis failed; 2 usage
//! errors; 3 a deadlock or an unbounded place was found (a counterexample is printed);
//! 4 the analysis stopped at a limit (`--max-states`, `--max-memory`, `--max-tokens`) without finding either.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use pnet_bundle::Bundle;
use pnet_stdlib::Value;
use pnet_stdlib::errln;
use pnet_verify::Reduction;
use pnet_verify::coloured::{ColouredOptions, ColouredResult, explore_bundle};
use pnet_verify::pt::{PtAnalysis, analyse_pt};
use pnet_verify::report::Report;
use pnetc::args::{CompilerArgs, parse_put_arg};
use pnetc::{ColorMode, load_net, parse_value};

const AFTER_HELP: &str = "\
Exit codes: 0 verified (complete, no deadlock, bounded); 1 input or analysis error; 2 usage;
3 a deadlock or an unbounded place was found; 4 stopped at a limit without a violation.

Examples:
  pnetv model.pnml                         verify a P/T net of the Model Checking Contest
  pnetv net.xpnet -p 'n=3L' --json         verify a coloured net for one input token
  pnetv net.pnet --trace-out t.json        write the first counterexample (pnet2dot --trace)";

/// pnetv: verify a Petri net by exploring its state space
///
/// NET is a Place/Transition net in PNML (.pnml, the Model Checking Contest's format), a bundle
/// written by pnetc (.pnet), an .xpnet file, compiled on the fly, or a workload description
/// (.workload), lowered to a net and compiled.
///
/// Reports: states and edges of the reachability graph; deadlocks (dead markings that are not a
/// proper end: for coloured nets, tokens left on places some transition consumes from; for P/T
/// nets every dead marking); bounds per place and unboundedness (coverability witness); 1-safety;
/// dead transitions; termination; liveness (P/T nets); place and transition invariants; and a
/// shortest counterexample for each violation, with transition names and source locations.
///
/// Coloured nets: tokens carry values; generator places, shared values (clean-up on the sink
/// place when the last reference disappears), number-of-tokens, priorities and child nets that
/// were not inlined (their transitions interleave with the parent's and are named
/// parent/child in traces) run as in the engine. Module calls fire atomically; their outputs
/// are unknown unless assumed (--assume), which makes the verdicts over-approximations. The
/// report lists the out ports' tokens at each proper end; for exact state spaces it also
/// reports liveness.
#[derive(Parser)]
#[command(name = "pnetv", version, after_help = AFTER_HELP)]
struct Cli {
    /// The net: .pnml, .pnet, .xpnet or .workload
    #[arg(value_name = "NET")]
    net: PathBuf,
    /// Put a token on input port PORT (coloured nets); repeatable
    #[arg(short = 'p', long = "put", value_name = "PORT=VALUE", value_parser = parse_put_arg)]
    puts: Vec<(String, Value)>,
    /// Module call T's output PORT takes one of these values (one successor each); without
    /// it the output is an unknown token and verdicts become over-approximations (see the
    /// report's notes)
    #[arg(long, value_name = "T.PORT=V1,V2,...", value_parser = parse_assume)]
    assume: Vec<(String, String, Vec<Value>)>,
    /// A client puts these tokens on put_token place PLACE of the root net, in this order;
    /// repeatable, all --external values form one sequence in command-line order; each may
    /// arrive at any moment while the job runs (traces show "external put of V on PLACE");
    /// without it no external token ever arrives, and dead markings a put_token would
    /// continue are reported as waiting
    #[arg(long, value_name = "PLACE=V1,V2,...", value_parser = parse_external)]
    external: Vec<External>,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
    /// Stop after N states (verdicts that need the whole state space become unknown);
    /// coloured nets default to 1000000
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    max_states: Option<u64>,
    /// Stop when the states kept take more than MIB MiB (verdicts that need the whole state
    /// space become unknown); default: half of this machine's memory
    #[arg(long, value_name = "MIB", value_parser = at_least_one)]
    max_memory: Option<u64>,
    /// Do not expand markings with more than N tokens on a place
    #[arg(long, value_name = "N")]
    max_tokens: Option<u64>,
    /// Stubborn-set reduction: fewer states, exact deadlock verdict; the other verdicts are
    /// not computed (P/T nets)
    #[arg(long, overrides_with = "no_reduction")]
    stubborn: bool,
    /// Explore the full reachability graph (the default)
    #[arg(long, overrides_with = "stubborn")]
    no_reduction: bool,
    /// Skip the SCC pass (termination, liveness)
    #[arg(long)]
    no_scc: bool,
    /// Skip the place/transition invariants
    #[arg(long, overrides_with = "invariants")]
    no_invariants: bool,
    /// Compute every place/transition invariant whatever it costs (by default they get a
    /// work budget in proportion to the state space and are left out past it)
    #[arg(long, overrides_with = "no_invariants")]
    invariants: bool,
    /// Smaller state index for P/T nets whose markings pack into 12 bytes or less (8-byte
    /// slots instead of 16: about 40% less memory per state, slower lookups; same results)
    #[arg(long)]
    compact: bool,
    /// Counterexamples for the N nearest deadlocks
    #[arg(long, value_name = "N", default_value_t = 1)]
    traces: usize,
    /// Write the first counterexample as a JSON trace (pnet2dot --trace)
    #[arg(long, value_name = "FILE")]
    trace_out: Option<PathBuf>,
    /// Print the analysis time and states per second on stderr
    #[arg(long)]
    time: bool,
    /// Threads exploring P/T nets whose markings fit one bit per place in at most 12 bytes
    /// (96 places; not with --compact): levels of at least 8192 states are expanded by every
    /// thread through one shared state index, same results; slices go back to one thread
    /// while the other cores are busy. Default: the number of cores (at most 256)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    threads: Option<u32>,
    #[command(flatten)]
    compile: CompilerArgs,
}

/// The tokens of one `--external PLACE=V1,V2,...`.
#[derive(Clone)]
struct External(Vec<(String, Value)>);

struct Args {
    /// The net's file name, for messages.
    net: String,
    net_path: PathBuf,
    puts: Vec<(String, Value)>,
    assume: Vec<(String, String, Vec<Value>)>,
    external: Vec<(String, Value)>,
    json: bool,
    max_states: Option<u64>,
    /// `--max-memory` in MiB.
    max_memory: Option<u64>,
    max_tokens: Option<u64>,
    reduction: Reduction,
    scc: bool,
    invariants: bool,
    all_invariants: bool,
    compact: bool,
    traces: usize,
    trace_out: Option<PathBuf>,
    time: bool,
    threads: usize,
    compile: pnet_sema::Options,
}

/// Splits `V1,V2,...` into literals (commas at nesting depth 0, outside brackets and quotes).
fn parse_values(what: &str, values: &str) -> Result<Vec<Value>, String> {
    let mut vals = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0usize);
    let bytes = values.as_bytes();
    for i in 0..=bytes.len() {
        let c = bytes.get(i).copied();
        match c {
            Some(b'"') => quoted = !quoted,
            Some(b'[' | b'(' | b'{') if !quoted => depth += 1,
            Some(b']' | b')' | b'}') if !quoted => depth -= 1,
            Some(b',') | None if !quoted && depth == 0 => {
                let v = values[start..i].trim();
                if !v.is_empty() {
                    vals.push(parse_value(what, v)?);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    Ok(vals)
}

fn parse_assume(s: &str) -> Result<(String, String, Vec<Value>), String> {
    let Some((lhs, values)) = s.split_once('=') else {
        return Err(format!(
            "--assume '{s}': expected TRANSITION.PORT=V1,V2,..."
        ));
    };
    let Some((t, port)) = lhs.rsplit_once('.') else {
        return Err(format!(
            "--assume '{s}': expected TRANSITION.PORT before '='"
        ));
    };
    let vals = parse_values(&format!("--assume {lhs}"), values)?;
    if vals.is_empty() {
        return Err(format!("--assume '{s}': no values"));
    }
    Ok((t.to_string(), port.to_string(), vals))
}

/// `PLACE=V1,V2,...`: tokens a client puts on a put_token place, in this order.
fn parse_external(s: &str) -> Result<External, String> {
    let Some((place, values)) = s.split_once('=') else {
        return Err(format!("--external '{s}': expected PLACE=V1,V2,..."));
    };
    let place = place.trim();
    if place.is_empty() {
        return Err(format!("--external '{s}': no place before '='"));
    }
    let vals = parse_values(&format!("--external {place}"), values)?;
    if vals.is_empty() {
        return Err(format!("--external '{s}': no values"));
    }
    Ok(External(
        vals.into_iter().map(|v| (place.to_string(), v)).collect(),
    ))
}

fn parse_args() -> Args {
    let cli = pnet_stdlib::parse_args!(Cli, "pnetv", pnetc::args::args_os());
    Args {
        net: cli.net.display().to_string(),
        net_path: cli.net,
        puts: cli.puts,
        assume: cli.assume,
        external: cli.external.into_iter().flat_map(|e| e.0).collect(),
        json: cli.json,
        max_states: cli.max_states,
        max_memory: cli.max_memory,
        max_tokens: cli.max_tokens,
        reduction: if cli.stubborn {
            Reduction::Stubborn
        } else {
            Reduction::None
        },
        scc: !cli.no_scc,
        invariants: !cli.no_invariants,
        all_invariants: cli.invariants,
        compact: cli.compact,
        traces: cli.traces,
        trace_out: cli.trace_out,
        time: cli.time,
        threads: cli.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get().min(256)),
            |n| n as usize,
        ),
        compile: cli.compile.options(),
    }
}

enum Input {
    Pnml(pnet_verify::PtNet),
    Bundle(Bundle),
}

fn fail(msg: String) -> ExitCode {
    errln!("pnetv: {msg}");
    ExitCode::from(1)
}

fn load(args: &Args) -> Result<Input, ExitCode> {
    let path = args.net_path.as_path();
    if path.is_dir() {
        // A Model Checking Contest model is a folder; tools there take the folder.
        let model = path.join("model.pnml");
        return Err(fail(if model.is_file() {
            format!(
                "{} is a directory; NET is a file: pnetv {}",
                path.display(),
                model.display()
            )
        } else {
            format!(
                "{} is a directory; NET is a file (.pnml, .pnet, .xpnet or .workload)",
                path.display()
            )
        }));
    }
    let bytes = pnet_stdlib::input::read_file(path, pnet_stdlib::input::MAX_SOURCE_BYTES)
        .map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return Err(fail(format!(
            "{} is gzip-compressed; decompress it first: gunzip -k {}",
            path.display(),
            path.display()
        )));
    }
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let text = String::from_utf8_lossy(&bytes);
    let looks_pnml = ext.eq_ignore_ascii_case("pnml")
        || text
            .get(..4096.min(text.len()))
            .is_some_and(|h| h.contains("<pnml"));
    if looks_pnml {
        return match pnet_verify::parse_pnml(&text) {
            Ok(net) => Ok(Input::Pnml(net)),
            Err(errors) => {
                for e in &errors {
                    errln!("{}:{e}", path.display());
                }
                Err(fail(format!(
                    "{} is not a valid P/T net in PNML",
                    path.display()
                )))
            }
        };
    }
    load_net(path, &bytes, &args.compile, ColorMode::Auto)
        .map(|(bundle, _)| Input::Bundle(bundle))
        .map_err(fail)
}

/// A count or size of at least 1 (`--max-states 0` or `--max-memory 0` would stop before the
/// first state).
fn at_least_one(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("must be at least 1 (0 would stop before the first state)".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

/// `--max-memory` in bytes, or the default (half of the machine's memory).
fn max_memory(args: &Args) -> u64 {
    args.max_memory
        .map_or_else(pnet_verify::default_max_memory, |mib| {
            mib.saturating_mul(1 << 20)
        })
}

fn analyse(args: &Args, input: &Input) -> Result<(Report, Option<ColouredResult>), String> {
    match input {
        Input::Pnml(net) => {
            if !args.puts.is_empty() || !args.assume.is_empty() || !args.external.is_empty() {
                return Err("-p/--put, --assume and --external apply to coloured nets only".into());
            }
            let cfg = PtAnalysis {
                explore: pnet_verify::PtOptions {
                    max_states: args.max_states,
                    max_tokens: args.max_tokens,
                    reduction: args.reduction,
                    compact_index: args.compact,
                    max_memory: Some(max_memory(args)),
                    threads: args.threads,
                },
                traces: args.traces,
                graph: args.scc,
                invariants: args.invariants,
                all_invariants: args.all_invariants,
            };
            analyse_pt(net, &args.net, &cfg).map(|r| (r, None))
        }
        Input::Bundle(b) => {
            if args.reduction == Reduction::Stubborn {
                return Err("--stubborn applies to P/T nets only".into());
            }
            let mut inputs: Vec<(String, Vec<Value>)> = Vec::new();
            for (port, v) in &args.puts {
                match inputs.iter_mut().find(|(p, _)| p == port) {
                    Some((_, vs)) => vs.push(v.clone()),
                    None => inputs.push((port.clone(), vec![v.clone()])),
                }
            }
            let opts = ColouredOptions {
                max_states: args
                    .max_states
                    .unwrap_or(ColouredOptions::default().max_states),
                max_tokens: args.max_tokens,
                traces: args.traces,
                assume: args.assume.clone(),
                external: args.external.clone(),
                scc: args.scc,
                max_memory: Some(max_memory(args)),
                ..ColouredOptions::default()
            };
            explore_bundle(b, &args.net, &inputs, &opts).map(|(r, res)| (r, Some(res)))
        }
    }
}

/// The out ports' tokens at the proper ends, as JSON: a list of `{port: [tokens]}`.
fn end_outputs_json(c: &ColouredResult) -> serde_json::Value {
    let ends: Vec<serde_json::Value> = c
        .end_outputs
        .iter()
        .map(|end| {
            let m: serde_json::Map<String, serde_json::Value> = end
                .iter()
                .map(|(port, toks)| {
                    let ts: Vec<String> = toks.iter().map(|t| t.to_string()).collect();
                    (port.clone(), serde_json::json!(ts))
                })
                .collect();
            serde_json::Value::Object(m)
        })
        .collect();
    serde_json::json!(ends)
}

/// The out ports' tokens at the proper ends, for the terminal (at most 10).
fn end_outputs_text(c: &ColouredResult) -> String {
    if c.end_outputs.is_empty() {
        return String::new();
    }
    let n = c.end_outputs.len();
    let mut s = format!(
        "\nproper end outputs ({n}{} distinct):\n",
        if c.end_outputs_complete { "" } else { "+" }
    );
    for end in c.end_outputs.iter().take(10) {
        let ports: Vec<String> = end
            .iter()
            .map(|(port, toks)| {
                let ts: Vec<String> = toks.iter().map(|t| t.to_string()).collect();
                format!("{port} = [{}]", ts.join(", "))
            })
            .collect();
        let line = if ports.is_empty() {
            "(no out ports)".to_string()
        } else {
            ports.join("; ")
        };
        s.push_str(&format!("  {line}\n"));
    }
    if n > 10 {
        s.push_str(&format!("  ... ({} more, see --json)\n", n - 10));
    }
    s
}

fn main() -> ExitCode {
    pnet_stdlib::cli::exit_quietly_on_broken_pipe();
    let args = parse_args();
    // A --trace-out that cannot be written is said before an analysis that may take hours.
    if let Some(file) = &args.trace_out {
        let parent = file.parent().filter(|p| !p.as_os_str().is_empty());
        if file.is_dir() {
            return fail(format!("--trace-out {}: is a directory", file.display()));
        }
        if let Some(dir) = parent.filter(|d| !d.is_dir()) {
            return fail(format!(
                "--trace-out {}: no directory {}",
                file.display(),
                dir.display()
            ));
        }
    }
    let input = match load(&args) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let start = Instant::now();
    let (report, coloured) = match analyse(&args, &input) {
        Ok(r) => r,
        Err(e) => return fail(format!("{}: {e}", args.net)),
    };
    let secs = start.elapsed().as_secs_f64();
    if args.time {
        errln!(
            "pnetv: {} states, {} edges in {:.3} s ({:.0} states/s)",
            report.states,
            report.edges,
            secs,
            report.states as f64 / secs.max(1e-9)
        );
    }
    // A trace that cannot be written still leaves the report (then exit 1).
    let mut trace_error = None;
    if let Some(file) = &args.trace_out {
        match report.traces.first() {
            Some(t) => {
                let doc = report.trace_json(t);
                let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
                trace_error = pnet_stdlib::cli::write_file(file, text + "\n").err();
            }
            None => errln!("pnetv: no counterexample: {} not written", file.display()),
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if args.json {
        let mut doc = report.to_json();
        doc["seconds"] = serde_json::json!(secs);
        if let Some(c) = &coloured {
            doc["end_outputs"] = end_outputs_json(c);
            doc["end_outputs_complete"] = serde_json::json!(c.end_outputs_complete);
            doc["waiting_markings"] = serde_json::json!(c.waiting);
        }
        writeln!(out, "{doc}")
    } else {
        let mut text = report.to_text();
        if let Some(c) = &coloured {
            text.push_str(&end_outputs_text(c));
        }
        write!(out, "{text}")
    };
    if let Err(e) = written
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return fail(format!("cannot write the report: {e}"));
    }
    if let Some(e) = trace_error {
        return fail(e);
    }
    if report.violated() {
        ExitCode::from(3)
    } else if !report.complete {
        ExitCode::from(4)
    } else {
        ExitCode::SUCCESS
    }
}
