//! The runner with hand-built topologies and the real `gspc-property` wrapper, on loopback.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pnet_dds::{Access, AssetVisibility, PropertyScope};
use pnet_dds_run::testing::Builder;
use pnet_dds_run::{Outcome, RunConfig, run};
use pnet_protocol::property::TaskExit;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dds-run-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn config(workers: u32, dir: &Path) -> RunConfig {
    let plan = pnet_topology::plan(
        &pnet_topology::default_topology(workers),
        &["localhost".to_string()],
    );
    let mut c = RunConfig::new(plan);
    c.property_program = PathBuf::from(env!("CARGO_BIN_EXE_gspc-property"));
    c.workdir = Some(dir.join("work"));
    c.timeout = Some(Duration::from_secs(30));
    c.grace = Duration::from_millis(500);
    c
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn properties_flow_from_producer_to_consumers_with_dds_environment() {
    let dir = scratch("props");
    let out = dir.display();
    let mut b = Builder::new();
    let x = b.property("x", PropertyScope::Global);
    let p = b.task("producer", "gspc-property set x \"hi there\"");
    b.task_property(p, x, Access::Write);
    let c = b.task(
        "consumer",
        &format!(
            "v=$(gspc-property wait x --timeout 20) && echo \"$v|$DDS_TASK_PATH|$DDS_TASK_INDEX|$DDS_COLLECTION_NAME|$DDS_COLLECTION_INDEX|$DDS_TASK_NAME|$DDS_GROUP_NAME\" > {out}/c%taskIndex%"
        ),
    );
    b.task_property(c, x, Access::Read);
    let coll = b.collection("readers", &[c, c, c]);
    b.main_tasks(&[p]);
    b.main_collections(&[coll]);
    let (topo, exp) = b.build();
    let report = run(&topo, &exp, &config(4, &dir)).unwrap();
    assert_eq!(
        report.outcome,
        Outcome::Success,
        "{:?}",
        report.failure_message()
    );
    for k in 0..3 {
        assert_eq!(
            read(&dir.join(format!("c{k}"))),
            format!("hi there|main/readers_0/consumer_{k}|{k}|readers|0|consumer|main\n")
        );
    }
    assert_eq!(report.tasks.len(), 4);
    assert!(
        report
            .tasks
            .iter()
            .all(|t| t.exit == Some(TaskExit::Code(0)))
    );
    // Every task on its own slot.
    let mut slots: Vec<usize> = report.tasks.iter().map(|t| t.slot).collect();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_crashing_task_is_restarted_by_its_trigger() {
    let dir = scratch("restart");
    let marker = dir.join("marker");
    let mut b = Builder::new();
    let t = b.trigger("again", 2);
    let task = b.task(
        "flaky",
        &format!(
            "if [ -e {m} ]; then echo second >> {m}; exit 0; else echo first > {m}; echo dying >&2; exit 3; fi",
            m = marker.display()
        ),
    );
    b.task_trigger(task, t);
    b.main_tasks(&[task]);
    let (topo, exp) = b.build();
    let report = run(&topo, &exp, &config(1, &dir)).unwrap();
    assert_eq!(report.outcome, Outcome::Success);
    assert_eq!(report.tasks[0].restarts, 1);
    assert_eq!(report.restarts(), 1);
    assert_eq!(read(&marker), "first\nsecond\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_crash_without_trigger_fails_the_session_and_stops_the_others() {
    let dir = scratch("crash");
    let mut b = Builder::new();
    let bad = b.task("bad", "echo something broke >&2; exit 7");
    let slow = b.task("slow", "sleep 30");
    b.main_tasks(&[slow, bad]);
    let (topo, exp) = b.build();
    let t0 = Instant::now();
    let report = run(&topo, &exp, &config(2, &dir)).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    assert_eq!(
        report.outcome,
        Outcome::TaskFailed {
            task: 1,
            how: "exited with status 7".into()
        }
    );
    let msg = report.failure_message().unwrap();
    assert!(
        msg.starts_with("task `main/bad_0` exited with status 7 on worker-localhost-"),
        "{msg}"
    );
    assert!(msg.contains("| something broke"), "{msg}");
    assert_eq!(report.tasks[0].exit, None);
    assert_eq!(report.tasks[1].stderr_tail, "something broke");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn restarts_run_out() {
    let dir = scratch("exhaust");
    let mut b = Builder::new();
    let t = b.trigger("twice", 2);
    let task = b.task("doomed", "kill -9 $$");
    b.task_trigger(task, t);
    b.main_tasks(&[task]);
    let (topo, exp) = b.build();
    let report = run(&topo, &exp, &config(1, &dir)).unwrap();
    assert_eq!(report.tasks[0].restarts, 2);
    match &report.outcome {
        Outcome::TaskFailed { task: 0, how } => assert_eq!(
            how,
            "was ended by signal 9 and has no restart left (its trigger allows 2)"
        ),
        o => panic!("{o:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn assets_are_in_the_task_folder() {
    let dir = scratch("assets");
    let out = dir.display();
    let mut b = Builder::new();
    let local = b.asset("conf", AssetVisibility::Task, "a=1\nb=2");
    let shared = b.asset(
        "shared",
        AssetVisibility::Global,
        "#!/bin/sh\nexport MYVAR=123",
    );
    let t = b.task(
        "reader",
        &format!("cat conf > {out}/conf%taskIndex%; . ./shared; echo $MYVAR > {out}/var%taskIndex%; test -f \"$GSPC_DDS_ASSET_DIR/shared\""),
    );
    b.task_asset(t, local);
    b.task_asset(t, shared);
    b.main_tasks(&[t, t]);
    let (topo, exp) = b.build();
    let report = run(&topo, &exp, &config(2, &dir)).unwrap();
    assert_eq!(
        report.outcome,
        Outcome::Success,
        "{:?}",
        report.failure_message()
    );
    for k in 0..2 {
        assert_eq!(read(&dir.join(format!("conf{k}"))), "a=1\nb=2");
        assert_eq!(read(&dir.join(format!("var{k}"))), "123\n");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn timeout_stops_the_session() {
    let dir = scratch("timeout");
    let mut b = Builder::new();
    let t = b.task("sleeper", "sleep 30");
    b.main_tasks(&[t]);
    let (topo, exp) = b.build();
    let mut c = config(1, &dir);
    c.timeout = Some(Duration::from_millis(300));
    let t0 = Instant::now();
    let report = run(&topo, &exp, &c).unwrap();
    assert_eq!(
        report.outcome,
        Outcome::TimedOut(Duration::from_millis(300))
    );
    assert!(t0.elapsed() < Duration::from_secs(10));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unplaceable_topology_is_an_error() {
    let dir = scratch("place");
    let mut b = Builder::new();
    let t = b.task("t", "true");
    b.main_tasks(&[t, t, t]);
    let (topo, exp) = b.build();
    match run(&topo, &exp, &config(2, &dir)) {
        Err(pnet_dds_run::RunError::Place(e)) => {
            assert_eq!(e[0].diagnostic.code, "dds-place-too-few-slots")
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
