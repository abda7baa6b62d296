//! `gspc boot` (start a runtime in the background, wait for its workers, print where it
//! runs) and the hidden `gspc daemon` (the runtime itself).

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use pnet_agent::control::{
    INFO_FILE, LOG_FILE, PID_FILE, RtClient, RtError, RtRequest, RtResponse, RuntimeStatus,
    SECRET_FILE, SOCKET_FILE, check_private_dir,
};
use pnet_launch::cli::WorkerArgs;

use crate::{default_state_dir, fail, topo, usage_error};

const BOOT_AFTER_HELP: &str = "\
Global memory: workers with working memory (a topology description with a shm size, like
\"worker:4,67108864\": 64 MiB each) offer it to the runtime's global memory; module calls with
memory transfers run only on them. Clients allocate, fill, read and free global memory with
`gspc alloc`, `gspc mem-write`, `gspc mem-read` and `gspc free`; `gspc status` shows it.

The runtime runs in its own session (it survives the shell); its output and worker event
log go to DIR/daemon.log. `gspc stop` stops it.

Crashes: the runtime keeps a journal of its jobs in DIR/journal (their nets, inputs, tokens
put, task results, ends). After a crash (or SIGKILL), `gspc boot --resume` starts a runtime
on the same state directory with the workers it had (the saved boot options, unless others
are given) and the same secret (leaf agents rejoin it: with `gspc-leaf --root`, boot with
--listen HOST:PORT so that it is back at the same address): the jobs that had not ended go
on from their journaled state (only the tasks whose results were not journaled run again),
the ended ones keep their outcome for `gspc wait` and `gspc jobs`, and job numbers go on. A
boot without --resume starts a new journal (the old one is kept as DIR/journal.old).

Examples:
  gspc boot --topology 'compute:4' --module-path build
  gspc boot --nodefile hosts --launcher ssh --topology 'worker:8,67108864'
  gspc boot --resume";

/// The file with the options of the last boot (for `--resume`).
const BOOT_ARGS_FILE: &str = "boot-args.json";

/// gspc boot: start a runtime with its workers in the background
#[derive(Parser)]
#[command(name = "gspc boot", after_help = BOOT_AFTER_HELP)]
struct BootCli {
    #[command(flatten)]
    workers: WorkerArgs,
    /// How long to wait for the workers to join, in seconds (default 60)
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// The state directory (see `gspc --help`); created with mode 700
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Bring back the jobs of a runtime that crashed in this state directory (from its
    /// journal), with the workers it had
    #[arg(long)]
    resume: bool,
    /// Keep no journal (a crash loses the jobs; for measuring what the journal costs)
    #[arg(long, conflicts_with = "resume")]
    no_journal: bool,
}

/// Options shared by `boot` and `daemon`.
#[derive(Default)]
struct BootArgs {
    topology: Option<String>,
    nodefile: Option<PathBuf>,
    launcher: Option<String>,
    ssh_options: Vec<String>,
    listen: Option<String>,
    module_path: Vec<PathBuf>,
    max_retries: Option<u32>,
    timeout: Option<u64>,
    state_dir: Option<PathBuf>,
    fake_hosts: Option<u32>,
    isolate_modules: bool,
    resume: bool,
    no_journal: bool,
}

fn parse(prog: &str, argv: Vec<OsString>) -> BootArgs {
    let argv = std::iter::once(OsString::from(prog)).chain(argv);
    let cli = pnet_stdlib::parse_args!(BootCli, prog, argv);
    let w = cli.workers;
    BootArgs {
        topology: w.topology,
        nodefile: w.nodefile,
        launcher: w.launcher,
        ssh_options: w.ssh_options,
        listen: w.listen,
        module_path: w.module_path,
        max_retries: w.max_retries,
        timeout: cli.timeout,
        state_dir: cli.state_dir,
        fake_hosts: w.fake_hosts,
        isolate_modules: w.isolate_modules,
        resume: cli.resume,
        no_journal: cli.no_journal,
    }
}

/// For `--resume` without worker options: the options of the boot before, saved in the
/// state directory.
fn saved_boot(dir: &Path, args: BootArgs) -> Result<BootArgs, RtError> {
    let journal = dir.join(pnet_agent::journal::JOURNAL_FILE);
    if !journal.exists() {
        return Err(RtError::new(
            "gspc-no-journal",
            format!(
                "--resume: there is no journal in {} (no runtime ran there, or it was stopped \
                 and its jobs are over): boot without --resume",
                dir.display()
            ),
        ));
    }
    if args.topology.is_some() || args.nodefile.is_some() {
        return Ok(args);
    }
    let path = dir.join(BOOT_ARGS_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        RtError::new(
            "gspc-no-journal",
            format!(
                "--resume: cannot read the options of the last boot ({}: {e}); give the \
                 workers with --topology",
                path.display()
            ),
        )
    })?;
    let saved: Vec<String> = serde_json::from_str(&text).map_err(|e| {
        RtError::new(
            "gspc-no-journal",
            format!("--resume: {} is damaged ({e})", path.display()),
        )
    })?;
    let mut back = parse("gspc boot", saved.into_iter().map(OsString::from).collect());
    back.state_dir = args.state_dir;
    back.timeout = args.timeout.or(back.timeout);
    back.resume = true;
    Ok(back)
}

