//! Semantic checks, and the resolved view of the relations that the lowering uses.

use std::collections::HashMap;

use crate::ast::*;
use crate::diag::{self, Build, Diagnostic};

/// What a relation means once its names are resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Index of the relation in [`Workload::relations`].
    pub relation: usize,
    pub tail: usize,
    pub head: usize,
    /// INPUT-OUTPUT: (output index of the tail, input index of the head).
    pub data: Option<(usize, usize)>,
    /// SEQUENTIAL_END / SEQUENTIAL_START without data (data already orders the tasks).
    pub order: Option<Event>,
    /// CONCURRENT or COMMUNICATION: start together.
    pub concurrent: bool,
}

/// An event of a task that others can wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Every instance has passed its start step.
    Started,
    /// Every instance has ended.
    Ended,
}

/// Runs every check; returns the relations that resolved (in source order) with the
/// diagnostics.
pub fn check(w: &Workload) -> (Vec<Resolved>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for (i, t) in w.tasks.iter().enumerate() {
        let key = t.name.mangled();
        match by_name.get(&key) {
            Some(&j) => diags.push(duplicate(
                "workload-duplicate-task",
                "task",
                &t.name,
                &w.tasks[j].name,
            )),
            None => {
                by_name.insert(key, i);
            }
        }
        check_task(t, &mut diags);
    }
    let mut resolved = Vec::new();
    // (head task, head input) -> relation index feeding it
    let mut fed: HashMap<(usize, usize), usize> = HashMap::new();
    for (k, r) in w.relations.iter().enumerate() {
        if let Some(res) = check_relation(w, k, r, &by_name, &mut fed, &mut diags) {
            resolved.push(res);
        }
    }
    check_cycles(w, &resolved, &mut diags);
    check_net_ports(w, &by_name, &resolved, &mut diags);
    (resolved, diags)
}

fn duplicate(code: &'static str, what: &str, again: &Name, first: &Name) -> Diagnostic {
    let message = if again.text == first.text {
        format!("{what} `{}` is defined twice", again.text)
    } else {
        format!(
            "{what} `{}` has the same name in the net as `{}`",
            again.text, first.text
        )
    };
    let d = diag::error(code, again.span.clone(), message)
        .label(first.span.clone(), "first defined here");
    if again.text == first.text {
        d
    } else {
        d.note("`-` becomes `_` in the net")
    }
}

fn check_task(t: &Task, diags: &mut Vec<Diagnostic>) {
    for ports in [&t.inputs, &t.outputs] {
        let mut seen: HashMap<String, &Name> = HashMap::new();
        for p in ports.iter() {
            if let Some(first) = seen.get(&p.name.mangled()) {
                diags.push(duplicate("workload-duplicate-port", "port", &p.name, first));
            } else {
                seen.insert(p.name.mangled(), &p.name);
            }
        }
    }
    for p in &t.inputs {
        if let (Some(PortType::Integer), Some(v)) = (p.ty, &p.value)
            && v.value.trim().parse::<i64>().is_err()
        {
            diags.push(diag::error(
                "workload-invalid-value",
                v.span.clone(),
                format!("`{}` is not an INTEGER (a 64-bit signed number)", v.value),
            ));
        }
    }
    let mut keys: HashMap<&str, &Name> = HashMap::new();
    for p in &t.properties {
        if let Some(first) = keys.get(p.key.text.as_str()) {
            diags.push(duplicate(
                "workload-duplicate-property",
                "property",
                &p.key,
                first,
            ));
        } else {
            keys.insert(&p.key.text, &p.key);
        }
    }
    match t.property("EXECUTABLE") {
        None => diags.push(
            diag::error(
                "workload-missing-executable",
                t.name.span.clone(),
                format!("task `{}` has no EXECUTABLE", t.name.text),
            )
            .note("add `EXECUTABLE = '/path/to/program';` (ARGUMENTS is optional)"),
        ),
        Some(p) if p.value.value.trim().is_empty() => diags.push(diag::error(
            "workload-missing-executable",
            p.value.span.clone(),
            "EXECUTABLE is empty",
        )),
        Some(_) => {}
    }
    if let (SpaceKind::InputOutput, Some(s)) = (t.kinds.space, &t.kinds.space_span) {
        diags.push(
            diag::warning(
                "workload-unsupported-kind",
                s.clone(),
                "INPUT-OUTPUT between the instances of one task has no effect",
            )
            .note("connect ports with relations instead"),
        );
    }
}

