//! `gspc-property exec`: the wrapper that runs one DDS task on its slot's host.
//!
//! The runner starts it through pnet-launch as
//! `gspc-property exec --connect HOST:PORT --task N --attempt K` and writes the session's
//! secret (64 hex digits and a newline) to its stdin, which then stays open: end of file on
//! stdin is the order to stop (pnet-launch's contract). The wrapper
//!
//! 1. connects back to the runner and fetches its [`TaskSetup`];
//! 2. creates the session folder on the host (mode 0700; `gspc-dds-<session>` in the
//!    temporary folder unless the runner names one), writes the secret there into `secret`
//!    (mode 0600) for `gspc-property` clients, writes the global assets into `assets/` and
//!    the task's folder `tasks/<task path>/`, with the task assets in it and links to the
//!    global ones, so that every asset is found by its name in the task's working folder;
//! 3. runs `/bin/sh -c` with the `<env>` script sourced (`. ENV`) and then the `exe`, in the
//!    task's folder, with stdin from `/dev/null`, stdout and stderr appended to `stdout.log`
//!    and `stderr.log` there, and the task's environment (see [`crate::setup`]);
//! 4. reports how the task ended (with the last lines of its stderr) and exits with the
//!    task's status (128 + N after signal N).
//!
//! On end of file on stdin it sends SIGTERM to its process group (the task and whatever
//! it started) and SIGKILL 3 seconds later. When the task ends, whatever it left running in
//! the group gets SIGTERM.

use std::fs::{DirBuilder, OpenOptions};
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use pnet_protocol::property::{
    ADDR_ENV, PropertyReply, PropertyRequest, Role, SECRET_FILE_ENV, TASK_ENV, TaskExit, TaskSetup,
};
use pnet_protocol::{Secret, read_msg, write_msg};

use crate::client::{self, ClientError};

/// The lines of stderr sent with the report.
const TAIL_LINES: usize = 10;
/// At most this many bytes of stderr are looked at for the tail.
const TAIL_BYTES: u64 = 4096;

/// The wrapper's options (`gspc-property exec`, a clap argument group).
#[derive(Debug, PartialEq, Eq, clap::Args)]
pub struct ExecArgs {
    /// The runner's property server
    #[arg(long, value_name = "HOST:PORT")]
    pub connect: String,
    /// The task's number
    #[arg(long, value_name = "N", value_parser = parse_task)]
    pub task: u32,
    /// The how-many-th start of the task (0: the first)
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub attempt: u32,
}

fn parse_task(v: &str) -> Result<u32, String> {
    v.parse()
        .map_err(|_| format!("--task: `{v}` is not a task number"))
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("gspc-property exec: {msg}");
    ExitCode::from(1)
}

/// Runs `gspc-property exec ARGS`.
pub fn exec_main(args: ExecArgs) -> ExitCode {
    // A process group of our own (the local launcher gives one already; under sshd we are a
    // session leader and this fails harmlessly), so that stopping reaches the whole task.
    // SAFETY: setpgid has no memory-safety preconditions.
    unsafe {
        libc::setpgid(0, 0);
    }
    let stdin = std::io::stdin();
    let mut line = String::new();
    if let Err(e) = stdin.lock().read_line(&mut line) {
        return fail(format_args!("cannot read the secret from stdin: {e}"));
    }
    let Some(secret) = Secret::from_hex(&line) else {
        return fail("stdin did not start with the session's secret (64 hex digits)");
    };
    let setup = match fetch_setup(&args, &secret) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let prepared = match prepare(&setup, &secret) {
        Ok(p) => p,
        Err(msg) => {
            let exit = TaskExit::NotStarted(msg.clone());
            let _ = report(&args, &secret, exit, String::new());
            return fail(msg);
        }
    };
    let offset = std::fs::metadata(&prepared.stderr)
        .map(|m| m.len())
        .unwrap_or(0);
    let child = spawn(&setup, &prepared, &args, &secret);
    let mut child = match child {
        Ok(c) => c,
        Err(msg) => {
            let exit = TaskExit::NotStarted(msg.clone());
            let _ = report(&args, &secret, exit, String::new());
            return fail(msg);
        }
    };
    let _ = started(&args, &secret, child.id());
    watch_stdin();
    let exit = match child.wait() {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(c), _) => TaskExit::Code(c),
            (None, Some(s)) => TaskExit::Signal(s),
            (None, None) => TaskExit::NotStarted(format!("ended in an unknown way ({status})")),
        },
        Err(e) => TaskExit::NotStarted(format!("cannot wait for the task: {e}")),
    };
    let tail = stderr_tail(&prepared.stderr, offset);
    let code = match &exit {
        TaskExit::Code(c) => (*c & 0xff) as u8,
        TaskExit::Signal(s) => (128 + (*s & 0x7f)) as u8,
        TaskExit::NotStarted(_) => 127,
    };
    if let Err(e) = report(&args, &secret, exit, tail) {
        eprintln!("gspc-property exec: cannot report the task's end: {e}");
    }
    stop_leftovers();
    ExitCode::from(code)
}

