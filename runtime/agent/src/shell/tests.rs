//! Tests of the shell over real sockets: fake workers (threads speaking the protocol over
//! TCP on 127.0.0.1) join a job started with [`crate::run_job_with`].

use std::io::Write as _;
use std::net::{Shutdown, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use pnet_protocol::frame::{read_msg, write_msg};
use pnet_protocol::{AgentMsg, HEARTBEAT_INTERVAL, Hello, PROTOCOL_VERSION, Secret, WorkerMsg};
use pnet_stdlib::Value;

use crate::core::tests::{net, sorted_longs, xs};
use crate::{AgentConfig, AgentError, JobOptions, StartWorkers, run_job, run_job_with};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Answer,
    /// Answer, taking this many milliseconds per task.
    Slow(u64),
    /// After this many answers: no more answers and no heartbeats (connection kept).
    SilentAfter(usize),
    /// After this many answers: close the connection.
    DropAfter(usize),
}

#[derive(Debug, Default)]
struct Report {
    refused: Option<String>,
    worker: Option<u32>,
    answered: usize,
    shutdown: bool,
}

fn hello(secret: &Secret, name: &str, protocol: u32) -> WorkerMsg {
    WorkerMsg::Hello(Hello {
        protocol,
        secret: secret.clone(),
        name: name.into(),
        host: "localhost".into(),
        pid: std::process::id(),
        capabilities: vec![],
        socket: None,
    })
}

fn fake_worker(
    addr: std::net::SocketAddr,
    secret: Secret,
    name: &str,
    protocol: u32,
    mode: Mode,
    delay: Duration,
) -> thread::JoinHandle<Report> {
    let name = name.to_string();
    thread::spawn(move || {
        thread::sleep(delay);
        let mut report = Report::default();
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_nodelay(true).unwrap();
        write_msg(&mut s, &hello(&secret, &name, protocol)).unwrap();
        match read_msg::<_, AgentMsg>(&mut s) {
            Ok(AgentMsg::Welcome { worker, .. }) => report.worker = Some(worker),
            Ok(AgentMsg::Refused { reason }) => {
                report.refused = Some(reason);
                return report;
            }
            other => panic!("unexpected answer to Hello: {other:?}"),
        }
        let w = Arc::new(Mutex::new(s.try_clone().unwrap()));
        let beat = Arc::new(AtomicBool::new(true));
        let hb = {
            let (w, beat) = (w.clone(), beat.clone());
            thread::spawn(move || {
                while beat.load(Ordering::Relaxed) {
                    if write_msg(
                        &mut *w.lock().unwrap(),
                        &WorkerMsg::Heartbeat { running: None },
                    )
                    .is_err()
                    {
                        break;
                    }
                    thread::sleep(HEARTBEAT_INTERVAL);
                }
            })
        };
        let mut silent = false;
        while let Ok(msg) = read_msg::<_, AgentMsg>(&mut s) {
            match msg {
                AgentMsg::Run(tasks) => {
                    for t in tasks {
                        match mode {
                            Mode::SilentAfter(n) if report.answered >= n => {
                                silent = true;
                                beat.store(false, Ordering::Relaxed);
                            }
                            Mode::DropAfter(n) if report.answered >= n => {
                                beat.store(false, Ordering::Relaxed);
                                let _ = s.shutdown(Shutdown::Both);
                                let _ = hb.join();
                                return report;
                            }
                            _ => {}
                        }
                        if silent {
                            continue;
                        }
                        if let Mode::Slow(ms) = mode {
                            thread::sleep(Duration::from_millis(ms));
                        }
                        let out = match t.inputs[..] {
                            [Value::Long(n)] => vec![Value::Long(n * n)],
                            _ => vec![Value::Control],
                        };
                        write_msg(
                            &mut *w.lock().unwrap(),
                            &WorkerMsg::Done {
                                task: t.task,
                                outputs: out,
                            },
                        )
                        .unwrap();
                        report.answered += 1;
                    }
                }
                AgentMsg::Shutdown => {
                    report.shutdown = true;
                    break;
                }
                AgentMsg::Cancel { task } => {
                    let _ = write_msg(&mut *w.lock().unwrap(), &WorkerMsg::Cancelled { task });
                }
                // Tasks run as they arrive, so none is ever queued to give back.
                AgentMsg::Steal { tasks } if !silent => {
                    let _ = write_msg(
                        &mut *w.lock().unwrap(),
                        &WorkerMsg::Returned {
                            tasks: Vec::new(),
                            kept: tasks,
                        },
                    );
                }
                AgentMsg::Steal { .. } | AgentMsg::Heartbeat => {}
                other => panic!("unexpected message: {other:?}"),
            }
        }
        beat.store(false, Ordering::Relaxed);
        let _ = hb.join();
        report
    })
}

