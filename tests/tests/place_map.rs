//! Place-maps of child nets that are not inlined (issue 19, item 2), end to end: nets with
//! `place-map` compiled with `--synthesize-virtual-places` (the child stays a child net whose
//! virtual place is the parent's real place) run in the engine, with the JIT on and off and
//! under many schedules, and must end as the inlined compilation of the same net does and as
//! pnetv's exploration of the synthesized bundle says every run ends.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pnet_bundle::{Body, Bundle, PortDir};
use pnet_engine::{CodeRunnerFactory, Engine, RunConfig, Step};
use pnet_jit::{JitFactory, JitMode};
use pnet_stdlib::Value;
use pnet_tests::{gpispace, gpispace_lib, workspace_root};
use pnet_verify::coloured::{ColouredOptions, Tok, explore_bundle};

/// Compiles `path`: `synthesize` keeps place-mapped transitions (and, with `no_inline`,
/// `inline="true"` ones) as child nets.
fn compile(path: &Path, synthesize: bool, no_inline: bool) -> Bundle {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let ex = gpispace().join("share/doc/example");
    let opts = pnet_sema::Options {
        search_paths: vec![gpispace_lib(), ex.clone(), ex.join("sequence")],
        synthesize_virtual_places: synthesize,
        no_inline,
        ..pnet_sema::Options::default()
    };
    let out = pnet_sema::compile_source(path, &text, &opts);
    assert!(!out.has_errors(), "{path:?}: {:?}", out.diagnostics);
    out.bundle.expect("a bundle")
}

/// Whether some transition of the bundle starts a child net through a place-map (so that a
/// test of a synthesized bundle really runs one).
fn has_child_place_map(b: &Bundle) -> bool {
    b.functions.iter().any(|f| match &f.body {
        Body::Net(n) => n.transitions.iter().any(|t| {
            !t.place_map.is_empty() && matches!(b.function(t.function).body, Body::Net(_))
        }),
        _ => false,
    })
}

/// Runs a job to its end, serving each module call as the identity of its `inout` ports
/// (the corpus' modules only print). Returns the outputs, as `port = [tokens]` with the
/// tokens sorted, and the ending (empty when complete), or panics with the error.
fn run(b: &Bundle, inputs: &[(String, Vec<Value>)], seed: u64, jit: bool) -> (Vec<String>, String) {
    let runner: Option<Arc<dyn CodeRunnerFactory>> = if jit {
        Some(Arc::new(JitFactory::new(JitMode::On)))
    } else {
        None
    };
    let config = RunConfig {
        seed,
        runner,
        max_firings: Some(100_000),
    };
    let mut e = Engine::new(b, &config).expect("engine");
    e.put_inputs(inputs).expect("inputs");
    let mut tasks = Vec::new();
    loop {
        match e.run_steps(1000).expect("runs").1 {
            Step::Fired => {}
            Step::Task(t) => tasks.push(t),
            Step::Waiting => {
                // Serve the oldest call (a different order per seed would do as well).
                let t = tasks.remove(0);
                let f = b.function(t.function);
                let outs = t
                    .inputs
                    .into_iter()
                    .filter(|(p, _)| f.port(*p).dir == PortDir::InOut)
                    .collect();
                e.complete_task(t.id, outs).expect("complete");
            }
            Step::Done => break,
        }
    }
    assert!(tasks.is_empty(), "tasks left at the end");
    let r = e.result();
    let outputs = r
        .outputs
        .iter()
        .map(|(p, vs)| {
            let mut ts: Vec<String> = vs.iter().map(|v| v.to_string()).collect();
            ts.sort();
            format!("{p} = [{}]", ts.join(", "))
        })
        .collect();
    (outputs, r.ending.to_string())
}

/// The outputs of every proper end pnetv finds, in the form of [`run`] (each end one list).
fn pnetv_ends(b: &Bundle, inputs: &[(String, Vec<Value>)]) -> Vec<Vec<String>> {
    let (report, res) =
        explore_bundle(b, "place_map", inputs, &ColouredOptions::default()).expect("explores");
    assert!(report.complete, "the exploration is complete");
    assert!(res.deadlock_outputs.is_empty(), "no deadlock");
    pnetv_outputs(&res.end_outputs)
}

/// Ends' outputs in the form of [`run`].
fn pnetv_outputs(ends: &[pnet_verify::coloured::EndOutputs]) -> Vec<Vec<String>> {
    ends.iter()
        .map(|end| {
            end.iter()
                .map(|(p, toks)| {
                    let mut ts: Vec<String> = toks
                        .iter()
                        .map(|t| match t {
                            Tok::Val(v) => v.to_string(),
                            Tok::Unknown => "?".into(),
                        })
                        .collect();
                    ts.sort();
                    format!("{p} = [{}]", ts.join(", "))
                })
                .collect()
        })
        .collect()
}

