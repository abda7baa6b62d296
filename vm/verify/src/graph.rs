//! Analyses of an explored reachability graph that need its strongly connected components:
//! termination (no cycle) and liveness (every transition fires in every bottom component).
//!
//! The graph is not stored: successors are recomputed on demand by a callback (once per
//! state, plus once per state of a bottom component for liveness). The pass is Tarjan's
//! algorithm in the space-saving form of Pearce ("A space-efficient algorithm for finding
//! strongly connected components", 2016): one `u32` per state serves as index, low link,
//! on-stack flag and component number, so an edge costs one random read (prefetched a batch
//! at a time). The depth-first stack holds a state and the number of its edges still to
//! follow (8 bytes a frame) and, for each such edge, only its target (4 bytes); an edge to a
//! state already visited when its source is expanded is settled then and never stacked.

use crate::store::mem::ZeroBuf;

/// What the SCC pass found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphFacts {
    /// A state that lies on a cycle (an infinite firing sequence), if any.
    pub cycle_state: Option<u32>,
    /// Number of strongly connected components and of bottom (terminal) ones.
    pub sccs: u64,
    pub bottom_sccs: u64,
    /// Per transition: it fires inside every bottom component (L4-live: from every
    /// reachable marking it can fire again).
    pub live: Vec<bool>,
    /// Per transition that is not live: a state of a bottom component where it never fires.
    pub not_live_witness: Vec<Option<u32>>,
}

/// The successor callback: appends the edges `(target state, transition)` of a state.
pub type Successors<'a> = dyn FnMut(u32, &mut Vec<(u32, u32)>) + 'a;

/// A state on the depth-first path: its id, how many of its edges are still on the edge
/// stack, and two flags (bit 31 and 30 of `rest`).
#[derive(Clone, Copy)]
struct Frame {
    state: u32,
    rest: u32,
}

/// The state is (so far) the root of its component: no edge led to a state visited before it.
const ROOT: u32 = 1 << 31;
/// Some member of the state's component has an edge to an earlier, completed component.
const EXIT: u32 = 1 << 30;
const COUNT: u32 = EXIT - 1;

/// Tarjan's algorithm (Pearce's single-array form), iterative, over the states reachable from
/// state 0 (ids below `n`). `succ(s, out)` appends the edges `(target, transition)` of `s`.
///
/// `rindex[s]` is 0 for a state not visited yet; for a visited state whose component is not
/// complete, its low link (indices of such states are `1..=live`: an index is reused once its
/// state's component completes); for a state of a completed component, the component's number,
/// counted down from `u32::MAX` (always above every live index, so that a `<` comparison with
/// it never lowers a low link).
pub fn analyse(n: usize, transitions: usize, succ: &mut Successors<'_>) -> GraphFacts {
    let mut facts = GraphFacts {
        live: vec![true; transitions],
        not_live_witness: vec![None; transitions],
        ..GraphFacts::default()
    };
    if n == 0 {
        return facts;
    }
    // Live indices and component numbers stay apart while states + components < u32::MAX.
    assert!(
        n < (u32::MAX / 2) as usize,
        "too many states for the SCC pass"
    );
    let mut t = Pass {
        // Read at random: zeroed, on transparent huge pages (a TLB miss per read otherwise).
        rindex: ZeroBuf::new(n, true),
        index: 1,
        comp: u32::MAX,
        stack: Vec::new(),
        frames: Vec::new(),
        edges: Vec::new(),
        batch: Vec::new(),
    };
    let mut fires = vec![false; transitions];
    t.visit(0, succ);
    while let Some(top) = t.frames.last_mut() {
        let v = top.state;
        if top.rest & COUNT > 0 {
            top.rest -= 1;
            let Some(w) = t.edges.pop() else { break };
            if w == v {
                // A self-loop (stacked so that it is seen in edge order, as the first cycle).
                facts.cycle_state.get_or_insert(v);
                continue;
            }
            let rw = t.rindex[w as usize];
            if rw == 0 {
                t.visit(w, succ);
            } else if rw <= t.comp {
                if rw < t.rindex[v as usize] {
                    t.rindex[v as usize] = rw;
                    top.rest &= !ROOT;
                }
            } else {
                top.rest |= EXIT;
            }
            continue;
        }
        let Some(f) = t.frames.pop() else { break };
        if f.rest & ROOT != 0 {
            // `v` roots a component: itself and the stacked states with a low link >= its index.
            let rv = t.rindex[v as usize];
            let mut k = t.stack.len();
            while k > 0 && t.rindex[t.stack[k - 1] as usize] >= rv {
                k -= 1;
            }
            let members = &t.stack[k..];
            facts.sccs += 1;
            if !members.is_empty() {
                facts.cycle_state.get_or_insert(v);
            }
            if f.rest & EXIT == 0 {
                facts.bottom_sccs += 1;
                // A bottom component: every edge of its members stays inside it.
                fires.iter_mut().for_each(|x| *x = false);
                for &m in members.iter().chain(std::iter::once(&v)) {
                    t.batch.clear();
                    succ(m, &mut t.batch);
                    for &(_, tr) in &t.batch {
                        fires[tr as usize] = true;
                    }
                }
                for (tr, &x) in fires.iter().enumerate() {
                    if !x && facts.live[tr] {
                        facts.live[tr] = false;
                        facts.not_live_witness[tr] = Some(v);
                    }
                }
            }
            let c = t.comp;
            for &m in members {
                t.rindex[m as usize] = c;
            }
            t.rindex[v as usize] = c;
            t.index -= members.len() as u32 + 1;
            t.comp -= 1;
            t.stack.truncate(k);
            if let Some(p) = t.frames.last_mut() {
                p.rest |= EXIT;
            }
        } else {
            // `v` belongs to the component of a state below it on the path: of its parent too.
            t.stack.push(v);
            let rv = t.rindex[v as usize];
            if let Some(p) = t.frames.last_mut() {
                if rv < t.rindex[p.state as usize] {
                    t.rindex[p.state as usize] = rv;
                    p.rest &= !ROOT;
                }
                p.rest |= f.rest & EXIT;
            }
        }
    }
    facts
}

