//! Launchers: starting the worker processes of a placement plan on their hosts.
//!
//! Three launchers exist:
//!
//! * [`Launcher::Local`] runs `program args` on this machine with the given environment.
//! * [`Launcher::Ssh`] runs
//!   `ssh -T -o BatchMode=yes [args] HOST -- 'exec env K=V ... program arg ...'`; the remote
//!   command line is shell-quoted word by word, so any byte (except NUL) survives the remote
//!   shell. The program path must be valid on the remote host (a shared file system, as usual
//!   on HPC clusters).
//! * [`Launcher::Slurm`] runs
//!   `srun --nodes=1 --ntasks=1 --overlap --nodelist=HOST --export=ALL,K,... [args] program arg ...`
//!   and must itself run inside an allocation (`salloc`/`sbatch`): it refuses to start when
//!   `SLURM_JOB_ID` is unset. `--overlap` lets the worker steps share the allocation's CPUs:
//!   without it a second long-running worker on the same node waits for the first step to
//!   end ("step creation temporarily disabled"), and the workers pin themselves anyway. The values of the environment variables are put into srun's own
//!   environment and exported by *name*, so values may contain commas (which
//!   `--export=K=V` could not carry).
//!
//! # The stdin contract (read this when writing a worker)
//!
//! Every launched process gets a **pipe** as its standard input. The launcher writes
//! [`WorkerCommand::stdin`] (the secret, for instance: it is never put on a command line, where
//! `ps` would show it) to that pipe and then keeps the pipe **open** for as long as the worker
//! should live. The worker must treat **end of file on stdin as the order to exit**:
//!
//! * locally, [`Launched::kill`], [`Launched::wait`], [`stop_all`] and dropping the
//!   [`Launched`] close the pipe;
//! * over ssh, killing (or losing) the local `ssh` client closes the ssh channel, and the remote
//!   sshd then closes the worker's stdin: this is the only way a remote worker learns that its
//!   agent is gone (there is no tty, `-T`, hence no SIGHUP);
//! * under Slurm, srun forwards its stdin to the task, with the same effect; srun also
//!   forwards SIGTERM to the task.
//!
//! A worker that does not honour the contract is still stopped by [`stop_all`] locally (SIGTERM,
//! then SIGKILL after the grace period) but could survive on a remote host.
//!
//! # Processes and signals
//!
//! Every launched child is started with [`std::process::Command::spawn`] (no `pre_exec`) in a
//! **process group of its own**, and signals go to the whole group, so a worker that is a shell
//! script does not leave its children behind. A consequence: a Ctrl-C typed at the terminal
//! reaches only the caller (the agent), which is expected to call [`stop_all`]. The workers'
//! stdout and stderr are inherited, unless [`WorkerCommand::log`] names a file that then gets
//! both (appended).
//!
//! Dropping a [`Launched`] whose process still runs kills it (SIGKILL to its group) and reaps
//! it, so no process outlives its handle by accident.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How workers are started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launcher {
    /// On this machine.
    Local,
    /// Through an ssh client.
    Ssh(SshOptions),
    /// Through Slurm's `srun`, inside an allocation.
    Slurm(SlurmOptions),
}

/// Options of the ssh launcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshOptions {
    /// The ssh client, `"ssh"` by default.
    pub program: String,
    /// Extra options put before the host, e.g. `-p PORT -i KEY -o Option=value`.
    pub args: Vec<String>,
}

impl Default for SshOptions {
    fn default() -> Self {
        SshOptions {
            program: "ssh".to_owned(),
            args: Vec::new(),
        }
    }
}

/// Options of the Slurm launcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlurmOptions {
    /// The step launcher, `"srun"` by default.
    pub program: String,
    /// Extra options put before the program, e.g. `--cpus-per-task=2`.
    pub args: Vec<String>,
}

impl Default for SlurmOptions {
    fn default() -> Self {
        SlurmOptions {
            program: "srun".to_owned(),
            args: Vec::new(),
        }
    }
}

impl Launcher {
    /// Parses a launcher name: `local`, `ssh` or `slurm` (with default options).
    pub fn parse(name: &str) -> Result<Launcher, String> {
        match name {
            "local" => Ok(Launcher::Local),
            "ssh" => Ok(Launcher::Ssh(SshOptions::default())),
            "slurm" => Ok(Launcher::Slurm(SlurmOptions::default())),
            other => Err(format!(
                "unknown launcher `{other}`: expected `local`, `ssh` or `slurm`"
            )),
        }
    }

    /// The name [`Launcher::parse`] accepts for this launcher.
    pub fn name(&self) -> &'static str {
        match self {
            Launcher::Local => "local",
            Launcher::Ssh(_) => "ssh",
            Launcher::Slurm(_) => "slurm",
        }
    }
}

