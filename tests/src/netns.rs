//! Hosts made of Linux network namespaces, for multi-host tests on one machine (root only).
//!
//! [`Hosts::start`] makes N "hosts": each is a network namespace with its own address in a
//! private `10.213.X.0/24` (one bridge in the root namespace holds `10.213.X.1`, the agent's
//! side; a veth pair per host; nothing is routed out of the machine), its own host name (a
//! UTS namespace for its sshd and everything started through it) and an sshd listening on
//! `10.213.X.H:22` (the throw-away server of `pnet_launch::testing`; every host takes the
//! first one's keys, so one client key reaches all). Names carry this process's id and a
//! counter, so concurrent runs do not meet; namespaces and links left by a killed test process
//! are removed by the next start.
//!
//! Dropping [`Hosts`] (also while a test panics) kills every process in the namespaces, then
//! removes the namespaces, links, the bridge and the temporary folder. The hosts of one test
//! process are made one set at a time (a lock held until the drop), so tests that use them
//! run one after the other.
//!
//! Faults: [`Hosts::cut`] (the host's link down), [`Hosts::freeze`] (SIGSTOP to its
//! processes), [`Hosts::lose`] (random packet drops with iptables' `statistic` match, or
//! nftables), [`Hosts::delay`] (`tc netem`, which needs the `sch_netem` kernel module: an
//! error where it is absent).

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pnet_launch::testing::{Sshd, SshdOptions};

/// The first two bytes of every address used.
const NET: &str = "10.213";

/// Prefix of namespace names; the rest is `<pid in hex>k<counter>h<host>`.
const NS_PREFIX: &str = "pnet-ns-";

/// One namespace host.
#[derive(Debug, Clone)]
pub struct Host {
    /// The network namespace (`ip netns exec NS ...`).
    pub ns: String,
    /// Its host name (what `hostname` prints on it; the workers' default host identity).
    pub hostname: String,
    /// Its address (what the nodefile names).
    pub addr: String,
    /// The root namespace's end of its veth pair (down = the host is cut off).
    pub veth: String,
}

/// N namespace hosts with an sshd each; torn down on drop.
pub struct Hosts {
    pub hosts: Vec<Host>,
    sshds: Vec<Sshd>,
    bridge: Option<String>,
    subnet: String,
    dir: PathBuf,
    _serial: MutexGuard<'static, ()>,
}

fn ip(args: &[&str]) -> Result<String, String> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

fn must(args: &[&str]) -> String {
    ip(args).unwrap_or_else(|e| panic!("{e}"))
}

