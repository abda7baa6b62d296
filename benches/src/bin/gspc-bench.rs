//! `gspc-bench`: boots a runtime (the `gspc` next to this program), then measures
//! (1) the submit-to-result latency of a one-transition net (one native no-op module call:
//! submit, wait, result), median and 99th percentile, and (2) the rate at which small
//! workflows are submitted and completed (many submissions in a row, then all waited for).
//!
//! Usage: gspc-bench [--jobs N] [--latency-runs N] [--workers N]
//! Needs `gspc`, `gspc-worker` and `libnoop.so` in this program's folder
//! (`cargo build --release -p pnet-benches -p pnet-gspc -p pnet-worker -p pnet-example-noop`).

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

  --latency-runs N  one-transition jobs submitted and waited for one at a time (default 300)
  --jobs N          jobs submitted in a row for the rate (default 2000)
  --workers N       workers to boot (default 2)
  -h, --help        print this help
";

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
            other => return usage(&format!("unexpected argument '{other}'")),
        }
        i += 1;
    }
    match bench(jobs, runs, workers) {
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
