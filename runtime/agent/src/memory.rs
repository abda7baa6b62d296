//! The agent's side of the memory layer ([`pnet_memory`]).
//!
//! - One [`pnet_memory::GlobalTable`] per agent ([`SharedTable`]): the segments of the
//!   workers with working memory (each sends [`pnet_protocol::WorkerMsg::Memory`] right after
//!   its Welcome) and the global allocations in them. Every job of a persistent runtime uses
//!   the same table (a handle allocated by a client is valid in every job); a lost or removed
//!   worker's segment is removed (forced: the allocations that had parts in it break, and
//!   later uses of their handles are errors saying so).
//! - When a task whose function has memory buffers or transfers is dispatched, the core
//!   turns its evaluated memory ([`pnet_engine::TaskMemory`]) into a self-contained
//!   [`pnet_protocol::memory::MemoryTask`] with [`plan()`] (`memory/plan.rs`: the plan lives
//!   in the agent, so that `pnet_memory`, which workers link, does not depend on the engine);
//!   such functions get the implicit requirement [`GPI_CAPABILITY`] (the capability of
//!   every topology worker with working memory), so they only go to workers that can run
//!   them.
//! - The client API (allocate, write, read, free from outside a workflow; `gspc alloc`,
//!   `gspc-run --alloc`) reads and writes segments through a [`pnet_memory::Peers`] of the
//!   agent's own (its host is the agent's hostname, it has no segment), owned by the
//!   [`MemIo`] thread, so that the agent's event loop never blocks on a transfer. The table
//!   is locked only to resolve a range into pieces ([`resolve`]), never during the I/O.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use pnet_bundle::{Body, Bundle};
use pnet_memory::{GlobalTable, MemStats, Peers};
use pnet_protocol::Secret;

use crate::control::{HostMemory, MemoryStatus};

mod plan;

pub use plan::plan;

/// The capability of workers with working memory (topology classes with shm > 0).
pub const GPI_CAPABILITY: &str = pnet_topology::GPI_CAPABILITY;

/// The working memory of each worker of the default topology when the net uses memory
/// (64 MiB).
pub const DEFAULT_WORKER_SHM: u64 = 64 << 20;

/// The largest chunk a client sends or receives in one control message.
pub const CLIENT_CHUNK: usize = 16 << 20;

/// The agent's table of segments and allocations, shared by the hub and every job's core.
#[derive(Clone, Default)]
pub struct SharedTable(Arc<Mutex<GlobalTable>>);

impl std::fmt::Debug for SharedTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never blocks (the table may be locked by the caller).
        match self.0.try_lock() {
            Ok(t) => {
                let s = t.stats();
                f.debug_struct("SharedTable")
                    .field("segments", &s.segments)
                    .field("allocations", &s.allocations)
                    .finish_non_exhaustive()
            }
            Err(_) => f.write_str("SharedTable(locked)"),
        }
    }
}

impl SharedTable {
    pub fn new() -> SharedTable {
        SharedTable::default()
    }

    /// The table (a poisoned lock is taken over: the table has no invariant a panic
    /// elsewhere could break half-way that matters more than going on).
    pub fn lock(&self) -> MutexGuard<'_, GlobalTable> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether a function has memory buffers or transfers (and so needs a worker with working
/// memory).
pub fn function_uses_memory(f: &pnet_bundle::Function) -> bool {
    matches!(f.body, Body::Module(_) | Body::Modules { .. })
        && (!f.memory_buffers.is_empty() || !f.memory_transfers.is_empty())
}

/// Whether some module call of the bundle has memory buffers or transfers.
pub fn uses_memory(bundle: &Bundle) -> bool {
    bundle.functions.iter().any(function_uses_memory)
}

/// The global memory handles named in a value: every `global_memory_range`-shaped struct
/// (fields `handle`, `offset` and `size`, the handle a string or a struct with a string
/// field `name`) inside it, at any depth.
pub fn allocation_handles(v: &pnet_stdlib::Value, out: &mut std::collections::BTreeSet<String>) {
    use pnet_stdlib::Value;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Struct(fields) => {
                let get = |n: &str| fields.iter().find(|(k, _)| &**k == n).map(|(_, x)| x);
                if get("offset").is_some() && get("size").is_some() {
                    match get("handle") {
                        Some(Value::String(h)) => {
                            out.insert(h.to_string());
                        }
                        Some(Value::Struct(h)) => {
                            if let Some((_, Value::String(n))) =
                                h.iter().find(|(k, _)| &**k == "name")
                            {
                                out.insert(n.to_string());
                            }
                        }
                        _ => {}
                    }
                }
                stack.extend(fields.iter().map(|(_, x)| x));
            }
            Value::List(xs) => stack.extend(xs.iter()),
            Value::Set(xs) => stack.extend(xs.iter()),
            Value::Map(m) => stack.extend(m.iter().flat_map(|(k, x)| [k, x])),
            Value::Shared(x) => stack.push(&x.value),
            _ => {}
        }
    }
}

