//! One input per path: a file included by two open roots is one salsa input (one id, one
//! parse) in both workspaces, and a diagnostic in it is reported once; an open file that a
//! root reaches by another path string (`sub/../pair.xpnet`) gets its diagnostics.

use std::path::PathBuf;

use pnet_lsp::analysis::Analysis;

const PAIR: &str = "<structs>\n  <struct name=\"pair\">\n    <field name=\"x\" type=\"long\"/>\n    <field name=\"y\" type=\"lnog\"/>\n  </struct>\n</structs>\n";

fn root(name: &str) -> String {
    format!(
        "<defun name=\"{name}\">\n  <include-structs href=\"pair.xpnet\"/>\n  <in name=\"p\" type=\"pair\"/>\n  <out name=\"s\" type=\"long\"/>\n  <expression>${{s}} := ${{p.x}}</expression>\n</defun>\n"
    )
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pnet-lsp-shared-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

#[test]
fn an_included_file_shared_by_two_roots_is_one_input() {
    let d = dir("two-roots");
    let pair = d.join("pair.xpnet");
    std::fs::write(&pair, PAIR).expect("write");
    let (a_path, b_path) = (d.join("a.xpnet"), d.join("b.xpnet"));
    let mut a = Analysis::default();
    a.open(a_path.clone(), &root("a"), 0);
    a.open(b_path.clone(), &root("b"), 0);
    a.open(pair.clone(), PAIR, 0);
    let seen = a.locate(&pair);
    // in a's and b's workspaces, and its own
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen.iter().all(|l| l.file == seen[0].file), "{seen:?}");
    let parses: Vec<_> = seen.iter().map(|l| a.parsed(*l).expect("parsed")).collect();
    assert!(parses.iter().all(|p| std::ptr::eq(*p, parses[0])));
    let diags = a.diagnostics();
    // the unknown type, once (found by both roots' elaborations)
    let unknown: Vec<_> = diags[&pair]
        .iter()
        .filter(|d| d.code == "unknown-type")
        .collect();
    assert_eq!(unknown.len(), 1, "{:?}", diags[&pair]);
    assert!(unknown[0].message.contains("lnog"), "{:?}", unknown[0]);
    // the roots have no error; an error in one root is reported in that root only
    assert!(diags[&a_path].iter().all(|d| !d.is_error()), "{diags:?}");
    assert!(diags[&b_path].iter().all(|d| !d.is_error()), "{diags:?}");
    let broken = root("b").replace("${p.x}", "${p.z}");
    a.change(b_path.clone(), &broken, 1);
    let diags = a.diagnostics();
    assert_eq!(diags[&b_path].iter().filter(|d| d.is_error()).count(), 1);
    assert!(diags[&a_path].iter().all(|d| !d.is_error()), "{diags:?}");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn an_open_file_included_by_another_path_gets_its_diagnostics() {
    let d = dir("root-included");
    let pair = d.join("pair.xpnet");
    let sub = d.join("sub");
    std::fs::create_dir_all(&sub).expect("sub dir");
    std::fs::write(&pair, PAIR).expect("write");
    // the including root, in a sub folder, reaches pair.xpnet by another path string
    let outer = sub.join("outer.xpnet");
    let text = root("outer").replace("href=\"pair.xpnet\"", "href=\"../pair.xpnet\"");
    let mut a = Analysis::default();
    a.open(outer.clone(), &text, 0);
    a.open(pair.clone(), PAIR, 0);
    let diags = a.diagnostics();
    assert_eq!(
        diags[&pair]
            .iter()
            .filter(|d| d.code == "unknown-type")
            .count(),
        1,
        "{diags:?}"
    );
    assert!(!a.locate(&pair).is_empty());
    std::fs::remove_dir_all(&d).ok();
}
