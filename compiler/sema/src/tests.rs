//! Data-driven tests of the elaboration: `check(xml, expect![[...]])` prints the diagnostics
//! (`code @line:col: message`) and, when there are no errors, the IR text.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use expect_test::{Expect, expect};

use crate::{Options, Output, compile_path, compile_source};
use pnet_syntax::Span;

/// GPI-Space's corpus (tests that read it start with `pnet_tests::corpus_absent()`).
fn corpus() -> PathBuf {
    pnet_tests::gpispace()
}

fn lib() -> PathBuf {
    pnet_tests::gpispace_lib()
}

/// `text` with the corpus' folder (as given and canonical) written `<corpus>`, so snapshots
/// do not depend on where the corpus is.
fn without_corpus_dir(text: &str) -> String {
    let dir = corpus();
    let mut text = text.replace(&dir.display().to_string(), "<corpus>");
    if let Ok(canonical) = dir.canonicalize() {
        text = text.replace(&canonical.display().to_string(), "<corpus>");
    }
    text
}

fn line_col(out: &Output, span: pnet_syntax::Span) -> (usize, usize) {
    let Some(f) = out.files.get(span.file.0 as usize) else {
        return (0, 0);
    };
    let upto = &f.text[..(span.start as usize).min(f.text.len())];
    let line = upto.matches('\n').count() + 1;
    let col = upto.len() - upto.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

fn render_diags(out: &Output) -> String {
    let mut s = String::new();
    for d in &out.diagnostics {
        let loc = match d.primary_span() {
            Some(sp) => {
                let (l, c) = line_col(out, sp);
                if sp.file.0 == 0 {
                    format!("{l}:{c}")
                } else {
                    format!("{}@{l}:{c}", sp.file.0)
                }
            }
            None => "-".to_string(),
        };
        let sev = if d.is_error() { "" } else { "warning " };
        writeln!(s, "{sev}{} @{loc}: {}", d.code, d.message).unwrap();
    }
    s
}

fn render(out: &Output) -> String {
    let mut s = render_diags(out);
    if let Some(b) = &out.bundle {
        if !s.is_empty() {
            s.push_str("---\n");
        }
        write!(s, "{b}").unwrap();
    }
    s
}

fn check_with(xml: &str, options: &Options, expect: Expect) {
    let out = compile_source(Path::new("/nonexistent/test.xpnet"), xml, options);
    expect.assert_eq(&render(&out));
}

fn check(xml: &str, expect: Expect) {
    check_with(xml, &Options::default(), expect)
}

/// Only the diagnostics.
fn check_diags(xml: &str, expect: Expect) {
    let out = compile_source(
        Path::new("/nonexistent/test.xpnet"),
        xml,
        &Options::default(),
    );
    expect.assert_eq(&render_diags(&out));
}

#[test]
fn simple_expression() {
    check(
        r#"<defun name="f">
  <in name="a" type="long"/>
  <out name="b" type="long"/>
  <expression>${b} := ${a} + 1L</expression>
</defun>"#,
        expect![[r#"
            bundle root f1 f
            file 0 "/nonexistent/test.xpnet" lines 0 17 46 76 121

            function f0 f  @ /nonexistent/test.xpnet:1:1-5:9
              in a : long  @ 2:3-29
              out b : long  @ 3:3-30
              expression c0

            function f1 f  @ /nonexistent/test.xpnet:1:1-5:9
              in a : long = p0 a  @ 2:3-29
              out b : long = p1 b  @ 3:3-30
              net
                place p0 a : long  @ /nonexistent/test.xpnet:2:3-29
                place p1 b : long  @ /nonexistent/test.xpnet:3:3-30
                transition t0 f priority 0 -> f0 f  @ /nonexistent/test.xpnet:1:1-5:9
                  in a <- p0 a  @ 2:3-29
                  out b -> p1 b  @ 3:3-30

            code c0 "expression of f" : long  @ /nonexistent/test.xpnet:4:15-32
              slot 0 port a : long
              slot 1 port b : long
              const 0 1L
              reads a
              0  load        a  @ 4:23-27
              1  const       1L  @ 4:30-32
              2  add.long  @ 4:23-32
              3  dup  @ 4:15-32
              4  store       b  @ 4:15-32
        "#]],
    );
}

fn corpus_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("xpnet" | "xml")
            ) {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&corpus(), &mut out);
    out
}

/// The diagnostics and facts queries (the language server's, no bundle) give the
/// diagnostics and facts of the whole elaboration on every corpus file.
#[test]
fn diagnostics_and_facts_alone_equal_the_elaborations_on_the_corpus() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let options = Options {
        search_paths: vec![lib(), corpus().join("share/doc/example")],
        ..Options::default()
    };
    let files = corpus_files();
    assert!(!files.is_empty());
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let mut db = crate::db::Database::default();
        let ws = crate::load(&mut db, path, &text, &options);
        let alone = crate::elab::diagnostics(&db, ws);
        let facts = crate::elab::facts(&db, ws);
        let whole = crate::elab::elaborate(&db, ws);
        assert_eq!(*alone, whole.diagnostics, "{}", path.display());
        assert_eq!(*facts, whole.facts, "{}", path.display());
    }
}

/// The facts of one transition ([`crate::elab::facts_at`], [`crate::elab::facts_in`]) answer
/// as the whole facts do inside it, at every offset of every transition of the corpus's
/// root nets: the innermost reference holding the offset, the first symbol, and the
/// innermost scope (the whole facts' is the root defun's, holding the whole item, when the
/// transition's facts hold none).
#[test]
fn facts_of_a_transition_answer_as_the_whole_facts_on_the_corpus() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let options = Options {
        search_paths: vec![lib(), corpus().join("share/doc/example")],
        ..Options::default()
    };
    let mut offsets = 0;
    for path in &corpus_files() {
        let text = std::fs::read_to_string(path).unwrap();
        let mut db = crate::db::Database::default();
        let ws = crate::load(&mut db, path, &text, &options);
        let root = ws.files(&db)[0];
        let file = *root.id(&db);
        let whole = crate::elab::facts(&db, ws);
        let Some(cut) = root.cut(&db).clone() else {
            continue;
        };
        let holds = |s: Span, o: u32| s.file == file && s.start <= o && o <= s.end;
        for item in &cut.items {
            if item.kind != pnet_syntax::xml::items::ItemKind::Transition {
                continue;
            }
            let range = crate::elab::facts_in(&db, ws, file, item.start, item.end);
            // the same at every offset inside the item
            let Some(near) = crate::elab::facts_at(&db, ws, file, item.start + 1) else {
                continue;
            };
            let middle = crate::elab::facts_at(&db, ws, file, (item.start + item.end) / 2);
            assert_eq!(middle.as_ref(), Some(&near));
            for o in item.start + 1..item.end {
                offsets += 1;
                let innermost = |f: &crate::facts::Facts| {
                    f.references
                        .iter()
                        .filter(|r| holds(r.span, o))
                        .min_by_key(|r| r.span.end - r.span.start)
                        .cloned()
                };
                let first =
                    |f: &crate::facts::Facts| f.symbols.iter().find(|s| holds(s.span, o)).cloned();
                let at = |p: &Path| format!("{}:{o}", p.display());
                assert_eq!(innermost(&near), innermost(whole), "{}", at(path));
                assert_eq!(first(&near), first(whole), "{}", at(path));
                let here = Span::new(file, o, o);
                let want = whole.scope_at(here);
                match near.scope_at(here) {
                    Some(s) => assert_eq!(Some(s), want, "{}", at(path)),
                    None => assert!(
                        want.is_none_or(|w| w.span.start <= item.start && item.end <= w.span.end),
                        "{}",
                        at(path)
                    ),
                }
                let in_range = range.as_ref().and_then(|r| r.scope_at(here));
                assert_eq!(in_range, near.scope_at(here), "{}", at(path));
            }
        }
    }
    assert!(offsets > 10_000, "{offsets}");
}

/// Files that are meant to fail.
const EXPECTED_FAILURES: &[&str] = &[
    "test/xml/xpnets/diagnostics/error_",
    "test/xml/xpnets/diagnostics/function_description_with_unknown_",
    "test/xml/xpnets/connect_in_in_same.xpnet",
    "test/xml/xpnets/connect_in_read_same.xpnet",
    "test/xml/xpnets/connect_out_out_same.xpnet",
    "test/xml/xpnets/connect_read_read_same.xpnet",
];

/// The progress tally over the whole corpus (with the library on the search path).
#[test]
fn corpus_tally() {
    if pnet_tests::corpus_absent() {
        return;
    }
    // GPI-Space's build passes the example folder too (`template/dup.xpnet`, ...).
    let examples = corpus().join("share/doc/example");
    let options = Options {
        search_paths: vec![lib(), examples],
        ..Options::default()
    };
    let mut ok = 0;
    let mut defuns = 0;
    let mut codes = std::collections::BTreeMap::new();
    let mut unexpected: Vec<String> = Vec::new();
    let mut report = String::new();
    let files = corpus_files();
    for path in &files {
        let out = compile_path(path, &options);
        let rel = path.strip_prefix(corpus()).unwrap().display().to_string();
        let is_defun = matches!(
            out.ast().as_ref().and_then(|a| a.root.as_ref()),
            Some(pnet_syntax::xml::Root::Defun(_))
        );
        defuns += usize::from(is_defun);
        for d in &out.diagnostics {
            *codes.entry(d.code).or_insert(0usize) += 1;
        }
        if !out.has_errors() {
            ok += 1;
            continue;
        }
        if !is_defun || EXPECTED_FAILURES.iter().any(|e| rel.starts_with(e)) {
            continue;
        }
        if !KNOWN_FAILURES.iter().any(|k| rel.starts_with(k)) {
            unexpected.push(rel.clone());
        }
        writeln!(report, "FAIL {rel}").unwrap();
        for line in render_diags(&out)
            .lines()
            .filter(|l| !l.starts_with("warning"))
            .take(4)
        {
            writeln!(report, "    {line}").unwrap();
        }
    }
    eprintln!("{report}");
    eprintln!("diagnostics by code: {codes:?}");
    eprintln!(
        "corpus: {ok}/{} compile without errors ({defuns} defun roots)",
        files.len()
    );
    assert_eq!(files.len(), 196);
    assert!(unexpected.is_empty(), "unexpected failures: {unexpected:?}");
}

