//! `gspc-selftest` on a copy of the installation: every check passes on a complete one, and
//! breaking one piece at a time fails exactly the check that covers it, with a precise line,
//! exit code 1, while the other checks still report.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The binaries and the native modules an installation needs (libarith.so for the memory
/// check).
const INSTALLED: [&str; 6] = [
    "pnetc",
    "gspc-run",
    "gspc-worker",
    "gspc-selftest",
    "libnoop.so",
    "libarith.so",
];

const CHECKS: [&str; 8] = [
    "binaries",
    "compiler",
    "vm",
    "jit",
    "workers",
    "command-module",
    "native-module",
    "memory",
];

/// A private directory removed at the end.
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh install directory holding (links to, else copies of) the built pieces.
fn install(built: &Path, tag: &str) -> Dir {
    let dir = std::env::temp_dir().join(format!(
        "pnet-selftest-install-{}-{tag}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the install dir");
    for f in INSTALLED {
        let (from, to) = (built.join(f), dir.join(f));
        if std::fs::hard_link(&from, &to).is_err() {
            std::fs::copy(&from, &to)
                .unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
        }
    }
    Dir(dir)
}

/// Replaces `path` by a new file (never writing through a hard link to the build).
fn replace(path: &Path, text: &[u8], executable: bool) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::remove_file(path).expect("remove the installed file");
    std::fs::write(path, text).expect("write the replacement");
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

struct Run {
    code: Option<i32>,
    stdout: String,
    /// (status word, check name, the whole line).
    lines: Vec<(String, String, String)>,
}

impl Run {
    fn line(&self, check: &str) -> &str {
        self.lines
            .iter()
            .find(|(_, n, _)| n == check)
            .map(|(_, _, l)| l.as_str())
            .unwrap_or_else(|| panic!("no line for {check}:\n{}", self.stdout))
    }

    fn statuses(&self) -> Vec<(&str, &str)> {
        self.lines
            .iter()
            .map(|(s, n, _)| (n.as_str(), s.as_str()))
            .collect()
    }
}

/// Runs the installed gspc-selftest of `dir` with `args`, with `dir/tmp` as its TMPDIR.
fn selftest(dir: &Path, args: &[&str]) -> Run {
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).expect("create the TMPDIR");
    let out = Command::new(dir.join("gspc-selftest"))
        .args(args)
        .env("TMPDIR", &tmp)
        .env_remove("PNET_MODULE_PATH")
        .env_remove("GSPC_WORKER")
        .output()
        .expect("run gspc-selftest");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines = stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let status = words.next()?;
            let name = words.next()?;
            matches!(status, "ok" | "FAIL" | "skip")
                .then(|| (status.to_string(), name.to_string(), l.to_string()))
        })
        .collect();
    Run {
        code: out.status.code(),
        stdout: format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)),
        lines,
    }
}

/// Every check reported, in order; the named ones with the given status, the others ok; a
/// summary that counts them, and exit code 1 when one failed, else 0.
fn expect(run: &Run, fails: &[&str], skips: &[&str]) {
    let want: Vec<(&str, &str)> = CHECKS
        .iter()
        .map(|c| {
            let s = if fails.contains(c) {
                "FAIL"
            } else if skips.contains(c) {
                "skip"
            } else {
                "ok"
            };
            (*c, s)
        })
        .collect();
    assert_eq!(run.statuses(), want, "{}", run.stdout);
    let passed = CHECKS.len() - fails.len() - skips.len();
    let mut summary = format!("selftest: {} checks, {passed} passed", CHECKS.len());
    if !fails.is_empty() {
        summary.push_str(&format!(", {} FAILED", fails.len()));
    }
    if !skips.is_empty() {
        summary.push_str(&format!(", {} skipped", skips.len()));
    }
    assert_eq!(
        run.stdout.lines().last(),
        Some(summary.as_str()),
        "{}",
        run.stdout
    );
    let code = if fails.is_empty() { 0 } else { 1 };
    assert_eq!(run.code, Some(code), "{}", run.stdout);
}

