//! The run command: compile (if needed), plan the workers, run the job through the agent,
//! print the output tokens.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use pnet_bundle::Bundle;
use pnet_launch::cli::WorkerArgs;
use pnet_stdlib::Value;
use pnetc::args::{CompilerArgs, parse_put_arg};
use pnetc::{ColorMode, load_net};

use crate::{topo, usage_error};

const AFTER_HELP: &str = "\
Output: one line `PORT = VALUE` per output token, ports in alphabetical order, the tokens of
a port in the value order of the language. A net that stops early gets a warning on stderr
after them: `gspc-run: warning: the net stopped with tokens left on: p (2), q (1); out port
`r` is empty; transition `t` lacked a token on `x`` (inner places of the root net only; a
place that transitions only read keeps its tokens silently). Before the run, every in port
that got no -p value and that nothing in the net puts a token on is named on stderr.

Exit codes: 0 success, 1 the net did not compile or the run failed, 2 usage errors, 3 the
net stopped with an out port empty or tokens left (only with --require-outputs), 130
cancelled (Ctrl-C), 143 cancelled by SIGTERM.

Examples:
  gspc-run examples/hello/hello.xpnet -p 'name=\"world\"'
  gspc-run net.pnet --topology 'compute:4' --module-path build --result out.result
  gspc-run --control job.sock net.xpnet &  gspc-run put-token --control job.sock 'p=1L'";