/// Saves the worker options of a boot for a later `--resume`.
fn save_boot(dir: &Path, daemon_args: &[String]) {
    // The daemon's options less `daemon --state-dir DIR`.
    let mut keep = Vec::new();
    let mut it = daemon_args.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--state-dir" {
            it.next();
        } else if a != "--resume" {
            keep.push(a.clone());
        }
    }
    let text = serde_json::to_string(&keep).unwrap_or_default();
    let _ = std::fs::write(dir.join(BOOT_ARGS_FILE), text);
}

/// Creates the state directory (mode 700; for the default one, its parent too) and checks
/// that it is private.
fn prepare_state_dir(dir: &Path) -> Result<(), RtError> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| {
                RtError::new(
                    "gspc-state-dir",
                    format!("cannot create the state directory {}: {e}", dir.display()),
                )
            })?;
    }
    check_private_dir(dir)
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists.
    pid > 0 && unsafe { libc::kill(pid, 0) } == 0
}

/// The pid of a live runtime in `dir`, if there is one; removes a stale one's files.
fn live_runtime(dir: &Path) -> Option<i32> {
    let pid: Option<i32> = std::fs::read_to_string(dir.join(PID_FILE))
        .ok()
        .and_then(|t| t.trim().parse().ok());
    let sock = dir.join(SOCKET_FILE);
    if let Some(p) = pid
        && pid_alive(p)
        && std::os::unix::net::UnixStream::connect(&sock).is_ok()
    {
        return Some(p);
    }
    let stale = [SOCKET_FILE, PID_FILE, INFO_FILE, SECRET_FILE]
        .iter()
        .any(|f| dir.join(f).exists());
    if stale {
        pnet_stdlib::errln!(
            "gspc: removing the files of a runtime that is gone{} from {}",
            pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
            dir.display()
        );
        for f in [SOCKET_FILE, PID_FILE, INFO_FILE, SECRET_FILE] {
            let _ = std::fs::remove_file(dir.join(f));
        }
    }
    None
}

