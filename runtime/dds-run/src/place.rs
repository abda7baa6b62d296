//! Slots and placement: which worker of the runtime's plan runs which DDS task.
//!
//! The runtime's workers (a [`pnet_topology::Plan`]; by default one worker per core on this
//! host) are DDS's slots. [`place`] gives every task instance a slot of its own:
//!
//! * the tasks of a collection instance all go to one host;
//! * collections and tasks with the most requirements are placed first (a collection counts
//!   its own requirements plus the most any of its tasks has), then the larger units, then
//!   in the order of the expansion;
//! * among the hosts where a unit fits, the one with the most free slots wins (ties: the host
//!   listed first), which spreads the tasks over the hosts; on a host, a task takes the free
//!   slot with the fewest capabilities that meets its requirements (so plain tasks leave the
//!   `GPU` and other special workers to the tasks that need them).
//!
//! Every requirement must hold (DDS's rule). A requirement of a collection applies to each
//! of its tasks as if the task declared it, except `maxinstances`, which then counts
//! collection instances. The kinds:
//!
//! | kind | holds when |
//! | --- | --- |
//! | `hostname` | the slot's host matches the value, a regular expression matched against the whole name (an empty value matches every host) |
//! | `wnname` | the slot's worker name (e.g. `worker-node1-3`) matches likewise; an empty worker name satisfies it (DDS's rule) |
//! | `groupname` | the slot's worker class (the first capability of its description) matches likewise |
//! | `custom` | the slot's worker has the capability named by the value (`--topology "worker+infiniband:4"` offers `infiniband`); DDS ignores `custom`, this is our meaningful reading; an empty value holds everywhere |
//! | `gpu` | value `N` ≥ 1: the task runs on a worker with the capability `GPU`, and `N - 1` further `GPU` workers on that host are reserved for it (no other task gets them), so `N` is the number of GPUs the task owns; `N` = 0 asks for nothing (several `gpu` requirements: the largest counts) |
//! | `maxinstances` | at most `N` instances of the declaring task (in or outside collections), or of the declaring collection, run on one host |
//!
//! Placement is greedy (like DDS's): it may fail where a cleverer search would succeed.
//! Errors say which task or collection could not be placed, which requirement failed and
//! what the workers offer.

use std::collections::HashMap;
use std::ops::Range;

use pnet_dds::{Expanded, RequirementKind, Topology};
use pnet_topology::{Diagnostic, Plan};
use regex::Regex;

/// The capability a worker needs for a `gpu` requirement.
pub const GPU_CAPABILITY: &str = "GPU";

/// One slot: a worker of the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Its index in the plan (`DDS_SLOT_ID`).
    pub id: usize,
    /// The worker's name (DDS's worker-node name).
    pub name: String,
    /// The worker class (DDS's group name).
    pub class: String,
    pub host: String,
    pub capabilities: Vec<String>,
}

/// The slots of a plan, one per worker, in plan order.
pub fn slots_from_plan(plan: &Plan) -> Vec<Slot> {
    plan.workers
        .iter()
        .enumerate()
        .map(|(id, w)| Slot {
            id,
            name: w.name.clone(),
            class: w.class.clone(),
            host: w.host.clone(),
            capabilities: w.capabilities.clone(),
        })
        .collect()
}

/// Where one task instance runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// Index into [`Expanded::tasks`].
    pub task: usize,
    /// Index into the slots.
    pub slot: usize,
    /// Further slots reserved for the task (its extra GPUs), not given to other tasks.
    pub reserved: Vec<usize>,
}

/// Why a task or collection could not be placed: a diagnostic (stable code, message, span
/// into the topology text, notes) and the path of the task or collection instance.
///
/// Codes: `dds-place-bad-requirement` (a value that is not a regular expression or not a
/// number), `dds-place-too-few-slots` (more tasks than slots), `dds-place-unsatisfiable`
/// (no worker at all meets a requirement), `dds-place-maxinstances` (the limit is reached on
/// every host with room), `dds-place-full` (the workers that meet the requirements are taken).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaceError {
    /// The task or collection instance (empty for errors about the whole topology).
    pub path: String,
    pub diagnostic: Diagnostic,
}

impl std::fmt::Display for PlaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.diagnostic.message)
    }
}

/// A requirement ready to check.
#[derive(Debug)]
enum Check {
    /// A regular expression on the host, worker name or class; `None` matches everything.
    HostName(Option<Regex>),
    WnName(Option<Regex>),
    GroupName(Option<Regex>),
    Custom(String),
    Gpu(u32),
    MaxInstances(u32),
}

fn full_regex(value: &str) -> Result<Option<Regex>, String> {
    if value.is_empty() {
        return Ok(None);
    }
    Regex::new(&format!("^(?:{value})$"))
        .map(Some)
        .map_err(|e| e.to_string())
}

