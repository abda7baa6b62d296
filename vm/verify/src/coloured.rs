//! State-space exploration of coloured nets (bundles): tokens carry values; conditions and
//! expressions run in the VM's interpreter.
//!
//! Semantics explored: every binding of every enabled transition of the highest priority
//! group that has one (the engine picks one of them at random and takes the first
//! satisfying combination in token order; exploring all of them covers every schedule and
//! every token order). Expression transitions fire inside the state space; a module call is
//! one atomic firing (consume, then produce its outputs; a task's in-flight time changes no
//! verdict since `number-of-tokens` counts in-flight tokens as present).
//!
//! Module outputs are unknown before running. Each output port of a module call produces
//! the values the user assumes for it (`--assume TRANSITION.PORT=V1,V2,...`, one successor
//! per combination), and otherwise an *unknown* token. An unknown token is moved and counted
//! like any token; a condition or expression that reads it cannot be evaluated:
//! - a condition that reads an unknown value is *maybe* true: the binding fires (a *maybe*
//!   edge) and the marking may also stay as it is (the group below is tried as well);
//! - an expression that reads an unknown value gives unknown outputs;
//! - `connect-out-many` of an unknown list puts one unknown token (the count is then not
//!   exact: bounds and safety are reported as approximations, see [`ColouredResult::notes`]).
//!
//! The abstract state space then over-approximates every run: "no deadlock", "bounded by
//! k", "1-safe", "transition t is dead", "terminates" proven on it hold for every real run
//! (exact); a deadlock, an unsafe marking or a cycle found on it is real when its trace uses
//! no maybe edge (reported `exact`) and possibly spurious otherwise. Without unknown tokens
//! (no module calls, or every module output assumed) every verdict is exact (relative to the
//! assumptions).

use std::collections::{BTreeMap, BTreeSet};

use pnet_bundle::{Body, Bundle, ConnectKind, FunctionId, Net, PortId};
use pnet_stdlib::Value;
use pnet_vm::{Interpreter, RunError, RunErrorKind};

use crate::report::{Report, Trace, TransitionInfo, Verdict};

/// A token: a value or an abstracted module output.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tok {
    Val(Value),
    Unknown,
}

/// A marking: per place a sorted multiset of tokens.
pub type Marking = Vec<Vec<Tok>>;

/// Options of a coloured exploration.
#[derive(Clone, Debug)]
pub struct ColouredOptions {
    pub max_states: u64,
    pub max_tokens: Option<u64>,
    pub traces: usize,
    /// `(transition name, output port, values)`: the values a module output may take.
    pub assume: Vec<(String, String, Vec<Value>)>,
}

impl Default for ColouredOptions {
    fn default() -> Self {
        ColouredOptions {
            max_states: 1_000_000,
            max_tokens: None,
            traces: 1,
            assume: Vec::new(),
        }
    }
}

/// Extra results besides the [`Report`].
#[derive(Clone, Debug, Default)]
pub struct ColouredResult {
    pub notes: Vec<String>,
}

#[derive(Debug)]
enum Kind {
    Expr(usize),
    Module,
}

#[derive(Debug)]
struct TInfo {
    prio: u16,
    kind: Kind,
    function: FunctionId,
    takes: Vec<(PortId, usize, bool)>,
    counts: Vec<(PortId, usize)>,
    outs: Vec<(PortId, usize, bool)>,
    condition: Option<usize>,
    /// Per output port of a module: the assumed values (`None`: unknown).
    assumed: Vec<(PortId, Option<Vec<Value>>)>,
}

struct Succ {
    t: usize,
    marking: Marking,
    exact: bool,
}

enum Outcome {
    Fired(Vec<Succ>, bool),
    Error(usize, String),
}

struct Explorer<'b> {
    bundle: &'b Bundle,
    info: Vec<TInfo>,
    /// Priority groups, highest first: transition indices.
    groups: Vec<Vec<usize>>,
    interp: Interpreter,
    frame: Vec<Option<Value>>,
    unknown_many: bool,
    produced_unknown: bool,
}

