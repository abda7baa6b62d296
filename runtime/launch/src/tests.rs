use super::*;
use crate::testing::{alive, wait_gone};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

/// A fresh temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("pnet-launch-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Waits up to 10 s for a file to exist with a complete last line, and returns its content.
fn wait_for_file(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && s.ends_with('\n')
        {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{} did not appear within 10 s",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn sh(name: &str, script: &str) -> WorkerCommand {
    let mut c = WorkerCommand::new(name, "/bin/sh");
    c.args = vec!["-c".to_owned(), script.to_owned()];
    c
}

#[test]
fn parse_names() {
    assert_eq!(Launcher::parse("local"), Ok(Launcher::Local));
    assert_eq!(
        Launcher::parse("ssh"),
        Ok(Launcher::Ssh(SshOptions {
            program: "ssh".into(),
            args: vec![]
        }))
    );
    assert_eq!(
        Launcher::parse("slurm"),
        Ok(Launcher::Slurm(SlurmOptions {
            program: "srun".into(),
            args: vec![]
        }))
    );
    let err = Launcher::parse("pbs").unwrap_err();
    assert!(err.contains("`pbs`") && err.contains("local"), "{err}");
    for l in ["local", "ssh", "slurm"] {
        assert_eq!(Launcher::parse(l).unwrap().name(), l);
    }
}

#[test]
fn shell_quote_survives_sh() {
    let words = [
        "plain",
        "",
        "with space",
        "it's",
        "'",
        "$HOME `id` \"q\" \\ ;|&<>*?",
        "new\nline",
        "ünï",
        "a=b,c",
    ];
    let script: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!(
            "for w in {}; do printf '[%s]' \"$w\"; done",
            script.join(" ")
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    let expected: String = words.iter().map(|w| format!("[{w}]")).collect();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    assert_eq!(shell_quote("/usr/bin/x"), "/usr/bin/x");
    assert_eq!(shell_quote("it's"), "'it'\\''s'");
}

fn strings(v: &[OsString]) -> Vec<String> {
    v.iter().map(|s| s.to_string_lossy().into_owned()).collect()
}

#[test]
fn ssh_plan() {
    let mut c = WorkerCommand::new("w1", "/opt/gspc/bin/gspc-worker");
    c.host = "node7".into();
    c.args = vec!["--agent".into(), "10.0.0.1:7000".into(), "a b".into()];
    c.env = vec![
        ("PNET_NAME".into(), "w 1".into()),
        ("X".into(), "it's".into()),
    ];
    let l = Launcher::Ssh(SshOptions {
        program: "/usr/bin/ssh".into(),
        args: vec!["-p".into(), "2222".into()],
    });
    let p = plan_with(&l, &c, false).unwrap();
    assert_eq!(p.program, "/usr/bin/ssh");
    assert!(p.env.is_empty());
    assert_eq!(
        strings(&p.args),
        [
            "-T",
            "-o",
            "BatchMode=yes",
            "-p",
            "2222",
            "node7",
            "--",
            "exec env 'PNET_NAME=w 1' 'X=it'\\''s' /opt/gspc/bin/gspc-worker --agent 10.0.0.1:7000 'a b'"
        ]
    );
    // Errors: no host, a host that would be an option, a program with `=`.
    c.host = String::new();
    assert!(
        plan_with(&l, &c, false)
            .unwrap_err()
            .to_string()
            .contains("needs a host")
    );
    c.host = "-oProxyCommand=x".into();
    assert!(
        plan_with(&l, &c, false)
            .unwrap_err()
            .to_string()
            .contains("invalid host")
    );
    c.host = "h".into();
    c.program = "/opt/a=b".into();
    assert!(
        plan_with(&l, &c, false)
            .unwrap_err()
            .to_string()
            .contains("contains `=`")
    );
}

#[test]
fn slurm_plan() {
    let mut c = WorkerCommand::new("w2", "/opt/w");
    c.host = "n1".into();
    c.args = vec!["x".into()];
    c.env = vec![("A".into(), "1,2".into()), ("B".into(), "v".into())];
    let l = Launcher::Slurm(SlurmOptions {
        program: "srun".into(),
        args: vec!["--mpi=none".into()],
    });
    let err = plan_with(&l, &c, false).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert!(
        err.to_string().contains("SLURM_JOB_ID is not set") && err.to_string().contains("`w2`"),
        "{err}"
    );
    let p = plan_with(&l, &c, true).unwrap();
    assert_eq!(p.program, "srun");
    assert_eq!(
        strings(&p.args),
        [
            "--nodes=1",
            "--ntasks=1",
            "--overlap",
            "--nodelist=n1",
            "--export=ALL,A,B",
            "--mpi=none",
            "/opt/w",
            "x"
        ]
    );
    assert_eq!(p.env, c.env);
    c.host = String::new();
    assert!(
        !strings(&plan_with(&l, &c, true).unwrap().args)
            .iter()
            .any(|a| a.starts_with("--nodelist"))
    );
}

#[test]
fn bad_env_and_program_are_rejected() {
    let mut c = sh("bad", "true");
    c.env = vec![("A=B".into(), "x".into())];
    let err = launch(&Launcher::Local, &c).unwrap_err();
    assert!(
        err.to_string()
            .contains("invalid environment variable name `A=B`"),
        "{err}"
    );
    c.env = vec![("A".into(), "x\0y".into())];
    assert!(
        launch(&Launcher::Local, &c)
            .unwrap_err()
            .to_string()
            .contains("NUL")
    );
    let c = WorkerCommand::new("ghost", "/nonexistent/gspc-worker");
    let err = launch(&Launcher::Local, &c).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert!(
        err.to_string().contains("`ghost`") && err.to_string().contains("/nonexistent/gspc-worker"),
        "{err}"
    );
}

#[test]
fn local_env_and_stdin_arrive_and_stdin_stays_open() {
    let dir = TempDir::new("env");
    let out = dir.path("out");
    let mut c = sh(
        "w-env",
        &format!(
            "read s; printf '%s|%s\\n' \"$s\" \"$PNET_TEST_VAR\" > {}; read t; echo \"eof:$?\" >> {}; exit 3",
            shell_quote(out.to_str().unwrap()),
            shell_quote(out.to_str().unwrap())
        ),
    );
    c.env = vec![("PNET_TEST_VAR".into(), "v a l'ue".into())];
    c.stdin = Some(b"s3cr3t token\n".to_vec());
    let mut w = launch(&Launcher::Local, &c).unwrap();
    assert_eq!(w.name(), "w-env");
    let pid = w.pid().unwrap();
    assert_eq!(wait_for_file(&out), "s3cr3t token|v a l'ue\n");
    // stdin stays open: the second `read` blocks.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        w.try_wait().unwrap().is_none(),
        "worker ended although its stdin is open"
    );
    // Closing stdin is the order to exit.
    w.close_stdin();
    let status = w.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "s3cr3t token|v a l'ue\neof:1\n"
    );
    assert_eq!(w.pid(), None);
    assert!(!alive(pid));
}

