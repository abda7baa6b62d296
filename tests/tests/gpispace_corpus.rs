//! Compiles every net of GPI-Space's public corpus (`../shared/corpus/gpispace`, with its
//! workflow library on the search path). Nets whose root is a `defun` must compile without
//! error, except the intentionally wrong ones, which must fail with the right diagnostic at
//! the right element. Prints the tally; fails on any regression.

use std::path::Path;

use pnet_sema::{Options, Output};
use pnet_syntax::Severity;
use pnet_tests::{gpispace, gpispace_lib, line_of, net_files};

/// An intentionally wrong (or warning) net: the diagnostic code it must give, its severity,
/// and where: the `nth` line containing `needle`.
struct Expect {
    file: &'static str,
    code: &'static str,
    severity: Severity,
    needle: &'static str,
    nth: usize,
}

const fn err(file: &'static str, code: &'static str, needle: &'static str, nth: usize) -> Expect {
    Expect {
        file,
        code,
        severity: Severity::Error,
        needle,
        nth,
    }
}

const fn warn(file: &'static str, code: &'static str, needle: &'static str, nth: usize) -> Expect {
    Expect {
        file,
        code,
        severity: Severity::Warning,
        needle,
        nth,
    }
}

const EXPECTED: &[Expect] = &[
    err(
        "test/xml/xpnets/diagnostics/error_duplicate_place.xpnet",
        "duplicate_place",
        "<place",
        2,
    ),
    err(
        "test/xml/xpnets/diagnostics/error_duplicate_place_map.xpnet",
        "duplicate_place_map",
        "<place-map",
        2,
    ),
    err(
        "test/xml/xpnets/diagnostics/error_duplicate_port.xpnet",
        "duplicate_port",
        "<in name=\"p\"",
        2,
    ),
    err(
        "test/xml/xpnets/diagnostics/error_duplicate_specialize.xpnet",
        "duplicate_specialize",
        "<specialize",
        2,
    ),
    err(
        "test/xml/xpnets/diagnostics/error_duplicate_template.xpnet",
        "duplicate_template",
        "<template",
        2,
    ),
    err(
        "test/xml/xpnets/diagnostics/error_duplicate_transition.xpnet",
        "duplicate_transition",
        "<transition",
        2,
    ),
    err(
        "test/xml/xpnets/diagnostics/function_description_with_unknown_argument_port.xpnet",
        "unknown_port_in_function_description",
        "<module",
        1,
    ),
    err(
        "test/xml/xpnets/diagnostics/function_description_with_unknown_return_port.xpnet",
        "unknown_port_in_function_description",
        "<module",
        1,
    ),
    err(
        "test/xml/xpnets/connect_in_in_same.xpnet",
        "duplicate_connection",
        "<connect-in",
        2,
    ),
    err(
        "test/xml/xpnets/connect_in_read_same.xpnet",
        "duplicate_connection",
        "<connect-read",
        1,
    ),
    err(
        "test/xml/xpnets/connect_out_out_same.xpnet",
        "duplicate_connection",
        "<connect-out",
        2,
    ),
    err(
        "test/xml/xpnets/connect_read_read_same.xpnet",
        "duplicate_connection",
        "<connect-read",
        2,
    ),
    err(
        "test/xml/xpnets/connect_eureka_duplicate_port.xpnet",
        "duplicate_connection",
        "<connect-eureka",
        2,
    ),
    // A fragment: it `use`s the specializations `dup_long` and `wait_control` that its
    // including net (`vmem_1_to_n.xpnet`, which compiles) defines; alone it cannot compile,
    // in GPI-Space neither.
    err(
        "share/doc/example/vmem_1_to_n/inner.xpnet",
        "unknown_function",
        "<use name=\"dup_long\"",
        1,
    ),
    warn(
        "test/xml/xpnets/diagnostics/virtual_place_not_tunneled.xpnet",
        "virtual-place-not-tunneled",
        "<place",
        1,
    ),
    // Two modules with one function name and different bodies: an error only when module
    // code is generated (`--build-modules`), a warning otherwise (as in GPI-Space).
    warn(
        "test/xml/xpnets/diagnostics/error_duplicate_external_function.xpnet",
        "duplicate-external-function",
        "<module",
        2,
    ),
    warn(
        "test/xml/xpnets/diagnostics/warning_duplicate_external_function.xpnet",
        "duplicate-external-function",
        "<module",
        2,
    ),
];