/// A private temporary directory (mode 700), removed on drop.
pub(super) struct TempDir(pub(super) PathBuf);

impl TempDir {
    pub(super) fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "pnet-agent-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
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

fn config() -> AgentConfig {
    AgentConfig::new(
        pnet_topology::Plan::default(),
        PathBuf::from("/nonexistent/gspc-worker"),
    )
}

type Workers = mpsc::Receiver<Vec<thread::JoinHandle<Report>>>;

/// Options with `n` fake workers joining as soon as the agent listens.
fn with_fakes(
    specs: Vec<(&'static str, u32, Mode)>,
    expected: usize,
    stagger: Duration,
) -> (JobOptions, Workers) {
    let secret = Secret::random().unwrap();
    let (tx, rx) = mpsc::channel();
    let s2 = secret.clone();
    let options = JobOptions {
        secret: Some(secret),
        on_listen: Some(Box::new(move |addr| {
            let hs = specs
                .into_iter()
                .enumerate()
                .map(|(k, (name, proto, mode))| {
                    let secret = if name.starts_with("bad-secret") {
                        Secret::random().unwrap()
                    } else {
                        s2.clone()
                    };
                    let delay = stagger * k as u32;
                    fake_worker(addr, secret, name, proto, mode, delay)
                })
                .collect();
            tx.send(hs).unwrap();
        })),
        external_workers: expected,
        ..JobOptions::default()
    };
    (options, rx)
}

fn reports(rx: Workers) -> Vec<Report> {
    rx.recv()
        .unwrap()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect()
}

#[test]
fn tcp_workers_run_a_job_with_trace_and_log() {
    let dir = TempDir::new();
    let b = net("square");
    let mut cfg = config();
    cfg.trace = Some(dir.0.join("trace.json"));
    cfg.log = Some(dir.0.join("events.log"));
    let (opts, rx) = with_fakes(
        vec![
            ("w-a", PROTOCOL_VERSION, Mode::Slow(1)),
            ("w-b", PROTOCOL_VERSION, Mode::Slow(1)),
        ],
        2,
        Duration::ZERO,
    );
    let r = run_job_with(&b, &xs(0..300), &cfg, opts).expect("job");
    assert_eq!(
        sorted_longs(&r, "ys"),
        (0..300).map(|x| x * x).collect::<Vec<_>>()
    );
    let reps = reports(rx);
    assert!(reps.iter().all(|r| r.shutdown), "{reps:?}");
    assert_eq!(reps.iter().map(|r| r.answered).sum::<usize>(), 300);
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.0.join("trace.json")).unwrap()).unwrap();
    let ev = trace["traceEvents"].as_array().unwrap();
    let lanes: Vec<&str> = ev
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(lanes.len(), 2);
    assert!(lanes.contains(&"w-a") && lanes.contains(&"w-b"));
    let tasks: Vec<&serde_json::Value> = ev.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(tasks.len(), 300);
    assert!(tasks.iter().all(|t| t["name"] == "square"
        && t["args"]["module"] == "arith.square"
        && t["args"]["outcome"] == "done"));
    let log = std::fs::read_to_string(dir.0.join("events.log")).unwrap();
    assert!(log.contains("`w-a` joined"), "{log}");
    assert!(log.contains("the job ended"), "{log}");
}

#[test]
fn refuses_a_wrong_secret_and_a_wrong_protocol() {
    let dir = TempDir::new();
    let b = net("square");
    let mut cfg = config();
    cfg.log = Some(dir.0.join("events.log"));
    let (opts, rx) = with_fakes(
        vec![
            ("bad-secret", PROTOCOL_VERSION, Mode::Answer),
            ("old", 99, Mode::Answer),
            ("good", PROTOCOL_VERSION, Mode::Answer),
        ],
        1,
        Duration::from_millis(30),
    );
    let r = run_job_with(&b, &xs(0..10), &cfg, opts).expect("job");
    assert_eq!(sorted_longs(&r, "ys").len(), 10);
    let reps = reports(rx);
    let bad = reps[0].refused.as_deref().unwrap_or_default();
    assert!(
        bad.starts_with("wrong secret from worker `bad-secret`"),
        "{bad}"
    );
    let old = reps[1].refused.as_deref().unwrap_or_default();
    assert!(
        old.starts_with(&format!(
            "protocol version 99 is not supported: this agent speaks version {PROTOCOL_VERSION}"
        )),
        "{old}"
    );
    assert_eq!(reps[2].answered, 10);
    let log = std::fs::read_to_string(dir.0.join("events.log")).unwrap();
    assert!(log.contains("refused a worker from 127.0.0.1:"), "{log}");
}

