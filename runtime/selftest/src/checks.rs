//! The checks themselves.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::nets;
use crate::proc::{self, Output};
use crate::{Check, Options, Report, Status};

/// The binaries an installation must have, with the package that builds each.
const REQUIRED: [(&str, &str); 3] = [
    ("pnetc", "pnetc"),
    ("gspc-run", "gspc-run"),
    ("gspc-worker", "pnet-worker"),
];

/// Binaries checked when they are there.
const OPTIONAL: [(&str, &str); 3] = [
    ("pnetv", "pnetv"),
    ("pnet2dot", "pnet2dot"),
    ("gspc", "pnet-gspc"),
];

/// What the `binaries` check found for one binary.
#[derive(Debug)]
enum Bin {
    Ok,
    Missing,
    Broken,
}

/// What a check says.
enum Outcome {
    Ok(String),
    Fail(String),
    Skip(String),
}

struct Ctx<'a> {
    opts: &'a Options,
    bin_dir: PathBuf,
    tmp: PathBuf,
    modules: PathBuf,
    timeout: Duration,
    bins: BTreeMap<&'static str, Bin>,
    /// The bundle pnetc wrote, if it did.
    bundle: Option<PathBuf>,
    log: Vec<String>,
}

/// The temporary directory, removed when dropped unless kept.
struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn make_temp_dir() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let pid = std::process::id();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut last = String::new();
    for attempt in 0..100u32 {
        let path = base.join(format!("pnet-selftest-{pid}-{nanos:x}-{attempt}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                last = format!("cannot create {}: {e}", path.display());
                break;
            }
        }
    }
    Err(if last.is_empty() {
        format!("cannot create a directory in {}", base.display())
    } else {
        last
    })
}

fn write_file(path: &Path, text: &str, executable: bool) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    if executable {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("cannot make {} executable: {e}", path.display()))?;
    }
    Ok(())
}

/// The names of the checks, in order.
pub const NAMES: [&str; 8] = [
    "binaries",
    "compiler",
    "vm",
    "jit",
    "workers",
    "command-module",
    "native-module",
    "memory",
];

type CheckFn = fn(&mut Ctx) -> Outcome;

