//! The tokio shell around the [`Hub`] (and so around one [`crate::core::Core`] per job): one
//! current-thread runtime runs the hub's loop, the listener (handshake: protocol version,
//! then secret; `Refused` with a reason otherwise), one reader and one writer task per worker
//! (the writer feeds each message of a batch and flushes once, and sends heartbeats; the
//! reader forwards batches of messages and declares the worker lost when it is silent for
//! `HEARTBEAT_TIMEOUT`), the control socket, signals, the progress line, the trace and the
//! event log. Workers of the plan are started through `pnet-launch` with the secret on their
//! stdin and stopped at the end (Shutdown, then `stop_all` with a grace period).
//!
//! There is one shell for both uses: [`run`] (`run_job`: a runtime with one job, stopped when
//! the job ends; its control socket speaks the job protocol of [`crate::control::Request`])
//! and [`serve`] (the persistent runtime of `gspc`: jobs come and go through the control
//! socket in its state directory, which speaks [`crate::control::RtRequest`] and checks the
//! peer's uid and the runtime's secret; workers can be added and removed; it ends with a
//! `Stop` request or SIGTERM/SIGINT).

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{FutureExt, SinkExt, StreamExt};
use pnet_bundle::Bundle;
use pnet_launch::{Launched, WorkerCommand};
use pnet_protocol::frame::{self, encode};
use pnet_protocol::peer::current_uid;
use pnet_protocol::{
    AgentMsg, HEARTBEAT_INTERVAL, HEARTBEAT_TIMEOUT, Hello, ModuleDef, PREAUTH_CONNECTIONS,
    PREAUTH_TIMEOUT, PROTOCOL_VERSION, Secret, WorkerMsg, hello_protocol,
};
use pnet_stdlib::Value;
use pnet_topology::PlannedWorker;
use pnet_vm::RunResult;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

use crate::control::{
    INFO_FILE, PID_FILE, Request, Response, RtEnvelope, RtRequest, RtResponse, RtWorker,
    RuntimeStatus, SOCKET_FILE, StopReport, WorkerRef,
};
use crate::core::{CoreConfig, calls_modules};
use crate::hub::{ClientReply, Hub, HubCmd, HubConfig, JobId};
use crate::memory::{IoJob, MemIo};
use crate::trace::TraceWriter;
use crate::{AgentConfig, AgentError, JobOptions, RuntimeConfig, StartWorkers};
use pnet_memory::{RangePiece, read_pieces, write_pieces};

/// Events handled before the hub pumps again.
const EVENT_BATCH: usize = 4096;

