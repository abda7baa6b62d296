//! The tokio shell around the [`Hub`] (and so around one [`crate::core::Core`] per job): one
//! current-thread runtime runs the hub's loop, the worker connections, the control socket,
//! signals, the progress line, the trace and the event log. Workers of the plan are started
//! through `pnet-launch` and stopped at the end.
//!
//! There is one shell for both uses: [`run`] (`run_job`: a runtime with one job, stopped when
//! the job ends; its control socket speaks the job protocol of [`crate::control::Request`])
//! and [`serve`] (the persistent runtime of `gspc`: jobs come and go through the control
//! socket in its state directory, which speaks [`crate::control::RtRequest`] and checks the
//! peer's uid and the runtime's secret; workers can be added and removed; it ends with a
//! `Stop` request or SIGTERM/SIGINT).
//!
//! The parts, one job each: [`event_loop`] (the loop around the hub), [`workers`] (worker
//! connections), [`control_socket`] (the control socket) and [`requests`] (answering its
//! clients), [`launch`] (starting, restarting and stopping workers), [`memory_io`] (global
//! memory for clients and `--alloc`), [`dumps`] (`--dump`), [`log`] (the event log and the
//! progress line). This file holds the shell's state and its two entry points.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use pnet_bundle::Bundle;
use pnet_engine::RunResult;
use pnet_protocol::{Hello, Secret, WorkerMsg};
use pnet_stdlib::Value;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

use crate::control::{
    INFO_FILE, PID_FILE, Request, RtRequest, RtResponse, SOCKET_FILE, StopReport, WorkerRef,
};
use crate::core::{CoreConfig, calls_modules};
use crate::hub::{Hub, HubConfig, JobId};
use crate::memory::MemIo;
use crate::trace::TraceWriter;
use crate::{AgentConfig, AgentError, JobOptions, RuntimeConfig, StartWorkers};

mod control_socket;
mod dumps;
mod event_loop;
mod launch;
pub(crate) mod leaf;
mod log;
mod memory_io;
mod requests;
mod workers;

use launch::{LaunchedWorker, Restart};
use log::Logger;
use workers::{Conn, Shared};

/// What the shell's tasks (worker connections, control clients, the memory I/O thread) tell
/// the event loop.
enum ShellEvent {
    Joined {
        id: u32,
        hello: Hello,
        /// A leaf agent's first capacity (it said `WorkerMsg::LeafHello`).
        capacity: Option<u32>,
        defs_upto: u32,
        tx: UnboundedSender<Bytes>,
        writer: JoinHandle<()>,
    },
    Refused {
        peer: SocketAddr,
        reason: String,
    },
    Msgs {
        id: u32,
        msgs: Vec<WorkerMsg>,
    },
    Lost {
        id: u32,
        reason: String,
    },
    /// A lost worker's process had not ended yet: look again (see `Shell::worker_gone`).
    LostWait {
        id: u32,
        name: String,
        reason: String,
        deadline: std::time::Instant,
    },
    ClientOpened {
        client: u64,
        tx: UnboundedSender<Bytes>,
    },
    /// A request of a job client (`run_job`'s control socket).
    Control {
        client: u64,
        request: Request,
    },
    /// A request of a runtime client (already authenticated).
    Runtime {
        client: u64,
        request: RtRequest,
    },
    ClientClosed {
        client: u64,
    },
    /// A control client refused before it could say anything (another user).
    ClientRefused {
        reason: String,
    },
    /// The answer of a memory request, from the memory I/O thread.
    MemReply {
        client: u64,
        response: Box<RtResponse>,
    },
}

fn setup(what: &str) -> impl Fn(std::io::Error) -> AgentError + '_ {
    move |e| AgentError::Setup(format!("{what}: {e}"))
}

