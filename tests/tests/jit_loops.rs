//! Loop transitions (one scalar token through `connect-inout`, a condition and an
//! expression) compiled by the real compiler and run through the engine's batches, where the
//! code runner fires them in its own loop (`CodeRunner::run_loop`): with the JIT on (both
//! codes compiled, called straight from the loop), in auto mode (interpreted until the codes
//! turn hot, compiled in the middle of a loop) and off. Each must give what single engine
//! steps with the interpreter give: the same outputs and statistics, or the same error at the
//! same place, for loops that end, stop at the firing limit, or fail in the condition, in
//! the expression (division by zero, unsigned underflow) or on the type of the value.

use std::path::Path;
use std::sync::Arc;

use pnet_bundle::Bundle;
use pnet_engine::{CodeRunnerFactory, Engine, RunConfig, RunError, Step};
use pnet_jit::{JitFactory, JitMode};
use pnet_stdlib::Value;

fn compile(text: &str) -> Bundle {
    let out = pnet_sema::compile_source(
        Path::new("loop.xpnet"),
        text,
        &pnet_sema::Options::default(),
    );
    assert!(!out.has_errors(), "{text}\n{:?}", out.diagnostics);
    out.bundle.expect("a bundle")
}

/// A loop net over `ty` with the given condition and expression, and a transition of lower
/// priority that moves the final value out (as `examples/countdown`).
fn net(ty: &str, cond: &str, expr: &str) -> String {
    format!(
        r#"<defun name="loop">
  <in name="n" type="{ty}" place="counter"/>
  <out name="done" type="{ty}" place="done"/>
  <net>
    <place name="counter" type="{ty}"/>
    <place name="done" type="{ty}"/>
    <transition name="step" priority="1">
      <defun>
        <inout name="n" type="{ty}"/>
        <expression>{expr}</expression>
        <condition>{cond}</condition>
      </defun>
      <connect-inout port="n" place="counter"/>
    </transition>
    <transition name="finish">
      <defun>
        <in name="n" type="{ty}"/>
        <out name="result" type="{ty}"/>
        <expression>${{result}} := ${{n}}</expression>
      </defun>
      <connect-in port="n" place="counter"/>
      <connect-out port="result" place="done"/>
    </transition>
  </net>
</defun>"#
    )
}

/// The outcome of a run: outputs and statistics, or the error with its locations.
fn show(r: Result<pnet_engine::RunResult, RunError>) -> String {
    match r {
        Ok(r) => format!("{:?} {:?}", r.outputs, r.stats),
        Err(e) => format!(
            "error {e} at {:?} in {:?} at {:?}",
            e.at, e.transition, e.transition_at
        ),
    }
}

fn run(
    bundle: &Bundle,
    input: &Value,
    runner: Option<Arc<dyn CodeRunnerFactory>>,
    max_firings: Option<u64>,
    batched: bool,
) -> String {
    let config = RunConfig {
        runner,
        max_firings,
        ..RunConfig::default()
    };
    let mut e = Engine::new(bundle, &config).expect("engine");
    e.put_inputs(&[("n".into(), vec![input.clone()])])
        .expect("input");
    let r = loop {
        let step = if batched {
            e.run_steps(1000).map(|(_, s)| s)
        } else {
            e.step()
        };
        match step {
            Ok(Step::Fired) => {}
            Ok(Step::Done) => break Ok(e.result()),
            Ok(other) => panic!("unexpected {other:?}"),
            Err(err) => break Err(err),
        }
    };
    show(r)
}

#[test]
fn loops_in_the_code_runner_give_what_single_steps_give() {
    let cases: &[(&str, &str, &str, &[Value])] = &[
        // Ends (after crossing many batches).
        (
            "long",
            "${n} :gt: 0L",
            "${n} := ${n} - 1L",
            &[Value::Long(0), Value::Long(1), Value::Long(5000)],
        ),
        (
            "double",
            "${n} :gt: 0.5",
            "${n} := ${n} * 0.75",
            &[Value::Double(1e6), Value::Double(0.25)],
        ),
        (
            "int",
            "${n} :lt: 1000",
            "${n} := ${n} * 2 + 1",
            &[Value::Int(-3), Value::Int(1)],
        ),
        (
            "float",
            "${n} :lt: 1000.0f",
            "${n} := ${n} * 1.5f + 0.25f",
            &[Value::Float(1.0), Value::Float(2000.0)],
        ),
        // Fails in the expression: unsigned underflow (the condition lets 0 through).
        (
            "unsigned long",
            "${n} :ge: 0UL",
            "${n} := ${n} - 1UL",
            &[Value::ULong(3000)],
        ),
        // Fails in the expression: division by zero at n = 7.
        (
            "long",
            "${n} :gt: 0L",
            "${n} := ${n} - 1L + 0L * (100L div (${n} - 8L))",
            &[Value::Long(2500), Value::Long(5)],
        ),
        // Fails in the condition: division by zero at n = 3.
        (
            "unsigned int",
            "100U div (${n} - 3U) :gt: 0U",
            "${n} := ${n} - 1U",
            &[Value::UInt(2100), Value::UInt(2)],
        ),
        // Collatz steps on one token (the branch as arithmetic: the language has none).
        (
            "unsigned long",
            "${n} :ne: 1UL",
            "${n} := (${n} mod 2UL) * (3UL * ${n} + 1UL) + (1UL - ${n} mod 2UL) * (${n} div 2UL)",
            &[Value::ULong(27), Value::ULong(97)],
        ),
    ];
    let factories = [
        ("on", JitMode::On),
        ("auto", JitMode::Auto),
        ("off", JitMode::Off),
    ];
    let mut checked = 0;
    for (ty, cond, expr, inputs) in cases {
        let text = net(ty, cond, expr);
        let bundle = compile(&text);
        for input in *inputs {
            for max in [None, Some(1), Some(777)] {
                let want = run(&bundle, input, None, max, false);
                for (name, mode) in factories {
                    let factory: Arc<dyn CodeRunnerFactory> = Arc::new(JitFactory::new(mode));
                    let got = run(&bundle, input, Some(factory), max, true);
                    assert_eq!(
                        got, want,
                        "jit {name}, {ty} from {input:?}, limit {max:?}:\n{cond}\n{expr}"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 16 * 3 * 3);
}

/// The JIT's statistics show the loop's codes as native runs: both codes of each firing.
#[test]
fn the_jit_runs_a_loop_natively() {
    let bundle = compile(&net("long", "${n} :gt: 0L", "${n} := ${n} - 1L"));
    let factory = Arc::new(JitFactory::new(JitMode::On));
    let out = run(
        &bundle,
        &Value::Long(10_000),
        Some(factory.clone()),
        None,
        true,
    );
    assert!(out.contains("firings: 10001"), "{out}");
    let stats = factory.stats();
    assert_eq!(stats.compiled, 3, "{stats}");
    // 10,000 condition runs that hold and one that does not, 10,000 expressions, and the
    // `finish` expression: all native.
    assert_eq!(stats.native_runs, 20_002, "{stats}");
    assert_eq!(stats.interpreted_runs, 0, "{stats}");
}
