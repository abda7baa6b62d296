//! Comparing two expansions, and the text and JSON forms of expansions, counts and diffs.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::expand::Counts;
use crate::model::*;

/// One task or collection instance in a [`Diff`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffEntry {
    pub id: u64,
    pub hash_path: String,
    pub path: String,
}

/// What changes from one topology to another, by id (a changed definition changes the ids of
/// its instances: a removal plus an addition). Each list is sorted by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diff {
    pub removed_tasks: Vec<DiffEntry>,
    pub added_tasks: Vec<DiffEntry>,
    pub removed_collections: Vec<DiffEntry>,
    pub added_collections: Vec<DiffEntry>,
}

fn only_in<'a>(
    a: impl Iterator<Item = (u64, &'a str, &'a str)>,
    b: &HashSet<u64>,
) -> Vec<DiffEntry> {
    let mut out: Vec<DiffEntry> = a
        .filter(|(id, _, _)| !b.contains(id))
        .map(|(id, hash_path, path)| DiffEntry {
            id,
            hash_path: hash_path.to_string(),
            path: path.to_string(),
        })
        .collect();
    out.sort_by(|x, y| x.id.cmp(&y.id).then_with(|| x.path.cmp(&y.path)));
    out
}

/// Compares two expansions by instance id.
pub fn diff(old: &Expanded, new: &Expanded) -> Diff {
    let ids = |v: &mut dyn Iterator<Item = u64>| v.collect::<HashSet<u64>>();
    let old_tasks = ids(&mut old.tasks.iter().map(|t| t.id));
    let new_tasks = ids(&mut new.tasks.iter().map(|t| t.id));
    let old_colls = ids(&mut old.collections.iter().map(|c| c.id));
    let new_colls = ids(&mut new.collections.iter().map(|c| c.id));
    fn tasks(e: &Expanded) -> impl Iterator<Item = (u64, &str, &str)> {
        e.tasks
            .iter()
            .map(|t| (t.id, t.hash_path.as_str(), t.path.as_str()))
    }
    fn colls(e: &Expanded) -> impl Iterator<Item = (u64, &str, &str)> {
        e.collections
            .iter()
            .map(|c| (c.id, c.hash_path.as_str(), c.path.as_str()))
    }
    Diff {
        removed_tasks: only_in(tasks(old), &new_tasks),
        added_tasks: only_in(tasks(new), &old_tasks),
        removed_collections: only_in(colls(old), &new_colls),
        added_collections: only_in(colls(new), &old_colls),
    }
}

impl Diff {
    /// True if nothing changes.
    pub fn is_empty(&self) -> bool {
        self.removed_tasks.is_empty()
            && self.added_tasks.is_empty()
            && self.removed_collections.is_empty()
            && self.added_collections.is_empty()
    }

    /// The form of DDS's `topology_test_diff.txt`: four sections, a task line is
    /// `id hash_path path`, a collection line `id hash_path`.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let section = |s: &mut String, title: &str, list: &[DiffEntry], with_path: bool| {
            let _ = writeln!(s, "----- {title} -----");
            for e in list {
                if with_path {
                    let _ = writeln!(s, "{} {} {}", e.id, e.hash_path, e.path);
                } else {
                    let _ = writeln!(s, "{} {}", e.id, e.hash_path);
                }
            }
        };
        section(&mut s, "Removed tasks", &self.removed_tasks, true);
        section(
            &mut s,
            "Removed collections",
            &self.removed_collections,
            false,
        );
        section(&mut s, "Added tasks", &self.added_tasks, true);
        section(&mut s, "Added collections", &self.added_collections, false);
        s
    }

    /// `{"removed_tasks": [{"id", "hash_path", "path"}...], "added_tasks", "removed_collections",
    /// "added_collections"}`.
    pub fn to_json(&self) -> Value {
        let list = |v: &[DiffEntry]| {
            v.iter()
                .map(|e| json!({"id": e.id, "hash_path": e.hash_path, "path": e.path}))
                .collect::<Vec<_>>()
        };
        json!({
            "removed_tasks": list(&self.removed_tasks),
            "added_tasks": list(&self.added_tasks),
            "removed_collections": list(&self.removed_collections),
            "added_collections": list(&self.added_collections),
        })
    }
}

