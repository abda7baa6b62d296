//! The command lines: `gspc-dds` (the runner, [`main`]) and `gspc-property`
//! ([`property_main`]).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use pnet_launch::Launcher;
use pnet_topology::{Diagnostic, Plan};

use crate::client::{ClientError, Properties};
use crate::place::{place, slots_from_plan};
use crate::report::Outcome;
use crate::runner::{RunConfig, run_placed};

const AFTER_HELP: &str = "\
Tasks run `/bin/sh -c EXE` (after sourcing `<env>`) in their folder
<session>/tasks/<task path>, where the assets are, with stdout and stderr appended to
stdout.log and stderr.log there. Besides DDS_TASK_ID, DDS_SLOT_ID, DDS_TASK_PATH,
DDS_GROUP_NAME, DDS_COLLECTION_NAME, DDS_TASK_NAME, DDS_TASK_INDEX, DDS_COLLECTION_INDEX and
DDS_SESSION_ID, they get GSPC_DDS_TOPOLOGY_DIR (the topology file's folder),
GSPC_DDS_SESSION_DIR, GSPC_DDS_ASSET_DIR, GSPC_DDS_SLOT_NAME, GSPC_DDS_HOST, and what
gspc-property needs (GSPC_PROPERTY_ADDR, GSPC_PROPERTY_TASK, GSPC_PROPERTY_SECRET_FILE).

Exit status: 0 every task exited with 0; 1 the topology has errors, cannot be placed, a task
failed or the session timed out; 2 usage errors; 130 interrupted.

Examples:
  gspc-dds topology.xml --var n=4
  gspc-dds topology.xml --topology 'worker:8 gpu+GPU:2' --dry-run
  gspc-dds topology.xml --nodefile hosts --launcher ssh --listen 0.0.0.0:0";

/// gspc-dds: run a DDS topology (FairRootGroup/DDS XML) on the runtime's workers
///
/// Every task instance runs as a process of its own on a worker (DDS's slot), started through
/// `gspc-property exec` with the DDS_* variables; tasks exchange properties with
/// `gspc-property set|get|wait`; tasks whose TaskCrashed/RestartTask trigger allows it are
/// restarted; any other crash stops the session.
#[derive(clap::Parser, Debug)]
#[command(name = "gspc-dds", version, after_help = AFTER_HELP)]
struct Cli {
    /// The topology file
    #[arg(value_name = "TOPOLOGY.xml")]
    file: Option<String>,
    /// Set topology variable NAME (repeatable; replaces its <var> value)
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
    vars: Vec<(String, String)>,
    /// Stop the session after SECS seconds (exit 1)
    #[arg(
        long,
        value_name = "SECS",
        value_parser = parse_timeout,
        allow_hyphen_values = true
    )]
    timeout: Option<Duration>,
    /// Print the report as JSON on stdout
    #[arg(long)]
    json: bool,
    /// Print where each task would run, and exit
    #[arg(long)]
    dry_run: bool,
    /// The workers, GPI-Space's worker description string, e.g. "worker:8 gpu+GPU:2"
    /// (default: "worker:N" on this host, one slot per task of the topology, at least one per
    /// core); the class is DDS's group name, the capabilities serve `custom` and `gpu`
    /// requirements
    #[arg(long, value_name = "DESC", help_heading = "Workers (the slots)")]
    topology: Option<String>,
    /// Hosts, one a line (default: this host)
    #[arg(long, value_name = "FILE", help_heading = "Workers (the slots)")]
    nodefile: Option<PathBuf>,
    /// local (default), ssh or slurm (srun, inside an allocation)
    #[arg(long, value_name = "NAME", help_heading = "Workers (the slots)")]
    launcher: Option<String>,
    /// An option for ssh (repeatable)
    #[arg(
        long = "ssh-option",
        value_name = "OPT",
        allow_hyphen_values = true,
        help_heading = "Workers (the slots)"
    )]
    ssh_options: Vec<String>,
    /// The property server's address (default 127.0.0.1:0, loopback only; use e.g. 0.0.0.0:0
    /// with ssh or slurm)
    #[arg(long, value_name = "ADDR", help_heading = "Workers (the slots)")]
    listen: Option<String>,
    /// The address tasks connect to (default: the listen address, or this host's name when
    /// listening on all interfaces)
    #[arg(long, value_name = "HOST:PORT", help_heading = "Workers (the slots)")]
    advertise: Option<String>,
    /// Put the session folders (task folders, assets, logs) below DIR on every host (default:
    /// the host's temporary folder)
    #[arg(long, value_name = "DIR", help_heading = "Workers (the slots)")]
    workdir: Option<PathBuf>,
    /// Keep the session folder after a successful run
    #[arg(long, help_heading = "Workers (the slots)")]
    keep_workdir: bool,
    /// Print per-task events on stderr
    #[arg(short = 'v', long, help_heading = "Output")]
    verbose: bool,
    /// Show a progress line on stderr (default when stderr is a terminal)
    #[arg(long, overrides_with = "no_progress", help_heading = "Output")]
    progress: bool,
    /// Do not
    #[arg(long, overrides_with = "progress", help_heading = "Output")]
    no_progress: bool,
}

