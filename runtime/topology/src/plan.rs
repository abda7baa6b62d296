//! Placement: expanding a topology over the hosts into the workers to start.

use crate::{Diagnostic, Topology, WorkerClass};
use serde_json::json;
use std::collections::HashMap;
use std::fmt;

/// At most this many workers are planned (see [`Plan::omitted`] and [`check_worker_count`]).
pub const MAX_PLANNED_WORKERS: u64 = 1 << 20;

/// The workers to start, host by host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The distinct hosts, in the order given.
    pub hosts: Vec<String>,
    /// The workers, ordered by host, then description, then instance.
    pub workers: Vec<PlannedWorker>,
    /// Workers left out because the plan would exceed [`MAX_PLANNED_WORKERS`] (normally 0;
    /// run [`check_worker_count`] first to report it as an error).
    pub omitted: u64,
}

/// One worker process to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedWorker {
    /// Unique in the plan: `<class>-<host>-<n>`, `n` counting the workers of that class on
    /// that host over all descriptions with that class name (`compute+CPU:2 compute+GPU:1`
    /// gives `compute-h-0`, `compute-h-1` and `compute-h-2`).
    pub name: String,
    /// The class name (first capability).
    pub class: String,
    /// Where it runs.
    pub host: String,
    /// Its instance index among the workers of its description on this host (0-based).
    pub index_on_host: u32,
    /// All its capabilities (including the name and the implicit `GPI`).
    pub capabilities: Vec<String>,
    /// The socket to bind to.
    pub socket: Option<u32>,
    /// Bytes of working memory.
    pub shm: u64,
    /// `base_port + index_on_host`, if the description has a base port.
    pub port: Option<u16>,
}

/// The topology used when the user gives none: one class `worker` with `cores` workers on
/// each host (one worker per core; `cores` 0 counts as 1).
pub fn default_topology(cores: u32) -> Topology {
    Topology {
        classes: vec![WorkerClass {
            per_node: cores.max(1),
            ..WorkerClass::new("worker")
        }],
    }
}

/// [`default_topology`] with `shm` bytes of working memory per worker (and the capability
/// that memory brings); `shm` 0: none.
pub fn default_topology_with_memory(cores: u32, shm: u64) -> Topology {
    let mut topo = default_topology(cores);
    if shm > 0 {
        for c in &mut topo.classes {
            c.shm = shm;
            if !c.capabilities.iter().any(|k| k == crate::GPI_CAPABILITY) {
                c.capabilities.push(crate::GPI_CAPABILITY.to_string());
            }
        }
    }
    topo
}

/// Expands `topology` over `hosts`: every description gets `per_node` workers on each of the
/// first `max_nodes` hosts (0 = all hosts). Repeated hosts count once. At most
/// [`MAX_PLANNED_WORKERS`] workers are planned; the rest are counted in [`Plan::omitted`].
pub fn plan(topology: &Topology, hosts: &[String]) -> Plan {
    plan_with_limit(topology, hosts, MAX_PLANNED_WORKERS)
}

/// [`plan`] with another limit than [`MAX_PLANNED_WORKERS`].
pub fn plan_with_limit(topology: &Topology, hosts: &[String], limit: u64) -> Plan {
    let mut distinct: Vec<String> = Vec::new();
    for host in hosts {
        if !distinct.contains(host) {
            distinct.push(host.clone());
        }
    }
    let mut workers = Vec::new();
    let mut omitted = 0u64;
    for (h, host) in distinct.iter().enumerate() {
        let mut counters: HashMap<&str, u32> = HashMap::new();
        for class in &topology.classes {
            if class.max_nodes != 0 && h as u64 >= u64::from(class.max_nodes) {
                continue;
            }
            let room = limit.saturating_sub(workers.len() as u64);
            let count = u64::from(class.per_node).min(room) as u32;
            omitted += u64::from(class.per_node) - u64::from(count);
            let counter = counters.entry(class.name.as_str()).or_insert(0);
            for i in 0..count {
                workers.push(PlannedWorker {
                    name: format!("{}-{host}-{counter}", class.name),
                    class: class.name.clone(),
                    host: host.clone(),
                    index_on_host: i,
                    capabilities: class.capabilities.clone(),
                    socket: class.socket,
                    shm: class.shm,
                    port: class
                        .base_port
                        .and_then(|p| u16::try_from(u32::from(p) + i).ok()),
                });
                *counter = counter.saturating_add(1);
            }
        }
    }
    Plan {
        hosts: distinct,
        workers,
        omitted,
    }
}