/// The effective user id, read from `/proc/self/status`.
fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// Sends `signal` (a `kill` name: KILL, STOP, CONT) to the processes; how many got it.
fn signal(pids: &[u32], signal: &str) -> usize {
    pids.iter()
        .filter(|p| {
            Command::new("kill")
                .arg(format!("-{signal}"))
                .arg(p.to_string())
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .count()
}

/// The processes in a namespace.
fn ns_pids(ns: &str) -> Vec<u32> {
    ip(&["netns", "pids", ns])
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Kills every process in the namespace and waits (up to 5 s) until none is left.
fn empty_namespace(ns: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let pids = ns_pids(ns);
        if pids.is_empty() || Instant::now() > deadline {
            return;
        }
        signal(&pids, "KILL");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The process id embedded in a name `<prefix><pid in hex>k...`.
fn owner(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?;
    u32::from_str_radix(rest.split('k').next()?, 16).ok()
}

/// Removes namespaces, bridges and veths that a test process which is gone left behind.
fn remove_stale() {
    let dead = |pid: u32| !std::path::Path::new(&format!("/proc/{pid}")).exists();
    for line in ip(&["netns", "list"]).unwrap_or_default().lines() {
        let Some(ns) = line.split_whitespace().next() else {
            continue;
        };
        if owner(ns, NS_PREFIX).is_some_and(dead) {
            empty_namespace(ns);
            let _ = ip(&["netns", "del", ns]);
        }
    }
    for line in ip(&["-o", "link", "show"]).unwrap_or_default().lines() {
        // "12: pnb1a2bk0: <...>" or "13: pnv1a2bk0h1@if2: <...>"
        let Some(name) = line.split(": ").nth(1) else {
            continue;
        };
        let name = name.split('@').next().unwrap_or(name);
        if ["pnb", "pnv"]
            .iter()
            .any(|p| owner(name, p).is_some_and(dead))
        {
            let _ = ip(&["link", "del", name]);
        }
    }
}

/// A `10.213.X` not used by any address of the root namespace.
fn free_subnet(seed: u32) -> String {
    let used = ip(&["-4", "-o", "addr", "show"]).unwrap_or_default();
    (0..254u32)
        .map(|k| format!("{NET}.{}", (seed + k * 37) % 254 + 1))
        .find(|s| !used.contains(&format!(" {s}.")))
        .expect("a free 10.213.X.0/24")
}

/// Whether namespace hosts cannot be made here (not root, or no `ip netns`); says why on
/// stdout, as `skipped: ...`. Tests call it before their set-up (building binaries).
pub fn unavailable() -> bool {
    if euid() != Some(0) {
        println!(
            "skipped: the network-namespace tests need root (ip netns, veth pairs, sshd on the \
             namespaces' addresses); CI runs them as root"
        );
        return true;
    }
    if let Err(e) = ip(&["netns", "list"]) {
        println!("skipped: `ip netns` does not work here ({e}); install iproute2");
        return true;
    }
    false
}

impl Hosts {
    /// Makes `n` hosts (at most 200), or says on stdout why it cannot and returns `None`
    /// (see [`unavailable`]; or the first namespace cannot be made): the caller's test then
    /// passes without doing anything.
    pub fn start(tag: &str, n: usize) -> Option<Hosts> {
        assert!((1..=200).contains(&n), "1 to 200 hosts");
        static SERIAL: Mutex<()> = Mutex::new(());
        static COUNTER: Mutex<u32> = Mutex::new(0);
        if unavailable() {
            return None;
        }
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        remove_stale();
        let k = {
            let mut c = COUNTER.lock().unwrap_or_else(|e| e.into_inner());
            *c += 1;
            *c
        };
        let pid = std::process::id();
        let id = format!("{pid:x}k{k}");
        let dir = std::env::temp_dir().join(format!("pnet-netns-{tag}-{id}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let subnet = free_subnet(pid.wrapping_mul(7).wrapping_add(k));
        let mut hosts = Hosts {
            hosts: Vec::new(),
            sshds: Vec::new(),
            bridge: None,
            subnet: subnet.clone(),
            dir,
            _serial: serial,
        };
        // The first namespace tells whether namespaces work here at all.
        let first = format!("{NS_PREFIX}{id}h0");
        if let Err(e) = ip(&["netns", "add", &first]) {
            println!("skipped: cannot make a network namespace ({e})");
            return None;
        }
        hosts.hosts.push(Host {
            ns: first,
            hostname: format!("nshost0-{id}"),
            addr: format!("{subnet}.2"),
            veth: format!("pnv{id}h0"),
        });
        let bridge = format!("pnb{id}");
        must(&["link", "add", &bridge, "type", "bridge"]);
        hosts.bridge = Some(bridge.clone());
        must(&["addr", "add", &format!("{subnet}.1/24"), "dev", &bridge]);
        must(&["link", "set", &bridge, "up"]);
        for h in 0..n {
            if h > 0 {
                let ns = format!("{NS_PREFIX}{id}h{h}");
                must(&["netns", "add", &ns]);
                hosts.hosts.push(Host {
                    ns,
                    hostname: format!("nshost{h}-{id}"),
                    addr: format!("{subnet}.{}", h + 2),
                    veth: format!("pnv{id}h{h}"),
                });
            }
            let host = hosts.hosts[h].clone();
            let peer = format!("pnp{id}h{h}");
            must(&[
                "link", "add", &host.veth, "type", "veth", "peer", "name", &peer,
            ]);
            must(&["link", "set", &peer, "netns", &host.ns]);
            must(&["link", "set", &host.veth, "master", &bridge, "up"]);
            let ns = host.ns.as_str();
            must(&["-n", ns, "link", "set", &peer, "name", "eth0"]);
            must(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{}/24", host.addr),
                "dev",
                "eth0",
            ]);
            must(&["-n", ns, "link", "set", "eth0", "up"]);
            must(&["-n", ns, "link", "set", "lo", "up"]);
        }
        for h in 0..n {
            let host = &hosts.hosts[h];
            let prefix: Vec<String> = [
                "ip",
                "netns",
                "exec",
                &host.ns,
                "unshare",
                "--uts",
                "/bin/sh",
                "-c",
                "hostname \"$0\" && exec \"$@\"",
                &host.hostname,
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            let options = SshdOptions {
                addr: host.addr.parse().unwrap(),
                port: 22,
                prefix,
                keys_from: hosts.sshds.first().map(|s| s.dir().to_path_buf()),
            };
            let sshd = Sshd::start_with(&format!("{tag}-{id}h{h}"), &options);
            hosts.sshds.push(sshd);
        }
        Some(hosts)
    }

    /// The root namespace's address on the hosts' network (where an agent listens).
    pub fn agent_addr(&self) -> String {
        format!("{}.1", self.subnet)
    }

    /// The hosts' addresses, one a line (a nodefile).
    pub fn nodefile(&self) -> String {
        self.hosts.iter().map(|h| format!("{}\n", h.addr)).collect()
    }

    /// The ssh client options that reach every host (as `gspc-run --ssh-option=...` takes
    /// them).
    pub fn ssh_args(&self) -> Vec<String> {
        self.sshds[0].ssh_args()
    }

    /// A temporary folder of this set of hosts (removed on drop).
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// A command run inside host `h`'s namespace.
    pub fn exec(&self, h: usize, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.hosts[h].ns, program]);
        c
    }

    /// The processes running on host `h`.
    pub fn pids(&self, h: usize) -> Vec<u32> {
        ns_pids(&self.hosts[h].ns)
    }

    /// Cuts host `h` off (its link down): packets to and from it are lost, no connection is
    /// reset.
    pub fn cut(&self, h: usize) {
        must(&["link", "set", &self.hosts[h].veth, "down"]);
    }

    /// Brings host `h`'s link back.
    pub fn reconnect(&self, h: usize) {
        must(&["link", "set", &self.hosts[h].veth, "up"]);
    }

    /// Stops every process on host `h` (SIGSTOP); how many were stopped.
    pub fn freeze(&self, h: usize) -> usize {
        signal(&self.pids(h), "STOP")
    }

    /// Lets host `h`'s processes run again (SIGCONT).
    pub fn thaw(&self, h: usize) -> usize {
        signal(&self.pids(h), "CONT")
    }

    /// Drops each packet host `h` receives or sends with the given probability (0 to 1):
    /// iptables' `statistic` match, else an nftables `numgen` rule. The error says why
    /// neither works.
    pub fn lose(&self, h: usize, probability: f64) -> Result<String, String> {
        let p = format!("{probability:.4}");
        let iptables = ["INPUT", "OUTPUT"].iter().try_for_each(|chain| {
            let o = self
                .exec(h, "iptables")
                .args(["-A", chain, "-m", "statistic", "--mode", "random"])
                .args(["--probability", &p, "-j", "DROP"])
                .output()
                .map_err(|e| format!("iptables: {e}"))?;
            if o.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "iptables: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ))
            }
        });
        let Err(iptables_error) = iptables else {
            return Ok(format!("iptables statistic --probability {p}"));
        };
        let permille = (probability * 1000.0).round() as u32;
        let rule = format!("numgen random mod 1000 < {permille} counter drop");
        let script = format!(
            "table inet pnetloss {{\n\
             chain in {{ type filter hook input priority 0; {rule}; }}\n\
             chain out {{ type filter hook output priority 0; {rule}; }}\n\
             }}\n"
        );
        let file = self.dir.join(format!("loss{h}.nft"));
        std::fs::write(&file, script).unwrap();
        match self
            .exec(h, "nft")
            .arg("-f")
            .arg(&file)
            .output()
            .map_err(|e| e.to_string())
        {
            Ok(o) if o.status.success() => Ok(format!("nft numgen random mod 1000 < {permille}")),
            Ok(o) => Err(format!(
                "{iptables_error}; nft: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => Err(format!("{iptables_error}; nft: {e}")),
        }
    }

    /// How many packets the rules of [`Hosts::lose`] dropped on host `h` so far.
    pub fn dropped(&self, h: usize) -> u64 {
        let text = |o: std::io::Result<std::process::Output>| match o {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
            _ => String::new(),
        };
        // iptables -L -v -x: "pkts bytes target ..." per rule.
        let iptables = text(
            self.exec(h, "iptables")
                .args(["-L", "-v", "-x", "-n"])
                .output(),
        );
        let mut n: u64 = (iptables.lines())
            .filter(|l| l.contains("DROP") && l.contains("statistic"))
            .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        // nft: "... counter packets N bytes M drop".
        let nft = text(
            self.exec(h, "nft")
                .args(["list", "table", "inet", "pnetloss"])
                .output(),
        );
        for l in nft.lines() {
            let mut words = l.split_whitespace();
            while let Some(w) = words.next() {
                if w == "packets" {
                    n += words
                        .next()
                        .and_then(|p| p.parse::<u64>().ok())
                        .unwrap_or(0);
                }
            }
        }
        n
    }

    /// Delays every packet host `h` sends by `ms` milliseconds (`tc qdisc ... netem`); the
    /// error is tc's (where the kernel has no `sch_netem`: "Specified qdisc kind is unknown").
    pub fn delay(&self, h: usize, ms: u32) -> Result<(), String> {
        let o = self
            .exec(h, "tc")
            .args(["qdisc", "add", "dev", "eth0", "root", "netem", "delay"])
            .arg(format!("{ms}ms"))
            .output()
            .map_err(|e| format!("cannot run tc: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&o.stderr).trim().to_string())
        }
    }

    /// The bridge in the root namespace.
    pub fn bridge(&self) -> &str {
        self.bridge.as_deref().unwrap_or_default()
    }

    /// The sshds' process ids.
    pub fn sshd_pids(&self) -> Vec<u32> {
        self.sshds.iter().filter_map(Sshd::pid).collect()
    }

    /// The sshds' logs, for failure messages.
    pub fn log(&self) -> String {
        (self.sshds.iter().zip(&self.hosts))
            .map(|(s, h)| format!("--- sshd on {}:\n{}", h.addr, s.log()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // The servers first (each kills and reaps its own process), then whatever else runs
        // in the namespaces (sessions, workers, modules; stopped ones too).
        self.sshds.clear();
        for h in &self.hosts {
            empty_namespace(&h.ns);
            let _ = ip(&["netns", "del", &h.ns]);
            // Gone with the namespace's end; removed here if the pair never got there.
            let _ = ip(&["link", "del", &h.veth]);
        }
        if let Some(b) = &self.bridge {
            let _ = ip(&["link", "del", b]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
