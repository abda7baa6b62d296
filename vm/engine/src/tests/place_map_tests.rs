//! Child nets with a `place-map` that were not inlined (`pnetc --synthesize-virtual-places`):
//! the child's virtual place is the parent's real place (the tokens live there), seen and
//! changed by both instances.

use expect_test::expect;
use pnet_stdlib::Value;

use super::{build, check, run_text, set_scan_cache, show, show_result};
use crate::{Engine, RunConfig, Step};

/// GPI-Space's `share/doc/example/virtual/work_and_wait.xpnet` in small: `dup` puts `n` on
/// `wait` and on `cnt`, from which `gen` makes `n` work items on `o`; each item starts a
/// `wait` child that counts `wait` down through its virtual place `num` while it is
/// positive, and the child that sees it at zero says `done`.
const WORK_AND_WAIT: &str = "
net main
  port in n long @n
  port out done control @done
  place n long
  place cnt long
  place wait long
  place o long
  place done control
  trans dup
    in n long <- n
    out n long -> wait
    out n long -> cnt
  trans gen
    in c long <- cnt
    out c2 long -> cnt
    out item long -> o
    cond load c; const 0L; gt
    expr load c; store item; load c; const 1L; sub; store c2
  trans stop
    in c long <- cnt
    cond load c; const 0L; le
  trans wait
    in object long <- o
    out done control -> done
    use waiter
    map num -> wait
end
net waiter
  port in object long @object
  port out done control @done
  port tunnel num long @num
  place object long
  place num long virtual
  place done control
  trans dec
    in object long <- object
    inout num long <-> num
    cond load num; const 0L; gt
    expr load num; const 1L; sub; store num
  trans done
    in num long <- num
    out done control -> done
    cond load num; const 0L; le
    expr const []; store done