fn open_session(args: &ExecArgs, secret: &Secret) -> Result<std::net::TcpStream, ClientError> {
    let mut stream = client::connect(&args.connect)?;
    client::hello(
        &mut stream,
        secret,
        args.task,
        Role::Wrapper {
            attempt: args.attempt,
        },
    )?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    Ok(stream)
}

fn request(
    stream: &mut std::net::TcpStream,
    req: &PropertyRequest,
) -> Result<PropertyReply, ClientError> {
    write_msg(stream, req)
        .map_err(|e| ClientError::Protocol(format!("cannot send to the DDS runner: {e}")))?;
    read_msg(stream)
        .map_err(|e| ClientError::Protocol(format!("no answer from the DDS runner: {e}")))
}

fn fetch_setup(args: &ExecArgs, secret: &Secret) -> Result<TaskSetup, ClientError> {
    let mut s = open_session(args, secret)?;
    match request(&mut s, &PropertyRequest::Setup)? {
        PropertyReply::Setup(setup) => Ok(*setup),
        other => Err(ClientError::Protocol(format!(
            "unexpected answer to the setup request: {other:?}"
        ))),
    }
}

fn started(args: &ExecArgs, secret: &Secret, pid: u32) -> Result<(), ClientError> {
    let mut s = open_session(args, secret)?;
    request(&mut s, &PropertyRequest::Started { pid }).map(|_| ())
}

fn report(
    args: &ExecArgs,
    secret: &Secret,
    exit: TaskExit,
    stderr_tail: String,
) -> Result<(), ClientError> {
    let mut s = open_session(args, secret)?;
    match request(&mut s, &PropertyRequest::Exited { exit, stderr_tail })? {
        PropertyReply::Ok => Ok(()),
        other => Err(ClientError::Protocol(format!(
            "unexpected answer to the report: {other:?}"
        ))),
    }
}

/// Folders and files made for the task.
#[derive(Debug)]
pub struct Prepared {
    pub session_dir: PathBuf,
    pub task_dir: PathBuf,
    pub asset_dir: PathBuf,
    pub secret_file: PathBuf,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

/// A safe file name: not empty, no `/`, not `.` or `..`, no NUL.
fn safe_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Creates `dir` with mode 0700, or accepts it if it is already a folder of ours (not a link).
fn private_dir(dir: &Path) -> Result<(), String> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(dir)
                .map_err(|e| format!("cannot inspect {}: {e}", dir.display()))?;
            // SAFETY: geteuid has no preconditions.
            let me = unsafe { libc::geteuid() };
            if !meta.is_dir() || meta.uid() != me {
                return Err(format!(
                    "{} exists but is not a folder of this user",
                    dir.display()
                ));
            }
            Ok(())
        }
        Err(e) => Err(format!("cannot create {}: {e}", dir.display())),
    }
}