/// The number of workers `topology` starts on `host_count` distinct hosts.
pub fn worker_count(topology: &Topology, host_count: usize) -> u64 {
    topology
        .classes
        .iter()
        .map(|c| {
            let hosts = match c.max_nodes {
                0 => host_count as u64,
                n => u64::from(n).min(host_count as u64),
            };
            u64::from(c.per_node) * hosts
        })
        .sum()
}

/// An error `topology-too-many-workers` (at the largest description) if the topology would
/// start more than [`MAX_PLANNED_WORKERS`] workers on `host_count` hosts.
pub fn check_worker_count(topology: &Topology, host_count: usize) -> Vec<Diagnostic> {
    let total = worker_count(topology, host_count);
    if total <= MAX_PLANNED_WORKERS {
        return Vec::new();
    }
    let biggest = topology.classes.iter().max_by_key(|c| c.per_node);
    let span = biggest.map_or(0..0, |c| c.span.clone());
    vec![
        Diagnostic::error_at(
            "topology-too-many-workers",
            span,
            format!(
                "the topology starts {total} workers on {host_count} hosts, more than \
                 {MAX_PLANNED_WORKERS}"
            ),
        )
        .with_note("`perNode` is the number of workers on EACH host"),
    ]
}

impl Plan {
    /// `(host, workers, total shm bytes)` for each host, in host order.
    pub fn host_totals(&self) -> Vec<(&str, u64, u64)> {
        let mut totals: Vec<(&str, u64, u64)> =
            self.hosts.iter().map(|h| (h.as_str(), 0, 0)).collect();
        for w in &self.workers {
            if let Some(t) = totals.iter_mut().find(|t| t.0 == w.host) {
                t.1 += 1;
                t.2 = t.2.saturating_add(w.shm);
            }
        }
        totals
    }

    /// The plan as JSON: `{"hosts": [...], "workers": [{"name", "class", "host",
    /// "index_on_host", "capabilities", "socket", "shm", "port"}], "totals": [{"host",
    /// "workers", "shm"}], "omitted": n}` (absent socket and port are `null`).
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "hosts": self.hosts,
            "workers": self.workers.iter().map(|w| json!({
                "name": w.name,
                "class": w.class,
                "host": w.host,
                "index_on_host": w.index_on_host,
                "capabilities": w.capabilities,
                "socket": w.socket,
                "shm": w.shm,
                "port": w.port,
            })).collect::<Vec<_>>(),
            "totals": self.host_totals().iter().map(|(host, workers, shm)| json!({
                "host": host,
                "workers": workers,
                "shm": shm,
            })).collect::<Vec<_>>(),
            "omitted": self.omitted,
        })
    }
}

/// Writes rows as columns separated by two spaces (the last column unpadded).
fn table(f: &mut fmt::Formatter<'_>, indent: &str, rows: &[Vec<String>]) -> fmt::Result {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let mut line = indent.to_string();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 < row.len() {
                line.push_str(&format!("{cell:<width$}  ", width = widths[c]));
            } else {
                line.push_str(cell);
            }
        }
        writeln!(f, "{}", line.trim_end())?;
    }
    Ok(())
}

fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

