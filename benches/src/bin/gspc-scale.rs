//! `gspc-scale`: one agent (a persistent runtime, `pnet_agent::serve`, in its own process)
//! and N workers, for each N given: join time, the agent's memory per worker, the heartbeat
//! cost (the agent's CPU while idle with N workers), the dispatch rate of no-op tasks and of
//! 10 ms tasks (results checked exactly), the time to notice a lost (frozen) worker and the
//! exact result of the job whose tasks it held, and the heartbeat complaints of both sides.
//!
//! Workers are real `gspc-worker` processes up to `--real-max` (default 2000); beyond that,
//! simulated workers: processes of this program that each hold up to 1000 connections on one
//! thread and speak the real protocol over real TCP (hello, heartbeats both ways with the
//! worker's silence check, runs, steals, cancels). The output says how many of each ran.
//!
//! With `--leaves K`, the agent is the root of a tree of agents: K `gspc-leaf` processes
//! connect to it as one fat worker each and the N workers (all simulated) connect to the
//! leaves, N/K each; the lost-worker phase then freezes a worker under a leaf (the leaf
//! notices it and runs its tasks again; the root loses nothing).
//!
//! Usage: gspc-scale [--workers 100,1000,5000,10000] [--real-max N] [--noop-tasks N]
//!                   [--sleep-tasks-per-worker N] [--idle-secs S] [--busy K] [--skip PHASES]
//!                   [--leaves K] [--depth D]
//! Needs `gspc-worker`, `libnoop.so` and `libcrash.so` in this program's folder
//! (`cargo build --release -p pnet-benches -p pnet-worker -p pnet-example-noop
//! -p pnet-example-crash`).

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use pnet_agent::control::{JobOutcome, RtClient, RtRequest, RtResponse, SOCKET_FILE};
use pnet_protocol::frame::{self, encode};
use pnet_protocol::{
    AGENT_SILENCE_TIMEOUT, AgentMsg, HEARTBEAT_INTERVAL, HEARTBEAT_TIMEOUT, Hello,
    PROTOCOL_VERSION, Secret, TaskTimes, WorkerMsg,
};
use pnet_stdlib::Value;

const NOOP_NET: &str = include_str!("../../../examples/modules/noop.xpnet");
const SLEEP_NET: &str = include_str!("../../../examples/modules/crash.xpnet");

/// Simulated workers per simulator process (each connection is one file descriptor there).
const SIM_PER_PROCESS: usize = 1000;
/// Hellos in flight over all simulator processes (the agent closes connections beyond
/// `PREAUTH_CONNECTIONS` = 64 waiting for their Hello).
const SIM_HANDSHAKES: usize = 48;
/// What a worker prints when it gives up on a silent agent.
const COMPLAINT: &str = "has been silent for";

const USAGE: &str = "\
gspc-scale: one agent and N workers: join time, memory per worker, heartbeat cost, dispatch
rates, lost-worker detection, heartbeat complaints

Usage: gspc-scale [OPTIONS]

  --workers N,N,...            worker counts (default 100,1000,5000,10000)
  --real-max N                 at most N real gspc-worker processes, the rest simulated
                               (default 2000)
  --noop-tasks N               no-op tasks of the dispatch run (default 100000)
  --sleep-tasks-per-worker N   10 ms tasks per worker (default 10)
  --idle-secs S                how long the idle agent's CPU is measured (default 5)
  --busy K                     K threads spinning in this process all along
  --observers K                when all N workers are real: K simulated ones beside them
                               (they report the longest silence of the agent they saw)
  --skip LIST                  phases to skip: idle,noop,sleep,lost (comma-separated)
  --leaves K                   a tree of agents: K gspc-leaf processes under the agent, the
                               workers (all simulated) under the leaves
  --depth D                    tasks per worker the root keeps on a leaf (gspc-leaf --depth,
                               default 4)
  -h, --help                   print this help
";

