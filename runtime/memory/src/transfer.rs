//! The transfers of a planned [`MemoryTask`] (run by workers) and the client API to global
//! memory (resolving a range into pieces, reading and writing them). The plan itself (an
//! evaluated call to a [`MemoryTask`]) is the agent's (`pnet-agent`, `memory/plan.rs`).

use std::sync::Arc;

use pnet_stdlib::Value;

use crate::{Copy, GlobalTable, LocalBuffers, MemError, MemoryTask, Peers, SegmentInfo};

/// The `global_memory_range` token of a range:
/// `[handle := [name := "<handle>"], offset := <offset>UL, size := <size>UL]`.
pub fn range_value(handle: &str, offset: u64, size: u64) -> Value {
    Value::Struct(vec![
        (
            Arc::from("handle"),
            Value::Struct(vec![(Arc::from("name"), Value::string(handle))]),
        ),
        (Arc::from("offset"), Value::ULong(offset)),
        (Arc::from("size"), Value::ULong(size)),
    ])
}

fn segment_of(task: &MemoryTask, id: u32) -> Result<&SegmentInfo, MemError> {
    task.segments.iter().find(|s| s.id == id).ok_or_else(|| {
        MemError::new(format!(
            "The memory task copies from or to segment {id}, which it does not list."
        ))
    })
}

/// The buffer bytes of a copy, checked.
fn buffer_range(
    c: &Copy,
    bufs: &LocalBuffers,
) -> Result<(usize, std::ops::Range<usize>), MemError> {
    let b = c.buffer as usize;
    let bad = || {
        MemError::new(format!(
            "The memory task copies {} bytes at offset {} of buffer {}, which {}.",
            c.len,
            c.buffer_offset,
            c.buffer,
            if b < bufs.len() {
                format!("has only {} bytes", bufs.size(b))
            } else {
                format!("does not exist ({} buffers)", bufs.len())
            }
        ))
    };
    if b >= bufs.len() {
        return Err(bad());
    }
    let end = c
        .buffer_offset
        .checked_add(c.len)
        .filter(|&e| e <= bufs.size(b))
        .ok_or_else(bad)?;
    // Both fit the buffer, hence usize.
    Ok((b, c.buffer_offset as usize..end as usize))
}

/// Runs a task's gets into the buffers; returns the bytes copied.
pub fn run_gets(
    task: &MemoryTask,
    bufs: &mut LocalBuffers,
    peers: &mut Peers,
) -> Result<u64, MemError> {
    let mut n = 0u64;
    for c in &task.gets {
        let seg = segment_of(task, c.segment)?;
        let (b, r) = buffer_range(c, bufs)?;
        peers.read(seg, c.segment_offset, &mut bufs.bytes_mut(b)[r])?;
        n += c.len;
    }
    Ok(n)
}

/// Runs a task's puts out of the buffers; returns the bytes copied.
pub fn run_puts(
    task: &MemoryTask,
    bufs: &LocalBuffers,
    peers: &mut Peers,
) -> Result<u64, MemError> {
    let mut n = 0u64;
    for c in &task.puts {
        let seg = segment_of(task, c.segment)?;
        let (b, r) = buffer_range(c, bufs)?;
        peers.write(seg, c.segment_offset, &bufs.bytes(b)[r])?;
        n += c.len;
    }
    Ok(n)
}

/// One contiguous part of a global range: the segment and the bytes in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangePiece {
    pub segment: SegmentInfo,
    pub offset: u64,
    pub len: u64,
}

/// Resolves `len` bytes at `offset` of an allocation into pieces (with their segments), so
/// that the copies can run without the table (the agent resolves under its lock, then copies
/// without holding it).
pub fn resolve(
    table: &GlobalTable,
    handle: &str,
    offset: u64,
    len: u64,
) -> Result<Vec<RangePiece>, MemError> {
    table
        .locate(handle, offset, len)?
        .into_iter()
        .map(|p| {
            let segment = table.segment(p.segment).cloned().ok_or_else(|| {
                MemError::new(format!(
                    "The allocation {handle} has a part in segment {}, which is gone.",
                    p.segment
                ))
            })?;
            Ok(RangePiece {
                segment,
                offset: p.offset,
                len: p.len,
            })
        })
        .collect()
}

fn too_large(n: u64) -> MemError {
    MemError::new(format!(
        "{n} bytes do not fit in this machine's address space."
    ))
}

/// Reads the pieces, in order, into `out` (whose length is their total).
pub fn read_pieces(
    peers: &mut Peers,
    pieces: &[RangePiece],
    out: &mut [u8],
) -> Result<(), MemError> {
    let mut at = 0usize;
    for p in pieces {
        let len = usize::try_from(p.len).map_err(|_| too_large(p.len))?;
        let Some(end) = at.checked_add(len).filter(|&e| e <= out.len()) else {
            return Err(MemError::new(
                "The pieces of the range are larger than the buffer.",
            ));
        };
        peers.read(&p.segment, p.offset, &mut out[at..end])?;
        at = end;
    }
    Ok(())
}

/// Writes `data` over the pieces, in order.
pub fn write_pieces(peers: &mut Peers, pieces: &[RangePiece], data: &[u8]) -> Result<(), MemError> {
    let mut at = 0usize;
    for p in pieces {
        let len = usize::try_from(p.len).map_err(|_| too_large(p.len))?;
        let Some(end) = at.checked_add(len).filter(|&e| e <= data.len()) else {
            return Err(MemError::new(
                "The pieces of the range are larger than the data.",
            ));
        };
        peers.write(&p.segment, p.offset, &data[at..end])?;
        at = end;
    }
    Ok(())
}

/// Reads a global range from outside a workflow (client API).
pub fn read_global(
    table: &GlobalTable,
    peers: &mut Peers,
    handle: &str,
    offset: u64,
    out: &mut [u8],
) -> Result<(), MemError> {
    read_pieces(
        peers,
        &resolve(table, handle, offset, out.len() as u64)?,
        out,
    )
}

/// Writes a global range from outside a workflow (client API).
pub fn write_global(
    table: &GlobalTable,
    peers: &mut Peers,
    handle: &str,
    offset: u64,
    data: &[u8],
) -> Result<(), MemError> {
    write_pieces(
        peers,
        &resolve(table, handle, offset, data.len() as u64)?,
        data,
    )
}
