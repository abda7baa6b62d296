//! Global memory end to end with real processes: `gspc-run` and `gspc` start `gspc-worker`s
//! with working memory (a shm size in the topology); a C++ module (built by `pnetc
//! --build-modules`) gets a global range into its local buffer, adds 1 to every byte, and
//! puts it back (`memory-getput`), returning the sum of the bytes it got. The global memory
//! comes from `gspc-run --alloc` (read back with `--dump`) or from `gspc alloc` / `mem-write`
//! (read back with `mem-read`). Every allocation is spread over both workers' segments, so
//! every task moves bytes between workers: through shared memory on one host, and over TCP
//! between "hosts" (`--fake-hosts 2` gives the two workers different host identities).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use pnet_tests::{build_packages, line_of};

/// Two workers with 1 MiB of working memory each.
const TOPOLOGY: &str = "worker:2,1048576";

/// The net (with GPI-Space's `memory/global/range.xpnet` structs written out, so it needs no
/// corpus): ports `a` and `b` each take a global range onto place `m`; transition `work`
/// runs the module on each and puts the sums of the bytes it got on `sums`.
const INC_NET: &str = include_str!("../data/memory/inc.xpnet");

/// A transfer whose local side is one byte longer than its global side.
const BAD_NET: &str = r#"<defun name="bad">
  <struct name="global_memory_handle_type"><field name="name" type="string"/></struct>
  <struct name="global_memory_range">
    <field name="handle" type="global_memory_handle_type"/>
    <field name="offset" type="unsigned long"/>
    <field name="size" type="unsigned long"/>
  </struct>
  <in name="a" type="global_memory_range" place="a"/>
  <out name="done" type="control" place="done"/>
  <net>
    <place name="a" type="global_memory_range"/>
    <place name="done" type="control"/>
    <transition name="work">
      <defun>
        <in name="range" type="global_memory_range"/>
        <out name="done" type="control"/>
        <memory-buffer name="data">
          <size>${range.size} + 1UL</size>
        </memory-buffer>
        <memory-get>
          <global>stack_push (List(), ${range})</global>
          <local>
            ${r.buffer} := "data";
            ${r.offset} := 0UL;
            ${r.size} := ${range.size} + 1UL;
            stack_push (List(), ${r})
          </local>
        </memory-get>
        <module name="never_built" function="done run (data)"/>
      </defun>
      <connect-in port="range" place="a"/>
      <connect-out port="done" place="done"/>
    </transition>
  </net>
</defun>
"#;

/// The folder with the binaries (built once per test run).
fn bin_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| build_packages(&["pnetc", "gspc-run", "pnet-worker", "pnet-gspc"]))
}

/// A private scratch folder (mode 700) with a state directory `state` inside; a runtime a
/// failed test left behind is stopped when it is dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pnet-memory-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("state")).unwrap();
        for d in [dir.clone(), dir.join("state")] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn gspc(&self, args: &[&str]) -> Output {
        pnet_tests::gspc_in(&bin_dir().join("gspc"), &self.path("state"), args)
    }

    fn ok(&self, args: &[&str]) -> String {
        pnet_tests::gspc_ok_in(&bin_dir().join("gspc"), &self.path("state"), args)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.path("state/gspc.pid").exists() {
            let _ = self.gspc(&["stop"]);
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The C++ module of the net, built once into its own folder.
fn modules() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("pnet-memory-modules-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let net = dir.join("inc.xpnet");
        std::fs::write(&net, INC_NET).unwrap();
        let o = Command::new(bin_dir().join("pnetc"))
            .arg(&net)
            .arg("--build-modules")
            .arg(&dir)
            .arg("-o")
            .arg(dir.join("inc.pnet"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "pnetc --build-modules failed:\n{}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        assert!(dir.join("libinc_module.so").is_file());
        dir
    })
}

fn inc_bundle() -> PathBuf {
    modules().join("inc.pnet")
}

fn gspc_run(net: &Path, extra: &[&str]) -> Output {
    Command::new(bin_dir().join("gspc-run"))
        .arg(net)
        .arg("--module-path")
        .arg(modules())
        .args(["--topology", TOPOLOGY, "--no-progress"])
        .args(extra)
        .env_remove("PNET_MODULE_PATH")
        .output()
        .unwrap()
}

/// Bytes that are not all alike: `i * 7 + seed` modulo 251.
fn pattern(n: usize, seed: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 7 + seed) % 251) as u8).collect()
}

fn plus_one(b: &[u8]) -> Vec<u8> {
    b.iter().map(|x| x.wrapping_add(1)).collect()
}

