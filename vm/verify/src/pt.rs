//! The analysis of a P/T net: invariants, exploration, SCC pass, traces -> [`Report`].

use crate::explore::{self, Compiled, PtExploration, PtOptions, Reduction, Stop};
use crate::graph;
use crate::invariants;
use crate::memory_stop;
use crate::ptnet::PtNet;
use crate::report::{Report, Trace, TransitionInfo, Verdict};

/// What to analyse beyond the state space.
#[derive(Clone, Debug)]
pub struct PtAnalysis {
    pub explore: PtOptions,
    /// How many deadlocks get a counterexample.
    pub traces: usize,
    /// Run the SCC pass (termination, liveness).
    pub graph: bool,
    /// Compute invariants (also used to choose the packing and skip the coverability check).
    pub invariants: bool,
    /// Compute them whatever they cost (`pnetv --invariants`). Otherwise they get a work
    /// budget: [`PRE_BUDGET`] for the P-invariants before the exploration, then for what is
    /// still missing (the T-invariants, the P-invariants if they did not fit) a budget in
    /// proportion to the exploration's size (at least [`POST_BUDGET_MIN`]), so that they
    /// never dominate the run.
    pub all_invariants: bool,
}

/// The work budget (see [`invariants::farkas`]) of the P-invariants before the exploration:
/// some tens of microseconds, a fraction of the start of a process. They prove bounds and
/// 1-safety up front (a packed marking of the right width, no coverability check); without
/// them the exploration finds out itself.
pub const PRE_BUDGET: u64 = 25_000;

/// States and edges explored per work unit of each elimination after the exploration (a
/// unit is a few nanoseconds, an edge 10 to 50: the invariants stay under a fifth of the run).
pub const EDGES_PER_WORK: u64 = 4;

/// The smallest budget of each elimination after the exploration: on the smallest state
/// spaces the whole run is the start of the process, a few milliseconds.
pub const POST_BUDGET_MIN: u64 = 5_000;

impl Default for PtAnalysis {
    fn default() -> Self {
        PtAnalysis {
            explore: PtOptions::default(),
            traces: 1,
            graph: true,
            invariants: true,
            all_invariants: false,
        }
    }
}

