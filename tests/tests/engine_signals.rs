//! The engine's client-facing signals on corpus nets, compiled by the real compiler: workflow
//! responses (`connect-response`), eureka groups (`connect-eureka` and `eureka-group`), and
//! `drts.wait_for_output`. The agent's tests cover the same through workers; these pin the
//! engine's part.

use std::path::Path;

use pnet_bundle::Bundle;
use pnet_engine::{Engine, RunConfig, Step, Task};
use pnet_stdlib::Value;
use pnet_tests::gpispace;

fn compile(rel: &str) -> Bundle {
    let path = gpispace().join(rel);
    let out = pnet_sema::compile_path(Path::new(&path), &pnet_sema::Options::default());
    assert!(!out.has_errors(), "{rel}: {:?}", out.diagnostics);
    out.bundle.expect("a bundle")
}

/// Steps until the engine waits or is done; returns the tasks handed out.
fn settle(engine: &mut Engine) -> (Vec<Task>, bool) {
    let mut tasks = Vec::new();
    loop {
        match engine.step().expect("step") {
            Step::Fired => {}
            Step::Task(t) => tasks.push(t),
            Step::Waiting => return (tasks, false),
            Step::Done => return (tasks, true),
        }
    }
}

#[test]
fn workflow_response_from_an_expression() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let bundle = compile("test/drts/workflow_response/workflow_response_expression.xpnet");
    let mut e = Engine::new(&bundle, &RunConfig::default()).unwrap();
    e.put_inputs(&[
        ("state".into(), vec![Value::ULong(5)]),
        ("register_host".into(), vec![Value::String("h".into())]),
        ("register_port".into(), vec![Value::UInt(1)]),
    ])
    .unwrap();
    let (tasks, done) = settle(&mut e);
    assert_eq!(tasks.len(), 1, "the register module call");
    assert_eq!(tasks[0].name, "register");
    assert!(!done);
    e.complete_task(tasks[0].id, Vec::new()).unwrap();

    let id1 = e
        .request_response("get_and_update_state", Value::ULong(3))
        .unwrap();
    let id2 = e
        .request_response("get_and_update_state", Value::ULong(10))
        .unwrap();
    assert_ne!(id1, id2);
    // Without `drts.wait_for_output`, the engine reports the job done once nothing is
    // enabled; a driver with clients attached decides whether to end it.
    let (_, done) = settle(&mut e);
    assert!(done);
    let mut answers = e.take_responses();
    answers.sort_by(|a, b| a.0.cmp(&b.0));
    // The state starts at 5; the two requests fire in some order, each answering the state
    // before its own update.
    let a1 = answers.iter().find(|(i, _)| *i == id1).unwrap().1.clone();
    let a2 = answers.iter().find(|(i, _)| *i == id2).unwrap().1.clone();
    assert!(
        (a1 == Value::ULong(5) && a2 == Value::ULong(8))
            || (a2 == Value::ULong(5) && a1 == Value::ULong(15)),
        "{a1} {a2}"
    );
    assert!(e.take_responses().is_empty());
    e.put_token("done", Value::Control).unwrap();
    let (_, done) = settle(&mut e);
    assert!(done);
    let result = e.result();
    let state = &result.outputs.iter().find(|(p, _)| p == "state").unwrap().1;
    assert_eq!(state, &vec![Value::ULong(18)]);
}

#[test]
fn request_response_needs_a_put_token_place() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let bundle = compile("test/drts/workflow_response/workflow_response_expression.xpnet");
    let mut e = Engine::new(&bundle, &RunConfig::default()).unwrap();
    let err = e.request_response("state", Value::ULong(1)).unwrap_err();
    assert!(err.to_string().contains("put_token"), "{err}");
}

#[test]
fn eureka_names_the_group_of_pending_tasks() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let bundle = compile("test/we/eureka/xpnet/pending_tasks_are_removed.xpnet");
    let mut e = Engine::new(&bundle, &RunConfig::default()).unwrap();
    assert!(e.waits_for_output());
    e.put_inputs(&[
        ("register_host".into(), vec![Value::String("h".into())]),
        ("register_port".into(), vec![Value::Int(1)]),
    ])
    .unwrap();
    e.put_token("eureka_group", Value::String("g1".into()))
        .unwrap();
    for k in 0..3 {
        e.put_token("task", Value::String(format!("t{k}").into()))
            .unwrap();
    }
    let (tasks, done) = settle(&mut e);
    assert!(!done);
    assert_eq!(tasks.len(), 3);
    assert!(
        tasks
            .iter()
            .all(|t| t.eureka_group.as_deref() == Some("g1"))
    );
    assert!(e.take_eurekas().is_empty());
    // Nothing is enabled, tasks run, no output yet: waiting.
    e.put_token("eureka", Value::Int(42)).unwrap();
    let (more, _) = settle(&mut e);
    assert!(more.is_empty());
    assert_eq!(e.take_eurekas(), vec!["g1".to_string()]);
    for t in &tasks {
        e.discard_task(t.id).unwrap();
    }
    assert_eq!(e.running_tasks(), 0);
    let (_, done) = settle(&mut e);
    assert!(done, "the result is there and no task runs");
    let result = e.result();
    assert_eq!(
        result.outputs,
        vec![("result".to_string(), vec![Value::Int(42)])]
    );
}

#[test]
fn wait_for_output_keeps_an_idle_job_alive() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let bundle = compile("share/doc/example/shared/cleanup_with_put_token.xpnet");
    let mut e = Engine::new(&bundle, &RunConfig::default()).unwrap();
    e.put_inputs(&[
        ("value1".into(), vec![Value::String("alpha".into())]),
        ("value2".into(), vec![Value::String("beta".into())]),
    ])
    .unwrap();
    let (tasks, done) = settle(&mut e);
    assert!(tasks.is_empty());
    assert!(!done, "no output yet: the job waits");
    assert_eq!(e.running_tasks(), 0);
    for v in ["external_value_1", "external_value_2"] {
        e.put_token("external_cleanup", Value::String(v.into()))
            .unwrap();
    }
    let (_, done) = settle(&mut e);
    assert!(!done);
    e.put_token("done_flag", Value::Control).unwrap();
    let (_, done) = settle(&mut e);
    assert!(done);
    let out = e.result().outputs;
    let Value::List(xs) = &out[0].1[0] else {
        panic!("{out:?}")
    };
    let mut got: Vec<String> = xs.iter().map(|v| v.to_string()).collect();
    got.sort();
    assert_eq!(
        got,
        [
            "\"alpha\"",
            "\"beta\"",
            "\"external_value_1\"",
            "\"external_value_2\""
        ]
    );
}
