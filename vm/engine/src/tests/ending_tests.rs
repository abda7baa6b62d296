//! The ending report: tokens left on inner places, empty out ports, starved transitions.

use expect_test::expect;

use super::{parse_net, run_text};
use crate::RunConfig;

fn ending(text: &str, inputs: &[(&str, &str)]) -> String {
    let r = run_text(text, inputs, &RunConfig::default()).expect("the run succeeds");
    format!("{}", r.ending)
}

/// `join` needs a token on `a` and on `b`; `const` is only read.
const JOIN: &str = r#"
bundle root f0 main

function f0 main
  in a : long = p0 a
  in b : long = p1 b
  out r : long = p3 r
  net
    place p0 a : long
    place p1 b : long
    place p2 k : long
      token 1L
    place p3 r : long
    transition t0 join priority 0 -> f1 join
      in x <- p0 a
      in y <- p1 b
      read c <- p2 k
      out x -> p3 r

function f1 join
  inout x : long
  in y : long
  in c : long
  expression c0

code c0 "expression of join" : any
  slot 0 port x : long
  slot 1 port y : long
  slot 2 port c : long
"#;

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
    let net = r#"
bundle root f0 main

function f0 main
  in a : long = p0 a
  out r : long = p2 r
  out s : long = p3 s
  out t : long = p4 t
  net
    place p0 a : long
    place p1 q : long
      token 7L
      token 8L
      token 9L
    place p2 r : long
    place p3 s : long
    place p4 t : long
    transition t0 some priority 0 -> f1 some
      in x <- p0 a
      out x -> p2 r
      condition c0
    transition t1 other priority 0 -> f2 other
      in x <- p1 q
      in y <- p3 s
      out x -> p4 t

function f1 some
  inout x : long
  expression c1

function f2 other
  inout x : long
  in y : long
  expression c2

code c0 "condition of some" : any
  slot 0 port x : long
  const 0 2L
  reads x
  0  load        x
  1  const       2L
  2  lt

code c1 "expression of some" : any
  slot 0 port x : long

code c2 "expression of other" : any
  slot 0 port x : long
  slot 1 port y : long
"#;
    expect!["the net stopped with tokens left on: a (1), q (3); out ports `s`, `t` are empty; transition `other` lacked a token on `s`"]
        .assert_eq(&ending(net, &[("a", "1L 5L")]));
}

#[test]
fn starved_transitions_are_capped() {
    let net = r#"
bundle root f0 main

function f0 main
  out r : long = p0 r
  net
    place p0 r : long
    place p1 full : long
      token 1L
    place p2 empty : long
    transition t0 t0 priority 0 -> f1 t0
      in x <- p1 full
      in y <- p2 empty
      out x -> p0 r
    transition t1 t1 priority 0 -> f2 t1
      in x <- p1 full
      in y <- p2 empty
      out x -> p0 r
    transition t2 t2 priority 0 -> f3 t2
      in x <- p1 full
      in y <- p2 empty
      out x -> p0 r
    transition t3 t3 priority 0 -> f4 t3
      in x <- p1 full
      in y <- p2 empty
      out x -> p0 r
    transition t4 t4 priority 0 -> f5 t4
      in x <- p1 full
      in y <- p2 empty
      out x -> p0 r

function f1 t0
  inout x : long
  in y : long
  expression c0

function f2 t1
  inout x : long
  in y : long
  expression c1

function f3 t2
  inout x : long
  in y : long
  expression c2

function f4 t3
  inout x : long
  in y : long
  expression c3

function f5 t4
  inout x : long
  in y : long
  expression c4

code c0 "expression of t0" : any
  slot 0 port x : long
  slot 1 port y : long

code c1 "expression of t1" : any
  slot 0 port x : long
  slot 1 port y : long

code c2 "expression of t2" : any
  slot 0 port x : long
  slot 1 port y : long

code c3 "expression of t3" : any
  slot 0 port x : long
  slot 1 port y : long

code c4 "expression of t4" : any
  slot 0 port x : long
  slot 1 port y : long
"#;
    let r = run_text(net, &[], &RunConfig::default()).unwrap();
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
    let net = r#"
bundle root f0 main

function f0 main
  in a : long = p0 a
  in b : long = p1 b
  in c : long = p2 c
  in d : long = p3 d
  in e : long = p4 e
  out r : long = p5 r
  net
    place p0 a : long
    place p1 b : long
    place p2 c : long
      token 3L
    place p3 d : long
    place p4 e : long
    place p5 r : long
    transition t0 feed priority 0 -> f1 feed
      in x <- p2 c
      out x -> p1 b
    transition t1 use priority 0 -> f2 use
      in x <- p0 a
      in y <- p1 b
      out x -> p5 r
    transition t2 loop priority 0 -> f3 loop
      in x <- p3 d
      out x -> p3 d
      condition c2
    transition t3 fromd priority 0 -> f4 fromd
      in x <- p3 d
      out x -> p4 e

function f1 feed
  inout x : long
  expression c0

function f2 use
  inout x : long
  in y : long
  expression c1

function f3 loop
  inout x : long
  expression c3

function f4 fromd
  inout x : long
  expression c4

code c0 "expression of feed" : any
  slot 0 port x : long

code c1 "expression of use" : any
  slot 0 port x : long
  slot 1 port y : long

code c2 "condition of loop" : any
  slot 0 port x : long
  const 0 0L
  reads x
  0  load        x
  1  const       0L
  2  gt

code c3 "expression of loop" : any
  slot 0 port x : long

code c4 "expression of fromd" : any
  slot 0 port x : long
"#;
    let unfed = |given: &[&str]| {
        let given: Vec<String> = given.iter().map(|s| s.to_string()).collect();
        crate::unfed_in_ports(&parse_net(net), &given)
    };
    // `b` is fed by `feed`; `d` only by a loop on itself, `e` only from `d`.
    assert_eq!(unfed(&[]), ["a", "d", "e"]);
    assert_eq!(unfed(&["a"]), ["d", "e"]);
    // Given `d`, `fromd` may feed `e`.
    assert_eq!(unfed(&["d"]), ["a"]);
    assert!(unfed(&["a", "b", "c", "d", "e"]).is_empty());
}
