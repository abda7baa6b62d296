//! The tokio shell around the [`Core`]: one current-thread runtime runs the core's loop, the
//! listener (handshake: protocol version, then secret; `Refused` with a reason otherwise),
//! one reader and one writer task per worker (the writer feeds each message of a batch and
//! flushes once, and sends heartbeats; the reader forwards batches of messages and declares
//! the worker lost when it is silent for `HEARTBEAT_TIMEOUT`), the control socket, signals,
//! the progress line, the trace and the event log. Workers of the plan are started through
//! `pnet-launch` with the secret on their stdin and stopped at the end (Shutdown, then
//! `stop_all` with a grace period).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{FutureExt, SinkExt, StreamExt};
use pnet_bundle::Bundle;
use pnet_launch::{Launched, WorkerCommand};
use pnet_protocol::frame::{self, encode};
use pnet_protocol::{
    AgentMsg, HEARTBEAT_INTERVAL, HEARTBEAT_TIMEOUT, Hello, ModuleDef, PROTOCOL_VERSION, Secret,
    WorkerMsg, hello_protocol,
};
use pnet_stdlib::Value;
use pnet_vm::RunResult;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

use crate::control::{Request, Response};
use crate::core::{Command, Core, CoreConfig, Event, calls_modules};
use crate::trace::TraceWriter;
use crate::{AgentConfig, AgentError, JobOptions, StartWorkers};

/// How long a connecting worker has to send its Hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Events handled before the core pumps again.
const EVENT_BATCH: usize = 4096;

enum ShellEvent {
    Joined {
        id: u32,
        hello: Hello,
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
        tx: UnboundedSender<Response>,
    },
    Control {
        client: u64,
        request: Request,
    },
    ClientClosed {
        client: u64,
    },
}

fn setup(what: &str) -> impl Fn(std::io::Error) -> AgentError + '_ {
    move |e| AgentError::Setup(format!("{what}: {e}"))
}

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
    let mut core = Core::new(bundle, inputs, &config.run, core_cfg)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(setup("cannot start the runtime"))?;
    let grace = options.stop_grace;
    let mut launched = Vec::new();
    let result = rt.block_on(main_loop(
        &mut core,
        config,
        options,
        start_workers,
        &mut launched,
    ));
    drop(rt);
    if !launched.is_empty() {
        let ended = pnet_launch::stop_all(&mut launched, grace);
        if config.verbose {
            for (name, how) in ended {
                eprintln!("worker `{name}`: {how}");
            }
        }
    }
    if let Some(p) = &config.control {
        let _ = std::fs::remove_file(p);
    }
    result
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
}

struct Shared {
    secret: Secret,
    defs: Vec<ModuleDef>,
    module_path: Vec<String>,
    next_id: AtomicU32,
    ev: UnboundedSender<ShellEvent>,
}

