//! The runner's property server: a TCP listener, one thread per connection, blocking I/O.
//! Connections are bounded: at most [`MAX_PENDING`] may wait for their hello at once (one
//! more is closed at once), and at most [`MAX_PENDING`] + 4 per task are served.
//!
//! It hands each task wrapper its [`TaskSetup`], records how each task run ended, and applies
//! the property rules of [`PropertyBook`] for `gspc-property set|get|wait`. Every connection
//! must open with a [`PropertyHello`] carrying the session's secret (compared in constant
//! time) and a task number of the session; anything else is refused and closed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pnet_protocol::property::{
    PROPERTY_PROTOCOL_VERSION, PropertyHello, PropertyReply, PropertyRequest, Role, TaskExit,
    TaskSetup, property_hello_protocol,
};
use pnet_protocol::{FrameError, Secret, read_msg, write_msg};

use crate::props::PropertyBook;

/// How long a new connection may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest hello frame read before authentication.
const MAX_HELLO: usize = 4096;
/// The most connections that may wait for their hello at once.
pub const MAX_PENDING: usize = 64;

/// How a task run ended, as its wrapper reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub attempt: u32,
    pub exit: TaskExit,
    pub stderr_tail: String,
}

/// Something that happened, for the runner's messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The wrapper of a task run fetched its setup.
    Setup { task: usize, attempt: u32 },
    /// The task process started.
    Started { task: usize, attempt: u32, pid: u32 },
    /// A task wrote a property that reached `receivers` tasks.
    PropertySet {
        task: usize,
        key: String,
        receivers: usize,
    },
    /// A property request was refused.
    PropertyRefused { task: usize, message: String },
    /// A connection was refused during the handshake.
    Refused { peer: String, reason: String },
}

struct State {
    book: PropertyBook,
    reports: Vec<Option<Report>>,
}

struct Shared {
    secret: Secret,
    setups: Vec<TaskSetup>,
    state: Mutex<State>,
    changed: Condvar,
    shutdown: AtomicBool,
    events: Option<Sender<Event>>,
    /// Connections that have not said hello yet, and all connections being served.
    pending: AtomicUsize,
    live: AtomicUsize,
}

/// Counts a connection in `counter` while it lives.
struct Counted<'a>(&'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn event(&self, e: Event) {
        if let Some(tx) = &self.events {
            let _ = tx.send(e);
        }
    }
}

/// A running property server.
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish()
    }
}

