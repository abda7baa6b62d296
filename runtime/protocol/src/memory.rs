//! Wire types of the memory layer (see `runtime/memory`, crate `pnet-memory`).
//!
//! Every worker started with working memory (`shm > 0` in the topology) owns one *segment*:
//! a shared-memory file of that many bytes, mapped by the worker and served over TCP by its
//! memory server. The agent keeps the table of segments and of the global allocations placed
//! in them; before sending a module call that has memory buffers and transfers, it resolves
//! the transfers' global ranges into [`Copy`]s between the call's local buffers and segment
//! bytes, so that the worker needs no table of its own: a [`MemoryTask`] is self-contained.

use serde::{Deserialize, Serialize};

/// One worker's segment: where it is and how to reach it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentInfo {
    /// The segment's id: the id of the worker owning it.
    pub id: u32,
    /// The host identity (the hostname, or the worker's `--host-id`): a worker on the same
    /// host maps the segment's file directly, others go through `server`.
    pub host: String,
    /// The shared-memory file (for example `/dev/shm/pnet-<run>-<worker>`).
    pub shm_path: String,
    /// `IP:PORT` of the worker's memory server.
    pub server: String,
    /// Size in bytes.
    pub size: u64,
}

/// A local buffer of a module call (`memory-buffer`), evaluated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferSpec {
    pub name: String,
    pub size: u64,
    /// A power of two, at least 1.
    pub alignment: u64,
    pub read_only: bool,
}

/// One contiguous copy between a local buffer and a segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Copy {
    /// Index into [`MemoryTask::buffers`].
    pub buffer: u32,
    pub buffer_offset: u64,
    /// A [`SegmentInfo::id`] listed in [`MemoryTask::segments`].
    pub segment: u32,
    pub segment_offset: u64,
    pub len: u64,
}

/// The memory side of one module call: the buffers to allocate, the segments the copies
/// touch, the copies into the buffers before the call (`memory-get`, `memory-getput`) and
/// out of them after it (`memory-put`, `memory-getput`), each list in transfer order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryTask {
    pub buffers: Vec<BufferSpec>,
    pub segments: Vec<SegmentInfo>,
    pub gets: Vec<Copy>,
    pub puts: Vec<Copy>,
}

impl MemoryTask {
    /// The total size of the buffers (what the call needs of the worker's working memory).
    pub fn buffer_bytes(&self) -> u64 {
        self.buffers
            .iter()
            .fold(0u64, |a, b| a.saturating_add(b.size))
    }
}
