//! An edit through the database (salsa's queries: the root net's places and transitions
//! parsed and elaborated by queries of their own, reused from edit to edit) must give
//! exactly the diagnostics of a fresh analysis of the new text: random single-character
//! edits and now and then a place or connection line removed or copied (places added and
//! removed among the others), chained, over a generated net, a hand-written net with templates instantiated
//! twice, the repository's examples and (when present) nets of the GPI-Space corpus; after
//! each edit the incremental server's diagnostics are compared with those of a fresh
//! analysis of the same text.

mod common;

use std::ops::Range;
use std::path::{Path, PathBuf};

use common::Rng;
use pnet_lsp::analysis::Analysis;
use pnet_lsp::line_index::LineIndex;
use pnet_sema::{Options, WarningConfig};

const MIXED: &str = r#"<defun name="mixed">
  <in name="start" type="long" place="a"/>
  <out name="done" type="long" place="c"/>
  <net>
    <struct name="pair"><field name="x" type="long"/><field name="s" type="string"/></struct>
    <template name="step">
      <template-parameter type="T"/>
      <defun>
        <inout name="v" type="T"/>
        <in name="k" type="long"/>
        <expression>
          ${v} := ${v} + 1L; ${k} :gt: 0L
        </expression>
        <condition>${k} :ge: 0L</condition>
        <condition>
          ${v} :ne: 0L
        </condition>
      </defun>
    </template>
    <specialize name="step_long" use="step"><type-map replace="T" with="long"/></specialize>
    <specialize name="step_int" use="step"><type-map replace="T" with="int"/></specialize>
    <place name="a" type="long"/>
    <place name="b" type="long"/>
    <place name="c" type="long"/>
    <place name="k" type="long"/>
    <place name="i" type="int"/>
    <place name="p" type="pair"/>
    <transition name="one">
      <use name="step_long"/>
      <condition>${v} :lt: 100L</condition>
      <connect-inout port="v" place="a"/>
      <connect-read port="k" place="k"/>
    </transition>
    <transition name="two">
      <use name="step_int"/>
      <connect-inout port="v" place="i"/>
      <connect-read port="k" place="k"/>
    </transition>
    <transition name="three">
      <defun>
        <in name="x" type="long"/>
        <in name="q" type="pair"/>
        <out name="y" type="long"/>
        <expression>${y} := ${x} * 2L + ${q.x}; /* &lt;comment&gt; */ ${y} := ${y}</expression>
        <condition>${q.s} :ne: "" &amp;&amp; ${x} :gt: 0L</condition>
      </defun>
      <connect-in port="x" place="b"/>
      <connect-read port="q" place="p"/>
      <connect-out port="y" place="c"/>
    </transition>
    <transition name="four">
      <defun>
        <in name="x" type="long"/>
        <out name="y" type="long"/>
        <expression>${y} := ${x}</expression>
        <condition>  </condition>
      </defun>
      <condition>${x} :eq: 3L</condition>
      <connect-in port="x" place="a"/>
      <connect-out port="y" place="b"/>
    </transition>
  </net>
</defun>
"#;

/// The byte ranges of the contents of `<expression>` and `<condition>` elements.
fn text_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for tag in ["expression", "condition"] {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        let mut from = 0;
        while let Some(i) = text[from..].find(&open) {
            let s = from + i + open.len();
            let Some(j) = text[s..].find(&close) else {
                break;
            };
            out.push((s, s + j));
            from = s + j;
        }
    }
    out
}

fn boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

const POOL: &[char] = &[
    '0', '1', '7', 'L', 'U', 'x', 'y', 'v', 'k', '$', '{', '}', '(', ')', '+', '-', '*', '/', ':',
    '=', ';', ' ', '.', '"', 'e', 'q', 'g', 't', '\n', '<', '&', '>', ']', 'é',
];

