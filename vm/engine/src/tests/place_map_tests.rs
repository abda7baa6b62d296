//! Child nets with a `place-map` that were not inlined (`pnetc --synthesize-virtual-places`):
//! the child's virtual place is the parent's real place (the tokens live there), seen and
//! changed by both instances.

use expect_test::expect;
use pnet_stdlib::Value;

use super::{parse_net, run_text, set_scan_cache, show, show_result};
use crate::{Engine, RunConfig, Step};

/// GPI-Space's `share/doc/example/virtual/work_and_wait.xpnet` in small: `dup` puts `n` on
/// `wait` and on `cnt`, from which `gen` makes `n` work items on `o`; each item starts a
/// `wait` child that counts `wait` down through its virtual place `num` while it is
/// positive, and the child that sees it at zero says `done`.
const WORK_AND_WAIT: &str = r#"
bundle root f0 main

function f0 main
  in n : long = p0 n
  out done : control = p4 done
  net
    place p0 n : long
    place p1 cnt : long
    place p2 wait : long
    place p3 o : long
    place p4 done : control
    transition t0 dup priority 0 -> f1 dup
      in n <- p0 n
      out n -> p2 wait
      out n -> p1 cnt
    transition t1 gen priority 0 -> f2 gen
      in c <- p1 cnt
      out c2 -> p1 cnt
      out item -> p3 o
      condition c1
    transition t2 stop priority 0 -> f3 stop
      in c <- p1 cnt
      condition c3
    transition t3 wait priority 0 -> f4 waiter
      in object <- p3 o
      out done -> p4 done
      place-map p1 num -> p2 wait

function f1 dup
  inout n : long
  expression c0

function f2 gen
  in c : long
  out c2 : long
  out item : long
  expression c2

function f3 stop
  in c : long
  expression c4

function f4 waiter
  in object : long = p0 object
  out done : control = p2 done
  tunnel num : long = p1 num
  net
    place p0 object : long
    place p1 num : long virtual
    place p2 done : control
    transition t0 dec priority 0 -> f5 dec
      in object <- p0 object
      in num <- p1 num
      out num -> p1 num
      condition c5
    transition t1 done priority 0 -> f6 done
      in num <- p1 num
      out done -> p2 done
      condition c7

function f5 dec
  in object : long
  inout num : long
  expression c6

function f6 done
  in num : long
  out done : control
  expression c8

code c0 "expression of dup" : any
  slot 0 port n : long

code c1 "condition of gen" : any
  slot 0 port c : long
  slot 1 port c2 : long
  slot 2 port item : long
  const 0 0L
  reads c
  0  load        c
  1  const       0L
  2  gt

code c2 "expression of gen" : any
  slot 0 port c : long
  slot 1 port c2 : long
  slot 2 port item : long
  const 0 1L
  reads c
  0  load        c
  1  store       item
  2  load        c
  3  const       1L
  4  sub
  5  store       c2

code c3 "condition of stop" : any
  slot 0 port c : long
  const 0 0L
  reads c
  0  load        c
  1  const       0L
  2  le

code c4 "expression of stop" : any
  slot 0 port c : long

code c5 "condition of dec" : any
  slot 0 port object : long
  slot 1 port num : long
  const 0 0L
  reads num
  0  load        num
  1  const       0L
  2  gt

code c6 "expression of dec" : any
  slot 0 port object : long
  slot 1 port num : long
  const 0 1L
  reads num
  0  load        num
  1  const       1L
  2  sub
  3  store       num

code c7 "condition of done" : any
  slot 0 port num : long
  slot 1 port done : control
  const 0 0L
  reads num
  0  load        num
  1  const       0L
  2  le

code c8 "expression of done" : any
  slot 0 port num : long
  slot 1 port done : control
  const 0 []
  0  const       []
  1  store       done
"#;

#[test]
fn virtual_place_is_the_parents_place() {
    // Every schedule (seeds, with and without the enabling search's cache) ends the same:
    // one `done`, the counter consumed, nothing left.
    for cache in [true, false] {
        set_scan_cache(cache);
        for seed in 0..20 {
            let config = RunConfig {
                seed,
                ..RunConfig::default()
            };
            let r = run_text(WORK_AND_WAIT, &[("n", "3L")], &config).expect("runs");
            assert_eq!(
                r.outputs,
                vec![("done".to_string(), vec![Value::Control])],
                "seed {seed}"
            );
            assert!(r.ending.is_complete(), "seed {seed}: {}", r.ending);
            // dup, 3 gen, stop, 3 children, 3 decrements, done.
            assert_eq!(r.stats.child_nets, 3, "seed {seed}");
            assert_eq!(r.stats.firings, 12, "seed {seed}");
        }
    }
    set_scan_cache(true);
}

