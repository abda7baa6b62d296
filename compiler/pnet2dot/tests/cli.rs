//! End-to-end tests of the `pnet2dot` binary: help, usage errors, `.xpnet` and `.pnet` input,
//! `-o`, `--trace`, exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_pnet2dot");

const NET: &str = r#"<defun name="pipe">
  <in name="x" type="long" place="x"/>
  <out name="y" type="long" place="y"/>
  <net>
    <place name="x" type="long"/>
    <place name="y" type="long"/>
    <transition name="copy">
      <defun>
        <in name="x" type="long"/>
        <out name="y" type="long"/>
        <expression>${y} := ${x}</expression>
      </defun>
      <connect-in port="x" place="x"/>
      <connect-out port="y" place="y"/>
    </transition>
  </net>
</defun>
"#;

/// A fresh folder for this test's files.
fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("pnet2dot-cli")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run pnet2dot")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn help() {
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    for option in [
        "--full-signatures",
        "--token",
        "--signature",
        "--priority",
        "--virtual",
        "--tunnel-connection",
        "--not-starts-with",
        "--not-ends-with",
        "--input",
        "--output",
        "--trace",
        "--search-path",
    ] {
        assert!(
            text.contains(option),
            "--help does not mention {option}:\n{text}"
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["--bogus"][..],
        &["-o"],
        &["a.xpnet", "b.xpnet"],
        &["--token=yes", "a.xpnet"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("pnet2dot --help"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn xpnet_input_to_stdout_and_to_a_file() {
    let d = dir("xpnet");
    let net = d.join("pipe.xpnet");
    std::fs::write(&net, NET).unwrap();
    let o = run(&["--signature", net.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dot = stdout(&o);
    assert!(dot.starts_with("digraph \"pipe\" {"), "{dot}");
    assert!(
        dot.contains(r#""n0_t0" [shape=box, style="rounded", label="copy"];"#),
        "{dot}"
    );
    assert!(dot.contains(r#"label="x\n: long""#), "{dot}");

    let out = d.join("pipe.dot");
    let o = run(&["-i", net.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(written.contains("\"n0_p0\" -> \"n0_t0\""), "{written}");
}

#[test]
fn pnet_bundle_input() {
    let d = dir("pnet");
    let net = d.join("pipe.xpnet");
    std::fs::write(&net, NET).unwrap();
    let compiled = pnet_sema::compile_path(&net, &pnet_sema::Options::default());
    let bytes = pnet_bundle::format::encode(&compiled.bundle.unwrap()).unwrap();
    let bundle = d.join("pipe.pnet");
    std::fs::write(&bundle, bytes).unwrap();
    let o = run(&[bundle.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), stdout(&run(&[net.to_str().unwrap()])));
}

#[test]
fn trace_highlight() {
    let d = dir("trace");
    let net = d.join("pipe.xpnet");
    std::fs::write(&net, NET).unwrap();
    let trace = d.join("trace.json");
    std::fs::write(&trace, r#"{"format": "pnet-trace", "version": 1, "kind": "deadlock", "transitions": ["copy", "ghost"]}"#).unwrap();
    let o = run(&["--trace", trace.to_str().unwrap(), net.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dot = stdout(&o);
    assert!(
        dot.contains(r#"label="copy\ntrace #1", color=red"#),
        "{dot}"
    );
    assert!(
        stderr(&o).contains("trace step 2: no transition `ghost`"),
        "{}",
        stderr(&o)
    );

    std::fs::write(&trace, "not json").unwrap();
    let o = run(&["--trace", trace.to_str().unwrap(), net.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a trace"), "{}", stderr(&o));
}

#[test]
fn bad_input_exits_1() {
    let d = dir("bad");
    let o = run(&[d.join("missing.xpnet").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot read"), "{}", stderr(&o));

    let broken = d.join("broken.xpnet");
    std::fs::write(
        &broken,
        NET.replace(
            "place=\"y\"/>\n    </transition>",
            "place=\"nowhere\"/>\n    </transition>",
        ),
    )
    .unwrap();
    let o = run(&[broken.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("did not compile"), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
}
