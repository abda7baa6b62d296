//! Worker connections: the listener (handshake: protocol version, then secret; `Refused`
//! with a reason otherwise; at most [`PREAUTH_CONNECTIONS`] connections waiting for their
//! Hello), then one reader and one writer task per worker (the writer feeds each message of
//! a batch and flushes once, and sends heartbeats; the reader forwards batches of messages
//! and declares the worker lost when it is silent for [`HEARTBEAT_TIMEOUT`]). All of them
//! run on their own thread ([`IoThread`]), apart from the event loop.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{FutureExt, SinkExt, StreamExt};
use pnet_protocol::frame::{self, encode};
use pnet_protocol::{
    AgentMsg, HEARTBEAT_INTERVAL, HEARTBEAT_TIMEOUT, LEAF_PROTOCOL_VERSION, ModuleDef,
    PREAUTH_CONNECTIONS, PREAUTH_TIMEOUT, PROTOCOL_VERSION, Secret, WorkerMsg, hello_protocol,
    leaf_hello_protocol,
};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

use super::ShellEvent;

pub(super) struct Conn {
    pub(super) tx: UnboundedSender<Bytes>,
    pub(super) writer: JoinHandle<()>,
    pub(super) name: String,
}

pub(super) struct Shared {
    pub(super) secret: Secret,
    /// The module definitions of the live jobs (for Welcomes) and the next definition id.
    pub(super) defs: Mutex<(Vec<ModuleDef>, u32)>,
    pub(super) module_path: Vec<String>,
    pub(super) next_id: AtomicU32,
    /// A leaf agent's number at its root: its workers are told the numbers of
    /// [`pnet_protocol::leaf_worker_id`] in their Welcome (unique under the root, for their
    /// segments), not their number here. A leaf that joins its root again may get another.
    pub(super) leaf_id: Option<AtomicU32>,
    pub(super) ev: UnboundedSender<ShellEvent>,
    /// The connections that have not sent their Hello yet.
    pub(super) pending: Mutex<Pending>,
    /// Heartbeats not yet forwarded: worker -> the task it said it runs (see
    /// [`forward_heartbeats`]).
    pub(super) beats: Mutex<HashMap<u32, Option<u64>>>,
    /// The leaf agents connected now: name -> (host, pid, connection key). A second leaf of
    /// a joined one's name is refused (the status, `remove-workers` and the task records name
    /// leaves).
    pub(super) leaves: Mutex<HashMap<String, (String, u32, u64)>>,
}

/// A connected leaf agent's name (and its connection's key), given up when its connection's
/// task ends, unless another leaf has it by then (see [`Shared::forget_leaf`]).
struct LeafName(Arc<Shared>, String, u64);

impl Drop for LeafName {
    fn drop(&mut self) {
        let mut leaves = self.0.leaves.lock().unwrap_or_else(|e| e.into_inner());
        if leaves.get(&self.1).is_some_and(|l| l.2 == self.2) {
            leaves.remove(&self.1);
        }
    }
}

/// The worker connections waiting for their Hello, oldest first: at most
/// [`PREAUTH_CONNECTIONS`]; one more waits until the oldest has waited [`PREAUTH_GRACE`]
/// and closes it (a real worker says Hello at once, so a flood of silent connections cannot
/// keep it out).
#[derive(Default)]
pub(super) struct Pending {
    pub(super) next: u64,
    /// (key, peer, handshake task, accepted at)
    pub(super) open: VecDeque<(u64, SocketAddr, tokio::task::AbortHandle, Instant)>,
}

