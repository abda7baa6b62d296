//! Global memory through a persistent runtime, in-process: fake workers (threads speaking
//! the protocol, each with a real segment and memory server of `pnet_memory`, on two
//! pretend hosts so that every transfer between them goes over TCP) offer their working
//! memory; a client allocates, writes and reads it; a job's module call gets and puts it.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use pnet_memory::{LocalBuffers, Peers, Segment, SegmentInfo, Server};
use pnet_protocol::frame::{read_msg, write_msg};
use pnet_protocol::{AgentMsg, HEARTBEAT_INTERVAL, Hello, PROTOCOL_VERSION, Secret, WorkerMsg};
use pnet_stdlib::Value;

use super::tests::TempDir;
use crate::control::{INFO_FILE, JobOutcome, RtClient, RtRequest, RtResponse, SOCKET_FILE};
use crate::core::tests::net;
use crate::{AgentConfig, RuntimeConfig, SchedConfig, serve};

const SEGMENT: u64 = 1 << 20;

/// A worker with working memory: runs every task's gets, adds 1 to every byte of its
/// buffers, runs the puts, and answers `1L`.
fn memory_worker(
    addr: SocketAddr,
    secret: Secret,
    name: &str,
    host: &str,
    dir: PathBuf,
) -> thread::JoinHandle<usize> {
    let (name, host) = (name.to_string(), host.to_string());
    thread::spawn(move || {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_nodelay(true).unwrap();
        let hello = WorkerMsg::Hello(Hello {
            protocol: PROTOCOL_VERSION,
            secret: secret.clone(),
            name: name.clone(),
            host: host.clone(),
            pid: std::process::id(),
            capabilities: vec!["GPI".into()],
            socket: None,
        });
        write_msg(&mut s, &hello).unwrap();
        let id = match read_msg::<_, AgentMsg>(&mut s) {
            Ok(AgentMsg::Welcome { worker, .. }) => worker,
            other => panic!("unexpected answer to Hello: {other:?}"),
        };
        let segment = Arc::new(Segment::create(&dir, &name, SEGMENT).expect("segment"));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = Server::start(segment.clone(), listener, secret.clone()).expect("server");
        let info = SegmentInfo {
            id,
            host: host.clone(),
            shm_path: segment.path().display().to_string(),
            server: server.addr().to_string(),
            size: SEGMENT,
        };
        let w = Arc::new(std::sync::Mutex::new(s.try_clone().unwrap()));
        write_msg(&mut *w.lock().unwrap(), &WorkerMsg::Memory(info)).unwrap();
        let beat = Arc::new(AtomicBool::new(true));
        let hb = {
            let (w, beat) = (w.clone(), beat.clone());
            thread::spawn(move || {
                while beat.load(Ordering::Relaxed) {
                    let msg = WorkerMsg::Heartbeat { running: None };
                    if write_msg(&mut *w.lock().unwrap(), &msg).is_err() {
                        break;
                    }
                    thread::sleep(HEARTBEAT_INTERVAL);
                }
            })
        };
        let mut peers = Peers::new(host, Some((id, segment)), secret);
        let mut ran = 0;
        while let Ok(msg) = read_msg::<_, AgentMsg>(&mut s) {
            match msg {
                AgentMsg::Run(tasks) => {
                    for t in tasks {
                        let answer = match &t.memory {
                            None => WorkerMsg::Failed {
                                task: t.task,
                                message: "no memory".into(),
                            },
                            Some(m) => {
                                let mut bufs = LocalBuffers::allocate(&m.buffers, SEGMENT).unwrap();
                                pnet_memory::run_gets(m, &mut bufs, &mut peers).unwrap();
                                for i in 0..bufs.len() {
                                    for b in bufs.bytes_mut(i) {
                                        *b = b.wrapping_add(1);
                                    }
                                }
                                bufs.check_guards().unwrap();
                                pnet_memory::run_puts(m, &bufs, &mut peers).unwrap();
                                WorkerMsg::Done {
                                    task: t.task,
                                    outputs: vec![Value::Long(1)],
                                }
                            }
                        };
                        ran += 1;
                        write_msg(&mut *w.lock().unwrap(), &answer).unwrap();
                    }
                }
                AgentMsg::Shutdown => break,
                AgentMsg::Cancel { task } => {
                    let _ = write_msg(&mut *w.lock().unwrap(), &WorkerMsg::Cancelled { task });
                }
                _ => {}
            }
        }
        beat.store(false, Ordering::Relaxed);
        let _ = hb.join();
        server.stop();
        ran
    })
}

const T: Option<Duration> = Some(Duration::from_secs(10));

