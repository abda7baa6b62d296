//! Multi-host runs over real, separate network stacks: four network-namespace hosts on this
//! machine (`pnet_tests::netns`: a bridge, a veth pair and an sshd per host, addresses in a
//! private 10.213.X.0/24 that exist only here), workers started on them by the ssh launcher
//! of `gspc-run`, the agent listening on the bridge's address. Faults are injected while the
//! net runs: a host's link cut, a host frozen (SIGSTOP), packets lost; the agent notices a
//! lost host within its heartbeat timeout, runs its tasks elsewhere, and the result is exact
//! (also when the host comes back and its late messages arrive); a host down from the start
//! leaves the run to the others; a `gspc` runtime booted over the hosts keeps two jobs exact
//! through a cut. Global memory moves between workers on two namespace hosts over TCP; a
//! class placed on the first hosts only (`solo:1x2`) runs its tasks there.
//!
//! The tests need root (CI runs as root): elsewhere each says "skipped" and passes.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pnet_tests::build_packages;
use pnet_tests::netns::{self, Hosts};

/// The agent's and workers' heartbeat timeout (`pnet_protocol::HEARTBEAT_TIMEOUT`).
const HEARTBEAT_TIMEOUT: Duration = Duration::from_millis(1500);

/// How late past the heartbeat timeout a loss may be noticed here (a busy 2-core machine).
const NOTICE_SLACK: Duration = Duration::from_millis(1000);

/// Workers per host.
const PER_HOST: usize = 2;

/// The folder with `gspc-run`, `gspc-worker`, `pnetc` and `gspc` (built once per test run, before
/// any hosts are made: the build may wait for cargo's lock).
fn bin_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| build_packages(&["gspc-run", "pnet-worker", "pnetc", "pnet-gspc"]))
}