fn options() -> Options {
    // GPI-Space builds its examples with the library and the examples folder on the search
    // path (`share/doc/example/*` nets include `template/three.xpnet`, `virtual/wait.xpnet`...).
    Options {
        search_paths: vec![gpispace_lib(), gpispace().join("share/doc/example")],
        ..Options::default()
    }
}

fn root_is_defun(path: &Path) -> bool {
    let text = std::fs::read_to_string(path).unwrap();
    let (file, _) = pnet_syntax::xml::parse_file(pnet_syntax::FileId(0), &text);
    matches!(file.root, Some(pnet_syntax::xml::Root::Defun(_)))
}

fn summary(out: &Output) -> String {
    out.diagnostics
        .iter()
        .map(|d| {
            let at = d
                .primary_span()
                .and_then(|s| out.files.get(s.file.0 as usize).map(|f| (f, s)))
                .map(|(f, s)| {
                    let line = f.text[..(s.start as usize).min(f.text.len())]
                        .lines()
                        .count()
                        .max(1);
                    format!("{}:{line}", f.path.file_name().unwrap().to_string_lossy())
                })
                .unwrap_or_default();
            format!("    {:?}[{}] {at}: {}", d.severity, d.code, d.message)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The 1-based line of a diagnostic's primary span in the root file.
fn primary_line(out: &Output, d: &pnet_syntax::Diagnostic) -> Option<usize> {
    let span = d.primary_span()?;
    if span.file.0 != 0 {
        return None;
    }
    let text = &out.files[0].text;
    Some(
        text[..(span.start as usize).min(text.len())]
            .matches('\n')
            .count()
            + 1,
    )
}

#[test]
fn every_corpus_net_compiles_or_fails_as_expected() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let files = net_files(&gpispace());
    assert!(
        files.len() >= 196,
        "corpus incomplete: {} files under {}",
        files.len(),
        gpispace().display()
    );
    let opts = options();
    let (mut ok, mut expected_ok, mut skipped) = (0, 0, 0);
    let mut failures = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(gpispace())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if !root_is_defun(path) {
            skipped += 1;
            continue;
        }
        let out = pnet_sema::compile_path(path, &opts);
        match EXPECTED.iter().find(|e| e.file == rel) {
            None => {
                if out.has_errors() || out.bundle.is_none() {
                    failures.push(format!(
                        "{rel}: expected to compile, got:\n{}",
                        summary(&out)
                    ));
                } else {
                    ok += 1;
                }
            }
            Some(e) => {
                let text = std::fs::read_to_string(path).unwrap();
                let want_line = line_of(&text, e.needle, e.nth).expect("needle in file");
                let hit = out.diagnostics.iter().any(|d| {
                    d.code == e.code
                        && d.severity == e.severity
                        && primary_line(&out, d) == Some(want_line)
                });
                let compiled_as_expected = match e.severity {
                    Severity::Error => out.bundle.is_none(),
                    Severity::Warning => !out.has_errors() && out.bundle.is_some(),
                };
                if hit && compiled_as_expected {
                    expected_ok += 1;
                } else {
                    failures.push(format!(
                        "{rel}: expected {:?}[{}] at line {want_line}, got:\n{}",
                        e.severity,
                        e.code,
                        summary(&out)
                    ));
                }
            }
        }
    }
    println!(
        "gpispace corpus: {} files; {ok} defun nets compiled; {expected_ok}/{} expected diagnostics found; {skipped} non-defun roots (structs, templates) skipped; {} failures",
        files.len(),
        EXPECTED.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "corpus regressions:\n{}",
        failures.join("\n")
    );
    assert_eq!(expected_ok, EXPECTED.len());
}

#[test]
fn warnings_become_errors_under_werror() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let mut opts = options();
    opts.warnings.error = true;
    for e in EXPECTED.iter().filter(|e| e.severity == Severity::Warning) {
        let out = pnet_sema::compile_path(&gpispace().join(e.file), &opts);
        assert!(
            out.has_errors(),
            "{}: must fail under --Werror:\n{}",
            e.file,
            summary(&out)
        );
        assert!(out.bundle.is_none());
        assert!(
            out.diagnostics
                .iter()
                .any(|d| d.code == e.code && d.is_error()),
            "{}",
            summary(&out)
        );
    }
}
