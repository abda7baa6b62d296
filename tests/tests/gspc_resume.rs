//! A `gspc` runtime that survives its own crash: the daemon is SIGKILLed while three jobs
//! run (one fed through put_token), its workers go with it, and `gspc boot --resume` brings
//! the jobs back from the journal to their exact results, re-running only the tasks whose
//! results were not journaled. Also: `--resume` without a journal, `gspc logs` for a task a
//! job never had.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pnet_launch::testing::wait_gone;

fn bin_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| pnet_tests::build_packages(&["pnet-gspc", "pnet-worker"]))
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A command module `work.run`: 300 ms of work, then it appends its input to `calls` and
/// answers three times it.
fn work_module(calls: &std::path::Path) -> String {
    format!(
        "#!/bin/sh\ninput=$(cat)\nn=$(printf '%s' \"$input\" | tr -dc '0-9-')\nsleep 0.3\n\
         echo \"$n\" >> {}\necho \"{{\\\"r\\\": $((n * 3))}}\"\n",
        calls.display()
    )
}

/// Tokens put into `xs` while it runs -> `work` -> out port `ys`.
const FEED: &str = r#"<defun name="feed">
  <out name="ys" type="long" place="ys"/>
  <net>
    <place name="xs" type="long" put_token="true"/>
    <place name="ys" type="long"/>
    <transition name="work">
      <defun><in name="n" type="long"/><out name="r" type="long"/>
        <module name="work" function="r run (n)"/></defun>
      <connect-in port="n" place="xs"/><connect-out port="r" place="ys"/>
    </transition>
  </net>
</defun>
"#;

/// The processes whose command line mentions `needle` (this test's folder).
fn processes_with(needle: &str) -> Vec<(u32, String)> {
    let mut v = Vec::new();
    let me = std::process::id();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let zombie = std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        });
        if cmd.contains(needle) && !zombie {
            v.push((pid, cmd));
        }
    }
    v
}

/// The `ys = NL` lines of a `gspc wait`, sorted.
fn sorted_lines(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text.lines().map(str::to_string).collect();
    v.sort();
    v
}

fn expected(inputs: impl IntoIterator<Item = i64>) -> Vec<String> {
    let mut v: Vec<String> = inputs
        .into_iter()
        .map(|n| format!("ys = {}L", 3 * n))
        .collect();
    v.sort();
    v
}