/// Writes `content` to `path` atomically (a temporary file, then a rename) with `mode`.
fn write_atomic(path: &Path, content: &[u8], mode: u32) -> Result<(), String> {
    let tmp = path.with_file_name(format!(
        ".{}.{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&tmp);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    f.write_all(content)
        .and_then(|()| f.flush())
        .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

/// Creates the session and task folders, the secret file and the assets.
pub fn prepare(setup: &TaskSetup, secret: &Secret) -> Result<Prepared, String> {
    let session_dir = match &setup.session_dir {
        Some(d) => PathBuf::from(d),
        None => std::env::temp_dir().join(format!("gspc-dds-{}", setup.session)),
    };
    if let Some(parent) = session_dir.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    private_dir(&session_dir)?;
    let secret_file = session_dir.join("secret");
    if !secret_file.exists() {
        write_atomic(
            &secret_file,
            format!("{}\n", secret.to_hex()).as_bytes(),
            0o600,
        )?;
    }
    let asset_dir = session_dir.join("assets");
    private_dir(&asset_dir)?;
    let mut task_dir = session_dir.join("tasks");
    for part in setup.path.split('/') {
        if !safe_name(part) {
            return Err(format!(
                "the task path `{}` is not usable as a folder",
                setup.path
            ));
        }
        task_dir.push(part);
    }
    std::fs::create_dir_all(&task_dir)
        .map_err(|e| format!("cannot create {}: {e}", task_dir.display()))?;
    for asset in &setup.assets {
        if !safe_name(&asset.name) {
            return Err(format!(
                "the asset name `{}` is not a file name",
                asset.name
            ));
        }
        let in_task = task_dir.join(&asset.name);
        if asset.global {
            let file = asset_dir.join(&asset.name);
            write_atomic(&file, asset.content.as_bytes(), 0o644)?;
            let _ = std::fs::remove_file(&in_task);
            std::os::unix::fs::symlink(&file, &in_task)
                .map_err(|e| format!("cannot link {}: {e}", in_task.display()))?;
        } else {
            let _ = std::fs::remove_file(&in_task);
            write_atomic(&in_task, asset.content.as_bytes(), 0o644)?;
        }
    }
    Ok(Prepared {
        stdout: task_dir.join("stdout.log"),
        stderr: task_dir.join("stderr.log"),
        session_dir,
        task_dir,
        asset_dir,
        secret_file,
    })
}

/// The shell script: the `<env>` script sourced, then the command.
pub fn script(setup: &TaskSetup) -> String {
    match &setup.env_script {
        Some(env) if !env.trim().is_empty() => format!(". {env}\n{}\n", setup.exe),
        _ => setup.exe.clone(),
    }
}

fn spawn(
    setup: &TaskSetup,
    p: &Prepared,
    args: &ExecArgs,
    _secret: &Secret,
) -> Result<std::process::Child, String> {
    let open = |path: &Path| {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))
    };
    let out = open(&p.stdout)?;
    let err = open(&p.stderr)?;
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(script(setup));
    cmd.current_dir(&p.task_dir);
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    for (k, v) in &setup.env {
        cmd.env(k, v);
    }
    cmd.env(ADDR_ENV, &args.connect);
    cmd.env(TASK_ENV, args.task.to_string());
    cmd.env(SECRET_FILE_ENV, &p.secret_file);
    cmd.env("GSPC_DDS_SESSION_DIR", &p.session_dir);
    cmd.env("GSPC_DDS_ASSET_DIR", &p.asset_dir);
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        let mut path = dir.into_os_string();
        if let Some(old) = std::env::var_os("PATH") {
            path.push(":");
            path.push(old);
        }
        cmd.env("PATH", path);
    }
    cmd.spawn()
        .map_err(|e| format!("cannot start /bin/sh for `{}`: {e}", setup.exe))
}

/// Sends SIGTERM to what the task left running in our process group (not to us).
fn stop_leftovers() {
    // SAFETY: signal(2) and kill(2) have no memory-safety preconditions; SIG_IGN is a valid
    // disposition. The group is our own (setpgid above, or a session of our own).
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        libc::kill(0, libc::SIGTERM);
    }
}

