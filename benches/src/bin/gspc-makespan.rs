//! `gspc-makespan`: makespans of uneven sets of sleeping tasks on 4 workers, side by side for
//! `gspc-run`, a `gspc` runtime and Dask, against the best possible schedule (issue 18).
//!
//! Task sets (milliseconds of sleep per task; every task is one call of the command module
//! `sleep_ms`, `net/sleep_ms`, through `net/sleep.xpnet`):
//! - `a`: 4 x 600 + 12 x 200 (the 600s first), best 1.2 s;
//! - `b`: 30 x 50 + 2 x 1000, the two long ones last (a naive scheduler queues them behind
//!   short ones), best 1.0 s;
//! - `c`: 8 x 300 at t = 0, 8 x 300 more at t = 400 ms (tasks arriving while others run),
//!   best 1.2 s.
//!
//! Systems, each round in turn (the order rotates from round to round):
//! - `gspc-run NET --topology worker:4`: one process per run. `whole` = the process from
//!   start to exit; `makespan` = first task dispatched to last result, from its `--trace`.
//!   Set `c` runs `net/sleep_put.xpnet` with `--control SOCKET`: once the four workers have
//!   joined (the job's status says so), the bench puts the first wave's tokens on the
//!   put_token place `ms`, the second wave 400 ms later, then closes the job.
//! - a `gspc` runtime booted once with `--topology worker:4`: `makespan` = submit to the
//!   answer of wait (through the control socket, in-process); set `c` puts the second wave
//!   into the running job (put-token, then close). Separately, `gspc (cold)`: `gspc boot` +
//!   `gspc submit` + `gspc wait` as commands, a new runtime each time (its `whole`).
//! - Dask: `LocalCluster(n_workers=4, threads_per_worker=1, processes=True)` started once;
//!   `makespan` = first `client.submit` of a function that sleeps to the last result.
//!   Separately, `dask (cold)`: a new cluster each time, start-up plus the run.
//!
//! The best schedule: the lower bound max(release + work released from then on / 4, the
//! longest task) against a list schedule (longest released task to the first free worker);
//! when they differ, a branch and bound over all assignments (single-wave sets).
//!
//! Usage: gspc-makespan [--rounds N] [--sets a,b,c] [--no-dask] [--python PY]
//!                      [--keep-traces DIR]
//! Needs `gspc-run`, `gspc` and `gspc-worker` in this program's folder
//! (`cargo build --release -p gspc-run -p pnet-worker -p pnet-gspc -p pnet-benches`)
//! and, for Dask, a Python with `dask[distributed]` (default /tmp/pnet-dask-venv/bin/python).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use pnet_agent::control::{self, JobOutcome, RtClient, RtRequest, RtResponse};
use pnet_stdlib::Value;

const WORKERS: usize = 4;

const USAGE: &str = "\
gspc-makespan: makespans of uneven sleeping task sets on 4 workers (gspc-run, gspc, Dask)

Usage: gspc-makespan [OPTIONS]

  --rounds N          interleaved rounds (default 5)
  --sets LIST         task sets among a,b,c (default a,b,c)
  --cold-sets LIST    sets also run on a fresh gspc runtime and a fresh Dask cluster each
                      round (default a)
  --no-dask           leave Dask out
  --python PY         the Python with dask[distributed] (default $DASK_PYTHON, else
                      /tmp/pnet-dask-venv/bin/python)
  --keep-traces DIR   keep gspc-run's trace of each set's first round in DIR
  -h, --help          print this help
";

/// A task set: waves of tasks (release time in ms, durations in ms).
struct TaskSet {
    key: &'static str,
    label: &'static str,
    waves: Vec<(u64, Vec<u64>)>,
}