async fn main_loop(
    core: &mut Core<'_>,
    config: &AgentConfig,
    mut options: JobOptions,
    start_workers: bool,
    launched: &mut Vec<Launched>,
) -> Result<RunResult, AgentError> {
    let start = Instant::now();
    let (ev_tx, mut ev_rx) = unbounded_channel::<ShellEvent>();
    let mut log = Logger {
        file: match &config.log {
            Some(p) => Some(BufWriter::new(File::create(p).map_err(|e| {
                AgentError::Setup(format!("cannot create the log file {}: {e}", p.display()))
            })?)),
            None => None,
        },
        verbose: config.verbose,
        start,
        progress_shown: false,
    };
    let mut trace = match &config.trace {
        Some(p) => Some(TraceWriter::create(p).map_err(|e| {
            AgentError::Setup(format!("cannot create the trace file {}: {e}", p.display()))
        })?),
        None => None,
    };
    let mut sigint = signal(SignalKind::interrupt()).map_err(setup("cannot handle SIGINT"))?;
    let mut sigterm = signal(SignalKind::terminate()).map_err(setup("cannot handle SIGTERM"))?;

    let _control = match &config.control {
        Some(p) => Some(bind_control(p, ev_tx.clone())?),
        None => None,
    };

    let mut planned_names: HashSet<String> = HashSet::new();
    let listen = start_workers || options.external_workers > 0;
    let _accept = if listen {
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| AgentError::Setup(format!("cannot listen on {}: {e}", config.listen)))?;
        let addr = listener
            .local_addr()
            .map_err(setup("cannot read the listening address"))?;
        if let Some(f) = options.on_listen.take() {
            f(addr);
        }
        let secret = match options.secret.take() {
            Some(s) => s,
            None => Secret::random().map_err(setup("cannot make the run's secret"))?,
        };
        let shared = Arc::new(Shared {
            secret: secret.clone(),
            defs: core.module_defs().to_vec(),
            module_path: config
                .module_path
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            next_id: AtomicU32::new(0),
            ev: ev_tx.clone(),
        });
        let accept = tokio::spawn(accept_loop(listener, shared));
        if start_workers {
            let agent_addr = if addr.ip().is_unspecified() {
                format!("{}:{}", pnet_topology::local_hostname(), addr.port())
            } else {
                addr.to_string()
            };
            for w in &config.plan.workers {
                let mut args = vec![
                    "--agent".to_string(),
                    agent_addr.clone(),
                    "--name".to_string(),
                    w.name.clone(),
                ];
                if !w.capabilities.is_empty() {
                    args.push("--capabilities".into());
                    args.push(w.capabilities.join(","));
                }
                if let Some(s) = w.socket {
                    args.push("--socket".into());
                    args.push(s.to_string());
                }
                args.push("--secret-stdin".into());
                args.push("--exit-on-stdin-eof".into());
                let cmd = WorkerCommand {
                    name: w.name.clone(),
                    host: w.host.clone(),
                    program: config.worker_program.clone(),
                    args,
                    env: Vec::new(),
                    stdin: Some(format!("{}\n", secret.to_hex()).into_bytes()),
                    log: None,
                };
                match pnet_launch::launch(&config.launcher, &cmd) {
                    Ok(l) => {
                        log.line(&format!(
                            "started worker `{}` on `{}` ({}, pid {})",
                            w.name,
                            w.host,
                            config.launcher.name(),
                            l.pid().map_or("?".into(), |p| p.to_string())
                        ));
                        planned_names.insert(w.name.clone());
                        launched.push(l);
                    }
                    Err(e) => {
                        accept.abort();
                        return Err(AgentError::Setup(format!(
                            "cannot start worker `{}` on `{}` through the {} launcher ({}): {e}",
                            w.name,
                            w.host,
                            config.launcher.name(),
                            config.worker_program.display()
                        )));
                    }
                }
            }
        }
        Some(AbortOnDrop(accept))
    } else {
        None
    };

    let mut conns: HashMap<u32, Conn> = HashMap::new();
    let mut clients: HashMap<u64, UnboundedSender<Response>> = HashMap::new();
    let mut joined_names: HashSet<String> = HashSet::new();
    // Planned workers that exited before joining: "name (how it ended)".
    let mut dead_before_join: HashSet<String> = HashSet::new();
    let mut dead_names: HashSet<String> = HashSet::new();
    let mut join_over = planned_names.is_empty() && options.external_workers == 0;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut out: Vec<Command> = Vec::new();
    let mut events: Vec<Event> = Vec::new();
    let mut more = true;
    let mut last_progress = Instant::now() - Duration::from_secs(1);

    let result = 'outer: loop {
        core.set_now(start.elapsed());
        if more || !out.is_empty() {
            if more {
                more = core.pump(&mut out);
            }
            for cmd in out.drain(..) {
                match cmd {
                    Command::Send { worker, msg } => {
                        if let Some(c) = conns.get(&worker) {
                            let _ = c.tx.send(encode(&msg));
                        }
                    }
                    Command::Reply { client, response } => {
                        if let Some(tx) = clients.get(&client) {
                            let _ = tx.send(response);
                        }
                    }
                    Command::Log(m) => log.line(&m),
                    Command::Trace(r) => {
                        if let Some(t) = &mut trace {
                            let _ = t.task(&r);
                        }
                    }
                    Command::Finish(r) => {
                        let mut r = *r;
                        // Workers die of the same Ctrl-C as we do: say "cancelled", not
                        // whatever their loss caused.
                        if let Err(AgentError::NoWorker(m)) = &mut r
                            && !dead_before_join.is_empty()
                        {
                            let mut dead: Vec<&String> = dead_before_join.iter().collect();
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
                        if r.is_err()
                            && (sigint.recv().now_or_never().is_some()
                                || sigterm.recv().now_or_never().is_some())
                        {
                            r = Err(AgentError::Cancelled);
                        }
                        break 'outer r;
                    }
                }
            }
        }
        // Wait for something (or just let the other tasks run when there is more to do).
        let first = tokio::select! {
            biased;
            _ = sigint.recv() => Some(Ok(Event::Cancel)),
            _ = sigterm.recv() => Some(Ok(Event::Cancel)),
            e = ev_rx.recv() => e.map(Err),
            _ = tick.tick() => None,
            _ = tokio::task::yield_now(), if more => None,
        };
        core.set_now(start.elapsed());
        let mut shell_events = Vec::new();
        match first {
            Some(Ok(ev)) => events.push(ev),
            Some(Err(sev)) => shell_events.push(sev),
            None => {}
        }
        while shell_events.len() < EVENT_BATCH {
            match ev_rx.try_recv() {
                Ok(e) => shell_events.push(e),
                Err(_) => break,
            }
        }
        for sev in shell_events {
            match sev {
                ShellEvent::Joined {
                    id,
                    hello,
                    tx,
                    writer,
                } => {
                    if let Some(t) = &mut trace {
                        let _ = t.worker(id, &hello.name);
                    }
                    log.line(&format!(
                        "worker {id} `{}` connected from {} (pid {})",
                        hello.name, hello.host, hello.pid
                    ));
                    joined_names.insert(hello.name.clone());
                    conns.insert(id, Conn { tx, writer });
                    events.push(Event::Joined {
                        worker: id,
                        name: hello.name,
                        capabilities: hello.capabilities,
                    });
                }
                ShellEvent::Refused { peer, reason } => {
                    log.line(&format!("refused a worker from {peer}: {reason}"));
                }
                ShellEvent::Msgs { id, msgs } => {
                    events.extend(msgs.into_iter().map(|msg| Event::Msg { worker: id, msg }));
                }
                ShellEvent::Lost { id, reason } => {
                    if conns.remove(&id).is_some() {
                        events.push(Event::Lost { worker: id, reason });
                    }
                }
                ShellEvent::ClientOpened { client, tx } => {
                    clients.insert(client, tx);
                    events.push(Event::ClientOpened { client });
                }
                ShellEvent::Control { client, request } => {
                    events.push(Event::Control { client, request });
                }
                ShellEvent::ClientClosed { client } => {
                    clients.remove(&client);
                    events.push(Event::ClientClosed { client });
                }
            }
        }
        // Planned workers that will never join.
        if !join_over {
            for l in launched.iter_mut() {
                let name = l.name().to_string();
                if joined_names.contains(&name) || dead_names.contains(&name) {
                    continue;
                }
                if let Ok(Some(status)) = l.try_wait() {
                    let how = pnet_launch::describe(status);
                    log.line(&format!("worker `{name}` exited before joining: {how}"));
                    dead_before_join.insert(format!("`{name}` ({how})"));
                    dead_names.insert(name);
                }
            }
            let settled = planned_names
                .iter()
                .all(|n| joined_names.contains(n) || dead_names.contains(n));
            let timeout = start.elapsed() >= options.join_timeout;
            if (settled && !dead_before_join.is_empty() && options.external_workers == 0) || timeout
            {
                join_over = true;
                events.push(Event::JoinTimeout);
            } else if settled && dead_before_join.is_empty() {
                join_over = true;
            }
        }
        if !events.is_empty() {
            more = true;
        }
        for ev in events.drain(..) {
            core.handle(ev, &mut out);
        }
        if config.progress && last_progress.elapsed() >= Duration::from_millis(100) {
            last_progress = Instant::now();
            let s = core.status();
            eprint!(
                "\r\x1b[K{:.1}s  {} firings  tasks: {} done, {} running, {} queued  {} workers",
                start.elapsed().as_secs_f64(),
                s.firings,
                s.tasks_done,
                s.tasks_running,
                s.tasks_queued,
                s.workers.len()
            );
            log.progress_shown = true;
        }
    };
    if log.progress_shown {
        eprint!("\r\x1b[K");
    }
    match &result {
        Ok(_) => log.line("the job ended"),
        Err(e) => log.line(&format!("the job failed: {e}")),
    }
    // Stop the workers: Shutdown, then let the writers flush.
    let shutdown = encode(&AgentMsg::Shutdown);
    let mut writers = Vec::new();
    for (_, c) in conns.drain() {
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
    // Let control clients receive their last answers.
    drop(clients);
    tokio::time::sleep(Duration::from_millis(20)).await;
    if let Some(t) = trace
        && let Err(e) = t.finish()
    {
        log.line(&format!("cannot write the trace: {e}"));
    }
    if let Some(f) = &mut log.file {
        let _ = f.flush();
    }
    result
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
                tokio::spawn(handle_worker(sock, peer, shared.clone()));
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
async fn handle_worker(sock: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    let (rd, wr) = sock.into_split();
    let mut r = frame::reader(rd);
    let mut w = frame::writer(wr);
    let first = match tokio::time::timeout(HELLO_TIMEOUT, r.next()).await {
        Ok(Some(Ok(f))) => f,
        Ok(Some(Err(e))) => {
            let _ = shared.ev.send(ShellEvent::Refused {
                peer,
                reason: format!("bad first frame: {e}"),
            });
            return;
        }
        Ok(None) => return,
        Err(_) => {
            return refuse(&mut w, &shared, peer, "no Hello within 10 s".into()).await;
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
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let welcome = AgentMsg::Welcome {
        worker: id,
        modules: shared.defs.clone(),
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
                Ok(WorkerMsg::Heartbeat { .. }) => Ok(()),
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

fn bind_control(path: &Path, ev: UnboundedSender<ShellEvent>) -> Result<ControlServer, AgentError> {
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
                    tokio::spawn(control_client(s, client, ev.clone()));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    });
    Ok(ControlServer { task })
}

async fn control_client(s: UnixStream, client: u64, ev: UnboundedSender<ShellEvent>) {
    let (rd, wr) = s.into_split();
    let mut r = frame::reader(rd);
    let mut w = frame::writer(wr);
    let (tx, mut rx) = unbounded_channel();
    if ev.send(ShellEvent::ClientOpened { client, tx }).is_err() {
        return;
    }
    loop {
        let request = match frame::recv::<_, Request>(&mut r).await {
            Ok(req) => req,
            Err(frame::FrameError::Decode(e)) => {
                let _ =
                    frame::send(&mut w, &Response::Error(format!("malformed request: {e}"))).await;
                break;
            }
            Err(_) => break,
        };
        if ev.send(ShellEvent::Control { client, request }).is_err() {
            break;
        }
        match rx.recv().await {
            Some(resp) => {
                if frame::send(&mut w, &resp).await.is_err() {
                    break;
                }
            }
            None => break,
        }
    }
    let _ = ev.send(ShellEvent::ClientClosed { client });
}

#[cfg(test)]
mod real;
#[cfg(test)]
mod tests;
