//! `pnetv`: the Petri net verifier.
//!
//! Exit codes: 0 the analysis is complete and found no deadlock and no unbounded place;
//! 1 the input could not be read, parsed or compiled, or the analysis failed; 2 usage
//! errors; 3 a deadlock or an unbounded place was found (a counterexample is printed);
//! 4 the analysis stopped at a limit (`--max-states`, `--max-memory`, `--max-tokens`) without finding either.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use pnet_bundle::Bundle;
use pnet_driver::args::{
    COMPILER_OPTIONS_HELP, option_value, parse_number, split_flag, take_compiler_option,
};
use pnet_driver::{ColorMode, load_net, parse_put, parse_value};
use pnet_stdlib::Value;
use pnet_verify::Reduction;
use pnet_verify::coloured::{ColouredOptions, ColouredResult, explore_bundle};
use pnet_verify::pt::{PtAnalysis, analyse_pt};
use pnet_verify::report::Report;

const USAGE: &str = "\
pnetv: verify a Petri net by exploring its state space

Usage: pnetv [OPTIONS] NET

NET is a Place/Transition net in PNML (.pnml, the Model Checking Contest's format), a bundle
written by pnetc (.pnet), an .xpnet file, compiled on the fly, or a workload description
(.workload), lowered to a net and compiled.

Reports: states and edges of the reachability graph; deadlocks (dead markings that are not a
proper end: for coloured nets, tokens left on places some transition consumes from; for P/T
nets every dead marking); bounds per place and unboundedness (coverability witness); 1-safety;
dead transitions; termination; liveness (P/T nets); place and transition invariants; and a
shortest counterexample for each violation, with transition names and source locations.

Coloured nets: tokens carry values; generator places, shared values (clean-up on the sink
place when the last reference disappears), number-of-tokens, priorities and child nets that
were not inlined (their transitions interleave with the parent's and are named
parent/child in traces) run as in the engine. Module calls fire atomically; their outputs
are unknown unless assumed (--assume), which makes the verdicts over-approximations. The
report lists the out ports' tokens at each proper end; for exact state spaces it also
reports liveness.

Options:
  -p, --put PORT=VALUE     put a token on input port PORT (coloured nets); repeatable
      --assume T.PORT=V1,V2,...
                           module call T's output PORT takes one of these values (one
                           successor each); without it the output is an unknown token and
                           verdicts become over-approximations (see the report's notes)
      --external PLACE=V1,V2,...
                           a client puts these tokens on put_token place PLACE of the
                           root net, in this order; repeatable, all --external values form
                           one sequence in command-line order; each may arrive at any
                           moment while the job runs (traces show \"external put of V on
                           PLACE\"); without it no external token ever arrives, and dead
                           markings a put_token would continue are reported as waiting
      --json               print the report as JSON
      --max-states N       stop after N states (verdicts that need the whole state space
                           become unknown); coloured nets default to 1000000
      --max-memory MIB     stop when the states kept take more than MIB MiB (verdicts that
                           need the whole state space become unknown); default: half of
                           this machine's memory
      --max-tokens N       do not expand markings with more than N tokens on a place
      --stubborn           stubborn-set reduction: fewer states, exact deadlock verdict; the
                           other verdicts are not computed (P/T nets)
      --no-reduction       explore the full reachability graph (the default)
      --no-scc             skip the SCC pass (termination, liveness)
      --no-invariants      skip the place/transition invariants
      --compact            smaller state index for P/T nets whose markings pack into 12
                           bytes or less (8-byte slots instead of 16: about 40% less memory
                           per state, slower lookups; same results)
      --traces N           counterexamples for the N nearest deadlocks (default 1)
      --trace-out FILE     write the first counterexample as a JSON trace (pnet2dot --trace)
      --time               print the analysis time and states per second on stderr
  -V, --version            print the version
  -h, --help               print this help

Exit codes: 0 verified (complete, no deadlock, bounded); 1 input or analysis error; 2 usage;
3 a deadlock or an unbounded place was found; 4 stopped at a limit without a violation.
";

struct Args {
    net: String,
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
    compact: bool,
    traces: usize,
    trace_out: Option<String>,
    time: bool,
    compile: pnet_sema::Options,
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("pnetv: {msg}\nTry 'pnetv --help' for more information.");
    ExitCode::from(2)
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
fn parse_external(s: &str) -> Result<Vec<(String, Value)>, String> {
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
    Ok(vals.into_iter().map(|v| (place.to_string(), v)).collect())
}

fn parse_args(argv: &[String]) -> Result<Args, ExitCode> {
    let mut a = Args {
        net: String::new(),
        puts: Vec::new(),
        assume: Vec::new(),
        external: Vec::new(),
        json: false,
        max_states: None,
        max_memory: None,
        max_tokens: None,
        reduction: Reduction::None,
        scc: true,
        invariants: true,
        compact: false,
        traces: 1,
        trace_out: None,
        time: false,
        compile: pnet_sema::Options::default(),
    };
    let mut net = None;
    let mut i = 0;
    while i < argv.len() {
        match take_compiler_option(argv, i, &mut a.compile) {
            Err(msg) => return Err(usage_error(&msg)),
            Ok(n) if n > 0 => {
                i += n;
                continue;
            }
            Ok(_) => {}
        }
        let arg = argv[i].as_str();
        let (flag, inline_value) = match split_flag(arg) {
            ("--assume" | "--external", Some(_)) => (arg, None),
            split => split,
        };
        let take_value = |i: &mut usize| -> Result<String, ExitCode> {
            option_value(argv, i, flag, inline_value).map_err(|m| usage_error(&m))
        };
        let number = |v: &str| -> Result<u64, ExitCode> {
            parse_number(flag, v).map_err(|m| usage_error(&m))
        };
        match flag {
            "-h" | "--help" => {
                println!("{USAGE}\n{COMPILER_OPTIONS_HELP}");
                return Err(ExitCode::SUCCESS);
            }
            "-V" | "--version" => {
                println!("pnetv {}", env!("CARGO_PKG_VERSION"));
                return Err(ExitCode::SUCCESS);
            }
            "-p" | "--put" => {
                let v = take_value(&mut i)?;
                a.puts.push(parse_put(&v).map_err(|m| usage_error(&m))?);
            }
            "--assume" => {
                let v = take_value(&mut i)?;
                a.assume
                    .push(parse_assume(&v).map_err(|m| usage_error(&m))?);
            }
            "--external" => {
                let v = take_value(&mut i)?;
                a.external
                    .extend(parse_external(&v).map_err(|m| usage_error(&m))?);
            }
            _ if arg.starts_with("--external=") => {
                a.external.extend(
                    parse_external(&arg["--external=".len()..]).map_err(|m| usage_error(&m))?,
                );
            }
            _ if arg.starts_with("--assume=") => {
                a.assume
                    .push(parse_assume(&arg["--assume=".len()..]).map_err(|m| usage_error(&m))?);
            }
            "--json" => a.json = true,
            "--max-states" => a.max_states = Some(number(&take_value(&mut i)?)?),
            "--max-memory" => a.max_memory = Some(number(&take_value(&mut i)?)?),
            "--max-tokens" => a.max_tokens = Some(number(&take_value(&mut i)?)?),
            "--traces" => a.traces = number(&take_value(&mut i)?)? as usize,
            "--stubborn" => a.reduction = Reduction::Stubborn,
            "--no-reduction" => a.reduction = Reduction::None,
            "--no-scc" => a.scc = false,
            "--no-invariants" => a.invariants = false,
            "--compact" => a.compact = true,
            "--time" => a.time = true,
            "--trace-out" => a.trace_out = Some(take_value(&mut i)?),
            _ if arg.starts_with("-p") && arg.len() > 2 => {
                a.puts
                    .push(parse_put(&arg[2..]).map_err(|m| usage_error(&m))?);
            }
            _ if arg.starts_with('-') && arg != "-" => {
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
    a.net = net;
    Ok(a)
}

enum Input {
    Pnml(pnet_verify::PtNet),
    Bundle(Bundle),
}

fn fail(msg: String) -> ExitCode {
    eprintln!("pnetv: {msg}");
    ExitCode::from(1)
}

fn load(args: &Args) -> Result<Input, ExitCode> {
    let path = Path::new(&args.net);
    let bytes =
        std::fs::read(path).map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?;
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
                    eprintln!("{}:{e}", path.display());
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
                },
                traces: args.traces,
                graph: args.scc,
                invariants: args.invariants,
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
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
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
        eprintln!(
            "pnetv: {} states, {} edges in {:.3} s ({:.0} states/s)",
            report.states,
            report.edges,
            secs,
            report.states as f64 / secs.max(1e-9)
        );
    }
    if let Some(file) = &args.trace_out {
        match report.traces.first() {
            Some(t) => {
                let doc = report.trace_json(t);
                let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
                if let Err(e) = std::fs::write(file, text + "\n") {
                    return fail(format!("cannot write {file}: {e}"));
                }
            }
            None => eprintln!("pnetv: no counterexample: {file} not written"),
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
    if report.violated() {
        ExitCode::from(3)
    } else if !report.complete {
        ExitCode::from(4)
    } else {
        ExitCode::SUCCESS
    }
}
