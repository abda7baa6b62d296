//! Small nets of our own, one or more per verdict. Nets are written in a compact form and
//! turned into PNML, so the parser is exercised as well.

use pnet_verify::pt::{PtAnalysis, analyse_pt};
use pnet_verify::report::{Report, Verdict};
use pnet_verify::{PtOptions, Reduction};

/// `places`: `name=tokens` or `name`; `transitions`: `name: a + 2*b -> c` (either side may be
/// empty).
fn pnml(places: &[&str], transitions: &[&str]) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<pnml><net id=\"n\" type=\"http://www.pnml.org/version-2009/grammar/ptnet\"><page id=\"pg\">\n",
    );
    for p in places {
        let (name, m) = p.split_once('=').unwrap_or((p, "0"));
        s += &format!(
            "<place id=\"{name}\"><name><text>{name}</text></name><initialMarking><text>{m}</text></initialMarking></place>\n"
        );
    }
    let mut arcs = String::new();
    for (k, t) in transitions.iter().enumerate() {
        let (name, rest) = t.split_once(':').unwrap();
        let (pre, post) = rest.split_once("->").unwrap();
        s += &format!("<transition id=\"{name}\"><name><text>{name}</text></name></transition>\n");
        for (side, list) in [(0, pre), (1, post)] {
            for (j, term) in list
                .split('+')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .enumerate()
            {
                let (w, p) = term.split_once('*').unwrap_or(("1", term));
                let (src, dst) = if side == 0 { (p, name) } else { (name, p) };
                arcs += &format!(
                    "<arc id=\"a{k}_{side}_{j}\" source=\"{src}\" target=\"{dst}\"><inscription><text>{w}</text></inscription></arc>\n"
                );
            }
        }
    }
    s + &arcs + "</page></net></pnml>\n"
}

fn analyse_with(places: &[&str], transitions: &[&str], cfg: &PtAnalysis) -> Report {
    let net = pnet_verify::parse_pnml(&pnml(places, transitions)).unwrap();
    analyse_pt(&net, "test.pnml", cfg).unwrap()
}

fn analyse(places: &[&str], transitions: &[&str]) -> Report {
    analyse_with(places, transitions, &PtAnalysis::default())
}

fn names(r: &Report, path: &[usize]) -> Vec<String> {
    path.iter()
        .map(|&t| r.transitions[t].name.clone())
        .collect()
}

#[test]
fn cycle_with_three_tokens_is_3_bounded_live_and_not_1_safe() {
    let r = analyse(&["p=3", "q"], &["t: p -> q", "u: q -> p"]);
    assert_eq!((r.states, r.edges), (4, 6));
    assert_eq!(r.bounded, Verdict::Yes);
    assert_eq!(r.max_tokens_in_place, 3);
    assert_eq!(r.place_bounds, vec![3, 3]);
    assert_eq!(r.max_tokens_per_marking, 3);
    assert_eq!(r.one_safe, Verdict::No);
    let unsafe_trace = r.traces.iter().find(|t| t.kind == "unsafe").unwrap();
    assert!(
        unsafe_trace.path.is_empty(),
        "the initial marking is already unsafe"
    );
    assert_eq!(r.deadlock, Verdict::No);
    assert_eq!(r.dead_transitions, Some(vec![]));
    assert_eq!(r.terminates, Verdict::No);
    assert_eq!(r.live, Some(vec![true, true]));
    assert!(r.structurally_bounded);
    assert_eq!(r.p_invariants, Some(vec![vec![1, 1]]));
    assert_eq!(r.t_invariants, Some(vec![vec![1, 1]]));
}

#[test]
fn unbounded_net_ends_with_a_coverability_witness() {
    // `gen` puts a token on q every time; `stop` may end it all.
    let r = analyse(
        &["p=1", "q", "done"],
        &["gen: p -> p + q", "stop: p -> done"],
    );
    assert_eq!(r.bounded, Verdict::No);
    assert_eq!(r.unbounded_places, vec![1]);
    assert!(!r.complete);
    assert_eq!(r.terminates, Verdict::No);
    assert_eq!(r.one_safe, Verdict::No);
    let w = r.traces.iter().find(|t| t.kind == "unbounded").unwrap();
    assert!(w.path.is_empty());
    assert_eq!(names(&r, &w.cycle), vec!["gen"]);
    // The first cover ends the exploration before the dead marking after `stop` is seen.
    assert!(matches!(r.deadlock, Verdict::Unknown(_)));
}

