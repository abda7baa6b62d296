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

/// Writes the command module `clock.tick` into `dir`: it logs its start and end (the
/// module's own clock, nanoseconds since the epoch) on standard error and a line on standard
/// output before its answer, and runs for 200 ms.
fn clock_module(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("clock.tick");
    std::fs::write(
        &p,
        "#!/bin/sh\ncat >/dev/null\necho \"start $(date +%s%N)\" >&2\nsleep 0.2\n\
         echo \"end $(date +%s%N)\" >&2\necho ticked\necho '{\"done\": null}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `start NANOS` / `end NANOS` of a task's log, in milliseconds.
fn module_times(log: &str) -> (f64, f64) {
    let at = |key: &str| -> f64 {
        let line = log
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no `{key}` in {log:?}"));
        line[key.len()..].trim().parse::<f64>().unwrap() / 1e6
    };
    (at("start "), at("end "))
}

#[test]
fn four_tasks_queued_on_one_worker_are_drawn_back_to_back_at_their_true_times() {
    let dir = TempDir::new();
    let mods = dir.0.join("mods");
    std::fs::create_dir_all(&mods).unwrap();
    clock_module(&mods);
    let mut cfg = config(1, &dir);
    cfg.module_path.insert(0, mods);
    let trace_path = dir.0.join("trace.json");
    cfg.trace = Some(trace_path.clone());
    let logs = dir.0.join("logs");
    cfg.logs = Some(logs.clone());
    // A window of 4: the four tasks are sent at once and wait in the worker's queue.
    let options = crate::JobOptions {
        sched: crate::sched::SchedConfig::fixed(4),
        ..crate::JobOptions::default()
    };
    let r = crate::run_job_with(
        &net("call_clock"),
        &[("mss".to_string(), longs([0; 4]))],
        &cfg,
        options,
    )
    .expect("job");
    assert_eq!(r.stats.tasks, 4);
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace_path).unwrap()).unwrap();
    let ev = trace["traceEvents"].as_array().unwrap();
    let mut slices: Vec<&serde_json::Value> = ev.iter().filter(|e| e["ph"] == "X").collect();
    slices.sort_by_key(|e| e["ts"].as_u64());
    assert_eq!(slices.len(), 4, "{trace:#}");
    let ms = |v: &serde_json::Value| v.as_f64().unwrap() / 1000.0;
    // One lane, four slices one after the other (not four from the same start).
    assert!(slices.iter().all(|e| e["tid"] == slices[0]["tid"]));
    for w in slices.windows(2) {
        let end = ms(&w[0]["ts"]) + ms(&w[0]["dur"]);
        let next = ms(&w[1]["ts"]);
        assert!(next >= end, "overlap: {} then {}", w[0], w[1]);
    }
    // All four were sent at once: the later ones waited, shown as `queued` async slices.
    let sent: Vec<f64> = slices.iter().map(|e| ms(&e["args"]["sent_us"])).collect();
    assert!(sent.iter().all(|s| (s - sent[0]).abs() < 5.0), "{sent:?}");
    let queued = ev
        .iter()
        .filter(|e| e["cat"] == "queued" && e["ph"] == "b")
        .count();
    assert!(queued >= 3, "{queued} queued slices");
    // The trace agrees with the times the module itself saw (its log, kept by --logs): the
    // same starts relative to each other and the same durations, give or take the time to
    // start the command's processes (drawn from the same start, the tasks would be 200, 400
    // and 600 ms off).
    let mut module = Vec::new();
    for s in &slices {
        let task = s["args"]["task"].as_u64().unwrap();
        let path = logs.join(format!("task-{task}-tick.log"));
        let log =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(log.starts_with("ticked\n"), "{log:?}");
        module.push(module_times(&log));
    }
    // How long starting and ending a command took (the slice covers it, the module's own
    // clock does not): a few milliseconds on an idle machine, hundreds on a loaded one. The
    // bounds below are in this unit, so that a slow machine does not fail the test, while
    // slices drawn from one start (200, 400 and 600 ms off) still would.
    let overheads: Vec<f64> = slices
        .iter()
        .zip(&module)
        .map(|(s, (start, end))| ms(&s["dur"]) - (end - start))
        .collect();
    let slack = overheads.iter().copied().fold(0.0, f64::max) + 5.0;
    for (k, s) in slices.iter().enumerate() {
        let (start, end) = module[k];
        let (ts, dur) = (ms(&s["ts"]), ms(&s["dur"]));
        // The slice covers the module's run: it is at least as long.
        assert!(
            dur >= end - start - 1.0,
            "task {k}: slice {dur} ms, module {} ms",
            end - start
        );
        if k > 0 {
            // Back to back: no gap longer than starting a command takes.
            let prev_end = ms(&slices[k - 1]["ts"]) + ms(&slices[k - 1]["dur"]);
            assert!(
                ts - prev_end < slack + 25.0,
                "task {k}: a gap of {} ms (commands took up to {slack} ms to start and end)",
                ts - prev_end
            );
            // At its true time: its start after the first, as the module saw it, give or
            // take the time to start a command.
            let trace_step = ts - ms(&slices[0]["ts"]);
            let module_step = start - module[0].0;
            assert!(
                (trace_step - module_step).abs() <= slack,
                "task {k}: {trace_step} ms after the first in the trace, {module_step} ms by \
                 the module (commands took up to {slack} ms to start and end)"
            );
            // Which is after every earlier task's whole run (200 ms each; each slice at least
            // as long as its run, give or take a millisecond).
            let before: f64 = module[..k].iter().map(|(a, b)| b - a).sum();
            assert!(
                trace_step >= before - k as f64,
                "task {k}: {trace_step} ms after the first, before the {before} ms of the \
                 tasks before it"
            );
        }
    }
}
