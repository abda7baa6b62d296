//! `gspc selftest` (and the binary `gspc-selftest`): checks an installation end to end.
//!
//! The selftest runs the INSTALLED binaries found next to its own executable (or in
//! `--bin-dir DIR`): it never links the compiler, the VM or the runtime, so what it checks is
//! what a user would run. Each check works in a private temporary directory (removed
//! afterwards unless `--keep`), prints one line, and the run ends with a summary line; the
//! exit code is 0 when no check failed, 1 when one failed, 2 for a usage error.
//!
//! The checks, in order:
//!
//! | name             | what                                                                       |
//! |------------------|----------------------------------------------------------------------------|
//! | `binaries`       | pnetc, gspc-run and gspc-worker are there and answer `--version` (and so do pnetv, pnet2dot, gspc if installed), all of this selftest's version |
//! | `compiler`       | pnetc compiles a net with expressions and conditions, and rejects a broken one with `error[duplicate_place]` at the right line and column |
//! | `vm`             | gspc-run runs pnetc's bundle with `--jit off` and prints the expected tokens |
//! | `jit`            | the same with `--jit on`: same output, and `--emit jit-stats` shows compiled code that ran |
//! | `workers`        | `--topology worker:2`: module calls land on both workers                    |
//! | `command-module` | a shell script written into the temporary directory, called as a command module |
//! | `native-module`  | the installation's `libnoop.so` (else `libarith.so`, else `libpi.so`) called through a net |
//! | `memory`         | `--topology worker:2,1048576 --fake-hosts 2 --alloc memory=256KiB`: `libarith.so`'s `fill` writes a pattern into a memory buffer put to the global range, `digest` gets the range into a buffer and answers its FNV-1a checksum, which must be the pattern's |
//!
//! A check that needs a binary the `binaries` check found missing or broken is skipped (and
//! says so); the `binaries` line names the file, and fails. The `memory` check is skipped
//! when `libarith.so` is not installed (an optional example module): a skip alone does not
//! fail the selftest.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

mod checks;
mod nets;
mod proc;

/// The selftest's options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Where the installed binaries are (default: the folder of the running executable).
    pub bin_dir: Option<PathBuf>,
    /// Extra folders to look for native modules in (and to pass to `gspc-run`).
    pub module_path: Vec<PathBuf>,
    /// Keep the temporary directory (its path is in the report).
    pub keep: bool,
    /// Print the report as JSON.
    pub json: bool,
    /// Print every command run and what it said.
    pub verbose: bool,
    /// The time limit of each command (default 60 s).
    pub timeout: Option<Duration>,
}

/// How a check ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Fail,
    /// Not run: it needs a piece another check found broken.
    Skip,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Fail => "FAIL",
            Status::Skip => "skip",
        }
    }
}

/// One check: its name, how it ended, one line of detail, how long it took, and the
/// commands it ran with what they said (printed with `-v`).
#[derive(Clone, Debug)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
    pub duration: Duration,
    pub log: Vec<String>,
}

impl Check {
    pub fn ok(&self) -> bool {
        self.status == Status::Ok
    }

    /// `ok   compiler        pnetc compiled ... (12 ms)`.
    pub fn line(&self) -> String {
        format!(
            "{:<4} {:<15} {} ({})",
            self.status.word(),
            self.name,
            self.detail,
            show_duration(self.duration)
        )
    }
}

/// Every check, where the binaries were, and the temporary directory if it was kept.
#[derive(Clone, Debug)]
pub struct Report {
    pub bin_dir: PathBuf,
    pub checks: Vec<Check>,
    pub kept_dir: Option<PathBuf>,
}

impl Report {
    pub fn count(&self, status: Status) -> usize {
        self.checks.iter().filter(|c| c.status == status).count()
    }

    /// True when no check failed and at least one passed (a skipped check either needs a
    /// binary the failed `binaries` check reported, or an optional module).
    pub fn passed(&self) -> bool {
        self.count(Status::Ok) > 0 && self.count(Status::Fail) == 0
    }

