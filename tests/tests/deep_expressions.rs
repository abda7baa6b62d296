//! The deepest expression the parser accepts ([`MAX_EXPR_DEPTH`]) goes through the whole
//! pipeline — parse, check, emit, run (interpreter and JIT), print — on a 2 MiB thread stack
//! in a debug build; one level more is an `expression_too_deep` diagnostic, not a crash
//! (issue 20: a 5,000-term sum or 10,000 unary minus signs overflowed the stack).

use std::path::Path;
use std::sync::Arc;

use pnet_engine::{CodeRunnerFactory, Engine, RunConfig, Step};
use pnet_jit::{JitFactory, JitMode};
use pnet_stdlib::Value;
use pnet_syntax::expr::{MAX_EXPR_DEPTH, parse_str, to_sexpr, to_source};

/// A net whose one transition computes `${r}` from `${n}` (both `long`) with `expr`, guarded
/// by `cond`.
fn net(expr: &str, cond: &str) -> String {
    format!(
        r#"<defun name="deep">
  <in name="n" type="long" place="a"/>
  <out name="r" type="long" place="b"/>
  <net>
    <place name="a" type="long"/>
    <place name="b" type="long"/>
    <transition name="t">
      <defun>
        <in name="n" type="long"/>
        <out name="r" type="long"/>
        <expression>{expr}</expression>
        <condition>{cond}</condition>
      </defun>
      <connect-in port="n" place="a"/>
      <connect-out port="r" place="b"/>
    </transition>
  </net>
</defun>"#
    )
}

