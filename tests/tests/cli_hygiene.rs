//! Command-line hygiene of every binary (issues 20 and 21): a command line that is not UTF-8
//! (a file name, a `-p` value) is a clean usage error or works, never a panic (exit 101);
//! output that cannot be written (`> /dev/full`) is reported with a message and a non-zero
//! exit instead of a panic or a silent success; `--help` works.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs `tool ARGS` with its standard output going to `stdout` and no input.
fn run_to(tool: &str, args: &[&OsStr], stdout: Stdio) -> Output {
    Command::new(pnet_tests::bin(tool))
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        // Files a tool writes under a relative name land in a scratch folder.
        .current_dir(scratch("cwd"))
        .env_remove("PNET_MODULE_PATH")
        .env_remove("GSPC_STATE_DIR")
        .output()
        .unwrap_or_else(|e| panic!("run {tool}: {e}"))
}

fn run(tool: &str, args: &[&OsStr]) -> Output {
    run_to(tool, args, Stdio::piped())
}

/// Runs `tool ARGS` with standard output on `/dev/full`.
fn run_full(tool: &str, args: &[&OsStr]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    run_to(tool, args, Stdio::from(full))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// `\xff`: not UTF-8 (never a file: output files of that name go to scratch folders).
fn bad() -> &'static OsStr {
    OsStr::from_bytes(b"\xff")
}

/// `n=\xff`: a `-p` binding whose value is not UTF-8.
fn bad_put() -> &'static OsStr {
    OsStr::from_bytes(b"n=\xff")
}

#[track_caller]
fn assert_no_panic(tool: &str, args: &[&OsStr], o: &Output) {
    assert_ne!(
        o.status.code(),
        Some(101),
        "{tool} {args:?} panicked:\n{}",
        stderr(o)
    );
    assert!(o.status.code().is_some(), "{tool} {args:?}: {:?}", o.status);
    assert!(
        !stderr(o).contains("panicked"),
        "{tool} {args:?} panicked:\n{}",
        stderr(o)
    );
}

/// A usage error: status 2 and a message naming the tool, no panic.
#[track_caller]
fn assert_usage_error(tool: &str, args: &[&OsStr]) {
    let o = run(tool, args);
    assert_no_panic(tool, args, &o);
    assert_eq!(o.status.code(), Some(2), "{tool} {args:?}:\n{}", stderr(&o));
    assert!(
        stderr(&o).contains(tool),
        "{tool} {args:?}:\n{}",
        stderr(&o)
    );
}

/// A failure to write standard output: a non-zero status (not a panic) and a message.
#[track_caller]
fn assert_write_error_reported(tool: &str, args: &[&OsStr]) {
    let o = run_full(tool, args);
    assert_no_panic(tool, args, &o);
    assert_ne!(
        o.status.code(),
        Some(0),
        "{tool} {args:?} > /dev/full succeeded"
    );
    assert!(
        stderr(&o).contains("cannot write"),
        "{tool} {args:?} > /dev/full:\n{}",
        stderr(&o)
    );
}

fn example(path: &str) -> OsString {
    // This crate's folder is `tests/` in the workspace.
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
        .into_os_string()
}

/// A scratch folder of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cli-hygiene-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
];

