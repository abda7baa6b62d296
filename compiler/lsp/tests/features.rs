//! End-to-end, against the real binary: rename (and prepareRename), workspace symbols,
//! signature help, code actions, on the corpus's `sum` nets (three files that include each
//! other).

mod common;

use std::path::{Path, PathBuf};

use common::{Client, errors, pos_of, sum_dir, uri};
use serde_json::{Value, json};

/// The (line, character) of a byte offset (ASCII texts).
fn offset_of(text: &str, line: u64, character: u64) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line as usize)
        .map(str::len)
        .sum();
    start + character as usize
}

/// Applies the edits of a `WorkspaceEdit` (its `changes`) for one file to its text.
fn apply(text: &str, edit: &Value, path: &Path) -> String {
    let mut edits: Vec<(usize, usize, String)> = edit["changes"][uri(path)]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let r = &e["range"];
            let s = offset_of(
                text,
                r["start"]["line"].as_u64().unwrap(),
                r["start"]["character"].as_u64().unwrap(),
            );
            let t = offset_of(
                text,
                r["end"]["line"].as_u64().unwrap(),
                r["end"]["character"].as_u64().unwrap(),
            );
            (s, t, e["newText"].as_str().unwrap().to_string())
        })
        .collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_string();
    for (s, t, n) in edits {
        out.replace_range(s..t, &n);
    }
    out
}

fn edited_files(edit: &Value) -> Vec<String> {
    let mut v: Vec<String> = edit["changes"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, e)| {
            format!(
                "{} x{}",
                k.rsplit('/').next().unwrap(),
                e.as_array().unwrap().len()
            )
        })
        .collect();
    v.sort();
    v
}

struct Sum {
    c: Client,
    files: Vec<(PathBuf, String)>,
}

/// The three `sum` files, open.
fn open_sum() -> Sum {
    let dir = sum_dir();
    let mut c = Client::start(json!({}));
    let mut files = Vec::new();
    for f in ["sum_expr_many.xpnet", "sum_expr.xpnet", "pair.xpnet"] {
        let path = dir.join(f);
        let text = std::fs::read_to_string(&path).unwrap();
        c.open(&path, &text);
        assert_eq!(errors(&c.diagnostics(&path, 1)), Vec::<&Value>::new());
        files.push((path, text));
    }
    Sum { c, files }
}

impl Sum {
    fn rename(&mut self, file: usize, needle: &str, delta: usize, new_name: &str) -> Value {
        let (path, text) = &self.files[file];
        let (l, ch) = pos_of(text, needle, delta);
        let mut params = Client::at(path, l, ch);
        params["newName"] = json!(new_name);
        self.c.request("textDocument/rename", params)
    }

    /// Applies a rename to the open buffers (version 2) and returns the new texts, checking
    /// that every file is still free of errors.
    fn apply_and_check(&mut self, edit: &Value, version: i32) -> Vec<String> {
        let mut out = Vec::new();
        for (path, text) in &self.files {
            let new = apply(text, edit, path);
            self.c.change_full(path, version, &new);
            out.push(new);
        }
        // the server may publish an intermediate state (one file changed, not yet the
        // others): the latest diagnostics after a round trip are the final state
        for (path, _) in &self.files {
            let d = self.c.latest_diagnostics(path);
            assert_eq!(
                errors(&d),
                Vec::<&Value>::new(),
                "{}: {d:?}",
                path.display()
            );
        }
        out
    }
}

#[test]
fn rename_a_place_within_the_file() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let mut s = open_sum();
    // prepareRename on the place's declaration: its name
    let (path, text) = s.files[0].clone();
    let (l, ch) = pos_of(&text, "<place name=\"p\"", 13);
    let r =
        s.c.request("textDocument/prepareRename", Client::at(&path, l, ch));
    assert_eq!(r["placeholder"], json!("p"), "{r}");
    assert_eq!(
        r["range"],
        json!({"start": {"line": l, "character": ch}, "end": {"line": l, "character": ch + 1}})
    );
    // nothing to rename on the `<net>` tag
    let (nl, nc) = pos_of(&text, "<net>", 2);
    let r =
        s.c.request("textDocument/prepareRename", Client::at(&path, nl, nc));
    assert_eq!(r, Value::Null);

    // a name the net has already: refused
    let (l, ch) = pos_of(&text, "<place name=\"p\"", 13);
    let mut params = Client::at(&path, l, ch);
    params["newName"] = json!("s");
    let r = s.c.request_raw("textDocument/rename", params);
    assert_eq!(
        r["error"]["message"],
        json!("`s` is already a place of this net"),
        "{r}"
    );
    let edit = s.rename(0, "<place name=\"p\"", 13, "pairs");
    assert_eq!(edited_files(&edit), ["sum_expr_many.xpnet x3"], "{edit}");
    let texts = s.apply_and_check(&edit, 2);
    assert!(texts[0].contains("<place name=\"pairs\" type=\"pair\"/>"));
    assert!(texts[0].contains("<in name=\"p\" type=\"pair\" place=\"pairs\"/>"));
    assert!(texts[0].contains("<connect-in port=\"p\" place=\"pairs\"/>"));
    s.c.shutdown();
}

