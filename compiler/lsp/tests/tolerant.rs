//! End-to-end: while a tag is half-typed, the outline (document symbols), completion and hover
//! keep working, and the damage is reported where it is (error-tolerant XML, issue 22).

mod common;

use std::path::Path;

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

/// The names of the root symbol's children in the outline.
fn outline(c: &mut Client, path: &Path) -> Vec<String> {
    let syms = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri(path)}}),
    );
    let root = &syms[0];
    assert_eq!(root["name"], json!("sum_expr_many"), "{syms}");
    root["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

/// The error diagnostics with the code `xml_syntax`, as their start (line, character).
fn xml_errors(diags: &[Value]) -> Vec<(u64, u64)> {
    errors(diags)
        .into_iter()
        .filter(|d| d["code"] == json!("xml_syntax"))
        .map(|d| {
            let s = &d["range"]["start"];
            (
                s["line"].as_u64().unwrap(),
                s["character"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn outline_and_completion_survive_half_typed_tags() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let path = dir.join("sum_expr_many.xpnet");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut c = Client::start(json!({}));
    c.open(&path, &text);
    assert_eq!(errors(&c.diagnostics(&path, 1)), Vec::<&Value>::new());
    let full = outline(&mut c, &path);
    assert_eq!(full, ["p", "s", "p", "s", "sum"]);

    // A half-typed tag between the places and the transition: the same outline, an
    // `xml_syntax` error at the tag.
    let anchor = "    <transition name=\"sum\">";
    let v2 = text.replace(anchor, &format!("    <tran\n{anchor}"));
    c.change_full(&path, 2, &v2);
    let d = c.diagnostics(&path, 2);
    let (l, ch) = pos_of(&v2, "<tran\n", 0);
    assert_eq!(xml_errors(&d), [(l as u64, ch as u64)], "{d:?}");
    assert_eq!(errors(&d).len(), 1, "only the damage: {d:?}");
    assert_eq!(outline(&mut c, &path), full);
    // hover on a place of a connection still gives its type
    let (hl, hc) = pos_of(&v2, "<connect-in port=\"p\" place=\"p", 29);
    let h = c.request("textDocument/hover", Client::at(&path, hl, hc));
    let s = h["contents"]["value"].as_str().unwrap_or_default();
    assert!(s.contains("place p: struct pair"), "{h}");

    // A connection being typed, its place attribute's value open: the places are offered
    // there, and the outline is unchanged.
    let typing = "      <connect-out port=\"s\" place=\"";
    let inc = "      <include-function href=\"sum_expr.xpnet\"/>\n";
    let v3 = text.replace(inc, &format!("{inc}{typing}\n"));
    c.change_full(&path, 3, &v3);
    let d = c.diagnostics(&path, 3);
    let (l, ch) = pos_of(&v3, typing, 6);
    assert_eq!(xml_errors(&d), [(l as u64, ch as u64)], "{d:?}");
    assert_eq!(errors(&d).len(), 1, "only the damage: {d:?}");
    assert_eq!(outline(&mut c, &path), full);
    let (cl, cc) = pos_of(&v3, typing, typing.len());
    let comp = c.request("textDocument/completion", Client::at(&path, cl, cc));
    let ls = labels(&comp);
    assert!(
        ls.contains(&"p".to_string()) && ls.contains(&"s".to_string()),
        "{ls:?}"
    );

    // A place being typed at the end of the net, its type open, `</net>` and `</defun>` not
    // typed yet: type names are offered, the outline keeps what is there.
    let cut = text.find("  </net>").unwrap();
    let typing = "    <place name=\"q\" type=\"";
    let v4 = format!("{}{typing}", &text[..cut]);
    c.change_full(&path, 4, &v4);
    let d = c.diagnostics(&path, 4);
    assert!(!xml_errors(&d).is_empty(), "{d:?}");
    assert_eq!(outline(&mut c, &path), full);
    let (tl, tc) = pos_of(&v4, typing, typing.len());
    let comp = c.request("textDocument/completion", Client::at(&path, tl, tc));
    let ls = labels(&comp);
    assert!(
        ls.contains(&"long".to_string()) && ls.contains(&"pair".to_string()),
        "{ls:?}"
    );

    // Fixed again: no error.
    c.change_full(&path, 5, &text);
    assert_eq!(errors(&c.diagnostics(&path, 5)), Vec::<&Value>::new());
    c.shutdown();
}
