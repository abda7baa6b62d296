//! The `pnetv` command line on PNML and coloured nets: reports, JSON, traces, exit codes.

use std::process::Command;

const NETS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/nets");
const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");

/// The MCC models of the corpus (`../shared/corpus/mcc`, or `$PNET_CORPUS/mcc`).
fn mcc() -> String {
    pnet_tests::corpus().join("mcc").display().to_string()
}

fn pnetv(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pnetv"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn json(args: &[&str]) -> (i32, serde_json::Value) {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let (code, out, err) = pnetv(&a);
    (
        code,
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}")),
    )
}

#[test]
fn philosophers_deadlock_with_trace_file() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let model = format!("{}/Philosophers-PT-000005/model.pnml", mcc());
    let trace = std::env::temp_dir().join(format!("pnetv-trace-{}.json", std::process::id()));
    let (code, j) = json(&[&model, "--trace-out", trace.to_str().unwrap()]);
    assert_eq!(code, 3, "a deadlock is a violation");
    assert_eq!(j["states"], 243);
    assert_eq!(j["edges"], 945);
    assert_eq!(j["deadlock"], true);
    assert_eq!(j["one_safe"], true);
    assert_eq!(j["terminates"], false);
    assert_eq!(j["liveness"]["live"], false);
    assert_eq!(j["structurally_bounded"], true);
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    std::fs::remove_file(&trace).ok();
    assert_eq!(t["format"], "pnet-trace");
    assert_eq!(t["kind"], "deadlock");
    let names = t["transitions"].as_array().unwrap();
    assert_eq!(names.len(), 5, "every philosopher takes one fork");
    assert!(names.iter().all(|n| n.as_str().unwrap().starts_with("FF1")));
    assert!(
        t["steps"][0]["location"]
            .as_str()
            .unwrap()
            .contains("model.pnml:")
    );
}

#[test]
fn verified_net_exits_zero_and_text_report() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let model = format!("{}/DatabaseWithMutex-PT-02/model.pnml", mcc());
    let (code, out, _) = pnetv(&[&model]);
    assert_eq!(code, 0);
    assert!(out.contains("state space: 153 states, 312 edges"), "{out}");
    assert!(out.contains("deadlock: none"), "{out}");
    assert!(out.contains("live: yes"), "{out}");
    let (code, j) = json(&[&model, "--stubborn"]);
    assert_eq!(code, 0);
    assert_eq!(j["deadlock"], false);
    assert!(j["states"].as_u64().unwrap() <= 153);
}

#[test]
fn compact_index_gives_the_same_report() {
    if pnet_tests::corpus_absent() {
        return;
    }
    for name in ["Philosophers-PT-000005", "Dekker-PT-010", "Railroad-PT-005"] {
        let model = format!("{}/{name}/model.pnml", mcc());
        let (code, mut fast) = json(&[&model]);
        let (code2, mut compact) = json(&[&model, "--compact"]);
        assert_eq!(code, code2, "{name}");
        let bytes = |j: &mut serde_json::Value| {
            j["seconds"] = serde_json::Value::Null;
            j["bytes_per_state"].take().as_f64().unwrap()
        };
        let (b_fast, b_compact) = (bytes(&mut fast), bytes(&mut compact));
        assert_eq!(fast, compact, "{name}");
        assert!(b_compact <= b_fast, "{name}: {b_compact} > {b_fast}");
        if name.starts_with("Philosophers") {
            // 25 places at one bit: 4-byte markings, kept inline in 16-byte slots by default.
            assert!(b_compact < b_fast, "{name}");
        }
    }
}