#[test]
fn rename_a_port_across_included_files_and_in_expressions() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let mut s = open_sum();
    // from its use in the expression of sum_expr.xpnet
    let edit = s.rename(1, "${p.x}", 2, "q");
    assert_eq!(
        edited_files(&edit),
        ["sum_expr.xpnet x3", "sum_expr_many.xpnet x1"],
        "{edit}"
    );
    let texts = s.apply_and_check(&edit, 2);
    assert!(texts[1].contains("${s} := ${q.x} + ${q.y}"), "{}", texts[1]);
    assert!(texts[1].contains("<in name=\"q\" type=\"pair\"/>"));
    assert!(texts[0].contains("<connect-in port=\"q\" place=\"p\"/>"));
    // the other port's name: refused
    let mut params = Client::at(&s.files[0].0, 0, 0);
    let (l, ch) = pos_of(&s.files[0].1, "<connect-in port=\"p\"", 18);
    params["position"] = json!({"line": l, "character": ch});
    params["newName"] = json!("s");
    let r = s.c.request_raw("textDocument/rename", params);
    assert_eq!(
        r["error"]["message"],
        json!("`s` is already a port of this defun"),
        "{r}"
    );
    // the same from the connection: the same edits
    let again = s.rename(0, "<connect-in port=\"p\"", 18, "q");
    assert_eq!(edited_files(&again), edited_files(&edit));
    // not a name
    let mut params = Client::at(&s.files[1].0, 0, 0);
    let (l, ch) = pos_of(&s.files[1].1, "${p.x}", 2);
    params = json!({"textDocument": params["textDocument"], "position": {"line": l, "character": ch},
                    "newName": "1x"});
    let r = s.c.request_raw("textDocument/rename", params);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a valid name"),
        "{r}"
    );
    s.c.shutdown();
}

#[test]
fn rename_a_field_and_a_struct() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let mut s = open_sum();
    // the field x: its declaration in pair.xpnet and `${p.x}` in sum_expr.xpnet
    let edit = s.rename(1, "${p.x}", 4, "first");
    assert_eq!(
        edited_files(&edit),
        ["pair.xpnet x1", "sum_expr.xpnet x1"],
        "{edit}"
    );
    // the other field's name: refused
    let (path, text) = s.files[2].clone();
    let (l, ch) = pos_of(&text, "name=\"x\"", 6);
    let mut params = Client::at(&path, l, ch);
    params["newName"] = json!("y");
    let r = s.c.request_raw("textDocument/rename", params);
    assert_eq!(
        r["error"]["message"],
        json!("`y` is already a field of this struct"),
        "{r}"
    );
    // from the declaration: the same
    let from_decl = s.rename(2, "name=\"x\"", 6, "first");
    assert_eq!(from_decl, edit);
    let texts = s.apply_and_check(&edit, 2);
    assert!(texts[1].contains("${s} := ${p.first} + ${p.y}"));
    assert!(texts[2].contains("<field name=\"first\" type=\"long\"/>"));
    s.c.shutdown();

    // the struct: its definition and every `type="pair"`
    let mut s = open_sum();
    let edit = s.rename(2, "name=\"pair\"", 6, "couple");
    assert_eq!(
        edited_files(&edit),
        [
            "pair.xpnet x1",
            "sum_expr.xpnet x1",
            "sum_expr_many.xpnet x2"
        ],
        "{edit}"
    );
    let texts = s.apply_and_check(&edit, 2);
    assert!(texts[0].contains("<place name=\"p\" type=\"couple\"/>"));
    s.c.shutdown();
}