pub fn run_all(opts: &Options, each: &mut dyn FnMut(&Check)) -> Report {
    let bin_dir = match &opts.bin_dir {
        Some(d) => d.clone(),
        None => std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    let mut report = Report {
        bin_dir: bin_dir.clone(),
        checks: Vec::new(),
        kept_dir: None,
    };
    let fns: [CheckFn; 8] = [
        binaries,
        compiler,
        vm,
        jit,
        workers,
        command_module,
        native_module,
        memory,
    ];
    // Without a temporary directory nothing can run: every check fails with the reason.
    let setup = make_temp_dir().and_then(|tmp| {
        let guard = TempDir {
            path: tmp.clone(),
            keep: opts.keep,
        };
        let modules = tmp.join("modules");
        std::fs::create_dir(&modules)
            .map_err(|e| format!("cannot create {}: {e}", modules.display()))?;
        Ok((guard, modules))
    });
    let (guard, modules) = match setup {
        Ok(x) => x,
        Err(e) => {
            for name in NAMES {
                let c = Check {
                    name,
                    status: Status::Fail,
                    detail: format!("no temporary directory: {e}"),
                    duration: Duration::ZERO,
                    log: Vec::new(),
                };
                each(&c);
                report.checks.push(c);
            }
            return report;
        }
    };
    let mut ctx = Ctx {
        opts,
        bin_dir,
        tmp: guard.path.clone(),
        modules,
        timeout: opts.timeout.unwrap_or(Duration::from_secs(60)),
        bins: BTreeMap::new(),
        bundle: None,
        log: Vec::new(),
    };
    for (name, f) in NAMES.into_iter().zip(fns) {
        let start = Instant::now();
        ctx.log.clear();
        let outcome = f(&mut ctx);
        let (status, detail) = match outcome {
            Outcome::Ok(d) => (Status::Ok, d),
            Outcome::Fail(d) => (Status::Fail, d),
            Outcome::Skip(d) => (Status::Skip, d),
        };
        let c = Check {
            name,
            status,
            detail,
            duration: start.elapsed(),
            log: std::mem::take(&mut ctx.log),
        };
        each(&c);
        report.checks.push(c);
    }
    if opts.keep {
        report.kept_dir = Some(guard.path.clone());
    }
    drop(guard);
    report
}

impl Ctx<'_> {
    fn bin(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }

    /// Skips when one of `names` is not usable.
    fn needs(&self, names: &[&str]) -> Option<Outcome> {
        for n in names {
            match self.bins.get(n) {
                Some(Bin::Ok) => {}
                Some(Bin::Missing) => {
                    return Some(Outcome::Skip(format!(
                        "needs {n}, which is missing (see binaries)"
                    )));
                }
                Some(Bin::Broken) | None => {
                    return Some(Outcome::Skip(format!(
                        "needs {n}, which is broken (see binaries)"
                    )));
                }
            }
        }
        None
    }

    /// Runs an installed binary in the temporary directory and logs it.
    fn run(&mut self, name: &str, args: &[String]) -> Result<Output, String> {
        let program = self.bin(name);
        // The installation must find its worker by itself; PNET_JIT would override --jit.
        let out = proc::run(
            &program,
            args,
            &self.tmp,
            &[("NO_COLOR", "1")],
            &["GSPC_WORKER", "PNET_JIT"],
            self.timeout,
        );
        let cmd = proc::show(&program, args);
        match &out {
            Ok(o) => {
                self.log.push(format!(
                    "$ {cmd}  => {} ({} ms)",
                    o.describe_status(self.timeout),
                    o.elapsed.as_millis()
                ));
                for (what, text) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
                    let lines: Vec<&str> = text.lines().collect();
                    let start = lines.len().saturating_sub(20);
                    for l in &lines[start..] {
                        self.log.push(format!("  {what}: {l}"));
                    }
                }
            }
            Err(e) => self.log.push(format!("$ {cmd}  => {e}")),
        }
        out
    }

    /// Runs gspc-run; `Err` is a complete failure message.
    fn gspc_run(&mut self, what: &str, args: &[String]) -> Result<Output, String> {
        let out = self.run("gspc-run", args)?;
        if out.success() {
            Ok(out)
        } else {
            Err(format!(
                "gspc-run {what}: {}: {}",
                out.describe_status(self.timeout),
                out.stderr_tail(2)
            ))
        }
    }

    fn write(&mut self, name: &str, text: &str, executable: bool) -> Result<PathBuf, String> {
        let path = if executable {
            self.modules.join(name)
        } else {
            self.tmp.join(name)
        };
        write_file(&path, text, executable)?;
        Ok(path)
    }
}

