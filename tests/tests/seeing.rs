//! Seeing a run from the command line (issue 23): a `gspc` runtime's jobs by name with the
//! reason of a failure, their tasks (`gspc tasks`), traces (`gspc trace`) and logs (`gspc
//! logs`), plain JSON outputs, the status's heartbeat column and the message without a
//! runtime.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::OnceLock;

fn bin_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        pnet_tests::build_packages(&["pnet-gspc", "pnet-worker", "pnet-example-arith"])
    })
}

fn scratch(name: &str) -> pnet_tests::GspcScratch {
    pnet_tests::GspcScratch::new("seeing", name, bin_dir().join("gspc"))
}

/// `xs` (long tokens) -> `say` (the command module `talk.say`) -> out port `ys`.
fn talk_xpnet() -> String {
    pnet_tests::module_net("talk", "say", "talk", "say")
}

/// `xs` -> `square` (arith.square, which fails on an overflow) -> `ys`.
fn squares_xpnet() -> String {
    pnet_tests::module_net("squares", "square", "arith", "square")
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn jobs_tasks_traces_and_logs_of_a_runtime() {
    let s = scratch("runtime");
    s.ok(&[
        "boot",
        "--topology",
        "worker:1",
        "--module-path",
        &bin_dir().display().to_string(),
        "--timeout",
        "30",
    ]);
    let talk = s.dir.join("talk.say");
    std::fs::write(
        &talk,
        "#!/bin/sh\ncat >/dev/null\necho \"hello from task $PNET_TASK\" >&2\necho working\n\
         echo '{\"r\": 7}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&talk, std::fs::Permissions::from_mode(0o755)).unwrap();
    let talk_net = s.dir.join("talk.xpnet");
    std::fs::write(&talk_net, talk_xpnet()).unwrap();
    let squares = s.dir.join("squares.xpnet");
    std::fs::write(&squares, squares_xpnet()).unwrap();
    let talk_net = talk_net.display().to_string();
    let squares = squares.display().to_string();

    let a = s.ok(&[
        "submit",
        &talk_net,
        "-p",
        "xs=1L",
        "-p",
        "xs=2L",
        "--name",
        "greetings",
    ]);
    let a = a.trim();
    // Outputs in the JSON encoding of values, with the port's type.
    let out = json(&s.ok(&["wait", a, "--json"]));
    assert_eq!(
        out["outputs"]["ys"],
        serde_json::json!({"type": "long", "tokens": [7, 7]})
    );
    let b = s.ok(&["submit", &squares, "-p", "xs=3037000500L"]);
    let b = b.trim();
    assert_eq!(s.gspc(&["wait", b]).status.code(), Some(1));

    // Jobs by name, and why the failed one failed.
    let table = s.ok(&["jobs"]);
    assert!(table.starts_with("JOB  NAME"), "{table}");
    let row = |id: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("no job {id}: {table}"))
            .to_string()
    };
    assert!(row(a).contains("greetings"), "{table}");
    assert!(row(b).contains("squares.xpnet"), "{table}");
    assert!(table.contains(&format!("job {b} failed: ")), "{table}");
    let jobs = json(&s.ok(&["jobs", "--json"]));
    let jb = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"].as_u64() == b.parse().ok())
        .unwrap();
    assert_eq!(jb["state"], "failed");
    assert!(jb["error"].as_str().unwrap().contains("square"), "{jb}");
    assert_eq!(jobs[0]["name"], "greetings");

    // The tasks: state, worker, times; a failed task's error.
    let tasks = json(&s.ok(&["tasks", a, "--json"]));
    let ts = tasks["tasks"].as_array().unwrap();
    assert_eq!(ts.len(), 2, "{tasks:#}");
    for t in ts {
        assert_eq!(t["state"], "done", "{t}");
        assert_eq!(t["transition"], "say");
        assert!(t["worker"].as_str().unwrap().starts_with("worker"), "{t}");
        let (sent, started, ended) = (
            t["sent_us"].as_u64().unwrap(),
            t["started_us"].as_u64().unwrap(),
            t["ended_us"].as_u64().unwrap(),
        );
        assert!(sent <= started && started <= ended, "{t}");
        assert!(t["log_bytes"].as_u64().unwrap() > 0, "{t}");
    }
    let table = s.ok(&["tasks", b]);
    assert!(table.contains("failed"), "{table}");
    assert!(
        table.contains("overflow") || table.contains("square"),
        "{table}"
    );

    // What the tasks logged: the command's stderr and the stdout before its answer.
    let logs = s.ok(&["logs", a]);
    assert_eq!(logs.matches("working\n").count(), 2, "{logs}");
    assert!(logs.contains("hello from task"), "{logs}");
    assert!(logs.contains("== task "), "{logs}");
    let first = ts[0]["task"].to_string();
    let one = s.ok(&["logs", a, &first]);
    assert!(!one.contains("== task"), "{one}");
    assert_eq!(one.matches("working").count(), 1, "{one}");

    // A trace of the job: one slice per task on the worker's lane.
    let trace_file = s.dir.join("trace.json");
    s.ok(&["trace", a, "-o", trace_file.to_str().unwrap()]);
    let trace = json(&std::fs::read_to_string(&trace_file).unwrap());
    let slices: Vec<&serde_json::Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    assert_eq!(slices.len(), 2, "{trace:#}");
    assert!(slices.iter().all(|e| e["name"] == "say"));
    let failed = json(&s.ok(&["trace", b]));
    let f = failed["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["ph"] == "X")
        .unwrap()
        .clone();
    assert_eq!(f["args"]["outcome"], "failed");
    assert!(
        f["args"]["error"].as_str().unwrap().contains("square"),
        "{f}"
    );

    // The status says what its column is.
    let st = s.ok(&["status"]);
    assert!(st.contains("last heartbeat "), "{st}");
    assert!(st.contains(" ago"), "{st}");
}

#[test]
fn without_a_runtime_the_message_says_how_to_start_one() {
    let s = scratch("none");
    let missing = s.dir.join("nothing-here");
    let o = std::process::Command::new(bin_dir().join("gspc"))
        .args(["status", "--state-dir"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "no runtime is running (state directory {}); start one with `gspc boot`",
            missing.display()
        )),
        "{err}"
    );
}

#[test]
fn progress_on_a_pipe_is_a_line_every_few_seconds_and_counts_started_tasks() {
    let dir = pnet_tests::build_packages(&["gspc-run", "pnet-worker"]);
    let s = scratch("progress");
    let nap = s.dir.join("talk.say");
    std::fs::write(
        &nap,
        "#!/bin/sh\ncat >/dev/null\nsleep 5.5\necho '{\"r\": 1}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&nap, std::fs::Permissions::from_mode(0o755)).unwrap();
    let net = s.dir.join("talk.xpnet");
    std::fs::write(&net, talk_xpnet()).unwrap();
    let o = std::process::Command::new(dir.join("gspc-run"))
        .arg(&net)
        .args([
            "-p",
            "xs=1L",
            "--topology",
            "worker:1",
            "--progress",
            "--json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains('\r'), "carriage returns on a pipe: {err:?}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("gspc-run: progress: "))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    // The task had started on the worker: it counts as running, not queued.
    assert!(
        lines[0].contains("tasks: 0 done, 1 running, 0 queued  1 workers"),
        "{err}"
    );
    let out = json(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(
        out["outputs"]["ys"],
        serde_json::json!({"type": "long", "tokens": [1]})
    );
}
