//! Workload descriptions (`.workload`) through the real tools: pnetc compiles every example
//! without diagnostics and prints the generated net, errors are rendered against the
//! workload file, pnet2dot's drawing passes `dot`, pnetv explores one, and gspc-run runs a
//! fan-out / fan-in end to end on two local workers.

use std::path::PathBuf;
use std::process::{Command, Output};

use pnet_tests::{bin, build_packages, workspace_root};

fn examples() -> Vec<PathBuf> {
    let dir = workspace_root().join("examples/workload");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "workload"))
        .collect();
    out.sort();
    out
}

/// The binaries (and `workload_exec`, which `cargo test` does not build for another
/// package's tests).
fn built() -> PathBuf {
    build_packages(&["pnetc", "pnet2dot", "pnetv", "gspc-run", "pnet-worker"])
}

fn run(cmd: &mut Command) -> Output {
    cmd.env("NO_COLOR", "1").output().expect("run the tool")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn pnetc_compiles_every_example_without_diagnostics() {
    built();
    let examples = examples();
    assert!(examples.len() >= 3, "{examples:?}");
    for ex in &examples {
        let out = run(Command::new(bin("pnetc")).arg(ex));
        assert!(
            out.status.success(),
            "{}: {}",
            ex.display(),
            text(&out.stderr)
        );
        assert_eq!(text(&out.stderr), "", "{}", ex.display());
    }
    // --emit=xpnet prints the generated net, which pnetc compiles as any other net.
    let fan = workspace_root().join("examples/workload/fan.workload");
    let out = run(Command::new(bin("pnetc")).arg("--emit=xpnet").arg(&fan));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let xpnet = text(&out.stdout);
    assert!(
        xpnet.contains("<module name=\"workload_exec\" function=\"t2_square\"/>"),
        "{xpnet}"
    );
    assert!(
        xpnet.contains("<out name=\"total_sum\" type=\"long\""),
        "{xpnet}"
    );
    let dir = tempdir("emit");
    let file = dir.join("fan.xpnet");
    std::fs::write(&file, &xpnet).unwrap();
    let out = run(Command::new(bin("pnetc"))
        .arg(&file)
        .arg("-o")
        .arg(dir.join("fan.pnet")));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempdir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pnet-workload-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn errors_are_rendered_against_the_workload_file() {
    built();
    let dir = tempdir("errors");
    let file = dir.join("bad.workload");
    std::fs::write(
        &file,
        "task a { out x: INTEGER; EXECUTABLE = 'true'; }\nrelation a.x -> nope.y (INPUT-OUTPUT);\n",
    )
    .unwrap();
    for tool in ["pnetc", "pnet2dot", "pnetv", "gspc-run"] {
        let out = run(Command::new(bin(tool)).arg(&file));
        assert_eq!(out.status.code(), Some(1), "{tool}");
        let err = text(&out.stderr);
        assert!(
            err.contains("error[workload-unknown-task]: there is no task `nope`"),
            "{tool}: {err}"
        );
        assert!(err.contains("bad.workload:2:17"), "{tool}: {err}");
        assert!(
            err.contains("bad.workload: 1 error in the workload description"),
            "{tool}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pnet2dot_draws_every_example_for_dot() {
    built();
    for ex in examples() {
        let out = run(Command::new(bin("pnet2dot")).arg(&ex));
        assert!(
            out.status.success(),
            "{}: {}",
            ex.display(),
            text(&out.stderr)
        );
        let graph = text(&out.stdout);
        assert!(graph.starts_with("digraph"), "{graph}");
        let mut dot = Command::new("dot")
            .arg("-Tsvg")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("dot (graphviz) is installed");
        std::io::Write::write_all(dot.stdin.as_mut().unwrap(), graph.as_bytes()).unwrap();
        drop(dot.stdin.take());
        let svg = dot.wait_with_output().unwrap();
        assert!(
            svg.status.success(),
            "{}: {}",
            ex.display(),
            text(&svg.stderr)
        );
        assert!(text(&svg.stdout).contains("<svg"));
    }
}

#[test]
fn pnetv_explores_the_fan() {
    built();
    let fan = workspace_root().join("examples/workload/fan.workload");
    // With the programs' outputs assumed, the state space is exact: every run ends properly.
    let out = run(Command::new(bin("pnetv")).arg(&fan).args([
        "--json",
        "--assume",
        "t1_seed.out_n=10L",
        "--assume",
        "t2_square.out_sq=100L,121L",
        "--assume",
        "t3_total.out_sum=365L",
    ]));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", text(&out.stdout), text(&out.stderr)));
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["deadlock"], false, "{report}");
    assert_eq!(report["terminates"], true, "{report}");
    assert_eq!(report["complete"], true, "{report}");
    assert_eq!(report["transitions"], 7, "{report}");
    assert_eq!(
        report["dead_transitions"],
        serde_json::json!([]),
        "{report}"
    );
}

/// The demonstration: one task's value fans out to 3 instances, whose results fan
/// in to one task: (10+0)^2 + (10+1)^2 + (10+2)^2 = 365.
#[test]
fn gspc_run_fans_out_and_in() {
    built();
    let fan = workspace_root().join("examples/workload/fan.workload");
    let out = run(Command::new(bin("gspc-run")).arg(&fan).args([
        "--topology",
        "worker:2",
        "--no-progress",
    ]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "total_sum = 365L\n");
}

#[test]
fn gspc_run_orders_and_co_schedules() {
    built();
    let dir = tempdir("pipeline");
    let pipeline = workspace_root().join("examples/workload/pipeline.workload");
    let out = run(Command::new(bin("gspc-run"))
        .arg(&pipeline)
        .args(["--topology", "worker:2", "--no-progress", "-p"])
        .arg(format!("prepare_dir=\"{}\"", dir.display())));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "a_who = \"a\"\nb_who = \"b\"\ncompute_words = 2L\nmonitor_seen = \"compute started\"\n"
    );
    // compute removed the file prepare wrote
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&dir);

    let ensemble = workspace_root().join("examples/workload/ensemble.workload");
    let out = run(Command::new(bin("gspc-run")).arg(&ensemble).args([
        "--topology",
        "worker:2",
        "--no-progress",
        "-p",
        "member_label=\"run\"",
    ]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "report_line = \"18 from 1 report\"\n");
}

#[test]
fn a_failing_program_fails_the_run_with_its_status() {
    built();
    let dir = tempdir("fail");
    let file = dir.join("fail.workload");
    std::fs::write(
        &file,
        "task boom { out x: STRING; EXECUTABLE = '/bin/sh'; ARGUMENTS = \"-c 'echo going down >&2; exit 7'\"; }\n",
    )
    .unwrap();
    let out = run(Command::new(bin("gspc-run")).arg(&file).args([
        "--topology",
        "worker:1",
        "--no-progress",
    ]));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("going down"), "{err}");
    assert!(
        err.contains("task `boom` instance 0: `/bin/sh` exited with status 7"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