fn strings(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

/// `a = 1\nb = 2\n` as `a = 1; b = 2`.
fn one_line(text: &str) -> String {
    let s: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if s.is_empty() {
        "nothing".into()
    } else {
        s.join("; ")
    }
}

fn version_problem(name: &str, path: &Path, out: &Output, timeout: Duration) -> Option<String> {
    let p = path.display();
    if !out.success() {
        return Some(format!(
            "`{p} --version` failed: {}: {}",
            out.describe_status(timeout),
            out.stderr_tail(2)
        ));
    }
    let first = out.stdout.lines().next().unwrap_or("").trim();
    let ours = env!("CARGO_PKG_VERSION");
    // `NAME VERSION`, maybe followed by more (`pnetc 0.1.0 (bundle format 1)`).
    let mut words = first.split_whitespace();
    match (words.next(), words.next()) {
        (Some(n), Some(v)) if n == name && v == ours => None,
        (Some(n), Some(v)) if n == name => Some(format!(
            "{p} is version {v}, this selftest is version {ours} (a mixed installation)"
        )),
        _ => Some(format!(
            "`{p} --version` printed '{first}', not '{name} {ours}'"
        )),
    }
}

// (a) the binaries are there and answer --version.
fn binaries(ctx: &mut Ctx) -> Outcome {
    let mut problems = Vec::new();
    let mut present = Vec::new();
    let mut absent = Vec::new();
    for (required, list) in [(true, &REQUIRED), (false, &OPTIONAL)] {
        for &(name, package) in list.iter() {
            let path = ctx.bin(name);
            if !path.is_file() {
                if required {
                    problems.push(format!(
                        "{name} not found: {} does not exist (build it with `cargo build \
                         --release -p {package}` and copy target/release/{name} there)",
                        path.display()
                    ));
                    ctx.bins.insert(name, Bin::Missing);
                } else {
                    absent.push(name);
                }
                continue;
            }
            let state = match ctx.run(name, &strings(&["--version"])) {
                Err(e) => {
                    problems.push(e);
                    Bin::Broken
                }
                Ok(out) => match version_problem(name, &path, &out, ctx.timeout) {
                    Some(p) => {
                        problems.push(p);
                        Bin::Broken
                    }
                    None => {
                        present.push(name);
                        Bin::Ok
                    }
                },
            };
            ctx.bins.insert(name, state);
        }
    }
    if !problems.is_empty() {
        return Outcome::Fail(problems.join("; "));
    }
    let mut s = format!(
        "{} {} answer --version in {}",
        present.join(", "),
        env!("CARGO_PKG_VERSION"),
        ctx.bin_dir.display()
    );
    if !absent.is_empty() {
        s.push_str(&format!(
            " (not installed, optional: {})",
            absent.join(", ")
        ));
    }
    Outcome::Ok(s)
}

// (b) pnetc compiles a net and rejects a broken one with the expected diagnostic.
fn compiler(ctx: &mut Ctx) -> Outcome {
    if let Some(skip) = ctx.needs(&["pnetc"]) {
        return skip;
    }
    match compile(ctx) {
        Ok(d) => Outcome::Ok(d),
        Err(d) => Outcome::Fail(d),
    }
}

fn compile(ctx: &mut Ctx) -> Result<String, String> {
    ctx.write("compute.xpnet", nets::COMPUTE, false)?;
    ctx.write("broken.xpnet", nets::BROKEN, false)?;
    let out = ctx.run("pnetc", &strings(&["compute.xpnet", "-o", "compute.pnet"]))?;
    if !out.success() {
        return Err(format!(
            "pnetc could not compile a valid net (compute.xpnet): {}: {}",
            out.describe_status(ctx.timeout),
            out.stderr_tail(3)
        ));
    }
    let bundle = ctx.tmp.join("compute.pnet");
    let size = std::fs::metadata(&bundle).map(|m| m.len()).unwrap_or(0);
    if size == 0 {
        return Err(format!(
            "pnetc compute.xpnet -o compute.pnet succeeded but wrote no bundle ({} is {})",
            bundle.display(),
            if bundle.exists() { "empty" } else { "missing" }
        ));
    }
    ctx.bundle = Some(bundle);
    // The IR lists the transitions; count them.
    let ir = ctx.run("pnetc", &strings(&["--emit=ir", "compute.xpnet"]))?;
    if !ir.success() {
        return Err(format!(
            "pnetc --emit=ir compute.xpnet: {}: {}",
            ir.describe_status(ctx.timeout),
            ir.stderr_tail(3)
        ));
    }
    let transitions = count_lines(&ir.stdout, "transition ");
    let conditions = count_lines(&ir.stdout, "condition ");
    if (transitions, conditions) != (nets::COMPUTE_TRANSITIONS, nets::COMPUTE_CONDITIONS) {
        return Err(format!(
            "pnetc --emit=ir compute.xpnet shows {transitions} transitions and {conditions} \
             conditions instead of {} and {}",
            nets::COMPUTE_TRANSITIONS,
            nets::COMPUTE_CONDITIONS
        ));
    }
    let bad = ctx.run("pnetc", &strings(&["broken.xpnet"]))?;
    let code = format!("error[{}]", nets::BROKEN_CODE);
    let at = format!("broken.xpnet:{}:{}", nets::BROKEN_LINE, nets::BROKEN_COL);
    if bad.success() {
        return Err(format!(
            "pnetc accepted broken.xpnet (a place defined twice) instead of reporting {code}"
        ));
    }
    if bad.status.and_then(|s| s.code()) != Some(1) {
        return Err(format!(
            "pnetc broken.xpnet: {} (expected exit status 1): {}",
            bad.describe_status(ctx.timeout),
            bad.stderr_tail(3)
        ));
    }
    if !bad.stderr.contains(&code) || !bad.stderr.contains(&at) {
        return Err(format!(
            "pnetc rejected broken.xpnet but not with {code} at {at}: {}",
            first_error(&bad.stderr).unwrap_or_else(|| bad.stderr_tail(3))
        ));
    }
    Ok(format!(
        "pnetc compiled a net with {transitions} transitions and {conditions} conditions \
         ({size} bytes) and rejected a broken one with {code} at {at}"
    ))
}

/// The lines of `text` that start with `prefix` after indentation.
fn count_lines(text: &str, prefix: &str) -> usize {
    text.lines()
        .filter(|l| l.trim_start().starts_with(prefix))
        .count()
}

/// The first `error...` line of pnetc's diagnostics with the location under it
/// (`error[x]: message at f.xpnet:1:2`).
fn first_error(stderr: &str) -> Option<String> {
    let mut lines = stderr.lines();
    let head = lines.find(|l| l.starts_with("error"))?.trim().to_string();
    let at = lines
        .next()
        .and_then(|l| l.split_once("┌─"))
        .map(|(_, loc)| loc.trim().to_string());
    Some(match at {
        Some(at) => format!("{head} at {at}"),
        None => head,
    })
}

/// The net the VM and the JIT run: pnetc's bundle, else the .xpnet (gspc-run compiles it).
fn compute_net(ctx: &mut Ctx) -> Result<(String, &'static str), String> {
    if let Some(b) = &ctx.bundle {
        return Ok((b.display().to_string(), ""));
    }
    let path = ctx.tmp.join("compute.xpnet");
    if !path.exists() {
        write_file(&path, nets::COMPUTE, false)?;
    }
    Ok((
        path.display().to_string(),
        " (from the .xpnet: pnetc wrote no bundle)",
    ))
}

// (c) the VM (interpreter only).
fn vm(ctx: &mut Ctx) -> Outcome {
    if let Some(skip) = ctx.needs(&["gspc-run"]) {
        return skip;
    }
    let result = (|| {
        let (net, note) = compute_net(ctx)?;
        let n = format!("n={}L", nets::COMPUTE_N);
        let out = ctx.gspc_run(
            "--jit off",
            &strings(&[&net, "--jit", "off", "--no-progress", "-p", &n]),
        )?;
        let expected = nets::compute_expected(nets::COMPUTE_N);
        if out.stdout != expected {
            return Err(format!(
                "gspc-run --jit off printed '{}' instead of '{}'",
                one_line(&out.stdout),
                one_line(&expected)
            ));
        }
        let file = Path::new(&net)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(format!(
            "gspc-run --jit off ran {file}{note} with {n}: {}",
            one_line(&out.stdout)
        ))
    })();
    match result {
        Ok(d) => Outcome::Ok(d),
        Err(d) => Outcome::Fail(d),
    }
}

/// From `--emit jit-stats`: (codes, compiled, native runs), or why not.
fn jit_stats(stderr: &str) -> Result<(u64, u64, u64), String> {
    if let Some(l) = stderr.lines().find(|l| l.starts_with("jit: not available")) {
        return Err(l.to_string());
    }
    let mut codes = None;
    let mut runs = None;
    for l in stderr.lines() {
        // jit: mode on; 6 codes: 5 compiled, 1 left to the interpreter; compile time ...
        if let Some(rest) = l.strip_prefix("jit: mode ") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            let n = words.iter().position(|w| w.starts_with("codes"));
            if let Some(i) = n.filter(|&i| i >= 1 && i + 2 < words.len()) {
                let total = words[i - 1].parse::<u64>().ok();
                let compiled = words[i + 1].parse::<u64>().ok();
                if let (Some(t), Some(c)) = (total, compiled) {
                    codes = Some((t, c));
                }
            }
        }
        // jit: runs: 3003 native, 2 interpreted (0 fallbacks from compiled code)
        if let Some(rest) = l.strip_prefix("jit: runs: ") {
            runs = rest
                .split_whitespace()
                .next()
                .and_then(|w| w.parse::<u64>().ok());
        }
    }
    match (codes, runs) {
        (Some((t, c)), Some(r)) => Ok((t, c, r)),
        _ => Err(format!(
            "--emit jit-stats printed no statistics ('{}')",
            proc::tail(stderr, 2).unwrap_or_default()
        )),
    }
}

