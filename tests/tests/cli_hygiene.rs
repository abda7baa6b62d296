//! Command-line hygiene of every binary (issues 20 and 21): a command line that is not UTF-8
//! (a file name, a `-p` value) is a clean usage error or works, never a panic (exit 101);
//! output that cannot be written (`> /dev/full`, `2> /dev/full`) is reported with a message
//! and a non-zero exit instead of a panic or a silent success; `--help` works.
//!
//! Table-driven: each test is a list of [`Case`]s (a tool, its arguments with placeholders
//! such as `{bad}` for a name that is not UTF-8, and what must happen), run in order by
//! [`check`].

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use Expect::*;

/// What a run must do; none may panic (exit 101 or a "panicked" message) or die of a signal.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Any status.
    Ran,
    /// Exit with this status.
    Exit(i32),
    /// A usage error: status 2 and a message naming the tool.
    Usage,
    /// Status 0.
    Succeeds,
    /// Status 0, printing exactly this.
    Prints(&'static str),
    /// Status 0, printing something that contains this ("" for anything but nothing).
    PrintsSome(&'static str),
    /// Status 0, `--help`: the usage.
    Help,
    /// Status 0, and the file (a placeholder) written, not empty.
    Writes(&'static str),
    /// This status and a message containing this.
    Fails(i32, &'static str),
    /// Any status and a message containing this.
    Says(&'static str),
    /// Any status and no message containing this.
    DoesNotSay(&'static str),
    /// With standard output on `/dev/full`: a non-zero status and a message "cannot write".
    FullStdout,
    /// With standard error on `/dev/full`: a failure status (there is nowhere to report it).
    FullStderr,
}

/// One run: `tool ARGS`, what it must do.
struct Case {
    tool: &'static str,
    args: &'static [&'static str],
    expect: Expect,
}

const fn case(tool: &'static str, args: &'static [&'static str], expect: Expect) -> Case {
    Case { tool, args, expect }
}

fn example(path: &str) -> PathBuf {
    // This crate's folder is `tests/` in the workspace.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// A scratch folder of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cli-hygiene-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The files a test's cases name, in a scratch folder removed at the end.
struct Ctx {
    dir: PathBuf,
}

impl Ctx {
    fn new(name: &str) -> Ctx {
        Ctx { dir: scratch(name) }
    }

    /// An argument of a case: a placeholder, or the text itself.
    fn arg(&self, a: &str) -> OsString {
        let bad = OsStr::from_bytes(b"\xff");
        let dir = &self.dir;
        let path = |p: PathBuf| p.into_os_string();
        match a {
            // Not UTF-8 (never a file: output files of that name go to the scratch folder).
            "{bad}" => bad.to_owned(),
            // A `-p` binding whose value is not UTF-8.
            "{bad_put}" => OsStr::from_bytes(b"n=\xff").to_owned(),
            // An output file whose name is not UTF-8.
            "{bad_out}" => {
                std::fs::create_dir_all(dir.join("out")).unwrap();
                path(dir.join("out").join(bad))
            }
            "{hello}" => path(example("examples/hello/hello.xpnet")),
            // examples/hello/hello.xpnet under a name that is not UTF-8.
            "{bad_net}" => {
                let net = dir.join(OsStr::from_bytes(b"hello-\xff.xpnet"));
                if !net.exists() {
                    std::fs::copy(example("examples/hello/hello.xpnet"), &net).unwrap();
                }
                path(net)
            }
            "{bad_bundle}" => path(dir.join(OsStr::from_bytes(b"hello-\xff.pnet"))),
            "{bad_result}" => path(dir.join(OsStr::from_bytes(b"out-\xff.result"))),
            // examples/countdown/countdown.xpnet, compiled.
            "{countdown}" => {
                let out = dir.join("countdown.pnet");
                if !out.exists() {
                    let net = example("examples/countdown/countdown.xpnet");
                    let o = run("pnetc", &[net.as_os_str(), "-o".as_ref(), out.as_os_str()]);
                    assert!(o.status.success(), "{}", stderr(&o));
                }
                path(out)
            }
            // A net that does not compile.
            "{broken}" => {
                let net = dir.join("broken.xpnet");
                std::fs::write(&net, "<defun name=\"x\"><nonsense/></defun>").unwrap();
                path(net)
            }
            // A state directory of gspc (empty), and one that does not exist.
            "{state}" => {
                std::fs::create_dir_all(dir.join("gspc-state")).unwrap();
                path(dir.join("gspc-state"))
            }
            "{no_state}" => path(dir.join("no-state")),
            // A net with includes (from the GPI-Space corpus, read in place).
            "{gpispace_lib}" => path(pnet_tests::gpispace_lib()),
            "{use_sequence}" => {
                path(pnet_tests::gpispace().join("share/doc/example/sequence/use_sequence.xpnet"))
            }
            "{dds_topology}" => path(example("tests/data/topology/groups.xml")),
            _ => OsString::from(a),
        }
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `tool ARGS` with no input, standard output to `stdout`, standard error to `stderr`.
fn run_with(tool: &str, args: &[&OsStr], stdout: Stdio, stderr: Stdio) -> Output {
    Command::new(pnet_tests::bin(tool))
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        // Files a tool writes under a relative name land in a scratch folder.
        .current_dir(scratch("cwd"))
        .env_remove("PNET_MODULE_PATH")
        .env_remove("GSPC_STATE_DIR")
        .env_remove("GSPC_PROPERTY_ADDR")
        .output()
        .unwrap_or_else(|e| panic!("run {tool}: {e}"))
}

fn run(tool: &str, args: &[&OsStr]) -> Output {
    run_with(tool, args, Stdio::piped(), Stdio::piped())
}

fn dev_full() -> Stdio {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    Stdio::from(full)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs the cases in order (a case may read what an earlier one wrote).
#[track_caller]
fn check(ctx: &Ctx, cases: &[Case]) {
    for c in cases {
        let args: Vec<OsString> = c.args.iter().map(|a| ctx.arg(a)).collect();
        let args: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
        let what = format!("{} {:?} ({:?})", c.tool, c.args, c.expect);
        let o = match c.expect {
            FullStdout => run_with(c.tool, &args, dev_full(), Stdio::piped()),
            FullStderr => run_with(c.tool, &args, Stdio::null(), dev_full()),
            _ => run(c.tool, &args),
        };
        let (code, err) = (o.status.code(), stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(code.is_some(), "{what}: {:?}", o.status);
        assert_ne!(code, Some(101), "{what} panicked:\n{err}");
        assert!(!err.contains("panicked"), "{what} panicked:\n{err}");
        let ok = match c.expect {
            Ran => true,
            Exit(n) => code == Some(n),
            Usage => code == Some(2) && err.contains(c.tool),
            Succeeds => code == Some(0),
            Prints(text) => code == Some(0) && out == text,
            PrintsSome(text) => code == Some(0) && !out.is_empty() && out.contains(text),
            Help => code == Some(0) && out.contains("Usage:"),
            Writes(file) => {
                code == Some(0) && std::fs::metadata(ctx.arg(file)).is_ok_and(|m| m.len() > 0)
            }
            Fails(n, text) => code == Some(n) && err.contains(text),
            Says(text) => err.contains(text),
            DoesNotSay(text) => !err.contains(text),
            FullStdout => code != Some(0) && err.contains("cannot write"),
            FullStderr => code != Some(0),
        };
        assert!(
            ok,
            "{what}: status {code:?}\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
}

/// Every binary these tests cover.
const TOOLS: &[&str] = &[
    "pnetc",
    "pnetv",
    "pnetput",
    "pnetget",
    "gspc-run",
    "gspc",
    "workload_exec",
    "pnet2dot",
    "pnet-lsp",
    "gspc-selftest",
    "gspc-topology",
    "gspc-dds",
    "gspc-property",
    "gspc-worker",
    "gspc-leaf",
];

#[test]
fn help_works_for_every_binary() {
    let ctx = Ctx::new("help");
    for &tool in TOOLS {
        check(
            &ctx,
            &[
                case(tool, &["--help"], Help),
                case(tool, &["--help"], FullStdout),
            ],
        );
    }
}

#[test]
fn pnetc_non_utf8_arguments() {
    check(
        &Ctx::new("pnetc-args"),
        &[
            case("pnetc", &["{bad}"], Exit(1)),
            case("pnetc", &["-o", "{bad_out}", "-"], Ran),
            case("pnetc", &["-i", "{bad_out}", "-"], Ran),
            case("pnetc", &["-I", "{bad_out}", "-"], Ran),
            case("pnetc", &["-MF", "{bad_out}", "-"], Ran),
            case("pnetc", &["-g", "{bad_out}", "-"], Ran),
            case("pnetc", &["-MT", "{bad}"], Usage),
            case("pnetc", &["--emit", "{bad}"], Usage),
            case("pnetc", &["--gen-cxxflags", "{bad}"], Usage),
        ],
    );
}

/// A net whose file name is not UTF-8 compiles, and its bundle goes to a file name that is
/// not UTF-8 either.
#[test]
fn pnetc_compiles_a_net_with_a_non_utf8_name() {
    check(
        &Ctx::new("pnetc"),
        &[
            case(
                "pnetc",
                &["{bad_net}", "-o", "{bad_bundle}"],
                Writes("{bad_bundle}"),
            ),
            case("pnetc", &["-M", "{bad_net}"], PrintsSome(".xpnet")),
        ],
    );
}

#[test]
fn pnetc_reports_output_it_cannot_write() {
    let deps = &[
        "-I",
        "{gpispace_lib}",
        "--list-dependencies",
        "{use_sequence}",
    ];
    let mut cases = vec![
        case("pnetc", &["--emit=ir", "{hello}"], FullStdout),
        case("pnetc", &["--emit=ast", "{hello}"], FullStdout),
        case("pnetc", &["--emit=bytecode", "{hello}"], FullStdout),
        case("pnetc", &["--emit=xpnet", "{hello}"], FullStdout),
        case("pnetc", &["-M", "{hello}"], FullStdout),
        case("pnetc", &["--list-warnings"], FullStdout),
        case("pnetc", &["--version"], FullStdout),
        case(
            "pnetc",
            &["{hello}", "-o", "/dev/full"],
            Fails(1, "cannot write /dev/full"),
        ),
        case(
            "pnetc",
            &["{hello}", "-M", "-MF", "/dev/full"],
            Fails(1, "cannot write /dev/full"),
        ),
    ];
    // The dependency list needs a net with includes, from the corpus.
    if !pnet_tests::corpus_absent() {
        cases.push(case("pnetc", deps, PrintsSome("")));
        cases.push(case("pnetc", deps, FullStdout));
    }
    check(&Ctx::new("pnetc-full"), &cases);
}

#[test]
fn pnetv_non_utf8_arguments() {
    check(
        &Ctx::new("pnetv"),
        &[
            case("pnetv", &["{bad}"], Exit(1)),
            case("pnetv", &["{hello}", "-p", "{bad_put}"], Usage),
            case("pnetv", &["{hello}", "--assume", "{bad}"], Usage),
            case(
                "pnetv",
                &["{hello}", "--trace-out", "{bad_out}", "-p", "name=\"x\""],
                Ran,
            ),
        ],
    );
}

#[test]
fn pnetput_and_pnetget_non_utf8_arguments_and_full_output() {
    check(
        &Ctx::new("pnetput"),
        &[
            case("pnetput", &["-l", "{bad}"], Exit(1)),
            case("pnetget", &["{bad}"], Exit(1)),
            case(
                "pnetput",
                &["{countdown}", "-o", "-", "-p", "{bad_put}"],
                Usage,
            ),
            case(
                "pnetput",
                &["{countdown}", "-o", "-", "--place", "{bad_put}"],
                Usage,
            ),
            case(
                "pnetput",
                &["{countdown}", "-o", "{bad_out}", "-p", "n=1L"],
                Ran,
            ),
            case("pnetget", &["{countdown}", "{bad}"], Usage),
            case("pnetput", &["--list", "{countdown}"], FullStdout),
            case("pnetput", &["{countdown}", "-o", "-"], FullStdout),
            case(
                "pnetput",
                &["{countdown}", "-o", "/dev/full"],
                Fails(1, "cannot write /dev/full"),
            ),
        ],
    );
}

#[test]
fn pnet2dot_non_utf8_arguments_and_full_output() {
    check(
        &Ctx::new("pnet2dot"),
        &[
            case("pnet2dot", &["{bad}"], Exit(1)),
            case(
                "pnet2dot",
                &["{hello}", "--not-starts-with", "{bad}"],
                Usage,
            ),
            case("pnet2dot", &["{hello}", "-o", "{bad_out}"], Ran),
            case("pnet2dot", &["{hello}"], FullStdout),
            case(
                "pnet2dot",
                &["{hello}", "-o", "/dev/full"],
                Fails(1, "cannot write /dev/full"),
            ),
        ],
    );
}

/// gspc (but `gspc boot`) and gspc-selftest: a file name or a `-p` value that is not UTF-8
/// is a usage error, not a panic.
#[test]
fn runtime_tools_refuse_non_utf8_arguments_cleanly() {
    check(
        &Ctx::new("runtime"),
        &[
            case("gspc-run", &["{hello}", "-p", "{bad_put}"], Usage),
            // The client subcommands: a socket whose name is not UTF-8 is tried (here:
            // missing).
            case("gspc-run", &["status", "--control", "{bad}"], Exit(1)),
            case(
                "gspc-run",
                &["put-token", "--control", "{bad}", "{bad_put}"],
                Usage,
            ),
            case("gspc", &["submit", "{bad}"], Usage),
            case("gspc", &["submit", "{hello}", "-p", "{bad_put}"], Usage),
            case("gspc", &["{bad}"], Usage),
            // The client commands parse OsStrings: a state directory whose name is not UTF-8
            // is tried (here: missing, an error), and options of other commands are refused.
            case("gspc", &["status", "--state-dir", "{bad}"], Exit(1)),
            case("gspc", &["status", "--result", "x"], Usage),
            case("gspc", &["status", "-I", "x"], Usage),
            // submit takes the compiler options (here it then fails: no runtime).
            case(
                "gspc",
                &[
                    "submit",
                    "{hello}",
                    "-I",
                    "x",
                    "--Wall",
                    "--state-dir",
                    "{state}",
                ],
                DoesNotSay("unknown option"),
            ),
            case("gspc", &["wait", "--help"], FullStdout),
            // boot parses OsStrings: a nodefile whose name is not UTF-8 is read (here:
            // missing).
            case(
                "gspc",
                &["boot", "--nodefile", "{bad}", "--state-dir", "{state}"],
                Says("cannot read the nodefile"),
            ),
            case("gspc", &["boot", "--topology", "{bad}"], Usage),
            case("gspc", &["boot", "--help"], FullStdout),
            case("gspc-selftest", &["--bin-dir", "{bad}"], Usage),
        ],
    );
}

/// workload_exec takes any function name, and pnet-lsp ignores what editors pass.
#[test]
fn workload_exec_and_lsp_take_non_utf8_arguments() {
    check(
        &Ctx::new("workload"),
        &[
            // No inputs on standard input: a failed task, not a usage error.
            case("workload_exec", &["{bad}"], Fails(1, "workload_exec:")),
            case("workload_exec", &[], Usage),
            case("pnet-lsp", &["--stdio", "{bad}"], Ran),
            case("pnet-lsp", &["--version"], FullStdout),
        ],
    );
}

/// gspc-run: a net with a name that is not UTF-8 runs; its result file goes to a name that is
/// not UTF-8 either; pnetget reads it, and reports output it cannot write.
#[test]
fn gspc_run_non_utf8_names_and_pnetget_full_output() {
    const HELLO: &str = "greeting = \"Hello, world!\"\n";
    let run = &[
        "{bad_net}",
        "-p",
        "name=\"world\"",
        "--result",
        "{bad_result}",
    ];
    check(
        &Ctx::new("gspc-run"),
        &[
            case("gspc-run", &["{bad}"], Exit(1)),
            case("gspc-run", run, Prints(HELLO)),
            case("pnetget", &["{bad_result}"], Prints(HELLO)),
            case("pnetget", &["{bad_result}"], FullStdout),
            case("pnetget", &["--json", "{bad_result}"], FullStdout),
            case("gspc-run", run, FullStdout),
            case("gspc-run", &["{bad_net}", "-p", "{bad_put}"], Usage),
            case("gspc-run", &["{bad_net}", "--jit", "{bad}"], Usage),
            case(
                "gspc-run",
                &["{bad_net}", "-p", "name=\"x\"", "--result", "/dev/full"],
                Fails(1, "cannot write /dev/full"),
            ),
        ],
    );
}

/// gspc-topology's outputs report a full disk instead of panicking or exiting 0.
#[test]
fn gspc_topology_reports_output_it_cannot_write() {
    let mut cases = Vec::new();
    for args in [
        &["count", "{dds_topology}"][..],
        &["validate", "--json", "{dds_topology}"],
        &["validate", "{dds_topology}"],
        &["expand", "{dds_topology}"],
        &["expand", "--json", "{dds_topology}"],
    ] {
        cases.push(case("gspc-topology", args, Succeeds));
        cases.push(case("gspc-topology", args, FullStdout));
    }
    cases.push(case("gspc-topology", &["count", "{bad}"], Ran));
    check(&Ctx::new("topology"), &cases);
}

/// Standard error that cannot be written (`2> /dev/full`) ends a tool with a failure status,
/// never a panic: there is nowhere left to report it.
#[test]
fn errors_to_a_full_standard_error_are_no_panic() {
    check(
        &Ctx::new("stderr"),
        &[
            case("pnetc", &["{broken}"], FullStderr),
            case("pnetc", &["--bogus"], FullStderr),
            case("pnetv", &["{broken}"], FullStderr),
            case("pnet2dot", &["{broken}"], FullStderr),
            case("gspc-run", &["{broken}"], FullStderr),
            case("gspc", &["status", "--state-dir", "{no_state}"], FullStderr),
            case("pnetput", &["-l", "{broken}"], FullStderr),
            case("pnetget", &["{broken}"], FullStderr),
        ],
    );
}

/// gspc-dds and gspc-property: arguments that are not UTF-8 are no panic; usage errors are
/// clean.
#[test]
fn dds_tools_take_non_utf8_arguments_cleanly() {
    check(
        &Ctx::new("dds"),
        &[
            // A topology file of that name does not exist.
            case("gspc-dds", &["{bad}"], Fails(1, "cannot read")),
            case("gspc-dds", &["--var", "{bad}", "t.xml"], Usage),
            case("gspc-dds", &["--bogus"], Usage),
            // Outside a task (no GSPC_PROPERTY_ADDR): refused, not a usage error.
            case("gspc-property", &["get", "{bad}"], Exit(1)),
            case("gspc-property", &["wait", "k", "--timeout", "{bad}"], Usage),
            case("gspc-property", &["exec", "--task", "1"], Usage),
        ],
    );
}
