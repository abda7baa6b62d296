//! A module call's local buffers, each in its own guarded mapping.

use crate::sys::{Mapping, page_size};
use crate::{BufferSpec, MemError};

/// The canary written into the slack around a buffer (no zero byte, position dependent).
const CANARY: [u8; 8] = [0xA5, 0x5A, 0xC3, 0x3C, 0x96, 0x69, 0xF0, 0x0F];

fn canary(i: usize) -> u8 {
    CANARY[i % CANARY.len()]
}

/// One buffer: `[guard page | lead slack | buffer | tail slack | guard page]`, the slacks
/// filled with the canary (the lead slack at most one page of it).
struct Buffer {
    name: String,
    map: Mapping,
    /// Offset of the buffer in `map`.
    start: usize,
    size: usize,
    /// Offset where the canaried lead slack begins (`<= start`).
    lead: usize,
    /// Offset of the trailing guard page (the tail slack is `start + size .. tail_guard`).
    tail_guard: usize,
}

/// A call's local buffers: each in its own anonymous mapping, aligned, with a `PROT_NONE`
/// guard page before and after, the slack between the buffer's end and the guard page (and up
/// to a page before its start) filled with a canary. `limit` = the worker's working memory:
/// more in total is an error.
pub struct LocalBuffers {
    bufs: Vec<Buffer>,
}

impl std::fmt::Debug for LocalBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.bufs.iter().map(|b| (&b.name, b.size)))
            .finish()
    }
}

// SAFETY: LocalBuffers owns its private mappings exclusively; slices into them are handed out
// only through `&self`/`&mut self`, so Rust's borrow rules order every access.
unsafe impl Send for LocalBuffers {}
// SAFETY: as above: `&self` only reads.
unsafe impl Sync for LocalBuffers {}

impl LocalBuffers {
    pub fn allocate(specs: &[BufferSpec], limit: u64) -> Result<LocalBuffers, MemError> {
        let total = specs
            .iter()
            .try_fold(0u64, |a, s| a.checked_add(s.size))
            .unwrap_or(u64::MAX);
        if total > limit {
            return Err(MemError::new(format!(
                "The call's memory buffers need {total} bytes, more than the worker's {limit} bytes of working memory."
            )));
        }
        let page = page_size();
        let mut bufs = Vec::with_capacity(specs.len());
        for s in specs {
            bufs.push(Buffer::allocate(s, page)?);
        }
        Ok(LocalBuffers { bufs })
    }

    pub fn len(&self) -> usize {
        self.bufs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bufs.is_empty()
    }

    /// The address of buffer `i` (non-null and aligned, also for an empty buffer).
    /// Panics when `i >= len()`.
    pub fn ptr(&self, i: usize) -> *mut u8 {
        let b = &self.bufs[i];
        b.map.ptr().wrapping_add(b.start)
    }

    /// Panics when `i >= len()`.
    pub fn size(&self, i: usize) -> u64 {
        self.bufs[i].size as u64
    }

    /// The name of buffer `i`. Panics when `i >= len()`.
    pub fn name(&self, i: usize) -> &str {
        &self.bufs[i].name
    }

    /// Panics when `i >= len()`.
    pub fn bytes(&self, i: usize) -> &[u8] {
        let b = &self.bufs[i];
        // SAFETY: `[start, start + size)` lies inside the readable part of the mapping (see
        // `Buffer::allocate`), which lives as long as `self`; the pointer is non-null and
        // aligned also for size 0; `&self` keeps `bytes_mut` from aliasing it.
        unsafe { std::slice::from_raw_parts(b.map.ptr().add(b.start), b.size) }
    }

    /// Panics when `i >= len()`.
    pub fn bytes_mut(&mut self, i: usize) -> &mut [u8] {
        let b = &self.bufs[i];
        // SAFETY: as in `bytes`, with the mapping writable and `&mut self` exclusive.
        unsafe { std::slice::from_raw_parts_mut(b.map.ptr().add(b.start), b.size) }
    }

    /// After the call: an overwritten canary is an error naming the buffer.
    pub fn check_guards(&self) -> Result<(), MemError> {
        for b in &self.bufs {
            b.check()?;
        }
        Ok(())
    }

