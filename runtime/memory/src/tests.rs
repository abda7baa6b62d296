use std::net::TcpListener;
use std::sync::Arc;

use pnet_protocol::Secret;

use super::*;
use crate::testing::{TempDir, World, pattern, spec};

// ---- local buffers

#[test]
fn local_alignment_honoured() {
    for a in [1u64, 8, 64, 4096, 65536] {
        for size in [0u64, 1, 63, 4095, 4096, 10000] {
            let specs = [spec("b", size, a), spec("c", 3, 1)];
            let mut bufs = LocalBuffers::allocate(&specs, 1 << 20).unwrap();
            assert_eq!(bufs.len(), 2);
            let p = bufs.ptr(0);
            assert!(!p.is_null());
            assert_eq!(p as usize % a as usize, 0, "alignment {a}, size {size}");
            assert_eq!(bufs.size(0), size);
            assert_eq!(bufs.bytes(0).len(), size as usize);
            assert!(bufs.bytes(0).iter().all(|&b| b == 0));
            bufs.bytes_mut(0).fill(0xFF);
            bufs.bytes_mut(1).copy_from_slice(b"abc");
            bufs.check_guards().unwrap();
            // the buffer ends less than an alignment (or a page) before its trailing guard
            let guards = bufs.guard_ranges();
            assert_eq!(guards.len(), 4);
            let end = p as usize + size as usize;
            assert!(end <= guards[1].start);
            assert!(
                guards[1].start - end < a as usize,
                "alignment {a}, size {size}"
            );
            assert!(p as usize >= guards[0].end);
        }
    }
}

#[test]
fn local_buffer_end_is_tight() {
    // alignment 1: the buffer ends exactly at the guard page
    let bufs = LocalBuffers::allocate(&[spec("b", 100, 1)], 100).unwrap();
    let g = bufs.guard_ranges();
    assert_eq!(bufs.ptr(0) as usize + 100, g[1].start);
    // alignment 64, size 100: ends 28 bytes before it
    let bufs = LocalBuffers::allocate(&[spec("b", 100, 64)], 100).unwrap();
    let g = bufs.guard_ranges();
    assert_eq!(bufs.ptr(0) as usize + 100 + 28, g[1].start);
    assert_eq!(bufs.guard_owner(g[1].start + 5), Some("b"));
    assert_eq!(bufs.guard_owner(g[0].start), Some("b"));
    assert_eq!(bufs.guard_owner(bufs.ptr(0) as usize), None);
}

#[test]
fn local_limit() {
    let e = LocalBuffers::allocate(&[spec("a", 600, 1), spec("b", 500, 1)], 1000).unwrap_err();
    assert_eq!(
        e.message,
        "The call's memory buffers need 1100 bytes, more than the worker's 1000 bytes of working memory."
    );
    assert!(LocalBuffers::allocate(&[spec("a", 500, 1), spec("b", 500, 1)], 1000).is_ok());
    let e = LocalBuffers::allocate(&[spec("a", u64::MAX, 1), spec("b", 5, 1)], 10).unwrap_err();
    assert!(e.message.contains("10 bytes of working memory"), "{e}");
    // too big for the address space even when allowed
    let e = LocalBuffers::allocate(&[spec("huge", u64::MAX - 10, 1)], u64::MAX).unwrap_err();
    assert!(e.message.contains("`huge`"), "{e}");
    let empty = LocalBuffers::allocate(&[], 0).unwrap();
    assert!(empty.is_empty());
    empty.check_guards().unwrap();
}