/// A job for the I/O thread.
pub type IoJob = Box<dyn FnOnce(&mut Peers) + Send>;

/// The thread that owns the agent's [`Peers`] and runs reads and writes of global memory
/// for clients, one after the other.
pub struct MemIo {
    tx: Option<Sender<IoJob>>,
    thread: Option<JoinHandle<()>>,
}

#[cfg(test)]
impl MemIo {
    /// Waits for the thread to end (after the queue is closed).
    fn join(mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl std::fmt::Debug for MemIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemIo").finish_non_exhaustive()
    }
}

impl MemIo {
    /// Starts the thread; `own_host` is the agent's host identity (its hostname).
    pub fn start(own_host: String, secret: Secret) -> std::io::Result<MemIo> {
        let (tx, rx): (Sender<IoJob>, Receiver<IoJob>) = channel();
        let thread = std::thread::Builder::new()
            .name("pnet-agent-memory".into())
            .spawn(move || {
                let mut peers = Peers::new(own_host, None, secret);
                while let Ok(job) = rx.recv() {
                    job(&mut peers);
                }
            })?;
        Ok(MemIo {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Queues a job; false if the thread is gone.
    pub fn submit(&self, job: IoJob) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(job).is_ok())
    }
}

impl Drop for MemIo {
    /// Closes the queue; the thread ends after the transfer it runs (it is not waited for: a
    /// transfer to a worker that hangs must not hold up the agent's end).
    fn drop(&mut self) {
        drop(self.tx.take());
        drop(self.thread.take());
    }
}

/// The memory statistics as the status shows them: totals, and per host.
pub fn memory_status(s: &MemStats) -> MemoryStatus {
    let mut hosts: Vec<HostMemory> = Vec::new();
    for (seg, allocated) in &s.per_segment {
        let h = match hosts.iter_mut().position(|h| h.host == seg.host) {
            Some(k) => &mut hosts[k],
            None => {
                hosts.push(HostMemory {
                    host: seg.host.clone(),
                    segments: 0,
                    capacity: 0,
                    allocated: 0,
                });
                let k = hosts.len() - 1;
                &mut hosts[k]
            }
        };
        h.segments += 1;
        h.capacity = h.capacity.saturating_add(seg.size);
        h.allocated = h.allocated.saturating_add(*allocated);
    }
    hosts.sort_by(|a, b| a.host.cmp(&b.host));
    MemoryStatus {
        segments: s.segments as u64,
        capacity: s.capacity,
        allocated: s.allocated,
        allocations: s.allocations as u64,
        bytes_got: s.bytes_got,
        bytes_put: s.bytes_put,
        hosts,
    }
}

/// A size in bytes: a number, optionally with a binary unit (`K`/`KiB`, `M`/`MiB`,
/// `G`/`GiB`, `T`/`TiB`; case-insensitive), e.g. `4096`, `64M`, `1GiB`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    if num.is_empty() {
        return Err(format!(
            "'{text}' is not a size (a number of bytes, like 4096, 64M or 1GiB)"
        ));
    }
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{text}' is too large for a size"))?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => {
            return Err(format!(
                "'{text}': unknown unit '{unit}' (use K, M, G or T, or KiB, MiB, GiB, TiB)"
            ));
        }
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("'{text}' is too large for a size"))
}