/// gspc-run: run a Petri net on workers and print its output tokens
///
/// NET is a bundle written by pnetc (.pnet) or an .xpnet file, compiled on the fly.
/// Expression transitions fire inside the agent; module calls run on workers started from the
/// topology. A net without module calls runs without starting workers.
#[derive(Parser)]
#[command(
    name = "gspc-run",
    version,
    after_help = AFTER_HELP,
    override_usage = "gspc-run [OPTIONS] NET
       gspc-run put-token|workflow-response|status|close|cancel --control SOCKET ...  (see
       `gspc-run put-token --help`)"
)]
struct Cli {
    /// The net: a .pnet bundle or an .xpnet file
    #[arg(value_name = "NET")]
    net: Option<PathBuf>,
    /// Put a token on input port PORT before the run; VALUE in the expression language's
    /// literal syntax (3L, "s", Struct [a := 1], ...); repeatable, also for several tokens on
    /// one port
    #[arg(short = 'p', long = "put", value_name = "PORT=VALUE", value_parser = parse_put_arg)]
    puts: Vec<(String, Value)>,
    /// Print the result as JSON: {"outputs": {PORT: {"type": T, "tokens": [...]}}, "firings",
    /// "tasks", "ending": {"complete": BOOL, "tokens_left": [{"place", "tokens"}],
    /// "empty_outputs": [PORT], "starved": [{"transition", "place"}], "more_starved": N}}; the
    /// tokens in the JSON encoding of values (the modules' and `pnetget --json`'s, see
    /// runtime/worker/MODULES.md)
    #[arg(long)]
    json: bool,
    /// With --json: json (default) or literal (the tokens as strings in the literal syntax:
    /// "3L", "Struct [a := 1L]")
    #[arg(long, value_name = "FORM", value_parser = ["json", "literal"], requires = "json")]
    values: Option<String>,
    /// Exit with 3 when the net stopped with an out port empty or tokens left on inner places
    /// (without it: a warning, exit 0)
    #[arg(long)]
    require_outputs: bool,
    /// Also write the output tokens, with their types, to FILE (a result file: `pnetget FILE`
    /// prints them, as literals or JSON)
    #[arg(long, value_name = "FILE")]
    result: Option<PathBuf>,
    /// Seed of the random choice among enabled transitions (a fixed default; the same seed
    /// repeats a run exactly)
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Stop with an error after N firings (a guard against runaway nets)
    #[arg(long, value_name = "N")]
    max_firings: Option<u64>,
    /// How to run expressions and conditions: auto (default: compile to native code what pays
    /// off once it is hot, interpret the rest), on (compile everything at load), off
    /// (interpret everything); without this option, the environment variable PNET_JIT, if set
    #[arg(long, value_name = "MODE", value_parser = parse_jit)]
    jit: Option<pnet_jit::JitMode>,
    /// Print what the JIT compiled and ran to stderr after the run
    #[arg(long, value_name = "jit-stats", value_parser = ["jit-stats"])]
    emit: Option<String>,
    /// Print which workers would start where, and exit
    #[arg(long, help_heading = "Workers")]
    dry_run: bool,
    #[command(flatten)]
    workers: WorkerArgs,
    /// --alloc PORT=SIZE: allocate SIZE bytes of global memory (a number, or with a unit:
    /// 4096, 64K, 16M, 1GiB; zeros: the workers are fresh) once they joined, and put its
    /// `global_memory_range` token ([handle := [name := ...], offset := 0UL, size := SIZE])
    /// on input port PORT; --alloc PORT=@FILE: the same, the size of FILE, filled with its
    /// bytes; repeatable (allocations are freed when the run ends)
    #[arg(
        long,
        value_name = "PORT=SIZE|PORT=@FILE",
        value_parser = parse_alloc,
        help_heading = "Global memory (workers with working memory, a shm size in the topology, offer it; module calls with memory transfers run only on them)"
    )]
    alloc: Vec<AllocArg>,
    /// --dump PORT=FILE: after a successful run, write the bytes of the allocation of --alloc
    /// PORT to FILE; repeatable
    #[arg(long, value_name = "PORT=FILE", value_parser = parse_dump, help_heading = "Global memory (workers with working memory, a shm size in the topology, offer it; module calls with memory transfers run only on them)")]
    dump: Vec<(String, PathBuf)>,
    /// Accept clients on this Unix socket (`gspc-run put-token ...`); the job then also waits
    /// for tokens while nothing else can happen
    #[arg(
        long,
        value_name = "SOCKET",
        help_heading = "Seeing and controlling the run"
    )]
    control: Option<PathBuf>,
    /// Serve a live web page of the run (workers, jobs, tasks per worker over time, their
    /// logs and errors) on 127.0.0.1 and print its URL on stderr at the start (see `gspc
    /// monitor`); it reads the --control socket, else one of its own
    #[arg(long, help_heading = "Seeing and controlling the run")]
    monitor: bool,
    /// Write a Chrome trace-event JSON (open it in Perfetto or chrome://tracing: one lane per
    /// worker, one slice per task from its start on the worker to its end, the wait before
    /// as an async `queued` slice, a failed task's error in its slice's args)
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Seeing and controlling the run"
    )]
    trace: Option<PathBuf>,
    /// Write the worker event log (joins, losses, retries) to FILE
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "Seeing and controlling the run"
    )]
    log: Option<PathBuf>,
    /// Write what each task logged (a command module's stderr and the stdout beyond its
    /// answer, a native module's log lines) to DIR/task-N-TRANSITION.log (the last 64 KiB of
    /// each task)
    #[arg(
        long,
        value_name = "DIR",
        help_heading = "Seeing and controlling the run"
    )]
    logs: Option<PathBuf>,
    /// Print worker events on stderr
    #[arg(short = 'v', long, help_heading = "Seeing and controlling the run")]
    verbose: bool,
    /// Show a progress line on stderr (default when stderr is a terminal)
    #[arg(
        long,
        overrides_with = "no_progress",
        help_heading = "Seeing and controlling the run"
    )]
    progress: bool,
    /// Do not
    #[arg(
        long,
        overrides_with = "progress",
        help_heading = "Seeing and controlling the run"
    )]
    no_progress: bool,
    #[command(flatten)]
    compile: CompilerArgs,
}