/// Runs the synthesized bundle under `seeds` schedules with the JIT on and off, and the
/// inlined one: all must give `expect`, which must be the one end pnetv finds (of the
/// synthesized bundle; `pnetv`: whether to explore).
fn check(path: &Path, no_inline: bool, inputs: &[(&str, &[Value])], expect: &[&str], pnetv: bool) {
    let inputs: Vec<(String, Vec<Value>)> = inputs
        .iter()
        .map(|(p, vs)| (p.to_string(), vs.to_vec()))
        .collect();
    let expect: Vec<String> = expect.iter().map(|s| s.to_string()).collect();
    let synthesized = compile(path, true, no_inline);
    assert!(
        has_child_place_map(&synthesized),
        "{path:?}: no child net with a place-map"
    );
    let inlined = compile(path, false, false);
    assert!(!has_child_place_map(&inlined), "{path:?}: not inlined");
    let expect = (expect, String::new());
    assert_eq!(run(&inlined, &inputs, 0, false), expect, "inlined");
    for seed in 0..8 {
        for jit in [false, true] {
            assert_eq!(
                run(&synthesized, &inputs, seed, jit),
                expect,
                "{path:?}: seed {seed}, jit {jit}"
            );
        }
    }
    let expect = expect.0;
    if pnetv {
        assert_eq!(pnetv_ends(&synthesized, &inputs), vec![expect.clone()]);
        assert_eq!(pnetv_ends(&inlined, &inputs), vec![expect]);
    }
}

fn nets() -> PathBuf {
    workspace_root().join("tests/nets/place_map")
}

fn longs(xs: &[i64]) -> Vec<Value> {
    xs.iter().map(|&x| Value::Long(x)).collect()
}

#[test]
fn children_add_to_the_parents_place() {
    let xs = longs(&[1, 2, 3, 4]);
    check(
        &nets().join("sum_by_children.xpnet"),
        false,
        &[("xs", &xs)],
        &["total = [10L]"],
        true,
    );
}

#[test]
fn grandchildren_add_through_two_place_maps() {
    let xs = longs(&[1, 2, 3]);
    check(
        &nets().join("nested.xpnet"),
        false,
        &[("xs", &xs)],
        &["total = [14L]"],
        true,
    );
}

#[test]
fn gpispace_work_and_wait() {
    if pnet_tests::corpus_absent() {
        return;
    }
    // `wait` stays a child net (with --no-inline as well, since it is `inline="true"`)
    // whose virtual place `num` is the parent's `wait`: the children count it down, and the
    // one that finds it at zero says `done`.
    let path = gpispace().join("share/doc/example/virtual/work_and_wait.xpnet");
    for n in [1, 2, 4] {
        let input = longs(&[n]);
        check(&path, true, &[("n", &input)], &["done = [[]]"], n <= 2);
    }
}

#[test]
fn gpispace_work_and_wait_credit_ends_as_pnetv_allows() {
    if pnet_tests::corpus_absent() {
        return;
    }
    // Credits tunnel into the child that generates the work (`place-map credit -> credit`)
    // and `wait` as above. A child net ends once nothing in it is enabled, and its out ports'
    // tokens go out only then, so the synthesized net may end without `done` where the
    // inlined one says `done`: every run must end in one of the ends pnetv finds.
    let path = gpispace().join("share/doc/example/credit/work_and_wait_credit.xpnet");
    let synthesized = compile(&path, true, true);
    assert!(has_child_place_map(&synthesized));
    for (n, c) in [(2, 1), (3, 5)] {
        let inputs = vec![
            ("n".to_string(), longs(&[n])),
            ("c".to_string(), longs(&[c])),
        ];
        let (report, res) =
            explore_bundle(&synthesized, "credit", &inputs, &ColouredOptions::default())
                .expect("explores");
        assert!(report.complete);
        let ends: Vec<Vec<String>> = pnetv_outputs(&res.end_outputs);
        for seed in 0..4 {
            for jit in [false, true] {
                let (outputs, _) = run(&synthesized, &inputs, seed, jit);
                assert!(
                    ends.contains(&outputs),
                    "n {n}, c {c}, seed {seed}, jit {jit}: {outputs:?} not among {ends:?}"
                );
            }
        }
    }
}