#[test]
fn workspace_symbols_of_every_open_net_and_its_includes() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let mut c = Client::start(json!({}));
    let path = dir.join("sum_expr_many.xpnet");
    c.open(&path, &std::fs::read_to_string(&path).unwrap());
    c.diagnostics(&path, 1);
    let r = c.request("workspace/symbol", json!({"query": "pa"}));
    let got: Vec<String> = r
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} ({}) {}:{}",
                s["name"].as_str().unwrap(),
                s["containerName"].as_str().unwrap(),
                s["location"]["uri"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap(),
                s["location"]["range"]["start"]["line"]
            )
        })
        .collect();
    // the struct of the included pair.xpnet, found through the open net; `pa` is a
    // subsequence of `sum_ex(p)r_m(a)ny` too
    assert_eq!(
        got,
        [
            "pair (struct in pair.xpnet) pair.xpnet:4",
            "sum_expr_many (defun in sum_expr_many.xpnet) sum_expr_many.xpnet:3"
        ],
        "{r}"
    );
    // a fuzzy query, case-insensitive: `sum` (transition) and `sum_expr_many` (defun), `s`
    // (port and place), ...
    let r = c.request("workspace/symbol", json!({"query": "SUM"}));
    let names: Vec<&str> = r
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"sum") && names.contains(&"sum_expr_many"),
        "{names:?}"
    );
    assert!(!names.contains(&"p"), "{names:?}");
    // an empty query: everything, each declaration once
    let r = c.request("workspace/symbol", json!({"query": ""}));
    let all = r.as_array().unwrap();
    let places = all
        .iter()
        .filter(|s| s["containerName"].as_str().unwrap().starts_with("place "))
        .count();
    assert_eq!(places, 2, "{r}");
    c.shutdown();
}

#[test]
fn signature_help_for_built_in_functions() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let path = dir.join("sum_expr.xpnet");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "${p.x} + ${p.y}",
        "max (${p.x}, (${p.y} + 1L)) + map_size ()",
    );
    let mut c = Client::start(json!({}));
    c.open(&path, &text);
    c.diagnostics(&path, 1);
    let help = |c: &mut Client, needle: &str, delta: usize| {
        let (l, ch) = pos_of(&text, needle, delta);
        c.request("textDocument/signatureHelp", Client::at(&path, l, ch))
    };
    // in the first argument of max
    let h = help(&mut c, "${p.x}", 0);
    let sig = &h["signatures"][0];
    assert_eq!(
        sig["label"],
        json!("max (T, T) -> T, T a number type"),
        "{h}"
    );
    assert_eq!(
        sig["parameters"],
        json!([{"label": [5, 6]}, {"label": [8, 9]}])
    );
    assert_eq!(h["activeParameter"], json!(0));
    // in the second, inside a parenthesised sum
    let h = help(&mut c, "+ 1L", 0);
    assert_eq!(h["activeParameter"], json!(1), "{h}");
    assert!(
        h["signatures"][0]["label"]
            .as_str()
            .unwrap()
            .starts_with("max")
    );
    // map_size (map) -> unsigned long
    let h = help(&mut c, "map_size ()", 10);
    assert_eq!(
        h["signatures"][0]["label"],
        json!("map_size (map) -> unsigned long"),
        "{h}"
    );
    // parameters with commas inside angle brackets
    let sig = "map_assign (map<K, V>, K, V) -> map<K, V>";
    let params: Vec<&str> = pnet_lsp::features::parameter_ranges(sig)
        .into_iter()
        .map(|(s, e)| &sig[s as usize..e as usize])
        .collect();
    assert_eq!(params, ["map<K, V>", "K", "V"]);
    // outside any call: nothing
    let h = help(&mut c, "${s} :=", 1);
    assert_eq!(h, Value::Null);
    c.shutdown();
}

/// The code actions for every diagnostic of `path` (version `version`), applied one by one
/// to `text` by title.
fn code_actions(c: &mut Client, path: &Path, version: i32) -> Vec<Value> {
    let diags = c.diagnostics(path, version);
    let mut out = Vec::new();
    for d in diags {
        let r = c.request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": uri(path)}, "range": d["range"],
                   "context": {"diagnostics": [d]}}),
        );
        out.extend(r.as_array().unwrap().iter().cloned());
    }
    out
}

