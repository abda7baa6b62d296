//! End-to-end tests of the `pnetc` binary: exit codes, diagnostics rendering, bundles, emit
//! forms, dependency output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pnetc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pnetc"))
        .args(args)
        .output()
        .expect("run pnetc")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(name: &str) -> String {
    root().join("examples").join(name).display().to_string()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pnetc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_and_version_succeed() {
    let o = pnetc(&["--help"]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("Usage: pnetc"), "{text}");
    assert!(text.contains("--search-path"), "{text}");
    let o = pnetc(&["--version"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("pnetc "));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["--no-such-flag"][..],
        &["--emit=nonsense", "x.xpnet"],
        &["--Wno-such-warning", "x.xpnet"],
        &["-o"],
    ] {
        let o = pnetc(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("pnetc:"), "{}", stderr(&o));
    }
}

#[test]
fn examples_compile_to_bundles() {
    for ex in [
        "hello/hello.xpnet",
        "countdown/countdown.xpnet",
        "collatz/collatz.xpnet",
        "points/points.xpnet",
    ] {
        let out = tmp(&format!("{}.pnet", ex.replace('/', "_")));
        let o = pnetc(&[&example(ex), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{ex}: {}", stderr(&o));
        assert!(
            stderr(&o).is_empty(),
            "{ex}: unexpected diagnostics: {}",
            stderr(&o)
        );
        let bytes = std::fs::read(&out).unwrap();
        let bundle = pnet_bundle::format::decode(&bytes).expect("bundle decodes");
        assert!(!bundle.functions.is_empty());
    }
}

#[test]
fn errors_render_with_file_line_column_and_exit_1() {
    let src = tmp("bad.xpnet");
    std::fs::write(
        &src,
        "<defun>\n  <net>\n    <place name=\"p\" type=\"long\"/>\n    <place name=\"p\" type=\"long\"/>\n  </net>\n</defun>\n",
    )
    .unwrap();
    let o = pnetc(&[src.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("error[duplicate_place]"), "{err}");
    assert!(err.contains("bad.xpnet:4:"), "{err}");
    assert!(err.contains("^"), "carets expected: {err}");
}

#[test]
fn emit_forms_print_text() {
    let hello = example("hello/hello.xpnet");
    for (kind, needle) in [
        ("ast", "transition"),
        ("ir", "greet"),
        ("bytecode", "Hello, "),
    ] {
        let o = pnetc(&["--emit", kind, &hello]);
        assert!(o.status.success(), "{kind}: {}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains(needle),
            "--emit {kind} lacks {needle:?}:\n{text}"
        );
    }
}

#[test]
fn dependencies_are_listed() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let lib = pnet_tests::gpispace_lib();
    let net = pnet_tests::gpispace().join("share/doc/example/sequence/use_sequence.xpnet");
    assert!(net.exists(), "corpus net missing: {}", net.display());
    let o = pnetc(&[
        "-I",
        lib.to_str().unwrap(),
        "--list-dependencies",
        net.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let deps = String::from_utf8_lossy(&o.stdout);
    assert!(
        deps.lines().any(|l| l.ends_with("sequence_forward.xpnet")),
        "dependency missing: {deps}"
    );
    for line in deps.lines() {
        assert!(
            Path::new(line).exists(),
            "listed dependency does not exist: {line}"
        );
    }
    let o = pnetc(&[
        "-I",
        lib.to_str().unwrap(),
        "-M",
        "-MT",
        "out.pnet",
        net.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rules = String::from_utf8_lossy(&o.stdout);
    assert!(rules.starts_with("out.pnet:"), "{rules}");
}

#[test]
fn werror_turns_warnings_into_failures() {
    let src = tmp("warn.xpnet");
    std::fs::write(&src, "<defun>\n  <net>\n    <place name=\"v\" type=\"control\" virtual=\"true\"/>\n  </net>\n</defun>\n").unwrap();
    let o = pnetc(&[src.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning[virtual-place-not-tunneled]"),
        "{}",
        stderr(&o)
    );
    let o = pnetc(&["--Werror", src.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = pnetc(&["--Wvirtual-place-not-tunneled=false", src.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[test]
fn corrupt_input_never_crashes() {
    let src = tmp("garbage.xpnet");
    std::fs::write(
        &src,
        b"<defun><net><place name=\"p\" type=\"long\"><token><value>1L +</value></tok",
    )
    .unwrap();
    let o = pnetc(&[src.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("error["), "{}", stderr(&o));
}

/// Two modules with one function name and different bodies: a warning, and an error only when
/// module code is generated (`--build-modules`), as in GPI-Space (`xpnet.md`).
#[test]
fn duplicate_external_function_is_an_error_only_with_build_modules() {
    // the shape of GPI-Space's error_duplicate_external_function.xpnet, written here so the
    // test needs no corpus
    let src = tmp("dup-ext.xpnet");
    std::fs::write(
        &src,
        r#"<defun name="f">
  <net>
    <transition name="a">
      <defun>
        <module name="m" function="f"><cinclude href="inc.h"/></module>
      </defun>
    </transition>
    <transition name="b">
      <defun>
        <module name="m" function="f"/>
      </defun>
    </transition>
  </net>
</defun>
"#,
    )
    .unwrap();
    let net = src.to_str().unwrap();
    let o = pnetc(&[net]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning[duplicate-external-function]"),
        "{}",
        stderr(&o)
    );
    let dir = tmp("dup-ext-modules");
    let o = pnetc(&[net, "--build-modules", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("error[duplicate_external_function]"),
        "{}",
        stderr(&o)
    );
}
