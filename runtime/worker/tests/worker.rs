//! Integration tests: the real `gspc-worker` binary against a fake agent on 127.0.0.1.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use pnet_memory::{BufferSpec, Copy, MemoryTask, Peers, Segment, SegmentInfo, Server};
use pnet_protocol::frame::{self, encode};
use pnet_protocol::{AgentMsg, ModuleDef, PROTOCOL_VERSION, Secret, TaskRun, WorkerMsg};
use pnet_stdlib::{Type, Value};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, tcp};
use tokio::process::{Child, Command};

type Reader =
    tokio_util::codec::FramedRead<tcp::OwnedReadHalf, tokio_util::codec::LengthDelimitedCodec>;
type Writer =
    tokio_util::codec::FramedWrite<tcp::OwnedWriteHalf, tokio_util::codec::LengthDelimitedCodec>;

const WAIT: Duration = Duration::from_secs(20);

/// A fresh directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "pnet-worker-it-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn script(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn path(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The directory holding the example native modules (`libnoop.so`, `libarith.so`), building
/// them first if they are missing.
fn native_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| pnet_tests::build_packages(&["pnet-example-arith", "pnet-example-noop"]))
}

fn def(
    id: u32,
    module: &str,
    function: &str,
    inputs: &[(&str, Type)],
    outputs: &[(&str, Type)],
) -> ModuleDef {
    ModuleDef {
        id,
        module: module.into(),
        function: function.into(),
        target: None,
        inputs: inputs
            .iter()
            .map(|(n, t)| (n.to_string(), t.clone()))
            .collect(),
        outputs: outputs
            .iter()
            .map(|(n, t)| (n.to_string(), t.clone()))
            .collect(),
        pass_context: false,
        location: "test.xpnet:1:1".into(),
    }
}

struct Agent {
    listener: TcpListener,
    secret: Secret,
}

struct Worker {
    child: Child,
    reader: Reader,
    writer: Writer,
    /// The task logs received: (task, text, bytes dropped).
    logs: Vec<(u64, String, u64)>,
}

impl Agent {
    async fn new() -> Agent {
        Agent {
            listener: TcpListener::bind("127.0.0.1:0").await.unwrap(),
            secret: Secret::random().unwrap(),
        }
    }

    /// Starts a worker (secret on stdin, `--exit-on-stdin-eof`), with extra arguments.
    async fn spawn(&self, extra: &[&str]) -> Child {
        let addr = self.listener.local_addr().unwrap().to_string();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gspc-worker"));
        cmd.args(["--agent", &addr, "--name", "w-1", "--capabilities", "A,B"])
            .args(["--secret-stdin", "--exit-on-stdin-eof"])
            .args(extra)
            .env_remove("PNET_MODULE_PATH")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let line = format!("{}\n", self.secret.to_hex());
        let stdin = child.stdin.as_mut().unwrap();
        tokio::io::AsyncWriteExt::write_all(stdin, line.as_bytes())
            .await
            .unwrap();
        child
    }

    async fn accept(&self) -> (Reader, Writer) {
        let (stream, _) = tokio::time::timeout(WAIT, self.listener.accept())
            .await
            .expect("the worker did not connect")
            .unwrap();
        stream.set_nodelay(true).unwrap();
        let (r, w) = stream.into_split();
        (frame::reader(r), frame::writer(w))
    }

    /// Starts a worker and completes the handshake.
    async fn worker(&self, modules: Vec<ModuleDef>, module_path: Vec<String>) -> Worker {
        self.worker_with(&[], modules, module_path).await
    }

    /// Starts a worker with extra arguments and completes the handshake.
    async fn worker_with(
        &self,
        extra: &[&str],
        modules: Vec<ModuleDef>,
        module_path: Vec<String>,
    ) -> Worker {
        let child = self.spawn(extra).await;
        let (mut reader, mut writer) = self.accept().await;
        let hello: WorkerMsg = frame::recv(&mut reader).await.unwrap();
        let WorkerMsg::Hello(hello) = hello else {
            panic!("expected hello, got {hello:?}");
        };
        assert!(hello.secret.matches(&self.secret));
        frame::send(
            &mut writer,
            &AgentMsg::Welcome {
                worker: 1,
                modules,
                module_path,
            },
        )
        .await
        .unwrap();
        Worker {
            child,
            reader,
            writer,
            logs: Vec::new(),
        }
    }
}

impl Worker {
    async fn send(&mut self, msg: AgentMsg) {
        frame::send(&mut self.writer, &msg).await.unwrap();
    }

    /// The next message that is not a heartbeat or a task log (answering heartbeats
    /// meanwhile, keeping the logs), answers without their times.
    async fn next(&mut self) -> WorkerMsg {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg: WorkerMsg = tokio::time::timeout(left, frame::recv(&mut self.reader))
                .await
                .expect("no answer from the worker")
                .unwrap();
            match msg {
                WorkerMsg::Heartbeat { .. } => self.send(AgentMsg::Heartbeat).await,
                WorkerMsg::Log {
                    task,
                    text,
                    dropped,
                } => self.logs.push((task, text, dropped)),
                m => return m.split_times().0,
            }
        }
    }

    async fn run(&mut self, task: u64, module: u32, inputs: Vec<Value>) -> WorkerMsg {
        self.run_mem(task, module, inputs, None).await
    }

    async fn run_mem(
        &mut self,
        task: u64,
        module: u32,
        inputs: Vec<Value>,
        memory: Option<MemoryTask>,
    ) -> WorkerMsg {
        self.send(AgentMsg::Run(vec![TaskRun {
            task,
            module,
            inputs,
            memory,
        }]))
        .await;
        self.next().await
    }

    /// Waits for the worker to exit; its exit code and standard error.
    async fn exit(mut self) -> (i32, String) {
        exit_of(&mut self.child).await
    }
}

async fn exit_of(child: &mut Child) -> (i32, String) {
    // tokio's `wait` closes stdin first: keep it open, so that the worker does not see EOF.
    let _stdin = child.stdin.take();
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("the worker did not exit")
        .unwrap();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).await.unwrap();
    }
    (status.code().unwrap_or(-1), err)
}