/// Analyses the root net of a bundle with the given job inputs (`port -> tokens`).
pub fn analyse_bundle(
    bundle: &Bundle,
    file: &str,
    inputs: &[(String, Vec<Value>)],
    opts: &ColouredOptions,
) -> Result<Report, String> {
    pnet_vm::validate(bundle)?;
    let root = bundle.function(bundle.root);
    let Body::Net(net) = &root.body else {
        return Err("the root function has no net body".into());
    };
    let mut info = Vec::new();
    for t in &net.transitions {
        let f = bundle.function(t.function);
        let kind = match &f.body {
            Body::Expression(c) => Kind::Expr(c.index()),
            Body::Module(_) | Body::Modules { .. } => Kind::Module,
            Body::Net(_) => {
                return Err(format!(
                    "transition `{}` ({}) runs a child net that was not inlined; pnetv analyses inlined nets only",
                    t.name,
                    bundle.location(t.span)
                ));
            }
        };
        let mut ti = TInfo {
            prio: t.priority,
            kind,
            function: t.function,
            takes: Vec::new(),
            counts: Vec::new(),
            outs: Vec::new(),
            condition: t.condition.map(|c| c.index()),
            assumed: Vec::new(),
        };
        for c in &t.connections {
            let p = c.place.index();
            match c.kind {
                ConnectKind::In => ti.takes.push((c.port, p, true)),
                ConnectKind::Read => ti.takes.push((c.port, p, false)),
                ConnectKind::NumberOfTokens => ti.counts.push((c.port, p)),
                ConnectKind::Out => ti.outs.push((c.port, p, false)),
                ConnectKind::OutMany => ti.outs.push((c.port, p, true)),
            }
        }
        if matches!(ti.kind, Kind::Module) {
            let mut ports: Vec<PortId> = ti.outs.iter().map(|o| o.0).collect();
            ports.dedup();
            for port in ports {
                let pname = &f.port(port).name;
                let vals = opts
                    .assume
                    .iter()
                    .find(|(tn, pn, _)| *tn == t.name && pn == pname)
                    .map(|a| a.2.clone());
                ti.assumed.push((port, vals));
            }
        }
        info.push(ti);
    }
    for (tn, pn, _) in &opts.assume {
        let ok = net.transitions.iter().zip(&info).any(|(t, i)| {
            t.name == *tn
                && matches!(i.kind, Kind::Module)
                && bundle.function(t.function).port_by_name(pn).is_some()
        });
        if !ok {
            return Err(format!(
                "--assume {tn}.{pn}: no module call `{tn}` with an output port `{pn}`"
            ));
        }
    }
    let mut prios: Vec<u16> = info.iter().map(|i| i.prio).collect();
    prios.sort_unstable_by(|a, b| b.cmp(a));
    prios.dedup();
    let groups = prios
        .iter()
        .map(|&p| (0..info.len()).filter(|&t| info[t].prio == p).collect())
        .collect();

    // The initial marking: place tokens and job inputs.
    let mut m0: Marking = net
        .places
        .iter()
        .map(|p| p.tokens.iter().cloned().map(Tok::Val).collect())
        .collect();
    for (name, values) in inputs {
        let port = root
            .port_by_name(name)
            .map(|p| root.port(p))
            .filter(|p| p.dir.is_input())
            .ok_or_else(|| format!("the net has no in port `{name}`"))?;
        let place = port
            .place
            .ok_or_else(|| format!("in port `{name}` is bound to no place"))?;
        for v in values {
            if !v.fits(&port.ty) {
                return Err(format!(
                    "value {v} for port `{name}` is not of type {}",
                    port.ty
                ));
            }
            m0[place.index()].push(Tok::Val(v.clone()));
        }
    }
    m0.iter_mut().for_each(|p| p.sort());

    let mut x = Explorer {
        bundle,
        info,
        groups,
        interp: Interpreter::new(),
        frame: Vec::new(),
        unknown_many: false,
        produced_unknown: false,
    };
    let consumed: Vec<bool> = (0..net.places.len())
        .map(|p| {
            x.info
                .iter()
                .any(|i| i.takes.iter().any(|tk| tk.1 == p && tk.2))
        })
        .collect();
    let monotone = x.groups.len() <= 1 && x.info.iter().all(|i| i.counts.is_empty());

    let mut r = Report::new(file, "coloured net");
    r.places = net.places.iter().map(|p| p.name.clone()).collect();
    r.transitions = net
        .transitions
        .iter()
        .map(|t| TransitionInfo {
            id: t.name.clone(),
            name: t.name.clone(),
            location: bundle.location(t.span),
        })
        .collect();

    // Breadth-first exploration.
    let mut states: Vec<Marking> = vec![m0.clone()];
    let mut index: BTreeMap<Marking, u32> = BTreeMap::new();
    index.insert(m0, 0);
    // Parent, transition, exact edge, exact path.
    let mut parents: Vec<(u32, u32, bool, bool)> = vec![(u32::MAX, 0, true, true)];
    let mut adj: Vec<Vec<(u32, u32)>> = Vec::new();
    let mut fired = vec![false; net.transitions.len()];
    let mut place_max: Vec<u64> = states[0].iter().map(|p| p.len() as u64).collect();
    let mut marking_max: u64 = place_max.iter().sum();
    let mut dead: Vec<(u32, bool, Vec<usize>)> = Vec::new();
    let (mut dead_count, mut ends) = (0u64, 0u64);
    let mut first_unsafe: Option<u32> = None;
    let mut errors: Vec<(u32, usize, String)> = Vec::new();
    let mut unbounded: Option<(u32, u32, Vec<usize>)> = None;
    let mut stop: Option<String> = None;
    let mut cut = 0u64;
    let mut edges = 0u64;
    let mut head = 0usize;
    if place_max.iter().any(|&n| n > 1) {
        first_unsafe = Some(0);
    }
    'outer: while head < states.len() {
        let s = head as u32;
        head += 1;
        let m = states[s as usize].clone();
        adj.push(Vec::new());
        if let Some(k) = opts.max_tokens
            && m.iter().any(|p| p.len() as u64 > k)
        {
            cut += 1;
            continue;
        }
        let (succs, maybe_dead) = match x.successors(&m)? {
            Outcome::Fired(v, maybe_dead) => (v, maybe_dead),
            Outcome::Error(t, msg) => {
                errors.push((s, t, msg));
                continue;
            }
        };
        if succs.is_empty() || maybe_dead {
            let stuck: Vec<usize> = (0..m.len())
                .filter(|&p| !m[p].is_empty() && consumed[p])
                .collect();
            if stuck.is_empty() {
                ends += 1;
            } else {
                dead_count += 1;
                if dead.len() < opts.traces {
                    dead.push((s, succs.is_empty(), stuck));
                }
            }
        }
        for sc in succs {
            edges += 1;
            fired[sc.t] = true;
            let id = match index.get(&sc.marking) {
                Some(&id) => id,
                None => {
                    let id = states.len() as u32;
                    let exact_path = parents[s as usize].3 && sc.exact;
                    parents.push((s, sc.t as u32, sc.exact, exact_path));
                    let sum: u64 = sc.marking.iter().map(|p| p.len() as u64).sum();
                    marking_max = marking_max.max(sum);
                    for (p, toks) in sc.marking.iter().enumerate() {
                        place_max[p] = place_max[p].max(toks.len() as u64);
                    }
                    if first_unsafe.is_none() && sc.marking.iter().any(|p| p.len() > 1) {
                        first_unsafe = Some(id);
                    }
                    if monotone {
                        // Strict multiset cover of an ancestor: unbounded.
                        let mut a = s;
                        loop {
                            let am = &states[a as usize];
                            if covers(&sc.marking, am)
                                && sum > am.iter().map(|p| p.len() as u64).sum()
                            {
                                let grow = (0..am.len())
                                    .filter(|&p| sc.marking[p].len() > am[p].len())
                                    .collect();
                                unbounded = Some((a, id, grow));
                                break;
                            }
                            if parents[a as usize].0 == u32::MAX {
                                break;
                            }
                            a = parents[a as usize].0;
                        }
                    }
                    index.insert(sc.marking.clone(), id);
                    states.push(sc.marking);
                    if unbounded.is_some() {
                        stop = Some("the net is unbounded (infinite state space)".into());
                        if let Some(v) = adj.last_mut() {
                            v.push((id, sc.t as u32));
                        }
                        break 'outer;
                    }
                    if states.len() as u64 >= opts.max_states {
                        stop = Some(format!("stopped at --max-states {}", opts.max_states));
                        if let Some(v) = adj.last_mut() {
                            v.push((id, sc.t as u32));
                        }
                        break 'outer;
                    }
                    id
                }
            };
            if let Some(v) = adj.last_mut() {
                v.push((id, sc.t as u32));
            }
        }
    }
    adj.resize(states.len(), Vec::new());
    let complete = stop.is_none() && cut == 0;

    r.states = states.len() as u64;
    r.edges = edges;
    r.complete = complete;
    r.incomplete_reason = stop.clone().or_else(|| {
        (cut > 0).then(|| format!("{cut} marking(s) above --max-tokens were not expanded"))
    });
    r.place_bounds = place_max.clone();
    r.max_tokens_in_place = place_max.iter().copied().max().unwrap_or(0);
    r.max_tokens_per_marking = marking_max;
    r.exact_state_space = !x.produced_unknown;
    let incomplete = || Verdict::Unknown(r.incomplete_reason.clone().unwrap_or_default());
    r.bounded = if let Some((_, _, g)) = &unbounded {
        r.unbounded_places = g.clone();
        Verdict::No
    } else if complete {
        Verdict::Yes
    } else {
        incomplete()
    };
    r.one_safe = if first_unsafe.is_some() {
        Verdict::No
    } else if complete {
        Verdict::Yes
    } else {
        incomplete()
    };
    r.dead_markings = dead_count + ends;
    r.proper_ends = ends;
    r.deadlock = if dead_count > 0 {
        Verdict::Yes
    } else if complete {
        Verdict::No
    } else {
        incomplete()
    };
    if complete {
        r.dead_transitions = Some((0..fired.len()).filter(|&t| !fired[t]).collect());
        let facts = crate::graph::analyse(states.len(), fired.len(), &mut |v, out| {
            out.extend_from_slice(&adj[v as usize])
        });
        r.terminates = Verdict::from_bool(facts.cycle_state.is_none());
        if let Some(c) = facts.cycle_state {
            let cycle = crate::graph::path_between(c, c, &mut |v, out| {
                out.extend_from_slice(&adj[v as usize])
            })
            .unwrap_or_default();
            r.traces.push(Trace {
                kind: "nontermination",
                path: path_to(&parents, c),
                cycle: cycle.into_iter().map(|t| t as usize).collect(),
                marking: render(net, &states[c as usize]),
                exact: parents[c as usize].3,
                note: "a reachable cycle".into(),
            });
        }
    } else if unbounded.is_some() {
        r.terminates = Verdict::No;
    } else {
        r.terminates = incomplete();
    }
    for (s, surely, stuck) in &dead {
        let names: Vec<&str> = stuck.iter().map(|&p| net.places[p].name.as_str()).collect();
        r.traces.push(Trace {
            kind: "deadlock",
            path: path_to(&parents, *s),
            cycle: Vec::new(),
            marking: render(net, &states[*s as usize]),
            exact: parents[*s as usize].3 && *surely,
            note: format!("tokens stuck on {}", names.join(", ")),
        });
    }
    if let Some(s) = first_unsafe {
        r.traces.push(Trace {
            kind: "unsafe",
            path: path_to(&parents, s),
            cycle: Vec::new(),
            marking: render(net, &states[s as usize]),
            exact: parents[s as usize].3,
            note: String::new(),
        });
    }
    if let Some((a, c, g)) = &unbounded {
        let prefix = path_to(&parents, *a);
        let full = path_to(&parents, *c);
        let names: Vec<&str> = g.iter().map(|&p| net.places[p].name.as_str()).collect();
        r.traces.push(Trace {
            kind: "unbounded",
            cycle: full[prefix.len()..].to_vec(),
            path: prefix,
            marking: render(net, &states[*c as usize]),
            exact: parents[*c as usize].3,
            note: format!(
                "each repetition of the loop adds tokens to {}",
                names.join(", ")
            ),
        });
    }
    for (s, t, msg) in errors.iter().take(opts.traces.max(1)) {
        r.traces.push(Trace {
            kind: "error",
            path: path_to(&parents, *s),
            cycle: Vec::new(),
            marking: render(net, &states[*s as usize]),
            exact: parents[*s as usize].3,
            note: format!("firing `{}` fails: {msg}", net.transitions[*t].name),
        });
    }
    if !errors.is_empty() {
        r.notes.push(format!(
            "{} marking(s) where a firing fails (the job would fail there)",
            errors.len()
        ));
    }
    if x.produced_unknown {
        r.notes.push(
            "module outputs without --assume are unknown tokens: \"none\"/\"yes\" verdicts (no deadlock, bounded, 1-safe, dead transitions, terminates) hold for every real run; violations whose trace is marked possibly spurious may not happen"
                .into(),
        );
    }
    if x.unknown_many {
        r.notes.push("an unknown list went to a connect-out-many place as one unknown token: token counts on those places are not exact".into());
    }
    if !monotone {
        r.notes.push("priorities or number-of-tokens connections: no coverability check, an unbounded net runs into --max-states".into());
    }
    Ok(r)
}

