//! The ssh launcher against a real sshd that the test starts on 127.0.0.1 with throw-away keys.
//! If sshd cannot run here, the tests fail (they never pass silently).

use pnet_launch::testing::{Sshd, alive, wait_gone};
use pnet_launch::{Launched, WorkerCommand, launch, shell_quote, stop_all};
use std::path::Path;
use std::time::{Duration, Instant};

fn wait_for_file(path: &Path, sshd: &Sshd) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(s) = std::fs::read_to_string(path)
            && s.ends_with('\n')
        {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{} did not appear within 15 s; sshd log: {}",
            path.display(),
            sshd.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A remote "worker": writes its pid, its stdin's first line, env and args to files, then
/// blocks reading stdin and exits at EOF (the contract of the launcher).
fn remote_worker(sshd: &Sshd, name: &str) -> WorkerCommand {
    let q = |f: &str| shell_quote(sshd.file(f).to_str().unwrap());
    let script = format!(
        "echo $$ > {pid}; read s; printf '%s|%s|%s|%s\\n' \"$s\" \"$PNET_TEST_VAR\" \"$PNET_OTHER\" \"$1\" > {out}; exec cat > /dev/null",
        pid = q(&format!("{name}.pid")),
        out = q(&format!("{name}.out")),
    );
    let mut c = WorkerCommand::new(name, "/bin/sh");
    c.host = "127.0.0.1".into();
    c.args = vec![
        "-c".into(),
        script,
        "sh".into(),
        "arg with 'quotes' $and spaces".into(),
    ];
    c.env = vec![
        ("PNET_TEST_VAR".into(), "it's \"quoted\" $HOME `x`".into()),
        ("PNET_OTHER".into(), "a,b;c".into()),
    ];
    c.stdin = Some(b"the secret\n".to_vec());
    c
}

fn start_remote(sshd: &Sshd, name: &str) -> (Launched, u32) {
    let w = launch(&sshd.launcher(), &remote_worker(sshd, name)).unwrap();
    let out = wait_for_file(&sshd.file(&format!("{name}.out")), sshd);
    assert_eq!(
        out,
        "the secret|it's \"quoted\" $HOME `x`|a,b;c|arg with 'quotes' $and spaces\n"
    );
    let pid: u32 = wait_for_file(&sshd.file(&format!("{name}.pid")), sshd)
        .trim()
        .parse()
        .unwrap();
    assert_ne!(
        Some(pid),
        w.pid(),
        "the worker must run under sshd, not as the local child"
    );
    assert!(alive(pid));
    (w, pid)
}

#[test]
fn ssh_killing_the_client_ends_the_remote_worker() {
    let sshd = Sshd::start("kill");
    let (mut w, remote) = start_remote(&sshd, "w1");
    // The worker keeps running while the ssh client (and so its stdin) is there.
    std::thread::sleep(Duration::from_millis(200));
    assert!(alive(remote) && w.try_wait().unwrap().is_none());
    // SIGKILL the ssh client alone, with our end of its stdin still open: the connection drops,
    // sshd closes the worker's stdin, and the worker ends.
    let ssh_pid = libc::pid_t::try_from(w.pid().unwrap()).unwrap();
    // SAFETY: kill(2) on our own unreaped child.
    assert_eq!(unsafe { libc::kill(ssh_pid, libc::SIGKILL) }, 0);
    let status = w.wait().unwrap();
    assert!(!status.success());
    assert!(
        wait_gone(remote, Duration::from_secs(10)),
        "remote worker {remote} survived its ssh client"
    );
}

#[test]
fn ssh_launched_kill_and_stop_all_end_remote_workers() {
    let sshd = Sshd::start("stop");
    let (mut a, pa) = start_remote(&sshd, "a");
    a.kill().unwrap();
    a.wait().unwrap();
    assert!(
        wait_gone(pa, Duration::from_secs(10)),
        "remote worker {pa} survived Launched::kill"
    );

    let (b, pb) = start_remote(&sshd, "b");
    let (c, pc) = start_remote(&sshd, "c");
    let mut ws = vec![b, c];
    let result = stop_all(&mut ws, Duration::from_secs(5));
    let names: Vec<&str> = result.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["b", "c"]);
    for (name, how) in &result {
        assert!(
            !how.contains("SIGKILL") && !how.contains("could not"),
            "{name}: {how}"
        );
    }
    assert!(wait_gone(pb, Duration::from_secs(10)) && wait_gone(pc, Duration::from_secs(10)));
}

#[test]
fn ssh_failure_is_reported() {
    let sshd = Sshd::start("fail");
    // A program that does not exist remotely: ssh exits with the remote status 127.
    let mut c = WorkerCommand::new("ghost", "/nonexistent/gspc-worker");
    c.host = "127.0.0.1".into();
    c.log = Some(sshd.file("ghost.log"));
    let mut w = launch(&sshd.launcher(), &c).unwrap();
    let status = w.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(127),
        "{}",
        std::fs::read_to_string(sshd.file("ghost.log")).unwrap_or_default()
    );
    let log = std::fs::read_to_string(sshd.file("ghost.log")).unwrap();
    assert!(log.contains("/nonexistent/gspc-worker"), "{log}");
}