fn find_port(ports: &[Port], name: &Name) -> Option<usize> {
    ports
        .iter()
        .position(|p| p.name.mangled() == name.mangled())
}

fn port_list(ports: &[Port]) -> String {
    if ports.is_empty() {
        return "it has none".to_string();
    }
    let names: Vec<&str> = ports.iter().map(|p| p.name.text.as_str()).collect();
    format!("it has {}", names.join(", "))
}

fn check_relation(
    w: &Workload,
    k: usize,
    r: &Relation,
    by_name: &HashMap<String, usize>,
    fed: &mut HashMap<(usize, usize), usize>,
    diags: &mut Vec<Diagnostic>,
) -> Option<Resolved> {
    let mut keys: HashMap<&str, &Name> = HashMap::new();
    for p in &r.properties {
        if let Some(first) = keys.get(p.key.text.as_str()) {
            diags.push(duplicate(
                "workload-duplicate-property",
                "property",
                &p.key,
                first,
            ));
        } else {
            keys.insert(&p.key.text, &p.key);
        }
    }
    let lookup = |n: &Name, diags: &mut Vec<Diagnostic>| {
        let found = by_name.get(&n.mangled()).copied();
        if found.is_none() {
            diags.push(diag::error(
                "workload-unknown-task",
                n.span.clone(),
                format!("there is no task `{}`", n.text),
            ));
        }
        found
    };
    let tail = lookup(&r.tail.task, diags);
    let head = lookup(&r.head.task, diags);
    let (tail, head) = (tail?, head?);
    let (tt, ht) = (&w.tasks[tail], &w.tasks[head]);
    let data_kind = r.kinds.space == SpaceKind::InputOutput;
    if r.kinds.time == TimeKind::None && r.kinds.space == SpaceKind::None {
        diags.push(
            diag::warning(
                "workload-no-effect",
                r.span.clone(),
                "this relation has neither a time nor a space kind: it has no effect",
            )
            .note("add e.g. `(INPUT-OUTPUT)` or `(SEQUENTIAL_END)`"),
        );
    }
    let mut ports_ok = true;
    let mut tail_port = None;
    let mut head_port = None;
    if let Some(p) = &r.tail.port {
        tail_port = find_port(&tt.outputs, p);
        if tail_port.is_none() {
            ports_ok = false;
            diags.push(
                diag::error(
                    "workload-unknown-port",
                    p.span.clone(),
                    format!("task `{}` has no output port `{}`", tt.name.text, p.text),
                )
                .note(format!(
                    "a tail names an output port; {}",
                    port_list(&tt.outputs)
                )),
            );
        }
    }
    if let Some(p) = &r.head.port {
        head_port = find_port(&ht.inputs, p);
        if head_port.is_none() {
            ports_ok = false;
            diags.push(
                diag::error(
                    "workload-unknown-port",
                    p.span.clone(),
                    format!("task `{}` has no input port `{}`", ht.name.text, p.text),
                )
                .note(format!(
                    "a head names an input port; {}",
                    port_list(&ht.inputs)
                )),
            );
        }
    }
    if !data_kind && (r.tail.port.is_some() || r.head.port.is_some()) {
        let span = match (&r.tail.port, &r.head.port) {
            (Some(p), _) | (None, Some(p)) => p.span.clone(),
            (None, None) => r.span.clone(),
        };
        diags.push(
            diag::warning(
                "workload-port-ignored",
                span,
                "ports only matter for INPUT-OUTPUT relations",
            )
            .note("without INPUT-OUTPUT no value goes from the tail to the head"),
        );
    }
    let mut data = None;
    if data_kind && ports_ok {
        let infer = |ports: &[Port], given: Option<usize>, named: bool| match given {
            Some(i) => Some(i),
            None if !named && ports.len() == 1 => Some(0),
            None => None,
        };
        let tp = infer(&tt.outputs, tail_port, r.tail.port.is_some());
        let hp = infer(&ht.inputs, head_port, r.head.port.is_some());
        for (found, ep, task, dir, ports) in [
            (tp, &r.tail, tt, "output", &tt.outputs),
            (hp, &r.head, ht, "input", &ht.inputs),
        ] {
            if found.is_none() {
                diags.push(
                    diag::error(
                        "workload-missing-port",
                        ep.task.span.clone(),
                        format!(
                            "which {dir} port of `{}` does this INPUT-OUTPUT relation use?",
                            task.name.text
                        ),
                    )
                    .note(format!(
                        "write `{}.PORT` (a port can be left out only when the task has exactly one {dir} port; {})",
                        task.name.text,
                        port_list(ports)
                    )),
                );
            }
        }
        if let (Some(tp), Some(hp)) = (tp, hp) {
            let (o, i) = (&tt.outputs[tp], &ht.inputs[hp]);
            let mut ok = true;
            if let (Some(a), Some(b)) = (o.ty, i.ty)
                && a != b
            {
                ok = false;
                diags.push(
                    diag::error(
                        "workload-type-mismatch",
                        r.tail.span().start..r.head.span().end,
                        format!(
                            "`{}.{}` is {a} but `{}.{}` is {b}",
                            tt.name.text, o.name.text, ht.name.text, i.name.text
                        ),
                    )
                    .label(o.span.clone(), format!("{a} here"))
                    .label(i.span.clone(), format!("{b} here")),
                );
            }
            let (n, m) = (tt.instances(), ht.instances());
            if n > 1 && m > 1 && n != m {
                ok = false;
                diags.push(
                    diag::error(
                        "workload-cardinality-mismatch",
                        r.span.clone(),
                        format!(
                            "{n} instances of `{}` cannot feed {m} instances of `{}`",
                            tt.name.text, ht.name.text
                        ),
                    )
                    .note("a value goes 1 -> N (every instance gets it), N -> 1 (the head gets the list of the N values) or N -> N (one value per instance)"),
                );
            }
            let already = fed.get(&(head, hp)).copied();
            if let Some(first) = already {
                ok = false;
                diags.push(
                    diag::error(
                        "workload-port-fed-twice",
                        r.head.span(),
                        format!(
                            "input port `{}.{}` is already fed by another relation",
                            ht.name.text, i.name.text
                        ),
                    )
                    .label(w.relations[first].span.clone(), "the first relation")
                    .note("which value would the task get? use a separate port for each relation"),
                );
            } else {
                fed.insert((head, hp), k);
            }
            if let (None, Some(v)) = (already, &i.value) {
                diags.push(
                    diag::warning(
                        "workload-value-ignored",
                        v.span.clone(),
                        format!(
                            "the value of `{}.{}` is not used: a relation feeds the port",
                            ht.name.text, i.name.text
                        ),
                    )
                    .label(r.span.clone(), "the relation"),
                );
            }
            if ok {
                data = Some((tp, hp));
            }
        }
    }
    let concurrent =
        r.kinds.time == TimeKind::Concurrent || r.kinds.space == SpaceKind::Communication;
    let order = match r.kinds.time {
        _ if data_kind => None,
        TimeKind::SequentialEnd => Some(Event::Ended),
        TimeKind::SequentialStart => Some(Event::Started),
        _ => None,
    };
    if data_kind && data.is_none() {
        return None;
    }
    Some(Resolved {
        relation: k,
        tail,
        head,
        data,
        order,
        concurrent,
    })
}