/// Compiles and runs the net with input `n`, with the given code runner; the value on `r`.
fn run(text: &str, n: i64, runner: Option<Arc<dyn CodeRunnerFactory>>) -> Value {
    let out = pnet_sema::compile_source(
        Path::new("deep.xpnet"),
        text,
        &pnet_sema::Options::default(),
    );
    assert!(!out.has_errors(), "{:?}", out.diagnostics);
    let bundle = out.bundle.expect("a bundle");
    let config = RunConfig {
        runner,
        ..RunConfig::default()
    };
    let mut e = Engine::new(&bundle, &config).expect("engine");
    e.put_inputs(&[("n".into(), vec![Value::Long(n)])])
        .expect("input");
    loop {
        match e.run_steps(100).map(|(_, s)| s).expect("run") {
            Step::Fired => {}
            Step::Done => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    let result = e.result();
    let (_, values) = result
        .outputs
        .iter()
        .find(|(name, _)| name == "r")
        .expect("output r");
    assert_eq!(values.len(), 1, "{:?}", result.outputs);
    values[0].clone()
}

/// Runs `f` on a thread with a 2 MiB stack (the default for test threads; set explicitly so
/// the bound does not depend on `RUST_MIN_STACK`).
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("the thread finished without a panic or overflow");
}

/// Expressions of exactly `MAX_EXPR_DEPTH` levels (assignment and leaves included), each
/// with the value it gives for `${n} = 5`.
fn deepest() -> Vec<(String, i64)> {
    let k = MAX_EXPR_DEPTH - 2;
    vec![
        // Left-associative chain: `${r} := ${n} + 1L + 1L ...`.
        (
            format!("${{r}} := ${{n}}{}", " + 1L".repeat(k)),
            5 + k as i64,
        ),
        // Right-nested: `${r} := 1L + (1L + (... + ${n}))`.
        (
            format!("${{r}} := {}${{n}}{}", "1L + (".repeat(k), ")".repeat(k)),
            5 + k as i64,
        ),
        // Prefix chain of unary minus signs (an even number).
        (format!("${{r}} := {}${{n}}", "- ".repeat(k - k % 2)), 5),
        // A constant chain (folded by the compiler).
        (format!("${{r}} := 5L{}", " + 1L".repeat(k)), 5 + k as i64),
        // Calls nested in calls.
        (
            format!("${{r}} := {}${{n}}{}", "abs (".repeat(k), ")".repeat(k)),
            5,
        ),
    ]
}

#[test]
fn the_deepest_allowed_expression_goes_through_the_whole_pipeline_on_a_2_mib_stack() {
    on_small_stack(|| {
        for (expr, want) in deepest() {
            // Parse and print (the printer recurses over the tree).
            let (e, diags) = parse_str(&expr);
            assert!(diags.is_empty(), "{diags:?}");
            let printed = to_source(&e);
            let (again, diags) = parse_str(&printed);
            assert!(diags.is_empty(), "{diags:?}");
            assert_eq!(to_sexpr(&again), to_sexpr(&e));
            // Check, emit and run: interpreted, then compiled by the JIT.
            let cond = expr.replacen("${r} :=", "", 1) + " :ge: 0L";
            let text = net(&expr, &cond);
            assert_eq!(run(&text, 5, None), Value::Long(want), "{expr}");
            let jit: Arc<dyn CodeRunnerFactory> = Arc::new(JitFactory::new(JitMode::On));
            assert_eq!(run(&text, 5, Some(jit)), Value::Long(want), "{expr}");
        }
    });
}

#[test]
fn one_level_more_is_a_diagnostic_not_a_crash() {
    on_small_stack(|| {
        for (expr, _) in deepest() {
            // One more level on the operand side: wrap the whole right side in `abs`.
            let (lhs, rhs) = expr.split_once(":=").unwrap();
            let expr = format!("{lhs}:= abs ({rhs})");
            let out = pnet_sema::compile_source(
                Path::new("deep.xpnet"),
                &net(&expr, "true"),
                &pnet_sema::Options::default(),
            );
            let codes: Vec<_> = out.diagnostics.iter().map(|d| d.code).collect();
            assert_eq!(codes, ["expression_too_deep"], "{expr}");
        }
        // The issue's inputs: 5,000 terms, 10,000 signs.
        for expr in [
            format!("${{r}} := ${{n}}{}", " + 1L".repeat(5000)),
            format!("${{r}} := {}${{n}}", "- ".repeat(10_000)),
        ] {
            let out = pnet_sema::compile_source(
                Path::new("deep.xpnet"),
                &net(&expr, &expr.replacen("${r} :=", "", 1)),
                &pnet_sema::Options::default(),
            );
            let codes: Vec<_> = out.diagnostics.iter().map(|d| d.code).collect();
            assert_eq!(codes, ["expression_too_deep", "expression_too_deep"]);
        }
    });
}

/// Nets nest this deep in functions (`MAX_DEPTH` in compiler/sema/src/elab/mod.rs: a transition
/// is refused in a function nested deeper).
const MAX_NESTED_FUNCTIONS: usize = 32;

/// A function whose net's one transition runs the function of `depth - 1` levels, down to an
/// expression `${y} := ${x} + 1L`.
fn nested_net(depth: usize) -> String {
    let mut text = r#"<defun name="f"><in name="x" type="long"/><out name="y" type="long"/><expression>${y} := ${x} + 1L</expression></defun>"#.to_string();
    for _ in 0..depth {
        text = format!(
            r#"<defun name="f"><in name="x" type="long" place="a"/><out name="y" type="long" place="b"/><net><place name="a" type="long"/><place name="b" type="long"/><transition name="t">{text}<connect-in port="x" place="a"/><connect-out port="y" place="b"/></transition></net></defun>"#
        );
    }
    text
}

/// Nets nested in nets (elaboration recurses once per level): up to the elaborator's limit
/// they compile and run on a 2 MiB stack; deeper is `recursion_limit`, as is a function
/// that uses itself; deeper than the XML front end's limit is `nesting_too_deep`.
#[test]
fn nested_nets_are_bounded_on_a_2_mib_stack() {
    on_small_stack(|| {
        let compile = |text: &str| {
            pnet_sema::compile_source(
                Path::new("nested.xpnet"),
                text,
                &pnet_sema::Options::default(),
            )
        };
        let ok = compile(&nested_net(MAX_NESTED_FUNCTIONS));
        assert!(!ok.has_errors(), "{:?}", ok.diagnostics);
        let config = RunConfig::default();
        let bundle = ok.bundle.expect("a bundle");
        let mut e = Engine::new(&bundle, &config).expect("engine");
        e.put_inputs(&[("x".into(), vec![Value::Long(5)])])
            .expect("input");
        while let Step::Fired = e.run_steps(100).map(|(_, s)| s).expect("run") {}
        let result = e.result();
        assert_eq!(result.outputs, [("y".to_string(), vec![Value::Long(6)])]);

        let deep = compile(&nested_net(MAX_NESTED_FUNCTIONS + 1));
        let codes: Vec<_> = deep.diagnostics.iter().map(|d| d.code).collect();
        assert!(codes.contains(&"recursion_limit"), "{codes:?}");
        let deeper = compile(&nested_net(1000));
        let codes: Vec<_> = deeper.diagnostics.iter().map(|d| d.code).collect();
        assert!(codes.contains(&"nesting_too_deep"), "{codes:?}");

        let recursive = r#"<defun name="top"><in name="x" type="long" place="a"/><out name="y" type="long" place="b"/><net>
  <template name="g"><defun name="g"><in name="x" type="long" place="a"/><out name="y" type="long" place="b"/><net><place name="a" type="long"/><place name="b" type="long"/><transition name="t"><use name="g"/><connect-in port="x" place="a"/><connect-out port="y" place="b"/></transition></net></defun></template>
  <place name="a" type="long"/><place name="b" type="long"/>
  <transition name="t"><use name="g"/><connect-in port="x" place="a"/><connect-out port="y" place="b"/></transition>
</net></defun>"#;
        let codes: Vec<_> = compile(recursive)
            .diagnostics
            .iter()
            .map(|d| d.code)
            .collect();
        assert!(codes.contains(&"recursion_limit"), "{codes:?}");
    });
}

/// Structs nested in structs (generated): 63 levels compile on a 2 MiB stack; 200 and 300
/// levels, and a chain of 2,000 structs each naming the next, are `struct_too_deep` (one
/// diagnostic), not a stack overflow.
#[test]
fn deeply_nested_struct_types_are_safe_on_a_2_mib_stack() {
    on_small_stack(|| {
        for depth in [200, 300] {
            let structs = format!(
                "{}<field name=\"v\" type=\"long\"/>{}",
                "<struct name=\"s\">".repeat(depth),
                "</struct>".repeat(depth)
            );
            let text = format!(
                r#"<defun name="f"><struct name="top">{structs}</struct><in name="x" type="top"/><out name="y" type="long"/><expression>${{y}} := 1L</expression></defun>"#
            );
            let out = pnet_sema::compile_source(
                Path::new("structs.xpnet"),
                &text,
                &pnet_sema::Options::default(),
            );
            // Deeper than sema's limit (64), and for 300 the XML front end's (256).
            let codes: Vec<_> = out.diagnostics.iter().map(|d| d.code).collect();
            assert!(codes.contains(&"struct_too_deep"), "{depth}: {codes:?}");
            assert_eq!(codes.contains(&"nesting_too_deep"), depth == 300);
        }
        let chain: String = (0..2000)
            .map(|i| {
                format!(
                    r#"<struct name="t{i}"><field name="v" type="t{}"/></struct>"#,
                    i + 1
                )
            })
            .collect();
        let text = format!(
            r#"<defun name="f"><struct name="t2000"><field name="v" type="long"/></struct>{chain}<in name="x" type="t0"/><out name="y" type="long"/><expression>${{y}} := 1L</expression></defun>"#
        );
        let out = pnet_sema::compile_source(
            Path::new("chain.xpnet"),
            &text,
            &pnet_sema::Options::default(),
        );
        let codes: Vec<_> = out.diagnostics.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["struct_too_deep"]);
        // The deepest allowed: 63 structs inside `top`, compiled and run.
        let structs = format!(
            "{}<field name=\"v\" type=\"long\"/>{}",
            "<struct name=\"s\">".repeat(63),
            "</struct>".repeat(63)
        );
        let text = format!(
            r#"<defun name="f"><struct name="top">{structs}</struct><in name="x" type="top"/><out name="y" type="long"/><expression>${{y}} := 1L</expression></defun>"#
        );
        let out = pnet_sema::compile_source(
            Path::new("structs.xpnet"),
            &text,
            &pnet_sema::Options::default(),
        );
        assert!(!out.has_errors(), "{:?}", out.diagnostics);
    });
}

