//! The memory server (serves a segment to peers over TCP) and its client side.
//!
//! # Framing
//! All integers little-endian. One connection serves one segment.
//!
//! ```text
//! hello   (client -> server): "PNETMEM\0" (8 bytes) | version u32 | secret (32 bytes)
//! request (client -> server): op u8 (1 = read, 2 = write) | offset u64 | len u64
//!                             | write only: len raw bytes
//! answer  (server -> client): status u8 (0 = ok, 1 = error) | len u64 | len bytes
//! ```
//! The answer to the hello is `ok` with the segment's size (8 bytes) or `error` with a
//! message, after which the server closes the connection (wrong magic, version or secret).
//! The answer to a read is `ok` with exactly the requested bytes, to a write `ok` with no
//! bytes; an error carries a UTF-8 message (for example a range outside the segment), after
//! which the connection stays usable. A request moves at most [`CHUNK`] bytes (clients split
//! larger transfers); a longer request or an unknown op is a protocol error that closes the
//! connection.

use std::collections::HashMap;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pnet_protocol::{PROTOCOL_VERSION, Secret};

use crate::{MemError, Segment};

/// The most bytes one request moves.
pub const CHUNK: u64 = 8 << 20;
const MAGIC: &[u8; 8] = b"PNETMEM\0";
const OP_READ: u8 = 1;
const OP_WRITE: u8 = 2;
const ST_OK: u8 = 0;
const ST_ERR: u8 = 1;
/// The longest error message accepted from a server.
const MAX_MESSAGE: u64 = 64 << 10;
/// The clients' buffers, and the pieces in which the server streams a request's bytes.
const IO_BUFFER: usize = 1 << 20;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) fn secret_bytes(secret: &Secret) -> [u8; 32] {
    let hex = secret.to_hex();
    let mut b = [0u8; 32];
    for (i, byte) in b.iter_mut().enumerate() {
        *byte = hex
            .get(2 * i..2 * i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(0);
    }
    b
}

/// How many connections, threads and how long a hello may take (see [`Server`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Threads serving requests of authenticated connections.
    pub threads: usize,
    /// Connections waiting for their hello at the same time; one more closes the oldest.
    pub preauth: usize,
    /// How long a connection has to send its hello.
    pub preauth_timeout: Duration,
    /// Authenticated connections at the same time; a hello beyond that is refused.
    pub connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            threads: std::thread::available_parallelism().map_or(4, |n| n.get().clamp(2, 8)),
            preauth: pnet_protocol::PREAUTH_CONNECTIONS,
            preauth_timeout: pnet_protocol::PREAUTH_TIMEOUT,
            connections: MAX_CONNECTIONS,
        }
    }
}

/// The default limit of authenticated connections (each peer worker keeps one per segment it
/// reaches over TCP).
pub const MAX_CONNECTIONS: usize = 4096;
/// How long an authenticated peer may stall in the middle of a request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const HELLO_LEN: usize = 8 + 4 + 32;

struct Shared {
    stop: AtomicBool,
    next: AtomicU64,
    /// Every open connection, to close them all on stop.
    conns: Mutex<HashMap<u64, Arc<TcpStream>>>,
    /// Connections for the poller: new ones (from the accepting thread) and served ones
    /// (from the pool).
    inbox: Mutex<Vec<Client>>,
    /// Written to wake the poller.
    wake: UnixStream,
    /// Open connections that have passed the hello.
    authenticated: AtomicUsize,
}

impl Shared {
    fn hand_to_poller(&self, c: Client) {
        if let Ok(mut inbox) = self.inbox.lock() {
            inbox.push(c);
        }
        let _ = (&self.wake).write(&[1]);
    }

    /// Closes a connection (each one once).
    fn close(&self, c: &Client) {
        if c.hello.is_none() {
            self.authenticated.fetch_sub(1, Ordering::SeqCst);
        }
        let _ = c.stream.shutdown(Shutdown::Both);
        if let Ok(mut conns) = self.conns.lock() {
            conns.remove(&c.id);
        }
    }
}

struct Client {
    id: u64,
    stream: Arc<TcpStream>,
    /// `Some` until the hello has been accepted.
    hello: Option<HelloState>,
}

struct HelloState {
    got: [u8; HELLO_LEN],
    len: usize,
    deadline: Instant,
}