#[test]
fn help_works_for_every_binary() {
    for &tool in TOOLS {
        let o = run(tool, &[os("--help")]);
        assert!(o.status.success(), "{tool} --help: {}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("Usage:"), "{tool} --help:\n{text}");
        assert_write_error_reported(tool, &[os("--help")]);
    }
}

#[test]
fn pnetc_non_utf8_arguments() {
    let o = run("pnetc", &[bad()]);
    assert_no_panic("pnetc", &[bad()], &o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    for flag in ["-o", "-i", "-I", "-MF", "-g"] {
        let bad_out = scratch("pnetc-out").join(bad());
        let o = run("pnetc", &[os(flag), bad_out.as_os_str(), os("-")]);
        assert_no_panic("pnetc", &[os(flag), bad()], &o);
    }
    assert_usage_error("pnetc", &[os("-MT"), bad()]);
    assert_usage_error("pnetc", &[os("--emit"), bad()]);
    assert_usage_error("pnetc", &[os("--gen-cxxflags"), bad()]);
}

/// A net whose file name is not UTF-8 compiles, and its bundle goes to a file name that is
/// not UTF-8 either.
#[test]
fn pnetc_compiles_a_net_with_a_non_utf8_name() {
    let dir = scratch("pnetc");
    let mut name = b"hello-".to_vec();
    name.push(0xff);
    let net = dir.join(OsString::from_vec(
        [name.clone(), b".xpnet".to_vec()].concat(),
    ));
    std::fs::copy(example("examples/hello/hello.xpnet"), &net).unwrap();
    let out = dir.join(OsString::from_vec([name, b".pnet".to_vec()].concat()));
    let o = run("pnetc", &[net.as_os_str(), os("-o"), out.as_os_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::metadata(&out).unwrap().len() > 0);
    let o = run("pnetc", &[os("-M"), net.as_os_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rules = String::from_utf8_lossy(&o.stdout);
    assert!(rules.contains(".xpnet"), "{rules}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn pnetc_reports_output_it_cannot_write() {
    let hello = example("examples/hello/hello.xpnet");
    let hello = hello.as_os_str();
    for args in [
        &[os("--emit=ir"), hello][..],
        &[os("--emit=ast"), hello],
        &[os("--emit=bytecode"), hello],
        &[os("--emit=xpnet"), hello],
        &[os("-M"), hello],
        &[os("--list-warnings")],
        &[os("--version")],
    ] {
        assert_write_error_reported("pnetc", args);
    }
    // A net with includes (from the GPI-Space corpus, read in place).
    let gpispace = example("../shared/corpus/gpispace/share");
    let lib = Path::new(&gpispace).join("xml/lib");
    let net = Path::new(&gpispace).join("doc/example/sequence/use_sequence.xpnet");
    let args = [
        os("-I"),
        lib.as_os_str(),
        os("--list-dependencies"),
        net.as_os_str(),
    ];
    assert!(!run("pnetc", &args).stdout.is_empty());
    assert_write_error_reported("pnetc", &args);

    let o = run("pnetc", &[hello, os("-o"), os("/dev/full")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot write /dev/full"),
        "{}",
        stderr(&o)
    );
    let o = run("pnetc", &[hello, os("-M"), os("-MF"), os("/dev/full")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot write /dev/full"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn pnetv_non_utf8_arguments() {
    let o = run("pnetv", &[bad()]);
    assert_no_panic("pnetv", &[bad()], &o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let hello = example("examples/hello/hello.xpnet");
    assert_usage_error("pnetv", &[&hello, os("-p"), bad_put()]);
    assert_usage_error("pnetv", &[&hello, os("--assume"), bad()]);
    let bad_out = scratch("out").join(bad());
    let o = run(
        "pnetv",
        &[
            &hello,
            os("--trace-out"),
            bad_out.as_os_str(),
            os("-p"),
            os("name=\"x\""),
        ],
    );
    assert_no_panic("pnetv", &[os("--trace-out"), bad()], &o);
}

/// Compiles `examples/countdown/countdown.xpnet` into `DIR/countdown.pnet`.
fn countdown_bundle(dir: &std::path::Path) -> PathBuf {
    let out = dir.join("countdown.pnet");
    let net = example("examples/countdown/countdown.xpnet");
    let o = run("pnetc", &[&net, os("-o"), out.as_os_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

#[test]
fn pnetput_and_pnetget_non_utf8_arguments_and_full_output() {
    for (tool, args) in [("pnetput", &[os("-l"), bad()][..]), ("pnetget", &[bad()])] {
        let o = run(tool, args);
        assert_no_panic(tool, args, &o);
        assert_eq!(o.status.code(), Some(1), "{tool}: {}", stderr(&o));
    }
    let dir = scratch("pnetput");
    let bundle = countdown_bundle(&dir);
    let b = bundle.as_os_str();
    assert_usage_error("pnetput", &[b, os("-o"), os("-"), os("-p"), bad_put()]);
    assert_usage_error("pnetput", &[b, os("-o"), os("-"), os("--place"), bad_put()]);
    let bad_out = scratch("out").join(bad());
    let o = run(
        "pnetput",
        &[b, os("-o"), bad_out.as_os_str(), os("-p"), os("n=1L")],
    );
    assert_no_panic("pnetput", &[os("-o"), bad()], &o);
    assert_usage_error("pnetget", &[b, bad()]);
    assert_write_error_reported("pnetput", &[os("--list"), b]);
    assert_write_error_reported("pnetput", &[b, os("-o"), os("-")]);
    let o = run("pnetput", &[b, os("-o"), os("/dev/full")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot write /dev/full"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn pnet2dot_non_utf8_arguments_and_full_output() {
    let o = run("pnet2dot", &[bad()]);
    assert_no_panic("pnet2dot", &[bad()], &o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let hello = example("examples/hello/hello.xpnet");
    assert_usage_error("pnet2dot", &[&hello, os("--not-starts-with"), bad()]);
    let bad_out = scratch("out").join(bad());
    let o = run("pnet2dot", &[&hello, os("-o"), bad_out.as_os_str()]);
    assert_no_panic("pnet2dot", &[os("-o"), bad()], &o);
    assert_write_error_reported("pnet2dot", &[&hello]);
    let o = run("pnet2dot", &[&hello, os("-o"), os("/dev/full")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot write /dev/full"),
        "{}",
        stderr(&o)
    );
}

/// gspc (but `gspc boot`) and gspc-selftest: a file name or a `-p` value that is not UTF-8
/// is a usage error, not a panic.
#[test]
fn runtime_tools_refuse_non_utf8_arguments_cleanly() {
    let hello = example("examples/hello/hello.xpnet");
    assert_usage_error("gspc-run", &[&hello, os("-p"), bad_put()]);
    // The client subcommands: a socket whose name is not UTF-8 is tried (here: missing).
    let args = [os("status"), os("--control"), bad()];
    let o = run("gspc-run", &args);
    assert_no_panic("gspc-run", &args, &o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_usage_error(
        "gspc-run",
        &[os("put-token"), os("--control"), bad(), bad_put()],
    );
    assert_usage_error("gspc", &[os("submit"), bad()]);
    assert_usage_error("gspc", &[os("submit"), &hello, os("-p"), bad_put()]);
    assert_usage_error("gspc", &[bad()]);
    let state = scratch("gspc-state");
    // The client commands parse OsStrings: a state directory whose name is not UTF-8 is
    // tried (here: missing, an error), and options of other commands are refused.
    let args = [os("status"), os("--state-dir"), bad()];
    let o = run("gspc", &args);
    assert_no_panic("gspc", &args, &o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_usage_error("gspc", &[os("status"), os("--result"), os("x")]);
    assert_usage_error("gspc", &[os("status"), os("-I"), os("x")]);
    // submit takes the compiler options (here it then fails: no runtime).
    let args = [
        os("submit"),
        &hello,
        os("-I"),
        os("x"),
        os("--Wall"),
        os("--state-dir"),
        state.as_os_str(),
    ];
    let o = run("gspc", &args);
    assert_no_panic("gspc", &args, &o);
    assert!(!stderr(&o).contains("unknown option"), "{}", stderr(&o));
    assert_write_error_reported("gspc", &[os("wait"), os("--help")]);
    // boot parses OsStrings: a nodefile whose name is not UTF-8 is read (here: missing).
    let args = [
        os("boot"),
        os("--nodefile"),
        bad(),
        os("--state-dir"),
        state.as_os_str(),
    ];
    let o = run("gspc", &args);
    assert_no_panic("gspc", &args, &o);
    assert!(
        stderr(&o).contains("cannot read the nodefile"),
        "{}",
        stderr(&o)
    );
    assert_usage_error("gspc", &[os("boot"), os("--topology"), bad()]);
    assert_write_error_reported("gspc", &[os("boot"), os("--help")]);
    assert_usage_error("gspc-selftest", &[os("--bin-dir"), bad()]);
}

/// workload_exec takes any function name, and pnet-lsp ignores what editors pass.
#[test]
fn workload_exec_and_lsp_take_non_utf8_arguments() {
    let o = run("workload_exec", &[bad()]);
    assert_no_panic("workload_exec", &[bad()], &o);
    // No inputs on standard input: a failed task, not a usage error.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("workload_exec:"), "{}", stderr(&o));
    assert_usage_error("workload_exec", &[]);
    let o = run("pnet-lsp", &[os("--stdio"), bad()]);
    assert_no_panic("pnet-lsp", &[bad()], &o);
    assert_write_error_reported("pnet-lsp", &[os("--version")]);
}

/// gspc-run: a net with a name that is not UTF-8 runs; its result file goes to a name that is
/// not UTF-8 either; pnetget reads it, and reports output it cannot write.
#[test]
fn gspc_run_non_utf8_names_and_pnetget_full_output() {
    let o = run("gspc-run", &[bad()]);
    assert_no_panic("gspc-run", &[bad()], &o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let dir = scratch("gspc-run");
    let net = dir.join(OsStr::from_bytes(b"hello-\xff.xpnet"));
    std::fs::copy(example("examples/hello/hello.xpnet"), &net).unwrap();
    let result = dir.join(OsStr::from_bytes(b"out-\xff.result"));
    let args = [
        net.as_os_str(),
        os("-p"),
        os("name=\"world\""),
        os("--result"),
        result.as_os_str(),
    ];
    let o = run("gspc-run", &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "greeting = \"Hello, world!\"\n"
    );
    let o = run("pnetget", &[result.as_os_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "greeting = \"Hello, world!\"\n"
    );
    assert_write_error_reported("pnetget", &[result.as_os_str()]);
    assert_write_error_reported("pnetget", &[os("--json"), result.as_os_str()]);
    assert_write_error_reported("gspc-run", &args);
    assert_usage_error("gspc-run", &[net.as_os_str(), os("-p"), bad_put()]);
    assert_usage_error("gspc-run", &[net.as_os_str(), os("--jit"), bad()]);
    let o = run(
        "gspc-run",
        &[
            net.as_os_str(),
            os("-p"),
            os("name=\"x\""),
            os("--result"),
            os("/dev/full"),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot write /dev/full"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// gspc-topology's outputs report a full disk instead of panicking or exiting 0.
#[test]
fn gspc_topology_reports_output_it_cannot_write() {
    let topology = example("../shared/corpus/dds/dds-topology-lib/tests/topology_test_7.xml");
    let t = topology.as_os_str();
    for args in [
        &[os("count"), t][..],
        &[os("validate"), os("--json"), t],
        &[os("validate"), t],
        &[os("expand"), t],
        &[os("expand"), os("--json"), t],
    ] {
        assert!(run("gspc-topology", args).status.success(), "{args:?}");
        assert_write_error_reported("gspc-topology", args);
    }
    let o = run("gspc-topology", &[os("count"), bad()]);
    assert_no_panic("gspc-topology", &[bad()], &o);
}

/// Standard error that cannot be written (`2> /dev/full`) ends a tool with a failure status,
/// never a panic: there is nowhere left to report it.
#[test]
fn errors_to_a_full_standard_error_are_no_panic() {
    let dir = scratch("stderr");
    let net = dir.join("broken.xpnet");
    std::fs::write(&net, "<defun name=\"x\"><nonsense/></defun>").unwrap();
    let n = net.as_os_str();
    let state = dir.join("no-state");
    let runs: [(&str, Vec<&OsStr>); 8] = [
        ("pnetc", vec![n]),
        ("pnetc", vec![os("--bogus")]),
        ("pnetv", vec![n]),
        ("pnet2dot", vec![n]),
        ("gspc-run", vec![n]),
        (
            "gspc",
            vec![os("status"), os("--state-dir"), state.as_os_str()],
        ),
        ("pnetput", vec![os("-l"), n]),
        ("pnetget", vec![n]),
    ];
    for (tool, args) in runs {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = Command::new(pnet_tests::bin(tool))
            .args(&args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(full))
            .output()
            .unwrap();
        let code = o.status.code();
        assert!(
            code.is_some_and(|c| c != 0 && c != 101),
            "{tool} {args:?} 2> /dev/full: {:?}",
            o.status
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
