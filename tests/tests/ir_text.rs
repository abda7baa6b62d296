//! The IR text form reads back (issue 21, item 5): for every example net and every `defun` net
//! of the GPI-Space corpus, print -> `pnet_bundle::text::parse` -> print gives the same text,
//! and the parsed bundle equals the compiled one.

use std::path::Path;

use pnet_sema::Options;
use pnet_tests::{gpispace, gpispace_lib, net_files, workspace_root};

fn options() -> Options {
    Options {
        search_paths: vec![gpispace_lib(), gpispace().join("share/doc/example")],
        ..Options::default()
    }
}

fn root_is_defun(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let (file, _) = pnet_syntax::xml::parse_file(pnet_syntax::FileId(0), &text);
    matches!(file.root, Some(pnet_syntax::xml::Root::Defun(_)))
}

/// Round-trips every net of `files` that compiles; returns how many did, and the failures.
fn round_trip_all(files: &[std::path::PathBuf]) -> (usize, Vec<String>) {
    let opts = options();
    let mut done = 0;
    let mut failures = Vec::new();
    for path in files {
        if !root_is_defun(path) {
            continue;
        }
        let out = pnet_sema::compile_path(path, &opts);
        let Some(bundle) = out.bundle else {
            continue;
        };
        let text = bundle.to_string();
        match pnet_bundle::text::parse(&text) {
            Err(errors) => {
                let shown: Vec<String> = errors
                    .iter()
                    .take(5)
                    .map(|e| {
                        let line = text.lines().nth(e.line.saturating_sub(1)).unwrap_or("");
                        format!("  {e}\n    | {line}")
                    })
                    .collect();
                failures.push(format!(
                    "{}: does not read back:\n{}",
                    path.display(),
                    shown.join("\n")
                ));
            }
            Ok(back) => {
                let again = back.to_string();
                if again != text {
                    let diff = text
                        .lines()
                        .zip(again.lines())
                        .enumerate()
                        .find(|(_, (a, b))| a != b)
                        .map(|(i, (a, b))| format!("line {}:\n  - {a}\n  + {b}", i + 1))
                        .unwrap_or_else(|| "lengths differ".into());
                    failures.push(format!("{}: text changes: {diff}", path.display()));
                } else if back != bundle {
                    failures.push(format!(
                        "{}: same text but a different bundle",
                        path.display()
                    ));
                } else {
                    done += 1;
                }
            }
        }
    }
    (done, failures)
}

#[test]
fn every_example_net_reads_back() {
    let files = net_files(&workspace_root().join("examples"));
    let (done, failures) = round_trip_all(&files);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(done >= 8, "only {done} example nets compiled");
}

#[test]
fn every_corpus_defun_net_reads_back() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let files = net_files(&gpispace());
    assert!(files.len() >= 196, "corpus incomplete: {}", files.len());
    let (done, failures) = round_trip_all(&files);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(done >= 150, "only {done} corpus nets compiled");
}

/// Runs a net of `tests/data/engine`: inputs come from comment lines `# input PORT = VALUE`
/// (one token each), `# seed N` and `# max-firings N` set the run. The result shows each out
/// port's tokens and the firings, the run error, or the reader's errors. The net runs twice,
/// interpreted and with the JIT; when they differ, the result shows both.
fn run_data_file(text: &str) -> String {
    let mut inputs: Vec<(String, Vec<pnet_stdlib::Value>)> = Vec::new();
    let mut config = pnet_engine::RunConfig::default();
    for line in text.lines() {
        if let Some(b) = line.strip_prefix("# input ") {
            let (port, value) = match pnet_stdlib::literal::parse_binding("input", "port", b) {
                Ok(pv) => pv,
                Err(e) => return format!("bad input line: {e}\n"),
            };
            match inputs.iter_mut().find(|(p, _)| *p == port) {
                Some((_, vs)) => vs.push(value),
                None => inputs.push((port, vec![value])),
            }
        } else if let Some(n) = line.strip_prefix("# seed ") {
            config.seed = n.trim().parse().expect("# seed N");
        } else if let Some(n) = line.strip_prefix("# max-firings ") {
            config.max_firings = Some(n.trim().parse().expect("# max-firings N"));
        }
    }
    let bundle = match pnet_bundle::text::parse(text) {
        Ok(b) => b,
        Err(errors) => return errors.iter().map(|e| format!("error {e}\n")).collect(),
    };
    // Whatever was written by hand, the printed form reads back the same.
    let printed = bundle.to_string();
    let back = pnet_bundle::text::parse(&printed).unwrap_or_else(|e| panic!("{e:?}\n{printed}"));
    assert_eq!(
        back, bundle,
        "the printed form reads back differently:\n{printed}"
    );
    let show = |r: Result<pnet_engine::RunResult, pnet_engine::RunError>| match r {
        Ok(r) => {
            let mut s = String::new();
            for (port, vs) in &r.outputs {
                let vs: Vec<String> = vs.iter().map(|v| v.to_string()).collect();
                s += &format!("{port}: {}\n", vs.join(" "));
            }
            s + &format!("firings: {}\n", r.stats.firings)
        }
        Err(e) => format!("run error: {e}\n"),
    };
    let interpreted = show(pnet_engine::run(&bundle, &inputs, &config));
    // The JIT gives the same run.
    let jit = pnet_engine::RunConfig {
        runner: Some(std::sync::Arc::new(pnet_jit::JitFactory::new(
            pnet_jit::JitMode::On,
        ))),
        ..config
    };
    let compiled = show(pnet_engine::run(&bundle, &inputs, &jit));
    if compiled != interpreted {
        return format!("interpreted:\n{interpreted}JIT:\n{compiled}");
    }
    interpreted
}

/// Each `tests/data/engine/NAME.ir` runs to the result in `NAME.run` beside it; refresh those
/// with `UPDATE_EXPECT=1 cargo test -p pnet-tests --test ir_text` and review the diff.
#[test]
fn engine_data_files_run_as_expected() {
    let dir = workspace_root().join("tests/data/engine");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "ir"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 8,
        "only {} nets in {}",
        files.len(),
        dir.display()
    );
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let actual = run_data_file(&text);
        let expected_path = path.with_extension("run");
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if actual == expected {
            continue;
        }
        if update {
            std::fs::write(&expected_path, &actual).unwrap();
        } else {
            failures.push(format!(
                "{}:\n--- expected ({})\n{expected}--- actual\n{actual}",
                path.display(),
                expected_path.display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n(UPDATE_EXPECT=1 rewrites the .run files)",
        failures.join("\n")
    );
}
