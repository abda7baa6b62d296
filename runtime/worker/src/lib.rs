//! The worker: connects to an agent, runs the module calls it is sent (native libraries and
//! command modules) one at a time, in order, and answers each.
//!
//! The connection loop runs on a current-thread tokio runtime; tasks run on one executor
//! thread (so heartbeats keep flowing during long tasks). See `MODULES.md` for how modules
//! are found and called.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use pnet_protocol::frame::{self, encode};
use pnet_protocol::{
    AGENT_SILENCE_TIMEOUT, AgentMsg, FrameError, HEARTBEAT_INTERVAL, Hello, PROTOCOL_VERSION,
    Secret, WorkerMsg,
};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

pub mod exec;
pub mod fault;
pub mod helper;

use exec::{CancelOutcome, ExecMemory, Executor, Shared};
use pnet_memory::{Segment, SegmentInfo, Server};

/// How long connecting and the handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// The environment variable holding extra module directories, separated by `:`.
pub const MODULE_PATH_ENV: &str = "PNET_MODULE_PATH";

/// Exit codes.
pub mod exit {
    /// Normal end: shutdown, the agent closed the connection, standard input closed, SIGTERM.
    pub const OK: i32 = 0;
    /// An error: cannot connect, the agent went silent, a broken connection.
    pub const ERROR: i32 = 1;
    /// Bad command line (clap's code).
    pub const USAGE: i32 = 2;
    /// The agent refused this worker (wrong secret, protocol version, ...).
    pub const REFUSED: i32 = 3;
}

/// What a worker is started with.
#[derive(Clone, Debug)]
pub struct Config {
    /// `HOST:PORT` of the agent.
    pub agent: String,
    pub name: String,
    pub capabilities: Vec<String>,
    pub socket: Option<u32>,
    pub secret: Secret,
    /// Module directories from the command line (searched after the agent's).
    pub module_path: Vec<PathBuf>,
    /// Working memory in bytes (0: none): the size of this worker's shared-memory segment,
    /// and what the memory buffers of one call may use in total.
    pub shm: u64,
    /// The host identity reported for the segment and seen by modules (the hostname by
    /// default; a different one makes local workers reach each other's memory over TCP).
    pub host_id: String,
    /// Run native modules in a child process (see [`helper`]).
    pub isolate_modules: bool,
    /// This program (`gspc-worker`), re-executed as a command module's supervisor and as the
    /// isolated module host; without it command modules run without a supervisor and
    /// isolated calls are refused.
    pub helper: Option<PathBuf>,
}

/// Why the worker stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Shutdown,
    AgentClosed,
    StdinClosed,
    Signal(&'static str),
    Refused(String),
    Error(String),
}

impl Outcome {
    pub fn exit_code(&self) -> i32 {
        match self {
            Outcome::Shutdown
            | Outcome::AgentClosed
            | Outcome::StdinClosed
            | Outcome::Signal(_) => exit::OK,
            Outcome::Refused(_) => exit::REFUSED,
            Outcome::Error(_) => exit::ERROR,
        }
    }
}

/// The module directories: the agent's, then the command line's, then `PNET_MODULE_PATH`.
pub fn module_dirs(agent: &[String], cli: &[PathBuf], env: Option<&str>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = agent.iter().map(PathBuf::from).collect();
    dirs.extend(cli.iter().cloned());
    if let Some(env) = env {
        dirs.extend(env.split(':').filter(|s| !s.is_empty()).map(PathBuf::from));
    }
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| seen.insert(d.clone()));
    dirs
}