struct Pass {
    rindex: ZeroBuf<u32>,
    /// The next index (one more than the number of visited states of incomplete components).
    index: u32,
    /// The next component number (counting down).
    comp: u32,
    /// Visited states of incomplete components that are not their component's root, in
    /// visiting order.
    stack: Vec<u32>,
    frames: Vec<Frame>,
    /// The edges still to follow of the frames' states (the top frame's last), as targets.
    edges: Vec<u32>,
    batch: Vec<(u32, u32)>,
}

impl Pass {
    /// Enters `v`: numbers it, computes its edges, settles those to states visited already
    /// and stacks the others (in reverse, so that they pop in edge order).
    fn visit(&mut self, v: u32, succ: &mut Successors<'_>) {
        let iv = self.index;
        self.index += 1;
        self.rindex[v as usize] = iv;
        self.batch.clear();
        succ(v, &mut self.batch);
        for &(w, _) in &self.batch {
            crate::store::prefetch_read(&self.rindex[w as usize]);
        }
        assert!(
            self.batch.len() < COUNT as usize,
            "too many edges from one state"
        );
        let mut rest = ROOT;
        let mut low = iv;
        for &(w, _) in self.batch.iter().rev() {
            let rw = self.rindex[w as usize];
            if rw == 0 || w == v {
                self.edges.push(w);
                rest += 1;
            } else if rw <= self.comp {
                if rw < low {
                    low = rw;
                    rest &= !ROOT;
                }
            } else {
                rest |= EXIT;
            }
        }
        self.rindex[v as usize] = low;
        self.frames.push(Frame { state: v, rest });
    }
}

