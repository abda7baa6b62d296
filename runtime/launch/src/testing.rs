//! Throw-away servers for tests, killed and cleaned up on drop; they panic with a clear message
//! when they cannot run (tests must not pass silently):
//! - [`Sshd`]: an OpenSSH server on 127.0.0.1 on a free port with fresh host and user keys in
//!   a temporary folder (this crate's ssh launcher tests, `--launcher ssh` end to end), or
//!   through [`Sshd::start_with`] on another address, started through a command prefix (such
//!   as `ip netns exec NS`) and with the keys of another server (the network-namespace hosts
//!   of `pnet_tests::netns`);
//! - [`Slurm`]: a one-node Slurm cluster (munged, slurmctld, slurmd on this host, free ports,
//!   its own munge key, socket and state folders) for `--launcher slurm` end to end.

use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
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

/// Where and how [`Sshd::start_with`] runs a server.
#[derive(Debug, Clone)]
pub struct SshdOptions {
    /// The address it listens on.
    pub addr: IpAddr,
    /// Its port; 0 picks a free port on `addr` (free when asked).
    pub port: u16,
    /// Words put before the sshd command line (e.g. `ip netns exec NS`); the last of them must
    /// exec its arguments, so that the started process is the server.
    pub prefix: Vec<String>,
    /// The folder of another server whose host key and user key this one takes (one client
    /// key then reaches every server), instead of making fresh ones.
    pub keys_from: Option<PathBuf>,
}

impl Default for SshdOptions {
    fn default() -> Self {
        SshdOptions {
            addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            prefix: Vec::new(),
            keys_from: None,
        }
    }
}

impl Sshd {
    /// A server on 127.0.0.1 on a free port, with fresh keys.
    pub fn start(tag: &str) -> Sshd {
        Sshd::start_with(tag, &SshdOptions::default())
    }

