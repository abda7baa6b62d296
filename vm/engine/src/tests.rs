//! Engine tests on nets and codes in the IR text form (`pnet_bundle::text`, see
//! `vm/bundle/src/text.rs`). Nets that only run to a result live in `tests/data/engine/*.ir`
//! (with their `.run`); the tests here look at more: steps, tasks, statistics, the ending.
//!
//! Many nets were printed from bundles built by an earlier private test format: their
//! locations (`test.xpnet:LINE:COL`) name lines of that format's text, which is gone.

use expect_test::Expect;
use pnet_bundle::Bundle;
use pnet_stdlib::Value;

use crate::{Interpreter, RunConfig, RunResult, run};

/// Reads a net in the IR text form (panics with the reader's errors).
pub(crate) fn parse_net(text: &str) -> Bundle {
    pnet_bundle::text::parse(text).unwrap_or_else(|errors| {
        let shown: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        panic!("the test net does not read:\n{}\n{text}", shown.join("\n"))
    })
}

/// A value in literal syntax (`pnet_stdlib::literal`).
pub(crate) fn lit(s: &str) -> Value {
    pnet_stdlib::literal::parse_literal(s).unwrap_or_else(|e| panic!("literal {s}: {e}"))
}

// ------------------------------------------------------------------------------------------
// Showing results without depending on the stdlib's printer.

pub(crate) fn show(v: &Value) -> String {
    match v {
        Value::Control => "[]".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(x) => x.to_string(),
        Value::Long(x) => format!("{x}L"),
        Value::UInt(x) => format!("{x}U"),
        Value::ULong(x) => format!("{x}UL"),
        Value::Char(c) => format!("'{}'", *c as u8 as char),
        Value::String(s) => format!("\"{s}\""),
        Value::Bigint(b) => format!("{b}A"),
        Value::Shared(s) => format!("shared_{} ({})", s.place, show(&s.value)),
        Value::List(xs) => format!(
            "List ({})",
            xs.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        Value::Struct(fs) => format!(
            "Struct [{}]",
            fs.iter()
                .map(|(n, v)| format!("{n} := {}", show(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => format!("{other:?}"),
    }
}

fn show_result(r: &Result<RunResult, crate::RunError>) -> String {
    match r {
        Ok(r) => {
            let mut s = String::new();
            for (port, vs) in &r.outputs {
                let vs: Vec<String> = vs.iter().map(show).collect();
                s += &format!("{port}: {}\n", vs.join(" "));
            }
            s += &format!("firings: {}\n", r.stats.firings);
            s
        }
        Err(e) => format!("error: {e}\n"),
    }
}

fn run_text(
    text: &str,
    inputs: &[(&str, &str)],
    config: &RunConfig,
) -> Result<RunResult, crate::RunError> {
    let bundle = parse_net(text);
    crate::validate(&bundle).unwrap_or_else(|e| panic!("invalid test bundle: {e}"));
    let inputs: Vec<(String, Vec<Value>)> = inputs
        .iter()
        .map(|(p, vs)| (p.to_string(), vs.split_whitespace().map(lit).collect()))
        .collect();
    run(&bundle, &inputs, config)
}

/// Reads a `code c0` block of the IR text form (in a bundle of one function, whose file
/// `test` has one line).
pub(crate) fn code_of(code: &str) -> pnet_bundle::Code {
    let text = format!(
        "bundle root f0 test\nfile 0 \"test\" lines 0\n\nfunction f0 test\n  expression c0\n\n{code}"
    );
    parse_net(&text).codes.swap_remove(0)
}

/// Runs a code (a `code c0` block of the IR text form, over the slots given, in order) and
/// shows the value, the frame after, or the error (with the byte offset of its location in
/// the one-line file `test`, when the code has locations).
fn check_code(code: &str, slots: &[(&str, Option<&str>)], expect: Expect) {
    let text = format!(
        "bundle root f0 test\nfile 0 \"test\" lines 0\n\nfunction f0 test\n  expression c0\n\n{code}"
    );
    let bundle = parse_net(&text);
    let code = &bundle.codes[0];
    let mut frame: Vec<Option<Value>> = slots.iter().map(|(_, v)| v.map(lit)).collect();
    frame.resize(code.slots.len(), None);
    let r = Interpreter::new().run(code, &mut frame);
    let mut out = match r {
        Ok(v) => format!("value: {}\n", show(&v)),
        Err(e) => match e.span {
            Some(sp) => format!("error: {e} (byte {})\n", sp.start),
            None => format!("error: {e}\n"),
        },
    };
    for (s, v) in code.slots.iter().zip(&frame) {
        out += &format!(
            "{}: {}\n",
            s.name,
            v.as_ref().map(show).unwrap_or_else(|| "-".into())
        );
    }
    expect.assert_eq(&out);
}

thread_local! {
    /// How the engine's runner loops ended on this thread, by kind (see `count_loop`).
    static LOOP_ENDS: std::cell::RefCell<std::collections::BTreeMap<&'static str, u64>> =
        Default::default();
    /// Whether the enabling search resumes after tokens known to fail (on this thread).
    static SCAN_CACHE: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

pub(crate) fn scan_cache_on() -> bool {
    SCAN_CACHE.with(|c| c.get())
}

pub(crate) fn set_scan_cache(on: bool) {
    SCAN_CACHE.with(|c| c.set(on));
}

/// Counts the end of a runner loop (for tests that must reach each kind).
pub(crate) fn count_loop(end: &crate::LoopEnd) {
    let kind = match end {
        crate::LoopEnd::Budget => "budget",
        crate::LoopEnd::Disabled => "disabled",
        crate::LoopEnd::Condition(_) => "condition",
        crate::LoopEnd::Expression(_) => "expression",
        crate::LoopEnd::Missing => "missing",
        crate::LoopEnd::Mismatch(_) => "mismatch",
    };
    LOOP_ENDS.with(|m| *m.borrow_mut().entry(kind).or_insert(0) += 1);
}

/// The loop ends counted on this thread so far.
pub(crate) fn loop_ends() -> std::collections::BTreeMap<&'static str, u64> {
    LOOP_ENDS.with(|m| m.borrow().clone())
}

mod batch_tests;
mod ending_tests;
mod interp_tests;
mod memory_tests;
mod net_tests;
mod place_map_tests;
