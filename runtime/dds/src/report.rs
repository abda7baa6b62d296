//! Comparing two expansions, and the text and JSON forms of expansions, counts and diffs.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::{Value, json};

use crate::expand::{Counts, ExpandSink, expand_into};
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

/// Writes a topology's expansion as text, as it is made (memory stays small for millions of
/// instances): one line per task (`id path`), then one per collection, under `# tasks (N)`
/// and `# collections (N)` headers. The expansion runs twice (tasks, then collections).
pub fn write_expansion_text(topology: &Topology, w: &mut dyn Write) -> io::Result<()> {
    let counts = crate::count(topology);
    writeln!(w, "# tasks ({})", counts.tasks)?;
    let sink = Lines {
        w: &mut *w,
        tasks: true,
        err: None,
    };
    expand_into(topology, sink).done()?;
    writeln!(w, "# collections ({})", counts.collections)?;
    let sink = Lines {
        w: &mut *w,
        tasks: false,
        err: None,
    };
    expand_into(topology, sink).done()?;
    w.flush()
}

/// Writes `{<head fields>, "tasks": [{"id", "path", "hash_path", "name", "task_index",
/// "collection", "group"}], "collections": [{"id", "path", "hash_path", "name",
/// "collection_index", "group", "tasks"}]}` as it is made, one instance a line: `collection`
/// is the collection's path, `group` the group's name (or null), a collection's `tasks` are
/// the ids of its tasks.
pub fn write_expansion_json(
    topology: &Topology,
    head: &serde_json::Map<String, Value>,
    w: &mut dyn Write,
) -> io::Result<()> {
    w.write_all(b"{\n")?;
    for (k, v) in head {
        writeln!(w, "  {}: {},", json!(k), v)?;
    }
    for tasks in [true, false] {
        write!(
            w,
            "  \"{}\": [",
            if tasks { "tasks" } else { "collections" }
        )?;
        let sink = JsonLines {
            t: topology,
            w: &mut *w,
            tasks,
            first: true,
            err: None,
        };
        let sink = expand_into(topology, sink);
        let first = sink.first;
        sink.err.map_or(Ok(()), Err)?;
        w.write_all(if first { b"]" } else { b"\n  ]" })?;
        w.write_all(if tasks { b",\n" } else { b"\n}\n" })?;
    }
    w.flush()
}

/// The text form's sink: tasks or collections, `id path` lines; the first write error stops
/// the writing.
struct Lines<'w> {
    w: &'w mut dyn Write,
    tasks: bool,
    err: Option<io::Error>,
}

impl Lines<'_> {
    fn line(&mut self, id: u64, path: &str) {
        if self.err.is_none()
            && let Err(e) = writeln!(self.w, "{id} {path}")
        {
            self.err = Some(e);
        }
    }

    fn done(self) -> io::Result<()> {
        self.err.map_or(Ok(()), Err)
    }
}

impl ExpandSink for Lines<'_> {
    fn task(&mut self, task: TaskInstance, _: Option<&str>) {
        if self.tasks {
            self.line(task.id, &task.path);
        }
    }

    fn collection(&mut self, c: CollectionInstance, _: &[u64]) {
        if !self.tasks {
            self.line(c.id, &c.path);
        }
    }
}

/// The JSON form's sink: one object a line.
struct JsonLines<'t, 'w> {
    t: &'t Topology,
    w: &'w mut dyn Write,
    tasks: bool,
    first: bool,
    err: Option<io::Error>,
}

impl JsonLines<'_, '_> {
    fn group(&self, g: Option<usize>) -> Option<&str> {
        g.and_then(|g| self.t.main.groups.get(g))
            .map(|g| g.name.as_str())
    }

    fn item(&mut self, v: Value) {
        if self.err.is_some() {
            return;
        }
        let sep = if self.first { "\n    " } else { ",\n    " };
        self.first = false;
        if let Err(e) = write!(self.w, "{sep}{v}") {
            self.err = Some(e);
        }
    }
}

impl ExpandSink for JsonLines<'_, '_> {
    fn task(&mut self, t: TaskInstance, collection: Option<&str>) {
        if self.tasks {
            let v = json!({
                "id": t.id,
                "path": t.path,
                "hash_path": t.hash_path,
                "name": self.t.tasks.get(t.decl).map(|d| d.name.as_str()),
                "task_index": t.task_index,
                "collection": collection,
                "group": self.group(t.group),
            });
            self.item(v);
        }
    }

    fn collection(&mut self, c: CollectionInstance, tasks: &[u64]) {
        if !self.tasks {
            let v = json!({
                "id": c.id,
                "path": c.path,
                "hash_path": c.hash_path,
                "name": self.t.collections.get(c.decl).map(|d| d.name.as_str()),
                "collection_index": c.collection_index,
                "group": self.group(c.group),
                "tasks": tasks,
            });
            self.item(v);
        }
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