// (d) the JIT: the same output, and compiled code that ran.
fn jit(ctx: &mut Ctx) -> Outcome {
    if let Some(skip) = ctx.needs(&["gspc-run"]) {
        return skip;
    }
    let result = (|| {
        let (net, _) = compute_net(ctx)?;
        let n = format!("n={}L", nets::COMPUTE_N);
        let out = ctx.gspc_run(
            "--jit on",
            &strings(&[
                &net,
                "--jit",
                "on",
                "--emit",
                "jit-stats",
                "--no-progress",
                "-p",
                &n,
            ]),
        )?;
        let expected = nets::compute_expected(nets::COMPUTE_N);
        if out.stdout != expected {
            return Err(format!(
                "gspc-run --jit on printed '{}' instead of '{}' (what --jit off printed)",
                one_line(&out.stdout),
                one_line(&expected)
            ));
        }
        let (codes, compiled, native) =
            jit_stats(&out.stderr).map_err(|e| format!("gspc-run --jit on: {e}"))?;
        if compiled == 0 {
            return Err(format!(
                "gspc-run --jit on compiled none of the net's {codes} codes (--emit jit-stats: {})",
                proc::tail(&out.stderr, 3).unwrap_or_default()
            ));
        }
        if native == 0 {
            return Err(format!(
                "gspc-run --jit on compiled {compiled} codes but never ran compiled code"
            ));
        }
        Ok(format!(
            "gspc-run --jit on: the same tokens; {compiled} of {codes} codes compiled, \
             {native} native runs"
        ))
    })();
    match result {
        Ok(d) => Outcome::Ok(d),
        Err(d) => Outcome::Fail(d),
    }
}

