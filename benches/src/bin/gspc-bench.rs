//! `gspc-bench`: boots a runtime (the `gspc` next to this program), then measures
//! (1) the submit-to-result latency of a one-transition net (one native no-op module call:
//! submit, wait, result), median and 99th percentile, and (2) the rate at which small
//! workflows are submitted and completed (many submissions in a row, then all waited for).
//!
//! Usage: gspc-bench [--jobs N] [--latency-runs N] [--workers N]
//! Needs `gspc`, `gspc-worker` and `libnoop.so` in this program's folder
//! (`cargo build --release -p pnet-benches -p pnet-gspc -p pnet-worker -p pnet-example-noop`).
//!
//! With `--concurrent K`: many jobs at once over many simulated workers instead. A runtime
//! (`pnet_agent::serve`, the daemon of `gspc boot`, in a child process of this program) and
//! `--sim-workers N` simulated workers (`gspc-scale`'s, one simulator process per 1,000
//! connections; `gspc-scale` must be in this program's folder); each round submits K no-op
//! jobs (`examples/modules/noop.xpnet`, `--tasks T` calls each) at once and waits for all
//! (results checked), timing the round and the daemon's CPU; then `--status-polls P` runtime
//! status requests one after the other, timed.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use pnet_agent::control::{JobOutcome, RtClient, RtRequest, RtResponse};
use pnet_stdlib::Value;

const NET: &str = r#"<defun name="one">
  <in name="x" type="control" place="x"/>
  <out name="y" type="control" place="y"/>
  <net>
    <place name="x" type="control"/>
    <place name="y" type="control"/>
    <transition name="call">
      <defun>
        <in name="x" type="control"/>
        <out name="y" type="control"/>
        <module name="noop" function="y run (x)"/>
      </defun>
      <connect-in port="x" place="x"/>
      <connect-out port="y" place="y"/>
    </transition>
  </net>
</defun>
"#;

const USAGE: &str = "\
gspc-bench: submit-to-result latency and submission rate of a booted gspc runtime

Usage: gspc-bench [--jobs N] [--latency-runs N] [--workers N]
       gspc-bench --concurrent K [--sim-workers N] [--tasks T] [--rounds R] [--status-polls P]

  --latency-runs N  one-transition jobs submitted and waited for one at a time (default 300)
  --jobs N          jobs submitted in a row for the rate (default 2000)
  --workers N       workers to boot (default 2)
  --concurrent K    instead: K no-op jobs at once over simulated workers, per round
  --sim-workers N   simulated workers of --concurrent (default 5000; needs gspc-scale here)
  --tasks T         no-op calls per job of --concurrent (default 2000)
  --rounds R        rounds of --concurrent (default 3)
  --status-polls P  runtime status requests timed after the rounds (default 50)
  -h, --help        print this help
";

const NOOP_NET: &str = include_str!("../../../examples/modules/noop.xpnet");
/// Simulated workers per simulator process (as gspc-scale's own runs).
const SIM_PER_PROCESS: usize = 1000;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let k = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[k.min(sorted.len() - 1)]
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut jobs = 2000usize;
    let mut runs = 300usize;
    let mut workers = 2u32;
    let mut conc = Concurrent::default();
    let mut i = 0;
    while i < argv.len() {
        let next = |i: &mut usize| -> Option<usize> {
            *i += 1;
            argv.get(*i).and_then(|v| v.parse().ok())
        };
        match argv[i].as_str() {
            "-h" | "--help" => {
                pnet_stdlib::out!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "--jobs" => match next(&mut i) {
                Some(n) => jobs = n,
                None => return usage("--jobs needs a number"),
            },
            "--latency-runs" => match next(&mut i) {
                Some(n) => runs = n,
                None => return usage("--latency-runs needs a number"),
            },
            "--workers" => match next(&mut i) {
                Some(n) => workers = n as u32,
                None => return usage("--workers needs a number"),
            },
            "--concurrent" => match next(&mut i) {
                Some(n) => conc.jobs = n,
                None => return usage("--concurrent needs a number"),
            },
            "--sim-workers" => match next(&mut i) {
                Some(n) => conc.workers = n,
                None => return usage("--sim-workers needs a number"),
            },
            "--tasks" => match next(&mut i) {
                Some(n) => conc.tasks = n,
                None => return usage("--tasks needs a number"),
            },
            "--rounds" => match next(&mut i) {
                Some(n) => conc.rounds = n,
                None => return usage("--rounds needs a number"),
            },
            "--status-polls" => match next(&mut i) {
                Some(n) => conc.polls = n,
                None => return usage("--status-polls needs a number"),
            },
            "__agent" => return agent_main(argv.get(i + 1)),
            other => return usage(&format!("unexpected argument '{other}'")),
        }
        i += 1;
    }
    let r = if conc.jobs > 0 {
        concurrent(&conc)
    } else {
        bench(jobs, runs, workers)
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gspc-bench: {e}");
            ExitCode::from(1)
        }
    }
}