#[test]
fn a_silent_worker_is_lost_and_its_tasks_run_elsewhere() {
    let b = net("square");
    let (opts, rx) = with_fakes(
        vec![
            ("quiet", PROTOCOL_VERSION, Mode::SilentAfter(3)),
            ("steady", PROTOCOL_VERSION, Mode::Answer),
        ],
        2,
        // So that the quiet one surely gets work first.
        Duration::from_millis(50),
    );
    let mut cfg = config();
    cfg.verbose = true;
    let t = std::time::Instant::now();
    let r = run_job_with(&b, &xs(0..100), &cfg, opts).expect("job");
    assert_eq!(
        sorted_longs(&r, "ys"),
        (0..100).map(|x| x * x).collect::<Vec<_>>()
    );
    assert!(
        t.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        t.elapsed()
    );
    let reps = reports(rx);
    assert_eq!(reps[0].answered, 3);
    assert_eq!(reps[1].answered, 97);
}

#[test]
fn a_dropped_connection_s_tasks_run_elsewhere() {
    let b = net("square");
    let (opts, rx) = with_fakes(
        vec![
            ("flaky", PROTOCOL_VERSION, Mode::DropAfter(5)),
            ("steady", PROTOCOL_VERSION, Mode::Answer),
        ],
        2,
        Duration::from_millis(50),
    );
    let r = run_job_with(&b, &xs(0..200), &config(), opts).expect("job");
    assert_eq!(
        sorted_longs(&r, "ys"),
        (0..200).map(|x| x * x).collect::<Vec<_>>()
    );
    let reps = reports(rx);
    assert_eq!(reps[0].answered + reps[1].answered, 200);
}