    /// 0 when no check failed (see [`Report::passed`]), else 1.
    pub fn exit_code(&self) -> u8 {
        if self.passed() { 0 } else { 1 }
    }

    /// `selftest: 8 checks, 8 passed` or `selftest: 8 checks, 6 passed, 1 FAILED, 1 skipped`.
    pub fn summary(&self) -> String {
        let n = self.checks.len();
        let mut s = format!(
            "selftest: {n} check{}, {} passed",
            if n == 1 { "" } else { "s" },
            self.count(Status::Ok)
        );
        let failed = self.count(Status::Fail);
        if failed > 0 {
            s.push_str(&format!(", {failed} FAILED"));
        }
        let skipped = self.count(Status::Skip);
        if skipped > 0 {
            s.push_str(&format!(", {skipped} skipped"));
        }
        s
    }

    /// The report as one JSON document.
    pub fn to_json(&self) -> serde_json::Value {
        let checks: Vec<serde_json::Value> = self
            .checks
            .iter()
            .map(|c| {
                serde_json::json!({
                    "name": c.name,
                    "status": match c.status {
                        Status::Ok => "ok",
                        Status::Fail => "fail",
                        Status::Skip => "skip",
                    },
                    "ok": c.ok(),
                    "detail": c.detail,
                    "duration_ms": u64::try_from(c.duration.as_millis()).unwrap_or(u64::MAX),
                    "log": c.log,
                })
            })
            .collect();
        serde_json::json!({
            "bin_dir": self.bin_dir.display().to_string(),
            "checks": checks,
            "total": self.checks.len(),
            "passed": self.count(Status::Ok),
            "failed": self.count(Status::Fail),
            "skipped": self.count(Status::Skip),
            "ok": self.passed(),
            "kept_dir": self.kept_dir.as_ref().map(|d| d.display().to_string()),
        })
    }
}

