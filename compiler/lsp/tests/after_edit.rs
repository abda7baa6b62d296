//! After an edit, the features that read the items parsed alone (`Analysis::root_in`: the
//! places and transitions of the root net kept through edits, moved by their starts) and the
//! facts of the transitions at the position (`Analysis::facts_at`, `facts_in`) answer exactly
//! as a fresh analysis of the same text that reads the whole file's parse and the whole
//! facts (`Analysis::whole_parse`, the features as they were before): hover, completion and
//! go to definition at every byte, inlay hints of ranges, semantic tokens and document
//! symbols, after scripted edits (an expression, a place renamed, a transition and a place
//! added and removed) and random one-character edits, on a net with templates, a struct,
//! locals and root conditions and on a generated net.

mod common;

use std::ops::Range;
use std::path::{Path, PathBuf};

use common::Rng;
use pnet_lsp::analysis::Analysis;
use pnet_lsp::{features, hints, tokens};

const NET: &str = r#"<defun name="mixed">
  <in name="start" type="long" place="a"/>
  <out name="done" type="long" place="c"/>
  <condition>${start} :ge: 0L</condition>
  <net>
    <struct name="pair"><field name="x" type="long"/><field name="s" type="string"/></struct>
    <template name="step">
      <template-parameter type="T"/>
      <defun>
        <inout name="v" type="T"/>
        <in name="k" type="long"/>
        <expression>${v} := ${v} + 1L; ${k} :gt: 0L</expression>
        <condition>${k} :ge: 0L</condition>
      </defun>
    </template>
    <specialize name="step_long" use="step"><type-map replace="T" with="long"/></specialize>
    <place name="a" type="long"/>
    <place name="b" type="long"/>
    <place name="c" type="long"/>
    <place name="k" type="long"/>
    <place name="p" type="pair"/>
    <transition name="one">
      <use name="step_long"/>
      <condition>${v} :lt: 100L</condition>
      <connect-inout port="v" place="a"/>
      <connect-read port="k" place="k"/>
    </transition>
    <transition name="three">
      <defun>
        <in name="x" type="long"/>
        <in name="q" type="pair"/>
        <out name="y" type="long"/>
        <expression>${n} := ${x} * 2L + ${q.x}; ${y} := max (${n}, 1L)</expression>
        <condition>${q.s} :ne: "" &amp;&amp; ${x} :gt: 0L</condition>
      </defun>
      <connect-in port="x" place="b"/>
      <connect-read port="q" place="p"/>
      <connect-out port="y" place="c"/>
    </transition>
  </net>
</defun>
"#;

/// Every answer of the features on `a`'s text (as text, to compare).
fn answers(a: &Analysis, path: &Path) -> Vec<String> {
    let len = a.docs[path].text.len() as u32;
    let mut out = Vec::new();
    for off in 0..=len {
        out.push(format!(
            "{off}: {:?} {:?} {:?}",
            features::hover(a, path, off),
            features::completion(a, path, off),
            features::definition(a, path, off),
        ));
    }
    for start in (0..len).step_by(97) {
        for end in [start, start + 40, start + 400] {
            out.push(format!(
                "hints {start}..{end}: {:?} {:?}",
                tokens::inlay_hints(a, path, start, end),
                hints::local_hints(a, path, start, end),
            ));
        }
    }
    out.push(format!("{:?}", tokens::semantic_tokens(a, path)));
    out.push(format!("{:?}", features::document_symbols(a, path)));
    out
}

fn fresh(path: &Path, text: &str) -> Vec<String> {
    let mut a = Analysis::default();
    a.whole_parse = true;
    a.open(path.to_path_buf(), text, 0);
    a.diagnostics();
    answers(&a, path)
}

/// Applies `edit` through the analysis, then compares its answers with a fresh one's.
fn check(a: &mut Analysis, path: &Path, edit: (Range<usize>, &str), version: i32, what: &str) {
    a.edit(path.to_path_buf(), &[edit], version);
    a.diagnostics();
    let text = a.docs[path].text.clone();
    let got = answers(a, path);
    let want = fresh(path, &text);
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w, "{what}:\n{text}");
    }
}

fn at(text: &str, needle: &str) -> usize {
    text.find(needle).unwrap_or_else(|| panic!("{needle}"))
}

fn run(path: &Path, text: &str, seed: u64, scripted: bool) {
    let mut a = Analysis::default();
    a.open(path.to_path_buf(), text, 0);
    a.diagnostics();
    // before any edit too
    assert_eq!(answers(&a, path), fresh(path, text));
    let mut version = 1;
    if scripted {
        let mut cur = text.to_string();
        let mut step = |a: &mut Analysis, cur: &mut String, r: Range<usize>, new: &str| {
            cur.replace_range(r.clone(), new);
            check(a, path, (r, new), version, new);
            version += 1;
        };
        // an expression, then back
        let i = at(&cur, "* 2L") + 2;
        step(&mut a, &mut cur, i..i + 2, "3L + ${x}");
        step(&mut a, &mut cur, i..i + 9, "2L");
        // a place renamed with a connection
        let i = at(&cur, "<place name=\"b\"") + "<place name=\"".len();
        step(&mut a, &mut cur, i..i + 1, "bee");
        let i = at(&cur, "place=\"b\"") + "place=\"".len();
        step(&mut a, &mut cur, i..i + 1, "bee");
        // a transition added before the first one, then removed
        let t = "    <transition name=\"extra\">\n      <defun>\n        <in name=\"x\" type=\"long\"/>\n        <expression>${m} := ${x}; ${m} := ${m} + 1L</expression>\n      </defun>\n      <connect-in port=\"x\" place=\"k\"/>\n    </transition>\n";
        let i = at(&cur, "    <transition name=");
        step(&mut a, &mut cur, i..i, t);
        step(&mut a, &mut cur, i..i + t.len(), "");
        // a place added after the first, then removed
        let p = "    <place name=\"z\" type=\"pair\"/>\n";
        let i = at(&cur, "    <place name=\"bee\"");
        step(&mut a, &mut cur, i..i, p);
        step(&mut a, &mut cur, i..i + p.len(), "");
    }
    // random one-character edits (deletions and insertions), chained
    let mut rng = Rng(seed);
    let chars = ["", "x", "$", "<", "\"", " ", "1"];
    for k in 0..12 {
        let text = a.docs[path].text.clone();
        let mut s = rng.below(text.len());
        while !text.is_char_boundary(s) {
            s -= 1;
        }
        let new = chars[rng.below(chars.len())];
        let e = if new.is_empty() {
            let mut e = (s + 1).min(text.len());
            while !text.is_char_boundary(e) {
                e += 1;
            }
            e
        } else {
            s
        };
        check(
            &mut a,
            path,
            (s..e, new),
            version,
            &format!("random edit {k}"),
        );
        version += 1;
    }
}

#[test]
fn features_after_edits_equal_a_fresh_analysis() {
    run(
        &PathBuf::from("/nonexistent/after_edit/mixed.xpnet"),
        NET,
        7,
        true,
    );
}

#[test]
fn features_after_edits_of_a_generated_net_equal_a_fresh_analysis() {
    let text = pnet_lsp::generate::chain_net(12);
    run(
        &PathBuf::from("/nonexistent/after_edit/chain.xpnet"),
        &text,
        11,
        false,
    );
}