fn covers(big: &Marking, small: &Marking) -> bool {
    big.iter().zip(small).all(|(b, s)| {
        // Multiset inclusion of sorted vectors.
        let mut i = 0;
        for x in s {
            while i < b.len() && b[i] < *x {
                i += 1;
            }
            if i == b.len() || b[i] != *x {
                return false;
            }
            i += 1;
        }
        true
    })
}

fn path_to(parents: &[(u32, u32, bool, bool)], mut s: u32) -> Vec<usize> {
    let mut p = Vec::new();
    while parents[s as usize].0 != u32::MAX {
        p.push(parents[s as usize].1 as usize);
        s = parents[s as usize].0;
    }
    p.reverse();
    p
}

fn render(net: &Net, m: &Marking) -> String {
    let parts: Vec<String> = m
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.is_empty())
        .map(|(p, toks)| {
            let ts: Vec<String> = toks
                .iter()
                .map(|t| match t {
                    Tok::Val(v) => v.to_string(),
                    Tok::Unknown => "?".into(),
                })
                .collect();
            format!("{} = [{}]", net.places[p].name, ts.join(", "))
        })
        .collect();
    if parts.is_empty() {
        "(empty)".into()
    } else {
        parts.join("; ")
    }
}

fn is_unbound(e: &RunError) -> bool {
    matches!(e.0.kind, RunErrorKind::Unbound(_))
}