fn compile(kind: RequirementKind, value: &str) -> Result<Check, String> {
    let number = |what: &str| {
        value.trim().parse::<u32>().map_err(|_| {
            format!(
                "the value `{value}` of a `{what}` requirement is not a number (0 to 4294967295)"
            )
        })
    };
    Ok(match kind {
        RequirementKind::HostName => Check::HostName(
            full_regex(value).map_err(|e| format!("`{value}` is not a regular expression: {e}"))?,
        ),
        RequirementKind::WnName => Check::WnName(
            full_regex(value).map_err(|e| format!("`{value}` is not a regular expression: {e}"))?,
        ),
        RequirementKind::GroupName => Check::GroupName(
            full_regex(value).map_err(|e| format!("`{value}` is not a regular expression: {e}"))?,
        ),
        RequirementKind::Custom => Check::Custom(value.trim().to_string()),
        RequirementKind::Gpu => Check::Gpu(number("gpu")?),
        RequirementKind::MaxInstances => Check::MaxInstances(number("maxinstances")?),
    })
}

fn kind_name(kind: RequirementKind) -> &'static str {
    match kind {
        RequirementKind::WnName => "wnname",
        RequirementKind::HostName => "hostname",
        RequirementKind::GroupName => "groupname",
        RequirementKind::Gpu => "gpu",
        RequirementKind::MaxInstances => "maxinstances",
        RequirementKind::Custom => "custom",
    }
}

impl Check {
    /// Whether the slot itself meets the requirement (`maxinstances` always does).
    fn slot_ok(&self, slot: &Slot) -> bool {
        let matches = |re: &Option<Regex>, s: &str| re.as_ref().is_none_or(|re| re.is_match(s));
        match self {
            Check::HostName(re) => matches(re, &slot.host),
            Check::WnName(re) => slot.name.is_empty() || matches(re, &slot.name),
            Check::GroupName(re) => matches(re, &slot.class),
            Check::Custom(cap) => cap.is_empty() || slot.capabilities.iter().any(|c| c == cap),
            Check::Gpu(n) => *n == 0 || has_gpu(slot),
            Check::MaxInstances(_) => true,
        }
    }
}

fn has_gpu(slot: &Slot) -> bool {
    slot.capabilities.iter().any(|c| c == GPU_CAPABILITY)
}

/// What to place as one: a collection instance or a task outside collections.
#[derive(Debug)]
struct Unit {
    /// Index into `Expanded::collections`, for a collection.
    collection: Option<usize>,
    /// Indices into `Expanded::tasks`.
    tasks: Vec<usize>,
    /// The number of requirements, for the order.
    weight: usize,
    path: String,
    span: Range<usize>,
}

/// Per task instance: the requirement indices that apply to its slot, and its GPU count.
struct TaskNeeds {
    reqs: Vec<usize>,
    gpus: u32,
}