// (e) a local runtime with two workers: module calls land on both.
fn workers(ctx: &mut Ctx) -> Outcome {
    if let Some(skip) = ctx.needs(&["gspc-run", "gspc-worker"]) {
        return skip;
    }
    let result = (|| {
        let seen = ctx.tmp.join("seen");
        let script = nets::who_script(&proc::quote(&seen.display().to_string()), 100);
        ctx.write("selftest_who.name", &script, true)?;
        let net = ctx.write("workers.xpnet", nets::WORKERS, false)?;
        let modules = ctx.modules.display().to_string();
        let n = format!("n={}L", nets::WORKERS_CALLS);
        let out = ctx.gspc_run(
            "--topology worker:2",
            &strings(&[
                &net.display().to_string(),
                "--topology",
                "worker:2",
                "--module-path",
                &modules,
                "--no-progress",
                "-p",
                &n,
            ]),
        )?;
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for l in out.stdout.lines() {
            let Some(name) = l.strip_prefix("names = ") else {
                return Err(format!("gspc-run printed an unexpected line '{l}'"));
            };
            *counts
                .entry(name.trim_matches('"').to_string())
                .or_default() += 1;
        }
        let calls: usize = counts.values().sum();
        let expected = usize::try_from(nets::WORKERS_CALLS).unwrap_or(0);
        if calls != expected {
            return Err(format!(
                "gspc-run --topology worker:2 gave {calls} answers for {expected} module calls: {}",
                one_line(&out.stdout)
            ));
        }
        let spread: Vec<String> = counts.iter().map(|(w, c)| format!("{w} ({c})")).collect();
        if counts.len() < 2 {
            return Err(format!(
                "all {calls} module calls ran on {}: the second worker of --topology worker:2 \
                 never ran a task",
                spread.join(", ")
            ));
        }
        Ok(format!(
            "{calls} module calls ran on {} workers: {}",
            counts.len(),
            spread.join(", ")
        ))
    })();
    match result {
        Ok(d) => Outcome::Ok(d),
        Err(d) => Outcome::Fail(d),
    }
}

// (f) a command module: a shell script in the module path.
fn command_module(ctx: &mut Ctx) -> Outcome {
    if let Some(skip) = ctx.needs(&["gspc-run", "gspc-worker"]) {
        return skip;
    }
    let result = (|| {
        let script = ctx.write("selftest_cmd.twice", nets::COMMAND_SCRIPT, true)?;
        let net = ctx.write("command.xpnet", nets::COMMAND, false)?;
        let modules = ctx.modules.display().to_string();
        let mut args = strings(&[
            &net.display().to_string(),
            "--topology",
            "worker:1",
            "--module-path",
            &modules,
            "--no-progress",
        ]);
        for x in nets::COMMAND_INPUTS {
            args.push("-p".into());
            args.push(format!("x={x}L"));
        }
        let out = ctx.gspc_run("(command module selftest_cmd.twice)", &args)?;
        let expected = nets::command_expected();
        if out.stdout != expected {
            return Err(format!(
                "the command module {} gave '{}' instead of '{}'",
                script.display(),
                one_line(&out.stdout),
                one_line(&expected)
            ));
        }
        Ok(format!(
            "selftest_cmd.twice, a shell script on the module path, doubled {} on a worker",
            nets::COMMAND_INPUTS
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(" and ")
        ))
    })();
    match result {
        Ok(d) => Outcome::Ok(d),
        Err(d) => Outcome::Fail(d),
    }
}

