//! DDS's property rules, without any I/O.
//!
//! * A task may write only the properties it declares with `write` or `readwrite` access,
//!   and read (get or wait for) only those it declares with `read` or `readwrite` access.
//! * A write goes to every OTHER task that declares the property with read access; for a
//!   property with `scope="collection"`, only to the tasks of the writer's collection
//!   instance (a writer outside any collection then reaches nobody).
//! * Each task keeps the last value that reached it, per property; a task reads its own
//!   copy. A restarted task keeps what reached it before.
//! * Values are at most [`MAX_VALUE_CHARS`] characters.

use std::collections::HashMap;

use pnet_dds::{Access, Expanded, PropertyScope, Topology};
pub use pnet_protocol::property::MAX_VALUE_CHARS;

/// A refused property operation: a stable code and a message naming the task, the property
/// and the declared access.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PropertyError {
    /// `property-undeclared`, `property-no-write-access`, `property-no-read-access`,
    /// `property-too-long` or `property-bad-task`.
    pub code: &'static str,
    pub message: String,
}

impl std::fmt::Display for PropertyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn access_name(a: Access) -> &'static str {
    match a {
        Access::Read => "read",
        Access::Write => "write",
        Access::ReadWrite => "readwrite",
    }
}

/// The property declarations of every task instance and the values that reached each.
#[derive(Debug)]
pub struct PropertyBook {
    /// Per task instance: its path.
    paths: Vec<String>,
    /// Per task instance: its collection instance.
    collections: Vec<Option<usize>>,
    /// Per task instance: property name -> (property index, access).
    access: Vec<HashMap<String, (usize, Access)>>,
    /// Per property: (name, scope).
    properties: Vec<(String, PropertyScope)>,
    /// Per property: the task instances that read it.
    readers: Vec<Vec<usize>>,
    /// (task instance, property index) -> the value that reached the task.
    values: HashMap<(usize, usize), String>,
}

impl PropertyBook {
    pub fn new(topology: &Topology, expanded: &Expanded) -> PropertyBook {
        let properties: Vec<(String, PropertyScope)> = topology
            .properties
            .iter()
            .map(|p| (p.name.clone(), p.scope))
            .collect();
        let mut readers = vec![Vec::new(); properties.len()];
        let mut access = Vec::with_capacity(expanded.tasks.len());
        for (ti, t) in expanded.tasks.iter().enumerate() {
            let mut map = HashMap::new();
            if let Some(decl) = topology.tasks.get(t.decl) {
                for &(p, a) in &decl.properties {
                    let Some((name, _)) = properties.get(p) else {
                        continue;
                    };
                    // A property declared twice: the union of the accesses.
                    let merged = match map.get(name) {
                        Some(&(_, old)) if old != a => Access::ReadWrite,
                        _ => a,
                    };
                    map.insert(name.clone(), (p, merged));
                }
            }
            for &(p, a) in map.values() {
                if a.reads() {
                    readers[p].push(ti);
                }
            }
            access.push(map);
        }
        for r in &mut readers {
            r.sort_unstable();
        }
        PropertyBook {
            paths: expanded.tasks.iter().map(|t| t.path.clone()).collect(),
            collections: expanded.tasks.iter().map(|t| t.collection).collect(),
            access,
            properties,
            readers,
            values: HashMap::new(),
        }
    }

    /// The number of task instances.
    pub fn task_count(&self) -> usize {
        self.paths.len()
    }

    /// The path of a task instance.
    pub fn path(&self, task: usize) -> &str {
        self.paths.get(task).map_or("?", String::as_str)
    }

    fn lookup(&self, task: usize, key: &str) -> Result<(usize, Access), PropertyError> {
        let Some(map) = self.access.get(task) else {
            return Err(PropertyError {
                code: "property-bad-task",
                message: format!("there is no task number {task} in this session"),
            });
        };
        match map.get(key) {
            Some(&found) => Ok(found),
            None => {
                let mut declared: Vec<String> = map
                    .iter()
                    .map(|(n, (_, a))| format!("{n} ({})", access_name(*a)))
                    .collect();
                declared.sort();
                let known = self.properties.iter().any(|(n, _)| n == key);
                Err(PropertyError {
                    code: "property-undeclared",
                    message: format!(
                        "task `{}` does not declare property `{key}`{}; it declares {}",
                        self.path(task),
                        if known {
                            ""
                        } else {
                            " (the topology has no such property)"
                        },
                        if declared.is_empty() {
                            "none".to_string()
                        } else {
                            declared.join(", ")
                        }
                    ),
                })
            }
        }
    }

    /// Checks that `task` may read `key`; returns the property's index.
    pub fn check_read(&self, task: usize, key: &str) -> Result<usize, PropertyError> {
        let (p, a) = self.lookup(task, key)?;
        if !a.reads() {
            return Err(PropertyError {
                code: "property-no-read-access",
                message: format!(
                    "task `{}` declares property `{key}` with access `{}`, so it cannot read it",
                    self.path(task),
                    access_name(a)
                ),
            });
        }
        Ok(p)
    }