#[test]
fn local_kill_leaves_no_process() {
    let dir = TempDir::new("kill");
    let (out, sleep_pid) = (dir.path("out"), dir.path("sleep.pid"));
    let script = format!(
        "read s; echo \"$s\" > {}; sleep 30 & echo $! > {}; wait",
        shell_quote(out.to_str().unwrap()),
        shell_quote(sleep_pid.to_str().unwrap())
    );
    let mut c = sh("w-kill", &script);
    c.stdin = Some(b"hello\n".to_vec());
    let mut w = launch(&Launcher::Local, &c).unwrap();
    let pid = w.pid().unwrap();
    assert_eq!(wait_for_file(&out), "hello\n");
    let sleeper: u32 = wait_for_file(&sleep_pid).trim().parse().unwrap();
    assert!(alive(sleeper));
    w.kill().unwrap();
    let status = w.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert!(!alive(pid));
    // The whole process group was killed, the shell's child too.
    assert!(
        wait_gone(sleeper, Duration::from_secs(5)),
        "sleep {sleeper} survived the kill"
    );
    // Killing again after the end is harmless.
    w.kill().unwrap();
}

#[test]
fn stop_all_terms_then_kills_after_grace() {
    let dir = TempDir::new("stop");
    let obedient_out = dir.path("obedient");
    let stubborn_out = dir.path("stubborn");
    // Ends at SIGTERM (the sleep in its group is terminated too).
    let obedient = sh(
        "obedient",
        &format!(
            "echo $$ > {}; sleep 30; echo done",
            shell_quote(obedient_out.to_str().unwrap())
        ),
    );
    // Ignores SIGTERM and stdin EOF: needs SIGKILL.
    let stubborn = sh(
        "stubborn",
        &format!(
            "trap '' TERM; echo $$ > {}; while :; do sleep 1; done",
            shell_quote(stubborn_out.to_str().unwrap())
        ),
    );
    let finished = sh("finished", "exit 0");
    let mut ws = vec![
        launch(&Launcher::Local, &obedient).unwrap(),
        launch(&Launcher::Local, &stubborn).unwrap(),
        launch(&Launcher::Local, &finished).unwrap(),
    ];
    let p1: u32 = wait_for_file(&obedient_out).trim().parse().unwrap();
    let p2: u32 = wait_for_file(&stubborn_out).trim().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while ws[2].try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    let grace = Duration::from_millis(300);
    let start = Instant::now();
    let result = stop_all(&mut ws, grace);
    let took = start.elapsed();
    assert_eq!(
        result,
        vec![
            (
                "obedient".to_owned(),
                "ended by signal 15 (SIGTERM)".to_owned()
            ),
            (
                "stubborn".to_owned(),
                "killed with SIGKILL after a grace period of 300ms".to_owned()
            ),
            (
                "finished".to_owned(),
                "had already exited with status 0".to_owned()
            ),
        ]
    );
    assert!(
        took >= grace && took < Duration::from_secs(5),
        "stop_all took {took:?}"
    );
    assert!(!alive(p1) && !alive(p2));
    assert!(ws.iter().all(|w| w.pid().is_none()));
}

