//! The memory plan: from an evaluated module call (engine [`pnet_engine::TaskMemory`]) to a
//! self-contained [`MemoryTask`] (the copies between global memory and the call's local
//! buffers, with every check of the semantics described in [`pnet_memory`]). Only the agent
//! plans; workers run the plans ([`pnet_memory::run_gets`], [`pnet_memory::run_puts`]), so
//! the memory layer does not depend on the engine.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use pnet_bundle::{Bundle, FunctionId, TransferKind};
use pnet_memory::{BufferSpec, Copy, GlobalTable, MemError, MemoryTask, Piece};
use pnet_stdlib::Value;

/// An error of the plan; the message is a full sentence.
fn mem_error(message: impl Into<String>) -> MemError {
    MemError {
        message: message.into(),
    }
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
        return Err(mem_error(format!(
            "{what}: the {side} ranges must be a list of {shape}, not {}.",
            show(v)
        )));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let bad = |why: &str| {
            mem_error(format!(
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
/// with every check of the semantics (see the [`pnet_memory`] documentation); errors name the transfer
/// or buffer by `file:line:col`.
pub fn plan(
    bundle: &Bundle,
    function: FunctionId,
    mem: &pnet_engine::TaskMemory,
    table: &GlobalTable,
) -> Result<MemoryTask, MemError> {
    let f = bundle.functions.get(function.index()).ok_or_else(|| {
        mem_error(format!(
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
        return Err(mem_error(format!(
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
            return Err(mem_error(format!(
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
            mem_error(format!(
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
                return Err(mem_error(format!(
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
                return Err(mem_error(format!(
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
                return Err(mem_error(format!(
                    "{what}: global range {} names the handle `{}`, which is not a global allocation.",
                    i + 1,
                    r.name
                )));
            }
            let pieces = table
                .locate(&r.name, r.offset, r.size)
                .map_err(|e| mem_error(format!("{what}: global range {}: {}", i + 1, e.message)))?;
            gtotal = gtotal.saturating_add(r.size);
            gstream.extend(pieces);
        }
        if gtotal != ltotal {
            return Err(mem_error(format!(
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
            mem_error(format!(
                "{floc}: segment {id} of the global memory is gone (its worker left)."
            ))
        })?;
        task.segments.push(info.clone());
    }
    Ok(task)
}

#[cfg(test)]
mod tests;