fn show_duration(d: Duration) -> String {
    if d < Duration::from_secs(10) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Runs every check (see the crate's documentation).
pub fn run(opts: &Options) -> Report {
    run_with(opts, &mut |_| {})
}

/// [`run`], calling `each` as soon as a check is done (to print lines as they come).
pub fn run_with(opts: &Options, each: &mut dyn FnMut(&Check)) -> Report {
    checks::run_all(opts, each)
}

const AFTER_HELP: &str = "\
The installed binaries (pnetc, gspc-run, gspc-worker; pnetv, pnet2dot, gspc if there) are
taken from the folder of this executable, or from --bin-dir. Every check works in a private
temporary directory that is removed afterwards.

Exit codes: 0 no check failed, 1 a check failed, 2 usage error.

Examples:
  gspc-selftest
  gspc-selftest --bin-dir /opt/pnet/bin --module-path /opt/pnet/lib --json";

/// checks the installation end to end: the compiler, the VM, the JIT, a local runtime with
/// two workers, a command module, a native module, and global memory moved between two
/// workers by libarith.so's memory buffers; one line per check, then a summary
#[derive(clap::Parser)]
#[command(disable_version_flag = true, after_help = AFTER_HELP)]
struct Cli {
    /// Where the installed binaries are (default: this executable's folder)
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Also look for the native modules (libnoop.so, else libarith.so, else libpi.so;
    /// libarith.so for the memory check, skipped without it) in DIR, before the bin dir and
    /// $PNET_MODULE_PATH; passed on to gspc-run (repeatable)
    #[arg(long = "module-path", value_name = "DIR")]
    module_path: Vec<PathBuf>,
    /// The time limit of each command run, 1 to 86400 (default 60)
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: Option<u64>,
    /// Keep the temporary directory (its path is printed)
    #[arg(long)]
    keep: bool,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
    /// Print every command run and what it said
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Print the version
    #[arg(short = 'V', long)]
    version: bool,
}

/// Parses the command line (without the program name; `OsString`s, so that folder names
/// need not be UTF-8). `Err((message, code))` is what to print and the exit code (0 for
/// `--help`/`--version`, 2 for usage errors).
pub fn parse_args<I, T>(prog: &str, argv: I) -> Result<Options, (String, u8)>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::{CommandFactory, FromArgMatches};
    let hint = format!("Try '{prog} --help' for more information.");
    let usage = |m: String| (format!("{prog}: {m}\n{hint}"), 2);
    let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    pnet_stdlib::cli::generate_if_asked(prog, &argv, Cli::command);
    let argv = std::iter::once(std::ffi::OsString::from(prog)).chain(argv);
    // clap names commands with 'static strings; this runs once per process.
    let name: &'static str = Box::leak(prog.to_string().into_boxed_str());
    let cli = Cli::command()
        .name(name)
        .bin_name(name)
        .try_get_matches_from(argv)
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match cli {
        Ok(c) => c,
        Err(e) => {
            let text = e.render().to_string();
            let text = text.trim_end();
            if !e.use_stderr() {
                return Err((text.to_string(), 0));
            }
            let text = text.strip_prefix("error: ").unwrap_or(text);
            let text = text.replace("For more information, try '--help'.", &hint);
            return Err((format!("{prog}: {text}"), 2));
        }
    };
    if cli.version {
        return Err((format!("{prog} {}", env!("CARGO_PKG_VERSION")), 0));
    }
    let dir = |flag: &str, p: &Path| -> Result<PathBuf, (String, u8)> {
        let dir = absolute(p);
        if dir.is_dir() {
            Ok(dir)
        } else {
            Err(usage(format!(
                "{flag}: '{}' is not a directory",
                p.display()
            )))
        }
    };
    Ok(Options {
        bin_dir: cli
            .bin_dir
            .as_deref()
            .map(|p| dir("--bin-dir", p))
            .transpose()?,
        module_path: cli
            .module_path
            .iter()
            .map(|p| dir("--module-path", p))
            .collect::<Result<_, _>>()?,
        keep: cli.keep,
        json: cli.json,
        verbose: cli.verbose,
        timeout: cli.timeout.map(Duration::from_secs),
    })
}

/// `p` made absolute against the current directory (the checks run in another one).
fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `gspc-selftest ARGS`: parse, run, print, and the exit code.
pub fn main(argv: &[std::ffi::OsString]) -> ExitCode {
    main_as("gspc-selftest", argv)
}

/// The same under another program name (`gspc selftest`).
pub fn main_as(prog: &str, argv: &[std::ffi::OsString]) -> ExitCode {
    let opts = match parse_args(prog, argv.iter().cloned()) {
        Ok(o) => o,
        Err((text, 0)) => {
            say(&text);
            return ExitCode::SUCCESS;
        }
        Err((text, code)) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{text}");
            return ExitCode::from(code);
        }
    };
    let verbose = opts.verbose;
    let report = if opts.json {
        run(&opts)
    } else {
        run_with(&opts, &mut |c| {
            say(&c.line());
            if verbose {
                for l in &c.log {
                    say(&format!("       {l}"));
                }
            }
        })
    };
    if opts.json {
        say(&report.to_json().to_string());
    } else {
        if let Some(d) = &report.kept_dir {
            say(&format!("kept the temporary directory {}", d.display()));
        }
        say(&report.summary());
    }
    ExitCode::from(report.exit_code())
}

/// Prints a line; a closed standard output (`| head`) is not an error worth a panic, and
/// the exit code still tells the result.
fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // Output that cannot be written is reported, not lost (a closed pipe ends quietly).
    if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        let _ = writeln!(
            std::io::stderr(),
            "error: cannot write to standard output: {e}"
        );
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_options() {
        let tmp = std::env::temp_dir();
        let t = tmp.display().to_string();
        let o = parse_args(
            "gspc-selftest",
            args(&[
                "--bin-dir",
                &t,
                "--module-path=/",
                "--keep",
                "--json",
                "-v",
                "--timeout",
                "5",
            ]),
        )
        .expect("valid");
        assert_eq!(o.bin_dir.as_deref(), Some(tmp.as_path()));
        assert_eq!(o.module_path, vec![PathBuf::from("/")]);
        assert!(o.keep && o.json && o.verbose);
        assert_eq!(o.timeout, Some(Duration::from_secs(5)));
    }

    #[test]
    fn usage_errors_and_help() {
        let err = |xs: &[&str]| parse_args("gspc-selftest", args(xs)).expect_err("error");
        let (m, c) = err(&["--frobnicate"]);
        assert_eq!(c, 2);
        assert!(m.contains("unexpected argument '--frobnicate'"), "{m}");
        let (m, c) = err(&["--bin-dir", "/nonexistent/selftest"]);
        assert_eq!(c, 2);
        assert!(
            m.contains("--bin-dir: '/nonexistent/selftest' is not a directory"),
            "{m}"
        );
        let (m, c) = err(&["--bin-dir"]);
        assert_eq!(c, 2);
        assert!(
            m.contains("a value is required for '--bin-dir <DIR>'"),
            "{m}"
        );
        let (m, c) = err(&["--timeout", "soon"]);
        assert_eq!(c, 2);
        assert!(m.contains("'soon' for '--timeout <SECS>'"), "{m}");
        let (m, c) = err(&["--keep=yes"]);
        assert_eq!(c, 2);
        assert!(m.contains("unexpected value 'yes' for '--keep'"), "{m}");
        let (m, c) = err(&["extra"]);
        assert_eq!(c, 2);
        assert!(m.contains("unexpected argument 'extra'"), "{m}");
        let (m, c) = parse_args("gspc selftest", args(&["--help"])).expect_err("help");
        assert_eq!(c, 0);
        assert!(m.contains("Usage: gspc selftest [OPTIONS]"), "{m}");
        assert!(m.contains("--bin-dir <DIR>"), "{m}");
        let (m, c) = err(&["-V"]);
        assert_eq!(
            (m, c),
            (format!("gspc-selftest {}", env!("CARGO_PKG_VERSION")), 0)
        );
    }

    #[test]
    fn lines_summary_and_json() {
        let check = |name, status, detail: &str, ms| Check {
            name,
            status,
            detail: detail.into(),
            duration: Duration::from_millis(ms),
            log: vec![],
        };
        let report = Report {
            bin_dir: PathBuf::from("/opt/pnet/bin"),
            checks: vec![
                check("compiler", Status::Ok, "pnetc compiled a net", 12),
                check("native-module", Status::Fail, "libnoop.so: bad", 12_345),
                check("workers", Status::Skip, "needs gspc-worker", 0),
            ],
            kept_dir: None,
        };
        assert_eq!(
            report.checks[0].line(),
            "ok   compiler        pnetc compiled a net (12 ms)"
        );
        assert_eq!(
            report.checks[1].line(),
            "FAIL native-module   libnoop.so: bad (12.3 s)"
        );
        assert_eq!(
            report.summary(),
            "selftest: 3 checks, 1 passed, 1 FAILED, 1 skipped"
        );
        assert_eq!(report.exit_code(), 1);
        let j = report.to_json();
        assert_eq!(j["failed"], 1);
        assert_eq!(j["checks"][1]["status"], "fail");
        assert_eq!(j["checks"][1]["duration_ms"], 12_345);
        assert_eq!(j["ok"], false);

        let good = Report {
            checks: vec![check("vm", Status::Ok, "fine", 1)],
            ..report
        };
        assert_eq!(good.summary(), "selftest: 1 check, 1 passed");
        assert_eq!(good.exit_code(), 0);
        // A skip alone (an optional module not installed) is not a failure.
        let skipped = Report {
            checks: vec![
                check("vm", Status::Ok, "fine", 1),
                check("memory", Status::Skip, "needs libarith.so", 0),
            ],
            ..good
        };
        assert_eq!(skipped.summary(), "selftest: 2 checks, 1 passed, 1 skipped");
        assert_eq!(skipped.exit_code(), 0);
        assert_eq!(skipped.to_json()["ok"], true);
        let empty = Report {
            checks: vec![],
            ..skipped
        };
        assert_eq!(empty.exit_code(), 1);
    }
}
