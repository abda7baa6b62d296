//! The coloured explorer on GPI-Space's corpus: generator places, shared values, put_token
//! places and child nets that are not inlined, plus a cross-check with the oracle
//! (`shared/corpus/gpispace/ORACLE.toml`): the dead markings where the job ends (proper ends,
//! or deadlocks with tokens left on consumed places, where the engine stops too) must contain
//! each case's expected output tokens.

use pnet_bundle::Bundle;
use pnet_stdlib::Value;
use pnet_stdlib::literal::parse_literal;
use pnet_tests::{gpispace, oracle};
use pnet_verify::coloured::{ColouredOptions, ColouredResult, Tok, explore_bundle};
use pnet_verify::report::{Report, Verdict};
use pnetc::{ColorMode, load_net};

fn compile_with(rel: &str, synthesize: bool) -> Bundle {
    let path = gpispace().join(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let ex = gpispace().join("share/doc/example");
    let opts = pnet_sema::Options {
        search_paths: vec![
            gpispace().join("share/xml/lib"),
            ex.clone(),
            ex.join("sequence"),
        ],
        synthesize_virtual_places: synthesize,
        no_inline: synthesize,
        ..pnet_sema::Options::default()
    };
    load_net(&path, &bytes, &opts, ColorMode::Never)
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .0
}

fn compile(rel: &str) -> Bundle {
    compile_with(rel, false)
}

fn lit(s: &str) -> Value {
    parse_literal(s).unwrap_or_else(|e| panic!("literal {s:?}: {e:?}"))
}

fn inputs(v: &[(&str, &[&str])]) -> Vec<(String, Vec<Value>)> {
    v.iter()
        .map(|(p, vs)| (p.to_string(), vs.iter().map(|s| lit(s)).collect()))
        .collect()
}

fn explore(
    b: &Bundle,
    name: &str,
    ins: &[(String, Vec<Value>)],
    opts: &ColouredOptions,
) -> (Report, ColouredResult) {
    explore_bundle(b, name, ins, opts).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The proper ends' out ports as `port = [tokens]` strings (tokens sorted).
fn ends(res: &ColouredResult) -> Vec<String> {
    res.end_outputs
        .iter()
        .map(|end| {
            end.iter()
                .map(|(p, toks)| {
                    let ts: Vec<String> = toks.iter().map(Tok::to_string).collect();
                    format!("{p} = [{}]", ts.join(", "))
                })
                .collect::<Vec<_>>()
                .join("; ")
        })
        .collect()
}

#[test]
fn generator_examples_end_with_the_generated_values() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = gpispace().join("share/doc/example/generator");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".xpnet"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 15);
    for n in &names {
        let rel = format!("share/doc/example/generator/{n}");
        let b = compile(&rel);
        if n == "assign_task_ids.xpnet" {
            let ins = inputs(&[("task_data", &["\"x\"", "\"y\""])]);
            let (r, res) = explore(&b, n, &ins, &ColouredOptions::default());
            assert_eq!(r.deadlock, Verdict::No, "{n}");
            let e = ends(&res);
            assert_eq!(e.len(), 2, "{n}: {e:?}");
            assert!(
                e.iter()
                    .all(|s| s.contains("id := 0UL") && s.contains("id := 1UL"))
            );
            continue;
        }
        let (r, res) = explore(&b, n, &inputs(&[("n", &["3UL"])]), &Default::default());
        assert_eq!(
            r.deadlock,
            Verdict::No,
            "{n}: no deadlock once generators hold a token"
        );
        assert_eq!(r.proper_ends, 1, "{n}");
        assert!(r.exact_state_space && r.complete);
        let want = match () {
            _ if n.contains("bigint") => "id = [0A, 1A, 2A]",
            _ if n.contains("char") => "id = ['a', 'b', 'c']",
            _ if n.contains("string") => "id = [\"a\", \"b\", \"c\"]",
            _ if n.contains("uint") => "id = [0U, 1U, 2U]",
            _ if n.contains("ulong") => "id = [0UL, 1UL, 2UL]",
            _ if n.contains("long") => "id = [0L, 1L, 2L]",
            _ => "id = [0, 1, 2]",
        };
        assert_eq!(ends(&res), vec![want.to_string()], "{n}");
    }
}

