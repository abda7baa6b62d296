//! Shared helpers of the integration tests in `tests/tests/`: where the corpora are, where the
//! built binaries are.

use std::path::{Path, PathBuf};

pub mod netns;
pub mod oracle;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `../shared/corpus` beside the checkout (read in place, never copied), or the folder named
/// by `PNET_CORPUS` (set it to a missing folder to see how the suite behaves on a machine
/// without the corpus: every test that needs it says "skipped" and passes).
pub fn corpus() -> PathBuf {
    match std::env::var_os("PNET_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => workspace_root().join("../shared/corpus"),
    }
}

/// Whether the corpus is missing; when it is, prints why the calling test does nothing (a
/// laptop without `../shared` runs the rest of the suite). Use at the start of every test
/// that reads the corpus: `if pnet_tests::corpus_absent() { return; }`.
pub fn corpus_absent() -> bool {
    let absent = !corpus().join("gpispace").is_dir();
    if absent {
        println!(
            "skipped: the corpus ({}) is absent; this test needs ../shared beside the checkout",
            corpus().display()
        );
    }
    absent
}

/// The GPI-Space corpus.
pub fn gpispace() -> PathBuf {
    corpus().join("gpispace")
}

/// GPI-Space's workflow library, which its users pass as a search path.
pub fn gpispace_lib() -> PathBuf {
    gpispace().join("share/xml/lib")
}

/// A binary of the workspace, built by the same `cargo test` run (each binary's package has an
/// integration test of its own, so cargo builds the binary before running tests).
pub fn bin(name: &str) -> PathBuf {
    // The test executable lives in target/<profile>/deps/.
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built; run `cargo build --bins` (or the whole `cargo test --workspace`) first",
        path.display()
    );
    path
}

/// Every `.xpnet` and `.xml` file below `dir`, sorted.
pub fn net_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("xpnet" | "xml")
            ) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The 1-based line of the `n`-th (1-based) line of `text` containing `needle`.
pub fn line_of(text: &str, needle: &str, n: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .nth(n.saturating_sub(1))
        .map(|(i, _)| i + 1)
}

/// Builds workspace packages with the target directory and profile of the running test
/// executable and returns that profile's directory (`target/<profile>`), where their binaries
/// and libraries are. `cargo test --workspace` builds every binary but not the `cdylib` of an
/// example module crate, so tests that load `libnoop.so`, `libarith.so` or `libpi.so` (or need
/// `gspc-worker` when run alone with `-p`) call this first. Cheap when nothing changed.
pub fn build_packages(packages: &[&str]) -> PathBuf {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let exe = std::env::current_exe().expect("test executable");
    // target/<profile>/deps/<test> -> target/<profile>
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_path_buf();
    let target = dir.parent().expect("target directory");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "-q"])
        .env("CARGO_TARGET_DIR", target)
        .current_dir(workspace_root());
    for p in packages {
        cmd.args(["-p", p]);
    }
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("run cargo build");
    assert!(status.success(), "cargo build of {packages:?} failed");
    dir
}

/// Runs `gspc ARGS --state-dir STATE` (the `gspc` binary at `gspc`) with no module path or
/// state directory inherited from the environment.
pub fn gspc_in(gspc: &Path, state: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(gspc)
        .args(args)
        .arg("--state-dir")
        .arg(state)
        .env_remove("PNET_MODULE_PATH")
        .env_remove("GSPC_STATE_DIR")
        .output()
        .expect("run gspc")
}

/// [`gspc_in`], which must succeed: its standard output.
pub fn gspc_ok_in(gspc: &Path, state: &Path, args: &[&str]) -> String {
    let o = gspc_in(gspc, state, args);
    assert!(
        o.status.success(),
        "gspc {args:?} failed ({:?}):\n{}{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A private scratch folder `DIR` with a `gspc` state directory `DIR/state` (mode 700)
/// inside, for end-to-end tests of a `gspc` runtime; when dropped it stops a runtime the
/// test left running and removes the folder.
pub struct GspcScratch {
    pub dir: PathBuf,
    gspc: PathBuf,
}

impl GspcScratch {
    /// `$TMPDIR/pnet-<prefix>-<name>-<pid>`, emptied first; `gspc` is the binary to run.
    pub fn new(prefix: &str, name: &str, gspc: PathBuf) -> GspcScratch {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("pnet-{prefix}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("state")).unwrap();
        std::fs::set_permissions(dir.join("state"), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        GspcScratch { dir, gspc }
    }

    pub fn state(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// `gspc ARGS` on this state directory.
    pub fn gspc(&self, args: &[&str]) -> std::process::Output {
        gspc_in(&self.gspc, &self.state(), args)
    }

    /// `gspc ARGS`, which must succeed: its standard output.
    pub fn ok(&self, args: &[&str]) -> String {
        gspc_ok_in(&self.gspc, &self.state(), args)
    }
}

impl Drop for GspcScratch {
    fn drop(&mut self) {
        let _ = self.gspc(&["stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A net of one module call on long tokens: in port `xs` -> transition `transition` (the
/// function `function` of module `module`, called as `r FUNCTION (n)`) -> out port `ys`;
/// the net is named `name`.
pub fn module_net(name: &str, transition: &str, module: &str, function: &str) -> String {
    format!(
        r#"<defun name="{name}">
  <in name="xs" type="long" place="xs"/>
  <out name="ys" type="long" place="ys"/>
  <net>
    <place name="xs" type="long"/>
    <place name="ys" type="long"/>
    <transition name="{transition}">
      <defun><in name="n" type="long"/><out name="r" type="long"/>
        <module name="{module}" function="r {function} (n)"/></defun>
      <connect-in port="n" place="xs"/><connect-out port="r" place="ys"/>
    </transition>
  </net>
</defun>
"#
    )
}

/// A net with `n` tokens 0..n on place `i`; each fires transition `call` whose module is
/// `module.function` with in port `x` (long) and out ports `y` (long) and `w` (string), plus
/// the `require`s given; results collect on out ports `y` and `w`.
pub fn fan_net(name: &str, module: &str, function: &str, requires: &[&str], n: usize) -> String {
    let tokens: String = (0..n)
        .map(|k| format!("<token><value>{k}L</value></token>"))
        .collect();
    let reqs: String = requires
        .iter()
        .map(|r| format!("<require key=\"{r}\" mandatory=\"true\"/>"))
        .collect();
    format!(
        r#"<defun name="{name}">
  <out name="y" type="long" place="y"/>
  <out name="w" type="string" place="w"/>
  <net>
    <place name="i" type="long">{tokens}</place>
    <place name="y" type="long"/>
    <place name="w" type="string"/>
    <transition name="call">
      <defun>
        {reqs}
        <in name="x" type="long"/>
        <out name="y" type="long"/>
        <out name="w" type="string"/>
        <module name="{module}" function="{function} (x, y, w)"/>
      </defun>
      <connect-in port="x" place="i"/>
      <connect-out port="y" place="y"/>
      <connect-out port="w" place="w"/>
    </transition>
  </net>
</defun>
"#
    )
}