/// Stops the task when stdin reaches its end (the runner's order, or the runner is gone).
fn watch_stdin() {
    let _ = std::thread::Builder::new().name("stdin".into()).spawn(|| {
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        loop {
            match stdin.read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        // SAFETY: signal(2) and kill(2) have no memory-safety preconditions; SIG_IGN is a
        // valid disposition.
        unsafe {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
            libc::kill(0, libc::SIGTERM);
        }
        std::thread::sleep(Duration::from_secs(3));
        // SAFETY: as above.
        unsafe {
            libc::kill(0, libc::SIGKILL);
        }
    });
}

/// The last 10 lines written to `path` after `offset`.
pub fn stderr_tail(path: &Path, offset: u64) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = offset.max(len.saturating_sub(TAIL_BYTES));
    if f.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    let _ = f.take(TAIL_BYTES).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    // Cut into a line: drop its start.
    let text = if start > offset {
        text.split_once('\n').map_or("", |(_, rest)| rest)
    } else {
        &text
    };
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(TAIL_LINES);
    lines[from..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pnet_protocol::property::AssetFile;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dds-run-wrap-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn exec_arguments() {
        #[derive(clap::Parser)]
        struct Exec {
            #[command(flatten)]
            args: ExecArgs,
        }
        let parse = |a: &[&str]| {
            <Exec as clap::Parser>::try_parse_from(std::iter::once("exec").chain(a.iter().copied()))
                .map(|e| e.args)
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            parse(&["--connect", "127.0.0.1:5", "--task=3", "--attempt", "2"]).unwrap(),
            ExecArgs {
                connect: "127.0.0.1:5".into(),
                task: 3,
                attempt: 2
            }
        );
        for (a, message) in [
            (&["--task"][..], "a value is required for '--task <N>'"),
            (&["--task", "x"], "--task: `x` is not a task number"),
            (&["--task", "1"], "--connect <HOST:PORT>"),
        ] {
            let e = parse(a).unwrap_err();
            assert!(e.contains(message), "{a:?}: {e}");
        }
    }

    #[test]
    fn prepare_writes_folders_secret_and_assets() {
        let base = scratch("prep");
        let setup = TaskSetup {
            session: "s1".into(),
            path: "main/c_0/t_1".into(),
            exe: "true".into(),
            env_script: Some("./env.sh".into()),
            env: Vec::new(),
            session_dir: Some(base.join("session").display().to_string()),
            assets: vec![
                AssetFile {
                    name: "local".into(),
                    global: false,
                    content: "L".into(),
                },
                AssetFile {
                    name: "shared".into(),
                    global: true,
                    content: "G".into(),
                },
            ],
        };
        let secret = Secret::random().unwrap();
        let p = prepare(&setup, &secret).unwrap();
        assert_eq!(p.task_dir, base.join("session/tasks/main/c_0/t_1"));
        let mode = std::fs::metadata(&p.secret_file).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(&p.session_dir).unwrap().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(
            crate::client::read_secret_file(&p.secret_file)
                .unwrap()
                .to_hex(),
            secret.to_hex()
        );
        assert_eq!(
            std::fs::read_to_string(p.task_dir.join("local")).unwrap(),
            "L"
        );
        assert_eq!(
            std::fs::read_to_string(p.task_dir.join("shared")).unwrap(),
            "G"
        );
        assert_eq!(
            std::fs::read_to_string(p.asset_dir.join("shared")).unwrap(),
            "G"
        );
        // Again (a restart): fine.
        prepare(&setup, &secret).unwrap();
        assert_eq!(script(&setup), ". ./env.sh\ntrue\n");
        // A hostile path or asset name is refused.
        let mut bad = setup.clone();
        bad.path = "main/../x".into();
        assert!(prepare(&bad, &secret).unwrap_err().contains("not usable"));
        let mut bad = setup.clone();
        bad.assets[0].name = "../x".into();
        assert!(
            prepare(&bad, &secret)
                .unwrap_err()
                .contains("not a file name")
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn tail_reads_only_the_new_part() {
        let base = scratch("tail");
        std::fs::create_dir_all(&base).unwrap();
        let f = base.join("stderr.log");
        std::fs::write(&f, "old\n").unwrap();
        let offset = 4;
        let mut text = String::from("old\n");
        for i in 0..15 {
            text.push_str(&format!("line {i}\n"));
        }
        std::fs::write(&f, &text).unwrap();
        let tail = stderr_tail(&f, offset);
        assert_eq!(tail.lines().count(), TAIL_LINES);
        assert!(tail.starts_with("line 5"));
        assert!(tail.ends_with("line 14"));
        assert_eq!(stderr_tail(&base.join("none"), 0), "");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