pub fn boot(argv: Vec<OsString>) -> ExitCode {
    let args = parse("gspc boot", argv);
    let dir = args.state_dir.clone().unwrap_or_else(default_state_dir);
    let args = if args.resume {
        match saved_boot(&dir, args) {
            Ok(a) => a,
            Err(e) => return fail(&e),
        }
    } else {
        args
    };
    // Check the plan here, so that mistakes are usage errors with rendered diagnostics.
    let launcher = args.launcher.as_deref().unwrap_or("local");
    let plan = match topo::plan(
        args.topology.as_deref(),
        args.nodefile.as_deref(),
        launcher,
        0,
    ) {
        Ok(p) => p,
        Err(c) => return c,
    };
    if let Err(c) = topo::launcher(launcher, &args.ssh_options) {
        return c;
    }
    if let Err(e) = prepare_state_dir(&dir) {
        return fail(&e);
    }
    // A resumed runtime keeps the secret of the one that crashed (its stale files are removed
    // just below): leaf agents and workers given it (`gspc-leaf --root`, GSPC_SECRET) join
    // it again, and the segments of their workers stay reachable with it.
    let kept_secret = args
        .resume
        .then(|| pnet_agent::control::read_secret(&dir).ok())
        .flatten();
    if let Some(pid) = live_runtime(&dir) {
        return fail(&RtError::new(
            "gspc-already-running",
            format!(
                "a runtime is already running in {} (pid {pid}); stop it with `gspc stop \
                 --state-dir {}` or boot into another --state-dir",
                dir.display(),
                dir.display()
            ),
        ));
    }
    let secret = match kept_secret.map_or_else(pnet_protocol::Secret::random, Ok) {
        Ok(s) => s,
        Err(e) => {
            return fail(&RtError::new(
                "gspc-secret",
                format!("cannot make a secret: {e}"),
            ));
        }
    };
    let secret_path = dir.join(SECRET_FILE);
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&secret_path)
        .and_then(|mut f| writeln!(f, "{}", secret.to_hex()));
    if let Err(e) = written {
        return fail(&RtError::new(
            "gspc-secret",
            format!("cannot write {}: {e}", secret_path.display()),
        ));
    }
    let log_path = dir.join(LOG_FILE);
    let log = match OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)
    {
        Ok(f) => f,
        Err(e) => {
            return fail(&RtError::new(
                "gspc-log",
                format!("cannot open {}: {e}", log_path.display()),
            ));
        }
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            return fail(&RtError::new(
                "gspc-exe",
                format!("cannot find this program: {e}"),
            ));
        }
    };
    let mut daemon_args: Vec<String> = vec!["daemon".into()];
    let mut push = |k: &str, v: String| {
        daemon_args.push(k.into());
        daemon_args.push(v);
    };
    push("--state-dir", dir.display().to_string());
    if let Some(t) = &args.topology {
        push("--topology", t.clone());
    }
    if let Some(n) = &args.nodefile {
        let n = std::fs::canonicalize(n).unwrap_or_else(|_| n.clone());
        push("--nodefile", n.display().to_string());
    }
    push("--launcher", launcher.to_string());
    for o in &args.ssh_options {
        push("--ssh-option", o.clone());
    }
    if let Some(l) = &args.listen {
        push("--listen", l.clone());
    }
    for m in &args.module_path {
        let m = std::fs::canonicalize(m).unwrap_or_else(|_| m.clone());
        push("--module-path", m.display().to_string());
    }
    if let Some(r) = args.max_retries {
        push("--max-retries", r.to_string());
    }
    if let Some(n) = args.fake_hosts {
        push("--fake-hosts", n.to_string());
    }
    if args.isolate_modules {
        daemon_args.push("--isolate-modules".into());
    }
    if args.no_journal {
        daemon_args.push("--no-journal".into());
    }
    save_boot(&dir, &daemon_args);
    if args.resume {
        daemon_args.push("--resume".into());
    } else {
        let journal = dir.join(pnet_agent::journal::JOURNAL_FILE);
        if journal.exists() {
            let old = journal.with_extension("old");
            let note = pnet_agent::journal::kept_note(&journal, &old);
            if std::fs::rename(&journal, &old).is_ok() {
                pnet_stdlib::errln!("gspc: {note}");
            }
        }
    }
    // The log is appended to: a failed boot shows only what this runtime wrote.
    let log_start = log.metadata().map_or(0, |m| m.len()) as usize;
    let stderr = match log.try_clone() {
        Ok(f) => f,
        Err(e) => {
            return fail(&RtError::new(
                "gspc-log",
                format!("cannot open {}: {e}", log_path.display()),
            ));
        }
    };
    let mut cmd = Command::new(&exe);
    cmd.args(&daemon_args)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr);
    // SAFETY: setsid is async-signal-safe; it puts the runtime in its own session, away from
    // this terminal's job control and hangups.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&secret_path);
            return fail(&RtError::new(
                "gspc-spawn",
                format!("cannot start the runtime ({}): {e}", exe.display()),
            ));
        }
    };
    let timeout = Duration::from_secs(args.timeout.unwrap_or(60));
    let t0 = Instant::now();
    let planned = plan.workers.len();
    let log_tail = || {
        let bytes = std::fs::read(&log_path).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes[log_start.min(bytes.len())..]);
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    };
    let status: RuntimeStatus = loop {
        if let Ok(Some(st)) = child.try_wait() {
            return fail(&RtError::new(
                "gspc-boot-failed",
                format!(
                    "the runtime exited during boot ({st}); the end of {}:\n{}",
                    log_path.display(),
                    log_tail()
                ),
            ));
        }
        if let Ok(c) = RtClient::open(&dir)
            && let Ok(RtResponse::Status(s)) =
                c.call(RtRequest::Status, Some(Duration::from_secs(5)))
        {
            let up = s.workers.iter().filter(|w| w.state == "up").count();
            let dead: Vec<String> = s
                .workers
                .iter()
                .filter(|w| w.state.starts_with("exited"))
                .map(|w| format!("`{}` ({})", w.name, w.state))
                .collect();
            if !dead.is_empty() {
                let _ = c.call(
                    RtRequest::Stop { wait: false },
                    Some(Duration::from_secs(30)),
                );
                return fail(&RtError::new(
                    "gspc-boot-failed",
                    format!(
                        "workers exited before joining: {}; the runtime was stopped; see {}:\n{}",
                        dead.join(", "),
                        log_path.display(),
                        log_tail()
                    ),
                ));
            }
            if up >= planned {
                break s;
            }
            if t0.elapsed() >= timeout {
                let _ = c.call(
                    RtRequest::Stop { wait: false },
                    Some(Duration::from_secs(30)),
                );
                return fail(&RtError::new(
                    "gspc-boot-timeout",
                    format!(
                        "only {up} of {planned} workers joined within {} s; the runtime was \
                         stopped (a longer --timeout? see {})",
                        timeout.as_secs(),
                        log_path.display()
                    ),
                ));
            }
        } else if t0.elapsed() >= timeout {
            // SAFETY: kill(2) on the runtime this command started.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            return fail(&RtError::new(
                "gspc-boot-timeout",
                format!(
                    "the runtime did not answer within {} s; see {}",
                    timeout.as_secs(),
                    log_path.display()
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    pnet_stdlib::outln!("gspc: runtime booted (pid {})", status.pid);
    pnet_stdlib::outln!("  state directory  {}", dir.display());
    pnet_stdlib::outln!("  control socket   {}", dir.join(SOCKET_FILE).display());
    pnet_stdlib::outln!("  workers connect  {}", status.address);
    pnet_stdlib::outln!("  log              {}", log_path.display());
    pnet_stdlib::outln!("  workers          {}", status.workers.len());
    for w in &status.workers {
        pnet_stdlib::outln!(
            "    {:<24} {:<16} pid {:<8} [{}]",
            w.name,
            w.host,
            w.pid.map_or("?".into(), |p| p.to_string()),
            w.capabilities.join(",")
        );
    }
    if args.resume {
        // What the journal gave back (the runtime says it in its log).
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let from = text
            .rfind("journal: resumed")
            .map_or(text.len(), |k| text[..k].rfind('\n').map_or(0, |n| n + 1));
        let mut start = from;
        // The lines about a torn tail come just before.
        for l in text[..from].lines().rev() {
            if l.starts_with("journal: ") {
                start -= l.len() + 1;
            } else {
                break;
            }
        }
        for l in text[start..].lines().filter(|l| l.starts_with("journal: ")) {
            pnet_stdlib::outln!("  {l}");
        }
    }
    let hint = if args.state_dir.is_some() {
        format!(" --state-dir {}", dir.display())
    } else {
        String::new()
    };
    pnet_stdlib::outln!("Next: gspc submit{hint} NET, gspc status{hint}, gspc stop{hint}");
    ExitCode::SUCCESS
}

/// The runtime itself (started by `boot`).
pub fn daemon(argv: Vec<OsString>) -> ExitCode {
    let args = parse("gspc daemon", argv);
    let Some(dir) = args.state_dir.clone() else {
        return usage_error("daemon: --state-dir is required");
    };
    let launcher_name = args.launcher.as_deref().unwrap_or("local");
    let plan = match topo::plan(
        args.topology.as_deref(),
        args.nodefile.as_deref(),
        launcher_name,
        0,
    ) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let launcher = match topo::launcher(launcher_name, &args.ssh_options) {
        Ok(l) => l,
        Err(c) => return c,
    };
    let listen = match args.listen.as_deref().unwrap_or("127.0.0.1:0").parse() {
        Ok(a) => a,
        Err(_) => return usage_error("--listen: not an address like 127.0.0.1:0"),
    };
    let secret = match pnet_agent::control::read_secret(&dir) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let worker = pnet_agent::worker_program();
    let mut module_path = args.module_path.clone();
    if let Some(d) = worker.parent().filter(|d| !d.as_os_str().is_empty()) {
        module_path.push(d.to_path_buf());
    }
    let run = pnet_engine::RunConfig {
        runner: Some(std::sync::Arc::new(pnet_jit::JitFactory::new(
            pnet_jit::JitMode::Auto,
        ))),
        ..pnet_engine::RunConfig::default()
    };
    let mut agent = pnet_agent::AgentConfig::new(plan, worker);
    agent.run = run;
    agent.launcher = launcher;
    agent.module_path = module_path;
    agent.listen = listen;
    agent.log = Some(dir.join(LOG_FILE));
    agent.max_retries = args.max_retries;
    agent.fake_hosts = args.fake_hosts.unwrap_or(0);
    agent.isolate_modules = args.isolate_modules;
    let rc = pnet_agent::RuntimeConfig {
        agent,
        state_dir: dir,
        secret,
        sched: pnet_agent::SchedConfig::default(),
        stop_grace: Duration::from_secs(3),
    };
    let journaling = if args.resume {
        pnet_agent::journal::Journaling::Resume
    } else if args.no_journal {
        pnet_agent::journal::Journaling::Off
    } else {
        pnet_agent::journal::Journaling::New
    };
    match pnet_agent::serve_journaled(rc, journaling) {
        Ok(r) => {
            pnet_stdlib::errln!(
                "gspc daemon: stopped: {} jobs cancelled, {} workers stopped, {} left",
                r.cancelled.len(),
                r.workers.len(),
                r.left.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            pnet_stdlib::errln!("gspc daemon: error[{}]: {e}", e.code());
            ExitCode::from(1)
        }
    }
}
