//! End-to-end: the real binary over stdio, on corpus nets, with edits that introduce and
//! fix errors.

mod common;

use common::{Client, errors, pos_of, sum_dir, uri};
use serde_json::{Value, json};

fn labels(v: &Value) -> Vec<String> {
    let items = v
        .as_array()
        .cloned()
        .unwrap_or_else(|| v["items"].as_array().cloned().unwrap_or_default());
    items
        .iter()
        .map(|i| i["label"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn diagnostics_follow_edits_with_ranges_inside_expressions() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let path = dir.join("sum_expr.xpnet");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut c = Client::start(json!({}));
    c.open(&path, &text);
    assert_eq!(errors(&c.diagnostics(&path, 1)), Vec::<&Value>::new());

    // long + int: a type error, reported on the `+` expression, inside the <expression>
    let broken = text.replace("${p.x} + ${p.y}", "${p.x} + 1");
    c.change_full(&path, 2, &broken);
    let d = c.diagnostics(&path, 2);
    let errs = errors(&d);
    assert_eq!(errs.len(), 1, "{d:?}");
    let (line, col) = pos_of(&broken, "${p.x} + 1", 0);
    let r = &errs[0]["range"];
    assert_eq!(r["start"]["line"], json!(line), "{d:?}");
    assert!(
        r["start"]["character"].as_u64().unwrap() >= col as u64,
        "{d:?}"
    );
    assert!(
        r["end"]["character"].as_u64().unwrap() <= col as u64 + 10,
        "{d:?}"
    );
    assert_eq!(errs[0]["source"], json!("pnet"));

    // a reference to an unknown field: the range is the reference
    let broken2 = text.replace("${p.y}", "${p.z}");
    c.change_full(&path, 3, &broken2);
    let d = c.diagnostics(&path, 3);
    let errs = errors(&d);
    assert!(!errs.is_empty(), "{d:?}");
    let (line, _) = pos_of(&broken2, "${p.z}", 0);
    assert_eq!(errs[0]["range"]["start"]["line"], json!(line));

    // half-typed XML: a parse error, the server goes on
    c.change_full(&path, 4, &text.replace("</expression>", "</expr"));
    assert!(!errors(&c.diagnostics(&path, 4)).is_empty());

    // fixed
    c.change_full(&path, 5, &text);
    assert_eq!(errors(&c.diagnostics(&path, 5)), Vec::<&Value>::new());
    c.shutdown();
}

#[test]
fn unknown_place_in_a_connection_and_incremental_changes() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let path = dir.join("sum_expr_many.xpnet");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut c = Client::start(json!({}));
    c.open(&path, &text);
    assert_eq!(errors(&c.diagnostics(&path, 1)), Vec::<&Value>::new());
    // an incremental edit: `place="s"` of the connect-out becomes `place="sx"`
    let (line, col) = pos_of(&text, "<connect-out port=\"s\" place=\"s", 30);
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&path), "version": 2},
               "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                             "end": {"line": line, "character": col}},
                                   "text": "x"}]}),
    );
    let d = c.diagnostics(&path, 2);
    let errs = errors(&d);
    // the unknown place only (sema reports no `output_port_not_connected` cascade after
    // it), naming the nearest place
    assert_eq!(errs.len(), 1, "{d:?}");
    let e = errs[0];
    assert_eq!(e["code"], json!("unknown_place"));
    assert!(
        e["message"].as_str().unwrap().contains("did you mean `s`"),
        "{e}"
    );
    assert_eq!(
        e["range"],
        json!({"start": {"line": line, "character": col - 1}, "end": {"line": line, "character": col + 1}})
    );
    // undo it
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&path), "version": 3},
               "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                             "end": {"line": line, "character": col + 1}},
                                   "text": ""}]}),
    );
    assert_eq!(errors(&c.diagnostics(&path, 3)), Vec::<&Value>::new());
    c.shutdown();
}