    /// A server as `options` say; its folder is named after `tag` and this process.
    pub fn start_with(tag: &str, options: &SshdOptions) -> Sshd {
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
        for key in ["host_key", "user_key"] {
            match &options.keys_from {
                Some(from) => {
                    for file in [key.to_string(), format!("{key}.pub")] {
                        std::fs::copy(from.join(&file), dir.join(&file)).unwrap_or_else(|e| {
                            panic!("cannot copy {}: {e}", from.join(&file).display())
                        });
                    }
                }
                None => run(Command::new("ssh-keygen")
                    .args([
                        "-q",
                        "-t",
                        "ed25519",
                        "-N",
                        "",
                        "-C",
                        "pnet-launch-test",
                        "-f",
                    ])
                    .arg(dir.join(key))),
            }
        }
        std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
        let addr = options.addr;
        let port = match options.port {
            0 => {
                let l = TcpListener::bind((addr, 0)).unwrap();
                l.local_addr().unwrap().port()
            }
            p => p,
        };
        sshd.port = port;
        let config = format!(
            "ListenAddress {addr}\nPort {port}\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
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
        let mut command = match options.prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(SSHD);
                c
            }
            None => Command::new(SSHD),
        };
        let child = command
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
        while TcpStream::connect((addr, port)).is_err() {
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

    /// Its folder (keys, configuration, log), for [`SshdOptions::keys_from`].
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The pid of the process started (the server itself: the prefix execs it).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
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

/// A one-node Slurm cluster of this host, for tests: munged with its own key and socket,
/// slurmctld and slurmd on free ports, all state in a temporary folder. Commands run in it
/// through [`Slurm::command`] (which points Slurm's clients at its configuration).
pub struct Slurm {
    dir: PathBuf,
    children: Vec<Child>,
}

/// A free TCP port on 127.0.0.1 (free when asked).
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Slurm {
    pub fn start(tag: &str) -> Slurm {
        for bin in [
            "/usr/sbin/munged",
            "/usr/sbin/slurmctld",
            "/usr/sbin/slurmd",
        ] {
            assert!(
                Path::new(bin).exists(),
                "{bin} is missing: install munge and slurm-wlm (.ci/setup does) to run the Slurm launcher tests"
            );
        }
        let dir =
            std::env::temp_dir().join(format!("pnet-launch-slurm-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["munge", "state", "spool"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let mut slurm = Slurm {
            dir: dir.clone(),
            children: Vec::new(),
        };
        // munged: its own key (0400 in a 0700 folder) and socket.
        use std::os::unix::fs::PermissionsExt;
        let key: Vec<u8> = (0..1024u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) ^ std::process::id()) as u8)
            .collect();
        let munge = dir.join("munge");
        std::fs::set_permissions(&munge, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(munge.join("key"), key).unwrap();
        std::fs::set_permissions(munge.join("key"), std::fs::Permissions::from_mode(0o400))
            .unwrap();
        let socket = munge.join("socket");
        run(Command::new("/usr/sbin/munged")
            .arg("--force")
            .arg(format!("--key-file={}", munge.join("key").display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", munge.join("pid").display()))
            .arg(format!("--log-file={}", munge.join("log").display()))
            .arg(format!("--seed-file={}", munge.join("seed").display())));
        // The node is this host under its short name (as slurmd finds itself), reached on
        // loopback; as many CPUs as this process may use.
        let host = Command::new("hostname")
            .arg("-s")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|h| !h.is_empty())
            .expect("hostname -s");
        let user = Command::new("id")
            .arg("-un")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .expect("id -un");
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let d = dir.display();
        let config = format!(
            "ClusterName=pnettest\nSlurmctldHost={host}(127.0.0.1)\nSlurmUser={user}\nSlurmdUser={user}\n\
             SlurmctldPort={}\nSlurmdPort={}\nAuthType=auth/munge\nAuthInfo=socket={}\n\
             CredType=cred/munge\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSwitchType=switch/none\n\
             MpiDefault=none\nReturnToService=2\nSchedulerType=sched/builtin\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nJobCompType=jobcomp/none\n\
             JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n\
             PlugStackConfig=/dev/null\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
             PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            free_port(),
            free_port(),
            socket.display(),
        );
        std::fs::write(dir.join("slurm.conf"), config).unwrap();
        for daemon in ["/usr/sbin/slurmctld", "/usr/sbin/slurmd"] {
            let log = std::fs::File::create(dir.join(format!(
                "{}.out",
                Path::new(daemon).file_name().unwrap().to_string_lossy()
            )))
            .unwrap();
            let child = Command::new(daemon)
                .arg("-D")
                .arg("-f")
                .arg(dir.join("slurm.conf"))
                .env("SLURM_CONF", dir.join("slurm.conf"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {daemon}: {e}"));
            slurm.children.push(child);
        }
        // Ready when the node takes jobs.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = slurm.command("sinfo").args(["-h", "-o", "%t"]).output();
            if let Ok(o) = &out
                && o.status.success()
                && String::from_utf8_lossy(&o.stdout).trim() == "idle"
            {
                break;
            }
            for c in &mut slurm.children {
                if let Ok(Some(status)) = c.try_wait() {
                    panic!("a Slurm daemon exited at start ({status}): {}", slurm.log());
                }
            }
            assert!(
                Instant::now() < deadline,
                "the Slurm node was not idle within 30 s ({out:?}): {}",
                slurm.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        slurm
    }

    /// A command of Slurm's clients (`salloc`, `srun`, `sinfo`, ...) for this cluster.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", self.dir.join("slurm.conf"));
        c
    }

    /// The daemons' logs, for failure messages.
    pub fn log(&self) -> String {
        [
            "slurmctld.log",
            "slurmd.log",
            "slurmctld.out",
            "slurmd.out",
            "munge/log",
        ]
        .iter()
        .map(|f| {
            format!(
                "--- {f}:\n{}",
                std::fs::read_to_string(self.dir.join(f)).unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("munge/pid"))
            && let Ok(pid) = pid.trim().parse::<i32>()
        {
            // SAFETY: plain system call on the munged this cluster started.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
