//! The virtual memory layer: the workers' shared-memory segments, the global allocations
//! spread over them, and the transfers between global memory and a module call's local
//! buffers.
//!
//! # Pieces
//! - Worker side: a [`Segment`] is the worker's working memory (a shared-memory file, mapped);
//!   its [`Server`] serves it to workers on other hosts over TCP (framing: see [`server`]);
//!   [`Peers`] reaches other workers' segments (mapping their files on the same host, their
//!   servers otherwise); [`LocalBuffers`] are a call's buffers (guarded, see below);
//!   [`run_gets`] / [`run_puts`] run a [`MemoryTask`]'s copies.
//! - Agent side: the [`GlobalTable`] of segments and allocations (`alloc`, `free`, `locate`,
//!   statistics); [`read_global`] / [`write_global`] are the client API for inputs and
//!   results. The agent's memory plan (`pnet-agent`, `memory/plan.rs`) turns an evaluated
//!   call into a self-contained [`MemoryTask`] with the semantics below; it lives in the
//!   agent so that this crate, which workers link, does not depend on the engine.
//!
//! # Semantics of memory transfers
//! - Gets (`memory-get` and the get half of `memory-getput`) run before the module call, puts
//!   (`memory-put` and the put half of `memory-getput`) after it, each in the function's
//!   order.
//! - A transfer's global ranges and local ranges are two byte streams, concatenated in list
//!   order; their total sizes must be equal (else an error naming the transfer's
//!   `file:line:col`); bytes are copied piecewise in stream order, cut wherever either side
//!   (a range, or the part of an allocation in one segment) ends.
//! - A range of size 0 is an error unless `allow-empty-ranges="true"`.
//! - A local range must lie inside its buffer, a global range inside its allocation; an
//!   unknown buffer or handle is an error.
//! - A buffer's alignment (default 1) must be a power of two; the buffer's address is a
//!   multiple of it.
//! - `not-modified-in-module-call` is accepted and changes nothing: it is a hint (a put after
//!   the call copies the buffer out whether or not the module changed it).
//! - The module sees each buffer as `void*` (`const void*` when read-only) of exactly its
//!   size. Every buffer has its own mapping: `[guard page | slack | buffer | slack | guard
//!   page]`, the buffer as high as its alignment allows; the slack is filled with a canary,
//!   checked after the call ([`LocalBuffers::check_guards`]: a module that writes a little
//!   past its buffer is reported naming the buffer), and an access to a guard page faults
//!   (SIGSEGV; [`LocalBuffers::guard_ranges`] lets a signal handler name the cause).
//! - The values: a global range is a struct `[handle := [name := "<handle>"], offset :=
//!   <UL>, size := <UL>]` (the type `global_memory_range`; see [`range_value`]), a local range
//!   `[buffer := "<buffer name>", offset := <UL>, size := <UL>]`; fields are looked up by name;
//!   offsets and sizes may be any non-negative integer value.
//!
//! # Global allocations
//! `alloc(size)` spreads the bytes over all segments in id order: equal contiguous parts of
//! `ceil(size / segments)` bytes (the last one smaller), each placed first fit in its segment
//! at a multiple of 64 bytes. Handles are `"0x"` and 16 hex digits, never reused. A segment
//! that leaves (its worker is gone) can be removed by force: its allocations become broken,
//! and using them is an error naming the worker.

mod local;
mod peers;
mod segment;
pub mod server;
mod sys;
mod table;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod transfer;

pub use pnet_protocol::memory::{BufferSpec, Copy, MemoryTask, SegmentInfo};

pub use local::LocalBuffers;
pub use peers::Peers;
pub use segment::{
    Segment, remove_segments_in, remove_segments_of, remove_stale_segments, segment_dir,
    segment_name, segment_owner,
};
pub use server::Server;
pub use table::{GlobalTable, MemStats, PART_ALIGN, Piece};
pub use transfer::{
    RangePiece, range_value, read_global, read_pieces, resolve, run_gets, run_puts, write_global,
    write_pieces,
};

/// An error of the memory layer; the message is a full sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemError {
    pub message: String,
}

impl MemError {
    pub(crate) fn new(message: impl Into<String>) -> MemError {
        MemError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for MemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MemError {}

#[cfg(test)]
mod tests;