/// What to start for one worker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The worker's name, for messages.
    pub name: String,
    /// The target host (ignored by the local launcher; optional for Slurm).
    pub host: String,
    /// The program; for ssh and Slurm, its path on the target host.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables that reach the worker on every launcher.
    pub env: Vec<(String, String)>,
    /// Bytes written to the worker's stdin right after the start; stdin then stays open (see
    /// the module docs for the contract).
    pub stdin: Option<Vec<u8>>,
    /// When set, stdout and stderr of the launched process are appended to this file instead
    /// of being inherited.
    pub log: Option<PathBuf>,
}

impl WorkerCommand {
    /// A command with a name and a program, and everything else empty.
    pub fn new(name: impl Into<String>, program: impl Into<PathBuf>) -> Self {
        WorkerCommand {
            name: name.into(),
            program: program.into(),
            ..WorkerCommand::default()
        }
    }
}

/// The process a launcher spawns for one worker: program, arguments and the environment
/// variables set on it (in addition to the inherited environment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The program spawned locally (the worker, `ssh` or `srun`).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Environment variables set on the spawned process.
    pub env: Vec<(String, String)>,
}

/// Computes what [`launch`] would spawn, without spawning it. For Slurm this reads
/// `SLURM_JOB_ID` from the environment.
pub fn plan(launcher: &Launcher, cmd: &WorkerCommand) -> io::Result<Plan> {
    let job = std::env::var_os("SLURM_JOB_ID");
    plan_with(
        launcher,
        cmd,
        job.as_ref().map(|j| !j.is_empty()).unwrap_or(false),
    )
}

fn invalid(cmd: &WorkerCommand, msg: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("worker `{}`: {msg}", cmd.name),
    )
}

fn check_env(cmd: &WorkerCommand) -> io::Result<()> {
    for (k, v) in &cmd.env {
        if k.is_empty() || k.contains('=') || k.contains('\0') {
            return Err(invalid(
                cmd,
                format!("invalid environment variable name `{k}`"),
            ));
        }
        if v.contains('\0') {
            return Err(invalid(
                cmd,
                format!("the value of environment variable `{k}` contains a NUL byte"),
            ));
        }
    }
    for a in &cmd.args {
        if a.contains('\0') {
            return Err(invalid(
                cmd,
                format!("argument `{}` contains a NUL byte", a.escape_debug()),
            ));
        }
    }
    Ok(())
}

fn plan_with(launcher: &Launcher, cmd: &WorkerCommand, in_allocation: bool) -> io::Result<Plan> {
    check_env(cmd)?;
    if cmd.program.as_os_str().is_empty() {
        return Err(invalid(cmd, "no program to start"));
    }
    match launcher {
        Launcher::Local => Ok(Plan {
            program: cmd.program.clone().into_os_string(),
            args: cmd.args.iter().map(OsString::from).collect(),
            env: cmd.env.clone(),
        }),
        Launcher::Ssh(opts) => {
            if cmd.host.is_empty() {
                return Err(invalid(cmd, "the ssh launcher needs a host"));
            }
            if cmd.host.starts_with('-')
                || cmd
                    .host
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control())
            {
                return Err(invalid(
                    cmd,
                    format!("invalid host name `{}`", cmd.host.escape_debug()),
                ));
            }
            let Some(program) = cmd.program.to_str() else {
                return Err(invalid(
                    cmd,
                    format!("program path {} is not UTF-8", cmd.program.display()),
                ));
            };
            if program.contains('=') {
                return Err(invalid(
                    cmd,
                    format!(
                        "program path `{program}` contains `=`, which `env` would take for a variable"
                    ),
                ));
            }
            let mut remote = String::from("exec env");
            for (k, v) in &cmd.env {
                remote.push(' ');
                remote.push_str(&shell_quote(&format!("{k}={v}")));
            }
            remote.push(' ');
            remote.push_str(&shell_quote(program));
            for a in &cmd.args {
                remote.push(' ');
                remote.push_str(&shell_quote(a));
            }
            let mut args: Vec<OsString> = vec!["-T".into(), "-o".into(), "BatchMode=yes".into()];
            args.extend(opts.args.iter().map(OsString::from));
            args.push(cmd.host.clone().into());
            args.push("--".into());
            args.push(remote.into());
            Ok(Plan {
                program: opts.program.clone().into(),
                args,
                env: Vec::new(),
            })
        }
        Launcher::Slurm(opts) => {
            if !in_allocation {
                return Err(invalid(
                    cmd,
                    "the slurm launcher must run inside a Slurm allocation (salloc or sbatch), but SLURM_JOB_ID is not set",
                ));
            }
            if cmd.host.starts_with('-') || cmd.host.contains(char::is_whitespace) {
                return Err(invalid(
                    cmd,
                    format!("invalid host name `{}`", cmd.host.escape_debug()),
                ));
            }
            if let Some((k, _)) = cmd.env.iter().find(|(k, _)| k.contains(',')) {
                return Err(invalid(
                    cmd,
                    format!(
                        "environment variable name `{k}` contains a comma, which srun --export cannot carry"
                    ),
                ));
            }
            let mut args: Vec<OsString> =
                vec!["--nodes=1".into(), "--ntasks=1".into(), "--overlap".into()];
            if !cmd.host.is_empty() {
                args.push(format!("--nodelist={}", cmd.host).into());
            }
            let mut export = String::from("--export=ALL");
            for (k, _) in &cmd.env {
                export.push(',');
                export.push_str(k);
            }
            args.push(export.into());
            args.extend(opts.args.iter().map(OsString::from));
            args.push(cmd.program.clone().into_os_string());
            args.extend(cmd.args.iter().map(OsString::from));
            Ok(Plan {
                program: opts.program.clone().into(),
                args,
                env: cmd.env.clone(),
            })
        }
    }
}