/// Analyses a P/T net read from `file` (used in locations and reports).
pub fn analyse_pt(net: &PtNet, file: &str, cfg: &PtAnalysis) -> Result<Report, String> {
    let c = Compiled::new(net)?;
    let mut r = Report::new(file, "P/T net");
    r.places = net.places.iter().map(|p| p.name.clone()).collect();
    r.transitions = net
        .transitions
        .iter()
        .map(|t| TransitionInfo {
            id: t.id.clone(),
            name: t.name.clone(),
            location: format!("{file}:{}:{}", t.pos.line, t.pos.col),
        })
        .collect();
    let (np, nt) = (net.places.len(), net.transitions.len());
    let pre_budget = if cfg.all_invariants {
        u64::MAX
    } else {
        PRE_BUDGET
    };
    // The incidence matrix (places x transitions, dense) is built only for an elimination
    // that may run: not without invariants, not when the first step alone is over the
    // budget (see `invariants::farkas`), never past `invariants::MAX_CELLS`.
    let computable = cfg.invariants && invariants::computable(np, nt);
    let within = |budget: u64| computable && (np as u64).saturating_mul(nt as u64) <= budget;
    let mut incidence = None;
    let mut inv = invariants::Invariants::default();
    if within(pre_budget) {
        let m = incidence.get_or_insert_with(|| net.incidence());
        inv.p = invariants::p_invariants(m, nt, pre_budget);
    }
    let e = explore::explore(net, &c, &cfg.explore, inv.p.as_deref(), cfg.traces);
    let mut skipped = false;
    if cfg.invariants {
        // What is left, under a budget in proportion to the state space explored.
        let budget = if cfg.all_invariants {
            u64::MAX
        } else {
            POST_BUDGET_MIN.max((e.edges + e.states()) / EDGES_PER_WORK)
        };
        if within(budget) {
            let m = incidence.get_or_insert_with(|| net.incidence());
            if inv.p.is_none() && budget > pre_budget {
                inv.p = invariants::p_invariants(m, nt, budget);
            }
            inv.t = invariants::t_invariants(m, nt, budget);
        }
        skipped = !cfg.all_invariants && (inv.p.is_none() || inv.t.is_none());
    }
    r.p_invariants = inv.p.clone();
    r.t_invariants = inv.t.clone();
    // The P-invariants may have been computed after the exploration (over the first budget).
    r.structurally_bounded = e.structurally_bounded
        || inv.p.as_deref().is_some_and(|p| {
            invariants::place_bounds(p, &net.initial_marking())
                .iter()
                .all(Option::is_some)
        });
    let full = cfg.explore.reduction == Reduction::None;
    r.reduction = if full { "none" } else { "stubborn sets" };
    r.states = e.states();
    r.edges = e.edges;
    r.complete = e.complete();
    r.incomplete_reason = match &e.stop {
        Some(Stop::StateLimit) => Some(format!("stopped at --max-states {}", e.states())),
        Some(Stop::MemoryLimit(limit)) => Some(memory_stop(*limit, e.states())),
        Some(Stop::Unbounded) => Some("the net is unbounded (infinite state space)".into()),
        Some(Stop::Capacity(why)) => Some(why.clone()),
        None if e.cut > 0 => Some(format!(
            "{} marking(s) above --max-tokens were not expanded",
            e.cut
        )),
        None => None,
    };
    r.packing_bits = Some(e.packing.bits);
    r.bytes_per_state = Some(e.bytes_per_state());
    r.place_bounds = e.place_max.clone();
    r.max_tokens_in_place = e.place_max.iter().copied().max().unwrap_or(0);
    r.max_tokens_per_marking = e.marking_max;
    let incomplete = || Verdict::Unknown(r.incomplete_reason.clone().unwrap_or_default());
    let reduced = || Verdict::Unknown("not computed under stubborn-set reduction".into());

    // Bounds and safety.
    r.bounded = if let Some((_, _, grow)) = &e.unbounded {
        r.unbounded_places = grow.iter().map(|p| p.index()).collect();
        Verdict::No
    } else if r.structurally_bounded || (r.complete && full) {
        Verdict::Yes
    } else if !full {
        reduced()
    } else {
        incomplete()
    };
    let invariant_safe = inv
        .p
        .as_deref()
        .map(|p| invariants::place_bounds(p, &net.initial_marking()))
        .is_some_and(|b| b.iter().all(|x| x.is_some_and(|v| v <= 1)));
    r.one_safe = if e.first_unsafe.is_some() || e.unbounded.is_some() {
        Verdict::No
    } else if invariant_safe || (r.complete && full) {
        Verdict::Yes
    } else if !full {
        reduced()
    } else {
        incomplete()
    };
    // Deadlocks: every dead P/T marking is one.
    r.dead_markings = e.dead_count;
    r.deadlock = if e.dead_count > 0 {
        Verdict::Yes
    } else if r.complete {
        Verdict::No
    } else {
        incomplete()
    };
    if full && r.complete {
        r.dead_transitions = Some(
            (0..net.transitions.len())
                .filter(|&t| !e.fired[t])
                .collect(),
        );
    }

    // Counterexamples.
    for &d in &e.dead {
        r.traces.push(Trace {
            kind: "deadlock",
            path: ids(explore::trace_to(&c, &e, d)),
            cycle: Vec::new(),
            marking: render(net, &e.marking(d)),
            exact: true,
            note: String::new(),
        });
    }
    if let Some((s, p)) = e.first_unsafe {
        r.traces.push(Trace {
            kind: "unsafe",
            path: ids(explore::trace_to(&c, &e, s)),
            cycle: Vec::new(),
            marking: render(net, &e.marking(s)),
            exact: true,
            note: format!(
                "{} tokens on {}",
                e.marking(s)[p.index()],
                net.place(p).name
            ),
        });
    }
    if let Some((anc, cov, grow)) = &e.unbounded {
        let prefix = ids(explore::trace_to(&c, &e, *anc));
        let full_path = ids(explore::trace_to(&c, &e, *cov));
        let pump = full_path[prefix.len().min(full_path.len())..].to_vec();
        let names: Vec<&str> = grow.iter().map(|p| net.place(*p).name.as_str()).collect();
        r.traces.push(Trace {
            kind: "unbounded",
            path: prefix,
            cycle: pump,
            marking: render(net, &e.marking(*cov)),
            exact: true,
            note: format!(
                "each repetition of the loop adds tokens to {}",
                names.join(", ")
            ),
        });
        r.terminates = Verdict::No;
    }
    if let Some(s) = e.first_cut {
        r.traces.push(Trace {
            kind: "token-limit",
            path: ids(explore::trace_to(&c, &e, s)),
            cycle: Vec::new(),
            marking: render(net, &e.marking(s)),
            exact: true,
            note: "a marking above --max-tokens".into(),
        });
    }

    // Termination and liveness.
    let no_t_invariant = inv.t.as_ref().is_some_and(|t| t.is_empty());
    if e.unbounded.is_some() {
        // Already decided: not terminating.
    } else if no_t_invariant {
        r.terminates = Verdict::Yes;
        r.notes
            .push("no semi-positive T-invariant: the net terminates from every marking".into());
    } else if !full {
        r.terminates = reduced();
    } else if !r.complete {
        r.terminates = incomplete();
    }
    if full && r.complete && cfg.graph {
        let facts = scc(net, &c, &e, cfg.explore.threads);
        if e.unbounded.is_none() {
            r.terminates = Verdict::from_bool(facts.cycle_state.is_none());
        }
        if let Some(s) = facts.cycle_state {
            let prefix = ids(explore::trace_to(&c, &e, s));
            let mut x = explore::SuccScratch::default();
            let cycle = graph::path_between(s, s, &mut |v, out| {
                explore::successors(&c, &e, v, &mut x, out)
            })
            .unwrap_or_default();
            r.traces.push(Trace {
                kind: "nontermination",
                path: prefix,
                cycle: cycle.into_iter().map(|t| t as usize).collect(),
                marking: render(net, &e.marking(s)),
                exact: true,
                note: "a reachable cycle".into(),
            });
        }
        r.live = Some(facts.live);
        r.notes.push(format!(
            "{} strongly connected component(s), {} bottom",
            facts.sccs, facts.bottom_sccs
        ));
    } else if full && r.complete && !no_t_invariant {
        r.terminates = Verdict::Unknown("SCC pass skipped".into());
    }
    if cfg.explore.reduction == Reduction::Stubborn {
        r.notes.push("stubborn-set reduction: states and edges are those of the reduced graph; deadlocks are exact, traces are valid but not necessarily shortest".into());
    }
    if cfg.invariants && !computable {
        r.notes.push(format!(
            "invariants not computed: a net of {np} places and {nt} transitions is too large for the elimination (its tableau would pass {} entries)",
            invariants::MAX_CELLS
        ));
    } else if skipped {
        r.notes.push(
            "invariants not all computed: over their work budget (a share of the state space's) or the elimination too large; --invariants lifts the budget"
                .into(),
        );
    }
    if e.restarts > 0 {
        r.notes.push(format!(
            "exploration restarted {} time(s) for a wider packing",
            e.restarts
        ));
    }
    Ok(r)
}

fn scc(net: &PtNet, c: &Compiled, e: &PtExploration, threads: usize) -> graph::GraphFacts {
    if let Some(facts) = crate::backward::facts(net, e, threads) {
        return facts;
    }
    let mut x = explore::SuccScratch::default();
    graph::analyse(e.store.len(), c.transitions, &mut |v, out| {
        explore::successors(c, e, v, &mut x, out)
    })
}

fn ids(v: Vec<pnet_bundle::TransitionId>) -> Vec<usize> {
    v.into_iter().map(|t| t.index()).collect()
}

/// `p=1 q=2`, places with tokens only.
pub fn render(net: &PtNet, m: &[u32]) -> String {
    let parts: Vec<String> = m
        .iter()
        .enumerate()
        .filter(|(_, v)| **v > 0)
        .map(|(p, v)| {
            if *v == 1 {
                net.places[p].name.clone()
            } else {
                format!("{}={v}", net.places[p].name)
            }
        })
        .collect();
    if parts.is_empty() {
        "(empty)".into()
    } else {
        parts.join(" ")
    }
}