fn action<'a>(actions: &'a [Value], title: &str) -> &'a Value {
    actions
        .iter()
        .find(|a| a["title"] == json!(title))
        .unwrap_or_else(|| panic!("no action `{title}` in {actions:?}"))
}

#[test]
fn quick_fix_replaces_equals_by_assignment() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let path = dir.join("sum_expr.xpnet");
    let good = std::fs::read_to_string(&path).unwrap();
    let text = good.replace("${s} :=", "${s} =");
    let mut c = Client::start(json!({}));
    c.open(&path, &text);
    let actions = code_actions(&mut c, &path, 1);
    let a = action(&actions, "Replace `=` by `:=`");
    assert_eq!(a["kind"], json!("quickfix"));
    assert_eq!(a["isPreferred"], json!(true));
    assert_eq!(a["diagnostics"][0]["code"], json!("unexpected_character"));
    let fixed = apply(&text, &a["edit"], &path);
    assert_eq!(fixed, good);
    c.change_full(&path, 2, &fixed);
    assert_eq!(errors(&c.diagnostics(&path, 2)), Vec::<&Value>::new());
    // `==` is a comparison: no such fix
    let cmp = good.replace("${s} := ${p.x} + ${p.y}", "${s} := ${p.x} == ${p.y}");
    c.change_full(&path, 3, &cmp);
    let actions = code_actions(&mut c, &path, 3);
    assert!(
        actions
            .iter()
            .all(|a| a["title"] != json!("Replace `=` by `:=`")),
        "{actions:?}"
    );
    c.shutdown();
}

#[test]
fn quick_fixes_for_an_unknown_place_nearest_name_and_declaration() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let path = dir.join("sum_expr_many.xpnet");
    let good = std::fs::read_to_string(&path).unwrap();
    let mut c = Client::start(json!({}));
    // a misspelled place in a connection: `ps` for `p`; and `s` for `sum_out`, undeclared
    let text = good
        .replace(
            "<connect-in port=\"p\" place=\"p\"/>",
            "<connect-in port=\"p\" place=\"ps\"/>",
        )
        .replace(
            "<out name=\"s\" type=\"long\" place=\"s\"/>",
            "<out name=\"s\" type=\"long\" place=\"total\"/>",
        );
    c.open(&path, &text);
    let actions = code_actions(&mut c, &path, 1);
    let titles: Vec<&str> = actions
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert!(titles.contains(&"Change to `p`"), "{titles:?}");
    assert!(titles.contains(&"Change to `s`"), "{titles:?}");
    // the connection's port is a `pair`: the new place too
    assert!(
        titles.contains(&"Declare place `ps` of type `pair`"),
        "{titles:?}"
    );
    // the port's own type for `place=` of a port
    assert!(
        titles.contains(&"Declare place `total` of type `long`"),
        "{titles:?}"
    );
    // `ps` -> `p`: the net is as before
    let fixed = apply(&text, &action(&actions, "Change to `p`")["edit"], &path);
    assert!(fixed.contains("<connect-in port=\"p\" place=\"p\"/>"));
    // declaring `total` after the last place, indented as it
    let declared = apply(
        &fixed,
        &action(&actions, "Declare place `total` of type `long`")["edit"],
        &path,
    );
    assert!(
        declared.contains(
            "<place name=\"s\" type=\"long\"/>\n    <place name=\"total\" type=\"long\"/>"
        ),
        "{declared}"
    );
    c.change_full(&path, 2, &declared);
    let d = c.diagnostics(&path, 2);
    assert!(
        errors(&d)
            .iter()
            .all(|e| e["code"] != json!("unknown_place")),
        "{d:?}"
    );
    c.shutdown();
}