/// The issue's inputs through the command-line tools: a 5,000-term sum, 10,000 unary minus
/// signs, `${a} / 1L` 2,000 times. Each tool ends with an error, not a crash, and prints a
/// few lines (it was a SIGABRT, or 60 s and 51 MB of diagnostics).
#[test]
fn the_tools_report_deep_expressions_briefly() {
    let dir = std::env::temp_dir().join(format!("deep-expressions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exprs = [
        format!("${{r}} := ${{n}}{}", " + 1L".repeat(5000)),
        format!("${{r}} := {}${{n}}", "- ".repeat(10_000)),
        format!("${{r}} := ${{n}}{}", " / 1L".repeat(2000)),
    ];
    for (i, expr) in exprs.iter().enumerate() {
        let net_path = dir.join(format!("deep{i}.xpnet"));
        std::fs::write(&net_path, net(expr, "true")).unwrap();
        for (tool, args) in [
            ("pnetc", vec![net_path.clone(), dir.join("out.pnet")]),
            ("pnet2dot", vec![net_path.clone()]),
        ] {
            let mut cmd = std::process::Command::new(pnet_tests::bin(tool));
            if tool == "pnetc" {
                cmd.arg(&args[0]).arg("-o").arg(&args[1]);
            } else {
                cmd.args(&args);
            }
            let out = cmd.output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{tool} {i}: {stderr}");
            assert!(
                stderr.contains("error[expression_too_deep]"),
                "{tool}: {stderr}"
            );
            assert!(stderr.len() < 5000, "{tool} {i}: {} bytes", stderr.len());
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Properties nested in properties as deep as the XML front end allows (generated): compiled
/// on a 2 MiB stack (their names are joined into dotted keys, recursively).
#[test]
fn deeply_nested_properties_are_safe_on_a_2_mib_stack() {
    on_small_stack(|| {
        for depth in [250, 300] {
            let text = format!(
                r#"<defun name="f">{}<property key="k">v</property>{}<in name="n" type="long"/><out name="r" type="long"/><expression>${{r}} := ${{n}}</expression></defun>"#,
                "<properties name=\"p\">".repeat(depth),
                "</properties>".repeat(depth)
            );
            let out = pnet_sema::compile_source(
                Path::new("props.xpnet"),
                &text,
                &pnet_sema::Options::default(),
            );
            let codes: Vec<_> = out.diagnostics.iter().map(|d| d.code).collect();
            if depth == 300 {
                assert!(codes.contains(&"nesting_too_deep"), "{codes:?}");
            } else {
                assert!(codes.is_empty(), "{codes:?}");
            }
        }
    });
}

/// A value that grows one level per firing (a list wrapped in a list, 100,000 times) stops at
/// `MAX_VALUE_DEPTH` with a run-time error naming the function, in the interpreter and the
/// JIT, on a 2 MiB stack (it used to build a value whose drop or print overflowed the stack).
#[test]
fn a_value_that_nests_in_a_loop_stops_with_an_error() {
    nests_in_a_loop(
        "list",
        "List ()",
        "stack_push (List (), ${l})",
        "stack_push: the result would nest deeper than 200 levels",
        "",
    );
}

/// The same with `shared_P` wrapping a value in a value (it did not check the depth).
#[test]
fn a_shared_value_that_nests_in_a_loop_stops_with_an_error() {
    nests_in_a_loop(
        "shared_cleanup",
        "shared_cleanup (0L)",
        "shared_cleanup (${l})",
        "shared_cleanup: the result would nest deeper than 200 levels",
        r#"<place name="cleanup" type="shared_cleanup" shared_sink="true"/>"#,
    );
}

/// Runs a loop that sets the `l` token (of type `ty`, first `first`) to `step` 100,000
/// times, interpreted and with the JIT, and expects the run to stop with `message`; `extra`
/// are more places of the net.
fn nests_in_a_loop(ty: &str, first: &str, step: &str, message: &'static str, extra: &str) {
    let text = r#"<defun name="wrap">
  <in name="n" type="long" place="a"/>
  <out name="r" type="TY" place="b"/>
  <net>
    <place name="a" type="long"/>
    <place name="l" type="TY"><token><value>FIRST</value></token></place>
    <place name="b" type="TY"/>
    EXTRA
    <transition name="wrap">
      <defun>
        <inout name="n" type="long"/>
        <inout name="l" type="TY"/>
        <expression>${l} := STEP; ${n} := ${n} - 1L</expression>
        <condition>${n} :gt: 0L</condition>
      </defun>
      <connect-inout port="n" place="a"/>
      <connect-inout port="l" place="l"/>
    </transition>
    <transition name="done">
      <defun>
        <in name="n" type="long"/>
        <in name="l" type="TY"/>
        <out name="r" type="TY"/>
        <expression>${r} := ${l}</expression>
        <condition>${n} :eq: 0L</condition>
      </defun>
      <connect-in port="n" place="a"/>
      <connect-in port="l" place="l"/>
      <connect-out port="r" place="b"/>
    </transition>
  </net>
</defun>"#
        .replace("TY", ty)
        .replace("FIRST", first)
        .replace("STEP", step)
        .replace("EXTRA", extra);
    for jit in [false, true] {
        let text = text.clone();
        on_small_stack(move || {
            let out = pnet_sema::compile_source(
                Path::new("wrap.xpnet"),
                &text,
                &pnet_sema::Options::default(),
            );
            assert!(!out.has_errors(), "{:?}", out.diagnostics);
            let bundle = out.bundle.expect("a bundle");
            let runner: Option<Arc<dyn CodeRunnerFactory>> =
                jit.then(|| Arc::new(JitFactory::new(JitMode::On)) as Arc<dyn CodeRunnerFactory>);
            let config = RunConfig {
                runner,
                ..RunConfig::default()
            };
            let mut e = Engine::new(&bundle, &config).expect("engine");
            e.put_inputs(&[("n".into(), vec![Value::Long(100_000)])])
                .expect("input");
            let err = loop {
                match e.run_steps(1000) {
                    Ok((_, Step::Fired)) => {}
                    Ok((_, other)) => panic!("unexpected {other:?}"),
                    Err(err) => break err,
                }
            };
            let msg = err.to_string();
            assert!(msg.contains(message), "{msg}");
        });
    }
}
