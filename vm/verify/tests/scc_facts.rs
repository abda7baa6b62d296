//! The SCC facts of the backward search (`pnet_verify::backward`) against the depth-first
//! pass (`pnet_verify::graph::analyse`, itself checked against reachability in its unit
//! tests) on random small P/T nets: reversible ones (transitions in pairs that undo each
//! other), reversible ones with dead ends, and unstructured ones; at one bit per place and
//! wider.

use pnet_verify::explore::{self, Compiled, PtExploration, SuccScratch};
use pnet_verify::{PtNet, PtOptions, backward, graph};

/// xorshift64*: reproducible pseudo-random numbers without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) % n
    }
}

/// Arcs of one side of a transition: (place, weight).
type Arcs = Vec<(usize, u64)>;

/// A PNML net: `initial[p]` tokens, transitions as (pre, post) arcs.
fn pnml(initial: &[u64], transitions: &[(Arcs, Arcs)]) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<pnml><net id=\"n\" type=\"http://www.pnml.org/version-2009/grammar/ptnet\"><page id=\"pg\">\n",
    );
    for (p, m) in initial.iter().enumerate() {
        s += &format!(
            "<place id=\"p{p}\"><initialMarking><text>{m}</text></initialMarking></place>\n"
        );
    }
    let mut arcs = String::new();
    for (t, (pre, post)) in transitions.iter().enumerate() {
        s += &format!("<transition id=\"t{t}\"/>\n");
        for (side, list) in [(0, pre), (1, post)] {
            for (j, &(p, w)) in list.iter().enumerate() {
                let (src, dst) = if side == 0 {
                    (format!("p{p}"), format!("t{t}"))
                } else {
                    (format!("t{t}"), format!("p{p}"))
                };
                arcs += &format!(
                    "<arc id=\"a{t}_{side}_{j}\" source=\"{src}\" target=\"{dst}\"><inscription><text>{w}</text></inscription></arc>\n"
                );
            }
        }
    }
    s + &arcs + "</page></net></pnml>\n"
}

fn random_net(rng: &mut Rng, round: usize) -> PtNet {
    let places = 2 + rng.below(6) as usize;
    let wide = round.is_multiple_of(4);
    let initial: Vec<u64> = (0..places)
        .map(|_| rng.below(if wide { 3 } else { 2 }))
        .collect();
    let arcs = |rng: &mut Rng| -> Arcs {
        let mut a: Arcs = Vec::new();
        for _ in 0..1 + rng.below(2) {
            let p = rng.below(places as u64) as usize;
            if a.iter().all(|x| x.0 != p) {
                a.push((p, if wide { 1 + rng.below(2) } else { 1 }));
            }
        }
        a
    };
    let mut ts = Vec::new();
    let shape = round % 3;
    for _ in 0..1 + rng.below(5) {
        let (pre, post) = (arcs(rng), arcs(rng));
        ts.push((pre.clone(), post.clone()));
        // Shape 0: every transition undone by another (reversible); shape 1: most of them
        // (dead ends); shape 2: none in particular.
        if shape == 0 || (shape == 1 && rng.below(4) != 0) {
            ts.push((post, pre));
        }
    }
    pnet_verify::parse_pnml(&pnml(&initial, &ts)).unwrap()
}

fn dfs_facts(c: &Compiled, e: &PtExploration) -> graph::GraphFacts {
    let mut x = SuccScratch::default();
    graph::analyse(e.store.len(), c.transitions, &mut |v, out| {
        explore::successors(c, e, v, &mut x, out)
    })
}

#[test]
fn backward_facts_equal_the_depth_first_pass() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let opts = PtOptions {
        max_states: Some(5_000),
        ..PtOptions::default()
    };
    let (mut settled, mut with_dead, mut at_one_bit, mut wider, mut declined) = (0, 0, 0, 0, 0);
    for round in 0..1500 {
        let net = random_net(&mut rng, round);
        let c = Compiled::new(&net).unwrap();
        let e = explore::explore(&net, &c, &opts, None, 1);
        if !e.complete() {
            continue;
        }
        let dfs = dfs_facts(&c, &e);
        let back = backward::facts(&net, &e, 1);
        // Levels split between threads (from one state on; a thread per level and part is
        // slow in a debug build: every tenth net).
        if round % 10 == 0 {
            assert_eq!(backward::facts_split(&net, &e, 2, 1), back, "round {round}");
            assert_eq!(backward::facts_split(&net, &e, 3, 2), back, "round {round}");
        }
        let Some(back) = back else {
            declined += 1;
            continue;
        };
        settled += 1;
        if e.packing.bits == 1 {
            at_one_bit += 1;
        } else {
            wider += 1;
        }
        let what = format!("round {round}: {net:?}");
        assert_eq!(back.cycle_state, dfs.cycle_state, "{what}");
        assert_eq!(
            (back.sccs, back.bottom_sccs, &back.live),
            (dfs.sccs, dfs.bottom_sccs, &dfs.live),
            "{what}"
        );
        if e.dead_count == 0 {
            assert_eq!(back.not_live_witness, dfs.not_live_witness, "{what}");
        } else {
            with_dead += 1;
            // Any dead state is a bottom component where nothing fires.
            let mut x = SuccScratch::default();
            for (t, w) in back.not_live_witness.iter().enumerate() {
                assert_eq!(w.is_some(), dfs.not_live_witness[t].is_some(), "{what}");
                if let Some(w) = *w {
                    let mut out = Vec::new();
                    explore::successors(&c, &e, w, &mut x, &mut out);
                    assert!(out.is_empty(), "{what}: state {w} is not dead");
                }
            }
        }
    }
    // Both outcomes, both packings and dead ends all occur.
    assert!(settled > 300, "{settled}");
    assert!(declined > 100, "{declined}");
    assert!(with_dead > 30, "{with_dead}");
    assert!(at_one_bit > 100 && wider > 30, "{at_one_bit} {wider}");
}
