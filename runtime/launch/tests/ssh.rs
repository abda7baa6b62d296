//! The ssh launcher against a real sshd that the test starts on 127.0.0.1 with throw-away keys.
//! If sshd cannot run here, the tests fail (they never pass silently).

use pnet_launch::{Launched, Launcher, SshOptions, WorkerCommand, launch, shell_quote, stop_all};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

/// A throw-away sshd, killed and cleaned up on drop.
struct Sshd {
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Sshd {
    fn start(tag: &str) -> Sshd {
        assert!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing: install openssh-server (.ci/setup does) to run the ssh launcher tests"
        );
        let dir =
            std::env::temp_dir().join(format!("pnet-launch-sshd-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut sshd = Sshd {
            dir: dir.clone(),
            port: 0,
            child: None,
        };
        // sshd wants its privilege separation directory.
        let privsep = Path::new("/run/sshd");
        if !privsep.exists() {
            // SAFETY: geteuid has no preconditions.
            let root = unsafe { libc::geteuid() } == 0;
            assert!(
                root,
                "/run/sshd is missing and only root can create it (mkdir -p /run/sshd)"
            );
            std::fs::create_dir_all(privsep).unwrap();
        }
        for (key, kind) in [("host_key", "ed25519"), ("user_key", "ed25519")] {
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", kind, "-N", "", "-C", "pnet-launch-test", "-f"])
                .arg(dir.join(key)));
        }
        std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        sshd.port = port;
        let config = format!(
            "ListenAddress 127.0.0.1\nPort {port}\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PidFile {d}/sshd.pid\nStrictModes no\nUsePAM no\nPermitRootLogin yes\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nLogLevel ERROR\n",
            d = dir.display()
        );
        std::fs::write(dir.join("sshd_config"), config).unwrap();
        run(Command::new(SSHD)
            .arg("-t")
            .arg("-f")
            .arg(dir.join("sshd_config")));
        let log = std::fs::File::create(dir.join("sshd.log")).unwrap();
        let child = Command::new(SSHD)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(dir.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {SSHD}: {e}"));
        sshd.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(c) = sshd.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                panic!("sshd exited at start ({status}): {}", sshd.log());
            }
            assert!(
                Instant::now() < deadline,
                "sshd did not listen within 10 s: {}",
                sshd.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        sshd
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }

    fn launcher(&self) -> Launcher {
        let key = self.dir.join("user_key");
        let args = [
            "-F",
            "/dev/null",
            "-p",
            &self.port.to_string(),
            "-i",
            key.to_str().unwrap(),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            "-o",
            "ConnectTimeout=10",
        ];
        Launcher::Ssh(SshOptions {
            program: "ssh".into(),
            args: args.iter().map(|s| s.to_string()).collect(),
        })
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

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

/// True while a process exists and is not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

fn wait_gone(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !alive(pid)
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
