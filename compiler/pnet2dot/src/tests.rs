//! Snapshot tests of the DOT output (`UPDATE_EXPECT=1 cargo test -p pnet2dot` refreshes them).

use std::path::Path;

use expect_test::{Expect, expect};

use super::*;

/// Compiles `xml`, draws it with `options` (and `trace`), returns the DOT and the warnings.
fn draw(xml: &str, options: &Options, trace: Option<&Trace>) -> String {
    let out = compile(xml);
    let errors: Vec<String> = out
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.message.clone())
        .collect();
    assert!(
        errors.is_empty(),
        "the test net does not compile: {errors:?}"
    );
    let bundle = out.bundle.expect("a bundle");
    let sources = Sources::new(out.files.iter().map(|f| Some(f.text.to_string())).collect());
    let r = render(&bundle, &sources, options, trace);
    let mut s = r.dot;
    for w in r.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

/// Compiles `xml`; transitions with a place-map stay child nets (`--synthesize-virtual-places`).
fn compile(xml: &str) -> pnet_sema::Output {
    let options = pnet_sema::Options {
        synthesize_virtual_places: true,
        ..pnet_sema::Options::default()
    };
    pnet_sema::compile_source(Path::new("/nonexistent/test.xpnet"), xml, &options)
}

fn check(xml: &str, options: &Options, expect: Expect) {
    expect.assert_eq(&draw(xml, options, None));
}

const EXPRESSION_NET: &str = r#"<defun name="inc">
  <in name="x" type="long" place="x"/>
  <out name="y" type="long" place="y"/>
  <net>
    <place name="x" type="long"/>
    <place name="y" type="long"/>
    <place name="s" type="string">
      <token><value>"a \"quoted\" {b} &lt;c&gt; \\ d"</value></token>
      <token><value>""</value></token>
    </place>
    <transition name="inc" priority="3">
      <defun>
        <in name="x" type="long"/>
        <out name="y" type="long"/>
        <expression>${y} := ${x} + 1L</expression>
        <condition>${x} :lt: 10L</condition>
      </defun>
      <condition>${x} &gt;= 0L</condition>
      <connect-in port="x" place="x"/>
      <connect-out port="y" place="y"/>
    </transition>
    <transition name="drop">
      <defun>
        <in name="s" type="string"/>
        <expression/>
      </defun>
      <connect-in port="s" place="s"/>
    </transition>
  </net>
</defun>"#;