/// The value of `--var NAME=VALUE` (clap value parser).
fn parse_var(v: &str) -> Result<(String, String), String> {
    let Some((name, val)) = v.split_once('=') else {
        return Err(format!("--var: `{v}` is not NAME=VALUE"));
    };
    if name.is_empty() {
        return Err(format!("--var: `{v}` has no name"));
    }
    Ok((name.to_string(), val.to_string()))
}

/// The value of `--timeout SECS` (clap value parser).
fn parse_timeout(v: &str) -> Result<Duration, String> {
    v.parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s < 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("--timeout: `{v}` is not a positive number of seconds"))
}

const PROPERTY_AFTER_HELP: &str = "\
The task's environment tells how to reach the runner: GSPC_PROPERTY_ADDR, GSPC_PROPERTY_TASK
and GSPC_PROPERTY_SECRET_FILE.

Exit status: 0 done; 1 refused (with the reason), no value, timed out or no runner; 2 usage
errors.

Examples (in a task's <exe>):
  gspc-property set greeting hello-from-$DDS_TASK_PATH
  echo \"$(gspc-property wait greeting --timeout 20)\" > out.txt";

/// gspc-property: DDS properties, from inside a task started by gspc-dds
#[derive(clap::Parser)]
#[command(
    name = "gspc-property",
    version,
    after_help = PROPERTY_AFTER_HELP,
    override_usage = "gspc-property set KEY VALUE
       gspc-property get KEY
       gspc-property wait KEY [--timeout SECS]
       gspc-property exec --connect HOST:PORT --task N [--attempt K]   (started by gspc-dds)"
)]
struct PropertyCli {
    #[command(subcommand)]
    command: PropertyCommand,
}

#[derive(clap::Subcommand)]
enum PropertyCommand {
    /// Write property KEY (the task must declare it with write or readwrite access): the
    /// value reaches every other task that declares it with read access (with
    /// scope="collection": only the tasks of the same collection instance); at most 256
    /// characters
    Set {
        #[arg(value_name = "KEY")]
        key: String,
        #[arg(value_name = "VALUE", allow_hyphen_values = true)]
        value: String,
    },
    /// Print the value of KEY that reached this task (exit 1 if none has yet)
    Get {
        #[arg(value_name = "KEY")]
        key: String,
    },
    /// Wait until a value of KEY has reached this task and print it
    Wait {
        #[arg(value_name = "KEY")]
        key: String,
        /// Give up after SECS seconds (exit 1)
        #[arg(long, value_name = "SECS", value_parser = parse_wait_timeout)]
        timeout: Option<Duration>,
    },
    /// Run one task (the DDS runner starts it; the secret comes on stdin)
    Exec(crate::wrapper::ExecArgs),
}

/// The value of `wait --timeout SECS` (clap value parser).
fn parse_wait_timeout(v: &str) -> Result<Duration, String> {
    match v.parse::<f64>() {
        Ok(s) if (0.0..1e9).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!("--timeout: `{v}` is not a number of seconds")),
    }
}