#[test]
fn local_canary_overwrite_is_reported() {
    let mut bufs =
        LocalBuffers::allocate(&[spec("ok", 10, 1), spec("data", 100, 64)], 1000).unwrap();
    bufs.bytes_mut(1).fill(7);
    bufs.check_guards().unwrap();
    let p = bufs.ptr(1);
    // SAFETY: 100 + 5 < 128: inside the canaried slack of the mapping (readable, writable).
    unsafe { p.add(105).write_volatile(0) };
    let e = bufs.check_guards().unwrap_err();
    assert_eq!(
        e.message,
        "The module wrote past the end of memory buffer `data` (100 bytes): the byte at offset 5 after its end was overwritten."
    );
    // size 4000, alignment 64: the buffer starts 64 bytes after the leading guard page
    let bufs = LocalBuffers::allocate(&[spec("low", 4000, 64)], 4000).unwrap();
    assert_eq!(bufs.ptr(0) as usize - bufs.guard_ranges()[0].end, 64);
    // SAFETY: the byte just before the buffer lies in the canaried lead slack.
    unsafe { bufs.ptr(0).sub(1).write_volatile(0) };
    let e = bufs.check_guards().unwrap_err();
    assert_eq!(
        e.message,
        "The module wrote before the start of memory buffer `low` (4000 bytes): the byte 1 bytes before its start was overwritten."
    );
}

#[test]
fn local_guard_page_faults() {
    use std::os::unix::process::ExitStatusExt;
    const VAR: &str = "PNET_MEMORY_GUARD_CHILD";
    if let Ok(which) = std::env::var(VAR) {
        // The child: touch a guard page; surviving is a failure. No core file, please.
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: setrlimit reads the struct passed by reference and nothing else.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &no_core) };
        let bufs = LocalBuffers::allocate(&[spec("b", 100, 1)], 1000).unwrap();
        let g = bufs.guard_ranges();
        let addr = if which == "tail" {
            g[1].start
        } else {
            g[0].end - 1
        };
        // SAFETY: deliberately faulting: the page is PROT_NONE, the write raises SIGSEGV.
        unsafe { (addr as *mut u8).write_volatile(1) };
        std::process::exit(3);
    }
    for which in ["tail", "lead"] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "tests::local_guard_page_faults",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(VAR, which)
            .output()
            .unwrap();
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGSEGV),
            "{which}: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// ---- segments, server, peers

#[test]
fn segment_file_and_cleanup() {
    let dir = TempDir::new();
    // More than the file system has is refused up front (not a SIGBUS on first touch).
    let err = Segment::create(dir.path(), "huge", 1 << 62).unwrap_err();
    assert!(err.message.contains("Not enough space"), "{err}");
    assert!(!dir.path().join("huge").exists());
    let seg = Segment::create(dir.path(), "s", 4096).unwrap();
    let path = seg.path().to_path_buf();
    assert_eq!(path, dir.path().join("s"));
    let meta = std::fs::metadata(&path).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.len(), 4096);
    assert_eq!(seg.size(), 4096);
    // exclusive creation
    let e = Segment::create(dir.path(), "s", 10).unwrap_err();
    assert!(
        e.message.starts_with("Cannot create the segment file"),
        "{e}"
    );
    seg.write_at(4090, b"abcdef").unwrap();
    let mut b = [0u8; 6];
    seg.read_at(4090, &mut b).unwrap();
    assert_eq!(&b, b"abcdef");
    assert!(seg.write_at(4091, b"abcdef").is_err());
    assert!(seg.read_at(u64::MAX, &mut b).is_err());
    drop(seg);
    assert!(!path.exists());
    assert!(Segment::create(dir.path(), "a/b", 10).is_err());
    assert!(Segment::create(dir.path(), "..", 10).is_err());
    let empty = Segment::create(dir.path(), "empty", 0).unwrap();
    assert_eq!(empty.size(), 0);
}