/// Whether process `pid` exists and is not a zombie (a container's init may not reap the
/// orphans of a killed worker).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits up to 5 s for `pid` to be gone (or a zombie): SIGKILL is delivered asynchronously,
/// so a loaded machine may show a killed process for a moment after its killer answered.
async fn gone_soon(pid: i32, what: &str) {
    let killed = Instant::now();
    while alive(pid) {
        assert!(killed.elapsed() < Duration::from_secs(5), "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn handshake_and_shutdown() {
    let agent = Agent::new().await;
    let mut child = agent.spawn(&[]).await;
    let (mut reader, mut writer) = agent.accept().await;
    let WorkerMsg::Hello(hello) = frame::recv(&mut reader).await.unwrap() else {
        panic!("expected hello");
    };
    assert_eq!(hello.protocol, PROTOCOL_VERSION);
    assert_eq!(hello.name, "w-1");
    assert_eq!(hello.capabilities, ["A", "B"]);
    assert_eq!(hello.pid, child.id().unwrap());
    assert_eq!(hello.socket, None);
    assert!(hello.secret.matches(&agent.secret));
    frame::send(
        &mut writer,
        &AgentMsg::Welcome {
            worker: 4,
            modules: vec![],
            module_path: vec![],
        },
    )
    .await
    .unwrap();
    // Heartbeats flow, with nothing running.
    let hb: WorkerMsg = frame::recv(&mut reader).await.unwrap();
    assert_eq!(hb, WorkerMsg::Heartbeat { running: None });
    frame::send(&mut writer, &AgentMsg::Shutdown).await.unwrap();
    let (code, err) = exit_of(&mut child).await;
    assert_eq!((code, err.as_str()), (0, ""));
}

#[tokio::test]
async fn refusal_exits_with_code_3_and_the_reason() {
    let agent = Agent::new().await;
    let mut child = agent.spawn(&[]).await;
    let (mut reader, mut writer) = agent.accept().await;
    let _hello: WorkerMsg = frame::recv(&mut reader).await.unwrap();
    frame::send(
        &mut writer,
        &AgentMsg::Refused {
            reason: "wrong secret".into(),
        },
    )
    .await
    .unwrap();
    drop(writer);
    let (code, err) = exit_of(&mut child).await;
    assert_eq!(code, 3);
    assert_eq!(err, "gspc-worker w-1: refused by the agent: wrong secret\n");
}

#[tokio::test]
async fn another_protocol_is_a_refusal() {
    let agent = Agent::new().await;
    let mut child = agent.spawn(&[]).await;
    let (mut reader, writer) = agent.accept().await;
    let _hello: WorkerMsg = frame::recv(&mut reader).await.unwrap();
    // A frame that is no AgentMsg of this version (an unknown variant).
    let mut w = writer;
    w.send(bytes::Bytes::from_static(&[77, 1, 2]))
        .await
        .unwrap();
    let (code, err) = exit_of(&mut child).await;
    assert_eq!(code, 3);
    assert!(
        err.starts_with(
            "gspc-worker w-1: refused by the agent: the agent's answer does not decode"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn missing_secret_and_bad_arguments() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gspc-worker"))
        .args(["--agent", "127.0.0.1:1", "--name", "x"])
        .env_remove("GSPC_SECRET")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "gspc-worker x: error: no secret: pass --secret-stdin or set GSPC_SECRET\n"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gspc-worker"))
        .args(["--agent", "127.0.0.1:1", "--name", "x"])
        .env("GSPC_SECRET", "ab".repeat(32))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("gspc-worker x: error: cannot connect to 127.0.0.1:1: "),
        "{err}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gspc-worker"))
        .args(["--agent", "127.0.0.1:1", "--name", "x", "--socket", "999"])
        .env("GSPC_SECRET", "ab".repeat(32))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("gspc-worker x: error: ") && err.contains("socket 999"),
        "{err}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gspc-worker"))
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--module-path <DIR>"), "{help}");
    assert!(help.contains("--shm <BYTES>"), "{help}");
    assert!(help.contains("--host-id <NAME>"), "{help}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gspc-worker"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test]
async fn task_logs_and_times() {
    let dir = TempDir::new();
    dir.script(
        "talk",
        "#!/bin/sh\ncat >/dev/null\ncase \"$1\" in\n  \
         say) echo 'step 1'; echo 'step 2'; echo 'careful' >&2; echo '{\"r\": 5}' ;;\n  \
         json) printf '{\\n  \"r\": 6\\n}\\n' ;;\n  \
         slow) sleep 0.2; echo '{}' ;;\n  \
         fail) echo 'step 1'; echo 'it broke' >&2; exit 4 ;;\nesac\n",
    );
    let modules = vec![
        def(0, "talk", "say", &[], &[("r", Type::Long)]),
        def(1, "talk", "json", &[], &[("r", Type::Long)]),
        def(2, "talk", "slow", &[], &[]),
        def(3, "talk", "fail", &[], &[]),
    ];
    let agent = Agent::new().await;
    let mut w = agent.worker(modules, vec![dir.path()]).await;
    // The lines before the answer and the standard error go to the task's log.
    assert_eq!(
        w.run(1, 0, vec![]).await,
        WorkerMsg::Done {
            task: 1,
            outputs: vec![Value::Long(5)]
        }
    );
    assert_eq!(
        w.logs,
        vec![(1, "step 1\nstep 2\ncareful\n".to_string(), 0)]
    );
    // An answer over several lines is still one answer, with nothing to log.
    assert_eq!(
        w.run(2, 1, vec![]).await,
        WorkerMsg::Done {
            task: 2,
            outputs: vec![Value::Long(6)]
        }
    );
    assert_eq!(w.logs.len(), 1);
    // A failing command's output is logged too.
    assert!(matches!(
        w.run(3, 3, vec![]).await,
        WorkerMsg::Failed { task: 3, .. }
    ));
    assert_eq!(w.logs[1], (3, "it broke\n".to_string(), 0));
    // Two tasks in one batch: the worker reports when each started (after the receipt of
    // the batch) and how long it ran.
    w.send(AgentMsg::Run(
        (10..12)
            .map(|task| TaskRun {
                task,
                module: 2,
                inputs: vec![],
                memory: None,
            })
            .collect(),
    ))
    .await;
    let mut times = Vec::new();
    while times.len() < 2 {
        let msg: WorkerMsg = tokio::time::timeout(WAIT, frame::recv(&mut w.reader))
            .await
            .unwrap()
            .unwrap();
        match msg {
            WorkerMsg::DoneAt { task, times: t, .. } => times.push((task, t)),
            WorkerMsg::Heartbeat { .. } => w.send(AgentMsg::Heartbeat).await,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((times[0].0, times[1].0), (10, 11));
    let (a, b) = (times[0].1, times[1].1);
    assert!(a.queued_us < 100_000, "{a:?}");
    assert!(a.run_us >= 200_000 && b.run_us >= 200_000, "{a:?} {b:?}");
    // The second waited for the first.
    assert!(b.queued_us >= a.queued_us + a.run_us, "{a:?} {b:?}");
    assert!(b.queued_us < a.queued_us + a.run_us + 50_000, "{a:?} {b:?}");
    w.send(AgentMsg::Shutdown).await;
    assert_eq!(w.exit().await.0, 0);
}

#[tokio::test]
async fn command_modules() {
    let dir = TempDir::new();
    dir.script(
        "shout.upper",
        "#!/usr/bin/env python3\nimport json, os, sys\n\
         inputs = json.load(sys.stdin)\n\
         print(json.dumps({'r': inputs['s'].upper(), 'who': os.environ['PNET_WORKER'] + '/' + \
         os.environ['PNET_TASK']}))\n",
    );
    dir.script(
        "calc",
        "#!/bin/sh\ncase \"$1\" in\n  one) cat >/dev/null; echo '{\"r\": 1}' ;;\n  \
         bad) cat >/dev/null; echo '{\"r\": \"x\"}' ;;\n  \
         fail) echo 'something broke' >&2; exit 4 ;;\nesac\n",
    );
    let modules = vec![
        def(
            0,
            "shout",
            "upper",
            &[("s", Type::String)],
            &[("r", Type::String), ("who", Type::String)],
        ),
        def(1, "calc", "one", &[], &[("r", Type::Long)]),
        def(2, "calc", "bad", &[], &[("r", Type::Long)]),
        def(3, "calc", "fail", &[], &[]),
        def(4, "nowhere", "f", &[], &[]),
    ];
    let agent = Agent::new().await;
    let mut w = agent.worker(modules, vec![dir.path()]).await;
    assert_eq!(
        w.run(10, 0, vec![Value::string("héllo")]).await,
        WorkerMsg::Done {
            task: 10,
            outputs: vec![Value::string("HÉLLO"), Value::string("w-1/10")]
        }
    );
    assert_eq!(
        w.run(11, 1, vec![]).await,
        WorkerMsg::Done {
            task: 11,
            outputs: vec![Value::Long(1)]
        }
    );
    assert_eq!(
        w.run(12, 2, vec![]).await,
        WorkerMsg::Failed {
            task: 12,
            message: "test.xpnet:1:1: module calc.bad: outputs.r: expected an integer (long), \
                      found the string \"x\""
                .into()
        }
    );
    assert_eq!(
        w.run(13, 3, vec![]).await,
        WorkerMsg::Failed {
            task: 13,
            message: format!(
                "test.xpnet:1:1: module calc.fail: {}/calc exited with status 4; stderr:\n\
                 something broke",
                dir.path()
            )
        }
    );
    assert_eq!(
        w.run(14, 4, vec![]).await,
        WorkerMsg::Failed {
            task: 14,
            message: format!(
                "test.xpnet:1:1: module nowhere.f: not found: no libnowhere.so, executable \
                 nowhere.f or executable nowhere; searched {}",
                dir.path()
            )
        }
    );
    w.send(AgentMsg::Shutdown).await;
    assert_eq!(w.exit().await.0, 0);
}

#[tokio::test]
async fn native_modules() {
    let modules = vec![
        def(
            0,
            "arith",
            "square",
            &[("n", Type::Long)],
            &[("r", Type::Long)],
        ),
        def(
            1,
            "arith",
            "div",
            &[("a", Type::Long), ("b", Type::Long)],
            &[("q", Type::Long)],
        ),
        def(
            2,
            "noop",
            "run",
            &[("x", Type::Control)],
            &[("y", Type::Control)],
        ),
        def(3, "arith", "cube", &[], &[]),
        def(
            4,
            "arith",
            "square",
            &[("n", Type::Long)],
            &[("r", Type::Int)],
        ),
    ];
    let agent = Agent::new().await;
    let mut w = agent
        .worker(modules, vec![native_dir().display().to_string()])
        .await;
    assert_eq!(
        w.run(1, 0, vec![Value::Long(-12)]).await,
        WorkerMsg::Done {
            task: 1,
            outputs: vec![Value::Long(144)]
        }
    );
    assert_eq!(
        w.run(2, 1, vec![Value::Long(7), Value::Long(2)]).await,
        WorkerMsg::Done {
            task: 2,
            outputs: vec![Value::Long(3)]
        }
    );
    assert_eq!(
        w.run(3, 1, vec![Value::Long(7), Value::Long(0)]).await,
        WorkerMsg::Failed {
            task: 3,
            message: "test.xpnet:1:1: module arith.div: division by zero (7 / 0)".into()
        }
    );
    assert_eq!(
        w.run(4, 2, vec![Value::Control]).await,
        WorkerMsg::Done {
            task: 4,
            outputs: vec![Value::Control]
        }
    );
    assert_eq!(
        w.run(5, 3, vec![]).await,
        WorkerMsg::Failed {
            task: 5,
            message: format!(
                "test.xpnet:1:1: module arith.cube: {}/libarith.so has no function `cube` (it \
                 has: square, div, spin, fill, digest)",
                native_dir().display()
            )
        }
    );
    assert_eq!(
        w.run(6, 4, vec![Value::Long(1 << 20)]).await,
        WorkerMsg::Failed {
            task: 6,
            message: "test.xpnet:1:1: module arith.square: outputs.r: expected int, found \
                      1099511627776 (out of range)"
                .into()
        }
    );
    assert_eq!(
        w.run(7, 0, vec![Value::Long(1 << 40)]).await,
        WorkerMsg::Failed {
            task: 7,
            message: "test.xpnet:1:1: module arith.square: square of 1099511627776 overflows a \
                      long"
                .into()
        }
    );
    // Inputs that do not match the ports.
    assert_eq!(
        w.run(8, 0, vec![]).await,
        WorkerMsg::Failed {
            task: 8,
            message: "test.xpnet:1:1: module arith.square: got 0 input values for 1 input ports"
                .into()
        }
    );
    drop(w.writer);
    assert_eq!(exit_of(&mut w.child).await.0, 0);
}

#[tokio::test]
async fn cancellation() {
    let dir = TempDir::new();
    let pid_file = dir.0.join("pid");
    dir.script(
        "slow.sleep",
        &format!(
            "#!/bin/sh\necho $$ > {}\nsleep 30\necho '{{}}'\n",
            pid_file.display()
        ),
    );
    let modules = vec![
        def(0, "slow", "sleep", &[], &[]),
        def(
            1,
            "arith",
            "spin",
            &[("ms", Type::Long)],
            &[("done", Type::Control)],
        ),
    ];
    let agent = Agent::new().await;
    let mut w = agent
        .worker(
            modules,
            vec![dir.path(), native_dir().display().to_string()],
        )
        .await;
    let t = |task, module, inputs| TaskRun {
        task,
        module,
        inputs,
        memory: None,
    };
    // A running command module and two queued tasks.
    w.send(AgentMsg::Run(vec![
        t(1, 0, vec![]),
        t(2, 0, vec![]),
        t(3, 1, vec![Value::Long(30_000)]),
    ]))
    .await;
    // Wait until task 1 runs (its script wrote its pid).
    let start = Instant::now();
    while std::fs::read_to_string(&pid_file).map_or(true, |s| s.trim().is_empty()) {
        assert!(start.elapsed() < WAIT, "the command module did not start");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    w.send(AgentMsg::Cancel { task: 2 }).await;
    assert_eq!(w.next().await, WorkerMsg::Cancelled { task: 2 });
    let cancelled_at = Instant::now();
    w.send(AgentMsg::Cancel { task: 1 }).await;
    assert_eq!(w.next().await, WorkerMsg::Cancelled { task: 1 });
    assert!(cancelled_at.elapsed() < Duration::from_secs(5));
    // The script (and its sleep) are gone.
    gone_soon(pid, "the script survived its cancel").await;
    // The native spin runs next; cancel it once the heartbeat says it runs.
    loop {
        let msg: WorkerMsg = frame::recv(&mut w.reader).await.unwrap();
        if msg == (WorkerMsg::Heartbeat { running: Some(3) }) {
            break;
        }
    }
    w.send(AgentMsg::Cancel { task: 3 }).await;
    assert_eq!(w.next().await, WorkerMsg::Cancelled { task: 3 });
    // Cancelling an unknown task is ignored; the worker goes on.
    w.send(AgentMsg::Cancel { task: 99 }).await;
    assert_eq!(
        w.run(4, 1, vec![Value::Long(0)]).await,
        WorkerMsg::Done {
            task: 4,
            outputs: vec![Value::Control]
        }
    );
    w.send(AgentMsg::Shutdown).await;
    assert_eq!(w.exit().await.0, 0);
}

#[tokio::test]
async fn exits_when_the_agent_goes_away_or_goes_silent() {
    let agent = Agent::new().await;
    // Connection closed.
    let w = agent.worker(vec![], vec![]).await;
    let Worker {
        mut child,
        reader,
        writer,
        ..
    } = w;
    drop((reader, writer));
    let (code, _err) = exit_of(&mut child).await;
    assert_eq!(code, 0);
    // Silent: the connection stays open but nothing comes.
    let mut w = agent.worker(vec![], vec![]).await;
    let start = Instant::now();
    let (code, err) = exit_of(&mut w.child).await;
    assert_eq!(code, 1, "{err}");
    // It waits longer than the agent does for a worker (a slow agent keeps its workers).
    assert!(start.elapsed() >= pnet_protocol::AGENT_SILENCE_TIMEOUT);
    assert!(
        err.starts_with("gspc-worker w-1: error: the agent has been silent for"),
        "{err}"
    );
}

#[tokio::test]
async fn exits_on_stdin_eof_and_sigterm_killing_the_running_command() {
    let agent = Agent::new().await;
    let mut w = agent.worker(vec![], vec![]).await;
    drop(w.child.stdin.take());
    assert_eq!(w.exit().await, (0, String::new()));

    let dir = TempDir::new();
    let pid_file = dir.0.join("pid");
    dir.script(
        "slow.sleep",
        &format!("#!/bin/sh\necho $$ > {}\nsleep 30\n", pid_file.display()),
    );
    let mut w = agent
        .worker(vec![def(0, "slow", "sleep", &[], &[])], vec![dir.path()])
        .await;
    w.send(AgentMsg::Run(vec![TaskRun {
        task: 1,
        module: 0,
        inputs: vec![],
        memory: None,
    }]))
    .await;
    let start = Instant::now();
    while std::fs::read_to_string(&pid_file).map_or(true, |s| s.trim().is_empty()) {
        assert!(start.elapsed() < WAIT, "the command module did not start");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let worker_pid = w.child.id().unwrap() as i32;
    // SAFETY: plain system call on our child.
    unsafe { libc::kill(worker_pid, libc::SIGTERM) };
    assert_eq!(w.exit().await, (0, String::new()));
    // The worker killed the command's group (SIGKILL) before it exited: it is gone, or a
    // zombie left to init (on a loaded machine it may still show for a moment after).
    gone_soon(pid, "the command survived the worker's SIGTERM").await;
}

/// How many no-op native tasks per second one worker completes when the agent keeps 256 in
/// flight (printed; run with `--nocapture` to see it).
#[tokio::test]
async fn throughput_of_noop_tasks() {
    // PNET_THROUGHPUT_TASKS overrides the count, for measurements.
    let total: u64 = std::env::var("PNET_THROUGHPUT_TASKS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    const WINDOW: u64 = 256;
    let agent = Agent::new().await;
    let w = agent
        .worker(
            vec![def(
                0,
                "noop",
                "run",
                &[("x", Type::Control)],
                &[("y", Type::Control)],
            )],
            vec![native_dir().display().to_string()],
        )
        .await;
    let Worker {
        mut child,
        mut reader,
        mut writer,
        ..
    } = w;
    let task = |id| TaskRun {
        task: id,
        module: 0,
        inputs: vec![Value::Control],
        memory: None,
    };
    let start = Instant::now();
    let mut sent = 0;
    let mut done = 0;
    let initial: Vec<TaskRun> = (0..WINDOW.min(total)).map(task).collect();
    sent += initial.len() as u64;
    writer.send(encode(&AgentMsg::Run(initial))).await.unwrap();
    while done < total {
        // Take what is ready and top the window up with one batch.
        let mut finished = 0;
        let first = tokio::time::timeout(WAIT, reader.next())
            .await
            .expect("the worker stalled")
            .unwrap()
            .unwrap();
        let mut frames = vec![first];
        while let Some(Some(Ok(f))) = futures_util::FutureExt::now_or_never(reader.next()) {
            frames.push(f);
        }
        for f in frames {
            match postcard::from_bytes::<WorkerMsg>(&f).unwrap() {
                WorkerMsg::DoneAt { outputs, .. } => {
                    assert_eq!(outputs, [Value::Control]);
                    finished += 1;
                }
                WorkerMsg::Heartbeat { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        done += finished;
        let more = finished.min(total - sent);
        if more > 0 {
            let batch: Vec<TaskRun> = (sent..sent + more).map(task).collect();
            sent += more;
            writer.feed(encode(&AgentMsg::Run(batch))).await.unwrap();
            writer.feed(encode(&AgentMsg::Heartbeat)).await.unwrap();
            SinkExt::<bytes::Bytes>::flush(&mut writer).await.unwrap();
        }
    }
    let elapsed = start.elapsed();
    println!(
        "throughput: {total} no-op tasks in {:.3} s = {:.0} tasks/s (window {WINDOW})",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64()
    );
    drop((reader, writer));
    assert_eq!(exit_of(&mut child).await.0, 0);
}

#[tokio::test]
async fn the_example_command_modules() {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/modules/bin");
    let modules = vec![
        def(
            0,
            "shout",
            "upper",
            &[("s", Type::String)],
            &[("r", Type::String)],
        ),
        def(
            1,
            "sys",
            "sleep",
            &[("ms", Type::Long)],
            &[("done", Type::Control)],
        ),
        def(
            2,
            "sys",
            "hostname",
            &[("x", Type::Control)],
            &[("host", Type::String)],
        ),
        def(3, "sys", "reboot", &[], &[]),
    ];
    let agent = Agent::new().await;
    let mut w = agent.worker(modules, vec![bin.display().to_string()]).await;
    assert_eq!(
        w.run(1, 0, vec![Value::string("hello")]).await,
        WorkerMsg::Done {
            task: 1,
            outputs: vec![Value::string("HELLO")]
        }
    );
    assert_eq!(
        w.run(2, 1, vec![Value::Long(10)]).await,
        WorkerMsg::Done {
            task: 2,
            outputs: vec![Value::Control]
        }
    );
    let WorkerMsg::Done { outputs, .. } = w.run(3, 2, vec![Value::Control]).await else {
        panic!("sys hostname failed");
    };
    assert_eq!(outputs, [Value::string(&pnet_worker::hostname())]);
    assert_eq!(
        w.run(4, 3, vec![]).await,
        WorkerMsg::Failed {
            task: 4,
            message: format!(
                "test.xpnet:1:1: module sys.reboot: {}/sys exited with status 2; stderr:\n\
                 sys: unknown function 'reboot' (known: hostname, sleep)",
                bin.display()
            )
        }
    );
    w.send(AgentMsg::Shutdown).await;
    assert_eq!(w.exit().await.0, 0);
}

// ---- memory buffers

/// A C module against the documented C ABI (revision 2), built once with `cc`:
/// - `memtest.add(n: unsigned long) -> sum: unsigned long`: adds `n` to every byte of buffer
///   `data`, sums the bytes of the read-only buffer `src`;
/// - `memtest.overrun(n: unsigned long)`: writes `n` bytes from the end of buffer `data` on;
/// - `memtest.info() -> host: string, buffers: unsigned long`: the context's hostname and
///   buffer count.
fn c_module_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("worker-c-modules");
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("memtest.c");
        std::fs::write(&src, C_MODULE).unwrap();
        let tmp = dir.join(format!("libmemtest.so.{}", std::process::id()));
        let out = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&tmp)
            .arg(&src)
            .output()
            .expect("run cc");
        assert!(
            out.status.success(),
            "cc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::rename(&tmp, dir.join("libmemtest.so")).unwrap();
        dir
    })
}

const C_MODULE: &str = r#"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct pnet_buffer {
    const uint8_t *name; size_t name_len;
    void *ptr; uint64_t size; uint32_t read_only;
} pnet_buffer;
typedef struct pnet_call_context {
    void *host;
    int32_t (*is_cancelled)(const struct pnet_call_context *ctx);
    const uint8_t *worker_name; size_t worker_name_len;
    uint64_t task;
    const pnet_buffer *buffers; size_t buffer_count;
    const uint8_t *hostname; size_t hostname_len;
} pnet_call_context;
typedef struct pnet_out_buffer {
    void *host;
    void (*write)(struct pnet_out_buffer *out, const uint8_t *ptr, size_t len);
} pnet_out_buffer;
typedef int32_t (*pnet_call)(const pnet_call_context *ctx, const uint8_t *input,
                             size_t input_len, pnet_out_buffer *out);
typedef struct { const char *name; pnet_call call; } pnet_function;
typedef struct pnet_module_descriptor {
    uint32_t abi_version; const char *name;
    const pnet_function *functions; size_t function_count;
} pnet_module_descriptor;

static const pnet_buffer *find(const pnet_call_context *ctx, const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; i < ctx->buffer_count; ++i)
        if (ctx->buffers[i].name_len == n && memcmp(ctx->buffers[i].name, name, n) == 0)
            return &ctx->buffers[i];
    return NULL;
}
static void put(pnet_out_buffer *out, const char *s) {
    out->write(out, (const uint8_t *)s, strlen(s));
}
/* The first unsigned number in the JSON input. */
static unsigned long long number(const uint8_t *in, size_t len) {
    unsigned long long v = 0; size_t i = 0;
    while (i < len && (in[i] < '0' || in[i] > '9')) ++i;
    while (i < len && in[i] >= '0' && in[i] <= '9') v = v * 10 + (in[i++] - '0');
    return v;
}
static int32_t add(const pnet_call_context *ctx, const uint8_t *in, size_t len,
                   pnet_out_buffer *out) {
    const pnet_buffer *d = find(ctx, "data"), *s = find(ctx, "src");
    char text[64];
    unsigned long long sum = 0, n = number(in, len);
    if (d == NULL || s == NULL) { put(out, "missing buffer data or src"); return 1; }
    if (!s->read_only || d->read_only) { put(out, "wrong read-only flags"); return 1; }
    for (uint64_t i = 0; i < d->size; ++i) ((uint8_t *)d->ptr)[i] += (uint8_t)n;
    for (uint64_t i = 0; i < s->size; ++i) sum += ((const uint8_t *)s->ptr)[i];
    snprintf(text, sizeof text, "{\"sum\": %llu}", sum);
    put(out, text);
    return 0;
}
static int32_t overrun(const pnet_call_context *ctx, const uint8_t *in, size_t len,
                       pnet_out_buffer *out) {
    const pnet_buffer *d = find(ctx, "data");
    unsigned long long n = number(in, len);
    if (d == NULL) { put(out, "missing buffer data"); return 1; }
    volatile uint8_t *p = (volatile uint8_t *)d->ptr + d->size;
    for (unsigned long long i = 0; i < n; ++i) p[i] = 0x11;
    put(out, "{}");
    return 0;
}
static int32_t info(const pnet_call_context *ctx, const uint8_t *in, size_t len,
                    pnet_out_buffer *out) {
    char text[300];
    (void)in; (void)len;
    snprintf(text, sizeof text, "{\"host\": \"%.*s\", \"buffers\": %zu}",
             (int)ctx->hostname_len, (const char *)ctx->hostname, ctx->buffer_count);
    put(out, text);
    return 0;
}
static const pnet_function functions[] = {
    { "add", add }, { "overrun", overrun }, { "info", info },
};
static const pnet_module_descriptor descriptor = { 1, "memtest", functions, 3 };
const pnet_module_descriptor *pnet_module_v1(void) { return &descriptor; }
"#;

const SHM: u64 = 1 << 16;

fn buffer(name: &str, size: u64, alignment: u64, read_only: bool) -> BufferSpec {
    BufferSpec {
        name: name.into(),
        size,
        alignment,
        read_only,
    }
}

fn copy(buffer: u32, buffer_offset: u64, segment: u32, segment_offset: u64, len: u64) -> Copy {
    Copy {
        buffer,
        buffer_offset,
        segment,
        segment_offset,
        len,
    }
}

/// The memory test modules: `memtest.add`, `.overrun`, `.info`, and a command module.
fn memory_modules() -> Vec<ModuleDef> {
    vec![
        def(
            0,
            "memtest",
            "add",
            &[("n", Type::ULong)],
            &[("sum", Type::ULong)],
        ),
        def(1, "memtest", "overrun", &[("n", Type::ULong)], &[]),
        def(
            2,
            "memtest",
            "info",
            &[],
            &[("host", Type::String), ("buffers", Type::ULong)],
        ),
        def(
            3,
            "shout",
            "upper",
            &[("s", Type::String)],
            &[("r", Type::String)],
        ),
    ]
}

/// Another worker's segment, made by the test and served on 127.0.0.1.
struct OtherSegment {
    segment: Arc<Segment>,
    server: Option<Server>,
}

impl OtherSegment {
    fn new(secret: &Secret) -> OtherSegment {
        static N: AtomicUsize = AtomicUsize::new(0);
        // The pid alone may be that of an earlier run whose file a crash left behind.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "pnet-worker-it-{}-{nanos}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let segment = Arc::new(Segment::create(&std::env::temp_dir(), &name, SHM).unwrap());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server = Server::start(segment.clone(), listener, secret.clone()).unwrap();
        OtherSegment {
            segment,
            server: Some(server),
        }
    }

    fn info(&self, id: u32, host: &str) -> SegmentInfo {
        SegmentInfo {
            id,
            host: host.into(),
            shm_path: self.segment.path().display().to_string(),
            server: self.server.as_ref().unwrap().addr().to_string(),
            size: SHM,
        }
    }
}

impl Drop for OtherSegment {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop();
        }
    }
}

/// Starts a worker with `--shm SHM --host-id host-a` and takes its segment announcement.
async fn memory_worker(agent: &Agent) -> (Worker, SegmentInfo) {
    let shm = SHM.to_string();
    let dirs = vec![
        c_module_dir().display().to_string(),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/modules/bin")
            .display()
            .to_string(),
    ];
    let mut w = agent
        .worker_with(
            &["--shm", &shm, "--host-id", "host-a"],
            memory_modules(),
            dirs,
        )
        .await;
    let WorkerMsg::Memory(info) = w.next().await else {
        panic!("expected the worker's segment");
    };
    (w, info)
}

#[tokio::test]
async fn the_segment_is_announced_and_served() {
    let agent = Agent::new().await;
    let (mut w, info) = memory_worker(&agent).await;
    assert_eq!(info.id, 1, "the id of the welcome");
    assert_eq!(info.host, "host-a");
    assert_eq!(info.size, SHM);
    let pid = w.child.id().unwrap();
    assert_eq!(info.shm_path, format!("/dev/shm/pnet-{pid}-w-1"));
    assert_eq!(std::fs::metadata(&info.shm_path).unwrap().len(), SHM);
    let server: std::net::SocketAddr = info.server.parse().unwrap();
    assert_eq!(server.ip().to_string(), "127.0.0.1");
    // Over TCP (another host) and through the file (the same host).
    let mut remote = Peers::new("elsewhere".into(), None, agent.secret.clone());
    remote.write(&info, 7, b"written over tcp").unwrap();
    let mut local = Peers::new("host-a".into(), None, agent.secret.clone());
    let mut back = [0u8; 16];
    local.read(&info, 7, &mut back).unwrap();
    assert_eq!(&back, b"written over tcp");
    // A wrong secret is refused.
    let mut stranger = Peers::new("elsewhere".into(), None, Secret::random().unwrap());
    assert!(stranger.read(&info, 0, &mut back).is_err());
    // The context has the host identity, and no buffers.
    assert_eq!(
        w.run(1, 2, vec![]).await,
        WorkerMsg::Done {
            task: 1,
            outputs: vec![Value::string("host-a"), Value::ULong(0)]
        }
    );
    w.send(AgentMsg::Shutdown).await;
    assert_eq!(w.exit().await, (0, String::new()));
    // The segment's file is gone with the worker.
    assert!(!Path::new(&info.shm_path).exists());
}

/// The task of `memtest.add`: `data` (4 bytes) from `other`@200, `src` (3 bytes, read-only)
/// from `other`@100; after the call `data` to the worker's own segment @1000 and its last two
/// bytes to `other`@300.
fn add_task(own: &SegmentInfo, other: &SegmentInfo) -> MemoryTask {
    MemoryTask {
        buffers: vec![buffer("data", 4, 8, false), buffer("src", 3, 1, true)],
        segments: vec![own.clone(), other.clone()],
        gets: vec![copy(0, 0, other.id, 200, 4), copy(1, 0, other.id, 100, 3)],
        puts: vec![copy(0, 0, own.id, 1000, 4), copy(0, 2, other.id, 300, 2)],
    }
}

#[tokio::test]
async fn gets_and_puts_through_the_mapping_and_over_tcp() {
    let agent = Agent::new().await;
    let (mut w, own) = memory_worker(&agent).await;
    let other = OtherSegment::new(&agent.secret);
    let mut peers = Peers::new("test".into(), None, agent.secret.clone());
    for (task, host) in [(1, "host-a"), (2, "host-b")] {
        let info = other.info(7, host);
        peers.write(&info, 100, &[1, 2, 3]).unwrap();
        peers.write(&info, 200, &[10, 20, 30, 250]).unwrap();
        peers.write(&info, 300, &[0, 0]).unwrap();
        peers.write(&own, 1000, &[0; 4]).unwrap();
        assert_eq!(
            w.run_mem(
                task,
                0,
                vec![Value::ULong(task)],
                Some(add_task(&own, &info))
            )
            .await,
            WorkerMsg::Done {
                task,
                outputs: vec![Value::ULong(6)]
            },
            "{host}"
        );
        let d = task as u8;
        let mut got = [0u8; 4];
        peers.read(&own, 1000, &mut got).unwrap();
        assert_eq!(
            got,
            [10 + d, 20 + d, 30 + d, 250u8.wrapping_add(d)],
            "{host}"
        );
        let mut got = [0u8; 2];
        peers.read(&info, 300, &mut got).unwrap();
        assert_eq!(got, [30 + d, 250u8.wrapping_add(d)], "{host}");
        // The read-only source is untouched.
        let mut src = [0u8; 3];
        peers.read(&info, 100, &mut src).unwrap();
        assert_eq!(src, [1, 2, 3]);
    }
    // The same host maps the file: no server needed. Another host needs the server.
    let mut dead = other.info(7, "host-a");
    dead.server = "127.0.0.1:1".into();
    assert_eq!(
        w.run_mem(3, 0, vec![Value::ULong(0)], Some(add_task(&own, &dead)))
            .await,
        WorkerMsg::Done {
            task: 3,
            outputs: vec![Value::ULong(6)]
        }
    );
    dead.host = "host-b".into();
    let WorkerMsg::Failed { task: 4, message } = w
        .run_mem(4, 0, vec![Value::ULong(0)], Some(add_task(&own, &dead)))
        .await
    else {
        panic!("a transfer to a dead server succeeded");
    };
    assert!(
        message.starts_with("test.xpnet:1:1: module memtest.add: ")
            && message.contains("127.0.0.1:1"),
        "{message}"
    );
    w.send(AgentMsg::Shutdown).await;
    assert_eq!(w.exit().await.0, 0);
}

#[tokio::test]
async fn buffers_beyond_the_working_memory_or_of_command_modules_are_refused() {
    let agent = Agent::new().await;
    let (mut w, own) = memory_worker(&agent).await;
    let too_big = MemoryTask {
        buffers: vec![buffer("data", SHM, 1, false), buffer("src", 1, 1, true)],
        segments: vec![own.clone()],
        gets: vec![],
        puts: vec![],
    };
    let WorkerMsg::Failed { message, .. } =
        w.run_mem(1, 0, vec![Value::ULong(0)], Some(too_big)).await
    else {
        panic!("buffers beyond the working memory were allocated");
    };
    assert!(
        message.starts_with("test.xpnet:1:1: module memtest.add: ")
            && message.contains(&format!("{}", SHM + 1))
            && message.contains(&format!("{SHM}")),
        "{message}"
    );
    // Exactly the working memory is fine.
    let fits = MemoryTask {
        buffers: vec![buffer("data", SHM - 3, 1, false), buffer("src", 3, 1, true)],
        segments: vec![own.clone()],
        gets: vec![copy(1, 0, own.id, 0, 3)],
        puts: vec![],
    };
    assert_eq!(
        w.run_mem(2, 0, vec![Value::ULong(1)], Some(fits)).await,
        WorkerMsg::Done {
            task: 2,
            outputs: vec![Value::ULong(0)]
        }
    );
    // A command module cannot have buffers.
    let command = MemoryTask {
        buffers: vec![buffer("text", 8, 1, false)],
        segments: vec![],
        gets: vec![],
        puts: vec![],
    };
    let WorkerMsg::Failed { message, .. } = w
        .run_mem(3, 3, vec![Value::string("x")], Some(command))
        .await
    else {
        panic!("a command module got buffers");
    };
    assert!(
        message.starts_with("test.xpnet:1:1: module shout.upper: ")
            && message.contains("is a command module, which cannot have memory buffers")
            && message.contains("`text`"),
        "{message}"
    );
    // A copy outside the segment fails the task; the worker goes on.
    let outside = MemoryTask {
        buffers: vec![buffer("data", 4, 1, false), buffer("src", 3, 1, true)],
        segments: vec![own.clone()],
        gets: vec![copy(0, 0, own.id, SHM - 2, 4)],
        puts: vec![],
    };
    assert!(matches!(
        w.run_mem(4, 0, vec![Value::ULong(1)], Some(outside)).await,
        WorkerMsg::Failed { task: 4, .. }
    ));
    w.send(AgentMsg::Shutdown).await;
    assert_eq!(w.exit().await.0, 0);

    // Without working memory.
    let mut w = agent
        .worker(memory_modules(), vec![c_module_dir().display().to_string()])
        .await;
    let task = MemoryTask {
        buffers: vec![buffer("data", 4, 1, false), buffer("src", 3, 1, true)],
        segments: vec![],
        gets: vec![],
        puts: vec![],
    };
    assert_eq!(
        w.run_mem(1, 0, vec![Value::ULong(1)], Some(task)).await,
        WorkerMsg::Failed {
            task: 1,
            message: "test.xpnet:1:1: module memtest.add: the call has memory buffers (7 \
                      bytes), but this worker has no working memory (it was started without \
                      --shm; give its worker type an shm size in the topology)"
                .into()
        }
    );
    w.send(AgentMsg::Shutdown).await;
    assert_eq!(w.exit().await.0, 0);
}

#[tokio::test]
async fn a_module_writing_past_its_buffer_is_caught() {
    let agent = Agent::new().await;
    let (mut w, _own) = memory_worker(&agent).await;
    // SAFETY: a plain query.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap();
    let task = |size, alignment| MemoryTask {
        buffers: vec![buffer("data", size, alignment, false)],
        segments: vec![],
        gets: vec![],
        puts: vec![],
    };
    // Into the slack after the buffer (a buffer ends at the guard page, unless its alignment
    // leaves a gap: 100 bytes aligned to 64 leave 28): the canary check fails the task.
    let WorkerMsg::Failed { message, .. } = w
        .run_mem(1, 1, vec![Value::ULong(3)], Some(task(100, 64)))
        .await
    else {
        panic!("an overrun went unnoticed");
    };
    assert!(
        message.starts_with("test.xpnet:1:1: module memtest.overrun: ")
            && message.contains("past the end of memory buffer `data`"),
        "{message}"
    );
    // Writing nothing past it is fine.
    assert_eq!(
        w.run_mem(2, 1, vec![Value::ULong(0)], Some(task(100, 64)))
            .await,
        WorkerMsg::Done {
            task: 2,
            outputs: vec![]
        }
    );
    // Into the guard page: the worker stops at once, saying why, and removes its segment.
    let pid = w.child.id().unwrap();
    w.send(AgentMsg::Run(vec![TaskRun {
        task: 3,
        module: 1,
        inputs: vec![Value::ULong(page)],
        memory: Some(task(100, 1)),
    }]))
    .await;
    let (code, err) = w.exit().await;
    assert_eq!(code, pnet_worker::fault::FAULT_EXIT, "{err}");
    assert_eq!(
        err,
        "gspc-worker w-1: task 3: module memtest function overrun wrote outside memory buffer \
         data; stopping the worker so that no memory is corrupted\n"
    );
    assert!(!Path::new(&format!("/dev/shm/pnet-{pid}-w-1")).exists());
}

// ---- nothing left behind; isolated native modules

/// The folder of `libcrash.so` (built first if missing).
fn crash_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| pnet_tests::build_packages(&["pnet-example-crash"]))
}