impl Explorer<'_> {
    /// All successors of a marking; `maybe_dead` when every enabled binding was a maybe.
    fn successors(&mut self, m: &Marking) -> Result<Outcome, String> {
        let mut out = Vec::new();
        for g in 0..self.groups.len() {
            let mut definite = false;
            for k in 0..self.groups[g].len() {
                let t = self.groups[g][k];
                match self.bindings(m, t, &mut out)? {
                    Ok(d) => definite |= d,
                    Err(msg) => return Ok(Outcome::Error(t, msg)),
                }
            }
            if definite {
                return Ok(Outcome::Fired(out, false));
            }
        }
        let maybe_dead = !out.is_empty();
        Ok(Outcome::Fired(out, maybe_dead))
    }

    /// Appends the successors by every binding of `t`; `Ok(true)` if some binding is surely
    /// enabled; `Err(message)` if an evaluation fails.
    fn bindings(
        &mut self,
        m: &Marking,
        t: usize,
        out: &mut Vec<Succ>,
    ) -> Result<Result<bool, String>, String> {
        let info = &self.info[t];
        let takes = info.takes.clone();
        if takes.iter().any(|&(_, p, _)| m[p].is_empty()) {
            return Ok(Ok(false));
        }
        let mut idx = vec![0usize; takes.len()];
        let mut seen: BTreeSet<Vec<Tok>> = BTreeSet::new();
        let mut definite = false;
        loop {
            let distinct = (0..takes.len())
                .all(|a| (0..a).all(|b| takes[a].1 != takes[b].1 || idx[a] != idx[b]));
            if distinct {
                let vals: Vec<Tok> = takes
                    .iter()
                    .zip(&idx)
                    .map(|(&(_, p, _), &i)| m[p][i].clone())
                    .collect();
                if seen.insert(vals.clone()) {
                    match self.fire_binding(m, t, &takes, &idx, &vals, out) {
                        Ok(Some(d)) => definite |= d,
                        Ok(None) => {}
                        Err(msg) => return Ok(Err(msg)),
                    }
                }
            }
            // Next combination.
            let mut k = takes.len();
            loop {
                if k == 0 {
                    return Ok(Ok(definite));
                }
                k -= 1;
                idx[k] += 1;
                if idx[k] < m[takes[k].1].len() {
                    break;
                }
                idx[k] = 0;
            }
        }
    }

    /// Fires one binding if the condition allows: `Some(true)` fired surely, `Some(false)`
    /// fired as a maybe, `None` not enabled.
    fn fire_binding(
        &mut self,
        m: &Marking,
        t: usize,
        takes: &[(PortId, usize, bool)],
        idx: &[usize],
        vals: &[Tok],
        out: &mut Vec<Succ>,
    ) -> Result<Option<bool>, String> {
        let info = &self.info[t];
        let f = self.bundle.function(info.function);
        let nslots = f.ports.len();
        let has_unknown = vals.iter().any(|v| matches!(v, Tok::Unknown));
        let mut exact = true;
        if let Some(c) = info.condition {
            let code = &self.bundle.codes[c];
            fill_frame(
                &mut self.frame,
                code.slots.len().max(nslots),
                m,
                &info.counts,
                takes,
                vals,
            );
            match self.interp.run_bool(code, &mut self.frame) {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(e) if has_unknown && is_unbound(&e) => exact = false,
                Err(e) => return Err(format!("condition: {e}")),
            }
        }
        // Consume.
        let mut base = m.clone();
        let mut rm: Vec<(usize, usize)> = takes
            .iter()
            .zip(idx)
            .filter(|(tk, _)| tk.2)
            .map(|(tk, &i)| (tk.1, i))
            .collect();
        rm.sort_by(|a, b| b.cmp(a));
        for (p, i) in rm {
            base[p].remove(i);
        }
        // Outputs: one list of (port, value) alternatives.
        let mut alternatives: Vec<Vec<(PortId, Tok)>> = Vec::new();
        match info.kind {
            Kind::Expr(c) => {
                let code = &self.bundle.codes[c];
                fill_frame(
                    &mut self.frame,
                    code.slots.len().max(nslots),
                    m,
                    &info.counts,
                    takes,
                    vals,
                );
                let mut outs = Vec::new();
                match self.interp.run(code, &mut self.frame) {
                    Ok(_) => {
                        for &(port, _, _) in &info.outs {
                            match self.frame.get(port.index()).cloned().flatten() {
                                Some(v) => outs.push((port, Tok::Val(v))),
                                None => {
                                    return Err(format!(
                                        "missing_binding: output port `{}` has no value",
                                        f.port(port).name
                                    ));
                                }
                            }
                        }
                    }
                    Err(e) if has_unknown && is_unbound(&e) => {
                        self.produced_unknown = true;
                        outs.extend(info.outs.iter().map(|o| (o.0, Tok::Unknown)));
                    }
                    Err(e) => return Err(e.to_string()),
                }
                alternatives.push(outs);
            }
            Kind::Module => {
                let mut combos: Vec<Vec<(PortId, Tok)>> = vec![Vec::new()];
                for (port, vals) in &info.assumed {
                    let choices: Vec<Tok> = match vals {
                        Some(vs) => vs.iter().cloned().map(Tok::Val).collect(),
                        None => {
                            self.produced_unknown = true;
                            vec![Tok::Unknown]
                        }
                    };
                    let mut next = Vec::new();
                    for c in &combos {
                        for ch in &choices {
                            let mut c2 = c.clone();
                            c2.push((*port, ch.clone()));
                            next.push(c2);
                        }
                    }
                    combos = next;
                }
                alternatives = combos;
            }
        }
        for alt in alternatives {
            let mut next = base.clone();
            for &(port, place, many) in &info.outs {
                let Some((_, tok)) = alt.iter().find(|(p, _)| *p == port) else {
                    continue;
                };
                let pty = &f.port(port).ty;
                match (tok, many) {
                    (Tok::Val(Value::List(xs)), true) => {
                        for x in xs {
                            next[place].push(Tok::Val(x.clone()));
                        }
                    }
                    (Tok::Val(v), true) => {
                        return Err(format!(
                            "connect-out-many: port `{}` holds {v}, not a list",
                            f.port(port).name
                        ));
                    }
                    (Tok::Unknown, true) => {
                        self.unknown_many = true;
                        next[place].push(Tok::Unknown);
                    }
                    (Tok::Val(v), false) => {
                        if !v.fits(pty) {
                            return Err(format!(
                                "value {v} of port `{}` is not of type {pty}",
                                f.port(port).name
                            ));
                        }
                        next[place].push(tok.clone());
                    }
                    (Tok::Unknown, false) => next[place].push(Tok::Unknown),
                }
            }
            for p in &mut next {
                p.sort();
            }
            out.push(Succ {
                t,
                marking: next,
                exact,
            });
        }
        Ok(Some(exact))
    }
}

fn fill_frame(
    frame: &mut Vec<Option<Value>>,
    n: usize,
    m: &Marking,
    counts: &[(PortId, usize)],
    takes: &[(PortId, usize, bool)],
    vals: &[Tok],
) {
    frame.clear();
    frame.resize(n, None);
    for (&(port, _, _), v) in takes.iter().zip(vals) {
        if let (Some(slot), Tok::Val(v)) = (frame.get_mut(port.index()), v) {
            *slot = Some(v.clone());
        }
    }
    for &(port, p) in counts {
        if let Some(slot) = frame.get_mut(port.index()) {
            *slot = Some(Value::ULong(m[p].len() as u64));
        }
    }
}
