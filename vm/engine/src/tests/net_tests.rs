//! Nets in the IR text form, run step by step or with a closer look than `tests/data/engine`.

use expect_test::expect;
use pnet_bundle::PortId;
use pnet_stdlib::Value;

use super::{parse_net, run_text, show, show_result};
use crate::{Engine, RunConfig, Step};

const COUNTDOWN: &str = r#"
bundle root f0 main

function f0 main
  in start : long = p0 n
  out r : long = p0 n
  net
    place p0 n : long
    transition t0 dec priority 0 -> f1 dec
      in n <- p0 n
      out n -> p0 n
      condition c0

function f1 dec
  inout n : long
  expression c1

code c0 "condition of dec" : any
  slot 0 port n : long
  const 0 0L
  reads n
  0  load        n
  1  const       0L
  2  gt

code c1 "expression of dec" : any
  slot 0 port n : long
  const 0 1L
  reads n
  0  load        n
  1  const       1L
  2  sub
  3  store       n
"#;

const RACE: &str = r#"
bundle root f0 main

function f0 main
  out a : long = p1 a
  out b : long = p2 b
  net
    place p0 p : long
      token 1L
      token 2L
      token 3L
      token 4L
      token 5L
      token 6L
      token 7L
      token 8L
      token 9L
      token 10L
    place p1 a : long
    place p2 b : long
    transition t0 to_a priority 0 -> f1 to_a
      in x <- p0 p
      out x -> p1 a
    transition t1 to_b priority 0 -> f2 to_b
      in x <- p0 p
      out x -> p2 b

function f1 to_a
  inout x : long
  expression c0

function f2 to_b
  inout x : long
  expression c1

code c0 "expression of to_a" : any
  slot 0 port x : long

code c1 "expression of to_b" : any
  slot 0 port x : long
"#;

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
    let bundle = parse_net(
        r#"
bundle root f0 main
file 0 "test.xpnet" lines 0 1 10 31 53 76 91 107 131 151 170 190 215 236 259 283 304 308

function f0 main  @ test.xpnet:2:1-2
  out q : long = p1 q  @ 3:3-4
  out r : unsigned long = p2 r  @ 4:3-4
  net
    place p0 p : long  @ test.xpnet:5:3-4
      token 1L
      token 2L
    place p1 q : long  @ test.xpnet:6:3-4
    place p2 r : unsigned long  @ test.xpnet:7:3-4
    place p3 go : control  @ test.xpnet:8:3-4
      token []
    transition t0 work priority 2 -> f1 work  @ test.xpnet:9:3-4
      in x <- p0 p  @ 10:5-6
      out y -> p1 q  @ 11:5-6
    transition t1 probe priority 1 -> f2 probe  @ test.xpnet:13:3-4
      number-of-tokens c <- p0 p  @ 14:5-6
      in go <- p3 go  @ 15:5-6
      out c -> p2 r  @ 16:5-6

function f1 work  @ test.xpnet:9:3-4
  in x : long  @ 10:5-6
  out y : long  @ 11:5-6
  module mymod "compute ()"  @ 12:5-6

function f2 probe  @ test.xpnet:13:3-4
  inout c : unsigned long  @ 14:5-6
  in go : control  @ 15:5-6
  expression c0

code c0 "expression of probe" : any  @ test.xpnet:1:1-2:1
  slot 0 port c : unsigned long
  slot 1 port go : control
"#,
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
    let bundle = parse_net(
        r#"
bundle root f0 main
file 0 "test.xpnet" lines 0 1 10 30 43 62 87 91

function f0 main  @ test.xpnet:2:1-2
  net
    place p0 p : long  @ test.xpnet:3:3-4
      token 1L
    transition t0 work priority 0 -> f1 work  @ test.xpnet:4:3-4
      in x <- p0 p  @ 5:5-6

function f1 work  @ test.xpnet:4:3-4
  in x : long  @ 5:5-6
  module mymod "compute ()"  @ 6:5-6
"#,
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
    let mut bundle = parse_net(COUNTDOWN);
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

    let mut bundle = parse_net(COUNTDOWN);
    bundle.codes[0].instrs.push(pnet_bundle::Instr::Jump(99));
    bundle.codes[0].spans.push(Default::default());
    expect!["code 0 (condition of dec): instruction 3 (Jump(99)) names jump target 99, the code has 4 instructions"]
        .assert_eq(&crate::validate(&bundle).unwrap_err());

    let mut bundle = parse_net(COUNTDOWN);
    bundle.root = pnet_bundle::FunctionId(42);
    expect!["the root function 42 does not exist, the bundle has 2 functions"]
        .assert_eq(&crate::validate(&bundle).unwrap_err());

    let mut bundle = parse_net(COUNTDOWN);
    bundle.codes[1].slots.clear();
    expect![
        "code 1 (expression of dec): instruction 0 (Load(0)) names slot 0, the code has 0 slots"
    ]
    .assert_eq(&crate::validate(&bundle).unwrap_err());
}

#[test]
fn put_token_adds_to_a_running_job() {
    let bundle = parse_net(
        r#"
bundle root f0 main

function f0 main
  out r : long = p1 r
  net
    place p0 inbox : long put_token
    place p1 r : long
    transition t0 take priority 0 -> f1 take
      in x <- p0 inbox
      out x -> p1 r

function f1 take
  inout x : long
  expression c0

code c0 "expression of take" : any
  slot 0 port x : long
"#,
    );
    let mut engine = Engine::new(&bundle, &RunConfig::default()).unwrap();
    assert!(matches!(engine.step().unwrap(), Step::Done));
    engine.put_token("inbox", Value::Long(4)).unwrap();
    assert!(matches!(engine.step().unwrap(), Step::Fired));
    assert!(matches!(engine.step().unwrap(), Step::Done));
    // an unknown or not put_token place: the nearest put_token place and the list of them
    let e = engine.put_token("inbx", Value::Long(1)).unwrap_err();
    expect![[r#"bad input: no put_token place `inbx`; did you mean `inbox`? (the root net's put_token places: inbox (long))"#]]
        .assert_eq(&e.to_string());
    let e = engine.put_token("r", Value::Long(1)).unwrap_err();
    expect![[
        r#"bad input: no put_token place `r` (the root net's put_token places: inbox (long))"#
    ]]
    .assert_eq(&e.to_string());
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
    let not_bool = r#"
bundle root f0 main

function f0 main
  in start : long = p0 n
  net
    place p0 n : long
    transition t0 t priority 0 -> f1 t
      in n <- p0 n
      condition c0

function f1 t
  in n : long
  expression c1

code c0 "condition of t" : any
  slot 0 port n : long
  reads n
  0  load        n

code c1 "expression of t" : any
  slot 0 port n : long
"#;
    let with = show_result(&run_text(not_bool, &[("start", "5L")], &config));
    let without = show_result(&run_text(
        not_bool,
        &[("start", "5L")],
        &RunConfig::default(),
    ));
    assert_eq!(with, without);
    assert!(with.starts_with("error:"), "{with}");
}
