//! The six models of the Model Checking Contest corpus: states, edges, token maxima and the
//! deadlock and 1-safety verdicts must equal those of their `StateSpace.out`.

use pnet_verify::pt::{PtAnalysis, analyse_pt};
use pnet_verify::report::Verdict;

/// The MCC models of the corpus (`../shared/corpus/mcc`, or `$PNET_CORPUS/mcc`).
fn corpus() -> std::path::PathBuf {
    pnet_tests::corpus().join("mcc")
}

fn expected(out: &str, key: &str) -> String {
    out.lines()
        .find_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                ["STATE_SPACE", k, v, ..] | ["FORMULA", k, v, ..] if *k == key => {
                    Some(v.to_string())
                }
                _ => None,
            }
        })
        .unwrap_or_else(|| panic!("{key} missing"))
}

#[test]
fn mcc_models_match_their_state_space_out() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let mut dirs: Vec<_> = std::fs::read_dir(corpus())
        .expect("corpus")
        .map(|d| d.unwrap().path())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 6);
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let out = std::fs::read_to_string(dir.join("StateSpace.out")).unwrap();
        let text = std::fs::read_to_string(dir.join("model.pnml")).unwrap();
        let net = pnet_verify::parse_pnml(&text).unwrap();
        let r = analyse_pt(&net, "model.pnml", &PtAnalysis::default()).unwrap();
        assert!(r.complete, "{name}");
        assert_eq!(
            r.states.to_string(),
            expected(&out, "STATES"),
            "{name} states"
        );
        assert_eq!(
            r.edges.to_string(),
            expected(&out, "TRANSITIONS"),
            "{name} edges"
        );
        assert_eq!(
            r.max_tokens_in_place.to_string(),
            expected(&out, "MAX_TOKEN_IN_PLACE"),
            "{name}"
        );
        assert_eq!(
            r.max_tokens_per_marking.to_string(),
            expected(&out, "MAX_TOKEN_PER_MARKING"),
            "{name}"
        );
        let b = |v: &Verdict| match v {
            Verdict::Yes => "TRUE",
            Verdict::No => "FALSE",
            Verdict::Unknown(_) => "UNKNOWN",
        };
        assert_eq!(
            b(&r.deadlock),
            expected(&out, "ReachabilityDeadlock"),
            "{name} deadlock"
        );
        assert_eq!(b(&r.one_safe), expected(&out, "OneSafe"), "{name} one-safe");
        eprintln!(
            "{name}: {} states, {} edges, {:?}",
            r.states, r.edges, r.terminates
        );
    }
}