/// Quotes a word for a POSIX shell: `'...'`, with each `'` written as `'\''`. Words made only
/// of safe characters stay as they are.
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:,+@%=".contains(&b));
    if safe {
        return word.to_owned();
    }
    let mut out = String::with_capacity(word.len() + 2);
    out.push('\'');
    for c in word.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// A launched worker: the local child process (the worker itself, `ssh` or `srun`).
#[derive(Debug)]
pub struct Launched {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    status: Option<ExitStatus>,
}

/// Starts one worker.
pub fn launch(launcher: &Launcher, cmd: &WorkerCommand) -> io::Result<Launched> {
    let plan = plan(launcher, cmd)?;
    spawn_plan(&plan, cmd)
}

fn spawn_plan(plan: &Plan, cmd: &WorkerCommand) -> io::Result<Launched> {
    let mut command = Command::new(&plan.program);
    command.args(&plan.args);
    for (k, v) in &plan.env {
        command.env(k, v);
    }
    command.stdin(Stdio::piped());
    if let Some(log) = &cmd.log {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "worker `{}`: cannot open log file {}: {e}",
                        cmd.name,
                        log.display()
                    ),
                )
            })?;
        command.stdout(file.try_clone()?);
        command.stderr(file);
    }
    command.process_group(0);
    let mut child = command.spawn().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "worker `{}`: cannot start `{}`: {e}",
                cmd.name,
                PathBuf::from(&plan.program).display()
            ),
        )
    })?;
    let stdin = child.stdin.take();
    let mut launched = Launched {
        name: cmd.name.clone(),
        child,
        stdin,
        status: None,
    };
    if let (Some(data), Some(pipe)) = (&cmd.stdin, launched.stdin.as_mut())
        && let Err(e) = pipe.write_all(data).and_then(|()| pipe.flush())
    {
        let _ = launched.kill();
        let status = launched
            .wait()
            .map(describe)
            .unwrap_or_else(|e| e.to_string());
        return Err(io::Error::new(
            e.kind(),
            format!(
                "worker `{}`: cannot write to its stdin: {e} (it {status})",
                cmd.name
            ),
        ));
    }
    Ok(launched)
}

impl Launched {
    /// The worker's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The local child's pid (also its process group id), or `None` once it has been reaped.
    pub fn pid(&self) -> Option<u32> {
        if self.status.is_some() {
            None
        } else {
            Some(self.child.id())
        }
    }

