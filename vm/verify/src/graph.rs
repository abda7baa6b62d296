//! Analyses of an explored reachability graph that need its strongly connected components:
//! termination (no cycle) and liveness (every transition fires in every bottom component).
//!
//! The graph is not stored: successors are recomputed on demand by a callback, so the pass
//! costs about a second exploration in time and 8 bytes and 2 bits per state (plus the DFS
//! stack) in memory.

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

const UNVISITED: u32 = u32::MAX;

/// Tarjan's algorithm, iterative, over the states reachable from state 0 (ids below `n`).
/// `succ(s, out)` appends the edges `(target, transition)` of `s`.
pub fn analyse(n: usize, transitions: usize, succ: &mut Successors<'_>) -> GraphFacts {
    let mut facts = GraphFacts {
        live: vec![true; transitions],
        not_live_witness: vec![None; transitions],
        ..GraphFacts::default()
    };
    if n == 0 {
        return facts;
    }
    let mut t = Tarjan {
        index: vec![UNVISITED; n],
        low: vec![0u32; n],
        on_stack: vec![false; n],
        exits: vec![false; n],
        stack: Vec::new(),
        frames: Vec::new(),
        edges: Vec::new(),
        next_index: 0,
    };
    let mut fires = vec![false; transitions];
    let mut scratch: Vec<(u32, u32)> = Vec::new();
    t.visit(0, succ);
    while let Some(&(v, start, next)) = t.frames.last() {
        if next < t.edges.len() {
            let (w, _) = t.edges[next];
            if let Some(f) = t.frames.last_mut() {
                f.2 += 1;
            }
            if w == v && facts.cycle_state.is_none() {
                facts.cycle_state = Some(v);
            }
            if t.index[w as usize] == UNVISITED {
                t.visit(w, succ);
            } else if t.on_stack[w as usize] {
                t.low[v as usize] = t.low[v as usize].min(t.index[w as usize]);
            } else {
                t.exits[v as usize] = true;
            }
            continue;
        }
        t.frames.pop();
        t.edges.truncate(start);
        if t.low[v as usize] == t.index[v as usize] {
            facts.sccs += 1;
            let mut members = Vec::new();
            let mut exit = false;
            while let Some(w) = t.stack.pop() {
                t.on_stack[w as usize] = false;
                exit |= t.exits[w as usize];
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
                // A bottom component: every edge of its members stays inside it.
                fires.iter_mut().for_each(|f| *f = false);
                for &m in &members {
                    scratch.clear();
                    succ(m, &mut scratch);
                    for &(_, tr) in &scratch {
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
        if let Some(&(u, _, _)) = t.frames.last() {
            if t.on_stack[v as usize] {
                t.low[u as usize] = t.low[u as usize].min(t.low[v as usize]);
            } else {
                t.exits[u as usize] = true;
            }
        }
    }
    facts
}

struct Tarjan {
    index: Vec<u32>,
    low: Vec<u32>,
    on_stack: Vec<bool>,
    exits: Vec<bool>,
    stack: Vec<u32>,
    /// DFS frames: (state, start of its edges in `edges`, next edge).
    frames: Vec<(u32, usize, usize)>,
    edges: Vec<(u32, u32)>,
    next_index: u32,
}

impl Tarjan {
    fn visit(&mut self, v: u32, succ: &mut Successors<'_>) {
        self.index[v as usize] = self.next_index;
        self.low[v as usize] = self.next_index;
        self.next_index += 1;
        self.stack.push(v);
        self.on_stack[v as usize] = true;
        let start = self.edges.len();
        succ(v, &mut self.edges);
        self.frames.push((v, start, start));
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
