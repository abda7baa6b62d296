//! Nets in the compact format of `tests.rs`, run to their end.

use expect_test::expect;
use pnet_bundle::PortId;
use pnet_stdlib::Value;

use super::{build, check, check_config, run_text, show, show_result};
use crate::{Engine, RunConfig, Step};

const COUNTDOWN: &str = "
net main
  port in start long @n
  port out r long @n
  place n long
  trans dec
    inout n long <-> n
    cond load n; const 0L; gt
    expr load n; const 1L; sub; store n
end
";

#[test]
fn countdown_with_inout() {
    check(
        COUNTDOWN,
        &[("start", "5L")],
        expect![[r#"
        r: 0L
        firings: 5
    "#]],
    );
}

#[test]
fn in_consumes_read_does_not() {
    check(
        "
net main
  port out seen long @seen
  port out c control @c
  port out left long @src
  place src long = 1L 2L 3L
  place seen long
  place c control = []
  trans move
    read c control <- c
    in x long <- src
    out x long -> seen
end
",
        &[],
        expect![[r#"
            seen: 1L 2L 3L
            c: []
            left: 
            firings: 3
        "#]],
    );
}

#[test]
fn out_puts_each_output_port() {
    check(
        "
net main
  port out a long @a
  port out b long @b
  place go control = []
  place a long
  place b long
  trans two
    in go control <- go
    out x long -> a
    out x long -> b
    out y long -> b
    expr const 7L; store x; const 8L; store y
end
",
        &[],
        expect![[r#"
            a: 7L
            b: 7L 8L
            firings: 1
        "#]],
    );
}

#[test]
fn out_many_puts_each_element() {
    check(
        "
net main
  port out r long @r
  place l list = List(1L,2L,3L)
  place r long
  trans split
    in l list <- l
    many l list -> r
end
",
        &[],
        expect![[r#"
            r: 1L 2L 3L
            firings: 1
        "#]],
    );
}

#[test]
fn number_of_tokens_counts_the_place() {
    check(
        "
net main
  port out r ulong @r
  place p long = 1L 2L 3L
  place go control = []
  place r ulong
  trans count
    count c ulong <- p
    in go control <- go
    out c ulong -> r
end
",
        &[],
        expect![[r#"
            r: 3UL
            firings: 1
        "#]],
    );
}

#[test]
fn number_of_tokens_in_a_condition_waits() {
    // `wait` fires only when three tokens are there; `make` puts them one by one.
    check(
        "
net main
  port out r ulong @r
  port out p long @p
  place seed long = 1L 2L 3L
  place p long
  place r ulong
  place done control = []
  trans make prio 0
    in x long <- seed
    out x long -> p
  trans wait prio 9
    count c ulong <- p
    in d control <- done
    out c ulong -> r
    cond load c; const 3UL; ge
end
",
        &[],
        expect![[r#"
            r: 3UL
            p: 1L 2L 3L
            firings: 4
        "#]],
    );
}

#[test]
fn highest_priority_group_fires_first() {
    check(
        "
net main
  port out hi long @hi
  port out lo long @lo
  place p long = 1L 2L
  place hi long
  place lo long
  trans low prio 1
    in x long <- p
    out x long -> lo
  trans high prio 5
    in x long <- p
    out x long -> hi
end
",
        &[],
        expect![[r#"
            hi: 1L 2L
            lo: 
            firings: 2
        "#]],
    );
}

#[test]
fn condition_enumerates_the_partial_cross_product() {
    // Only `a` and `b` are enumerated; `c` (not read by the condition) gives any token.
    check(
        "
net main
  port out r long @r
  port out a long @a
  port out b long @b
  port out c long @c
  place a long = 1L 2L 3L
  place b long = 7L 5L 3L 9L
  place c long = 10L 20L
  place r long
  trans match
    in x long <- a
    in y long <- b
    in z long <- c
    out x long -> r
    cond load x; load y; eq
end
",
        &[],
        expect![[r#"
            r: 3L
            a: 2L 1L
            b: 5L 7L 9L
            c: 20L
            firings: 1
        "#]],
    );
}

#[test]
fn condition_false_for_every_combination_disables() {
    check(
        "
net main
  port out a long @a
  place a long = 1L 2L
  trans never
    in x long <- a
    cond load x; const 5L; gt
end
",
        &[],
        expect![[r#"
            a: 1L 2L
            firings: 0
        "#]],
    );
}

#[test]
fn two_takes_from_one_place_take_distinct_tokens() {
    check(
        "
net main
  port out r long @r
  port out p long @p
  place p long = 4L 4L 6L
  place r long
  trans pair
    in x long <- p
    in y long <- p
    out x long -> r
    out y long -> r
    cond load x; load y; eq
end
",
        &[],
        expect![[r#"
            r: 4L 4L
            p: 6L
            firings: 1
        "#]],
    );
}

#[test]
fn generator_gives_unique_values() {
    check(
        "
net main
  port out r int @r
  port out g int @g
  place g int generator
  place go control = [] [] []
  place r int
  trans take
    in go control <- go
    in v int <- g
    out v int -> r
end
",
        &[],
        expect![[r#"
            r: 0 1 2
            g: 3
            firings: 3
        "#]],
    );
}

#[test]
fn generator_of_char_runs_out_after_x7f() {
    check(
        "
net main
  port out r char @r
  place g char generator
  place r char
  trans take
    in v char <- g
    out v char -> r
end
",
        &[],
        expect![[r#"
            error: in transition `take` (test.xpnet:6:3): generator place `g` ran out of values of type char
        "#]],
    );
}

#[test]
fn generator_of_strings() {
    check_config(
        "
net main
  port out r string @r
  place g string generator
  place go control = [] [] [] [] []
  place r string
  trans take
    in go control <- go
    in v string <- g
    out v string -> r
end
",
        &RunConfig::default(),
        expect![[r#"
            r: "a" "b" "c" "d" "e"
            firings: 5
        "#]],
    );
}

#[test]
fn child_net_runs_to_completion_and_returns_outputs() {
    check(
        "
net main
  port out q long @q
  place p long = 1L 2L
  place q long
  trans call
    in x long <- p
    out y long -> q
    use child
end
net child
  port in x long @a
  port out y long @b
  place a long
  place b long
  place extra long = 99L
  trans inc
    in x long <- a
    out x long -> b
    expr load x; const 1L; add; store x
end
",
        &[],
        expect![[r#"
            q: 2L 3L
            firings: 4
        "#]],
    );
}

#[test]
fn child_net_error_names_the_inner_transition() {
    check(
        "
net main
  port out q ulong @q
  place p ulong = 1UL
  place q ulong
  trans call
    in x ulong <- p
    out y ulong -> q
    use child
end
net child
  port in x ulong @a
  port out y ulong @b
  place a ulong
  place b ulong
  trans dec
    in x ulong <- a
    out x ulong -> b
    expr load x; const 2UL; sub; store x
end
",
        &[],
        expect![[r#"
            error: in transition `dec` (test.xpnet:16:3): unsigned subtraction below zero at test.xpnet:19:29
        "#]],
    );
}

#[test]
fn runtime_error_names_the_transition_and_line() {
    check(
        "
net main
  place go control = []
  trans bad
    in go control <- go
    expr const 1UL; const 2UL; sub
end
",
        &[],
        expect![[r#"
            error: in transition `bad` (test.xpnet:4:3): unsigned subtraction below zero at test.xpnet:6:32
        "#]],
    );
}

#[test]
fn missing_binding_is_an_error() {
    check(
        "
net main
  place go control = []
  place r long
  trans lazy
    in go control <- go
    out x long -> r
end
",
        &[],
        expect![[r#"
            error: in transition `lazy` (test.xpnet:5:3): missing_binding: output port `x` has no value
        "#]],
    );
}

#[test]
fn module_call_stops_with_the_modules_name() {
    check(
        "
net main
  port in x long @p
  place p long
  place q long
  trans work
    in x long <- p
    out y long -> q
    module mymod compute
end
",
        &[("x", "1L")],
        expect![[r#"
            error: in transition `work` (test.xpnet:6:3): module call `mymod::compute` needs workers (this driver runs expressions only)
        "#]],
    );
}

#[test]
fn max_firings_stops_runaway_nets() {
    let net = "
net main
  place n long = 0L
  trans forever
    inout n long <-> n
    expr load n; const 1L; add; store n
end
";
    check_config(
        net,
        &RunConfig {
            max_firings: Some(1000),
            ..RunConfig::default()
        },
        expect![[r#"
        error: in transition `forever` (test.xpnet:4:3): the firing limit of 1000 was reached (runaway net?)
    "#]],
    );
}

#[test]
fn unknown_input_port_is_an_error() {
    check(
        COUNTDOWN,
        &[("nope", "1L")],
        expect![[r#"
        error: bad input: the net has no in port `nope`
    "#]],
    );
}

const RACE: &str = "
net main
  port out a long @a
  port out b long @b
  place p long = 1L 2L 3L 4L 5L 6L 7L 8L 9L 10L
  place a long
  place b long
  trans to_a
    in x long <- p
    out x long -> a
  trans to_b
    in x long <- p
    out x long -> b
end
";

#[test]
fn same_seed_same_result() {
    let cfg = |seed| RunConfig {
        seed,
        ..RunConfig::default()
    };
    let one = show_result(&run_text(RACE, &[], &cfg(1)));
    assert_eq!(one, show_result(&run_text(RACE, &[], &cfg(1))));
    expect![[r#"
        a: 1L 2L 3L 6L 7L 8L 10L
        b: 4L 5L 9L
        firings: 10
    "#]]
    .assert_eq(&one);
    let outcomes: std::collections::BTreeSet<String> = (0..20)
        .map(|s| show_result(&run_text(RACE, &[], &cfg(s))))
        .collect();
    assert!(outcomes.len() > 1, "the seed changes the choice");
}

#[test]
fn tasks_are_handed_out_and_results_injected() {
    // Two module calls run; meanwhile `probe` (lower priority) counts the tokens of `p`,
    // including those consumed by running tasks.
    let bundle = build(
        "
net main
  port out q long @q
  port out r ulong @r
  place p long = 1L 2L
  place q long
  place r ulong
  place go control = []
  trans work prio 2
    in x long <- p
    out y long -> q
    module mymod compute
  trans probe prio 1
    count c ulong <- p
    in go control <- go
    out c ulong -> r
end
",
    );
    let mut engine = Engine::new(&bundle, &RunConfig::default()).unwrap();
    let mut log = String::new();
    let mut tasks = Vec::new();
    loop {
        match engine.step().unwrap() {
            Step::Fired => log += "fired\n",
            Step::Task(t) => {
                let inputs: Vec<String> = t
                    .inputs
                    .iter()
                    .map(|(p, v)| format!("{}={}", p.0, show(v)))
                    .collect();
                log += &format!(
                    "task {} of {} at {}: {}\n",
                    t.id.0,
                    t.name,
                    t.location,
                    inputs.join(" ")
                );
                tasks.push(t);
            }
            Step::Waiting => {
                log += "waiting\n";
                for t in tasks.drain(..) {
                    let Value::Long(x) = t.inputs[0].1 else {
                        panic!("long input")
                    };
                    engine
                        .complete_task(t.id, vec![(PortId(1), Value::Long(x * 10))])
                        .unwrap();
                }
            }
            Step::Done => break,
        }
    }
    let r = engine.result();
    for (p, vs) in &r.outputs {
        log += &format!(
            "{p}: {}\n",
            vs.iter().map(show).collect::<Vec<_>>().join(" ")
        );
    }
    expect![[r#"
        task 0 of work at test.xpnet:9:3: 0=1L
        task 1 of work at test.xpnet:9:3: 0=2L
        fired
        waiting
        q: 10L 20L
        r: 2UL
    "#]]
    .assert_eq(&log);
}

#[test]
fn failed_task_names_module_and_transition() {
    let bundle = build(
        "
net main
  place p long = 1L
  trans work
    in x long <- p
    module mymod compute
end
",
    );
    let mut engine = Engine::new(&bundle, &RunConfig::default()).unwrap();
    let Step::Task(t) = engine.step().unwrap() else {
        panic!("a task")
    };
    let e = engine.fail_task(t.id, "segfault");
    expect![[r#"in transition `work` (test.xpnet:4:3): module call `mymod` failed: segfault"#]]
        .assert_eq(&e.to_string());
}

#[test]
fn malformed_bundles_are_rejected_not_panicking() {
    let mut bundle = build(COUNTDOWN);
    let pnet_bundle::Body::Net(net) = &mut bundle.functions[0].body else {
        panic!()
    };
    net.transitions[0].connections[0].place = pnet_bundle::PlaceId(7);
    expect![
        "function 0 (`main`): transition 0 (`dec`): connection 0 names place 7, the net has 1 place"
    ]
    .assert_eq(&crate::validate(&bundle).unwrap_err());
    let e = crate::run(&bundle, &[], &RunConfig::default()).unwrap_err();
    expect!["bad bundle: function 0 (`main`): transition 0 (`dec`): connection 0 names place 7, the net has 1 place"]
        .assert_eq(&e.to_string());

    let mut bundle = build(COUNTDOWN);
    bundle.codes[0].instrs.push(pnet_bundle::Instr::Jump(99));
    bundle.codes[0].spans.push(Default::default());
    expect!["code 0 (condition of dec): instruction 3 (Jump(99)) names jump target 99, the code has 4 instructions"]
        .assert_eq(&crate::validate(&bundle).unwrap_err());

    let mut bundle = build(COUNTDOWN);
    bundle.root = pnet_bundle::FunctionId(42);
    expect!["the root function 42 does not exist, the bundle has 2 functions"]
        .assert_eq(&crate::validate(&bundle).unwrap_err());

    let mut bundle = build(COUNTDOWN);
    bundle.codes[1].slots.clear();
    expect![
        "code 1 (expression of dec): instruction 0 (Load(0)) names slot 0, the code has 0 slots"
    ]
    .assert_eq(&crate::validate(&bundle).unwrap_err());
}

#[test]
fn type_mismatch_on_out_port() {
    check(
        "
net main
  place go control = []
  place r long
  trans wrong
    in go control <- go
    out x long -> r
    expr const 3; store x
end
",
        &[],
        expect![[r#"
            error: in transition `wrong` (test.xpnet:5:3): value 3 of port `x` is not of type long
        "#]],
    );
}

#[test]
fn shared_is_cleaned_up_when_the_last_token_is_consumed() {
    check(
        "
net main
  port in value string @value
  port out result string @cleanup
  place value string
  place sh shared_cleanup
  place cleanup string sink
  trans create
    in v string <- value
    out s shared_cleanup -> sh
    expr load v; shared cleanup; store s
  trans consume
    in s shared_cleanup <- sh
end
",
        &[("value", "\"alpha\" \"beta\"")],
        expect![[r#"
            result: "alpha" "beta"
            firings: 4
        "#]],
    );
}

#[test]
fn shared_copies_and_pass_through_keep_it_alive() {
    // `copy` reads the shared and puts a copy (count 2); `pass` consumes and re-puts it
    // (count unchanged); only when both copies are consumed does the clean-up happen.
    // `check` (priority 9) records the clean-up place's count whenever a shared is consumed.
    check(
        "
net main
  port out result string @cleanup
  port out seen ulong @seen
  place value string = \"x\"
  place sh shared_cleanup
  place copy shared_cleanup
  place passed shared_cleanup
  place flag control = []
  place cleanup string sink
  place seen ulong
  trans create prio 9
    in v string <- value
    out s shared_cleanup -> sh
    expr load v; shared cleanup; store s
  trans copy prio 8
    read s shared_cleanup <- sh
    in f control <- flag
    out s shared_cleanup -> copy
  trans pass prio 7
    in s shared_cleanup <- sh
    out s shared_cleanup -> passed
  trans drop_copy prio 6
    in s shared_cleanup <- copy
    count n ulong <- cleanup
    out n ulong -> seen
  trans drop_passed prio 5
    in s shared_cleanup <- passed
    count n ulong <- cleanup
    out n ulong -> seen
end
",
        &[],
        expect![[r#"
            result: "x"
            seen: 0UL 0UL
            firings: 5
        "#]],
    );
}

#[test]
fn nested_shared_dies_with_the_last_outer() {
    // Two outer shareds wrap structs holding the same inner shared: the inner is cleaned up
    // only after both outers are.
    check(
        "
net main
  port out o1 any @c1
  port out o2 any @c2
  port out inner int @ci
  place iv int = 5
  place s1 any
  place s2 any
  place c1 any sink
  place c2 any sink
  place ci int sink
  place log ulong
  trans create prio 9
    in iv int <- iv
    out a any -> s1
    out b any -> s2
    expr load iv; shared ci; dup; store a.inner; store b.inner; const 1L; store a.id; const 2L; store b.id; load a; shared c1; store a; load b; shared c2; store b
  trans consume1 prio 8
    in a any <- s1
  trans consume2 prio 7
    in b any <- s2
end
",
        &[],
        expect![[r#"
            o1: Struct [inner := shared_ci (5), id := 1L]
            o2: Struct [inner := shared_ci (5), id := 2L]
            inner: 5
            firings: 3
        "#]],
    );
}

#[test]
fn shared_cleanup_without_sink_place_is_an_error() {
    check(
        "
net main
  place v string = \"x\"
  place sh shared_nowhere
  trans create
    in v string <- v
    out s shared_nowhere -> sh
    expr load v; shared nowhere; store s
  trans consume
    in s shared_nowhere <- sh
end
",
        &[],
        expect![[r#"
            error: in transition `consume` (test.xpnet:9:3): no shared_sink place `nowhere` for the clean-up of a shared_nowhere value
        "#]],
    );
}

#[test]
fn oracle_shared_cleanup_with_number_of_tokens() {
    // share/doc/example/shared/cleanup_with_number_of_tokens.xpnet, transcribed.
    check(
        "
net main
  port in value1 string @value1
  port in value2 string @value2
  port in value3 string @value3
  port out result string @result
  place result string
  place value1 string
  place value2 string
  place value3 string
  place cleanup string sink
  place collect_trigger control
  place shared1 shared_cleanup
  place shared2 shared_cleanup
  place shared3 shared_cleanup
  trans create_shareds
    in value1 string <- value1
    in value2 string <- value2
    in value3 string <- value3
    out shared1 shared_cleanup -> shared1
    out shared2 shared_cleanup -> shared2
    out shared3 shared_cleanup -> shared3
    expr load value1; shared cleanup; store shared1; load value2; shared cleanup; store shared2; load value3; shared cleanup; store shared3
  trans consume1
    in shared shared_cleanup <- shared1
  trans consume2
    in shared shared_cleanup <- shared2
  trans consume3
    in shared shared_cleanup <- shared3
  trans check_all_ready
    count num_cleanups ulong <- cleanup
    out collect_trigger control -> collect_trigger
    expr const []; store collect_trigger
    cond load num_cleanups; const 3UL; ge
  trans collect
    read collect_trigger control <- collect_trigger
    in cleanup_value string <- cleanup
    out result string -> result
    expr load cleanup_value; store result
end
",
        &[("value1", "\"alpha\""), ("value2", "\"beta\""), ("value3", "\"gamma\"")],
        expect![[r#"
            result: "beta" "gamma" "alpha"
            firings: 8
        "#]],
    );
}

#[test]
fn put_token_adds_to_a_running_job() {
    let bundle = build(
        "
net main
  port out r long @r
  place inbox long put_token
  place r long
  trans take
    in x long <- inbox
    out x long -> r
end
",
    );
    let mut engine = Engine::new(&bundle, &RunConfig::default()).unwrap();
    assert!(matches!(engine.step().unwrap(), Step::Done));
    engine.put_token("inbox", Value::Long(4)).unwrap();
    assert!(matches!(engine.step().unwrap(), Step::Fired));
    assert!(matches!(engine.step().unwrap(), Step::Done));
    assert!(engine.put_token("r", Value::Long(1)).is_err());
    let r = engine.result();
    expect![[r#"r: 4L"#]].assert_eq(&format!("{}: {}", r.outputs[0].0, show(&r.outputs[0].1[0])));
}

/// A runner that implements only `CodeRunner::run` (through the interpreter) and counts its
/// calls: the provided `run_bool` and `run_effect` go through it.
#[derive(Debug, Default)]
struct CountingFactory(std::sync::Arc<std::sync::atomic::AtomicUsize>);

#[derive(Debug)]
struct CountingRunner(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl crate::CodeRunnerFactory for CountingFactory {
    fn runner(&self, _bundle: &pnet_bundle::Bundle) -> Box<dyn crate::CodeRunner> {
        Box::new(CountingRunner(self.0.clone()))
    }
}

impl crate::CodeRunner for CountingRunner {
    fn run(
        &mut self,
        _id: pnet_bundle::CodeId,
        code: &pnet_bundle::Code,
        frame: &mut [Option<Value>],
        interp: &mut crate::Interpreter,
    ) -> Result<Value, crate::RunError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        interp.run(code, frame)
    }
}

#[test]
fn a_runner_with_only_run_gets_conditions_and_expressions() {
    let factory = std::sync::Arc::new(CountingFactory::default());
    let config = RunConfig {
        runner: Some(factory.clone()),
        ..RunConfig::default()
    };
    let with = show_result(&run_text(COUNTDOWN, &[("start", "5L")], &config));
    let without = show_result(&run_text(
        COUNTDOWN,
        &[("start", "5L")],
        &RunConfig::default(),
    ));
    assert_eq!(with, without);
    expect![[r#"
        r: 0L
        firings: 5
    "#]]
    .assert_eq(&with);
    // Six conditions (5L down to 0L) and five expressions.
    assert_eq!(factory.0.load(std::sync::atomic::Ordering::Relaxed), 11);
    // A condition that is not a bool fails the same way through the provided `run_bool`.
    let not_bool = "
net main
  port in start long @n
  place n long
  trans t
    in n long <- n
    cond load n
end
";
    let with = show_result(&run_text(not_bool, &[("start", "5L")], &config));
    let without = show_result(&run_text(
        not_bool,
        &[("start", "5L")],
        &RunConfig::default(),
    ));
    assert_eq!(with, without);
    assert!(with.starts_with("error:"), "{with}");
}

/// The net of `examples/countdown`: a conditioned self-loop (`step`, priority 1) and a
/// condition-less `finish` on the same place. A firing of `step` takes and puts back one
/// token, so `finish` stays enabled without being re-examined (a skipped dirty mark); it
/// fires only once `step`'s condition fails.
#[test]
fn countdown_with_lower_priority_finish() {
    let net = "
net main
  port in start long @n
  port out done long @done
  place n long
  place done long
  trans step prio 1
    inout n long <-> n
    cond load n; const 0L; gt
    expr load n; const 1L; sub; dup; store n
  trans finish
    in n long <- n
    out r long -> done
    expr load n; dup; store r
end
";
    check(
        net,
        &[("start", "3L")],
        expect![[r#"
            done: 0L
            firings: 4
        "#]],
    );
    // Two tokens: `finish` may fire on either once `step` is disabled for the front one.
    check(
        net,
        &[("start", "2L"), ("start", "0L")],
        expect![[r#"
            done: 0L 0L
            firings: 4
        "#]],
    );
}

/// A take that leaves a place with fewer tokens than another condition-less transition
/// needs disables it (that mark is not skipped).
#[test]
fn take_disables_a_condition_less_neighbour() {
    check(
        "
net main
  port out a long @a
  port out b long @b
  place src long = 1L
  place a long
  place b long
  trans ta prio 1
    in x long <- src
    out x long -> a
  trans tb
    in x long <- src
    out x long -> b
end
",
        &[],
        expect![[r#"
            a: 1L
            b: 
            firings: 1
        "#]],
    );
}

/// Tokens that own memory (strings) move through the fast path's frame: taken, read (a copy)
/// and put back, in order.
#[test]
fn strings_through_the_fast_path() {
    check(
        r#"
net main
  port out out string @out
  port out kept string @keep
  place src string = "a" "b" "c"
  place keep string = "k"
  place out string
  trans move
    read k string <- keep
    in x string <- src
    out y string -> out
    expr load x; load k; add; store y
end
"#,
        &[],
        expect![[r#"
            out: "ak" "bk" "ck"
            kept: "k"
            firings: 3
        "#]],
    );
}

/// A transition without input connections is never enabled (GPI-Space): it does not fire,
/// not even once, with or without a condition; one with only a count input may fire.
#[test]
fn transition_without_inputs_never_fires() {
    check_config(
        "
net main
  port out a long @a
  place a long
  trans src
    out x long -> a
    expr const 7L; store x
  trans cond
    out x long -> a
    cond const true
    expr const 8L; store x
end
",
        &RunConfig {
            max_firings: Some(10),
            ..RunConfig::default()
        },
        expect![[r#"
            a: 
            firings: 0
        "#]],
    );
}
