//! Side-by-side CPU time of `gspc-run` binaries and JIT modes on one net (the JIT issue's
//! "countdown twice as fast with the JIT" figure): runs every (binary, mode) pair once per
//! round, rounds interleaved so that a noisy machine affects all alike, and prints the
//! minimum and median CPU time (user + system of the child, from `getrusage`) of each pair
//! and the `off`/`on` ratio of each binary.
//!
//! ```text
//! gspc-run-bench [--rounds N] [--modes off,on,auto] LABEL=BINARY... -- NET [ARGS...]
//! gspc-run-bench --rounds 9 before=/tmp/old/gspc-run after=target/release/gspc-run \
//!     -- examples/countdown/countdown.xpnet -p n=2000000L
//! ```

use std::process::{Command, ExitCode, Stdio};

const USAGE: &str =
    "Usage: gspc-run-bench [--rounds N] [--modes off,on,auto] LABEL=BINARY... -- NET [ARGS...]

Runs each gspc-run BINARY with --jit=MODE for every mode, once per round (rounds interleaved),
and prints the minimum and median CPU time (user + system) of each pair, and off/on ratios.
  --rounds N     rounds (default 7)
  --modes LIST   JIT modes, comma-separated (default off,on)
  -h, --help     print this help";

/// CPU time used by terminated, waited-for children so far, in seconds.
fn children_cpu() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass; it has no other effects.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: see above; RUSAGE_CHILDREN is a valid `who`.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("gspc-run-bench: error: {msg}\n\n{USAGE}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut rounds = 7usize;
    let mut modes = vec!["off".to_string(), "on".to_string()];
    let mut binaries: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "--rounds" => {
                i += 1;
                match args.get(i).and_then(|s| s.parse().ok()).filter(|&n| n > 0) {
                    Some(n) => rounds = n,
                    None => return fail("--rounds needs a positive number"),
                }
            }
            "--modes" => {
                i += 1;
                let Some(list) = args.get(i) else {
                    return fail("--modes needs a list");
                };
                modes = list.split(',').map(str::to_string).collect();
                if let Some(m) = modes
                    .iter()
                    .find(|m| !["off", "on", "auto"].contains(&m.as_str()))
                {
                    return fail(&format!("unknown JIT mode `{m}` (off, on or auto)"));
                }
            }
            "--" => break,
            a => match a.split_once('=') {
                Some((label, bin)) if !label.is_empty() && !bin.is_empty() => {
                    binaries.push((label.to_string(), bin.to_string()));
                }
                _ => return fail(&format!("expected LABEL=BINARY or --, found `{a}`")),
            },
        }
        i += 1;
    }
    let net_args = args.get(i + 1..).unwrap_or_default();
    if binaries.is_empty() || net_args.is_empty() {
        return fail("give at least one LABEL=BINARY and, after --, the net and its arguments");
    }
    let mut times = vec![vec![Vec::new(); modes.len()]; binaries.len()];
    for round in 0..rounds {
        eprint!("\rgspc-run-bench: round {} of {rounds}", round + 1);
        for (b, (label, bin)) in binaries.iter().enumerate() {
            for (m, mode) in modes.iter().enumerate() {
                let before = children_cpu();
                let status = Command::new(bin)
                    .args(net_args)
                    .arg(format!("--jit={mode}"))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                match status {
                    Ok(s) if s.success() => times[b][m].push(children_cpu() - before),
                    Ok(s) => {
                        eprintln!();
                        return fail(&format!("{label} ({bin}) --jit={mode} failed: {s}"));
                    }
                    Err(e) => {
                        eprintln!();
                        return fail(&format!("cannot run {bin}: {e}"));
                    }
                }
            }
        }
    }
    eprintln!();
    for (b, (label, _)) in binaries.iter().enumerate() {
        for (m, mode) in modes.iter().enumerate() {
            let v = &times[b][m];
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            println!(
                "{label:12} --jit={mode:4}  min {:8.1} ms  median {:8.1} ms",
                min * 1e3,
                median(v) * 1e3
            );
        }
        let at = |name: &str| modes.iter().position(|m| m == name);
        if let (Some(off), Some(on)) = (at("off"), at("on")) {
            let (a, o) = (&times[b][off], &times[b][on]);
            let min = |v: &Vec<f64>| v.iter().copied().fold(f64::INFINITY, f64::min);
            println!(
                "{label:12} off / on: {:.2}x by minimum, {:.2}x by median",
                min(a) / min(o),
                median(a) / median(o)
            );
        }
    }
    ExitCode::SUCCESS
}