fn usage_error(prog: &str, msg: &str) -> ExitCode {
    eprintln!("{prog}: {msg}\nTry '{prog} --help' for more information.");
    ExitCode::from(2)
}

#[derive(Debug, Default)]
struct Args {
    file: Option<String>,
    vars: Vec<(String, String)>,
    timeout: Option<Duration>,
    json: bool,
    dry_run: bool,
    topology: Option<String>,
    nodefile: Option<PathBuf>,
    launcher: Option<String>,
    ssh_options: Vec<String>,
    listen: Option<String>,
    advertise: Option<String>,
    workdir: Option<PathBuf>,
    keep_workdir: bool,
    verbose: bool,
    progress: Option<bool>,
}

/// `Ok(None)`: help or version was printed. `Err`: the usage error's message.
fn parse_args(prog: &str, argv: &[String]) -> Result<Option<Args>, String> {
    use clap::{CommandFactory, FromArgMatches};
    let os: Vec<std::ffi::OsString> = argv.iter().map(Into::into).collect();
    pnet_stdlib::cli::generate_if_asked(prog, &os, Cli::command);
    // clap names commands with 'static strings; this runs once per process.
    let name: &'static str = Box::leak(prog.to_string().into_boxed_str());
    let cli = Cli::command()
        .name(name)
        .bin_name(name)
        .override_usage(format!("{prog} [OPTIONS] TOPOLOGY.xml"))
        .try_get_matches_from(std::iter::once(prog).chain(argv.iter().map(String::as_str)))
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match cli {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            pnet_stdlib::out!("{}", e.render());
            return Ok(None);
        }
        Err(e) => {
            let text = e.render().to_string();
            let text = text.trim_end();
            let text = text.strip_prefix("error: ").unwrap_or(text);
            // usage_error adds the hint at --help.
            let text = text.trim_end_matches("For more information, try '--help'.");
            return Err(text.trim_end().to_string());
        }
    };
    let Some(file) = cli.file else {
        return Err("no topology file given".into());
    };
    Ok(Some(Args {
        file: Some(file),
        vars: cli.vars,
        timeout: cli.timeout,
        json: cli.json,
        dry_run: cli.dry_run,
        topology: cli.topology,
        nodefile: cli.nodefile,
        launcher: cli.launcher,
        ssh_options: cli.ssh_options,
        listen: cli.listen,
        advertise: cli.advertise,
        workdir: cli.workdir,
        keep_workdir: cli.keep_workdir,
        verbose: cli.verbose,
        progress: match (cli.progress, cli.no_progress) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
    }))
}

/// Prints diagnostics as `origin:line:col: severity[code]: message`, at most 50 errors and
/// 50 warnings, then how many more.
fn print_diagnostics(origin: &str, text: &str, diagnostics: &[Diagnostic]) {
    let file = pnet_diagnostics::RenderFile { name: origin, text };
    eprint!(
        "{}",
        pnet_diagnostics::render::render_short(&file, diagnostics)
    );
}

/// The worker plan from `--topology` and `--nodefile` (as gspc-run makes it).
fn make_plan(prog: &str, args: &Args, tasks: usize) -> Result<Plan, ExitCode> {
    let (topo, text) = match &args.topology {
        Some(t) => {
            let (topo, diags) = pnet_topology::parse_topology(t);
            print_diagnostics("--topology", t, &diags);
            if pnet_topology::has_errors(&diags) {
                return Err(usage_error(prog, "the worker topology has errors"));
            }
            (topo, t.clone())
        }
        None => {
            // A DDS task is a process of its own, often waiting (for properties, for
            // peers): by default every task gets a slot on this host, and at least one slot
            // per core.
            let slots = (tasks as u32).max(pnet_topology::hwloc::core_count());
            let topo = pnet_topology::default_topology(slots);
            let text = topo.to_string();
            (topo, text)
        }
    };
    let hosts = match &args.nodefile {
        Some(path) => {
            let content = std::fs::read_to_string(path).map_err(|e| {
                usage_error(
                    prog,
                    &format!("cannot read the nodefile {}: {e}", path.display()),
                )
            })?;
            let (hosts, diags) = pnet_topology::parse_nodefile(&content);
            print_diagnostics(&path.display().to_string(), &content, &diags);
            if pnet_topology::has_errors(&diags) {
                return Err(usage_error(prog, "the nodefile has errors"));
            }
            hosts
        }
        None => vec![pnet_topology::local_hostname()],
    };
    let checks = pnet_topology::check_worker_count(&topo, hosts.len());
    print_diagnostics("--topology", &text, &checks);
    if pnet_topology::has_errors(&checks) {
        return Err(usage_error(prog, "the worker topology does not fit"));
    }
    Ok(pnet_topology::plan(&topo, &hosts))
}