#[test]
fn generator_running_out_is_an_error() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let b = compile("share/doc/example/generator/generator_char.xpnet");
    let (r, _) = explore(
        &b,
        "char",
        &inputs(&[("n", &["40UL"])]),
        &Default::default(),
    );
    let err = r
        .traces
        .iter()
        .find(|t| t.kind == "error")
        .expect("an error");
    assert!(
        err.note.contains("ran out of values of type char"),
        "{}",
        err.note
    );
    assert_eq!(r.proper_ends, 0);
}

/// The shared examples: inputs, module outputs assumed as the module's code computes them,
/// and the out ports at the single proper end.
#[test]
fn shared_examples_clean_up_when_the_last_reference_goes() {
    if pnet_tests::corpus_absent() {
        return;
    }
    type Case<'a> = (
        &'a str,
        &'a [(&'a str, &'a [&'a str])],
        &'a [&'a str],
        &'a str,
    );
    let cases: &[Case] = &[
        (
            "cleanup_with_number_of_tokens",
            &[
                ("value1", &["\"alpha\""]),
                ("value2", &["\"beta\""]),
                ("value3", &["\"gamma\""]),
            ],
            &[],
            "result = [\"alpha\", \"beta\", \"gamma\"]",
        ),
        (
            "consume_in_expression",
            &[("value", &["\"x\""])],
            &["create.shared=shared_cleanup (\"x\")"],
            "result = [\"x\"]",
        ),
        (
            "expression",
            &[("value", &["\"x\""])],
            &[],
            "result = [\"x\"]",
        ),
        (
            "simple",
            &[("value", &["\"x\""])],
            &["create.shared=shared_cleanup (\"x\")"],
            "result = [\"x\"]",
        ),
        (
            "int_type",
            &[("value", &["7"])],
            &["create.shared=shared_cleanup (7)"],
            "result = [7]",
        ),
        (
            "long_type",
            &[("value", &["7L"])],
            &["create.shared=shared_cleanup (7L)"],
            "result = [7L]",
        ),
        (
            "list_type",
            &[("value", &["List (1, 2)"])],
            &["create.shared=shared_cleanup (List (1, 2))"],
            "result = [List (1, 2)]",
        ),
        (
            "mixed",
            &[("value", &["\"x\""])],
            &[
                "create.shared=shared_cleanup (\"x\")",
                "module_passthrough.out=shared_cleanup (\"x\")",
            ],
            "result = [\"x\"]",
        ),
        (
            "passthrough",
            &[("value", &["\"x\""])],
            &[
                "create.shared=shared_cleanup (\"x\")",
                "module_passthrough.out=shared_cleanup (\"x\")",
            ],
            "result = [\"x\"]",
        ),
        (
            "full",
            &[("file_name", &["\"f\""]), ("temp_name", &["\"t\""])],
            &[
                "create_file_shared.shared=shared_files (\"f\")",
                "create_temp_shared.shared=shared_temps (\"t\")",
            ],
            "cleaned_file = [\"f\"]; cleaned_temp = [\"t\"]",
        ),
        (
            "nested_in_list",
            &[("value", &["5"])],
            &["create_list.list_out=List (shared_cleanup (5))"],
            "result = [5]",
        ),
        (
            "multiple_nested_in_list",
            &[("value1", &["1"]), ("value2", &["2"]), ("value3", &["3"])],
            &[
                "create_list.list_out=List (shared_cleanup (1), shared_cleanup (2), shared_cleanup (3))",
            ],
            "result = [1, 2, 3]",
        ),
        (
            "sink_with_output",
            &[("shared_value", &["\"s\""]), ("explicit_value", &["\"e\""])],
            &["create.shared=shared_sink (\"s\")"],
            "result = [\"e\", \"s\"]",
        ),
    ];
    for (net, ins, assume, want) in cases {
        let rel = format!("share/doc/example/shared/{net}.xpnet");
        let b = compile(&rel);
        let mut opts = ColouredOptions::default();
        for a in *assume {
            let (lhs, v) = a.split_once('=').unwrap();
            let (t, p) = lhs.split_once('.').unwrap();
            opts.assume
                .push((t.to_string(), p.to_string(), vec![lit(v)]));
        }
        if *net == "cleanup_with_number_of_tokens" {
            // `check_all_ready` fires while 3 clean-ups wait: infinitely many triggers.
            opts.max_states = 400;
        }
        let (r, res) = explore(&b, net, &inputs(ins), &opts);
        assert!(r.exact_state_space, "{net}: {:?}", r.notes);
        assert!(r.deadlock != Verdict::Yes, "{net}: {:?}", r.traces);
        assert_eq!(ends(&res), vec![want.to_string()], "{net}");
    }
}