/// examples/modules/bin (the command module `crashcmd`).
fn example_bin() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/modules/bin")
        .display()
        .to_string()
}

/// `r f (x: long, ms: long, dir: string)`, the signature of every function of `crash` and
/// `crashcmd`.
fn crash_def(id: u32, module: &str, function: &str) -> ModuleDef {
    def(
        id,
        module,
        function,
        &[("x", Type::Long), ("ms", Type::Long), ("dir", Type::String)],
        &[("r", Type::Long)],
    )
}

fn crash_inputs(x: i64, ms: i64, dir: &TempDir) -> Vec<Value> {
    vec![Value::Long(x), Value::Long(ms), Value::string(&dir.path())]
}

/// The process group of process `pid` (from /proc), if it exists.
fn pgrp(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// The live (not zombie) processes of process group `group`.
fn group_members(group: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| pgrp(*pid) == Some(group) && alive(*pid))
        .collect()
}

/// Waits (bounded) until `f` holds.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < WAIT, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_killed_worker_takes_its_command_and_the_command_s_children_along() {
    let dir = TempDir::new();
    let agent = Agent::new().await;
    let mut w = agent
        .worker(
            vec![crash_def(0, "crashcmd", "orphan")],
            vec![example_bin()],
        )
        .await;
    // `orphan` starts a background `sleep 300` and waits 30 s.
    w.send(AgentMsg::Run(vec![TaskRun {
        task: 1,
        module: 0,
        inputs: crash_inputs(7, 30_000, &dir),
        memory: None,
    }]))
    .await;
    let pid_file = dir.0.join("orphan-7.pid");
    eventually("the command started its child", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n'))
    })
    .await;
    let child: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let group = pgrp(child).expect("the background sleep runs");
    let worker = i32::try_from(w.child.id().unwrap()).unwrap();
    assert_ne!(
        group,
        pgrp(worker).unwrap(),
        "the command has its own group"
    );
    // The supervisor, the script and its sleeps.
    assert!(
        group_members(group).len() >= 3,
        "{:?}",
        group_members(group)
    );
    w.child.kill().await.unwrap();
    eventually("the command's group is gone", || {
        group_members(group).is_empty()
    })
    .await;
    assert!(!alive(child));
}