/// This host's name.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Runs the worker until it should stop. `stdin_eof` fires when standard input closes
/// (with `--exit-on-stdin-eof`).
pub async fn run(config: Config, stdin_eof: Option<tokio::sync::oneshot::Receiver<()>>) -> Outcome {
    // Segments left by killed workers of this user (SIGKILL leaves no chance to unlink);
    // silently, as any worker starting may find those of others.
    pnet_memory::remove_stale_segments();
    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, TcpStream::connect(&config.agent))
        .await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Outcome::Error(format!("cannot connect to {}: {e}", config.agent)),
        Err(_) => return Outcome::Error(format!("connecting to {} timed out", config.agent)),
    };
    if let Err(e) = stream.set_nodelay(true) {
        return Outcome::Error(format!("cannot set TCP_NODELAY: {e}"));
    }
    let local_ip = match stream.local_addr() {
        Ok(a) => a.ip(),
        Err(e) => return Outcome::Error(format!("cannot read the connection's address: {e}")),
    };
    let (rd, wr) = stream.into_split();
    let mut reader = frame::reader(rd);
    let mut writer = frame::writer(wr);

    let hello = WorkerMsg::Hello(Hello {
        protocol: PROTOCOL_VERSION,
        secret: config.secret.clone(),
        name: config.name.clone(),
        host: hostname(),
        pid: std::process::id(),
        capabilities: config.capabilities.clone(),
        socket: config.socket,
    });
    if let Err(e) = frame::send(&mut writer, &hello).await {
        return Outcome::Error(format!("cannot send hello to {}: {e}", config.agent));
    }
    let welcome =
        tokio::time::timeout(HANDSHAKE_TIMEOUT, frame::recv::<_, AgentMsg>(&mut reader)).await;
    let (worker_id, modules, agent_path) = match welcome {
        Err(_) => return Outcome::Error("the agent did not answer the hello".into()),
        Ok(Ok(AgentMsg::Welcome {
            worker,
            modules,
            module_path,
        })) => (worker, modules, module_path),
        Ok(Ok(AgentMsg::Refused { reason })) => return Outcome::Refused(reason),
        Ok(Ok(other)) => {
            return Outcome::Error(format!("unexpected message before the welcome: {other:?}"));
        }
        Ok(Err(FrameError::Decode(e))) => {
            return Outcome::Refused(format!(
                "the agent's answer does not decode ({e}); it speaks another protocol \
                 version than this worker ({PROTOCOL_VERSION})"
            ));
        }
        Ok(Err(FrameError::Closed)) => {
            return Outcome::Refused("the agent closed the connection during the handshake".into());
        }
        Ok(Err(e)) => return Outcome::Error(format!("handshake failed: {e}")),
    };

    let dirs = module_dirs(
        &agent_path,
        &config.module_path,
        std::env::var(MODULE_PATH_ENV).ok().as_deref(),
    );
    // The working memory: a segment, its server, announced right after the welcome.
    let memory = if config.shm > 0 {
        match WorkerMemory::start(&config, worker_id, local_ip) {
            Ok(m) => Some(m),
            Err(e) => return Outcome::Error(e),
        }
    } else {
        None
    };
    if let Some(m) = memory.as_ref().map(|m| m.info.clone())
        && let Err(e) = frame::send(&mut writer, &WorkerMsg::Memory(m)).await
    {
        if let Some(m) = memory {
            m.close();
        }
        return Outcome::Error(format!("cannot send to the agent: {e}"));
    }

    let shared = Arc::new(Shared::default());
    let (tx, mut rx) = mpsc::unbounded_channel::<WorkerMsg>();
    let mut executor = Executor::new(config.name.clone(), modules, dirs);
    executor.set_host(config.host_id.clone());
    executor.set_helper(config.helper.clone(), config.isolate_modules);
    if let Some(m) = &memory {
        executor.set_memory(ExecMemory::new(
            worker_id,
            m.segment.clone(),
            config.host_id.clone(),
            config.secret.clone(),
        ));
    }
    let table = executor.module_table();
    let thread_shared = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("executor".into())
        .spawn(move || executor.run_loop(&thread_shared, |msg| tx.send(msg).is_ok()));
    if let Err(e) = spawned {
        if let Some(m) = memory {
            m.close();
        }
        return Outcome::Error(format!("cannot start the executor thread: {e}"));
    }

    let outcome = connection_loop(
        &shared,
        &table,
        &mut reader,
        &mut writer,
        &mut rx,
        stdin_eof,
    )
    .await;
    shared.stop(Duration::from_secs(2));
    if let Some(m) = memory {
        m.close();
    }
    outcome
}

/// A worker's working memory: its segment and the server that serves it to other workers.
struct WorkerMemory {
    segment: Arc<Segment>,
    server: Server,
    info: SegmentInfo,
}