#[test]
fn put_token_examples_with_and_without_external_tokens() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let rel = "share/doc/example/number_of_tokens/put_token_updates_the_number_of_tokens/put_token_updates_the_number_of_tokens.xpnet";
    let b = compile(rel);
    let ins = inputs(&[("n", &["3UL"])]);
    // No external token: the job waits (wait_for_output) for one, which is not a deadlock.
    let (r, res) = explore(&b, "put", &ins, &Default::default());
    assert_eq!(r.deadlock, Verdict::No);
    assert_eq!(res.waiting, 1);
    assert_eq!(r.proper_ends, 0);
    let w = r.traces.iter().find(|t| t.kind == "waiting").unwrap();
    assert_eq!(w.note, "waiting for an external token on value");
    // The driver's puts: 5, 7, 11, 13 on `value`, then the end signal.
    let mut opts = ColouredOptions::default();
    for v in ["5UL", "7UL", "11UL", "13UL"] {
        opts.external.push(("value".into(), lit(v)));
    }
    opts.external.push(("generator_done".into(), lit("[]")));
    let (r, res) = explore(&b, "put", &ins, &opts);
    assert_eq!(r.deadlock, Verdict::No);
    assert_eq!(ends(&res), vec!["sum = [36UL]".to_string()]);
    assert_eq!(res.waiting, 0);
    assert!(
        r.transitions
            .iter()
            .any(|t| t.name == "external put of 13UL on value")
    );

    let b = compile("share/doc/example/shared/cleanup_with_put_token.xpnet");
    let ins = inputs(&[("value1", &["\"alpha\""]), ("value2", &["\"beta\""])]);
    let mut opts = ColouredOptions {
        external: vec![
            ("external_cleanup".into(), lit("\"external_value_1\"")),
            ("external_cleanup".into(), lit("\"external_value_2\"")),
            ("done_flag".into(), lit("[]")),
        ],
        ..ColouredOptions::default()
    };
    let (r, res) = explore(&b, "cleanup_with_put_token", &ins, &opts);
    // A real race of this net: `finalize` may fire before a shared is consumed; its clean-up
    // value then has no `collected` list to go to.
    assert_eq!(r.deadlock, Verdict::Yes);
    let dl = r.traces.iter().find(|t| t.kind == "deadlock").unwrap();
    assert!(dl.exact && dl.note.contains("external_cleanup"), "{dl:?}");
    let names: Vec<&str> = dl
        .path
        .iter()
        .map(|&t| r.transitions[t].name.as_str())
        .collect();
    let fin = names.iter().position(|n| *n == "finalize").unwrap();
    assert!(
        names[fin..].iter().any(|n| n.starts_with("consume")),
        "{names:?}"
    );
    // Every end holds one list of the four values (in some collection order).
    assert_eq!(res.end_outputs.len(), 24, "4! orders");
    for end in &res.end_outputs {
        let [(port, toks)] = end.as_slice() else {
            panic!("one out port")
        };
        assert_eq!(port, "result");
        let [Tok::Val(Value::List(xs))] = toks.as_slice() else {
            panic!("one list token: {toks:?}")
        };
        let mut xs: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
        xs.sort();
        assert_eq!(
            xs,
            [
                "\"alpha\"",
                "\"beta\"",
                "\"external_value_1\"",
                "\"external_value_2\""
            ]
        );
    }
    // A put on a place that is not put_token is refused.
    opts.external = vec![("result".into(), lit("List ()"))];
    let err = explore_bundle(&b, "x", &ins, &opts).unwrap_err();
    assert!(err.contains("not a put_token place"), "{err}");
}