struct Options {
    workers: Vec<usize>,
    real_max: usize,
    noop_tasks: i64,
    sleep_per_worker: i64,
    idle: Duration,
    busy: usize,
    observers: usize,
    skip: Vec<String>,
    leaves: usize,
    depth: u32,
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match argv.first().map(String::as_str) {
        Some("__agent") => return agent_main(&argv[1..]),
        Some("__sim") => return sim_main(&argv[1..]),
        _ => {}
    }
    let mut o = Options {
        workers: vec![100, 1000, 5000, 10000],
        real_max: 2000,
        noop_tasks: 100_000,
        sleep_per_worker: 10,
        idle: Duration::from_secs(5),
        busy: 0,
        observers: 0,
        skip: Vec::new(),
        leaves: 0,
        depth: 4,
    };
    let mut i = 0;
    while i < argv.len() {
        let val = argv.get(i + 1).cloned().unwrap_or_default();
        let num = |v: &str| v.parse::<usize>().ok();
        let ok = match argv[i].as_str() {
            "-h" | "--help" => {
                pnet_stdlib::out!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "--workers" => {
                let ws: Option<Vec<usize>> = val.split(',').map(num).collect();
                ws.map(|w| o.workers = w).is_some()
            }
            "--real-max" => num(&val).map(|n| o.real_max = n).is_some(),
            "--noop-tasks" => num(&val).map(|n| o.noop_tasks = n as i64).is_some(),
            "--sleep-tasks-per-worker" => {
                num(&val).map(|n| o.sleep_per_worker = n as i64).is_some()
            }
            "--idle-secs" => num(&val)
                .map(|n| o.idle = Duration::from_secs(n as u64))
                .is_some(),
            "--busy" => num(&val).map(|n| o.busy = n).is_some(),
            "--observers" => num(&val).map(|n| o.observers = n).is_some(),
            "--leaves" => num(&val).map(|n| o.leaves = n).is_some(),
            "--depth" => num(&val).map(|n| o.depth = n as u32).is_some(),
            "--skip" => {
                o.skip = val.split(',').map(str::to_string).collect();
                true
            }
            other => {
                eprintln!("gspc-scale: unexpected argument '{other}'\n\n{USAGE}");
                return ExitCode::from(2);
            }
        };
        if !ok {
            eprintln!("gspc-scale: {} needs a value\n\n{USAGE}", argv[i]);
            return ExitCode::from(2);
        }
        i += 2;
    }
    let nofile = raise_nofile();
    let stop_busy = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..o.busy)
        .map(|_| {
            let stop = stop_busy.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();
    pnet_stdlib::outln!(
        "gspc-scale: {} cores, RLIMIT_NOFILE {nofile}, {} busy thread(s), heartbeat every {} ms, \
         a worker is lost after {} ms of silence, a worker gives up on the agent after {} ms",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        o.busy,
        HEARTBEAT_INTERVAL.as_millis(),
        HEARTBEAT_TIMEOUT.as_millis(),
        AGENT_SILENCE_TIMEOUT.as_millis()
    );
    let mut failed = false;
    for &n in &o.workers {
        if let Err(e) = scale_run(&o, n) {
            eprintln!("gspc-scale: {n} workers: {e}");
            failed = true;
        }
    }
    stop_busy.store(true, Ordering::Relaxed);
    for b in busy {
        let _ = b.join();
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Raises the soft limit of open files to the hard limit; returns the new soft limit.
fn raise_nofile() -> u64 {
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 0;
        }
        r.rlim_cur = r.rlim_max;
        let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur
    }
}

fn here() -> Result<PathBuf, String> {
    std::env::current_exe()
        .map_err(|e| e.to_string())?
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| "no folder".into())
}

fn compile(name: &str, text: &str) -> Result<Vec<u8>, String> {
    let (bundle, _) = pnetc::load_net(
        Path::new(name),
        text.as_bytes(),
        &pnet_sema::Options::default(),
        pnetc::ColorMode::Never,
    )?;
    pnet_bundle::format::encode(&bundle).map_err(|e| e.to_string())
}

/// The children of one run, killed at the end whatever happens.
struct Fleet {
    agent: Option<Child>,
    workers: Vec<Child>,
    sims: Vec<Child>,
    leaves: Vec<Leaf>,
    dir: PathBuf,
}

/// A `gspc-leaf` process and what its log (standard error, `--verbose`) said so far.
struct Leaf {
    child: Child,
    /// Workers joined and lost.
    joined: Arc<AtomicU64>,
    lost: Arc<AtomicU64>,
}

/// Starts a leaf under the agent at `root`; returns it with the address its workers connect
/// to.
fn start_leaf(
    bin: &Path,
    root: &str,
    secret: &Secret,
    k: usize,
    depth: u32,
) -> Result<(Leaf, String), String> {
    let mut child = Command::new(bin.join("gspc-leaf"))
        .args(["--root", root, "--name", &format!("leaf-{k}"), "--verbose"])
        .args(["--depth", &depth.to_string()])
        .env(pnet_protocol::SECRET_ENV, secret.to_hex())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start gspc-leaf: {e}"))?;
    let err = child.stderr.take().ok_or("no stderr")?;
    let (joined, lost) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let (joined, lost) = (joined.clone(), lost.clone());
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                if let Some(a) = line.strip_prefix("gspc-leaf: workers connect to ") {
                    // The address, then (with --workers 0) why it started none.
                    let a = a.split_whitespace().next().unwrap_or_default();
                    let _ = tx.send(a.to_string());
                } else if line.contains("` joined (pid") {
                    joined.fetch_add(1, Ordering::Relaxed);
                } else if line.contains("` lost: ") {
                    lost.fetch_add(1, Ordering::Relaxed);
                } else if line.contains("error") {
                    eprintln!("leaf-{k}: {line}");
                }
            }
        });
    }
    let leaf = Leaf {
        child,
        joined,
        lost,
    };
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(addr) => Ok((leaf, addr)),
        Err(_) => Err(format!("leaf {k} did not start")),
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let all = self
            .agent
            .iter_mut()
            .chain(self.workers.iter_mut())
            .chain(self.sims.iter_mut())
            .chain(self.leaves.iter_mut().map(|l| &mut l.child));
        for c in all {
            // SIGCONT first: a frozen worker must be able to die.
            // SAFETY: kill on our own child's pid.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGCONT);
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::env::var_os("GSPC_SCALE_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Resident memory (kB) and CPU time (clock ticks: user + system) of a process.
fn proc_stats(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // After the command: state is field 3, utime 14, stime 15 (1-based): 11 and 12 here.
    (rss, ticks(11) + ticks(12))
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

fn scale_run(o: &Options, n: usize) -> Result<(), String> {
    let bin = here()?;
    let dir = std::env::temp_dir().join(format!("gspc-scale-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| e.to_string())?;
    }
    let secret = Secret::random().map_err(|e| e.to_string())?;
    let noop = compile("noop.xpnet", NOOP_NET)?;
    let sleep = compile("crash.xpnet", SLEEP_NET)?;
    let worker_err = dir.join("workers.stderr");
    let err_file = std::fs::File::create(&worker_err).map_err(|e| e.to_string())?;
    let agent_log = dir.join("agent.log");

    let agent = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
        .arg("__agent")
        .arg(&dir)
        .env(pnet_protocol::SECRET_ENV, secret.to_hex())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            err_file.try_clone().map_err(|e| e.to_string())?,
        ))
        .spawn()
        .map_err(|e| format!("cannot start the agent: {e}"))?;
    let agent_pid = agent.id();
    let mut fleet = Fleet {
        agent: Some(agent),
        workers: Vec::new(),
        sims: Vec::new(),
        leaves: Vec::new(),
        dir: dir.clone(),
    };
    let t = Instant::now();
    let address = loop {
        if let Ok(a) = pnet_agent::control::worker_address(&dir) {
            break a;
        }
        if t.elapsed() > Duration::from_secs(20) {
            return Err("the agent did not start".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let client = RtClient::with_secret(&dir.join(SOCKET_FILE), secret.clone());
    let workers_up = |client: &RtClient| -> Result<usize, String> {
        match client
            .call(RtRequest::Status, Some(Duration::from_secs(60)))
            .map_err(|e| e.to_string())?
        {
            RtResponse::Status(s) => Ok(s.workers.len()),
            r => Err(format!("unexpected answer {r:?}")),
        }
    };
    let (rss0, _) = proc_stats(agent_pid);

    // Join.
    let real = if o.leaves > 0 { 0 } else { n.min(o.real_max) };
    // Observers: simulated workers beside N real ones, to see the agent's silences.
    let observers = if real == n { o.observers } else { 0 };
    let simulated = n - real + observers;
    let n = n + observers;
    let t_join = Instant::now();
    for i in 0..real {
        let c = Command::new(bin.join("gspc-worker"))
            .args(["--agent", &address, "--name", &format!("real-{i}")])
            .env(pnet_protocol::SECRET_ENV, secret.to_hex())
            .env("PNET_MODULE_PATH", &bin)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                err_file.try_clone().map_err(|e| e.to_string())?,
            ))
            .spawn()
            .map_err(|e| format!("cannot start worker {i}: {e}"))?;
        fleet.workers.push(c);
    }
    // Where the simulated workers connect: the agent, or the leaves (N/K each).
    let mut targets: Vec<(String, usize, usize)> = Vec::new();
    if o.leaves > 0 {
        for k in 0..o.leaves {
            let (leaf, addr) = start_leaf(&bin, &address, &secret, k, o.depth)?;
            fleet.leaves.push(leaf);
            let (from, to) = (k * simulated / o.leaves, (k + 1) * simulated / o.leaves);
            targets.push((addr, from, to - from));
        }
    } else {
        targets.push((address.clone(), 0, simulated));
    }
    let mut runs = Vec::new();
    for (addr, first, count) in &targets {
        let mut at = 0;
        while at < *count {
            let c = SIM_PER_PROCESS.min(count - at);
            runs.push((addr.clone(), first + at, c));
            at += c;
        }
    }
    let procs = runs.len();
    for (target, first, count) in runs {
        let c = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
            .args([
                "__sim",
                &target,
                &first.to_string(),
                &count.to_string(),
                &(SIM_HANDSHAKES / procs).max(1).to_string(),
            ])
            .env(pnet_protocol::SECRET_ENV, secret.to_hex())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(
                err_file.try_clone().map_err(|e| e.to_string())?,
            ))
            .spawn()
            .map_err(|e| format!("cannot start a simulator: {e}"))?;
        fleet.sims.push(c);
    }
    let spawned = t_join.elapsed();
    let leaves_joined = |fleet: &Fleet| -> usize {
        fleet
            .leaves
            .iter()
            .map(|l| l.joined.load(Ordering::Relaxed) as usize)
            .sum()
    };
    loop {
        let up = if o.leaves > 0 {
            if workers_up(&client)? >= o.leaves {
                leaves_joined(&fleet)
            } else {
                0
            }
        } else {
            workers_up(&client)?
        };
        if up >= n {
            break;
        }
        if t_join.elapsed() > Duration::from_secs(300) {
            return Err(format!("only {up} of {n} workers joined within 300 s"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let join = t_join.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    let (rss1, _) = proc_stats(agent_pid);
    pnet_stdlib::outln!(
        "\n== {n} workers: {real} real gspc-worker processes, {simulated} simulated ({procs} \
         simulator processes)"
    );
    if o.leaves > 0 {
        pnet_stdlib::outln!(
            "a tree of agents: the root agent, {} gspc-leaf processes (--depth {}) under it, \
             the workers under the leaves ({} each); \"agent\" is the root",
            o.leaves,
            o.depth,
            n / o.leaves
        );
    }
    let leaves_cpu = |fleet: &Fleet| -> u64 {
        fleet
            .leaves
            .iter()
            .map(|l| proc_stats(l.child.id()).1)
            .sum()
    };
    pnet_stdlib::outln!(
        "join: {:.2} s (processes started in {:.2} s); agent RSS {:.1} MB before, {:.1} MB \
         with the workers: {:.1} kB per worker",
        join.as_secs_f64(),
        spawned.as_secs_f64(),
        rss0 as f64 / 1024.0,
        rss1 as f64 / 1024.0,
        (rss1.saturating_sub(rss0)) as f64 / n as f64
    );

    if !o.skip.iter().any(|s| s == "idle") {
        let (_, c0) = proc_stats(agent_pid);
        let l0 = leaves_cpu(&fleet);
        let t = Instant::now();
        std::thread::sleep(o.idle);
        let (_, c1) = proc_stats(agent_pid);
        let cpu = (c1 - c0) as f64 / clock_ticks() / t.elapsed().as_secs_f64();
        if o.leaves > 0 {
            let l = (leaves_cpu(&fleet) - l0) as f64 / clock_ticks() / t.elapsed().as_secs_f64();
            pnet_stdlib::outln!(
                "leaves' CPU while idle: {:.1} % of one core in all",
                l * 100.0
            );
        }
        pnet_stdlib::outln!(
            "heartbeat cost: agent CPU {:.1} % of one core while idle ({:.1} µs per worker \
             per second)",
            cpu * 100.0,
            cpu * 1e6 / n as f64
        );
    }

    let submit = |bundle: &[u8], inputs: Vec<(String, Vec<Value>)>| -> Result<u64, String> {
        match client
            .call(
                RtRequest::Submit {
                    net: "scale".into(),
                    bundle: bundle.to_vec(),
                    inputs,
                },
                Some(Duration::from_secs(60)),
            )
            .map_err(|e| e.to_string())?
        {
            RtResponse::Submitted { job } => Ok(job),
            r => Err(format!("unexpected answer {r:?}")),
        }
    };
    let wait = |job: u64| -> Result<Vec<(String, Vec<Value>)>, String> {
        match client
            .call(RtRequest::Wait { job }, None)
            .map_err(|e| e.to_string())?
        {
            RtResponse::Outcome {
                outcome: JobOutcome::Done { outputs, .. },
                ..
            } => Ok(outputs),
            r => Err(format!("job {job}: {r:?}")),
        }
    };
    let output = |outs: &[(String, Vec<Value>)], port: &str| -> Option<i64> {
        outs.iter()
            .find(|(p, _)| p == port)
            .and_then(|(_, v)| match v.as_slice() {
                [Value::Long(x)] => Some(*x),
                _ => None,
            })
    };
    let sleep_inputs = |tasks: i64| {
        vec![
            ("what".to_string(), vec![Value::String("sleep".into())]),
            ("n".to_string(), vec![Value::Long(tasks)]),
            ("ms".to_string(), vec![Value::Long(10)]),
            ("dir".to_string(), vec![Value::String("/tmp".into())]),
        ]
    };
    let check_sleep = |outs: &[(String, Vec<Value>)], tasks: i64| -> Result<(), String> {
        let (count, sum) = (output(outs, "count"), output(outs, "sum"));
        if count == Some(tasks) && sum == Some(tasks * (tasks - 1) / 2) {
            Ok(())
        } else {
            Err(format!("wrong result {outs:?} for {tasks} tasks"))
        }
    };

    if !o.skip.iter().any(|s| s == "noop") {
        let tasks = o.noop_tasks;
        let (_, c0) = proc_stats(agent_pid);
        let l0 = leaves_cpu(&fleet);
        let t = Instant::now();
        let outs = wait(submit(&noop, vec![("n".into(), vec![Value::Long(tasks)])])?)?;
        let took = t.elapsed();
        let (rss, c1) = proc_stats(agent_pid);
        if o.leaves > 0 {
            let l = (leaves_cpu(&fleet) - l0) as f64 / clock_ticks() / took.as_secs_f64();
            pnet_stdlib::outln!(
                "leaves' CPU during the no-op tasks: {:.0} % in all",
                l * 100.0
            );
        }
        if output(&outs, "done") != Some(tasks) {
            return Err(format!("no-op job: wrong result {outs:?}"));
        }
        pnet_stdlib::outln!(
            "no-op tasks: {tasks} in {:.2} s = {:.0} tasks/s, exact; agent CPU {:.0} % ({:.1} \
             µs per task), RSS {:.1} MB after",
            took.as_secs_f64(),
            tasks as f64 / took.as_secs_f64(),
            (c1 - c0) as f64 / clock_ticks() / took.as_secs_f64() * 100.0,
            (c1 - c0) as f64 / clock_ticks() / tasks as f64 * 1e6,
            rss as f64 / 1024.0
        );
    }

    // 10 ms tasks per second, as measured (for the size of the lost-worker job).
    let mut sleep_rate = None;
    if !o.skip.iter().any(|s| s == "sleep") {
        let tasks = o.sleep_per_worker * n as i64;
        let (_, c0) = proc_stats(agent_pid);
        let l0 = leaves_cpu(&fleet);
        let t = Instant::now();
        let outs = wait(submit(&sleep, sleep_inputs(tasks))?)?;
        let took = t.elapsed();
        let (_, c1) = proc_stats(agent_pid);
        pnet_stdlib::outln!(
            "agent CPU during the 10 ms tasks: {:.0} % ({:.1} µs per task)",
            (c1 - c0) as f64 / clock_ticks() / took.as_secs_f64() * 100.0,
            (c1 - c0) as f64 / clock_ticks() / tasks as f64 * 1e6
        );
        if o.leaves > 0 {
            let l = (leaves_cpu(&fleet) - l0) as f64 / clock_ticks() / took.as_secs_f64();
            pnet_stdlib::outln!(
                "leaves' CPU during the 10 ms tasks: {:.0} % in all",
                l * 100.0
            );
        }
        check_sleep(&outs, tasks)?;
        sleep_rate = Some(tasks as f64 / took.as_secs_f64());
        let ideal = tasks as f64 * 0.010 / n as f64;
        pnet_stdlib::outln!(
            "10 ms tasks: {tasks} in {:.2} s = {:.0} tasks/s, exact; workers busy {:.0} % \
             (ideal {:.2} s; keeping all {n} busy needs {:.0} tasks/s)",
            took.as_secs_f64(),
            tasks as f64 / took.as_secs_f64(),
            ideal / took.as_secs_f64() * 100.0,
            ideal,
            n as f64 / 0.010
        );
    }

    if !o.skip.iter().any(|s| s == "lost") {
        // A job of 10 ms tasks long enough (about 4 s) to freeze one worker in its middle.
        let tasks = sleep_rate
            .map_or(n as i64 * 100, |r| (r * 4.0) as i64)
            .max(2000);
        let job = submit(&sleep, sleep_inputs(tasks))?;
        std::thread::sleep(Duration::from_millis(500));
        let before = workers_up(&client)?;
        let lost0 = fleet.leaves.first().map(|l| l.lost.load(Ordering::Relaxed));
        let kind;
        let t_freeze = Instant::now();
        if let Some(w) = fleet.workers.first() {
            kind = "a real worker (SIGSTOP)";
            // SAFETY: kill on our own child's pid.
            unsafe {
                libc::kill(w.id() as i32, libc::SIGSTOP);
            }
        } else {
            kind = "a simulated worker (stops reading and writing)";
            let stdin = fleet.sims[0]
                .stdin
                .as_mut()
                .ok_or("the simulator has no stdin")?;
            writeln!(stdin, "freeze 0").map_err(|e| e.to_string())?;
            stdin.flush().map_err(|e| e.to_string())?;
        }
        let noticed = loop {
            if let (Some(l0), Some(leaf)) = (lost0, fleet.leaves.first()) {
                // Under a leaf: the leaf notices, the root keeps all its (leaf) workers.
                if leaf.lost.load(Ordering::Relaxed) > l0 {
                    break t_freeze.elapsed();
                }
            } else if workers_up(&client)? < before {
                break t_freeze.elapsed();
            }
            if t_freeze.elapsed() > Duration::from_secs(60) {
                return Err("the frozen worker was not noticed within 60 s".into());
            }
            // Not too often: a status of thousands of workers costs the agent.
            std::thread::sleep(Duration::from_millis(50));
        };
        let outs = wait(job)?;
        let total = t_freeze.elapsed();
        check_sleep(&outs, tasks)?;
        if o.leaves > 0 {
            let up = workers_up(&client)?;
            pnet_stdlib::outln!(
                "(frozen under leaf 0: the leaf noticed it; the root still has {up} of {} leaves)",
                o.leaves
            );
        }
        pnet_stdlib::outln!(
            "lost worker: froze {kind} during a job of {tasks} 10 ms tasks: noticed after \
             {:.2} s (heartbeat timeout {:.1} s), job done {:.2} s after the freeze with the \
             exact result",
            noticed.as_secs_f64(),
            HEARTBEAT_TIMEOUT.as_secs_f64(),
            total.as_secs_f64()
        );
    }

    // Stop, then count the complaints.
    let _ = client.call(
        RtRequest::Stop { wait: false },
        Some(Duration::from_secs(30)),
    );
    if let Some(mut a) = fleet.agent.take() {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = a.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = a.kill();
        let _ = a.wait();
    }
    let mut sim_complaints = 0u64;
    let mut sim_silence = 0u64;
    let mut sim_summary = Vec::new();
    for mut s in fleet.sims.drain(..) {
        drop(s.stdin.take());
        if let Some(out) = s.stdout.take() {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(c) = line
                    .strip_prefix("sim: complaints ")
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|c| c.parse::<u64>().ok())
                {
                    sim_complaints += c;
                }
                if let Some(ms) = line
                    .split_once("max-silence-ms ")
                    .and_then(|(_, r)| r.split_whitespace().next())
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    sim_silence = sim_silence.max(ms);
                }
                sim_summary.push(line);
            }
        }
        let _ = s.wait();
    }
    let stderr = std::fs::read_to_string(&worker_err).unwrap_or_default();
    let complaints = stderr.lines().filter(|l| l.contains(COMPLAINT)).count();
    let log = std::fs::read_to_string(&agent_log).unwrap_or_default();
    let lost_hb = log.lines().filter(|l| l.contains("(no heartbeat)")).count();
    let expected_lost = usize::from(!o.skip.iter().any(|s| s == "lost"));
    let silence = if simulated > 0 {
        format!(", longest silence of the agent seen by a simulated worker {sim_silence} ms")
    } else {
        String::new()
    };
    let leaves_lost: u64 = fleet
        .leaves
        .iter()
        .map(|l| l.lost.load(Ordering::Relaxed))
        .sum();
    let leaves = if o.leaves > 0 {
        format!(", leaves: {leaves_lost} worker(s) lost")
    } else {
        String::new()
    };
    pnet_stdlib::outln!(
        "heartbeat complaints: workers {complaints} (simulated: {sim_complaints}{silence}), \
         agent: {lost_hb} worker(s) lost for silence{leaves} ({expected_lost} frozen on \
         purpose)"
    );
    if complaints > 0 {
        for l in stderr.lines().filter(|l| l.contains(COMPLAINT)).take(3) {
            pnet_stdlib::outln!("  e.g. {l}");
        }
    }
    Ok(())
}

// ---- the agent process ----

fn agent_main(args: &[String]) -> ExitCode {
    let Some(dir) = args.first().map(PathBuf::from) else {
        return ExitCode::from(2);
    };
    let _ = raise_nofile();
    let Some(secret) = std::env::var(pnet_protocol::SECRET_ENV)
        .ok()
        .and_then(|h| Secret::from_hex(&h))
    else {
        eprintln!("gspc-scale agent: no secret");
        return ExitCode::from(2);
    };
    let mut agent = pnet_agent::AgentConfig::new(
        pnet_topology::Plan::default(),
        here().map_or_else(|_| PathBuf::from("gspc-worker"), |h| h.join("gspc-worker")),
    );
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
            eprintln!("gspc-scale agent: {e}");
            ExitCode::from(1)
        }
    }
}

// ---- simulated workers ----

fn sim_main(args: &[String]) -> ExitCode {
    let (Some(addr), Some(first), Some(count), Some(handshakes)) = (
        args.first().cloned(),
        args.get(1).and_then(|v| v.parse::<usize>().ok()),
        args.get(2).and_then(|v| v.parse::<usize>().ok()),
        args.get(3).and_then(|v| v.parse::<usize>().ok()),
    ) else {
        return ExitCode::from(2);
    };
    let _ = raise_nofile();
    let Some(secret) = std::env::var(pnet_protocol::SECRET_ENV)
        .ok()
        .and_then(|h| Secret::from_hex(&h))
    else {
        return ExitCode::from(2);
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => return ExitCode::from(1),
    };
    let frozen: Arc<Vec<AtomicBool>> =
        Arc::new((0..count).map(|_| AtomicBool::new(false)).collect());
    let stats = Arc::new(SimStats::default());
    // Commands on standard input: `freeze I`.
    {
        let frozen = frozen.clone();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines().map_while(Result::ok) {
                if let Some(i) = line
                    .strip_prefix("freeze ")
                    .and_then(|i| i.trim().parse::<usize>().ok())
                    && let Some(f) = frozen.get(i)
                {
                    f.store(true, Ordering::SeqCst);
                }
            }
        });
    }
    rt.block_on(async {
        let gate = Arc::new(tokio::sync::Semaphore::new(handshakes));
        let mut set = tokio::task::JoinSet::new();
        for i in 0..count {
            let name = format!("sim-{}", first + i);
            let (addr, secret, gate, frozen, stats) = (
                addr.clone(),
                secret.clone(),
                gate.clone(),
                frozen.clone(),
                stats.clone(),
            );
            set.spawn(async move {
                let r = sim_worker(&addr, secret, &name, &gate, &frozen[i], &stats).await;
                if let Err(e) = r {
                    eprintln!("simulated worker {name}: {e}");
                }
            });
        }
        // Until every connection that is not frozen has ended (a frozen one never does).
        while set.len() > frozen.iter().filter(|f| f.load(Ordering::SeqCst)).count() {
            if set.join_next().await.is_none() {
                break;
            }
        }
        set.abort_all();
    });
    pnet_stdlib::outln!(
        "sim: complaints {} max-silence-ms {} joined {} tasks {}",
        stats.complaints.load(Ordering::Relaxed),
        stats.max_silence_ms.load(Ordering::Relaxed),
        stats.joined.load(Ordering::Relaxed),
        stats.tasks.load(Ordering::Relaxed)
    );
    ExitCode::SUCCESS
}