fn task_sets() -> Vec<TaskSet> {
    let rep = |n: usize, ms: u64| std::iter::repeat_n(ms, n);
    vec![
        TaskSet {
            key: "a",
            label: "(a) 4 x 600 ms + 12 x 200 ms",
            waves: vec![(0, rep(4, 600).chain(rep(12, 200)).collect())],
        },
        TaskSet {
            key: "b",
            label: "(b) 30 x 50 ms, then 2 x 1000 ms (long ones last)",
            waves: vec![(0, rep(30, 50).chain(rep(2, 1000)).collect())],
        },
        TaskSet {
            key: "c",
            label: "(c) 8 x 300 ms at t=0, 8 x 300 ms more at t=400 ms",
            waves: vec![(0, rep(8, 300).collect()), (400, rep(8, 300).collect())],
        },
    ]
}

impl TaskSet {
    fn all(&self) -> impl Iterator<Item = u64> + '_ {
        self.waves.iter().flat_map(|(_, t)| t.iter().copied())
    }
    fn count(&self) -> usize {
        self.all().count()
    }
    fn sum(&self) -> u64 {
        self.all().sum()
    }
}

// ---------------------------------------------------------------------------------------------
// The best schedule

/// The optimal makespan in ms on `m` identical workers and whether it is exact (else it is
/// the list schedule's, with the lower bound below it).
fn best(waves: &[(u64, Vec<u64>)], m: usize) -> (u64, bool, u64) {
    // Lower bound: from any release time r on, the work released at or after r needs at
    // least r + work / m; and no task ends before its release plus its length.
    let mut lb = 0u64;
    for (r, _) in waves {
        let work: u64 = waves
            .iter()
            .filter(|(r2, _)| r2 >= r)
            .flat_map(|(_, t)| t.iter())
            .sum();
        lb = lb.max(r + work.div_ceil(m as u64));
        for (r2, t) in waves {
            for &p in t {
                lb = lb.max(r2 + p);
            }
        }
    }
    // List schedule: at each point, the longest released task to the first free worker.
    let mut free = vec![0u64; m];
    let mut pending: Vec<(u64, u64)> = waves
        .iter()
        .flat_map(|(r, t)| t.iter().map(move |&p| (*r, p)))
        .collect();
    while !pending.is_empty() {
        let (w, &t) = free.iter().enumerate().min_by_key(|(_, f)| **f).unwrap();
        let earliest = pending.iter().map(|(r, _)| *r).min().unwrap();
        let now = t.max(earliest);
        let i = (0..pending.len())
            .filter(|&i| pending[i].0 <= now)
            .max_by_key(|&i| pending[i].1)
            .unwrap();
        let (_, p) = pending.swap_remove(i);
        free[w] = now + p;
    }
    let ub = *free.iter().max().unwrap();
    if ub == lb {
        return (ub, true, lb);
    }
    if waves.len() == 1 {
        let mut t = waves[0].1.clone();
        t.sort_unstable_by(|a, b| b.cmp(a));
        let mut best = ub;
        let mut loads = vec![0u64; m];
        branch(&t, 0, &mut loads, &mut best, lb);
        return (best, true, lb);
    }
    (ub, false, lb)
}

/// The list schedule in submission order: each task, as it comes, to the worker free first
/// (what a scheduler that does not know the durations and never reorders can do at best).
fn in_order(waves: &[(u64, Vec<u64>)], m: usize) -> u64 {
    let mut free = vec![0u64; m];
    for (r, tasks) in waves {
        for &p in tasks {
            let w = (0..m).min_by_key(|&w| free[w]).unwrap();
            free[w] = free[w].max(*r) + p;
        }
    }
    *free.iter().max().unwrap()
}

fn branch(t: &[u64], i: usize, loads: &mut [u64], best: &mut u64, lb: u64) {
    if *best == lb {
        return;
    }
    if i == t.len() {
        *best = (*best).min(*loads.iter().max().unwrap());
        return;
    }
    for w in 0..loads.len() {
        // Workers with equal loads are interchangeable: try one of them.
        if loads[..w].contains(&loads[w]) || loads[w] + t[i] >= *best {
            continue;
        }
        loads[w] += t[i];
        branch(t, i + 1, loads, best, lb);
        loads[w] -= t[i];
    }
}

// ---------------------------------------------------------------------------------------------
// Samples