/// `run_job`: a runtime with one job (number 0), stopped when it ends.
pub(crate) fn run(
    bundle: &Bundle,
    inputs: &[(String, Vec<Value>)],
    config: &AgentConfig,
    options: JobOptions,
) -> Result<RunResult, AgentError> {
    let start_workers = match config.start_workers {
        StartWorkers::Always => true,
        StartWorkers::IfModules => calls_modules(bundle),
    };
    let planned = if start_workers {
        config.plan.workers.len()
    } else {
        0
    };
    let core_cfg = CoreConfig {
        max_retries: config.max_retries,
        control: config.control.is_some(),
        expected_workers: planned + options.external_workers,
        // Task records for the trace, the logs and the control socket's task list.
        trace: config.trace.is_some() || config.logs.is_some() || config.control.is_some(),
        sched: options.sched.clone(),
        ..CoreConfig::default()
    };
    let mut hub = Hub::new(
        HubConfig {
            run: config.run.clone(),
            core: core_cfg,
            job_prefix: false,
            keep_ended: 1,
            forget_modules: false,
        },
        0,
    );
    let mut first = Vec::new();
    // With global memory to allocate first, the job starts once the workers (and their
    // segments) are there.
    let deferred = if options.allocs.is_empty() {
        if !options.dumps.is_empty() {
            return Err(AgentError::Setup(
                "--dump needs the allocation it names (--alloc)".into(),
            ));
        }
        hub.add_job("job", bundle.clone(), inputs, &mut first)?;
        None
    } else {
        if !start_workers {
            return Err(AgentError::Setup(
                "--alloc needs workers with working memory, but the net calls no modules".into(),
            ));
        }
        Some((bundle.clone(), inputs.to_vec()))
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(setup("cannot start the runtime"))?;
    let grace = options.stop_grace;
    let mut shell = Shell::new(hub, config, Mode::Job, options)?;
    shell.deferred_job = deferred;
    let result = rt.block_on(shell.run(start_workers, first));
    drop(rt);
    let ended = shell.stop_launched(grace);
    if config.verbose {
        for (name, how) in ended {
            eprintln!("worker `{name}`: {how}");
        }
    }
    if let Some(p) = &config.control {
        let _ = std::fs::remove_file(p);
    }
    match result {
        End::Job(r) => *r,
        End::Stopped { .. } => Err(AgentError::Cancelled),
    }
}

/// The persistent runtime: serves its control socket until a `Stop` request or a signal.
pub(crate) fn serve(
    rc: RuntimeConfig,
    journal: crate::journal::Journaling,
) -> Result<StopReport, AgentError> {
    let config = &rc.agent;
    let core_cfg = CoreConfig {
        max_retries: config.max_retries,
        control: true,
        expected_workers: 0,
        // Task records for `gspc tasks`, `gspc trace` and `gspc logs`.
        trace: true,
        sched: rc.sched.clone(),
        wait_for_workers: true,
        ..CoreConfig::default()
    };
    let mut hub = Hub::new(
        HubConfig {
            run: config.run.clone(),
            core: core_cfg,
            job_prefix: true,
            keep_ended: 10_000,
            forget_modules: true,
        },
        1,
    );
    let state_dir = rc.state_dir.clone();
    crate::control::check_private_dir(&state_dir).map_err(|e| AgentError::Setup(e.message))?;
    crate::journal::open(&mut hub, &state_dir, journal).map_err(AgentError::Setup)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(setup("cannot start the runtime"))?;
    let options = JobOptions {
        secret: Some(rc.secret.clone()),
        stop_grace: rc.stop_grace,
        sched: rc.sched.clone(),
        ..JobOptions::default()
    };
    let pid_file = state_dir.join(PID_FILE);
    std::fs::write(&pid_file, format!("{}\n", std::process::id()))
        .map_err(|e| AgentError::Setup(format!("cannot write {}: {e}", pid_file.display())))?;
    let mut shell = Shell::new(
        hub,
        config,
        Mode::Runtime {
            state_dir: state_dir.clone(),
            secret: rc.secret.clone(),
        },
        options,
    )?;
    let end = rt.block_on(shell.run(true, Vec::new()));
    let (cancelled, finished, client) = match end {
        End::Stopped {
            cancelled,
            finished,
            client,
        } => (cancelled, finished, client),
        End::Job(r) => {
            // Only a failed setup ends the loop this way.
            let _ = shell.stop_launched(rc.stop_grace);
            drop(shell);
            drop(rt);
            let _ = std::fs::remove_file(&pid_file);
            let _ = std::fs::remove_file(state_dir.join(INFO_FILE));
            return Err(match *r {
                Err(e) => e,
                Ok(_) => AgentError::Setup("the runtime ended without a stop".into()),
            });
        }
    };
    let mut workers: Vec<WorkerRef> = shell.launched.iter().map(|l| l.meta.clone()).collect();
    let pids: Vec<(WorkerRef, u32)> = shell
        .launched
        .iter()
        .filter_map(|l| l.proc.pid().map(|p| (l.meta.clone(), p)))
        .collect();
    // The workers it did not start were told Shutdown too: those that joined by themselves,
    // the leaf agents and the workers under them.
    let (joined, leaves) = joined_workers(&shell);
    workers.extend(joined.iter().cloned());
    let ended = shell.stop_launched(rc.stop_grace);
    for (name, how) in &ended {
        shell.log.line(&format!("worker `{name}`: {how}"));
    }
    for h in shell.removals.drain(..) {
        let _ = h.join();
    }
    let mut left: Vec<WorkerRef> = pids
        .into_iter()
        .filter(|(_, p)| pnet_launch::testing::alive(*p))
        .map(|(w, _)| w)
        .collect();
    left.extend(still_alive_here(
        leaves.iter().chain(&joined),
        rc.stop_grace,
    ));
    let report = StopReport {
        pid: std::process::id(),
        cancelled,
        finished,
        workers,
        left,
        leaves,
    };
    shell.log.line(&format!(
        "stopped: {} jobs cancelled, {} workers stopped ({} leaf agents), {} left",
        report.cancelled.len(),
        report.workers.len(),
        report.leaves.len(),
        report.left.len()
    ));
    if let Some(client) = client {
        shell.reply_rt(client, RtResponse::Stopped(report.clone()));
    }
    // Let the last answer go out, then remove the socket and the files.
    rt.block_on(async {
        drop(std::mem::take(&mut shell.clients));
        tokio::time::sleep(Duration::from_millis(50)).await;
    });
    drop(shell);
    drop(rt);
    for f in [
        SOCKET_FILE,
        PID_FILE,
        INFO_FILE,
        crate::control::SECRET_FILE,
    ] {
        let _ = std::fs::remove_file(state_dir.join(f));
    }
    Ok(report)
}

/// The joined workers the runtime did not start (those that joined by themselves, and those
/// under its leaf agents, named `LEAF/WORKER`) and its leaf agents.
fn joined_workers(shell: &Shell<'_>) -> (Vec<WorkerRef>, Vec<WorkerRef>) {
    let launched: HashSet<&str> = shell
        .launched
        .iter()
        .map(|l| l.meta.name.as_str())
        .collect();
    let (mut joined, mut leaves) = (Vec::new(), Vec::new());
    for w in shell.hub.workers().values() {
        if launched.contains(w.name.as_str()) {
            continue;
        }
        let r = WorkerRef {
            name: w.name.clone(),
            host: w.host.clone(),
            pid: Some(w.pid),
        };
        if w.capacity.is_none() {
            joined.push(r);
            continue;
        }
        leaves.push(r);
        joined.extend(w.under_refs());
    }
    (joined, leaves)
}

/// Of these workers told to stop, those on this host still alive after `grace` (those on
/// other hosts cannot be looked at from here).
fn still_alive_here<'a>(
    refs: impl Iterator<Item = &'a WorkerRef>,
    grace: Duration,
) -> Vec<WorkerRef> {
    let here = leaf::hostname();
    let local: Vec<(&WorkerRef, u32)> = refs
        .filter(|r| r.host == here)
        .filter_map(|r| Some((r, r.pid?)))
        .collect();
    let deadline = Instant::now() + grace;
    while local.iter().any(|(_, p)| pnet_launch::testing::alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    local
        .into_iter()
        .filter(|(_, p)| pnet_launch::testing::alive(*p))
        .map(|(r, _)| r.clone())
        .collect()
}

enum Mode {
    Job,
    Runtime { state_dir: PathBuf, secret: Secret },
}

/// A job's input tokens by port.
type JobInputs = Vec<(String, Vec<Value>)>;

/// How the loop ended.
enum End {
    /// `run_job`'s job ended.
    Job(Box<Result<RunResult, AgentError>>),
    /// The runtime was stopped (by this client, or by a signal).
    Stopped {
        cancelled: Vec<JobId>,
        finished: Vec<JobId>,
        client: Option<u64>,
    },
}

struct ClientConn {
    tx: UnboundedSender<Bytes>,
    runtime: bool,
}

struct Shell<'c> {
    hub: Hub,
    config: &'c AgentConfig,
    mode: Mode,
    options: JobOptions,
    start: Instant,
    log: Logger,
    trace: Option<TraceWriter>,
    conns: HashMap<u32, Conn>,
    clients: HashMap<u64, ClientConn>,
    launched: Vec<LaunchedWorker>,
    /// Threads stopping removed workers.
    removals: Vec<std::thread::JoinHandle<()>>,
    shared: Option<Arc<Shared>>,
    agent_addr: String,
    joined_names: HashSet<String>,
    /// Workers lost since they joined: name -> reason.
    lost_names: HashMap<String, String>,
    /// Planned workers that exited before joining: "`name` (how it ended)".
    dead_before_join: HashSet<String>,
    /// A SIGTERM cancelled the job (it ends as [`AgentError::Terminated`]).
    terminated: bool,
    dead_names: HashSet<String>,
    ev_tx: UnboundedSender<ShellEvent>,
    ev_rx: Option<UnboundedReceiver<ShellEvent>>,
    /// A `Stop { wait: true }` is waiting for the jobs: (client, jobs waited for).
    stopping: Option<(u64, Vec<JobId>)>,
    /// Workers started so far (for `--fake-hosts`).
    launch_count: u64,
    /// Lost workers to start again.
    restarts: Vec<Restart>,
    /// Restarted workers that have not joined yet.
    coming: HashSet<String>,
    /// The thread reading and writing global memory for clients (started on first use).
    memio: Option<MemIo>,
    /// `run_job`'s job when it waits for the workers' segments to allocate its memory.
    deferred_job: Option<(Bundle, JobInputs)>,
    /// When the joining was over while a job waited for segments.
    segments_wait: Option<Instant>,
    /// `run_job`'s allocations: (port, handle, size), freed when the job ends.
    job_allocs: Vec<(String, String, u64)>,
}

