//! `--threads`: two threads give the report of one (states, edges, every verdict, bounds,
//! counterexample traces) on the corpus's MCC models and on generated Philosophers nets
//! large enough for their widest levels to be expanded by both threads.

use pnet_verify::PtOptions;
use pnet_verify::pt::{PtAnalysis, analyse_pt};
use pnet_verify::report::Report;

/// The MCC's Philosophers-PT-N (3^N states, two deadlocks) as PNML.
fn philosophers(n: usize) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<pnml><net id=\"phil\" type=\"http://www.pnml.org/version-2009/grammar/ptnet\"><page id=\"pg\">\n",
    );
    for i in 1..=n {
        for (p, m) in [
            ("Think", 1),
            ("Fork", 1),
            ("Catch1", 0),
            ("Catch2", 0),
            ("Eat", 0),
        ] {
            s += &format!(
                "<place id=\"{p}_{i}\"><name><text>{p}_{i}</text></name><initialMarking><text>{m}</text></initialMarking></place>\n"
            );
        }
    }
    let mut arcs = Vec::new();
    for i in 1..=n {
        let left = format!("Fork_{}", if i == 1 { n } else { i - 1 });
        let (think, fork) = (format!("Think_{i}"), format!("Fork_{i}"));
        let (c1, c2, eat) = (
            format!("Catch1_{i}"),
            format!("Catch2_{i}"),
            format!("Eat_{i}"),
        );
        let ts = [
            ("FF1a", vec![&left, &think], vec![&c1]),
            ("FF1b", vec![&think, &fork], vec![&c2]),
            ("FF2a", vec![&c1, &fork], vec![&eat]),
            ("FF2b", vec![&left, &c2], vec![&eat]),
            ("End", vec![&eat], vec![&fork, &think, &left]),
        ];
        for (t, pre, post) in ts {
            let t = format!("{t}_{i}");
            s += &format!("<transition id=\"{t}\"><name><text>{t}</text></name></transition>\n");
            arcs.extend(pre.into_iter().map(|p| (p.clone(), t.clone())));
            arcs.extend(post.into_iter().map(|p| (t.clone(), p.clone())));
        }
    }
    for (k, (src, dst)) in arcs.iter().enumerate() {
        s += &format!("<arc id=\"a{k}\" source=\"{src}\" target=\"{dst}\"/>\n");
    }
    s + "</page></net></pnml>\n"
}

fn analyse(text: &str, threads: usize, max_states: Option<u64>) -> Report {
    analyse_with(text, threads, max_states, true)
}

fn analyse_with(text: &str, threads: usize, max_states: Option<u64>, graph: bool) -> Report {
    let net = pnet_verify::parse_pnml(text).unwrap();
    let cfg = PtAnalysis {
        explore: PtOptions {
            threads,
            max_states,
            ..PtOptions::default()
        },
        traces: 3,
        graph,
        ..PtAnalysis::default()
    };
    analyse_pt(&net, "net.pnml", &cfg).unwrap()
}

#[test]
fn two_threads_report_like_one_on_the_mcc_models() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let mut dirs: Vec<_> = std::fs::read_dir(pnet_tests::corpus().join("mcc"))
        .expect("corpus")
        .map(|d| d.unwrap().path())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 6);
    for dir in dirs {
        let text = std::fs::read_to_string(dir.join("model.pnml")).unwrap();
        let one = analyse(&text, 1, None);
        assert_eq!(analyse(&text, 2, None), one, "{}", dir.display());
    }
}

/// Philosophers-10 (59,049 states; its widest levels pass 8,192 states), whole and stopped
/// by a state limit in the middle of a level expanded by both threads.
#[test]
fn two_threads_report_like_one_on_philosophers() {
    let text = philosophers(10);
    for max_states in [None, Some(30_000)] {
        let one = analyse(&text, 1, max_states);
        assert_eq!(one.states, max_states.unwrap_or(59_049));
        assert_eq!(one.dead_markings, if max_states.is_none() { 2 } else { 0 });
        for threads in [2, 3] {
            assert_eq!(
                analyse(&text, threads, max_states),
                one,
                "{threads} threads"
            );
        }
    }
}

/// Philosophers-11 and -12 (531,441 states: many slices per level, index doublings between
/// slices): the same report without the SCC pass (the pass is the same code whatever
/// explored the states, and slow in a debug build). Philosophers-13 to -15 were compared
/// through `pnetv --json` in a release build.
#[test]
fn two_threads_report_like_one_on_larger_philosophers() {
    for n in 11..=12 {
        let text = philosophers(n);
        let one = analyse_with(&text, 1, None, false);
        assert_eq!(one.states, 3u64.pow(n as u32));
        assert_eq!(one.dead_markings, 2);
        assert_eq!(analyse_with(&text, 2, None, false), one, "Philosophers-{n}");
    }
}
