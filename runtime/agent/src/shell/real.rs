//! Tests with real `gspc-worker` processes started through the local launcher, running the
//! example native modules (`libarith.so`, `libnoop.so`; built here if needed).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use pnet_stdlib::Value;

use super::tests::TempDir;
use crate::core::tests::{longs, net, sorted_longs, xs};
use crate::{AgentConfig, run_job};

/// The directory with gspc-worker and the example libraries (built once per test run, with
/// the same target directory and profile as this test).
fn bin_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir =
            pnet_tests::build_packages(&["pnet-worker", "pnet-example-arith", "pnet-example-noop"]);
        for f in ["gspc-worker", "libarith.so", "libnoop.so"] {
            assert!(
                dir.join(f).is_file(),
                "{} is missing",
                dir.join(f).display()
            );
        }
        dir
    })
}

fn config(workers: u32, dir: &TempDir) -> AgentConfig {
    let bin = bin_dir();
    let plan = pnet_topology::plan(
        &pnet_topology::default_topology(workers),
        &["localhost".to_string()],
    );
    let mut cfg = AgentConfig::new(plan, bin.join("gspc-worker"));
    cfg.module_path = vec![bin.clone()];
    cfg.log = Some(dir.0.join("events.log"));
    cfg
}

/// Worker pids from the event log's "connected from HOST (pid N)" lines (or "started
/// worker ... (local, pid N)" with `started`).
fn worker_pids(log: &str, started: bool) -> Vec<i32> {
    let key = if started {
        "started worker "
    } else {
        " connected from "
    };
    log.lines()
        .filter(|l| l.contains(key))
        .filter_map(|l| l.rsplit("pid ").next())
        .filter_map(|p| p.trim_end_matches(')').parse().ok())
        .collect()
}

fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn real_workers_run_native_modules_and_are_stopped() {
    let dir = TempDir::new();
    let cfg = config(2, &dir);
    let r = run_job(&net("square"), &xs(0..200), &cfg).expect("job");
    assert_eq!(
        sorted_longs(&r, "ys"),
        (0..200).map(|x| x * x).collect::<Vec<_>>()
    );
    let log = std::fs::read_to_string(dir.0.join("events.log")).unwrap();
    let pids = worker_pids(&log, true);
    assert_eq!(pids.len(), 2, "{log}");
    assert!(
        pids.iter().all(|&p| !alive(p)),
        "workers left running: {pids:?}"
    );
}

#[test]
fn a_failing_native_module_fails_the_job_with_its_message() {
    let dir = TempDir::new();
    let cfg = config(1, &dir);
    let b = net("call_div");
    let inputs = vec![
        ("as".to_string(), longs([7])),
        ("bs".to_string(), longs([0])),
    ];
    let e = run_job(&b, &inputs, &cfg).unwrap_err();
    let m = e.to_string();
    assert!(
        m.starts_with("in transition `div` (test.xpnet:2:3): module call `arith` failed: "),
        "{m}"
    );
    assert!(m.contains("division by zero"), "{m}");
    // A module that does not exist: the worker's message lists where it looked.
    let b = net("call_nosuchmodule");
    let e = run_job(&b, &[("as".to_string(), longs([1]))], &cfg).unwrap_err();
    assert!(e.to_string().contains("nosuchmodule"), "{e}");
}

#[test]
fn a_killed_worker_s_task_runs_on_another() {
    let dir = TempDir::new();
    let mut cfg = config(2, &dir);
    cfg.log = Some(dir.0.join("events.log"));
    let b = net("call_spin");
    let log_path = dir.0.join("events.log");
    let killer = thread::spawn(move || {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let pids = worker_pids(&log, false);
            if pids.len() == 2 {
                thread::sleep(Duration::from_millis(250));
                // SAFETY: kill(2) with a pid this test's job started.
                let rc = unsafe { libc::kill(pids[0], libc::SIGKILL) };
                return rc == 0;
            }
            thread::sleep(Duration::from_millis(10));
        }
        false
    });
    let r = run_job(&b, &[("mss".to_string(), longs([150; 8]))], &cfg).expect("job");
    assert!(killer.join().unwrap(), "the killer found the workers");
    let done = &r.outputs.iter().find(|(p, _)| p == "dones").unwrap().1;
    assert_eq!(done, &vec![Value::Control; 8]);
    let log = std::fs::read_to_string(dir.0.join("events.log")).unwrap();
    assert!(log.contains(" lost: "), "{log}");
}
