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
    let files = net_files(&gpispace());
    assert!(files.len() >= 196, "corpus incomplete: {}", files.len());
    let (done, failures) = round_trip_all(&files);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(done >= 150, "only {done} corpus nets compiled");
}