#[tokio::test]
async fn commands_keep_their_exit_status_and_signal_under_the_supervisor() {
    let dir = TempDir::new();
    dir.script(
        "st.code",
        "#!/bin/sh\ncat > /dev/null\necho oops >&2\nexit 3\n",
    );
    dir.script(
        "st.sig",
        "#!/bin/sh\ncat > /dev/null\nkill -TERM $$\nsleep 5\n",
    );
    dir.script(
        "st.parent",
        "#!/bin/sh\ncat > /dev/null\nprintf '{\"parent\": %s, \"worker\": %s}' $PPID $PNET_WORKER_PID\n",
    );
    let modules = vec![
        def(0, "st", "code", &[], &[]),
        def(1, "st", "sig", &[], &[]),
        def(
            2,
            "st",
            "parent",
            &[],
            &[("parent", Type::Long), ("worker", Type::Long)],
        ),
    ];
    let agent = Agent::new().await;
    let mut w = agent.worker(modules, vec![dir.path()]).await;
    let WorkerMsg::Failed { message, .. } = w.run(1, 0, vec![]).await else {
        panic!("expected a failure");
    };
    assert!(
        message.contains("exited with status 3; stderr:\noops"),
        "{message}"
    );
    let WorkerMsg::Failed { message, .. } = w.run(2, 1, vec![]).await else {
        panic!("expected a failure");
    };
    assert!(message.contains("was killed by signal 15"), "{message}");
    // The command's parent is the supervisor, not the worker (PNET_WORKER_PID is).
    let worker = i64::from(w.child.id().unwrap());
    let WorkerMsg::Done { outputs, .. } = w.run(3, 2, vec![]).await else {
        panic!("expected outputs");
    };
    assert_ne!(outputs[0], Value::Long(worker));
    assert_eq!(outputs[1], Value::Long(worker));
    w.send(AgentMsg::Shutdown).await;
    assert_eq!(w.exit().await.0, 0);
}