#[test]
fn stop_all_prompt_when_workers_obey() {
    let mut ws: Vec<Launched> = (0..3)
        .map(|i| {
            launch(
                &Launcher::Local,
                &sh(&format!("w{i}"), "exec cat > /dev/null"),
            )
            .unwrap()
        })
        .collect();
    let start = Instant::now();
    let result = stop_all(&mut ws, Duration::from_secs(10));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    let names: Vec<&str> = result.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["w0", "w1", "w2"]);
    for (_, how) in &result {
        // Either stdin EOF or SIGTERM ended it, whichever came first.
        assert!(
            how == "exited with status 0" || how == "ended by signal 15 (SIGTERM)",
            "{how}"
        );
    }
}

#[test]
fn log_gets_stdout_and_stderr() {
    let dir = TempDir::new("log");
    let log = dir.path("w.log");
    std::fs::write(&log, "earlier\n").unwrap();
    let mut c = sh("w-log", "echo to-out; echo to-err >&2");
    c.log = Some(log.clone());
    let mut w = launch(&Launcher::Local, &c).unwrap();
    assert!(w.wait().unwrap().success());
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "earlier\nto-out\nto-err\n"
    );
    c.log = Some(dir.path("missing/dir/w.log"));
    let err = launch(&Launcher::Local, &c).unwrap_err();
    assert!(err.to_string().contains("cannot open log file"), "{err}");
}

#[test]
fn drop_kills_the_worker() {
    let w = launch(
        &Launcher::Local,
        &sh("w-drop", "trap '' TERM; exec sleep 30"),
    )
    .unwrap();
    let pid = w.pid().unwrap();
    assert!(alive(pid));
    drop(w);
    assert!(!alive(pid));
}

#[test]
fn write_after_close_is_an_error() {
    let mut w = launch(&Launcher::Local, &sh("w-w", "exec cat > /dev/null")).unwrap();
    w.write_stdin(b"more\n").unwrap();
    w.close_stdin();
    assert_eq!(
        w.write_stdin(b"x").unwrap_err().kind(),
        io::ErrorKind::BrokenPipe
    );
    assert!(w.wait().unwrap().success());
}

#[test]
fn describe_statuses() {
    assert_eq!(describe(ExitStatus::from_raw(0)), "exited with status 0");
    assert_eq!(
        describe(ExitStatus::from_raw(2 << 8)),
        "exited with status 2"
    );
    assert_eq!(
        describe(ExitStatus::from_raw(libc::SIGKILL)),
        "ended by signal 9 (SIGKILL)"
    );
    assert_eq!(describe(ExitStatus::from_raw(40)), "ended by signal 40");
}