/// One random single-character edit: mostly inside an expression or condition. The edited
/// text, and the edit as an editor sends it (the byte range replaced, the new text).
fn edit(rng: &mut Rng, text: &str) -> (String, Range<usize>, String) {
    if rng.below(8) == 0
        && let Some(e) = line_edit(rng, text)
    {
        return e;
    }
    let ranges = text_ranges(text);
    let at = if !ranges.is_empty() && rng.below(10) < 8 {
        let (s, e) = ranges[rng.below(ranges.len())];
        boundary(text, s + rng.below(e - s + 1))
    } else {
        boundary(text, rng.below(text.len() + 1))
    };
    let c = POOL[rng.below(POOL.len())];
    let next = text[at..].chars().next().map_or(0, char::len_utf8);
    let mut out = text.to_string();
    let c = c.encode_utf8(&mut [0; 4]).to_string();
    let (range, with) = match rng.below(3) {
        1 if next > 0 => (at..at + next, String::new()),
        2 if next > 0 => (at..at + next, c),
        _ => (at..at, c),
    };
    out.replace_range(range.clone(), &with);
    (out, range, with)
}

/// An edit of a whole line holding a place or a connection: the line removed, or a copy of
/// it put before it with the place's name changed (a new place, another connection, or a
/// duplicate), so that places come and go in the middle of the others (which moves the
/// later ones). `None` when the text has no such line.
fn line_edit(rng: &mut Rng, text: &str) -> Option<(String, Range<usize>, String)> {
    let tag = ["<place ", "<connect-"][rng.below(2)];
    let sites: Vec<usize> = text.match_indices(tag).map(|(i, _)| i).collect();
    if sites.is_empty() {
        return None;
    }
    let at = sites[rng.below(sites.len())];
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
    let line = &text[start..end];
    let (range, with) = if rng.below(2) == 0 {
        (start..end, String::new())
    } else {
        let key = if tag == "<place " {
            "name=\""
        } else {
            "place=\""
        };
        let copy = match line.find(key) {
            // another name, or (one time in three) the same one
            Some(i) if rng.below(3) != 0 => {
                let i = i + key.len();
                format!("{}n{}{}", &line[..i], rng.below(1000), &line[i..])
            }
            _ => line.to_string(),
        };
        (start..start, copy)
    };
    let mut out = text.to_string();
    out.replace_range(range.clone(), &with);
    Some((out, range, with))
}

/// Random chained edits on `text`, each edit's diagnostics compared with those of a fresh
/// analysis of the same text. The edits reach the analysis as an editor sends them: a
/// byte range and its new text (one or two per change, [`Analysis::edit`]), or now and
/// then the whole new text ([`Analysis::change`]).
fn check(name: &str, path: &Path, text: &str, options: &Options, edits: usize, seed: u64) {
    let mut rng = Rng(seed);
    let mut a = Analysis::new(options.clone());
    a.open(path.to_path_buf(), text, 0);
    let mut current = text.to_string();
    let mut broken = false;
    for step in 0..edits {
        let version = step as i32 + 1;
        // mostly a random walk; back to the original now and then, and mostly after an edit
        // that broke the markup (which a walk rarely repairs)
        if rng.below(20) == 0 || (broken && rng.below(4) != 0) {
            current = text.to_string();
            a.change(path.to_path_buf(), &current, version);
        } else {
            let (next, r1, t1) = edit(&mut rng, &current);
            current = next;
            match rng.below(4) {
                0 => a.change(path.to_path_buf(), &current, version),
                1 => {
                    // two edits in one change, the second in the text the first left
                    let (next, r2, t2) = edit(&mut rng, &current);
                    current = next;
                    a.edit(
                        path.to_path_buf(),
                        &[(r1, t1.as_str()), (r2, t2.as_str())],
                        version,
                    );
                }
                _ => a.edit(path.to_path_buf(), &[(r1, t1.as_str())], version),
            }
        }
        assert_eq!(*a.docs[path].text, *current, "{name}: edit {step}");
        assert_eq!(
            a.docs[path].index,
            LineIndex::new(&current),
            "{name}: edit {step}"
        );
        let got = a.diagnostics();
        let mut full = Analysis::new(options.clone());
        full.open(path.to_path_buf(), &current, 0);
        let want = full.diagnostics();
        broken = got.values().flatten().any(|d| d.code.starts_with("xml"));
        assert_eq!(
            got, want,
            "{name}: edit {step} (seed {seed}): the edited analysis's diagnostics differ from a fresh analysis of:\n{current}"
        );
    }
}