#[test]
fn semantic_tokens_and_inlay_hints_inside_expressions() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    let path = dir.join("sum_expr.xpnet");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "${s} := ${p.x} + ${p.y}",
        "${s} := max (${p.x}, 1L) + 2L;\n    ${s} := \"a\"; true :or: false",
    );
    let mut c = Client::start(json!({}));
    c.open(&path, &text);
    c.diagnostics(&path, 1);
    let r = c.request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": uri(&path)}}),
    );
    let data: Vec<u64> = r["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let legend = [
        "keyword", "operator", "variable", "number", "string", "function",
    ];
    let lines: Vec<&str> = text.lines().collect();
    let (mut line, mut col) = (0u64, 0u64);
    let mut got = Vec::new();
    for t in data.chunks(5) {
        if t[0] > 0 {
            col = 0;
        }
        line += t[0];
        col += t[1];
        let s = &lines[line as usize][col as usize..(col + t[2]) as usize];
        got.push(format!("{s}:{}", legend[t[3] as usize]));
    }
    assert_eq!(
        got,
        [
            "${s}:variable",
            ":=:operator",
            "max:function",
            "${p.x}:variable",
            "1L:number",
            "+:operator",
            "2L:number",
            "${s}:variable",
            ":=:operator",
            "\"a\":string",
            "true:keyword",
            ":or::operator",
            "false:keyword",
        ]
    );

    // inlay hints: the type after each reference
    let r = c.request(
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": uri(&path)},
               "range": {"start": {"line": 0, "character": 0}, "end": {"line": 99, "character": 0}}}),
    );
    let hints: Vec<String> = r
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let p = &h["position"];
            let (l, ch) = (
                p["line"].as_u64().unwrap(),
                p["character"].as_u64().unwrap(),
            );
            let before = &lines[l as usize][..ch as usize];
            format!(
                "{}{}",
                &before[before.rfind("${").unwrap()..],
                h["label"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(hints, ["${s}: long", "${p.x}: long", "${s}: long"]);
    assert!(r.as_array().unwrap().iter().all(|h| h["kind"] == json!(1)));
    c.shutdown();
}

#[test]
fn quick_fixes_from_the_help_notes_of_diagnostics() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = sum_dir();
    // a buffer beside pair.xpnet (never written to disk)
    let path = dir.join("help_fixes_unsaved.xpnet");
    let net = |e: &str| {
        format!(
            "<defun name=\"n\">\n  <include-structs href=\"pair.xpnet\"/>\n  <in name=\"a\" type=\"long\"/>\n  <in name=\"p\" type=\"pair\"/>\n  <out name=\"b\" type=\"long\"/>\n  <expression>{e}</expression>\n</defun>\n"
        )
    };
    let mut c = Client::start(json!({}));
    // an unknown function: the built-in it resembles
    let text = net("${b} := maxx (${a}, 2L)");
    c.open(&path, &text);
    let actions = code_actions(&mut c, &path, 1);
    let fixed = apply(&text, &action(&actions, "Change to `max`")["edit"], &path);
    assert_eq!(fixed, net("${b} := max (${a}, 2L)"));

    // a literal without its suffix (in an operand and in an assignment), an unknown field,
    // an unknown variable
    let text = net("${b} := ${a} + 1; ${b} := ${p.xx}; ${b} := ${aa}; ${b} := 2");
    c.change_full(&path, 2, &text);
    let actions = code_actions(&mut c, &path, 2);
    let mut titles: Vec<&str> = actions
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    titles.sort();
    assert_eq!(
        titles,
        ["Change to `a`", "Change to `x`", "Write `1L`", "Write `2L`"],
        "{actions:?}"
    );
    // all of them together: a clean net
    let mut fixed = text.clone();
    let mut edit = json!({"changes": {uri(&path): []}});
    for a in &actions {
        for e in a["edit"]["changes"][uri(&path)].as_array().unwrap() {
            edit["changes"][uri(&path)]
                .as_array_mut()
                .unwrap()
                .push(e.clone());
        }
    }
    fixed = apply(&fixed, &edit, &path);
    assert_eq!(
        fixed,
        net("${b} := ${a} + 1L; ${b} := ${p.x}; ${b} := ${a}; ${b} := 2L")
    );
    c.change_full(&path, 3, &fixed);
    assert_eq!(errors(&c.diagnostics(&path, 3)), Vec::<&Value>::new());
    c.shutdown();
}

