//! End-to-end runs of DDS topologies (examples/dds/) through the real binaries: `gspc-dds`
//! (the runner, pnet-dds-run) starts one `gspc-property exec` wrapper per task on loopback;
//! tasks exchange properties with `gspc-property set|wait`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pnet_tests::{build_packages, workspace_root};

/// A fresh temporary folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pnet-dds-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn bins() -> PathBuf {
    build_packages(&["pnet-dds-run"])
}

fn example(name: &str) -> String {
    workspace_root()
        .join("examples/dds")
        .join(name)
        .display()
        .to_string()
}

fn gspc_dds(args: &[&str], out: &Path) -> Output {
    Command::new(bins().join("gspc-dds"))
        .args(args)
        .env("DDS_EXAMPLE_OUT", out)
        .env_remove("GSPC_PROPERTY")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn producer_publishes_and_three_consumers_read_it() {
    let out = scratch("props");
    let o = gspc_dds(
        &[
            "--topology",
            "worker:4",
            "--var",
            "message=bonjour",
            "--json",
            &example("producer_consumer.xml"),
        ],
        &out,
    );
    let stderr = text(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    for k in 0..3 {
        let got = read(&out.join(format!("consumer_{k}.txt")));
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(lines.len(), 3, "{got}");
        assert!(
            lines[0].starts_with("greeting: bonjour from main/producer"),
            "{got}"
        );
        assert_eq!(lines[1], "asset: format=text");
        assert!(
            lines[2].contains(&format!("index {k} of group consumers (argument {k})")),
            "{got}"
        );
    }
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["ok"], true);
    assert_eq!(report["topology"], "producer_consumer");
    assert_eq!(report["tasks"].as_array().unwrap().len(), 4);
    assert_eq!(report["restarts"], 0);
    assert!(
        report["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"] == "exited" && t["exit_code"] == 0)
    );
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_task_that_crashes_once_is_restarted_by_its_trigger() {
    let out = scratch("restart");
    let o = gspc_dds(
        &[
            "--topology",
            "worker:1",
            "-v",
            "--json",
            &example("restart.xml"),
        ],
        &out,
    );
    let stderr = text(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let marker = read(&out.join("flaky.marker"));
    assert_eq!(marker.lines().count(), 2, "{marker}");
    assert!(marker.starts_with("run 1 of main/flaky"), "{marker}");
    assert!(
        stderr.contains("exited with status 1; restarting it (restart 1 of 2)"),
        "{stderr}"
    );
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["tasks"][0]["restarts"], 1);
    assert_eq!(report["restarts"], 1);
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_crash_without_trigger_fails_the_run() {
    let out = scratch("crash");
    // Build (or find) the binaries before the clock starts.
    bins();
    let t0 = Instant::now();
    let work = out.join("work");
    let o = gspc_dds(
        &[
            "--topology",
            "worker:2",
            "--workdir",
            work.to_str().unwrap(),
            &example("crash.xml"),
        ],
        &out,
    );
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    // The sleeper (60 s) was stopped.
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    assert!(
        stderr.contains("gspc-dds: error: task `main/broken"),
        "{stderr}"
    );
    assert!(
        stderr.contains("exited with status 1 on worker-"),
        "{stderr}"
    );
    assert!(stderr.contains("the other tasks were stopped"), "{stderr}");
    assert!(stderr.contains("| broken: cannot go on"), "{stderr}");
    // The session folder is kept, with the task's log.
    assert!(stderr.contains("is kept"), "{stderr}");
    let session = std::fs::read_dir(&work)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let log = read(&session.join("tasks/main/broken_0/stderr.log"));
    assert_eq!(log, "broken: cannot go on\n");
    assert!(
        text(&o.stdout).contains("2 tasks, 0 restarts, 1 failure"),
        "{}",
        text(&o.stdout)
    );
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn placement_errors_dry_run_and_usage() {
    let out = scratch("usage");
    // Four tasks on one worker.
    let o = gspc_dds(
        &["--topology", "worker:1", &example("producer_consumer.xml")],
        &out,
    );
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error[dds-place-too-few-slots]: the topology has 4 tasks but the workers offer only 1 slot"),
        "{stderr}"
    );
    assert!(stderr.contains("producer_consumer.xml:"), "{stderr}");
    // A requirement no worker meets, reported at the requirement.
    let bad = out.join("bad.xml");
    std::fs::write(
        &bad,
        "<topology name=\"t\">\n  <declrequirement name=\"gpus\" type=\"gpu\" value=\"1\"/>\n  <decltask name=\"a\"><exe>true</exe><requirements><name>gpus</name></requirements></decltask>\n  <main name=\"main\"><task>a</task></main>\n</topology>\n",
    )
    .unwrap();
    let o = gspc_dds(&["--topology", "worker:2", bad.to_str().unwrap()], &out);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("bad.xml:2:3: error[dds-place-unsatisfiable]: cannot place task `main/a"),
        "{stderr}"
    );
    // With a GPU worker it places; --dry-run prints where.
    let o = gspc_dds(
        &[
            "--topology",
            "worker:2 gpu+GPU:1",
            "--dry-run",
            bad.to_str().unwrap(),
        ],
        &out,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("gpu-"), "{}", text(&o.stdout));
    // A topology with errors.
    std::fs::write(&bad, "<topology name=\"t\">\n  <main name=\"main\"/>\n").unwrap();
    let o = gspc_dds(&[bad.to_str().unwrap()], &out);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("bad.xml:"), "{stderr}");
    // Usage.
    let o = gspc_dds(&["--help"], &out);
    assert!(o.status.success());
    assert!(text(&o.stdout).contains("Usage: gspc-dds [OPTIONS] TOPOLOGY.xml"));
    let o = gspc_dds(&["--bogus"], &out);
    assert_eq!(o.status.code(), Some(2));
    let o = gspc_dds(&[], &out);
    assert_eq!(o.status.code(), Some(2));
    let prop = bins().join("gspc-property");
    let o = Command::new(&prop).arg("--help").output().unwrap();
    assert!(o.status.success());
    assert!(text(&o.stdout).contains("gspc-property set KEY VALUE"));
    // Outside a task.
    let o = Command::new(&prop)
        .args(["get", "x"])
        .env_remove("GSPC_PROPERTY_ADDR")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("GSPC_PROPERTY_ADDR is not set"));
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn gspc_run_runs_a_dds_topology_with_a_slot_per_task_by_default() {
    let out = scratch("gspc-run");
    let dir = build_packages(&["gspc-run", "pnet-dds-run"]);
    let o = Command::new(dir.join("gspc-run"))
        .arg("--json")
        .arg(example("producer_consumer.xml"))
        .env("DDS_EXAMPLE_OUT", &out)
        .env_remove("GSPC_PROPERTY")
        .output()
        .unwrap();
    let stderr = text(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    // No --topology: one slot per task (4 here, more than this machine's cores).
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["ok"], true);
    assert_eq!(report["tasks"].as_array().unwrap().len(), 4);
    for k in 0..3 {
        let got = read(&out.join(format!("consumer_{k}.txt")));
        assert!(
            got.starts_with("greeting: hello from main/producer"),
            "{got}"
        );
    }
    std::fs::remove_dir_all(&out).unwrap();
}

