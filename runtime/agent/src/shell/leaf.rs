//! A leaf agent (`gspc-leaf`, see `runtime/agent/SCALE.md`): one fat worker to its root
//! agent, an agent to its own workers.
//!
//! It connects to the root like a worker, but says [`LeafHello`] with a capacity: the root's
//! scheduler keeps up to that many tasks on it (one `Run` frame carries many) and hears back
//! their answers in [`WorkerMsg::Batch`] frames, with the start of each task on a worker
//! ([`Leaf::tell_running`]). The leaf listens for its own workers with the
//! agent's worker connections ([`super::workers`]: handshake, heartbeats both ways, the
//! 1.5 s loss bound, on their own thread) and places the tasks it holds on them with the
//! agent's [`Sched`] (windows, stealing among its workers). A worker it loses has its tasks
//! run again here, on the others; the root hears [`WorkerMsg::Retried`] for the task it was
//! running (the root counts retries, so `maximum_number_of_retries` keeps its meaning) and
//! sees no loss; a worker it started that ended is started again under its name as the root
//! restarts its own ([`Leaf::tend_workers`]); left without workers, it gives the tasks it
//! holds back to the root (and, when it started its workers and their restarts are spent,
//! leaves the root and ends). Its capacity (its workers times `depth`) follows its workers
//! ([`WorkerMsg::Capacity`]). A steal of the root takes back what the leaf still holds
//! queued. Module definitions (`Modules`, `ModulesAt`, `ForgetModules`) and cancels go down
//! to its workers.
//!
//! The root's crash (its connection lost, not its `Shutdown`): the leaf keeps its workers,
//! cancels or drops the tasks it held (a resumed root runs again what its journal lacks) and
//! joins again for up to `wait_for_root` ([`Leaf::rejoin`]), reading the state directory
//! again at each try (with `root` and `secret` given instead, the root must come back at that
//! address: `gspc boot --resume` keeps the secret); its workers' segments join the new root's
//! global memory, numbered for the leaf's new number. If the root does not come back, it
//! stops its workers and ends.
//!
//! Module calls with memory buffers or transfers: a leaf whose workers have working memory
//! (`shm`, the capability `GPI`) says `GPI` to the root, tells its workers numbers unique
//! under the root ([`pnet_protocol::leaf_worker_id`]: their segments' numbers in the global
//! memory), passes their segments up (their `Memory` messages, in [`WorkerMsg::OfWorker`])
//! and runs the root's memory plans on them as they come (a plan names every segment it
//! copies from or to). A leaf without working memory fails such calls with a message that
//! says so.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{FutureExt, SinkExt, StreamExt};
use pnet_protocol::frame::{self, encode};
use pnet_protocol::{
    AGENT_SILENCE_TIMEOUT, AgentMsg, HEARTBEAT_INTERVAL, Hello, LEAF_PROTOCOL_VERSION, LeafHello,
    LeafWorker, PROTOCOL_VERSION, SECRET_ENV, Secret, TaskRun, WorkerMsg,
};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::ShellEvent;
use super::launch::{MAX_RESTARTS, restart_delay};
use super::workers::{Conn, IoThread, Shared};
use crate::AgentError;
use crate::sched::{ClassSpec, Impls, Pending, Sched, SchedConfig, WorkerId};

/// What a leaf agent needs.
#[derive(Clone, Debug)]
pub struct LeafConfig {
    /// The root agent's worker address (`HOST:PORT`).
    pub root: String,
    /// The root's secret: the leaf says it to the root, and its workers say it to the leaf.
    pub secret: Secret,
    /// The root runtime's state directory: when given, `root` and `secret` are read from
    /// there (again at each attempt while the leaf waits for its root).
    pub state_dir: Option<PathBuf>,
    /// How long to wait for a root that is not there yet (no runtime in the state
    /// directory, nothing listening at its address): job scripts start the root and its
    /// leaves at once. Also how long it waits for a crashed root to come back, keeping its
    /// workers. Zero: fail at once.
    pub wait_for_root: Duration,
    /// Called with a line to show while the leaf waits for its root.
    pub on_wait: Option<fn(&str)>,
    /// The leaf's name (the root shows it as a worker's).
    pub name: String,
    /// Where its workers connect (port 0: any).
    pub listen: SocketAddr,
    /// `gspc-worker` processes it starts (and stops) itself.
    pub workers: usize,
    pub worker_program: PathBuf,
    /// The capabilities it gives its workers and says to the root.
    pub capabilities: Vec<String>,
    /// Module folders passed to its workers (`--module-path`).
    pub module_path: Vec<PathBuf>,
    /// Tasks per worker the root may keep on it (its capacity is this times its workers).
    pub depth: u32,
    /// Working memory of each worker it starts (`gspc-worker --shm`; 0: none). With it the
    /// capabilities should hold `GPI`: the leaf then runs calls with memory buffers and
    /// transfers, its workers' segments part of the root's global memory.
    pub shm: u64,
    /// Log what happens to standard error.
    pub verbose: bool,
    /// Called with the address its workers connect to, once it listens.
    pub on_listen: Option<fn(SocketAddr)>,
}

/// How a leaf's run went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeafReport {
    /// Task answers passed up to the root.
    pub answers: u64,
    /// Workers lost (their tasks ran again here).
    pub workers_lost: u64,
    /// Why it ended: the root's Shutdown, or what happened to the root connection.
    pub ended: String,
}

/// Runs a leaf agent until its root says Shutdown or goes away.
pub fn run_leaf(cfg: LeafConfig) -> Result<LeafReport, AgentError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AgentError::Setup(format!("cannot start the runtime: {e}")))?;
    let mut children = Vec::new();
    let result = rt.block_on(leaf_main(&cfg, &mut children));
    stop_children(&mut children, cfg.shm > 0);
    result
}

/// A worker process the leaf started: started again under its name when it ends while the
/// leaf runs (as the root restarts its own: [`restart_delay`]).
struct Spawned {
    child: Child,
    name: String,
    /// How often it was restarted after it ended.
    restarts: u32,
}