/// The free slots and counters during placement.
struct State<'a> {
    slots: &'a [Slot],
    used: Vec<bool>,
    /// (host, task declaration) -> instances placed there.
    task_count: HashMap<(&'a str, usize), u32>,
    /// (host, collection declaration) -> instances placed there.
    collection_count: HashMap<(&'a str, usize), u32>,
}

/// Places every task instance on a slot of its own; see the module docs for the rules.
pub fn place(
    topology: &Topology,
    expanded: &Expanded,
    slots: &[Slot],
) -> Result<Vec<Assignment>, Vec<PlaceError>> {
    // Slot ids are indices into `slots` below; renumber a list that says otherwise.
    let renumbered: Vec<Slot>;
    let slots = if slots.iter().enumerate().all(|(i, s)| s.id == i) {
        slots
    } else {
        renumbered = slots
            .iter()
            .enumerate()
            .map(|(id, s)| Slot { id, ..s.clone() })
            .collect();
        &renumbered
    };
    // Compile the requirements that are used.
    let mut checks: Vec<Option<Check>> = Vec::with_capacity(topology.requirements.len());
    let mut errors = Vec::new();
    let used_reqs: Vec<bool> = {
        let mut used = vec![false; topology.requirements.len()];
        for t in &topology.tasks {
            for &r in &t.requirements {
                if let Some(u) = used.get_mut(r) {
                    *u = true;
                }
            }
        }
        for c in &topology.collections {
            for &r in &c.requirements {
                if let Some(u) = used.get_mut(r) {
                    *u = true;
                }
            }
        }
        used
    };
    for (i, r) in topology.requirements.iter().enumerate() {
        if !used_reqs[i] {
            checks.push(None);
            continue;
        }
        match compile(r.kind, &r.value) {
            Ok(c) => checks.push(Some(c)),
            Err(msg) => {
                checks.push(None);
                errors.push(PlaceError {
                    path: String::new(),
                    diagnostic: Diagnostic::error_at(
                        "dds-place-bad-requirement",
                        r.span.clone(),
                        format!("requirement `{}` ({}): {msg}", r.name, kind_name(r.kind)),
                    ),
                });
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if expanded.tasks.len() > slots.len() {
        let mut d = Diagnostic::error_at(
            "dds-place-too-few-slots",
            topology.main.span.clone(),
            format!(
                "the topology has {} tasks but the workers offer only {} slot{}",
                expanded.tasks.len(),
                slots.len(),
                if slots.len() == 1 { "" } else { "s" }
            ),
        )
        .with_note("every task needs a worker of its own");
        d = d.with_note(format!(
            "start more workers, e.g. with `--topology worker:{}` (workers per host) or more hosts in the nodefile",
            expanded.tasks.len()
        ));
        return Err(vec![PlaceError {
            path: String::new(),
            diagnostic: d,
        }]);
    }

    let req_of = |i: usize| checks.get(i).and_then(Option::as_ref);
    let is_max = |i: usize| matches!(req_of(i), Some(Check::MaxInstances(_)));

    // What applies to each task's slot.
    let needs: Vec<TaskNeeds> = expanded
        .tasks
        .iter()
        .map(|t| {
            let mut reqs: Vec<usize> = Vec::new();
            if let Some(decl) = topology.tasks.get(t.decl) {
                reqs.extend(decl.requirements.iter().copied());
            }
            if let Some(ci) = t.collection
                && let Some(c) = expanded.collections.get(ci)
                && let Some(cd) = topology.collections.get(c.decl)
            {
                reqs.extend(cd.requirements.iter().copied().filter(|&r| !is_max(r)));
            }
            reqs.sort_unstable();
            reqs.dedup();
            let gpus = reqs
                .iter()
                .filter_map(|&r| match req_of(r) {
                    Some(Check::Gpu(n)) => Some(*n),
                    _ => None,
                })
                .max()
                .unwrap_or(0);
            TaskNeeds { reqs, gpus }
        })
        .collect();

    // The units, heaviest first.
    let mut units: Vec<Unit> = Vec::new();
    for (ci, c) in expanded.collections.iter().enumerate() {
        let decl = topology.collections.get(c.decl);
        let own = decl.map_or(0, |d| d.requirements.len());
        let most = c
            .tasks
            .clone()
            .filter_map(|t| expanded.tasks.get(t))
            .filter_map(|t| topology.tasks.get(t.decl))
            .map(|d| d.requirements.len())
            .max()
            .unwrap_or(0);
        units.push(Unit {
            collection: Some(ci),
            tasks: c
                .tasks
                .clone()
                .filter(|&t| t < expanded.tasks.len())
                .collect(),
            weight: own + most,
            path: c.path.clone(),
            span: decl.map_or(0..0, |d| d.span.clone()),
        });
    }
    for (ti, t) in expanded.tasks.iter().enumerate() {
        if t.collection.is_some() {
            continue;
        }
        let decl = topology.tasks.get(t.decl);
        units.push(Unit {
            collection: None,
            tasks: vec![ti],
            weight: decl.map_or(0, |d| d.requirements.len()),
            path: t.path.clone(),
            span: decl.map_or(0..0, |d| d.span.clone()),
        });
    }
    // Stable: the expansion order breaks ties (collections were pushed first, in order, then
    // the tasks; re-sort by the first task to restore the document order).
    units.sort_by_key(|u| u.tasks.first().copied().unwrap_or(usize::MAX));
    units.sort_by(|a, b| {
        b.weight
            .cmp(&a.weight)
            .then(b.tasks.len().cmp(&a.tasks.len()))
    });

    let mut hosts: Vec<&str> = Vec::new();
    for s in slots {
        if !hosts.contains(&s.host.as_str()) {
            hosts.push(&s.host);
        }
    }
    let mut state = State {
        slots,
        used: vec![false; slots.len()],
        task_count: HashMap::new(),
        collection_count: HashMap::new(),
    };
    let mut assignments: Vec<Assignment> = Vec::with_capacity(expanded.tasks.len());
    for unit in &units {
        // Hosts by free slots, most first.
        let mut order: Vec<(usize, &str)> = hosts
            .iter()
            .map(|h| {
                let free = slots
                    .iter()
                    .filter(|s| s.host == *h && !state.used[s.id])
                    .count();
                (free, *h)
            })
            .filter(|(free, _)| *free >= unit.tasks.len())
            .collect();
        order.sort_by_key(|o| std::cmp::Reverse(o.0));
        let mut placed = None;
        for (_, host) in &order {
            if let Some(a) = try_host(topology, expanded, unit, host, &needs, &req_of, &state) {
                placed = Some((host, a));
                break;
            }
        }
        match placed {
            Some((host, unit_assignments)) => {
                for a in &unit_assignments {
                    state.used[a.slot] = true;
                    for &r in &a.reserved {
                        state.used[r] = true;
                    }
                    if let Some(t) = expanded.tasks.get(a.task) {
                        *state.task_count.entry((host, t.decl)).or_insert(0) += 1;
                    }
                }
                if let Some(c) = unit.collection.and_then(|c| expanded.collections.get(c)) {
                    *state.collection_count.entry((host, c.decl)).or_insert(0) += 1;
                }
                assignments.extend(unit_assignments);
            }
            None => errors.push(explain(
                topology, expanded, unit, &needs, &req_of, &state, &hosts,
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    assignments.sort_by_key(|a| a.task);
    Ok(assignments)
}

/// The collection-level `maxinstances` limits of a unit.
fn collection_limits<'c>(
    topology: &Topology,
    expanded: &Expanded,
    unit: &Unit,
    req_of: &impl Fn(usize) -> Option<&'c Check>,
) -> Vec<(usize, u32, usize)> {
    let Some(c) = unit.collection.and_then(|c| expanded.collections.get(c)) else {
        return Vec::new();
    };
    let Some(cd) = topology.collections.get(c.decl) else {
        return Vec::new();
    };
    cd.requirements
        .iter()
        .filter_map(|&r| match req_of(r) {
            Some(Check::MaxInstances(n)) => Some((c.decl, *n, r)),
            _ => None,
        })
        .collect()
}

/// The task-level `maxinstances` limit of a task instance (the smallest, if several).
fn task_limit<'c>(
    topology: &Topology,
    expanded: &Expanded,
    task: usize,
    req_of: &impl Fn(usize) -> Option<&'c Check>,
) -> Option<(usize, u32, usize)> {
    let t = expanded.tasks.get(task)?;
    let decl = topology.tasks.get(t.decl)?;
    decl.requirements
        .iter()
        .filter_map(|&r| match req_of(r) {
            Some(Check::MaxInstances(n)) => Some((t.decl, *n, r)),
            _ => None,
        })
        .min_by_key(|(_, n, _)| *n)
}

/// The first `maxinstances` limit the unit would break on `host`, if any.
fn limit_broken<'c>(
    topology: &Topology,
    expanded: &Expanded,
    unit: &Unit,
    host: &str,
    req_of: &impl Fn(usize) -> Option<&'c Check>,
    state: &State,
) -> Option<usize> {
    for (decl, n, r) in collection_limits(topology, expanded, unit, req_of) {
        let have = state
            .collection_count
            .get(&(host, decl))
            .copied()
            .unwrap_or(0);
        if have + 1 > n {
            return Some(r);
        }
    }
    let mut adding: HashMap<usize, u32> = HashMap::new();
    for &t in &unit.tasks {
        if let Some((decl, n, r)) = task_limit(topology, expanded, t, req_of) {
            let add = adding.entry(decl).or_insert(0);
            *add += 1;
            let have = state.task_count.get(&(host, decl)).copied().unwrap_or(0);
            if have + *add > n {
                return Some(r);
            }
        }
    }
    None
}

/// Places the unit's tasks on free slots of `host`, or `None` if they do not fit there.
fn try_host<'c>(
    topology: &Topology,
    expanded: &Expanded,
    unit: &Unit,
    host: &str,
    needs: &[TaskNeeds],
    req_of: &impl Fn(usize) -> Option<&'c Check>,
    state: &State,
) -> Option<Vec<Assignment>> {
    if limit_broken(topology, expanded, unit, host, req_of, state).is_some() {
        return None;
    }
    let mut used = state.used.clone();
    // Within the unit: the tasks with more GPUs and more requirements first.
    let mut tasks = unit.tasks.clone();
    tasks.sort_by(|&a, &b| {
        let (na, nb) = (&needs[a], &needs[b]);
        nb.gpus
            .cmp(&na.gpus)
            .then(nb.reqs.len().cmp(&na.reqs.len()))
    });
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        let need = &needs[t];
        let ok = |s: &Slot| {
            s.host == host
                && !used[s.id]
                && need
                    .reqs
                    .iter()
                    .all(|&r| req_of(r).is_none_or(|c| c.slot_ok(s)))
        };
        let slot = state
            .slots
            .iter()
            .filter(|s| ok(s))
            .min_by_key(|s| (need.gpus == 0 && has_gpu(s), s.capabilities.len(), s.id))?;
        used[slot.id] = true;
        let mut reserved = Vec::new();
        for _ in 1..need.gpus {
            let extra = state
                .slots
                .iter()
                .filter(|s| s.host == host && !used[s.id] && has_gpu(s))
                .min_by_key(|s| (s.capabilities.len(), s.id))?;
            used[extra.id] = true;
            reserved.push(extra.id);
        }
        out.push(Assignment {
            task: t,
            slot: slot.id,
            reserved,
        });
    }
    Some(out)
}

fn describe_req(topology: &Topology, r: usize) -> String {
    match topology.requirements.get(r) {
        Some(d) => format!("`{}` ({} `{}`)", d.name, kind_name(d.kind), d.value),
        None => format!("#{r}"),
    }
}

/// Says why a unit found no host.
fn explain<'c>(
    topology: &Topology,
    expanded: &Expanded,
    unit: &Unit,
    needs: &[TaskNeeds],
    req_of: &impl Fn(usize) -> Option<&'c Check>,
    state: &State,
    hosts: &[&str],
) -> PlaceError {
    let what = if unit.collection.is_some() {
        format!("collection `{}`", unit.path)
    } else {
        format!("task `{}`", unit.path)
    };
    let free_by_host: Vec<String> = hosts
        .iter()
        .map(|h| {
            let total = state.slots.iter().filter(|s| s.host == *h).count();
            let free = state
                .slots
                .iter()
                .filter(|s| s.host == *h && !state.used[s.id])
                .count();
            format!("{h}: {free} of {total} free")
        })
        .collect();
    let workers_note = format!("workers: {}", free_by_host.join(", "));
    let span_of = |r: usize| {
        topology
            .requirements
            .get(r)
            .map_or(unit.span.clone(), |d| d.span.clone())
    };
    // A requirement no slot meets at all.
    for &t in &unit.tasks {
        for &r in &needs[t].reqs {
            let Some(check) = req_of(r) else { continue };
            if !state.slots.iter().any(|s| check.slot_ok(s)) {
                let offered: Vec<String> = match check {
                    Check::HostName(_) => hosts.iter().map(|h| h.to_string()).collect(),
                    Check::WnName(_) => state.slots.iter().map(|s| s.name.clone()).collect(),
                    Check::GroupName(_) => {
                        let mut v: Vec<String> =
                            state.slots.iter().map(|s| s.class.clone()).collect();
                        v.dedup();
                        v
                    }
                    Check::Custom(_) | Check::Gpu(_) => {
                        let mut v: Vec<String> = state
                            .slots
                            .iter()
                            .flat_map(|s| s.capabilities.iter().cloned())
                            .collect();
                        v.sort();
                        v.dedup();
                        v
                    }
                    Check::MaxInstances(_) => Vec::new(),
                };
                let kind = match check {
                    Check::HostName(_) => "hosts",
                    Check::WnName(_) => "worker names",
                    Check::GroupName(_) => "worker classes",
                    _ => "capabilities",
                };
                let mut d = Diagnostic::error_at(
                    "dds-place-unsatisfiable",
                    span_of(r),
                    format!(
                        "cannot place {what}: no worker meets requirement {}",
                        describe_req(topology, r)
                    ),
                )
                .with_note(format!("the workers' {kind}: {}", offered.join(", ")));
                if matches!(check, Check::Gpu(_)) {
                    d = d.with_note("a `gpu` requirement needs workers with the capability `GPU`, e.g. `--topology \"worker:4 gpu+GPU:2\"`");
                } else if matches!(check, Check::Custom(_)) {
                    d = d.with_note("a `custom` requirement names a capability the worker must have, e.g. `--topology \"worker+NAME:4\"`");
                }
                return PlaceError {
                    path: unit.path.clone(),
                    diagnostic: d,
                };
            }
        }
    }
    // maxinstances reached on every host with room.
    let roomy: Vec<&str> = hosts
        .iter()
        .copied()
        .filter(|h| {
            state
                .slots
                .iter()
                .filter(|s| s.host == *h && !state.used[s.id])
                .count()
                >= unit.tasks.len()
        })
        .collect();
    if !roomy.is_empty() {
        let broken: Vec<usize> = roomy
            .iter()
            .filter_map(|h| limit_broken(topology, expanded, unit, h, req_of, state))
            .collect();
        if broken.len() == roomy.len()
            && let Some(&r) = broken.first()
        {
            return PlaceError {
                path: unit.path.clone(),
                diagnostic: Diagnostic::error_at(
                    "dds-place-maxinstances",
                    span_of(r),
                    format!(
                        "cannot place {what}: requirement {} is reached on every host with free workers ({})",
                        describe_req(topology, r),
                        roomy.join(", ")
                    ),
                )
                .with_note(workers_note),
            };
        }
    }
    let need = if unit.tasks.len() == 1 {
        "a free worker".to_string()
    } else {
        format!("{} free workers on one host", unit.tasks.len())
    };
    let reqs: Vec<String> = {
        let mut all: Vec<usize> = unit
            .tasks
            .iter()
            .flat_map(|&t| needs[t].reqs.iter().copied())
            .collect();
        all.sort_unstable();
        all.dedup();
        all.into_iter().map(|r| describe_req(topology, r)).collect()
    };
    let mut d = Diagnostic::error_at(
        "dds-place-full",
        unit.span.clone(),
        format!(
            "cannot place {what}: it needs {need}{}, and the workers that qualify are taken",
            if reqs.is_empty() {
                String::new()
            } else {
                format!(" meeting {}", reqs.join(", "))
            }
        ),
    )
    .with_note(workers_note);
    if needs.iter().any(|n| n.gpus > 1) {
        d = d.with_note("a `gpu` requirement N reserves N workers with the capability `GPU`");
    }
    PlaceError {
        path: unit.path.clone(),
        diagnostic: d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn slots(spec: &[(&str, &str, &[&str])]) -> Vec<Slot> {
        let mut counters: HashMap<(String, String), usize> = HashMap::new();
        spec.iter()
            .enumerate()
            .map(|(id, (host, class, caps))| {
                let n = counters
                    .entry((host.to_string(), class.to_string()))
                    .or_insert(0);
                let name = format!("{class}-{host}-{n}");
                *n += 1;
                let mut capabilities = vec![class.to_string()];
                capabilities.extend(caps.iter().map(|c| c.to_string()));
                Slot {
                    id,
                    name,
                    class: class.to_string(),
                    host: host.to_string(),
                    capabilities,
                }
            })
            .collect()
    }

    fn host_of<'a>(slots: &'a [Slot], a: &[Assignment], task: usize) -> &'a str {
        &slots[a.iter().find(|x| x.task == task).unwrap().slot].host
    }

    fn codes(errors: &[PlaceError]) -> Vec<&'static str> {
        errors.iter().map(|e| e.diagnostic.code).collect()
    }

    #[test]
    fn every_task_gets_its_own_slot_spread_over_hosts() {
        let mut b = Builder::new();
        let t = b.task("t", "true");
        b.main_tasks(&[t, t, t, t]);
        let (topo, exp) = b.build();
        let s = slots(&[
            ("a", "worker", &[]),
            ("a", "worker", &[]),
            ("b", "worker", &[]),
            ("b", "worker", &[]),
        ]);
        let a = place(&topo, &exp, &s).unwrap();
        assert_eq!(a.len(), 4);
        let mut used: Vec<usize> = a.iter().map(|x| x.slot).collect();
        used.sort_unstable();
        used.dedup();
        assert_eq!(used.len(), 4);
        // Spread: two on each host.
        let on_a = (0..4).filter(|&t| host_of(&s, &a, t) == "a").count();
        assert_eq!(on_a, 2);
    }

    #[test]
    fn collection_tasks_share_a_host() {
        let mut b = Builder::new();
        let t1 = b.task("t1", "true");
        let t2 = b.task("t2", "true");
        let c = b.collection("c", &[t1, t2, t2]);
        b.main_collections(&[c, c]);
        let (topo, exp) = b.build();
        // Three slots on each of a and b, one on c: a single host per collection.
        let s = slots(&[
            ("a", "worker", &[]),
            ("b", "worker", &[]),
            ("a", "worker", &[]),
            ("b", "worker", &[]),
            ("a", "worker", &[]),
            ("b", "worker", &[]),
            ("c", "worker", &[]),
        ]);
        let a = place(&topo, &exp, &s).unwrap();
        assert_eq!(a.len(), 6);
        for ci in &exp.collections {
            let hosts: Vec<&str> = ci.tasks.clone().map(|t| host_of(&s, &a, t)).collect();
            assert!(hosts.iter().all(|h| *h == hosts[0]), "{hosts:?}");
        }
        assert_ne!(host_of(&s, &a, 0), host_of(&s, &a, 3));
    }

    #[test]
    fn collection_too_big_for_any_host_is_an_error() {
        let mut b = Builder::new();
        let t1 = b.task("t1", "true");
        let c = b.collection("c", &[t1, t1, t1]);
        b.main_collections(&[c]);
        let (topo, exp) = b.build();
        let s = slots(&[
            ("a", "worker", &[]),
            ("a", "worker", &[]),
            ("b", "worker", &[]),
            ("b", "worker", &[]),
        ]);
        let e = place(&topo, &exp, &s).unwrap_err();
        assert_eq!(codes(&e), ["dds-place-full"]);
        assert_eq!(e[0].path, "main/c_0");
        let d = &e[0].diagnostic;
        assert!(d.message.contains("3 free workers on one host"), "{d}");
        assert!(
            d.notes[0].contains("a: 2 of 2 free, b: 2 of 2 free"),
            "{d:?}"
        );
    }

    #[test]
    fn hostname_is_a_full_regex() {
        let mut b = Builder::new();
        let r = b.requirement("gpuhost", RequirementKind::HostName, "node[0-9]+");
        let t = b.task("t", "true");
        b.task_requires(t, r);
        let plain = b.task("p", "true");
        b.main_tasks(&[t, plain]);
        let (topo, exp) = b.build();
        // `xnode1x` contains a match but is not one as a whole.
        let s = slots(&[("xnode1x", "worker", &[]), ("node12", "worker", &[])]);
        let a = place(&topo, &exp, &s).unwrap();
        assert_eq!(host_of(&s, &a, 0), "node12");
        assert_eq!(host_of(&s, &a, 1), "xnode1x");
        let s = slots(&[("xnode1x", "worker", &[]), ("other", "worker", &[])]);
        let e = place(&topo, &exp, &s).unwrap_err();
        assert_eq!(codes(&e), ["dds-place-unsatisfiable"]);
        let d = &e[0].diagnostic;
        assert!(d.message.contains("task `main/t_0`"), "{d}");
        assert!(
            d.message
                .contains("requirement `gpuhost` (hostname `node[0-9]+`)"),
            "{d}"
        );
        assert_eq!(d.notes[0], "the workers' hosts: xnode1x, other");
        assert_eq!(d.range(), topo.requirements[0].span);
    }

    #[test]
    fn empty_pattern_matches_everything() {
        let mut b = Builder::new();
        let r = b.requirement("any", RequirementKind::HostName, "");
        let t = b.task("t", "true");
        b.task_requires(t, r);
        b.main_tasks(&[t]);
        let (topo, exp) = b.build();
        let s = slots(&[("a", "worker", &[])]);
        assert_eq!(place(&topo, &exp, &s).unwrap()[0].slot, 0);
    }

    #[test]
    fn wnname_matches_worker_names_and_empty_names() {
        let mut b = Builder::new();
        let r = b.requirement("w", RequirementKind::WnName, "worker-a-1");
        let t = b.task("t", "true");
        b.task_requires(t, r);
        b.main_tasks(&[t]);
        let (topo, exp) = b.build();
        let s = slots(&[("a", "worker", &[]), ("a", "worker", &[])]);
        assert_eq!(place(&topo, &exp, &s).unwrap()[0].slot, 1);
        let mut s = slots(&[("a", "other", &[])]);
        let e = place(&topo, &exp, &s).unwrap_err();
        assert_eq!(codes(&e), ["dds-place-unsatisfiable"]);
        assert!(e[0].diagnostic.notes[0].contains("other-a-0"));
        s[0].name.clear();
        assert_eq!(place(&topo, &exp, &s).unwrap()[0].slot, 0);
    }

    #[test]
    fn groupname_matches_the_worker_class() {
        let mut b = Builder::new();
        let r = b.requirement("g", RequirementKind::GroupName, "comp.*");
        let t = b.task("t", "true");
        b.task_requires(t, r);
        b.main_tasks(&[t]);
        let (topo, exp) = b.build();
        let s = slots(&[("a", "io", &[]), ("a", "compute", &[])]);
        assert_eq!(place(&topo, &exp, &s).unwrap()[0].slot, 1);
        let s = slots(&[("a", "io", &[])]);
        let e = place(&topo, &exp, &s).unwrap_err();
        assert_eq!(e[0].diagnostic.notes[0], "the workers' worker classes: io");
    }

    #[test]
    fn custom_needs_the_capability() {
        let mut b = Builder::new();
        let r = b.requirement("ib", RequirementKind::Custom, "infiniband");
        let t = b.task("t", "true");
        b.task_requires(t, r);
        let p = b.task("p", "true");
        b.main_tasks(&[p, t]);
        let (topo, exp) = b.build();
        let s = slots(&[("a", "worker", &["infiniband"]), ("a", "worker", &[])]);
        let a = place(&topo, &exp, &s).unwrap();
        // The task with the requirement is placed first and gets the capable worker, the
        // plain one takes the other, although it comes first in the document.
        assert_eq!(a[1].slot, 0);
        assert_eq!(a[0].slot, 1);
        let s = slots(&[("a", "worker", &[]), ("a", "worker", &[])]);
        let e = place(&topo, &exp, &s).unwrap_err();
        assert_eq!(codes(&e), ["dds-place-unsatisfiable"]);
        assert!(e[0].diagnostic.notes[1].contains("custom"));
    }

    #[test]
    fn gpu_reserves_gpu_workers_and_plain_tasks_avoid_them() {
        let mut b = Builder::new();
        let r = b.requirement("two", RequirementKind::Gpu, "2");
        let g = b.task("g", "true");
        b.task_requires(g, r);
        let p = b.task("p", "true");
        b.main_tasks(&[p, g, p]);
        let (topo, exp) = b.build();
        let s = slots(&[
            ("a", "gpu", &["GPU"]),
            ("a", "worker", &[]),
            ("a", "gpu", &["GPU"]),
            ("a", "worker", &[]),
            ("a", "gpu", &["GPU"]),
        ]);
        let a = place(&topo, &exp, &s).unwrap();
        let g = a.iter().find(|x| x.task == 1).unwrap();
        assert!(has_gpu(&s[g.slot]));
        assert_eq!(g.reserved.len(), 1);
        assert!(has_gpu(&s[g.reserved[0]]));
        assert_ne!(g.reserved[0], g.slot);
        for x in a.iter().filter(|x| x.task != 1) {
            assert!(!has_gpu(&s[x.slot]), "{x:?}");
        }
        // One GPU worker only: not enough for two GPUs.
        let s = slots(&[
            ("a", "gpu", &["GPU"]),
            ("a", "worker", &[]),
            ("a", "worker", &[]),
            ("b", "gpu", &["GPU"]),
        ]);
        let e = place(&topo, &exp, &s).unwrap_err();
        assert_eq!(codes(&e), ["dds-place-full"]);
        assert!(e[0].diagnostic.message.contains("`two` (gpu `2`)"));
        // No GPU at all.
        let s = slots(&[("a", "worker", &[]), ("a", "worker", &[]), ("a", "w", &[])]);
        let e = place(&topo, &exp, &s).unwrap_err();
        assert_eq!(codes(&e), ["dds-place-unsatisfiable"]);
    }

    #[test]
    fn maxinstances_counts_per_host_and_declaration() {
        let mut b = Builder::new();
        let r = b.requirement("one", RequirementKind::MaxInstances, "1");
        let t = b.task("t", "true");
        b.task_requires(t, r);
        let p = b.task("p", "true");
        b.main_tasks(&[t, t, p, p]);
        let (topo, exp) = b.build();
        let s = slots(&[
            ("a", "worker", &[]),
            ("a", "worker", &[]),
            ("a", "worker", &[]),
            ("b", "worker", &[]),
        ]);
        let a = place(&topo, &exp, &s).unwrap();
        assert_ne!(host_of(&s, &a, 0), host_of(&s, &a, 1));
        // Three instances on two hosts: impossible.
        let mut b = Builder::new();
        let r = b.requirement("one", RequirementKind::MaxInstances, "1");
        let t = b.task("t", "true");
        b.task_requires(t, r);
        b.main_tasks(&[t, t, t]);
        let (topo, exp) = b.build();
        let e = place(&topo, &exp, &s).unwrap_err();
        assert_eq!(codes(&e), ["dds-place-maxinstances"]);
        assert_eq!(e[0].path, "main/t_2");
        assert!(
            e[0].diagnostic.message.contains(
                "`one` (maxinstances `1`) is reached on every host with free workers (a)"
            ),
            "{}",
            e[0].diagnostic.message
        );
    }

    #[test]
    fn maxinstances_of_a_collection_counts_collections() {
        let mut b = Builder::new();
        let r = b.requirement("one", RequirementKind::MaxInstances, "1");
        let t = b.task("t", "true");
        let c = b.collection("c", &[t, t]);
        b.collection_requires(c, r);
        b.main_collections(&[c, c]);
        let (topo, exp) = b.build();
        let s = slots(&[
            ("a", "worker", &[]),
            ("a", "worker", &[]),
            ("a", "worker", &[]),
            ("a", "worker", &[]),
            ("b", "worker", &[]),
            ("b", "worker", &[]),
        ]);
        let a = place(&topo, &exp, &s).unwrap();
        assert_eq!(host_of(&s, &a, 0), host_of(&s, &a, 1));
        assert_ne!(host_of(&s, &a, 0), host_of(&s, &a, 2));
    }

    #[test]
    fn collection_requirements_apply_to_its_tasks() {
        let mut b = Builder::new();
        let r = b.requirement("h", RequirementKind::HostName, "b");
        let t = b.task("t", "true");
        let c = b.collection("c", &[t, t]);
        b.collection_requires(c, r);
        let p = b.task("p", "true");
        b.main_tasks(&[p, p]);
        b.main_collections(&[c]);
        let (topo, exp) = b.build();
        let s = slots(&[
            ("a", "worker", &[]),
            ("a", "worker", &[]),
            ("b", "worker", &[]),
            ("b", "worker", &[]),
        ]);
        let a = place(&topo, &exp, &s).unwrap();
        for ct in exp.collections[0].tasks.clone() {
            assert_eq!(host_of(&s, &a, ct), "b");
        }
    }

    #[test]
    fn too_few_slots_and_bad_values() {
        let mut b = Builder::new();
        let t = b.task("t", "true");
        b.main_tasks(&[t, t, t]);
        let (topo, exp) = b.build();
        let s = slots(&[("a", "worker", &[])]);
        let e = place(&topo, &exp, &s).unwrap_err();
        assert_eq!(codes(&e), ["dds-place-too-few-slots"]);
        assert_eq!(
            e[0].diagnostic.message,
            "the topology has 3 tasks but the workers offer only 1 slot"
        );
        assert!(e[0].diagnostic.notes[1].contains("--topology worker:3"));

        let mut b = Builder::new();
        let r1 = b.requirement("re", RequirementKind::HostName, "+.gsi.de");
        let r2 = b.requirement("n", RequirementKind::MaxInstances, "many");
        let r3 = b.requirement("unused", RequirementKind::Gpu, "x");
        let t = b.task("t", "true");
        b.task_requires(t, r1);
        b.task_requires(t, r2);
        b.main_tasks(&[t]);
        let (topo, exp) = b.build();
        let e = place(&topo, &exp, &s).unwrap_err();
        assert_eq!(
            codes(&e),
            ["dds-place-bad-requirement", "dds-place-bad-requirement"]
        );
        assert!(
            e[0].diagnostic
                .message
                .starts_with("requirement `re` (hostname): `+.gsi.de` is not a regular expression")
        );
        assert_eq!(
            e[1].diagnostic.message,
            "requirement `n` (maxinstances): the value `many` of a `maxinstances` requirement is not a number (0 to 4294967295)"
        );
        assert_eq!(e[1].diagnostic.range(), topo.requirements[r2].span);
        let _ = r3;
    }

    #[test]
    fn all_unplaceable_units_are_reported() {
        let mut b = Builder::new();
        let r = b.requirement("h", RequirementKind::HostName, "nowhere");
        let t = b.task("t", "true");
        b.task_requires(t, r);
        b.main_tasks(&[t, t]);
        let (topo, exp) = b.build();
        let s = slots(&[("a", "worker", &[]), ("a", "worker", &[])]);
        let e = place(&topo, &exp, &s).unwrap_err();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].path, "main/t_0");
        assert_eq!(e[1].path, "main/t_1");
    }
}
