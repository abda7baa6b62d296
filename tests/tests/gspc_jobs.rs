//! End-to-end tests of `gspc` jobs with real processes: a job's own module path (`gspc submit
//! --module-path`, and the net's folder), honest endings (`gspc wait` warns about a net that
//! stopped early, `--require-outputs`, `gspc jobs`), and `gspc wait --timeout`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The folder with `gspc`, `gspc-worker` and `libarith.so` (built once per test run).
fn bin_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        pnet_tests::build_packages(&["pnet-gspc", "pnet-worker", "pnet-example-arith"])
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
            "gspcj",
            name,
            bin_dir().join("gspc"),
        ))
    }

    /// Writes `text` to `rel` (creating its folder); returns the path.
    fn file(&self, rel: &str, text: &str) -> String {
        let p = self.dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    /// An executable shell script at `rel`.
    fn script(&self, rel: &str, text: &str) -> String {
        let p = self.file(rel, text);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn boot(&self, topology: &str) {
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
    }

    fn jobs(&self) -> serde_json::Value {
        serde_json::from_str(&self.ok(&["jobs", "--json"])).unwrap()
    }
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `x` -> `greet.hello` (a command module in a --module-path folder) -> `shout.up` (one in
/// the net's folder) -> out port `y`; `REQ` is replaced by requirements of `hello`.
const TWO_MODULES: &str = r#"<defun name="two">
  <in name="x" type="long" place="x"/>
  <out name="y" type="long" place="y"/>
  <net>
    <place name="x" type="long"/>
    <place name="m" type="long"/>
    <place name="y" type="long"/>
    <transition name="hello">
      <defun>REQ<in name="a" type="long"/><out name="b" type="long"/>
        <module name="greet" function="b hello (a)"/></defun>
      <connect-in port="a" place="x"/><connect-out port="b" place="m"/>
    </transition>
    <transition name="up">
      <defun><in name="a" type="long"/><out name="b" type="long"/>
        <module name="shout" function="b up (a)"/></defun>
      <connect-in port="a" place="m"/><connect-out port="b" place="y"/>
    </transition>
  </net>
</defun>
"#;

/// A command module answering `{"b": N}` whatever it is given.
fn answer(n: i64) -> String {
    format!("#!/bin/sh\ncat >/dev/null\necho '{{\"b\": {n}}}'\n")
}

#[test]
fn a_jobs_module_path_and_its_nets_folder_are_searched() {
    let s = Scratch::new("modpath");
    s.boot("worker:1");
    let mods = s.script("mods/greet.hello", &answer(41));
    let mods_dir = Path::new(&mods).parent().unwrap().display().to_string();
    s.script("net/shout.up", &answer(42));
    let net = s.file("net/two.xpnet", &TWO_MODULES.replace("REQ", ""));

    let job = s.ok(&["submit", &net, "-p", "x=1L", "--module-path", &mods_dir]);
    let w = s.gspc(&["wait", job.trim()]);
    assert_eq!(w.status.code(), Some(0), "{}", err(&w));
    assert_eq!(out(&w), "y = 42L\n");
    assert_eq!(err(&w), "");

    // Without --module-path, `greet` is found nowhere (`shout` still is, in the net's folder).
    let job = s.ok(&["submit", &net, "-p", "x=1L"]);
    let w = s.gspc(&["wait", job.trim()]);
    assert_eq!(w.status.code(), Some(1), "{}", out(&w));
    assert!(
        err(&w).contains("no libgreet.so, executable greet.hello or executable greet"),
        "{}",
        err(&w)
    );

    // A worker that joins while such a job waits learns the job's path too: `hello` needs
    // a capability only a worker added later has.
    let late = s.file(
        "net/late.xpnet",
        &TWO_MODULES.replace("REQ", r#"<require key="late" mandatory="true"/>"#),
    );
    let job = s.ok(&["submit", &late, "-p", "x=1L", "--module-path", &mods_dir]);
    s.ok(&["add-workers", "late:1", "--timeout", "30"]);
    let w = s.gspc(&["wait", job.trim()]);
    assert_eq!(w.status.code(), Some(0), "{}", err(&w));
    assert_eq!(out(&w), "y = 42L\n");

    // A --module-path that does not exist is a usage error.
    let bad = s.gspc(&["submit", &net, "--module-path", "/nonexistent/mods"]);
    assert_eq!(bad.status.code(), Some(2), "{}", err(&bad));
    assert!(
        err(&bad).contains("--module-path /nonexistent/mods"),
        "{}",
        err(&bad)
    );
}

/// `join` needs a token on `a` and one on `b`.
const JOIN: &str = r#"<defun name="join">
  <in name="a" type="long" place="a"/>
  <in name="b" type="long" place="b"/>
  <out name="r" type="long" place="r"/>
  <net>
    <place name="a" type="long"/>
    <place name="b" type="long"/>
    <place name="r" type="long"/>
    <transition name="join">
      <defun><in name="x" type="long"/><in name="y" type="long"/><out name="s" type="long"/>
        <expression>${s} := ${x} + ${y}</expression></defun>
      <connect-in port="x" place="a"/><connect-in port="y" place="b"/>
      <connect-out port="s" place="r"/>
    </transition>
  </net>
</defun>
"#;

/// `ms` -> `arith.spin` (busy for ms milliseconds) -> out port `done`.
const SPIN: &str = r#"<defun name="spin">
  <in name="ms" type="long" place="ms"/>
  <out name="done" type="control" place="done"/>
  <net>
    <place name="ms" type="long"/>
    <place name="done" type="control"/>
    <transition name="spin">
      <defun><in name="ms" type="long"/><out name="done" type="control"/>
        <module name="arith" function="done spin (ms)"/></defun>
      <connect-in port="ms" place="ms"/><connect-out port="done" place="done"/>
    </transition>
  </net>
</defun>
"#;

#[test]
fn endings_are_told_and_wait_times_out() {
    let s = Scratch::new("endings");
    s.boot("worker:1");
    let join = s.file("join.xpnet", JOIN);

    // A complete run: no warning.
    let job = s.ok(&["submit", &join, "-p", "a=1L", "-p", "b=2L"]);
    let w = s.gspc(&["wait", job.trim(), "--require-outputs"]);
    assert_eq!(w.status.code(), Some(0), "{}", err(&w));
    assert_eq!((out(&w).as_str(), err(&w).as_str()), ("r = 3L\n", ""));

    // A forgotten input: named at submission, and the ending at the wait.
    let sub = s.gspc(&["submit", &join, "-p", "a=1L", "-p", "a=5L"]);
    assert_eq!(sub.status.code(), Some(0), "{}", err(&sub));
    assert_eq!(
        err(&sub),
        "gspc: warning: in port `b` got no value (-p b=...) and nothing in the net puts a \
         token on it\n"
    );
    let job = out(&sub).trim().to_string();
    let w = s.gspc(&["wait", &job]);
    assert_eq!(w.status.code(), Some(0), "{}", err(&w));
    assert_eq!(out(&w), "");
    assert_eq!(
        err(&w),
        format!(
            "gspc: warning: job {job}: the net stopped with tokens left on: a (2); out port \
             `r` is empty; transition `join` lacked a token on `b`\n"
        )
    );
    let w = s.gspc(&["wait", &job, "--require-outputs", "--json"]);
    assert_eq!(w.status.code(), Some(3), "{}", err(&w));
    let doc: serde_json::Value = serde_json::from_str(&out(&w)).unwrap();
    assert_eq!(doc["ending"]["complete"], false, "{doc}");
    assert_eq!(doc["ending"]["tokens_left"][0]["place"], "a", "{doc}");
    assert_eq!(doc["ending"]["tokens_left"][0]["tokens"], 2, "{doc}");
    assert_eq!(doc["ending"]["empty_outputs"][0], "r", "{doc}");
    let jobs = s.jobs();
    let states: Vec<&str> = jobs
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["done", "done (incomplete)"], "{jobs:#}");
    assert!(s.ok(&["jobs"]).contains("done (incomplete)"));

    // --timeout: a job that runs longer.
    let spin = s.file("spin.xpnet", SPIN);
    let job = s
        .ok(&["submit", &spin, "-p", "ms=20000L"])
        .trim()
        .to_string();
    let t0 = Instant::now();
    let w = s.gspc(&["wait", &job, "--timeout", "0.5"]);
    let took = t0.elapsed();
    assert_eq!(w.status.code(), Some(4), "{}", err(&w));
    assert!(took >= Duration::from_millis(500), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let e = err(&w);
    assert!(
        e.starts_with(&format!(
            "gspc: job {job} has not ended after 0.5 s: running, "
        )),
        "{e}"
    );
    assert!(e.contains(", tasks: ") && e.contains(" queued, "), "{e}");
    let w = s.gspc(&["wait", &job, "--timeout", "0.2", "--json"]);
    assert_eq!(w.status.code(), Some(4), "{}", err(&w));
    let doc: serde_json::Value = serde_json::from_str(&out(&w)).unwrap();
    assert_eq!(doc["state"], "timeout", "{doc}");
    assert_eq!(doc["job_state"], "running", "{doc}");
    // A bad timeout is a usage error.
    assert_eq!(
        s.gspc(&["wait", &job, "--timeout", "soon"]).status.code(),
        Some(2)
    );
    s.ok(&["cancel", &job]);
    let w = s.gspc(&["wait", &job, "--timeout", "20"]);
    assert_eq!(w.status.code(), Some(130), "{}", err(&w));
}
