//! `gspc-topology`: validate, expand, count and compare DDS topology files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use pnet_dds::{Diagnostic, ParseOptions, Topology};
use pnet_diagnostics::render::render_to_stderr;
use pnet_diagnostics::{ColorMode, LineIndex, RenderFile};
use serde_json::{Value, json};

/// Validate, expand, count and compare DDS topology files (FairRootGroup/DDS's XML).
///
/// Exit status: 0 when every file is valid, 1 when a file is invalid or cannot be read, 2 for
/// a wrong command line. Diagnostics go to standard error as `file:line:col` with a stable
/// code (with --json they are part of the JSON on standard output).
#[derive(Parser, Debug)]
#[command(
    name = "gspc-topology",
    version,
    max_term_width = 100,
    after_help = "Examples:
  gspc-topology validate topology.xml
  gspc-topology expand --json topology.xml       every task instance: id, path, indices
  gspc-topology diff old.xml new.xml             removed and added tasks and collections"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check topology files against the schema and DDS's rules.
    Validate {
        /// Topology files.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Check the raw text against the schema: no ${var} substitution.
        #[arg(long)]
        raw: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Print every task instance (id, path), then every collection instance.
    Expand {
        /// A topology file.
        file: PathBuf,
        #[command(flatten)]
        common: Common,
    },
    /// Count tasks, collections, instances per declaration and the agents needed.
    Count {
        /// Topology files.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Slots per agent for the number of required agents.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        slots: u64,
        #[command(flatten)]
        common: Common,
    },
    /// Print the number of agents with N slots that the topology needs:
    /// ceil(tasks / max(N, largest collection)).
    RequiredAgents {
        /// Slots per agent.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        slots: u64,
        /// A topology file.
        file: PathBuf,
        #[command(flatten)]
        common: Common,
    },
    /// Compare two topologies by instance id: removed and added tasks and collections.
    Diff {
        /// The old topology.
        old: PathBuf,
        /// The new topology.
        new: PathBuf,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Args, Debug)]
struct Common {
    /// Print JSON (stable keys) on standard output.
    #[arg(long)]
    json: bool,
    /// Set (or override) the variable NAME used as ${NAME}.
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
    vars: Vec<(String, String)>,
    /// Colours in diagnostics.
    #[arg(long, value_enum, default_value_t = ColorMode::Auto)]
    color: ColorMode,
}

fn parse_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("expected NAME=VALUE, found `{s}`")),
    }
}

/// A file read and parsed.
struct Loaded {
    origin: String,
    text: String,
    topology: Option<Topology>,
    diagnostics: Vec<Diagnostic>,
}

impl Loaded {
    fn valid(&self) -> bool {
        self.topology.is_some() && !pnet_diagnostics::has_errors(&self.diagnostics)
    }
}

fn load(path: &Path, options: &ParseOptions) -> Loaded {
    let origin = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => {
            let (topology, diagnostics) = pnet_dds::parse_bytes(&bytes, options);
            Loaded {
                origin,
                text: String::from_utf8_lossy(&bytes).into_owned(),
                topology,
                diagnostics,
            }
        }
        Err(e) => Loaded {
            origin,
            text: String::new(),
            topology: None,
            diagnostics: vec![Diagnostic::error_at(
                "dds-read",
                0..0,
                format!("cannot read the file: {e}"),
            )],
        },
    }
}

/// Renders the diagnostics of a file to standard error (the compiler's renderer: long lines
/// as windows, at most 50 errors and 50 warnings per file).
fn render(loaded: &Loaded, color: ColorMode) {
    if loaded.diagnostics.is_empty() {
        return;
    }
    let file = RenderFile {
        name: &loaded.origin,
        text: &loaded.text,
    };
    render_to_stderr(&[file], &loaded.diagnostics, color);
}

fn diagnostics_json(loaded: &Loaded) -> Value {
    let lines = LineIndex::new(&loaded.text);
    let list: Vec<Value> = loaded
        .diagnostics
        .iter()
        .map(|d| {
            let span = d.range();
            let (line, column) = lines.line_col(&loaded.text, span.start);
            let (end_line, end_column) = lines.line_col(&loaded.text, span.end);
            json!({
                "code": d.code,
                "severity": d.severity.to_string(),
                "message": d.message,
                "file": loaded.origin,
                "line": line,
                "column": column,
                "end_line": end_line,
                "end_column": end_column,
                "start": span.start,
                "end": span.end,
                "notes": d.notes,
            })
        })
        .collect();
    Value::Array(list)
}

fn file_json(loaded: &Loaded) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("file".into(), json!(loaded.origin));
    m.insert("valid".into(), json!(loaded.valid()));
    m.insert("diagnostics".into(), diagnostics_json(loaded));
    m
}

fn print_json(v: &Value) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => pnet_stdlib::outln!("{s}"),
        Err(e) => eprintln!("gspc-topology: cannot write JSON: {e}"),
    }
}

/// `` / ` (1 error, 2 warnings)`.
fn tally(errors: usize, warnings: usize) -> String {
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    match (errors, warnings) {
        (0, 0) => String::new(),
        (0, w) => format!(" ({})", plural(w, "warning")),
        (e, 0) => format!(" ({})", plural(e, "error")),
        (e, w) => format!(" ({}, {})", plural(e, "error"), plural(w, "warning")),
    }
}

fn options(common: &Common, raw: bool) -> ParseOptions {
    ParseOptions {
        vars: common.vars.clone(),
        substitute: !raw,
    }
}