/// Writes the `work.run` command module (it appends each call to the file it returns) and
/// boots the scratch's runtime with it on `topology`.
fn boot_with_work_module(s: &pnet_tests::GspcScratch, topology: &str) -> std::path::PathBuf {
    let calls = s.dir.join("calls");
    let mods = s.dir.join("mods");
    std::fs::create_dir_all(&mods).unwrap();
    let module = mods.join("work.run");
    std::fs::write(&module, work_module(&calls)).unwrap();
    std::fs::set_permissions(&module, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mods = mods.display().to_string();
    let booted = s.ok(&[
        "boot",
        "--topology",
        topology,
        "--module-path",
        &mods,
        "--timeout",
        "30",
    ]);
    assert!(booted.contains("gspc: runtime booted (pid "), "{booted}");
    calls
}

#[test]
fn a_sigkilled_runtime_resumes_its_three_jobs_to_their_exact_results() {
    let s = pnet_tests::GspcScratch::new("resume", "kill", bin_dir().join("gspc"));
    let calls = boot_with_work_module(&s, "worker:3");
    let net = s.dir.join("many.xpnet");
    std::fs::write(&net, pnet_tests::module_net("many", "work", "work", "run")).unwrap();
    let feed = s.dir.join("feed.xpnet");
    std::fs::write(&feed, FEED).unwrap();
    let net = net.display().to_string();
    let submit = |inputs: std::ops::RangeInclusive<i64>| {
        let mut args = vec!["submit".to_string(), net.clone()];
        args.extend(inputs.map(|n| format!("-pxs={n}L")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        s.ok(&args).trim().to_string()
    };
    let a = submit(1..=8);
    let b = submit(101..=108);
    let c = s
        .ok(&["submit", &feed.display().to_string()])
        .trim()
        .to_string();
    assert_eq!((a.as_str(), b.as_str(), c.as_str()), ("1", "2", "3"));
    s.ok(&["put-token", &c, "xs=201L", "xs=202L", "xs=203L", "xs=204L"]);

    // A client waiting for job 1 when the runtime dies.
    let waiting = std::process::Command::new(bin_dir().join("gspc"))
        .args(["wait", &a, "--state-dir"])
        .arg(s.state())
        .env_remove("GSPC_STATE_DIR")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();

    // Mid-run: some tasks are done, others are not.
    let t = Instant::now();
    let lines = |p: &PathBuf| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .count()
    };
    while lines(&calls) < 6 {
        assert!(t.elapsed() < Duration::from_secs(30), "no task ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    let st: serde_json::Value = serde_json::from_str(&s.ok(&["status", "--json"])).unwrap();
    let daemon = st["pid"].as_u64().unwrap() as u32;
    let workers: Vec<u32> = st["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["pid"].as_u64())
        .map(|p| p as u32)
        .collect();
    assert_eq!(workers.len(), 3, "{st:#}");
    // SAFETY: kill(2) of the runtime this test booted.
    assert_eq!(unsafe { libc::kill(daemon as i32, libc::SIGKILL) }, 0);
    assert!(wait_gone(daemon, Duration::from_secs(10)));
    // Its workers (and the commands they ran) go with it: nothing of this test is left.
    for &w in &workers {
        assert!(
            wait_gone(w, Duration::from_secs(10)),
            "worker {w} outlived its runtime"
        );
    }
    let needle = s.dir.display().to_string();
    let t = Instant::now();
    while !processes_with(&needle).is_empty() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = processes_with(&needle);
    for (pid, _) in &left {
        // SAFETY: kill(2) of a process this test started (its command line names our folder).
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "left behind: {left:?}");
    let ran_before = lines(&calls);
    // The waiting client is told what happened and what to do.
    let waited = waiting.wait_with_output().unwrap();
    assert_eq!(waited.status.code(), Some(1), "{}", err(&waited));
    assert!(
        err(&waited).contains(&format!(
            "the runtime closed the connection without answering (did it stop or crash? if it \
             crashed or was killed, `gspc boot --resume --state-dir {}` brings back its jobs \
             from its journal; then ask again)",
            s.state().display()
        )),
        "{}",
        err(&waited)
    );
    let jobs_before = s.gspc(&["jobs"]);
    assert_ne!(jobs_before.status.code(), Some(0), "the runtime is gone");
    // The client says how to bring the jobs back.
    assert!(
        err(&jobs_before).contains(&format!(
            "if it crashed or was killed, `gspc boot --resume --state-dir {}` brings back its \
             jobs from its journal",
            s.state().display()
        )),
        "{}",
        err(&jobs_before)
    );

    let resumed = s.ok(&["boot", "--resume", "--timeout", "30"]);
    assert!(resumed.contains("gspc: runtime booted (pid "), "{resumed}");
    assert!(resumed.contains("workers          3"), "{resumed}");
    assert!(
        resumed.contains("  journal: resumed 3 job(s) (1, 2, 3), 0 ended job(s) kept"),
        "{resumed}"
    );
    let log = std::fs::read_to_string(s.state().join("daemon.log")).unwrap();
    assert!(log.contains("journal: resumed 3 job(s) (1, 2, 3)"), "{log}");
    // The fed job takes more tokens, then it is closed.
    s.ok(&["put-token", &c, "xs=205L", "xs=206L", "--close"]);
    let wa = s.gspc(&["wait", &a]);
    assert_eq!(wa.status.code(), Some(0), "{}", err(&wa));
    assert_eq!(sorted_lines(&out(&wa)), expected(1..=8));
    let wb = s.gspc(&["wait", &b]);
    assert_eq!(wb.status.code(), Some(0), "{}", err(&wb));
    assert_eq!(sorted_lines(&out(&wb)), expected(101..=108));
    let wc = s.gspc(&["wait", &c]);
    assert_eq!(wc.status.code(), Some(0), "{}", err(&wc));
    assert_eq!(sorted_lines(&out(&wc)), expected(201..=206));

    // Every task ran; the ones that ran twice are at most those the 3 workers had started
    // when the runtime died (their results never reached the journal).
    let text = std::fs::read_to_string(&calls).unwrap();
    let mut runs: BTreeMap<i64, usize> = BTreeMap::new();
    for l in text.lines() {
        *runs.entry(l.trim().parse().unwrap()).or_default() += 1;
    }
    let all: Vec<i64> = (1..=8).chain(101..=108).chain(201..=206).collect();
    assert_eq!(runs.keys().copied().collect::<Vec<_>>(), all, "{text}");
    let again: usize = runs.values().map(|n| n - 1).sum();
    assert!(
        again <= 3,
        "{again} tasks ran again ({ran_before} had run before the crash): {runs:?}"
    );
    assert!(ran_before >= 6);
    eprintln!("{ran_before} tasks ran before the crash, {again} ran again after it");

    // The jobs table and job numbers go on.
    let d = submit(7..=7);
    assert_eq!(d, "4");
    assert_eq!(sorted_lines(&s.ok(&["wait", &d])), expected(7..=7));
    let jobs: serde_json::Value = serde_json::from_str(&s.ok(&["jobs", "--json"])).unwrap();
    let states: Vec<&str> = jobs
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["done"; 4], "{jobs:#}");

    // `gspc logs` for a task the job never had says so and fails.
    let none = s.gspc(&["logs", &a, "99"]);
    assert_eq!(none.status.code(), Some(1), "{}", err(&none));
    assert!(
        err(&none).contains("job 1 has no task 99 (its tasks are numbered 0 to 7)"),
        "{}",
        err(&none)
    );
    let quiet = s.gspc(&["logs", &d, "0"]);
    assert_eq!(quiet.status.code(), Some(0), "{}", err(&quiet));
    s.ok(&["stop"]);
}

#[test]
fn resume_without_a_journal_is_a_clear_error() {
    let s = pnet_tests::GspcScratch::new("resume", "none", bin_dir().join("gspc"));
    let o = s.gspc(&["boot", "--resume", "--timeout", "5"]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(
        err(&o).contains("error[gspc-no-journal]: --resume: there is no journal in"),
        "{}",
        err(&o)
    );
    // One line, no run of spaces left by a broken continuation in the source.
    assert!(
        err(&o).contains("or it was stopped and its jobs are over): boot without --resume"),
        "{}",
        err(&o)
    );
    assert!(!s.state().join("gspc.pid").exists());
    // A file that is no journal: the boot fails with why, showing only this runtime's log
    // (not the lines of runtimes before it in the same log).
    std::fs::create_dir_all(s.state()).unwrap();
    std::fs::set_permissions(s.state(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(s.state().join("journal"), "hello").unwrap();
    std::fs::write(
        s.state().join("daemon.log"),
        "a line of the runtime before\n",
    )
    .unwrap();
    let o = s.gspc(&[
        "boot",
        "--resume",
        "--topology",
        "worker:1",
        "--timeout",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(
        err(&o).contains("it is not a gspc journal (no GSPCJRNL header); boot without --resume"),
        "{}",
        err(&o)
    );
    assert!(!err(&o).contains("the runtime before"), "{}", err(&o));
    // --no-journal keeps nothing to resume from: the two do not go together.
    let both = s.gspc(&["boot", "--resume", "--no-journal"]);
    assert_eq!(both.status.code(), Some(2), "{}", err(&both));
    assert!(err(&both).contains("--no-journal"), "{}", err(&both));
}

#[test]
fn a_boot_without_resume_says_where_the_old_journal_and_its_unfinished_jobs_went() {
    let s = pnet_tests::GspcScratch::new("resume", "fresh", bin_dir().join("gspc"));
    boot_with_work_module(&s, "worker:1");
    let mods = s.dir.join("mods").display().to_string();
    let net = s.dir.join("many.xpnet");
    std::fs::write(&net, pnet_tests::module_net("many", "work", "work", "run")).unwrap();
    let job = s.ok(&["submit", &net.display().to_string(), "-pxs=1L", "-pxs=2L"]);
    assert_eq!(job.trim(), "1");
    let st: serde_json::Value = serde_json::from_str(&s.ok(&["status", "--json"])).unwrap();
    let daemon = st["pid"].as_u64().unwrap() as u32;
    // Let the writer thread put the submission in the journal (it writes every 5 ms).
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: kill(2) of the runtime this test booted.
    assert_eq!(unsafe { libc::kill(daemon as i32, libc::SIGKILL) }, 0);
    assert!(wait_gone(daemon, Duration::from_secs(10)));
    let fresh = s.gspc(&["boot", "--topology", "worker:1", "--module-path", &mods]);
    assert_eq!(fresh.status.code(), Some(0), "{}", err(&fresh));
    let old = s.state().join("journal.old");
    assert!(old.exists());
    assert!(
        err(&fresh).contains(&format!(
            "the journal of the runtime before is kept as {}",
            old.display()
        )) && err(&fresh).contains("its 1 unfinished job(s) (1) are not brought back"),
        "{}",
        err(&fresh)
    );
    s.ok(&["stop"]);
}

/// A net that holds a global memory allocation: its range goes to `measure` (its size out),
/// its numbers through the slow `work` module.
const HELD: &str = r#"<defun name="held">
  <struct name="global_memory_handle_type"><field name="name" type="string"/></struct>
  <struct name="global_memory_range">
    <field name="handle" type="global_memory_handle_type"/>
    <field name="offset" type="unsigned long"/>
    <field name="size" type="unsigned long"/>
  </struct>
  <in name="range" type="global_memory_range" place="range"/>
  <in name="xs" type="long" place="xs"/>
  <out name="ys" type="long" place="ys"/>
  <out name="size" type="unsigned long" place="size"/>
  <net>
    <place name="range" type="global_memory_range"/>
    <place name="xs" type="long"/>
    <place name="ys" type="long"/>
    <place name="size" type="unsigned long"/>
    <transition name="work">
      <defun><in name="n" type="long"/><out name="r" type="long"/>
        <module name="work" function="r run (n)"/></defun>
      <connect-in port="n" place="xs"/><connect-out port="r" place="ys"/>
    </transition>
    <transition name="measure">
      <defun><in name="range" type="global_memory_range"/><out name="size" type="unsigned long"/>
        <expression>${size} := ${range.size}</expression></defun>
      <connect-in port="range" place="range"/><connect-out port="size" place="size"/>
    </transition>
  </net>
</defun>
"#;

#[test]
fn a_resumed_job_that_holds_a_global_allocation_fails_naming_it_and_the_others_go_on() {
    let s = pnet_tests::GspcScratch::new("resume", "alloc", bin_dir().join("gspc"));
    // Workers with 1 MiB of working memory each: global memory for `gspc alloc`.
    let calls = boot_with_work_module(&s, "worker:2,1048576");
    let t = Instant::now();
    loop {
        let st: serde_json::Value = serde_json::from_str(&s.ok(&["status", "--json"])).unwrap();
        if st["memory"]["segments"] == 2 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "no segments: {st:#}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let alloc = s.ok(&["alloc", "1K"]);
    let mut lines = alloc.lines();
    let (handle, range) = (lines.next().unwrap(), lines.next().unwrap());
    let held = s.dir.join("held.xpnet");
    std::fs::write(&held, HELD).unwrap();
    let many = s.dir.join("many.xpnet");
    std::fs::write(&many, pnet_tests::module_net("many", "work", "work", "run")).unwrap();
    let mut args: Vec<String> = vec![
        "submit".into(),
        held.display().to_string(),
        "-p".into(),
        format!("range={range}"),
    ];
    args.extend((1..=4).map(|n| format!("-pxs={n}L")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let a = s.ok(&args).trim().to_string();
    let mut args: Vec<String> = vec!["submit".into(), many.display().to_string()];
    args.extend((11..=14).map(|n| format!("-pxs={n}L")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let b = s.ok(&args).trim().to_string();
    assert_eq!((a.as_str(), b.as_str()), ("1", "2"));
    // Mid-run: kill the runtime (its workers, and the allocation's bytes, go with it).
    let t = Instant::now();
    while std::fs::read_to_string(&calls)
        .unwrap_or_default()
        .lines()
        .count()
        < 2
    {
        assert!(t.elapsed() < Duration::from_secs(30), "no task ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    let st: serde_json::Value = serde_json::from_str(&s.ok(&["status", "--json"])).unwrap();
    let daemon = st["pid"].as_u64().unwrap() as u32;
    // SAFETY: kill(2) of the runtime this test booted.
    assert_eq!(unsafe { libc::kill(daemon as i32, libc::SIGKILL) }, 0);
    assert!(wait_gone(daemon, Duration::from_secs(10)));
    for w in st["workers"].as_array().unwrap() {
        let pid = w["pid"].as_u64().unwrap() as u32;
        assert!(
            wait_gone(pid, Duration::from_secs(10)),
            "worker {pid} is left"
        );
    }

    let resumed = s.ok(&["boot", "--resume", "--timeout", "30"]);
    assert!(resumed.contains("gspc: runtime booted (pid "), "{resumed}");
    assert!(
        resumed.contains("  journal: resumed 1 job(s) (2), 0 ended job(s) kept"),
        "{resumed}"
    );
    // A new allocation gets the old handle: the job must not run on its bytes.
    let again = s.ok(&["alloc", "1K"]);
    assert_eq!(again.lines().next(), Some(handle), "{again}");
    let wa = s.gspc(&["wait", &a]);
    assert_eq!(wa.status.code(), Some(1), "{}", out(&wa));
    let why = format!(
        "the job could not be resumed: it holds the global memory allocation `{handle}` (gspc \
         alloc), whose bytes lived in the working memory of the workers that ended with the \
         crashed runtime; a resume does not bring allocations back (and a new allocation may \
         get an old handle). Allocate and fill the memory again and submit the job again"
    );
    assert!(err(&wa).contains(&why), "{}", err(&wa));
    let log = std::fs::read_to_string(s.state().join("daemon.log")).unwrap();
    assert!(log.contains(&format!("journal: job 1: {why}")), "{log}");
    let wb = s.gspc(&["wait", &b]);
    assert_eq!(wb.status.code(), Some(0), "{}", err(&wb));
    assert_eq!(sorted_lines(&out(&wb)), expected(11..=14));
    let jobs: serde_json::Value = serde_json::from_str(&s.ok(&["jobs", "--json"])).unwrap();
    assert_eq!(jobs[0]["state"], "failed", "{jobs:#}");
    assert_eq!(jobs[1]["state"], "done", "{jobs:#}");
    s.ok(&["stop"]);
}
