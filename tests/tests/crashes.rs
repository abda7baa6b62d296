//! Crashing modules with the real binaries: native modules that die of SIGSEGV, SIGABRT and
//! SIGKILL, and a command module that kills its worker, under `gspc-run` and a `gspc`
//! runtime. What must hold: every result arrives exactly once (`count = n`, `sum =
//! n(n-1)/2`), a task that keeps crashing fails the job with the crash named, lost workers
//! are restarted, no process and no shared-memory file is left behind, and nothing hangs
//! (every run has a deadline). The modules are examples/modules/crash (`libcrash.so`) and
//! examples/modules/bin/crashcmd; the net is examples/modules/crash.xpnet.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pnet_launch::testing::wait_gone;

fn bin_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = pnet_tests::build_packages(&[
            "gspc-run",
            "pnet-gspc",
            "pnet-worker",
            "pnet-example-crash",
        ]);
        for f in ["gspc-run", "gspc", "gspc-worker", "libcrash.so"] {
            assert!(
                dir.join(f).is_file(),
                "{} is missing",
                dir.join(f).display()
            );
        }
        dir
    })
}

fn net() -> String {
    pnet_tests::workspace_root()
        .join("examples/modules/crash.xpnet")
        .display()
        .to_string()
}

fn module_path() -> Vec<String> {
    vec![
        "--module-path".into(),
        pnet_tests::workspace_root()
            .join("examples/modules/bin")
            .display()
            .to_string(),
        "--module-path".into(),
        bin_dir().display().to_string(),
    ]
}

/// A scratch folder with a gspc state directory (see [`pnet_tests::GspcScratch`]); the
/// modules' marker files go to `markers` in it.
struct Scratch(pnet_tests::GspcScratch);

impl std::ops::Deref for Scratch {
    type Target = pnet_tests::GspcScratch;

    fn deref(&self) -> &pnet_tests::GspcScratch {
        &self.0
    }
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let s = pnet_tests::GspcScratch::new("crash", name, bin_dir().join("gspc"));
        std::fs::create_dir_all(s.dir.join("markers")).unwrap();
        Scratch(s)
    }

    fn markers(&self) -> String {
        self.dir.join("markers").display().to_string()
    }

    fn inputs(&self, what: &str, n: u32, ms: u32) -> Vec<String> {
        vec![
            "-p".into(),
            format!("what=\"{what}\""),
            "-p".into(),
            format!("n={n}L"),
            "-p".into(),
            format!("ms={ms}L"),
            "-p".into(),
            format!("dir=\"{}\"", self.markers()),
        ]
    }

    fn boot(&self, topology: &str) {
        self.boot_with(topology, &[]);
    }

    fn boot_with(&self, topology: &str, extra: &[&str]) {
        let mut args = vec!["boot", "--topology", topology, "--timeout", "30"];
        args.extend(extra);
        let mp = module_path();
        args.extend(mp.iter().map(String::as_str));
        self.ok(&args);
    }

    /// Submits crash.xpnet; returns the job id.
    fn submit(&self, what: &str, n: u32, ms: u32) -> String {
        let mut args = vec!["submit".to_string(), net()];
        args.extend(self.inputs(what, n, ms));
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.ok(&a);
        out.split_whitespace()
            .find(|w| w.chars().all(|c| c.is_ascii_digit()))
            .unwrap_or_else(|| panic!("no job id in {out}"))
            .to_string()
    }

    /// `gspc wait JOB` with a deadline.
    fn wait(&self, job: &str) -> Output {
        run_bounded(
            Command::new(bin_dir().join("gspc"))
                .args(["wait", job, "--state-dir"])
                .arg(self.state()),
            Duration::from_secs(60),
        )
    }
}

