//! End-to-end, against the real binary, inside expressions: formatting (whole document and
//! a range), the inlay hints of local variables, and go to definition from a `${port}` (the
//! port) or a local variable (its first assignment).

mod common;

use std::path::{Path, PathBuf};

use common::{Client, errors, pos_of, uri};
use serde_json::{Value, json};

fn unsaved(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("pnet-lsp-expressions/{name}"))
}

/// The byte offset of a (line, character) position (ASCII texts).
fn offset_of(text: &str, p: &Value) -> usize {
    let line = p["line"].as_u64().unwrap() as usize;
    let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
    start + p["character"].as_u64().unwrap() as usize
}

/// Applies an array of `TextEdit`s.
fn apply(text: &str, edits: &Value) -> String {
    let mut edits: Vec<(usize, usize, String)> = edits
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                offset_of(text, &e["range"]["start"]),
                offset_of(text, &e["range"]["end"]),
                e["newText"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_string();
    for (s, t, n) in edits {
        out.replace_range(s..t, &n);
    }
    out
}

const NET: &str = r#"<defun name="f">
  <in name="a" type="long"/>
  <out name="b" type="long"/>
  <net>
    <place name="p" type="long"/>
    <place name="q" type="long"/>
    <transition name="t">
      <defun>
        <in name="x" type="long"/>
        <out name="y" type="long"/>
        <expression>
          ${n}:=${x}*2L;   /* twice */
          ${y}   :=max(${n},${x}+1L)
        </expression>
        <condition>${x}&gt;0L :and: ! (${x}:eq:7L)</condition>
      </defun>
      <connect-in port="x" place="p"/>
      <connect-out port="y" place="q"/>
    </transition>
    <transition name="u">
      <defun>
        <in name="v" type="long"/>
        <out name="w" type="long"/>
        <expression>${w}:=${v}</expression>
      </defun>
      <connect-in port="v" place="q"/>
      <connect-out port="w" place="p"/>
    </transition>
  </net>
  <connect-in port="a" place="p"/>
  <connect-out port="b" place="q"/>
</defun>
"#;

const FORMATTED: &str = r#"<defun name="f">
  <in name="a" type="long"/>
  <out name="b" type="long"/>
  <net>
    <place name="p" type="long"/>
    <place name="q" type="long"/>
    <transition name="t">
      <defun>
        <in name="x" type="long"/>
        <out name="y" type="long"/>
        <expression>
          ${n} := ${x} * 2L; /* twice */
          ${y} := max (${n}, ${x} + 1L)
        </expression>
        <condition>${x} &gt; 0L :and: !(${x} :eq: 7L)</condition>
      </defun>
      <connect-in port="x" place="p"/>
      <connect-out port="y" place="q"/>
    </transition>
    <transition name="u">
      <defun>
        <in name="v" type="long"/>
        <out name="w" type="long"/>
        <expression>${w} := ${v}</expression>
      </defun>
      <connect-in port="v" place="q"/>
      <connect-out port="w" place="p"/>
    </transition>
  </net>
  <connect-in port="a" place="p"/>
  <connect-out port="b" place="q"/>
</defun>
"#;

fn format_request(c: &mut Client, path: &Path, range: Option<Value>) -> Value {
    let opts = json!({"tabSize": 2, "insertSpaces": true});
    match range {
        None => c.request(
            "textDocument/formatting",
            json!({"textDocument": {"uri": uri(path)}, "options": opts}),
        ),
        Some(r) => c.request(
            "textDocument/rangeFormatting",
            json!({"textDocument": {"uri": uri(path)}, "range": r, "options": opts}),
        ),
    }
}

#[test]
fn formatting_changes_only_the_expression_texts() {
    let path = unsaved("format.xpnet");
    let mut c = Client::start(json!({}));
    c.open(&path, NET);
    assert_eq!(errors(&c.diagnostics(&path, 1)), Vec::<&Value>::new());

    let edits = format_request(&mut c, &path, None);
    // one edit per expression text that changes, nothing outside them
    assert_eq!(edits.as_array().unwrap().len(), 3, "{edits}");
    let out = apply(NET, &edits);
    assert_eq!(out, FORMATTED);

    // formatted again: nothing to do
    c.change_full(&path, 2, &out);
    assert_eq!(errors(&c.diagnostics(&path, 2)), Vec::<&Value>::new());
    assert_eq!(format_request(&mut c, &path, None), json!([]));

    // a range (a line, as an editor's selection of lines): only the expression texts it meets,
    // the second transition's
    c.change_full(&path, 3, NET);
    c.diagnostics(&path, 3);
    let (l, _) = pos_of(NET, "${w}:=${v}", 0);
    let edits = format_request(
        &mut c,
        &path,
        Some(json!({"start": {"line": l, "character": 0}, "end": {"line": l + 1, "character": 0}})),
    );
    let out = apply(NET, &edits);
    assert_eq!(
        out,
        NET.replace("${w}:=${v}", "${w} := ${v}"),
        "range formatting changed more than the one expression"
    );

    // a text with a syntax error is left as it is, the others are formatted
    let broken = NET.replace("${w}:=${v}", "${w} = ${v}");
    c.change_full(&path, 4, &broken);
    c.diagnostics(&path, 4);
    let out = apply(&broken, &format_request(&mut c, &path, None));
    assert_eq!(out, FORMATTED.replace("${w} := ${v}", "${w} = ${v}"));
    c.shutdown();
}

#[test]
fn definition_of_a_port_inside_an_expression() {
    let path = unsaved("definition.xpnet");
    let mut c = Client::start(json!({}));
    c.open(&path, NET);
    c.diagnostics(&path, 1);
    let cases = [
        // `${x}` in the expression and in the condition: the input port `x`
        (
            pos_of(NET, "${n}:=${x}", 8),
            pos_of(NET, "<in name=\"x\"", 10),
        ),
        (
            pos_of(NET, "<condition>${x}", 13),
            pos_of(NET, "<in name=\"x\"", 10),
        ),
        // the assigned output port `y`, and `w` of the other transition
        (
            pos_of(NET, "${y}   :=", 2),
            pos_of(NET, "<out name=\"y\"", 11),
        ),
        (pos_of(NET, "${w}:=", 3), pos_of(NET, "<out name=\"w\"", 11)),
        // a place in a connection: the place
        (
            pos_of(NET, "port=\"v\" place=\"q", 16),
            pos_of(NET, "<place name=\"q\"", 13),
        ),
    ];
    for ((l, ch), (dl, dc)) in cases {
        let d = c.request("textDocument/definition", Client::at(&path, l, ch));
        assert_eq!(d[0]["uri"], json!(uri(&path)), "{l}:{ch}: {d}");
        assert_eq!(
            d[0]["range"]["start"],
            json!({"line": dl, "character": dc}),
            "{l}:{ch}: {d}"
        );
    }
    // a local variable: its first assignment
    let (l, ch) = pos_of(NET, "max(${n}", 6);
    let d = c.request("textDocument/definition", Client::at(&path, l, ch));
    let (dl, dc) = pos_of(NET, "${n}:=", 2);
    assert_eq!(
        d[0]["range"]["start"],
        json!({"line": dl, "character": dc}),
        "{d}"
    );
    // outside any reference: nothing
    let (l, ch) = pos_of(NET, "max(${n}", 1);
    let d = c.request("textDocument/definition", Client::at(&path, l, ch));
    assert_eq!(d, json!([]));
    c.shutdown();
}

/// The inlay hints of a document, each as the text before it on its line (from the last
/// `${`) and its label.
fn hints(c: &mut Client, path: &Path, text: &str) -> Vec<String> {
    let r = c.request(
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": uri(path)},
               "range": {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}}),
    );
    r.as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let before = &text[..offset_of(text, &h["position"])];
            format!(
                "{}{}",
                &before[before.rfind("${").unwrap()..],
                h["label"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn inlay_hints_of_local_variables() {
    let path = unsaved("hints.xpnet");
    let text = NET.replace(
        "${y}   :=max(${n},${x}+1L)",
        "${s} := Struct [a := 1L, b := \"x\"]; ${s.b} := \"y\";\n          \
         ${m} := Map [1L -> 2.0]; ${d} := ${n} > 1L;\n          \
         ${y}   :=max(${n},${x}+1L)",
    );
    let mut c = Client::start(json!({}));
    c.open(&path, &text);
    assert_eq!(errors(&c.diagnostics(&path, 1)), Vec::<&Value>::new());
    assert_eq!(
        hints(&mut c, &path, &text),
        [
            // a local: after its assignment's target; a port: after every reference
            "${n}: long",
            "${x}: long",
            "${s}: struct{a: long, b: string}",
            "${s.b}: string",
            "${m}: map<long, double>",
            "${d}: bool",
            "${y}: long",
            "${x}: long",
            "${x}: long",
            "${x}: long",
            "${w}: long",
            "${v}: long",
        ]
    );
    c.shutdown();
}