fn sum(b: &[u8]) -> u64 {
    b.iter().map(|&x| u64::from(x)).sum()
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

/// The values of the `sums = NUL` lines of a run's output, sorted.
fn sums(stdout: &[u8]) -> Vec<u64> {
    let v = text(stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("sums = "))
        .map(|n| n.trim_end_matches("UL").parse().expect("a number"))
        .collect();
    sorted(v)
}

/// `--alloc a=@FILE --alloc b=SIZE --dump ...` on two workers, with the given extra options;
/// checks the sums, the dumps, and returns the event log.
fn round_trip_with_gspc_run(name: &str, extra: &[&str]) -> String {
    let s = Scratch::new(name);
    let a = pattern(3001, 5);
    let input = s.write("a.bin", &a);
    let (out_a, out_b, log) = (s.path("a.out"), s.path("b.out"), s.path("events.log"));
    let allocs = [
        format!("a=@{}", input.display()),
        "b=1500".to_string(),
        format!("a={}", out_a.display()),
        format!("b={}", out_b.display()),
    ];
    let mut args = vec![
        "--alloc",
        &allocs[0],
        "--alloc",
        &allocs[1],
        "--dump",
        &allocs[2],
        "--dump",
        &allocs[3],
        "--log",
        log.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = gspc_run(&inc_bundle(), &args);
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        o.status.success(),
        "gspc-run failed:\n{}{}\nlog:\n{log}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert_eq!(sums(&o.stdout), sorted(vec![sum(&a), 0]));
    assert_eq!(std::fs::read(&out_a).unwrap(), plus_one(&a));
    assert_eq!(std::fs::read(&out_b).unwrap(), vec![1u8; 1500]);
    // Both workers offered their memory, and both allocations were freed at the end.
    assert_eq!(log.matches("of working memory on host").count(), 2, "{log}");
    assert!(
        log.contains("for port `a`") && log.contains("for port `b`"),
        "{log}"
    );
    assert!(!log.contains("cannot free"), "{log}");
    log
}

/// The host identities the workers reported, in the order of the log.
fn segment_hosts(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.split_once("of working memory on host `"))
        .filter_map(|(_, rest)| rest.split_once('`'))
        .map(|(host, _)| host.to_string())
        .collect()
}

#[test]
fn gspc_run_allocs_moves_and_dumps_through_shared_memory() {
    let log = round_trip_with_gspc_run("local", &[]);
    let hosts = segment_hosts(&log);
    assert_eq!(hosts.len(), 2, "{log}");
    assert_eq!(hosts[0], hosts[1], "one host: {log}");
    assert!(!hosts[0].starts_with("local-"), "{log}");
}

#[test]
fn gspc_run_moves_memory_between_hosts_over_tcp() {
    let log = round_trip_with_gspc_run("hosts", &["--fake-hosts", "2"]);
    let mut hosts = segment_hosts(&log);
    hosts.sort();
    assert_eq!(hosts, vec!["local-0", "local-1"], "{log}");
}

#[test]
fn a_wrong_transfer_fails_the_run_naming_the_transition_and_the_transfer() {
    let s = Scratch::new("bad");
    let net = s.write("bad.xpnet", BAD_NET.as_bytes());
    let o = gspc_run(&net, &["--alloc", "a=64"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let err = text(&o.stderr);
    let work = line_of(BAD_NET, "<transition name=\"work\">", 1).unwrap();
    let get = line_of(BAD_NET, "<memory-get>", 1).unwrap();
    let want = format!(
        "gspc-run: error: in transition `work` ({}:{work}:",
        net.display()
    );
    assert!(err.contains(&want), "{err}");
    assert!(
        err.contains(&format!("{}:{get}:", net.display())),
        "names the transfer: {err}"
    );
    assert!(
        err.contains("64 bytes") && err.contains("65 bytes"),
        "{err}"
    );
}

#[test]
fn gspc_run_memory_usage_errors() {
    let s = Scratch::new("usage");
    let net = s.write("bad.xpnet", BAD_NET.as_bytes());
    let net = net.to_str().unwrap();
    let run = |args: &[&str]| {
        Command::new(bin_dir().join("gspc-run"))
            .arg(net)
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&["--alloc", "a=lots"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--alloc a=lots: 'lots' is not a size"),
        "{}",
        text(&o.stderr)
    );
    let o = run(&["--dump", "a=out.bin"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("there is no --alloc a=..."),
        "{}",
        text(&o.stderr)
    );
    let o = run(&["--alloc", "a=@/nonexistent/file"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("cannot read /nonexistent/file"),
        "{}",
        text(&o.stderr)
    );
    // The default topology gives workers working memory when the net uses memory.
    let o = run(&["--dry-run"]);
    assert!(o.status.success());
    assert!(text(&o.stdout).contains("67108864"), "{}", text(&o.stdout));
    let o = Command::new(bin_dir().join("gspc-run"))
        .arg("--help")
        .output()
        .unwrap();
    let help = text(&o.stdout);
    for opt in [
        "--alloc PORT=SIZE",
        "--alloc PORT=@FILE",
        "--dump PORT=FILE",
        "--fake-hosts N",
        "64 MiB",
    ] {
        assert!(help.contains(opt), "--help lacks {opt}");
    }
}

#[test]
fn the_gspc_runtime_serves_global_memory_to_clients_and_jobs() {
    let s = Scratch::new("daemon");
    s.ok(&[
        "boot",
        "--topology",
        TOPOLOGY,
        "--fake-hosts",
        "2",
        "--module-path",
        modules().to_str().unwrap(),
        "--timeout",
        "30",
    ]);
    // Both segments are there once the workers have joined.
    let t = std::time::Instant::now();
    loop {
        let st: serde_json::Value = serde_json::from_str(&s.ok(&["status", "--json"])).unwrap();
        if st["memory"]["segments"] == 2 {
            assert_eq!(st["memory"]["capacity"], 2 * 1048576);
            break;
        }
        assert!(t.elapsed().as_secs() < 20, "no segments: {st:#}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // a: allocated from a file; b: allocated, then written with mem-write at an offset.
    let a = pattern(2000, 1);
    let a_file = s.write("a.bin", &a);
    let out = s.ok(&["alloc", "--from", a_file.to_str().unwrap()]);
    let mut lines = out.lines();
    let (ha, ra) = (
        lines.next().unwrap().to_string(),
        lines.next().unwrap().to_string(),
    );
    assert!(ha.starts_with("0x"), "{out}");
    assert!(
        ra.contains(&format!("name := \"{ha}\"")) && ra.contains("size := 2000UL"),
        "{ra}"
    );
    let out = s.ok(&["alloc", "1K", "--json"]);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (hb, rb) = (
        j["handle"].as_str().unwrap().to_string(),
        j["range"].as_str().unwrap().to_string(),
    );
    assert_eq!(j["size"], 1024);
    let b_part = pattern(100, 9);
    let b_file = s.write("b.bin", &b_part);
    s.ok(&[
        "mem-write",
        &hb,
        "--offset",
        "500",
        b_file.to_str().unwrap(),
    ]);
    let mut b = vec![0u8; 1024];
    b[500..600].copy_from_slice(&b_part);
    let b_back = s.path("b.back");
    s.ok(&[
        "mem-read",
        &hb,
        "--size",
        "1024",
        "-o",
        b_back.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read(&b_back).unwrap(), b);

    // A job on both.
    let job = s
        .ok(&[
            "submit",
            inc_bundle().to_str().unwrap(),
            "-p",
            &format!("a={ra}"),
            "-p",
            &format!("b={rb}"),
        ])
        .trim()
        .to_string();
    let out = s.ok(&["wait", &job]);
    assert_eq!(
        sums(out.as_bytes()),
        sorted(vec![sum(&a), sum(&b)]),
        "{out}"
    );
    let o = s.gspc(&["mem-read", &ha, "--size", "2000"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(o.stdout, plus_one(&a));
    let o = s.gspc(&["mem-read", &hb, "--offset", "499", "--size", "3"]);
    assert_eq!(o.stdout, plus_one(&b[499..502]));

    // The status shows the memory: per host, and what the task moved.
    let st: serde_json::Value = serde_json::from_str(&s.ok(&["status", "--json"])).unwrap();
    let m = &st["memory"];
    assert_eq!(
        (m["allocations"].as_u64(), m["allocated"].as_u64()),
        (Some(2), Some(3024))
    );
    assert_eq!(
        (m["bytes_got"].as_u64(), m["bytes_put"].as_u64()),
        (Some(3024), Some(3024))
    );
    let hosts: Vec<&str> = m["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, vec!["local-0", "local-1"]);
    let table = s.ok(&["status"]);
    assert!(
        table.contains("memory: 2 segments, 2 MiB capacity"),
        "{table}"
    );
    assert!(
        table.contains("host local-1: 1 segments, 1 MiB capacity"),
        "{table}"
    );

    // Errors name what is wrong; then free.
    let o = s.gspc(&["mem-read", &ha, "--offset", "1990", "--size", "20"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("outside"), "{}", text(&o.stderr));
    let o = s.gspc(&["free", "0x1234"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("0x1234"), "{}", text(&o.stderr));
    s.ok(&["free", &ha]);
    s.ok(&["free", &hb]);
    let st: serde_json::Value = serde_json::from_str(&s.ok(&["status", "--json"])).unwrap();
    assert_eq!(st["memory"]["allocations"], 0);
    s.ok(&["stop"]);
}