fn status(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Validate { files, raw, common } => {
            let opts = options(&common, raw);
            let loaded: Vec<Loaded> = files.iter().map(|f| load(f, &opts)).collect();
            let ok = loaded.iter().all(Loaded::valid);
            if common.json {
                let list: Vec<Value> = loaded
                    .iter()
                    .map(|l| {
                        let mut m = file_json(l);
                        let errors = l.diagnostics.iter().filter(|d| d.is_error()).count();
                        m.insert("errors".into(), json!(errors));
                        m.insert("warnings".into(), json!(l.diagnostics.len() - errors));
                        Value::Object(m)
                    })
                    .collect();
                print_json(&json!({ "valid": ok, "files": list }));
            } else {
                for l in &loaded {
                    render(l, common.color);
                    let errors = l.diagnostics.iter().filter(|d| d.is_error()).count();
                    let warnings = l.diagnostics.len() - errors;
                    if l.valid() {
                        pnet_stdlib::outln!("{}: valid{}", l.origin, tally(0, warnings));
                    } else {
                        pnet_stdlib::outln!("{}: invalid{}", l.origin, tally(errors, warnings));
                    }
                }
            }
            status(ok)
        }
        Command::Expand { file, common } => {
            let l = load(&file, &options(&common, false));
            let Some(topology) = l.topology.as_ref().filter(|_| l.valid()) else {
                return invalid(&l, &common);
            };
            // Written as it is made: millions of instances need no more memory than a few.
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let written = if common.json {
                pnet_dds::write_expansion_json(topology, &file_json(&l), &mut out)
            } else {
                render(&l, common.color);
                pnet_dds::write_expansion_text(topology, &mut out)
            }
            // What the buffer still holds must reach the file too.
            .and_then(|()| std::io::Write::flush(&mut out));
            match written {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(141),
                Err(e) => {
                    eprintln!("gspc-topology: cannot write the expansion: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Count {
            files,
            slots,
            common,
        } => {
            let opts = options(&common, false);
            let loaded: Vec<Loaded> = files.iter().map(|f| load(f, &opts)).collect();
            let ok = loaded.iter().all(Loaded::valid);
            if common.json {
                let list: Vec<Value> = loaded
                    .iter()
                    .map(|l| {
                        let mut m = file_json(l);
                        if let Some(t) = l.topology.as_ref().filter(|_| l.valid())
                            && let Value::Object(c) = pnet_dds::count(t).to_json(t, slots)
                        {
                            m.extend(c);
                        }
                        Value::Object(m)
                    })
                    .collect();
                print_json(&json!({ "valid": ok, "files": list }));
            } else {
                for l in &loaded {
                    render(l, common.color);
                    match l.topology.as_ref().filter(|_| l.valid()) {
                        Some(t) => {
                            pnet_stdlib::outln!("# {}", l.origin);
                            pnet_stdlib::out!("{}", pnet_dds::count(t).to_text(t, slots));
                        }
                        None => pnet_stdlib::outln!("# {}: invalid", l.origin),
                    }
                }
            }
            status(ok)
        }
        Command::RequiredAgents {
            slots,
            file,
            common,
        } => {
            let l = load(&file, &options(&common, false));
            let Some(t) = l.topology.as_ref().filter(|_| l.valid()) else {
                return invalid(&l, &common);
            };
            let counts = pnet_dds::count(t);
            let agents = counts.required_agents(slots);
            if common.json {
                let mut m = file_json(&l);
                m.insert("slots".into(), json!(slots));
                m.insert("tasks".into(), json!(counts.tasks));
                m.insert(
                    "largest_collection".into(),
                    json!(counts.largest_collection),
                );
                m.insert("required_agents".into(), json!(agents));
                print_json(&Value::Object(m));
            } else {
                render(&l, common.color);
                pnet_stdlib::outln!("{agents}");
            }
            ExitCode::SUCCESS
        }
        Command::Diff { old, new, common } => {
            let opts = options(&common, false);
            let a = load(&old, &opts);
            let b = load(&new, &opts);
            let (Some(ta), Some(tb)) = (
                a.topology.as_ref().filter(|_| a.valid()),
                b.topology.as_ref().filter(|_| b.valid()),
            ) else {
                if common.json {
                    print_json(&json!({
                        "valid": false,
                        "files": [Value::Object(file_json(&a)), Value::Object(file_json(&b))],
                    }));
                } else {
                    render(&a, common.color);
                    render(&b, common.color);
                }
                return ExitCode::from(1);
            };
            let d = pnet_dds::diff(&pnet_dds::expand(ta), &pnet_dds::expand(tb));
            if common.json {
                let mut v = d.to_json();
                if let Value::Object(m) = &mut v {
                    m.insert("old".into(), json!(a.origin));
                    m.insert("new".into(), json!(b.origin));
                }
                print_json(&v);
            } else {
                render(&a, common.color);
                render(&b, common.color);
                pnet_stdlib::out!("{}", d.to_text());
            }
            ExitCode::SUCCESS
        }
    }
}

/// Reports an invalid file (diagnostics on stderr, or JSON) and returns exit status 1.
fn invalid(l: &Loaded, common: &Common) -> ExitCode {
    if common.json {
        print_json(&Value::Object(file_json(l)));
    } else {
        render(l, common.color);
        eprintln!("gspc-topology: {} is invalid", l.origin);
    }
    ExitCode::from(1)
}

fn main() -> ExitCode {
    pnet_stdlib::cli::exit_quietly_on_broken_pipe();
    run(pnet_stdlib::parse_args!(Cli, "gspc-topology"))
}