fn parse_jit(v: &str) -> Result<pnet_jit::JitMode, String> {
    pnet_jit::JitMode::parse(v).ok_or_else(|| format!("'{v}' is not one of auto, on, off"))
}

fn parse_dump(v: &str) -> Result<(String, PathBuf), String> {
    let (port, file) = port_value("--dump", v, "FILE")?;
    Ok((port.to_string(), PathBuf::from(file)))
}

struct Args {
    net: Option<PathBuf>,
    puts: Vec<(String, Value)>,
    json: bool,
    literal: bool,
    require_outputs: bool,
    result: Option<PathBuf>,
    config: pnet_engine::RunConfig,
    compile: pnet_sema::Options,
    jit: pnet_jit::JitMode,
    jit_stats: bool,
    topology: Option<String>,
    nodefile: Option<PathBuf>,
    launcher: String,
    ssh_options: Vec<String>,
    listen: Option<String>,
    module_path: Vec<PathBuf>,
    max_retries: Option<u32>,
    dry_run: bool,
    control: Option<PathBuf>,
    monitor: bool,
    trace: Option<PathBuf>,
    log: Option<PathBuf>,
    logs: Option<PathBuf>,
    verbose: bool,
    progress: Option<bool>,
    fake_hosts: u32,
    isolate_modules: bool,
    allocs: Vec<AllocArg>,
    dumps: Vec<(String, PathBuf)>,
}

/// `--alloc PORT=SIZE` or `--alloc PORT=@FILE`.
#[derive(Clone)]
struct AllocArg {
    port: String,
    size: u64,
    file: Option<PathBuf>,
}

/// Splits `PORT=REST` of `flag`.
fn port_value<'a>(flag: &str, v: &'a str, what: &str) -> Result<(&'a str, &'a str), String> {
    match v.split_once('=') {
        Some((p, r)) if !p.trim().is_empty() && !r.is_empty() => Ok((p.trim(), r)),
        _ => Err(format!("{flag}: '{v}' is not PORT={what}")),
    }
}

fn parse_alloc(v: &str) -> Result<AllocArg, String> {
    let (port, rest) = port_value("--alloc", v, "SIZE or PORT=@FILE")?;
    if let Some(file) = rest.strip_prefix('@') {
        let path = PathBuf::from(file);
        let size = std::fs::metadata(&path)
            .map_err(|e| format!("--alloc {v}: cannot read {}: {e}", path.display()))?
            .len();
        return Ok(AllocArg {
            port: port.to_string(),
            size,
            file: Some(path),
        });
    }
    let size = pnet_agent::memory::parse_size(rest).map_err(|e| format!("--alloc {v}: {e}"))?;
    Ok(AllocArg {
        port: port.to_string(),
        size,
        file: None,
    })
}