#[test]
fn server_round_trips_and_refusals() {
    use crate::server::{CHUNK, Conn, ConnError};
    let size = 3 * CHUNK + 1000;
    let w = World::new(1, size, "h");
    let addr = w.servers[0].addr().to_string();
    let mut c = Conn::connect(&addr, &w.secret).unwrap();
    assert_eq!(c.size, size);
    // a transfer larger than a chunk, at an unaligned offset
    let data = pattern((2 * CHUNK + 12345) as usize, 3);
    c.write(777, &data).unwrap();
    let mut back = vec![0u8; data.len()];
    c.read(777, &mut back).unwrap();
    assert!(back == data);
    let mut direct = vec![0u8; 100];
    w.segs[0].read_at(777, &mut direct).unwrap();
    assert_eq!(direct, data[..100]);
    // out of bounds: refused, the connection stays usable
    match c.read(size - 10, &mut [0u8; 11]) {
        Err(ConnError::Server(m)) => assert!(m.contains("outside the segment"), "{m}"),
        other => panic!("{other:?}"),
    }
    match c.write(u64::MAX - 3, &[1u8; 8]) {
        Err(ConnError::Server(m)) => assert!(m.contains("outside the segment"), "{m}"),
        other => panic!("{other:?}"),
    }
    let mut small = [0u8; 4];
    c.read(777, &mut small).unwrap();
    assert_eq!(small, data[..4]);
    // wrong secret
    match Conn::connect(&addr, &Secret::random().unwrap()) {
        Err(ConnError::Server(m)) => assert!(m.contains("wrong secret"), "{m}"),
        Err(ConnError::Io(m)) => panic!("{m}"),
        Ok(_) => panic!("a wrong secret was accepted"),
    }
    // not a memory client at all
    {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.write_all(&[b'x'; 44]).unwrap();
        let mut ans = Vec::new();
        s.read_to_end(&mut ans).unwrap();
        assert_eq!(ans[0], 1);
        assert!(String::from_utf8_lossy(&ans[9..]).contains("wrong magic"));
    }
    // stop closes open connections
    let World { servers, .. } = w;
    for s in servers {
        s.stop();
    }
    assert!(matches!(c.read(0, &mut small), Err(ConnError::Io(_))));
    assert!(Conn::connect(&addr, &Secret::random().unwrap()).is_err());
}