fn all_warnings() -> Options {
    Options {
        warnings: WarningConfig {
            all: true,
            ..WarningConfig::default()
        },
        ..Options::default()
    }
}

#[test]
fn edits_match_a_fresh_analysis_on_a_generated_net() {
    let text = pnet_lsp::generate::chain_net(60);
    let path = PathBuf::from("/nonexistent/edits/chain.xpnet");
    let options = Options::default();
    check("chain", &path, &text, &options, 400, 0x9E37_79B9_7F4A_7C15);
}

/// Places by groups (several of them here) with names repeated across groups and `shared_P`
/// places whose cleanup places are in other groups (some `shared_sink`, some not, some
/// missing): the checks that cross groups, as places come, go and change names.
#[test]
fn edits_match_a_fresh_analysis_with_shared_places_and_repeated_names() {
    let mut text = pnet_lsp::generate::chain_net(80);
    for i in (3..80).step_by(9) {
        let sink = (i * 7) % 85;
        text = text.replace(
            &format!("<place name=\"p{i}\" type=\"long\"/>"),
            &format!("<place name=\"p{i}\" type=\"shared_p{sink}\"/>"),
        );
    }
    for i in (5..80).step_by(6) {
        text = text.replace(
            &format!("<place name=\"p{i}\" type=\"long\"/>"),
            &format!("<place name=\"p{i}\" type=\"long\" shared_sink=\"true\"/>"),
        );
    }
    // a name repeated far from its first declaration
    text = text.replace(
        "<place name=\"p70\" type=\"long\"/>",
        "<place name=\"p70\" type=\"long\"/>\n    <place name=\"p4\" type=\"long\"/>",
    );
    let path = PathBuf::from("/nonexistent/edits/shared.xpnet");
    let mut a = Analysis::new(all_warnings());
    a.open(path.clone(), &text, 0);
    let codes: Vec<String> = a
        .diagnostics()
        .values()
        .flatten()
        .map(|d| d.code.to_string())
        .collect();
    for code in [
        "duplicate_place",
        "shared_cleanup_place_missing",
        "shared_cleanup_place_not_shared_sink",
    ] {
        assert!(codes.iter().any(|c| c == code), "{code}: {codes:?}");
    }
    check(
        "shared",
        &path,
        &text,
        &all_warnings(),
        300,
        0x5851_F42D_4C95_7F2D,
    );
}

#[test]
fn edits_match_a_fresh_analysis_with_templates_and_warnings() {
    let path = PathBuf::from("/nonexistent/edits/mixed.xpnet");
    // the net itself has diagnostics, so there are spans to move and to replace
    let mut a = Analysis::new(all_warnings());
    a.open(path.clone(), MIXED, 0);
    assert!(a.diagnostics().values().flatten().count() > 0);
    for (i, options) in [Options::default(), all_warnings()].iter().enumerate() {
        check(
            "mixed",
            &path,
            MIXED,
            options,
            500,
            0xD1B5_4A32_D192_ED03 + i as u64,
        );
    }
}

#[test]
fn edits_match_a_fresh_analysis_on_example_and_corpus_nets() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut nets = vec![
        root.join("examples/collatz/collatz.xpnet"),
        root.join("examples/countdown/countdown.xpnet"),
    ];
    // GPI-Space's corpus beside the checkout, when it is there
    let corpus = pnet_tests::gpispace();
    let lib = corpus.join("share/xml/lib");
    for n in [
        "share/doc/example/map/map.xpnet",
        "share/doc/example/template/work_and_wait.xpnet",
        "share/doc/example/bigint_condition/bigint_condition.xpnet",
        "share/doc/example/stochastic_with_heureka/stochastic_with_heureka.xpnet",
    ] {
        let p = corpus.join(n);
        if p.is_file() {
            nets.push(p);
        }
    }
    let options = Options {
        search_paths: vec![lib, corpus.join("share/doc/example")],
        ..all_warnings()
    };
    for (i, net) in nets.iter().enumerate() {
        let text = std::fs::read_to_string(net).expect("net readable");
        check(
            &net.display().to_string(),
            net,
            &text,
            &options,
            150,
            0xA076_1D64_78BD_642F + i as u64,
        );
    }
}