#[test]
fn selftest_passes_then_fails_precisely_for_each_broken_piece() {
    let built = pnet_tests::build_packages(&[
        "pnet-example-noop",
        "pnet-example-arith",
        "gspc-run",
        "pnet-worker",
        "pnetc",
        "pnet-selftest",
    ]);

    // A complete installation: everything passes, with the binaries taken from the
    // selftest's own folder.
    let good = install(&built, "good");
    let run = selftest(&good.0, &[]);
    expect(&run, &[], &[]);
    assert!(
        run.line("compiler").contains("3 transitions"),
        "{}",
        run.stdout
    );
    assert!(
        run.line("workers").contains("on 2 workers"),
        "{}",
        run.stdout
    );
    assert!(
        run.line("native-module")
            .contains("libnoop.so: 200 calls of noop.run on a worker gave done = 200L"),
        "{}",
        run.stdout
    );
    assert!(
        run.line("memory").contains(
            "256 KiB of global memory over 2 workers' segments on 2 (fake) hosts: filled by \
             arith.fill, read back by arith.digest, checksum ok"
        ),
        "{}",
        run.stdout
    );
    // Nothing left behind in the temporary directory.
    let left: Vec<_> = std::fs::read_dir(good.0.join("tmp"))
        .expect("read the TMPDIR")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // --keep keeps it, with the nets and modules the checks wrote.
    let run = selftest(&good.0, &["--keep"]);
    expect(&run, &[], &[]);
    let kept = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("kept the temporary directory "))
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no kept directory:\n{}", run.stdout));
    assert!(kept.starts_with(good.0.join("tmp")), "{}", kept.display());
    assert!(kept.join("compute.xpnet").is_file());
    assert!(kept.join("modules/selftest_cmd.twice").is_file());
    assert!(kept.join("memory.xpnet").is_file());
    std::fs::remove_dir_all(&kept).expect("remove the kept directory");

    // The same with --json.
    let json = Command::new(good.0.join("gspc-selftest"))
        .args(["--json", "--bin-dir"])
        .arg(&good.0)
        .env_remove("PNET_MODULE_PATH")
        .output()
        .expect("run gspc-selftest --json");
    assert_eq!(json.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON report");
    assert_eq!(doc["passed"], 8, "{doc}");
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["checks"][3]["name"], "jit");

    // gspc-worker deleted: the binaries check names the file; checks that need workers are
    // skipped; the compiler, the VM and the JIT still pass.
    let dir = install(&built, "noworker");
    std::fs::remove_file(dir.0.join("gspc-worker")).expect("delete gspc-worker");
    let run = selftest(&dir.0, &["--bin-dir", &dir.0.display().to_string()]);
    expect(
        &run,
        &["binaries"],
        &["workers", "command-module", "native-module", "memory"],
    );
    let line = run.line("binaries");
    assert!(
        line.contains(&format!(
            "gspc-worker not found: {} does not exist",
            dir.0.join("gspc-worker").display()
        )) && line.contains("cargo build --release -p pnet-worker"),
        "{line}"
    );
    assert!(
        run.line("workers")
            .contains("needs gspc-worker, which is missing (see binaries)"),
        "{}",
        run.stdout
    );
    drop(dir);

    // libnoop.so replaced by garbage: only the native module check fails, naming the file
    // and the loader's complaint.
    let dir = install(&built, "garbage");
    let lib = dir.0.join("libnoop.so");
    replace(&lib, b"this is not a shared library\n", false);
    let run = selftest(&dir.0, &[]);
    expect(&run, &["native-module"], &[]);
    let line = run.line("native-module");
    assert!(
        line.contains(&format!(
            "{} is not a shared library (it does not start with an ELF header)",
            lib.display()
        )),
        "{line}"
    );
    assert!(
        line.contains("cargo build --release -p pnet-example-noop"),
        "{line}"
    );
    // No native module at all: the line says what was looked for where, and how to build it;
    // the memory check, without libarith.so, is skipped and says why.
    std::fs::remove_file(&lib).expect("remove libnoop.so");
    std::fs::remove_file(dir.0.join("libarith.so")).expect("remove libarith.so");
    let run = selftest(&dir.0, &[]);
    expect(&run, &["native-module"], &["memory"]);
    let line = run.line("native-module");
    assert!(
        line.contains("looked for libnoop.so, libarith.so and libpi.so in")
            && line.contains(&format!("{} (the bin dir)", dir.0.display()))
            && line.contains("cargo build --release -p pnet-example-noop"),
        "{line}"
    );
    let line = run.line("memory");
    assert!(
        line.contains("needs the native module libarith.so, not found in")
            && line.contains(&format!("{} (the bin dir)", dir.0.display()))
            && line.contains("cargo build --release -p pnet-example-arith"),
        "{line}"
    );
    drop(dir);

    // libarith.so a library without fill and digest (libnoop.so under its name): only the
    // memory check fails, with the worker's complaint and how to rebuild it.
    let dir = install(&built, "oldarith");
    let noop = std::fs::read(built.join("libnoop.so")).expect("read libnoop.so");
    replace(&dir.0.join("libarith.so"), &noop, false);
    let run = selftest(&dir.0, &[]);
    expect(&run, &["memory"], &[]);
    let line = run.line("memory");
    assert!(
        line.contains("has no function `fill`")
            && line.contains("cargo build --release -p pnet-example-arith"),
        "{line}"
    );
    // Without libarith.so the memory check is skipped, and the selftest still passes: the
    // module is an optional example.
    std::fs::remove_file(dir.0.join("libarith.so")).expect("remove libarith.so");
    let run = selftest(&dir.0, &[]);
    expect(&run, &[], &["memory"]);
    drop(dir);

    // pnetc a script that answers --version but fails to compile: the compiler check
    // fails; the VM and the JIT run the .xpnet through gspc-run and still pass.
    let dir = install(&built, "pnetc");
    let pnetc = dir.0.join("pnetc");
    let version = env!("CARGO_PKG_VERSION");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'pnetc {version}'; exit 0; fi\n\
         echo 'pnetc: broken on purpose' >&2\nexit 1\n"
    );
    replace(&pnetc, script.as_bytes(), true);
    let run = selftest(&dir.0, &[]);
    expect(&run, &["compiler"], &[]);
    let line = run.line("compiler");
    assert!(
        line.contains("pnetc could not compile a valid net (compute.xpnet): exit status 1: pnetc: broken on purpose"),
        "{line}"
    );
    assert!(run.line("vm").contains("from the .xpnet"), "{}", run.stdout);
    // pnetc a script that always exits 1: it does not even answer --version.
    replace(&pnetc, b"#!/bin/sh\nexit 1\n", true);
    let run = selftest(&dir.0, &[]);
    expect(&run, &["binaries"], &["compiler"]);
    let line = run.line("binaries");
    assert!(
        line.contains(&format!(
            "`{} --version` failed: exit status 1",
            pnetc.display()
        )),
        "{line}"
    );
    drop(dir);
    drop(good);
}

/// `gspc selftest` is the same selftest, with gspc's own folder as the installation.
#[test]
fn gspc_selftest_checks_the_build_it_belongs_to() {
    let built = pnet_tests::build_packages(&[
        "pnet-gspc",
        "pnetc",
        "gspc-run",
        "pnet-worker",
        "pnet-example-noop",
        "pnet-example-arith",
    ]);
    let o = Command::new(built.join("gspc"))
        .arg("selftest")
        .env_remove("GSPC_WORKER")
        .env_remove("PNET_MODULE_PATH")
        .output()
        .expect("gspc runs");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for check in CHECKS {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("ok") && l.contains(check)),
            "{check}: {stdout}"
        );
    }
    assert!(stdout.contains("selftest: 8 checks, 8 passed"), "{stdout}");
}
