//! A tree of agents with real processes on loopback: a `gspc` runtime without workers of its
//! own is the root; two `gspc-leaf` processes connect to it as one fat worker each and start
//! two `gspc-worker`s each. A job of 200 command-module tasks gives its exact result; so it
//! does when a worker under a leaf is SIGKILLed (the leaf runs its tasks again and starts it
//! again, the root sees no loss), when a whole leaf is SIGKILLed (the root runs its tasks
//! again) and when the root is SIGKILLed and resumed (the leaves rejoin it: by its state
//! directory, by its address and secret, with their workers' segments). No process is left
//! behind.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pnet_launch::testing::{alive, wait_gone};

const TASKS: usize = 200;

/// How long a test waits for the tree to reach a state (a leaf up, a task started, a
/// worker back): generous, for a loaded 2-core CI machine; a passing run never waits it out.
const PATIENCE: Duration = Duration::from_secs(60);

/// The folder with `gspc`, `gspc-worker` and `gspc-leaf` (built once per test run).
fn bin_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = pnet_tests::build_packages(&["pnet-gspc", "pnet-worker", "gspc-leaf", "pnetc"]);
        for f in ["gspc", "gspc-worker", "gspc-leaf", "pnetc"] {
            assert!(
                dir.join(f).is_file(),
                "{} is missing",
                dir.join(f).display()
            );
        }
        dir
    })
}

/// The command module: records its worker's name and pid (a line of `pids/task-TASK` per
/// start), works 10 ms, and answers y = x + 1 and w = its worker's name.
fn script(pids: &std::path::Path) -> String {
    format!(
        "#!/bin/sh\nread -r input\nx=$(printf '%s' \"$input\" | sed 's/.*\"x\": *\\(-*[0-9]*\\).*/\\1/')\n\
         echo \"$PNET_WORKER $PNET_WORKER_PID\" >> {}/task-$PNET_TASK\nsleep 0.01\n\
         printf '{{\"y\": %s, \"w\": \"%s\"}}\\n' \"$((x + 1))\" \"$PNET_WORKER\"\n",
        pids.display()
    )
}

/// A root runtime with two leaves (of two workers each, but for [`Tree::grow`]'s callers);
/// the leaves are killed when dropped (after the root was stopped, which stops them).
struct Tree {
    s: pnet_tests::GspcScratch,
    leaves: Vec<Child>,
    pids: PathBuf,
    net: String,
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = self.s.gspc(&["stop"]);
        for l in &mut self.leaves {
            let deadline = Instant::now() + Duration::from_secs(10);
            while l.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = l.kill();
            let _ = l.wait();
        }
    }
}

impl Tree {
    fn new(name: &str) -> Tree {
        Tree::with(name, &[])
    }

    /// [`Tree::new`] with more options for both leaves.
    fn with(name: &str, leaf_args: &[&str]) -> Tree {
        Tree::fan(name, leaf_args, Join::StateDir)
    }

    /// [`Tree::with`], the leaves joining the root by its address and secret (`--root`,
    /// GSPC_SECRET): the root listens on a fixed port (`gspc boot --listen`), as it must for
    /// such leaves to find it after `gspc boot --resume`.
    fn by_address(name: &str, leaf_args: &[&str]) -> Tree {
        Tree::fan(
            name,
            leaf_args,
            Join::Address(format!("127.0.0.1:{}", fixed_port())),
        )
    }