    /// Closes the worker's stdin, which by contract tells it to exit.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Writes more bytes to the worker's stdin (an error if it was closed).
    pub fn write_stdin(&mut self, data: &[u8]) -> io::Result<()> {
        match self.stdin.as_mut() {
            Some(pipe) => pipe.write_all(data).and_then(|()| pipe.flush()),
            None => Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                format!("worker `{}`: stdin is closed", self.name),
            )),
        }
    }

    /// Sends `signal` to the child's process group. Does nothing when the child has already
    /// been reaped (its pid could belong to another process by now).
    pub fn signal(&mut self, signal: i32) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        let Ok(pid) = libc::pid_t::try_from(self.child.id()) else {
            return Err(io::Error::other("pid out of range"));
        };
        // SAFETY: kill(2) has no memory-safety preconditions. The child is not reaped yet, so
        // its pid (and process group id, set at spawn) still belongs to it, even as a zombie.
        let rc = unsafe { libc::kill(-pid, signal) };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ESRCH) {
            // SAFETY: as above.
            let rc = unsafe { libc::kill(pid, signal) };
            if rc == 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::ESRCH) {
                return Ok(());
            }
            return Err(err);
        }
        Err(err)
    }

    /// Closes stdin and sends SIGKILL to the child's process group; does not wait.
    pub fn kill(&mut self) -> io::Result<()> {
        self.close_stdin();
        self.signal(libc::SIGKILL)
    }

    /// Closes stdin and sends SIGTERM to the child's process group; does not wait.
    pub fn terminate(&mut self) -> io::Result<()> {
        self.close_stdin();
        self.signal(libc::SIGTERM)
    }

    /// The exit status if the child has ended (and reaps it), `None` while it runs.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(s) = self.status {
            return Ok(Some(s));
        }
        let s = self.child.try_wait()?;
        self.status = s;
        Ok(s)
    }

    /// Waits for the child to end. Like [`std::process::Child::wait`], this closes stdin
    /// first, which by contract asks the worker to exit.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        self.close_stdin();
        let s = self.child.wait()?;
        self.status = Some(s);
        Ok(s)
    }

    /// True when the child has exited but is not reaped yet (it is a zombie, so its process
    /// group id cannot be reused and the group can still be signalled safely).
    fn exited_unreaped(&self) -> bool {
        if self.status.is_some() {
            return false;
        }
        let pid: libc::id_t = self.child.id();
        // SAFETY: siginfo_t is plain old data, all-zero is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t; WNOWAIT leaves the child waitable.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: waitid filled `info` (or left it zeroed, giving si_pid 0).
        rc == 0 && unsafe { info.si_pid() } != 0
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.kill();
            let _ = self.wait();
        }
    }
}

/// Describes how a process ended, e.g. `exited with status 0` or `ended by signal 15 (SIGTERM)`.
pub fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        format!("exited with status {code}")
    } else if let Some(sig) = status.signal() {
        match signal_name(sig) {
            n if n.starts_with("SIG") => format!("ended by signal {sig} ({n})"),
            _ => format!("ended by signal {sig}"),
        }
    } else {
        format!("ended ({status})")
    }
}

/// How a process ended, short: `SIGSEGV` (or `signal 42`), `exit status 3`.
pub fn exit_name(status: ExitStatus) -> String {
    if let Some(sig) = status.signal() {
        signal_name(sig)
    } else if let Some(code) = status.code() {
        format!("exit status {code}")
    } else {
        status.to_string()
    }
}

/// `SIGSEGV`, `SIGABRT`, ... or `signal N`.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

/// Stops all workers: closes every stdin, sends SIGTERM to every process group, waits up to
/// `grace` for them to end, then sends SIGKILL to the rest. Returns, per worker and in order,
/// its name and how it ended. Processes left behind in the group of a worker that ended are
/// killed too.
pub fn stop_all(workers: &mut [Launched], grace: Duration) -> Vec<(String, String)> {
    let mut outcome: Vec<Option<String>> = vec![None; workers.len()];
    for w in workers.iter_mut() {
        w.close_stdin();
    }
    for (i, w) in workers.iter_mut().enumerate() {
        match w.try_wait() {
            Ok(Some(s)) => outcome[i] = Some(format!("had already {}", describe(s))),
            Ok(None) => {
                if let Err(e) = w.signal(libc::SIGTERM) {
                    outcome[i] = Some(format!("could not be sent SIGTERM: {e}"));
                }
            }
            Err(e) => outcome[i] = Some(format!("could not be waited for: {e}")),
        }
    }
    let deadline = Instant::now() + grace;
    loop {
        let mut pending = false;
        for (i, w) in workers.iter_mut().enumerate() {
            if outcome[i].is_some() {
                continue;
            }
            if w.exited_unreaped() {
                // Clean up what the worker may have left in its group, then reap it.
                let _ = w.signal(libc::SIGKILL);
                outcome[i] = Some(match w.wait() {
                    Ok(s) => describe(s),
                    Err(e) => format!("could not be waited for: {e}"),
                });
            } else {
                pending = true;
            }
        }
        if !pending || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for (i, w) in workers.iter_mut().enumerate() {
        if outcome[i].is_some() {
            continue;
        }
        let sent = w.signal(libc::SIGKILL);
        outcome[i] = Some(match (sent, w.wait()) {
            (Ok(()), Ok(s)) if s.signal() == Some(libc::SIGKILL) => {
                format!("killed with SIGKILL after a grace period of {grace:?}")
            }
            (Ok(()), Ok(s)) => describe(s),
            (Err(e), _) | (_, Err(e)) => format!("could not be killed: {e}"),
        });
    }
    workers
        .iter()
        .zip(outcome)
        .map(|(w, o)| (w.name.clone(), o.unwrap_or_default()))
        .collect()
}

pub mod cli;
pub mod testing;

#[cfg(test)]
mod tests;