/// Defun files that fail for a known reason: fragments that use struct types or
/// specializations of the net that includes them (they do not compile on their own), and
/// GPI-Space parser tests whose places have the undeclared type `t`.
const KNOWN_FAILURES: &[&str] = &[
    "share/xml/lib/cache/",
    "share/xml/lib/grid/",
    "share/doc/example/credit/work_credit.xpnet",
    "share/doc/example/subnetwork/process_single_block.xpnet",
    "share/doc/example/subnetwork/produce.xpnet",
    "share/doc/example/vmem_1_to_n/inner.xpnet",
    "test/xml/xpnets/connect_eureka_duplicate_port.xpnet",
    "test/xml/xpnets/connect_in_out_same.xpnet",
    "test/xml/xpnets/connect_read_out_same.xpnet",
];

fn corpus_diags(rel: &str) -> String {
    let out = compile_path(
        &corpus().join(rel),
        &Options {
            search_paths: vec![lib()],
            ..Options::default()
        },
    );
    render_diags(&out)
}

#[test]
fn diagnostics_corpus() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = "test/xml/xpnets/diagnostics/";
    let mut s = String::new();
    let mut names: Vec<_> = std::fs::read_dir(corpus().join(dir))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for n in names {
        writeln!(s, "== {n}").unwrap();
        s.push_str(&corpus_diags(&format!("{dir}{n}")));
    }
    expect![[r#"
        == error_duplicate_external_function.xpnet
        warning independent-transition @3:5: transition `a` is connected to no place
        warning independent-transition @8:5: transition `b` is connected to no place
        warning duplicate-external-function @10:10: the external function `m.f` is defined twice, differently
        == error_duplicate_place.xpnet
        warning independent-place @3:5: place `p` is connected to nothing
        warning unknown-type @3:27: unknown type `t`
        duplicate_place @4:18: duplicate place `p`
        == error_duplicate_place_map.xpnet
        warning unknown-type @5:32: unknown type `t`
        unknown_place @5:42: port `v` is bound to the unknown place `p`
        warning independent-place @7:11: place `v` is connected to nothing
        warning unknown-type @7:33: unknown type `t`
        duplicate_place_map @11:7: virtual place `v` is mapped twice
        warning independent-place @13:5: place `r` is connected to nothing
        warning unknown-type @13:27: unknown type `t`
        == error_duplicate_port.xpnet
        warning unknown-type @2:22: unknown type `t`
        duplicate_port @3:13: duplicate port `p`
        warning unknown-type @3:22: unknown type `t`
        == error_duplicate_specialize.xpnet
        duplicate_specialize @7:23: duplicate specialization `s`
        == error_duplicate_template.xpnet
        duplicate_template @6:21: duplicate template `t`
        == error_duplicate_transition.xpnet
        warning independent-transition @3:5: transition `t` is connected to no place
        duplicate_transition @4:23: duplicate transition `t`
        == function_description_with_unknown_argument_port.xpnet
        unknown_port_in_function_description @2:30: unknown argument port `p` in the description of function `m.f`
        == function_description_with_unknown_return_port.xpnet
        unknown_port_in_function_description @2:30: unknown return port `r` in the description of function `m.f`
        == virtual_place_not_tunneled.xpnet
        warning virtual-place-not-tunneled @3:5: virtual place `v` is not tunneled
        == warning_duplicate_external_function.xpnet
        warning independent-transition @3:5: transition `a` is connected to no place
        warning independent-transition @8:5: transition `b` is connected to no place
        warning duplicate-external-function @10:10: the external function `m.f` is defined twice
    "#]].assert_eq(&s);
}

#[test]
fn connect_same_corpus() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let mut s = String::new();
    for n in [
        "in_in",
        "in_out",
        "in_read",
        "out_out",
        "read_out",
        "read_read",
    ] {
        writeln!(s, "== connect_{n}_same").unwrap();
        s.push_str(&corpus_diags(&format!(
            "test/xml/xpnets/connect_{n}_same.xpnet"
        )));
    }
    writeln!(s, "== connect_eureka_duplicate_port").unwrap();
    s.push_str(&corpus_diags(
        "test/xml/xpnets/connect_eureka_duplicate_port.xpnet",
    ));
    expect![[r#"
        == connect_in_in_same
        warning unknown-type @3:27: unknown type `t`
        output_port_not_connected @4:23: output port `A` of transition `foo` is not connected
        warning unknown-type @6:28: unknown type `t`
        warning unknown-type @7:29: unknown type `t`
        duplicate_connection @12:7: port `A` is connected to place `P` twice in the incoming direction
        == connect_in_out_same
        warning unknown-type @3:27: unknown type `t`
        warning unknown-type @6:28: unknown type `t`
        warning unknown-type @7:29: unknown type `t`
        == connect_in_read_same
        warning unknown-type @3:27: unknown type `t`
        output_port_not_connected @4:23: output port `A` of transition `foo` is not connected
        warning unknown-type @6:28: unknown type `t`
        warning unknown-type @7:29: unknown type `t`
        duplicate_connection @12:7: port `A` is connected to place `P` twice in the incoming direction
        == connect_out_out_same
        warning unknown-type @3:27: unknown type `t`
        warning port-not-connected @4:23: input port `A` of transition `foo` is not connected
        warning unknown-type @6:28: unknown type `t`
        warning unknown-type @7:29: unknown type `t`
        duplicate_connection @12:7: port `A` is connected to place `P` twice in the outgoing direction
        == connect_read_out_same
        warning unknown-type @3:27: unknown type `t`
        warning unknown-type @6:28: unknown type `t`
        warning unknown-type @7:29: unknown type `t`
        == connect_read_read_same
        warning unknown-type @3:27: unknown type `t`
        output_port_not_connected @4:23: output port `A` of transition `foo` is not connected
        warning unknown-type @6:28: unknown type `t`
        warning unknown-type @7:29: unknown type `t`
        duplicate_connection @12:7: port `A` is connected to place `P` twice in the incoming direction
        == connect_eureka_duplicate_port
        warning independent-place @3:5: place `P` is connected to nothing
        warning unknown-type @3:27: unknown type `t`
        warning unknown-type @6:29: unknown type `t`
        missing_binding @7:9: output port `A` is never assigned
        duplicate_connection @11:7: port `A` is connected to eureka twice
    "#]].assert_eq(&s);
}

/// A net with one transition around `inner` (ports, body, connections).
fn net(places: &str, transitions: &str) -> String {
    format!("<defun name=\"top\">\n<net>\n{places}\n{transitions}\n</net>\n</defun>")
}

#[test]
fn connections_and_types() {
    // good: in/out/read/inout/number-of-tokens/out-many
    check_diags(
        &net(
            r#"<place name="a" type="long"/><place name="b" type="long"/><place name="n" type="unsigned long"/><place name="l" type="long"/>"#,
            r#"<transition name="t">
<defun><in name="x" type="long"/><in name="r" type="long"/><inout name="y" type="long"/><in name="c" type="unsigned long"/><out name="m" type="list"/>
<expression>${m} := List ()</expression></defun>
<connect-in port="x" place="a"/><connect-read port="r" place="a"/><connect-inout port="y" place="b"/>
<connect-number-of-tokens port="c" place="l"/><connect-out-many port="m" place="l"/>
</transition>"#,
        ),
        expect![[r#"
            warning independent-place @3:59: place `n` is connected to nothing
        "#]],
    );
    // bad: unknown place, unknown port, wrong direction, type mismatch, nt/out-many types
    check_diags(
        &net(
            r#"<place name="a" type="long"/><place name="s" type="string"/>"#,
            r#"<transition name="t">
<defun><in name="x" type="long"/><out name="y" type="long"/><in name="c" type="long"/><out name="m" type="long"/>
<expression>${y} := ${x}; ${m} := 1L</expression></defun>
<connect-in port="x" place="nowhere"/><connect-in port="nope" place="a"/><connect-in port="y" place="a"/>
<connect-out port="y" place="s"/><connect-number-of-tokens port="c" place="a"/><connect-out-many port="m" place="a"/>
</transition>"#,
        ),
        expect![[r#"
            unknown_place @7:29: unknown place `nowhere`
            unknown_port @7:57: transition `t` has no port `nope`
            unknown_port @7:92: port `y` of transition `t` is not an input port, as `connect-in` needs
            connection_type_mismatch @8:1: port `y` of type `long` is connected to place `s` of type `string`
            invalid_number_of_tokens_port @8:66: port `c` has type `long`
            invalid_out_many_port @8:104: port `m` has type `long`
        "#]],
    );
}

#[test]
fn duplicate_connections() {
    let t = |conns: &str| {
        net(
            r#"<place name="P" type="long"/>"#,
            &format!(
                r#"<transition name="t"><defun><inout name="A" type="long"/><expression>${{A}} := ${{A}}</expression></defun>{conns}</transition>"#
            ),
        )
    };
    check_diags(
        &t(r#"<connect-in port="A" place="P"/><connect-out port="A" place="P"/>"#),
        expect![""],
    );
    check_diags(
        &t(r#"<connect-read port="A" place="P"/><connect-out port="A" place="P"/>"#),
        expect![""],
    );
    check_diags(
        &t(
            r#"<connect-in port="A" place="P"/><connect-read port="A" place="P"/><connect-out port="A" place="P"/>"#,
        ),
        expect![[r#"
        duplicate_connection @4:135: port `A` is connected to place `P` twice in the incoming direction
    "#]],
    );
    check_diags(
        &t(r#"<connect-inout port="A" place="P"/><connect-out port="A" place="P"/>"#),
        expect![[r#"
        duplicate_connection @4:138: port `A` is connected to place `P` twice in the outgoing direction
    "#]],
    );
}

#[test]
fn ports() {
    check_diags(
        r#"<defun><in name="a" type="long"/><out name="a" type="string"/><in name="b" type="long"/><inout name="b" type="long"/><in name="c" type="nosuch"/><expression/></defun>"#,
        expect![[r#"
            port_type_mismatch @1:54: the in and the out port `a` have different types: `long` and `string`
            duplicate_port @1:102: duplicate port `b`
            warning unknown-type @1:137: unknown type `nosuch`
        "#]],
    );
}

#[test]
fn generator_places() {
    check_diags(
        &net(
            r#"<place name="g" type="long" generator="true"/><place name="o" type="long"/>"#,
            r#"<transition name="t"><defun><in name="x" type="long"/><out name="y" type="long"/><expression>${y} := ${x}</expression></defun>
<connect-in port="x" place="g"/><connect-out port="y" place="o"/></transition>"#,
        ),
        expect![[r#""#]],
    );
    check_diags(
        &net(
            r#"<place name="g" type="double" generator="true" put_token="true" shared_sink="true"><token><value>1.0</value></token></place>"#,
            r#"<transition name="t"><defun><in name="x" type="double"/><out name="y" type="double"/><expression>${y} := ${x}</expression></defun>
<connect-read port="x" place="g"/><connect-out port="y" place="g"/></transition>"#,
        ),
        expect![[r#"
            invalid_generator_place @3:14: generator place `g` is a put_token place
            invalid_generator_place @3:14: generator place `g` is a shared_sink
            invalid_generator_place @3:23: generator place `g` has type `double`
            invalid_generator_place @3:84: generator place `g` has tokens
            invalid_generator_place @5:1: generator place `g` may not be read
            invalid_generator_place @5:35: generator place `g` may not be produced into
        "#]],
    );
    // An unknown type is only a warning elsewhere, but it has no generator: before, this
    // compiled to a bundle that failed validation (found by the `xpnet` fuzz target).
    check_diags(
        &net(
            r#"<place name="g" type="lonc" generator="true"/><place name="o" type="long"/>"#,
            r#"<transition name="t"><defun><in name="x" type="long"/><out name="y" type="long"/><expression>${y} := ${x}</expression></defun>
<connect-in port="x" place="g"/><connect-out port="y" place="o"/></transition>"#,
        ),
        expect![[r#"
            warning unknown-type @3:23: unknown type `lonc`
            invalid_generator_place @3:23: generator place `g` has the unknown type `lonc`
        "#]],
    );
}

#[test]
fn tokens_priorities_names() {
    check_diags(
        &net(
            r#"<place name="a" type="long"><token><value>1L</value></token><token><value>"x"</value></token></place><place name="_b" type="long"/><place name="c-d" type="long"/>"#,
            r#"<transition name="t" priority="70000"><defun><in name="x" type="long"/><expression/></defun><connect-in port="x" place="a"/></transition>
<transition name="u" priority="2"><defun><in name="x" type="long"/><expression/></defun><connect-in port="x" place="a"/></transition>"#,
        ),
        expect![[r#"
            type_mismatch @3:75: this token value has type `string`, but the place has type `long`
            warning independent-place @3:102: place `_b` is connected to nothing
            invalid_prefix @3:115: place name `_b` starts with `_`
            warning independent-place @3:132: place `c-d` is connected to nothing
            invalid_name @3:145: `c-d` is not a valid place name
            invalid_priority @4:32: invalid priority `70000`
        "#]],
    );
}

#[test]
fn conditions_joined() {
    check(
        &net(
            r#"<place name="a" type="long"/>"#,
            r#"<transition name="t"><defun><in name="x" type="long"/><condition>${x} > 0L</condition><expression/></defun>
<condition>${x} &lt; 10L</condition><connect-in port="x" place="a"/></transition>"#,
        ),
        expect![[r#"
            bundle root f1 top
            file 0 "/nonexistent/test.xpnet" lines 0 19 25 55 163 245 252

            function f0  @ /nonexistent/test.xpnet:4:22-108
              in x : long  @ 4:29-55
              expression c0

            function f1 top  @ /nonexistent/test.xpnet:1:1-7:9
              net
                place p0 a : long  @ /nonexistent/test.xpnet:3:1-30
                transition t0 t priority 0 -> f0  @ /nonexistent/test.xpnet:4:1-5:82
                  in x <- p0 a  @ 5:37-69
                  condition c1

            code c0 "expression of t" : control  @ /nonexistent/test.xpnet:4:87-87
              slot 0 port x : long
              const 0 []
              0  const       []  @ 4:87-87

            code c1 "condition of t" : bool  @ /nonexistent/test.xpnet:4:66-75
              slot 0 port x : long
              const 0 0L
              const 1 10L
              reads x
              0  load        x  @ 4:66-70
              1  const       0L  @ 4:73-75
              2  gt.long  @ 4:66-75
              3  jump_if_false_else_pop -> 7  @ 4:66-75
              4  load        x  @ 5:12-16
              5  const       10L  @ 5:22-25
              6  lt.long  @ 5:12-25
        "#]],
    );
    check_diags(
        &net(
            r#"<place name="a" type="long"/>"#,
            r#"<transition name="t"><defun><in name="x" type="long"/><expression/></defun>
<condition>${x} + 1L</condition><connect-in port="x" place="a"/></transition>"#,
        ),
        expect![[r#"
            condition_not_bool @5:12: a condition must be `bool`, but this has type `long`
        "#]],
    );
}

#[test]
fn modules_and_memory() {
    check(
        r#"<defun name="m">
  <in name="n" type="unsigned long"/>
  <out name="s" type="long"/>
  <memory-buffer name="buf"><size>${n} * 8UL</size></memory-buffer>
  <memory-get><global>List()</global><local>List()</local></memory-get>
  <module name="mod" function="s sum (n, buf)" eureka-group="&quot;g&quot;"><cinclude href="x.h"/><code><![CDATA[return 1;]]></code></module>
</defun>"#,
        expect![[r#"
            bundle root f1 m
            file 0 "/nonexistent/test.xpnet" lines 0 17 55 85 153 225 367

            function f0 m  @ /nonexistent/test.xpnet:1:1-7:9
              in n : unsigned long  @ 2:3-38
              out s : long  @ 3:3-30
              memory-buffer buf size c0  @ 4:3-68
              memory-get global c1 local c2  @ 5:3-72
              module mod "s sum (n, buf)" require_function_unloads_without_rest require_module_unloads_without_rest  @ 6:3-142
                eureka-group c3
                cinclude "x.h"
                code "return 1;"

            function f1 m  @ /nonexistent/test.xpnet:1:1-7:9
              in n : unsigned long = p0 n  @ 2:3-38
              out s : long = p1 s  @ 3:3-30
              net
                place p0 n : unsigned long  @ /nonexistent/test.xpnet:2:3-38
                place p1 s : long  @ /nonexistent/test.xpnet:3:3-30
                transition t0 m priority 0 -> f0 m  @ /nonexistent/test.xpnet:1:1-7:9
                  in n <- p0 n  @ 2:3-38
                  out s -> p1 s  @ 3:3-30

            code c0 "size of memory buffer buf of m" : unsigned long  @ /nonexistent/test.xpnet:4:35-45
              slot 0 port n : unsigned long
              slot 1 port s : long
              const 0 8UL
              reads n
              0  load        n  @ 4:35-39
              1  const       8UL  @ 4:42-45
              2  mul.ulong  @ 4:35-45

            code c1 "global of memory transfer of m" : list  @ /nonexistent/test.xpnet:5:23-29
              slot 0 port n : unsigned long
              slot 1 port s : long
              const 0 List ()
              0  const       List ()  @ 5:23-29

            code c2 "local of memory transfer of m" : list  @ /nonexistent/test.xpnet:5:45-51
              slot 0 port n : unsigned long
              slot 1 port s : long
              const 0 List ()
              0  const       List ()  @ 5:45-51

            code c3 "eureka group of m" : string  @ /nonexistent/test.xpnet:6:62-70
              slot 0 port n : unsigned long
              slot 1 port s : long
              const 0 "g"
              0  const       "g"  @ 6:62-70
        "#]],
    );
    check_diags(
        r#"<defun name="m">
  <in name="n" type="unsigned long"/>
  <memory-buffer name="n"><size>1UL</size></memory-buffer>
  <memory-buffer name="b"><size>"x"</size></memory-buffer>
  <module name="mod" function="n f (q) )"/>
</defun>"#,
        expect![[r#"
            duplicate_memory_buffer @3:24: memory buffer `n` has the name of a port
            type_mismatch @4:33: expected a value of type `unsigned long`, found `string`
            invalid_function_description @5:32: malformed argument list in `n f (q) )`
        "#]],
    );
}

#[test]
fn properties_and_requires() {
    check(
        r#"<defun name="p">
  <properties name="fhg"><properties name="drts"><properties name="schedule"><property key="num_worker" value="2"/></properties></properties></properties>
  <properties name="pnetc"><property key="nosuch">x</property></properties>
  <properties name="a"><property key="b" value="1"/><property key="b" value="2"/></properties>
  <require key="gpu" mandatory="true"/>
  <expression/>
</defun>"#,
        expect![[r##"
            warning property-unknown @3:43: unknown property `pnetc.nosuch`
            warning property-overwritten @4:53: property `a.b` is set again
            ---
            bundle root f1 p
            file 0 "/nonexistent/test.xpnet" lines 0 17 172 248 343 383 399

            function f0 p  @ /nonexistent/test.xpnet:1:1-7:9
              in "#once" : control  @ 1:1-7:9
              require gpu
              property fhg.drts.schedule.num_worker = "2"
              property pnetc.nosuch = "x"
              property a.b = "2"
              expression c0

            function f1 p  @ /nonexistent/test.xpnet:1:1-7:9
              net
                place p0 "#once" : control  @ /nonexistent/test.xpnet:1:1-7:9
                  token []
                transition t0 p priority 0 -> f0 p  @ /nonexistent/test.xpnet:1:1-7:9
                  in port#0 <- p0 "#once"  @ 1:1-7:9

            code c0 "expression of p" : control  @ /nonexistent/test.xpnet:6:3-3
              slot 0 port "#once" : control
              const 0 []
              0  const       []  @ 6:3-3
        "##]],
    );
}

/// A fresh folder with the given files.
fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pnet-sema-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (p, text) in files {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn check_tree(dir: &Path, root: &str, options: &Options, expect: Expect) {
    let out = compile_path(&dir.join(root), options);
    let mut s = String::new();
    for f in &out.files {
        writeln!(
            s,
            "file {} {}",
            f.id.0,
            f.path.strip_prefix(dir).unwrap_or(&f.path).display()
        )
        .unwrap();
    }
    s.push_str(&render(&out).replace(&format!("{}/", dir.display()), ""));
    expect.assert_eq(&s);
}

const POINT: &str = r#"<structs><struct name="point"><field name="x" type="long"/><field name="y" type="long"/></struct></structs>"#;

#[test]
fn includes_relative_and_search_path() {
    let dir = tree(
        "includes",
        &[
            (
                "main/net.xpnet",
                r#"<defun name="main">
  <include-structs href="types/point.xpnet"/>
  <in name="p" type="point" place="p"/>
  <net>
    <place name="p" type="point"/>
    <transition name="use_lib"><include-function href="lib_fn.xpnet"/><connect-in port="p" place="p"/></transition>
  </net>
</defun>"#,
            ),
            ("main/types/point.xpnet", POINT),
            (
                "lib/lib_fn.xpnet",
                r#"<defun name="lib_fn"><include-structs href="../main/types/point.xpnet"/><in name="p" type="point"/><expression/></defun>"#,
            ),
        ],
    );
    check_tree(
        &dir,
        "main/net.xpnet",
        &Options {
            search_paths: vec![dir.join("lib")],
            ..Options::default()
        },
        expect![[r#"
            file 0 main/net.xpnet
            file 1 main/types/point.xpnet
            file 2 lib/lib_fn.xpnet
            bundle root f1 main
            file 0 "main/net.xpnet" lines 0 20 66 106 114 149 265 274
            file 1 "main/types/point.xpnet" lines 0
            file 2 "lib/lib_fn.xpnet" lines 0
            struct point { x: long, y: long }

            function f0 lib_fn  @ lib/lib_fn.xpnet:1:1-121
              in p : point  @ 1:73-100
              expression c0

            function f1 main  @ main/net.xpnet:1:1-8:9
              in p : point = p0 p  @ 3:3-40
              net
                place p0 p : point  @ main/net.xpnet:5:5-35
                transition t0 use_lib priority 0 -> f0 lib_fn  @ main/net.xpnet:6:5-116
                  in p <- p0 p  @ 6:71-103

            code c0 "expression of use_lib" : control  @ lib/lib_fn.xpnet:1:100-100
              slot 0 port p : point
              const 0 []
              0  const       []  @ 1:100-100
        "#]],
    );
    // without the search path
    check_tree(
        &dir,
        "main/net.xpnet",
        &Options::default(),
        expect![[r#"
        file 0 main/net.xpnet
        file 1 main/types/point.xpnet
        file_not_found @6:56: cannot find file `lib_fn.xpnet`
    "#]],
    );
}

#[test]
fn include_cycle_terminates() {
    let dir = tree(
        "cycle",
        &[
            (
                "a.xpnet",
                r#"<defun name="a"><net><transition name="b"><include-function href="b.xpnet"/></transition></net></defun>"#,
            ),
            (
                "b.xpnet",
                r#"<defun name="b"><net><transition name="a"><include-function href="a.xpnet"/></transition></net></defun>"#,
            ),
            (
                "s1.xpnet",
                r#"<structs><include-structs href="s2.xpnet"/></structs>"#,
            ),
            (
                "s2.xpnet",
                r#"<structs><include-structs href="s1.xpnet"/></structs>"#,
            ),
            (
                "c.xpnet",
                r#"<defun name="c"><include-structs href="s1.xpnet"/><expression/></defun>"#,
            ),
        ],
    );
    check_tree(
        &dir,
        "a.xpnet",
        &Options::default(),
        expect![[r#"
            file 0 a.xpnet
            file 1 b.xpnet
            warning independent-transition @1:22: transition `b` is connected to no place
            include_cycle @1@1:67: `a.xpnet` includes itself
        "#]],
    );
    check_tree(
        &dir,
        "c.xpnet",
        &Options::default(),
        expect![[r#"
        file 0 c.xpnet
        file 1 s1.xpnet
        file 2 s2.xpnet
        include_cycle @2@1:33: `s1.xpnet` includes itself
    "#]],
    );
}

const TEMPLATE_NET: &str = r#"<defun name="top">
  <in name="i" type="long" place="i"/>
  <out name="o" type="long" place="o"/>
  <net>
    <template name="id">
      <template-parameter type="T"/>
      <defun>
        <struct name="BOX"><field name="v" type="T"/></struct>
        <in name="x" type="T"/>
        <out name="y" type="T"/>
        <expression>${y} := ${x}</expression>
      </defun>
    </template>
    <specialize name="id_long" use="id">
      <type-map replace="T" with="long"/>
      <type-map replace="BOX" with="long_box"/>
      <type-get name="long_box"/>
    </specialize>
    <place name="i" type="long"/>
    <place name="o" type="long"/>
    <place name="boxes" type="long_box"/>
    <transition name="copy">
      <use name="id_long"/>
      <connect-in port="x" place="i"/>
      <connect-out port="y" place="o"/>
    </transition>
  </net>
</defun>"#;

#[test]
fn templates_and_specialize() {
    check(
        TEMPLATE_NET,
        expect![[r#"
            warning independent-place @21:5: place `boxes` is connected to nothing
            ---
            bundle root f1 top
            file 0 "/nonexistent/test.xpnet" lines 0 19 58 98 106 131 168 182 245 277 310 356 371 387 428 470 518 552 570 604 638 680 709 737 776 816 834 843
            struct long_box { v: long }

            function f0 id_long  @ /nonexistent/test.xpnet:7:7-12:15
              in x : long  @ 9:9-32
              out y : long  @ 10:9-33
              expression c0

            function f1 top  @ /nonexistent/test.xpnet:1:1-28:9
              in i : long = p0 i  @ 2:3-39
              out o : long = p1 o  @ 3:3-40
              net
                place p0 i : long  @ /nonexistent/test.xpnet:19:5-34
                place p1 o : long  @ /nonexistent/test.xpnet:20:5-34
                place p2 boxes : long_box  @ /nonexistent/test.xpnet:21:5-42
                transition t0 copy priority 0 -> f0 id_long  @ /nonexistent/test.xpnet:22:5-26:18
                  in x <- p0 i  @ 24:7-39
                  out y -> p1 o  @ 25:7-40

            code c0 "expression of copy" : long  @ /nonexistent/test.xpnet:11:21-33
              slot 0 port x : long
              slot 1 port y : long
              reads x
              0  load        x  @ 11:29-33
              1  dup  @ 11:21-33
              2  store       y  @ 11:21-33
        "#]],
    );
    check_diags(
        r#"<defun name="top"><net>
  <template name="t"><template-parameter type="T"/><template-parameter type="T"/><defun><in name="x" type="T"/><expression/></defun></template>
  <specialize name="s" use="t"><type-map replace="T" with="long"/><type-map replace="T" with="int"/></specialize>
  <specialize name="u" use="nosuch"/>
  <specialize name="v" use="t"/>
  <place name="p" type="long"/>
  <transition name="a"><use name="s"/><connect-in port="x" place="p"/></transition>
  <transition name="b"><use name="v"/><connect-in port="x" place="p"/></transition>
  <transition name="c"><use name="w"/></transition>
</net></defun>"#,
        expect![[r#"
            warning duplicate-template-parameter @2:78: duplicate template parameter `T`
            warning unknown-type @2:108: unknown type `T`
            warning type-map-duplicate @3:86: type `T` is mapped twice
            unknown_template @4:29: unknown template `nosuch`
            unknown_function @9:35: unknown function `w`
        "#]],
    );
}

#[test]
fn library_templates() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let options = Options {
        search_paths: vec![lib()],
        ..Options::default()
    };
    let out = compile_source(
        Path::new("/nonexistent/t.xpnet"),
        r#"<defun name="top">
  <in name="n" type="long" place="n"/>
  <out name="a" type="long" place="a"/>
  <out name="b" type="long" place="b"/>
  <net>
    <include-template href="dup.xml"/>
    <specialize name="dup_long" use="dup"><type-map replace="T" with="long"/></specialize>
    <place name="n" type="long"/><place name="a" type="long"/><place name="b" type="long"/>
    <transition name="d" inline="true"><use name="dup_long"/>
      <connect-in port="in" place="n"/><connect-out port="one" place="a"/><connect-out port="two" place="b"/>
    </transition>
  </net>
</defun>"#,
        &options,
    );
    expect![[r#"
        bundle root f1 top
        file 0 "/nonexistent/t.xpnet" lines 0 19 58 98 138 146 185 276 368 430 540 558 567
        file 1 "<corpus>/share/xml/lib/dup.xml" lines 0 71 122 123 145 178 188 218 252 317 337 355 394 435 476 477 487 520 553 586 587 617 633 667 702 737 760 786 812 836 853 894 936 978 998 1009 1020 1032

        function f0  @ <corpus>/share/xml/lib/dup.xml:22:9-30:17
          in x : long  @ 23:11-34
          out a : long  @ 24:11-35
          out b : long  @ 25:11-35
          expression c0

        function f1 top  @ /nonexistent/t.xpnet:1:1-13:9
          in n : long = p0 n  @ 2:3-39
          out a : long = p1 a  @ 3:3-40
          out b : long = p2 b  @ 4:3-40
          net
            place p0 n : long  @ /nonexistent/t.xpnet:8:5-34
            place p1 a : long  @ /nonexistent/t.xpnet:8:34-63
            place p2 b : long  @ /nonexistent/t.xpnet:8:63-92
            transition t0 _d_dup priority 0 -> f0  @ <corpus>/share/xml/lib/dup.xml:21:7-34:20
              in x <- p0 n  @ 31:9-41
              out a -> p1 a  @ 32:9-42
              out b -> p2 b  @ 33:9-42

        code c0 "expression of dup" : long  @ <corpus>/share/xml/lib/dup.xml:27:13-28:25
          slot 0 port x : long
          slot 1 port a : long
          slot 2 port b : long
          reads x
          0  load        x  @ 27:21-25
          1  store       a  @ 27:13-25
          2  load        x  @ 28:21-25
          3  dup  @ 28:13-25
          4  store       b  @ 28:13-25
    "#]]
    .assert_eq(&without_corpus_dir(&render(&out)));
}

const CHILD: &str = r#"<defun name="top">
  <in name="i" type="long" place="i"/>
  <out name="o" type="long" place="o"/>
  <net>
    <place name="i" type="long"/>
    <place name="o" type="long"/>
    <place name="v" type="long"/>
    <transition name="sub" inline="true">
      <defun>
        <in name="x" type="long" place="x"/>
        <out name="y" type="long" place="y"/>
        <tunnel name="v" type="long" place="v"/>
        <net>
          <place name="x" type="long"/>
          <place name="y" type="long"/>
          <place name="mid" type="long"><token><value>7L</value></token></place>
          <place name="v" type="long" virtual="true"/>
          <transition name="step">
            <defun><in name="x" type="long"/><out name="m" type="long"/><expression>${m} := ${x}</expression></defun>
            <connect-in port="x" place="x"/><connect-out port="m" place="mid"/>
          </transition>
          <transition name="fin">
            <defun><in name="m" type="long"/><out name="y" type="long"/><expression>${y} := ${m}</expression></defun>
            <connect-in port="m" place="mid"/><connect-out port="y" place="y"/>
          </transition>
        </net>
      </defun>
      <connect-in port="x" place="i"/>
      <connect-out port="y" place="o"/>
      <place-map virtual="v" real="v"/>
    </transition>
  </net>
</defun>"#;

#[test]
fn inlining_with_prefixes() {
    check(
        CHILD,
        expect![[r#"
            warning independent-place @7:5: place `v` is connected to nothing
            ---
            bundle root f2 top
            file 0 "/nonexistent/test.xpnet" lines 0 19 58 98 106 140 174 208 250 264 309 355 404 418 458 498 579 634 669 787 867 891 925 1043 1123 1147 1162 1177 1216 1256 1296 1314 1323

            function f0  @ /nonexistent/test.xpnet:19:13-118
              in x : long  @ 19:20-46
              out m : long  @ 19:46-73
              expression c0

            function f1  @ /nonexistent/test.xpnet:23:13-118
              in m : long  @ 23:20-46
              out y : long  @ 23:46-73
              expression c1

            function f2 top  @ /nonexistent/test.xpnet:1:1-33:9
              in i : long = p0 i  @ 2:3-39
              out o : long = p1 o  @ 3:3-40
              net
                place p0 i : long  @ /nonexistent/test.xpnet:5:5-34
                place p1 o : long  @ /nonexistent/test.xpnet:6:5-34
                place p2 v : long  @ /nonexistent/test.xpnet:7:5-34
                place p3 _sub_mid : long  @ /nonexistent/test.xpnet:16:11-81
                  token 7L
                transition t0 _sub_step priority 0 -> f0  @ /nonexistent/test.xpnet:18:11-21:24
                  in x <- p0 i  @ 20:13-45
                  out m -> p3 _sub_mid  @ 20:45-80
                transition t1 _sub_fin priority 0 -> f1  @ /nonexistent/test.xpnet:22:11-25:24
                  in m <- p3 _sub_mid  @ 24:13-47
                  out y -> p1 o  @ 24:47-80

            code c0 "expression of step" : long  @ /nonexistent/test.xpnet:19:85-97
              slot 0 port x : long
              slot 1 port m : long
              reads x
              0  load        x  @ 19:93-97
              1  dup  @ 19:85-97
              2  store       m  @ 19:85-97

            code c1 "expression of fin" : long  @ /nonexistent/test.xpnet:23:85-97
              slot 0 port m : long
              slot 1 port y : long
              reads m
              0  load        m  @ 23:93-97
              1  dup  @ 23:85-97
              2  store       y  @ 23:85-97
        "#]],
    );
}

#[test]
fn child_nets_when_not_inlined() {
    check_with(
        CHILD,
        &Options {
            no_inline: true,
            synthesize_virtual_places: true,
            ..Options::default()
        },
        expect![[r#"
            bundle root f3 top
            file 0 "/nonexistent/test.xpnet" lines 0 19 58 98 106 140 174 208 250 264 309 355 404 418 458 498 579 634 669 787 867 891 925 1043 1123 1147 1162 1177 1216 1256 1296 1314 1323

            function f0  @ /nonexistent/test.xpnet:19:13-118
              in x : long  @ 19:20-46
              out m : long  @ 19:46-73
              expression c0

            function f1  @ /nonexistent/test.xpnet:23:13-118
              in m : long  @ 23:20-46
              out y : long  @ 23:46-73
              expression c1

            function f2  @ /nonexistent/test.xpnet:9:7-27:15
              in x : long = p0 x  @ 10:9-45
              out y : long = p1 y  @ 11:9-46
              tunnel v : long = p3 v  @ 12:9-49
              net
                place p0 x : long  @ /nonexistent/test.xpnet:14:11-40
                place p1 y : long  @ /nonexistent/test.xpnet:15:11-40
                place p2 mid : long  @ /nonexistent/test.xpnet:16:11-81
                  token 7L
                place p3 v : long virtual  @ /nonexistent/test.xpnet:17:11-55
                transition t0 step priority 0 -> f0  @ /nonexistent/test.xpnet:18:11-21:24
                  in x <- p0 x  @ 20:13-45
                  out m -> p2 mid  @ 20:45-80
                transition t1 fin priority 0 -> f1  @ /nonexistent/test.xpnet:22:11-25:24
                  in m <- p2 mid  @ 24:13-47
                  out y -> p1 y  @ 24:47-80

            function f3 top  @ /nonexistent/test.xpnet:1:1-33:9
              in i : long = p0 i  @ 2:3-39
              out o : long = p1 o  @ 3:3-40
              net
                place p0 i : long  @ /nonexistent/test.xpnet:5:5-34
                place p1 o : long  @ /nonexistent/test.xpnet:6:5-34
                place p2 v : long  @ /nonexistent/test.xpnet:7:5-34
                transition t0 sub priority 0 -> f2  @ /nonexistent/test.xpnet:8:5-31:18
                  in x <- p0 i  @ 28:7-39
                  out y -> p1 o  @ 29:7-40
                  place-map p3 v -> p2 v

            code c0 "expression of step" : long  @ /nonexistent/test.xpnet:19:85-97
              slot 0 port x : long
              slot 1 port m : long
              reads x
              0  load        x  @ 19:93-97
              1  dup  @ 19:85-97
              2  store       m  @ 19:85-97

            code c1 "expression of fin" : long  @ /nonexistent/test.xpnet:23:85-97
              slot 0 port m : long
              slot 1 port y : long
              reads m
              0  load        m  @ 23:93-97
              1  dup  @ 23:85-97
              2  store       y  @ 23:85-97
        "#]],
    );
    // a priority prevents inlining
    check_diags(
        &CHILD.replace(r#"inline="true""#, r#"inline="true" priority="1""#),
        expect![[r#""#]],
    );
}

#[test]
fn warning_configuration() {
    let xml = r#"<defun name="top"><net>
  <place name="v" type="long" virtual="true"/>
  <transition name="t"><defun><in name="x" type="long"/><expression/></defun></transition>
</net></defun>"#;
    let opts = |settings: &[(&str, bool)], error: bool| Options {
        warnings: crate::WarningConfig {
            settings: settings.iter().map(|(n, b)| (n.to_string(), *b)).collect(),
            all: false,
            error,
        },
        ..Options::default()
    };
    check_with(
        xml,
        &opts(&[("virtual-place-not-tunneled", false)], false),
        expect![[r#"
            warning independent-transition @3:3: transition `t` is connected to no place
            warning port-not-connected @3:21: input port `x` of transition `t` is not connected
            ---
            bundle root f1 top
            file 0 "/nonexistent/test.xpnet" lines 0 24 71 162

            function f0  @ /nonexistent/test.xpnet:3:24-78
              in x : long  @ 3:31-57
              expression c0

            function f1 top  @ /nonexistent/test.xpnet:1:1-4:15
              net
                place p0 v : long virtual  @ /nonexistent/test.xpnet:2:3-47
                transition t0 t priority 0 -> f0  @ /nonexistent/test.xpnet:3:3-91

            code c0 "expression of t" : control  @ /nonexistent/test.xpnet:3:57-57
              slot 0 port x : long
              const 0 []
              0  const       []  @ 3:57-57
        "#]],
    );
    check_with(
        xml,
        &opts(&[("port_not_connected", false)], true),
        expect![[r#"
            virtual-place-not-tunneled @2:3: virtual place `v` is not tunneled
            independent-transition @3:3: transition `t` is connected to no place
        "#]],
    );
    // the scoped property turns a warning off below its defun
    let scoped = r#"<defun name="top">
  <properties name="pnetc"><properties name="warning"><property key="port-not-connected" value="false"/></properties></properties>
  <net><transition name="t"><defun><in name="x" type="long"/><expression/></defun></transition></net></defun>"#;
    check_with(
        scoped,
        &opts(&[], false),
        expect![[r#"
            warning independent-transition @3:8: transition `t` is connected to no place
            ---
            bundle root f1 top
            file 0 "/nonexistent/test.xpnet" lines 0 19 150

            function f0  @ /nonexistent/test.xpnet:3:29-83
              in x : long  @ 3:36-62
              expression c0

            function f1 top  @ /nonexistent/test.xpnet:1:1-3:110
              property pnetc.warning.port-not-connected = "false"
              net
                transition t0 t priority 0 -> f0  @ /nonexistent/test.xpnet:3:8-96

            code c0 "expression of t" : control  @ /nonexistent/test.xpnet:3:62-62
              slot 0 port x : long
              const 0 []
              0  const       []  @ 3:62-62
        "#]],
    );
    assert!(
        crate::WARNINGS
            .iter()
            .any(|(n, on)| *n == "overwrite-function-name-as" && !on)
    );
}

#[test]
fn mutated_inputs_do_not_panic() {
    if pnet_tests::corpus_absent() {
        return;
    }
    // Cut the corpus' bigger nets at many points and make sure diagnostics come back.
    let texts: Vec<String> = [
        "share/xml/lib/sequence.xml",
        "share/doc/example/shared/cleanup_with_number_of_tokens.xpnet",
    ]
    .iter()
    .map(|p| std::fs::read_to_string(corpus().join(p)).unwrap())
    .collect();
    let options = Options {
        search_paths: vec![lib()],
        ..Options::default()
    };
    let mut with_errors = 0;
    for text in &texts {
        for cut in (0..text.len()).step_by(97) {
            let mut t = text[..cut].to_string();
            t.push_str(&text[(cut + 13).min(text.len())..]);
            let out = compile_source(&corpus().join("share/xml/lib/x.xpnet"), &t, &options);
            with_errors += usize::from(out.has_errors());
            assert!(
                out.diagnostics.iter().all(|d| d.code != "internal_error"),
                "{:?}",
                out.diagnostics
            );
        }
    }
    assert!(with_errors > 0);
}

#[test]
fn struct_checks() {
    check_diags(
        r#"<defun name="top">
  <struct name="a"><field name="x" type="long"/><field name="x" type="int"/></struct>
  <struct name="b"><field name="c" type="c"/></struct>
  <struct name="c"><field name="b" type="b"/></struct>
  <struct name="d"><field name="x" type="long"/></struct>
  <struct name="d"><field name="y" type="long"/></struct>
  <struct name="n"><struct name="inner"><field name="v" type="bool"/></struct></struct>
  <in name="p" type="n"/>
  <net>
    <struct name="d"><field name="z" type="string"/></struct>
    <place name="q" type="d"/>
  </net>
</defun>"#,
        expect![[r#"
            duplicate_field @2:62: struct `a` has two fields named `x`
            recursive_struct @3:17: struct `b` contains itself
            struct_redefined @6:17: struct `d` is defined again with different fields
            warning shadowed-struct @10:19: struct `d` shadows a different struct of the same name
            warning independent-place @11:5: place `q` is connected to nothing
        "#]],
    );
}

#[test]
fn responses_eureka_and_place_maps() {
    check_diags(
        &net(
            r#"<place name="p" type="long"/><place name="r" type="long"/>"#,
            r#"<transition name="t">
<defun><in name="x" type="long"/><out name="y" type="long"/><out name="g" type="set"/><out name="h" type="long"/>
<expression>${y} := ${x}; ${g} := Set{}; ${h} := 1L</expression></defun>
<connect-in port="x" place="p"/><connect-response port="y" to="x"/><connect-response port="h" to="nope"/><connect-eureka port="g"/>
</transition>
<transition name="u">
<defun><tunnel name="v" type="long" place="v"/><net><place name="v" type="string" virtual="true"/></net></defun>
<place-map virtual="v" real="r"/><place-map virtual="w" real="nowhere"/>
</transition>"#,
        ),
        expect![[r#"
            warning independent-place @3:30: place `r` is connected to nothing
            unknown_port @7:99: transition `t` has no input port `nope`
            connection_type_mismatch @10:44: port `v` of type `long` is bound to place `v` of type `string`
            connection_type_mismatch @11:1: virtual place `v` of type `string` is mapped to place `r` of type `long`
            unknown_place @11:54: transition `u` has no virtual place `w`
            unknown_place @11:63: unknown place `nowhere`
        "#]],
    );
}

#[test]
fn inline_many_output_ports_warning() {
    let xml = |props: &str| {
        net(
            r#"<place name="i" type="long"/><place name="a" type="long"/><place name="b" type="long"/>"#,
            &format!(
                r#"<transition name="t" inline="true"><defun>{props}<in name="x" type="long" place="x"/><out name="y" type="long" place="x"/><out name="z" type="long" place="x"/>
<net><place name="x" type="long"/></net></defun>
<connect-in port="x" place="i"/><connect-out port="y" place="a"/><connect-out port="z" place="b"/></transition>"#
            ),
        )
    };
    check_diags(
        &xml(""),
        expect![[r#"
        warning independent-place @3:1: place `i` is connected to nothing
        warning independent-place @3:30: place `a` is connected to nothing
        warning independent-place @3:59: place `b` is connected to nothing
        warning inline_many_output_ports @4:19: inlining transition `t` with 2 output ports: its outputs are no longer produced at once
    "#]],
    );
    check_diags(
        &xml(
            r#"<properties name="pnetc"><properties name="warning"><property key="inline_many_output_ports" value="false"/></properties></properties>"#,
        ),
        expect![[r#"
            warning independent-place @3:1: place `i` is connected to nothing
            warning independent-place @3:30: place `a` is connected to nothing
            warning independent-place @3:59: place `b` is connected to nothing
        "#]],
    );
}

/// The database is incremental: a new text for the root re-runs what depends on it.
#[test]
fn edits_are_new_inputs() {
    use salsa::Setter;
    let options = Options::default();
    let mut db = crate::db::Database::default();
    let ws = crate::load(
        &mut db,
        Path::new("/nonexistent/e.xpnet"),
        "<defun><expression/></defun>",
        &options,
    );
    assert!(!crate::output(&db, ws, &options).has_errors());
    let root = ws.files(&db)[0];
    root.set_text(&mut db).to(std::sync::Arc::from(
        "<defun><in name=\"a\" type=\"nosuch\"/><expression/></defun>",
    ));
    let out = crate::output(&db, ws, &options);
    expect![[r#"
        warning unknown-type @1:27: unknown type `nosuch`
    "#]]
    .assert_eq(&render_diags(&out));
}

/// Compiles `xml` (which must have no errors) for a run.
fn bundle_of(xml: &str) -> pnet_bundle::Bundle {
    let out = compile_source(
        Path::new("/nonexistent/test.xpnet"),
        xml,
        &Options::default(),
    );
    match out.bundle.clone() {
        Some(b) => b,
        None => panic!("does not compile:\n{}", render_diags(&out)),
    }
}

fn run_root(
    bundle: &pnet_bundle::Bundle,
    inputs: &[(&str, Vec<pnet_stdlib::Value>)],
) -> Result<Vec<(String, Vec<pnet_stdlib::Value>)>, String> {
    let inputs: Vec<(String, Vec<pnet_stdlib::Value>)> = inputs
        .iter()
        .map(|(n, v)| (n.to_string(), v.clone()))
        .collect();
    pnet_engine::run(bundle, &inputs, &pnet_engine::RunConfig::default())
        .map(|r| r.outputs)
        .map_err(|e| e.to_string())
}

/// A root whose body is a module, an inout port, a condition: the synthetic net, with the
/// defun's span on what is synthetic and the ports' spans on their places.
#[test]
fn a_module_root_is_wrapped_into_a_net() {
    check(
        r#"<defun name="produce">
  <in name="tag" type="unsigned long"/>
  <inout name="block" type="long"/>
  <condition>${tag} :lt: 2UL</condition>
  <module name="m" function="produce (tag, block)"/>
</defun>"#,
        expect![[r#"
            bundle root f1 produce
            file 0 "/nonexistent/test.xpnet" lines 0 23 63 99 140 193

            function f0 produce  @ /nonexistent/test.xpnet:1:1-6:9
              in tag : unsigned long  @ 2:3-40
              inout block : long  @ 3:3-36
              module m "produce (tag, block)" require_function_unloads_without_rest require_module_unloads_without_rest  @ 5:3-53

            function f1 produce  @ /nonexistent/test.xpnet:1:1-6:9
              in tag : unsigned long = p0 tag  @ 2:3-40
              in block : long = p1 block  @ 3:3-36
              out block : long = p2 "block#out"  @ 3:3-36
              net
                place p0 tag : unsigned long  @ /nonexistent/test.xpnet:2:3-40
                place p1 block : long  @ /nonexistent/test.xpnet:3:3-36
                place p2 "block#out" : long  @ /nonexistent/test.xpnet:3:3-36
                transition t0 produce priority 0 -> f0 produce  @ /nonexistent/test.xpnet:1:1-6:9
                  in tag <- p0 tag  @ 2:3-40
                  in block <- p1 block  @ 3:3-36
                  out block -> p2 "block#out"  @ 3:3-36
                  condition c0

            code c0 "condition of produce" : bool  @ /nonexistent/test.xpnet:4:14-29
              slot 0 port tag : unsigned long
              slot 1 port block : long
              const 0 2UL
              reads tag
              0  load        tag  @ 4:14-20
              1  const       2UL  @ 4:26-29
              2  lt.ulong  @ 4:14-29
        "#]],
    );
}

/// Wrapped expression roots run in the engine: once per set of input tokens, inout ports
/// read their inputs and give their results, a root without inputs runs once, the root's
/// conditions hold back calls.
#[test]
fn wrapped_expression_roots_run() {
    use pnet_stdlib::Value;
    let sum = bundle_of(
        r#"<defun name="sum">
  <in name="a" type="long"/>
  <in name="b" type="long"/>
  <out name="s" type="long"/>
  <expression>${s} := ${a} + ${b}</expression>
</defun>"#,
    );
    let out = run_root(
        &sum,
        &[
            ("a", vec![Value::Long(1), Value::Long(1)]),
            ("b", vec![Value::Long(2), Value::Long(2)]),
        ],
    )
    .unwrap();
    assert_eq!(
        out,
        vec![("s".to_string(), vec![Value::Long(3), Value::Long(3)])]
    );

    let inc = bundle_of(
        r#"<defun name="inc">
  <inout name="x" type="long"/>
  <expression>${x} := ${x} + 1L</expression>
</defun>"#,
    );
    let out = run_root(&inc, &[("x", vec![Value::Long(41)])]).unwrap();
    assert_eq!(out, vec![("x".to_string(), vec![Value::Long(42)])]);

    // No inputs: one call, its local variable still works after the renumbering.
    let once = bundle_of(
        r#"<defun name="once">
  <out name="x" type="long"/>
  <out name="y" type="string"/>
  <expression>${t} := 20L; ${x} := ${t} + 1L; ${y} := "done"</expression>
</defun>"#,
    );
    let out = run_root(&once, &[]).unwrap();
    assert_eq!(
        out,
        vec![
            ("x".to_string(), vec![Value::Long(21)]),
            ("y".to_string(), vec![Value::String("done".into())])
        ]
    );

    let cond = bundle_of(
        r#"<defun name="small">
  <in name="a" type="long"/>
  <out name="b" type="long"/>
  <condition>${a} :lt: 10L</condition>
  <expression>${b} := ${a}</expression>
</defun>"#,
    );
    let out = run_root(&cond, &[("a", vec![Value::Long(3), Value::Long(30)])]).unwrap();
    assert_eq!(out, vec![("b".to_string(), vec![Value::Long(3)])]);
}

/// A module root hands out one task per call, with the inputs of the defun's ports, and its
/// outputs land on the wrapper's out ports.
#[test]
fn a_module_root_hands_out_its_call() {
    use pnet_bundle::PortId;
    use pnet_stdlib::Value;
    let b = bundle_of(
        r#"<defun name="hello">
  <in name="in" type="control"/>
  <inout name="n" type="long"/>
  <out name="out" type="string"/>
  <module name="hello_world" function="out say (n)"/>
</defun>"#,
    );
    let mut e = pnet_engine::Engine::new(&b, &pnet_engine::RunConfig::default()).unwrap();
    e.put_inputs(&[
        ("in".to_string(), vec![Value::Control]),
        ("n".to_string(), vec![Value::Long(7)]),
    ])
    .unwrap();
    let task = loop {
        match e.step().unwrap() {
            pnet_engine::Step::Task(t) => break t,
            pnet_engine::Step::Fired => {}
            other => panic!("no task: {other:?}"),
        }
    };
    assert_eq!(task.name, "hello");
    assert_eq!(task.location, "/nonexistent/test.xpnet:1:1");
    let f = b.function(task.function);
    assert_eq!(f.name.as_deref(), Some("hello"));
    let mut inputs = task.inputs.clone();
    inputs.sort_by_key(|(p, _)| *p);
    assert_eq!(
        inputs,
        vec![(PortId(0), Value::Control), (PortId(1), Value::Long(7))]
    );
    e.complete_task(
        task.id,
        vec![
            (PortId(1), Value::Long(8)),
            (PortId(2), Value::String("hi".into())),
        ],
    )
    .unwrap();
    assert!(matches!(e.step().unwrap(), pnet_engine::Step::Done));
    assert_eq!(
        e.result().outputs,
        vec![
            ("n".to_string(), vec![Value::Long(8)]),
            ("out".to_string(), vec![Value::String("hi".into())])
        ]
    );
}

/// The diagnostics with their notes (the suggested fixes), for the checks of GPI-Space's
/// that `xpnet.md` ("More checks GPI-Space makes") lists.
fn check_notes(xml: &str, options: &Options, expect: Expect) {
    let out = compile_source(Path::new("/nonexistent/test.xpnet"), xml, options);
    let mut s = String::new();
    let mut lines = render_diags(&out)
        .lines()
        .map(str::to_string)
        .collect::<Vec<_>>();
    for (d, line) in out.diagnostics.iter().zip(lines.iter_mut()) {
        writeln!(s, "{line}").unwrap();
        for n in &d.notes {
            writeln!(s, "  = {n}").unwrap();
        }
    }
    expect.assert_eq(&s);
}

#[test]
fn memory_only_in_module_defuns() {
    check_notes(
        r#"<defun name="top">
  <in name="n" type="unsigned long"/>
  <out name="o" type="unsigned long"/>
  <memory-buffer name="buf"><size>${n}</size></memory-buffer>
  <memory-get><global>List()</global><local>List()</local></memory-get>
  <expression>${o} := ${n}</expression>
</defun>"#,
        &Options::default(),
        expect![[r#"
            memory_buffer_for_non_module @4:24: memory buffer `buf` in `top`, whose body is an expression
              = help: memory buffers are for module calls: remove it or make the body a `module`
            memory_transfer_for_non_module @5:3: memory transfer in `top`, whose body is an expression
              = help: memory transfers are for module calls: remove it or make the body a `module`
        "#]],
    );
}

#[test]
fn shared_places_need_a_shared_sink_cleanup_place() {
    check_notes(
        &net(
            r#"<place name="a" type="shared_gone"/>
<place name="b" type="shared_plain"/><place name="plain" type="long"/>
<place name="c" type="shared_sink"/><place name="sink" type="long" shared_sink="true"/>"#,
            "",
        ),
        &Options::default(),
        expect![[r#"
            warning independent-place @3:1: place `a` is connected to nothing
            shared_cleanup_place_missing @3:23: place `a` has type `shared_gone`, but there is no cleanup place `gone` in its net
              = help: add `<place name="gone" type="..." shared_sink="true"/>` to this net
            warning independent-place @4:1: place `b` is connected to nothing
            shared_cleanup_place_not_shared_sink @4:23: the cleanup place `plain` of place `b` is not a `shared_sink`
              = help: add `shared_sink="true"` to place `plain`
            warning independent-place @4:38: place `plain` is connected to nothing
            warning independent-place @5:1: place `c` is connected to nothing
        "#]],
    );
}

#[test]
fn passthrough_shared_excludes_produce_and_consume() {
    check_notes(
        &net(
            r#"<place name="p" type="long"/>"#,
            r#"<transition name="t" passthrough_shared="true" produce_shared="true">
<defun><in name="x" type="long"/><expression/></defun>
<connect-in port="x" place="p"/>
</transition>
<transition name="u" passthrough_shared="true" consume_shared="true">
<defun><in name="x" type="long"/><expression/></defun>
<connect-in port="x" place="p"/>
</transition>
<transition name="v" passthrough_shared="true">
<defun><in name="x" type="long"/><expression/></defun>
<connect-in port="x" place="p"/>
</transition>"#,
        ),
        &Options::default(),
        expect![[r#"
            passthrough_shared_with_produce_or_consume @4:2: transition `t` is `passthrough_shared` and `produce_shared`
              = help: `passthrough_shared` excludes `produce_shared` and `consume_shared`: remove `produce_shared` or `passthrough_shared`
            passthrough_shared_with_produce_or_consume @8:2: transition `u` is `passthrough_shared` and `consume_shared`
              = help: `passthrough_shared` excludes `produce_shared` and `consume_shared`: remove `consume_shared` or `passthrough_shared`
        "#]],
    );
}

#[test]
fn modules_and_preferences_rules() {
    let body = |modules: &str| {
        format!(
            r#"<defun name="top">
<in name="x" type="long"/>
{modules}
</defun>"#
        )
    };
    let m = |target: &str, group: &str| {
        format!(r#"<module name="m" function="f (x)"{target}>{group}<code>;</code></module>"#)
    };
    let mut s = String::new();
    for (what, text) in [
        (
            "good",
            format!(
                "<modules><preferences><target>a</target><target>b</target></preferences>{}{}</modules>",
                m(r#" target="a""#, ""),
                m(r#" target="b""#, "")
            ),
        ),
        (
            "no preferences",
            format!("<modules>{}</modules>", m(r#" target="a""#, "")),
        ),
        (
            "duplicate and invalid preferences",
            format!(
                "<modules><preferences><target>a</target><target>a</target><target>1x</target></preferences>{}</modules>",
                m(r#" target="a""#, "")
            ),
        ),
        (
            "module without target, unknown target, two per target",
            format!(
                "<modules><preferences><target>a</target></preferences>{}{}{}{}</modules>",
                m("", ""),
                m(r#" target="z""#, ""),
                m(r#" target="a""#, ""),
                m(r#" target="a""#, "")
            ),
        ),
        (
            "different eureka groups",
            format!(
                "<modules><preferences><target>a</target><target>b</target></preferences>{}{}</modules>",
                m(r#" target="a""#, "<eureka-group>\"g\"</eureka-group>"),
                m(r#" target="b""#, "")
            ),
        ),
    ] {
        let out = compile_source(
            Path::new("/nonexistent/test.xpnet"),
            &body(&text),
            &Options::default(),
        );
        writeln!(s, "== {what}").unwrap();
        for (d, line) in out.diagnostics.iter().zip(render_diags(&out).lines()) {
            if d.is_error() {
                writeln!(s, "{line}").unwrap();
                for n in &d.notes {
                    writeln!(s, "  = {n}").unwrap();
                }
            }
        }
    }
    expect![[r#"
        == good
        == no preferences
        missing_preferences @3:1: `modules` with targets need `preferences` that list at least one target
          = help: add `<preferences><target>a</target>...</preferences>`
        == duplicate and invalid preferences
        duplicate_preference @3:49: target `a` is listed twice in the preferences
          = help: remove one of the two
        invalid_target_name @3:67: preference `1x` is not a valid target name
          = help: a target name matches `[A-Za-z_][A-Za-z0-9_]*`
        == module without target, unknown target, two per target
        module_without_target @3:56: module `m` in `modules` has no target
          = help: add `target="..."` naming one of the preferences
        target_not_in_preferences @3:154: the target `z` of module `m` is not in the preferences
          = help: add `<target>z</target>` to the preferences
        duplicate_module_for_target @3:290: two modules for target `a`
        == different eureka groups
        mismatching_eureka_group @3:174: the modules of one `modules` have different eureka groups
          = help: give every module the same `eureka-group`, or none
    "#]].assert_eq(&s);
}

#[test]
fn struct_redefined_with_other_fields_is_an_error() {
    check_notes(
        r#"<defun name="top">
  <struct name="d"><field name="x" type="long"/></struct>
  <struct name="d"><field name="y" type="long"/></struct>
  <struct name="e"><field name="x" type="long"/></struct>
  <struct name="e"><field name="x" type="long"/></struct>
  <in name="p" type="d"/>
  <in name="q" type="e"/>
  <expression/>
</defun>"#,
        &Options::default(),
        expect![[r#"
            struct_redefined @3:17: struct `d` is defined again with different fields
              = help: rename one of the two structs `d`, or give them the same fields
            warning struct-redefined @5:17: struct `e` is defined again, with the same fields
        "#]],
    );
}

#[test]
fn unconnected_shared_sink_is_not_independent() {
    check_diags(
        &net(
            r#"<place name="s" type="long" shared_sink="true"/><place name="p" type="long"/>"#,
            "",
        ),
        expect![[r#"
            warning independent-place @3:49: place `p` is connected to nothing
        "#]],
    );
}

#[test]
fn duplicate_external_function_is_an_error_only_when_building_modules() {
    let xml = net(
        r#"<place name="p" type="long"/>"#,
        r#"<transition name="a"><defun><in name="x" type="long"/><module name="m" function="f (x)"><code>one;</code></module></defun><connect-in port="x" place="p"/></transition>
<transition name="b"><defun><in name="x" type="long"/><module name="m" function="f (x)"><code>two;</code></module></defun><connect-in port="x" place="p"/></transition>"#,
    );
    check_notes(
        &xml,
        &Options::default(),
        expect![[r#"
        warning duplicate-external-function @5:56: the external function `m.f` is defined twice, differently
          = an error with `--build-modules`, where module code is generated
    "#]],
    );
    check_notes(
        &xml,
        &Options {
            build_modules: true,
            ..Options::default()
        },
        expect![[r#"
            duplicate_external_function @5:56: the external function `m.f` is defined twice, differently
        "#]],
    );
}

/// Duplicate module functions are found once the workspace is elaborated (a transition's
/// elaboration does not see the transitions before it): each repeat is compared with the
/// first definition met, also from inside a child net, and a scoped setting still applies.
#[test]
fn duplicate_external_functions_are_compared_with_the_first() {
    let module = |code: &str| {
        format!(
            r#"<defun><in name="x" type="long"/><module name="m" function="f (x)"><code>{code}</code></module></defun>"#
        )
    };
    let xml = net(
        r#"<place name="p" type="long"/>"#,
        &format!(
            r#"<transition name="a">{}<connect-in port="x" place="p"/></transition>
<transition name="b"><defun><in name="x" type="long"/><net><place name="q" type="long"/><transition name="c">{}<connect-in port="x" place="q"/></transition></net></defun><connect-in port="x" place="p"/></transition>
<transition name="d">{}<connect-in port="x" place="p"/></transition>
<transition name="e">{}<connect-in port="x" place="p"/></transition>"#,
            module("one;"),
            module("two;"),
            module("one;"),
            module("one;").replace(
                "<defun>",
                r#"<defun><properties name="pnetc"><properties name="warning"><property key="duplicate-external-function">false</property></properties></properties>"#
            ),
        ),
    );
    let out = compile_source(
        Path::new("/nonexistent/test.xpnet"),
        &xml,
        &Options::default(),
    );
    let first = xml.find("<module").unwrap() + 1;
    let got: Vec<(usize, &str, Vec<usize>)> = out
        .diagnostics
        .iter()
        .filter(|d| d.code == "duplicate-external-function")
        .map(|d| {
            let at = d.primary_span().unwrap().start as usize;
            let line = xml[..at].lines().count();
            let secondary = d
                .labels
                .iter()
                .filter(|l| !l.primary)
                .map(|l| l.span.start as usize)
                .collect();
            (line, d.message.as_str(), secondary)
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                5,
                "the external function `m.f` is defined twice, differently",
                vec![first]
            ),
            (
                6,
                "the external function `m.f` is defined twice",
                vec![first]
            ),
        ]
    );
}

#[test]
fn a_memory_buffer_may_be_the_module_result() {
    // GPI-Space accepts it: the module returns a pointer into buffer `b`.
    check_diags(
        r#"<defun name="top">
  <in name="k" type="long"/>
  <memory-buffer name="b"><size>4UL</size></memory-buffer>
  <module name="m" function="b at (k, b)"><code>return b;</code></module>
</defun>"#,
        expect![[r#""#]],
    );
}

/// Unknown names come with the nearest known one (issue 22, item 4), and a connection to an
/// unknown place reports only that place: its port is not also "not connected" (item 6).
#[test]
fn unknown_names_suggest_the_nearest() {
    check_notes(
        r#"<defun name="top">
  <struct name="range"><field name="lo" type="long"/><field name="hi" type="long"/></struct>
  <in name="limit" type="long" place="limit"/>
  <out name="res" type="long" place="rse"/>
  <net>
    <place name="limit" type="long"/>
    <place name="res" type="rnage"/>
    <transition name="t">
      <defun>
        <in name="x" type="long"/>
        <out name="y" type="long"/>
        <expression>${y} := ${x}</expression>
      </defun>
      <connect-in port="xx" place="limit"/>
      <connect-out port="y" place="rse"/>
    </transition>
    <transition name="u">
      <use name="identty"/>
    </transition>
    <template name="identity">
      <template-parameter type="T"/>
      <defun><in name="x" type="T"/><out name="y" type="T"/><expression>${y} := ${x}</expression></defun>
    </template>
    <specialize name="id_long" use="identiy">
      <type-map replace="T" with="long"/>
    </specialize>
  </net>
</defun>"#,
        &Options::default(),
        expect![[r#"
            unknown_place @4:38: port `res` is bound to the unknown place `rse`
              = help: did you mean `res`?
            warning unknown-type @7:29: unknown type `rnage`
              = the type is treated as opaque: any value is accepted
              = help: did you mean `range`?
            unknown_port @14:25: transition `t` has no port `xx`
              = help: did you mean `x`?
            unknown_place @15:36: unknown place `rse`
              = help: did you mean `res`?
            unknown_function @18:18: unknown function `identty`
              = help: did you mean `identity`?
            unknown_template @24:37: unknown template `identiy`
              = help: did you mean `identity`?
        "#]],
    );
}

/// The ports of a module's function description get the nearest name too.
#[test]
fn unknown_ports_of_a_function_description_suggest_the_nearest() {
    check_notes(
        r#"<defun name="top">
  <in name="count" type="long"/>
  <out name="total" type="long"/>
  <module name="m" function="totl f (cuont)"/>
</defun>"#,
        &Options::default(),
        expect![[r#"
            unknown_port_in_function_description @4:30: unknown return port `totl` in the description of function `m.f`
              = help: did you mean `total`?
            unknown_port_in_function_description @4:30: unknown argument port `cuont` in the description of function `m.f`
              = help: did you mean `count`?
        "#]],
    );
}