/// Each task is three steps (start, dispatch, end); a relation adds the edges it waits for.
/// A cycle means the net can never finish.
fn check_cycles(w: &Workload, resolved: &[Resolved], diags: &mut Vec<Diagnostic>) {
    let (s, d, e) = (|t: usize| 3 * t, |t: usize| 3 * t + 1, |t: usize| 3 * t + 2);
    let n = 3 * w.tasks.len();
    // edges: (to, relation index or usize::MAX for the task's own steps)
    let mut adj: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    for t in 0..w.tasks.len() {
        adj[s(t)].push((d(t), usize::MAX));
        adj[d(t)].push((e(t), usize::MAX));
    }
    for r in resolved {
        if r.data.is_some() || r.order == Some(Event::Ended) {
            adj[e(r.tail)].push((s(r.head), r.relation));
        }
        if r.order == Some(Event::Started) {
            adj[s(r.tail)].push((s(r.head), r.relation));
        }
        if r.concurrent {
            adj[s(r.tail)].push((d(r.head), r.relation));
            adj[s(r.head)].push((d(r.tail), r.relation));
        }
    }
    // Iterative DFS with colours; report the first cycle found through each back edge.
    let mut colour = vec![0u8; n];
    let mut parent: Vec<Option<(usize, usize)>> = vec![None; n];
    let mut reported = false;
    for root in 0..n {
        if colour[root] != 0 || reported {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        colour[root] = 1;
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if let Some(&(to, rel)) = adj[v].get(*next) {
                *next += 1;
                match colour[to] {
                    0 => {
                        colour[to] = 1;
                        parent[to] = Some((v, rel));
                        stack.push((to, 0));
                    }
                    1 if !reported => {
                        // Walk back from v to `to` collecting the relations on the cycle.
                        let mut rels = vec![rel];
                        let mut x = v;
                        while x != to {
                            match parent[x] {
                                Some((p, r)) => {
                                    rels.push(r);
                                    x = p;
                                }
                                None => break,
                            }
                        }
                        rels.retain(|&r| r != usize::MAX);
                        rels.sort_unstable();
                        rels.dedup();
                        if let Some(&first) = rels.first() {
                            let mut tasks: Vec<&str> = Vec::new();
                            let mut x = v;
                            tasks.push(&w.tasks[x / 3].name.text);
                            while x != to {
                                match parent[x] {
                                    Some((p, _)) => {
                                        x = p;
                                        let name = w.tasks[x / 3].name.text.as_str();
                                        if tasks.last() != Some(&name) {
                                            tasks.push(name);
                                        }
                                    }
                                    None => break,
                                }
                            }
                            tasks.reverse();
                            if let Some(&first) = tasks.first() {
                                tasks.push(first);
                            }
                            let mut dgn = diag::error(
                                "workload-cycle",
                                w.relations[first].span.clone(),
                                format!(
                                    "these relations make tasks wait for each other forever ({})",
                                    tasks.join(" -> ")
                                ),
                            );
                            for &r in &rels[1..] {
                                dgn = dgn.label(w.relations[r].span.clone(), "also on the cycle");
                            }
                            diags.push(dgn.note(
                                "INPUT-OUTPUT and SEQUENTIAL_END wait for the tail's end, SEQUENTIAL_START for its start, CONCURRENT and COMMUNICATION for both tasks to start",
                            ));
                            reported = true;
                        }
                    }
                    _ => {}
                }
            } else {
                colour[v] = 2;
                stack.pop();
            }
        }
    }
}