enum ShellEvent {
    Joined {
        id: u32,
        hello: Hello,
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
        response: RtResponse,
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
        trace: config.trace.is_some(),
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
pub(crate) fn serve(rc: RuntimeConfig) -> Result<StopReport, AgentError> {
    let config = &rc.agent;
    let core_cfg = CoreConfig {
        max_retries: config.max_retries,
        control: true,
        expected_workers: 0,
        trace: config.trace.is_some(),
        sched: rc.sched.clone(),
        wait_for_workers: true,
        ..CoreConfig::default()
    };
    let hub = Hub::new(
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
    let workers: Vec<WorkerRef> = shell.launched.iter().map(|l| l.meta.clone()).collect();
    let pids: Vec<(WorkerRef, u32)> = shell
        .launched
        .iter()
        .filter_map(|l| l.proc.pid().map(|p| (l.meta.clone(), p)))
        .collect();
    let ended = shell.stop_launched(rc.stop_grace);
    for (name, how) in &ended {
        shell.log.line(&format!("worker `{name}`: {how}"));
    }
    for h in shell.removals.drain(..) {
        let _ = h.join();
    }
    let left: Vec<WorkerRef> = pids
        .into_iter()
        .filter(|(_, p)| pnet_launch::testing::alive(*p))
        .map(|(w, _)| w)
        .collect();
    let report = StopReport {
        pid: std::process::id(),
        cancelled,
        finished,
        workers,
        left,
    };
    shell.log.line(&format!(
        "stopped: {} jobs cancelled, {} workers stopped, {} left",
        report.cancelled.len(),
        report.workers.len(),
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

/// The worker event log.
struct Logger {
    file: Option<BufWriter<File>>,
    verbose: bool,
    start: Instant,
    progress_shown: bool,
}

impl Logger {
    fn line(&mut self, msg: &str) {
        let t = self.start.elapsed().as_secs_f64();
        if let Some(f) = &mut self.file {
            let _ = writeln!(f, "[{t:>10.3}s] {msg}");
            let _ = f.flush();
        }
        if self.verbose {
            if self.progress_shown {
                eprint!("\r\x1b[K");
                self.progress_shown = false;
            }
            eprintln!("[{t:>10.3}s] {msg}");
        }
    }
}

struct Conn {
    tx: UnboundedSender<Bytes>,
    writer: JoinHandle<()>,
    name: String,
}

struct Shared {
    secret: Secret,
    /// The module definitions of the live jobs (for Welcomes) and the next definition id.
    defs: Mutex<(Vec<ModuleDef>, u32)>,
    module_path: Vec<String>,
    next_id: AtomicU32,
    ev: UnboundedSender<ShellEvent>,
    /// The connections that have not sent their Hello yet.
    pending: Mutex<Pending>,
}

/// The worker connections waiting for their Hello, oldest first: at most
/// [`PREAUTH_CONNECTIONS`]; one more closes the oldest (a real worker says Hello at once, so
/// a flood of silent connections cannot keep it out).
#[derive(Default)]
struct Pending {
    next: u64,
    open: VecDeque<(u64, SocketAddr, tokio::task::AbortHandle)>,
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The connection `key` is no longer waiting; false if it was closed as the oldest.
    fn unpend(&self, key: u64) -> bool {
        let mut p = self.pending();
        match p.open.iter().position(|(k, _, _)| *k == key) {
            Some(i) => {
                p.open.remove(i);
                true
            }
            None => false,
        }
    }
}

/// Takes a connection off the waiting list however its handshake ends.
struct Unpend<'a>(&'a Shared, u64);

impl Drop for Unpend<'_> {
    fn drop(&mut self) {
        self.0.unpend(self.1);
    }
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

/// A worker process started by this runtime.
struct LaunchedWorker {
    meta: WorkerRef,
    class: String,
    /// Bytes of working memory (`--shm`).
    shm: u64,
    proc: Launched,
    /// What it was started from (to start it again when it is lost).
    planned: PlannedWorker,
    /// How often it was restarted after being lost.
    restarts: u32,
}

/// A lost worker to start again.
struct Restart {
    due: Instant,
    /// Its plan, named as it was (so it comes back under its name).
    planned: PlannedWorker,
    restarts: u32,
}

/// How often a lost local worker is started again.
const MAX_RESTARTS: u32 = 3;
/// The wait before its first restart (doubled for each further one).
const RESTART_BACKOFF: Duration = Duration::from_millis(200);

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
        let log = Logger {
            file: match &config.log {
                Some(p) => Some(BufWriter::new(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(matches!(mode, Mode::Runtime { .. }))
                        .write(true)
                        .truncate(matches!(mode, Mode::Job))
                        .open(p)
                        .map_err(|e| {
                            AgentError::Setup(format!(
                                "cannot create the log file {}: {e}",
                                p.display()
                            ))
                        })?,
                )),
                None => None,
            },
            verbose: config.verbose,
            start,
            progress_shown: false,
        };
        let trace = match &config.trace {
            Some(p) => Some(TraceWriter::create(p).map_err(|e| {
                AgentError::Setup(format!("cannot create the trace file {}: {e}", p.display()))
            })?),
            None => None,
        };
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

    /// Stops the launched workers (after the loop, outside the tokio runtime).
    fn stop_launched(&mut self, grace: Duration) -> Vec<(String, String)> {
        if self.launched.is_empty() {
            return Vec::new();
        }
        let local = matches!(self.config.launcher, pnet_launch::Launcher::Local);
        let pids: Vec<u32> = (self.launched.iter())
            .filter(|l| local && l.shm > 0)
            .filter_map(|l| l.meta.pid)
            .collect();
        let mut procs: Vec<Launched> = self.launched.drain(..).map(|l| l.proc).collect();
        let ended = pnet_launch::stop_all(&mut procs, grace);
        // The segments of workers that could not remove theirs (killed ones).
        for pid in pids {
            pnet_memory::remove_segments_of(pid);
        }
        ended
    }

    /// Removes the segment files of launched local worker `name` if it has exited (a worker
    /// killed with SIGKILL leaves its segment behind).
    /// How a worker this agent started ended (waiting a little for it: its connection may
    /// close just before the process is gone); None if it is not ours or still runs.
    fn exit_of_launched(&mut self, name: &str) -> Option<String> {
        let l = self.launched.iter_mut().find(|l| l.meta.name == name)?;
        let deadline = Instant::now() + Duration::from_millis(500);
        loop {
            match l.proc.try_wait() {
                Ok(Some(status)) => return Some(pnet_launch::exit_name(status)),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                _ => return None,
            }
        }
    }

    /// A local worker this agent started was lost and has ended: start it again after a
    /// back-off (`RESTART_BACKOFF` doubled per restart), at most `MAX_RESTARTS` times, so
    /// that the runtime keeps its capacity. Jobs wait for it meanwhile.
    fn restart_later(&mut self, name: &str, how: &str) {
        if !matches!(self.config.launcher, pnet_launch::Launcher::Local) {
            return;
        }
        let Some(k) = self.launched.iter().position(|l| l.meta.name == name) else {
            return;
        };
        if !matches!(self.launched[k].proc.try_wait(), Ok(Some(_))) {
            return;
        }
        let l = self.launched.swap_remove(k);
        if l.restarts >= MAX_RESTARTS {
            self.log.line(&format!(
                "worker `{name}` ended ({how}); not restarted: it was restarted {MAX_RESTARTS} \
                 times already"
            ));
            return;
        }
        let delay = RESTART_BACKOFF * 2u32.pow(l.restarts);
        self.log.line(&format!(
            "worker `{name}` ended ({how}); restarting it in {} ms (restart {} of {MAX_RESTARTS})",
            delay.as_millis(),
            l.restarts + 1
        ));
        let mut planned = l.planned;
        planned.name = name.to_string();
        self.restarts.push(Restart {
            due: Instant::now() + delay,
            planned,
            restarts: l.restarts + 1,
        });
        self.update_workers_coming();
    }

    /// Starts the restarts that are due; forgets restarted workers that joined or ended.
    /// Returns whether the jobs should look again (the number of workers coming changed).
    fn run_restarts(&mut self) -> bool {
        let now = Instant::now();
        let mut changed = false;
        let due: Vec<Restart> = {
            let (due, later) = std::mem::take(&mut self.restarts)
                .into_iter()
                .partition(|r| r.due <= now);
            self.restarts = later;
            due
        };
        for r in due {
            changed = true;
            match self.launch(std::slice::from_ref(&r.planned)) {
                Ok(started) => {
                    if let Some(l) = self.launched.last_mut() {
                        l.restarts = r.restarts;
                    }
                    self.coming.extend(started.into_iter().map(|w| w.name));
                }
                Err(e) => self
                    .log
                    .line(&format!("cannot restart worker `{}`: {e}", r.planned.name)),
            }
        }
        // Restarted workers that joined, or ended before joining.
        let mut settled = Vec::new();
        for name in &self.coming {
            if self.joined_names.contains(name) {
                settled.push((name.clone(), None));
            } else if let Some(l) = self.launched.iter_mut().find(|l| &l.meta.name == name)
                && let Ok(Some(status)) = l.proc.try_wait()
            {
                settled.push((name.clone(), Some(pnet_launch::describe(status))));
            }
        }
        for (name, how) in settled {
            changed = true;
            self.coming.remove(&name);
            if let Some(how) = how {
                self.log
                    .line(&format!("restarted worker `{name}` {how} before joining"));
                self.restart_later(&name, &how);
            }
        }
        if changed {
            self.update_workers_coming();
        }
        changed
    }

    fn update_workers_coming(&mut self) {
        let n = self.restarts.len() + self.coming.len();
        self.hub.set_workers_coming(n);
    }

    fn remove_segments_if_exited(&mut self, name: &str) {
        let local = matches!(self.config.launcher, pnet_launch::Launcher::Local);
        if let Some(l) = self.launched.iter_mut().find(|l| l.meta.name == name)
            && local
            && l.shm > 0
            && let Some(pid) = l.meta.pid
            && matches!(l.proc.try_wait(), Ok(Some(_)))
        {
            pnet_memory::remove_segments_of(pid);
        }
    }

    fn refresh_welcome_defs(&self) {
        if let Some(s) = &self.shared {
            let snapshot = self.hub.live_defs();
            *s.defs.lock().unwrap_or_else(|e| e.into_inner()) = snapshot;
        }
    }

    fn reply_rt(&self, client: u64, r: RtResponse) {
        if let Some(c) = self.clients.get(&client) {
            let _ = c.tx.send(encode(&r));
        }
    }

    /// Starts the workers of a plan; returns the ones started (names made unique).
    fn launch(&mut self, workers: &[PlannedWorker]) -> Result<Vec<WorkerRef>, AgentError> {
        let Some(shared) = self.shared.clone() else {
            return Err(AgentError::Setup(
                "the runtime does not listen for workers".into(),
            ));
        };
        let config = self.config;
        let mut started = Vec::new();
        for w in workers {
            let mut name = w.name.clone();
            let taken = |n: &str, s: &Shell<'_>| {
                s.launched.iter().any(|l| l.meta.name == n) || s.conns.values().any(|c| c.name == n)
            };
            let mut k = w.index_on_host;
            while taken(&name, self) {
                k += 1;
                name = format!("{}-{}-{k}", w.class, w.host);
            }
            let mut args = vec![
                "--agent".to_string(),
                self.agent_addr.clone(),
                "--name".to_string(),
                name.clone(),
            ];
            if !w.capabilities.is_empty() {
                args.push("--capabilities".into());
                args.push(w.capabilities.join(","));
            }
            if let Some(s) = w.socket {
                args.push("--socket".into());
                args.push(s.to_string());
            }
            if w.shm > 0 {
                args.push("--shm".into());
                args.push(w.shm.to_string());
            }
            if config.fake_hosts > 0 {
                args.push("--host-id".into());
                args.push(format!(
                    "local-{}",
                    self.launch_count % u64::from(config.fake_hosts)
                ));
            }
            self.launch_count += 1;
            if config.isolate_modules {
                args.push("--isolate-modules".into());
            }
            args.push("--secret-stdin".into());
            args.push("--exit-on-stdin-eof".into());
            let cmd = WorkerCommand {
                name: name.clone(),
                host: w.host.clone(),
                program: config.worker_program.clone(),
                args,
                env: Vec::new(),
                stdin: Some(format!("{}\n", shared.secret.to_hex()).into_bytes()),
                log: None,
            };
            match pnet_launch::launch(&config.launcher, &cmd) {
                Ok(l) => {
                    self.log.line(&format!(
                        "started worker `{}` on `{}` ({}, pid {})",
                        name,
                        w.host,
                        config.launcher.name(),
                        l.pid().map_or("?".into(), |p| p.to_string())
                    ));
                    let meta = WorkerRef {
                        name: name.clone(),
                        host: w.host.clone(),
                        pid: l.pid(),
                    };
                    started.push(meta.clone());
                    self.launched.push(LaunchedWorker {
                        meta,
                        class: w.class.clone(),
                        shm: w.shm,
                        proc: l,
                        planned: w.clone(),
                        restarts: 0,
                    });
                }
                Err(e) => {
                    return Err(AgentError::Setup(format!(
                        "cannot start worker `{}` on `{}` through the {} launcher ({}): {e}",
                        name,
                        w.host,
                        config.launcher.name(),
                        config.worker_program.display()
                    )));
                }
            }
        }
        Ok(started)
    }

    async fn run(&mut self, start_workers: bool, first: Vec<HubCmd>) -> End {
        match self.run_inner(start_workers, first).await {
            Ok(end) => end,
            Err(e) => End::Job(Box::new(Err(e))),
        }
    }

    async fn run_inner(
        &mut self,
        start_workers: bool,
        first: Vec<HubCmd>,
    ) -> Result<End, AgentError> {
        let config = self.config;
        let Some(mut ev_rx) = self.ev_rx.take() else {
            return Err(AgentError::Setup("the shell ran twice".into()));
        };
        let mut sigint = signal(SignalKind::interrupt()).map_err(setup("cannot handle SIGINT"))?;
        let mut sigterm =
            signal(SignalKind::terminate()).map_err(setup("cannot handle SIGTERM"))?;

        let _control = match &self.mode {
            Mode::Job => match &config.control {
                Some(p) => Some(bind_control(p, self.ev_tx.clone(), None, current_uid())?),
                None => None,
            },
            Mode::Runtime { state_dir, secret } => Some(bind_control(
                &state_dir.join(SOCKET_FILE),
                self.ev_tx.clone(),
                Some(Arc::new(Auth {
                    secret: secret.clone(),
                })),
                current_uid(),
            )?),
        };

        let listen = start_workers || self.options.external_workers > 0;
        let mut planned_names: HashSet<String> = HashSet::new();
        let _accept = if listen {
            let listener = TcpListener::bind(config.listen).await.map_err(|e| {
                AgentError::Setup(format!("cannot listen on {}: {e}", config.listen))
            })?;
            let addr = listener
                .local_addr()
                .map_err(setup("cannot read the listening address"))?;
            if let Some(f) = self.options.on_listen.take() {
                f(addr);
            }
            let secret = match self.options.secret.take() {
                Some(s) => s,
                None => Secret::random().map_err(setup("cannot make the run's secret"))?,
            };
            let shared = Arc::new(Shared {
                secret,
                defs: Mutex::new(self.hub.live_defs()),
                module_path: config
                    .module_path
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect(),
                next_id: AtomicU32::new(0),
                ev: self.ev_tx.clone(),
                pending: Mutex::new(Pending::default()),
            });
            self.shared = Some(shared.clone());
            let accept = AbortOnDrop(tokio::spawn(accept_loop(listener, shared)));
            self.agent_addr = if addr.ip().is_unspecified() {
                format!("{}:{}", pnet_topology::local_hostname(), addr.port())
            } else {
                addr.to_string()
            };
            if let Mode::Runtime { state_dir, .. } = &self.mode {
                let info = serde_json::json!({
                    "pid": std::process::id(),
                    "address": self.agent_addr,
                    "control": state_dir.join(SOCKET_FILE).display().to_string(),
                    "state_dir": state_dir.display().to_string(),
                    "planned_workers": config.plan.workers.len(),
                });
                let path = state_dir.join(INFO_FILE);
                std::fs::write(&path, format!("{info}\n")).map_err(|e| {
                    AgentError::Setup(format!("cannot write {}: {e}", path.display()))
                })?;
                self.log.line(&format!(
                    "runtime pid {} listening on {} (control socket {})",
                    std::process::id(),
                    self.agent_addr,
                    state_dir.join(SOCKET_FILE).display()
                ));
            }
            if start_workers {
                let workers = config.plan.workers.clone();
                let started = self.launch(&workers)?;
                planned_names.extend(started.into_iter().map(|w| w.name));
            }
            Some(accept)
        } else {
            None
        };

        let mut join_over =
            self.is_runtime() || (planned_names.is_empty() && self.options.external_workers == 0);
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut out: Vec<HubCmd> = first;
        let mut more = true;
        let mut last_progress = Instant::now() - Duration::from_secs(1);

        let end = 'outer: loop {
            self.hub.set_now(self.start.elapsed());
            if more || !out.is_empty() {
                if more {
                    more = self.hub.pump(&mut out);
                }
                let mut ended_job = None;
                for cmd in out.drain(..) {
                    match cmd {
                        HubCmd::Send { worker, msg } => {
                            if let Some(c) = self.conns.get(&worker) {
                                let _ = c.tx.send(encode(&msg));
                            }
                        }
                        HubCmd::Reply { client, reply } => self.send_reply(client, reply),
                        HubCmd::Log(m) => self.log.line(&m),
                        HubCmd::Trace(r) => {
                            if let Some(t) = &mut self.trace {
                                let _ = t.task(&r);
                            }
                        }
                        HubCmd::Ended { job, result } => {
                            self.refresh_welcome_defs();
                            match &result.as_ref() {
                                Ok(_) => self.log.line(&format!("job {job} ended")),
                                Err(e) if self.is_runtime() => {
                                    self.log.line(&format!("job {job} failed: {e}"))
                                }
                                Err(_) => {}
                            }
                            if !self.is_runtime() {
                                ended_job = Some(result);
                            }
                        }
                    }
                }
                if let Some(r) = ended_job {
                    let mut r = *r;
                    if let Err(AgentError::NoWorker(m)) = &mut r
                        && !self.dead_before_join.is_empty()
                    {
                        let mut dead: Vec<&String> = self.dead_before_join.iter().collect();
                        dead.sort();
                        m.push_str(&format!(
                            " ({} started worker(s) exited before joining: {}; their \
                             messages are above)",
                            dead.len(),
                            dead.iter()
                                .map(|d| d.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                    // Workers die of the same Ctrl-C as we do: say "cancelled", not
                    // whatever their loss caused.
                    if r.is_err()
                        && (sigint.recv().now_or_never().is_some()
                            || sigterm.recv().now_or_never().is_some())
                    {
                        r = Err(AgentError::Cancelled);
                    }
                    break 'outer End::Job(Box::new(r));
                }
                if let Some((client, waited)) = &self.stopping
                    && self.hub.live_jobs().is_empty()
                {
                    break 'outer End::Stopped {
                        cancelled: Vec::new(),
                        finished: waited.clone(),
                        client: Some(*client),
                    };
                }
            }
            // Wait for something (or just let the other tasks run when there is more to do).
            enum Woke {
                Signal,
                Shell(ShellEvent),
                Nothing,
            }
            let first = tokio::select! {
                biased;
                _ = sigint.recv() => Woke::Signal,
                _ = sigterm.recv() => Woke::Signal,
                e = ev_rx.recv() => e.map_or(Woke::Nothing, Woke::Shell),
                _ = tick.tick() => Woke::Nothing,
                _ = tokio::task::yield_now(), if more => Woke::Nothing,
            };
            self.hub.set_now(self.start.elapsed());
            let mut shell_events = Vec::new();
            match first {
                Woke::Signal => {
                    if self.is_runtime() {
                        self.log.line("stopping on a signal");
                        let cancelled = self.hub.cancel_all(&mut out);
                        self.flush_sends(&mut out);
                        break 'outer End::Stopped {
                            cancelled,
                            finished: Vec::new(),
                            client: self.stopping.as_ref().map(|s| s.0),
                        };
                    }
                    self.log.line("cancelled");
                    self.hub.cancel_all(&mut out);
                }
                Woke::Shell(sev) => shell_events.push(sev),
                Woke::Nothing => {}
            }
            while shell_events.len() < EVENT_BATCH {
                match ev_rx.try_recv() {
                    Ok(e) => shell_events.push(e),
                    Err(_) => break,
                }
            }
            let had_events = !shell_events.is_empty();
            for sev in shell_events {
                if let Some(end) = self.shell_event(sev, &mut out) {
                    break 'outer end;
                }
            }
            if (!self.restarts.is_empty() || !self.coming.is_empty()) && self.run_restarts() {
                more = true;
            }
            // Planned workers that will never join.
            if !join_over {
                for l in self.launched.iter_mut() {
                    let name = l.meta.name.clone();
                    if self.joined_names.contains(&name) || self.dead_names.contains(&name) {
                        continue;
                    }
                    if let Ok(Some(status)) = l.proc.try_wait() {
                        let how = pnet_launch::describe(status);
                        self.log
                            .line(&format!("worker `{name}` exited before joining: {how}"));
                        self.dead_before_join.insert(format!("`{name}` ({how})"));
                        self.dead_names.insert(name);
                    }
                }
                let settled = planned_names
                    .iter()
                    .all(|n| self.joined_names.contains(n) || self.dead_names.contains(n));
                let timeout = self.start.elapsed() >= self.options.join_timeout;
                if (settled
                    && !self.dead_before_join.is_empty()
                    && self.options.external_workers == 0)
                    || timeout
                {
                    join_over = true;
                    self.hub.join_timeout(&mut out);
                } else if settled && self.dead_before_join.is_empty() {
                    join_over = true;
                }
            }
            if join_over && self.deferred_job.is_some() && self.segments_ready() {
                if let Err(e) = self.start_deferred_job(&mut out).await {
                    break 'outer End::Job(Box::new(Err(e)));
                }
                more = true;
            }
            if had_events || !out.is_empty() {
                more = true;
            }
            if config.progress && last_progress.elapsed() >= Duration::from_millis(100) {
                last_progress = Instant::now();
                if let Some(s) = self.hub.job_status(0) {
                    eprint!(
                        "\r\x1b[K{:.1}s  {} firings  tasks: {} done, {} running, {} queued  {} workers",
                        self.start.elapsed().as_secs_f64(),
                        s.firings,
                        s.tasks_done,
                        s.tasks_running,
                        s.tasks_queued,
                        s.workers.len()
                    );
                    self.log.progress_shown = true;
                }
            }
        };
        if self.log.progress_shown {
            eprint!("\r\x1b[K");
        }
        let mut end = end;
        if !self.job_allocs.is_empty() {
            if let End::Job(r) = &end
                && r.is_ok()
                && let Err(e) = self.write_dumps().await
            {
                end = End::Job(Box::new(Err(e)));
            }
            self.free_job_allocs();
        }
        if let End::Job(r) = &end {
            match r.as_ref() {
                Ok(_) => self.log.line("the job ended"),
                Err(e) => self.log.line(&format!("the job failed: {e}")),
            }
        }
        // Stop the workers: Shutdown, then let the writers flush.
        let shutdown = encode(&AgentMsg::Shutdown);
        let mut writers = Vec::new();
        for (_, c) in self.conns.drain() {
            let _ = c.tx.send(shutdown.clone());
            drop(c.tx);
            writers.push(c.writer);
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            for w in writers {
                let _ = w.await;
            }
        })
        .await;
        if !self.is_runtime() {
            // Let control clients receive their last answers.
            self.clients.clear();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if let Some(t) = self.trace.take()
            && let Err(e) = t.finish()
        {
            self.log.line(&format!("cannot write the trace: {e}"));
        }
        if let Some(f) = &mut self.log.file {
            let _ = f.flush();
        }
        Ok(end)
    }

    /// Sends the hub's pending messages to workers (before leaving the loop).
    fn flush_sends(&mut self, out: &mut Vec<HubCmd>) {
        for cmd in out.drain(..) {
            match cmd {
                HubCmd::Send { worker, msg } => {
                    if let Some(c) = self.conns.get(&worker) {
                        let _ = c.tx.send(encode(&msg));
                    }
                }
                HubCmd::Reply { client, reply } => self.send_reply(client, reply),
                HubCmd::Log(m) => self.log.line(&m),
                HubCmd::Trace(_) => {}
                HubCmd::Ended { job, result } => match result.as_ref() {
                    Ok(_) => self.log.line(&format!("job {job} ended")),
                    Err(e) => self.log.line(&format!("job {job} ended: {e}")),
                },
            }
        }
    }

    fn send_reply(&self, client: u64, reply: ClientReply) {
        let Some(c) = self.clients.get(&client) else {
            return;
        };
        let bytes = match (c.runtime, reply) {
            (false, ClientReply::Job(r)) => encode(&r),
            (false, ClientReply::Outcome { .. }) => return,
            (true, ClientReply::Job(r)) => encode(&RtResponse::Job(r)),
            (true, ClientReply::Outcome { job, outcome }) => {
                encode(&RtResponse::Outcome { job, outcome })
            }
        };
        let _ = c.tx.send(bytes);
    }

    fn shell_event(&mut self, sev: ShellEvent, out: &mut Vec<HubCmd>) -> Option<End> {
        match sev {
            ShellEvent::Joined {
                id,
                hello,
                defs_upto,
                tx,
                writer,
            } => {
                if let Some(t) = &mut self.trace {
                    let _ = t.worker(id, &hello.name);
                }
                self.log.line(&format!(
                    "worker {id} `{}` connected from {} (pid {})",
                    hello.name, hello.host, hello.pid
                ));
                self.joined_names.insert(hello.name.clone());
                self.lost_names.remove(&hello.name);
                self.conns.insert(
                    id,
                    Conn {
                        tx,
                        writer,
                        name: hello.name.clone(),
                    },
                );
                self.hub.worker_joined(id, &hello, defs_upto, out);
            }
            ShellEvent::Refused { peer, reason } => {
                self.log
                    .line(&format!("refused a worker from {peer}: {reason}"));
            }
            ShellEvent::ClientRefused { reason } => {
                self.log
                    .line(&format!("refused a control client: {reason}"));
            }
            ShellEvent::Msgs { id, msgs } => self.hub.worker_msgs(id, msgs, out),
            ShellEvent::Lost { id, reason } => {
                if let Some(c) = self.conns.remove(&id) {
                    self.joined_names.remove(&c.name);
                    self.lost_names.insert(c.name.clone(), reason.clone());
                    let exit = self.exit_of_launched(&c.name);
                    self.hub.worker_lost(id, &reason, exit.as_deref(), out);
                    self.remove_segments_if_exited(&c.name);
                    self.restart_later(&c.name, exit.as_deref().unwrap_or(&reason));
                }
            }
            ShellEvent::ClientOpened { client, tx } => {
                self.clients.insert(
                    client,
                    ClientConn {
                        tx,
                        runtime: self.is_runtime(),
                    },
                );
            }
            ShellEvent::Control { client, request } => {
                self.hub.job_control(0, client, request, out);
            }
            ShellEvent::Runtime { client, request } => {
                return self.runtime_request(client, request, out);
            }
            ShellEvent::ClientClosed { client } => {
                self.clients.remove(&client);
                self.hub.client_closed(client);
            }
            ShellEvent::MemReply { client, response } => self.reply_rt(client, response),
        }
        None
    }

    fn runtime_request(
        &mut self,
        client: u64,
        request: RtRequest,
        out: &mut Vec<HubCmd>,
    ) -> Option<End> {
        let request = match request {
            RtRequest::Submit {
                net,
                bundle,
                inputs,
            } => RtRequest::SubmitAt {
                net,
                bundle,
                inputs,
                module_path: Vec::new(),
            },
            r => r,
        };
        let answer = match request {
            RtRequest::Status => RtResponse::Status(self.status()),
            RtRequest::Jobs => RtResponse::Jobs(self.hub.jobs()),
            RtRequest::Submit { .. } => unreachable!("made a SubmitAt above"),
            RtRequest::SubmitAt {
                net,
                bundle,
                inputs,
                module_path,
            } => {
                if self.stopping.is_some() {
                    RtResponse::Error("the runtime is stopping; it takes no more jobs".into())
                } else {
                    match pnet_bundle::format::decode(&bundle) {
                        Err(e) => RtResponse::Error(format!("{net}: not a valid bundle: {e}")),
                        Ok(b) => match self.hub.add_job_at(&net, b, &inputs, module_path, out) {
                            Ok(job) => {
                                self.refresh_welcome_defs();
                                self.log.line(&format!("job {job} submitted: {net}"));
                                RtResponse::Submitted { job }
                            }
                            Err(e) => RtResponse::Error(format!("{net}: {e}")),
                        },
                    }
                }
            }
            RtRequest::Wait { job } => match self.hub.wait_for(job, client, out) {
                Ok(()) => return None,
                Err(e) => RtResponse::Error(e),
            },
            RtRequest::Cancel { job } => {
                if self.hub.cancel_job(job, out) {
                    RtResponse::Ok
                } else if self.hub.jobs().iter().any(|j| j.id == job) {
                    RtResponse::Error(format!("job {job} has already ended"))
                } else {
                    RtResponse::Error(format!("there is no job {job} (see `gspc jobs`)"))
                }
            }
            RtRequest::PutToken { job, place, value } => {
                self.hub
                    .job_control(job, client, Request::PutToken { place, value }, out);
                return None;
            }
            RtRequest::Close { job } => {
                self.hub.job_control(job, client, Request::Close, out);
                return None;
            }
            RtRequest::AddWorkers { topology, hosts } => self.add_workers(&topology, hosts),
            RtRequest::RemoveWorkers {
                names,
                class,
                count,
            } => self.remove_workers(&names, class.as_deref(), count, out),
            RtRequest::MemAlloc { size } => self.mem_alloc(size),
            RtRequest::MemFree { handle } => match self.hub.memory().lock().free(&handle) {
                Ok(()) => {
                    self.log.line(&format!("freed global memory {handle}"));
                    RtResponse::Ok
                }
                Err(e) => RtResponse::Error(e.message),
            },
            RtRequest::MemWrite {
                handle,
                offset,
                data,
            } => {
                let pieces = resolve_range(&self.hub, &handle, offset, data.len() as u64);
                match pieces {
                    Err(e) => RtResponse::Error(e),
                    Ok(pieces) => {
                        let ev = self.ev_tx.clone();
                        let job: IoJob = Box::new(move |peers| {
                            let response = match write_pieces(peers, &pieces, &data) {
                                Ok(()) => RtResponse::Ok,
                                Err(e) => RtResponse::Error(format!(
                                    "cannot write {} bytes at offset {offset} of {handle}: {e}",
                                    data.len()
                                )),
                            };
                            let _ = ev.send(ShellEvent::MemReply { client, response });
                        });
                        match self.submit_io(job) {
                            Ok(()) => return None,
                            Err(e) => RtResponse::Error(e),
                        }
                    }
                }
            }
            RtRequest::MemRead {
                handle,
                offset,
                size,
            } => {
                let most = pnet_protocol::frame::MAX_FRAME - 1024;
                let n = match usize::try_from(size) {
                    Ok(n) if n <= most => Ok(n),
                    _ => Err(format!(
                        "cannot read {size} bytes in one request (at most {most}; clients read \
                         in chunks of {})",
                        crate::memory::CLIENT_CHUNK
                    )),
                };
                let pieces =
                    n.and_then(|n| resolve_range(&self.hub, &handle, offset, size).map(|p| (n, p)));
                match pieces {
                    Err(e) => RtResponse::Error(e),
                    Ok((n, pieces)) => {
                        let ev = self.ev_tx.clone();
                        let job: IoJob = Box::new(move |peers| {
                            let mut buf = vec![0u8; n];
                            let response = match read_pieces(peers, &pieces, &mut buf) {
                                Ok(()) => RtResponse::Bytes(buf),
                                Err(e) => RtResponse::Error(format!(
                                    "cannot read {size} bytes at offset {offset} of {handle}: {e}"
                                )),
                            };
                            let _ = ev.send(ShellEvent::MemReply { client, response });
                        });
                        match self.submit_io(job) {
                            Ok(()) => return None,
                            Err(e) => RtResponse::Error(e),
                        }
                    }
                }
            }
            RtRequest::MemStats => RtResponse::Memory(self.hub.memory_status()),
            RtRequest::Stop { wait } => {
                if wait {
                    let jobs = self.hub.live_jobs();
                    self.log.line(&format!(
                        "stopping once {} running jobs have ended",
                        jobs.len()
                    ));
                    self.stopping = Some((client, jobs));
                    return None;
                }
                self.log.line("stopping");
                let cancelled = self.hub.cancel_all(out);
                self.flush_sends(out);
                return Some(End::Stopped {
                    cancelled,
                    finished: Vec::new(),
                    client: Some(client),
                });
            }
        };
        self.reply_rt(client, answer);
        None
    }

    fn status(&mut self) -> RuntimeStatus {
        let mut workers: Vec<RtWorker> = self
            .hub
            .worker_status()
            .into_iter()
            .map(|(_, w)| w)
            .collect();
        let up: HashSet<String> = workers.iter().map(|w| w.name.clone()).collect();
        for l in self.launched.iter_mut() {
            if up.contains(&l.meta.name) {
                continue;
            }
            let state = if let Some(r) = self.lost_names.get(&l.meta.name) {
                format!("lost: {r}")
            } else {
                match l.proc.try_wait() {
                    Ok(Some(st)) => format!("exited: {}", pnet_launch::describe(st)),
                    _ => "starting".to_string(),
                }
            };
            workers.push(RtWorker {
                name: l.meta.name.clone(),
                host: l.meta.host.clone(),
                pid: l.meta.pid,
                capabilities: Vec::new(),
                state,
                heartbeat_age_ms: None,
                running: None,
                in_flight: 0,
                done: 0,
            });
        }
        workers.sort_by(|a, b| a.name.cmp(&b.name));
        let jobs = self.hub.jobs();
        let state_dir = match &self.mode {
            Mode::Runtime { state_dir, .. } => state_dir.display().to_string(),
            Mode::Job => String::new(),
        };
        RuntimeStatus {
            pid: std::process::id(),
            address: self.agent_addr.clone(),
            state_dir,
            uptime_ms: self.start.elapsed().as_millis() as u64,
            jobs_running: jobs.iter().filter(|j| j.state == "running").count() as u64,
            jobs_total: jobs.len() as u64,
            workers,
            memory: self.hub.memory_status(),
        }
    }

    /// Starts the memory I/O thread if it is not running.
    fn memio(&mut self) -> Result<&MemIo, String> {
        if self.memio.is_none() {
            let secret = match &self.shared {
                Some(s) => s.secret.clone(),
                None => {
                    return Err("the runtime has no workers, so no global memory".into());
                }
            };
            let io = MemIo::start(pnet_topology::local_hostname(), secret)
                .map_err(|e| format!("cannot start the memory thread: {e}"))?;
            self.memio = Some(io);
        }
        self.memio
            .as_ref()
            .ok_or_else(|| "the memory thread is not running".to_string())
    }

    fn submit_io(&mut self, job: IoJob) -> Result<(), String> {
        if self.memio()?.submit(job) {
            Ok(())
        } else {
            Err("the memory thread has stopped".into())
        }
    }

    /// Runs `f` on the memory I/O thread and waits for its result (the other tasks of the
    /// runtime go on meanwhile).
    async fn io<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut pnet_memory::Peers) -> T + Send + 'static,
    ) -> Result<T, String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit_io(Box::new(move |peers| {
            let _ = tx.send(f(peers));
        }))?;
        rx.await
            .map_err(|_| "the memory thread stopped during a transfer".to_string())
    }

    fn mem_alloc(&mut self, size: u64) -> RtResponse {
        let r = self.hub.memory().lock().alloc(size);
        match r {
            Ok(handle) => {
                self.log.line(&format!(
                    "allocated {} of global memory: {handle}",
                    crate::memory::human_bytes(size)
                ));
                RtResponse::Allocated {
                    range: pnet_memory::range_value(&handle, 0, size),
                    handle,
                }
            }
            Err(e) => RtResponse::Error(alloc_error(&self.hub, &e)),
        }
    }

    /// Whether every joined worker started with working memory has reported its segment (or
    /// 10 s have passed since the joining was over).
    fn segments_ready(&mut self) -> bool {
        let since = *self.segments_wait.get_or_insert_with(Instant::now);
        if since.elapsed() >= Duration::from_secs(10) {
            return true;
        }
        let table = self.hub.memory().lock();
        self.conns.iter().all(|(&id, c)| {
            let shm = self
                .launched
                .iter()
                .find(|l| l.meta.name == c.name)
                .map_or(0, |l| l.shm);
            shm == 0 || table.segment(id).is_some()
        })
    }

    /// Allocates and fills `run_job`'s global memory, binds the ports, and starts the job.
    async fn start_deferred_job(&mut self, out: &mut Vec<HubCmd>) -> Result<(), AgentError> {
        let Some((bundle, mut inputs)) = self.deferred_job.take() else {
            return Ok(());
        };
        // The log lines so far first (the workers' segments), so that the log is in order.
        let log = &mut self.log;
        out.retain(|c| match c {
            HubCmd::Log(m) => {
                log.line(m);
                false
            }
            _ => true,
        });
        let allocs = std::mem::take(&mut self.options.allocs);
        for a in allocs {
            let what = match &a.data {
                Some(_) => format!("--alloc {}=@FILE", a.port),
                None => format!("--alloc {}={}", a.port, a.size),
            };
            let r = self.hub.memory().lock().alloc(a.size);
            let handle = r.map_err(|e| {
                AgentError::Setup(format!("{what}: {}", alloc_error(&self.hub, &e)))
            })?;
            self.job_allocs
                .push((a.port.clone(), handle.clone(), a.size));
            self.log.line(&format!(
                "allocated {} of global memory for port `{}`: {handle}",
                crate::memory::human_bytes(a.size),
                a.port
            ));
            if let Some(data) = a.data
                && !data.is_empty()
            {
                let pieces = resolve_range(&self.hub, &handle, 0, a.size)
                    .map_err(|e| AgentError::Setup(format!("{what}: {e}")))?;
                self.io(move |peers| write_pieces(peers, &pieces, &data))
                    .await
                    .map_err(|e| AgentError::Setup(format!("{what}: {e}")))?
                    .map_err(|e| AgentError::Setup(format!("{what}: cannot fill {handle}: {e}")))?;
            }
            let range = pnet_memory::range_value(&handle, 0, a.size);
            match inputs.iter_mut().find(|(p, _)| *p == a.port) {
                Some((_, vs)) => vs.push(range),
                None => inputs.push((a.port.clone(), vec![range])),
            }
        }
        self.hub.add_job("job", bundle, &inputs, out)?;
        self.refresh_welcome_defs();
        // The workers that were to join have joined (or never will).
        self.hub.join_timeout(out);
        Ok(())
    }

    /// `--dump PORT=FILE`: writes the bytes of the allocations to their files.
    async fn write_dumps(&mut self) -> Result<(), AgentError> {
        let dumps = std::mem::take(&mut self.options.dumps);
        for (port, path) in dumps {
            let what = format!("--dump {port}={}", path.display());
            let Some((_, handle, size)) =
                self.job_allocs.iter().find(|(p, ..)| *p == port).cloned()
            else {
                return Err(AgentError::Setup(format!(
                    "{what}: no --alloc for port `{port}`"
                )));
            };
            let n = usize::try_from(size)
                .map_err(|_| AgentError::Setup(format!("{what}: {size} bytes are too many")))?;
            let pieces = resolve_range(&self.hub, &handle, 0, size)
                .map_err(|e| AgentError::Setup(format!("{what}: {e}")))?;
            let bytes = self
                .io(move |peers| {
                    let mut buf = vec![0u8; n];
                    read_pieces(peers, &pieces, &mut buf).map(|()| buf)
                })
                .await
                .map_err(|e| AgentError::Setup(format!("{what}: {e}")))?
                .map_err(|e| AgentError::Setup(format!("{what}: cannot read {handle}: {e}")))?;
            std::fs::write(&path, &bytes).map_err(|e| {
                AgentError::Setup(format!("{what}: cannot write {}: {e}", path.display()))
            })?;
            self.log.line(&format!(
                "wrote {} of {handle} (port `{port}`) to {}",
                crate::memory::human_bytes(size),
                path.display()
            ));
        }
        Ok(())
    }

    fn free_job_allocs(&mut self) {
        for (port, handle, _) in std::mem::take(&mut self.job_allocs) {
            if let Err(e) = self.hub.memory().lock().free(&handle) {
                self.log
                    .line(&format!("cannot free {handle} (port `{port}`): {e}"));
            }
        }
    }

    fn add_workers(&mut self, topology: &str, hosts: Vec<String>) -> RtResponse {
        let (topo, diags) = pnet_topology::parse_topology(topology);
        if pnet_topology::has_errors(&diags) {
            let errors: Vec<pnet_topology::Diagnostic> =
                diags.into_iter().filter(|d| d.is_error()).collect();
            // At most 50 shown, then "and K more".
            let text = pnet_topology::render_all("topology", topology, &errors);
            return RtResponse::Error(text.trim_end().to_string());
        }
        let hosts = if hosts.is_empty() {
            if self.config.plan.hosts.is_empty() {
                vec![pnet_topology::local_hostname()]
            } else {
                self.config.plan.hosts.clone()
            }
        } else {
            hosts
        };
        let plan = pnet_topology::plan(&topo, &hosts);
        match self.launch(&plan.workers) {
            Ok(started) => RtResponse::Workers(started),
            Err(e) => RtResponse::Error(e.to_string()),
        }
    }

    fn remove_workers(
        &mut self,
        names: &[String],
        class: Option<&str>,
        count: Option<u32>,
        out: &mut Vec<HubCmd>,
    ) -> RtResponse {
        // Candidates: every launched or joined worker, by name.
        let mut known: Vec<(String, String, u32)> = Vec::new(); // (name, class, in flight)
        let status = self.hub.worker_status();
        for l in &self.launched {
            let busy = status
                .iter()
                .find(|(_, w)| w.name == l.meta.name)
                .map_or(0, |(_, w)| w.in_flight);
            known.push((l.meta.name.clone(), l.class.clone(), busy));
        }
        for (_, w) in &status {
            if !known.iter().any(|k| k.0 == w.name) {
                let class = w.capabilities.first().cloned().unwrap_or_default();
                known.push((w.name.clone(), class, w.in_flight));
            }
        }
        let mut targets: Vec<String> = Vec::new();
        for n in names {
            if !known.iter().any(|k| &k.0 == n) {
                let mut all: Vec<&str> = known.iter().map(|k| k.0.as_str()).collect();
                all.sort_unstable();
                return RtResponse::Error(format!(
                    "there is no worker `{n}`; the workers are: {}",
                    if all.is_empty() {
                        "(none)".to_string()
                    } else {
                        all.join(", ")
                    }
                ));
            }
            if !targets.contains(n) {
                targets.push(n.clone());
            }
        }
        if let Some(c) = class {
            let mut of: Vec<&(String, String, u32)> = known
                .iter()
                .filter(|k| k.1 == c && !targets.contains(&k.0))
                .collect();
            if of.is_empty() && targets.is_empty() {
                return RtResponse::Error(format!("there is no worker of class `{c}`"));
            }
            // Idle ones first.
            of.sort_by(|a, b| a.2.cmp(&b.2).then_with(|| b.0.cmp(&a.0)));
            let n = count.map_or(of.len(), |n| (n as usize).min(of.len()));
            targets.extend(of.into_iter().take(n).map(|k| k.0.clone()));
        }
        let mut removed = Vec::new();
        for name in targets {
            let ids: Vec<u32> = self
                .conns
                .iter()
                .filter(|(_, c)| c.name == name)
                .map(|(&id, _)| id)
                .collect();
            for id in ids {
                if let Some(c) = self.conns.remove(&id) {
                    let _ = c.tx.send(encode(&AgentMsg::Shutdown));
                    self.joined_names.remove(&name);
                    self.hub
                        .worker_lost(id, "removed by `gspc remove-workers`", None, out);
                }
            }
            let mut r = WorkerRef {
                name: name.clone(),
                host: String::new(),
                pid: None,
            };
            if let Some(k) = self.launched.iter().position(|l| l.meta.name == name) {
                let l = self.launched.swap_remove(k);
                r = l.meta.clone();
                let grace = self.options.stop_grace;
                let mut proc = l.proc;
                let local = matches!(self.config.launcher, pnet_launch::Launcher::Local);
                let pid = l.meta.pid.filter(|_| local && l.shm > 0);
                self.removals.push(std::thread::spawn(move || {
                    let _ = pnet_launch::stop_all(std::slice::from_mut(&mut proc), grace);
                    if let Some(pid) = pid {
                        pnet_memory::remove_segments_of(pid);
                    }
                }));
            } else if let Some((_, w)) = status.iter().find(|(_, w)| w.name == name) {
                r.host = w.host.clone();
                r.pid = w.pid;
            }
            self.lost_names.remove(&name);
            self.log.line(&format!("worker `{name}` removed"));
            removed.push(r);
        }
        RtResponse::Workers(removed)
    }
}

/// The pieces of a global range, or the error as a message.
fn resolve_range(
    hub: &Hub,
    handle: &str,
    offset: u64,
    len: u64,
) -> Result<Vec<RangePiece>, String> {
    let table = hub.memory().lock();
    if len == 0 {
        // Nothing to move; the handle and offset must still make sense.
        return match table.size_of(handle) {
            None => Err(format!("there is no allocation {handle}")),
            Some(size) if offset > size => Err(format!(
                "offset {offset} is past the end of {handle} ({size} bytes)"
            )),
            Some(_) => Ok(Vec::new()),
        };
    }
    pnet_memory::resolve(&table, handle, offset, len).map_err(|e| e.message)
}

/// An allocation error, with a hint when no worker offers working memory.
fn alloc_error(hub: &Hub, e: &pnet_memory::MemError) -> String {
    if hub.memory().lock().stats().segments == 0 {
        format!(
            "{e} Give the workers working memory: a shm size in the topology, like \
             `worker:2,67108864` (64 MiB each)."
        )
    } else {
        e.to_string()
    }
}

/// How a runtime's control socket checks its clients (besides their user, checked on every
/// control socket).
struct Auth {
    secret: Secret,
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((sock, peer)) => {
                let _ = sock.set_nodelay(true);
                let closed: Vec<_> = {
                    let mut p = shared.pending();
                    let key = p.next;
                    p.next += 1;
                    let task = tokio::spawn(handle_worker(sock, peer, shared.clone(), key));
                    p.open.push_back((key, peer, task.abort_handle()));
                    let excess = p.open.len().saturating_sub(PREAUTH_CONNECTIONS);
                    p.open.drain(..excess).collect()
                };
                for (_, peer, task) in closed {
                    task.abort();
                    let _ = shared.ev.send(ShellEvent::Refused {
                        peer,
                        reason: format!(
                            "closed: more than {PREAUTH_CONNECTIONS} connections were waiting \
                             for their Hello"
                        ),
                    });
                }
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

async fn refuse(
    w: &mut FramedWrite<OwnedWriteHalf, LengthDelimitedCodec>,
    shared: &Shared,
    peer: SocketAddr,
    reason: String,
) {
    let _ = tokio::time::timeout(
        Duration::from_secs(1),
        frame::send(
            w,
            &AgentMsg::Refused {
                reason: reason.clone(),
            },
        ),
    )
    .await;
    let _ = shared.ev.send(ShellEvent::Refused { peer, reason });
}

/// The handshake, then the reader loop of one worker.
///
/// Until the Hello has passed, the connection is on the waiting list ([`Pending`]), its frames
/// are limited to [`pnet_protocol::PREAUTH_MAX_FRAME`] bytes and it has [`PREAUTH_TIMEOUT`] to
/// send the Hello.
async fn handle_worker(sock: TcpStream, peer: SocketAddr, shared: Arc<Shared>, key: u64) {
    let waiting = Unpend(&shared, key);
    let (rd, wr) = sock.into_split();
    let mut r = frame::preauth_reader(rd);
    let mut w = frame::writer(wr);
    let first = match tokio::time::timeout(PREAUTH_TIMEOUT, r.next()).await {
        Ok(Some(Ok(f))) => f,
        Ok(Some(Err(e))) => {
            return refuse(&mut w, &shared, peer, format!("bad first frame: {e}")).await;
        }
        Ok(None) => return,
        Err(_) => {
            let reason = format!("no Hello within {} s", PREAUTH_TIMEOUT.as_secs());
            return refuse(&mut w, &shared, peer, reason).await;
        }
    };
    match hello_protocol(&first) {
        Some(PROTOCOL_VERSION) => {}
        Some(v) => {
            return refuse(
                &mut w,
                &shared,
                peer,
                format!(
                    "protocol version {v} is not supported: this agent speaks version \
                     {PROTOCOL_VERSION} (use the gspc-worker of the same release)"
                ),
            )
            .await;
        }
        None => {
            return refuse(
                &mut w,
                &shared,
                peer,
                "the first message is not a Hello".into(),
            )
            .await;
        }
    }
    let hello = match postcard::from_bytes::<WorkerMsg>(&first) {
        Ok(WorkerMsg::Hello(h)) => h,
        Ok(_) | Err(_) => {
            return refuse(&mut w, &shared, peer, "malformed Hello".into()).await;
        }
    };
    if !hello.secret.matches(&shared.secret) {
        return refuse(
            &mut w,
            &shared,
            peer,
            format!(
                "wrong secret from worker `{}` (it must be started by this agent, or get the \
                 run's secret)",
                hello.name
            ),
        )
        .await;
    }
    // Authenticated: off the waiting list (unless it was just closed as the oldest), and the
    // usual frame limit.
    std::mem::forget(waiting);
    if !shared.unpend(key) {
        return;
    }
    frame::authenticated(&mut r);
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let (modules, defs_upto) = shared
        .defs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let welcome = AgentMsg::Welcome {
        worker: id,
        modules,
        module_path: shared.module_path.clone(),
    };
    if frame::send(&mut w, &welcome).await.is_err() {
        return;
    }
    let (tx, rx) = unbounded_channel();
    let writer = tokio::spawn(writer_loop(w, rx));
    if shared
        .ev
        .send(ShellEvent::Joined {
            id,
            hello,
            defs_upto,
            tx,
            writer,
        })
        .is_err()
    {
        return;
    }
    let reason = reader_loop(&mut r, id, &shared.ev).await;
    let _ = shared.ev.send(ShellEvent::Lost { id, reason });
}

async fn reader_loop(
    r: &mut FramedRead<OwnedReadHalf, LengthDelimitedCodec>,
    id: u32,
    ev: &UnboundedSender<ShellEvent>,
) -> String {
    let decode = |f: &[u8]| postcard::from_bytes::<WorkerMsg>(f);
    loop {
        let frame = match tokio::time::timeout(HEARTBEAT_TIMEOUT, r.next()).await {
            Err(_) => {
                return format!(
                    "silent for {:.1} s (no heartbeat)",
                    HEARTBEAT_TIMEOUT.as_secs_f64()
                );
            }
            Ok(None) => return "connection closed".into(),
            Ok(Some(Err(e))) => return format!("connection error: {e}"),
            Ok(Some(Ok(f))) => f,
        };
        let mut msgs = Vec::new();
        let mut push = |f: &[u8]| -> Result<(), String> {
            match decode(f) {
                Ok(m) => {
                    msgs.push(m);
                    Ok(())
                }
                Err(e) => Err(format!("malformed message: {e}")),
            }
        };
        if let Err(e) = push(&frame) {
            return e;
        }
        // Everything else that is already there, without waiting.
        let mut end = None;
        while let Some(next) = r.next().now_or_never() {
            match next {
                Some(Ok(f)) => {
                    if let Err(e) = push(&f) {
                        end = Some(e);
                        break;
                    }
                }
                Some(Err(e)) => {
                    end = Some(format!("connection error: {e}"));
                    break;
                }
                None => {
                    end = Some("connection closed".into());
                    break;
                }
            }
        }
        if !msgs.is_empty() && ev.send(ShellEvent::Msgs { id, msgs }).is_err() {
            return "the agent is stopping".into();
        }
        if let Some(e) = end {
            return e;
        }
    }
}

async fn writer_loop(
    mut w: FramedWrite<OwnedWriteHalf, LengthDelimitedCodec>,
    mut rx: UnboundedReceiver<Bytes>,
) {
    let heartbeat = encode(&AgentMsg::Heartbeat);
    let mut hb = tokio::time::interval(HEARTBEAT_INTERVAL);
    hb.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            m = rx.recv() => match m {
                Some(b) => {
                    if w.feed(b).await.is_err() {
                        return;
                    }
                    while let Ok(b) = rx.try_recv() {
                        if w.feed(b).await.is_err() {
                            return;
                        }
                    }
                    if SinkExt::<Bytes>::flush(&mut w).await.is_err() {
                        return;
                    }
                }
                None => {
                    let _ = SinkExt::<Bytes>::flush(&mut w).await;
                    return;
                }
            },
            _ = hb.tick() => {
                if w.send(heartbeat.clone()).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The control socket's listener; removes the socket file when dropped.
struct ControlServer {
    task: JoinHandle<()>,
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Listens on the control socket `path`; its clients must run as the user `owner` (this
/// process's user, except in tests).
fn bind_control(
    path: &Path,
    ev: UnboundedSender<ShellEvent>,
    auth: Option<Arc<Auth>>,
    owner: u32,
) -> Result<ControlServer, AgentError> {
    let dir: PathBuf = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let meta = std::fs::metadata(&dir).map_err(|e| {
        AgentError::Setup(format!(
            "control socket {}: cannot use its directory {}: {e}",
            path.display(),
            dir.display()
        ))
    })?;
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(AgentError::Setup(format!(
            "control socket {}: its directory {} is writable by other users (mode {:o}); \
             put the socket in a private directory (for example mkdir -m 700)",
            path.display(),
            dir.display(),
            mode & 0o7777
        )));
    }
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if !m.file_type().is_socket() {
            return Err(AgentError::Setup(format!(
                "control socket {}: the file exists and is not a socket",
                path.display()
            )));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(AgentError::Setup(format!(
                "control socket {}: another job is listening there",
                path.display()
            )));
        }
        let _ = std::fs::remove_file(path);
    }
    let listener = UnixListener::bind(path).map_err(|e| {
        AgentError::Setup(format!(
            "control socket {}: cannot bind: {e}",
            path.display()
        ))
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
        AgentError::Setup(format!(
            "control socket {}: cannot set its mode: {e}",
            path.display()
        ))
    })?;
    let next = Arc::new(AtomicU64::new(0));
    let task = tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((s, _)) => {
                    let client = next.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(control_client(s, client, ev.clone(), auth.clone(), owner));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    });
    Ok(ControlServer { task })
}

/// One control client. Its user must be `owner` (checked before anything is read from it;
/// refused with the reason logged and sent); a runtime's clients must also carry its secret.
async fn control_client(
    s: UnixStream,
    client: u64,
    ev: UnboundedSender<ShellEvent>,
    auth: Option<Arc<Auth>>,
    owner: u32,
) {
    if let Err(refused) = pnet_protocol::check_peer(&s, owner) {
        let reason = refused.to_string();
        let _ = ev.send(ShellEvent::ClientRefused {
            reason: reason.clone(),
        });
        let (mut rd, wr) = s.into_split();
        let mut w = frame::writer(wr);
        let send = async {
            match &auth {
                Some(_) => frame::send(&mut w, &RtResponse::Refused(reason)).await,
                None => frame::send(&mut w, &Response::Error(reason)).await,
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), send).await;
        // Close once the client has (or after a second), so that the close does not cut
        // its request short and it reads the refusal; what it sent is discarded unread.
        let mut unread =
            tokio::io::AsyncReadExt::take(&mut rd, pnet_protocol::PREAUTH_MAX_FRAME as u64);
        let mut sink = tokio::io::sink();
        let drain = tokio::io::copy(&mut unread, &mut sink);
        let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
        return;
    }
    let (rd, wr) = s.into_split();
    let mut r = frame::reader(rd);
    let mut w = frame::writer(wr);
    let (tx, mut rx) = unbounded_channel::<Bytes>();
    if ev.send(ShellEvent::ClientOpened { client, tx }).is_err() {
        return;
    }
    loop {
        let event = match &auth {
            None => match frame::recv::<_, Request>(&mut r).await {
                Ok(request) => ShellEvent::Control { client, request },
                Err(frame::FrameError::Decode(e)) => {
                    let _ =
                        frame::send(&mut w, &Response::Error(format!("malformed request: {e}")))
                            .await;
                    break;
                }
                Err(_) => break,
            },
            Some(a) => match frame::recv::<_, RtEnvelope>(&mut r).await {
                Ok(env) => {
                    if !env.secret.matches(&a.secret) {
                        let _ = frame::send(
                            &mut w,
                            &RtResponse::Refused(
                                "wrong secret: the request does not carry this runtime's secret \
                                 (clients read it from the state directory's `secret` file)"
                                    .into(),
                            ),
                        )
                        .await;
                        break;
                    }
                    ShellEvent::Runtime {
                        client,
                        request: env.request,
                    }
                }
                Err(frame::FrameError::Decode(e)) => {
                    let _ = frame::send(
                        &mut w,
                        &RtResponse::Error(format!(
                            "malformed request ({e}): is the client of the same release?"
                        )),
                    )
                    .await;
                    break;
                }
                Err(_) => break,
            },
        };
        if ev.send(event).is_err() {
            break;
        }
        match rx.recv().await {
            Some(resp) => {
                if w.send(resp).await.is_err() {
                    break;
                }
            }
            None => break,
        }
    }
    let _ = ev.send(ShellEvent::ClientClosed { client });
}

#[cfg(test)]
mod mem_tests;
#[cfg(test)]
mod real;
#[cfg(test)]
mod rt_tests;
#[cfg(test)]
mod tests;