#[test]
fn an_out_port_on_a_mapped_place_leaves_its_tokens_at_home() {
    // The child's out port `y` is bound to its virtual place: its tokens already are on
    // `real` and are not put out a second time through `call`'s connection.
    let r = run_text(
        r#"
bundle root f0 main

function f0 main
  out real : long = p1 real
  out copy : long = p2 copy
  net
    place p0 p : long
      token 7L
    place p1 real : long
    place p2 copy : long
    transition t0 call priority 0 -> f1 child
      in x <- p0 p
      out y -> p2 copy
      place-map p1 v -> p1 real

function f1 child
  in x : long = p0 a
  out y : long = p1 v
  net
    place p0 a : long
    place p1 v : long virtual
    transition t0 put priority 0 -> f2 put
      in x <- p0 a
      out x -> p1 v

function f2 put
  inout x : long
  expression c0

code c0 "expression of put" : any
  slot 0 port x : long
"#,
        &[],
        &RunConfig::default(),
    )
    .expect("runs");
    assert_eq!(
        r.outputs,
        vec![
            ("real".to_string(), vec![Value::Long(7)]),
            ("copy".to_string(), Vec::new()),
        ]
    );
    assert_eq!(r.stats.firings, 2);
}

/// A child that stays alive while its module call `slow` runs, and takes what appears on
/// its virtual place `v` (the parent's `real`).
const WAKE: &str = r#"
bundle root f0 main

function f0 main
  out r : long = p3 r
  net
    place p0 start : control
      token []
    place p1 start2 : control
      token []
    place p2 real : long
    place p3 r : long
    place p4 seen : unsigned long
    place p5 key : control put_token
    transition t0 go priority 0 -> f3 child
      in s <- p0 start
      out r -> p3 r
      place-map p3 v -> p2 real
    transition t1 feed priority 0 -> f1 feed
      in s <- p1 start2
      out x -> p2 real
    transition t2 look priority 0 -> f2 look
      number-of-tokens n <- p2 real
      in k <- p5 key
      out n -> p4 seen

function f1 feed
  in s : control
  out x : long
  module m "feed ()"

function f2 look
  inout n : unsigned long
  in k : control
  expression c0

function f3 child
  in s : control = p0 s
  out r : long = p4 res
  net
    place p0 s : control
    place p1 hold : control
      token []
    place p2 held : control
    place p3 v : long virtual
    place p4 res : long
    transition t0 slow priority 0 -> f4 slow
      in h <- p1 hold
      out h -> p2 held
    transition t1 take priority 0 -> f5 take
      in x <- p3 v
      out x -> p4 res

function f4 slow
  inout h : control
  module m "slow ()"

function f5 take
  inout x : long
  expression c1

code c0 "expression of look" : any
  slot 0 port n : unsigned long
  slot 1 port k : control

code c1 "expression of take" : any
  slot 0 port x : long
  const 0 1L
  reads x
  0  load        x
  1  const       1L
  2  add
  3  store       x
"#;

#[test]
fn a_parents_put_wakes_the_child_and_in_flight_tokens_count() {
    let bundle = parse_net(WAKE);
    crate::validate(&bundle).expect("valid");
    let mut e = Engine::new(&bundle, &RunConfig::default()).expect("engine");
    // Start the child and hand out both module calls.
    let mut tasks = Vec::new();
    loop {
        match e.step().expect("step") {
            Step::Fired => {}
            Step::Task(t) => tasks.push(t),
            Step::Waiting => break,
            Step::Done => panic!("done too early"),
        }
    }
    let mut names: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["feed", "slow"]);
    let task = |name: &str| tasks.iter().find(|t| t.name == name).expect("task");
    // The parent's module puts 41 on `real`: the running child takes it at once.
    let feed = task("feed");
    let port = bundle.function(feed.function).port_by_name("x").expect("x");
    e.complete_task(feed.id, vec![(port, Value::Long(41))])
        .expect("complete feed");
    assert!(matches!(e.step().expect("step"), Step::Fired));
    assert!(matches!(e.step().expect("step"), Step::Waiting));
    let real = bundle_place(&bundle, "real");
    assert!(e.tokens(real).is_empty(), "the child took the token");
    // The child's own module call ends: nothing is enabled in it, it ends, its result goes
    // out through `go`.
    let slow = task("slow");
    let port = bundle.function(slow.function).port_by_name("h").expect("h");
    e.complete_task(slow.id, vec![(port, Value::Control)])
        .expect("complete slow");
    assert!(matches!(e.step().expect("step"), Step::Done));
    let r = e.result();
    let outs: Vec<String> = r.outputs[0].1.iter().map(show).collect();
    assert_eq!(outs, ["42L"]);
    assert!(r.ending.is_complete(), "{}", r.ending);
}

