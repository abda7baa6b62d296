//! A throw-away OpenSSH server for tests: started on 127.0.0.1 on a free port with fresh host
//! and user keys in a temporary folder, killed and cleaned up on drop. Used by this crate's
//! ssh launcher tests and by the workspace's end-to-end runs of `gspc-run --launcher ssh`.
//! It panics with a clear message when sshd cannot run (tests must not pass silently).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Launcher, SshOptions};

const SSHD: &str = "/usr/sbin/sshd";

/// A throw-away sshd, killed and cleaned up on drop.
pub struct Sshd {
    dir: PathBuf,
    pub port: u16,
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
    pub fn start(tag: &str) -> Sshd {
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

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }

    /// The ssh client options that reach this server (each option and its value in one
    /// word, as `gspc-run --ssh-option=...` takes them).
    pub fn ssh_args(&self) -> Vec<String> {
        let key = self.dir.join("user_key");
        vec![
            "-F/dev/null".into(),
            format!("-p{}", self.port),
            format!("-i{}", key.display()),
            "-oStrictHostKeyChecking=no".into(),
            "-oUserKnownHostsFile=/dev/null".into(),
            "-oLogLevel=ERROR".into(),
            "-oConnectTimeout=10".into(),
        ]
    }

    /// The ssh launcher with [`Sshd::ssh_args`].
    pub fn launcher(&self) -> Launcher {
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

    pub fn file(&self, name: &str) -> PathBuf {
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

/// True while a process exists and is not a zombie (read from `/proc`).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// Waits until the process is gone (or a zombie); false if it is still alive after `within`.
pub fn wait_gone(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    !alive(pid)
}