/// Runs a command with a deadline: a hang is a failure, and the process is killed.
fn run_bounded(cmd: &mut Command, within: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let t = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if t.elapsed() > within {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!(
                "{cmd:?} did not end within {within:?}; stderr:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn gspc_run(s: &Scratch, extra: &[&str], what: &str, n: u32, ms: u32) -> Output {
    let mut cmd = Command::new(bin_dir().join("gspc-run"));
    cmd.arg(net())
        .args(module_path())
        .args(extra)
        .args(s.inputs(what, n, ms));
    run_bounded(&mut cmd, Duration::from_secs(60))
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The segment files of dead processes in /dev/shm (`pnet-<pid>-...`).
fn dead_segments() -> Vec<String> {
    let Ok(rd) = std::fs::read_dir("/dev/shm") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| {
            n.strip_prefix("pnet-")
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
        })
        .collect()
}

/// Every process whose command line mentions `needle` (our scratch folder, say).
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(c) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&c).contains(needle)
            && pid != std::process::id()
        {
            v.push(pid);
        }
    }
    v
}

fn assert_complete(out: &str, n: u32) {
    let sum = u64::from(n) * u64::from(n.saturating_sub(1)) / 2;
    assert!(out.contains(&format!("count = {n}L")), "{out}");
    assert!(out.contains(&format!("sum = {sum}L")), "{out}");
}

#[test]
fn a_module_that_crashes_once_is_retried_and_every_result_counts_once() {
    let s = Scratch::new("once");
    // With working memory, so that the crashed workers' segments must be cleaned up.
    let o = gspc_run(&s, &["--topology", "worker:2,4194304"], "crash_once", 4, 50);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_complete(&out, 4);
    // Each crash was seen as one: its marker exists, the task ran again elsewhere.
    for x in 0..4 {
        assert!(
            Path::new(&s.markers())
                .join(format!("crash-once-{x}"))
                .exists(),
            "task {x} never crashed"
        );
    }
    assert!(dead_segments().is_empty(), "{:?}", dead_segments());
}

#[test]
fn a_module_that_always_crashes_fails_the_job_naming_the_signal() {
    for (what, signal) in [
        ("segv", "SIGSEGV"),
        ("abort", "SIGABRT"),
        ("kill", "SIGKILL"),
    ] {
        let s = Scratch::new(what);
        let o = gspc_run(
            &s,
            &["--topology", "worker:2", "--max-retries", "2"],
            what,
            1,
            0,
        );
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{what}: {out}\n{err}");
        assert!(
            err.contains(&format!(
                "module `crash.{what}` crashed with {signal} on worker `"
            )),
            "{what}: {err}"
        );
        assert!(err.contains("transition `"), "{what}: {err}");
        assert!(
            err.contains(
                "it ran 3 times, more than fhg.drts.schedule.maximum_number_of_retries = 2"
            ),
            "{what}: {err}"
        );
        assert!(
            processes_mentioning(&s.dir.display().to_string()).is_empty(),
            "{what}: processes left"
        );
    }
}

#[test]
fn without_a_retry_limit_the_job_ends_when_restarts_run_out_and_says_why() {
    let s = Scratch::new("norestart");
    let o = gspc_run(&s, &["--topology", "worker:1"], "segv", 1, 0);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}\n{err}");
    assert!(
        err.contains("every worker that joined was lost: module `crash.segv` crashed with SIGSEGV"),
        "{err}"
    );
    assert!(!err.contains("no worker has joined"), "{err}");
}

#[test]
fn a_worker_killed_under_a_command_module_takes_it_along_and_the_task_runs_once_more() {
    let s = Scratch::new("cmdkill");
    let o = gspc_run(&s, &["--topology", "worker:2"], "kill_worker_once", 4, 300);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_complete(&out, 4);
    assert!(
        processes_mentioning(&s.markers()).is_empty(),
        "command modules outlived their workers"
    );
}

