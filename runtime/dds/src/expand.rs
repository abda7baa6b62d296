//! Expanding a topology into its task and collection instances, with DDS's paths, indices and
//! ids; counting them without expanding.

use std::collections::HashMap;

use crate::crc::{self, Suffix};
use crate::model::*;

fn requirement_kind(kind: RequirementKind) -> &'static str {
    match kind {
        RequirementKind::WnName => "wnname",
        RequirementKind::HostName => "hostname",
        RequirementKind::GroupName => "groupname",
        RequirementKind::Gpu => "gpu",
        RequirementKind::MaxInstances => "maxinstances",
        RequirementKind::Custom => "custom",
    }
}

fn access_name(access: Access) -> &'static str {
    match access {
        Access::Read => "read",
        Access::Write => "write",
        Access::ReadWrite => "readwrite",
    }
}

fn requirement_hash(out: &mut String, r: &RequirementDecl) {
    out.push_str("|Requirement|");
    out.push_str(&r.name);
    out.push('|');
    out.push_str(requirement_kind(r.kind));
    out.push('|');
    out.push_str(&r.value);
}

/// DDS's hash string of a task declaration: `|Task|name|exe|env|exeReachable|envReachable`
/// (reachable as `1`/`0`; a missing env is empty and reachable). This much is checked against
/// DDS's ids. Requirements, properties, triggers and assets are appended as
/// `|Requirement|name|type|value`, `|Property|name|access|scope`,
/// `|Trigger|name|TaskCrashed|RestartTask|arg` and `|Asset|name|inline|visibility|value`: DDS's
/// own form of these could not be checked (no DDS id of such a task is known), so ids of tasks
/// with any of them may differ from DDS's.
pub fn task_hash_string(topology: &Topology, task: usize) -> String {
    let Some(t) = topology.tasks.get(task) else {
        return String::new();
    };
    let mut s = String::with_capacity(32 + t.name.len() + t.exe.text.len());
    s.push_str("|Task|");
    s.push_str(&t.name);
    s.push('|');
    s.push_str(&t.exe.text);
    s.push('|');
    if let Some(env) = &t.env {
        s.push_str(&env.text);
    }
    s.push('|');
    s.push(if t.exe.reachable { '1' } else { '0' });
    s.push('|');
    s.push(if t.env.as_ref().is_none_or(|e| e.reachable) {
        '1'
    } else {
        '0'
    });
    for &r in &t.requirements {
        if let Some(r) = topology.requirements.get(r) {
            requirement_hash(&mut s, r);
        }
    }
    for &(p, access) in &t.properties {
        if let Some(p) = topology.properties.get(p) {
            s.push_str("|Property|");
            s.push_str(&p.name);
            s.push('|');
            s.push_str(access_name(access));
            s.push('|');
            s.push_str(match p.scope {
                PropertyScope::Global => "global",
                PropertyScope::Collection => "collection",
            });
        }
    }
    for &tr in &t.triggers {
        if let Some(tr) = topology.triggers.get(tr) {
            s.push_str("|Trigger|");
            s.push_str(&tr.name);
            s.push_str("|TaskCrashed|RestartTask|");
            s.push_str(&tr.arg);
        }
    }
    for &a in &t.assets {
        if let Some(a) = topology.assets.get(a) {
            s.push_str("|Asset|");
            s.push_str(&a.name);
            s.push_str("|inline|");
            s.push_str(match a.visibility {
                AssetVisibility::Task => "task",
                AssetVisibility::Global => "global",
            });
            s.push('|');
            s.push_str(&a.value);
        }
    }
    s
}

/// DDS's hash string of a collection declaration: `|Collection|name|` then each task's hash
/// string followed by `|` (checked against DDS's ids), then each requirement as in
/// [`task_hash_string`] followed by `|` (not checked).
pub fn collection_hash_string(topology: &Topology, collection: usize) -> String {
    let Some(c) = topology.collections.get(collection) else {
        return String::new();
    };
    let mut s = String::new();
    s.push_str("|Collection|");
    s.push_str(&c.name);
    s.push('|');
    let mut cache: HashMap<usize, String> = HashMap::new();
    for &t in &c.tasks {
        let h = cache
            .entry(t)
            .or_insert_with(|| task_hash_string(topology, t));
        s.push_str(h);
        s.push('|');
    }
    for &r in &c.requirements {
        if let Some(r) = topology.requirements.get(r) {
            requirement_hash(&mut s, r);
            s.push('|');
        }
    }
    s
}

