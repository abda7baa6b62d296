//! The server stays up on any document state: random edits (half-typed XML, broken
//! expressions, deletions) sent as incremental changes, each followed by requests that must
//! be answered.

mod common;

use common::{Client, sum_dir, uri};
use proptest::prelude::*;
use serde_json::json;

const FRAGMENTS: &[&str] = &[
    "<",
    "</",
    ">",
    "\"",
    "<place name=\"",
    "<transition name=\"t\"><defun><in name=\"a\" type=\"long\"/><expression>${",
    "${",
    "${p.",
    "}",
    ":= ",
    "+ 1UL",
    "bitset_insert {} ",
    "/* ",
    "*/",
    "<![CDATA[",
    "]]>",
    "&amp;",
    "&",
    "<condition>",
    "</condition>",
    "<connect-in port=\"p\" place=\"",
    "<include-structs href=\"pair.xpnet\"/>",
    "<include-function href=\"",
    "<use name=\"",
    "ä𝄞",
    "\n",
    "</defun>",
    "<defun>",
    "<net>",
    "'",
    "List (",
    "1e999",
    "0x",
];

#[derive(Clone, Debug)]
enum Edit {
    Insert { at: usize, frag: usize },
    Delete { at: usize, len: usize },
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 0..FRAGMENTS.len()).prop_map(|(at, frag)| Edit::Insert { at, frag }),
        (any::<usize>(), 0usize..40).prop_map(|(at, len)| Edit::Delete { at, len }),
    ]
}

fn position(text: &str, off: usize) -> serde_json::Value {
    let line = text[..off].matches('\n').count();
    let start = text[..off].rfind('\n').map_or(0, |i| i + 1);
    let col: usize = text[start..off].chars().map(char::len_utf16).sum();
    json!({"line": line, "character": col})
}

fn boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[test]
fn random_edits_never_crash_the_server() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let path = dir.join("sum_expr_many.xpnet");
    let original = std::fs::read_to_string(&path).unwrap();
    let client = std::cell::RefCell::new(Client::start(json!({})));
    let version_cell = std::cell::Cell::new(1);
    client.borrow_mut().open(&path, &original);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let result = runner.run(&proptest::collection::vec(edit(), 1..12), |edits| {
        let mut c = client.borrow_mut();
        let mut version = version_cell.get();
        // each case starts from the corpus text
        version += 1;
        c.change_full(&path, version, &original);
        let mut text = original.clone();
        for e in &edits {
            let (s, e_, new) = match *e {
                Edit::Insert { at, frag } => {
                    let at = boundary(&text, at % (text.len() + 1));
                    (at, at, FRAGMENTS[frag].to_string())
                }
                Edit::Delete { at, len } => {
                    let s = boundary(&text, at % (text.len() + 1));
                    (s, boundary(&text, s + len), String::new())
                }
            };
            version += 1;
            let range = json!({"start": position(&text, s), "end": position(&text, e_)});
            c.notify(
                "textDocument/didChange",
                json!({"textDocument": {"uri": uri(&path), "version": version},
                       "contentChanges": [{"range": range, "text": new}]}),
            );
            text.replace_range(s..e_, &new);
            let at = boundary(&text, s + new.len() / 2);
            let p = json!({"textDocument": {"uri": uri(&path)}, "position": position(&text, at)});
            for m in [
                "textDocument/hover",
                "textDocument/completion",
                "textDocument/definition",
            ] {
                let r = c.request_raw(m, p.clone());
                prop_assert!(r.get("result").is_some() || r.get("error").is_some());
            }
            // the newer requests: answered without a panic (an internal error), whatever
            // the text (a refused rename is a request failure, not an internal error)
            let here = json!({"start": position(&text, at), "end": position(&text, at)});
            let doc = json!({"uri": uri(&path)});
            let whole = json!({"start": {"line": 0, "character": 0},
                               "end": {"line": 9999, "character": 0}});
            for (m, params) in [
                ("textDocument/signatureHelp", p.clone()),
                ("textDocument/prepareRename", p.clone()),
                (
                    "textDocument/rename",
                    json!({"textDocument": doc, "position": p["position"], "newName": "renamed"}),
                ),
                (
                    "textDocument/codeAction",
                    json!({"textDocument": doc, "range": here,
                           "context": {"diagnostics": [{"range": here, "code": "unknown_place",
                                                        "message": "note: help: write `1L`"}]}}),
                ),
                (
                    "textDocument/semanticTokens/full",
                    json!({"textDocument": doc}),
                ),
                (
                    "textDocument/inlayHint",
                    json!({"textDocument": doc, "range": whole}),
                ),
                ("workspace/symbol", json!({"query": "s"})),
            ] {
                let r = c.request_raw(m, params);
                prop_assert!(
                    r.get("result").is_some() || r["error"]["code"] != json!(-32603),
                    "{m}: {r}"
                );
            }
        }
        // the server's view of the text is ours: its diagnostics arrive for this version
        version_cell.set(version);
        c.diagnostics(&path, version);
        let syms = c.request_raw(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": uri(&path)}}),
        );
        prop_assert!(syms.get("result").is_some());
        prop_assert!(c.is_alive());
        Ok(())
    });
    result.unwrap();
    client.into_inner().shutdown();
}