#[test]
fn unbounded_after_a_prefix_with_a_longer_pump() {
    // a -> b -> a moves one token around and `b` also drops one on `sink` via `leak`.
    let r = analyse(
        &["init=1", "a", "b", "sink"],
        &["start: init -> a", "ab: a -> b", "ba: b -> a + sink"],
    );
    assert_eq!(r.bounded, Verdict::No);
    let w = r.traces.iter().find(|t| t.kind == "unbounded").unwrap();
    assert_eq!(names(&r, &w.path), vec!["start"]);
    assert_eq!(names(&r, &w.cycle), vec!["ab", "ba"]);
    assert_eq!(r.unbounded_places, vec![3]);
}

#[test]
fn deadlock_that_needs_a_long_trace() {
    // A chain of 120 steps; a side toggle runs while the chain runs and stops at its end
    // (the last step consumes `running`), so the only dead marking is at the very end.
    const N: usize = 120;
    let mut places: Vec<String> = vec!["c0=1".into(), "running=1".into(), "x=1".into(), "y".into()];
    let mut trans: Vec<String> = Vec::new();
    for i in 0..N {
        places.push(format!("c{}", i + 1));
        if i + 1 == N {
            trans.push(format!("step{i}: c{i} + running -> c{}", i + 1));
        } else {
            trans.push(format!("step{i}: c{i} -> c{}", i + 1));
        }
    }
    trans.push("xy: x + running -> y + running".into());
    trans.push("yx: y + running -> x + running".into());
    let p: Vec<&str> = places.iter().map(String::as_str).collect();
    let t: Vec<&str> = trans.iter().map(String::as_str).collect();
    let r = analyse(&p, &t);
    assert_eq!(r.deadlock, Verdict::Yes);
    assert_eq!(r.dead_markings, 2); // x or y holds the token at the end
    let d = r.traces.iter().find(|t| t.kind == "deadlock").unwrap();
    assert_eq!(d.path.len(), N);
    let expected: Vec<String> = (0..N).map(|i| format!("step{i}")).collect();
    assert_eq!(names(&r, &d.path), expected);
    assert!(d.marking.contains(&format!("c{N}")));
    assert_eq!(r.terminates, Verdict::No);
    assert_eq!(r.live.as_ref().map(|l| l.iter().any(|&x| x)), Some(false));
    // The stubborn-set search finds the same deadlock in far fewer states.
    let cfg = PtAnalysis {
        explore: PtOptions {
            reduction: Reduction::Stubborn,
            ..Default::default()
        },
        ..Default::default()
    };
    let s = analyse_with(&p, &t, &cfg);
    assert_eq!(s.deadlock, Verdict::Yes);
    assert_eq!(s.dead_markings, 2);
    assert!(s.states < r.states, "{} < {}", s.states, r.states);
    assert!(matches!(s.terminates, Verdict::Unknown(_)));
}

#[test]
fn dead_transitions_and_termination() {
    let r = analyse(
        &["a=1", "b", "never"],
        &["go: a -> b", "ghost: never -> a", "back: b + never -> a"],
    );
    assert_eq!(r.dead_transitions, Some(vec![1, 2]));
    assert_eq!(r.terminates, Verdict::Yes);
    assert_eq!(r.deadlock, Verdict::Yes);
    assert_eq!(r.one_safe, Verdict::Yes);
    assert_eq!((r.states, r.edges), (2, 1));
}

#[test]
fn termination_without_t_invariant_and_with_one() {
    // The fuel runs out: no semi-positive T-invariant, so no cycle is possible.
    let r = analyse(&["p=1", "q", "fuel=2"], &["t: p + fuel -> q", "u: q -> p"]);
    assert_eq!(r.t_invariants, Some(vec![]));
    assert_eq!(r.terminates, Verdict::Yes);
    assert_eq!(r.deadlock, Verdict::Yes);
    assert_eq!((r.states, r.edges), (5, 4));
    // t + u is a T-invariant, yet the SCC pass shows the graph is acyclic: `u` reads `key`,
    // which is never marked.
    let r = analyse(
        &["p=1", "q", "key"],
        &["t: p -> q", "u: q + key -> p + key"],
    );
    assert_eq!(r.t_invariants.as_ref().map(Vec::len), Some(1));
    assert_eq!(r.terminates, Verdict::Yes);
    assert_eq!((r.states, r.edges), (2, 1));
}