/// `--threads 2` and the default (the number of cores) report as `--threads 1` (and a thread
/// count out of range is refused).
#[test]
fn threads_give_the_same_report() {
    if pnet_tests::corpus_absent() {
        return;
    }
    for name in [
        "Philosophers-PT-000005",
        "Dekker-PT-010",
        "TokenRing-PT-005",
    ] {
        let model = format!("{}/{name}/model.pnml", mcc());
        let (code, mut one) = json(&[&model, "--threads", "1"]);
        one["seconds"] = serde_json::Value::Null;
        for args in [
            &[model.as_str(), "--threads", "2"][..],
            &[model.as_str()][..],
        ] {
            let (code2, mut two) = json(args);
            assert_eq!(code, code2, "{name}");
            two["seconds"] = serde_json::Value::Null;
            assert_eq!(one, two, "{name} {args:?}");
        }
    }
    let (code, _, err) = pnetv(&["--threads", "0", "x.pnml"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn limits_exit_four() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let model = format!("{}/Dekker-PT-010/model.pnml", mcc());
    let (code, j) = json(&[&model, "--max-states", "100"]);
    assert_eq!(code, 4);
    assert_eq!(j["complete"], false);
    assert_eq!(j["deadlock"], serde_json::Value::Null);
    assert_eq!(j["states"], 100);
}

#[test]
fn malformed_pnml_and_usage_errors() {
    let bad = std::env::temp_dir().join(format!("pnetv-bad-{}.pnml", std::process::id()));
    std::fs::write(
        &bad,
        "<pnml><net id='n'>\n<arc id='a' source='x' target='y'/></net></pnml>",
    )
    .unwrap();
    let (code, _, err) = pnetv(&[bad.to_str().unwrap()]);
    std::fs::remove_file(&bad).ok();
    assert_eq!(code, 1);
    assert!(
        err.contains(".pnml:2:1: arc `a`: unknown source `x`"),
        "{err}"
    );
    assert_eq!(pnetv(&[]).0, 2);
    assert_eq!(pnetv(&["--bogus", "x.pnml"]).0, 2);
    assert_eq!(pnetv(&["--max-states", "many", "x.pnml"]).0, 2);
    for flag in ["--max-states", "--max-memory"] {
        let (code, _, err) = pnetv(&[flag, "0", "x.pnml"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("must be at least 1"), "{err}");
    }
    let (code, out, _) = pnetv(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("--trace-out <FILE>"));
    assert_eq!(pnetv(&["/nonexistent/net.pnml"]).0, 1);
}

#[test]
fn coloured_countdown_ends_properly() {
    let net = format!("{EXAMPLES}/countdown/countdown.xpnet");
    let (code, j) = json(&[&net, "-p", "n=5L"]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["kind"], "coloured net");
    assert_eq!(j["states"], 7);
    assert_eq!(j["edges"], 6);
    assert_eq!(j["deadlock"], false);
    assert_eq!(j["proper_ends"], 1);
    assert_eq!(j["terminates"], true);
    assert_eq!(j["exact_state_space"], true);
}

#[test]
fn coloured_join_deadlocks_when_an_input_is_missing() {
    let net = format!("{NETS}/join.xpnet");
    let (code, j) = json(&[&net, "-p", "a=1L"]);
    assert_eq!(code, 3);
    assert_eq!(j["deadlock"], true);
    assert_eq!(j["traces"][0]["kind"], "deadlock");
    assert_eq!(j["traces"][0]["transitions"], serde_json::json!([]));
    assert_eq!(j["traces"][0]["exact"], true);
    let (code, j) = json(&[&net, "-p", "a=1L", "-p", "b=2L"]);
    assert_eq!(code, 0);
    assert_eq!(j["dead_transitions"], serde_json::json!([]));
    let (_, out, _) = pnetv(&[&net, "-p", "a=1L"]);
    assert!(out.contains("tokens stuck on a"), "{out}");
}

#[test]
fn coloured_module_outputs_abstracted_or_assumed() {
    let net = format!("{NETS}/module.xpnet");
    // Unknown output: both accept and reject may fire (maybe edges). The marking right after
    // `compute` may be dead (both conditions are maybes), and the reject path gets stuck on
    // `failed` (no budget): possible deadlocks, flagged as possibly spurious.
    let (code, j) = json(&[&net, "-p", "job=1L", "--traces", "5"]);
    assert_eq!(code, 3);
    assert_eq!(j["exact_state_space"], false);
    assert_eq!(j["deadlock"], true);
    let dls: Vec<&serde_json::Value> = j["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "deadlock")
        .collect();
    assert!(dls.iter().all(|t| t["exact"] == false));
    let paths: Vec<&serde_json::Value> = dls.iter().map(|t| &t["transitions"]).collect();
    assert_eq!(
        paths,
        vec![
            &serde_json::json!(["compute"]),
            &serde_json::json!(["compute", "reject"])
        ]
    );
    assert_eq!(j["terminates"], true);
    // Assumed non-negative outputs: exact, and no deadlock.
    let (code, j) = json(&[&net, "-p", "job=1L", "--assume", "compute.y=0L,7L"]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["exact_state_space"], true);
    assert_eq!(j["deadlock"], false);
    assert_eq!(
        j["dead_transitions"],
        serde_json::json!(["reject", "again"])
    );
    // A negative one is a real deadlock now.
    let (code, j) = json(&[&net, "-p", "job=1L", "--assume", "compute.y=-1L"]);
    assert_eq!(code, 3);
    assert_eq!(j["traces"][0]["exact"], true);
    let (code, _, err) = pnetv(&[&net, "--assume", "nothere.y=1L"]);
    assert_eq!(code, 1);
    assert!(err.contains("no module call `nothere`"), "{err}");
}

#[test]
fn coloured_external_tokens_and_end_outputs() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let net = pnet_tests::gpispace()
        .join("share/doc/example/number_of_tokens/put_token_updates_the_number_of_tokens/put_token_updates_the_number_of_tokens.xpnet")
        .display()
        .to_string();
    // Without external tokens the job waits for one: not a deadlock.
    let (code, j) = json(&[&net, "-p", "n=2UL"]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["waiting_markings"], 1);
    assert_eq!(j["traces"][0]["kind"], "waiting");
    let (code, j) = json(&[
        &net,
        "-p",
        "n=2UL",
        "--external",
        "value=1UL,2UL",
        "--external=generator_done=[]",
    ]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["end_outputs"], serde_json::json!([{ "sum": ["3UL"] }]));
    let (_, out, _) = pnetv(&[&net, "-p", "n=2UL", "--external", "value=1UL,2UL"]);
    assert!(out.contains("waiting for an external token on "), "{out}");
    let (code, _, err) = pnetv(&[&net, "--external", "value"]);
    assert_eq!(code, 2);
    assert!(err.contains("expected PLACE=V1,V2"), "{err}");
    let (code, _, err) = pnetv(&[&net, "--external", "n=1UL"]);
    assert_eq!(code, 1);
    assert!(err.contains("not a put_token place"), "{err}");
    let (_, help, _) = pnetv(&["--help"]);
    assert!(help.contains("--external <PLACE=V1,V2,...>"));
}

/// An unmodified GPI-Space example whose state space grows without bound (a transition that
/// reads the cleanup count keeps putting control tokens) and whose states grow with it: it
/// used to take 1.6 GB for 20,000 states; `--max-memory` bounds what the states keep.
#[test]
fn max_memory_bounds_a_coloured_exploration() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let net = pnet_tests::gpispace()
        .join("share/doc/example/shared/cleanup_with_number_of_tokens.xpnet")
        .display()
        .to_string();
    let (code, j) = json(&[
        &net,
        "-p",
        "value1=\"a\"",
        "-p",
        "value2=\"b\"",
        "-p",
        "value3=\"c\"",
        "--max-memory",
        "16",
    ]);
    assert_eq!(code, 4, "stopped at a limit: {j}");
    let why = j["incomplete_reason"].as_str().unwrap_or_default();
    assert!(why.contains("--max-memory 16 MiB"), "{j}");
    let states = j["states"].as_u64().unwrap();
    assert!(states > 100 && states < 20_000, "{states}");
}

/// The same bound on a P/T net.
#[test]
fn max_memory_bounds_a_pt_exploration() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let model = format!("{}/Dekker-PT-010/model.pnml", mcc());
    let (code, j) = json(&[&model, "--max-memory", "1"]);
    assert_eq!(code, 4, "{j}");
    let why = j["incomplete_reason"].as_str().unwrap_or_default();
    assert!(why.contains("--max-memory 1 MiB"), "{j}");
}

/// What an MCC user gives by mistake: the model's folder, a gzip'd model, a PNML with a
/// capacity. Each is a one-line error (exit 1, nothing on stdout even with `--json`) that says
/// what to do.
#[test]
fn mistaken_inputs_say_what_to_do() {
    let dir = std::env::temp_dir().join(format!("pnetv-mistakes-{}", std::process::id()));
    let model_dir = dir.join("Model-PT-1");
    std::fs::create_dir_all(&model_dir).unwrap();
    let model = model_dir.join("model.pnml");
    std::fs::write(
        &model,
        "<pnml><net id='n'>\n<place id='p'><capacity><text>1</text></capacity></place></net></pnml>",
    )
    .unwrap();
    let gz = dir.join("model.pnml.gz");
    std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0]).unwrap();
    let (code, out, err) = pnetv(&["--json", model_dir.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(
        err.contains(&format!(
            "is a directory; NET is a file: pnetv {}",
            model.display()
        )),
        "{err}"
    );
    let (code, out, err) = pnetv(&["--json", dir.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(
        err.contains("is a directory; NET is a file (.pnml"),
        "{err}"
    );
    let (code, out, err) = pnetv(&["--json", gz.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(
        err.contains("is gzip-compressed; decompress it first: gunzip -k"),
        "{err}"
    );
    let (code, out, err) = pnetv(&["--json", model.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(
        err.contains("model.pnml:2:1: place `p`: capacity `1` is not supported"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A `--trace-out` into a folder that does not exist, or onto a folder, fails before the
/// analysis (exit 1, nothing on stdout), not after it with the report lost.
#[test]
fn unwritable_trace_out_fails_before_the_analysis() {
    let net = format!("{NETS}/no-such-net.pnml");
    let missing = std::env::temp_dir().join(format!("pnetv-no-dir-{}/t.json", std::process::id()));
    let (code, out, err) = pnetv(&["--json", &net, "--trace-out", missing.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(
        err.contains("--trace-out") && err.contains(": no directory "),
        "{err}"
    );
    let dir = std::env::temp_dir();
    let (code, out, err) = pnetv(&["--json", &net, "--trace-out", dir.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains(": is a directory"), "{err}");
}