/// The id DDS gives an instance: the checksum of its path (with indices) followed by the hash
/// string of its declaration.
pub fn instance_id(path: &str, hash_string: &str) -> u64 {
    crc::feed(crc::crc64(path.as_bytes()), hash_string.as_bytes())
}

/// Appends the decimal digits of `n`.
fn push_u32(s: &mut String, mut n: u32) {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &b in &buf[i..] {
        s.push(b as char);
    }
}

/// Receives the instances of an expansion as they are made, so that a caller can write them
/// out without keeping them (`gspc-topology expand` of millions of instances).
pub trait ExpandSink {
    /// A task instance; `collection` is its collection instance's path, if any.
    fn task(&mut self, task: TaskInstance, collection: Option<&str>);
    /// A collection instance, right after its tasks; `tasks` are their ids.
    fn collection(&mut self, collection: CollectionInstance, tasks: &[u64]);
}

impl ExpandSink for Expanded {
    fn task(&mut self, task: TaskInstance, _: Option<&str>) {
        self.tasks.push(task);
    }

    fn collection(&mut self, collection: CollectionInstance, _: &[u64]) {
        self.collections.push(collection);
    }
}

struct Expander<'t, S> {
    t: &'t Topology,
    out: S,
    /// Instances made so far.
    n_tasks: usize,
    n_collections: usize,
    /// The ids of the tasks of the collection instance being made.
    coll_ids: Vec<u64>,
    task_sfx: Vec<Option<Suffix>>,
    coll_sfx: Vec<Option<Suffix>>,
    /// For each collection declaration, the index of each of its tasks inside an instance
    /// (the n-th occurrence of the same task declaration).
    coll_task_index: Vec<Option<Vec<u32>>>,
    /// Reused buffers for the path prefixes of a collection's tasks.
    buf_prefix: String,
    buf_hash: String,
}

/// Where instances are being created: `main/` or `main/group/`.
struct Place<'a> {
    prefix: &'a str,
    state: u64,
    group: Option<usize>,
}