#[derive(Default)]
struct SimStats {
    complaints: AtomicU64,
    /// The longest silence of the agent a simulated worker saw (ms, at its heartbeat ticks).
    max_silence_ms: AtomicU64,
    joined: AtomicU64,
    tasks: AtomicU64,
}

/// What a simulated worker does for a module: echo a control token (no-op), or sleep `ms`
/// and answer `x` (the `sleep` function of `libcrash.so`).
#[derive(Clone, Copy)]
enum SimModule {
    Noop { outputs: usize },
    Sleep { x: usize, ms: usize },
}

fn sim_module(d: &pnet_protocol::ModuleDef) -> SimModule {
    let pos = |n: &str| d.inputs.iter().position(|(p, _)| p == n);
    match (d.function.as_str(), pos("x"), pos("ms")) {
        ("sleep", Some(x), Some(ms)) => SimModule::Sleep { x, ms },
        _ => SimModule::Noop {
            outputs: d.outputs.len(),
        },
    }
}

async fn sim_worker(
    addr: &str,
    secret: Secret,
    name: &str,
    gate: &tokio::sync::Semaphore,
    frozen: &AtomicBool,
    stats: &SimStats,
) -> Result<(), String> {
    let (mut reader, mut writer, welcome) = {
        let _permit = gate.acquire().await.map_err(|e| e.to_string())?;
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        let _ = stream.set_nodelay(true);
        let (rd, wr) = stream.into_split();
        let mut reader = frame::reader(rd);
        let mut writer = frame::writer(wr);
        let hello = WorkerMsg::Hello(Hello {
            protocol: PROTOCOL_VERSION,
            secret,
            name: name.to_string(),
            host: "sim".into(),
            pid: std::process::id(),
            capabilities: Vec::new(),
            socket: None,
        });
        frame::send(&mut writer, &hello)
            .await
            .map_err(|e| e.to_string())?;
        let welcome = frame::recv::<_, AgentMsg>(&mut reader)
            .await
            .map_err(|e| e.to_string())?;
        (reader, writer, welcome)
    };
    let AgentMsg::Welcome { modules, .. } = welcome else {
        return Err(format!("no welcome: {welcome:?}"));
    };
    stats.joined.fetch_add(1, Ordering::Relaxed);
    let mut defs: HashMap<u32, SimModule> = modules.iter().map(|d| (d.id, sim_module(d))).collect();
    let mut queue: VecDeque<pnet_protocol::TaskRun> = VecDeque::new();
    // The task running (sleeping): its id, answer, end and start.
    let mut running: Option<(u64, Value, tokio::time::Instant, Instant)> = None;
    let mut heartbeat = tokio::time::interval(HEARTBEAT_INTERVAL);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_heard = Instant::now();
    let mut last_tick = Instant::now();
    let mut last_sent = Instant::now();
    let io = |e: std::io::Error| e.to_string();
    loop {
        if frozen.load(Ordering::Relaxed) {
            // Alive but silent: the socket stays open, nothing is read or written.
            std::future::pending::<()>().await;
        }
        let mut dirty = false;
        let end = running.as_ref().map(|r| r.2);
        tokio::select! {
            biased;
            _ = heartbeat.tick() => {
                let now = Instant::now();
                if now.duration_since(last_tick) > 3 * HEARTBEAT_INTERVAL {
                    last_heard = now;
                }
                last_tick = now;
                let silent = now.duration_since(last_heard);
                stats.max_silence_ms.fetch_max(silent.as_millis() as u64, Ordering::Relaxed);
                if silent > AGENT_SILENCE_TIMEOUT {
                    stats.complaints.fetch_add(1, Ordering::Relaxed);
                    return Err(format!("the agent {COMPLAINT} {} ms", silent.as_millis()));
                }
                // As gspc-worker: a result sent lately is a sign of life enough.
                if now.duration_since(last_sent) >= HEARTBEAT_INTERVAL / 2 {
                    let hb = WorkerMsg::Heartbeat { running: running.as_ref().map(|r| r.0) };
                    writer.send(encode(&hb)).await.map_err(io)?;
                    last_sent = Instant::now();
                }
            }
            _ = tokio::time::sleep_until(end.unwrap_or_else(tokio::time::Instant::now)), if end.is_some() => {
                if let Some((task, out, _, started)) = running.take() {
                    let times = TaskTimes { queued_us: 0, run_us: started.elapsed().as_micros() as u64 };
                    writer.feed(encode(&WorkerMsg::DoneAt { task, outputs: vec![out], times })).await.map_err(io)?;
                    stats.tasks.fetch_add(1, Ordering::Relaxed);
                    dirty = true;
                }
            }
            frame = reader.next() => {
                last_heard = Instant::now();
                let bytes = match frame {
                    None => return Ok(()),
                    Some(Err(e)) => return Err(e.to_string()),
                    Some(Ok(b)) => b,
                };
                let msg: AgentMsg = postcard::from_bytes(&bytes).map_err(|e| e.to_string())?;
                match msg {
                    AgentMsg::Run(tasks) => queue.extend(tasks),
                    AgentMsg::Cancel { task } => {
                        let queued = queue.iter().position(|t| t.task == task);
                        if let Some(k) = queued {
                            queue.remove(k);
                        } else if running.as_ref().is_some_and(|r| r.0 == task) {
                            running = None;
                        }
                        if queued.is_some() || running.is_none() {
                            writer.feed(encode(&WorkerMsg::Cancelled { task })).await.map_err(io)?;
                            dirty = true;
                        }
                    }
                    AgentMsg::Steal { tasks: asked } => {
                        let mut tasks = Vec::new();
                        queue.retain(|t| {
                            let take = asked.contains(&t.task);
                            if take {
                                tasks.push(t.task);
                            }
                            !take
                        });
                        let kept = asked.into_iter().filter(|t| !tasks.contains(t)).collect();
                        writer.feed(encode(&WorkerMsg::Returned { tasks, kept })).await.map_err(io)?;
                        dirty = true;
                    }
                    AgentMsg::Modules { modules } | AgentMsg::ModulesAt { modules, .. } => {
                        defs.extend(modules.iter().map(|d| (d.id, sim_module(d))));
                    }
                    AgentMsg::ForgetModules { ids } => {
                        for i in ids {
                            defs.remove(&i);
                        }
                    }
                    AgentMsg::Heartbeat => {}
                    AgentMsg::Shutdown => return Ok(()),
                    AgentMsg::Welcome { .. } | AgentMsg::Refused { .. } => {
                        return Err("a second handshake message".into());
                    }
                }
            }
        }
        // Start what can run: no-op tasks answer at once, a sleeping one holds the worker.
        while running.is_none()
            && let Some(t) = queue.pop_front()
        {
            match defs.get(&t.module).copied() {
                Some(SimModule::Sleep { x, ms }) => {
                    let ms = match t.inputs.get(ms) {
                        Some(Value::Long(v)) => (*v).max(0) as u64,
                        _ => 0,
                    };
                    let out = t.inputs.get(x).cloned().unwrap_or(Value::Control);
                    let end = tokio::time::Instant::now() + Duration::from_millis(ms);
                    running = Some((t.task, out, end, Instant::now()));
                }
                Some(SimModule::Noop { outputs }) => {
                    let times = TaskTimes::default();
                    let outputs = vec![Value::Control; outputs];
                    writer
                        .feed(encode(&WorkerMsg::DoneAt {
                            task: t.task,
                            outputs,
                            times,
                        }))
                        .await
                        .map_err(io)?;
                    stats.tasks.fetch_add(1, Ordering::Relaxed);
                    dirty = true;
                }
                None => {
                    let message = format!("unknown module {}", t.module);
                    writer
                        .feed(encode(&WorkerMsg::Failed {
                            task: t.task,
                            message,
                        }))
                        .await
                        .map_err(io)?;
                    dirty = true;
                }
            }
        }
        if dirty {
            SinkExt::<bytes::Bytes>::flush(&mut writer)
                .await
                .map_err(io)?;
            last_sent = Instant::now();
        }
    }
}