#[test]
fn clients_and_jobs_use_global_memory_across_hosts() {
    let dir = TempDir::new();
    let shm = TempDir::new();
    let secret = Secret::random().unwrap();
    let rc = RuntimeConfig {
        agent: AgentConfig::new(
            pnet_topology::Plan::default(),
            PathBuf::from("/nonexistent/gspc-worker"),
        ),
        state_dir: dir.0.clone(),
        secret: secret.clone(),
        sched: SchedConfig::default(),
        stop_grace: Duration::from_millis(200),
    };
    let server = thread::spawn(move || serve(rc).expect("serve"));
    let t0 = Instant::now();
    let info = loop {
        if let Ok(t) = std::fs::read_to_string(dir.0.join(INFO_FILE)) {
            break t;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "no runtime.json");
        thread::sleep(Duration::from_millis(10));
    };
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    let addr: SocketAddr = info["address"].as_str().unwrap().parse().unwrap();
    let c = RtClient::with_secret(&dir.0.join(SOCKET_FILE), secret.clone());

    // Without workers there is no global memory.
    let e = c.mem_alloc(10).unwrap_err();
    assert!(
        e.message.contains("no worker has working memory") && e.message.contains("67108864"),
        "{e}"
    );

    let workers = [
        memory_worker(addr, secret.clone(), "wa", "host-a", shm.0.clone()),
        memory_worker(addr, secret.clone(), "wb", "host-b", shm.0.clone()),
    ];
    let t0 = Instant::now();
    while c.mem_stats().unwrap().segments < 2 {
        assert!(t0.elapsed() < Duration::from_secs(10), "no segments");
        thread::sleep(Duration::from_millis(10));
    }

    // Allocate 1000 bytes (500 in each segment), write, read back, also across the seam.
    let (handle, range) = c.mem_alloc(1000).unwrap();
    assert_eq!(range, pnet_memory::range_value(&handle, 0, 1000));
    let data: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    c.mem_write(&handle, 0, &data).unwrap();
    assert_eq!(c.mem_read(&handle, 0, 1000).unwrap(), data);
    assert_eq!(c.mem_read(&handle, 480, 40).unwrap(), data[480..520]);
    c.mem_write(&handle, 499, &[7, 7]).unwrap();
    assert_eq!(
        c.mem_read(&handle, 498, 4).unwrap(),
        vec![data[498], 7, 7, data[501]]
    );
    c.mem_write(&handle, 499, &data[499..501]).unwrap();
    assert!(c.mem_read(&handle, 0, 0).unwrap().is_empty());

    // A job gets the bytes into its buffer, adds 1 to each, and puts them back.
    let bytes = pnet_bundle::format::encode(&net("memory_getput_1000")).unwrap();
    let r = c
        .call(
            RtRequest::Submit {
                net: "mem.pnet".into(),
                bundle: bytes,
                inputs: vec![("xs".into(), vec![Value::List(vec![range])])],
            },
            T,
        )
        .unwrap();
    let RtResponse::Submitted { job } = r else {
        panic!("not submitted: {r:?}");
    };
    let r = c.call(RtRequest::Wait { job }, T).unwrap();
    let RtResponse::Outcome {
        outcome: JobOutcome::Done { tasks, .. },
        ..
    } = r
    else {
        panic!("the job did not succeed: {r:?}");
    };
    assert_eq!(tasks, 1);
    let want: Vec<u8> = data.iter().map(|b| b.wrapping_add(1)).collect();
    assert_eq!(c.mem_read(&handle, 0, 1000).unwrap(), want);

    // The status shows the memory.
    let RtResponse::Status(st) = c.call(RtRequest::Status, T).unwrap() else {
        panic!("no status");
    };
    let m = &st.memory;
    assert_eq!((m.segments, m.capacity), (2, 2 * SEGMENT));
    assert_eq!((m.allocated, m.allocations), (1000, 1));
    assert_eq!((m.bytes_got, m.bytes_put), (1000, 1000));
    let hosts: Vec<(&str, u64)> = m
        .hosts
        .iter()
        .map(|h| (h.host.as_str(), h.allocated))
        .collect();
    assert_eq!(hosts, vec![("host-a", 500), ("host-b", 500)]);

    // Errors are answers, not crashes.
    let e = c.mem_read(&handle, 990, 20).unwrap_err();
    assert!(e.message.contains("outside"), "{e}");
    let e = c.mem_write("0x42", 0, &[1]).unwrap_err();
    assert!(e.message.contains("0x42"), "{e}");
    let e = c.mem_free("0x42").unwrap_err();
    assert_eq!(e.code, "gspc-request-failed");
    c.mem_free(&handle).unwrap();
    let m = c.mem_stats().unwrap();
    assert_eq!((m.allocated, m.allocations), (0, 0));
    assert!(c.mem_read(&handle, 0, 1).is_err());

    let Ok(RtResponse::Stopped(_)) = c.call(RtRequest::Stop { wait: false }, T) else {
        panic!("no stop report");
    };
    server.join().unwrap();
    let ran: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    assert_eq!(ran, 1);
}