#[test]
fn stubborn_sets_on_independent_chains_keep_every_deadlock() {
    // 6 independent chains of length 4: 5^6 = 15625 states, one dead marking.
    let mut places = Vec::new();
    let mut trans = Vec::new();
    for c in 0..6 {
        places.push(format!("c{c}_0=1"));
        for i in 0..4 {
            places.push(format!("c{c}_{}", i + 1));
            trans.push(format!("t{c}_{i}: c{c}_{i} -> c{c}_{}", i + 1));
        }
    }
    let p: Vec<&str> = places.iter().map(String::as_str).collect();
    let t: Vec<&str> = trans.iter().map(String::as_str).collect();
    let full = analyse(&p, &t);
    assert_eq!(full.states, 15625);
    assert_eq!(full.dead_markings, 1);
    let cfg = PtAnalysis {
        explore: PtOptions {
            reduction: Reduction::Stubborn,
            ..Default::default()
        },
        ..Default::default()
    };
    let red = analyse_with(&p, &t, &cfg);
    assert_eq!(red.deadlock, Verdict::Yes);
    assert_eq!(red.dead_markings, 1);
    assert_eq!(red.states, 25); // one chain after the other
    assert_eq!(red.traces[0].path.len(), 24);
}

#[test]
fn limits_make_verdicts_unknown() {
    let cfg = PtAnalysis {
        explore: PtOptions {
            max_states: Some(3),
            ..Default::default()
        },
        ..Default::default()
    };
    let r = analyse_with(&["p=3", "q"], &["t: p -> q", "u: q -> p"], &cfg);
    assert!(!r.complete);
    assert!(matches!(r.deadlock, Verdict::Unknown(_)));
    assert!(r.incomplete_reason.unwrap().contains("--max-states"));

    // --max-tokens stops an unbounded net that the coverability check would also catch; the
    // check runs first here, so use a net whose growth is not a cover: tokens move upward.
    let cfg = PtAnalysis {
        explore: PtOptions {
            max_tokens: Some(2),
            ..Default::default()
        },
        ..Default::default()
    };
    let r = analyse_with(&["p=5", "q"], &["t: p -> q", "u: q -> "], &cfg);
    assert!(!r.complete);
    assert!(r.traces.iter().any(|t| t.kind == "token-limit"));
}

#[test]
fn packing_widens_when_counts_outgrow_it() {
    // q reaches 400 tokens; no P-invariant covers it, so the exploration starts at 8 bits.
    let r = analyse(&["p=200", "q"], &["t: p -> 2*q", "u: q -> "]);
    assert_eq!(r.place_bounds, vec![200, 400]);
    assert_eq!(r.packing_bits, Some(16));
    assert!(
        r.notes.iter().any(|n| n.contains("restarted")),
        "{:?}",
        r.notes
    );
    assert_eq!(r.bounded, Verdict::Yes);
    assert!(!r.structurally_bounded);
}

#[test]
fn report_renders_text_and_json() {
    let r = analyse(&["a=1", "b"], &["go: a -> b"]);
    let text = r.to_text();
    assert!(text.contains("state space: 2 states, 1 edges"), "{text}");
    assert!(text.contains("1. go  [test.pnml:"), "{text}");
    let j = r.to_json();
    assert_eq!(j["states"], 2);
    assert_eq!(j["deadlock"], true);
    assert_eq!(j["traces"][0]["transitions"], serde_json::json!(["go"]));
    assert_eq!(j["traces"][0]["format"], "pnet-trace");
}