    /// The root with the command module `slow` and the net of [`TASKS`] calls, its leaves
    /// `leafA` and `leafB` of two workers each.
    fn fan(name: &str, leaf_args: &[&str], join: Join) -> Tree {
        let s = pnet_tests::GspcScratch::new("leaves", name, bin_dir().join("gspc"));
        let modules = s.dir.join("modules");
        std::fs::create_dir_all(&modules).unwrap();
        let slow = modules.join("slow");
        std::fs::write(&slow, script(&s.dir.join("pids"))).unwrap();
        std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).unwrap();
        let net = s.dir.join("fan.xpnet");
        std::fs::write(&net, pnet_tests::fan_net("fan", "slow", "f", &[], TASKS)).unwrap();
        let listen = match &join {
            Join::Address(a) => vec!["--listen", a.as_str()],
            Join::StateDir => vec![],
        };
        boot_root(&s, Some(&modules), &listen);
        let mut args = vec!["--workers", "2"];
        args.extend(leaf_args);
        Tree::grow(
            s,
            net.display().to_string(),
            ["leafA", "leafB"],
            &args,
            &join,
        )
    }

    /// Starts the leaves `names` (`gspc-leaf` with `args`) under the root booted in `s` and
    /// waits until the root has both; `net` is the net [`Tree::submit`] submits.
    fn grow(
        s: pnet_tests::GspcScratch,
        net: String,
        names: [&str; 2],
        args: &[&str],
        join: &Join,
    ) -> Tree {
        let pids = s.dir.join("pids");
        std::fs::create_dir_all(&pids).unwrap();
        let leaves = names
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let mut c = Command::new(bin_dir().join("gspc-leaf"));
                match join {
                    // The first leaf names the state directory; the second finds it as gspc
                    // does (the default, here from GSPC_STATE_DIR).
                    Join::StateDir if k == 0 => {
                        c.arg("--state-dir").arg(s.state());
                    }
                    Join::StateDir => {
                        c.env("GSPC_STATE_DIR", s.state());
                    }
                    Join::Address(a) => {
                        let secret = std::fs::read_to_string(s.state().join("secret")).unwrap();
                        c.args(["--root", a]).env("GSPC_SECRET", secret.trim());
                    }
                }
                c.args(["--name", name]).args(args);
                spawn_leaf(c)
            })
            .collect();
        let tree = Tree {
            s,
            leaves,
            pids,
            net,
        };
        let st = tree.until("two leaves up", |st| {
            st["workers"].as_array().is_some_and(|w| w.len() == 2)
        });
        let up: Vec<&str> = st["workers"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|w| w["name"].as_str())
            .collect();
        assert!(up.contains(&names[0]) && up.contains(&names[1]), "{st:#}");
        tree
    }

    fn status(&self) -> serde_json::Value {
        serde_json::from_str(&self.s.ok(&["status", "--json"])).unwrap()
    }

    fn until(&self, what: &str, pred: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let t = Instant::now();
        loop {
            let st = self.status();
            if pred(&st) {
                return st;
            }
            assert!(t.elapsed() < PATIENCE, "never {what}: {st:#}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn submit(&self) -> String {
        self.s.ok(&["submit", &self.net]).trim().to_string()
    }

    /// Waits for the job: its `y` values sorted, and the workers that ran its tasks.
    fn wait(&self, job: &str) -> (Vec<i64>, Vec<String>) {
        let out = self.s.ok(&["wait", job, "--timeout", "120"]);
        let values = |port: &str| -> Vec<String> {
            let prefix = format!("{port} = ");
            out.lines()
                .filter_map(|l| l.strip_prefix(&prefix).map(str::to_string))
                .collect()
        };
        let mut ys: Vec<i64> = values("y")
            .iter()
            .map(|v| v.trim_end_matches('L').parse().unwrap())
            .collect();
        ys.sort_unstable();
        let mut ws: Vec<String> = values("w")
            .iter()
            .map(|w| w.trim_matches('"').to_string())
            .collect();
        ws.sort();
        ws.dedup();
        (ys, ws)
    }

    /// (worker name, pid) of every start of a task so far.
    fn started(&self) -> Vec<(String, i32)> {
        self.starts().into_iter().flatten().collect()
    }

    /// For each task started so far: (worker name, pid) of each of its starts, in order.
    fn starts(&self) -> Vec<Vec<(String, i32)>> {
        std::fs::read_dir(&self.pids)
            .unwrap()
            .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
            .map(|s| {
                s.lines()
                    .filter_map(|l| {
                        let (name, pid) = l.trim().split_once(' ')?;
                        Some((name.trim_matches('"').to_string(), pid.parse().ok()?))
                    })
                    .collect()
            })
            .collect()
    }

    /// Waits until tasks have started `n` times.
    fn wait_started(&self, n: usize) -> Vec<(String, i32)> {
        let t = Instant::now();
        loop {
            let s = self.started();
            if s.len() >= n {
                return s;
            }
            assert!(t.elapsed() < PATIENCE, "only {} started", s.len());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.s.state().join("daemon.log")).unwrap_or_default()
    }

    /// Stops the root; every leaf exits with status 0 and every worker that ran a task is
    /// gone. Returns the leaves' standard error, in order.
    fn stop_and_check_nothing_left(self, dead: &[u32]) -> Vec<String> {
        self.stop_and_check(dead).1
    }

    /// [`Tree::stop_and_check_nothing_left`], also returning what `gspc stop` said.
    fn stop_and_check(mut self, dead: &[u32]) -> (String, Vec<String>) {
        let stop = self.s.ok(&["stop"]);
        let mut errs = Vec::new();
        for l in &mut self.leaves {
            if dead.contains(&l.id()) {
                continue;
            }
            let (status, err) = leaf_exit(l, "a leaf did not stop");
            assert!(status.success(), "leaf: {status:?}\n{err}");
            assert!(err.contains("stopped by the root"), "{err}");
            errs.push(err);
        }
        for (name, pid) in self.started() {
            assert!(
                wait_gone(pid as u32, Duration::from_secs(10)),
                "worker `{name}` (pid {pid}) is still running"
            );
        }
        (stop, errs)
    }
}

/// A free port on 127.0.0.1 below the kernel's range of ephemeral ports (which a bind to
/// port 0 takes from): no other test's listener takes it while the root is down.
fn fixed_port() -> u16 {
    let low: u32 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let span = low.saturating_sub(10_000).max(1);
    (0..span)
        .map(|k| 10_000 + (std::process::id() * 7 + k) % span)
        .filter_map(|p| u16::try_from(p).ok())
        .find(|&p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
        .expect("a free port")
}

/// How a [`Tree`]'s leaves find their root.
enum Join {
    /// In its state directory.
    StateDir,
    /// At this address (`--root`), with its secret in GSPC_SECRET.
    Address(String),
}

/// Boots a root runtime that starts no workers of its own (leaves bring them), with the
/// module path `modules` if given and more options of `gspc boot`.
fn boot_root(s: &pnet_tests::GspcScratch, modules: Option<&std::path::Path>, more: &[&str]) {
    let mut args = vec!["boot", "--topology", "worker:0", "--timeout", "30"];
    let modules = modules.map(|m| m.display().to_string());
    if let Some(m) = &modules {
        args.extend(["--module-path", m.as_str()]);
    }
    args.extend(more);
    let o = s.ok(&args);
    assert!(o.contains("gspc: runtime booted (pid "), "{o}");
}

/// Starts a leaf agent (`c`: `gspc-leaf` with its arguments) without the test's module
/// path, its stderr piped for [`leaf_exit`].
fn spawn_leaf(mut c: Command) -> Child {
    c.env_remove("PNET_MODULE_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits up to 10 s for a leaf to exit (killing it and failing with `what` if it does not),
/// then returns its exit status and what it wrote on stderr (if stderr was piped).
fn leaf_exit(l: &mut Child, what: &str) -> (ExitStatus, String) {
    let t = Instant::now();
    let status = loop {
        if let Some(st) = l.try_wait().unwrap() {
            break st;
        }
        if t.elapsed() > Duration::from_secs(10) {
            let _ = l.kill();
            panic!("{what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    if let Some(mut e) = l.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    (status, err)
}

fn expected() -> Vec<i64> {
    (1..=TASKS as i64).collect()
}

#[test]
fn two_leaves_of_two_workers_run_a_job_exactly() {
    let tree = Tree::new("exact");
    let job = tree.submit();
    let (ys, ws) = tree.wait(&job);
    assert_eq!(ys, expected());
    // Tasks ran on workers of both leaves.
    assert!(ws.iter().any(|w| w.starts_with("leafA-w")), "{ws:?}");
    assert!(ws.iter().any(|w| w.starts_with("leafB-w")), "{ws:?}");
    let log = tree.log();
    assert!(log.contains("a leaf agent with capacity 0"), "{log}");
    // The task records name the worker under the leaf that ran each task.
    let tasks: serde_json::Value =
        serde_json::from_str(&tree.s.ok(&["tasks", &job, "--json"])).unwrap();
    let ran: Vec<&str> = tasks["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["worker"].as_str())
        .collect();
    assert_eq!(ran.len(), TASKS, "{tasks:#}");
    assert!(
        ran.iter()
            .all(|w| w.starts_with("leafA/leafA-w") || w.starts_with("leafB/leafB-w")),
        "{ran:?}"
    );
    assert!(ran.iter().any(|w| w.starts_with("leafA/")), "{ran:?}");
    assert!(ran.iter().any(|w| w.starts_with("leafB/")), "{ran:?}");
    let text = tree.s.ok(&["tasks", &job]);
    assert!(text.contains("leafA/leafA-w"), "{text}");
    // A trace has a lane per worker under the leaves.
    let trace: serde_json::Value = serde_json::from_str(&tree.s.ok(&["trace", &job])).unwrap();
    let mut lanes: Vec<&str> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    lanes.sort_unstable();
    assert_eq!(
        lanes,
        [
            "leafA/leafA-w0",
            "leafA/leafA-w1",
            "leafB/leafB-w0",
            "leafB/leafB-w1"
        ],
        "{trace:#}"
    );
    // `gspc stop` counts the leaves' workers and names the leaves.
    let (stop, _) = tree.stop_and_check(&[]);
    assert!(
        stop.contains(", 4 workers stopped (") && stop.contains("leafA/leafA-w0 pid "),
        "{stop}"
    );
    assert!(
        stop.contains("2 leaf agents stopped (")
            && stop.contains("leafA pid ")
            && stop.contains("leafB pid ")
            && stop.ends_with(", 0 left\n"),
        "{stop}"
    );
}

#[test]
fn status_shows_each_leaf_with_its_capacity_and_its_workers_under_it() {
    let tree = Tree::new("status");
    let st = tree.until("both leaves report two workers", |st| {
        st["workers"].as_array().is_some_and(|ws| {
            ws.iter()
                .all(|w| w["workers"].as_array().is_some_and(|u| u.len() == 2))
        })
    });
    for leaf in st["workers"].as_array().unwrap() {
        let name = leaf["name"].as_str().unwrap();
        // Two workers of depth 4 (the default).
        assert_eq!(leaf["capacity"], 8, "{leaf:#}");
        let under = leaf["workers"].as_array().unwrap();
        let names: Vec<&str> = under.iter().filter_map(|w| w["name"].as_str()).collect();
        assert_eq!(
            names,
            [format!("{name}-w0"), format!("{name}-w1")],
            "{leaf:#}"
        );
        for w in under {
            assert_eq!(w["state"], "up", "{w:#}");
            assert!(w["pid"].as_u64().is_some_and(|p| p > 0), "{w:#}");
            assert!(w["heartbeat_age_ms"].as_u64().is_some(), "{w:#}");
            assert_eq!(w["host"], leaf["host"], "{w:#}");
        }
    }
    // While jobs run, the workers under the leaves show the tasks they run.
    let jobs: Vec<String> = (0..4).map(|_| tree.submit()).collect();
    let st = tree.until("a worker under a leaf runs a task", |st| {
        st["workers"].as_array().is_some_and(|ws| {
            ws.iter().any(|l| {
                l["workers"].as_array().is_some_and(|u| {
                    u.iter()
                        .any(|w| w["running"]["transition"].as_str().is_some())
                })
            })
        })
    });
    let text = tree.s.ok(&["status"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.contains(&"2 workers (2 leaf agents with 4 workers under them; HOLDS of a leaf: its tasks of its capacity)"),
        "{text}"
    );
    let at = |name: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}: {text}"))
    };
    let a = at("leafA ");
    assert!(lines[a].contains(" of 8 "), "{text}");
    assert!(lines[a + 1].starts_with("  leafA-w0 "), "{text}");
    assert!(lines[a + 2].starts_with("  leafA-w1 "), "{text}");
    assert!(lines[at("leafB ") + 1].starts_with("  leafB-w0 "), "{text}");
    // A leaf's RUNNING counts the tasks its workers' rows show.
    let head = at("NAME ");
    let col = |name: &str| lines[head].find(name).unwrap();
    let running = |l: &str| l[col("RUNNING")..col("HOLDS")].trim().to_string();
    for leaf in [a, at("leafB ")] {
        let busy = (lines[leaf + 1..leaf + 3].iter())
            .filter(|l| running(l) != "-")
            .count();
        let want = match busy {
            0 => "-".to_string(),
            1 => "1 task".to_string(),
            n => format!("{n} tasks"),
        };
        assert_eq!(running(lines[leaf]), want, "{text}");
    }
    let running: Vec<&serde_json::Value> = st["workers"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["workers"].as_array().unwrap())
        .filter_map(|w| w["running"].as_object().map(|_| &w["running"]))
        .collect();
    assert!(
        running.iter().all(|r| jobs.contains(&r["job"].to_string())),
        "{running:?} (jobs {jobs:?})"
    );
    for job in &jobs {
        let (ys, _) = tree.wait(job);
        assert_eq!(ys, expected());
    }
    tree.stop_and_check_nothing_left(&[]);
}

#[test]
fn a_memory_task_with_leaves_only_says_why_it_waits() {
    let tree = Tree::new("memory");
    // A task that needs the memory capability GPI (as every call with memory buffers does):
    // no leaf offers it.
    let net = tree.s.dir.join("gpi.xpnet");
    std::fs::write(&net, pnet_tests::fan_net("gpi", "slow", "f", &["GPI"], 3)).unwrap();
    let job = tree
        .s
        .ok(&["submit", &net.display().to_string()])
        .trim()
        .to_string();
    let waiting = tree.waiting(&job);
    assert!(
        waiting.contains("waits for a worker with the capabilities `GPI`")
            && waiting.contains(
                "leaf agents (`leafA` and 1 more) without working memory do not run module \
                 calls with memory buffers or transfers: start leaves with `gspc-leaf --shm \
                 BYTES`"
            )
            && waiting.contains("gspc add-workers \"worker:1,67108864\""),
        "{waiting}"
    );
    // `gspc wait --timeout` says the same.
    let o = tree.s.gspc(&["wait", &job, "--timeout", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains("leaf agents (`leafA` and 1 more)"), "{err}");
    tree.s.ok(&["cancel", &job]);
    tree.stop_and_check_nothing_left(&[]);
}

impl Tree {
    /// Waits up to [`PATIENCE`] for the job `job` to say why it waits (`gspc jobs`).
    fn waiting(&self, job: &str) -> String {
        let t = Instant::now();
        loop {
            let jobs: serde_json::Value =
                serde_json::from_str(&self.s.ok(&["jobs", "--json"])).unwrap();
            let j = jobs
                .as_array()
                .and_then(|a| a.iter().find(|j| j["id"].as_u64() == job.parse().ok()))
                .cloned()
                .unwrap_or_default();
            if let Some(w) = j["waiting"].as_str() {
                return w.to_string();
            }
            assert!(t.elapsed() < PATIENCE, "not waiting: {jobs:#}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The net of `tests/memory.rs`: a C++ module adds 1 to every byte of a global range
/// (`memory-getput` through its buffer) and answers the sum of the bytes it got.
const INC_NET: &str = include_str!("../data/memory/inc.xpnet");

/// A root with the C++ module of [`INC_NET`] built, its leaves `memA` and `memB` of one
/// worker with 1 MiB of working memory each (`gspc-leaf` with more `leaf_args`), both
/// segments in the global memory.
fn memory_tree(name: &str, leaf_args: &[&str]) -> Tree {
    let s = pnet_tests::GspcScratch::new("leaves", name, bin_dir().join("gspc"));
    let mods = s.dir.join("mods");
    std::fs::create_dir_all(&mods).unwrap();
    let net = mods.join("inc.xpnet");
    std::fs::write(&net, INC_NET).unwrap();
    let bundle = mods.join("inc.pnet");
    let o = Command::new(bin_dir().join("pnetc"))
        .arg(&net)
        .arg("--build-modules")
        .arg(&mods)
        .arg("-o")
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "pnetc --build-modules: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    boot_root(&s, Some(&mods), &[]);
    let mut args = vec!["--workers", "1", "--shm", "1048576"];
    args.extend(leaf_args);
    let bundle = bundle.display().to_string();
    let tree = Tree::grow(s, bundle, ["memA", "memB"], &args, &Join::StateDir);
    let st = tree.until("both segments in the global memory", |st| {
        st["memory"]["segments"] == 2
    });
    assert_eq!(st["memory"]["capacity"], 2 * 1048576, "{st:#}");
    for leaf in st["workers"].as_array().unwrap() {
        assert!(
            leaf["capabilities"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c == "GPI")),
            "a leaf with working memory offers GPI: {leaf:#}"
        );
    }
    tree
}

impl Tree {
    /// Runs the net of [`memory_tree`] on two new allocations, each spread over both
    /// leaves' workers' segments: the sums of the bytes the calls got, and the bytes put
    /// back (one more each), exact. Returns the job. The second allocation is not filled on
    /// `fresh` segments (never used: zeros), else filled with zeros (a new allocation keeps
    /// the bytes earlier ones left: `gspc alloc --help`).
    fn run_inc(&self, fresh: bool) -> String {
        let s = &self.s;
        let pattern = |n: usize, seed: usize| -> Vec<u8> {
            (0..n).map(|i| ((i * 7 + seed) % 251) as u8).collect()
        };
        let a = pattern(2000, 1);
        let a_file = s.dir.join("a.bin");
        std::fs::write(&a_file, &a).unwrap();
        let out = s.ok(&["alloc", "--from", &a_file.display().to_string()]);
        let (ha, ra) = out.split_once('\n').unwrap();
        let (ha, ra) = (ha.to_string(), ra.trim().to_string());
        let zeros = s.dir.join("zeros.bin");
        std::fs::write(&zeros, [0u8; 1024]).unwrap();
        let zeros = zeros.display().to_string();
        let out = if fresh {
            s.ok(&["alloc", "1K"])
        } else {
            s.ok(&["alloc", "--from", &zeros])
        };
        let (hb, rb) = out.split_once('\n').unwrap();
        let (hb, rb) = (hb.to_string(), rb.trim().to_string());
        let job = s
            .ok(&[
                "submit",
                &self.net,
                "-p",
                &format!("a={ra}"),
                "-p",
                &format!("b={rb}"),
            ])
            .trim()
            .to_string();
        let out = s.ok(&["wait", &job]);
        let mut sums: Vec<u64> = out
            .lines()
            .filter_map(|l| l.strip_prefix("sums = "))
            .map(|n| n.trim_end_matches("UL").parse().unwrap())
            .collect();
        sums.sort_unstable();
        let sum_a: u64 = a.iter().map(|&x| u64::from(x)).sum();
        assert_eq!(sums, vec![0, sum_a], "{out}");
        // The bytes were put back into the global memory, one more each.
        let back = s.dir.join("a.back");
        s.ok(&[
            "mem-read",
            &ha,
            "--size",
            "2000",
            "-o",
            &back.display().to_string(),
        ]);
        let plus_one: Vec<u8> = a.iter().map(|x| x.wrapping_add(1)).collect();
        assert_eq!(std::fs::read(&back).unwrap(), plus_one);
        let back = s.dir.join("b.back");
        s.ok(&[
            "mem-read",
            &hb,
            "--size",
            "1024",
            "-o",
            &back.display().to_string(),
        ]);
        assert_eq!(std::fs::read(&back).unwrap(), vec![1u8; 1024]);
        job
    }
}

#[test]
fn leaves_with_working_memory_run_memory_calls_on_the_root_s_global_memory() {
    let tree = memory_tree("shm", &[]);
    let job = tree.run_inc(true);
    // The tasks ran under the leaves.
    let tasks = tree.s.ok(&["tasks", &job]);
    assert!(
        tasks.contains("memA/memA-w0") || tasks.contains("memB/memB-w0"),
        "{tasks}"
    );
    let (stop, _) = tree.stop_and_check(&[]);
    assert!(stop.contains("2 leaf agents stopped"), "{stop}");
}

#[test]
fn leaves_with_working_memory_rejoin_a_resumed_root_with_their_segments() {
    let mut tree = memory_tree("shm-rejoin", &["--wait-for-root", "60"]);
    tree.run_inc(true);
    let st = tree.status();
    assert_eq!(st["memory"]["allocations"], 2, "{st:#}");
    let (daemon, before) = root_and_leaf_workers(&st);
    assert_eq!(before[0].0, "memA");
    kill_root(daemon);
    // While the root is away, memA's worker dies: memA starts it again (the new one joins
    // it, its segment made) and keeps the new segment for the resumed root.
    let old = before[0].1[0];
    // SAFETY: kill on the pid of a worker this test saw under the leaf.
    assert_eq!(unsafe { libc::kill(old as i32, libc::SIGKILL) }, 0);
    let new = worker_with_segment(tree.leaves[0].id(), old);
    let resumed = tree.s.ok(&["boot", "--resume", "--timeout", "30"]);
    assert!(resumed.contains("gspc: runtime booted (pid "), "{resumed}");
    // The leaves are back with their workers, whose segments join the new global memory;
    // the allocations of the crashed root are not restored (JOURNAL.md).
    let st = tree.until("the leaves back with their segments", |st| {
        st["memory"]["segments"] == 2
            && root_and_leaf_workers(st)
                .1
                .iter()
                .all(|(_, w)| w.len() == 1)
    });
    assert_eq!(st["memory"]["capacity"], 2 * 1048576, "{st:#}");
    assert_eq!(st["memory"]["allocations"], 0, "{st:#}");
    let after = root_and_leaf_workers(&st).1;
    assert_eq!(after[0], ("memA".to_string(), vec![new]), "{st:#}");
    assert_eq!(after[1], before[1], "the same worker under memB");
    // Each leaf numbers its workers' segments for the number the new root gave it.
    let log = tree.log();
    assert!(!log.contains("reported its segment as number"), "{log}");
    for l in tree.leaves.iter_mut() {
        assert!(l.try_wait().unwrap().is_none(), "a leaf exited");
    }
    // New allocations over the same segments (which keep the bytes of the old ones):
    // exact again.
    tree.run_inc(false);
    for e in tree.stop_and_check_nothing_left(&[]) {
        assert!(
            e.contains("gspc-leaf: lost the root agent (")
                && e.contains("gspc-leaf: joined the root agent ")
                && e.contains("), with its 1 workers"),
            "{e}"
        );
    }
}

/// Waits up to [`PATIENCE`] for a worker process of the leaf `leaf` (its pid) other than `old` with
/// its segment made (`/dev/shm/pnet-PID-NAME`: made after the leaf's Welcome, so it joined
/// the leaf); returns its pid.
fn worker_with_segment(leaf: u32, old: u64) -> u64 {
    let parent = |pid: u64| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let t = Instant::now();
    loop {
        let found = (std::fs::read_dir("/dev/shm")
            .into_iter()
            .flatten()
            .flatten())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("pnet-")?.split_once('-')?.0.parse().ok()
        })
        .find(|&pid: &u64| pid != old && parent(pid) == Some(leaf));
        if let Some(pid) = found {
            return pid;
        }
        assert!(
            t.elapsed() < PATIENCE,
            "the leaf (pid {leaf}) started no worker with working memory in place of {old}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_leaf_started_before_its_root_waits_for_it() {
    let s = pnet_tests::GspcScratch::new("leaves", "early", bin_dir().join("gspc"));
    // The leaf first: there is no runtime in its state directory yet.
    let mut c = Command::new(bin_dir().join("gspc-leaf"));
    c.arg("--state-dir").arg(s.state());
    c.args(["--workers", "1", "--name", "early", "--wait-for-root", "60"]);
    let mut leaf = spawn_leaf(c);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        leaf.try_wait().unwrap().is_none(),
        "the leaf did not wait for its root"
    );
    boot_root(&s, None, &[]);
    let t = Instant::now();
    loop {
        let st: serde_json::Value = serde_json::from_str(&s.ok(&["status", "--json"])).unwrap();
        if st["workers"].as_array().is_some_and(|w| {
            w.len() == 1
                && w[0]["name"] == "early"
                && w[0]["workers"].as_array().is_some_and(|u| u.len() == 1)
        }) {
            break;
        }
        assert!(t.elapsed() < PATIENCE, "the leaf never joined: {st:#}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let stop = s.ok(&["stop"]);
    assert!(
        stop.contains("1 worker stopped (early/early-w0 pid ")
            && stop.contains("1 leaf agent stopped (early pid "),
        "{stop}"
    );
    let (status, err) = leaf_exit(&mut leaf, "the leaf did not stop");
    assert!(status.success(), "{status:?}: {err}");
    assert!(
        err.contains("gspc-leaf: waiting for the root agent (no runtime in ")
            && err.contains("giving up in 60 s")
            && err.contains("gspc-leaf: the root agent is there after "),
        "{err}"
    );
}

#[test]
fn a_worker_killed_under_a_leaf_is_replaced_by_the_leaf_unseen_by_the_root() {
    let mut tree = Tree::new("worker");
    let job = tree.submit();
    // The worker of leaf A that ran the first of its tasks.
    let started = tree.wait_started(10);
    let (name, pid) = started
        .iter()
        .find(|(n, _)| n.starts_with("leafA-w"))
        .cloned()
        .unwrap_or_else(|| {
            let t = Instant::now();
            loop {
                if let Some(v) = tree
                    .started()
                    .into_iter()
                    .find(|(n, _)| n.starts_with("leafA-w"))
                {
                    break v;
                }
                assert!(t.elapsed() < PATIENCE, "leaf A ran nothing");
                std::thread::sleep(Duration::from_millis(10));
            }
        });
    // SAFETY: kill on a pid this test saw running a task.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0, "kill {name}");
    let (ys, _) = tree.wait(&job);
    assert_eq!(ys, expected(), "exact after `{name}` was killed");
    let log = tree.log();
    assert!(!log.contains("` lost: "), "the root lost nothing:\n{log}");
    assert!(
        log.contains("was running on a lost worker of leaf `leafA`"),
        "the retry is counted at the root:\n{log}"
    );
    let st = tree.status();
    assert_eq!(st["workers"].as_array().map(Vec::len), Some(2), "{st:#}");
    assert!(!alive(pid as u32) || wait_gone(pid as u32, Duration::from_secs(5)));
    // The leaf, still running, reaped it: no zombie left until the leaf ends.
    reaped(pid as u64, &name);
    // Its tasks ran again exactly once: each task started, none more than twice, and only
    // one the killed worker had started (the one it was running) twice.
    let starts = tree.starts();
    assert_eq!(starts.len(), TASKS, "{starts:?}");
    let again: Vec<&Vec<(String, i32)>> = starts.iter().filter(|s| s.len() > 1).collect();
    assert!(
        again.len() <= 1
            && again
                .iter()
                .all(|s| s.len() == 2 && s[0] == (name.clone(), pid)),
        "{again:?}"
    );
    // The leaf started it again under its name, as the root does its own lost workers: at
    // most 3 times, after 200 ms doubled each time.
    let pid = tree.spend_restarts("leafA", &name, pid as u64);
    // Its other worker too, the last one killed with tasks of a job: leaf A, left without
    // workers, gives the tasks it holds back to the root, which runs them on leaf B.
    let (other, pid0) = leaf_workers(&tree.status(), "leafA").remove(0);
    // SAFETY: kill on the pid of a worker this test saw under the leaf.
    assert_eq!(unsafe { libc::kill(pid0 as i32, libc::SIGKILL) }, 0);
    tree.spend_restarts_with("leafA", &other, pid0, |last| {
        let job = tree.submit();
        let t = Instant::now();
        while !tree.started().iter().any(|(_, p)| *p as u64 == last) {
            assert!(t.elapsed() < PATIENCE, "`{other}` ran nothing");
            std::thread::sleep(Duration::from_millis(5));
        }
        job
    });
    // Leaf A, without workers for good, left the root and exits 1 saying why; leaf B stays.
    let st = tree.until("leaf A gone from the root", |st| {
        st["workers"].as_array().is_some_and(|w| w.len() == 1)
    });
    assert_eq!(st["workers"][0]["name"], "leafB", "{st:#}");
    let (status, err_a) = leaf_exit(&mut tree.leaves[0], "leaf A, without workers, did not exit");
    assert_eq!(status.code(), Some(1), "{err_a}");
    let a = tree.leaves[0].id();
    let errs = tree.stop_and_check_nothing_left(&[a]);
    assert!(errs[0].contains(" answers, 0 workers lost)"), "{}", errs[0]);
    assert!(
        err_a.contains(
            "gspc-leaf: no workers left: the 2 workers it started ended and were not restarted \
             (at most 3 times each); left the root ("
        ) && err_a.contains(" answers, 8 workers lost)"),
        "{err_a}"
    );
    for (restart, delay) in [(1, 200), (2, 400), (3, 800)] {
        assert!(
            err_a.contains(&format!(
                "ended by signal 9 (SIGKILL); restarting it in {delay} ms (restart {restart} \
                 of 3)"
            )),
            "{err_a}"
        );
    }
    assert!(
        err_a.contains(&format!(
            "gspc-leaf: worker `{name}` (pid {pid}) ended by signal 9 (SIGKILL); not restarted: \
             it was restarted 3 times already"
        )),
        "{err_a}"
    );
    assert!(
        err_a.contains("gspc-leaf: no workers left: ") && err_a.contains(" given back to the root"),
        "{err_a}"
    );
}

/// A leaf whose workers all ended for good (their restarts spent: here a worker program
/// that cannot start) leaves its root and exits 1 saying why, rather than stay in the root's
/// status without workers (`0 of 0`) for placement and jobs' waiting reasons to count; a
/// job then says that no worker is connected.
#[test]
fn a_leaf_whose_workers_ended_for_good_leaves_its_root_and_exits_1() {
    let s = pnet_tests::GspcScratch::new("leaves", "allgone", bin_dir().join("gspc"));
    boot_root(&s, None, &[]);
    let bad = s.dir.join("bad-worker");
    std::fs::write(
        &bad,
        "#!/bin/sh\nsleep 1\necho 'cannot start' >&2\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o755)).unwrap();
    let net = s.dir.join("fan.xpnet");
    std::fs::write(&net, pnet_tests::fan_net("fan", "slow", "f", &[], 3)).unwrap();
    let bad = bad.display().to_string();
    let mut tree = Tree::grow(
        s,
        net.display().to_string(),
        ["leafA", "leafB"],
        &["--workers", "1", "--worker-program", &bad],
        &Join::StateDir,
    );
    tree.until("both leaves gone from the root", |st| {
        st["workers"].as_array().is_some_and(Vec::is_empty)
    });
    for (l, name) in tree.leaves.iter_mut().zip(["leafA", "leafB"]) {
        let (status, err) = leaf_exit(l, "a leaf without workers did not exit");
        assert_eq!(status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!(
                "gspc-leaf: worker `{name}-w0` (pid "
            )) && err.contains(
                "exited with status 3; not restarted: it was restarted 3 times already"
            ) && err.contains(
                "gspc-leaf: no workers left: the 1 worker it started ended and was not restarted \
                 (at most 3 times each); left the root (0 answers, 0 workers lost)"
            ),
            "{err}"
        );
    }
    let job = tree.submit();
    let waiting = tree.waiting(&job);
    assert!(
        waiting.contains("no worker is connected: start leaf agents (`gspc-leaf`)"),
        "{waiting}"
    );
    tree.s.ok(&["cancel", &job]);
    tree.s.ok(&["stop"]);
}

impl Tree {
    /// The worker `name` under `leaf` (pid `pid`) was just killed: waits for its leaf to
    /// start it again (a new pid, under the same name) and kills it, until its 3 restarts
    /// are spent; returns the pid of its last process (killed, gone, reaped).
    fn spend_restarts(&self, leaf: &str, name: &str, pid: u64) -> u64 {
        self.spend_restarts_with(leaf, name, pid, |_| String::new())
    }

    /// [`Tree::spend_restarts`], calling `before_last` with the last pid before it is
    /// killed; a job it returns (not empty) must then finish exactly.
    fn spend_restarts_with(
        &self,
        leaf: &str,
        name: &str,
        mut pid: u64,
        before_last: impl FnOnce(u64) -> String,
    ) -> u64 {
        let mut pids = vec![pid];
        for _ in 0..3 {
            let st = self.until(&format!("`{name}` started again under {leaf}"), |st| {
                leaf_workers(st, leaf)
                    .iter()
                    .any(|(n, p)| n == name && !pids.contains(p))
            });
            pid = (leaf_workers(&st, leaf).into_iter())
                .find(|(n, _)| n == name)
                .map(|(_, p)| p)
                .unwrap();
            pids.push(pid);
            if pids.len() < 4 {
                // SAFETY: kill on the pid of a worker this test saw under the leaf.
                assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
            }
        }
        let job = before_last(pid);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
        self.until(&format!("`{name}` gone from {leaf} for good"), |st| {
            !leaf_workers(st, leaf).iter().any(|(n, _)| n == name)
        });
        reaped(pid, name);
        if !job.is_empty() {
            let (ys, _) = self.wait(&job);
            assert_eq!(ys, expected(), "exact after `{name}` was killed 4 times");
        }
        for p in pids {
            assert!(wait_gone(p as u32, Duration::from_secs(10)), "pid {p} left");
        }
        pid
    }
}

/// Waits up to [`PATIENCE`] for the killed worker `name` (pid `pid`) to be reaped by its leaf (no
/// zombie of it stays while the leaf runs).
fn reaped(pid: u64, name: &str) {
    let t = Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            t.elapsed() < PATIENCE,
            "the killed worker `{name}` (pid {pid}) stays a zombie of its leaf"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// (name, pid) of the workers under the leaf `leaf` in a runtime status.
fn leaf_workers(st: &serde_json::Value, leaf: &str) -> Vec<(String, u64)> {
    (st["workers"].as_array().into_iter().flatten())
        .filter(|l| l["name"] == leaf)
        .flat_map(|l| l["workers"].as_array().cloned().unwrap_or_default())
        .map(|w| {
            let name = w["name"].as_str().unwrap_or_default().to_string();
            (name, w["pid"].as_u64().unwrap_or(0))
        })
        .collect()
}

#[test]
fn a_leaf_killed_mid_run_has_its_tasks_run_again_by_the_root() {
    let tree = Tree::new("leaf");
    let job = tree.submit();
    let t = Instant::now();
    while !tree.started().iter().any(|(n, _)| n.starts_with("leafB-w")) {
        assert!(t.elapsed() < PATIENCE, "leaf B ran nothing");
        std::thread::sleep(Duration::from_millis(10));
    }
    tree.wait_started(20);
    let victim = tree.leaves[1].id();
    // SAFETY: kill on our own child's pid.
    assert_eq!(unsafe { libc::kill(victim as i32, libc::SIGKILL) }, 0);
    let (ys, _) = tree.wait(&job);
    assert_eq!(ys, expected(), "exact after leaf B was killed");
    let log = tree.log();
    assert!(log.contains("`leafB` lost: "), "{log}");
    // Its tasks' records blame the leaf, not the oldest of the tasks it ran.
    let tasks = tree.s.ok(&["tasks", &job]);
    assert!(
        tasks.contains("leaf agent `leafB` was lost with "),
        "{tasks}"
    );
    // Its workers went away with it (their standard input closed, their agent is gone).
    for (name, pid) in tree.started() {
        if name.starts_with("leafB-w") {
            assert!(
                wait_gone(pid as u32, Duration::from_secs(10)),
                "worker `{name}` of the killed leaf is still running"
            );
        }
    }
    tree.stop_and_check_nothing_left(&[victim]);
}

/// The root daemon's pid and the pids of the workers under each leaf, by leaf name.
fn root_and_leaf_workers(st: &serde_json::Value) -> (u32, Vec<(String, Vec<u64>)>) {
    let mut leaves: Vec<(String, Vec<u64>)> = st["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let mut pids: Vec<u64> = l["workers"]
                .as_array()
                .map(|u| u.iter().filter_map(|w| w["pid"].as_u64()).collect())
                .unwrap_or_default();
            pids.sort_unstable();
            (l["name"].as_str().unwrap_or_default().to_string(), pids)
        })
        .collect();
    leaves.sort();
    (st["pid"].as_u64().unwrap() as u32, leaves)
}

/// SIGKILLs the root daemon and waits until it is gone.
fn kill_root(daemon: u32) {
    // SAFETY: kill(2) of the runtime this test booted.
    assert_eq!(unsafe { libc::kill(daemon as i32, libc::SIGKILL) }, 0);
    assert!(wait_gone(daemon, Duration::from_secs(10)));
}

#[test]
fn leaves_rejoin_a_resumed_root_with_their_workers_and_the_job_finishes_exactly() {
    let tree = Tree::with("rejoin", &["--wait-for-root", "60"]);
    rejoin_after_the_root_s_crash(tree, |_| {});
}

#[test]
fn leaves_given_the_root_s_address_rejoin_it_resumed_with_its_secret() {
    let tree = Tree::by_address("rejoin-address", &["--wait-for-root", "60"]);
    let secret = std::fs::read_to_string(tree.s.state().join("secret")).unwrap();
    rejoin_after_the_root_s_crash(tree, |tree| {
        // The resumed root kept the secret of the crashed one (its state directory's).
        let now = std::fs::read_to_string(tree.s.state().join("secret")).unwrap();
        assert_eq!(now, secret, "the resumed root has a new secret");
    });
}

/// Submits the tree's job, SIGKILLs the root in its middle and resumes it (`gspc boot
/// --resume`): the leaves (given `--wait-for-root 60`) stay with their workers, join the
/// resumed root with them, the job's results are exact, and nothing is left after `gspc
/// stop`; `check` looks at the resumed tree before that.
fn rejoin_after_the_root_s_crash(mut tree: Tree, check: impl FnOnce(&Tree)) {
    let st = tree.until("four workers under the leaves", |st| {
        root_and_leaf_workers(st)
            .1
            .iter()
            .all(|(_, w)| w.len() == 2)
    });
    let (daemon, before) = root_and_leaf_workers(&st);
    let job = tree.submit();
    tree.wait_started(40);
    kill_root(daemon);
    // The leaves stay, and so do their workers.
    std::thread::sleep(Duration::from_millis(500));
    for l in tree.leaves.iter_mut() {
        assert!(
            l.try_wait().unwrap().is_none(),
            "a leaf exited with its root"
        );
    }
    for (name, pids) in &before {
        for &p in pids {
            assert!(
                alive(p as u32),
                "worker pid {p} of `{name}` went with the root"
            );
        }
    }
    let resumed = tree.s.ok(&["boot", "--resume", "--timeout", "30"]);
    assert!(resumed.contains("gspc: runtime booted (pid "), "{resumed}");
    let st = tree.until("the leaves back with their workers", |st| {
        let (_, l) = root_and_leaf_workers(st);
        l.len() == 2 && l.iter().all(|(_, w)| w.len() == 2)
    });
    let (daemon2, after) = root_and_leaf_workers(&st);
    assert_ne!(daemon2, daemon);
    assert_eq!(after, before, "the same workers under the same leaves");
    let (ys, _) = tree.wait(&job);
    assert_eq!(ys, expected(), "exact after the root's crash and resume");
    check(&tree);
    let errs = tree.stop_and_check_nothing_left(&[]);
    for e in &errs {
        assert!(
            e.contains("gspc-leaf: lost the root agent (")
                && e.contains("keeping its 2 workers (")
                && e.contains("trying to join it again for up to 60 s (--wait-for-root)")
                && e.contains("gspc-leaf: joined the root agent ")
                && e.contains("), with its 2 workers"),
            "{e}"
        );
    }
}

#[test]
fn a_leaf_whose_root_does_not_come_back_exits_1_within_its_wait() {
    let mut tree = Tree::with("gone", &["--wait-for-root", "2"]);
    let st = tree.until("four workers under the leaves", |st| {
        root_and_leaf_workers(st)
            .1
            .iter()
            .all(|(_, w)| w.len() == 2)
    });
    let (daemon, leaves) = root_and_leaf_workers(&st);
    kill_root(daemon);
    let t = Instant::now();
    for l in &mut tree.leaves {
        let (status, err) = leaf_exit(l, "a leaf outlived its wait for the root");
        assert_eq!(status.code(), Some(1), "{err}");
        assert!(
            err.contains("gspc-leaf: lost the root agent (")
                && err.contains("(waited 2 s for the root agent to come back: --wait-for-root)"),
            "{err}"
        );
    }
    assert!(
        t.elapsed() >= Duration::from_millis(1500),
        "it did not wait"
    );
    for (name, pids) in &leaves {
        for &p in pids {
            assert!(
                wait_gone(p as u32, Duration::from_secs(10)),
                "worker pid {p} of `{name}` outlived its leaf"
            );
        }
    }
}

#[test]
fn a_second_leaf_of_a_joined_leaf_s_name_is_refused() {
    let mut tree = Tree::new("dupname");
    let leaf_a = |workers: &str| {
        let mut c = Command::new(bin_dir().join("gspc-leaf"));
        c.arg("--state-dir")
            .arg(tree.s.state())
            .args(["--name", "leafA", "--workers", workers]);
        c
    };
    let mut dup = spawn_leaf(leaf_a("1"));
    let (status, err) = leaf_exit(&mut dup, "the second leafA was not refused");
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "the root agent refused this leaf: a leaf agent named `leafA` has joined already \
             (pid "
        ) && err.contains("give this one another --name"),
        "{err}"
    );
    let names = |st: &serde_json::Value| -> Vec<String> {
        let mut n: Vec<String> = (st["workers"].as_array().unwrap().iter())
            .filter_map(|w| w["name"].as_str().map(str::to_string))
            .collect();
        n.sort();
        n
    };
    assert_eq!(names(&tree.status()), ["leafA", "leafB"]);
    // Once the first leafA is gone, its name is free: a new leafA joins and works.
    tree.until("leafA reports its two workers", |st| {
        leaf_workers(st, "leafA").len() == 2
    });
    let removed = tree.s.ok(&["remove-workers", "leafA"]);
    assert!(
        removed.starts_with("gspc: removed 1 worker: leafA (pid ")
            && removed.contains("; the leaf agent stops its 2 workers: leafA/leafA-w0 (pid ")
            && removed.contains(", leafA/leafA-w1 (pid "),
        "{removed}"
    );
    let again = spawn_leaf(leaf_a("2"));
    tree.leaves.push(again);
    tree.until("a new leafA", |st| {
        names(st) == ["leafA", "leafB"]
            && (st["workers"].as_array().unwrap().iter())
                .all(|w| w["capacity"].as_u64().is_some_and(|c| c > 0))
    });
    let (ys, ws) = tree.wait(&tree.submit());
    assert_eq!(ys, expected());
    assert!(ws.iter().any(|w| w.starts_with("leafA")), "{ws:?}");
    tree.stop_and_check_nothing_left(&[]);
}

#[test]
fn a_leaf_of_another_leaf_protocol_is_refused_by_name() {
    use pnet_protocol::{AgentMsg, Hello, LeafHello, PROTOCOL_VERSION, WorkerMsg};
    let s = pnet_tests::GspcScratch::new("leaves", "version", bin_dir().join("gspc"));
    boot_root(&s, None, &[]);
    let info = std::fs::read_to_string(s.state().join("runtime.json")).unwrap();
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    let secret = std::fs::read_to_string(s.state().join("secret")).unwrap();
    let mut conn = std::net::TcpStream::connect(info["address"].as_str().unwrap()).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let hello = WorkerMsg::LeafHello(LeafHello {
        hello: Hello {
            protocol: PROTOCOL_VERSION,
            secret: pnet_protocol::Secret::from_hex(secret.trim()).unwrap(),
            name: "future-leaf".into(),
            host: "h".into(),
            pid: 1,
            capabilities: vec![],
            socket: None,
        },
        leaf_protocol: 99,
        capacity: 4,
    });
    pnet_protocol::write_msg(&mut conn, &hello).unwrap();
    match pnet_protocol::read_msg::<_, AgentMsg>(&mut conn).unwrap() {
        AgentMsg::Refused { reason } => assert!(
            reason.contains("leaf protocol version 99 is not supported")
                && reason.contains("gspc-leaf of the same release"),
            "{reason}"
        ),
        m => panic!("not refused: {m:?}"),
    }
    s.ok(&["stop"]);
}

#[test]
fn a_leaf_says_what_is_wrong_with_its_workers() {
    use std::io::BufRead;
    let s = pnet_tests::GspcScratch::new("leaves", "noworkers", bin_dir().join("gspc"));
    boot_root(&s, None, &[]);
    let leaf = || {
        let mut c = Command::new(bin_dir().join("gspc-leaf"));
        c.arg("--state-dir").arg(s.state());
        c
    };
    // A worker program that is not there: named, with the ways to give another.
    let o = leaf()
        .args([
            "--workers",
            "1",
            "--worker-program",
            "/nonexistent/gspc-worker",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot start the worker program /nonexistent/gspc-worker")
            && err.contains("--worker-program"),
        "{err}"
    );
    // No workers of its own (the default): it says that the root waits for workers to join.
    let mut l = leaf()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(l.stderr.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(
        first.contains("workers connect to 127.0.0.1:") && first.contains("--workers 0"),
        "{first}"
    );
    s.ok(&["stop"]);
    let (status, _) = leaf_exit(&mut l, "the leaf did not stop with its root");
    assert!(status.success(), "{status:?}");
}