impl Shared {
    /// The leaf agent `name` was removed (told to shut down): another may take its name at
    /// once, before its connection ends.
    pub(super) fn forget_leaf(&self, name: &str) {
        let mut leaves = self.leaves.lock().unwrap_or_else(|e| e.into_inner());
        leaves.remove(name);
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The connection `key` is no longer waiting; false if it was closed as the oldest.
    fn unpend(&self, key: u64) -> bool {
        let mut p = self.pending();
        match p.open.iter().position(|(k, ..)| *k == key) {
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

pub(super) struct AbortOnDrop(pub(super) JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The listening socket's backlog (the kernel caps it at `net.core.somaxconn`).
const LISTEN_BACKLOG: u32 = 4096;

/// The thread of the worker connections: its own runtime runs the listener, the handshakes
/// and every worker's reader and writer, so that heartbeats (both ways) and the silence
/// check never wait behind the hub's work (a long pump, a batch of events, the engine) on
/// the event loop's thread. Stopped (and its connections closed) when dropped.
pub(super) struct IoThread {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl IoThread {
    pub(super) fn start() -> std::io::Result<IoThread> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = rt.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("agent-workers".into())
            .spawn(move || {
                rt.block_on(async {
                    let _ = stopped.await;
                });
            })?;
        Ok(IoThread {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Listens on `addr` (with a backlog of [`LISTEN_BACKLOG`], for thousands of workers
    /// connecting at once).
    pub(super) fn listen(&self, addr: SocketAddr) -> std::io::Result<TcpListener> {
        let _enter = self.handle.enter();
        let socket = match addr {
            SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(LISTEN_BACKLOG)
    }

    /// Serves the workers that connect to `listener` (made by [`IoThread::listen`]).
    pub(super) fn serve(&self, listener: TcpListener, shared: Arc<Shared>) -> AbortOnDrop {
        let beats = self.handle.spawn(forward_heartbeats(shared.clone()));
        AbortOnDrop(self.handle.spawn(async move {
            let _beats = AbortOnDrop(beats);
            accept_loop(listener, shared).await;
        }))
    }
}

impl Drop for IoThread {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How long a connection keeps its place among the [`PREAUTH_CONNECTIONS`] waiting for
/// their Hello before a newer one may take it.
const PREAUTH_GRACE: Duration = Duration::from_millis(250);

/// How often the heartbeats of the workers go to the event loop, all at once.
const HEARTBEAT_FORWARD: Duration = Duration::from_millis(100);

/// Forwards the workers' heartbeats to the event loop every [`HEARTBEAT_FORWARD`], all at
/// once, instead of one event (and one wake-up of the event loop) for each: thousands of
/// workers send thousands of heartbeats a second. A worker's silence is judged here, on
/// this thread, as each frame arrives; the event loop only learns what they run.
async fn forward_heartbeats(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(HEARTBEAT_FORWARD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let beats = std::mem::take(&mut *shared.beats.lock().unwrap_or_else(|e| e.into_inner()));
        for (id, running) in beats {
            let msgs = vec![WorkerMsg::Heartbeat { running }];
            if shared.ev.send(ShellEvent::Msgs { id, msgs }).is_err() {
                return;
            }
        }
    }
}

pub(super) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        make_room(&shared).await;
        match listener.accept().await {
            Ok((sock, peer)) => {
                let _ = sock.set_nodelay(true);
                let mut p = shared.pending();
                let key = p.next;
                p.next += 1;
                let task = tokio::spawn(handle_worker(sock, peer, shared.clone(), key));
                p.open
                    .push_back((key, peer, task.abort_handle(), Instant::now()));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// Waits until fewer than [`PREAUTH_CONNECTIONS`] connections wait for their Hello. When
/// they are all there, the oldest is closed once it has waited [`PREAUTH_GRACE`] (so a flood
/// of silent connections cannot keep a worker out); meanwhile new connections wait in the
/// listen backlog. Thousands of workers connecting at once all get in: each says Hello at
/// once and leaves the list within the grace.
async fn make_room(shared: &Shared) {
    loop {
        let wait = {
            let p = shared.pending();
            match p.open.front() {
                Some((.., since)) if p.open.len() >= PREAUTH_CONNECTIONS => {
                    PREAUTH_GRACE.saturating_sub(since.elapsed())
                }
                _ => return,
            }
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait.min(Duration::from_millis(2))).await;
            continue;
        }
        // Let the handshakes whose Hello has arrived run first (this thread may have been
        // busy or starved): only a connection still silent after that is closed.
        tokio::task::yield_now().await;
        let closed = {
            let mut p = shared.pending();
            match p.open.front() {
                Some((.., since))
                    if p.open.len() >= PREAUTH_CONNECTIONS && since.elapsed() >= PREAUTH_GRACE =>
                {
                    p.open.pop_front()
                }
                _ => None,
            }
        };
        if let Some((_, peer, task, _)) = closed {
            task.abort();
            let _ = shared.ev.send(ShellEvent::Refused {
                peer,
                reason: format!(
                    "closed: more than {PREAUTH_CONNECTIONS} connections were waiting for \
                     their Hello"
                ),
            });
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

/// Why a leaf agent is refused when another of its name is connected (a leaf that joins
/// its root again tries again: the root may not have seen its old connection end yet).
pub(super) const LEAF_NAME_TAKEN: &str = "has joined already";

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
    match hello_protocol(&first).or_else(|| leaf_hello_protocol(&first)) {
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
    let (hello, capacity) = match postcard::from_bytes::<WorkerMsg>(&first) {
        Ok(WorkerMsg::Hello(h)) => (h, None),
        Ok(WorkerMsg::LeafHello(l)) if l.leaf_protocol == LEAF_PROTOCOL_VERSION => {
            (l.hello, Some(l.capacity))
        }
        Ok(WorkerMsg::LeafHello(l)) => {
            let reason = format!(
                "leaf protocol version {} is not supported: this agent speaks version \
                 {LEAF_PROTOCOL_VERSION} (use the gspc-leaf of the same release)",
                l.leaf_protocol
            );
            return refuse(&mut w, &shared, peer, reason).await;
        }
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
    let _leaf_name = match capacity {
        Some(_) => {
            let joined = {
                let mut leaves = shared.leaves.lock().unwrap_or_else(|e| e.into_inner());
                match leaves.get(&hello.name) {
                    Some(j) => Some(j.clone()),
                    None => {
                        let leaf = (hello.host.clone(), hello.pid, key);
                        leaves.insert(hello.name.clone(), leaf);
                        None
                    }
                }
            };
            if let Some((host, pid, _)) = joined {
                let reason = format!(
                    "a leaf agent named `{}` {LEAF_NAME_TAKEN} (pid {pid} on {host}); give \
                     this one another --name",
                    hello.name
                );
                return refuse(&mut w, &shared, peer, reason).await;
            }
            Some(LeafName(shared.clone(), hello.name.clone(), key))
        }
        None => None,
    };
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let (modules, defs_upto) = shared
        .defs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let welcome = AgentMsg::Welcome {
        worker: shared
            .leaf_id
            .as_ref()
            .and_then(|leaf| pnet_protocol::leaf_worker_id(leaf.load(Ordering::Relaxed), id))
            .unwrap_or(id),
        modules,
        module_path: shared.module_path.clone(),
    };
    // The event loop hears of the worker before the worker can read its Welcome (the
    // writer sends it first, then what the event loop gives it): a stop that follows at
    // once stops it too.
    let (tx, rx) = unbounded_channel();
    let writer = tokio::spawn(async move {
        if frame::send(&mut w, &welcome).await.is_ok() {
            writer_loop(w, rx).await;
        }
    });
    if shared
        .ev
        .send(ShellEvent::Joined {
            id,
            hello,
            capacity,
            defs_upto,
            tx,
            writer,
        })
        .is_err()
    {
        return;
    }
    let reason = reader_loop(&mut r, id, &shared).await;
    let _ = shared.ev.send(ShellEvent::Lost { id, reason });
}

/// The end of the reason given for a worker that was silent for [`HEARTBEAT_TIMEOUT`].
pub(super) const NO_HEARTBEAT: &str = "(no heartbeat)";

async fn reader_loop(
    r: &mut FramedRead<OwnedReadHalf, LengthDelimitedCodec>,
    id: u32,
    shared: &Shared,
) -> String {
    let ev = &shared.ev;
    let decode = |f: &[u8]| postcard::from_bytes::<WorkerMsg>(f);
    loop {
        let frame = match tokio::time::timeout(HEARTBEAT_TIMEOUT, r.next()).await {
            Err(_) => {
                return format!(
                    "silent for {:.1} s {NO_HEARTBEAT}",
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
        // Heartbeats alone wait for the next forwarding (the latest one counts).
        if let [WorkerMsg::Heartbeat { running }] = msgs[..] {
            shared
                .beats
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id, running);
            msgs.clear();
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
                    // That was a sign of life: the next heartbeat is due an interval later
                    // (while tasks flow, none is sent).
                    hb.reset();
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