/// Whether the server has closed `s` (no waiting).
fn closed_by_server(mut s: &std::net::TcpStream) -> bool {
    use std::io::Read;
    s.set_read_timeout(Some(std::time::Duration::from_millis(1)))
        .unwrap();
    let mut b = [0u8; 64];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn a_silent_connection_is_closed_after_the_hello_timeout() {
    let dir = TempDir::new();
    let seg = Arc::new(Segment::create(dir.path(), "seg", 4096).unwrap());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let limits = crate::server::Limits {
        preauth_timeout: std::time::Duration::from_millis(200),
        ..Default::default()
    };
    let server = Server::start_with(seg, listener, Secret::random().unwrap(), limits).unwrap();
    let t = std::time::Instant::now();
    let s = std::net::TcpStream::connect(server.addr()).unwrap();
    // Half a hello, then nothing.
    std::io::Write::write_all(&mut &s, b"PNETMEM\0").unwrap();
    while !closed_by_server(&s) {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(3),
            "still open"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        t.elapsed() >= std::time::Duration::from_millis(150),
        "{:?}",
        t.elapsed()
    );
    server.stop();
}

#[test]
fn peers_mapping_and_tcp_give_the_same_bytes() {
    let w = World::new(2, 1 << 20, "hostA");
    // a worker on hostA with segment 1 as its own: own segment, mapping of segment 2
    let mut local = Peers::new(
        "hostA".into(),
        Some((1, w.segs[0].clone())),
        w.secret.clone(),
    );
    // a worker on hostB: both over TCP
    let mut remote = w.peers("hostB");
    let data = pattern(300_000, 5);
    local.write(&w.infos[1], 4093, &data).unwrap();
    local.write(&w.infos[0], 3, &data).unwrap();
    for info in &w.infos {
        let (mut a, mut b) = (vec![0u8; data.len()], vec![0u8; data.len()]);
        let off = if info.id == 1 { 3 } else { 4093 };
        local.read(info, off, &mut a).unwrap();
        remote.read(info, off, &mut b).unwrap();
        assert!(a == data && b == data, "segment {}", info.id);
    }
    // writes over TCP are seen through the mapping
    remote.write(&w.infos[1], 0, b"over tcp").unwrap();
    let mut m = [0u8; 8];
    local.read(&w.infos[1], 0, &mut m).unwrap();
    assert_eq!(&m, b"over tcp");
    // out of range: refused before any access
    let e = local.read(&w.infos[1], (1 << 20) - 2, &mut m).unwrap_err();
    assert_eq!(
        e.message,
        "The range of 8 bytes at offset 1048574 is outside segment 2 of 1048576 bytes."
    );
    assert!(remote.write(&w.infos[0], u64::MAX, &m).is_err());
    // a segment file that cannot be opened: falls back to the server
    let mut moved = w.infos[1].clone();
    moved.shm_path = "/nonexistent/pnet-seg".into();
    let mut back = [0u8; 8];
    local.read(&moved, 0, &mut back).unwrap();
    assert_eq!(&back, b"over tcp");
    // an unreachable server with a wrong secret
    let mut stranger = Peers::new("hostC".into(), None, Secret::random().unwrap());
    let e = stranger.read(&w.infos[0], 0, &mut back).unwrap_err();
    assert!(e.message.contains("wrong secret"), "{e}");
}

#[test]
fn peers_reconnect_after_server_restart() {
    let w = World::new(1, 1 << 12, "a");
    let mut p = w.peers("b");
    p.write(&w.infos[0], 0, b"one").unwrap();
    let World {
        segs,
        servers,
        mut infos,
        secret,
        dir: _dir,
    } = w;
    for s in servers {
        s.stop();
    }
    // the worker's server comes back on another port
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = Server::start(segs[0].clone(), l, secret).unwrap();
    infos[0].server = server.addr().to_string();
    let mut b = [0u8; 3];
    p.read(&infos[0], 0, &mut b).unwrap();
    assert_eq!(&b, b"one");
    server.stop();
}

// ---- the global table

fn info(id: u32, size: u64) -> SegmentInfo {
    SegmentInfo {
        id,
        host: "h".into(),
        shm_path: format!("/dev/shm/none-{id}"),
        server: "127.0.0.1:1".into(),
        size,
    }
}

#[test]
fn table_spreads_over_three_segments() {
    let mut t = GlobalTable::new();
    for id in [3, 1, 2] {
        t.add_segment(info(id, 10_000));
    }
    let h = t.alloc(1000).unwrap();
    assert!(h.starts_with("0x") && h.len() == 18, "{h}");
    assert_eq!(t.size_of(&h), Some(1000));
    assert_eq!(
        t.locate(&h, 0, 1000).unwrap(),
        vec![
            Piece {
                segment: 1,
                offset: 0,
                len: 334
            },
            Piece {
                segment: 2,
                offset: 0,
                len: 334
            },
            Piece {
                segment: 3,
                offset: 0,
                len: 332
            },
        ]
    );
    // the next allocation starts at the next multiple of 64
    let h2 = t.alloc(30).unwrap();
    assert_eq!(
        t.locate(&h2, 0, 30).unwrap(),
        vec![
            Piece {
                segment: 1,
                offset: 384,
                len: 10
            },
            Piece {
                segment: 2,
                offset: 384,
                len: 10
            },
            Piece {
                segment: 3,
                offset: 384,
                len: 10
            },
        ]
    );
    // fewer bytes than segments
    let h3 = t.alloc(2).unwrap();
    assert_eq!(t.locate(&h3, 0, 2).unwrap().len(), 2);
    assert_eq!(t.locate(&h, 500, 0).unwrap(), vec![]);
    let s = t.stats();
    assert_eq!(s.segments, 3);
    assert_eq!(s.capacity, 30_000);
    assert_eq!(s.allocated, 1032);
    assert_eq!(s.allocations, 3);
    assert_eq!(
        s.per_segment
            .iter()
            .map(|(i, a)| (i.id, *a))
            .collect::<Vec<_>>(),
        vec![(1, 345), (2, 345), (3, 342)]
    );
    assert_eq!(t.segment(2), Some(&info(2, 10_000)));
    assert_eq!(t.segment(9), None);
}

#[test]
fn table_free_reuses_space_and_handles_are_fresh() {
    let mut t = GlobalTable::new();
    t.add_segment(info(1, 1024));
    let a = t.alloc(500).unwrap();
    let b = t.alloc(500).unwrap();
    assert!(t.alloc(64).is_err());
    t.free(&a).unwrap();
    let c = t.alloc(448).unwrap();
    assert_ne!(c, a);
    assert_eq!(t.locate(&c, 0, 448).unwrap()[0].offset, 0);
    t.free(&b).unwrap();
    t.free(&c).unwrap();
    // all merged again: the whole segment in one piece
    let d = t.alloc(1024).unwrap();
    assert_eq!(
        t.locate(&d, 0, 1024).unwrap(),
        vec![Piece {
            segment: 1,
            offset: 0,
            len: 1024
        }]
    );
    assert_eq!(
        t.free(&a).unwrap_err().message,
        format!("There is no global allocation with handle `{a}`.")
    );
    assert_eq!(t.size_of(&a), None);
}

#[test]
fn table_no_space_left() {
    let mut t = GlobalTable::new();
    let e = t.alloc(10).unwrap_err();
    assert_eq!(
        e.message,
        "Cannot allocate 10 bytes of global memory: no worker has working memory."
    );
    t.add_segment(info(1, 1000));
    t.add_segment(info(2, 500));
    let e = t.alloc(1200).unwrap_err();
    assert_eq!(
        e.message,
        "Cannot allocate 1200 bytes of global memory: no space left (a part of 600 bytes does not fit segment 2, whose largest free extent has 448 bytes)."
    );
    // nothing leaked by the failed attempt
    assert_eq!(t.stats().allocated, 0);
    assert_eq!(t.stats().per_segment[0].1, 0);
    let h = t.alloc(896).unwrap();
    assert_eq!(t.locate(&h, 0, 896).unwrap().len(), 2);
    assert!(t.alloc(u64::MAX).is_err());
}

#[test]
fn table_remove_segment_refuses_or_forces() {
    let mut t = GlobalTable::new();
    t.add_segment(info(1, 4096));
    t.add_segment(info(2, 4096));
    let h = t.alloc(1000).unwrap();
    let only1 = t.alloc(1).unwrap(); // a single part, in segment 1
    let e = t.remove_segment(2, false).unwrap_err();
    assert_eq!(
        e.message,
        format!(
            "Segment 2 holds parts of 1 global allocation(s) ({h}); free them first or force the removal."
        )
    );
    assert!(t.locate(&h, 0, 1000).is_ok());
    t.remove_segment(2, true).unwrap();
    assert_eq!(t.stats().segments, 1);
    assert_eq!(
        t.locate(&h, 0, 10).unwrap_err().message,
        format!("The global allocation {h} is lost: worker 2, which held part of it, is gone.")
    );
    assert!(t.locate(&only1, 0, 1).is_ok());
    // freeing the broken allocation releases its part in segment 1
    t.free(&h).unwrap();
    assert_eq!(t.stats().per_segment, vec![(info(1, 4096), 1)]);
    t.remove_segment(7, false).unwrap();
    t.free(&only1).unwrap();
    t.remove_segment(1, false).unwrap();
    assert_eq!(t.stats().segments, 0);
    // a segment re-added with the same id is a fresh one
    t.add_segment(info(1, 128));
    let x = t.alloc(128).unwrap();
    t.add_segment(info(1, 128)); // the same info: no change
    assert!(t.locate(&x, 0, 128).is_ok());
    t.add_segment(info(1, 256)); // a different one: replaces (x is lost)
    assert!(t.locate(&x, 0, 1).is_err());
    t.free(&x).unwrap();
    assert!(t.alloc(256).is_ok());
}

#[test]
fn global_read_write_across_segments() {
    let w = World::new(3, 1 << 16, "h");
    let t = {
        let mut t = w.table();
        t.alloc(5).unwrap(); // shifts the next allocation's parts
        t
    };
    let mut t = t;
    let h = t.alloc(30_000).unwrap();
    let mut p = w.peers("h");
    let data = pattern(30_000, 11);
    write_global(&t, &mut p, &h, 0, &data).unwrap();
    let mut back = vec![0u8; 12_000];
    read_global(&t, &mut p, &h, 9_000, &mut back).unwrap();
    assert_eq!(back, data[9_000..21_000]);
    // the same through TCP
    let mut r = w.peers("elsewhere");
    let mut back2 = vec![0u8; 12_000];
    read_global(&t, &mut r, &h, 9_000, &mut back2).unwrap();
    assert_eq!(back2, back);
    write_global(&t, &mut r, &h, 29_990, b"0123456789").unwrap();
    let mut tail = [0u8; 10];
    read_global(&t, &mut p, &h, 29_990, &mut tail).unwrap();
    assert_eq!(&tail, b"0123456789");
    let e = read_global(&t, &mut p, &h, 29_995, &mut tail).unwrap_err();
    assert!(e.message.contains("outside the global allocation"), "{e}");
    assert!(write_global(&t, &mut p, "0x1234", 0, b"x").is_err());
}

#[test]
fn pieces_must_fit_the_buffer() {
    let mut peers = Peers::new("h".into(), None, Secret::random().unwrap());
    let pieces = vec![RangePiece {
        segment: info(0, 100),
        offset: 0,
        len: 10,
    }];
    let mut out = [0u8; 4];
    let e = read_pieces(&mut peers, &pieces, &mut out).unwrap_err();
    assert!(e.message.contains("larger than the buffer"), "{e}");
    let e = write_pieces(&mut peers, &pieces, &[1, 2]).unwrap_err();
    assert!(e.message.contains("larger than the data"), "{e}");
}

#[test]
fn run_rejects_malformed_tasks() {
    let w = World::new(1, 4096, "h");
    let mut p = w.peers("h");
    let mut bufs = LocalBuffers::allocate(&[spec("b", 10, 1)], 100).unwrap();
    let copy = |buffer, buffer_offset, segment, len| Copy {
        buffer,
        buffer_offset,
        segment,
        segment_offset: 0,
        len,
    };
    let mut task = MemoryTask {
        buffers: vec![spec("b", 10, 1)],
        segments: w.infos.clone(),
        gets: vec![copy(1, 0, 1, 5)],
        puts: vec![copy(0, 8, 1, 5)],
    };
    let e = run_gets(&task, &mut bufs, &mut p).unwrap_err();
    assert!(e.message.contains("does not exist (1 buffers)"), "{e}");
    let e = run_puts(&task, &bufs, &mut p).unwrap_err();
    assert!(e.message.contains("has only 10 bytes"), "{e}");
    task.gets = vec![copy(0, 0, 9, 5)];
    let e = run_gets(&task, &mut bufs, &mut p).unwrap_err();
    assert!(
        e.message.contains("segment 9, which it does not list"),
        "{e}"
    );
}

#[test]
fn segment_names_carry_the_owner_pid() {
    assert_eq!(segment_name(12, "compute-1-host"), "pnet-12-compute-1-host");
    assert_eq!(segment_owner("pnet-12-compute-1-host"), Some(12));
    assert_eq!(segment_owner("pnet-12-w-1-0badf00d"), Some(12));
    for other in [
        "pnet-x-w",
        "pnet-12",
        "pnet-12-",
        "pnet--w",
        "pnet-0-w",
        "seg-1",
        "pnet-1a-w",
    ] {
        assert_eq!(segment_owner(other), None, "{other}");
    }
}

#[test]
fn stale_segments_of_dead_pids_are_removed() {
    let dir = TempDir::new();
    // A pid that is surely dead: a child that has been reaped.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let me = std::process::id();
    let names = [
        segment_name(dead, "w-1"),
        format!("{}-0badf00d", segment_name(dead, "w-2")),
        segment_name(me, "w-3"),
        "pnet-notapid-w".to_string(),
        "other".to_string(),
    ];
    for n in &names {
        std::fs::write(dir.path().join(n), b"x").unwrap();
    }
    // A folder of the scheme is never touched.
    std::fs::create_dir(dir.path().join(segment_name(dead, "dir"))).unwrap();
    let mut removed = remove_segments_in(dir.path(), None, true);
    removed.sort();
    let mut want = vec![dir.path().join(&names[0]), dir.path().join(&names[1])];
    want.sort();
    assert_eq!(removed, want);
    for n in &names[2..] {
        assert!(dir.path().join(n).exists(), "{n}");
    }
    assert!(dir.path().join(segment_name(dead, "dir")).is_dir());
    // By pid, alive or not (the starter knows its worker has exited).
    assert_eq!(
        remove_segments_in(dir.path(), Some(me), false),
        vec![dir.path().join(&names[2])]
    );
    assert!(remove_segments_in(dir.path(), Some(me), false).is_empty());
}