impl<S: ExpandSink> Expander<'_, S> {
    fn task_suffix(&mut self, decl: usize) -> &Suffix {
        let t = self.t;
        self.task_sfx[decl].get_or_insert_with(|| Suffix::new(task_hash_string(t, decl).as_bytes()))
    }

    fn coll_suffix(&mut self, decl: usize) -> &Suffix {
        let t = self.t;
        self.coll_sfx[decl]
            .get_or_insert_with(|| Suffix::new(collection_hash_string(t, decl).as_bytes()))
    }

    /// Makes one task instance. `prefix` ends with `/` and `state` is its checksum state;
    /// `collection` is the index and path of its collection instance.
    #[allow(clippy::too_many_arguments)]
    fn task(
        &mut self,
        decl: usize,
        prefix: &str,
        hash_prefix: &str,
        state: u64,
        index: u32,
        collection: Option<(usize, &str)>,
        group: Option<usize>,
    ) {
        let name = &self.t.tasks[decl].name;
        let mut path = String::with_capacity(prefix.len() + name.len() + 11);
        path.push_str(prefix);
        path.push_str(name);
        path.push('_');
        push_u32(&mut path, index);
        let mut hash_path = String::with_capacity(hash_prefix.len() + name.len());
        hash_path.push_str(hash_prefix);
        hash_path.push_str(name);
        let st = crc::feed(state, &path.as_bytes()[prefix.len()..]);
        let id = self.task_suffix(decl).finish(st);
        if collection.is_some() {
            self.coll_ids.push(id);
        }
        self.n_tasks += 1;
        self.out.task(
            TaskInstance {
                id,
                path,
                hash_path,
                decl,
                task_index: index,
                collection: collection.map(|(c, _)| c),
                group,
            },
            collection.map(|(_, path)| path),
        );
    }

    fn collection(&mut self, decl: usize, place: &Place, index: u32) {
        let c = &self.t.collections[decl];
        let mut path = String::with_capacity(place.prefix.len() + c.name.len() + 11);
        path.push_str(place.prefix);
        path.push_str(&c.name);
        path.push('_');
        push_u32(&mut path, index);
        let st = crc::feed(place.state, &path.as_bytes()[place.prefix.len()..]);
        let id = self.coll_suffix(decl).finish(st);
        let mut hash_path = String::with_capacity(place.prefix.len() + c.name.len());
        hash_path.push_str(place.prefix);
        hash_path.push_str(&c.name);
        let mut child_prefix = std::mem::take(&mut self.buf_prefix);
        child_prefix.clear();
        child_prefix.push_str(&path);
        child_prefix.push('/');
        let mut child_hash = std::mem::take(&mut self.buf_hash);
        child_hash.clear();
        child_hash.push_str(&hash_path);
        child_hash.push('/');
        let child_state = crc::feed(st, b"/");
        let me = self.n_collections;
        self.n_collections += 1;
        let first = self.n_tasks;
        self.coll_ids.clear();
        let t = self.t;
        let indices = match self.coll_task_index[decl].take() {
            Some(v) => v,
            None => {
                let mut seen: HashMap<usize, u32> = HashMap::new();
                t.collections[decl]
                    .tasks
                    .iter()
                    .map(|&d| {
                        let n = seen.entry(d).or_default();
                        *n += 1;
                        *n - 1
                    })
                    .collect()
            }
        };
        for (k, &task) in t.collections[decl].tasks.iter().enumerate() {
            if task >= t.tasks.len() {
                continue;
            }
            self.task(
                task,
                &child_prefix,
                &child_hash,
                child_state,
                indices[k],
                Some((me, &path)),
                place.group,
            );
        }
        self.coll_task_index[decl] = Some(indices);
        self.buf_prefix = child_prefix;
        self.buf_hash = child_hash;
        let ids = std::mem::take(&mut self.coll_ids);
        self.out.collection(
            CollectionInstance {
                id,
                path,
                hash_path,
                decl,
                collection_index: index,
                group: place.group,
                tasks: first..self.n_tasks,
            },
            &ids,
        );
        self.coll_ids = ids;
    }

    /// The members of `main` or of one copy of a group.
    fn members(
        &mut self,
        tasks: &[usize],
        collections: &[usize],
        place: &Place,
        counters: &mut (Vec<u32>, Vec<u32>),
    ) {
        for &d in tasks {
            if d >= self.t.tasks.len() {
                continue;
            }
            let i = counters.0[d];
            counters.0[d] += 1;
            self.task(
                d,
                place.prefix,
                place.prefix,
                place.state,
                i,
                None,
                place.group,
            );
        }
        for &d in collections {
            if d >= self.t.collections.len() {
                continue;
            }
            let i = counters.1[d];
            counters.1[d] += 1;
            self.collection(d, place, i);
        }
    }
}

/// Every task and collection instance, in this order: the tasks of `<main>`, the collections
/// of `<main>` (each followed by its tasks), then each group copy after copy (its tasks, then
/// its collections). Indices count the instances with the same hash path: `main/group1/task1_5`
/// is the sixth `task1` of `group1` over all its copies, and a task in a collection counts
/// within its collection instance (`main/group1/collection1_3/task2_0`). Ids are DDS's.
pub fn expand(topology: &Topology) -> Expanded {
    let counts = count(topology);
    let cap = |n: u64| usize::try_from(n.min(crate::MAX_TASKS)).unwrap_or(0);
    expand_into(
        topology,
        Expanded {
            tasks: Vec::with_capacity(cap(counts.tasks)),
            collections: Vec::with_capacity(cap(counts.collections)),
        },
    )
}

/// [`expand`] into a sink: the instances in the same order (a collection right after its
/// tasks), with the same indices; the sink is given back.
pub fn expand_into<S: ExpandSink>(topology: &Topology, sink: S) -> S {
    let mut ex = Expander {
        t: topology,
        out: sink,
        n_tasks: 0,
        n_collections: 0,
        coll_ids: Vec::new(),
        task_sfx: vec![None; topology.tasks.len()],
        coll_sfx: vec![None; topology.collections.len()],
        coll_task_index: vec![None; topology.collections.len()],
        buf_prefix: String::new(),
        buf_hash: String::new(),
    };
    let fresh = || {
        (
            vec![0u32; topology.tasks.len()],
            vec![0u32; topology.collections.len()],
        )
    };
    let main = &topology.main;
    let root = format!("{}/", main.name);
    let root_state = crc::crc64(root.as_bytes());
    let mut counters = fresh();
    ex.members(
        &main.tasks,
        &main.collections,
        &Place {
            prefix: &root,
            state: root_state,
            group: None,
        },
        &mut counters,
    );
    // Groups with the same name share their counters (their hash paths are the same).
    let mut by_name: HashMap<&str, (Vec<u32>, Vec<u32>)> = HashMap::new();
    for (gi, g) in main.groups.iter().enumerate() {
        let prefix = format!("{root}{}/", g.name);
        let state = crc::feed(root_state, &prefix.as_bytes()[root.len()..]);
        let counters = by_name.entry(g.name.as_str()).or_insert_with(fresh);
        let place = Place {
            prefix: &prefix,
            state,
            group: Some(gi),
        };
        for _ in 0..g.n {
            ex.members(&g.tasks, &g.collections, &place, counters);
        }
    }
    ex.out
}

