//! End-to-end tests of the `gspc-run` binary on the examples.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use common::{example, gspc_run_command, stderr, stdout};

fn gspc_run(args: &[&str]) -> Output {
    gspc_run_command()
        .args(args)
        .output()
        .expect("run gspc-run")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gspc-run-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn help_and_usage_errors() {
    let o = gspc_run(&["--help"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("Usage: gspc-run"));
    for args in [
        &[][..],
        &["--bogus"],
        &["x.pnet", "-p", "novalue"],
        &["x.pnet", "-p", "n=1L +"],
        &["x.pnet", "--seed", "abc"],
    ] {
        let o = gspc_run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn examples_run_end_to_end() {
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "hello/hello.xpnet",
            &["-p", "name=\"world\""],
            "greeting = \"Hello, world!\"\n",
        ),
        ("countdown/countdown.xpnet", &["-p", "n=10L"], "done = 0L\n"),
        (
            "collatz/collatz.xpnet",
            &["-p", "start=27UL"],
            "steps = 111UL\n",
        ),
        (
            "points/points.xpnet",
            &[
                "-p",
                "points=Struct [x := 1L, y := 2L]",
                "-p",
                "points=Struct [x := 3L, y := 4L]",
                "-p",
                "scale=10L",
            ],
            "total = Struct [x := 40L, y := 60L]\n",
        ),
    ];
    for (net, puts, want) in cases {
        let mut args = vec![example(net)];
        args.extend(puts.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = gspc_run(&args);
        assert!(o.status.success(), "{net}: {}", stderr(&o));
        assert_eq!(stdout(&o), *want, "{net}");
    }
}

#[test]
fn json_output_and_bundles() {
    let bundle = tmp("countdown.pnet");
    let o = Command::new(env!("CARGO_BIN_EXE_gspc-run"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(o.status.success());
    // Compile with the real pnetc when it is built beside us; otherwise run the xpnet directly.
    let pnetc = Path::new(env!("CARGO_BIN_EXE_gspc-run")).with_file_name("pnetc");
    let net = if pnetc.exists() {
        let o = Command::new(&pnetc)
            .arg(example("countdown/countdown.xpnet"))
            .arg("-o")
            .arg(&bundle)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        bundle.display().to_string()
    } else {
        example("countdown/countdown.xpnet")
    };
    let o = gspc_run(&[&net, "-p", "n=5L", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(doc["outputs"]["done"]["tokens"][0], 0);
    assert_eq!(doc["outputs"]["done"]["type"], "long");
    assert_eq!(doc["firings"], 6);
    let o = gspc_run(&[&net, "-p", "n=5L", "--json", "--values=literal"]);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(doc["outputs"]["done"][0], "0L");
}

#[test]
fn runaway_nets_stop_at_max_firings() {
    let o = gspc_run(&[
        &example("countdown/countdown.xpnet"),
        "-p",
        "n=1000L",
        "--max-firings",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("10"), "{}", stderr(&o));
}

#[test]
fn corrupt_bundles_are_refused() {
    let path = tmp("corrupt.pnet");
    let mut bytes = b"PNETBNDL".to_vec();
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&[0; 12]);
    bytes.extend_from_slice(b"garbage");
    std::fs::write(&path, bytes).unwrap();
    let o = gspc_run(&[path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("bundle"), "{}", stderr(&o));
}

/// A wrong `-p` says how to write it: the literal suffix of the port's type, the nearest in
/// port and the list of them, the missing field of a struct (issue 22, item 4).
#[test]
fn bad_inputs_suggest_the_fix() {
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "countdown/countdown.xpnet",
            &["-p", "n=100"],
            "gspc-run: error: bad input: value 100 for port `n` is not of type long: write 100L\n",
        ),
        (
            "collatz/collatz.xpnet",
            &["-p", "strat=27UL"],
            "gspc-run: error: bad input: the net has no in port `strat`; did you mean `start`? \
             (its in ports: start (unsigned long))\n",
        ),
        (
            "points/points.xpnet",
            &["-p", "points=Struct [x := 1L]", "-p", "scale=10L"],
            "gspc-run: error: bad input: value Struct [x := 1L] for port `points` is not of \
             type point: field `y` is missing\n",
        ),
    ];
    for (net, puts, want) in cases {
        let mut args = vec![example(net)];
        args.extend(puts.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = gspc_run(&args);
        assert_eq!(o.status.code(), Some(1), "{net}");
        assert_eq!(stderr(&o), *want, "{net}");
        assert_eq!(stdout(&o), "", "{net}");
    }
}
