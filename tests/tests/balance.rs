//! Load balance with the real binaries: long tasks that become ready together go to as many
//! workers, under `gspc-run` (its trace has one lane per worker) and a `gspc` runtime (its
//! status counts each worker's tasks). Before the scheduler started every worker with a
//! window of one task, the first worker to join took four such tasks and ran them one
//! after the other. No timing is asserted, only where the tasks ran; the sleeps are long
//! enough that a worker cannot finish one before the others joined.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

fn bin_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| pnet_tests::build_packages(&["gspc-run", "pnet-gspc", "pnet-worker"]))
}

fn net() -> String {
    pnet_tests::workspace_root()
        .join("examples/modules/crash.xpnet")
        .display()
        .to_string()
}

fn commands() -> String {
    pnet_tests::workspace_root()
        .join("examples/modules/bin")
        .display()
        .to_string()
}

/// Four command-module tasks of 1.5 s each (crash.xpnet's `cmd_sleep`).
const INPUTS: [&str; 8] = [
    "-p",
    "what=\"cmd_sleep\"",
    "-p",
    "n=4L",
    "-p",
    "ms=1500L",
    "-p",
    "dir=\"/tmp\"",
];

#[test]
fn four_long_tasks_run_on_four_workers_with_gspc_run() {
    let trace = std::env::temp_dir().join(format!("pnet-balance-{}.json", std::process::id()));
    let o = Command::new(bin_dir().join("gspc-run"))
        .arg(net())
        .args([
            "--module-path",
            &commands(),
            "--topology",
            "worker:4",
            "--trace",
        ])
        .arg(&trace)
        .args(INPUTS)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("count = 4L"), "{out}");
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let _ = std::fs::remove_file(&trace);
    let events = t
        .as_array()
        .or_else(|| t["traceEvents"].as_array())
        .unwrap();
    let mut lanes: Vec<u64> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["args"]["outcome"] == "done")
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    lanes.sort_unstable();
    assert_eq!(lanes.len(), 4, "{t:#}");
    lanes.dedup();
    assert_eq!(lanes.len(), 4, "four tasks on fewer workers: {t:#}");
}

#[test]
fn four_long_tasks_run_on_four_workers_of_a_gspc_runtime() {
    let s = pnet_tests::GspcScratch::new("balance", "gspc", bin_dir().join("gspc"));
    s.ok(&[
        "boot",
        "--topology",
        "worker:4",
        "--module-path",
        &commands(),
        "--timeout",
        "30",
    ]);
    let net = net();
    let mut submit = vec!["submit", net.as_str()];
    submit.extend(INPUTS);
    let out = s.ok(&submit);
    let id = out
        .split_whitespace()
        .find(|w| w.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no job id in {out}"))
        .to_string();
    let o = s.ok(&["wait", &id]);
    assert!(o.contains("count = 4L"), "{o}");
    let st: serde_json::Value = serde_json::from_str(&s.ok(&["status", "--json"])).unwrap();
    let done: Vec<u64> = st["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["done"].as_u64().unwrap())
        .collect();
    assert_eq!(done, vec![1, 1, 1, 1], "{st:#}");
}