impl Server {
    /// Listens on `listen` and serves until [`Server::shutdown`] (or drop). `setups[i]` is
    /// what the wrapper of task `i` gets.
    pub fn start(
        listen: SocketAddr,
        secret: Secret,
        book: PropertyBook,
        setups: Vec<TaskSetup>,
        events: Option<Sender<Event>>,
    ) -> std::io::Result<Server> {
        let listener = TcpListener::bind(listen)?;
        let addr = listener.local_addr()?;
        let reports = vec![None; setups.len()];
        let shared = Arc::new(Shared {
            secret,
            setups,
            state: Mutex::new(State { book, reports }),
            changed: Condvar::new(),
            shutdown: AtomicBool::new(false),
            events,
            pending: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
        });
        let s = shared.clone();
        let accept = std::thread::Builder::new()
            .name("dds-properties".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if s.shutdown.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(mut stream) = conn else { continue };
                    let max_live = MAX_PENDING + 4 * s.setups.len();
                    if let Some(reason) = if s.pending.load(Ordering::SeqCst) >= MAX_PENDING {
                        Some(format!(
                            "{MAX_PENDING} connections are already waiting for their hello"
                        ))
                    } else if s.live.load(Ordering::SeqCst) >= max_live {
                        Some(format!("{max_live} connections are already served"))
                    } else {
                        None
                    } {
                        let peer = stream
                            .peer_addr()
                            .map(|a| a.to_string())
                            .unwrap_or_else(|_| "?".into());
                        let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
                        refuse(&s, &mut stream, &peer, reason);
                        continue;
                    }
                    s.pending.fetch_add(1, Ordering::SeqCst);
                    s.live.fetch_add(1, Ordering::SeqCst);
                    let s = s.clone();
                    let _ = std::thread::Builder::new()
                        .name("dds-connection".into())
                        .spawn(move || serve(&s, stream));
                }
            })?;
        Ok(Server {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Takes the report of run `attempt` of `task`, if its wrapper sent it.
    pub fn take_report(&self, task: usize, attempt: u32) -> Option<Report> {
        let mut st = self.shared.lock();
        let slot = st.reports.get_mut(task)?;
        if slot.as_ref().is_some_and(|r| r.attempt == attempt) {
            slot.take()
        } else {
            None
        }
    }

    /// Stops accepting, wakes every waiting client (they get `property-session-ended`).
    pub fn shutdown(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        {
            let _st = self.shared.lock();
            self.shared.changed.notify_all();
        }
        if let Some(h) = self.accept.take() {
            // Wake the blocking accept.
            let mut wake = self.addr;
            if wake.ip().is_unspecified() {
                wake.set_ip(match wake {
                    SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            if TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok() {
                let _ = h.join();
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Reads one frame of at most `limit` bytes.
fn read_frame(r: &mut impl Read, limit: usize) -> Result<Vec<u8>, String> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)
        .map_err(|e| format!("no hello: {e}"))?;
    let len = u32::from_be_bytes(len) as usize;
    if len > limit {
        return Err(format!("a hello of {len} bytes is too large"));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)
        .map_err(|e| format!("truncated hello: {e}"))?;
    Ok(body)
}

fn refuse(shared: &Shared, stream: &mut TcpStream, peer: &str, reason: String) {
    shared.event(Event::Refused {
        peer: peer.to_string(),
        reason: reason.clone(),
    });
    let _ = write_msg(stream, &PropertyReply::Refused { reason });
}

/// Checks the hello; returns the task and role.
fn handshake(shared: &Shared, stream: &mut TcpStream, peer: &str) -> Option<(usize, Role)> {
    let _ = stream.set_read_timeout(Some(HELLO_TIMEOUT));
    let frame = match read_frame(stream, MAX_HELLO) {
        Ok(f) => f,
        Err(reason) => {
            refuse(shared, stream, peer, reason);
            return None;
        }
    };
    match property_hello_protocol(&frame) {
        Some(PROPERTY_PROTOCOL_VERSION) => {}
        Some(v) => {
            refuse(
                shared,
                stream,
                peer,
                format!(
                    "property protocol version {v}, but this runner speaks version {PROPERTY_PROTOCOL_VERSION}: use gspc-property of the same release"
                ),
            );
            return None;
        }
        None => {
            refuse(
                shared,
                stream,
                peer,
                "the first message is not a hello".into(),
            );
            return None;
        }
    }
    let hello: PropertyHello = match postcard::from_bytes::<PropertyRequest>(&frame) {
        Ok(PropertyRequest::Hello(h)) => h,
        _ => {
            refuse(shared, stream, peer, "malformed hello".into());
            return None;
        }
    };
    if !hello.secret.matches(&shared.secret) {
        refuse(
            shared,
            stream,
            peer,
            "wrong secret (is GSPC_PROPERTY_SECRET_FILE from this session?)".into(),
        );
        return None;
    }
    let task = hello.task as usize;
    if task >= shared.setups.len() {
        refuse(
            shared,
            stream,
            peer,
            format!(
                "there is no task number {task} in this session (it has {})",
                shared.setups.len()
            ),
        );
        return None;
    }
    if write_msg(stream, &PropertyReply::Welcome).is_err() {
        return None;
    }
    let _ = stream.set_read_timeout(None);
    Some((task, hello.role))
}

fn serve(shared: &Shared, mut stream: TcpStream) {
    let _live = Counted(&shared.live);
    let pending = Counted(&shared.pending);
    let _ = stream.set_nodelay(true);
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into());
    let hello = handshake(shared, &mut stream, &peer);
    drop(pending);
    let Some((task, role)) = hello else {
        return;
    };
    loop {
        let req: PropertyRequest = match read_msg(&mut stream) {
            Ok(r) => r,
            Err(FrameError::Closed) => return,
            Err(e) => {
                let _ = write_msg(
                    &mut stream,
                    &PropertyReply::Error {
                        code: "property-bad-request".into(),
                        message: format!("cannot read the request: {e}"),
                    },
                );
                return;
            }
        };
        let reply = handle(shared, task, &role, req);
        if write_msg(&mut stream, &reply).is_err() {
            return;
        }
        let _ = stream.flush();
    }
}

fn bad_request(what: &str) -> PropertyReply {
    PropertyReply::Error {
        code: "property-bad-request".into(),
        message: what.into(),
    }
}

fn ended() -> PropertyReply {
    PropertyReply::Error {
        code: "property-session-ended".into(),
        message: "the DDS session has ended".into(),
    }
}

fn handle(shared: &Shared, task: usize, role: &Role, req: PropertyRequest) -> PropertyReply {
    match (role, req) {
        (_, PropertyRequest::Hello(_)) => bad_request("a second hello"),
        (Role::Wrapper { attempt }, PropertyRequest::Setup) => {
            shared.event(Event::Setup {
                task,
                attempt: *attempt,
            });
            match shared.setups.get(task) {
                Some(s) => PropertyReply::Setup(Box::new(s.clone())),
                None => bad_request("no such task"),
            }
        }
        (Role::Wrapper { attempt }, PropertyRequest::Started { pid }) => {
            shared.event(Event::Started {
                task,
                attempt: *attempt,
                pid,
            });
            PropertyReply::Ok
        }
        (Role::Wrapper { attempt }, PropertyRequest::Exited { exit, stderr_tail }) => {
            let mut st = shared.lock();
            if let Some(slot) = st.reports.get_mut(task) {
                *slot = Some(Report {
                    attempt: *attempt,
                    exit,
                    stderr_tail,
                });
            }
            PropertyReply::Ok
        }
        (Role::Wrapper { .. }, _) => bad_request("a wrapper sends Setup, Started and Exited only"),
        (Role::Client, PropertyRequest::Set { key, value }) => {
            let result = shared.lock().book.set(task, &key, &value);
            match result {
                Ok(receivers) => {
                    shared.changed.notify_all();
                    shared.event(Event::PropertySet {
                        task,
                        key,
                        receivers: receivers.len(),
                    });
                    PropertyReply::Ok
                }
                Err(e) => {
                    shared.event(Event::PropertyRefused {
                        task,
                        message: e.message.clone(),
                    });
                    PropertyReply::Error {
                        code: e.code.into(),
                        message: e.message,
                    }
                }
            }
        }
        (Role::Client, PropertyRequest::Get { key }) => match shared.lock().book.get(task, &key) {
            Ok(v) => PropertyReply::Value(v.map(str::to_string)),
            Err(e) => {
                shared.event(Event::PropertyRefused {
                    task,
                    message: e.message.clone(),
                });
                PropertyReply::Error {
                    code: e.code.into(),
                    message: e.message,
                }
            }
        },
        (Role::Client, PropertyRequest::Wait { key, timeout_ms }) => {
            let deadline = timeout_ms.map(|ms| Instant::now() + Duration::from_millis(ms));
            let mut st = shared.lock();
            loop {
                match st.book.get(task, &key) {
                    Ok(Some(v)) => return PropertyReply::Value(Some(v.to_string())),
                    Ok(None) => {}
                    Err(e) => {
                        drop(st);
                        shared.event(Event::PropertyRefused {
                            task,
                            message: e.message.clone(),
                        });
                        return PropertyReply::Error {
                            code: e.code.into(),
                            message: e.message,
                        };
                    }
                }
                if shared.shutdown.load(Ordering::SeqCst) {
                    return ended();
                }
                let wait = match deadline {
                    Some(d) => {
                        let now = Instant::now();
                        if now >= d {
                            return PropertyReply::TimedOut;
                        }
                        d - now
                    }
                    None => Duration::from_secs(3600),
                };
                st = match shared.changed.wait_timeout(st, wait) {
                    Ok((g, _)) => g,
                    Err(e) => e.into_inner().0,
                };
            }
        }
        (Role::Client, _) => bad_request("a client sends Set, Get and Wait only"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{ClientError, Properties};
    use crate::testing::Builder;
    use pnet_dds::{Access, PropertyScope};
    use pnet_protocol::property::AssetFile;

    fn setup(path: &str) -> TaskSetup {
        TaskSetup {
            session: "s".into(),
            path: path.into(),
            exe: "true".into(),
            env_script: None,
            env: vec![("DDS_TASK_PATH".into(), path.into())],
            session_dir: None,
            assets: vec![AssetFile {
                name: "a".into(),
                global: false,
                content: "x".into(),
            }],
        }
    }

    /// Task 0 writes `x`, tasks 1 and 2 read it.
    fn server(secret: &Secret, tx: Option<Sender<Event>>) -> Server {
        let mut b = Builder::new();
        let x = b.property("x", PropertyScope::Global);
        let w = b.task("w", "true");
        b.task_property(w, x, Access::Write);
        let r = b.task("r", "true");
        b.task_property(r, x, Access::Read);
        b.main_tasks(&[w, r, r]);
        let (topo, exp) = b.build();
        let setups = exp.tasks.iter().map(|t| setup(&t.path)).collect();
        Server::start(
            "127.0.0.1:0".parse().unwrap(),
            secret.clone(),
            PropertyBook::new(&topo, &exp),
            setups,
            tx,
        )
        .unwrap()
    }

    #[test]
    fn set_get_and_wait_over_loopback() {
        let secret = Secret::random().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut srv = server(&secret, Some(tx));
        let addr = srv.addr().to_string();
        let writer = Properties::new(&addr, secret.clone(), 0);
        let reader = Properties::new(&addr, secret.clone(), 1);
        assert_eq!(reader.get("x").unwrap(), None);
        // A waiter blocks until the write.
        let waiter = {
            let r = Properties::new(&addr, secret.clone(), 2);
            std::thread::spawn(move || r.wait("x", Some(Duration::from_secs(10))))
        };
        std::thread::sleep(Duration::from_millis(50));
        writer.set("x", "hello").unwrap();
        assert_eq!(waiter.join().unwrap().unwrap(), "hello");
        assert_eq!(reader.get("x").unwrap().as_deref(), Some("hello"));
        assert_eq!(reader.wait("x", None).unwrap(), "hello");
        // Rules come back as errors with codes.
        match reader.set("x", "no") {
            Err(ClientError::Property { code, message }) => {
                assert_eq!(code, "property-no-write-access");
                assert!(message.contains("task `main/r_0`"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        match writer.set("x", &"z".repeat(300)) {
            Err(ClientError::Property { code, .. }) => assert_eq!(code, "property-too-long"),
            other => panic!("{other:?}"),
        }
        // A wait that times out.
        let r = Properties::new(&addr, secret.clone(), 2);
        writer.set("x", "again").unwrap();
        assert_eq!(r.get("x").unwrap().as_deref(), Some("again"));
        let lonely = Properties::new(&addr, secret.clone(), 0);
        assert!(matches!(
            lonely.wait("x", Some(Duration::from_millis(50))),
            Err(ClientError::Property { .. })
        ));
        let events: Vec<Event> = rx.try_iter().collect();
        assert!(events.contains(&Event::PropertySet {
            task: 0,
            key: "x".into(),
            receivers: 2
        }));
        srv.shutdown();
    }

    /// Threads of this process.
    fn threads() -> usize {
        std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
    }

    /// 300 strangers that never say hello: at most MAX_PENDING of them get a thread (each
    /// used to get one, for 10 s); a task's wrapper is still served.
    #[test]
    fn idle_strangers_are_bounded_and_tasks_are_still_served() {
        let secret = Secret::random().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut srv = server(&secret, Some(tx));
        let addr = srv.addr();
        let before = threads();
        let idle: Vec<TcpStream> = (0..300)
            .filter_map(|_| TcpStream::connect(addr).ok())
            .collect();
        assert_eq!(idle.len(), 300);
        // Wait until the accept loop has seen them all.
        let t0 = Instant::now();
        while rx.try_iter().count() < 1 && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
        let grown = threads().saturating_sub(before);
        assert!(grown <= MAX_PENDING + 8, "{grown} more threads");
        drop(idle);
        // A wrapper gets in once the strangers are gone.
        let t0 = Instant::now();
        let w = Properties::new(addr.to_string(), secret.clone(), 0);
        loop {
            match w.set("x", "v") {
                Ok(()) => break,
                Err(e) if t0.elapsed() < Duration::from_secs(10) => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => panic!("{e:?}"),
            }
        }
        srv.shutdown();
    }

    #[test]
    fn wait_times_out_and_shutdown_wakes_waiters() {
        let secret = Secret::random().unwrap();
        let mut srv = server(&secret, None);
        let addr = srv.addr().to_string();
        let r = Properties::new(&addr, secret.clone(), 1);
        let t0 = Instant::now();
        assert_eq!(
            r.wait("x", Some(Duration::from_millis(100))).unwrap_err(),
            ClientError::TimedOut {
                key: "x".into(),
                after: Duration::from_millis(100)
            }
        );
        assert!(t0.elapsed() >= Duration::from_millis(100));
        let waiter = std::thread::spawn(move || r.wait("x", None));
        std::thread::sleep(Duration::from_millis(50));
        srv.shutdown();
        match waiter.join().unwrap() {
            Err(ClientError::Property { code, .. }) => assert_eq!(code, "property-session-ended"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn handshake_refuses_wrong_secret_unknown_task_and_garbage() {
        let secret = Secret::random().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let srv = server(&secret, Some(tx));
        let addr = srv.addr().to_string();
        let other = Properties::new(&addr, Secret::random().unwrap(), 0);
        match other.get("x") {
            Err(ClientError::Refused(m)) => assert!(m.starts_with("wrong secret"), "{m}"),
            r => panic!("{r:?}"),
        }
        let unknown = Properties::new(&addr, secret.clone(), 9);
        match unknown.get("x") {
            Err(ClientError::Refused(m)) => {
                assert_eq!(m, "there is no task number 9 in this session (it has 3)")
            }
            r => panic!("{r:?}"),
        }
        // Another protocol version.
        let mut s = TcpStream::connect(srv.addr()).unwrap();
        let hello = PropertyRequest::Hello(PropertyHello {
            protocol: 99,
            secret: secret.clone(),
            task: 0,
            role: Role::Client,
        });
        write_msg(&mut s, &hello).unwrap();
        match read_msg::<_, PropertyReply>(&mut s).unwrap() {
            PropertyReply::Refused { reason } => {
                assert!(
                    reason.starts_with("property protocol version 99"),
                    "{reason}"
                )
            }
            r => panic!("{r:?}"),
        }
        // Garbage and a huge length.
        let mut s = TcpStream::connect(srv.addr()).unwrap();
        s.write_all(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3]).unwrap();
        assert!(matches!(
            read_msg::<_, PropertyReply>(&mut s).unwrap(),
            PropertyReply::Refused { .. }
        ));
        let mut s = TcpStream::connect(srv.addr()).unwrap();
        s.write_all(&[0, 0, 0, 3, 9, 9, 9]).unwrap();
        assert!(matches!(
            read_msg::<_, PropertyReply>(&mut s).unwrap(),
            PropertyReply::Refused { .. }
        ));
        let refused = rx
            .try_iter()
            .filter(|e| matches!(e, Event::Refused { .. }))
            .count();
        assert_eq!(refused, 5);
    }

    #[test]
    fn wrapper_role_fetches_setup_and_reports() {
        let secret = Secret::random().unwrap();
        let srv = server(&secret, None);
        let mut s = TcpStream::connect(srv.addr()).unwrap();
        crate::client::hello(&mut s, &secret, 1, Role::Wrapper { attempt: 2 }).unwrap();
        write_msg(&mut s, &PropertyRequest::Setup).unwrap();
        match read_msg::<_, PropertyReply>(&mut s).unwrap() {
            PropertyReply::Setup(setup) => assert_eq!(setup.path, "main/r_0"),
            r => panic!("{r:?}"),
        }
        write_msg(
            &mut s,
            &PropertyRequest::Exited {
                exit: TaskExit::Code(4),
                stderr_tail: "oops".into(),
            },
        )
        .unwrap();
        assert_eq!(
            read_msg::<_, PropertyReply>(&mut s).unwrap(),
            PropertyReply::Ok
        );
        // A wrapper may not set properties.
        write_msg(
            &mut s,
            &PropertyRequest::Set {
                key: "x".into(),
                value: "v".into(),
            },
        )
        .unwrap();
        assert!(matches!(
            read_msg::<_, PropertyReply>(&mut s).unwrap(),
            PropertyReply::Error { .. }
        ));
        assert_eq!(srv.take_report(1, 1), None);
        assert_eq!(
            srv.take_report(1, 2),
            Some(Report {
                attempt: 2,
                exit: TaskExit::Code(4),
                stderr_tail: "oops".into()
            })
        );
        assert_eq!(srv.take_report(1, 2), None);
    }
}