#[test]
fn control_socket_put_token_status_and_workflow_response() {
    let dir = TempDir::new();
    let sock = dir.0.join("ctl.sock");
    let b = net("response");
    let mut cfg = config();
    cfg.control = Some(sock.clone());
    let job = {
        let cfg = cfg.clone();
        thread::spawn(move || run_job(&b, &[], &cfg))
    };
    // The net has put_token places: with a control socket it waits for its clients.
    for _ in 0..200 {
        if sock.exists() {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let st = crate::control::status(&sock).expect("status");
    assert!(st.workers.is_empty());
    let v = crate::control::workflow_response(&sock, "req", &Value::Long(9)).expect("response");
    assert_eq!(v, Value::Long(10));
    let e = crate::control::put_token(&sock, "nope", &Value::Long(1)).unwrap_err();
    assert_eq!(
        e,
        "bad input: no put_token place `nope` (the root net's put_token places: req (any))"
    );
    crate::control::close(&sock).expect("close");
    let r = job.join().unwrap().expect("job");
    assert!(r.outputs.is_empty());
    assert!(!sock.exists(), "the socket is removed at the end");
}

#[test]
fn control_cancel_ends_the_job() {
    let dir = TempDir::new();
    let sock = dir.0.join("ctl.sock");
    let b = net("square_wait_for_output");
    let mut cfg = config();
    cfg.control = Some(sock.clone());
    let (opts, rx) = with_fakes(
        vec![("w", PROTOCOL_VERSION, Mode::Answer)],
        1,
        Duration::ZERO,
    );
    let job = {
        let cfg = cfg.clone();
        thread::spawn(move || run_job_with(&b, &[], &cfg, opts))
    };
    let mut ok = false;
    for _ in 0..200 {
        if crate::control::put_token(&sock, "xs", &Value::Long(3)).is_ok() {
            ok = true;
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    assert!(ok, "put_token through the control socket");
    // The net waits for output: its `ys` got 9, so the job ends by itself.
    let r = job.join().unwrap().expect("job");
    assert_eq!(sorted_longs(&r, "ys"), vec![9]);
    assert_eq!(reports(rx)[0].answered, 1);

    // Now one that is cancelled while it waits.
    let b = net("square_wait_for_output");
    let (opts, rx) = with_fakes(
        vec![("w", PROTOCOL_VERSION, Mode::Answer)],
        1,
        Duration::ZERO,
    );
    let job = thread::spawn(move || run_job_with(&b, &[], &cfg, opts));
    let mut ok = false;
    for _ in 0..200 {
        if crate::control::status(&sock).is_ok_and(|s| s.workers.len() == 1) {
            ok = crate::control::cancel(&sock).is_ok();
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    assert!(ok, "cancel through the control socket");
    let e = job.join().unwrap().unwrap_err();
    assert!(matches!(e, AgentError::Cancelled), "{e}");
    assert!(reports(rx)[0].shutdown);
}

/// Runs `client` against a job-mode control socket whose owner is `owner`, and returns the
/// shell events it caused with the client's result.
fn control_events(
    owner: u32,
    client: impl FnOnce(PathBuf) -> Result<(), String> + Send + 'static,
) -> (Vec<super::ShellEvent>, Result<(), String>) {
    let dir = TempDir::new();
    let sock = dir.0.join("ctl.sock");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let server = rt
        .block_on(async { super::control_socket::bind_control(&sock, tx, None, owner) })
        .unwrap();
    let client = thread::spawn(move || client(sock));
    let mut events = Vec::new();
    rt.block_on(async {
        let t = std::time::Instant::now();
        while !client.is_finished() && t.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(e)) = tokio::time::timeout(Duration::from_millis(10), rx.recv()).await {
                // Answer a request as the hub would.
                if let super::ShellEvent::ClientOpened { tx, .. } = &e {
                    let _ = tx.send(pnet_protocol::frame::encode(&crate::control::Response::Ok));
                }
                events.push(e);
            }
        }
    });
    drop(server);
    (events, client.join().unwrap())
}

#[test]
fn a_control_client_of_another_user_is_refused() {
    let me = crate::control::current_uid();
    // The socket belongs to another user (injected: we cannot become one): we are refused
    // before our request is read, and the refusal is logged.
    let other = me.wrapping_add(4242);
    let (events, r) = control_events(other, |sock| crate::control::cancel(&sock));
    let e = r.unwrap_err();
    let expected = format!(
        "this socket serves {} only; the peer is {}",
        crate::control::user_name(other),
        crate::control::user_name(me)
    );
    assert_eq!(e, expected);
    assert_eq!(events.len(), 1);
    match &events[0] {
        super::ShellEvent::ClientRefused { reason } => assert_eq!(*reason, expected),
        _ => panic!("expected a refusal"),
    }
    // Our own socket serves us.
    let (events, r) = control_events(me, |sock| crate::control::cancel(&sock));
    r.unwrap();
    assert!(events.iter().any(|e| matches!(
        e,
        super::ShellEvent::Control {
            request: crate::control::Request::Cancel,
            ..
        }
    )));
}

#[test]
fn control_socket_in_a_shared_directory_is_refused() {
    let dir = TempDir::new();
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cfg = config();
    cfg.control = Some(dir.0.join("ctl.sock"));
    let e = run_job(&net("response"), &[], &cfg).unwrap_err();
    assert_eq!(e.code(), "agent-setup");
    assert!(
        e.to_string()
            .contains("is writable by other users (mode 777)"),
        "{e}"
    );
    // A file that is not a socket is not replaced.
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::File::create(dir.0.join("ctl.sock"))
        .unwrap()
        .write_all(b"x")
        .unwrap();
    let e = run_job(&net("response"), &[], &cfg).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("the file exists and is not a socket"),
        "{e}"
    );
}

#[test]
fn nets_without_modules_start_no_workers() {
    let mut cfg = config();
    cfg.plan = pnet_topology::plan(
        &pnet_topology::default_topology(2),
        &["localhost".to_string()],
    );
    assert_eq!(cfg.plan.workers.len(), 2);
    // The worker program does not exist, but no worker is needed.
    let r = run_job(&net("response"), &[], &cfg).expect("job");
    assert!(r.outputs.is_empty());
    cfg.start_workers = StartWorkers::Always;
    let e = run_job(&net("response"), &[], &cfg).unwrap_err();
    assert_eq!(e.code(), "agent-setup");
    assert!(
        e.to_string().starts_with("cannot start worker `worker-localhost-0` on `localhost` through the local launcher (/nonexistent/gspc-worker)"),
        "{e}"
    );
}

#[test]
fn workers_that_die_before_joining_are_named() {
    let mut cfg = config();
    cfg.plan = pnet_topology::plan(
        &pnet_topology::default_topology(2),
        &["localhost".to_string()],
    );
    // A "worker" that reads the secret and exits.
    let dir = TempDir::new();
    let prog = dir.0.join("fake-worker");
    std::fs::write(&prog, "#!/bin/sh\nread s\nexit 3\n").unwrap();
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    cfg.worker_program = prog;
    let t = std::time::Instant::now();
    let e = run_job(&net("square"), &xs(0..3), &cfg).unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(e.code(), "agent-no-worker");
    let m = e.to_string();
    assert!(
        m.contains("no worker has joined (2 started worker(s) exited before joining: `worker-localhost-0` ("),
        "{m}"
    );
}
