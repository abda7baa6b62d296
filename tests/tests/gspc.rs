//! End-to-end tests of the persistent runtime with real processes: `gspc boot` starts the
//! runtime (`gspc daemon`) and its `gspc-worker`s; the other `gspc` commands are its clients.
//! Module calls run the example native module `libarith.so` (`square`, `spin`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pnet_launch::testing::wait_gone;

/// The folder with `gspc`, `gspc-worker` and `libarith.so` (built once per test run).
fn bin_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = pnet_tests::build_packages(&[
            "pnet-gspc",
            "pnet-worker",
            "pnet-example-arith",
            "pnet-tokens",
        ]);
        for f in ["gspc", "gspc-worker", "libarith.so"] {
            assert!(
                dir.join(f).is_file(),
                "{} is missing",
                dir.join(f).display()
            );
        }
        dir
    })
}

/// A scratch folder with a gspc state directory (see [`pnet_tests::GspcScratch`]).
struct Scratch(pnet_tests::GspcScratch);

impl std::ops::Deref for Scratch {
    type Target = pnet_tests::GspcScratch;

    fn deref(&self) -> &pnet_tests::GspcScratch {
        &self.0
    }
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch(pnet_tests::GspcScratch::new(
            "gspc",
            name,
            bin_dir().join("gspc"),
        ))
    }

    fn net(&self, name: &str, text: &str) -> String {
        let p = self.dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    fn status(&self) -> serde_json::Value {
        serde_json::from_str(&self.ok(&["status", "--json"])).unwrap()
    }

    /// Polls the status until `pred` holds (or fails after 20 s).
    fn until(&self, what: &str, pred: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let t = Instant::now();
        loop {
            let s = self.status();
            if pred(&s) {
                return s;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "never {what}: {s:#}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn boot(&self, topology: &str) -> (u32, Vec<u32>) {
        let o = self.ok(&[
            "boot",
            "--topology",
            topology,
            "--module-path",
            &bin_dir().display().to_string(),
            "--timeout",
            "30",
        ]);
        assert!(o.contains("gspc: runtime booted (pid "), "{o}");
        assert!(o.contains(&self.state().display().to_string()), "{o}");
        let s = self.status();
        let pid = s["pid"].as_u64().unwrap() as u32;
        (pid, worker_pids(&s))
    }
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn worker_pids(s: &serde_json::Value) -> Vec<u32> {
    s["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["pid"].as_u64())
        .map(|p| p as u32)
        .collect()
}

fn up_workers(s: &serde_json::Value) -> Vec<String> {
    let mut v: Vec<String> = s["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["state"] == "up")
        .map(|w| w["name"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

/// Tokens put into `xs` while it runs -> `square` -> out port `ys`.
const FEED: &str = r#"<defun name="feed">
  <out name="ys" type="long" place="ys"/>
  <net>
    <place name="xs" type="long" put_token="true"/>
    <place name="ys" type="long"/>
    <transition name="square">
      <defun><in name="n" type="long"/><out name="r" type="long"/>
        <module name="arith" function="r square (n)"/></defun>
      <connect-in port="n" place="xs"/><connect-out port="r" place="ys"/>
    </transition>
  </net>
</defun>
"#;

/// `mss` -> `spin` (busy for ms milliseconds) -> out port `dones`; `REQ` is replaced by
/// requirements.
const SPIN: &str = r#"<defun name="spin">
  <in name="mss" type="long" place="mss"/>
  <out name="dones" type="control" place="dones"/>
  <net>
    <place name="mss" type="long"/>
    <place name="dones" type="control"/>
    <transition name="spin">
      <defun>REQ<in name="ms" type="long"/><out name="done" type="control"/>
        <module name="arith" function="done spin (ms)"/></defun>
      <connect-in port="ms" place="mss"/><connect-out port="done" place="dones"/>
    </transition>
  </net>
</defun>
"#;

#[test]
fn three_workflows_at_once_put_tokens_cancel_wait_and_stop() {
    let s = Scratch::new("three");
    let (pid, workers) = s.boot("worker:2");
    assert_eq!(workers.len(), 2);
    let st = s.status();
    assert_eq!(up_workers(&st).len(), 2, "{st:#}");
    assert_eq!(st["jobs_total"], 0);
    // A second boot into the same state directory is refused.
    let again = s.gspc(&["boot", "--topology", "worker:1"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        err(&again).contains("gspc-already-running"),
        "{}",
        err(&again)
    );

    let spin = s.net("spin.xpnet", &SPIN.replace("REQ", ""));
    let feed = s.net("feed.xpnet", FEED);
    let squares = s.net(
        "squares.xpnet",
        &pnet_tests::module_net("squares", "square", "arith", "square"),
    );
    let mut ms_args = vec!["submit", spin.as_str()];
    for _ in 0..20 {
        ms_args.extend(["-p", "mss=300L"]);
    }
    let a = s.ok(&ms_args).trim().to_string();
    let b = s.ok(&["submit", &feed]).trim().to_string();
    let mut sq_args = vec!["submit".to_string(), squares.clone()];
    for k in 0..10 {
        sq_args.push(format!("-pxs={k}L"));
    }
    let sq_refs: Vec<&str> = sq_args.iter().map(String::as_str).collect();
    let c = s.ok(&sq_refs).trim().to_string();
    assert_eq!((a.as_str(), b.as_str(), c.as_str()), ("1", "2", "3"));

    // Tokens into the running job b, then it is closed.
    s.ok(&["put-token", &b, "xs=3L", "xs=4L", "--close"]);
    // While a runs, status shows a worker busy with its transition.
    let busy = s.until("a worker runs a spin of job 1", |st| {
        st["workers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["running"]["job"] == 1 && w["running"]["transition"] == "spin")
    });
    assert_eq!(up_workers(&busy).len(), 2);
    let jobs: serde_json::Value = serde_json::from_str(&s.ok(&["jobs", "--json"])).unwrap();
    assert_eq!(jobs.as_array().unwrap().len(), 3, "{jobs:#}");
    assert_eq!(jobs[0]["net"], "spin.xpnet");
    assert_eq!(jobs[0]["state"], "running");

    s.ok(&["cancel", &a]);
    let wa = s.gspc(&["wait", &a]);
    assert_eq!(wa.status.code(), Some(130), "{}", err(&wa));
    assert!(err(&wa).contains("job 1 was cancelled"), "{}", err(&wa));

    let wc = s.ok(&["wait", &c]);
    let expected: String = {
        let mut v: Vec<i64> = (0..10).map(|k| k * k).collect();
        v.sort();
        v.iter().map(|q| format!("ys = {q}L\n")).collect()
    };
    assert_eq!(wc, expected);
    assert_eq!(s.ok(&["wait", &b]), "ys = 9L\nys = 16L\n");
    let wj: serde_json::Value = serde_json::from_str(&s.ok(&["wait", &b, "--json"])).unwrap();
    assert_eq!(
        wj["outputs"]["ys"],
        serde_json::json!({"type": "long", "tokens": [9, 16]})
    );
    let literal = s.ok(&["wait", &b, "--json", "--values=literal"]);
    let wl: serde_json::Value = serde_json::from_str(&literal).unwrap();
    assert_eq!(wl["outputs"]["ys"], serde_json::json!(["9L", "16L"]));
    // The same outputs, kept in a result file and read back by pnetget.
    let result = s.dir.join("b.pnr");
    s.ok(&["wait", &b, "--result", result.to_str().unwrap()]);
    let got = Command::new(bin_dir().join("pnetget"))
        .arg(&result)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&got.stdout), "ys = 9L\nys = 16L\n");

    let table = s.ok(&["jobs"]);
    let states: Vec<&str> = table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(2).unwrap())
        .collect();
    assert_eq!(states, ["cancelled", "done", "done"], "{table}");
    // A failing job: exit 1 with the transition's location.
    let bad = s.ok(&["submit", &squares, "-p", "xs=3037000500L"]);
    let wb = s.gspc(&["wait", bad.trim()]);
    assert_eq!(wb.status.code(), Some(1));
    assert!(err(&wb).contains("square"), "{}", err(&wb));
    assert!(err(&wb).contains("squares.xpnet:"), "{}", err(&wb));

    let stop = s.ok(&["stop"]);
    assert!(
        stop.starts_with(&format!(
            "gspc: stopped runtime pid {pid}: 0 jobs cancelled, 2 workers stopped ("
        )),
        "{stop}"
    );
    assert!(stop.trim_end().ends_with(", 0 left"), "{stop}");
    for p in workers.iter().chain([&pid]) {
        assert!(wait_gone(*p, Duration::from_secs(5)), "process {p} is left");
    }
    for f in ["control.sock", "gspc.pid"] {
        assert!(!s.state().join(f).exists(), "{f} is left");
    }
    let st = s.gspc(&["status"]);
    assert_eq!(st.status.code(), Some(1));
    assert!(err(&st).contains("gspc-no-runtime"), "{}", err(&st));
}

#[test]
fn added_workers_start_waiting_tasks_and_removed_ones_tasks_run_elsewhere() {
    let s = Scratch::new("grow");
    let (pid, _) = s.boot("cpu:1");
    // Needs a `gpu` worker: it waits.
    let gpu = s.net(
        "gpu.xpnet",
        &SPIN.replace("REQ", r#"<require key="gpu" mandatory="true"/>"#),
    );
    let j = s.ok(&["submit", &gpu, "-p", "mss=10L"]).trim().to_string();
    std::thread::sleep(Duration::from_millis(300));
    let jobs: serde_json::Value = serde_json::from_str(&s.ok(&["jobs", "--json"])).unwrap();
    assert_eq!(jobs[0]["state"], "running");
    assert_eq!(jobs[0]["tasks_queued"], 1, "{jobs:#}");
    let added = s.ok(&["add-workers", "gpu:1"]);
    assert!(added.starts_with("gspc: added 1 workers: gpu-"), "{added}");
    assert_eq!(s.ok(&["wait", &j]), "dones = []\n");
    let st = s.status();
    assert_eq!(up_workers(&st).len(), 2, "{st:#}");
    // Names do not clash.
    s.ok(&["add-workers", "cpu:1"]);
    let st = s.status();
    let names = up_workers(&st);
    assert_eq!(names.len(), 3, "{st:#}");

    // A long task; remove the worker that runs it: it runs again on another.
    let spin = s.net("spin.xpnet", &SPIN.replace("REQ", ""));
    let k = s
        .ok(&["submit", &spin, "-p", "mss=1500L"])
        .trim()
        .to_string();
    let busy = s.until("a worker runs the spin", |st| {
        st["workers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["running"]["transition"] == "spin")
    });
    let victim = busy["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["running"]["transition"] == "spin")
        .unwrap();
    let (vname, vpid) = (
        victim["name"].as_str().unwrap().to_string(),
        victim["pid"].as_u64().unwrap() as u32,
    );
    let removed = s.ok(&["remove-workers", &vname]);
    assert!(removed.contains(&vname), "{removed}");
    assert!(
        wait_gone(vpid, Duration::from_secs(10)),
        "removed worker left"
    );
    assert_eq!(s.ok(&["wait", &k]), "dones = []\n");
    let st = s.status();
    let left = up_workers(&st);
    assert_eq!(left.len(), 2, "{st:#}");
    assert!(!left.contains(&vname));
    let bad = s.gspc(&["remove-workers", "nosuch"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        err(&bad).contains("there is no worker `nosuch`"),
        "{}",
        err(&bad)
    );
    let stop = s.ok(&["stop"]);
    assert!(stop.contains("2 workers stopped"), "{stop}");
    assert!(wait_gone(pid, Duration::from_secs(5)));
}

#[test]
fn a_private_state_directory_and_the_secret_are_checked() {
    let s = Scratch::new("private");
    // A state directory others can read is refused.
    std::fs::set_permissions(s.state(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = s.gspc(&["boot", "--topology", "w:1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("gspc-state-dir-mode"), "{}", err(&o));
    assert!(err(&o).contains("chmod 700"), "{}", err(&o));
    std::fs::set_permissions(s.state(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let (pid, _) = s.boot("w:1");
    let secret = s.state().join("secret");
    let mode = std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let sock = s.state().join("control.sock");
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // A client without the runtime's secret is refused.
    let real = std::fs::read_to_string(&secret).unwrap();
    std::fs::write(&secret, format!("{}\n", "ab".repeat(32))).unwrap();
    let o = s.gspc(&["status"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("gspc-refused"), "{}", err(&o));
    assert!(err(&o).contains("wrong secret"), "{}", err(&o));
    std::fs::write(&secret, real).unwrap();
    // Usage errors are exit code 2 and need no runtime.
    assert_eq!(s.gspc(&["wait"]).status.code(), Some(2));
    assert_eq!(s.gspc(&["submit"]).status.code(), Some(2));
    assert_eq!(s.gspc(&["frobnicate"]).status.code(), Some(2));
    for cmd in [
        "boot",
        "status",
        "submit",
        "wait",
        "stop",
        "add-workers",
        "remove-workers",
    ] {
        let h = s.gspc(&[cmd, "--help"]);
        assert!(
            h.status.success() && out(&h).contains("Usage: gspc"),
            "{cmd} --help"
        );
    }
    let stop = s.ok(&["stop"]);
    assert!(stop.contains("1 worker stopped"), "{stop}");
    assert!(wait_gone(pid, Duration::from_secs(5)));
    assert!(!Path::new(&sock).exists());
}

#[test]
fn a_status_page_lists_some_workers_by_name_and_counts_them_all() {
    use std::io::{BufRead, BufReader, Write};
    let s = Scratch::new("page");
    let (pid, _) = s.boot("worker:5");
    // The JSON socket: `status` with workers_offset/workers_limit is a page (StatusPage).
    let secret = std::fs::read_to_string(s.state().join("secret")).unwrap();
    let sock = std::os::unix::net::UnixStream::connect(s.state().join("control.sock")).unwrap();
    let mut rd = BufReader::new(sock.try_clone().unwrap());
    let mut wr = sock;
    let mut ask = |line: String| -> serde_json::Value {
        wr.write_all(format!("{line}\n").as_bytes()).unwrap();
        let mut a = String::new();
        rd.read_line(&mut a).unwrap();
        serde_json::from_str(&a).unwrap()
    };
    ask(r#"{"protocol":"pnet-control","version":1,"encoding":"json"}"#.into());
    let mut status = |page: &str| {
        ask(format!(
            r#"{{"kind":"status","secret":"{}"{page}}}"#,
            secret.trim()
        ))
    };
    let names = |j: &serde_json::Value| -> Vec<String> {
        j["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].as_str().unwrap().to_string())
            .collect()
    };
    let counts = |j: &serde_json::Value| {
        (
            j["workers_total"].as_u64(),
            j["workers_up"].as_u64(),
            j["workers_offset"].as_u64(),
        )
    };
    let all = status("");
    let every = names(&all);
    assert_eq!(every.len(), 5, "{all:#}");
    assert!(every.is_sorted(), "{every:?}");
    assert_eq!(counts(&all), (Some(5), Some(5), Some(0)));
    let page = status(r#","workers_offset":1,"workers_limit":2"#);
    assert_eq!(names(&page), every[1..3].to_vec());
    assert_eq!(counts(&page), (Some(5), Some(5), Some(1)));
    assert_eq!(page["workers"][0]["pid"], all["workers"][1]["pid"]);
    let past = status(r#","workers_offset":9,"workers_limit":2"#);
    assert!(names(&past).is_empty());
    assert_eq!(counts(&past), (Some(5), Some(5), Some(5)));
    let none = status(r#","workers_limit":0"#);
    assert!(names(&none).is_empty());
    assert_eq!(counts(&none), (Some(5), Some(5), Some(0)));
    // A small runtime: `gspc status` lists every worker as before; --workers the same.
    let table = s.ok(&["status"]);
    assert!(table.contains("\n5 workers\n"), "{table}");
    let table_all = s.ok(&["status", "--workers"]);
    // The heartbeat's age moves between the two requests: compare the rows without it.
    let rows = |t: &str| -> Vec<String> {
        t.lines()
            .skip(2)
            .take(6)
            .map(|l| match (l.find("last heartbeat"), l.find("s ago")) {
                (Some(a), Some(b)) if a < b => format!("{}{}", &l[..a], &l[b + 5..]),
                _ => l.to_string(),
            })
            .collect()
    };
    assert_eq!(rows(&table_all), rows(&table));
    let j = s.status();
    assert_eq!(j["workers"].as_array().unwrap().len(), 5);
    assert!(j.get("workers_total").is_none(), "{j:#}");
    s.ok(&["stop"]);
    assert!(wait_gone(pid, Duration::from_secs(5)));
}