/// A shortest path of edges from `from` back to `to` (breadth-first over `succ`), as
/// transitions; `None` if `to` is unreachable from `from`.
pub fn path_between(from: u32, to: u32, succ: &mut Successors<'_>) -> Option<Vec<u32>> {
    use std::collections::HashMap;
    let mut parent: HashMap<u32, (u32, u32)> = HashMap::new();
    let mut queue = std::collections::VecDeque::new();
    queue.push_back(from);
    let mut out = Vec::new();
    while let Some(s) = queue.pop_front() {
        out.clear();
        succ(s, &mut out);
        for &(w, t) in &out {
            if w == to {
                let mut path = vec![t];
                let mut cur = s;
                while cur != from {
                    let (p, pt) = parent[&cur];
                    path.push(pt);
                    cur = p;
                }
                path.reverse();
                return Some(path);
            }
            if w != from && !parent.contains_key(&w) {
                parent.insert(w, (s, t));
                queue.push_back(w);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(adj: &[Vec<(u32, u32)>], transitions: usize) -> GraphFacts {
        analyse(adj.len(), transitions, &mut |s, out| {
            out.extend_from_slice(&adj[s as usize])
        })
    }

    /// The previous implementation (plain Tarjan with index, low link, on-stack and exit arrays,
    /// the edges of every frame stacked): the new pass must find exactly the same facts, the
    /// same witnesses included.
    fn reference(adj: &[Vec<(u32, u32)>], transitions: usize) -> GraphFacts {
        const UNVISITED: u32 = u32::MAX;
        let n = adj.len();
        let mut facts = GraphFacts {
            live: vec![true; transitions],
            not_live_witness: vec![None; transitions],
            ..GraphFacts::default()
        };
        let mut index = vec![UNVISITED; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut exits = vec![false; n];
        let mut stack: Vec<u32> = Vec::new();
        let mut frames: Vec<(u32, usize, usize)> = Vec::new();
        let mut edges: Vec<(u32, u32)> = Vec::new();
        let mut next_index = 0u32;
        let mut visit = |v: u32,
                         index: &mut Vec<u32>,
                         low: &mut Vec<u32>,
                         on_stack: &mut Vec<bool>,
                         stack: &mut Vec<u32>,
                         frames: &mut Vec<(u32, usize, usize)>,
                         edges: &mut Vec<(u32, u32)>| {
            index[v as usize] = next_index;
            low[v as usize] = next_index;
            next_index += 1;
            stack.push(v);
            on_stack[v as usize] = true;
            let start = edges.len();
            edges.extend_from_slice(&adj[v as usize]);
            frames.push((v, start, start));
        };
        visit(
            0,
            &mut index,
            &mut low,
            &mut on_stack,
            &mut stack,
            &mut frames,
            &mut edges,
        );
        while let Some(&(v, start, next)) = frames.last() {
            if next < edges.len() {
                let (w, _) = edges[next];
                if let Some(f) = frames.last_mut() {
                    f.2 += 1;
                }
                if w == v && facts.cycle_state.is_none() {
                    facts.cycle_state = Some(v);
                }
                if index[w as usize] == UNVISITED {
                    visit(
                        w,
                        &mut index,
                        &mut low,
                        &mut on_stack,
                        &mut stack,
                        &mut frames,
                        &mut edges,
                    );
                } else if on_stack[w as usize] {
                    low[v as usize] = low[v as usize].min(index[w as usize]);
                } else {
                    exits[v as usize] = true;
                }
                continue;
            }
            frames.pop();
            edges.truncate(start);
            if low[v as usize] == index[v as usize] {
                facts.sccs += 1;
                let mut members = Vec::new();
                let mut exit = false;
                while let Some(w) = stack.pop() {
                    on_stack[w as usize] = false;
                    exit |= exits[w as usize];
                    members.push(w);
                    if w == v {
                        break;
                    }
                }
                if members.len() > 1 && facts.cycle_state.is_none() {
                    facts.cycle_state = Some(v);
                }
                if !exit {
                    facts.bottom_sccs += 1;
                    let mut fires = vec![false; transitions];
                    for &m in &members {
                        for &(_, tr) in &adj[m as usize] {
                            fires[tr as usize] = true;
                        }
                    }
                    for (tr, &f) in fires.iter().enumerate() {
                        if !f && facts.live[tr] {
                            facts.live[tr] = false;
                            facts.not_live_witness[tr] = Some(v);
                        }
                    }
                }
            }
            if let Some(&(u, _, _)) = frames.last() {
                if on_stack[v as usize] {
                    low[u as usize] = low[u as usize].min(low[v as usize]);
                } else {
                    exits[u as usize] = true;
                }
            }
        }
        facts
    }

    /// Components from the reachability relation (quadratic; small graphs only): the number
    /// of components reachable from state 0, of bottom ones, liveness, and which states lie
    /// on a cycle.
    fn brute(adj: &[Vec<(u32, u32)>], transitions: usize) -> (u64, u64, Vec<bool>, Vec<bool>) {
        let n = adj.len();
        let reach: Vec<Vec<bool>> = (0..n)
            .map(|s| {
                let mut seen = vec![false; n];
                let mut todo = vec![s];
                seen[s] = true;
                while let Some(v) = todo.pop() {
                    for &(w, _) in &adj[v] {
                        if !seen[w as usize] {
                            seen[w as usize] = true;
                            todo.push(w as usize);
                        }
                    }
                }
                seen
            })
            .collect();
        let states: Vec<usize> = (0..n).filter(|&s| reach[0][s]).collect();
        let mut sccs = 0;
        let mut bottoms = 0;
        let mut live = vec![true; transitions];
        let on_cycle: Vec<bool> = (0..n)
            .map(|s| adj[s].iter().any(|&(w, _)| reach[w as usize][s]))
            .collect();
        for &s in &states {
            let members: Vec<usize> = states
                .iter()
                .copied()
                .filter(|&m| reach[s][m] && reach[m][s])
                .collect();
            if members[0] != s {
                continue; // counted at its smallest member
            }
            sccs += 1;
            let bottom = members
                .iter()
                .all(|&m| adj[m].iter().all(|&(w, _)| reach[w as usize][s]));
            if bottom {
                bottoms += 1;
                for (t, l) in live.iter_mut().enumerate() {
                    *l &= members
                        .iter()
                        .any(|&m| adj[m].iter().any(|&(_, tr)| tr as usize == t));
                }
            }
        }
        (sccs, bottoms, live, on_cycle)
    }

    use crate::test_rng::Rng;

    #[test]
    fn random_graphs_agree_with_the_previous_pass_and_with_reachability() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut with_cycle = 0;
        let mut with_live = 0;
        for round in 0..3000 {
            let n = 1 + rng.below(30) as usize;
            let transitions = 1 + rng.below(5) as usize;
            // Sparse to dense; some rounds mostly forward edges (few cycles, many components).
            let degree = rng.below(4);
            let forward = round % 3 == 0;
            let adj: Vec<Vec<(u32, u32)>> = (0..n)
                .map(|s| {
                    (0..rng.below(degree + 1))
                        .map(|_| {
                            let w = if forward && rng.below(8) != 0 {
                                s as u64 + rng.below((n - s) as u64)
                            } else {
                                rng.below(n as u64)
                            };
                            (w as u32, rng.below(transitions as u64) as u32)
                        })
                        .collect()
                })
                .collect();
            let got = run(&adj, transitions);
            assert_eq!(got, reference(&adj, transitions), "round {round}: {adj:?}");
            let (sccs, bottoms, live, on_cycle) = brute(&adj, transitions);
            assert_eq!(
                (got.sccs, got.bottom_sccs, &got.live),
                (sccs, bottoms, &live),
                "round {round}: {adj:?}"
            );
            let reachable_cycle = {
                let mut seen = vec![false; n];
                let mut todo = vec![0usize];
                seen[0] = true;
                let mut any = false;
                while let Some(v) = todo.pop() {
                    any |= on_cycle[v];
                    for &(w, _) in &adj[v] {
                        if !seen[w as usize] {
                            seen[w as usize] = true;
                            todo.push(w as usize);
                        }
                    }
                }
                any
            };
            assert_eq!(got.cycle_state.is_some(), reachable_cycle, "round {round}");
            if let Some(c) = got.cycle_state {
                assert!(on_cycle[c as usize], "round {round}");
                with_cycle += 1;
            }
            with_live += usize::from(got.live.iter().any(|&l| l));
        }
        // The rounds cover both outcomes of each verdict.
        assert!(with_cycle > 300 && with_cycle < 2700, "{with_cycle}");
        assert!(with_live > 100, "{with_live}");
    }

    #[test]
    fn dag_terminates_and_nothing_is_live() {
        let g = run(&[vec![(1, 0), (2, 1)], vec![(2, 1)], vec![]], 2);
        assert_eq!(g.cycle_state, None);
        assert_eq!(g.bottom_sccs, 1);
        assert_eq!(g.live, vec![false, false]);
    }

    #[test]
    fn cycle_and_bottom_component() {
        // 0 -a-> 1 -b-> 2 -c-> 1 ; 1 and 2 form the only bottom component.
        let adj = [vec![(1, 0)], vec![(2, 1)], vec![(1, 2)]];
        let g = run(&adj, 3);
        assert!(g.cycle_state.is_some());
        assert_eq!(g.sccs, 2);
        assert_eq!(g.bottom_sccs, 1);
        assert_eq!(g.live, vec![false, true, true]);
        assert!(g.not_live_witness[0].is_some());
        let p = path_between(1, 1, &mut |s, out| out.extend_from_slice(&adj[s as usize]));
        assert_eq!(p, Some(vec![1, 2]));
    }
}