impl Expanded {
    /// One line per task (`id path`), then one per collection, under `# tasks` and
    /// `# collections` headers.
    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(self.tasks.len() * 48);
        let _ = writeln!(s, "# tasks ({})", self.tasks.len());
        for t in &self.tasks {
            let _ = writeln!(s, "{} {}", t.id, t.path);
        }
        let _ = writeln!(s, "# collections ({})", self.collections.len());
        for c in &self.collections {
            let _ = writeln!(s, "{} {}", c.id, c.path);
        }
        s
    }

    /// `{"tasks": [{"id", "path", "hash_path", "name", "task_index", "collection", "group"}],
    /// "collections": [{"id", "path", "hash_path", "name", "collection_index", "group",
    /// "tasks"}]}`; `collection` is the collection's path, `group` the group's name (or
    /// null), a collection's `tasks` are the ids of its tasks.
    pub fn to_json(&self, topology: &Topology) -> Value {
        let group = |g: Option<usize>| {
            g.and_then(|g| topology.main.groups.get(g))
                .map(|g| g.name.clone())
        };
        let tasks: Vec<Value> = self
            .tasks
            .iter()
            .map(|t| {
                json!({
                    "id": t.id,
                    "path": t.path,
                    "hash_path": t.hash_path,
                    "name": topology.tasks.get(t.decl).map(|d| d.name.as_str()),
                    "task_index": t.task_index,
                    "collection": t.collection.and_then(|c| self.collections.get(c)).map(|c| c.path.as_str()),
                    "group": group(t.group),
                })
            })
            .collect();
        let collections: Vec<Value> = self
            .collections
            .iter()
            .map(|c| {
                let ids: Vec<u64> = self
                    .tasks
                    .get(c.tasks.clone())
                    .unwrap_or(&[])
                    .iter()
                    .map(|t| t.id)
                    .collect();
                json!({
                    "id": c.id,
                    "path": c.path,
                    "hash_path": c.hash_path,
                    "name": topology.collections.get(c.decl).map(|d| d.name.as_str()),
                    "collection_index": c.collection_index,
                    "group": group(c.group),
                    "tasks": ids,
                })
            })
            .collect();
        json!({"tasks": tasks, "collections": collections})
    }
}

impl Counts {
    /// `tasks: N`, `collections: N`, `largest collection: N`, `required agents (S slots): N`,
    /// then `task NAME: N` and `collection NAME: N` per declaration.
    pub fn to_text(&self, topology: &Topology, slots: u64) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "tasks: {}", self.tasks);
        let _ = writeln!(s, "collections: {}", self.collections);
        let _ = writeln!(s, "largest collection: {}", self.largest_collection);
        let plural = if slots == 1 { "" } else { "s" };
        let _ = writeln!(
            s,
            "required agents ({slots} slot{plural}): {}",
            self.required_agents(slots)
        );
        for (t, n) in topology.tasks.iter().zip(&self.per_task) {
            let _ = writeln!(s, "task {}: {n}", t.name);
        }
        for (c, n) in topology.collections.iter().zip(&self.per_collection) {
            let _ = writeln!(s, "collection {}: {n}", c.name);
        }
        s
    }

    /// `{"tasks", "collections", "largest_collection", "slots", "required_agents",
    /// "per_task": [{"name", "count"}], "per_collection": [{"name", "count"}]}`.
    pub fn to_json(&self, topology: &Topology, slots: u64) -> Value {
        let per = |names: Vec<&str>, counts: &[u64]| {
            names
                .into_iter()
                .zip(counts)
                .map(|(n, c)| json!({"name": n, "count": c}))
                .collect::<Vec<_>>()
        };
        json!({
            "tasks": self.tasks,
            "collections": self.collections,
            "largest_collection": self.largest_collection,
            "slots": slots,
            "required_agents": self.required_agents(slots),
            "per_task": per(topology.tasks.iter().map(|t| t.name.as_str()).collect(), &self.per_task),
            "per_collection": per(topology.collections.iter().map(|c| c.name.as_str()).collect(), &self.per_collection),
        })
    }
}