#[test]
fn hover_definition_references_completion_symbols() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let path = dir.join("sum_expr_many.xpnet");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut c = Client::start(json!({}));
    c.open(&path, &text);
    c.diagnostics(&path, 1);

    // hover on the place of a connection: its type
    let (l, ch) = pos_of(&text, "<connect-in port=\"p\" place=\"p", 29);
    let h = c.request("textDocument/hover", Client::at(&path, l, ch));
    let s = h["contents"]["value"].as_str().unwrap();
    assert!(
        s.contains("place p: struct pair { x: long, y: long }"),
        "{s}"
    );
    // hover on a port of a connection (declared in the included sum_expr.xpnet)
    let h = c.request("textDocument/hover", Client::at(&path, l, ch - 10));
    let s = h["contents"]["value"].as_str().unwrap();
    assert!(s.contains("port p"), "{s}");

    // definition of that place: the place declaration
    let d = c.request("textDocument/definition", Client::at(&path, l, ch));
    let (dl, dc) = pos_of(&text, "<place name=\"p\"", 13);
    assert_eq!(d[0]["uri"], json!(uri(&path)));
    assert_eq!(d[0]["range"]["start"], json!({"line": dl, "character": dc}));
    // definition of the port: in the included file
    let d = c.request("textDocument/definition", Client::at(&path, l, ch - 10));
    assert_eq!(d[0]["uri"], json!(uri(&dir.join("sum_expr.xpnet"))));
    // href: the file
    let (hl, hc) = pos_of(&text, "sum_expr.xpnet\"", 2);
    let d = c.request("textDocument/definition", Client::at(&path, hl, hc));
    assert_eq!(d[0]["uri"], json!(uri(&dir.join("sum_expr.xpnet"))));
    // struct type: its definition in pair.xpnet
    let (tl, tc) = pos_of(&text, "type=\"pair\"", 7);
    let d = c.request("textDocument/definition", Client::at(&path, tl, tc));
    assert_eq!(d[0]["uri"], json!(uri(&dir.join("pair.xpnet"))));
    let h = c.request("textDocument/hover", Client::at(&path, tl, tc));
    assert!(
        h["contents"]["value"]
            .as_str()
            .unwrap()
            .contains("struct pair")
    );

    // references of place p: the port binding and the connection (+ the declaration)
    let r = c.request(
        "textDocument/references",
        json!({"textDocument": {"uri": uri(&path)}, "position": {"line": dl, "character": dc},
               "context": {"includeDeclaration": true}}),
    );
    assert_eq!(r.as_array().unwrap().len(), 3, "{r}");

    // completion of place names in a place attribute
    let comp = c.request("textDocument/completion", Client::at(&path, l, ch));
    let ls = labels(&comp);
    assert!(
        ls.contains(&"p".to_string()) && ls.contains(&"s".to_string()),
        "{ls:?}"
    );
    // type names
    let comp = c.request("textDocument/completion", Client::at(&path, tl, tc));
    let ls = labels(&comp);
    assert!(
        ls.contains(&"unsigned long".to_string()) && ls.contains(&"pair".to_string()),
        "{ls:?}"
    );

    // document symbols: the outline
    let syms = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri(&path)}}),
    );
    let root = &syms[0];
    assert_eq!(root["name"], json!("sum_expr_many"));
    let children: Vec<&str> = root["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(children, ["p", "s", "p", "s", "sum"]);
    c.shutdown();
}

#[test]
fn expression_hover_and_completion() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let path = dir.join("sum_expr.xpnet");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("${p.x} + ${p.y}", "max (${p.x}, ${p.y})");
    let mut c = Client::start(json!({}));
    c.open(&path, &text);
    assert_eq!(errors(&c.diagnostics(&path, 1)), Vec::<&Value>::new());
    // `${p.x}`: a field
    let (l, ch) = pos_of(&text, "${p.x}", 4);
    let h = c.request("textDocument/hover", Client::at(&path, l, ch));
    assert!(
        h["contents"]["value"]
            .as_str()
            .unwrap()
            .contains("field ${p.x}: long")
    );
    let (l2, ch2) = pos_of(&text, "${p.x}", 2);
    let h = c.request("textDocument/hover", Client::at(&path, l2, ch2));
    assert!(
        h["contents"]["value"]
            .as_str()
            .unwrap()
            .contains("port ${p}: struct pair")
    );
    // a built-in function's signature
    let (l3, ch3) = pos_of(&text, "max (", 1);
    let h = c.request("textDocument/hover", Client::at(&path, l3, ch3));
    assert!(
        h["contents"]["value"]
            .as_str()
            .unwrap()
            .contains("max (T, T) -> T")
            || h["contents"]["value"].as_str().unwrap().contains("max")
    );
    // completion: fields after `${p.`, ports after `${`, built-ins in the expression
    let comp = c.request("textDocument/completion", Client::at(&path, l, ch));
    assert_eq!(labels(&comp), ["x", "y"]);
    let comp = c.request("textDocument/completion", Client::at(&path, l2, ch2));
    assert_eq!(labels(&comp), ["p", "s"]);
    let comp = c.request("textDocument/completion", Client::at(&path, l3, ch3 - 1));
    let ls = labels(&comp);
    assert!(
        ls.contains(&"bitset_insert".to_string()) && ls.contains(&"${p}".to_string()),
        "{ls:?}"
    );
    c.shutdown();
}