fn usage(m: &str) -> ExitCode {
    eprintln!("gspc-bench: {m}\nTry 'gspc-bench --help' for more information.");
    ExitCode::from(2)
}

struct Runtime {
    gspc: PathBuf,
    dir: PathBuf,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let _ = Command::new(&self.gspc)
            .args(["stop", "--state-dir"])
            .arg(&self.dir)
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn bench(jobs: usize, runs: usize, workers: u32) -> Result<(), String> {
    let here = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .parent()
        .map(Path::to_path_buf)
        .ok_or("no folder")?;
    let gspc = here.join("gspc");
    let dir = std::env::temp_dir().join(format!("gspc-bench-{}", std::process::id()));
    let net_path = std::env::temp_dir().join(format!("gspc-bench-{}.xpnet", std::process::id()));
    std::fs::write(&net_path, NET).map_err(|e| e.to_string())?;
    let (bundle, _) = pnetc::load_net(
        &net_path,
        NET.as_bytes(),
        &pnet_sema::Options::default(),
        pnetc::ColorMode::Never,
    )?;
    let _ = std::fs::remove_file(&net_path);
    let bytes = pnet_bundle::format::encode(&bundle).map_err(|e| e.to_string())?;
    let out = Command::new(&gspc)
        .args(["boot", "--state-dir"])
        .arg(&dir)
        .args(["--topology", &format!("worker:{workers}")])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", gspc.display()))?;
    let rt = Runtime { gspc, dir };
    if !out.status.success() {
        return Err(format!(
            "gspc boot failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let client = RtClient::open(&rt.dir).map_err(|e| e.to_string())?;
    let submit = || -> Result<u64, String> {
        match client
            .call(
                RtRequest::Submit {
                    net: "one.xpnet".into(),
                    bundle: bytes.clone(),
                    inputs: vec![("x".into(), vec![Value::Control])],
                },
                Some(Duration::from_secs(30)),
            )
            .map_err(|e| e.to_string())?
        {
            RtResponse::Submitted { job } => Ok(job),
            r => Err(format!("unexpected answer {r:?}")),
        }
    };
    let wait = |job: u64| -> Result<(), String> {
        match client
            .call(RtRequest::Wait { job }, None)
            .map_err(|e| e.to_string())?
        {
            RtResponse::Outcome {
                outcome: JobOutcome::Done { outputs, .. },
                ..
            } if outputs == vec![("y".to_string(), vec![Value::Control])] => Ok(()),
            r => Err(format!("job {job}: unexpected outcome {r:?}")),
        }
    };
    // Warm up (module loading, JIT).
    for _ in 0..20 {
        wait(submit()?)?;
    }
    let mut lat = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        wait(submit()?)?;
        lat.push(t.elapsed());
    }
    lat.sort_unstable();
    let t = Instant::now();
    let mut ids = Vec::with_capacity(jobs);
    for _ in 0..jobs {
        ids.push(submit()?);
    }
    let submitted = t.elapsed();
    for id in ids {
        wait(id)?;
    }
    let total = t.elapsed();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    pnet_stdlib::outln!(
        "gspc-bench: {workers} workers, one-transition net (one native no-op call)"
    );
    pnet_stdlib::outln!(
        "latency (submit to result, {runs} runs): median {:.3} ms, p99 {:.3} ms, min {:.3} ms, max {:.3} ms",
        ms(percentile(&lat, 0.5)),
        ms(percentile(&lat, 0.99)),
        ms(lat[0]),
        ms(lat[lat.len() - 1])
    );
    pnet_stdlib::outln!(
        "rate ({jobs} jobs): {:.0} submissions/s; {:.0} jobs/s submitted and completed ({:.3} s)",
        jobs as f64 / submitted.as_secs_f64(),
        jobs as f64 / total.as_secs_f64(),
        total.as_secs_f64()
    );
    Ok(())
}

/// The settings of `--concurrent`.
struct Concurrent {
    jobs: usize,
    workers: usize,
    tasks: usize,
    rounds: usize,
    polls: usize,
}

impl Default for Concurrent {
    fn default() -> Concurrent {
        Concurrent {
            jobs: 0,
            workers: 5000,
            tasks: 2000,
            rounds: 3,
            polls: 50,
        }
    }
}

/// The runtime's daemon (`__agent DIR`, the secret in the environment).
fn agent_main(dir: Option<&String>) -> ExitCode {
    let Some(dir) = dir.map(PathBuf::from) else {
        return ExitCode::from(2);
    };
    raise_nofile();
    let Some(secret) = std::env::var(pnet_protocol::SECRET_ENV)
        .ok()
        .and_then(|h| pnet_protocol::Secret::from_hex(&h))
    else {
        eprintln!("gspc-bench agent: no secret");
        return ExitCode::from(2);
    };
    let mut agent =
        pnet_agent::AgentConfig::new(pnet_topology::Plan::default(), PathBuf::from("gspc-worker"));
    agent.log = Some(dir.join("agent.log"));
    let rc = pnet_agent::RuntimeConfig {
        agent,
        state_dir: dir,
        secret,
        sched: pnet_agent::SchedConfig::default(),
        stop_grace: Duration::from_secs(2),
    };
    match pnet_agent::serve(rc) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gspc-bench agent: {e}");
            ExitCode::from(1)
        }
    }
}

fn raise_nofile() {
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 {
            r.rlim_cur = r.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

/// CPU time (s: user + system) of a process.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks(11) + ticks(12)) as f64 / if hz > 0 { hz as f64 } else { 100.0 }
}

/// The children of `--concurrent`, killed at the end whatever happens.
struct Children {
    all: Vec<std::process::Child>,
    dir: PathBuf,
}

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.all {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn concurrent(o: &Concurrent) -> Result<(), String> {
    use std::process::Stdio;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let here = exe.parent().map(Path::to_path_buf).ok_or("no folder")?;
    let dir = std::env::temp_dir().join(format!("gspc-bench-conc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| e.to_string())?;
    }
    raise_nofile();
    let secret = pnet_protocol::Secret::random().map_err(|e| e.to_string())?;
    let (bundle, _) = pnetc::load_net(
        Path::new("noop.xpnet"),
        NOOP_NET.as_bytes(),
        &pnet_sema::Options::default(),
        pnetc::ColorMode::Never,
    )?;
    let noop = pnet_bundle::format::encode(&bundle).map_err(|e| e.to_string())?;
    let err = std::fs::File::create(dir.join("children.stderr")).map_err(|e| e.to_string())?;
    let stderr = || err.try_clone().map(Stdio::from).map_err(|e| e.to_string());
    let agent = Command::new(&exe)
        .arg("__agent")
        .arg(&dir)
        .env(pnet_protocol::SECRET_ENV, secret.to_hex())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr()?)
        .spawn()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let pid = agent.id();
    let mut kids = Children {
        all: vec![agent],
        dir: dir.clone(),
    };
    let t = Instant::now();
    let address = loop {
        if let Ok(a) = pnet_agent::control::worker_address(&dir) {
            break a;
        }
        if t.elapsed() > Duration::from_secs(20) {
            return Err("the runtime did not start".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let procs = o.workers.div_ceil(SIM_PER_PROCESS);
    for p in 0..procs {
        let first = p * SIM_PER_PROCESS;
        let count = SIM_PER_PROCESS.min(o.workers - first);
        let c = Command::new(here.join("gspc-scale"))
            .args(["__sim", &address, &first.to_string(), &count.to_string()])
            .arg((48 / procs).max(1).to_string())
            .env(pnet_protocol::SECRET_ENV, secret.to_hex())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(stderr()?)
            .spawn()
            .map_err(|e| format!("cannot start a simulator (gspc-scale): {e}"))?;
        kids.all.push(c);
    }
    let client = RtClient::with_secret(&dir.join(pnet_agent::control::SOCKET_FILE), secret.clone());
    let status_of = |r: RtRequest| -> Result<pnet_agent::control::RuntimeStatus, String> {
        match client
            .call(r, Some(Duration::from_secs(60)))
            .map_err(|e| e.to_string())?
        {
            RtResponse::Status(s) => Ok(s),
            r => Err(format!("unexpected answer {r:?}")),
        }
    };
    let t = Instant::now();
    loop {
        let up = status_of(RtRequest::StatusPage {
            offset: 0,
            limit: 0,
        })?
        .workers_up as usize;
        if up >= o.workers {
            break;
        }
        if t.elapsed() > Duration::from_secs(300) {
            return Err(format!("only {up} of {} workers joined", o.workers));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    pnet_stdlib::outln!(
        "gspc-bench --concurrent: {} simulated workers joined in {:.2} s; {} jobs at once, {} \
         no-op calls each",
        o.workers,
        t.elapsed().as_secs_f64(),
        o.jobs,
        o.tasks
    );
    let n = o.tasks as i64;
    for round in 1..=o.rounds {
        let c0 = cpu_secs(pid);
        let t = Instant::now();
        let mut ids = Vec::with_capacity(o.jobs);
        for _ in 0..o.jobs {
            match client
                .call(
                    RtRequest::Submit {
                        net: "noop.xpnet".into(),
                        bundle: noop.clone(),
                        inputs: vec![("n".into(), vec![Value::Long(n)])],
                    },
                    Some(Duration::from_secs(60)),
                )
                .map_err(|e| e.to_string())?
            {
                RtResponse::Submitted { job } => ids.push(job),
                r => return Err(format!("unexpected answer {r:?}")),
            }
        }
        for job in ids {
            match client
                .call(RtRequest::Wait { job }, None)
                .map_err(|e| e.to_string())?
            {
                RtResponse::Outcome {
                    outcome: JobOutcome::Done { outputs, .. },
                    ..
                } if outputs == vec![("done".to_string(), vec![Value::Long(n)])] => {}
                r => return Err(format!("job {job}: unexpected outcome {r:?}")),
            }
        }
        let took = t.elapsed().as_secs_f64();
        let cpu = cpu_secs(pid) - c0;
        let total = (o.jobs * o.tasks) as f64;
        pnet_stdlib::outln!(
            "round {round}: {:.0} tasks in {took:.2} s = {:.0} tasks/s, exact; daemon CPU \
             {cpu:.2} s ({:.1} µs per task)",
            total,
            total / took,
            cpu * 1e6 / total
        );
    }
    // Every worker (the request of old clients), then the first 100 (`gspc status`), then
    // the first 256 (the monitor), one after the other.
    let kinds = [
        ("every worker", RtRequest::Status),
        (
            "page of 100",
            RtRequest::StatusPage {
                offset: 0,
                limit: 100,
            },
        ),
        (
            "page of 256",
            RtRequest::StatusPage {
                offset: 0,
                limit: 256,
            },
        ),
    ];
    for (what, req) in kinds {
        let mut times = Vec::with_capacity(o.polls);
        let c0 = cpu_secs(pid);
        let mut up = 0;
        for _ in 0..o.polls {
            let t = Instant::now();
            up = status_of(req.clone())?.workers_up;
            times.push(t.elapsed());
        }
        let cpu = cpu_secs(pid) - c0;
        times.sort_unstable();
        if times.is_empty() {
            break;
        }
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        pnet_stdlib::outln!(
            "status, {what} ({} polls, {up} of {} workers up): median {:.2} ms, p99 {:.2} ms; \
             daemon CPU {:.2} ms per poll",
            o.polls,
            o.workers,
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99)),
            cpu * 1000.0 / o.polls as f64
        );
    }
    Ok(())
}