impl WorkerMemory {
    /// Creates the segment (in /dev/shm, else the temporary directory), starts its server on
    /// `ip` (the address this worker reaches the agent from) and installs the guard page
    /// fault handler.
    fn start(config: &Config, id: u32, ip: std::net::IpAddr) -> Result<WorkerMemory, String> {
        let dir = pnet_memory::segment_dir();
        let mut name = segment_name(std::process::id(), &config.name);
        // A file of that name left by a dead worker with the same pid is gone by now; one
        // still there belongs to a live process (another pid namespace sharing this
        // /dev/shm, or another user): it is left alone and this segment named apart.
        if dir.join(&name).exists() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            name = format!("{name}-{nanos:08x}");
        }
        let segment = Segment::create(&dir, &name, config.shm).map_err(|e| {
            format!(
                "cannot create the working memory ({} bytes) in {}: {e}",
                config.shm,
                dir.display()
            )
        })?;
        let segment = Arc::new(segment);
        let fail = |segment: &Segment, message: String| {
            let _ = std::fs::remove_file(segment.path());
            message
        };
        let listener = std::net::TcpListener::bind((ip, 0)).map_err(|e| {
            fail(
                &segment,
                format!("cannot listen for memory transfers on {ip}: {e}"),
            )
        })?;
        let server = Server::start(segment.clone(), listener, config.secret.clone())
            .map_err(|e| fail(&segment, format!("cannot start the memory server: {e}")))?;
        if let Err(e) = fault::install(segment.path()) {
            server.stop();
            return Err(fail(&segment, e));
        }
        let info = SegmentInfo {
            id,
            host: config.host_id.clone(),
            shm_path: segment.path().display().to_string(),
            server: server.addr().to_string(),
            size: segment.size(),
        };
        Ok(WorkerMemory {
            segment,
            server,
            info,
        })
    }

    /// Stops the server and removes the segment's file (the process may exit without
    /// running destructors, and the executor thread may still hold the segment).
    fn close(self) {
        self.server.stop();
        let _ = std::fs::remove_file(self.segment.path());
    }
}

pub use pnet_memory::segment_name;

