//! The `gspc-topology` command line: help, exit statuses, diagnostics, JSON.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gspc-topology"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run gspc-topology")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A file in the temporary directory, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, content: &str) -> TempFile {
        let path =
            std::env::temp_dir().join(format!("gspc-topology-{}-{name}", std::process::id()));
        std::fs::write(&path, content).expect("write temp file");
        TempFile(path)
    }
    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

const GOOD: &str = r#"<topology name="t">
  <var name="n" value="3"/>
  <decltask name="a"><exe>run-a</exe></decltask>
  <declcollection name="c"><tasks><name n="2">a</name></tasks></declcollection>
  <main name="main">
    <task>a</task>
    <group name="g" n="${n}"><collection>c</collection></group>
  </main>
</topology>
"#;

const BAD: &str = r#"<topology name="t">
  <decltask name="a"><exe>run-a</exe></decltask>
  <main name="main">
    <task>b</task>
  </main>
</topology>
"#;

#[test]
fn help_and_version() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for cmd in ["validate", "expand", "count", "required-agents", "diff"] {
        assert!(help.contains(cmd), "{help}");
    }
    let out = run(&["diff", "--help"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("--json"));
    let out = run(&["--version"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).starts_with("gspc-topology "));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["frobnicate"][..],
        &["validate"][..],
        &["required-agents", "x.xml"][..],
        &["required-agents", "--slots", "0", "x.xml"][..],
        &["expand", "--var", "novalue", "x.xml"][..],
    ] {
        let out = run(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn valid_and_invalid_files() {
    let good = TempFile::new("good.xml", GOOD);
    let bad = TempFile::new("bad.xml", BAD);
    let out = run(&["validate", good.path()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(&["validate", good.path(), bad.path()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("error[dds-undeclared]: task `b` is not declared"),
        "{err}"
    );
    assert!(err.contains(&format!("{}:4:11", bad.path())), "{err}");
    // Raw: the `${n}` is not a number.
    let out = run(&["validate", "--raw", good.path()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("dds-bad-value"));
    // A missing file is invalid input.
    let out = run(&["count", "/nonexistent/topology.xml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot read the file"));
}

#[test]
fn expand_count_and_agents() {
    let good = TempFile::new("good2.xml", GOOD);
    let out = run(&["expand", good.path()]);
    assert!(out.status.success());
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines[0], "# tasks (7)");
    assert!(lines[1].ends_with(" main/a_0"), "{lines:?}");
    assert!(lines[7].ends_with(" main/g/c_2/a_1"), "{lines:?}");
    assert_eq!(lines[8], "# collections (3)");
    let out = run(&["expand", "--var", "n=1", good.path()]);
    assert!(text(&out.stdout).starts_with("# tasks (3)"));

    let out = run(&["required-agents", "--slots", "2", good.path()]);
    assert_eq!(text(&out.stdout).trim(), "4"); // ceil(7 / 2)
    let out = run(&["required-agents", "--slots", "2", "--json", good.path()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["required_agents"], 4);
    assert_eq!(v["largest_collection"], 2);

    let out = run(&["count", "--json", good.path()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["valid"], true);
    assert_eq!(v["files"][0]["tasks"], 7);
    assert_eq!(v["files"][0]["collections"], 3);
    assert_eq!(v["files"][0]["per_task"][0]["count"], 7);
}

#[test]
fn json_diagnostics() {
    let bad = TempFile::new("bad2.xml", BAD);
    let out = run(&["validate", "--json", bad.path()]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let d = &v["files"][0]["diagnostics"][0];
    assert_eq!(d["code"], "dds-undeclared");
    assert_eq!(d["severity"], "error");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(4), Some(11))
    );
    assert_eq!(v["files"][0]["errors"], 1);
}

#[test]
fn diff_two_files() {
    let a = TempFile::new("a.xml", GOOD);
    let b = TempFile::new("b.xml", &GOOD.replace("value=\"3\"", "value=\"2\""));
    let out = run(&["diff", a.path(), b.path()]);
    assert!(out.status.success());
    let t = text(&out.stdout);
    let removed: Vec<&str> = t
        .lines()
        .skip_while(|l| !l.starts_with("----- Removed tasks"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----"))
        .collect();
    assert_eq!(removed.len(), 2, "{t}");
    assert!(removed.iter().all(|l| l.contains("main/g/c_2/")), "{t}");
    let out = run(&["diff", "--json", a.path(), b.path()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["removed_collections"][0]["path"], "main/g/c_2");
    assert_eq!(v["added_tasks"].as_array().map(Vec::len), Some(0));
}

/// A 23 KB topology with thousands of errors, all on one line and then one per line: the
/// diagnostics shown are capped per file and long lines are windows, so standard error stays
/// small (it was 35 s and megabytes: every error re-printed the whole line).
#[test]
fn many_errors_give_bounded_output() {
    for sep in ["", "\n"] {
        let tasks: String = (0..1500)
            .map(|i| format!("<task>t{i}</task>{sep}"))
            .collect();
        let topology = format!(
            "<topology name=\"t\"><decltask name=\"a\"><exe>run-a</exe></decltask><main name=\"main\">{tasks}</main></topology>\n"
        );
        assert!(topology.len() > 23_000);
        let file = TempFile::new("many-errors.xml", &topology);
        let start = std::time::Instant::now();
        let out = run(&["validate", "--color", "never", file.path()]);
        // Only a sanity bound: it finishes.
        assert!(start.elapsed().as_secs() < 60);
        assert_eq!(out.status.code(), Some(1));
        let err = text(&out.stderr);
        assert!(err.len() < 60_000, "{} bytes", err.len());
        assert!(err.matches("error[").count() <= 50, "{err}");
        assert!(err.contains("more errors in"), "{err}");
        // The JSON lists them all.
        let out = run(&["validate", "--json", file.path()]);
        let json = text(&out.stdout);
        assert!(json.matches("\"code\"").count() >= 1500);
    }
}

/// `expand --json` writes instances as they are made: a 150-byte topology with 150,000
/// instances runs under a 200 MB address-space limit (it used to build the whole JSON tree
/// first: about 2.2 GB per million instances).
#[test]
fn expand_streams_its_output_in_bounded_memory() {
    let topo = TempFile::new(
        "big.xml",
        r#"<topology name="t"><decltask name="w"><exe>/bin/true</exe></decltask><main name="main"><group name="g" n="150000"><task>w</task></group></main></topology>"#,
    );
    for json in [true, false] {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v 200000; exec \"$0\" expand {} \"$1\" | tail -n 4",
                if json { "--json" } else { "" }
            ))
            .arg(env!("CARGO_BIN_EXE_gspc-topology"))
            .arg(topo.path())
            .output()
            .expect("run gspc-topology");
        let tail = text(&out.stdout);
        assert!(out.status.success(), "{tail} {}", text(&out.stderr));
        if json {
            assert!(tail.contains("\"path\":\"main/g/w_149999\""), "{tail}");
            assert!(tail.contains("\"collections\": []"), "{tail}");
        } else {
            assert!(tail.contains("main/g/w_149999"), "{tail}");
            assert!(tail.contains("# collections (0)"), "{tail}");
        }
    }
}

/// A full disk is an error, not a lost expansion with exit 0.
#[test]
fn expand_to_a_full_disk_fails() {
    let good = TempFile::new("full.xml", GOOD);
    for args in [
        &["expand", good.path()][..],
        &["expand", "--json", good.path()],
    ] {
        let out = bin()
            .args(args)
            .stdout(std::fs::File::create("/dev/full").expect("/dev/full"))
            .output()
            .expect("run gspc-topology");
        assert!(!out.status.success(), "{args:?}");
        assert!(
            text(&out.stderr).contains("cannot write"),
            "{}",
            text(&out.stderr)
        );
    }
}
