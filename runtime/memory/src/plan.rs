//! From an evaluated module call (engine [`pnet_vm::TaskMemory`]) to a self-contained
//! [`MemoryTask`], and the transfers of a task.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use pnet_bundle::{Bundle, FunctionId, TransferKind};
use pnet_stdlib::Value;

use crate::{
    BufferSpec, Copy, GlobalTable, LocalBuffers, MemError, MemoryTask, Peers, Piece, SegmentInfo,
};

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

/// The XML element of a transfer kind.
fn kind_name(k: TransferKind) -> &'static str {
    match k {
        TransferKind::Get => "memory-get",
        TransferKind::Put => "memory-put",
        TransferKind::GetPut => "memory-getput",
    }
}

/// A value for a message: its literal, shortened.
fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        let mut t: String = s.chars().take(77).collect();
        t.push_str("...");
        t
    } else {
        s
    }
}

fn field<'a>(fields: &'a [(Arc<str>, Value)], name: &str) -> Option<&'a Value> {
    fields.iter().find(|(n, _)| &**n == name).map(|(_, v)| v)
}

fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::ULong(u) => Some(*u),
        Value::UInt(u) => Some(u64::from(*u)),
        Value::Long(i) => u64::try_from(*i).ok(),
        Value::Int(i) => u64::try_from(*i).ok(),
        _ => None,
    }
}

struct Range {
    /// The handle (global) or buffer name (local).
    name: String,
    offset: u64,
    size: u64,
}

/// Reads a list of range structs; `key` is `handle` (global) or `buffer` (local).
fn ranges(v: &Value, side: &str, what: &str) -> Result<Vec<Range>, MemError> {
    let key = if side == "global" { "handle" } else { "buffer" };
    let shape = if side == "global" {
        "[handle := [name := \"...\"], offset := ..UL, size := ..UL]"
    } else {
        "[buffer := \"...\", offset := ..UL, size := ..UL]"
    };
    let Value::List(items) = v else {
        return Err(MemError::new(format!(
            "{what}: the {side} ranges must be a list of {shape}, not {}.",
            show(v)
        )));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let bad = |why: &str| {
            MemError::new(format!(
                "{what}: {side} range {} ({}) {why}; a range is {shape}.",
                i + 1,
                show(item)
            ))
        };
        let Value::Struct(fields) = item else {
            return Err(bad("is not a struct"));
        };
        let name = match field(fields, key) {
            Some(Value::String(s)) => s.to_string(),
            Some(Value::Struct(h)) if side == "global" => match field(h, "name") {
                Some(Value::String(s)) => s.to_string(),
                _ => return Err(bad("has a handle without a string field `name`")),
            },
            Some(_) => return Err(bad(&format!("has a field `{key}` of the wrong type"))),
            None => return Err(bad(&format!("has no field `{key}`"))),
        };
        let num = |f: &str| match field(fields, f) {
            Some(x) => as_u64(x)
                .ok_or_else(|| bad(&format!("has a field `{f}` that is not an unsigned long"))),
            None => Err(bad(&format!("has no field `{f}`"))),
        };
        out.push(Range {
            name,
            offset: num("offset")?,
            size: num("size")?,
        });
    }
    Ok(out)
}

/// Appends a copy, merging it into the previous one when both sides continue it.
fn push_copy(list: &mut Vec<Copy>, c: Copy) {
    if c.len == 0 {
        return;
    }
    if let Some(last) = list.last_mut()
        && last.buffer == c.buffer
        && last.segment == c.segment
        && last.buffer_offset.checked_add(last.len) == Some(c.buffer_offset)
        && last.segment_offset.checked_add(last.len) == Some(c.segment_offset)
    {
        last.len += c.len;
        return;
    }
    list.push(c);
}

