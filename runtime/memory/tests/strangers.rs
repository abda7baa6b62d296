//! Strangers at the memory server (issue 20, item 6): connections that never authenticate
//! hold no thread and are closed beyond a limit; authenticated ones are served by a bounded
//! pool. A separate test binary, because it counts this process's threads.

use std::io::{ErrorKind, Read};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pnet_memory::{Peers, Segment, SegmentInfo, Server};
use pnet_protocol::{PREAUTH_CONNECTIONS, Secret};

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// Lets this process open the connections of both ends of the test.
fn raise_fd_limit() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `l` is valid for writes; setrlimit reads it.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < 4096 {
            l.rlim_cur = l.rlim_max.min(4096);
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

/// Whether the server has closed `s`.
fn closed(mut s: &TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    let mut b = [0u8; 64];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn idle_strangers_make_no_threads_and_peers_are_still_served() {
    raise_fd_limit();
    let dir = std::env::temp_dir().join(format!("pnet-memory-strangers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let size = 1 << 20;
    let seg = Arc::new(Segment::create(&dir, "seg", size).unwrap());
    let secret = Secret::random().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = Server::start(seg.clone(), listener, secret.clone()).unwrap();
    let info = SegmentInfo {
        id: 1,
        host: "elsewhere".into(),
        shm_path: seg.path().to_string_lossy().into_owned(),
        server: server.addr().to_string(),
        size,
    };
    let base = threads();

    // 500 connections that never say a word.
    let idle: Vec<TcpStream> = (0..500)
        .map(|_| TcpStream::connect(server.addr()).unwrap())
        .collect();
    let t = Instant::now();
    let open = loop {
        let open = idle.iter().filter(|s| !closed(s)).count();
        if open <= PREAUTH_CONNECTIONS || t.elapsed() > Duration::from_secs(3) {
            break open;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let with_idle = threads();
    assert!(
        with_idle <= base + 2,
        "500 idle connections: {with_idle} threads, {base} before"
    );
    assert!(
        open <= PREAUTH_CONNECTIONS,
        "{open} unauthenticated connections stay open (limit {PREAUTH_CONNECTIONS})"
    );
    // The newest are kept (the oldest beyond the limit were closed).
    assert!(!closed(idle.last().unwrap()));

    // Peers that know the secret get in, and 200 of them connected at once are served by the
    // same threads.
    let mut peers: Vec<Peers> = (0..200)
        .map(|_| Peers::new("here".into(), None, secret.clone()))
        .collect();
    for (i, p) in peers.iter_mut().enumerate() {
        let at = (i * 8) as u64;
        p.write(&info, at, &(i as u64).to_le_bytes()).unwrap();
    }
    for (i, p) in peers.iter_mut().enumerate() {
        let mut b = [0u8; 8];
        p.read(&info, (i * 8) as u64, &mut b).unwrap();
        assert_eq!(u64::from_le_bytes(b), i as u64);
    }
    let with_peers = threads();
    assert!(
        with_peers <= base + 2,
        "200 authenticated connections: {with_peers} threads, {base} before"
    );
    drop(idle);
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
