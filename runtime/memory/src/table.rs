//! The agent's table of segments and of the global allocations placed in them.

use std::collections::{BTreeMap, HashMap};

use crate::{MemError, MemoryTask, SegmentInfo};

/// Parts of allocations start at multiples of this in their segment.
pub const PART_ALIGN: u64 = 64;

/// A part of an allocation: `len` bytes at `offset` of segment `segment`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    pub segment: u32,
    pub offset: u64,
    pub len: u64,
}

/// Memory statistics (for `gspc status`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemStats {
    pub segments: usize,
    /// The sum of the segments' sizes.
    pub capacity: u64,
    /// The sum of the live allocations' sizes.
    pub allocated: u64,
    pub allocations: usize,
    /// Bytes moved into module buffers / out of them (see [`GlobalTable::count_transfer`]).
    pub bytes_got: u64,
    pub bytes_put: u64,
    /// Per segment (by id): its info and the bytes of allocations in it.
    pub per_segment: Vec<(SegmentInfo, u64)>,
}

#[derive(Debug)]
struct SegState {
    info: SegmentInfo,
    /// Free extents `offset -> len`, disjoint, not adjacent, offsets and lengths multiples
    /// of [`PART_ALIGN`].
    free: BTreeMap<u64, u64>,
    /// Bytes of allocations in it (their lengths, not rounded).
    allocated: u64,
}

impl SegState {
    fn new(info: SegmentInfo) -> SegState {
        let usable = info.size - info.size % PART_ALIGN;
        let mut free = BTreeMap::new();
        if usable > 0 {
            free.insert(0, usable);
        }
        SegState {
            info,
            free,
            allocated: 0,
        }
    }

    /// First fit: the lowest free extent of at least `len` bytes.
    fn take(&mut self, len: u64) -> Option<u64> {
        let (&off, &flen) = self.free.iter().find(|&(_, &l)| l >= len)?;
        self.free.remove(&off);
        if flen > len {
            self.free.insert(off + len, flen - len);
        }
        Some(off)
    }

    fn give_back(&mut self, off: u64, len: u64) {
        if len == 0 {
            return;
        }
        let (mut off, mut len) = (off, len);
        if let Some((&po, &pl)) = self.free.range(..off).next_back()
            && po + pl == off
        {
            self.free.remove(&po);
            off = po;
            len += pl;
        }
        if let Some(&nl) = self.free.get(&(off + len)) {
            self.free.remove(&(off + len));
            len += nl;
        }
        self.free.insert(off, len);
    }

    fn largest_free(&self) -> u64 {
        self.free.values().copied().max().unwrap_or(0)
    }
}

#[derive(Debug, Clone)]
struct Part {
    segment: u32,
    offset: u64,
    len: u64,
}

impl Part {
    fn reserved(&self) -> u64 {
        self.len.next_multiple_of(PART_ALIGN)
    }
}

#[derive(Debug)]
struct Alloc {
    size: u64,
    parts: Vec<Part>,
    /// The removed segments that held parts of it (then the allocation is broken).
    lost: Vec<u32>,
}

/// The segments and the global allocations in them.
#[derive(Debug, Default)]
pub struct GlobalTable {
    segments: BTreeMap<u32, SegState>,
    allocs: HashMap<String, Alloc>,
    next_handle: u64,
    bytes_got: u64,
    bytes_put: u64,
}

impl GlobalTable {
    pub fn new() -> GlobalTable {
        GlobalTable::default()
    }

    /// Adds a segment. A segment of the same id that differs replaces the old one (as
    /// `remove_segment(id, true)` then add); the same info again changes nothing.
    pub fn add_segment(&mut self, info: SegmentInfo) {
        if let Some(s) = self.segments.get(&info.id) {
            if s.info == info {
                return;
            }
            let _ = self.remove_segment(info.id, true);
        }
        self.segments.insert(info.id, SegState::new(info));
    }

    /// Err when allocations live in it (they would be lost); `force` drops them (marks their
    /// handles broken: later uses are errors saying the worker holding them is gone). An
    /// unknown id is not an error.
    pub fn remove_segment(&mut self, id: u32, force: bool) -> Result<(), MemError> {
        if !self.segments.contains_key(&id) {
            return Ok(());
        }
        let mut users: Vec<&String> = self
            .allocs
            .iter()
            .filter(|(_, a)| a.lost.is_empty() && a.parts.iter().any(|p| p.segment == id))
            .map(|(h, _)| h)
            .collect();
        if !users.is_empty() && !force {
            users.sort();
            let n = users.len();
            let shown: Vec<&str> = users.iter().take(5).map(|h| h.as_str()).collect();
            return Err(MemError::new(format!(
                "Segment {id} holds parts of {n} global allocation(s) ({}{}); free them first or force the removal.",
                shown.join(", "),
                if n > shown.len() { ", ..." } else { "" }
            )));
        }
        for a in self.allocs.values_mut() {
            if a.parts.iter().any(|p| p.segment == id) && !a.lost.contains(&id) {
                a.lost.push(id);
            }
        }
        self.segments.remove(&id);
        Ok(())
    }