#[derive(Clone, Debug, Default)]
struct Sample {
    /// Seconds from the first task submitted to the last result.
    makespan: f64,
    /// Seconds including start-up (the whole process, or boot / cluster start plus the run).
    whole: Option<f64>,
    /// Milliseconds of work (task durations) per worker that ran any, largest first.
    per_worker: Vec<u64>,
    /// gspc-run: the worker lanes with tasks in its trace.
    lanes: Option<usize>,
}

/// Checks that every task answered once (the results `MS@WORKER`, as the module `sleep_ms`
/// returns them) and sums the work of each worker.
fn check_outputs(set: &TaskSet, done: &[String]) -> Result<Vec<u64>, String> {
    let mut got = Vec::new();
    let mut per: BTreeMap<&str, u64> = BTreeMap::new();
    for d in done {
        let (ms, worker) = d
            .split_once('@')
            .ok_or_else(|| format!("set {}: result {d:?} is not MS@WORKER", set.key))?;
        let ms: u64 = ms
            .parse()
            .map_err(|_| format!("set {}: result {d:?} is not MS@WORKER", set.key))?;
        got.push(ms);
        *per.entry(worker).or_insert(0) += ms;
    }
    let mut want: Vec<u64> = set.all().collect();
    got.sort_unstable();
    want.sort_unstable();
    if got != want {
        return Err(format!(
            "set {}: {} results {:?}, expected {:?}",
            set.key,
            got.len(),
            got,
            want
        ));
    }
    let mut v: Vec<u64> = per.into_values().collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    Ok(v)
}

/// The `done = "MS@WORKER"` lines that `gspc-run` and `gspc wait` print.
fn printed_results(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("done = "))
        .map(|v| v.trim().trim_matches('"').to_string())
        .collect()
}

struct Ctx {
    bin: PathBuf,
    net_dir: PathBuf,
    tmp: PathBuf,
    keep_traces: Option<PathBuf>,
}

