//! Running a placed topology: the property server, one wrapper process per task instance
//! (through pnet-launch), restarts by trigger, stopping everything on a failure.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pnet_dds::{Expanded, Topology};
use pnet_launch::{Launched, Launcher, WorkerCommand};
use pnet_protocol::Secret;
use pnet_protocol::property::TaskExit;
use pnet_topology::Plan;

use crate::place::{Assignment, PlaceError, Slot, place, slots_from_plan};
use crate::props::PropertyBook;
use crate::report::{Outcome, RunReport, TaskReport};
use crate::server::{Event, Server};
use crate::setup::{restarts_allowed, session_id, task_setup};

/// How to run a session.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The workers, which are the slots.
    pub plan: Plan,
    pub launcher: Launcher,
    /// The `gspc-property` program (its path on the hosts, for ssh and Slurm).
    pub property_program: PathBuf,
    /// Where the property server listens (default 127.0.0.1:0).
    pub listen: SocketAddr,
    /// The address tasks connect to (`host:port`); default: the listen address, or this
    /// host's name when listening on every interface.
    pub advertise: Option<String>,
    /// The folder for session folders on each host (default: the host's temporary folder).
    pub workdir: Option<PathBuf>,
    /// Keep the session folder (otherwise a session folder in this host's temporary folder is
    /// removed after a successful local run).
    pub keep_workdir: bool,
    /// The folder of the topology file, given to tasks as `GSPC_DDS_TOPOLOGY_DIR`.
    pub topology_dir: Option<PathBuf>,
    /// Stop the session after this long.
    pub timeout: Option<Duration>,
    /// Print per-task events on stderr.
    pub verbose: bool,
    /// Show a progress line on stderr.
    pub progress: bool,
    /// How long stopped tasks get between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Set to stop the session (e.g. from a SIGINT handler).
    pub cancel: Option<Arc<AtomicBool>>,
    /// The program name in messages (`gspc-dds`).
    pub name: String,
}

impl RunConfig {
    /// Defaults for `plan`: local launcher, `gspc-property` beside the current executable,
    /// loopback, no timeout, quiet.
    pub fn new(plan: Plan) -> RunConfig {
        RunConfig {
            plan,
            launcher: Launcher::Local,
            property_program: property_program(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            advertise: None,
            workdir: None,
            keep_workdir: false,
            topology_dir: None,
            timeout: None,
            verbose: false,
            progress: false,
            grace: Duration::from_secs(2),
            cancel: None,
            name: "gspc-dds".into(),
        }
    }
}

/// `gspc-property` beside the current executable, unless `GSPC_PROPERTY` names another.
pub fn property_program() -> PathBuf {
    if let Some(p) = std::env::var_os("GSPC_PROPERTY") {
        return PathBuf::from(p);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("gspc-property")))
        .unwrap_or_else(|| PathBuf::from("gspc-property"))
}