static CANCEL: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_signal(_: libc::c_int) {
    if let Some(flag) = CANCEL.get() {
        flag.store(true, Ordering::SeqCst);
    }
}

/// SIGINT and SIGTERM set the returned flag (the runner then stops the tasks).
fn install_cancel() -> Arc<AtomicBool> {
    let flag = CANCEL
        .get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone();
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only performs an atomic load and store, which are
    // async-signal-safe; signal(2) has no other preconditions.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
    flag
}

/// Parses and expands a DDS topology text with `--var` values; prints its diagnostics
/// (`origin:line:col: ...`). `None` if it has errors.
pub fn load_topology(
    origin: &str,
    text: &str,
    vars: &[(String, String)],
) -> Option<(pnet_dds::Topology, pnet_dds::Expanded)> {
    let (topology, diagnostics) = crate::frontend::parse(text, vars);
    print_diagnostics(origin, text, &diagnostics);
    if pnet_topology::has_errors(&diagnostics) {
        return None;
    }
    let topology = topology?;
    let expanded = crate::frontend::expand(&topology);
    Some((topology, expanded))
}

/// True if `text` is XML whose root element is `<topology>` (a DDS topology), so that a
/// front end such as `gspc-run` can tell it from a net (`<defun>`). Looks past the XML
/// declaration, comments, processing instructions and a doctype.
pub fn is_dds_topology(text: &str) -> bool {
    let mut rest = text.trim_start_matches('\u{feff}');
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("<!--") {
            match r.find("-->") {
                Some(end) => rest = &r[end + 3..],
                None => return false,
            }
        } else if rest.starts_with("<?") || rest.starts_with("<!") {
            match rest.find('>') {
                Some(end) => rest = &rest[end + 1..],
                None => return false,
            }
        } else if let Some(r) = rest.strip_prefix('<') {
            let name: String = r
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '>' && *c != '/')
                .collect();
            return name == "topology";
        } else {
            return false;
        }
    }
}

/// `gspc-dds ARGS`: see `gspc-dds --help`.
pub fn main(argv: &[String]) -> ExitCode {
    main_as("gspc-dds", argv)
}

