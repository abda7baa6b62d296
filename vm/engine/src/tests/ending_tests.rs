//! The ending report: tokens left on inner places, empty out ports, starved transitions.

use expect_test::expect;

use super::{build, run_text};
use crate::RunConfig;

fn ending(text: &str, inputs: &[(&str, &str)]) -> String {
    let r = run_text(text, inputs, &RunConfig::default()).expect("the run succeeds");
    format!("{}", r.ending)
}

/// `join` needs a token on `a` and on `b`; `const` is only read.
const JOIN: &str = "
net main
  port in a long @a
  port in b long @b
  port out r long @r
  place a long
  place b long
  place k long = 1L
  place r long
  trans join
    in x long <- a
    in y long <- b
    read c long <- k
    out x long -> r
end
";

#[test]
fn a_complete_run_says_nothing() {
    let r = run_text(JOIN, &[("a", "1L"), ("b", "2L")], &RunConfig::default()).unwrap();
    assert!(r.ending.is_complete(), "{:?}", r.ending);
    assert_eq!(r.ending.to_string(), "");
    assert_eq!(r.ending.to_json()["complete"], true);
}

#[test]
fn a_forgotten_input_names_the_tokens_the_port_and_the_transition() {
    expect!["the net stopped with tokens left on: a (2); out port `r` is empty; transition `join` lacked a token on `b`"]
        .assert_eq(&ending(JOIN, &[("a", "1L 2L")]));
    let r = run_text(JOIN, &[("a", "1L 2L")], &RunConfig::default()).unwrap();
    let j = r.ending.to_json();
    assert_eq!(j["complete"], false);
    assert_eq!(j["tokens_left"][0]["place"], "a");
    assert_eq!(j["tokens_left"][0]["tokens"], 2);
    assert_eq!(j["empty_outputs"][0], "r");
    assert_eq!(j["starved"][0]["transition"], "join");
    assert_eq!(j["starved"][0]["place"], "b");
}

#[test]
fn no_input_at_all_only_names_the_empty_port() {
    // No transition holds some of its inputs: none is named.
    expect!["the net stopped: out port `r` is empty"].assert_eq(&ending(JOIN, &[]));
}

#[test]
fn leftovers_beside_full_outputs_and_several_empty_ports() {
    // `some` holds its token but its condition refuses it: it lacked no token.
    let net = "
net main
  port in a long @a
  port out r long @r
  port out s long @s
  port out t long @t
  place a long
  place q long = 7L 8L 9L
  place r long
  place s long
  place t long
  trans some
    in x long <- a
    cond load x; const 2L; lt
    out x long -> r
  trans other
    in x long <- q
    in y long <- s
    out x long -> t
end
";
    expect!["the net stopped with tokens left on: a (1), q (3); out ports `s`, `t` are empty; transition `other` lacked a token on `s`"]
        .assert_eq(&ending(net, &[("a", "1L 5L")]));
}

#[test]
fn starved_transitions_are_capped() {
    let mut net = String::from(
        "
net main
  port out r long @r
  place r long
  place full long = 1L
  place empty long
",
    );
    for i in 0..5 {
        net += &format!(
            "  trans t{i}\n    in x long <- full\n    in y long <- empty\n    out x long -> r\n"
        );
    }
    net += "end\n";
    let r = run_text(&net, &[], &RunConfig::default()).unwrap();
    assert_eq!(r.ending.starved.len(), crate::ending::MAX_STARVED);
    assert_eq!(r.ending.more_starved, 2);
    assert!(
        r.ending.to_string().ends_with("and 2 more transitions"),
        "{}",
        r.ending
    );
}

#[test]
fn unfed_in_ports_are_those_no_run_can_fill() {
    let net = "
net main
  port in a long @a
  port in b long @b
  port in c long @c
  port in d long @d
  port in e long @e
  port out r long @r
  place a long
  place b long
  place c long = 3L
  place d long
  place e long
  place r long
  trans feed
    in x long <- c
    out x long -> b
  trans use
    in x long <- a
    in y long <- b
    out x long -> r
  trans loop
    inout x long <-> d
    cond load x; const 0L; gt
  trans fromd
    in x long <- d
    out x long -> e
end
";
    let unfed = |given: &[&str]| {
        let given: Vec<String> = given.iter().map(|s| s.to_string()).collect();
        crate::unfed_in_ports(&build(net), &given)
    };
    // `b` is fed by `feed`; `d` only by a loop on itself, `e` only from `d`.
    assert_eq!(unfed(&[]), ["a", "d", "e"]);
    assert_eq!(unfed(&["a"]), ["d", "e"]);
    // Given `d`, `fromd` may feed `e`.
    assert_eq!(unfed(&["d"]), ["a"]);
    assert!(unfed(&["a", "b", "c", "d", "e"]).is_empty());
}