/// The folders searched for native modules, each with where it came from.
fn native_dirs(ctx: &Ctx) -> Vec<(PathBuf, String)> {
    let mut dirs: Vec<(PathBuf, String)> = Vec::new();
    for d in &ctx.opts.module_path {
        dirs.push((d.clone(), "--module-path".into()));
    }
    dirs.push((ctx.bin_dir.clone(), "the bin dir".into()));
    if let Some(p) = std::env::var_os("PNET_MODULE_PATH") {
        for d in std::env::split_paths(&p).filter(|d| !d.as_os_str().is_empty()) {
            dirs.push((d, "$PNET_MODULE_PATH".into()));
        }
    }
    dirs
}

/// Why `lib` cannot be a shared library, if its first bytes tell.
fn elf_problem(lib: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 4];
    let mut f = match std::fs::File::open(lib) {
        Ok(f) => f,
        Err(e) => return Some(format!("cannot read {}: {e}", lib.display())),
    };
    let n = f.read(&mut head).unwrap_or(0);
    (head[..n] != *b"\x7fELF").then(|| {
        format!(
            "{} is not a shared library (it does not start with an ELF header)",
            lib.display()
        )
    })
}

// (g) a native module of the installation.
fn native_module(ctx: &mut Ctx) -> Outcome {
    if let Some(skip) = ctx.needs(&["gspc-run", "gspc-worker"]) {
        return skip;
    }
    let dirs = native_dirs(ctx);
    let found = nets::NATIVES.iter().find_map(|m| {
        let file = format!("lib{}.so", m.name);
        dirs.iter()
            .map(|(d, _)| d.join(&file))
            .find(|p| p.exists())
            .map(|p| (m, p))
    });
    let Some((module, lib)) = found else {
        let looked: Vec<String> = dirs
            .iter()
            .map(|(d, from)| format!("{} ({from})", d.display()))
            .collect();
        return Outcome::Fail(format!(
            "no native module: looked for libnoop.so, libarith.so and libpi.so in {}; build \
             one with `cargo build --release -p pnet-example-noop` and copy \
             target/release/libnoop.so to {} (or pass --module-path DIR)",
            looked.join(", "),
            ctx.bin_dir.display()
        ));
    };
    let result = (|| {
        let net = ctx.write(&format!("{}.xpnet", module.name), module.net, false)?;
        let mut args = strings(&[
            &net.display().to_string(),
            "--topology",
            "worker:1",
            "--no-progress",
        ]);
        for d in &ctx.opts.module_path {
            args.push("--module-path".into());
            args.push(d.display().to_string());
        }
        for p in module.puts {
            args.push("-p".into());
            args.push((*p).to_string());
        }
        let hint = format!(
            "(rebuild it with `cargo build --release -p {}`)",
            module.package
        );
        let out = ctx
            .gspc_run(&format!("with {}", lib.display()), &args)
            .map_err(|e| match elf_problem(&lib) {
                Some(p) => format!("{p} {hint}; {e}"),
                None => format!("{e} {hint}"),
            })?;
        let expected = (module.expected)();
        if out.stdout != expected {
            return Err(format!(
                "{} gave '{}' instead of '{}' {hint}",
                lib.display(),
                one_line(&out.stdout),
                one_line(&expected)
            ));
        }
        Ok(format!(
            "{}: {} on a worker gave {}",
            lib.display(),
            module.what,
            one_line(&out.stdout)
        ))
    })();
    match result {
        Ok(d) => Outcome::Ok(d),
        Err(d) => Outcome::Fail(d),
    }
}

