//! Launches a command through a launcher and reports how it ended and what it printed.
//!
//! `cargo run -p pnet-launch --example launch_demo -- --launcher slurm|ssh|local --host H -- PROGRAM ARGS`

use pnet_launch::{Launched, Launcher, WorkerCommand, describe, launch, stop_all};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const HELP: &str = "\
launch_demo: start a command through a pnet launcher and report its output

USAGE:
    launch_demo [OPTIONS] -- PROGRAM [ARGS...]

OPTIONS:
    --launcher NAME     local, ssh or slurm (default: local)
    --host HOST         target host (ssh: required; slurm: --nodelist, optional)
    --count N           start N copies, named w0, w1, ... (default: 1)
    --env K=V           set an environment variable for the command (repeatable)
    --stdin TEXT        write TEXT and a newline to the command's stdin
    --ssh-arg ARG       extra ssh option, e.g. --ssh-arg=-p --ssh-arg=2222 (repeatable)
    --slurm-arg ARG     extra srun option, e.g. --slurm-arg=--cpus-per-task=2 (repeatable)
    --timeout SECS      stop the commands after SECS seconds (default: 60)
    -h, --help          print this help

Every copy also gets PNET_WORKER_NAME and PNET_WORKER_INDEX in its environment. Its stdin is
closed after TEXT was written (the launcher contract: EOF on stdin means exit). The exit code
is 0 when every copy exited with status 0.
";

struct Options {
    launcher: Launcher,
    host: String,
    count: usize,
    env: Vec<(String, String)>,
    stdin: Option<String>,
    timeout: Duration,
    program: PathBuf,
    args: Vec<String>,
}

fn parse_args(args: Vec<String>) -> Result<Option<Options>, String> {
    let mut launcher = Launcher::Local;
    let mut host = String::new();
    let mut count = 1usize;
    let mut env = Vec::new();
    let mut stdin = None;
    let mut timeout = Duration::from_secs(60);
    let mut ssh_args = Vec::new();
    let mut slurm_args = Vec::new();
    let mut it = args.into_iter();
    let mut command = Vec::new();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it
                    .next()
                    .ok_or_else(|| format!("{name} needs a value (see --help)")),
            }
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--launcher" => launcher = Launcher::parse(&value("--launcher")?)?,
            "--host" => host = value("--host")?,
            "--count" => {
                let v = value("--count")?;
                count = v
                    .parse()
                    .map_err(|_| format!("--count: `{v}` is not a number"))?;
            }
            "--env" => {
                let v = value("--env")?;
                let (k, val) = v
                    .split_once('=')
                    .ok_or_else(|| format!("--env: `{v}` is not K=V"))?;
                env.push((k.to_owned(), val.to_owned()));
            }
            "--stdin" => stdin = Some(value("--stdin")?),
            "--ssh-arg" => ssh_args.push(value("--ssh-arg")?),
            "--slurm-arg" => slurm_args.push(value("--slurm-arg")?),
            "--timeout" => {
                let v = value("--timeout")?;
                let secs: f64 = v
                    .parse()
                    .map_err(|_| format!("--timeout: `{v}` is not a number of seconds"))?;
                timeout =
                    Duration::try_from_secs_f64(secs).map_err(|e| format!("--timeout: {e}"))?;
            }
            "--" => {
                command.extend(it.by_ref());
                break;
            }
            other if other.starts_with('-') => {
                return Err(format!("unknown option `{other}` (see --help)"));
            }
            _ => {
                command.push(arg);
                command.extend(it.by_ref());
                break;
            }
        }
    }
    match &mut launcher {
        Launcher::Ssh(o) => o.args = ssh_args,
        Launcher::Slurm(o) => o.args = slurm_args,
        Launcher::Local => {}
    }
    let mut command = command.into_iter();
    let program = command.next().ok_or("no PROGRAM given (see --help)")?;
    Ok(Some(Options {
        launcher,
        host,
        count,
        env,
        stdin,
        timeout,
        program: program.into(),
        args: command.collect(),
    }))
}

fn main() -> ExitCode {
    let opts = match parse_args(std::env::args().skip(1).collect()) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("launch_demo: error: {e}");
            return ExitCode::from(2);
        }
    };
    let logs = std::env::temp_dir().join(format!("pnet-launch-demo-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&logs) {
        eprintln!("launch_demo: error: cannot create {}: {e}", logs.display());
        return ExitCode::FAILURE;
    }
    let code = run(&opts, &logs);
    let _ = std::fs::remove_dir_all(&logs);
    code
}

fn run(opts: &Options, logs: &std::path::Path) -> ExitCode {
    let start = Instant::now();
    let mut workers: Vec<Launched> = Vec::new();
    let mut names = Vec::new();
    for i in 0..opts.count {
        let name = format!("w{i}");
        let mut cmd = WorkerCommand::new(&name, &opts.program);
        cmd.host = opts.host.clone();
        cmd.args = opts.args.clone();
        cmd.env = opts.env.clone();
        cmd.env.push(("PNET_WORKER_NAME".into(), name.clone()));
        cmd.env.push(("PNET_WORKER_INDEX".into(), i.to_string()));
        cmd.stdin = opts.stdin.as_ref().map(|s| format!("{s}\n").into_bytes());
        cmd.log = Some(logs.join(format!("{name}.log")));
        match launch(&opts.launcher, &cmd) {
            Ok(mut w) => {
                w.close_stdin();
                workers.push(w);
                names.push(name);
            }
            Err(e) => {
                eprintln!("launch_demo: error: {e}");
                stop_all(&mut workers, Duration::from_secs(2));
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        "launched {} worker(s) with the {} launcher in {:.3} s",
        workers.len(),
        opts.launcher.name(),
        start.elapsed().as_secs_f64()
    );
    let mut outcome: Vec<Option<(bool, String)>> = vec![None; workers.len()];
    let deadline = start + opts.timeout;
    while outcome.iter().any(Option::is_none) && Instant::now() < deadline {
        for (i, w) in workers.iter_mut().enumerate() {
            if outcome[i].is_none() {
                match w.try_wait() {
                    Ok(Some(s)) => outcome[i] = Some((s.success(), describe(s))),
                    Ok(None) => {}
                    Err(e) => outcome[i] = Some((false, format!("could not be waited for: {e}"))),
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if outcome.iter().any(Option::is_none) {
        eprintln!(
            "launch_demo: timeout after {:?}, stopping the rest",
            opts.timeout
        );
        for ((_, how), o) in stop_all(&mut workers, Duration::from_secs(2))
            .into_iter()
            .zip(outcome.iter_mut())
        {
            if o.is_none() {
                *o = Some((false, format!("timed out, then {how}")));
            }
        }
    }
    let mut all_ok = true;
    for (name, o) in names.iter().zip(outcome) {
        let (ok, how) = o.unwrap_or((false, "unknown".into()));
        all_ok &= ok;
        println!("worker {name} {how}; output:");
        let out = std::fs::read_to_string(logs.join(format!("{name}.log"))).unwrap_or_default();
        for line in out.lines() {
            println!("  [{name}] {line}");
        }
    }
    println!("total {:.3} s", start.elapsed().as_secs_f64());
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