/// The worker whose descendant `pid` is (walking up the parents).
fn worker_above(pid: u32) -> Option<u32> {
    let mut p = pid;
    for _ in 0..8 {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        let after = stat.rsplit_once(')')?.1;
        let ppid: u32 = after.split_whitespace().nth(1)?.parse().ok()?;
        let comm = std::fs::read_to_string(format!("/proc/{ppid}/comm")).ok()?;
        if comm.trim() == "gspc-worker" {
            // The first gspc-worker above may be the command's supervisor (a re-executed
            // gspc-worker); the worker is the topmost one.
            if let Some(up) = worker_above(ppid) {
                return Some(up);
            }
            return Some(ppid);
        }
        p = ppid;
    }
    None
}

#[test]
fn sigkill_of_a_worker_kills_its_command_module_and_its_children() {
    let s = Scratch::new("orphan");
    let mut cmd = Command::new(bin_dir().join("gspc-run"));
    cmd.arg(net())
        .args(module_path())
        .args(["--topology", "worker:2"])
        .args(s.inputs("orphan", 2, 4000));
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for a task's background child, then kill its worker.
    let pidfile = Path::new(&s.markers()).join("orphan-0.pid");
    let sleeper = pid_when_written(&pidfile);
    let worker = worker_above(sleeper).expect("a gspc-worker above the module");
    // SAFETY: plain system call.
    unsafe { libc::kill(worker as i32, libc::SIGKILL) };
    assert!(
        wait_gone(sleeper, Duration::from_secs(5)),
        "the module's child outlived its killed worker"
    );
    // The task runs again (on the other worker or the restarted one): all results, once.
    let t = Instant::now();
    let mut child = child;
    while child.try_wait().unwrap().is_none() {
        assert!(t.elapsed() < Duration::from_secs(60), "the job hangs");
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_complete(&out, 2);
    assert!(
        processes_mentioning(&s.markers()).is_empty(),
        "processes left"
    );
}

/// A child killed when dropped (a failed assertion leaves no job running).
struct KilledOnDrop(Option<std::process::Child>);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts a job whose one task (`crashcmd.orphan`) does not end, with a control socket;
/// returns it and the pid of the module's child once the module runs.
fn start_hanging_job(s: &Scratch, sock: &Path) -> (KilledOnDrop, u32) {
    let mut cmd = Command::new(bin_dir().join("gspc-run"));
    cmd.arg(net())
        .args(module_path())
        .args(["--topology", "worker:1", "--no-progress", "--control"])
        .arg(sock)
        .args(s.inputs("orphan", 1, 600_000));
    let job = KilledOnDrop(Some(
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let pidfile = Path::new(&s.markers()).join("orphan-0.pid");
    let sleeper = pid_when_written(&pidfile);
    (job, sleeper)
}

/// Sends `signal` to a job and waits for its end.
fn signal_job(mut job: KilledOnDrop, signal: i32) -> Output {
    let child = job.0.as_mut().unwrap();
    // SAFETY: plain system call.
    unsafe { libc::kill(child.id() as i32, signal) };
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "gspc-run ignores signal {signal}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    job.0.take().unwrap().wait_with_output().unwrap()
}

#[test]
fn a_task_that_does_not_end_is_named_by_status_and_ctrl_c_leaves_nothing_behind() {
    let s = Scratch::new("hang");
    let sock = s.dir.join("job.sock");
    let (job, sleeper) = start_hanging_job(&s, &sock);
    let worker = worker_above(sleeper).expect("a gspc-worker above the module");
    // `status` names the task that runs, for how long, and its inputs.
    let o = run_bounded(
        Command::new(bin_dir().join("gspc-run"))
            .args(["status", "--control"])
            .arg(&sock),
        Duration::from_secs(20),
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("  task 0 `orphan` (crashcmd.orphan) "))
        .unwrap_or_else(|| panic!("{out}"));
    // The agent knows that the worker's only task runs, not since when.
    assert!(line.contains(" running (sent "), "{line}");
    assert!(line.contains(" on worker-vm-0: "), "{line}");
    assert!(line.contains("x = 0L"), "{line}");
    // Ctrl-C: exit 130, the worker and the module's children go, the socket too.
    let o = signal_job(job, libc::SIGINT);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(130), "{out}\n{err}");
    assert!(
        wait_gone(worker, Duration::from_secs(5)),
        "the worker outlived gspc-run"
    );
    assert!(
        wait_gone(sleeper, Duration::from_secs(5)),
        "the module's child outlived gspc-run"
    );
    assert!(!sock.exists(), "the control socket is left");
}

#[test]
fn sigterm_cancels_a_job_naming_the_signal_and_exits_with_143() {
    let s = Scratch::new("term");
    let sock = s.dir.join("job.sock");
    let (job, sleeper) = start_hanging_job(&s, &sock);
    let o = signal_job(job, libc::SIGTERM);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(143), "{out}\n{err}");
    assert!(err.contains("the job was cancelled by SIGTERM"), "{err}");
    assert!(
        wait_gone(sleeper, Duration::from_secs(5)),
        "the module's child outlived gspc-run"
    );
}

#[test]
fn gspc_runtime_survives_crashing_modules_and_keeps_its_workers() {
    let s = Scratch::new("gspc");
    s.boot("worker:2,4194304");
    // Crashing once: every result once, the workers restarted.
    let o = s.wait(&s.submit("crash_once", 4, 50));
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_complete(&out, 4);
    // The runtime keeps its capacity: two workers again.
    let t = Instant::now();
    loop {
        let st: serde_json::Value = serde_json::from_str(&s.ok(&["status", "--json"])).unwrap();
        let live = st["workers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["state"] == "up")
            .count();
        if live == 2 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "workers not restarted: {st:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A command module whose worker is killed: results once.
    let o = s.wait(&s.submit("kill_worker_once", 3, 200));
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_complete(&out, 3);
    let stop = s.ok(&["stop"]);
    assert!(!stop.is_empty());
    assert!(
        processes_mentioning(&s.markers()).is_empty(),
        "processes left"
    );
    assert!(dead_segments().is_empty(), "{:?}", dead_segments());
}

#[test]
fn gspc_job_whose_tasks_no_worker_can_run_says_what_it_waits_for() {
    let s = Scratch::new("gspcwait");
    s.boot("worker:1");
    s.submit("segv", 1, 0);
    // The worker crashes, is restarted 3 times, crashes again: the job then waits and says
    // why, it does not hang silently.
    let t = Instant::now();
    loop {
        let jobs = s.ok(&["jobs", "--json"]);
        if jobs.contains("crashed with SIGSEGV") && jobs.contains("lost") {
            assert!(jobs.contains("waits for a worker"), "{jobs}");
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(40),
            "never said why: {jobs}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let stop = run_bounded(
        Command::new(bin_dir().join("gspc"))
            .args(["stop", "--state-dir"])
            .arg(s.state()),
        Duration::from_secs(30),
    );
    assert!(stop.status.success());
}

#[test]
fn gspc_job_fails_naming_the_crash_when_retries_run_out_and_the_runtime_goes_on() {
    let s = Scratch::new("gspcabort");
    s.boot_with("worker:2", &["--max-retries", "1"]);
    let o = s.wait(&s.submit("abort", 1, 0));
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}\n{err}");
    assert!(
        err.contains("module `crash.abort` crashed with SIGABRT on worker `"),
        "{err}"
    );
    assert!(
        err.contains("it ran 2 times, more than fhg.drts.schedule.maximum_number_of_retries = 1"),
        "{err}"
    );
    // The runtime still runs jobs on its restarted workers.
    let o = s.wait(&s.submit("sleep", 2, 0));
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_complete(&out, 2);
    s.ok(&["stop"]);
    assert!(
        processes_mentioning(&s.markers()).is_empty(),
        "processes left"
    );
}

/// The pid a module's background child wrote to `pidfile`, once it is there (the module has
/// started); fails after 20 s.
fn pid_when_written(pidfile: &Path) -> u32 {
    let t = Instant::now();
    loop {
        if let Ok(p) = std::fs::read_to_string(pidfile)
            && let Ok(p) = p.trim().parse()
        {
            return p;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the module never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