// (h) global memory: written by arith.fill on a worker, read back by arith.digest.
fn memory(ctx: &mut Ctx) -> Outcome {
    if let Some(skip) = ctx.needs(&["gspc-run", "gspc-worker"]) {
        return skip;
    }
    let dirs = native_dirs(ctx);
    let Some(lib) = dirs
        .iter()
        .map(|(d, _)| d.join("libarith.so"))
        .find(|p| p.exists())
    else {
        let looked: Vec<String> = dirs
            .iter()
            .map(|(d, from)| format!("{} ({from})", d.display()))
            .collect();
        return Outcome::Skip(format!(
            "needs the native module libarith.so, not found in {} (build it with `cargo \
             build --release -p pnet-example-arith` and copy target/release/libarith.so to {}, \
             or pass --module-path DIR)",
            looked.join(", "),
            ctx.bin_dir.display()
        ));
    };
    let result = (|| {
        let net = ctx.write("memory.xpnet", nets::MEMORY, false)?;
        let kib = nets::MEMORY_KIB;
        let size = usize::try_from(kib * 1024).map_err(|_| "the size does not fit".to_string())?;
        let alloc = format!("memory={kib}KiB");
        let seed = format!("seed={}L", nets::MEMORY_SEED);
        // The folder of the libarith.so found first, so that the workers load that one.
        let found_in = lib
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|| ".".into());
        let mut args = strings(&[
            &net.display().to_string(),
            "--topology",
            nets::MEMORY_TOPOLOGY,
            "--fake-hosts",
            "2",
            "--alloc",
            &alloc,
            "--module-path",
            &found_in,
        ]);
        for d in &ctx.opts.module_path {
            args.push("--module-path".into());
            args.push(d.display().to_string());
        }
        args.extend(strings(&["--no-progress", "-v", "-p", &seed]));
        let hint = "(rebuild it with `cargo build --release -p pnet-example-arith`: fill and \
                    digest came with memory buffers)";
        let out = ctx
            .gspc_run(&format!("with {} and global memory", lib.display()), &args)
            .map_err(|e| match elf_problem(&lib) {
                Some(p) => format!("{p} {hint}; {e}"),
                None => format!("{e} {hint}"),
            })?;
        let segments = segments_offered(&out.stderr);
        if segments == 1 {
            return Err(format!(
                "only one of the 2 workers of --topology {} offered working memory",
                nets::MEMORY_TOPOLOGY
            ));
        }
        let expected = nets::memory_expected(nets::MEMORY_SEED, size);
        if out.stdout != expected {
            return Err(format!(
                "{kib} KiB of global memory filled by arith.fill (seed {}) read back by \
                 arith.digest as '{}' instead of '{}' (the checksum of the pattern): the bytes \
                 did not survive the memory-put and memory-get {hint}",
                nets::MEMORY_SEED,
                one_line(&out.stdout),
                one_line(&expected)
            ));
        }
        let over = if segments >= 2 {
            format!("over {segments} workers' segments on 2 (fake) hosts")
        } else {
            "over the workers' segments on 2 (fake) hosts".to_string()
        };
        Ok(format!(
            "{kib} KiB of global memory {over}: filled by arith.fill, read back by \
             arith.digest, checksum ok"
        ))
    })();
    match result {
        Ok(d) => Outcome::Ok(d),
        Err(d) => Outcome::Fail(d),
    }
}