/// How many instances a topology has (computed without expanding it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Task instances, those in collections included.
    pub tasks: u64,
    /// Collection instances.
    pub collections: u64,
    /// The most tasks of one instantiated collection (0 if there is none).
    pub largest_collection: u64,
    /// Instances of each task declaration (index into [`Topology::tasks`]).
    pub per_task: Vec<u64>,
    /// Instances of each collection declaration (index into [`Topology::collections`]).
    pub per_collection: Vec<u64>,
}

impl Counts {
    /// DDS's number of agents needed when each has `slots` slots:
    /// `ceil(tasks / max(slots, largest collection))` (a collection runs on one agent).
    pub fn required_agents(&self, slots: u64) -> u64 {
        if self.tasks == 0 {
            return 0;
        }
        self.tasks
            .div_ceil(slots.max(self.largest_collection).max(1))
    }
}

/// Counts the instances of a topology (saturating, never overflowing).
pub fn count(topology: &Topology) -> Counts {
    let mut c = Counts {
        tasks: 0,
        collections: 0,
        largest_collection: 0,
        per_task: vec![0; topology.tasks.len()],
        per_collection: vec![0; topology.collections.len()],
    };
    let add = |tasks: &[usize], collections: &[usize], times: u64, c: &mut Counts| {
        for &t in tasks {
            if let Some(slot) = c.per_task.get_mut(t) {
                *slot = slot.saturating_add(times);
                c.tasks = c.tasks.saturating_add(times);
            }
        }
        for &k in collections {
            let Some(decl) = topology.collections.get(k) else {
                continue;
            };
            c.per_collection[k] = c.per_collection[k].saturating_add(times);
            c.collections = c.collections.saturating_add(times);
            let mut size = 0u64;
            for &t in &decl.tasks {
                if let Some(slot) = c.per_task.get_mut(t) {
                    *slot = slot.saturating_add(times);
                    size += 1;
                }
            }
            c.tasks = c.tasks.saturating_add(size.saturating_mul(times));
            c.largest_collection = c.largest_collection.max(size);
        }
    };
    let main = &topology.main;
    add(&main.tasks, &main.collections, 1, &mut c);
    for g in &main.groups {
        add(&g.tasks, &g.collections, u64::from(g.n), &mut c);
    }
    c
}

/// [`Counts::required_agents`] of the topology's counts.
pub fn required_agents(topology: &Topology, slots: u64) -> u64 {
    count(topology).required_agents(slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits() {
        for n in [0u32, 7, 10, 123, u32::MAX] {
            let mut s = String::from("x");
            push_u32(&mut s, n);
            assert_eq!(s, format!("x{n}"));
        }
    }

    #[test]
    fn ids_of_known_instances() {
        // topology_test_7_maps_3.txt: `7788367811086353238 main/collection1`.
        let coll = "|Collection|collection1||Task|task1|task1.exe||1|1||Task|task2|task2.exe||1|1|";
        assert_eq!(instance_id("main/collection1_0", coll), 7788367811086353238);
        assert_eq!(
            instance_id("main/collection1_0/task2_0", "|Task|task2|task2.exe||1|1"),
            4637801922912057020
        );
    }

    #[test]
    fn required_agents_formula() {
        let c = Counts {
            tasks: 10,
            collections: 1,
            largest_collection: 4,
            per_task: vec![],
            per_collection: vec![],
        };
        assert_eq!(c.required_agents(1), 3); // ceil(10 / 4)
        assert_eq!(c.required_agents(3), 3); // ceil(10 / 4)
        assert_eq!(c.required_agents(5), 2); // ceil(10 / 5)
        assert_eq!(c.required_agents(0), 3);
        assert_eq!(c.required_agents(100), 1);
        let none = Counts { tasks: 0, ..c };
        assert_eq!(none.required_agents(4), 0);
    }
}