/// [`main`] under another program name (`gspc-run` runs a DDS topology file with the same
/// options): `prog` replaces `gspc-dds` in the help and in messages.
pub fn main_as(prog: &str, argv: &[String]) -> ExitCode {
    let args = match parse_args(prog, argv) {
        Ok(Some(a)) => a,
        Ok(None) => return ExitCode::SUCCESS,
        Err(m) => return usage_error(prog, &m),
    };
    let started = Instant::now();
    let file = args.file.clone().unwrap_or_default();
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{prog}: cannot read {file}: {e}");
            return ExitCode::from(1);
        }
    };
    let Some((topology, expanded)) = load_topology(&file, &text, &args.vars) else {
        eprintln!("{prog}: the topology {file} has errors");
        return ExitCode::from(1);
    };
    let launcher_name = args.launcher.as_deref().unwrap_or("local");
    let mut launcher = match Launcher::parse(launcher_name) {
        Ok(l) => l,
        Err(e) => return usage_error(prog, &format!("--launcher: {e}")),
    };
    match &mut launcher {
        Launcher::Ssh(o) => o.args.extend(args.ssh_options.iter().cloned()),
        _ if !args.ssh_options.is_empty() => {
            return usage_error(prog, "--ssh-option needs --launcher ssh");
        }
        _ => {}
    }
    let plan = match make_plan(prog, &args, expanded.tasks.len()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let slots = slots_from_plan(&plan);
    let assignments = match place(&topology, &expanded, &slots) {
        Ok(a) => a,
        Err(errors) => {
            let diagnostics: Vec<Diagnostic> =
                errors.iter().map(|e| e.diagnostic.clone()).collect();
            print_diagnostics(&file, &text, &diagnostics);
            eprintln!(
                "{prog}: cannot place the topology on {} worker{}",
                slots.len(),
                if slots.len() == 1 { "" } else { "s" }
            );
            return ExitCode::from(1);
        }
    };
    if args.dry_run {
        return print_placement(prog, &expanded, &slots, &assignments, args.json);
    }
    let listen: std::net::SocketAddr = match args.listen.as_deref().unwrap_or("127.0.0.1:0").parse()
    {
        Ok(a) => a,
        Err(_) => {
            return usage_error(
                prog,
                &format!(
                    "--listen: '{}' is not an address like 127.0.0.1:0",
                    args.listen.as_deref().unwrap_or_default()
                ),
            );
        }
    };
    if !matches!(launcher, Launcher::Local) && listen.ip().is_loopback() && args.advertise.is_none()
    {
        eprintln!(
            "{prog}: warning: the property server listens on {listen}, which tasks on other hosts cannot reach; use e.g. --listen 0.0.0.0:0"
        );
    }
    let topology_dir = Path::new(&file)
        .parent()
        .map(|d| {
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            }
        })
        .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf()));
    let mut config = RunConfig::new(plan);
    config.launcher = launcher;
    config.listen = listen;
    config.advertise = args.advertise.clone();
    config.workdir = args.workdir.clone();
    config.keep_workdir = args.keep_workdir;
    config.topology_dir = topology_dir;
    config.timeout = args.timeout;
    config.verbose = args.verbose;
    config.progress = args
        .progress
        .unwrap_or_else(|| std::io::stderr().is_terminal());
    config.cancel = Some(install_cancel());
    config.name = prog.to_string();
    let report = match run_placed(&topology, &expanded, &config, &slots, &assignments, started) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{prog}: {e}");
            return ExitCode::from(1);
        }
    };
    if let Some(m) = report.failure_message() {
        eprintln!("{prog}: error: {m}");
        if let Some(d) = &report.workdir {
            eprintln!("{prog}: the session folder {} is kept", d.display());
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if args.json {
        writeln!(out, "{}", report.to_json())
    } else {
        writeln!(out, "{prog}: {}", report.summary())
    };
    if let Err(e) = written
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("{prog}: cannot write the report: {e}");
        return ExitCode::from(1);
    }
    match report.outcome {
        Outcome::Success => ExitCode::SUCCESS,
        Outcome::Cancelled => ExitCode::from(130),
        _ => ExitCode::from(1),
    }
}