/// The net's ports are `TASK_PORT`: inputs nothing feeds and that have no value, outputs no
/// relation takes. Two of them must not get one name.
fn check_net_ports(
    w: &Workload,
    by_name: &HashMap<String, usize>,
    resolved: &[Resolved],
    diags: &mut Vec<Diagnostic>,
) {
    let mut seen: HashMap<String, &Name> = HashMap::new();
    for (i, t) in w.tasks.iter().enumerate() {
        if by_name.get(&t.name.mangled()) != Some(&i) {
            continue;
        }
        let fed = |p: usize| {
            resolved
                .iter()
                .any(|r| r.head == i && r.data.is_some_and(|(_, h)| h == p))
        };
        let taken = |p: usize| {
            resolved
                .iter()
                .any(|r| r.tail == i && r.data.is_some_and(|(o, _)| o == p))
        };
        // the first of duplicate ports only (duplicates are reported already)
        let first = |ports: &[Port], j: usize| find_port(ports, &ports[j].name) == Some(j);
        let ins = t
            .inputs
            .iter()
            .enumerate()
            .filter(|(j, p)| p.value.is_none() && !fed(*j) && first(&t.inputs, *j));
        let outs = t
            .outputs
            .iter()
            .enumerate()
            .filter(|(j, _)| !taken(*j) && first(&t.outputs, *j));
        for (_, p) in ins.chain(outs) {
            let name = net_port_name(t, p);
            if let Some(first) = seen.get(&name) {
                diags.push(
                    diag::error(
                        "workload-name-clash",
                        p.name.span.clone(),
                        format!("two ports of the net would be named `{name}`"),
                    )
                    .label(first.span.clone(), "this port has the same name in the net")
                    .note(
                        "the net's ports are named TASK_PORT (`-` becomes `_`); rename one of them",
                    ),
                );
            } else {
                seen.insert(name, &p.name);
            }
        }
    }
}

/// The name of the net port of a task's port: `TASK_PORT`.
pub fn net_port_name(t: &Task, p: &Port) -> String {
    format!("{}_{}", t.name.mangled(), p.name.mangled())
}