    /// Spreads `size` bytes over all segments (equal contiguous parts, the last one smaller;
    /// first fit inside each segment, 64-byte aligned); handle = a fresh `"0x..."` string.
    pub fn alloc(&mut self, size: u64) -> Result<String, MemError> {
        if self.segments.is_empty() {
            return Err(MemError::new(format!(
                "Cannot allocate {size} bytes of global memory: no worker has working memory."
            )));
        }
        let n = self.segments.len() as u64;
        let part = size.div_ceil(n);
        let mut parts = Vec::new();
        let mut left = size;
        let ids: Vec<u32> = self.segments.keys().copied().collect();
        for id in ids {
            if left == 0 {
                break;
            }
            let len = part.min(left);
            let reserve = len.checked_next_multiple_of(PART_ALIGN);
            let seg = self.segments.get_mut(&id);
            let got = match (seg, reserve) {
                (Some(seg), Some(r)) => seg.take(r).map(|off| (off, seg)),
                _ => None,
            };
            let Some((offset, seg)) = got else {
                let free = self.segments.get(&id).map_or(0, |s| s.largest_free());
                for p in &parts {
                    self.release(p);
                }
                return Err(MemError::new(format!(
                    "Cannot allocate {size} bytes of global memory: no space left (a part of {len} bytes does not fit segment {id}, whose largest free extent has {free} bytes)."
                )));
            };
            seg.allocated += len;
            parts.push(Part {
                segment: id,
                offset,
                len,
            });
            left -= len;
        }
        self.next_handle += 1;
        let handle = format!("0x{:016x}", self.next_handle);
        self.allocs.insert(
            handle.clone(),
            Alloc {
                size,
                parts,
                lost: Vec::new(),
            },
        );
        Ok(handle)
    }

    fn release(&mut self, p: &Part) {
        if let Some(seg) = self.segments.get_mut(&p.segment) {
            seg.allocated = seg.allocated.saturating_sub(p.len);
            seg.give_back(p.offset, p.reserved());
        }
    }

    /// Frees an allocation (also a broken one: its parts in surviving segments are released).
    pub fn free(&mut self, handle: &str) -> Result<(), MemError> {
        let a = self.allocs.remove(handle).ok_or_else(|| unknown(handle))?;
        for p in &a.parts {
            // Parts in a removed segment: the segment (and the part) is gone. A segment of the
            // same id added since is a different one: do not touch it.
            if !a.lost.contains(&p.segment) {
                self.release(p);
            }
        }
        Ok(())
    }

    pub fn size_of(&self, handle: &str) -> Option<u64> {
        self.allocs.get(handle).map(|a| a.size)
    }

    /// The pieces of `[offset, offset + len)` of an allocation, in order.
    pub fn locate(&self, handle: &str, offset: u64, len: u64) -> Result<Vec<Piece>, MemError> {
        let a = self.allocs.get(handle).ok_or_else(|| unknown(handle))?;
        if let Some(w) = a.lost.first() {
            return Err(MemError::new(format!(
                "The global allocation {handle} is lost: worker {w}, which held part of it, is gone."
            )));
        }
        let end = offset.checked_add(len);
        if end.is_none_or(|e| e > a.size) {
            return Err(MemError::new(format!(
                "The range of {len} bytes at offset {offset} is outside the global allocation {handle} of {} bytes.",
                a.size
            )));
        }
        let mut pieces = Vec::new();
        let (mut pos, mut want, mut at) = (0u64, len, offset);
        for p in &a.parts {
            if want == 0 {
                break;
            }
            if at < pos + p.len {
                let inner = at - pos;
                let n = (p.len - inner).min(want);
                pieces.push(Piece {
                    segment: p.segment,
                    offset: p.offset + inner,
                    len: n,
                });
                want -= n;
                at += n;
            }
            pos += p.len;
        }
        Ok(pieces)
    }

    pub fn segment(&self, id: u32) -> Option<&SegmentInfo> {
        self.segments.get(&id).map(|s| &s.info)
    }

    pub fn stats(&self) -> MemStats {
        MemStats {
            segments: self.segments.len(),
            capacity: self
                .segments
                .values()
                .fold(0u64, |a, s| a.saturating_add(s.info.size)),
            allocated: self
                .allocs
                .values()
                .filter(|a| a.lost.is_empty())
                .fold(0u64, |a, x| a.saturating_add(x.size)),
            allocations: self.allocs.len(),
            bytes_got: self.bytes_got,
            bytes_put: self.bytes_put,
            per_segment: self
                .segments
                .values()
                .map(|s| (s.info.clone(), s.allocated))
                .collect(),
        }
    }

    /// Adds a task's copies to `bytes_got` / `bytes_put`.
    pub fn count_transfer(&mut self, task: &MemoryTask) {
        let sum = |c: &[crate::Copy]| c.iter().fold(0u64, |a, c| a.saturating_add(c.len));
        self.bytes_got = self.bytes_got.saturating_add(sum(&task.gets));
        self.bytes_put = self.bytes_put.saturating_add(sum(&task.puts));
    }
}

fn unknown(handle: &str) -> MemError {
    MemError::new(format!(
        "There is no global allocation with handle `{handle}`."
    ))
}