#[test]
fn number_of_tokens_counts_tokens_a_child_took_for_a_module_call() {
    // The child's module call `eat` takes a token from its virtual place: while it runs,
    // the parent's `number-of-tokens` of the real place still counts it.
    let text = r#"
bundle root f0 main

function f0 main
  out seen : unsigned long = p3 seen
  net
    place p0 real : long
      token 1L
      token 2L
    place p1 go : control
      token []
    place p2 key : control put_token
    place p3 seen : unsigned long
    transition t0 call priority 0 -> f2 child
      in g <- p1 go
      place-map p1 v -> p0 real
    transition t1 look priority 0 -> f1 look
      number-of-tokens n <- p0 real
      in k <- p2 key
      out n -> p3 seen

function f1 look
  inout n : unsigned long
  in k : control
  expression c0

function f2 child
  in g : control = p0 g
  net
    place p0 g : control
    place p1 v : long virtual
    transition t0 eat priority 0 -> f3 eat
      in g <- p0 g
      in x <- p1 v

function f3 eat
  in g : control
  in x : long
  module m "eat ()"

code c0 "expression of look" : any
  slot 0 port n : unsigned long
  slot 1 port k : control
"#;
    let bundle = parse_net(text);
    crate::validate(&bundle).expect("valid");
    let mut e = Engine::new(&bundle, &RunConfig::default()).expect("engine");
    let mut task = None;
    loop {
        match e.step().expect("step") {
            Step::Fired => {}
            Step::Task(t) => task = Some(t),
            Step::Waiting => break,
            Step::Done => panic!("done too early"),
        }
    }
    let task = task.expect("the child's module call");
    assert_eq!(task.name, "eat");
    assert_eq!(e.tokens(bundle_place(&bundle, "real")).len(), 1);
    e.put_token("key", Value::Control).expect("put_token");
    assert!(matches!(e.step().expect("step"), Step::Fired));
    let seen: Vec<String> = e
        .tokens(bundle_place(&bundle, "seen"))
        .iter()
        .map(show)
        .collect();
    assert_eq!(seen, ["2UL"], "one on the place, one in flight");
    e.complete_task(task.id, Vec::new()).expect("complete");
    assert!(matches!(e.step().expect("step"), Step::Done));
    // The token the task consumed is gone; the other is left on `real`.
    let r = e.result();
    assert_eq!(r.ending.tokens_left, vec![("real".to_string(), 1)]);
}

#[test]
fn a_mapped_place_the_child_leaves_alone_keeps_its_tokens() {
    // A run with a place-map whose child never touches its virtual place behaves as one
    // without (the parent's tokens are untouched and listed as left).
    let r = run_text(
        r#"
bundle root f0 main

function f0 main
  out q : long = p2 q
  net
    place p0 p : long
      token 1L
    place p1 real : long
      token 5L
    place p2 q : long
    transition t0 call priority 0 -> f1 child
      in x <- p0 p
      out y -> p2 q
      place-map p2 v -> p1 real

function f1 child
  in x : long = p0 a
  out y : long = p1 b
  net
    place p0 a : long
    place p1 b : long
    place p2 v : long virtual
    transition t0 inc priority 0 -> f2 inc
      in x <- p0 a
      out x -> p1 b

function f2 inc
  inout x : long
  expression c0

code c0 "expression of inc" : any
  slot 0 port x : long
  const 0 1L
  reads x
  0  load        x
  1  const       1L
  2  add
  3  store       x
"#,
        &[],
        &RunConfig::default(),
    );
    expect![[r#"
        q: 2L
        firings: 2
    "#]]
    .assert_eq(&show_result(&r));
    let ending = r.expect("runs").ending;
    assert_eq!(ending.tokens_left, vec![("real".to_string(), 1)]);
}

fn bundle_place(bundle: &pnet_bundle::Bundle, name: &str) -> pnet_bundle::PlaceId {
    match &bundle.function(bundle.root).body {
        pnet_bundle::Body::Net(n) => n.place_by_name(name).expect("place"),
        _ => unreachable!("root net"),
    }
}

#[test]
fn the_ending_counts_a_place_children_consume_from() {
    // `main` only reads `real`, but the child consumes from it through its virtual place:
    // a token left there is work not done (not a constant of `connect-read`).
    let r = run_text(
        r#"
bundle root f0 main

function f0 main
  net
    place p0 p : control
      token []
    place p1 real : long
      token 1L
      token 2L
    place p2 key : control put_token
    transition t0 peek priority 0 -> f1 peek
      read x <- p1 real
      in k <- p2 key
    transition t1 call priority 0 -> f2 child
      in x <- p0 p
      place-map p1 v -> p1 real

function f1 peek
  in x : long
  in k : control
  expression c0

function f2 child
  in x : control = p0 x
  net
    place p0 x : control
    place p1 v : long virtual
    transition t0 eat priority 0 -> f3 eat
      in x <- p0 x
      in y <- p1 v

function f3 eat
  in x : control
  in y : long
  expression c1

code c0 "expression of peek" : any
  slot 0 port x : long
  slot 1 port k : control

code c1 "expression of eat" : any
  slot 0 port x : control
  slot 1 port y : long
"#,
        &[],
        &RunConfig::default(),
    )
    .expect("runs");
    assert_eq!(r.ending.tokens_left, vec![("real".to_string(), 1)]);
}