    /// The guard pages' address ranges (for a SIGSEGV handler that names the cause).
    pub fn guard_ranges(&self) -> Vec<std::ops::Range<usize>> {
        let page = page_size();
        let mut v = Vec::with_capacity(2 * self.bufs.len());
        for b in &self.bufs {
            let base = b.map.ptr() as usize;
            v.push(base..base + page);
            v.push(base + b.tail_guard..base + b.tail_guard + page);
        }
        v
    }

    /// The name of the buffer whose guard page holds `addr`, if any (for a SIGSEGV handler).
    pub fn guard_owner(&self, addr: usize) -> Option<&str> {
        let page = page_size();
        self.bufs.iter().find_map(|b| {
            let base = b.map.ptr() as usize;
            let tail = base + b.tail_guard;
            ((base..base + page).contains(&addr) || (tail..tail + page).contains(&addr))
                .then_some(b.name.as_str())
        })
    }
}

impl Buffer {
    fn allocate(s: &BufferSpec, page: usize) -> Result<Buffer, MemError> {
        let a = s.alignment;
        if a == 0 || !a.is_power_of_two() {
            return Err(MemError::new(format!(
                "The alignment {a} of memory buffer `{}` is not a power of two.",
                s.name
            )));
        }
        let too_big = || {
            MemError::new(format!(
                "Memory buffer `{}` ({} bytes, alignment {a}) does not fit the address space.",
                s.name, s.size
            ))
        };
        let size = usize::try_from(s.size).map_err(|_| too_big())?;
        let align = usize::try_from(a).map_err(|_| too_big())?;
        // Data pages: the size rounded up to pages, plus room to align beyond a page.
        let data = size
            .checked_next_multiple_of(page)
            .and_then(|d| d.checked_add(if align > page { align } else { 0 }))
            .ok_or_else(too_big)?;
        let total = data.checked_add(2 * page).ok_or_else(too_big)?;
        let map = Mapping::anonymous(total).map_err(|e| {
            MemError::new(format!(
                "Cannot map memory buffer `{}` ({} bytes): {e}.",
                s.name, s.size
            ))
        })?;
        let base = map.ptr() as usize;
        let tail_guard = page + data;
        // The highest aligned address whose buffer ends at or before the trailing guard page.
        let start_addr = (base + tail_guard - size) & !(align - 1);
        let start = start_addr - base;
        debug_assert!(start >= page && start + size <= tail_guard);
        let lead = start.saturating_sub(page).max(page);
        let b = Buffer {
            name: s.name.clone(),
            map,
            start,
            size,
            lead,
            tail_guard,
        };
        // SAFETY: `[lead, start)` and `[start + size, tail_guard)` lie in the mapping's
        // read-write data pages (between the two guard pages); no reference into them exists.
        unsafe {
            let p = b.map.ptr();
            for i in b.lead..b.start {
                p.add(i).write(canary(i));
            }
            for i in b.start + b.size..b.tail_guard {
                p.add(i).write(canary(i));
            }
        }
        b.map.protect_none(0, page).map_err(|e| b.guard_error(e))?;
        b.map
            .protect_none(tail_guard, page)
            .map_err(|e| b.guard_error(e))?;
        Ok(b)
    }

    fn guard_error(&self, e: std::io::Error) -> MemError {
        MemError::new(format!(
            "Cannot protect the guard pages of memory buffer `{}`: {e}.",
            self.name
        ))
    }

    fn check(&self) -> Result<(), MemError> {
        let p = self.map.ptr();
        let bad = |i: usize| {
            // SAFETY: `i` lies in one of the canaried slacks (callers iterate over them), which
            // are readable; the buffer's owner holds `&self`, so no mutable slice is live.
            unsafe { p.add(i).read() != canary(i) }
        };
        let end = self.start + self.size;
        if let Some(i) = (end..self.tail_guard).find(|&i| bad(i)) {
            return Err(MemError::new(format!(
                "The module wrote past the end of memory buffer `{}` ({} bytes): the byte at offset {} after its end was overwritten.",
                self.name,
                self.size,
                i - end
            )));
        }
        if let Some(i) = (self.lead..self.start).rev().find(|&i| bad(i)) {
            return Err(MemError::new(format!(
                "The module wrote before the start of memory buffer `{}` ({} bytes): the byte {} bytes before its start was overwritten.",
                self.name,
                self.size,
                self.start - i
            )));
        }
        Ok(())
    }
}