/// How many workers `gspc-run -v` says offered working memory (`worker 1 `w` offers 1 MiB
/// of working memory on host ...`).
fn segments_offered(stderr: &str) -> usize {
    stderr
        .lines()
        .filter(|l| l.contains(" offers ") && l.contains(" of working memory on host "))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_jit_stats() {
        let text = "jit: mode on; 6 codes: 5 compiled, 1 left to the interpreter; compile \
                    time 1.234 ms (246.8 us per compiled code)\n\
                    jit: runs: 3003 native, 2 interpreted (0 fallbacks from compiled code)\n\
                    jit:   step: compiled\n";
        assert_eq!(jit_stats(text), Ok((6, 5, 3003)));
        let err = jit_stats("jit: mode on; 1 codes: 0 compiled\njit: not available: no isa\n")
            .expect_err("not available");
        assert_eq!(err, "jit: not available: no isa");
        let err = jit_stats("something else\n").expect_err("no stats");
        assert!(
            err.contains("printed no statistics ('something else')"),
            "{err}"
        );
    }

    #[test]
    fn first_error_of_diagnostics() {
        let text = "warning[w]: x\n  ┌─ a.xpnet:4:5\n\nerror[duplicate_place]: duplicate \
                    place `p`\n  ┌─ a.xpnet:5:18\n  │\n";
        assert_eq!(
            first_error(text).as_deref(),
            Some("error[duplicate_place]: duplicate place `p` at a.xpnet:5:18")
        );
        assert_eq!(
            first_error("error: cannot read x\n").as_deref(),
            Some("error: cannot read x")
        );
        assert_eq!(first_error("fine\n"), None);
    }

    #[test]
    fn elf_headers() {
        let dir = make_temp_dir().expect("temp dir");
        let _guard = TempDir {
            path: dir.clone(),
            keep: false,
        };
        let bad = dir.join("libbad.so");
        write_file(&bad, "garbage", false).expect("write");
        let m = elf_problem(&bad).expect("not ELF");
        assert!(
            m.ends_with("libbad.so is not a shared library (it does not start with an ELF header)"),
            "{m}"
        );
        let good = dir.join("libgood.so");
        std::fs::write(&good, b"\x7fELF\x02\x01").expect("write");
        assert_eq!(elf_problem(&good), None);
        let m = elf_problem(&dir.join("libnone.so")).expect("missing");
        assert!(m.starts_with("cannot read "), "{m}");
    }

    #[test]
    fn counts_the_segments_offered() {
        let log = "[     0.011s] worker 1 `worker-vm-1` offers 1 MiB of working memory on host \
                   `local-1` (/dev/shm/pnet-1-worker-vm-1, memory server 127.0.0.1:34849)\n\
                   [     0.011s] worker 0 `worker-vm-0` offers 1 MiB of working memory on host \
                   `local-0` (/dev/shm/pnet-2-worker-vm-0, memory server 127.0.0.1:44505)\n\
                   [     0.011s] allocated 256 KiB of global memory for port `memory`: 0x1\n";
        assert_eq!(segments_offered(log), 2);
        assert_eq!(segments_offered("nothing\n"), 0);
    }

    #[test]
    fn version_lines() {
        use std::os::unix::process::ExitStatusExt;
        let out = |code: i32, stdout: &str| Output {
            status: Some(std::process::ExitStatus::from_raw(code << 8)),
            stdout: stdout.into(),
            stderr: "boom\n".into(),
            elapsed: Duration::ZERO,
        };
        let t = Duration::from_secs(1);
        let p = Path::new("/i/pnetc");
        let v = env!("CARGO_PKG_VERSION");
        assert_eq!(
            version_problem("pnetc", p, &out(0, &format!("pnetc {v}\n")), t),
            None
        );
        let extra = format!("pnetc {v} (bundle format 1)\n");
        assert_eq!(version_problem("pnetc", p, &out(0, &extra), t), None);
        let m = version_problem("pnetc", p, &out(0, "pnetc 9.9.9\n"), t).expect("mismatch");
        assert!(m.contains("/i/pnetc is version 9.9.9"), "{m}");
        let m = version_problem("pnetc", p, &out(1, ""), t).expect("failure");
        assert_eq!(m, "`/i/pnetc --version` failed: exit status 1: boom");
        let m = version_problem("pnetc", p, &out(0, "hello\n"), t).expect("garbage");
        assert!(m.contains("printed 'hello'"), "{m}");
    }

    #[test]
    fn temp_dirs_are_private_and_removed() {
        use std::os::unix::fs::PermissionsExt;
        let path = make_temp_dir().expect("temp dir");
        let mode = std::fs::metadata(&path)
            .expect("exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        write_file(&path.join("x"), "#!/bin/sh\n", true).expect("write");
        drop(TempDir {
            path: path.clone(),
            keep: false,
        });
        assert!(!path.exists());
    }

    #[test]
    fn missing_binaries_skip_their_checks() {
        let dir = make_temp_dir().expect("temp dir");
        let _guard = TempDir {
            path: dir.clone(),
            keep: false,
        };
        let opts = Options {
            bin_dir: Some(dir.clone()),
            ..Options::default()
        };
        let report = run_all(&opts, &mut |_| {});
        let status: Vec<(&str, Status)> =
            report.checks.iter().map(|c| (c.name, c.status)).collect();
        assert_eq!(
            status,
            vec![
                ("binaries", Status::Fail),
                ("compiler", Status::Skip),
                ("vm", Status::Skip),
                ("jit", Status::Skip),
                ("workers", Status::Skip),
                ("command-module", Status::Skip),
                ("native-module", Status::Skip),
                ("memory", Status::Skip),
            ]
        );
        let bins = &report.checks[0].detail;
        assert!(
            bins.contains(&format!(
                "gspc-worker not found: {} does not exist (build it with `cargo build \
                 --release -p pnet-worker`",
                dir.join("gspc-worker").display()
            )),
            "{bins}"
        );
        assert_eq!(
            report.checks[4].detail,
            "needs gspc-run, which is missing (see binaries)"
        );
        assert_eq!(report.exit_code(), 1);
    }
}