impl fmt::Display for Plan {
    /// The `--dry-run` text: a summary line, an aligned table with one line per worker, and
    /// per-host totals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "plan: {} on {}",
            plural(self.workers.len() as u64, "worker"),
            plural(self.hosts.len() as u64, "host")
        )?;
        let opt = |v: Option<String>| v.unwrap_or_else(|| "-".to_string());
        let mut rows = vec![
            [
                "WORKER",
                "CLASS",
                "HOST",
                "INDEX",
                "SOCKET",
                "SHM",
                "PORT",
                "CAPABILITIES",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for w in &self.workers {
            rows.push(vec![
                w.name.clone(),
                w.class.clone(),
                w.host.clone(),
                w.index_on_host.to_string(),
                opt(w.socket.map(|s| s.to_string())),
                w.shm.to_string(),
                opt(w.port.map(|p| p.to_string())),
                w.capabilities.join("+"),
            ]);
        }
        table(f, "", &rows)?;
        if self.omitted > 0 {
            writeln!(
                f,
                "... and {} more, not planned (too many workers)",
                self.omitted
            )?;
        }
        writeln!(f, "per host:")?;
        let totals: Vec<Vec<String>> = self
            .host_totals()
            .into_iter()
            .map(|(host, n, shm)| {
                vec![
                    host.to_string(),
                    plural(n, "worker"),
                    format!("{shm} bytes of shm"),
                ]
            })
            .collect();
        table(f, "  ", &totals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_topology;
    use expect_test::expect;

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    /// The text from `per host:` on.
    fn totals_part(p: &Plan) -> String {
        let text = p.to_string();
        text.find("per host:")
            .map_or(String::new(), |i| text[i..].to_string())
    }

    #[test]
    fn one_host() {
        let (t, d) = parse_topology("compute+CPU#0:2,1024/9000 compute+GPU:1 init:1x1");
        assert!(d.is_empty());
        let p = plan(&t, &hosts(&["vm"]));
        expect![[r#"
            plan: 4 workers on 1 host
            WORKER        CLASS    HOST  INDEX  SOCKET  SHM   PORT  CAPABILITIES
            compute-vm-0  compute  vm    0      0       1024  9000  compute+CPU+GPI
            compute-vm-1  compute  vm    1      0       1024  9001  compute+CPU+GPI
            compute-vm-2  compute  vm    0      -       0     -     compute+GPU
            init-vm-0     init     vm    0      -       0     -     init
            per host:
              vm  4 workers  2048 bytes of shm
        "#]]
        .assert_eq(&p.to_string());
    }

    #[test]
    fn three_hosts_with_max_nodes_and_duplicate_hosts() {
        let (t, _) = parse_topology("work:2 init:1x1 io:1x2,10");
        let p = plan(&t, &hosts(&["a", "b", "a", "c"]));
        assert_eq!(p.hosts, ["a", "b", "c"]);
        let names: Vec<&str> = p.workers.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "work-a-0", "work-a-1", "init-a-0", "io-a-0", "work-b-0", "work-b-1", "io-b-0",
                "work-c-0", "work-c-1"
            ]
        );
        assert_eq!(p.workers.len() as u64, worker_count(&t, 3));
        assert_eq!(p.host_totals(), [("a", 4, 10), ("b", 3, 10), ("c", 2, 0)]);
        assert_eq!(p.omitted, 0);
        let json = p.to_json();
        assert_eq!(json["hosts"], serde_json::json!(["a", "b", "c"]));
        assert_eq!(
            json["workers"][3]["capabilities"],
            serde_json::json!(["io", "GPI"])
        );
        assert_eq!(json["workers"][3]["port"], serde_json::Value::Null);
        assert_eq!(json["workers"][3]["shm"], 10);
        assert_eq!(json["totals"][0]["workers"], 4);
        expect![[r#"
            per host:
              a  4 workers  10 bytes of shm
              b  3 workers  10 bytes of shm
              c  2 workers  0 bytes of shm
        "#]]
        .assert_eq(&totals_part(&p));
    }

    #[test]
    fn default_topology_is_one_worker_per_core() {
        let t = default_topology(4);
        assert_eq!(t.to_string(), "worker:4");
        assert_eq!(default_topology(0).to_string(), "worker");
        let m = default_topology_with_memory(2, 4096);
        assert_eq!(m.classes[0].shm, 4096);
        assert!(
            m.classes[0]
                .capabilities
                .iter()
                .any(|k| k == crate::GPI_CAPABILITY)
        );
        assert_eq!(default_topology_with_memory(2, 0), default_topology(2));
        let p = plan(&t, &hosts(&["h1", "h2"]));
        assert_eq!(p.workers.len(), 8);
        assert!(
            p.workers
                .iter()
                .all(|w| w.class == "worker" && w.capabilities == ["worker"])
        );
        assert!(plan(&t, &[]).workers.is_empty());
    }

    #[test]
    fn huge_topologies_are_capped_and_diagnosed() {
        let (t, _) = parse_topology("small:1 huge:4294967295");
        assert_eq!(worker_count(&t, 2), 2 + 2 * 4294967295);
        let d = check_worker_count(&t, 2);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, "topology-too-many-workers");
        assert_eq!(d[0].range(), 8..23);
        let p = plan_with_limit(&t, &hosts(&["a", "b"]), 5);
        assert_eq!(p.workers.len(), 5);
        assert_eq!(p.workers.len() as u64 + p.omitted, worker_count(&t, 2));
        assert!(
            p.to_string()
                .contains("... and 8589934587 more, not planned (too many workers)\n")
        );
        assert!(check_worker_count(&t, 0).is_empty());
    }

    #[test]
    fn ports_count_up_per_description_on_each_host() {
        let (t, _) = parse_topology("a:3/65533");
        let p = plan(&t, &hosts(&["x", "y"]));
        let ports: Vec<Option<u16>> = p.workers.iter().map(|w| w.port).collect();
        assert_eq!(ports, [Some(65533), Some(65534), Some(65535)].repeat(2));
    }
}