fn parse_args(argv: Vec<OsString>) -> Result<Args, ExitCode> {
    let argv = std::iter::once(OsString::from("gspc-run"))
        .chain(pnetc::args::normalize_warning_flags(argv));
    let cli = pnet_stdlib::parse_args!(Cli, "gspc-run", argv);
    let jit = match cli.jit {
        Some(j) => j,
        None => match std::env::var("PNET_JIT") {
            Ok(v) => pnet_jit::JitMode::parse(&v).ok_or_else(|| {
                usage_error(&format!("PNET_JIT: '{v}' is not one of auto, on, off"))
            })?,
            Err(_) => pnet_jit::JitMode::Auto,
        },
    };
    let mut config = pnet_engine::RunConfig::default();
    if let Some(seed) = cli.seed {
        config.seed = seed;
    }
    if cli.max_firings.is_some() {
        config.max_firings = cli.max_firings;
    }
    let w = cli.workers;
    let a = Args {
        net: cli.net,
        puts: cli.puts,
        json: cli.json,
        literal: cli.values.as_deref() == Some("literal"),
        require_outputs: cli.require_outputs,
        result: cli.result,
        config,
        compile: cli.compile.options(),
        jit,
        jit_stats: cli.emit.is_some(),
        topology: w.topology,
        nodefile: w.nodefile,
        launcher: w.launcher.unwrap_or_else(|| "local".into()),
        ssh_options: w.ssh_options,
        listen: w.listen,
        module_path: w.module_path,
        max_retries: w.max_retries,
        dry_run: cli.dry_run,
        control: cli.control,
        monitor: cli.monitor,
        trace: cli.trace,
        log: cli.log,
        logs: cli.logs,
        verbose: cli.verbose,
        progress: if cli.progress {
            Some(true)
        } else if cli.no_progress {
            Some(false)
        } else {
            None
        },
        fake_hosts: w.fake_hosts.unwrap_or(0),
        isolate_modules: w.isolate_modules,
        allocs: cli.alloc,
        dumps: cli.dump,
    };
    if a.net.is_none() && !a.dry_run {
        return Err(usage_error("no net given"));
    }
    for (i, alloc) in a.allocs.iter().enumerate() {
        if a.allocs[..i].iter().any(|x| x.port == alloc.port) {
            return Err(usage_error(&format!(
                "--alloc: port `{}` is given twice",
                alloc.port
            )));
        }
    }
    for (port, file) in &a.dumps {
        if !a.allocs.iter().any(|x| &x.port == port) {
            return Err(usage_error(&format!(
                "--dump {port}={}: there is no --alloc {port}=...",
                file.display()
            )));
        }
    }
    Ok(a)
}

fn load(path: &Path, compile: &pnet_sema::Options) -> Result<Bundle, ExitCode> {
    let loaded = pnet_stdlib::input::read_file(path, pnet_stdlib::input::MAX_SOURCE_BYTES)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
        .and_then(|bytes| load_net(path, &bytes, compile, ColorMode::Auto));
    loaded.map(|(bundle, _)| bundle).map_err(|msg| {
        pnet_stdlib::errln!("gspc-run: {msg}");
        ExitCode::from(1)
    })
}