fn private_dir(p: &Path) -> Result<(), String> {
    std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// gspc-run's trace: seconds from the first dispatch to the last result of the tasks that
/// ended `done`, and the tasks per worker lane.
fn trace_stats(path: &Path) -> Result<(f64, BTreeMap<String, usize>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let events = v["traceEvents"].as_array().ok_or("no traceEvents")?;
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut lanes = BTreeMap::new();
    for e in events {
        if e["ph"] == "X" && e["cat"] == "task" && e["args"]["outcome"] == "done" {
            let ts = e["ts"].as_f64().unwrap_or(0.0);
            let dur = e["dur"].as_f64().unwrap_or(0.0);
            lo = lo.min(ts);
            hi = hi.max(ts + dur);
            *lanes.entry(e["tid"].to_string()).or_insert(0) += 1;
        }
    }
    if lanes.is_empty() {
        return Err(format!("{}: no task in the trace", path.display()));
    }
    Ok(((hi - lo) / 1e6, lanes))
}

// ---------------------------------------------------------------------------------------------
// gspc-run

fn gspc_run(ctx: &Ctx, set: &TaskSet, round: usize) -> Result<Sample, String> {
    let trace = ctx.tmp.join(format!("trace-{}-{round}.json", set.key));
    let mut cmd = Command::new(ctx.bin.join("gspc-run"));
    let waves = set.waves.len() > 1;
    let net = if waves {
        "sleep_put.xpnet"
    } else {
        "sleep.xpnet"
    };
    cmd.arg(ctx.net_dir.join(net))
        .arg("--module-path")
        .arg(&ctx.net_dir)
        .args(["--topology", "worker:4", "--no-progress", "--trace"])
        .arg(&trace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let socket = ctx.tmp.join("ctl").join("job.sock");
    if waves {
        cmd.arg("--control").arg(&socket);
    } else {
        for ms in set.all() {
            cmd.arg("-p").arg(format!("ms={ms}L"));
        }
    }
    let t = Instant::now();
    let child = cmd.spawn().map_err(|e| format!("gspc-run: {e}"))?;
    if waves && let Err(e) = feed_waves(&socket, set) {
        let _ = control::cancel(&socket);
        let _ = child.wait_with_output();
        return Err(e);
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("gspc-run: {e}"))?;
    let whole = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "gspc-run failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let per_worker = check_outputs(set, &printed_results(&out.stdout))?;
    let (makespan, lanes) = trace_stats(&trace)?;
    if round == 0
        && let Some(dir) = &ctx.keep_traces
    {
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::copy(&trace, dir.join(format!("gspc-run-{}.json", set.key)));
    }
    let _ = std::fs::remove_file(&trace);
    Ok(Sample {
        makespan,
        whole: Some(whole),
        per_worker,
        lanes: Some(lanes.len()),
    })
}

/// Waits until the job behind `socket` has its four workers, then puts each wave's tokens
/// on `ms` at its time after the first, then closes the job.
fn feed_waves(socket: &Path, set: &TaskSet) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if socket.exists()
            && let Ok(s) = control::status(socket)
            && s.workers.len() >= WORKERS
        {
            break;
        }
        if Instant::now() > deadline {
            return Err("gspc-run: the four workers did not join within 60 s".into());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let t0 = Instant::now();
    for (at, tasks) in &set.waves {
        sleep_until(t0 + Duration::from_millis(*at));
        for &ms in tasks {
            control::put_token(socket, "ms", &Value::Long(ms as i64))?;
        }
    }
    control::close(socket)
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

// ---------------------------------------------------------------------------------------------
// gspc

struct Runtime {
    gspc: PathBuf,
    dir: PathBuf,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let _ = Command::new(&self.gspc)
            .arg("stop")
            .env("GSPC_STATE_DIR", &self.dir)
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn boot(ctx: &Ctx, dir: &Path) -> Result<Runtime, String> {
    private_dir(dir)?;
    let gspc = ctx.bin.join("gspc");
    let out = Command::new(&gspc)
        .args(["boot", "--topology", "worker:4", "--module-path"])
        .arg(&ctx.net_dir)
        .env("GSPC_STATE_DIR", dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", gspc.display()))?;
    let rt = Runtime {
        gspc,
        dir: dir.to_path_buf(),
    };
    if !out.status.success() {
        return Err(format!(
            "gspc boot failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(rt)
}

struct Warm {
    _rt: Runtime,
    client: RtClient,
    bundle: Vec<u8>,
    bundle_put: Vec<u8>,
}

fn encode(path: &Path) -> Result<Vec<u8>, String> {
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (bundle, _) = pnetc::load_net(
        path,
        &text,
        &pnet_sema::Options::default(),
        pnetc::ColorMode::Never,
    )?;
    pnet_bundle::format::encode(&bundle).map_err(|e| e.to_string())
}

fn gspc_warm(w: &Warm, set: &TaskSet) -> Result<Sample, String> {
    let waves = set.waves.len() > 1;
    let first: Vec<Value> = set.waves[0]
        .1
        .iter()
        .map(|&ms| Value::Long(ms as i64))
        .collect();
    let t0 = Instant::now();
    let job = match w
        .client
        .call(
            RtRequest::Submit {
                net: if waves {
                    "sleep_put.xpnet"
                } else {
                    "sleep.xpnet"
                }
                .into(),
                bundle: if waves { &w.bundle_put } else { &w.bundle }.clone(),
                inputs: vec![("ms".into(), first)],
            },
            Some(Duration::from_secs(30)),
        )
        .map_err(|e| e.to_string())?
    {
        RtResponse::Submitted { job } => job,
        r => return Err(format!("submit: unexpected answer {r:?}")),
    };
    if waves {
        for (at, tasks) in &set.waves[1..] {
            sleep_until(t0 + Duration::from_millis(*at));
            for &ms in tasks {
                let r = w
                    .client
                    .call(
                        RtRequest::PutToken {
                            job,
                            place: "ms".into(),
                            value: Value::Long(ms as i64),
                        },
                        Some(Duration::from_secs(10)),
                    )
                    .map_err(|e| e.to_string())?;
                if !matches!(r, RtResponse::Job(control::Response::Ok) | RtResponse::Ok) {
                    return Err(format!("put-token: unexpected answer {r:?}"));
                }
            }
        }
        w.client
            .call(RtRequest::Close { job }, Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
    }
    let outcome = w
        .client
        .call(RtRequest::Wait { job }, None)
        .map_err(|e| e.to_string())?;
    let makespan = t0.elapsed().as_secs_f64();
    let done = match outcome {
        RtResponse::Outcome {
            outcome: JobOutcome::Done { outputs, .. },
            ..
        } => strings(&outputs),
        r => return Err(format!("job {job}: unexpected outcome {r:?}")),
    };
    Ok(Sample {
        makespan,
        whole: None,
        per_worker: check_outputs(set, &done)?,
        lanes: None,
    })
}

fn strings(outputs: &[(String, Vec<Value>)]) -> Vec<String> {
    outputs
        .iter()
        .filter(|(p, _)| p == "done")
        .flat_map(|(_, v)| v.iter())
        .filter_map(|v| match v {
            Value::String(s) => Some(s.to_string()),
            _ => None,
        })
        .collect()
}

/// A new runtime: `gspc boot`, `gspc submit`, `gspc wait` as a user types them. Returns
/// the sample (whole = the three commands) and the boot's seconds.
fn gspc_cold(ctx: &Ctx, set: &TaskSet, round: usize) -> Result<(Sample, f64), String> {
    let dir = ctx.tmp.join(format!("cold-{round}-{}", set.key));
    let t = Instant::now();
    let rt = boot(ctx, &dir)?;
    let booted = t.elapsed().as_secs_f64();
    let mut submit = Command::new(&rt.gspc);
    submit
        .arg("submit")
        .arg(ctx.net_dir.join("sleep.xpnet"))
        .env("GSPC_STATE_DIR", &dir);
    for ms in set.all() {
        submit.arg("-p").arg(format!("ms={ms}L"));
    }
    let out = submit.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "gspc submit failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let job = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let out = Command::new(&rt.gspc)
        .args(["wait", &job])
        .env("GSPC_STATE_DIR", &dir)
        .output()
        .map_err(|e| e.to_string())?;
    let whole = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "gspc wait failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let per_worker = check_outputs(set, &printed_results(&out.stdout))?;
    drop(rt);
    Ok((
        Sample {
            makespan: whole - booted,
            whole: Some(whole),
            per_worker,
            lanes: None,
        },
        booted,
    ))
}

// ---------------------------------------------------------------------------------------------
// Dask

struct Dask {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    versions: serde_json::Value,
}

impl Dask {
    fn start(python: &Path, script: &Path) -> Result<Dask, String> {
        let mut child = Command::new(python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut d = Dask {
            child,
            stdin,
            stdout,
            versions: serde_json::Value::Null,
        };
        d.versions = d.read()?;
        Ok(d)
    }

    fn read(&mut self) -> Result<serde_json::Value, String> {
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        if line.is_empty() {
            return Err("the Dask script ended (is dask[distributed] installed?)".into());
        }
        serde_json::from_str(&line).map_err(|e| format!("dask: {e}: {line}"))
    }

    fn call(&mut self, req: serde_json::Value) -> Result<serde_json::Value, String> {
        writeln!(self.stdin, "{req}").map_err(|e| e.to_string())?;
        self.stdin.flush().map_err(|e| e.to_string())?;
        let r = self.read()?;
        if let Some(e) = r.get("error") {
            return Err(format!("dask: {e}"));
        }
        Ok(r)
    }

    fn sample(set: &TaskSet, r: &serde_json::Value) -> Result<Sample, String> {
        let results: Vec<String> = r["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(String::from))
            .collect();
        let makespan = r["makespan_s"].as_f64().unwrap_or(f64::NAN);
        Ok(Sample {
            makespan,
            whole: r["startup_s"].as_f64().map(|s| s + makespan),
            per_worker: check_outputs(set, &results)?,
            lanes: None,
        })
    }
}

impl Drop for Dask {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", serde_json::json!({"cmd": "stop"}));
        let _ = self.stdin.flush();
        let _ = self.read();
        let _ = self.child.wait();
    }
}

fn waves_json(set: &TaskSet) -> serde_json::Value {
    serde_json::json!(set.waves)
}

// ---------------------------------------------------------------------------------------------

fn stats(v: &[f64]) -> (f64, f64) {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let med = if s.len() % 2 == 1 {
        s[s.len() / 2]
    } else {
        (s[s.len() / 2 - 1] + s[s.len() / 2]) / 2.0
    };
    (s[0], med)
}

struct Opts {
    rounds: usize,
    sets: Vec<String>,
    cold_sets: Vec<String>,
    dask: bool,
    python: PathBuf,
    keep_traces: Option<PathBuf>,
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut o = Opts {
        rounds: 5,
        sets: vec!["a".into(), "b".into(), "c".into()],
        cold_sets: vec!["a".into()],
        dask: true,
        python: std::env::var_os("DASK_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp/pnet-dask-venv/bin/python")),
        keep_traces: None,
    };
    let mut i = 0;
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    while i < argv.len() {
        let val = argv.get(i + 1).cloned();
        let need = |v: Option<String>, what: &str| v.ok_or(format!("{what} needs a value"));
        let r: Result<bool, String> = match argv[i].as_str() {
            "-h" | "--help" => {
                pnet_stdlib::out!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "--rounds" => need(val, "--rounds").and_then(|v| {
                o.rounds = v.parse().map_err(|_| "--rounds needs a number")?;
                Ok(true)
            }),
            "--sets" => need(val, "--sets").map(|v| {
                o.sets = list(&v);
                true
            }),
            "--cold-sets" => need(val, "--cold-sets").map(|v| {
                o.cold_sets = list(&v);
                true
            }),
            "--python" => need(val, "--python").map(|v| {
                o.python = v.into();
                true
            }),
            "--keep-traces" => need(val, "--keep-traces").map(|v| {
                o.keep_traces = Some(v.into());
                true
            }),
            "--no-dask" => {
                o.dask = false;
                Ok(false)
            }
            other => Err(format!("unexpected argument '{other}'")),
        };
        match r {
            Ok(took_value) => i += 1 + usize::from(took_value),
            Err(m) => {
                eprintln!("gspc-makespan: {m}\nTry 'gspc-makespan --help' for more information.");
                return ExitCode::from(2);
            }
        }
    }
    match bench(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gspc-makespan: {e}");
            ExitCode::from(1)
        }
    }
}

#[derive(Default)]
struct Col {
    samples: Vec<Sample>,
    errors: usize,
}

fn bench(o: &Opts) -> Result<(), String> {
    let bin = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .parent()
        .map(Path::to_path_buf)
        .ok_or("no folder")?;
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("makespan");
    let tmp = std::env::temp_dir().join(format!("gspc-makespan-{}", std::process::id()));
    private_dir(&tmp)?;
    private_dir(&tmp.join("ctl"))?;
    let ctx = Ctx {
        bin,
        net_dir: here.join("net"),
        tmp: tmp.clone(),
        keep_traces: o.keep_traces.clone(),
    };
    let result = run_all(&ctx, o, &here);
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

fn run_all(ctx: &Ctx, o: &Opts, here: &Path) -> Result<(), String> {
    let sets: Vec<TaskSet> = task_sets()
        .into_iter()
        .filter(|s| o.sets.iter().any(|k| k == s.key))
        .collect();
    let t = Instant::now();
    let rt = boot(ctx, &ctx.tmp.join("warm"))?;
    let boot_s = t.elapsed().as_secs_f64();
    let warm = Warm {
        client: RtClient::open(&rt.dir).map_err(|e| e.to_string())?,
        _rt: rt,
        bundle: encode(&ctx.net_dir.join("sleep.xpnet"))?,
        bundle_put: encode(&ctx.net_dir.join("sleep_put.xpnet"))?,
    };
    let mut dask = if o.dask {
        let mut d = Dask::start(&o.python, &here.join("dask_makespan.py"))?;
        let r = d.call(serde_json::json!({"cmd": "start", "workers": WORKERS}))?;
        eprintln!(
            "dask {} (distributed {}, Python {}): import {:.2} s, cluster start-up {:.2} s",
            d.versions["dask"],
            d.versions["distributed"],
            d.versions["python"],
            d.versions["import_s"].as_f64().unwrap_or(f64::NAN),
            r["startup_s"].as_f64().unwrap_or(f64::NAN)
        );
        Some(d)
    } else {
        None
    };
    eprintln!("gspc boot (worker:4): {boot_s:.2} s");
    // Warm-up: one run of each system, not counted.
    let warm_set = &task_sets()[1];
    let _ = gspc_run(ctx, warm_set, usize::MAX);
    let _ = gspc_warm(&warm, warm_set);
    if let Some(d) = dask.as_mut() {
        let _ = d.call(serde_json::json!({"cmd": "run", "waves": waves_json(warm_set)}));
    }

    let tools = ["gspc-run", "gspc", "dask", "gspc (cold)", "dask (cold)"];
    let mut cols: BTreeMap<(String, &str), Col> = BTreeMap::new();
    let mut boots = Vec::new();
    let mut dask_starts = Vec::new();
    for round in 0..o.rounds {
        for (si, set) in sets.iter().enumerate() {
            let cold = o.cold_sets.iter().any(|k| k == set.key);
            let mut order: Vec<&str> = tools
                .iter()
                .copied()
                .filter(|t| {
                    (dask.is_some() || !t.starts_with("dask")) && (cold || !t.ends_with("(cold)"))
                })
                .collect();
            let n = order.len();
            order.rotate_left((round + si) % n);
            for tool in order {
                let r: Result<Sample, String> = match tool {
                    "gspc-run" => gspc_run(ctx, set, round),
                    "gspc" => gspc_warm(&warm, set),
                    "gspc (cold)" => gspc_cold(ctx, set, round).map(|(s, b)| {
                        boots.push(b);
                        s
                    }),
                    "dask" => dask
                        .as_mut()
                        .unwrap()
                        .call(serde_json::json!({"cmd": "run", "waves": waves_json(set)}))
                        .and_then(|r| Dask::sample(set, &r)),
                    _ => dask
                        .as_mut()
                        .unwrap()
                        .call(serde_json::json!({"cmd": "cold", "workers": WORKERS,
                                                 "waves": waves_json(set)}))
                        .and_then(|r| {
                            dask_starts.push(r["startup_s"].as_f64().unwrap_or(f64::NAN));
                            Dask::sample(set, &r)
                        }),
                };
                let col = cols.entry((set.key.to_string(), tool)).or_default();
                match r {
                    Ok(s) => {
                        eprintln!(
                            "round {round} set {} {tool:<12} makespan {:.3} s{} ms per worker {:?}",
                            set.key,
                            s.makespan,
                            s.whole
                                .map(|w| format!(" whole {w:.3} s"))
                                .unwrap_or_default(),
                            s.per_worker
                        );
                        col.samples.push(s);
                    }
                    Err(e) => {
                        eprintln!("round {round} set {} {tool}: error: {e}", set.key);
                        col.errors += 1;
                    }
                }
            }
        }
    }

    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    pnet_stdlib::outln!(
        "gspc-makespan: {} rounds, {WORKERS} workers, {} cores, load average {}",
        o.rounds,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    if let Some(d) = &dask {
        pnet_stdlib::outln!(
            "dask {} (distributed {}, Python {})",
            d.versions["dask"],
            d.versions["distributed"],
            d.versions["python"]
        );
    }
    let (bmin, bmed) = stats(&boots);
    pnet_stdlib::outln!(
        "start-up: gspc boot worker:4 {boot_s:.3} s (cold runs: min {bmin:.3}, median {bmed:.3} s)"
    );
    if dask.is_some() {
        let (dmin, dmed) = stats(&dask_starts);
        pnet_stdlib::outln!(
            "start-up: Dask LocalCluster(4 processes) min {dmin:.3}, median {dmed:.3} s \
             (not counting Python's import of dask.distributed)"
        );
    }
    for set in &sets {
        let (b, exact, lb) = best(&set.waves, WORKERS);
        let bs = b as f64 / 1000.0;
        pnet_stdlib::outln!();
        pnet_stdlib::outln!(
            "{}: {} tasks, {} ms of work; best schedule {:.3} s{}; in submission order, \
             without knowing the durations (list schedule): {:.3} s",
            set.label,
            set.count(),
            set.sum(),
            bs,
            if exact {
                String::new()
            } else {
                format!(" (list schedule; lower bound {:.3} s)", lb as f64 / 1000.0)
            },
            in_order(&set.waves, WORKERS) as f64 / 1000.0
        );
        pnet_stdlib::outln!();
        pnet_stdlib::outln!(
            "| system | makespan min | median | efficiency (best/median) | with start-up min | median | efficiency | ms of work per worker (runs) |"
        );
        pnet_stdlib::outln!("|---|---|---|---|---|---|---|---|");
        for tool in tools {
            let Some(col) = cols.get(&(set.key.to_string(), tool)) else {
                continue;
            };
            let ms: Vec<f64> = col.samples.iter().map(|s| s.makespan).collect();
            let ws: Vec<f64> = col.samples.iter().filter_map(|s| s.whole).collect();
            let (mmin, mmed) = stats(&ms);
            let (wmin, wmed) = stats(&ws);
            let f = |x: f64| {
                if x.is_finite() {
                    format!("{x:.3} s")
                } else {
                    "-".into()
                }
            };
            let e = |x: f64| {
                if x.is_finite() {
                    format!("{:.0}%", 100.0 * bs / x)
                } else {
                    "-".into()
                }
            };
            // Work per worker (ms, largest first) and how many runs had it.
            let mut dists: BTreeMap<String, usize> = BTreeMap::new();
            for smp in &col.samples {
                let key = smp
                    .per_worker
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join("/");
                *dists.entry(key).or_insert(0) += 1;
            }
            let mut dists: Vec<(String, usize)> = dists.into_iter().collect();
            dists.sort_by_key(|b| std::cmp::Reverse(b.1));
            let mut d = dists
                .iter()
                .map(|(k, n)| format!("{k} ({n}x)"))
                .collect::<Vec<_>>()
                .join(", ");
            let lanes: Vec<usize> = col.samples.iter().filter_map(|s| s.lanes).collect();
            if let (Some(lo), Some(hi)) = (lanes.iter().min(), lanes.iter().max()) {
                d.push_str(&if lo == hi {
                    format!("; {lo} lanes in the trace")
                } else {
                    format!("; {lo}-{hi} lanes in the trace")
                });
            }
            if col.errors > 0 {
                d.push_str(&format!(" ({} runs failed)", col.errors));
            }
            let (mmin, mmed, meff) = if tool.ends_with("(cold)") {
                ("-".to_string(), "-".to_string(), "-".to_string())
            } else {
                (f(mmin), f(mmed), e(mmed))
            };
            pnet_stdlib::outln!(
                "| {tool} | {mmin} | {mmed} | {meff} | {} | {} | {} | {d} |",
                f(wmin),
                f(wmed),
                e(wmed)
            );
        }
    }
    drop(dask);
    drop(warm);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_schedules() {
        let sets = task_sets();
        assert_eq!(best(&sets[0].waves, 4), (1200, true, 1200));
        assert_eq!(best(&sets[1].waves, 4), (1000, true, 1000));
        assert_eq!(best(&sets[2].waves, 4), (1200, true, 1200));
        // LPT is not optimal here (3+3 / 2+2+2 on 2 workers: LPT gives 7, best 6).
        assert_eq!(best(&[(0, vec![3, 3, 2, 2, 2])], 2).0, 6);
        assert_eq!(best(&[(0, vec![7])], 4), (7, true, 7));
        assert_eq!(in_order(&sets[0].waves, 4), 1200);
        assert_eq!(in_order(&sets[1].waves, 4), 1350);
        assert_eq!(in_order(&sets[2].waves, 4), 1200);
    }
}