#[tokio::test]
async fn the_segment_of_a_killed_worker_is_removed_by_the_next_start() {
    let agent = Agent::new().await;
    let (mut w, info) = memory_worker(&agent).await;
    assert!(Path::new(&info.shm_path).exists());
    w.child.kill().await.unwrap();
    // SIGKILL leaves the file behind...
    assert!(Path::new(&info.shm_path).exists());
    // ... until a worker starts (any worker of this user, with or without memory).
    let w = agent.worker(vec![], vec![]).await;
    assert!(!Path::new(&info.shm_path).exists());
    drop(w);
}

#[tokio::test]
async fn isolated_native_modules_fail_the_task_when_they_crash() {
    let dir = TempDir::new();
    let modules = vec![
        crash_def(0, "crash", "segv"),
        crash_def(1, "crash", "abort"),
        crash_def(2, "crash", "kill"),
        crash_def(3, "crash", "sleep"),
        crash_def(4, "crash", "crash_once"),
    ];
    let agent = Agent::new().await;
    let mut w = agent
        .worker_with(
            &["--isolate-modules"],
            modules,
            vec![crash_dir().display().to_string()],
        )
        .await;
    for (task, module, signal) in [(1, 0, "SIGSEGV"), (2, 1, "SIGABRT"), (3, 2, "SIGKILL")] {
        let function = ["segv", "abort", "kill"][module as usize];
        let WorkerMsg::Failed { task: t, message } =
            w.run(task, module, crash_inputs(1, 0, &dir)).await
        else {
            panic!("expected a failure");
        };
        assert_eq!(t, task);
        assert_eq!(
            message,
            format!(
                "test.xpnet:1:1: module `crash.{function}` crashed with {signal} (isolated in a \
                 child process of worker `w-1`, which goes on)"
            )
        );
    }
    // The worker goes on; a crash once, then success.
    assert_eq!(
        w.run(4, 3, crash_inputs(5, 1, &dir)).await,
        WorkerMsg::Done {
            task: 4,
            outputs: vec![Value::Long(5)]
        }
    );
    assert!(matches!(
        w.run(5, 4, crash_inputs(6, 0, &dir)).await,
        WorkerMsg::Failed { .. }
    ));
    assert_eq!(
        w.run(6, 4, crash_inputs(6, 0, &dir)).await,
        WorkerMsg::Done {
            task: 6,
            outputs: vec![Value::Long(6)]
        }
    );
    // Cancelling an isolated call kills its host; the next call gets a new one.
    w.send(AgentMsg::Run(vec![TaskRun {
        task: 7,
        module: 3,
        inputs: crash_inputs(7, 30_000, &dir),
        memory: None,
    }]))
    .await;
    loop {
        let msg: WorkerMsg = frame::recv(&mut w.reader).await.unwrap();
        if msg == (WorkerMsg::Heartbeat { running: Some(7) }) {
            break;
        }
    }
    let cancelled_at = Instant::now();
    w.send(AgentMsg::Cancel { task: 7 }).await;
    assert_eq!(w.next().await, WorkerMsg::Cancelled { task: 7 });
    assert!(cancelled_at.elapsed() < Duration::from_secs(5));
    assert_eq!(
        w.run(8, 3, crash_inputs(8, 0, &dir)).await,
        WorkerMsg::Done {
            task: 8,
            outputs: vec![Value::Long(8)]
        }
    );
    w.send(AgentMsg::Shutdown).await;
    assert_eq!(w.exit().await.0, 0);
}

