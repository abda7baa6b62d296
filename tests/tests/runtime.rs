//! End-to-end runs of the distributed runtime with real processes on loopback: `gspc-run`
//! (the agent) starts `gspc-worker`s from a topology; module calls run on them as command
//! modules (shell scripts the tests write) or native modules (the example libraries).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use pnet_tests::bin;

/// A fresh temporary folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pnet-rt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

/// Writes an executable shell script (a command module).
fn script(path: &Path, body: &str) {
    write(path, &format!("#!/bin/sh\n{body}\n"));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn gspc_run(args: &[&str]) -> Output {
    Command::new(bin("gspc-run"))
        .args(args)
        .env_remove("PNET_MODULE_PATH")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Output lines `PORT = VALUE` of a port.
fn port_values(out: &str, port: &str) -> Vec<String> {
    let prefix = format!("{port} = ");
    out.lines()
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_string))
        .collect()
}

/// The command module used by most tests: y = x + 1, w = the worker's name.
const WHERE: &str = r#"read -r input
x=$(printf '%s' "$input" | sed 's/.*"x": *\(-*[0-9]*\).*/\1/')
printf '{"y": %s, "w": "%s"}\n' "$((x + 1))" "$PNET_WORKER""#;

#[test]
fn tasks_land_on_workers_with_the_required_capabilities() {
    let dir = scratch("caps");
    script(&dir.join("where"), WHERE);
    // Three kinds of calls: needing `gpu`, needing `big`, needing both.
    let net = r#"<defun name="caps">
  <out name="g" type="string" place="g"/>
  <out name="b" type="string" place="b"/>
  <out name="gb" type="string" place="gb"/>
  <net>
    <place name="i" type="long"><token><value>1L</value></token><token><value>2L</value></token><token><value>3L</value></token><token><value>4L</value></token></place>
    <place name="j" type="long"><token><value>1L</value></token><token><value>2L</value></token><token><value>3L</value></token><token><value>4L</value></token></place>
    <place name="k" type="long"><token><value>1L</value></token><token><value>2L</value></token></place>
    <place name="g" type="string"/>
    <place name="b" type="string"/>
    <place name="gb" type="string"/>
    <place name="sink" type="long"/>
    <transition name="on_gpu">
      <defun><require key="gpu" mandatory="true"/>
        <in name="x" type="long"/><out name="y" type="long"/><out name="w" type="string"/>
        <module name="where" function="f (x, y, w)"/></defun>
      <connect-in port="x" place="i"/><connect-out port="y" place="sink"/><connect-out port="w" place="g"/>
    </transition>
    <transition name="on_big">
      <defun><require key="big" mandatory="true"/>
        <in name="x" type="long"/><out name="y" type="long"/><out name="w" type="string"/>
        <module name="where" function="f (x, y, w)"/></defun>
      <connect-in port="x" place="j"/><connect-out port="y" place="sink"/><connect-out port="w" place="b"/>
    </transition>
    <transition name="on_both">
      <defun><require key="gpu" mandatory="true"/><require key="big" mandatory="true"/>
        <in name="x" type="long"/><out name="y" type="long"/><out name="w" type="string"/>
        <module name="where" function="f (x, y, w)"/></defun>
      <connect-in port="x" place="k"/><connect-out port="y" place="sink"/><connect-out port="w" place="gb"/>
    </transition>
  </net>
</defun>
"#;
    let path = dir.join("caps.xpnet");
    write(&path, net);
    let o = gspc_run(&[
        path.to_str().unwrap(),
        "--topology",
        "gpu:1 big:1 fat+gpu+big:1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let (g, b, gb) = (
        port_values(&out, "g"),
        port_values(&out, "b"),
        port_values(&out, "gb"),
    );
    assert_eq!((g.len(), b.len(), gb.len()), (4, 4, 2), "{out}");
    // Worker names start with their class (the first capability).
    for w in &g {
        assert!(w.starts_with("\"gpu") || w.starts_with("\"fat"), "{w}");
    }
    for w in &b {
        assert!(w.starts_with("\"big") || w.starts_with("\"fat"), "{w}");
    }
    for w in &gb {
        assert!(w.starts_with("\"fat"), "{w}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_task_no_worker_can_run_fails_the_job_clearly() {
    let dir = scratch("nofit");
    script(&dir.join("where"), WHERE);
    let path = dir.join("nofit.xpnet");
    write(
        &path,
        &pnet_tests::fan_net("nofit", "where", "f", &["quantum"], 1),
    );
    let o = gspc_run(&[path.to_str().unwrap(), "--topology", "cpu:1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("quantum"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_worker_killed_mid_task_has_its_task_rerun() {
    let dir = scratch("kill");
    let pids = dir.join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    // Each task records its worker's pid, then works for a while.
    script(
        &dir.join("slow"),
        &format!(
            "read -r input\nx=$(printf '%s' \"$input\" | sed 's/.*\"x\": *\\(-*[0-9]*\\).*/\\1/')\n\
             echo $PNET_WORKER_PID > {}/task-$PNET_TASK\nsleep 1\n\
             printf '{{\"y\": %s, \"w\": \"%s\"}}\\n' \"$((x + 1))\" \"$PNET_WORKER\"",
            pids.display()
        ),
    );
    let path = dir.join("kill.xpnet");
    write(&path, &pnet_tests::fan_net("kill", "slow", "f", &[], 6));
    let log = dir.join("events.log");
    let child = Command::new(bin("gspc-run"))
        .arg(&path)
        .args(["--topology", "w:3", "--log"])
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the worker of the first task that starts, with SIGKILL.
    let start = Instant::now();
    let victim = loop {
        let found = std::fs::read_dir(&pids)
            .unwrap()
            .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
            .find_map(|s| s.trim().parse::<i32>().ok());
        if let Some(pid) = found {
            break pid;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no task started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let killed = Command::new("kill")
        .args(["-KILL", &victim.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    // (Failed once in CI with `cannot start .../slow: No such file or directory` on the
    // rerun: say what the folder and the event log held then.)
    assert!(
        o.status.success(),
        "{}\nscript there: {}; folder: {:?}\nevent log:\n{}",
        stderr(&o),
        dir.join("slow").exists(),
        std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
            .unwrap_or_default(),
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let out = stdout(&o);
    let mut ys: Vec<i64> = port_values(&out, "y")
        .iter()
        .map(|v| v.trim_end_matches('L').parse().unwrap())
        .collect();
    ys.sort();
    // Every task's result exactly once: no token lost, none doubled.
    assert_eq!(ys, vec![1, 2, 3, 4, 5, 6], "{out}");
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        log.contains("lost"),
        "the event log names the lost worker:\n{log}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_module_fails_the_job_with_its_message_and_location() {
    let dir = scratch("fail");
    script(
        &dir.join("broken"),
        "read -r input\necho 'disk quota exceeded' >&2\nexit 3",
    );
    let path = dir.join("fail.xpnet");
    write(&path, &pnet_tests::fan_net("fail", "broken", "f", &[], 3));
    let o = gspc_run(&[path.to_str().unwrap(), "--topology", "w:2"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("disk quota exceeded"), "{err}");
    assert!(
        err.contains("fail.xpnet:"),
        "names the source location: {err}"
    );
    assert!(err.contains("call"), "names the transition: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_worker_with_a_wrong_secret_is_refused() {
    let dir = scratch("secret");
    // A job that waits for a put_token, so the agent is up while the intruder knocks.
    let net = r#"<defun name="waits">
  <properties name="drts"><property key="wait_for_output" value="true"/></properties>
  <out name="out" type="long" place="out"/>
  <net>
    <place name="in" type="long" put_token="true"/>
    <place name="out" type="long"/>
    <place name="names" type="string"/>
    <transition name="call">
      <defun><in name="x" type="long"/><out name="y" type="long"/><out name="w" type="string"/>
        <module name="where" function="f (x, y, w)"/></defun>
      <connect-in port="x" place="in"/><connect-out port="y" place="out"/>
      <connect-out port="w" place="names"/>
    </transition>
  </net>
</defun>
"#;
    script(&dir.join("where"), WHERE);
    let path = dir.join("waits.xpnet");
    write(&path, net);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let socket = dir.join("control.sock");
    let listen = format!("127.0.0.1:{port}");
    let child = Command::new(bin("gspc-run"))
        .arg(&path)
        .args(["--topology", "w:1", "--listen", &listen, "--control"])
        .arg(&socket)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !socket.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no control socket"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let intruder = Command::new(bin("gspc-worker"))
        .args(["--agent", &listen, "--name", "intruder"])
        .env("GSPC_SECRET", "00".repeat(32))
        .output()
        .unwrap();
    assert_eq!(intruder.status.code(), Some(3), "{}", stderr(&intruder));
    assert!(
        stderr(&intruder).to_lowercase().contains("secret"),
        "{}",
        stderr(&intruder)
    );
    // The job goes on undisturbed.
    let put = Command::new(bin("gspc-run"))
        .args(["put-token", "--control"])
        .arg(&socket)
        .arg("in=41L")
        .output()
        .unwrap();
    assert!(put.status.success(), "{}", stderr(&put));
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "out = 42L");
    assert!(!socket.exists(), "the control socket is removed at the end");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_trace_has_one_lane_per_worker_and_one_slice_per_task() {
    let dir = scratch("trace");
    script(&dir.join("where"), WHERE);
    let path = dir.join("trace.xpnet");
    write(&path, &pnet_tests::fan_net("trace", "where", "f", &[], 8));
    let trace = dir.join("run.json");
    let o = gspc_run(&[
        path.to_str().unwrap(),
        "--topology",
        "w:2",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    let slices: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(slices.len(), 8);
    assert!(slices.iter().all(|e| e["name"] == "call"));
    let lanes: std::collections::BTreeSet<String> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(lanes.len(), 2, "{lanes:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dry_run_prints_the_plan() {
    let dir = scratch("dry");
    let nodes = dir.join("nodes");
    write(&nodes, "alpha\nbeta\n");
    let o = gspc_run(&[
        "--dry-run",
        "--topology",
        "compute+CPU:2 reduce:1x1",
        "--nodefile",
        nodes.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines_with = |host: &str, class: &str| {
        out.lines()
            .filter(|l| l.contains(host) && l.contains(class))
            .count()
    };
    assert_eq!(lines_with("alpha", "compute"), 2, "{out}");
    assert_eq!(lines_with("beta", "compute"), 2, "{out}");
    assert_eq!(
        lines_with("reduce", "alpha") + lines_with("reduce", "beta"),
        1,
        "{out}"
    );
    // A malformed topology is a diagnostic with a code and a column.
    let o = gspc_run(&["--dry-run", "--topology", "compute:x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("topology"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn native_modules_run_from_the_module_path() {
    let dir = scratch("native");
    // The example native module `arith` (examples/modules/arith): square (n) -> r.
    let net = r#"<defun name="squares">
  <out name="r" type="long" place="r"/>
  <net>
    <place name="n" type="long"><token><value>3L</value></token><token><value>-4L</value></token></place>
    <place name="r" type="long"/>
    <transition name="square">
      <defun><in name="n" type="long"/><out name="r" type="long"/>
        <module name="arith" function="square (n, r)"/></defun>
      <connect-in port="n" place="n"/><connect-out port="r" place="r"/>
    </transition>
  </net>
</defun>
"#;
    let path = dir.join("squares.xpnet");
    write(&path, net);
    let libdir = pnet_tests::build_packages(&["pnet-worker", "pnet-example-arith"]);
    let o = gspc_run(&[
        path.to_str().unwrap(),
        "--topology",
        "w:2",
        "--module-path",
        libdir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "r = 9L\nr = 16L\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cpp_module_that_was_not_built_gets_a_warning_saying_how_to_build_it() {
    let dir = scratch("unbuilt");
    let net = r#"<defun name="unbuilt">
  <in name="x" type="long"/>
  <out name="r" type="long"/>
  <module name="unbuilt" function="r f (x)">
    <code><![CDATA[ return x; ]]></code>
  </module>
</defun>
"#;
    let path = dir.join("unbuilt.xpnet");
    write(&path, net);
    let nowhere = dir.join("build");
    let o = gspc_run(&[
        path.to_str().unwrap(),
        "-p",
        "x=1L",
        "--topology",
        "w:1",
        "--no-progress",
        "--module-path",
        nowhere.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[..2],
        [
            format!(
                "gspc-run: warning: --module-path {}: no such folder",
                nowhere.display()
            ),
            format!(
                "gspc-run: warning: module `unbuilt` has C++ code ({}:4:3) but no \
                 libunbuilt.so is on the module path: build it with `pnetc {} --build-modules \
                 DIR` and run with `--module-path DIR`",
                path.display(),
                path.display()
            ),
        ],
        "{err}"
    );
    // Then the worker's message, as before.
    assert!(err.contains("not found: no libunbuilt.so"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_readme_main_job_gives_the_same_result_on_any_topology() {
    // The README's main job: examples/pi/pi.xpnet with the native module libpi.so.
    let root = pnet_tests::workspace_root();
    let net = root.join("examples/pi/pi.xpnet");
    pnet_tests::build_packages(&["pnet-worker", "pnet-example-pi"]);
    for topology in [None, Some("worker:1"), Some("a:2 b+c:1")] {
        let mut args = vec![
            net.to_str().unwrap(),
            "-p",
            "chunks=6L",
            "-p",
            "samples=20000L",
        ];
        if let Some(t) = topology {
            args.extend(["--topology", t]);
        }
        let o = gspc_run(&args);
        assert!(o.status.success(), "{topology:?}: {}", stderr(&o));
        let out = stdout(&o);
        let hits: i64 = port_values(&out, "hits")[0]
            .trim_end_matches('L')
            .parse()
            .unwrap();
        let pi: f64 = port_values(&out, "pi")[0].parse().unwrap();
        assert!((pi - std::f64::consts::PI).abs() < 0.05, "{out}");
        assert_eq!(pi, 4.0 * hits as f64 / 120_000.0);
        // The same hits whatever the topology: each chunk seeds its own generator.
        let again = gspc_run(&args);
        assert_eq!(stdout(&again), out, "{topology:?}");
    }
    // And the README's own figures.
    let o = gspc_run(&[
        net.to_str().unwrap(),
        "-p",
        "chunks=16L",
        "-p",
        "samples=1000000L",
    ]);
    assert_eq!(
        stdout(&o),
        "hits = 12565778L\npi = 3.1414445\n",
        "{}",
        stderr(&o)
    );
}

#[test]
fn workers_started_through_ssh_run_the_job() {
    // A real sshd on 127.0.0.1 with throw-away keys; the nodefile names 127.0.0.1 twice
    // over two descriptions, so every worker is started by ssh.
    let sshd = pnet_launch::testing::Sshd::start("gspc-run");
    let dir = scratch("ssh");
    script(&dir.join("where"), WHERE);
    let path = dir.join("ssh.xpnet");
    write(&path, &pnet_tests::fan_net("ssh", "where", "f", &[], 5));
    let nodes = dir.join("nodes");
    write(&nodes, "127.0.0.1\n");
    let log = dir.join("events.log");
    let mut args: Vec<String> = vec![
        path.display().to_string(),
        "--topology".into(),
        "w:2".into(),
        "--nodefile".into(),
        nodes.display().to_string(),
        "--launcher".into(),
        "ssh".into(),
        "--log".into(),
        log.display().to_string(),
    ];
    args.extend(
        sshd.ssh_args()
            .into_iter()
            .map(|a| format!("--ssh-option={a}")),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = gspc_run(&args);
    assert!(o.status.success(), "{}\nsshd: {}", stderr(&o), sshd.log());
    let out = stdout(&o);
    let mut ys: Vec<String> = port_values(&out, "y");
    ys.sort();
    assert_eq!(ys, ["1L", "2L", "3L", "4L", "5L"], "{out}");
    let workers: std::collections::BTreeSet<String> = port_values(&out, "w").into_iter().collect();
    assert!(
        workers.iter().all(|w| w.contains("127.0.0.1")),
        "{workers:?}"
    );
    let log = std::fs::read_to_string(&log).unwrap();
    // Both were started by ssh; the short job may end before the second one joins.
    assert_eq!(log.matches("(ssh, pid").count(), 2, "{log}");
    assert!(log.contains("joined"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn workers_started_through_slurm_run_the_job() {
    // A real one-node Slurm (munged, slurmctld and slurmd of this host on free ports); the
    // job runs in an allocation (salloc), and every worker is a job step started by srun.
    let slurm = pnet_launch::testing::Slurm::start("gspc-run");
    let root = pnet_tests::workspace_root();
    let net = root.join("examples/pi/pi.xpnet");
    pnet_tests::build_packages(&["pnet-worker", "pnet-example-pi"]);
    let dir = scratch("slurm");
    let log = dir.join("events.log");
    let o = slurm
        .command("salloc")
        .args(["--nodes=1", "--ntasks=1", "--quiet"])
        .arg(bin("gspc-run"))
        .arg(&net)
        .args(["-p", "chunks=4L", "-p", "samples=10000L"])
        .args(["--topology", "worker:2", "--launcher", "slurm", "--log"])
        .arg(&log)
        .env_remove("PNET_MODULE_PATH")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stderr(&o), slurm.log());
    // The same figures as with local workers (each chunk seeds its own generator).
    assert_eq!(stdout(&o), "hits = 31395L\npi = 3.1395\n", "{}", stderr(&o));
    let log = std::fs::read_to_string(&log).unwrap();
    // Both were started as srun steps; the short job may end before the second one joins.
    assert_eq!(log.matches("(slurm, pid").count(), 2, "{log}");
    assert!(log.contains("joined"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn eureka_interrupts_running_tasks_of_its_group() {
    if pnet_tests::corpus_absent() {
        return;
    }
    // GPI-Space's own eureka test net; its C++ module `we_test_eureka.loop` (which loops
    // until cancelled) is replaced by a command module that records its start and sleeps.
    let dir = scratch("eureka");
    let started = dir.join("started");
    std::fs::create_dir_all(&started).unwrap();
    script(
        &dir.join("we_test_eureka.loop"),
        &format!(
            "cat > /dev/null\ntouch {}/$PNET_TASK\nexec sleep 1000",
            started.display()
        ),
    );
    let net = pnet_tests::gpispace().join("test/we/eureka/xpnet/pending_tasks_are_removed.xpnet");
    let socket = dir.join("control.sock");
    let child = Command::new(bin("gspc-run"))
        .arg(&net)
        .args(["--topology", "w:2", "--module-path"])
        .arg(&dir)
        .args(["-p", "register_host=\"localhost\"", "-p", "register_port=0"])
        .arg("--control")
        .arg(&socket)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let put = |token: &str| {
        let o = Command::new(bin("gspc-run"))
            .args(["put-token", "--wait-for-socket=20", "--control"])
            .arg(&socket)
            .arg(token)
            .output()
            .unwrap();
        assert!(o.status.success(), "{token}: {}", stderr(&o));
    };
    put("eureka_group=\"g\"");
    for t in ["\"a\"", "\"b\"", "\"c\""] {
        put(&format!("task={t}"));
    }
    // Two run (two workers), one waits in the queue.
    let start = Instant::now();
    while std::fs::read_dir(&started).unwrap().count() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "tasks did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    put("eureka=7");
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "result = 7\n");
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "the running tasks were interrupted, not waited for"
    );
    assert_eq!(
        std::fs::read_dir(&started).unwrap().count(),
        2,
        "the queued task was removed, never started"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
