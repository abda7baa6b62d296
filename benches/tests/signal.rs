//! SIGINT to a running agent (here: the benchmark program, which runs jobs through
//! `run_job`) cancels the job, stops its workers cleanly and returns `Cancelled`. A separate
//! test binary, because the signal goes to the whole process.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

fn build_workers(bench: &Path) {
    let dir = bench.parent().expect("target/<profile>");
    let target = dir.parent().expect("target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "-q",
        "-p",
        "pnet-worker",
        "-p",
        "pnet-example-noop",
    ])
    .env("CARGO_TARGET_DIR", target)
    .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    assert!(
        cmd.status().expect("cargo build").success(),
        "building gspc-worker failed"
    );
}

/// Pids of the processes whose parent is `parent`.
fn children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()) == Some(parent) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn sigint_cancels_the_job_and_stops_the_workers() {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_pnet-agent-bench"));
    build_workers(&bench);
    let mut child = Command::new(&bench)
        .args(["--tasks", "1000000000", "--latency-tasks", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the benchmark");
    let pid = child.id();
    let t = Instant::now();
    let mut workers = Vec::new();
    while t.elapsed() < Duration::from_secs(30) {
        workers = children(pid);
        if workers.len() == 2 {
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(workers.len(), 2, "the two workers started");
    thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on the child this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGINT) }, 0);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "the agent did not stop after SIGINT"
        );
        thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the job was cancelled"), "{stderr}");
    for w in workers {
        assert!(
            !Path::new(&format!("/proc/{w}")).exists(),
            "worker {w} is still running"
        );
    }
}