#[tokio::test]
async fn isolated_calls_with_memory_buffers_are_refused() {
    let agent = Agent::new().await;
    let shm = SHM.to_string();
    let mut w = agent
        .worker_with(
            &["--shm", &shm, "--isolate-modules"],
            memory_modules(),
            vec![c_module_dir().display().to_string()],
        )
        .await;
    let WorkerMsg::Memory(_) = w.next().await else {
        panic!("expected the worker's segment");
    };
    let mem = MemoryTask {
        buffers: vec![buffer("data", 4, 1, false)],
        segments: vec![],
        gets: vec![],
        puts: vec![],
    };
    let WorkerMsg::Failed { message, .. } = w.run_mem(1, 0, vec![Value::ULong(1)], Some(mem)).await
    else {
        panic!("expected a refusal");
    };
    assert!(message.contains("--isolate-modules"), "{message}");
    w.send(AgentMsg::Shutdown).await;
    assert_eq!(w.exit().await.0, 0);
}

#[tokio::test]
async fn a_killed_worker_takes_its_module_host_along() {
    let dir = TempDir::new();
    let agent = Agent::new().await;
    let mut w = agent
        .worker_with(
            &["--isolate-modules"],
            vec![crash_def(0, "crash", "sleep")],
            vec![crash_dir().display().to_string()],
        )
        .await;
    assert!(matches!(
        w.run(1, 0, crash_inputs(1, 0, &dir)).await,
        WorkerMsg::Done { .. }
    ));
    let worker = i32::try_from(w.child.id().unwrap()).unwrap();
    let hosts: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<i32>().ok())
                    == Some(worker)
            })
        })
        .collect();
    assert_eq!(hosts.len(), 1, "one module host, a child of the worker");
    w.child.kill().await.unwrap();
    eventually("the module host is gone", || !alive(hosts[0])).await;
}