/// Why a session could not run at all.
#[derive(Debug)]
pub enum RunError {
    /// Some tasks cannot be placed.
    Place(Vec<PlaceError>),
    /// The property server or the session could not be set up.
    Setup(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Place(errors) => {
                let msgs: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
                f.write_str(&msgs.join("\n"))
            }
            RunError::Setup(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

/// One task instance during the run.
struct Live {
    slot: usize,
    attempt: u32,
    restarts: u32,
    allowed: u32,
    launched: Option<Launched>,
    exit: Option<TaskExit>,
    stderr_tail: String,
    done: bool,
}

/// Prints events and the progress line on stderr.
struct Console {
    name: String,
    verbose: bool,
    progress: bool,
    shown: bool,
    last: Instant,
}

impl Console {
    fn clear(&mut self) {
        if self.shown {
            eprint!("\r\x1b[2K");
            self.shown = false;
        }
    }

    fn say(&mut self, msg: &str) {
        if self.verbose {
            self.clear();
            eprintln!("{}: {msg}", self.name);
        }
    }

    fn progress(&mut self, live: &[Live], force: bool) {
        if !self.progress || (!force && self.last.elapsed() < Duration::from_millis(100)) {
            return;
        }
        self.last = Instant::now();
        let done = live.iter().filter(|l| l.done).count();
        let running = live.iter().filter(|l| l.launched.is_some()).count();
        let restarts: u32 = live.iter().map(|l| l.restarts).sum();
        eprint!(
            "\r\x1b[2K{}: {} tasks: {running} running, {done} done, {restarts} restart{}",
            self.name,
            live.len(),
            if restarts == 1 { "" } else { "s" }
        );
        let _ = std::io::stderr().flush();
        self.shown = true;
    }
}

/// The address tasks use to reach the server.
fn advertised(config: &RunConfig, addr: SocketAddr) -> String {
    if let Some(a) = &config.advertise {
        return a.clone();
    }
    if addr.ip().is_unspecified() {
        format!("{}:{}", pnet_topology::local_hostname(), addr.port())
    } else {
        addr.to_string()
    }
}

/// A line for `-v` about a server event.
fn describe_event<'a>(
    e: Event,
    path: &dyn Fn(usize) -> &'a str,
    worker: &dyn Fn(usize) -> &'a str,
) -> Option<String> {
    match e {
        Event::Setup { .. } => None,
        Event::Started { task, attempt, pid } => Some(format!(
            "{} started on {} (pid {pid}{})",
            path(task),
            worker(task),
            if attempt > 0 {
                format!(", run {}", attempt + 1)
            } else {
                String::new()
            }
        )),
        Event::PropertySet {
            task,
            key,
            receivers,
        } => Some(format!(
            "{} set property `{key}` (reached {receivers} task{})",
            path(task),
            if receivers == 1 { "" } else { "s" }
        )),
        Event::PropertyRefused { message, .. } => Some(message),
        Event::Refused { peer, reason } => {
            Some(format!("refused a connection from {peer}: {reason}"))
        }
    }
}

/// Places and runs the topology; returns the report of the session (which may have failed:
/// see [`RunReport::outcome`]), or an error if it could not start.
pub fn run(
    topology: &Topology,
    expanded: &Expanded,
    config: &RunConfig,
) -> Result<RunReport, RunError> {
    let started = Instant::now();
    let slots = slots_from_plan(&config.plan);
    let assignments = place(topology, expanded, &slots).map_err(RunError::Place)?;
    run_placed(topology, expanded, config, &slots, &assignments, started)
}

/// Runs with a placement made before.
pub fn run_placed(
    topology: &Topology,
    expanded: &Expanded,
    config: &RunConfig,
    slots: &[Slot],
    assignments: &[Assignment],
    started: Instant,
) -> Result<RunReport, RunError> {
    let session = session_id().map_err(|e| RunError::Setup(format!("no random numbers: {e}")))?;
    let secret =
        Secret::random().map_err(|e| RunError::Setup(format!("no random numbers: {e}")))?;
    let session_dir: Option<PathBuf> = config.workdir.as_ref().map(|d| {
        let d = if d.is_relative() {
            std::env::current_dir()
                .map(|c| c.join(d))
                .unwrap_or_else(|_| d.clone())
        } else {
            d.clone()
        };
        d.join(format!("gspc-dds-{session}"))
    });
    let session_dir_text = session_dir.as_ref().map(|d| d.display().to_string());
    let topology_dir = config
        .topology_dir
        .as_ref()
        .map(|d| d.display().to_string());

    let mut slot_of = vec![usize::MAX; expanded.tasks.len()];
    for a in assignments {
        if let Some(s) = slot_of.get_mut(a.task) {
            *s = a.slot;
        }
    }
    let mut setups = Vec::with_capacity(expanded.tasks.len());
    for (i, &s) in slot_of.iter().enumerate() {
        let slot = slots
            .get(s)
            .ok_or_else(|| RunError::Setup(format!("task {i} has no slot")))?;
        let setup = task_setup(
            topology,
            expanded,
            i,
            slot,
            &session,
            session_dir_text.as_deref(),
            topology_dir.as_deref(),
        )
        .ok_or_else(|| RunError::Setup(format!("task {i} does not match the topology")))?;
        setups.push(setup);
    }
    let (tx, rx) = mpsc::channel();
    let mut server = Server::start(
        config.listen,
        secret.clone(),
        PropertyBook::new(topology, expanded),
        setups,
        Some(tx),
    )
    .map_err(|e| {
        RunError::Setup(format!(
            "cannot listen on {} for the tasks: {e}",
            config.listen
        ))
    })?;
    let connect = advertised(config, server.addr());
    let mut console = Console {
        name: config.name.clone(),
        verbose: config.verbose,
        progress: config.progress,
        shown: false,
        last: Instant::now(),
    };
    console.say(&format!(
        "session {session}: {} tasks, property server on {}",
        expanded.tasks.len(),
        server.addr()
    ));

    let mut live: Vec<Live> = slot_of
        .iter()
        .enumerate()
        .map(|(i, &slot)| Live {
            slot,
            attempt: 0,
            restarts: 0,
            allowed: restarts_allowed(topology, expanded, i).unwrap_or(0),
            launched: None,
            exit: None,
            stderr_tail: String::new(),
            done: false,
        })
        .collect();
    let path = |i: usize| expanded.tasks.get(i).map_or("?", |t| t.path.as_str());
    let launch = |i: usize, l: &mut Live| -> Result<Launched, String> {
        let slot = &slots[l.slot];
        let cmd = WorkerCommand {
            name: path(i).to_string(),
            host: slot.host.clone(),
            program: config.property_program.clone(),
            args: vec![
                "exec".into(),
                "--connect".into(),
                connect.clone(),
                "--task".into(),
                i.to_string(),
                "--attempt".into(),
                l.attempt.to_string(),
            ],
            env: Vec::new(),
            stdin: Some(format!("{}\n", secret.to_hex()).into_bytes()),
            log: None,
        };
        pnet_launch::launch(&config.launcher, &cmd).map_err(|e| e.to_string())
    };

    let mut outcome = Outcome::Success;
    // Start everything; a launch error is a crash of that task.
    let mut crashed: Vec<(usize, TaskExit)> = Vec::new();
    for (i, l) in live.iter_mut().enumerate() {
        match launch(i, l) {
            Ok(p) => l.launched = Some(p),
            Err(e) => crashed.push((i, TaskExit::NotStarted(e))),
        }
    }
    let deadline = config.timeout.map(|t| started + t);
    'session: loop {
        // Events from the server.
        while let Ok(e) = rx.try_recv() {
            if let Some(m) = describe_event(e, &path, &|t| {
                live.get(t).map_or("?", |l| slots[l.slot].name.as_str())
            }) {
                console.say(&m);
            }
        }
        // Ended processes.
        for (i, l) in live.iter_mut().enumerate() {
            let Some(p) = l.launched.as_mut() else {
                continue;
            };
            let status = match p.try_wait() {
                Ok(Some(s)) => s,
                Ok(None) => continue,
                Err(e) => {
                    crashed.push((
                        i,
                        TaskExit::NotStarted(format!("cannot be waited for: {e}")),
                    ));
                    l.launched = None;
                    continue;
                }
            };
            l.launched = None;
            match server.take_report(i, l.attempt) {
                Some(r) => {
                    l.stderr_tail = r.stderr_tail;
                    if r.exit.success() {
                        l.exit = Some(r.exit);
                        l.done = true;
                        console.say(&format!("{} exited with status 0", path(i)));
                    } else {
                        crashed.push((i, r.exit));
                    }
                }
                None => crashed.push((
                    i,
                    TaskExit::NotStarted(format!(
                        "its wrapper (gspc-property exec) {} without reporting",
                        pnet_launch::describe(status)
                    )),
                )),
            }
        }
        // Crashes: restart or fail.
        for (i, exit) in std::mem::take(&mut crashed) {
            let l = &mut live[i];
            if l.restarts < l.allowed {
                l.restarts += 1;
                l.attempt += 1;
                console.say(&format!(
                    "{} {exit}; restarting it (restart {} of {})",
                    path(i),
                    l.restarts,
                    l.allowed
                ));
                match launch(i, l) {
                    Ok(p) => l.launched = Some(p),
                    Err(e) => crashed.push((i, TaskExit::NotStarted(e))),
                }
            } else {
                let mut how = exit.to_string();
                if l.allowed > 0 {
                    how.push_str(&format!(
                        " and has no restart left (its trigger allows {})",
                        l.allowed
                    ));
                }
                console.say(&format!("{} {how}", path(i)));
                l.exit = Some(exit);
                l.done = true;
                outcome = Outcome::TaskFailed { task: i, how };
                break 'session;
            }
        }
        if live.iter().all(|l| l.done) {
            break;
        }
        if let Some(flag) = &config.cancel
            && flag.load(Ordering::SeqCst)
        {
            outcome = Outcome::Cancelled;
            break;
        }
        if let Some(d) = deadline
            && Instant::now() >= d
        {
            outcome = Outcome::TimedOut(config.timeout.unwrap_or_default());
            break;
        }
        console.progress(&live, false);
        std::thread::sleep(Duration::from_millis(10));
    }
    // Stop what still runs.
    let mut rest: Vec<Launched> = live.iter_mut().filter_map(|l| l.launched.take()).collect();
    if !rest.is_empty() {
        console.say(&format!(
            "stopping {} task{}",
            rest.len(),
            if rest.len() == 1 { "" } else { "s" }
        ));
        pnet_launch::stop_all(&mut rest, config.grace);
    }
    server.shutdown();
    console.clear();

    // The session folder of a local run in the temporary folder goes after a success.
    let local_dir = match (&session_dir, &config.launcher) {
        (Some(d), _) => Some(d.clone()),
        (None, Launcher::Local) => Some(std::env::temp_dir().join(format!("gspc-dds-{session}"))),
        (None, _) => None,
    };
    let mut workdir = local_dir.clone();
    if outcome == Outcome::Success
        && !config.keep_workdir
        && config.workdir.is_none()
        && matches!(config.launcher, Launcher::Local)
        && let Some(d) = &local_dir
    {
        let _ = std::fs::remove_dir_all(d);
        workdir = None;
    }
    if workdir.as_ref().is_some_and(|d| !d.exists()) {
        workdir = None;
    }

    let tasks = live
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let t = &expanded.tasks[i];
            let slot = &slots[l.slot];
            TaskReport {
                path: t.path.clone(),
                id: t.id,
                worker: slot.name.clone(),
                host: slot.host.clone(),
                slot: l.slot,
                restarts: l.restarts,
                exit: l.exit,
                stderr_tail: l.stderr_tail,
            }
        })
        .collect();
    Ok(RunReport {
        session,
        topology: topology.name.clone(),
        tasks,
        outcome,
        elapsed: started.elapsed(),
        workdir,
    })
}