    /// Writes `key = value` from `task`: the value reaches every other task that reads the
    /// property (within the writer's collection instance for collection scope). Returns those
    /// tasks.
    pub fn set(
        &mut self,
        task: usize,
        key: &str,
        value: &str,
    ) -> Result<Vec<usize>, PropertyError> {
        let (p, a) = self.lookup(task, key)?;
        if !a.writes() {
            return Err(PropertyError {
                code: "property-no-write-access",
                message: format!(
                    "task `{}` declares property `{key}` with access `{}`, so it cannot write it",
                    self.path(task),
                    access_name(a)
                ),
            });
        }
        let chars = value.chars().count();
        if chars > MAX_VALUE_CHARS {
            return Err(PropertyError {
                code: "property-too-long",
                message: format!(
                    "the value for property `{key}` has {chars} characters; at most {MAX_VALUE_CHARS} are allowed"
                ),
            });
        }
        let scope = self.properties[p].1;
        let writer_collection = self.collections.get(task).copied().flatten();
        let receivers: Vec<usize> = self.readers[p]
            .iter()
            .copied()
            .filter(|&r| r != task)
            .filter(|&r| match scope {
                PropertyScope::Global => true,
                PropertyScope::Collection => {
                    writer_collection.is_some()
                        && self.collections.get(r).copied().flatten() == writer_collection
                }
            })
            .collect();
        for &r in &receivers {
            self.values.insert((r, p), value.to_string());
        }
        Ok(receivers)
    }

    /// The value of `key` that reached `task`, if any.
    pub fn get(&self, task: usize, key: &str) -> Result<Option<&str>, PropertyError> {
        let p = self.check_read(task, key)?;
        Ok(self.values.get(&(task, p)).map(String::as_str))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Builder;

    /// A producer writing `x` (global) and `c` (collection); two collection instances of
    /// (writer, reader, reader); a lone reader of both.
    fn book() -> (PropertyBook, Expanded) {
        let mut b = Builder::new();
        let x = b.property("x", PropertyScope::Global);
        let c = b.property("c", PropertyScope::Collection);
        let writer = b.task("writer", "true");
        b.task_property(writer, x, Access::Write);
        b.task_property(writer, c, Access::ReadWrite);
        let reader = b.task("reader", "true");
        b.task_property(reader, x, Access::Read);
        b.task_property(reader, c, Access::Read);
        let lone = b.task("lone", "true");
        b.task_property(lone, x, Access::ReadWrite);
        b.task_property(lone, c, Access::Read);
        let coll = b.collection("unit", &[writer, reader, reader]);
        b.main_tasks(&[lone]);
        b.main_collections(&[coll, coll]);
        let (topo, exp) = b.build();
        (PropertyBook::new(&topo, &exp), exp)
    }

    fn task(exp: &Expanded, path: &str) -> usize {
        exp.tasks.iter().position(|t| t.path == path).unwrap()
    }

    #[test]
    fn global_write_reaches_every_other_reader() {
        let (mut book, exp) = book();
        let w0 = task(&exp, "main/unit_0/writer_0");
        let lone = task(&exp, "main/lone_0");
        let r = book.set(w0, "x", "v1").unwrap();
        let paths: Vec<&str> = r.iter().map(|&t| book.path(t)).collect();
        assert_eq!(
            paths,
            [
                "main/lone_0",
                "main/unit_0/reader_0",
                "main/unit_0/reader_1",
                "main/unit_1/reader_0",
                "main/unit_1/reader_1"
            ]
        );
        assert_eq!(book.get(lone, "x").unwrap(), Some("v1"));
        // The lone task reads and writes x; its own write does not reach itself.
        book.set(lone, "x", "v2").unwrap();
        assert_eq!(book.get(lone, "x").unwrap(), Some("v1"));
        let r1 = task(&exp, "main/unit_1/reader_1");
        assert_eq!(book.get(r1, "x").unwrap(), Some("v2"));
    }

    #[test]
    fn collection_scope_stays_in_the_collection_instance() {
        let (mut book, exp) = book();
        let w1 = task(&exp, "main/unit_1/writer_0");
        let r = book.set(w1, "c", "mine").unwrap();
        let paths: Vec<&str> = r.iter().map(|&t| book.path(t)).collect();
        assert_eq!(paths, ["main/unit_1/reader_0", "main/unit_1/reader_1"]);
        let r00 = task(&exp, "main/unit_0/reader_0");
        assert_eq!(book.get(r00, "c").unwrap(), None);
        let lone = task(&exp, "main/lone_0");
        assert_eq!(book.get(lone, "c").unwrap(), None);
    }

    #[test]
    fn access_is_enforced_with_clear_errors() {
        let (mut book, exp) = book();
        let r = task(&exp, "main/unit_0/reader_0");
        let e = book.set(r, "x", "v").unwrap_err();
        assert_eq!(e.code, "property-no-write-access");
        assert_eq!(
            e.message,
            "task `main/unit_0/reader_0` declares property `x` with access `read`, so it cannot write it"
        );
        let w = task(&exp, "main/unit_0/writer_0");
        let e = book.get(w, "x").unwrap_err();
        assert_eq!(e.code, "property-no-read-access");
        assert!(
            e.message
                .contains("with access `write`, so it cannot read it")
        );
        let e = book.set(w, "nope", "v").unwrap_err();
        assert_eq!(e.code, "property-undeclared");
        assert_eq!(
            e.message,
            "task `main/unit_0/writer_0` does not declare property `nope` (the topology has no such property); it declares c (readwrite), x (write)"
        );
        let e = book.get(99, "x").unwrap_err();
        assert_eq!(e.code, "property-bad-task");
    }

    #[test]
    fn values_are_limited_to_256_characters() {
        let (mut book, exp) = book();
        let w = task(&exp, "main/unit_0/writer_0");
        let ok: String = "é".repeat(256);
        book.set(w, "x", &ok).unwrap();
        let e = book.set(w, "x", &"a".repeat(257)).unwrap_err();
        assert_eq!(e.code, "property-too-long");
        assert_eq!(
            e.message,
            "the value for property `x` has 257 characters; at most 256 are allowed"
        );
        let lone = task(&exp, "main/lone_0");
        assert_eq!(book.get(lone, "x").unwrap(), Some(ok.as_str()));
    }
}