/// The memory server: serves reads and writes of the segment to peers that know the secret
/// (a hello with the 32-byte secret first; wrong secret = refused and closed), TCP_NODELAY,
/// requests of at most [`CHUNK`] bytes; stops on [`Server::stop`] (or drop), closing its
/// connections.
///
/// Threads: one accepts, one polls the open connections (and reads the hellos, without
/// blocking, so that a connection that never authenticates holds no thread), and a fixed pool
/// serves the requests of authenticated connections (one request at a time per connection,
/// which then goes back to the poller). At most [`Limits::preauth`] connections wait for their
/// hello (a new one closes the oldest), each for at most [`Limits::preauth_timeout`].
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    others: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish()
    }
}

impl Server {
    pub fn start(
        segment: Arc<Segment>,
        listener: TcpListener,
        secret: Secret,
    ) -> Result<Server, MemError> {
        Server::start_with(segment, listener, secret, Limits::default())
    }

    /// [`Server::start`] with other limits.
    pub fn start_with(
        segment: Arc<Segment>,
        listener: TcpListener,
        secret: Secret,
        limits: Limits,
    ) -> Result<Server, MemError> {
        let addr = listener.local_addr().map_err(|e| {
            MemError::new(format!("The memory server's listener has no address: {e}."))
        })?;
        listener.set_nonblocking(false).map_err(|e| {
            MemError::new(format!(
                "Cannot make the memory server's listener blocking: {e}."
            ))
        })?;
        let (wake_r, wake_w) = UnixStream::pair()
            .and_then(|(r, w)| {
                r.set_nonblocking(true)?;
                w.set_nonblocking(true)?;
                Ok((r, w))
            })
            .map_err(|e| MemError::new(format!("Cannot make the memory server's pipe: {e}.")))?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            next: AtomicU64::new(0),
            conns: Mutex::new(HashMap::new()),
            inbox: Mutex::new(Vec::new()),
            wake: wake_w,
            authenticated: AtomicUsize::new(0),
        });
        let secret = secret_bytes(&secret);
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .map_err(|e| MemError::new(format!("Cannot start the memory server thread: {e}.")))
        };
        let mut server = Server {
            addr,
            shared: shared.clone(),
            accept: None,
            others: Vec::new(),
        };
        // Dropping `server` on an error below stops what was started.
        let (tx, rx) = std::sync::mpsc::channel::<Client>();
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..limits.threads.max(1) {
            let (sh, seg, rx) = (shared.clone(), segment.clone(), rx.clone());
            let h = spawn(
                "pnet-memory-pool",
                Box::new(move || pool_loop(&rx, &seg, &sh)),
            )?;
            server.others.push(h);
        }
        let (sh, size) = (shared.clone(), segment.size());
        let lim = limits.clone();
        let h = spawn(
            "pnet-memory-poll",
            Box::new(move || poll_loop(wake_r, tx, &sh, &lim, &secret, size)),
        )?;
        server.others.push(h);
        let sh = shared.clone();
        let h = spawn(
            "pnet-memory-server",
            Box::new(move || accept_loop(listener, &sh, &limits)),
        )?;
        server.accept = Some(h);
        Ok(server)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, closes the open connections and waits for the server's threads.
    pub fn stop(self) {
        drop(self);
    }

    fn shut_down(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = (&self.shared.wake).write(&[1]);
        if let Ok(conns) = self.shared.conns.lock() {
            for s in conns.values() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        if let Some(accept) = self.accept.take() {
            // Wake the blocking accept with a connection of our own.
            let mut wake = self.addr;
            if wake.ip().is_unspecified() {
                wake.set_ip(match wake {
                    SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            let woke = TcpStream::connect_timeout(&wake, Duration::from_secs(2)).is_ok();
            if woke || accept.is_finished() {
                let _ = accept.join();
            }
        }
        // The poller sees `stop` and exits, which closes the pool's channel.
        for h in self.others.drain(..) {
            let _ = h.join();
        }
        if let Ok(conns) = self.shared.conns.lock() {
            for s in conns.values() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn accept_loop(listener: TcpListener, sh: &Shared, limits: &Limits) {
    loop {
        let accepted = listener.accept();
        if sh.stop.load(Ordering::SeqCst) {
            return;
        }
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => match e.raw_os_error() {
                Some(libc::EBADF | libc::EINVAL | libc::ENOTSOCK) => return,
                _ => {
                    // Transient (aborted connection, out of descriptors): back off a little.
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            },
        };
        if stream.set_nonblocking(true).is_err() || stream.set_nodelay(true).is_err() {
            continue;
        }
        let id = sh.next.fetch_add(1, Ordering::Relaxed);
        let stream = Arc::new(stream);
        if let Ok(mut conns) = sh.conns.lock() {
            conns.insert(id, stream.clone());
        }
        sh.hand_to_poller(Client {
            id,
            stream,
            hello: Some(HelloState {
                got: [0; HELLO_LEN],
                len: 0,
                deadline: Instant::now() + limits.preauth_timeout,
            }),
        });
    }
}

/// Watches the idle connections: reads hellos (non-blocking), closes the connections that
/// do not authenticate in time or exceed the limits, and hands authenticated connections with
/// a request waiting to the pool.
fn poll_loop(
    wake: UnixStream,
    pool: std::sync::mpsc::Sender<Client>,
    sh: &Shared,
    limits: &Limits,
    secret: &[u8; 32],
    size: u64,
) {
    let mut clients: Vec<Client> = Vec::new();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    loop {
        if sh.stop.load(Ordering::SeqCst) {
            for c in &clients {
                sh.close(c);
            }
            return;
        }
        if let Ok(mut inbox) = sh.inbox.lock() {
            clients.append(&mut inbox);
        }
        // Connections that have waited too long for their hello, then the oldest beyond the
        // limit of connections waiting for one.
        let now = Instant::now();
        clients.retain(|c| match &c.hello {
            Some(h) if h.deadline <= now => {
                sh.close(c);
                false
            }
            _ => true,
        });
        let waiting = clients.iter().filter(|c| c.hello.is_some()).count();
        if waiting > limits.preauth {
            let mut ids: Vec<u64> = clients
                .iter()
                .filter(|c| c.hello.is_some())
                .map(|c| c.id)
                .collect();
            ids.sort_unstable();
            ids.truncate(waiting - limits.preauth);
            clients.retain(|c| {
                if ids.binary_search(&c.id).is_ok() {
                    sh.close(c);
                    false
                } else {
                    true
                }
            });
        }
        let timeout = clients
            .iter()
            .filter_map(|c| {
                c.hello
                    .as_ref()
                    .map(|h| h.deadline.saturating_duration_since(now))
            })
            .min()
            .unwrap_or(Duration::from_secs(1))
            .min(Duration::from_secs(1));
        fds.clear();
        fds.push(libc::pollfd {
            fd: wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        fds.extend(clients.iter().map(|c| libc::pollfd {
            fd: c.stream.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }));
        let ms = timeout.as_millis().clamp(1, 1000) as libc::c_int;
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structures.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                std::thread::sleep(Duration::from_millis(10));
            }
            continue;
        }
        if fds[0].revents != 0 {
            let mut b = [0u8; 64];
            while matches!((&wake).read(&mut b), Ok(n) if n > 0) {}
        }
        let mut kept = Vec::with_capacity(clients.len());
        for (c, fd) in clients.drain(..).zip(&fds[1..]) {
            if fd.revents == 0 {
                kept.push(c);
                continue;
            }
            match c.hello {
                None => {
                    // A request (or the end) is waiting: a pool thread serves it.
                    if let Err(e) = pool.send(c) {
                        sh.close(&e.0);
                    }
                }
                Some(_) => {
                    if let Some(c) = read_hello(c, sh, secret, size, limits) {
                        kept.push(c);
                    }
                }
            }
        }
        clients = kept;
    }
}

/// Reads what has arrived of a connection's hello; answers and switches the connection to
/// serving when it is complete and right. `None`: the connection is closed.
fn read_hello(
    mut c: Client,
    sh: &Shared,
    secret: &[u8; 32],
    size: u64,
    limits: &Limits,
) -> Option<Client> {
    let h = c.hello.as_mut()?;
    match (&*c.stream).read(&mut h.got[h.len..]) {
        Ok(0) => {
            sh.close(&c);
            return None;
        }
        Ok(n) => h.len += n,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) =>
        {
            return Some(c);
        }
        Err(_) => {
            sh.close(&c);
            return None;
        }
    }
    if h.len < HELLO_LEN {
        return Some(c);
    }
    let hello = h.got;
    let version = u32::from_le_bytes([hello[8], hello[9], hello[10], hello[11]]);
    let refusal = if &hello[..8] != MAGIC {
        Some("This is not a memory client (wrong magic).".to_string())
    } else if version != PROTOCOL_VERSION {
        Some(format!(
            "The memory server speaks protocol version {PROTOCOL_VERSION}, the client {version}."
        ))
    } else if !constant_eq(&hello[12..], secret) {
        Some("The memory server refuses the connection: wrong secret.".to_string())
    } else if sh.authenticated.load(Ordering::SeqCst) >= limits.connections {
        Some(format!(
            "The memory server refuses the connection: it serves {} connections already.",
            limits.connections
        ))
    } else {
        None
    };
    // A fresh connection's send buffer has room for the short answer.
    let mut ans = Vec::with_capacity(128);
    match &refusal {
        Some(m) => put_answer(&mut ans, ST_ERR, m.as_bytes()),
        None => put_answer(&mut ans, ST_OK, &size.to_le_bytes()),
    }
    let sent = (&*c.stream).write_all(&ans).is_ok();
    if refusal.is_some() || !sent {
        sh.close(&c);
        return None;
    }
    let s = &c.stream;
    let ready = s.set_nonblocking(false).is_ok()
        && s.set_read_timeout(Some(REQUEST_TIMEOUT)).is_ok()
        && s.set_write_timeout(Some(REQUEST_TIMEOUT)).is_ok();
    if !ready {
        sh.close(&c);
        return None;
    }
    c.hello = None;
    sh.authenticated.fetch_add(1, Ordering::SeqCst);
    Some(c)
}

/// A pool thread: serves one request of each connection handed to it, then gives the
/// connection back to the poller (or closes it).
fn pool_loop(rx: &Mutex<std::sync::mpsc::Receiver<Client>>, seg: &Segment, sh: &Shared) {
    // The pieces of a request's bytes (and, for a read, the answer's head).
    let mut buf = vec![0u8; IO_BUFFER + 9];
    let mut out = Vec::with_capacity(256);
    loop {
        let next = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(c) = next else {
            return;
        };
        if sh.stop.load(Ordering::SeqCst) {
            sh.close(&c);
            continue;
        }
        match serve_one(&c.stream, seg, &mut buf, &mut out) {
            Ok(true) => sh.hand_to_poller(c),
            Ok(false) | Err(_) => sh.close(&c),
        }
    }
}

fn put_answer(out: &mut Vec<u8>, status: u8, payload: &[u8]) {
    out.push(status);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Serves one request of an authenticated connection. `Ok(false)`: the connection ends
/// (closed by the peer, or a protocol error).
fn serve_one(
    stream: &TcpStream,
    seg: &Segment,
    buf: &mut [u8],
    out: &mut Vec<u8>,
) -> io::Result<bool> {
    let (mut r, mut w) = (stream, stream);
    let mut head = [0u8; 17];
    let mut got = 0;
    while got < head.len() {
        match r.read(&mut head[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let op = head[0];
    let offset = u64::from_le_bytes(head[1..9].try_into().unwrap_or_default());
    let len = u64::from_le_bytes(head[9..17].try_into().unwrap_or_default());
    out.clear();
    if (op != OP_READ && op != OP_WRITE) || len > CHUNK {
        let m = format!("Protocol error: op {op} with {len} bytes (at most {CHUNK} per request).");
        put_answer(out, ST_ERR, m.as_bytes());
        w.write_all(out)?;
        return Ok(false);
    }
    let in_bounds = offset.checked_add(len).is_some_and(|e| e <= seg.size());
    if !in_bounds {
        if op == OP_WRITE {
            // Skip the bytes to stay in step with the client.
            io::copy(&mut r.take(len), &mut io::sink())?;
        }
        let m = format!(
            "The range of {len} bytes at offset {offset} is outside the segment of {} bytes.",
            seg.size()
        );
        put_answer(out, ST_ERR, m.as_bytes());
        w.write_all(out)?;
        return Ok(true);
    }
    // Stream in pieces, so that copying out of (into) the segment overlaps with the network.
    // The range is inside the segment (checked), so the copies cannot fail; if one did, the
    // answer could not be completed: close the connection.
    if op == OP_READ {
        // `buf` holds the answer's head and the first piece, then each next piece.
        buf[0] = ST_OK;
        buf[1..9].copy_from_slice(&len.to_le_bytes());
        let mut at = 9;
        let mut p = 0u64;
        loop {
            let k = (len - p).min((buf.len() - at) as u64) as usize;
            seg.read_at(offset + p, &mut buf[at..at + k])
                .map_err(|e| io::Error::other(e.message))?;
            w.write_all(&buf[..at + k])?;
            p += k as u64;
            at = 0;
            if p >= len {
                break;
            }
        }
    } else {
        let pieces = (0..len)
            .step_by(IO_BUFFER)
            .map(|p| (p, (len - p).min(IO_BUFFER as u64) as usize));
        for (p, k) in pieces {
            r.read_exact(&mut buf[..k])?;
            seg.write_at(offset + p, &buf[..k])
                .map_err(|e| io::Error::other(e.message))?;
        }
        put_answer(out, ST_OK, &[]);
        w.write_all(out)?;
    }
    Ok(true)
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why a client request failed.
#[derive(Debug)]
pub(crate) enum ConnError {
    /// The connection broke: retrying on a fresh one may help.
    Io(String),
    /// The server answered with an error (or refused the hello).
    Server(String),
}

impl ConnError {
    pub(crate) fn message(self) -> String {
        match self {
            ConnError::Io(m) | ConnError::Server(m) => m,
        }
    }
}

/// A client connection to one memory server.
pub(crate) struct Conn {
    pub(crate) server: String,
    pub(crate) size: u64,
    r: BufReader<TcpStream>,
    w: BufWriter<TcpStream>,
}

impl Conn {
    pub(crate) fn connect(server: &str, secret: &Secret) -> Result<Conn, ConnError> {
        let io = |what: &str, e: io::Error| {
            ConnError::Io(format!("{what} the memory server {server}: {e}."))
        };
        let addrs: Vec<SocketAddr> = server
            .to_socket_addrs()
            .map_err(|e| io("Cannot resolve", e))?
            .collect();
        let mut last = io::Error::other("no address");
        let mut stream = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let stream = stream.ok_or_else(|| io("Cannot connect to", last))?;
        stream
            .set_nodelay(true)
            .map_err(|e| io("Cannot configure", e))?;
        let clone = stream.try_clone().map_err(|e| io("Cannot configure", e))?;
        let mut c = Conn {
            server: server.to_string(),
            size: 0,
            r: BufReader::with_capacity(IO_BUFFER, stream),
            w: BufWriter::with_capacity(IO_BUFFER, clone),
        };
        let mut hello = Vec::with_capacity(44);
        hello.extend_from_slice(MAGIC);
        hello.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
        hello.extend_from_slice(&secret_bytes(secret));
        c.w.write_all(&hello)
            .and_then(|()| c.w.flush())
            .map_err(|e| io("Cannot greet", e))?;
        let mut size = [0u8; 8];
        c.answer(&mut size)?;
        c.size = u64::from_le_bytes(size);
        Ok(c)
    }

    /// Reads an answer; on `ok` its payload must be exactly `out.len()` bytes.
    fn answer(&mut self, out: &mut [u8]) -> Result<(), ConnError> {
        let server = &self.server;
        let io = |e: io::Error| {
            ConnError::Io(format!(
                "The connection to the memory server {server} broke: {e}."
            ))
        };
        let mut status = [0u8; 1];
        self.r.read_exact(&mut status).map_err(io)?;
        let len = read_u64(&mut self.r).map_err(io)?;
        match status[0] {
            ST_OK if len == out.len() as u64 => {
                self.r.read_exact(out).map_err(io)?;
                Ok(())
            }
            ST_ERR if len <= MAX_MESSAGE => {
                let mut m = vec![0u8; len as usize];
                self.r.read_exact(&mut m).map_err(io)?;
                Err(ConnError::Server(format!(
                    "The memory server {server} answered: {}",
                    String::from_utf8_lossy(&m)
                )))
            }
            s => Err(ConnError::Io(format!(
                "The memory server {server} answered nonsense (status {s}, {len} bytes)."
            ))),
        }
    }

    fn request(&mut self, op: u8, offset: u64, len: u64) -> io::Result<()> {
        let mut h = [0u8; 17];
        h[0] = op;
        h[1..9].copy_from_slice(&offset.to_le_bytes());
        h[9..].copy_from_slice(&len.to_le_bytes());
        self.w.write_all(&h)
    }

    pub(crate) fn read(&mut self, offset: u64, out: &mut [u8]) -> Result<(), ConnError> {
        let mut pos = 0usize;
        for chunk in out.chunks_mut(CHUNK as usize) {
            let o = offset.saturating_add(pos as u64);
            self.request(OP_READ, o, chunk.len() as u64)
                .and_then(|()| self.w.flush())
                .map_err(|e| self.broke(e))?;
            self.answer(chunk)?;
            pos += chunk.len();
        }
        Ok(())
    }

    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), ConnError> {
        let mut pos = 0usize;
        for chunk in data.chunks(CHUNK as usize) {
            let o = offset.saturating_add(pos as u64);
            self.request(OP_WRITE, o, chunk.len() as u64)
                .and_then(|()| self.w.write_all(chunk))
                .and_then(|()| self.w.flush())
                .map_err(|e| self.broke(e))?;
            self.answer(&mut [])?;
            pos += chunk.len();
        }
        Ok(())
    }

    fn broke(&self, e: io::Error) -> ConnError {
        ConnError::Io(format!(
            "The connection to the memory server {} broke: {e}.",
            self.server
        ))
    }
}