/// A topology for the remote launchers: a producer sets a property, two consumers wait for it
/// and write it, their index and `shown` (shell words) to `out/consumer_INDEX.txt` (an
/// absolute path: ssh and srun pass no environment of the test).
fn remote_topology(out: &Path, shown: &str) -> PathBuf {
    let topology = out.join("remote.xml");
    std::fs::write(
        &topology,
        format!(
            r#"<topology name="remote">
   <property name="greeting"/>
   <decltask name="producer">
      <exe reachable="false">gspc-property set greeting hello-from-$DDS_TASK_PATH</exe>
      <properties><name access="write">greeting</name></properties>
   </decltask>
   <decltask name="consumer">
      <exe reachable="false">echo "$(gspc-property wait greeting) $DDS_TASK_INDEX {shown}" > {out}/consumer_$DDS_TASK_INDEX.txt</exe>
      <properties><name access="read">greeting</name></properties>
   </decltask>
   <main name="main">
      <task>producer</task>
      <group name="consumers" n="2"><task>consumer</task></group>
   </main>
</topology>
"#,
            out = out.display()
        ),
    )
    .unwrap();
    topology
}

#[test]
fn tasks_started_through_ssh_run_and_exchange_properties() {
    // A real sshd on 127.0.0.1 with throw-away keys; the nodefile names 127.0.0.1, so every
    // slot's wrapper is started by ssh (which passes no environment: the tasks write where
    // the topology says, an absolute path, and show the SSH_CONNECTION they came by).
    let sshd = pnet_launch::testing::Sshd::start("gspc-dds");
    let out = scratch("ssh");
    let topology = remote_topology(&out, "$GSPC_DDS_HOST [$SSH_CONNECTION]");
    let nodes = out.join("nodes");
    std::fs::write(&nodes, "127.0.0.1\n").unwrap();
    let mut args: Vec<String> = vec![
        "--topology".into(),
        "worker:3".into(),
        "--nodefile".into(),
        nodes.display().to_string(),
        "--launcher".into(),
        "ssh".into(),
        "--json".into(),
    ];
    args.extend(
        sshd.ssh_args()
            .into_iter()
            .map(|a| format!("--ssh-option={a}")),
    );
    args.push(topology.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = gspc_dds(&args, &out);
    let stderr = text(&o.stderr);
    assert!(o.status.success(), "{stderr}\nsshd: {}", sshd.log());
    for k in 0..2 {
        let got = read(&out.join(format!("consumer_{k}.txt")));
        // The property, the task's index, its host, and the ssh connection it came by
        // (client address and port, server address and the test server's port).
        let (head, ssh) = got.trim_end().split_once(" [").expect("an ssh connection");
        assert_eq!(
            head,
            format!("hello-from-main/producer_0 {k} 127.0.0.1"),
            "{stderr}"
        );
        assert!(ssh.starts_with("127.0.0.1 "), "{got}");
        assert!(
            ssh.ends_with(&format!(" 127.0.0.1 {}]", sshd.port)),
            "{got}"
        );
    }
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn tasks_started_through_slurm_run_and_exchange_properties() {
    // A real one-node Slurm (munged, slurmctld and slurmd of this host on free ports): the
    // session runs in an allocation (salloc) and every slot's wrapper is a job step started
    // by srun (the tasks show the step they run in).
    let slurm = pnet_launch::testing::Slurm::start("gspc-dds");
    let out = scratch("slurm");
    let topology = remote_topology(&out, "[$SLURM_STEP_ID]");
    let o = slurm
        .command("salloc")
        .args(["--nodes=1", "--ntasks=1", "--quiet"])
        .arg(bins().join("gspc-dds"))
        .args(["--topology", "worker:3", "--launcher", "slurm", "--json"])
        .arg(&topology)
        .env_remove("GSPC_PROPERTY")
        .output()
        .unwrap();
    let stderr = text(&o.stderr);
    assert!(o.status.success(), "{stderr}\n{}", slurm.log());
    let mut steps = std::collections::BTreeSet::new();
    for k in 0..2 {
        let got = read(&out.join(format!("consumer_{k}.txt")));
        let (head, step) = got.trim_end().split_once(" [").expect("a step");
        assert_eq!(head, format!("hello-from-main/producer_0 {k}"), "{stderr}");
        let step = step.trim_end_matches(']');
        assert!(step.parse::<u32>().is_ok(), "not a job step: {got}");
        steps.insert(step.to_string());
    }
    // Each slot is a step of its own.
    assert_eq!(steps.len(), 2, "{steps:?}");
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    let _ = std::fs::remove_dir_all(&out);
}