#[test]
fn child_nets_that_are_not_inlined_run_as_child_instances() {
    if pnet_tests::corpus_absent() {
        return;
    }
    // process_all_blocks: the block processing is a child net with module calls inside.
    let b = compile("share/doc/example/subnetwork/process_all_blocks.xpnet");
    let ins = inputs(&[
        (
            "memory",
            &["Struct [handle := Struct [name := \"h\"], offset := 0UL, size := 32UL]"],
        ),
        ("block_size", &["8UL"]),
        ("number_of_blocks", &["1UL"]),
    ]);
    let mut opts = ColouredOptions::default();
    for t in ["produceL", "produceR", "process"] {
        opts.assume.push((
            format!("process_single_block/{t}"),
            "block".into(),
            vec![lit("Struct [id := 0UL, slot := 0UL]")],
        ));
    }
    let (r, res) = explore(&b, "process_all_blocks", &ins, &opts);
    assert!(r.complete && r.exact_state_space);
    assert!(
        r.transitions
            .iter()
            .any(|t| t.name == "process_single_block/scatter_block"
                && t.location.contains("process_single_block.xpnet:"))
    );
    // The block comes back and is post-processed: its id is done; the slot generator's
    // leftovers stay (GPI-Space's job ends with them).
    assert!(res.end_outputs.is_empty());
    assert_eq!(r.dead_transitions, Some(Vec::new()));
    let dl = r.traces.iter().find(|t| t.kind == "deadlock").unwrap();
    assert!(dl.marking.contains("done = [0UL]"), "{}", dl.marking);
    let names: Vec<&str> = dl
        .path
        .iter()
        .map(|&t| r.transitions[t].name.as_str())
        .collect();
    assert!(names.contains(&"process_single_block/process"), "{names:?}");

    // vmem_1_to_n: the inner loop is a child net.
    let b = compile("share/doc/example/vmem_1_to_n/vmem_1_to_n.xpnet");
    let ins = inputs(&[
        ("outer", &["1L"]),
        ("inner", &["1L"]),
        ("seed", &["1L"]),
        (
            "memory",
            &["Struct [handle := Struct [name := \"h\"], offset := 0UL, size := 8UL]"],
        ),
    ]);
    let (r, _) = explore(&b, "vmem_1_to_n", &ins, &Default::default());
    assert!(r.complete);
    assert!(r.transitions.iter().any(|t| t.name.starts_with("inner/")));
    assert!(r.traces.iter().all(|t| t.kind != "error"), "{:?}", r.traces);
    let last = r.traces.iter().find(|t| t.kind == "deadlock").unwrap();
    assert!(last.marking.contains("out = [[]]"), "{}", last.marking);

    // The Tunnel plugin test: its first transition needs a plugin, which pnetv (like the
    // engine without plugins) cannot run: an evaluation error, reported as such.
    let b = compile("test/we/plugins/test/Tunnel/subnetwork/subnetwork.xpnet");
    let ins = inputs(&[("plugin_path", &["\"p\""]), ("N", &["3UL"])]);
    let (r, _) = explore(&b, "tunnel", &ins, &Default::default());
    let e = r.traces.iter().find(|t| t.kind == "error").unwrap();
    assert!(e.note.contains("create_plugin"), "{}", e.note);
    assert!(
        r.transitions
            .iter()
            .any(|t| t.name == "subnetwork/consume_and_produce")
    );
}

#[test]
fn place_maps_tunnel_virtual_places_of_child_nets() {
    if pnet_tests::corpus_absent() {
        return;
    }
    // --no-inline --synthesize-virtual-places: `wait` stays a child net whose virtual place
    // `num` is the parent's `wait`; `work` runs nested child nets.
    let b = compile_with("share/doc/example/virtual/work_and_wait.xpnet", true);
    let (r, res) = explore(
        &b,
        "work_and_wait",
        &inputs(&[("n", &["2L"])]),
        &Default::default(),
    );
    assert!(r.complete);
    assert_eq!(r.deadlock, Verdict::No);
    assert_eq!(ends(&res), vec!["done = [[]]".to_string()]);
    let bound = |name: &str| {
        let p = r.places.iter().position(|p| p == name).unwrap();
        r.place_bounds[p]
    };
    assert_eq!(
        bound("wait/num"),
        0,
        "the tokens live on the parent's place"
    );
    assert_eq!(bound("wait"), 1);
    assert!(r.places.iter().any(|p| p.starts_with("work/generate/")));
}

// ---------------------------------------------------------------------------------------------
// The oracle.

struct Case {
    name: String,
    net: String,
    inputs: Vec<(String, Vec<Value>)>,
    outputs: Vec<(String, Vec<Value>)>,
    token_count: Vec<(String, usize)>,
    exact: bool,
    needs: Option<String>,
    steps: Vec<String>,
}