#[test]
fn expression_net() {
    check(
        EXPRESSION_NET,
        &Options::default(),
        expect![[r#"
            digraph "inc" {
              graph [rankdir=LR, fontname="Helvetica", labelloc=t, label="inc"];
              node [fontname="Helvetica", fontsize=11];
              edge [fontname="Helvetica", fontsize=9];
              "n0_p0" [shape=ellipse, label="x"];
              "n0_p1" [shape=ellipse, label="y"];
              "n0_p2" [shape=ellipse, label="s"];
              "n0_port0" [shape=cds, fontsize=9, height=0.3, label="in x"];
              "n0_port0" -> "n0_p0" [color="gray60", arrowsize=0.6, dir=forward];
              "n0_port1" [shape=cds, fontsize=9, height=0.3, label="out y"];
              "n0_p1" -> "n0_port1" [color="gray60", arrowsize=0.6, dir=forward];
              "n0_t0" [shape=box, style="rounded", label="inc\nif ${x} :lt: 10L && ${x} >= 0L"];
              "n0_p0" -> "n0_t0" [arrowhead=normal, label="x"];
              "n0_t0" -> "n0_p1" [arrowhead=vee, label="y"];
              "n0_t1" [shape=box, style="rounded", label="drop"];
              "n0_p2" -> "n0_t1" [arrowhead=normal, label="s"];
            }
        "#]],
    );
}

#[test]
fn expression_net_with_signatures_tokens_priorities() {
    let options = Options {
        signature: true,
        token: true,
        priority: true,
        ..Options::default()
    };
    check(
        EXPRESSION_NET,
        &options,
        expect![[r#"
        digraph "inc" {
          graph [rankdir=LR, fontname="Helvetica", labelloc=t, label="inc"];
          node [fontname="Helvetica", fontsize=11];
          edge [fontname="Helvetica", fontsize=9];
          "n0_p0" [shape=ellipse, label="x\n: long"];
          "n0_p1" [shape=ellipse, label="y\n: long"];
          "n0_p2" [shape=ellipse, label="s\n: string\n\"a \\\"quoted\\\" {b} <c> \\\\ d\"\n\"\""];
          "n0_port0" [shape=cds, fontsize=9, height=0.3, label="in x\n: long"];
          "n0_port0" -> "n0_p0" [color="gray60", arrowsize=0.6, dir=forward];
          "n0_port1" [shape=cds, fontsize=9, height=0.3, label="out y\n: long"];
          "n0_p1" -> "n0_port1" [color="gray60", arrowsize=0.6, dir=forward];
          "n0_t0" [shape=box, style="rounded", label="inc\nif ${x} :lt: 10L && ${x} >= 0L\npriority 3"];
          "n0_p0" -> "n0_t0" [arrowhead=normal, label="x : long"];
          "n0_t0" -> "n0_p1" [arrowhead=vee, label="y : long"];
          "n0_t1" [shape=box, style="rounded", label="drop\npriority 0"];
          "n0_p2" -> "n0_t1" [arrowhead=normal, label="s : string"];
        }
    "#]],
    );
}

const ALL_CONNECTIONS: &str = r#"<defun name="kinds">
  <net>
    <struct name="job">
      <field name="value" type="unsigned long"/>
      <field name="id" type="string"/>
    </struct>
    <place name="a" type="long"/>
    <place name="r" type="long"/>
    <place name="c" type="long"/>
    <place name="many" type="long"/>
    <place name="count" type="long"/>
    <place name="state" type="unsigned long"/>
    <place name="jobs" type="job" put_token="true"/>
    <place name="gen" type="long" generator="true"/>
    <transition name="t">
      <defun>
        <in name="a" type="long"/>
        <in name="r" type="long"/>
        <in name="n" type="unsigned long"/>
        <out name="c" type="long"/>
        <out name="l" type="list"/>
        <out name="e" type="set"/>
        <expression>${c} := ${a} + ${r}; ${l} := List (1L, 2L); ${e} := Set {}</expression>
      </defun>
      <connect-in port="a" place="a"/>
      <connect-read port="r" place="r"/>
      <connect-number-of-tokens port="n" place="count"/>
      <connect-out port="c" place="c"/>
      <connect-out-many port="l" place="many"/>
      <connect-eureka port="e"/>
    </transition>
    <transition name="respond">
      <defun>
        <inout name="state" type="unsigned long"/>
        <in name="job" type="job"/>
        <out name="response" type="unsigned long"/>
        <module name="m" function="respond (state, job, response)"/>
      </defun>
      <connect-inout port="state" place="state"/>
      <connect-in port="job" place="jobs"/>
      <connect-response port="response" to="job"/>
    </transition>
  </net>
</defun>"#;

#[test]
fn all_connection_kinds() {
    check(
        ALL_CONNECTIONS,
        &Options::default(),
        expect![[r#"
        digraph "kinds" {
          graph [rankdir=LR, fontname="Helvetica", labelloc=t, label="kinds"];
          node [fontname="Helvetica", fontsize=11];
          edge [fontname="Helvetica", fontsize=9];
          "n0_p0" [shape=ellipse, label="a"];
          "n0_p1" [shape=ellipse, label="r"];
          "n0_p2" [shape=ellipse, label="c"];
          "n0_p3" [shape=ellipse, label="many"];
          "n0_p4" [shape=ellipse, label="count"];
          "n0_p5" [shape=ellipse, label="state"];
          "n0_p6" [shape=ellipse, label="jobs\n[put_token]", peripheries=2];
          "n0_p7" [shape=ellipse, label="gen\n[generator]", peripheries=2];
          "n0_t0" [shape=box, style="rounded", label="t\neureka e"];
          "n0_p0" -> "n0_t0" [arrowhead=normal, label="a"];
          "n0_p1" -> "n0_t0" [style=dashed, arrowhead=normal, label="r"];
          "n0_p4" -> "n0_t0" [style=dotted, arrowhead=odot, label="n"];
          "n0_t0" -> "n0_p2" [arrowhead=vee, label="c"];
          "n0_t0" -> "n0_p3" [color="black:invis:black", arrowhead=vee, label="l*"];
          "n0_t1" [shape=box, style="filled", label="respond\nmodule m.respond", fillcolor="lightsteelblue1"];
          "n0_p5" -> "n0_t1" [dir=both, arrowhead=normal, arrowtail=vee, label="state"];
          "n0_p6" -> "n0_t1" [arrowhead=normal, label="job"];
          "n0_t1" -> "n0_p6" [style=dashed, color=purple, fontcolor=purple, arrowhead=vee, label="response response to job"];
        }
    "#]],
    );
}

#[test]
fn full_signatures_spell_out_structs() {
    let dot = draw(
        ALL_CONNECTIONS,
        &Options {
            full_signatures: true,
            ..Options::default()
        },
        None,
    );
    assert!(
        dot.contains(r#": job {value: unsigned long, id: string}"#),
        "{dot}"
    );
    let dot = draw(
        ALL_CONNECTIONS,
        &Options {
            signature: true,
            ..Options::default()
        },
        None,
    );
    assert!(dot.contains(r#"jobs\n: job\n[put_token]"#), "{dot}");
}

const CHILD_NET: &str = r#"<defun name="outer">
  <in name="i" type="long" place="i"/>
  <out name="o" type="long" place="o"/>
  <net>
    <place name="i" type="long"/>
    <place name="o" type="long"/>
    <place name="log" type="long"/>
    <transition name="sub">
      <defun name="inner">
        <in name="x" type="long" place="x"/>
        <out name="y" type="long" place="y"/>
        <tunnel name="w" type="long" place="w"/>
        <net>
          <place name="x" type="long"/>
          <place name="y" type="long"/>
          <place name="w" type="long" virtual="true"/>
          <transition name="step">
            <defun>
              <in name="x" type="long"/>
              <out name="y" type="long"/>
              <out name="w" type="long"/>
              <expression>${y} := ${x}; ${w} := ${x}</expression>
            </defun>
            <connect-in port="x" place="x"/>
            <connect-out port="y" place="y"/>
            <connect-out port="w" place="w"/>
          </transition>
        </net>
      </defun>
      <place-map virtual="w" real="log"/>
      <connect-in port="x" place="i"/>
      <connect-out port="y" place="o"/>
    </transition>
  </net>
</defun>"#;

#[test]
fn child_net_is_a_cluster() {
    check(
        CHILD_NET,
        &Options::default(),
        expect![[r#"
        digraph "outer" {
          graph [rankdir=LR, fontname="Helvetica", labelloc=t, label="outer"];
          node [fontname="Helvetica", fontsize=11];
          edge [fontname="Helvetica", fontsize=9];
          "n0_p0" [shape=ellipse, label="i"];
          "n0_p1" [shape=ellipse, label="o"];
          "n0_p2" [shape=ellipse, label="log"];
          "n0_port0" [shape=cds, fontsize=9, height=0.3, label="in i"];
          "n0_port0" -> "n0_p0" [color="gray60", arrowsize=0.6, dir=forward];
          "n0_port1" [shape=cds, fontsize=9, height=0.3, label="out o"];
          "n0_p1" -> "n0_port1" [color="gray60", arrowsize=0.6, dir=forward];
          subgraph "cluster_n1" {
            graph [style=rounded, labeljust=l, label="sub\nnet inner", color="gray40"];
            "n1_p0" [shape=ellipse, label="x"];
            "n1_p1" [shape=ellipse, label="y"];
            "n1_port0" [shape=cds, fontsize=9, height=0.3, label="in x"];
            "n1_port0" -> "n1_p0" [color="gray60", arrowsize=0.6, dir=forward];
            "n1_port1" [shape=cds, fontsize=9, height=0.3, label="out y"];
            "n1_p1" -> "n1_port1" [color="gray60", arrowsize=0.6, dir=forward];
            "n1_t0" [shape=box, style="rounded", label="step"];
            "n1_p0" -> "n1_t0" [arrowhead=normal, label="x"];
            "n1_t0" -> "n1_p1" [arrowhead=vee, label="y"];
          }
          "n0_p0" -> "n1_port0" [arrowhead=normal, label="x"];
          "n1_port1" -> "n0_p1" [arrowhead=vee, label="y"];
        }
    "#]],
    );
}

#[test]
fn child_net_with_tunnels() {
    check(
        CHILD_NET,
        &Options {
            tunnel_connection: true,
            ..Options::default()
        },
        expect![[r#"
        digraph "outer" {
          graph [rankdir=LR, fontname="Helvetica", labelloc=t, label="outer"];
          node [fontname="Helvetica", fontsize=11];
          edge [fontname="Helvetica", fontsize=9];
          "n0_p0" [shape=ellipse, label="i"];
          "n0_p1" [shape=ellipse, label="o"];
          "n0_p2" [shape=ellipse, label="log"];
          "n0_port0" [shape=cds, fontsize=9, height=0.3, label="in i"];
          "n0_port0" -> "n0_p0" [color="gray60", arrowsize=0.6, dir=forward];
          "n0_port1" [shape=cds, fontsize=9, height=0.3, label="out o"];
          "n0_p1" -> "n0_port1" [color="gray60", arrowsize=0.6, dir=forward];
          subgraph "cluster_n1" {
            graph [style=rounded, labeljust=l, label="sub\nnet inner", color="gray40"];
            "n1_p0" [shape=ellipse, label="x"];
            "n1_p1" [shape=ellipse, label="y"];
            "n1_p2" [shape=ellipse, label="w\n[virtual]", style=dashed];
            "n1_port0" [shape=cds, fontsize=9, height=0.3, label="in x"];
            "n1_port0" -> "n1_p0" [color="gray60", arrowsize=0.6, dir=forward];
            "n1_port1" [shape=cds, fontsize=9, height=0.3, label="out y"];
            "n1_p1" -> "n1_port1" [color="gray60", arrowsize=0.6, dir=forward];
            "n1_t0" [shape=box, style="rounded", label="step"];
            "n1_p0" -> "n1_t0" [arrowhead=normal, label="x"];
            "n1_t0" -> "n1_p1" [arrowhead=vee, label="y"];
            "n1_t0" -> "n1_p2" [arrowhead=vee, label="w"];
          }
          "n0_p0" -> "n1_port0" [arrowhead=normal, label="x"];
          "n1_port1" -> "n0_p1" [arrowhead=vee, label="y"];
          "n0_p2" -> "n1_p2" [style="dotted,bold", dir=none, color="gray30", label="tunnel"];
        }
    "#]],
    );
}

#[test]
fn trace_highlight() {
    let trace = parse_trace(
        r#"{"format": "pnet-trace", "version": 1, "net": "x", "kind": "deadlock",
            "transitions": ["t", "respond", "t", "nope"],
            "steps": [], "loop": ["respond"]}"#,
    )
    .unwrap();
    expect![[r#"
        digraph "kinds" {
          graph [rankdir=LR, fontname="Helvetica", labelloc=t, label="kinds\ntrace (deadlock): 4 steps, then a loop of 1"];
          node [fontname="Helvetica", fontsize=11];
          edge [fontname="Helvetica", fontsize=9];
          "n0_p0" [shape=ellipse, label="a"];
          "n0_p1" [shape=ellipse, label="r"];
          "n0_p2" [shape=ellipse, label="c"];
          "n0_p3" [shape=ellipse, label="many"];
          "n0_p4" [shape=ellipse, label="count"];
          "n0_p5" [shape=ellipse, label="state"];
          "n0_p6" [shape=ellipse, label="jobs\n[put_token]", peripheries=2];
          "n0_p7" [shape=ellipse, label="gen\n[generator]", peripheries=2];
          "n0_t0" [shape=box, style="rounded", label="t\neureka e\ntrace #1, #3", color=red, fontcolor=red, penwidth=2.5];
          "n0_p0" -> "n0_t0" [arrowhead=normal, label="a", color=red, fontcolor=red, penwidth=2];
          "n0_p1" -> "n0_t0" [style=dashed, arrowhead=normal, label="r", color=red, fontcolor=red, penwidth=2];
          "n0_p4" -> "n0_t0" [style=dotted, arrowhead=odot, label="n", color=red, fontcolor=red, penwidth=2];
          "n0_t0" -> "n0_p2" [arrowhead=vee, label="c", color=red, fontcolor=red, penwidth=2];
          "n0_t0" -> "n0_p3" [color="red:invis:red", arrowhead=vee, label="l*", fontcolor=red, penwidth=2];
          "n0_t1" [shape=box, style="filled", label="respond\nmodule m.respond\ntrace #2\nloop #1", fillcolor="lightsteelblue1", color=red, fontcolor=red, penwidth=2.5];
          "n0_p5" -> "n0_t1" [dir=both, arrowhead=normal, arrowtail=vee, label="state", color=red, fontcolor=red, penwidth=2];
          "n0_p6" -> "n0_t1" [arrowhead=normal, label="job", color=red, fontcolor=red, penwidth=2];
          "n0_t1" -> "n0_p6" [style=dashed, color=purple, fontcolor=purple, arrowhead=vee, label="response response to job"];
        }
        warning: trace step 4: no transition `nope` in the net
    "#]].assert_eq(&draw(ALL_CONNECTIONS, &Options::default(), Some(&trace)));
}

#[test]
fn filters_hide_places_transitions_and_their_arcs() {
    let options = Options {
        not_starts_with: vec!["res".into()],
        not_ends_with: vec!["ny".into()],
        ..Options::default()
    };
    let dot = draw(ALL_CONNECTIONS, &options, None);
    assert!(!dot.contains("respond"), "{dot}");
    assert!(!dot.contains(r#"label="many""#), "{dot}");
    assert!(!dot.contains("n0_p3"), "{dot}");
    assert!(dot.contains(r#"label="count""#), "{dot}");
    // Hiding the child net's transition hides the whole cluster.
    let dot = draw(
        CHILD_NET,
        &Options {
            not_starts_with: vec!["sub".into()],
            ..Options::default()
        },
        None,
    );
    assert!(!dot.contains("cluster"), "{dot}");
}

#[test]
fn virtual_places_need_the_option() {
    let dot = draw(CHILD_NET, &Options::default(), None);
    assert!(!dot.contains("[virtual]"), "{dot}");
    let dot = draw(
        CHILD_NET,
        &Options {
            show_virtual: true,
            ..Options::default()
        },
        None,
    );
    assert!(
        dot.contains(r#""n1_p2" [shape=ellipse, label="w\n[virtual]", style=dashed];"#),
        "{dot}"
    );
    assert!(!dot.contains("tunnel"), "{dot}");
}

#[test]
fn escaping() {
    assert_eq!(escape(r#"a"b\c"#), r#"a\"b\\c"#);
    assert_eq!(escape("x\ny"), r"x\ny");
    assert_eq!(escape("<{|}>"), "<{|}>");
    assert_eq!(escape("\u{1}\r"), r"\\u{1}\\u{d}");
    assert_eq!(
        label(&["a\\".to_string(), "\"".to_string()]),
        r#""a\\\n\"""#
    );
    // Names reach the output escaped (the compiler only lets identifiers through, but a
    // bundle may say anything).
    let mut bundle = compile(EXPRESSION_NET).bundle.unwrap();
    if let Body::Net(n) = &mut bundle.functions[bundle.root.index()].body {
        n.places[0].name = "a\"b\\c<{x}>|\n".into();
        n.transitions[0].name = "\\".into();
    }
    bundle.functions[bundle.root.index()].name = Some("q\"".into());
    let dot = render(&bundle, &Sources::none(), &Options::default(), None).dot;
    assert!(dot.starts_with("digraph \"q\\\"\" {"), "{dot}");
    assert!(
        dot.contains(r#""n0_p0" [shape=ellipse, label="a\"b\\c<{x}>|\n"];"#),
        "{dot}"
    );
    assert!(dot.contains(r#"label="\\\n[condition]"];"#), "{dot}");
}

#[test]
fn trace_formats() {
    let t = parse_trace(r#"["a", "b"]"#).unwrap();
    assert_eq!(t.steps.len(), 2);
    assert_eq!(t.steps[1].name.as_deref(), Some("b"));
    let t = parse_trace(r#"{"trace": [{"transition": "a"}, {"index": 3}, 4]}"#).unwrap();
    assert_eq!(
        t.steps[0],
        TraceStep {
            name: Some("a".into()),
            index: None
        }
    );
    assert_eq!(
        t.steps[1],
        TraceStep {
            name: None,
            index: Some(3)
        }
    );
    assert_eq!(
        t.steps[2],
        TraceStep {
            name: None,
            index: Some(4)
        }
    );
    let t = parse_trace(r#"{"kind": "unbounded", "steps": [{"index": 0, "id": "t0", "name": "x"}], "loop_steps": [{"name": "y"}]}"#).unwrap();
    assert_eq!(t.kind.as_deref(), Some("unbounded"));
    assert_eq!(t.steps[0].name.as_deref(), Some("x"));
    assert_eq!(t.cycle[0].name.as_deref(), Some("y"));
    assert!(parse_trace("{").unwrap_err().starts_with("not JSON"));
    assert!(parse_trace("3").is_err());
    assert!(parse_trace(r#"{"x": 1}"#).is_err());
    assert!(parse_trace(r#"[true]"#).unwrap_err().contains("[0]"));
}

#[test]
fn broken_bundles_do_not_panic() {
    let out = compile(CHILD_NET);
    let mut bundle = out.bundle.unwrap();
    // Dangling ids everywhere.
    for f in &mut bundle.functions {
        if let Body::Net(n) = &mut f.body {
            for t in &mut n.transitions {
                t.function = FunctionId(999);
                t.condition = Some(pnet_bundle::CodeId(999));
                for c in &mut t.connections {
                    c.place = PlaceId(999);
                    c.port = PortId(999);
                }
                t.place_map.push((PlaceId(77), PlaceId(88)));
            }
        }
        for p in &mut f.ports {
            p.place = Some(PlaceId(1234));
        }
    }
    let all = Options {
        signature: true,
        token: true,
        priority: true,
        show_virtual: true,
        tunnel_connection: true,
        ..Options::default()
    };
    let trace = Trace {
        kind: None,
        steps: vec![TraceStep {
            name: None,
            index: Some(999),
        }],
        cycle: Vec::new(),
    };
    let r = render(&bundle, &Sources::none(), &all, Some(&trace));
    assert!(r.dot.contains("[unknown function]"), "{}", r.dot);
    assert_eq!(
        r.warnings,
        vec!["trace step 1: no transition #999 in the net".to_string()]
    );
    // A recursive bundle: the root net's transition calls the root itself.
    let mut bundle = compile(CHILD_NET).bundle.unwrap();
    let root = bundle.root;
    if let Body::Net(n) = &mut bundle.functions[root.index()].body {
        n.transitions[0].function = root;
    }
    let r = render(&bundle, &Sources::none(), &all, None);
    assert!(r.dot.contains(r#"style="dashed,bold""#), "{}", r.dot);
    // No root net at all.
    bundle.root = FunctionId(4242);
    let r = render(&bundle, &Sources::none(), &all, None);
    assert_eq!(
        r.warnings,
        vec!["the bundle has no root function".to_string()]
    );
}