#[test]
fn editing_an_included_file_updates_the_includers() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let root = dir.join("sum_expr.xpnet");
    let pair = dir.join("pair.xpnet");
    let root_text = std::fs::read_to_string(&root).unwrap();
    let pair_text = std::fs::read_to_string(&pair).unwrap();
    let mut c = Client::start(json!({}));
    c.open(&root, &root_text);
    assert_eq!(errors(&c.diagnostics(&root, 1)), Vec::<&Value>::new());
    c.open(&pair, &pair_text);
    assert_eq!(errors(&c.diagnostics(&pair, 1)), Vec::<&Value>::new());
    // rename field y to z in the (unsaved) struct file: `${p.y}` is now wrong
    c.change_full(&pair, 2, &pair_text.replace("\"y\"", "\"z\""));
    c.diagnostics(&pair, 2);
    let d = c.latest_diagnostics(&root);
    assert!(!errors(&d).is_empty(), "{d:?}");
    // and back
    c.change_full(&pair, 3, &pair_text);
    c.diagnostics(&pair, 3);
    let d = c.latest_diagnostics(&root);
    assert_eq!(errors(&d), Vec::<&Value>::new());
    c.shutdown();
}

#[test]
fn search_paths_and_warning_flags_from_initialization_options() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let examples = dir.parent().unwrap().to_path_buf();
    // a buffer that is not on disk, including through the search path only
    let path = std::env::temp_dir().join("pnet-lsp-test-unsaved/net.xpnet");
    let text = "<defun name=\"n\">\n  <include-structs href=\"sum/pair.xpnet\"/>\n  <in name=\"p\" type=\"pair\"/>\n  <out name=\"s\" type=\"long\"/>\n  <expression>${s} := ${p.x}</expression>\n</defun>\n";
    let mut c = Client::start(json!({}));
    c.open(&path, text);
    let d = c.diagnostics(&path, 1);
    assert!(
        errors(&d)
            .iter()
            .any(|e| e["code"] == json!("file_not_found")),
        "{d:?}"
    );
    c.shutdown();

    let mut c = Client::start(json!({"searchPaths": [examples], "warnings": ["error"]}));
    c.open(&path, text);
    let d = c.diagnostics(&path, 1);
    assert_eq!(errors(&d), Vec::<&Value>::new(), "{d:?}");
    // an unknown type is a warning, an error under `--Werror`
    c.change_full(&path, 2, &text.replace("type=\"long\"", "type=\"lonk\""));
    let d = c.diagnostics(&path, 2);
    assert!(
        errors(&d)
            .iter()
            .any(|e| e["code"] == json!("unknown-type")),
        "{d:?}"
    );
    c.shutdown();
}

#[test]
fn unknown_requests_are_answered_with_an_error() {
    let mut c = Client::start(json!({}));
    let r = c.request_raw("textDocument/frobnicate", json!({}));
    assert_eq!(r["error"]["code"], json!(-32601));
    // requests on documents that are not open (whether the file exists or not): empty answers
    let p = common::corpus().join("share/doc/example/sum/pair.xpnet");
    let r = c.request("textDocument/hover", Client::at(&p, 0, 0));
    assert_eq!(r, Value::Null);
    assert!(c.is_alive());
    c.shutdown();
}