async fn connection_loop<R, W>(
    shared: &Shared,
    table: &exec::ModuleTable,
    reader: &mut tokio_util_reader::Reader<R>,
    writer: &mut tokio_util_reader::Writer<W>,
    rx: &mut mpsc::UnboundedReceiver<WorkerMsg>,
    stdin_eof: Option<tokio::sync::oneshot::Receiver<()>>,
) -> Outcome
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let stdin_eof = async move {
        match stdin_eof {
            Some(rx) => {
                let _ = rx.await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::pin!(stdin_eof);
    let mut term = signal(tokio::signal::unix::SignalKind::terminate());
    let mut int = signal(tokio::signal::unix::SignalKind::interrupt());
    let mut heartbeat = tokio::time::interval(HEARTBEAT_INTERVAL);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_heard = Instant::now();
    let mut last_tick = Instant::now();
    // When this worker last sent something (a result is a sign of life as good as a
    // heartbeat: under load, heartbeats are skipped).
    let mut last_sent = Instant::now();
    let mut results = Vec::with_capacity(256);

    loop {
        tokio::select! {
            biased;
            _ = recv_signal(&mut term) => return Outcome::Signal("SIGTERM"),
            _ = recv_signal(&mut int) => return Outcome::Signal("SIGINT"),
            _ = &mut stdin_eof => return Outcome::StdinClosed,
            // Before the busy arms, so that heartbeats and the silence check never starve.
            _ = heartbeat.tick() => {
                let now = Instant::now();
                if now.duration_since(last_tick) > 3 * HEARTBEAT_INTERVAL {
                    // This process was stalled (not the agent): what the agent sent meanwhile
                    // may be unread, so do not count the stall as silence.
                    last_heard = now;
                }
                last_tick = now;
                let silent = now.duration_since(last_heard);
                if silent > AGENT_SILENCE_TIMEOUT {
                    return Outcome::Error(format!(
                        "the agent has been silent for {} ms",
                        silent.as_millis()
                    ));
                }
                if now.duration_since(last_sent) >= HEARTBEAT_INTERVAL / 2 {
                    let hb = WorkerMsg::Heartbeat { running: shared.running() };
                    if let Err(e) = writer.send(encode(&hb)).await {
                        return Outcome::Error(format!("cannot send to the agent: {e}"));
                    }
                    last_sent = Instant::now();
                }
            }
            n = rx.recv_many(&mut results, 1024) => {
                if n == 0 {
                    return Outcome::Error("the executor thread ended".into());
                }
                // Send everything that is ready, then flush once.
                loop {
                    for msg in results.drain(..) {
                        if let Err(e) = writer.feed(encode(&msg)).await {
                            return Outcome::Error(format!("cannot send to the agent: {e}"));
                        }
                    }
                    match rx.try_recv() {
                        Ok(msg) => results.push(msg),
                        Err(_) => break,
                    }
                }
                if let Err(e) = SinkExt::<bytes::Bytes>::flush(writer).await {
                    return Outcome::Error(format!("cannot send to the agent: {e}"));
                }
                last_sent = Instant::now();
            }
            frame = reader.next() => {
                last_heard = Instant::now();
                let bytes = match frame {
                    None => return Outcome::AgentClosed,
                    Some(Err(e)) => return Outcome::Error(format!("connection to the agent failed: {e}")),
                    Some(Ok(bytes)) => bytes,
                };
                let msg: AgentMsg = match postcard::from_bytes(&bytes) {
                    Ok(m) => m,
                    Err(e) => return Outcome::Error(format!("malformed message from the agent: {e}")),
                };
                let mut dirty = false;
                match msg {
                    AgentMsg::Run(tasks) => shared.push(tasks),
                    AgentMsg::Cancel { task } => {
                        if shared.cancel(task) == CancelOutcome::Dropped {
                            if let Err(e) = writer.feed(encode(&WorkerMsg::Cancelled { task })).await {
                                return Outcome::Error(format!("cannot send to the agent: {e}"));
                            }
                            dirty = true;
                        }
                    }
                    AgentMsg::Steal { tasks: asked } => {
                        let tasks = shared.steal(&asked);
                        let kept = asked.into_iter().filter(|t| !tasks.contains(t)).collect();
                        if let Err(e) = writer.feed(encode(&WorkerMsg::Returned { tasks, kept })).await {
                            return Outcome::Error(format!("cannot send to the agent: {e}"));
                        }
                        dirty = true;
                    }
                    AgentMsg::Heartbeat => {}
                    AgentMsg::Modules { modules } => table.add(modules),
                    AgentMsg::ModulesAt { modules, module_path } => table.add_at(modules, module_path),
                    AgentMsg::ForgetModules { ids } => table.forget(&ids),
                    AgentMsg::Shutdown => return Outcome::Shutdown,
                    AgentMsg::Welcome { .. } | AgentMsg::Refused { .. } => {
                        return Outcome::Error("unexpected handshake message after the welcome".into());
                    }
                }
                if dirty && let Err(e) = SinkExt::<bytes::Bytes>::flush(writer).await {
                    return Outcome::Error(format!("cannot send to the agent: {e}"));
                }
            }
        }
    }
}

/// The framed reader and writer types used here.
mod tokio_util_reader {
    pub type Reader<R> = tokio_util::codec::FramedRead<R, tokio_util::codec::LengthDelimitedCodec>;
    pub type Writer<W> = tokio_util::codec::FramedWrite<W, tokio_util::codec::LengthDelimitedCodec>;
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind).ok()
}

async fn recv_signal(s: &mut Option<tokio::signal::unix::Signal>) {
    match s {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_dirs_in_order_without_duplicates() {
        let dirs = module_dirs(
            &["/a".into(), "/b".into()],
            &[PathBuf::from("/c"), PathBuf::from("/a")],
            Some("/d::/b:/e"),
        );
        assert_eq!(
            dirs,
            ["/a", "/b", "/c", "/d", "/e"].map(PathBuf::from).to_vec()
        );
        assert_eq!(module_dirs(&[], &[], None), Vec::<PathBuf>::new());
    }

    #[test]
    fn exit_codes() {
        assert_eq!(Outcome::Shutdown.exit_code(), 0);
        assert_eq!(Outcome::Signal("SIGTERM").exit_code(), 0);
        assert_eq!(Outcome::Refused("x".into()).exit_code(), 3);
        assert_eq!(Outcome::Error("x".into()).exit_code(), 1);
        assert!(!hostname().is_empty());
    }

    #[test]
    fn segment_names_are_file_names() {
        assert_eq!(segment_name(12, "compute-1-host"), "pnet-12-compute-1-host");
        assert_eq!(segment_name(3, "a/b c..d"), "pnet-3-a_b_c..d");
        assert_eq!(
            segment_name(3, &"x".repeat(300)).len(),
            "pnet-3-".len() + 100
        );
    }
}