pub fn main(argv: Vec<OsString>) -> ExitCode {
    let args = match parse_args(argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let bundle = match &args.net {
        Some(net) => match load(net, &args.compile) {
            Ok(b) => Some(b),
            Err(code) => return code,
        },
        None => None,
    };
    // Nets with memory transfers need workers with working memory.
    let uses_memory =
        !args.allocs.is_empty() || bundle.as_ref().is_some_and(pnet_agent::uses_memory);
    let default_shm = if uses_memory {
        pnet_agent::DEFAULT_WORKER_SHM
    } else {
        0
    };
    let plan = match topo::plan(
        args.topology.as_deref(),
        args.nodefile.as_deref(),
        &args.launcher,
        default_shm,
    ) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if args.dry_run {
        pnet_stdlib::out!("{plan}");
        if bundle
            .as_ref()
            .is_some_and(|b| !pnet_agent::calls_modules(b))
        {
            pnet_stdlib::outln!("(the net has no module calls: it would run without workers)");
        }
        return ExitCode::SUCCESS;
    }
    let Some(bundle) = bundle else {
        return usage_error("no net given");
    };
    let launcher = match topo::launcher(&args.launcher, &args.ssh_options) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let listen = match args.listen.as_deref().unwrap_or("127.0.0.1:0").parse() {
        Ok(a) => a,
        Err(_) => {
            return usage_error(&format!(
                "--listen: '{}' is not an address like 127.0.0.1:0",
                args.listen.as_deref().unwrap_or_default()
            ));
        }
    };
    let net = args
        .net
        .as_deref()
        .map(|n| n.display().to_string())
        .unwrap_or_default();
    // Group the puts by port, keeping their order.
    let mut inputs: Vec<(String, Vec<Value>)> = Vec::new();
    for (port, v) in &args.puts {
        match inputs.iter_mut().find(|(p, _)| p == port) {
            Some((_, vs)) => vs.push(v.clone()),
            None => inputs.push((port.clone(), vec![v.clone()])),
        }
    }
    if let Err(msg) = check_inputs(&bundle, &inputs) {
        pnet_stdlib::errln!("gspc-run: error: bad input: {msg}");
        return ExitCode::from(1);
    }
    // In ports that nothing will ever fill (a forgotten -p).
    let given: Vec<String> = (inputs.iter().map(|(p, _)| p.clone()))
        .chain(args.allocs.iter().map(|a| a.port.clone()))
        .collect();
    for port in pnet_engine::unfed_in_ports(&bundle, &given) {
        pnet_stdlib::errln!(
            "gspc-run: warning: in port `{port}` got no value (-p {port}=...) and nothing in \
             the net puts a token on it"
        );
    }
    let jit = std::sync::Arc::new(pnet_jit::JitFactory::new(args.jit));
    let mut run = args.config.clone();
    if args.jit != pnet_jit::JitMode::Off {
        run.runner = Some(jit.clone());
    }
    let mut module_path = args.module_path.clone();
    if let Some(dir) = Path::new(&net).parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        module_path.push(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()));
    }
    // Last: the folder of gspc-worker, where cargo also puts the example native modules.
    let worker = pnet_agent::worker_program();
    if let Some(dir) = worker.parent().filter(|d| !d.as_os_str().is_empty()) {
        module_path.push(dir.to_path_buf());
    }
    // Workers started on this host search these folders: say what they will not find.
    if args.launcher == "local" {
        let mut search = module_path.clone();
        search.extend(crate::modules::env_path());
        for w in crate::modules::warnings(&bundle, &net, &args.module_path, &search) {
            pnet_stdlib::errln!("gspc-run: warning: {w}");
        }
    }
    let mut control = args.control.clone();
    let _monitor = if args.monitor {
        match crate::monitor::start(&mut control, &net) {
            Ok(w) => Some(w),
            Err(e) => {
                pnet_stdlib::errln!("gspc-run: error: --monitor: {e}");
                return ExitCode::from(1);
            }
        }
    } else {
        None
    };
    let config = pnet_agent::AgentConfig {
        run,
        plan,
        launcher,
        worker_program: worker,
        module_path,
        listen,
        trace: args.trace.clone(),
        log: args.log.clone(),
        logs: args.logs.clone(),
        verbose: args.verbose,
        progress: args
            .progress
            .unwrap_or_else(|| std::io::stderr().is_terminal()),
        control,
        max_retries: args.max_retries,
        start_workers: pnet_agent::StartWorkers::IfModules,
        fake_hosts: args.fake_hosts,
        isolate_modules: args.isolate_modules,
    };
    let mut options = pnet_agent::JobOptions::default();
    for a in &args.allocs {
        let data = match &a.file {
            Some(path) => match std::fs::read(path) {
                Ok(d) => Some(d),
                Err(e) => {
                    pnet_stdlib::errln!(
                        "gspc-run: error: --alloc {}=@{}: cannot read it: {e}",
                        a.port,
                        path.display()
                    );
                    return ExitCode::from(1);
                }
            },
            None => None,
        };
        options.allocs.push(pnet_agent::MemAlloc {
            port: a.port.clone(),
            size: data.as_ref().map_or(a.size, |d| d.len() as u64),
            data,
        });
    }
    options.dumps = args.dumps.clone();
    let result = pnet_agent::run_job_with(&bundle, &inputs, &config, options);
    if args.jit_stats {
        let mut stats = jit.stats();
        stats.mode = Some(args.jit);
        pnet_stdlib::cli::write_stderr(format_args!("{stats}"));
    }
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            pnet_stdlib::errln!("gspc-run: error: {e}");
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(1));
        }
    };
    if let Some(path) = &args.result {
        let file = pnet_bundle::result::RunOutputs::new(&bundle, &net, &result.outputs);
        let written = file
            .encode()
            .map_err(|e| e.to_string())
            .and_then(|b| pnet_stdlib::cli::write_file(path, b));
        if let Err(e) = written {
            pnet_stdlib::errln!("gspc-run: the result file: {e}");
            return ExitCode::from(1);
        }
    }
    let types = pnet_bundle::result::output_types(&bundle);
    let form = match (args.json, args.literal) {
        (false, _) => pnet_agent::output::Form::Text,
        (true, true) => pnet_agent::output::Form::JsonLiteral,
        (true, false) => pnet_agent::output::Form::Json(&types),
    };
    print_result(result, form, args.require_outputs)
}