/// The command module: marks its start in `started/` (shared by all hosts: one file
/// system), naps `secs`, and returns y = x + 1 and w = `worker@hostname`.
fn nap_module(dir: &Path, secs: &str) {
    let started = dir.join("started");
    std::fs::create_dir_all(&started).unwrap();
    let body = format!(
        r#"#!/bin/sh
read -r input
x=$(printf '%s' "$input" | sed 's/.*"x": *\(-*[0-9]*\).*/\1/')
: > "{started}/$x.$PNET_WORKER"
sleep {secs}
printf '{{"y": %s, "w": "%s@%s"}}\n' "$((x + 1))" "$PNET_WORKER" "$(hostname)"
"#,
        started = started.display()
    );
    let path = dir.join("nap");
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A `gspc-run` in the background, killed if the test ends before it does.
struct Run {
    child: Child,
    dir: PathBuf,
    start: Instant,
}

impl Run {
    /// `gspc-run NET` over the hosts (ssh launcher, `topology`, the nodefile of the hosts,
    /// listening on the bridge's address), its output and event log in `dir`.
    fn start(hosts: &Hosts, dir: &Path, net: &Path, topology: &str, extra: &[&str]) -> Run {
        let nodes = dir.join("nodes");
        std::fs::write(&nodes, hosts.nodefile()).unwrap();
        let mut cmd = Command::new(bin_dir().join("gspc-run"));
        cmd.arg(net)
            .args(["--topology", topology, "--launcher", "ssh", "--no-progress"])
            .arg("--nodefile")
            .arg(&nodes)
            .arg("--listen")
            .arg(format!("{}:0", hosts.agent_addr()))
            .arg("--log")
            .arg(dir.join("events.log"))
            .args(extra)
            .args(hosts.ssh_args().iter().map(|a| format!("--ssh-option={a}")))
            .env_remove("PNET_MODULE_PATH")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap());
        Run {
            child: cmd.spawn().expect("start gspc-run"),
            dir: dir.to_path_buf(),
            start: Instant::now(),
        }
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }

    fn log(&self) -> String {
        self.read("events.log")
    }

    /// Everything a failure message needs.
    fn report(&self, hosts: &Hosts) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}\nlog:\n{}\n{}",
            self.read("stdout"),
            self.read("stderr"),
            self.log(),
            hosts.log()
        )
    }

    /// Waits until `ready` holds (checked every 10 ms); panics with the report after `within`
    /// or when gspc-run ended first.
    fn wait_for(
        &mut self,
        hosts: &Hosts,
        what: &str,
        within: Duration,
        ready: impl Fn(&Run) -> bool,
    ) {
        let deadline = Instant::now() + within;
        while !ready(self) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "gspc-run ended ({status}) before {what}:\n{}",
                    self.report(hosts)
                );
            }
            assert!(
                Instant::now() < deadline,
                "no {what} within {within:?}:\n{}",
                self.report(hosts)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for gspc-run to end (at most until 55 s after its start); its stdout.
    fn finish(&mut self, hosts: &Hosts) -> String {
        let deadline = self.start + Duration::from_secs(55);
        loop {
            match self.child.try_wait().unwrap() {
                Some(status) => {
                    assert!(
                        status.success(),
                        "gspc-run failed ({status}):\n{}",
                        self.report(hosts)
                    );
                    return self.read("stdout");
                }
                None if Instant::now() > deadline => {
                    panic!("gspc-run did not end within 55 s:\n{}", self.report(hosts))
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    fn started(&self) -> Vec<String> {
        started(&self.dir)
    }
}

/// The names of the `started/` markers of the `nap` module in `dir`: `x.worker`.
fn started(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir.join("started"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether each of the `PER_HOST` workers on `addr` started two tasks (so one came back).
fn host_busy(started: &[String], addr: &str) -> bool {
    let marker = format!("-{addr}-");
    let mut per_worker: BTreeMap<&str, usize> = BTreeMap::new();
    for m in started.iter().filter(|m| m.contains(&marker)) {
        if let Some((_, w)) = m.split_once('.') {
            *per_worker.entry(w).or_insert(0) += 1;
        }
    }
    per_worker.len() == PER_HOST && per_worker.values().all(|&k| k >= 2)
}

impl Drop for Run {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Output lines `PORT = VALUE` of a port.
fn port_values(out: &str, port: &str) -> Vec<String> {
    let prefix = format!("{port} = ");
    out.lines()
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_string))
        .collect()
}

/// Checks the exact result of the fan net over `n` tokens: y = 1..=n, once each; returns
/// how many results each host name produced.
fn check_exact(out: &str, n: usize) -> BTreeMap<String, usize> {
    let mut ys: Vec<i64> = port_values(out, "y")
        .iter()
        .map(|y| y.trim_end_matches('L').parse().unwrap())
        .collect();
    ys.sort_unstable();
    let want: Vec<i64> = (1..=n as i64).collect();
    assert_eq!(ys, want, "{out}");
    let mut per_host = BTreeMap::new();
    for w in port_values(out, "w") {
        let host = w.trim_matches('"').rsplit('@').next().unwrap().to_string();
        *per_host.entry(host).or_insert(0) += 1;
    }
    assert_eq!(per_host.values().sum::<usize>(), n, "{out}");
    per_host
}

/// The `lost` lines of the event log that name a worker on `addr`.
fn lost_lines(log: &str, addr: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains(" lost: ") && l.contains(addr))
        .map(str::to_string)
        .collect()
}

/// The sum of "N tasks queued again" over `lines`.
fn requeued(lines: &[String]) -> usize {
    lines
        .iter()
        .filter_map(|l| {
            l.split("; ")
                .last()?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum()
}

/// Runs the fan net of `n` tasks of `secs` each over 4 hosts; once `after` tasks started and
/// each worker of host 2 ran one, applies `fault` to host 2; then checks that the agent lost
/// every worker of host 2 within the heartbeat timeout (plus slack) and re-ran their tasks,
/// and that the result is exact. With `heal`, host 2 comes back right after the loss (link
/// up, processes thawed): what its workers still send is late, and must change nothing.
fn lose_host_mid_run(
    tag: &str,
    n: usize,
    secs: &str,
    after: usize,
    fault: fn(&Hosts, usize),
    heal: Option<fn(&Hosts, usize)>,
) {
    if netns::unavailable() {
        return;
    }
    bin_dir();
    let Some(hosts) = Hosts::start(tag, 4) else {
        return;
    };
    let dir = hosts.dir().join("run");
    std::fs::create_dir_all(&dir).unwrap();
    nap_module(&dir, secs);
    let net = dir.join("fan.xpnet");
    std::fs::write(&net, pnet_tests::fan_net("fan", "nap", "f", &[], n)).unwrap();
    let mut run = Run::start(&hosts, &dir, &net, &format!("w:{PER_HOST}"), &[]);
    let victim = 2;
    let addr = hosts.hosts[victim].addr.clone();
    let workers = PER_HOST * hosts.hosts.len();
    run.wait_for(
        &hosts,
        "every worker joined and the faulty host's busy",
        Duration::from_secs(30),
        |r| {
            let s = r.started();
            r.log().matches(" joined with capabilities").count() == workers
                && s.len() >= after
                && host_busy(&s, &addr)
        },
    );
    let started_before = run.started().len();
    fault(&hosts, victim);
    let t0 = Instant::now();
    run.wait_for(
        &hosts,
        "loss of the workers of the faulty host",
        Duration::from_secs(20),
        |r| lost_lines(&r.log(), &addr).len() >= PER_HOST,
    );
    let noticed = t0.elapsed();
    if let Some(heal) = heal {
        heal(&hosts, victim);
    }
    let out = run.finish(&hosts);
    let log = run.log();
    let lost = lost_lines(&log, &addr);
    let per_host = check_exact(&out, n);
    println!(
        "{tag}: fault on host {victim} ({addr}, `{}`) after {started_before} of {n} tasks \
         started{}; every worker of it lost after {} ms (heartbeat timeout {} ms); {} tasks \
         queued again; results per host: {per_host:?}; run took {:.1} s",
        hosts.hosts[victim].hostname,
        if heal.is_some() {
            " (healed once lost)"
        } else {
            ""
        },
        noticed.as_millis(),
        HEARTBEAT_TIMEOUT.as_millis(),
        requeued(&lost),
        run.start.elapsed().as_secs_f64()
    );
    assert!(
        noticed <= HEARTBEAT_TIMEOUT + NOTICE_SLACK,
        "noticed after {noticed:?}:\n{log}"
    );
    for l in &lost {
        assert!(l.contains("no heartbeat"), "{l}");
    }
    // Its workers had tasks when the fault came (each runs one after the other without a
    // pause): those were queued again and ran elsewhere (the result is exact).
    assert!(requeued(&lost) >= 1, "{log}");
    // Only the faulty host's workers were lost.
    assert_eq!(log.matches(" lost: ").count(), PER_HOST, "{log}");
    // Every host, the faulty one before its fault too, ran tasks on its own network stack.
    for h in &hosts.hosts {
        assert!(per_host.contains_key(&h.hostname), "{per_host:?}");
    }
}

#[test]
fn a_host_cut_off_mid_run_is_noticed_and_its_tasks_run_elsewhere() {
    lose_host_mid_run("cut", 96, "0.25", 16, Hosts::cut, None);
}

#[test]
fn a_host_cut_off_and_back_changes_nothing() {
    lose_host_mid_run(
        "cutback",
        96,
        "0.25",
        16,
        Hosts::cut,
        Some(Hosts::reconnect),
    );
}

fn freeze(hosts: &Hosts, h: usize) {
    let stopped = hosts.freeze(h);
    assert!(stopped > 0, "nothing to stop on host {h}");
}

fn thaw(hosts: &Hosts, h: usize) {
    hosts.thaw(h);
}

#[test]
fn a_frozen_host_is_noticed_and_its_tasks_run_elsewhere() {
    lose_host_mid_run("freeze", 96, "0.25", 16, freeze, None);
}

#[test]
fn a_frozen_host_thawed_changes_nothing() {
    lose_host_mid_run("thaw", 96, "0.25", 16, freeze, Some(thaw));
}

#[test]
fn lost_packets_and_slow_links_still_give_the_exact_result() {
    if netns::unavailable() {
        return;
    }
    bin_dir();
    let Some(hosts) = Hosts::start("loss", 4) else {
        return;
    };
    let dir = hosts.dir().join("run");
    std::fs::create_dir_all(&dir).unwrap();
    let n = 96;
    nap_module(&dir, "0.1");
    let net = dir.join("fan.xpnet");
    std::fs::write(&net, pnet_tests::fan_net("fan", "nap", "f", &[], n)).unwrap();
    let mut run = Run::start(&hosts, &dir, &net, &format!("w:{PER_HOST}"), &[]);
    let workers = PER_HOST * hosts.hosts.len();
    run.wait_for(
        &hosts,
        "every worker joined",
        Duration::from_secs(30),
        |r| r.log().matches(" joined with capabilities").count() == workers,
    );
    // Hosts 1 and 2 lose a fifth of their packets, both ways; host 3's packets are delayed
    // where the kernel can (tc netem).
    let mut faults = Vec::new();
    for h in [1, 2] {
        let how = hosts.lose(h, 0.2).unwrap_or_else(|e| {
            panic!("cannot drop packets on host {h}: {e}; install iptables (.ci/setup does)")
        });
        faults.push(format!("host {h} loses 20% ({how})"));
    }
    match hosts.delay(3, 40) {
        Ok(()) => faults.push("host 3 sends 40 ms late (tc netem)".into()),
        Err(e) => println!(
            "delay: not injected: tc netem is not available here ({e}; the kernel needs \
             sch_netem); the run goes on without it"
        ),
    }
    let out = run.finish(&hosts);
    let log = run.log();
    let per_host = check_exact(&out, n);
    let lost: Vec<&str> = log.lines().filter(|l| l.contains(" lost: ")).collect();
    let dropped = [hosts.dropped(1), hosts.dropped(2)];
    println!(
        "loss: faults [{}]; packets dropped on hosts 1 and 2: {dropped:?}; {} workers lost \
         (a retransmission longer than the heartbeat timeout); results per host: \
         {per_host:?}; run took {:.1} s",
        faults.join("; "),
        lost.len(),
        run.start.elapsed().as_secs_f64()
    );
    assert!(
        dropped.iter().all(|&d| d > 0),
        "no packet dropped: {dropped:?}"
    );
}

/// The net of `tests/tests/memory.rs`, `tests/data/memory/inc.xpnet` (with GPI-Space's `memory/global/range.xpnet` structs
/// written out, so it needs no corpus): ports `a` and `b` each take a global range onto place
/// `m`; transition `work` runs the module on each and puts the sums of the bytes it got on
/// `sums`.
const INC_NET: &str = include_str!("../data/memory/inc.xpnet");

/// The host identities and memory servers the workers reported: `(host, server)`.
fn segments(log: &str) -> Vec<(String, String)> {
    log.lines()
        .filter_map(|l| l.split_once("of working memory on host `"))
        .filter_map(|(_, rest)| {
            let (host, rest) = rest.split_once('`')?;
            let (_, server) = rest.split_once("memory server ")?;
            Some((host.to_string(), server.trim_end_matches(')').to_string()))
        })
        .collect()
}

#[test]
fn global_memory_moves_between_namespace_hosts_over_tcp() {
    // The C++ module, built before the hosts are made.
    if netns::unavailable() {
        return;
    }
    bin_dir();
    let modules = std::env::temp_dir().join(format!("pnet-netns-modules-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&modules);
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("inc.xpnet"), INC_NET).unwrap();
    let o = Command::new(bin_dir().join("pnetc"))
        .arg(modules.join("inc.xpnet"))
        .arg("--build-modules")
        .arg(&modules)
        .arg("-o")
        .arg(modules.join("inc.pnet"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "pnetc --build-modules failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let hosts = Hosts::start("memory", 2);
    let Some(hosts) = hosts else {
        let _ = std::fs::remove_dir_all(&modules);
        return;
    };
    let dir = hosts.dir().join("run");
    std::fs::create_dir_all(&dir).unwrap();
    // Ranges spread over both workers' segments: every task moves bytes between the hosts.
    let a: Vec<u8> = (0..3001usize).map(|i| ((i * 7 + 5) % 251) as u8).collect();
    std::fs::write(dir.join("a.bin"), &a).unwrap();
    let args = [
        format!("a=@{}", dir.join("a.bin").display()),
        "b=1500".to_string(),
        format!("a={}", dir.join("a.out").display()),
        format!("b={}", dir.join("b.out").display()),
    ];
    let modules_dir = modules.display().to_string();
    let extra = [
        "--module-path",
        &modules_dir,
        "--alloc",
        &args[0],
        "--alloc",
        &args[1],
        "--dump",
        &args[2],
        "--dump",
        &args[3],
    ];
    let mut run = Run::start(
        &hosts,
        &dir,
        &modules.join("inc.pnet"),
        "worker:1,1048576",
        &extra,
    );
    let out = run.finish(&hosts);
    let _ = std::fs::remove_dir_all(&modules);
    let log = run.log();
    let mut sums: Vec<u64> = port_values(&out, "sums")
        .iter()
        .map(|s| s.trim_end_matches("UL").parse().unwrap())
        .collect();
    sums.sort_unstable();
    let sum_a: u64 = a.iter().map(|&x| u64::from(x)).sum();
    assert_eq!(sums, [0, sum_a], "{out}\n{log}");
    let plus_one: Vec<u8> = a.iter().map(|x| x.wrapping_add(1)).collect();
    assert_eq!(std::fs::read(dir.join("a.out")).unwrap(), plus_one);
    assert_eq!(std::fs::read(dir.join("b.out")).unwrap(), vec![1u8; 1500]);
    // One segment on each namespace host, its memory server on that host's own address.
    let mut segs = segments(&log);
    segs.sort();
    let mut want: Vec<(String, String)> = (hosts.hosts.iter())
        .map(|h| (h.hostname.clone(), h.addr.clone()))
        .collect();
    want.sort();
    assert_eq!(segs.len(), 2, "{log}");
    for ((host, server), (want_host, want_addr)) in segs.iter().zip(&want) {
        assert_eq!(host, want_host, "{log}");
        assert!(server.starts_with(&format!("{want_addr}:")), "{log}");
    }
    assert!(!log.contains("cannot free"), "{log}");
    println!(
        "memory: segments {segs:?}; run took {:.1} s",
        run.start.elapsed().as_secs_f64()
    );
}

/// What a set of hosts left to check after it is gone.
struct Traces {
    names: Vec<String>,
    dir: PathBuf,
    pids: Vec<u32>,
}

fn ip_out(args: &[&str]) -> String {
    let o = Command::new("ip").args(args).output().expect("run ip");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn hosts_are_torn_down_on_drop_and_on_panic() {
    for panic in [false, true] {
        let (tx, rx) = std::sync::mpsc::channel();
        let joined = std::thread::spawn(move || {
            let Some(hosts) = Hosts::start("teardown", 2) else {
                tx.send(None).unwrap();
                return;
            };
            // A process left running on host 0 (a child of init, not of this test) and a
            // frozen host 1.
            let o = hosts
                .exec(0, "sh")
                .args(["-c", "sleep 60 >/dev/null 2>&1 & echo $!"])
                .output()
                .unwrap();
            let sleeper: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
            assert!(hosts.freeze(1) > 0);
            let mut names: Vec<String> = hosts.hosts.iter().map(|h| h.ns.clone()).collect();
            names.extend(hosts.hosts.iter().map(|h| h.veth.clone()));
            names.push(hosts.bridge().to_string());
            let mut pids = hosts.sshd_pids();
            pids.push(sleeper);
            pids.extend(hosts.pids(1));
            assert!(pids.iter().all(|&p| pnet_launch::testing::alive(p)));
            tx.send(Some(Traces {
                names,
                dir: hosts.dir().to_path_buf(),
                pids,
            }))
            .unwrap();
            assert!(!panic, "a test failing while it holds hosts (on purpose)");
        })
        .join();
        assert_eq!(joined.is_err(), panic);
        let Some(traces) = rx.recv().unwrap() else {
            return;
        };
        let (namespaces, links) = (ip_out(&["netns", "list"]), ip_out(&["-o", "link", "show"]));
        for name in &traces.names {
            assert!(
                !namespaces.contains(name.as_str()) && !links.contains(&format!(" {name}")),
                "{name} is left (panic: {panic}):\n{namespaces}\n{links}"
            );
        }
        assert!(!traces.dir.exists(), "{} is left", traces.dir.display());
        for pid in traces.pids {
            assert!(
                pnet_launch::testing::wait_gone(pid, Duration::from_secs(5)),
                "process {pid} is left (panic: {panic})"
            );
        }
    }
}

/// Tokens 0..n on `i` for `call` (no requirement) and 0..m on `j` for `solo` (requires the
/// capability `solo`), both the `nap` module: out ports `y`, `w` and `sy`, `sw`.
fn placement_net(n: usize, m: usize) -> String {
    let tokens = |k: usize| -> String {
        (0..k)
            .map(|v| format!("<token><value>{v}L</value></token>"))
            .collect()
    };
    let transition = |name: &str, input: &str, y: &str, w: &str, require: &str| {
        format!(
            r#"<transition name="{name}">
      <defun>{require}
        <in name="x" type="long"/>
        <out name="y" type="long"/>
        <out name="w" type="string"/>
        <module name="nap" function="f (x, y, w)"/>
      </defun>
      <connect-in port="x" place="{input}"/>
      <connect-out port="y" place="{y}"/>
      <connect-out port="w" place="{w}"/>
    </transition>"#
        )
    };
    format!(
        r#"<defun name="placement">
  <out name="y" type="long" place="y"/>
  <out name="w" type="string" place="w"/>
  <out name="sy" type="long" place="sy"/>
  <out name="sw" type="string" place="sw"/>
  <net>
    <place name="i" type="long">{}</place>
    <place name="j" type="long">{}</place>
    <place name="y" type="long"/>
    <place name="w" type="string"/>
    <place name="sy" type="long"/>
    <place name="sw" type="string"/>
    {}
    {}
  </net>
</defun>
"#,
        tokens(n),
        tokens(m),
        transition("call", "i", "y", "w", ""),
        transition(
            "solo",
            "j",
            "sy",
            "sw",
            r#"<require key="solo" mandatory="true"/>"#
        ),
    )
}

#[test]
fn host_based_placement_puts_a_class_on_its_hosts_only() {
    if netns::unavailable() {
        return;
    }
    bin_dir();
    let Some(hosts) = Hosts::start("placement", 4) else {
        return;
    };
    let dir = hosts.dir().join("run");
    std::fs::create_dir_all(&dir).unwrap();
    nap_module(&dir, "0.05");
    let net = dir.join("placement.xpnet");
    let (n, m) = (32, 12);
    std::fs::write(&net, placement_net(n, m)).unwrap();
    // `solo:1x2`: one `solo` worker on each of the first two hosts of the nodefile only.
    let mut run = Run::start(&hosts, &dir, &net, "w:1 solo:1x2", &[]);
    let out = run.finish(&hosts);
    let per_host = check_exact(&out, n);
    let mut sy: Vec<i64> = port_values(&out, "sy")
        .iter()
        .map(|y| y.trim_end_matches('L').parse().unwrap())
        .collect();
    sy.sort_unstable();
    assert_eq!(sy, (1..=m as i64).collect::<Vec<_>>(), "{out}");
    let mut solo_hosts = BTreeMap::new();
    for w in port_values(&out, "sw") {
        let w = w.trim_matches('"').to_string();
        let (worker, host) = w.rsplit_once('@').unwrap();
        assert!(worker.starts_with("solo-"), "{w}");
        *solo_hosts.entry(host.to_string()).or_insert(0) += 1;
    }
    let first_two: Vec<&str> = (hosts.hosts[..2].iter())
        .map(|h| h.hostname.as_str())
        .collect();
    assert!(
        solo_hosts.keys().all(|h| first_two.contains(&h.as_str())),
        "{solo_hosts:?} not only on {first_two:?}"
    );
    let log = run.log();
    assert_eq!(log.matches("started worker `solo-").count(), 2, "{log}");
    println!(
        "placement: solo tasks per host {solo_hosts:?} (solo workers on {first_two:?} only); \
         other tasks per host {per_host:?}; run took {:.1} s",
        run.start.elapsed().as_secs_f64()
    );
}

#[test]
fn a_host_down_from_the_start_leaves_the_run_to_the_others() {
    if netns::unavailable() {
        return;
    }
    bin_dir();
    let Some(hosts) = Hosts::start("down", 4) else {
        return;
    };
    let dir = hosts.dir().join("run");
    std::fs::create_dir_all(&dir).unwrap();
    nap_module(&dir, "0.1");
    let n = 48;
    let net = dir.join("fan.xpnet");
    std::fs::write(&net, pnet_tests::fan_net("fan", "nap", "f", &[], n)).unwrap();
    // Host 3 is unreachable before its workers are started: ssh cannot connect to it.
    let down = 3;
    hosts.cut(down);
    let mut run = Run::start(&hosts, &dir, &net, &format!("w:{PER_HOST}"), &[]);
    let out = run.finish(&hosts);
    let per_host = check_exact(&out, n);
    let log = run.log();
    let addr = &hosts.hosts[down].addr;
    assert!(
        !per_host.contains_key(&hosts.hosts[down].hostname),
        "{per_host:?}"
    );
    assert_eq!(
        (log.lines())
            .filter(|l| l.contains(" joined with capabilities"))
            .count(),
        PER_HOST * (hosts.hosts.len() - 1),
        "{log}"
    );
    assert!(
        !log.lines()
            .any(|l| l.contains(" joined with capabilities") && l.contains(addr.as_str())),
        "{log}"
    );
    println!(
        "down: host {down} ({addr}) unreachable from the start; results per host: \
         {per_host:?}; run took {:.1} s",
        run.start.elapsed().as_secs_f64()
    );
}

#[test]
fn a_gspc_runtime_over_namespace_hosts_keeps_its_jobs_exact_when_a_host_is_cut() {
    if netns::unavailable() {
        return;
    }
    bin_dir();
    let Some(hosts) = Hosts::start("gspc", 4) else {
        return;
    };
    let dir = hosts.dir().join("run");
    std::fs::create_dir_all(&dir).unwrap();
    nap_module(&dir, "0.25");
    let n = 48;
    let net = dir.join("fan.xpnet");
    std::fs::write(&net, pnet_tests::fan_net("fan", "nap", "f", &[], n)).unwrap();
    let nodes = dir.join("nodes");
    std::fs::write(&nodes, hosts.nodefile()).unwrap();
    // Dropped before the hosts: the runtime stops while they still exist.
    let s = pnet_tests::GspcScratch::new("netns", "gspc", bin_dir().join("gspc"));
    let listen = format!("{}:0", hosts.agent_addr());
    let mut boot: Vec<String> = [
        "boot",
        "--topology",
        &format!("w:{PER_HOST}"),
        "--launcher",
        "ssh",
        "--nodefile",
        &nodes.display().to_string(),
        "--listen",
        &listen,
        "--module-path",
        &dir.display().to_string(),
        "--timeout",
        "30",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    boot.extend(hosts.ssh_args().iter().map(|a| format!("--ssh-option={a}")));
    let boot: Vec<&str> = boot.iter().map(String::as_str).collect();
    s.ok(&boot);
    let net = net.display().to_string();
    let jobs: Vec<String> = (0..2)
        .map(|_| s.ok(&["submit", &net]).trim().to_string())
        .collect();
    let victim = 2;
    let addr = hosts.hosts[victim].addr.clone();
    let log_path = s.state().join("daemon.log");
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !host_busy(&started(&dir), &addr) {
        assert!(
            Instant::now() < deadline,
            "host {victim} ran no tasks:\n{}\n{}",
            log(),
            hosts.log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    hosts.cut(victim);
    let t0 = Instant::now();
    // Each job logs the loss of each of the host's workers.
    while lost_lines(&log(), &addr).len() < PER_HOST * jobs.len() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the cut was not noticed:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let noticed = t0.elapsed();
    let mut per_job = Vec::new();
    for job in &jobs {
        let out = s.ok(&["wait", job, "--timeout", "40"]);
        per_job.push(check_exact(&out, n));
    }
    let log = log();
    let lost = lost_lines(&log, &addr);
    println!(
        "gspc: host {victim} ({addr}) cut off while 2 jobs ran; its workers lost after {} ms; \
         {} tasks queued again; results per host and job: {per_job:?}",
        noticed.as_millis(),
        requeued(&lost)
    );
    assert!(
        noticed <= HEARTBEAT_TIMEOUT + NOTICE_SLACK,
        "noticed after {noticed:?}:\n{log}"
    );
    assert_eq!(
        log.matches(" lost: ").count(),
        PER_HOST * jobs.len(),
        "{log}"
    );
    assert!(requeued(&lost) >= 1, "{log}");
}