/// Drain-N: one token moving between `n` places (a move for every ordered pair) and a
/// transition that drains the first place: no P-invariant, and a minimal T-invariant for
/// every elementary cycle of the complete digraph (2,365 for n = 7), over 8 states.
fn drain(n: usize) -> (Vec<String>, Vec<String>) {
    let places = (0..n)
        .map(|i| {
            if i == 0 {
                "p0=1".into()
            } else {
                format!("p{i}")
            }
        })
        .collect();
    let mut trans: Vec<String> = (0..n)
        .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
        .map(|(i, j)| format!("m{i}_{j}: p{i} -> p{j}"))
        .collect();
    trans.push("drain: p0 -> ".into());
    (places, trans)
}

#[test]
fn invariants_over_their_budget_are_left_out_and_the_verdicts_stay() {
    let (p, t) = drain(7);
    let p: Vec<&str> = p.iter().map(String::as_str).collect();
    let t: Vec<&str> = t.iter().map(String::as_str).collect();
    let r = analyse(&p, &t);
    // The 1-bit exploration itself proves 1-safety and boundedness.
    assert_eq!((r.states, r.edges), (8, 43));
    assert_eq!(r.one_safe, Verdict::Yes);
    assert_eq!(r.bounded, Verdict::Yes);
    assert_eq!(r.packing_bits, Some(1));
    assert_eq!(r.deadlock, Verdict::Yes);
    assert_eq!(r.terminates, Verdict::No);
    assert_eq!(r.p_invariants, Some(vec![]));
    assert_eq!(r.t_invariants, None);
    assert!(!r.structurally_bounded);
    assert!(
        r.notes.iter().any(|n| n.contains("--invariants")),
        "{:?}",
        r.notes
    );
    assert!(r.to_text().contains("T-invariants not computed"));
    // Asked for, they are all computed; the verdicts are the same.
    let all = PtAnalysis {
        all_invariants: true,
        ..Default::default()
    };
    let a = analyse_with(&p, &t, &all);
    assert_eq!(a.t_invariants.as_ref().map(Vec::len), Some(2365));
    assert_eq!((a.states, a.edges), (r.states, r.edges));
    assert_eq!(
        (&a.one_safe, &a.bounded, &a.deadlock, &a.terminates),
        (&r.one_safe, &r.bounded, &r.deadlock, &r.terminates)
    );
    assert!(!a.notes.iter().any(|n| n.contains("--invariants")));
}

/// A net too large for the elimination (100,000 places: the P-invariants' tableau would
/// have 10^10 entries) gets no invariants, even asked for, and says why; the tableau is not
/// built (the test would run out of memory otherwise). Nothing is marked: one state.
#[test]
fn invariants_of_a_net_too_large_for_the_elimination_are_not_computed_even_asked() {
    let n = 100_000;
    let places: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
    let p: Vec<&str> = places.iter().map(String::as_str).collect();
    assert!(!pnet_verify::invariants::computable(n, 1));
    assert!(pnet_verify::invariants::computable(5_000, 5_000));
    for all_invariants in [false, true] {
        let cfg = PtAnalysis {
            all_invariants,
            ..Default::default()
        };
        let r = analyse_with(&p, &["t: p0 -> p1"], &cfg);
        assert_eq!((r.states, r.edges), (1, 0));
        assert_eq!(
            (r.p_invariants.clone(), r.t_invariants.clone()),
            (None, None)
        );
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("too large for the elimination")),
            "{:?}",
            r.notes
        );
    }
}

#[test]
fn a_net_not_proven_safe_that_is_not_safe_is_explored_as_before() {
    // No P-invariant (`u` drains q); the 1-bit attempt meets two tokens on q and the
    // exploration is made again with the coverability check, not counted as a restart.
    let r = analyse(&["p=1", "q"], &["t: p -> p + q", "u: q -> "]);
    assert_eq!(r.bounded, Verdict::No);
    assert_eq!(r.one_safe, Verdict::No);
    assert!(r.traces.iter().any(|t| t.kind == "unbounded"));
    assert!(!r.notes.iter().any(|n| n.contains("restarted")));
    let no_inv = PtAnalysis {
        invariants: false,
        ..Default::default()
    };
    let n = analyse_with(&["p=1", "q"], &["t: p -> p + q", "u: q -> "], &no_inv);
    assert_eq!((n.states, n.edges), (r.states, r.edges));
    assert_eq!(n.traces[0].path, r.traces[0].path);
}
