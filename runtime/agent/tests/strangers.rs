//! Strangers at the agent's doors (issue 20, item 6): before a peer has authenticated, the
//! worker listener accepts only small frames and a bounded number of connections, so that
//! connections that never authenticate cannot make the agent hold much memory; the control
//! socket serves its owner. A separate test binary, because it measures this process's
//! resident memory.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use pnet_agent::{AgentConfig, AgentError, JobOptions, run_job_with};
use pnet_bundle::Bundle;
use pnet_protocol::frame::{read_msg, write_msg};
use pnet_protocol::{AgentMsg, Hello, PROTOCOL_VERSION, Secret, WorkerMsg};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p =
            std::env::temp_dir().join(format!("pnet-agent-strangers-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A net with one `put_token` place and nothing else: with a control socket, the job waits
/// for its clients (here: until one cancels it).
fn waiting_net() -> Bundle {
    pnet_bundle::text::parse(
        "bundle root f0 main
file 0 \"strangers.xpnet\" lines 0 7

function f0 main  @ strangers.xpnet:1:1-5
  in xs : long = p0 xs  @ 1:1-5
  net
    place p0 xs : long put_token  @ strangers.xpnet:1:1-5
",
    )
    .unwrap()
}

struct Job {
    addr: SocketAddr,
    secret: Secret,
    control: PathBuf,
    handle: thread::JoinHandle<Result<pnet_engine::RunResult, AgentError>>,
    _dir: TempDir,
}

/// Starts a job that expects one external worker and has a control socket.
fn start(tag: &str) -> Job {
    let dir = TempDir::new(tag);
    let control = dir.0.join("ctl.sock");
    let mut cfg = AgentConfig::new(
        pnet_topology::Plan::default(),
        PathBuf::from("/nonexistent/gspc-worker"),
    );
    cfg.control = Some(control.clone());
    let secret = Secret::random().unwrap();
    let (tx, rx) = mpsc::channel();
    let options = JobOptions {
        secret: Some(secret.clone()),
        on_listen: Some(Box::new(move |a| {
            let _ = tx.send(a);
        })),
        external_workers: 1,
        ..JobOptions::default()
    };
    let handle = thread::spawn(move || run_job_with(&waiting_net(), &[], &cfg, options));
    let addr = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the agent listens");
    wait_for_socket(&control);
    Job {
        addr,
        secret,
        control,
        handle,
        _dir: dir,
    }
}

fn wait_for_socket(p: &Path) {
    let t = Instant::now();
    while !p.exists() {
        assert!(t.elapsed() < Duration::from_secs(10), "no control socket");
        thread::sleep(Duration::from_millis(5));
    }
}

/// Cancels the job through its control socket (which must accept us, its owner).
fn cancel(job: Job) {
    pnet_agent::control::cancel(&job.control).expect("the owner may cancel the job");
    let e = job.handle.join().unwrap().unwrap_err();
    assert!(matches!(e, AgentError::Cancelled), "{e}");
}

fn vm_rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc/self/status")
}

/// Whether the other side has closed `s`, waiting at most `wait`.
fn closed_within(mut s: &TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut b = [0u8; 4096];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            // A refusal message before the close is fine.
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn giant_frames_before_the_hello_are_refused_and_memory_stays_small() {
    let job = start("giant");
    let before = vm_rss_kib();
    // Eight strangers announce a frame just under the 64 MiB limit of authenticated peers and
    // start sending it (16 MiB each). Before authentication that is refused at the header.
    const STRANGERS: usize = 8;
    const SENT: usize = 16 << 20;
    let addr = job.addr;
    let strangers: Vec<_> = (0..STRANGERS)
        .map(|_| {
            thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
                let len = (pnet_protocol::MAX_FRAME - 1) as u32;
                let mut wrote = 0usize;
                if s.write_all(&len.to_be_bytes()).is_ok() {
                    let chunk = vec![0x5au8; 64 << 10];
                    while wrote < SENT {
                        match s.write(&chunk) {
                            Ok(n) => wrote += n,
                            Err(_) => break,
                        }
                    }
                }
                s
            })
        })
        .collect();
    let conns: Vec<TcpStream> = strangers.into_iter().map(|t| t.join().unwrap()).collect();
    let grown_mib = vm_rss_kib().saturating_sub(before) / 1024;
    let closed = conns
        .iter()
        .filter(|s| closed_within(s, Duration::from_secs(3)))
        .count();
    assert!(
        grown_mib < 32,
        "{STRANGERS} strangers sending {} MiB each made the agent grow by {grown_mib} MiB",
        SENT >> 20
    );
    assert_eq!(closed, STRANGERS, "every stranger is closed");
    cancel(job);
}

#[test]
fn idle_strangers_beyond_the_limit_are_closed_and_a_worker_still_joins() {
    let job = start("idle");
    // 200 connections that never say anything: the oldest ones beyond the limit of
    // unauthenticated connections are closed.
    let idle: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(job.addr).unwrap())
        .collect();
    let t = Instant::now();
    let open = loop {
        let open = idle
            .iter()
            .filter(|s| !closed_within(s, Duration::from_millis(1)))
            .count();
        if open <= pnet_protocol::PREAUTH_CONNECTIONS || t.elapsed() > Duration::from_secs(3) {
            break open;
        }
        thread::sleep(Duration::from_millis(20));
    };
    assert!(
        open <= pnet_protocol::PREAUTH_CONNECTIONS,
        "{open} unauthenticated connections stay open (limit {})",
        pnet_protocol::PREAUTH_CONNECTIONS
    );
    // The last ones are the ones kept.
    assert!(!closed_within(
        idle.last().unwrap(),
        Duration::from_millis(1)
    ));
    // A real worker (who knows the secret) still gets in.
    let mut w = TcpStream::connect(job.addr).unwrap();
    w.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let hello = WorkerMsg::Hello(Hello {
        protocol: PROTOCOL_VERSION,
        secret: job.secret.clone(),
        name: "w".into(),
        host: "localhost".into(),
        pid: std::process::id(),
        capabilities: vec![],
        socket: None,
    });
    write_msg(&mut w, &hello).unwrap();
    match read_msg::<_, AgentMsg>(&mut w) {
        Ok(AgentMsg::Welcome { .. }) => {}
        other => panic!("the worker was not welcome: {other:?}"),
    }
    drop(idle);
    cancel(job);
}
