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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

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
const IO_BUFFER: usize = 1 << 20;
/// The server streams a request's bytes in pieces of this size.
const PIECE: usize = 256 << 10;
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
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

struct Shared {
    stop: AtomicBool,
    next: AtomicU64,
    conns: Mutex<HashMap<u64, TcpStream>>,
}

/// The memory server: serves reads and writes of the segment to peers that know the secret
/// (a hello with the 32-byte secret first; wrong secret = refused and closed), one thread
/// per connection, TCP_NODELAY, requests of at most [`CHUNK`] bytes; stops on
/// [`Server::stop`] (or drop), closing its connections.
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
    pub fn start(
        segment: Arc<Segment>,
        listener: TcpListener,
        secret: Secret,
    ) -> Result<Server, MemError> {
        let addr = listener.local_addr().map_err(|e| {
            MemError::new(format!("The memory server's listener has no address: {e}."))
        })?;
        listener.set_nonblocking(false).map_err(|e| {
            MemError::new(format!(
                "Cannot make the memory server's listener blocking: {e}."
            ))
        })?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            next: AtomicU64::new(0),
            conns: Mutex::new(HashMap::new()),
        });
        let sh = shared.clone();
        let secret = secret_bytes(&secret);
        let accept = std::thread::Builder::new()
            .name("pnet-memory-server".into())
            .spawn(move || accept_loop(listener, segment, secret, sh))
            .map_err(|e| MemError::new(format!("Cannot start the memory server thread: {e}.")))?;
        Ok(Server {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, closes the open connections and waits for the accepting thread.
    pub fn stop(self) {
        drop(self);
    }

    fn shut_down(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept with a connection of our own.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let woke = TcpStream::connect_timeout(&wake, Duration::from_secs(2)).is_ok();
        if let Ok(conns) = self.shared.conns.lock() {
            for s in conns.values() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        if woke || accept.is_finished() {
            let _ = accept.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn accept_loop(listener: TcpListener, segment: Arc<Segment>, secret: [u8; 32], sh: Arc<Shared>) {
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
        let id = sh.next.fetch_add(1, Ordering::Relaxed);
        if let (Ok(clone), Ok(mut conns)) = (stream.try_clone(), sh.conns.lock()) {
            conns.insert(id, clone);
        }
        let (seg, sh2) = (segment.clone(), sh.clone());
        let spawned = std::thread::Builder::new()
            .name("pnet-memory-conn".into())
            .spawn(move || {
                let _ = serve(stream, &seg, &secret);
                if let Ok(mut conns) = sh2.conns.lock() {
                    conns.remove(&id);
                }
            });
        if spawned.is_err()
            && let Ok(mut conns) = sh.conns.lock()
            && let Some(s) = conns.remove(&id)
        {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

fn answer(w: &mut impl Write, status: u8, payload: &[u8]) -> io::Result<()> {
    w.write_all(&[status])?;
    w.write_all(&(payload.len() as u64).to_le_bytes())?;
    w.write_all(payload)
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// Serves one connection until it closes or breaks the protocol.
fn serve(stream: TcpStream, seg: &Segment, secret: &[u8; 32]) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(HELLO_TIMEOUT))?;
    let mut r = BufReader::with_capacity(IO_BUFFER, stream.try_clone()?);
    let mut w = BufWriter::with_capacity(IO_BUFFER, stream.try_clone()?);
    let mut hello = [0u8; 8 + 4 + 32];
    r.read_exact(&mut hello)?;
    let version = u32::from_le_bytes([hello[8], hello[9], hello[10], hello[11]]);
    let refusal = if &hello[..8] != MAGIC {
        Some("This is not a memory client (wrong magic).".to_string())
    } else if version != PROTOCOL_VERSION {
        Some(format!(
            "The memory server speaks protocol version {PROTOCOL_VERSION}, the client {version}."
        ))
    } else if !constant_eq(&hello[12..], secret) {
        Some("The memory server refuses the connection: wrong secret.".to_string())
    } else {
        None
    };
    if let Some(m) = refusal {
        answer(&mut w, ST_ERR, m.as_bytes())?;
        w.flush()?;
        let _ = stream.shutdown(Shutdown::Both);
        return Ok(());
    }
    answer(&mut w, ST_OK, &seg.size().to_le_bytes())?;
    w.flush()?;
    stream.set_read_timeout(None)?;
    let mut buf = vec![0u8; PIECE];
    loop {
        let mut op = [0u8; 1];
        match r.read_exact(&mut op) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let offset = read_u64(&mut r)?;
        let len = read_u64(&mut r)?;
        if (op[0] != OP_READ && op[0] != OP_WRITE) || len > CHUNK {
            let m = format!(
                "Protocol error: op {} with {len} bytes (at most {CHUNK} per request).",
                op[0]
            );
            answer(&mut w, ST_ERR, m.as_bytes())?;
            w.flush()?;
            let _ = stream.shutdown(Shutdown::Both);
            return Ok(());
        }
        let in_bounds = offset.checked_add(len).is_some_and(|e| e <= seg.size());
        if !in_bounds {
            if op[0] == OP_WRITE {
                // Skip the bytes to stay in step with the client.
                io::copy(&mut (&mut r).take(len), &mut io::sink())?;
            }
            let m = format!(
                "The range of {len} bytes at offset {offset} is outside the segment of {} bytes.",
                seg.size()
            );
            answer(&mut w, ST_ERR, m.as_bytes())?;
            w.flush()?;
            continue;
        }
        // Stream in pieces, so that copying out of (into) the segment overlaps with the
        // network. The range is inside the segment (checked), so the copies cannot fail; if
        // one did, the answer could not be completed: close the connection.
        let pieces = (0..len)
            .step_by(PIECE)
            .map(|p| (p, (len - p).min(PIECE as u64) as usize));
        if op[0] == OP_READ {
            w.write_all(&[ST_OK])?;
            w.write_all(&len.to_le_bytes())?;
            for (p, k) in pieces {
                seg.read_at(offset + p, &mut buf[..k])
                    .map_err(|e| io::Error::other(e.message))?;
                w.write_all(&buf[..k])?;
            }
        } else {
            for (p, k) in pieces {
                r.read_exact(&mut buf[..k])?;
                seg.write_at(offset + p, &buf[..k])
                    .map_err(|e| io::Error::other(e.message))?;
            }
            answer(&mut w, ST_OK, &[])?;
        }
        w.flush()?;
    }
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