end
";

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
fn tokens_a_child_puts_on_its_virtual_place_wake_the_parent() {
    // The child puts on `v` (the parent's `pool`); the parent's `collect` (which reads no
    // other place) must be re-examined to move them out.
    check(
        "
net main
  port out r long @r
  place start long = 1L 2L
  place pool long
  place r long
  trans spawn
    in x long <- start
    use child
    map v -> pool
  trans collect
    in x long <- pool
    out x long -> r
    expr load x; const 10L; mul; store x
end
net child
  port in x long @a
  place a long
  place v long virtual
  trans give
    in x long <- a
    out x long -> v
end
",
        &[],
        expect![[r#"
            r: 10L 20L
            firings: 6
        "#]],
    );
}

#[test]
fn a_childs_takes_change_the_parents_token_count() {
    // `empty` sees the number of tokens on `real` (three at first); only the child's takes
    // from its virtual place bring it to zero.
    check(
        "
net main
  port out done ulong @done
  port out sum long @sum
  place real long = 1L 2L 3L
  place go control = []
  place key control = []
  place done ulong
  place sum long
  trans drain
    in g control <- go
    out s long -> sum
    use child
    map v -> real
  trans empty
    count n ulong <- real
    in k control <- key
    out n ulong -> done
    cond load n; const 0UL; eq
end
net child
  port in g control @g
  port out s long @acc
  place g control
  place v long virtual
  place acc long = 0L
  trans add
    in x long <- v
    inout s long <-> acc
    expr load s; load x; add; store s
end
",
        &[],
        expect![[r#"
            done: 0UL
            sum: 6L
            firings: 5
        "#]],
    );
}

#[test]
fn nested_place_maps_reach_the_outermost_place() {
    // `grand` maps its `w` to `child`'s `v`, itself mapped to `main`'s `real`: both see the
    // tokens of `real`, which stay there when the children end. Initial tokens declared on
    // a mapped place are not added (the place is the parent's, as in pnetv).
    check(
        "
net main
  port out r long @real
  place real long = 1L 5L
  place t control = []
  trans go
    in s control <- t
    use child
    map v -> real
end
net child
  port in s control @s
  place s control
  place v long virtual = 100L
  trans go2
    in s control <- s
    use grand
    map w -> v
end
net grand
  port in s control @s
  place s control
  place w long virtual
  trans inc
    in x long <- w
    out x long -> w
    cond load x; const 10L; lt
    expr load x; const 1L; add; store x
end
",
        &[],
        expect![[r#"
            r: 10L 10L
            firings: 16
        "#]],
    );
}

#[test]
fn an_out_port_on_a_mapped_place_leaves_its_tokens_at_home() {
    // The child's out port `y` is bound to its virtual place: its tokens already are on
    // `real` and are not put out a second time through `call`'s connection.
    let r = run_text(
        "
net main
  port out real long @real
  port out copy long @copy
  place p long = 7L
  place real long
  place copy long
  trans call
    in x long <- p
    out y long -> copy
    use child
    map v -> real
end
net child
  port in x long @a
  port out y long @v
  place a long
  place v long virtual
  trans put
    in x long <- a
    out x long -> v
end
",
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
const WAKE: &str = "
net main
  port out r long @r
  place start control = []
  place start2 control = []
  place real long
  place r long
  place seen ulong
  place key control put_token
  trans go
    in s control <- start
    out r long -> r
    use child
    map v -> real
  trans feed
    in s control <- start2
    out x long -> real
    module m feed
  trans look
    count n ulong <- real
    in k control <- key
    out n ulong -> seen
end
net child
  port in s control @s
  port out r long @res
  place s control
  place hold control = []
  place held control
  place v long virtual
  place res long
  trans slow
    in h control <- hold
    out h control -> held
    module m slow
  trans take
    in x long <- v
    out x long -> res
    expr load x; const 1L; add; store x
end
";

#[test]
fn a_parents_put_wakes_the_child_and_in_flight_tokens_count() {
    let bundle = build(WAKE);
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
    let text = "
net main
  port out seen ulong @seen
  place real long = 1L 2L
  place go control = []
  place key control put_token
  place seen ulong
  trans call
    in g control <- go
    use child
    map v -> real
  trans look
    count n ulong <- real
    in k control <- key
    out n ulong -> seen
end
net child
  port in g control @g
  place g control
  place v long virtual
  trans eat
    in g control <- g
    in x long <- v
    module m eat
end
";
    let bundle = build(text);
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
        "
net main
  port out q long @q
  place p long = 1L
  place real long = 5L
  place q long
  trans call
    in x long <- p
    out y long -> q
    use child
    map v -> real
end
net child
  port in x long @a
  port out y long @b
  place a long
  place b long
  place v long virtual
  trans inc
    in x long <- a
    out x long -> b
    expr load x; const 1L; add; store x
end
",
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
fn two_virtual_places_on_one_place_are_a_clear_error() {
    check(
        "
net main
  place p control = []
  place real long = 1L
  trans call
    in x control <- p
    use child
    map a -> real
    map b -> real
end
net child
  port in x control @x
  place x control
  place a long virtual
  place b long virtual
  trans move
    in v long <- a
    out v long -> b
end
",
        &[],
        expect![[r#"
            error: in transition `call` (test.xpnet:5:3): bad bundle: place-map: virtual places `a` and `b` of the child net are both place `real`; the engine maps at most one place of a child net to a place
        "#]],
    );
}

#[test]
fn the_ending_counts_a_place_children_consume_from() {
    // `main` only reads `real`, but the child consumes from it through its virtual place:
    // a token left there is work not done (not a constant of `connect-read`).
    let r = run_text(
        "
net main
  place p control = []
  place real long = 1L 2L
  place key control put_token
  trans peek
    read x long <- real
    in k control <- key
  trans call
    in x control <- p
    use child
    map v -> real
end
net child
  port in x control @x
  place x control
  place v long virtual
  trans eat
    in x control <- x
    in y long <- v
end
",
        &[],
        &RunConfig::default(),
    )
    .expect("runs");
    assert_eq!(r.ending.tokens_left, vec![("real".to_string(), 1)]);
}

#[test]
fn a_child_taking_from_a_mapped_generator_place_refills_it_at_home() {
    check(
        "
net main
  port out got long @got
  place go control = []
  place ids long generator
  place got long
  trans call
    in g control <- go
    out got long -> got
    use child
    map v -> ids
end
net child
  port in g control @g
  port out got long @got
  place g control
  place turns control = [] [] []
  place v long virtual
  place got long
  trans take
    in t control <- turns
    in x long <- v
    out x long -> got
end
",
        &[],
        expect![[r#"
            got: 0L 1L 2L
            firings: 4
        "#]],
    );
}