/// The shared ORACLE reader's cases with their literals read (the `plugin_path` input is not a
/// port).
fn cases() -> Vec<Case> {
    let values = |vs: Vec<String>| vs.iter().map(|s| lit(s)).collect::<Vec<_>>();
    oracle::cases()
        .into_iter()
        .map(|c| Case {
            name: c.name,
            net: c.net,
            inputs: c
                .inputs
                .into_iter()
                .filter(|(k, _)| k != "plugin_path")
                .map(|(k, v)| (k, values(v)))
                .collect(),
            outputs: c.outputs.into_iter().map(|(k, v)| (k, values(v))).collect(),
            token_count: c.token_count.into_iter().collect(),
            exact: c.exact,
            needs: c.needs,
            steps: c.steps,
        })
        .collect()
}

/// Splits `a, b, c` at depth 0 (outside brackets and quotes).
fn split_top(s: &str) -> Vec<String> {
    let (mut out, mut depth, mut quoted, mut cur) = (Vec::new(), 0i32, false, String::new());
    for c in s.chars() {
        match c {
            '"' => quoted = !quoted,
            '(' | '[' | '{' if !quoted => depth += 1,
            ')' | ']' | '}' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// The `put_token` steps of a case: "put_token on place 'P' the token(s) V1, V2 (...)".
fn external_steps(steps: &[String]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for s in steps {
        let Some(rest) = s.strip_prefix("put_token on place '") else {
            continue;
        };
        let Some((place, rest)) = rest.split_once('\'') else {
            continue;
        };
        let rest = rest.trim_start();
        let rest = rest
            .strip_prefix("the tokens ")
            .or_else(|| rest.strip_prefix("the token "))
            .unwrap_or(rest);
        let rest = rest.split(" (").next().unwrap_or(rest);
        for v in split_top(rest) {
            out.push((place.to_string(), lit(&v)));
        }
    }
    out
}

fn sorted(mut v: Vec<Value>) -> Vec<Value> {
    v.sort();
    v
}

/// Whether a proper end matches the case's expected outputs.
fn matches(case: &Case, end: &[(String, Vec<Tok>)]) -> bool {
    end.iter().all(|(port, toks)| {
        let vals: Option<Vec<Value>> = toks
            .iter()
            .map(|t| match t {
                Tok::Val(v) => Some(v.clone()),
                Tok::Unknown => None,
            })
            .collect();
        let Some(vals) = vals else { return false };
        if let Some((_, n)) = case.token_count.iter().find(|(p, _)| p == port) {
            let distinct: std::collections::BTreeSet<&Value> = vals.iter().collect();
            return vals.len() == *n && distinct.len() == *n;
        }
        match case.outputs.iter().find(|(p, _)| p == port) {
            Some((_, want)) => sorted(want.clone()) == sorted(vals),
            None => !case.exact || vals.is_empty(),
        }
    })
}

#[test]
fn oracle_outputs_are_among_the_proper_ends() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let mut covered = Vec::new();
    let mut skipped = Vec::new();
    for case in cases() {
        if case.needs.as_deref() == Some("plugin") {
            skipped.push(format!("{} (needs a plugin)", case.name));
            continue;
        }
        let b = compile(&case.net);
        let has_module = b.functions.iter().any(|f| {
            matches!(
                f.body,
                pnet_bundle::Body::Module(_) | pnet_bundle::Body::Modules { .. }
            )
        });
        if has_module {
            skipped.push(format!("{} (module calls)", case.name));
            continue;
        }
        let opts = ColouredOptions {
            external: external_steps(&case.steps),
            max_end_outputs: 100_000,
            // Enough for every case; `shared_cleanup_with_number_of_tokens` is infinite
            // (`check_all_ready` keeps firing), its end is found early by the BFS.
            max_states: 3000,
            ..ColouredOptions::default()
        };
        let (r, res) = explore(&b, &case.name, &case.inputs, &opts);
        if !r.complete {
            println!("{}: {:?}", case.name, r.incomplete_reason);
        }
        assert!(r.exact_state_space, "{}", case.name);
        assert!(
            res.end_outputs_complete,
            "{}: too many distinct ends",
            case.name
        );
        assert!(
            res.end_outputs
                .iter()
                .chain(&res.deadlock_outputs)
                .any(|e| matches(&case, e)),
            "{}: expected {:?} among the ends {:?} {:?}",
            case.name,
            case.outputs,
            res.end_outputs,
            res.deadlock_outputs
        );
        covered.push(case.name.clone());
    }
    println!(
        "covered {} oracle case(s): {}",
        covered.len(),
        covered.join(", ")
    );
    println!("skipped: {}", skipped.join(", "));
    assert!(covered.len() >= 33, "only {} cases covered", covered.len());
}