fn print_placement(
    prog: &str,
    expanded: &pnet_dds::Expanded,
    slots: &[crate::place::Slot],
    assignments: &[crate::place::Assignment],
    json: bool,
) -> ExitCode {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = if json {
        let rows: Vec<serde_json::Value> = assignments
            .iter()
            .map(|a| {
                let s = &slots[a.slot];
                serde_json::json!({
                    "task": expanded.tasks.get(a.task).map(|t| t.path.clone()),
                    "slot": a.slot,
                    "worker": s.name,
                    "host": s.host,
                    "reserved": a.reserved.iter().map(|&r| slots[r].name.clone()).collect::<Vec<_>>(),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::json!({ "placement": rows }))
    } else {
        let width = expanded
            .tasks
            .iter()
            .map(|t| t.path.chars().count())
            .max()
            .unwrap_or(0);
        assignments.iter().try_for_each(|a| {
            let s = &slots[a.slot];
            let path = expanded.tasks.get(a.task).map_or("?", |t| t.path.as_str());
            let mut line = format!("{path:width$}  {}  {}", s.name, s.host);
            if !a.reserved.is_empty() {
                let r: Vec<&str> = a.reserved.iter().map(|&r| slots[r].name.as_str()).collect();
                line.push_str(&format!("  (also reserves {})", r.join(", ")));
            }
            writeln!(out, "{line}")
        })
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{prog}: cannot write: {e}");
            ExitCode::from(1)
        }
    }
}

/// `gspc-property ARGS`: see `gspc-property --help`.
pub fn property_main(argv: &[String]) -> ExitCode {
    const P: &str = "gspc-property";
    let cli = pnet_stdlib::parse_args!(
        PropertyCli,
        P,
        std::iter::once(P).chain(argv.iter().map(String::as_str))
    );
    match cli.command {
        PropertyCommand::Set { key, value } => property_command("set", &[&key, &value], None),
        PropertyCommand::Get { key } => property_command("get", &[&key], None),
        PropertyCommand::Wait { key, timeout } => property_command("wait", &[&key], timeout),
        PropertyCommand::Exec(args) => crate::wrapper::exec_main(args),
    }
}

fn property_command(cmd: &str, args: &[&str], timeout: Option<Duration>) -> ExitCode {
    let fail = |e: ClientError| {
        eprintln!("gspc-property: {e}");
        ExitCode::from(1)
    };
    let props = match Properties::from_env() {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let printed = match cmd {
        "set" => match props.set(args[0], args[1]) {
            Ok(()) => return ExitCode::SUCCESS,
            Err(e) => return fail(e),
        },
        "get" => match props.get(args[0]) {
            Ok(Some(v)) => v,
            Ok(None) => {
                eprintln!(
                    "gspc-property: no value of property `{}` has reached this task yet",
                    args[0]
                );
                return ExitCode::from(1);
            }
            Err(e) => return fail(e),
        },
        _ => match props.wait(args[0], timeout) {
            Ok(v) => v,
            Err(e) => return fail(e),
        },
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match writeln!(out, "{printed}") {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gspc-property: cannot write: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn runner_options() {
        let a = parse_args(
            "gspc-dds",
            &args(&[
                "--var",
                "n=3",
                "--var=msg=a=b",
                "--timeout",
                "2.5",
                "--topology=worker:4",
                "-v",
                "--json",
                "t.xml",
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            a.vars,
            [("n".into(), "3".into()), ("msg".into(), "a=b".into())]
        );
        assert_eq!(a.timeout, Some(Duration::from_millis(2500)));
        assert_eq!(a.topology.as_deref(), Some("worker:4"));
        assert!(a.verbose && a.json);
        assert_eq!(a.file.as_deref(), Some("t.xml"));
        let error = |a: &[&str]| parse_args("gspc-dds", &args(a)).unwrap_err();
        for (a, message) in [
            (&["--var", "x", "t"][..], "--var: `x` is not NAME=VALUE"),
            (&[], "no topology file given"),
            (
                &["--timeout", "-1", "t"],
                "--timeout: `-1` is not a positive number of seconds",
            ),
            (&["--bogus"], "unexpected argument '--bogus'"),
            (&["a", "b"], "unexpected argument 'b'"),
            (
                &["--topology"],
                "a value is required for '--topology <DESC>'",
            ),
        ] {
            let e = error(a);
            assert!(e.contains(message), "{a:?}: {e}");
        }
        let a = parse_args("gspc-dds", &args(&["--no-progress", "--progress", "t"]));
        assert_eq!(a.unwrap().unwrap().progress, Some(true));
        let a = parse_args("gspc-dds", &args(&["--progress", "--no-progress", "t"]));
        assert_eq!(a.unwrap().unwrap().progress, Some(false));
    }

    #[test]
    fn recognizes_dds_topologies() {
        assert!(is_dds_topology(
            "<topology name=\"t\"><main name=\"m\"/></topology>"
        ));
        assert!(is_dds_topology(
            "\u{feff}<?xml version=\"1.0\"?>\n<!-- a -- comment -->\n<!DOCTYPE x>\n<topology>"
        ));
        assert!(!is_dds_topology("<defun name=\"x\"/>"));
        assert!(!is_dds_topology("<topologyx/>"));
        assert!(!is_dds_topology("<!-- unterminated"));
        assert!(!is_dds_topology("not xml"));
        assert!(!is_dds_topology(""));
    }
}