#[test]
fn rename_a_template_and_a_specialization() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let examples = sum_dir().parent().unwrap().to_path_buf();
    let dir = examples.join("parallel_inorder");
    let mut c = Client::start(json!({"searchPaths": [examples]}));
    let mut files = Vec::new();
    for f in ["n_of_m.xpnet", "work.xpnet"] {
        let path = dir.join(f);
        let text = std::fs::read_to_string(&path).unwrap();
        c.open(&path, &text);
        files.push((path, text));
    }
    let before: Vec<usize> = files
        .iter()
        .map(|(p, _)| errors(&c.latest_diagnostics(p)).len())
        .collect();
    assert_eq!(before[0], 0, "n_of_m.xpnet is a clean net");
    let rename = |c: &mut Client, file: usize, needle: &str, delta: usize, to: &str| {
        let (path, text) = &files[file];
        let (l, ch) = pos_of(text, needle, delta);
        let mut params = Client::at(path, l, ch);
        params["newName"] = json!(to);
        c.request("textDocument/rename", params)
    };
    // the template, from the specialization that uses it: its name in work.xpnet too
    let edit = rename(&mut c, 0, "use=\"work_n_of_m\"", 6, "work_template");
    assert_eq!(
        edited_files(&edit),
        ["n_of_m.xpnet x1", "work.xpnet x1"],
        "{edit}"
    );
    // the specialization, from the transition's `use`: its declaration too
    let edit2 = rename(&mut c, 0, "<use name=\"work_config\"", 12, "work_spec");
    assert_eq!(edited_files(&edit2), ["n_of_m.xpnet x2"], "{edit2}");
    for (i, (path, text)) in files.iter().enumerate() {
        let new = apply(&apply(text, &edit, path), &edit2, path);
        if i == 0 {
            assert!(new.contains("<specialize name=\"work_spec\" use=\"work_template\">"));
            assert!(new.contains("<use name=\"work_spec\"/>"));
        } else {
            assert!(new.contains("<template name=\"work_template\">"));
        }
        c.change_full(path, 2, &new);
    }
    let after: Vec<usize> = files
        .iter()
        .map(|(p, _)| errors(&c.latest_diagnostics(p)).len())
        .collect();
    assert_eq!(after, before);
    c.shutdown();
}

#[test]
fn the_scope_index_finds_what_scope_at_finds() {
    use pnet_lsp::analysis::Analysis;
    use pnet_lsp::features::ScopeIndex;
    use pnet_syntax::Span;
    let text = pnet_lsp::generate::chain_net(40);
    let path = std::env::temp_dir().join("pnet-lsp-scope-index/chain.xpnet");
    let mut a = Analysis::default();
    a.open(path.clone(), &text, 1);
    let l = a.locate(&path)[0];
    let facts = a.facts(l.ws);
    assert!(facts.scopes.len() > 40);
    let index = ScopeIndex::new(facts, l.file);
    for off in (0..text.len() as u32).step_by(7) {
        let want = facts.scope_at(Span::new(l.file, off, off + 1));
        assert_eq!(
            index.at(off, off + 1).map(|s| s.span),
            want.map(|s| s.span),
            "{off}"
        );
    }
}

#[test]
fn quick_fix_connects_an_unconnected_port() {
    let path = std::env::temp_dir().join("pnet-lsp-test-unsaved/connect.xpnet");
    let net = |connections: &str| {
        format!(
            "<defun name=\"m\">\n  <net>\n    <place name=\"a\" type=\"long\"/>\n    <place name=\"b\" type=\"long\"/>\n    <place name=\"flag\" type=\"bool\"/>\n    <transition name=\"t\">\n      <defun>\n        <in name=\"a\" type=\"long\"/>\n        <out name=\"b\" type=\"long\"/>\n        <expression>${{b}} := ${{a}}</expression>\n      </defun>\n{connections}    </transition>\n  </net>\n</defun>\n"
        )
    };
    let text = net("      <connect-in port=\"a\" place=\"a\"/>\n");
    let mut c = Client::start(json!({}));
    c.open(&path, &text);
    let actions = code_actions(&mut c, &path, 1);
    let titles: Vec<&str> = actions
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    // the places of the port's type, the one of its name first; not the bool place
    assert_eq!(
        titles,
        [
            "Connect port `b` to place `b`",
            "Connect port `b` to place `a`"
        ],
        "{actions:?}"
    );
    assert_eq!(actions[0]["isPreferred"], json!(true));
    let fixed = apply(&text, &actions[0]["edit"], &path);
    assert_eq!(
        fixed,
        net(
            "      <connect-in port=\"a\" place=\"a\"/>\n      <connect-out port=\"b\" place=\"b\"/>\n"
        )
    );
    c.change_full(&path, 2, &fixed);
    assert_eq!(errors(&c.diagnostics(&path, 2)), Vec::<&Value>::new());
    c.shutdown();
}