/// Bytes with a binary unit, for people: `64 MiB`, `1.5 KiB`, `100 B`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pnet_memory::SegmentInfo;

    fn seg(id: u32, host: &str, size: u64) -> SegmentInfo {
        SegmentInfo {
            id,
            host: host.into(),
            shm_path: format!("/dev/shm/x-{id}"),
            server: "127.0.0.1:1".into(),
            size,
        }
    }

    #[test]
    fn status_sums_per_host() {
        let s = MemStats {
            segments: 3,
            capacity: 300,
            allocated: 60,
            allocations: 2,
            bytes_got: 7,
            bytes_put: 9,
            per_segment: vec![
                (seg(0, "b", 100), 10),
                (seg(1, "a", 100), 20),
                (seg(2, "b", 100), 30),
            ],
        };
        let m = memory_status(&s);
        assert_eq!((m.segments, m.capacity, m.allocated), (3, 300, 60));
        assert_eq!((m.allocations, m.bytes_got, m.bytes_put), (2, 7, 9));
        let hosts: Vec<(&str, u64, u64, u64)> = m
            .hosts
            .iter()
            .map(|h| (h.host.as_str(), h.segments, h.capacity, h.allocated))
            .collect();
        assert_eq!(hosts, vec![("a", 1, 100, 20), ("b", 2, 200, 40)]);
    }

    #[test]
    fn human_bytes_picks_a_unit() {
        assert_eq!(human_bytes(100), "100 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(DEFAULT_WORKER_SHM), "64 MiB");
        assert_eq!(human_bytes(3 << 30), "3 GiB");
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("64M"), Ok(DEFAULT_WORKER_SHM));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size(" 0 "), Ok(0));
        assert!(parse_size("").unwrap_err().contains("is not a size"));
        assert!(parse_size("x").unwrap_err().contains("is not a size"));
        assert!(
            parse_size("3 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(
            parse_size("99999999999999999999")
                .unwrap_err()
                .contains("too large")
        );
        assert!(parse_size("20000000T").unwrap_err().contains("too large"));
    }

    #[test]
    fn the_io_thread_runs_jobs_in_order() {
        let io = MemIo::start("h".into(), Secret::random().unwrap()).unwrap();
        let (tx, rx) = channel();
        for i in 0..3 {
            let tx = tx.clone();
            assert!(io.submit(Box::new(move |_| tx.send(i).unwrap())));
        }
        io.join();
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec![0, 1, 2]);
        // The table's Debug does not block while it is locked.
        let t = SharedTable::new();
        let g = t.lock();
        assert_eq!(format!("{t:?}"), "SharedTable(locked)");
        drop(g);
        assert!(format!("{t:?}").contains("segments: 0"));
    }

    #[test]
    fn allocation_handles_are_found_in_ranges_at_any_depth() {
        use pnet_stdlib::Value;
        let range = |handle: Value| {
            Value::Struct(vec![
                ("handle".into(), handle),
                ("offset".into(), Value::ULong(0)),
                ("size".into(), Value::ULong(8)),
            ])
        };
        let named = |n: &str| Value::Struct(vec![("name".into(), Value::String(n.into()))]);
        let v = Value::List(vec![
            range(named("0x01")),
            Value::Struct(vec![("inner".into(), range(Value::String("0x02".into())))]),
            // Not a range: no offset and size.
            Value::Struct(vec![("handle".into(), named("0x03"))]),
            Value::Long(7),
        ]);
        let mut got = std::collections::BTreeSet::new();
        allocation_handles(&v, &mut got);
        assert_eq!(got.into_iter().collect::<Vec<_>>(), ["0x01", "0x02"]);
        let mut none = std::collections::BTreeSet::new();
        allocation_handles(&Value::Long(1), &mut none);
        assert!(none.is_empty());
    }
}