/// Checks the `-p` values against the root's in ports before anything starts (the engine's
/// check, `pnet_bundle::inputs`, with its suggestions).
fn check_inputs(bundle: &Bundle, inputs: &[(String, Vec<Value>)]) -> Result<(), String> {
    let f = bundle.function(bundle.root);
    if !matches!(f.body, pnet_bundle::Body::Net(_)) {
        return Ok(());
    }
    for (name, values) in inputs {
        let port = pnet_bundle::inputs::in_port(f, name)?;
        for v in values {
            pnet_bundle::inputs::check_value(v, &port.ty, &format!("port `{name}`"))?;
        }
    }
    Ok(())
}

fn print_result(
    result: pnet_engine::RunResult,
    form: pnet_agent::output::Form<'_>,
    require_outputs: bool,
) -> ExitCode {
    let text = pnet_agent::output::format_outputs(
        &result.outputs,
        result.stats.firings,
        result.stats.tasks,
        &result.ending,
        form,
    );
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // Modules write to the same stdout: results start on a line of their own.
    let text = if out.flush().is_ok() && mid_line(&std::io::stdout()) {
        format!("\n{text}")
    } else {
        text
    };
    let written = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    if let Some(w) = pnet_agent::output::ending_warning("gspc-run", &result.ending) {
        pnet_stdlib::errln!("{w}");
    }
    match written {
        Ok(()) if require_outputs && !result.ending.is_complete() => ExitCode::from(3),
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            pnet_stdlib::errln!("gspc-run: cannot write the result: {e}");
            ExitCode::from(1)
        }
    }
}

/// Whether `out`, a regular file, ends in the middle of a line where its next write goes (a
/// module wrote text without a final newline to the stdout it shares with gspc-run). A
/// terminal or a pipe cannot be read back: false.
fn mid_line(out: &impl std::os::fd::AsFd) -> bool {
    use std::io::Seek;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    let Ok(fd) = out.as_fd().try_clone_to_owned() else {
        return false;
    };
    let mut file = std::fs::File::from(fd);
    // Where the next write goes: the file's end, or less after `1<>file`.
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(pos @ 1..) = file.stream_position() else {
        return false;
    };
    // Opened again to read it: stdout is usually open for writing only.
    let Ok(reader) = std::fs::File::open(format!("/proc/self/fd/{}", out.as_fd().as_raw_fd()))
    else {
        return false;
    };
    let mut last = [0u8];
    reader.read_exact_at(&mut last, pos - 1).is_ok() && last[0] != b'\n'
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::mid_line;

    #[test]
    fn results_start_on_a_line_of_their_own_after_module_output_without_a_newline() {
        let path = std::env::temp_dir().join(format!("gspc-run-mid-line-{}", std::process::id()));
        let mut f = std::fs::File::create(&path).unwrap();
        assert!(!mid_line(&f), "empty");
        f.write_all(b"no newline from 3").unwrap();
        assert!(mid_line(&f), "after text without a newline");
        f.write_all(b"\n").unwrap();
        assert!(!mid_line(&f), "after a newline");
        // A pipe cannot be read back.
        let (_reader, mut writer) = std::io::pipe().unwrap();
        writer.write_all(b"no newline").unwrap();
        assert!(!mid_line(&writer), "a pipe");
        std::fs::remove_file(&path).unwrap();
    }
}