/// Converts an evaluated call (engine `TaskMemory`) into a self-contained [`MemoryTask`]
/// with every check of the semantics (see the crate documentation); errors name the transfer
/// or buffer by `file:line:col`.
pub fn plan(
    bundle: &Bundle,
    function: FunctionId,
    mem: &pnet_vm::TaskMemory,
    table: &GlobalTable,
) -> Result<MemoryTask, MemError> {
    let f = bundle.functions.get(function.index()).ok_or_else(|| {
        MemError::new(format!(
            "The bundle has no function {} (it has {}).",
            function.0,
            bundle.functions.len()
        ))
    })?;
    let floc = bundle.location(f.span);
    let fname = f.name.as_deref().unwrap_or("<anonymous>");
    if mem.buffers.len() != f.memory_buffers.len()
        || mem.transfers.len() != f.memory_transfers.len()
    {
        return Err(MemError::new(format!(
            "{floc}: function `{fname}` has {} memory buffer(s) and {} transfer(s), but the call evaluated {} and {}.",
            f.memory_buffers.len(),
            f.memory_transfers.len(),
            mem.buffers.len(),
            mem.transfers.len()
        )));
    }
    let mut task = MemoryTask::default();
    let mut index: HashMap<&str, u32> = HashMap::new();
    for (i, (b, &(size, alignment))) in f.memory_buffers.iter().zip(&mem.buffers).enumerate() {
        if alignment == 0 || !alignment.is_power_of_two() {
            return Err(MemError::new(format!(
                "{}: the alignment {alignment} of memory buffer `{}` is not a power of two.",
                bundle.location(b.span),
                b.name
            )));
        }
        index.entry(b.name.as_str()).or_insert(i as u32);
        task.buffers.push(BufferSpec {
            name: b.name.clone(),
            size,
            alignment,
            read_only: b.read_only,
        });
    }
    let mut used = BTreeSet::new();
    for (t, (gv, lv)) in f.memory_transfers.iter().zip(&mem.transfers) {
        let what = format!("{}: {}", bundle.location(t.span), kind_name(t.kind));
        let globals = ranges(gv, "global", &what)?;
        let locals = ranges(lv, "local", &what)?;
        let empty = |side: &str, i: usize| {
            MemError::new(format!(
                "{what}: {side} range {} is empty (size 0), and empty ranges are not allowed (allow-empty-ranges=\"true\" would allow them).",
                i + 1
            ))
        };
        // The local stream: (buffer, offset, len) pieces.
        let mut lstream = Vec::with_capacity(locals.len());
        let mut ltotal = 0u64;
        for (i, r) in locals.iter().enumerate() {
            if r.size == 0 && !t.allow_empty_ranges {
                return Err(empty("local", i));
            }
            let Some(&b) = index.get(r.name.as_str()) else {
                let names: Vec<&str> = f.memory_buffers.iter().map(|b| b.name.as_str()).collect();
                return Err(MemError::new(format!(
                    "{what}: local range {} names the memory buffer `{}`, which does not exist (the buffers are: {}).",
                    i + 1,
                    r.name,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )));
            };
            let bsize = task.buffers[b as usize].size;
            if r.offset.checked_add(r.size).is_none_or(|e| e > bsize) {
                return Err(MemError::new(format!(
                    "{what}: local range {} (offset {}, size {}) lies outside memory buffer `{}` of {bsize} bytes.",
                    i + 1,
                    r.offset,
                    r.size,
                    r.name
                )));
            }
            ltotal = ltotal.saturating_add(r.size);
            lstream.push((b, r.offset, r.size));
        }
        // The global stream: segment pieces.
        let mut gstream: Vec<Piece> = Vec::new();
        let mut gtotal = 0u64;
        for (i, r) in globals.iter().enumerate() {
            if r.size == 0 && !t.allow_empty_ranges {
                return Err(empty("global", i));
            }
            if table.size_of(&r.name).is_none() {
                return Err(MemError::new(format!(
                    "{what}: global range {} names the handle `{}`, which is not a global allocation.",
                    i + 1,
                    r.name
                )));
            }
            let pieces = table.locate(&r.name, r.offset, r.size).map_err(|e| {
                MemError::new(format!("{what}: global range {}: {}", i + 1, e.message))
            })?;
            gtotal = gtotal.saturating_add(r.size);
            gstream.extend(pieces);
        }
        if gtotal != ltotal {
            return Err(MemError::new(format!(
                "{what}: the global ranges total {gtotal} bytes but the local ranges {ltotal} bytes; they must be equal."
            )));
        }
        // Cut both streams at each other's boundaries.
        let mut copies = Vec::new();
        let (mut gi, mut goff) = (0usize, 0u64);
        let (mut li, mut loff) = (0usize, 0u64);
        loop {
            while gi < gstream.len() && goff == gstream[gi].len {
                gi += 1;
                goff = 0;
            }
            while li < lstream.len() && loff == lstream[li].2 {
                li += 1;
                loff = 0;
            }
            let (Some(g), Some(l)) = (gstream.get(gi), lstream.get(li)) else {
                break;
            };
            let n = (g.len - goff).min(l.2 - loff);
            used.insert(g.segment);
            push_copy(
                &mut copies,
                Copy {
                    buffer: l.0,
                    buffer_offset: l.1 + loff,
                    segment: g.segment,
                    segment_offset: g.offset + goff,
                    len: n,
                },
            );
            goff += n;
            loff += n;
        }
        let into_gets = matches!(t.kind, TransferKind::Get | TransferKind::GetPut);
        let into_puts = matches!(t.kind, TransferKind::Put | TransferKind::GetPut);
        for c in copies {
            if into_gets {
                push_copy(&mut task.gets, c.clone());
            }
            if into_puts {
                push_copy(&mut task.puts, c);
            }
        }
    }
    for id in used {
        let info = table.segment(id).ok_or_else(|| {
            MemError::new(format!(
                "{floc}: segment {id} of the global memory is gone (its worker left)."
            ))
        })?;
        task.segments.push(info.clone());
    }
    Ok(task)
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