impl<'c> Shell<'c> {
    fn new(
        hub: Hub,
        config: &'c AgentConfig,
        mode: Mode,
        options: JobOptions,
    ) -> Result<Shell<'c>, AgentError> {
        let start = Instant::now();
        let log = Logger::open(config, &mode, start)?;
        let trace = match &config.trace {
            Some(p) => Some(TraceWriter::create(p).map_err(|e| {
                AgentError::Setup(format!("cannot create the trace file {}: {e}", p.display()))
            })?),
            None => None,
        };
        if let Some(d) = &config.logs {
            std::fs::create_dir_all(d).map_err(|e| {
                AgentError::Setup(format!(
                    "cannot create the log directory {}: {e}",
                    d.display()
                ))
            })?;
        }
        let (ev_tx, ev_rx) = unbounded_channel::<ShellEvent>();
        Ok(Shell {
            hub,
            config,
            mode,
            options,
            start,
            log,
            trace,
            conns: HashMap::new(),
            clients: HashMap::new(),
            launched: Vec::new(),
            removals: Vec::new(),
            shared: None,
            agent_addr: String::new(),
            joined_names: HashSet::new(),
            lost_names: HashMap::new(),
            dead_before_join: HashSet::new(),
            terminated: false,
            dead_names: HashSet::new(),
            ev_tx,
            ev_rx: Some(ev_rx),
            stopping: None,
            launch_count: 0,
            restarts: Vec::new(),
            coming: HashSet::new(),
            memio: None,
            deferred_job: None,
            segments_wait: None,
            job_allocs: Vec::new(),
        })
    }

    fn is_runtime(&self) -> bool {
        matches!(self.mode, Mode::Runtime { .. })
    }
}

#[cfg(test)]
mod mem_tests;
#[cfg(test)]
mod real;
#[cfg(test)]
mod rt_tests;
#[cfg(test)]
mod tests;