/// Waits up to 2 s for the workers it started (they were told Shutdown, and their standard
/// input closes), then kills the rest (and removes the segments of those killed: they
/// cannot).
fn stop_children(children: &mut [Spawned], shm: bool) {
    for c in children.iter_mut() {
        drop(c.child.stdin.take());
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    for c in children.iter_mut() {
        let c = &mut c.child;
        loop {
            match c.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() >= deadline => {
                    let _ = c.kill();
                    let _ = c.wait();
                    if shm {
                        pnet_memory::remove_segments_of(c.id());
                    }
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    }
}

/// Starts the worker `name` of the leaf, connecting to `addr` with `secret` (its standard
/// input a pipe that closes when the leaf dies).
fn spawn_worker(
    cfg: &LeafConfig,
    addr: SocketAddr,
    secret: &Secret,
    name: &str,
) -> Result<Child, AgentError> {
    let mut c = Command::new(&cfg.worker_program);
    c.arg("--agent")
        .arg(addr.to_string())
        .arg("--name")
        .arg(name)
        .arg("--exit-on-stdin-eof")
        .env(SECRET_ENV, secret.to_hex())
        .stdin(Stdio::piped())
        .stdout(Stdio::null());
    if !cfg.capabilities.is_empty() {
        c.arg("--capabilities").arg(cfg.capabilities.join(","));
    }
    for d in &cfg.module_path {
        c.arg("--module-path").arg(d);
    }
    if cfg.shm > 0 {
        c.arg("--shm").arg(cfg.shm.to_string());
    }
    c.spawn().map_err(|e| {
        setup(format!(
            "cannot start the worker program {}: {e} (give it with --worker-program or \
             $GSPC_WORKER)",
            cfg.worker_program.display()
        ))
    })
}

fn setup(what: String) -> AgentError {
    AgentError::Setup(what)
}

/// Why an attempt to reach the root failed: worth another try while the leaf waits for its
/// root (it is not there yet), or not (it refused the leaf, the address is malformed).
enum Attempt {
    Again(String),
    Fatal(String),
}

/// One attempt to reach the root: its address and secret (from the state directory, when
/// given) and a connection.
async fn try_root(cfg: &LeafConfig) -> Result<(tokio::net::TcpStream, String, Secret), Attempt> {
    let (root, secret) = match &cfg.state_dir {
        Some(dir) => {
            let secret = crate::control::read_secret(dir).map_err(|e| {
                if e.code == "gspc-no-runtime" {
                    Attempt::Again(e.message)
                } else {
                    Attempt::Fatal(e.message)
                }
            })?;
            let root = crate::control::worker_address(dir).map_err(Attempt::Again)?;
            (root, secret)
        }
        None => (cfg.root.clone(), cfg.secret.clone()),
    };
    match tokio::net::TcpStream::connect(&root).await {
        Ok(stream) => Ok((stream, root, secret)),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Err(Attempt::Fatal(format!(
            "cannot connect to the root agent {root}: {e} (give HOST:PORT: the root's `workers \
             connect to` in `gspc status`)"
        ))),
        Err(e) => Err(Attempt::Again(format!(
            "cannot connect to the root agent {root}: {e}"
        ))),
    }
}

/// Reaches the root, waiting up to `cfg.wait_for_root` for it to be there (saying so through
/// `cfg.on_wait` at first and every 10 s).
async fn reach_root(
    cfg: &LeafConfig,
) -> Result<(tokio::net::TcpStream, String, Secret), AgentError> {
    let start = Instant::now();
    let mut said: Option<Instant> = None;
    loop {
        let why = match try_root(cfg).await {
            Ok(r) => {
                if said.is_some()
                    && let Some(f) = cfg.on_wait
                {
                    f(&format!(
                        "the root agent is there after {:.1} s",
                        start.elapsed().as_secs_f64()
                    ));
                }
                return Ok(r);
            }
            Err(Attempt::Fatal(why)) => return Err(setup(why)),
            Err(Attempt::Again(why)) => why,
        };
        let waited = start.elapsed();
        if waited >= cfg.wait_for_root {
            return Err(setup(if cfg.wait_for_root.is_zero() {
                why
            } else {
                format!(
                    "{why} (waited {} s for the root agent: --wait-for-root)",
                    cfg.wait_for_root.as_secs_f64()
                )
            }));
        }
        if said.is_none_or(|t| t.elapsed() >= Duration::from_secs(10))
            && let Some(f) = cfg.on_wait
        {
            f(&format!(
                "waiting for the root agent ({why}); giving up in {:.0} s",
                (cfg.wait_for_root - waited).as_secs_f64().ceil()
            ));
            said = Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What the root's Welcome gave the leaf: its number and the module definitions.
struct Joined {
    root_r: RootReader,
    root_w: RootWriter,
    leaf_id: u32,
    modules: Vec<pnet_protocol::ModuleDef>,
    module_path: Vec<String>,
}

/// The handshake with the root on a new connection: the leaf's hello, the root's Welcome.
async fn join_root(
    cfg: &LeafConfig,
    stream: tokio::net::TcpStream,
    secret: &Secret,
) -> Result<Joined, AgentError> {
    let _ = stream.set_nodelay(true);
    let (rd, wr) = stream.into_split();
    let mut root_r = frame::reader(rd);
    let mut root_w = frame::writer(wr);
    let hello = WorkerMsg::LeafHello(LeafHello {
        hello: Hello {
            protocol: PROTOCOL_VERSION,
            secret: secret.clone(),
            name: cfg.name.clone(),
            host: hostname(),
            pid: std::process::id(),
            capabilities: cfg.capabilities.clone(),
            socket: None,
        },
        leaf_protocol: LEAF_PROTOCOL_VERSION,
        capacity: 0,
    });
    frame::send(&mut root_w, &hello)
        .await
        .map_err(|e| setup(format!("cannot send the hello to the root: {e}")))?;
    let welcome = tokio::time::timeout(
        Duration::from_secs(30),
        frame::recv::<_, AgentMsg>(&mut root_r),
    )
    .await
    .map_err(|_| setup("the root agent did not answer the hello within 30 s".into()))?
    .map_err(|e| setup(format!("the root agent closed the connection: {e}")))?;
    match welcome {
        AgentMsg::Welcome {
            worker,
            modules,
            module_path,
        } => Ok(Joined {
            root_r,
            root_w,
            leaf_id: worker,
            modules,
            module_path,
        }),
        AgentMsg::Refused { reason } => {
            let hint = if reason.contains("not a Hello") {
                " (the root is older than this leaf: use the gspc of the same release)"
            } else {
                ""
            };
            Err(setup(format!(
                "the root agent refused this leaf: {reason}{hint}"
            )))
        }
        other => Err(setup(format!(
            "the root agent answered the hello with {other:?}"
        ))),
    }
}

/// A leaf with working memory needs a number from its root that gives its workers numbers
/// of their own under the root ([`pnet_protocol::leaf_worker_id`]): else its workers' memory
/// could not join the global memory, and calls with memory would wait here for ever.
fn check_leaf_number(cfg: &LeafConfig, leaf_id: u32) -> Result<(), AgentError> {
    let gpi = crate::memory::GPI_CAPABILITY;
    if cfg.capabilities.iter().any(|c| c == gpi)
        && pnet_protocol::leaf_worker_id(leaf_id, 0).is_none()
    {
        return Err(setup(format!(
            "the root gave this leaf the number {leaf_id}: its workers' working memory cannot \
             join the root's global memory (leaves numbered below 65536 only); start it \
             without --shm (memory calls then run on other workers), or restart the root"
        )));
    }
    Ok(())
}

async fn leaf_main(
    cfg: &LeafConfig,
    children: &mut Vec<Spawned>,
) -> Result<LeafReport, AgentError> {
    // The root first: its Welcome holds the module definitions the workers need.
    let (stream, root, secret) = reach_root(cfg).await?;
    let Joined {
        mut root_r,
        mut root_w,
        leaf_id,
        modules,
        module_path,
    } = join_root(cfg, stream, &secret).await?;
    check_leaf_number(cfg, leaf_id)?;
    // Its own workers.
    let io = IoThread::start().map_err(|e| setup(format!("cannot start a thread: {e}")))?;
    let listener = io
        .listen(cfg.listen)
        .map_err(|e| setup(format!("cannot listen on {}: {e}", cfg.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| setup(format!("cannot read the listening address: {e}")))?;
    let (ev_tx, ev_rx) = unbounded_channel::<ShellEvent>();
    let shared = Arc::new(Shared {
        secret: secret.clone(),
        defs: Mutex::new((modules, 0)),
        module_path,
        next_id: AtomicU32::new(0),
        leaf_id: Some(AtomicU32::new(leaf_id)),
        ev: ev_tx,
        pending: Mutex::default(),
        beats: Mutex::default(),
        leaves: Mutex::default(),
    });
    let _serving = io.serve(listener, shared.clone());
    if let Some(f) = cfg.on_listen {
        f(addr);
    }
    for i in 0..cfg.workers {
        let name = format!("{}-w{i}", cfg.name);
        let child = spawn_worker(cfg, addr, &secret, &name)?;
        children.push(Spawned {
            child,
            name,
            restarts: 0,
        });
    }
    let mut leaf = Leaf {
        cfg,
        sched: Sched::new(SchedConfig::default()),
        classes: HashMap::new(),
        conns: HashMap::new(),
        at: HashMap::new(),
        mem: HashMap::new(),
        leaf_id,
        up: Vec::new(),
        late: Vec::new(),
        capacity_sent: 0,
        subs: HashMap::new(),
        subs_changed: false,
        subs_busy: false,
        subs_sent: Instant::now(),
        start: Instant::now(),
        report: LeafReport::default(),
        shared_defs: shared,
        addr,
        restarts: Vec::new(),
        segments: HashMap::new(),
        workers_gone: None,
        running_changed: Vec::new(),
    };
    leaf.log(&format!(
        "leaf `{}`: connected to the root {root}; its workers connect to {addr}",
        cfg.name
    ));
    let mut ev_rx = ev_rx;
    let ended = loop {
        let why = match leaf
            .run(&mut root_r, &mut root_w, &mut ev_rx, children)
            .await
        {
            End::Over(why) => break why,
            End::RootLost(why) => why,
        };
        if cfg.wait_for_root.is_zero() {
            break why;
        }
        match leaf.rejoin(&why, &mut ev_rx, children).await {
            Ok(j) => {
                root_r = j.root_r;
                root_w = j.root_w;
            }
            Err(e) => break format!("{why}; {e}"),
        }
    };
    for c in leaf.conns.values() {
        let _ = c.tx.send(encode(&AgentMsg::Shutdown));
    }
    // Let the Shutdowns go out before the connections close.
    tokio::time::sleep(Duration::from_millis(50)).await;
    leaf.log(&format!("leaf `{}`: {ended}", cfg.name));
    leaf.report.ended = ended;
    Ok(leaf.report)
}

/// This host's name.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

struct Leaf<'c> {
    cfg: &'c LeafConfig,
    sched: Sched,
    /// Module definition id -> the class of its tasks here (a leaf's workers are alike: the
    /// root chose the definition for the leaf's capabilities).
    classes: HashMap<u32, u32>,
    conns: HashMap<WorkerId, Conn>,
    /// The worker holding each task in flight here.
    at: HashMap<u64, WorkerId>,
    /// The root's memory plans of the calls with memory held here.
    mem: HashMap<u64, pnet_protocol::memory::MemoryTask>,
    /// Its number at the root (its workers' numbers follow from it:
    /// [`pnet_protocol::leaf_worker_id`]).
    leaf_id: u32,
    /// Messages for the root, sent as one batch after each round of events.
    up: Vec<WorkerMsg>,
    /// Module messages of the root since its Welcome, in order, for workers that join later
    /// (without the definitions forgotten since).
    late: Vec<AgentMsg>,
    capacity_sent: u32,
    /// What the root is told of each worker ([`WorkerMsg::LeafWorkers`]).
    subs: HashMap<WorkerId, Sub>,
    /// A worker joined or was lost since the root was last told.
    subs_changed: bool,
    /// A task was placed or answered since the root was last told.
    subs_busy: bool,
    subs_sent: Instant,
    start: Instant,
    report: LeafReport,
    /// The definitions in the Welcome of a worker (the root's Welcome's, less those
    /// forgotten), the secret its workers say and its number at the root.
    shared_defs: Arc<Shared>,
    /// Where its workers connect (for the workers it starts again).
    addr: SocketAddr,
    /// Workers it started that ended, to start again (when, name, their restarts then).
    restarts: Vec<(Instant, String, u32)>,
    /// Its workers' segments (their `Memory` messages): a root it joins again hears them
    /// again.
    segments: HashMap<WorkerId, pnet_protocol::memory::SegmentInfo>,
    /// Workers given or answering tasks in this round: the root hears what they run at its
    /// end ([`Leaf::tell_running`]).
    running_changed: Vec<WorkerId>,
    /// Why it leaves its root: every worker it started ended for good
    /// ([`Leaf::tend_workers`]).
    workers_gone: Option<String>,
}

/// A worker of the leaf as the root sees it in the status.
struct Sub {
    host: String,
    pid: u32,
    capabilities: Vec<String>,
    last_seen: Instant,
    done: u64,
    /// The task the root was last told it runs ([`Leaf::tell_running`]).
    told: Option<u64>,
}

/// How often the root hears the leaf's workers when none joined or was lost: while tasks
/// are placed and answered, and when all are idle (for their heartbeats' ages).
const SUBS_BUSY_EVERY: Duration = Duration::from_millis(500);
const SUBS_IDLE_EVERY: Duration = Duration::from_secs(5);

type RootReader = tokio_util::codec::FramedRead<
    tokio::net::tcp::OwnedReadHalf,
    tokio_util::codec::LengthDelimitedCodec,
>;
type RootWriter = tokio_util::codec::FramedWrite<
    tokio::net::tcp::OwnedWriteHalf,
    tokio_util::codec::LengthDelimitedCodec,
>;

/// Why [`Leaf::run`] ended: for good (the root's Shutdown, ...), or the root's connection
/// was lost (the leaf tries to join again).
enum End {
    Over(String),
    RootLost(String),
}

/// Events handled in one round at most (then the root hears the answers).
const ROUND: usize = 4096;

impl Leaf<'_> {
    fn log(&self, line: &str) {
        if self.cfg.verbose {
            eprintln!("[{:8.3}] {line}", self.start.elapsed().as_secs_f64());
        }
    }

    /// The loop: root frames, worker events and the heartbeat to the root (at which it also
    /// reaps the workers it started that exited); returns why it ended.
    async fn run(
        &mut self,
        root_r: &mut RootReader,
        root_w: &mut RootWriter,
        ev_rx: &mut UnboundedReceiver<ShellEvent>,
        children: &mut Vec<Spawned>,
    ) -> End {
        let mut hb = tokio::time::interval(HEARTBEAT_INTERVAL);
        hb.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_heard = Instant::now();
        let mut last_sent = Instant::now();
        loop {
            tokio::select! {
                f = root_r.next() => {
                    last_heard = Instant::now();
                    let mut frames = vec![f];
                    while frames.len() < ROUND
                        && let Some(f) = root_r.next().now_or_never()
                    {
                        frames.push(f);
                    }
                    for f in frames {
                        let bytes = match f {
                            None => {
                                return End::RootLost("the root closed the connection".into());
                            }
                            Some(Err(e)) => {
                                return End::RootLost(format!("root connection error: {e}"));
                            }
                            Some(Ok(b)) => b,
                        };
                        match postcard::from_bytes::<AgentMsg>(&bytes) {
                            Ok(AgentMsg::Shutdown) => return End::Over("stopped by the root".into()),
                            Ok(m) => self.root_msg(m),
                            Err(e) => {
                                return End::Over(format!("malformed message from the root: {e}"));
                            }
                        }
                    }
                }
                ev = ev_rx.recv() => {
                    let Some(ev) = ev else {
                        return End::Over("the worker connections ended".into());
                    };
                    self.shell_event(ev);
                    let mut n = 1;
                    while n < ROUND && let Ok(ev) = ev_rx.try_recv() {
                        self.shell_event(ev);
                        n += 1;
                    }
                }
                _ = hb.tick() => {
                    self.tend_workers(children);
                    if last_heard.elapsed() > AGENT_SILENCE_TIMEOUT {
                        return End::RootLost(format!(
                            "the root has been silent for {} ms",
                            last_heard.elapsed().as_millis()
                        ));
                    }
                    if last_sent.elapsed() >= HEARTBEAT_INTERVAL / 2 && self.up.is_empty() {
                        self.up.push(WorkerMsg::Heartbeat { running: None });
                    }
                }
            }
            self.pump();
            if !self.up.is_empty() {
                let batch = std::mem::take(&mut self.up);
                let msg = if batch.len() == 1 {
                    batch
                        .into_iter()
                        .next()
                        .unwrap_or(WorkerMsg::Heartbeat { running: None })
                } else {
                    WorkerMsg::Batch(batch)
                };
                if let Err(e) = root_w.send(encode(&msg)).await {
                    return End::RootLost(format!("cannot write to the root: {e}"));
                }
                last_sent = Instant::now();
            }
            // Its workers ended for good: the tasks it held went back to the root above.
            if let Some(why) = self.workers_gone.take() {
                return End::Over(format!("{why}; left the root"));
            }
        }
    }

    /// A worker's capabilities for the scheduler here.
    fn sched_caps(&self, id: WorkerId, mut caps: Vec<String>) -> Vec<String> {
        if pnet_protocol::leaf_worker_id(self.leaf_id, id).is_none() {
            // Its number is not unique under the root: its memory cannot join the global
            // memory, so it runs no calls with memory.
            caps.retain(|c| c != crate::memory::GPI_CAPABILITY);
        }
        caps
    }

    /// Says a line on standard error (`on_wait`) and in the log.
    fn say(&self, line: &str) {
        if let Some(f) = self.cfg.on_wait {
            f(line);
        }
        self.log(line);
    }

    /// The root's connection was lost (not its Shutdown): the leaf keeps its workers, drops
    /// the tasks it holds (those running are cancelled on the workers: a resumed root runs
    /// again what its journal lacks) and tries to join the root again for up to
    /// `wait_for_root`, reading its address and secret again at each try (a resumed root
    /// listens on a new port with a new secret). It joins once every cancelled task has been
    /// answered (so no late answer of the old root's tasks reaches the new one).
    async fn rejoin(
        &mut self,
        why: &str,
        ev_rx: &mut UnboundedReceiver<ShellEvent>,
        children: &mut Vec<Spawned>,
    ) -> Result<Joined, AgentError> {
        let cfg = self.cfg;
        let mut old = std::mem::replace(&mut self.sched, Sched::new(SchedConfig::default()));
        let cancelled = old.cancel_all();
        for &(wid, task) in &cancelled {
            self.to_worker(wid, &AgentMsg::Cancel { task });
        }
        let queued = old.queued();
        let mut ids: Vec<WorkerId> = self.conns.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let caps = self
                .subs
                .get(&id)
                .map(|s| s.capabilities.clone())
                .unwrap_or_default();
            let caps = self.sched_caps(id, caps);
            let name = self
                .conns
                .get(&id)
                .map(|c| c.name.clone())
                .unwrap_or_default();
            self.sched.add_worker(id, &name, caps);
        }
        self.classes.clear();
        self.at.clear();
        self.mem.clear();
        self.up.clear();
        self.capacity_sent = 0;
        self.subs_changed = true;
        self.say(&format!(
            "lost the root agent ({why}); keeping its {} workers ({} running tasks cancelled, \
             {queued} queued dropped: a resumed root runs them again) and trying to join it \
             again for up to {} s (--wait-for-root)",
            self.conns.len(),
            cancelled.len(),
            cfg.wait_for_root.as_secs_f64()
        ));
        let start = Instant::now();
        let mut said = Instant::now();
        let mut last = String::from("the cancelled tasks are not answered yet");
        loop {
            while let Ok(ev) = ev_rx.try_recv() {
                self.lost_event(&mut old, ev);
            }
            self.up.clear();
            self.tend_workers(children);
            if let Some(why) = self.workers_gone.take() {
                return Err(setup(format!("{why}; stopped waiting for the root")));
            }
            if old.running() == 0 {
                match try_root(cfg).await {
                    Ok((stream, root, secret)) => {
                        let j = match join_root(cfg, stream, &secret).await {
                            Ok(j) => Some(j),
                            // Refused for its name: the root has not seen its old
                            // connection end yet.
                            Err(e)
                                if e.to_string().contains("refused this leaf")
                                    && !e.to_string().contains(super::workers::LEAF_NAME_TAKEN) =>
                            {
                                return Err(e);
                            }
                            Err(e) => {
                                last = e.to_string();
                                None
                            }
                        };
                        if let Some(j) = j {
                            check_leaf_number(cfg, j.leaf_id)?;
                            self.rejoined(&j);
                            self.say(&format!(
                                "joined the root agent {root} again after {:.1} s (leaf number \
                                 {}), with its {} workers",
                                start.elapsed().as_secs_f64(),
                                j.leaf_id,
                                self.conns.len()
                            ));
                            return Ok(j);
                        }
                    }
                    Err(Attempt::Fatal(w)) => return Err(setup(w)),
                    Err(Attempt::Again(w)) => last = w,
                }
            }
            let waited = start.elapsed();
            if waited >= cfg.wait_for_root {
                return Err(setup(format!(
                    "{last} (waited {} s for the root agent to come back: --wait-for-root)",
                    cfg.wait_for_root.as_secs_f64()
                )));
            }
            if said.elapsed() >= Duration::from_secs(10) {
                self.say(&format!(
                    "still waiting for the root agent ({last}); giving up in {:.0} s",
                    (cfg.wait_for_root - waited).as_secs_f64().ceil()
                ));
                said = Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A worker event while the root is away: answers settle the cancelled tasks of `old`
    /// (the scheduler of the lost root's tasks); joins and losses change the workers, and
    /// the segments of those that join are kept for the next root.
    fn lost_event(&mut self, old: &mut Sched, ev: ShellEvent) {
        match ev {
            ShellEvent::Msgs { id, msgs } => {
                if let Some(sub) = self.subs.get_mut(&id) {
                    sub.last_seen = Instant::now();
                }
                let now = self.now();
                for m in msgs {
                    match m {
                        WorkerMsg::Done { task, .. }
                        | WorkerMsg::DoneAt { task, .. }
                        | WorkerMsg::Failed { task, .. }
                        | WorkerMsg::FailedAt { task, .. }
                        | WorkerMsg::Cancelled { task } => {
                            old.finish(id, task, now);
                        }
                        WorkerMsg::Returned { tasks, kept } => {
                            old.returned(id, &tasks, &kept);
                        }
                        // The segment of a worker that joined meanwhile (restarted): the
                        // root hears it when the leaf joins it again.
                        WorkerMsg::Memory(seg)
                            if pnet_protocol::leaf_worker_id(self.leaf_id, id).is_some() =>
                        {
                            self.segments.insert(id, seg);
                        }
                        _ => {}
                    }
                }
            }
            ShellEvent::Lost { id, .. } => {
                old.remove_worker(id);
                self.shell_event(ev);
            }
            ev => self.shell_event(ev),
        }
    }

    /// Joined the root again: its Welcome's module definitions replace the lost root's on
    /// the workers.
    fn rejoined(&mut self, j: &Joined) {
        let mut gone: Vec<u32> = {
            let defs = self
                .shared_defs
                .defs
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            defs.0.iter().map(|d| d.id).collect()
        };
        for m in &self.late {
            if let AgentMsg::Modules { modules } | AgentMsg::ModulesAt { modules, .. } = m {
                gone.extend(modules.iter().map(|d| d.id));
            }
        }
        gone.sort_unstable();
        gone.dedup();
        self.late.clear();
        *self
            .shared_defs
            .defs
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = (j.modules.clone(), 0);
        let forget = encode(&AgentMsg::ForgetModules { ids: gone });
        let add = encode(&AgentMsg::Modules {
            modules: j.modules.clone(),
        });
        for c in self.conns.values() {
            let _ = c.tx.send(forget.clone());
            let _ = c.tx.send(add.clone());
        }
        self.set_leaf_id(j.leaf_id);
        // Its workers' segments join the new root's global memory (numbered for the leaf's
        // new number: the workers keep theirs, a plan names a segment by its file too).
        let mut segs: Vec<(WorkerId, pnet_protocol::memory::SegmentInfo)> = (self.segments)
            .iter()
            .map(|(&w, s)| (w, s.clone()))
            .collect();
        segs.sort_by_key(|(w, _)| *w);
        for (wid, mut seg) in segs {
            if let Some(id) = pnet_protocol::leaf_worker_id(self.leaf_id, wid) {
                seg.id = id;
                self.up_of(wid, WorkerMsg::Memory(seg));
            }
        }
    }

    /// Its number at the root, also for the Welcome of the workers that join from now on.
    fn set_leaf_id(&mut self, leaf_id: u32) {
        self.leaf_id = leaf_id;
        if let Some(n) = &self.shared_defs.leaf_id {
            n.store(leaf_id, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Waits for the workers it started that exited (killed, crashed), so that none stays a
    /// zombie while the leaf runs, removes their segments (a killed worker cannot) and
    /// starts them again as the root does its own (`launch.rs`): under the same name, after
    /// [`restart_delay`]. The tasks
    /// of a lost worker run again on the others meanwhile (or wait here for it).
    fn tend_workers(&mut self, children: &mut Vec<Spawned>) {
        let mut i = 0;
        while i < children.len() {
            let status = match children[i].child.try_wait() {
                Ok(Some(status)) => status,
                Ok(None) | Err(_) => {
                    i += 1;
                    continue;
                }
            };
            let c = children.swap_remove(i);
            let pid = c.child.id();
            if self.cfg.shm > 0 {
                pnet_memory::remove_segments_of(pid);
            }
            let how = pnet_launch::describe(status);
            let name = c.name;
            let Some(delay) = restart_delay(c.restarts) else {
                self.say(&format!(
                    "worker `{name}` (pid {pid}) {how}; not restarted: it was restarted \
                     {MAX_RESTARTS} times already"
                ));
                continue;
            };
            self.say(&format!(
                "worker `{name}` (pid {pid}) {how}; restarting it in {} ms (restart {} of \
                 {MAX_RESTARTS})",
                delay.as_millis(),
                c.restarts + 1
            ));
            self.restarts
                .push((Instant::now() + delay, name, c.restarts + 1));
        }
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.restarts)
            .into_iter()
            .partition(|(at, ..)| *at <= now);
        self.restarts = later;
        for (_, name, restarts) in due {
            match spawn_worker(self.cfg, self.addr, &self.shared_defs.secret, &name) {
                Ok(child) => {
                    self.log(&format!(
                        "worker `{name}` started again (pid {})",
                        child.id()
                    ));
                    children.push(Spawned {
                        child,
                        name,
                        restarts,
                    });
                }
                Err(e) => self.say(&format!("cannot restart worker `{name}`: {e}")),
            }
        }
        // No worker left and none coming (their restarts spent): the root runs the tasks
        // queued here elsewhere (a Cancelled it did not ask for queues a task again there;
        // its capacity here is 0 now, so it sends no more).
        if !(self.conns.is_empty() && self.restarts.is_empty() && children.is_empty()) {
            return;
        }
        if self.sched.queued() > 0 {
            let back = self.sched.take_all_queued();
            for p in &back {
                self.mem.remove(&p.id);
                self.up.push(WorkerMsg::Cancelled { task: p.id });
            }
            self.say(&format!(
                "no workers left: {} queued task{} given back to the root",
                back.len(),
                if back.len() == 1 { "" } else { "s" }
            ));
        }
        // A leaf that started its workers and has none left for good can do nothing more
        // (no one else starts workers for it): it leaves the root rather than stay there, a
        // worker of capacity 0 in its status. One started without workers (`--workers 0`)
        // waits for workers to join it.
        if self.cfg.workers > 0 && self.workers_gone.is_none() {
            let n = self.cfg.workers;
            self.workers_gone = Some(format!(
                "no workers left: the {n} worker{} it started ended and {} not restarted (at \
                 most {MAX_RESTARTS} times each)",
                if n == 1 { "" } else { "s" },
                if n == 1 { "was" } else { "were" },
            ));
        }
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn to_worker(&self, wid: WorkerId, msg: &AgentMsg) {
        if let Some(c) = self.conns.get(&wid) {
            let _ = c.tx.send(encode(msg));
        }
    }

    fn root_msg(&mut self, msg: AgentMsg) {
        match msg {
            AgentMsg::Run(tasks) => {
                for t in tasks {
                    self.queue(t);
                }
            }
            AgentMsg::Cancel { task } => {
                if let Some(&wid) = self.at.get(&task) {
                    if self.sched.cancel_in_flight(wid, task) {
                        self.to_worker(wid, &AgentMsg::Cancel { task });
                    }
                } else if !self.sched.take_queued(&[task]).is_empty() {
                    self.mem.remove(&task);
                    self.up.push(WorkerMsg::Cancelled { task });
                }
            }
            AgentMsg::Steal { tasks } => {
                let back: Vec<u64> = self
                    .sched
                    .take_queued(&tasks)
                    .iter()
                    .map(|p| p.id)
                    .collect();
                for t in &back {
                    self.mem.remove(t);
                }
                let kept = tasks.into_iter().filter(|t| !back.contains(t)).collect();
                self.up.push(WorkerMsg::Returned { tasks: back, kept });
            }
            m @ (AgentMsg::Modules { .. }
            | AgentMsg::ModulesAt { .. }
            | AgentMsg::ForgetModules { .. }) => {
                let bytes = encode(&m);
                for c in self.conns.values() {
                    let _ = c.tx.send(bytes.clone());
                }
                if let AgentMsg::ForgetModules { ids } = &m {
                    self.forget(ids);
                } else {
                    self.late.push(m);
                }
            }
            AgentMsg::Heartbeat
            | AgentMsg::Shutdown
            | AgentMsg::Welcome { .. }
            | AgentMsg::Refused { .. } => {}
        }
    }

    /// Definitions no task will name again: out of what late joiners are told.
    fn forget(&mut self, ids: &[u32]) {
        for m in &mut self.late {
            if let AgentMsg::Modules { modules } | AgentMsg::ModulesAt { modules, .. } = m {
                modules.retain(|d| !ids.contains(&d.id));
            }
        }
        self.late.retain(|m| {
            !matches!(m, AgentMsg::Modules { modules } | AgentMsg::ModulesAt { modules, .. }
                if modules.is_empty())
        });
        let mut defs = self
            .shared_defs
            .defs
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        defs.0.retain(|d| !ids.contains(&d.id));
    }

    /// A task from the root: queued here. A call with memory goes to a worker with working
    /// memory (the capability GPI) with the root's plan (the plan names every segment it
    /// copies from or to: any worker with working memory can run it); a leaf without such
    /// workers fails it.
    fn queue(&mut self, t: TaskRun) {
        let gpi = crate::memory::GPI_CAPABILITY;
        if let Some(m) = t.memory {
            if !self.cfg.capabilities.iter().any(|c| c == gpi) {
                self.up.push(WorkerMsg::Failed {
                    task: t.task,
                    message: format!(
                        "leaf agent `{}` has no workers with working memory (start it with \
                         --shm BYTES) and does not run module calls with memory buffers or \
                         transfers",
                        self.cfg.name
                    ),
                });
                return;
            }
            self.mem.insert(t.task, m);
        }
        let sched = &mut self.sched;
        let memory = self.mem.contains_key(&t.task);
        let class = *self.classes.entry(t.module).or_insert_with(|| {
            sched.add_class(ClassSpec {
                name: format!("module definition {}", t.module).into(),
                location: String::new(),
                // A definition's calls all have memory or none do.
                mandatory: if memory {
                    vec![gpi.to_string()]
                } else {
                    Vec::new()
                },
                impls: Impls::One(t.module),
                max_retries: None,
            })
        });
        let seq = self.sched.next_seq();
        self.sched.enqueue(Pending {
            id: t.task,
            class,
            inputs: t.inputs,
            eureka: None,
            memory: None,
            retries: 0,
            seq,
        });
    }

    fn shell_event(&mut self, ev: ShellEvent) {
        match ev {
            ShellEvent::Joined {
                id,
                hello,
                tx,
                writer,
                ..
            } => {
                self.log(&format!(
                    "worker {id} `{}` joined (pid {})",
                    hello.name, hello.pid
                ));
                for m in &self.late {
                    let _ = tx.send(encode(m));
                }
                self.conns.insert(
                    id,
                    Conn {
                        tx,
                        writer,
                        name: hello.name.clone(),
                    },
                );
                self.subs.insert(
                    id,
                    Sub {
                        host: hello.host.clone(),
                        pid: hello.pid,
                        capabilities: hello.capabilities.clone(),
                        last_seen: Instant::now(),
                        done: 0,
                        told: None,
                    },
                );
                self.subs_changed = true;
                let caps = self.sched_caps(id, hello.capabilities);
                self.sched.add_worker(id, &hello.name, caps);
            }
            ShellEvent::Refused { peer, reason } => {
                self.log(&format!("refused a worker from {peer}: {reason}"));
            }
            ShellEvent::Msgs { id, msgs } => {
                if let Some(sub) = self.subs.get_mut(&id) {
                    sub.last_seen = Instant::now();
                }
                for m in msgs {
                    self.worker_msg(id, m);
                }
            }
            ShellEvent::Lost { id, reason } => {
                let name = self.conns.remove(&id).map(|c| c.name).unwrap_or_default();
                self.subs.remove(&id);
                self.segments.remove(&id);
                self.subs_changed = true;
                let lost = self.sched.remove_worker(id);
                for t in lost.requeued.iter().chain(&lost.discarded) {
                    self.at.remove(t);
                }
                if let Some(t) = lost.running {
                    self.up.push(WorkerMsg::Retried { task: t });
                }
                for t in lost.discarded {
                    self.mem.remove(&t);
                    self.up.push(WorkerMsg::Cancelled { task: t });
                }
                self.report.workers_lost += 1;
                self.log(&format!(
                    "worker {id} `{name}` lost: {reason}; {} tasks run again here",
                    lost.requeued.len()
                ));
            }
            ShellEvent::LostWait { .. }
            | ShellEvent::ClientOpened { .. }
            | ShellEvent::Control { .. }
            | ShellEvent::Runtime { .. }
            | ShellEvent::ClientClosed { .. }
            | ShellEvent::ClientRefused { .. }
            | ShellEvent::MemReply { .. } => {}
        }
    }

    fn worker_msg(&mut self, wid: WorkerId, m: WorkerMsg) {
        let task = match &m {
            WorkerMsg::Done { task, .. }
            | WorkerMsg::DoneAt { task, .. }
            | WorkerMsg::Failed { task, .. }
            | WorkerMsg::FailedAt { task, .. }
            | WorkerMsg::Cancelled { task } => *task,
            WorkerMsg::Log { .. } => {
                self.up_of(wid, m);
                return;
            }
            // A worker's working memory: the root puts it in the global memory.
            WorkerMsg::Memory(seg) => {
                if pnet_protocol::leaf_worker_id(self.leaf_id, wid).is_some() {
                    self.segments.insert(wid, seg.clone());
                    self.up_of(wid, WorkerMsg::Memory(seg.clone()));
                } else {
                    self.log(&format!(
                        "worker {wid}: its working memory stays out of the global memory (more \
                         than {} workers joined this leaf)",
                        pnet_protocol::LEAF_WORKER_IDS
                    ));
                }
                return;
            }
            WorkerMsg::Returned { tasks, kept } => {
                for t in tasks {
                    self.at.remove(t);
                }
                for t in self.sched.returned(wid, tasks, kept) {
                    self.mem.remove(&t);
                    self.up.push(WorkerMsg::Cancelled { task: t });
                }
                return;
            }
            _ => return,
        };
        if self.sched.finish(wid, task, self.now()).is_some() {
            self.at.remove(&task);
            self.mem.remove(&task);
            self.report.answers += 1;
            if let Some(sub) = self.subs.get_mut(&wid) {
                sub.done += 1;
            }
            self.subs_busy = true;
            self.up_of(wid, m);
            self.running_changed.push(wid);
        }
    }

    /// The root hears at the end of each round which task each worker that was given or
    /// answered tasks in the round runs, when that changed: a `Heartbeat` in the worker's
    /// [`WorkerMsg::OfWorker`] of the round (after its answers), so that `gspc tasks` shows a
    /// task running when it starts rather than at the next report of the workers. Once per
    /// worker and round: a worker that answered several tasks is told of once.
    fn tell_running(&mut self) {
        if self.running_changed.is_empty() {
            return;
        }
        let mut changed = std::mem::take(&mut self.running_changed);
        changed.sort_unstable();
        changed.dedup();
        // Each worker's last OfWorker after the last report of all the workers (which a
        // Heartbeat must follow, being newer).
        let from = (self.up.iter())
            .rposition(|m| matches!(m, WorkerMsg::LeafWorkers(_)))
            .map_or(0, |i| i + 1);
        let mut at: HashMap<WorkerId, usize> = HashMap::new();
        for (i, m) in self.up.iter().enumerate().skip(from) {
            if let WorkerMsg::OfWorker { worker, .. } = m {
                at.insert(*worker, i);
            }
        }
        for wid in changed {
            // Workers run their tasks in order: the oldest one in flight.
            let running = self.sched.running_record(wid).map(|r| r.task.id);
            let Some(sub) = self.subs.get_mut(&wid) else {
                continue;
            };
            if sub.told == running {
                continue;
            }
            sub.told = running;
            let beat = WorkerMsg::Heartbeat { running };
            match at.get(&wid).and_then(|&i| self.up.get_mut(i)) {
                Some(WorkerMsg::OfWorker { msgs, .. }) => msgs.push(beat),
                _ => {
                    self.up_of(wid, beat);
                    at.insert(wid, self.up.len() - 1);
                }
            }
        }
    }

    /// A message of the worker `wid` for the root: in a [`WorkerMsg::OfWorker`] of that
    /// worker (the last one, when the worker's messages follow each other).
    fn up_of(&mut self, wid: WorkerId, m: WorkerMsg) {
        if let Some(WorkerMsg::OfWorker { worker, msgs }) = self.up.last_mut()
            && *worker == wid
        {
            msgs.push(m);
            return;
        }
        self.up.push(WorkerMsg::OfWorker {
            worker: wid,
            msgs: vec![m],
        });
    }

    /// The root hears the workers when one joined or was lost, else every
    /// [`SUBS_BUSY_EVERY`] while they work and every [`SUBS_IDLE_EVERY`] when they do not.
    fn report_subs(&mut self) {
        let every = if self.subs_busy {
            SUBS_BUSY_EVERY
        } else {
            SUBS_IDLE_EVERY
        };
        if !self.subs_changed && (self.subs.is_empty() || self.subs_sent.elapsed() < every) {
            return;
        }
        self.subs_changed = false;
        self.subs_busy = false;
        self.subs_sent = Instant::now();
        for (&id, s) in &mut self.subs {
            s.told = self.sched.running_record(id).map(|r| r.task.id);
        }
        let mut list: Vec<LeafWorker> = self
            .subs
            .iter()
            .map(|(&id, s)| LeafWorker {
                worker: id,
                name: self
                    .conns
                    .get(&id)
                    .map(|c| c.name.clone())
                    .unwrap_or_default(),
                host: s.host.clone(),
                pid: s.pid,
                capabilities: s.capabilities.clone(),
                heartbeat_age_ms: s.last_seen.elapsed().as_millis() as u64,
                running: s.told,
                in_flight: self.sched.load(id),
                done: s.done,
            })
            .collect();
        list.sort_by(|a, b| a.name.cmp(&b.name));
        self.up.push(WorkerMsg::LeafWorkers(list));
    }

    /// Capacity, placement on the workers, steals among them.
    fn pump(&mut self) {
        let capacity = (self.conns.len() as u32).saturating_mul(self.cfg.depth.max(1));
        if capacity != self.capacity_sent {
            self.capacity_sent = capacity;
            self.up.push(WorkerMsg::Capacity { capacity });
        }
        self.report_subs();
        let mut runs: HashMap<WorkerId, Vec<TaskRun>> = HashMap::new();
        let now = self.now();
        let mem = &self.mem;
        self.sched.dispatch(now, |wid, inf| {
            runs.entry(wid).or_default().push(TaskRun {
                task: inf.task.id,
                module: inf.def,
                inputs: inf.task.inputs.clone(),
                memory: mem.get(&inf.task.id).cloned(),
            });
        });
        for (wid, tasks) in runs {
            self.subs_busy = true;
            for t in &tasks {
                self.at.insert(t.task, wid);
            }
            self.to_worker(wid, &AgentMsg::Run(tasks));
            self.running_changed.push(wid);
        }
        for (victim, tasks) in self.sched.steal() {
            self.to_worker(victim, &AgentMsg::Steal { tasks });
        }
        self.tell_running();
    }
}
