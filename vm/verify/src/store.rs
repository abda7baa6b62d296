//! Compact storage of explored markings: every marking packed into a fixed number of bytes
//! (`bits` per place, `bits` in 1, 2, 4, 8, 16, 32), kept in an arena of chunks, and an
//! open-addressing hash index (see [`StateStore`]).
//!
//! Memory per state: `stride` bytes in the arena plus the index's slot size / load factor
//! (the index doubles at 3/4 load): 8-byte slots (10.7 to 21.3 bytes per state) for
//! markings longer than [`INLINE_MAX`] bytes, 16-byte slots holding the marking (21.3 to
//! 42.7 bytes) for shorter ones.

/// How markings are packed: `bits` per place, little-endian, places in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packing {
    pub bits: u32,
    pub places: usize,
}

impl Packing {
    /// The smallest packing holding counts up to `max` for `places` places.
    pub fn for_max(places: usize, max: u64) -> Packing {
        let bits = [1u32, 2, 4, 8, 16, 32]
            .into_iter()
            .find(|&b| max < (1u64 << b))
            .unwrap_or(32);
        Packing { bits, places }
    }

    /// The next wider packing, if any.
    pub fn wider(self) -> Option<Packing> {
        (self.bits < 32).then_some(Packing {
            bits: self.bits * 2,
            places: self.places,
        })
    }

    pub fn max_value(self) -> u64 {
        (1u64 << self.bits) - 1
    }

    /// Bytes per packed marking (at least 1).
    pub fn stride(self) -> usize {
        (self.places * self.bits as usize).div_ceil(8).max(1)
    }

    #[inline]
    pub fn get(self, buf: &[u8], p: usize) -> u32 {
        match self.bits {
            32 => u32::from_le_bytes(buf[p * 4..p * 4 + 4].try_into().unwrap_or_default()),
            16 => u16::from_le_bytes(buf[p * 2..p * 2 + 2].try_into().unwrap_or_default()) as u32,
            8 => buf[p] as u32,
            b => {
                let bit = p * b as usize;
                ((buf[bit / 8] >> (bit % 8)) & ((1u8 << b) - 1)) as u32
            }
        }
    }

    /// Sets place `p` to `v` (`v` must fit the packing).
    #[inline]
    pub fn set(self, buf: &mut [u8], p: usize, v: u32) {
        match self.bits {
            32 => buf[p * 4..p * 4 + 4].copy_from_slice(&v.to_le_bytes()),
            16 => buf[p * 2..p * 2 + 2].copy_from_slice(&(v as u16).to_le_bytes()),
            8 => buf[p] = v as u8,
            b => {
                let bit = p * b as usize;
                let mask = ((1u8 << b) - 1) << (bit % 8);
                let byte = &mut buf[bit / 8];
                *byte = (*byte & !mask) | (((v as u8) << (bit % 8)) & mask);
            }
        }
    }

    pub fn pack(self, marking: &[u32], buf: &mut [u8]) {
        buf.fill(0);
        for (p, &v) in marking.iter().enumerate() {
            self.set(buf, p, v);
        }
    }

    pub fn unpack(self, buf: &[u8], marking: &mut Vec<u32>) {
        marking.clear();
        match self.bits {
            8 => marking.extend(buf[..self.places].iter().map(|&b| b as u32)),
            _ => marking.extend((0..self.places).map(|p| self.get(buf, p))),
        }
    }
}

/// Zeroed memory for the index and the arena. On Linux it is mapped directly (untouched pages
/// cost nothing) and, on request and from 2 MiB up, marked for transparent huge pages: the
/// lookups jump around hundreds of megabytes, and with 4 KiB pages nearly every one of them
/// also misses the TLB.
pub(crate) mod mem {
    use std::ops::{Deref, DerefMut};

    /// Element types for which all-zero bytes are a valid value.
    ///
    /// # Safety
    /// Implement only for plain integer types.
    pub unsafe trait Zeroable: Copy {}
    // SAFETY: integers: every bit pattern is valid.
    unsafe impl Zeroable for u8 {}
    // SAFETY: as above.
    unsafe impl Zeroable for u64 {}
    // SAFETY: as above.
    unsafe impl Zeroable for u32 {}

    #[cfg(target_os = "linux")]
    pub struct ZeroBuf<T: Zeroable> {
        ptr: std::ptr::NonNull<T>,
        len: usize,
        /// Bytes readable and writable from `ptr`.
        map_len: usize,
        /// Bytes of the mapping from `ptr` (at least `map_len`; more for a buffer made by
        /// [`ZeroBuf::growable`], the rest reserved without access).
        reserved: usize,
        /// Transparent huge pages asked for.
        huge: bool,
    }

    #[cfg(target_os = "linux")]
    impl<T: Zeroable> ZeroBuf<T> {
        const HUGE: usize = 2 << 20;

        /// `len` zeroed elements; `huge` asks for transparent huge pages (from 2 MiB up).
        pub fn new(len: usize, huge: bool) -> ZeroBuf<T> {
            let bytes = len.max(1).saturating_mul(size_of::<T>());
            // Whole huge pages from 2 MiB up (recent kernels then align the mapping to them).
            let huge = huge && bytes >= Self::HUGE;
            let unit = if huge { Self::HUGE } else { 4096 };
            let map_len = bytes.div_ceil(unit).saturating_mul(unit);
            let layout = std::alloc::Layout::from_size_align(map_len, 4096)
                .unwrap_or(std::alloc::Layout::new::<u64>());
            // SAFETY: an anonymous private mapping: no file, no aliasing; checked below.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    map_len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED || p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            if huge {
                // SAFETY: advice on the mapping just created; failure only loses the hint.
                unsafe { libc::madvise(p, map_len, libc::MADV_HUGEPAGE) };
            }
            ZeroBuf {
                // `p` is page-aligned and non-null (checked above).
                ptr: std::ptr::NonNull::new(p.cast::<T>())
                    .unwrap_or_else(|| std::alloc::handle_alloc_error(layout)),
                len,
                map_len,
                reserved: map_len,
                huge,
            }
        }

        /// `len` zeroed elements in a mapping that [`ZeroBuf::grow_in_place`] can extend
        /// without moving it, up to `room` bytes (address space reserved up front, without
        /// access and not counted as committed memory: pages are only touched when written).
        /// Starts on a huge page boundary. Falls back to [`ZeroBuf::new`] when the
        /// reservation fails.
        pub fn growable(len: usize, room: usize, huge: bool) -> ZeroBuf<T> {
            let bytes = len.max(1).saturating_mul(size_of::<T>());
            let room = room
                .max(bytes)
                .div_ceil(Self::HUGE)
                .saturating_mul(Self::HUGE);
            let Some(whole) = room.checked_add(Self::HUGE) else {
                return ZeroBuf::new(len, huge);
            };
            // SAFETY: an anonymous private mapping without access: no file, no aliasing.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    whole,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED || p.is_null() {
                return ZeroBuf::new(len, huge);
            }
            // Keep `room` bytes from the first huge page boundary; unmap the rest.
            let head = (p as usize).next_multiple_of(Self::HUGE) - p as usize;
            // SAFETY: both ranges lie in the mapping just created and are not used.
            unsafe {
                if head > 0 {
                    libc::munmap(p, head);
                }
                if whole - head > room {
                    libc::munmap(p.cast::<u8>().add(head + room).cast(), whole - head - room);
                }
            }
            // SAFETY: `head < HUGE`, inside the mapping.
            let start = unsafe { p.cast::<u8>().add(head) };
            let Some(ptr) = std::ptr::NonNull::new(start.cast::<T>()) else {
                return ZeroBuf::new(len, huge);
            };
            let mut buf = ZeroBuf {
                ptr,
                len: 0,
                map_len: 0,
                reserved: room,
                huge,
            };
            if !buf.grow_in_place(len) {
                return ZeroBuf::new(len, huge);
            }
            buf
        }

        /// Extends the buffer to `len` elements (the new ones zero) in place, within the
        /// room reserved by [`ZeroBuf::growable`]; `false` (nothing changed) when it does not
        /// fit or the system refuses.
        pub fn grow_in_place(&mut self, len: usize) -> bool {
            if len < self.len || !self.open(len) {
                return false;
            }
            self.len = len;
            true
        }

        /// Makes the pages of the first `to` elements accessible (as
        /// [`ZeroBuf::grow_in_place`] would) without growing the buffer, and gives the
        /// address and length in bytes of the elements `from..to` (from its end at least),
        /// for [`Prefault::request`]; `None` when there are none, they do not fit the
        /// reserved room or the system refuses.
        pub fn open_ahead(&mut self, from: usize, to: usize) -> Option<(usize, usize)> {
            let from = from.max(self.len);
            if to <= from || !self.open(to) {
                return None;
            }
            let start = from * size_of::<T>();
            Some((
                self.ptr.as_ptr() as usize + start,
                to * size_of::<T>() - start,
            ))
        }

        /// The address and length in bytes of the buffer's mapping, for
        /// [`Prefault::request`].
        pub fn mapped(&self) -> (usize, usize) {
            (self.ptr.as_ptr() as usize, self.map_len)
        }

        /// Opens the reserved mapping (read and write access) up to `len` elements.
        fn open(&mut self, len: usize) -> bool {
            let Some(bytes) = len.checked_mul(size_of::<T>()) else {
                return false;
            };
            let huge = self.huge && bytes >= Self::HUGE;
            let unit = if huge { Self::HUGE } else { 4096 };
            let map_len = bytes.max(1).next_multiple_of(unit);
            if map_len > self.reserved {
                return false;
            }
            if map_len > self.map_len {
                // SAFETY: `map_len..new` lies in the reserved mapping (checked above), with
                // no access until now: nothing refers to it.
                let added = unsafe { self.ptr.as_ptr().cast::<u8>().add(self.map_len) };
                let n = map_len - self.map_len;
                // SAFETY: as above.
                let ok = unsafe {
                    libc::mprotect(added.cast(), n, libc::PROT_READ | libc::PROT_WRITE) == 0
                };
                if !ok {
                    return false;
                }
                self.map_len = map_len;
                if huge {
                    // SAFETY: advice on the open part of the mapping (its first pages too,
                    // opened while the buffer was small); failure only loses the hint.
                    unsafe {
                        libc::madvise(self.ptr.as_ptr().cast(), map_len, libc::MADV_HUGEPAGE)
                    };
                }
            }
            true
        }
    }

    /// Address space to reserve for a buffer that grows in place up to the largest size
    /// worth having: the physical memory (rounded up to a power of two, 1 GiB to 128 GiB).
    pub fn growable_room() -> usize {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: plain queries, no memory passed.
            let (pages, page) = unsafe {
                (
                    libc::sysconf(libc::_SC_PHYS_PAGES),
                    libc::sysconf(libc::_SC_PAGESIZE),
                )
            };
            let bytes = (pages.max(0) as usize).saturating_mul(page.max(0) as usize);
            bytes
                .checked_next_power_of_two()
                .unwrap_or(1 << 37)
                .clamp(1 << 30, 1 << 37)
        }
        #[cfg(not(target_os = "linux"))]
        0
    }

    #[cfg(target_os = "linux")]
    impl<T: Zeroable> ZeroBuf<T> {
        /// Gives the memory of the first `len` elements back to the system (their pages
        /// read as zero afterwards): whole huge pages only, so that the rest of the buffer
        /// keeps its huge pages. Lowers the peak while the index doubles (the old index is
        /// released behind the pass that reads it).
        pub fn release_prefix(&mut self, len: usize) {
            let bytes = len.min(self.len).saturating_mul(size_of::<T>());
            let bytes = bytes / Self::HUGE * Self::HUGE;
            if bytes > 0 {
                // SAFETY: a range at the start of the mapping created in `new`; the advice
                // only drops its contents (zero pages afterwards, still mapped).
                unsafe { libc::madvise(self.ptr.as_ptr().cast(), bytes, libc::MADV_DONTNEED) };
            }
        }

        /// [`ZeroBuf::release_prefix`] of the whole huge pages within elements
        /// `start..end`, through a shared borrow.
        ///
        /// # Safety
        /// No reference into that range may be alive, and none read from it afterwards
        /// expecting the old contents (atomic accesses through a view of the buffer read
        /// zeros afterwards).
        pub unsafe fn release_range(&self, start: usize, end: usize) {
            let to_bytes = |i: usize| i.min(self.len).saturating_mul(size_of::<T>());
            let from = to_bytes(start).div_ceil(Self::HUGE) * Self::HUGE;
            let to = to_bytes(end) / Self::HUGE * Self::HUGE;
            if to > from {
                // SAFETY: a range inside the mapping created in `new`; the caller guarantees
                // that nothing relies on its contents any more.
                unsafe {
                    libc::madvise(
                        self.ptr.as_ptr().cast::<u8>().add(from).cast(),
                        to - from,
                        libc::MADV_DONTNEED,
                    )
                };
            }
        }
    }

    #[cfg(target_os = "linux")]
    impl<T: Zeroable> ZeroBuf<T> {
        /// The start of the buffer, for writes through a raw pointer (see
        /// [`super::Appender`]).
        pub fn as_mut_ptr(&mut self) -> *mut T {
            self.ptr.as_ptr()
        }
    }

    #[cfg(target_os = "linux")]
    impl ZeroBuf<u64> {
        /// The buffer as atomics, for several threads writing it at once.
        pub fn as_atomic(&mut self) -> &[std::sync::atomic::AtomicU64] {
            // SAFETY: `u64` elements in a page-aligned mapping, `AtomicU64` has their size
            // and bit validity, and the exclusive borrow lasts as long as the view.
            unsafe {
                std::slice::from_raw_parts(
                    self.ptr.as_ptr().cast::<std::sync::atomic::AtomicU64>(),
                    self.len,
                )
            }
        }
    }

    #[cfg(target_os = "linux")]
    impl<T: Zeroable> Drop for ZeroBuf<T> {
        fn drop(&mut self) {
            // SAFETY: the mapping created in `new` or `growable`, unmapped once.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.reserved) };
        }
    }

    #[cfg(target_os = "linux")]
    impl<T: Zeroable> Deref for ZeroBuf<T> {
        type Target = [T];
        #[inline(always)]
        fn deref(&self) -> &[T] {
            // SAFETY: `len` zero-initialised (valid) elements, page-aligned, owned by `self`.
            unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
        }
    }

    #[cfg(target_os = "linux")]
    impl<T: Zeroable> DerefMut for ZeroBuf<T> {
        #[inline(always)]
        fn deref_mut(&mut self) -> &mut [T] {
            // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
            unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
        }
    }

    // SAFETY: the buffer owns its memory like a `Box<[T]>` of plain integers.
    #[cfg(target_os = "linux")]
    unsafe impl<T: Zeroable + Send> Send for ZeroBuf<T> {}
    // SAFETY: shared access only reads.
    #[cfg(target_os = "linux")]
    unsafe impl<T: Zeroable + Sync> Sync for ZeroBuf<T> {}

    #[cfg(not(target_os = "linux"))]
    pub struct ZeroBuf<T: Zeroable>(Box<[T]>);

    #[cfg(not(target_os = "linux"))]
    impl<T: Zeroable + Default> ZeroBuf<T> {
        pub fn new(len: usize, _huge: bool) -> ZeroBuf<T> {
            ZeroBuf(vec![T::default(); len].into_boxed_slice())
        }
    }

    #[cfg(not(target_os = "linux"))]
    impl<T: Zeroable + Default> ZeroBuf<T> {
        /// [`ZeroBuf::new`] here (nothing reserved).
        pub fn growable(len: usize, _room: usize, huge: bool) -> ZeroBuf<T> {
            ZeroBuf::new(len, huge)
        }
    }

    #[cfg(not(target_os = "linux"))]
    impl<T: Zeroable> ZeroBuf<T> {
        /// Never grows here (see the Linux version).
        pub fn grow_in_place(&mut self, _len: usize) -> bool {
            false
        }

        /// Never opens anything here (see the Linux version).
        pub fn open_ahead(&mut self, _from: usize, _to: usize) -> Option<(usize, usize)> {
            None
        }

        /// The buffer's bytes (see the Linux version).
        pub fn mapped(&self) -> (usize, usize) {
            (self.0.as_ptr() as usize, self.0.len() * size_of::<T>())
        }

        /// Does nothing here (see the Linux version).
        pub fn release_prefix(&mut self, _len: usize) {}

        /// Does nothing here (see the Linux version).
        ///
        /// # Safety
        /// None needed here; the Linux version's contract.
        pub unsafe fn release_range(&self, _start: usize, _end: usize) {}
    }

    #[cfg(not(target_os = "linux"))]
    impl<T: Zeroable> ZeroBuf<T> {
        /// The start of the buffer, for writes through a raw pointer.
        pub fn as_mut_ptr(&mut self) -> *mut T {
            self.0.as_mut_ptr()
        }
    }

    #[cfg(not(target_os = "linux"))]
    impl ZeroBuf<u64> {
        /// The buffer as atomics, for several threads writing it at once.
        pub fn as_atomic(&mut self) -> &[std::sync::atomic::AtomicU64] {
            // SAFETY: a boxed slice of `u64` (aligned for them), `AtomicU64` has their size,
            // alignment on 64-bit targets and bit validity, and the exclusive borrow lasts as
            // long as the view.
            unsafe {
                std::slice::from_raw_parts(
                    self.0.as_mut_ptr().cast::<std::sync::atomic::AtomicU64>(),
                    self.0.len(),
                )
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    impl<T: Zeroable> Deref for ZeroBuf<T> {
        type Target = [T];
        fn deref(&self) -> &[T] {
            &self.0
        }
    }

    #[cfg(not(target_os = "linux"))]
    impl<T: Zeroable> DerefMut for ZeroBuf<T> {
        fn deref_mut(&mut self) -> &mut [T] {
            &mut self.0
        }
    }

    /// A thread writing pages ahead of need (`MADV_POPULATE_WRITE`, Linux 5.14 on), so that
    /// the kernel's zeroing of fresh pages (about 3 s a GiB on a VM, a fifth of a large
    /// exploration) runs beside the exploration instead of inside its first writes. The
    /// population writes nothing visible (a page already written keeps its contents), so it
    /// may overlap any use of the pages; a mapping must not be unmapped while a request on
    /// it may run ([`Prefault::forget`] it first).
    pub struct Prefault {
        shared: std::sync::Arc<(std::sync::Mutex<Requests>, std::sync::Condvar)>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    #[derive(Default)]
    struct Requests {
        queue: std::collections::VecDeque<(usize, usize)>,
        /// The range being populated.
        busy: Option<(usize, usize)>,
        quit: bool,
    }

    /// Bytes populated per system call (a [`Prefault::forget`] waits for one at most).
    const PREFAULT_STEP: usize = 8 << 20;

    impl Prefault {
        /// Starts the thread; `None` when the system cannot (no thread, or no
        /// `MADV_POPULATE_WRITE`).
        pub fn start() -> Option<Prefault> {
            if !cfg!(target_os = "linux") {
                return None;
            }
            let shared = std::sync::Arc::new((
                std::sync::Mutex::new(Requests::default()),
                std::sync::Condvar::new(),
            ));
            let theirs = shared.clone();
            let thread = std::thread::Builder::new()
                .name("pnetv-prefault".into())
                .stack_size(64 << 10)
                .spawn(move || Prefault::serve(&theirs))
                .ok()?;
            Some(Prefault {
                shared,
                thread: Some(thread),
            })
        }

        fn lock(&self) -> std::sync::MutexGuard<'_, Requests> {
            self.shared
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }

        fn serve(shared: &(std::sync::Mutex<Requests>, std::sync::Condvar)) {
            let (lock, cond) = shared;
            let mut r = lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            loop {
                if r.quit {
                    return;
                }
                let Some((addr, len)) = r.queue.pop_front() else {
                    r = cond
                        .wait(r)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    continue;
                };
                let step = len.min(PREFAULT_STEP);
                if len > step {
                    r.queue.push_front((addr + step, len - step));
                }
                r.busy = Some((addr, step));
                drop(r);
                let ok = populate(addr, step);
                r = lock
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                r.busy = None;
                if !ok {
                    // Not supported (or the range is gone): nothing more to do.
                    r.queue.clear();
                    r.quit = true;
                }
                cond.notify_all();
            }
        }

        /// Asks for the pages of `len` bytes from `addr` (inside a mapping with write
        /// access) to be written ahead, after the ranges asked for before.
        pub fn request(&self, addr: usize, len: usize) {
            let mut r = self.lock();
            if r.quit || len == 0 {
                return;
            }
            r.queue.push_back((addr, len));
            drop(r);
            self.shared.1.notify_all();
        }

        /// Drops the ranges not yet begun that overlap the `len` bytes from `addr`, and
        /// waits for the one being populated if it overlaps them: that memory may then be
        /// unmapped.
        pub fn forget(&self, addr: usize, len: usize) {
            let overlaps = |&(a, l): &(usize, usize)| a < addr + len && addr < a + l;
            let mut r = self.lock();
            r.queue.retain(|q| !overlaps(q));
            while r.busy.as_ref().is_some_and(overlaps) {
                r = self
                    .shared
                    .1
                    .wait(r)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
    }

    impl Drop for Prefault {
        fn drop(&mut self) {
            self.forget(0, usize::MAX);
            self.lock().quit = true;
            self.shared.1.notify_all();
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    impl std::fmt::Debug for Prefault {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Prefault")
        }
    }

    /// `MADV_POPULATE_WRITE` on a range; `false` when the system refuses.
    #[cfg(target_os = "linux")]
    fn populate(addr: usize, len: usize) -> bool {
        // SAFETY: the advice only faults pages in, writable, as a write would, without
        // changing any contents; on a range that is not (or no longer) mapped it fails.
        unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE) == 0 }
    }

    #[cfg(not(target_os = "linux"))]
    fn populate(_addr: usize, _len: usize) -> bool {
        false
    }

    impl<T: Zeroable> std::fmt::Debug for ZeroBuf<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "ZeroBuf({} elements)", self.len())
        }
    }
}

use mem::{Prefault, ZeroBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const EMPTY: u64 = 0;
/// How far ahead [`StateStore::insert_batch`] prefetches index slots, and (tagged index) the
/// arena entries of tag hits.
const SLOT_AHEAD: usize = 32;
const ENTRY_AHEAD: usize = 16;
/// Longest marking kept inline in the index (bytes).
pub const INLINE_MAX: usize = 12;

/// How [`StateStore::insert_batch`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchEnd {
    /// Every key was handled.
    All,
    /// The first `n` keys were handled; the last one was new and brought the number of
    /// states to the limit.
    Stopped(usize),
    /// The first `n` keys were handled; the next one did not fit (2^32 - 1 states).
    Full(usize),
}

/// Packed markings with a hash index. State ids are dense, in insertion order.
///
/// Markings come in as bytes or as little-endian words (`words()` of them, the bytes past
/// `stride` zero); the hot paths use words. The arena holds every marking by id. The index
/// is open-addressing with linear probing, in one of two layouts:
/// - **inline** (markings of at most [`INLINE_MAX`] bytes): 16-byte slots holding the whole
///   marking and the id (`[word 0, word 1 (low 32 bits) | (id + 1) << 32]`), in buckets of
///   four slots (one 64-byte cache line). A marking goes to the first free slot from the
///   start of its home bucket on (buckets fill from their first slot), picked by the top bits
///   of its hash. A lookup reads the home bucket whole, branch-free, and moves to the next
///   bucket only when the home one is full: one cache line per lookup, never the arena. The
///   top-bit home keeps the buckets in hash order, so doubling the index is one sequential
///   pass, in place (its mapping reserved up front grows: see
///   `StateStore::grow_inline_in_place`);
/// - **tagged** (longer markings): 8-byte slots of 32 bits of hash tag and 32 bits of id +
///   1; a tag hit is confirmed by comparing with the arena, a word at a time (each arena
///   chunk has 8 bytes of padding so that the last word of an entry can be loaded whole and
///   masked).
#[derive(Debug)]
pub struct StateStore {
    /// Writes the pages of the next arena chunk and of the index's next half ahead of need
    /// (started with the first request; first field: dropped, so stopped, before the
    /// mappings).
    prefault: Option<Prefault>,
    /// The number of states at which [`StateStore::ahead`] asks for more pages (never when
    /// switched off: [`StateStore::write_ahead`]), and the index words asked for so far.
    ahead_at: usize,
    index_ahead: usize,
    stride: usize,
    /// Words per marking: `stride.div_ceil(8)`.
    words: usize,
    /// Mask of the valid bytes in the last word of a marking.
    last_mask: u64,
    /// States per arena chunk: `1 << chunk_shift` (chunks of about 16 MiB).
    chunk_shift: u32,
    chunks: Vec<ZeroBuf<u8>>,
    /// The next chunk, made ahead by [`StateStore::ahead`].
    spare: Option<ZeroBuf<u8>>,
    len: usize,
    /// Inline layout (2 words per slot) rather than tagged (1 word per slot).
    inline: bool,
    table: ZeroBuf<u64>,
    /// Slots - 1.
    mask: usize,
    /// Inline layout: the home bucket of hash `h` is `h >> shift` (64 - log2 of the buckets).
    shift: u32,
    /// Scratch words for the byte-string entry points.
    scratch: Vec<u64>,
}

impl StateStore {
    /// A store for markings of `stride` bytes, with an inline index when they are short
    /// enough.
    pub fn new(stride: usize) -> StateStore {
        StateStore::with_layout(stride, false)
    }

    /// A store for markings of `stride` bytes; `compact` asks for the tagged index even for
    /// short markings (less memory, slower lookups).
    pub fn with_layout(stride: usize, compact: bool) -> StateStore {
        let stride = stride.max(1);
        let chunk_shift = 24u32
            .saturating_sub(stride.next_power_of_two().trailing_zeros())
            .clamp(8, 22);
        let tail = stride % 8;
        let inline = stride <= INLINE_MAX && !compact;
        StateStore {
            prefault: None,
            ahead_at: AHEAD_MIN,
            index_ahead: 0,
            stride,
            words: stride.div_ceil(8),
            last_mask: if tail == 0 {
                u64::MAX
            } else {
                (1u64 << (8 * tail)) - 1
            },
            chunk_shift,
            chunks: Vec::new(),
            spare: None,
            len: 0,
            inline,
            table: if inline {
                ZeroBuf::growable(2048, mem::growable_room(), true)
            } else {
                ZeroBuf::new(1024, true)
            },
            mask: 1023,
            // 1024 slots: 256 buckets.
            shift: 64 - 8,
            scratch: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Words per marking in the word entry points (`stride.div_ceil(8)`).
    pub fn words(&self) -> usize {
        self.words
    }

    /// Whether the index keeps markings inline (see the type's documentation).
    pub fn is_inline(&self) -> bool {
        self.inline
    }

    /// Chunk and byte offset of a state's entry.
    #[inline(always)]
    fn locate(&self, id: usize) -> (usize, usize) {
        (
            id >> self.chunk_shift,
            (id & ((1 << self.chunk_shift) - 1)) * self.stride,
        )
    }

    /// The packed marking of a state.
    #[inline]
    pub fn get(&self, id: u32) -> &[u8] {
        let (c, off) = self.locate(id as usize);
        &self.chunks[c][off..off + self.stride]
    }

    /// The packed marking of a state as `words()` little-endian words.
    #[inline]
    pub fn get_words(&self, id: u32, out: &mut [u64]) {
        self.arena().get_words(id, out);
    }

    /// Whether state `id` holds the marking `key` (`words()` words).
    #[inline(always)]
    fn holds(&self, id: u32, key: &[u64]) -> bool {
        let (c, off) = self.locate(id as usize);
        let chunk = &self.chunks[c];
        let last = self.words - 1;
        for (j, &k) in key[..last].iter().enumerate() {
            if load_word(chunk, off + 8 * j) != k {
                return false;
            }
        }
        load_word(chunk, off + 8 * last) & self.last_mask == key[last]
    }

    /// Bytes held by the hash index.
    pub fn index_bytes(&self) -> usize {
        self.table.len() * 8
    }

    /// Bytes held by the arena (allocated chunks) and the index.
    pub fn memory_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum::<usize>() + self.table.len() * 8
    }

    /// The id of a marking, if it is stored.
    pub fn find(&self, s: &[u8]) -> Option<u32> {
        if s.len() != self.stride {
            return None;
        }
        let key: Vec<u64> = s.chunks(8).map(le_word).collect();
        self.find_words(&key, hash(s))
    }

    /// [`StateStore::find`] of a marking given as `words()` words (the bytes past `stride`
    /// zero) with its hash ([`hash_words`]).
    pub fn find_words(&self, key: &[u64], h: u64) -> Option<u32> {
        if self.inline {
            let k = [key[0], key.get(1).copied().unwrap_or(0)];
            return self.find_inline(&k, h).ok();
        }
        let tag = h >> 32;
        let mut i = h as usize & self.mask;
        loop {
            let e = self.table[i];
            if e == EMPTY {
                return None;
            }
            if e >> 32 == tag {
                let id = (e as u32).wrapping_sub(1);
                if self.holds(id, key) {
                    return Some(id);
                }
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Inline index: the id of `key` (2 words, the second 0 for short markings), or the
    /// free slot where it would go.
    #[inline(always)]
    fn find_inline(&self, key: &[u64; 2], h: u64) -> Result<u32, usize> {
        let buckets = self.table.as_chunks::<8>().0;
        let mut b = (h >> self.shift) as usize;
        loop {
            let bucket = &buckets[b];
            // Slots holding the key, and the number of used slots (a prefix of the bucket).
            let mut hit = 0u32;
            let mut used = 0usize;
            for j in 0..4 {
                let (w0, w1) = (bucket[2 * j], bucket[2 * j + 1]);
                let full = w1 >> 32 != 0;
                used += full as usize;
                hit |= ((full & (w0 == key[0]) & (w1 as u32 as u64 == key[1])) as u32) << j;
            }
            if hit != 0 {
                let j = hit.trailing_zeros() as usize;
                return Ok((bucket[2 * j + 1] >> 32) as u32 - 1);
            }
            if used < 4 {
                return Err(b * 4 + used);
            }
            b = (b + 1) & (self.mask >> 2);
        }
    }

    /// Hints the CPU to load the index slot of a hash (see [`hash`]); lets several lookups
    /// wait for memory at once.
    #[inline]
    pub fn prefetch(&self, h: u64) {
        let at = if self.inline {
            8 * (h >> self.shift) as usize
        } else {
            h as usize & self.mask
        };
        prefetch_read(&self.table[at]);
    }

    /// Tagged index: hints the CPU to load the arena entry of the first index slot whose tag
    /// matches `h` (the marking a lookup of `h` will most likely compare with). Reads the
    /// index: call it after [`StateStore::prefetch`] had time to bring the slot in. Does
    /// nothing for an inline index.
    #[inline]
    pub fn prefetch_entry(&self, h: u64) {
        if self.inline {
            return;
        }
        let tag = h >> 32;
        let mut i = h as usize & self.mask;
        loop {
            let e = self.table[i];
            if e == EMPTY {
                return;
            }
            if e >> 32 == tag {
                let (c, off) = self.locate((e as u32).wrapping_sub(1) as usize);
                if let Some(c) = self.chunks.get(c) {
                    prefetch_read(&c[off]);
                }
                return;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Inserts a marking: its id and whether it is new. `None` when 2^32 - 1 states are held.
    #[inline]
    pub fn insert(&mut self, s: &[u8]) -> Option<(u32, bool)> {
        let mut key = std::mem::take(&mut self.scratch);
        key.clear();
        key.extend(s.chunks(8).map(le_word));
        key.resize(self.words, 0);
        let r = self.insert_words(&key, hash(s));
        self.scratch = key;
        r
    }

    /// [`StateStore::insert`] of a marking given as `words()` words (the bytes past `stride`
    /// zero) with its hash ([`hash_words`]) already computed.
    #[inline]
    pub fn insert_words(&mut self, key: &[u64], h: u64) -> Option<(u32, bool)> {
        debug_assert_eq!(
            key[self.words - 1] & !self.last_mask,
            0,
            "bytes past the stride"
        );
        let slot = if self.inline {
            let k = [key[0], key.get(1).copied().unwrap_or(0)];
            match self.find_inline(&k, h) {
                Ok(id) => return Some((id, false)),
                Err(i) => i,
            }
        } else {
            let tag = h >> 32;
            let mut i = h as usize & self.mask;
            loop {
                let e = self.table[i];
                if e == EMPTY {
                    break i;
                }
                if e >> 32 == tag {
                    let id = (e as u32).wrapping_sub(1);
                    if self.holds(id, key) {
                        return Some((id, false));
                    }
                }
                i = (i + 1) & self.mask;
            }
        };
        self.add(key, h, slot).map(|id| (id, true))
    }

    /// Stores a new marking (`words()` words, hash `h`) in the arena and in the empty index
    /// slot `slot` found by the lookup; grows the index at 3/4 load. `None` when 2^32 - 1
    /// states are held.
    #[inline(always)]
    fn add(&mut self, key: &[u64], h: u64, slot: usize) -> Option<u32> {
        if self.len >= u32::MAX as usize - 1 {
            return None;
        }
        let id = self.len as u32;
        self.push(key);
        if self.inline {
            self.table[2 * slot] = key[0];
            self.table[2 * slot + 1] = key.get(1).copied().unwrap_or(0) | (id as u64 + 1) << 32;
        } else {
            self.table[slot] = (h >> 32) << 32 | (id as u64 + 1);
        }
        if (self.len + 1) * 4 > (self.mask + 1) * 3 {
            self.grow();
        }
        if self.len >= self.ahead_at {
            self.ahead();
        }
        Some(id)
    }

    /// Inserts the markings in `keys` (`words()` words each, as for
    /// [`StateStore::insert_words`]; `hashes[k]` the hash of the k-th) in order, exactly as
    /// one [`StateStore::insert_words`] call per key would, and pushes each result to `out`
    /// if given (new markings can also be read back from the arena: their ids follow the
    /// ones held before). Meanwhile it prefetches the index slots (and arena entries) of
    /// keys further on, so that many lookups wait for memory at once instead of one after
    /// the other. Stops after the first insertion of a new marking that brings the number of
    /// states to `stop_len`, or before a key that does not fit (2^32 - 1 states).
    pub fn insert_batch(
        &mut self,
        keys: &[u64],
        hashes: &[u64],
        stop_len: usize,
        mut out: Option<&mut Vec<(u32, bool)>>,
    ) -> BatchEnd {
        let n = hashes.len();
        let words = self.words;
        for &h in &hashes[..n.min(SLOT_AHEAD)] {
            self.prefetch(h);
        }
        if self.inline {
            return self.insert_batch_inline(keys, hashes, stop_len, out);
        }
        for k in 0..n {
            if let Some(&h) = hashes.get(k + SLOT_AHEAD) {
                self.prefetch(h);
            }
            if let Some(&h) = hashes.get(k + ENTRY_AHEAD) {
                self.prefetch_entry(h);
            }
            let key = &keys[k * words..(k + 1) * words];
            let Some(r) = self.insert_words(key, hashes[k]) else {
                return BatchEnd::Full(k);
            };
            if let Some(out) = out.as_deref_mut() {
                out.push(r);
            }
            if r.1 && self.len >= stop_len {
                return BatchEnd::Stopped(k + 1);
            }
        }
        BatchEnd::All
    }

    /// [`StateStore::insert_batch`] for an inline index, the first slots already prefetched.
    /// Runs of markings already held are looked up with the index borrowed once (its base,
    /// length and shift stay in registers); a new marking ends the run.
    fn insert_batch_inline(
        &mut self,
        keys: &[u64],
        hashes: &[u64],
        stop_len: usize,
        mut out: Option<&mut Vec<(u32, bool)>>,
    ) -> BatchEnd {
        let words = self.words;
        let n = hashes.len();
        let mut k = 0;
        while k < n {
            let (buckets, shift) = (self.table.as_chunks::<8>().0, self.shift);
            // The first key from `k` on that is not held, and its free slot.
            let mut new = None;
            while k < n {
                if let Some(&ahead) = hashes.get(k + SLOT_AHEAD) {
                    prefetch_read(&buckets[(ahead >> shift) as usize]);
                }
                let key = [
                    keys[k * words],
                    if words == 2 { keys[k * words + 1] } else { 0 },
                ];
                let found = self.find_inline(&key, hashes[k]);
                match found {
                    Ok(id) => {
                        if let Some(out) = out.as_deref_mut() {
                            out.push((id, false));
                        }
                        k += 1;
                    }
                    Err(slot) => {
                        new = Some((key, slot));
                        break;
                    }
                }
            }
            let Some((key, slot)) = new else {
                break;
            };
            let Some(id) = self.add(&key[..words], hashes[k], slot) else {
                return BatchEnd::Full(k);
            };
            if let Some(out) = out.as_deref_mut() {
                out.push((id, true));
            }
            k += 1;
            if self.len >= stop_len {
                return BatchEnd::Stopped(k);
            }
        }
        BatchEnd::All
    }

    /// Appends a marking to the arena. Whole words are written: the bytes past `stride` are
    /// zero and land in the next (not yet used) entry or the chunk's padding.
    fn push(&mut self, key: &[u64]) {
        let (c, off) = self.locate(self.len);
        if c == self.chunks.len() {
            let chunk = self.new_chunk();
            self.chunks.push(chunk);
        }
        let chunk = &mut self.chunks[c];
        for (j, &w) in key[..self.words].iter().enumerate() {
            let at = off + 8 * j;
            match chunk.get_mut(at..at + 8) {
                Some(dst) => dst.copy_from_slice(&w.to_le_bytes()),
                None => {
                    let n = chunk.len() - at;
                    chunk[at..].copy_from_slice(&w.to_le_bytes()[..n]);
                }
            }
        }
        self.len += 1;
    }

    /// Whether pages are written ahead of need by a thread of their own (see
    /// [`StateStore::ahead`]; on by default): worth it when a core would be idle otherwise,
    /// not when the exploration's threads take every core (a third thread on two cores
    /// holds them up at their barriers).
    pub fn write_ahead(&mut self, on: bool) {
        if on {
            self.ahead_at = self.ahead_at.min(AHEAD_MIN.max(self.len));
        } else {
            self.ahead_at = usize::MAX;
        }
    }

    /// Asks the [`Prefault`] thread for the pages the next states will write, and sets
    /// the number of states at which to ask again (`ahead_at`):
    /// - the next arena chunk (kept aside until used: see [`StateStore::new_chunk`]) once
    ///   the last one is half full;
    /// - an inline index in its own growable mapping: its next half (the pages its next
    ///   doubling writes), in eighths, the first at 9/16 load, the last at 45/64 (the index
    ///   doubles at 3/4): the population keeps ahead of the doubling, and an exploration
    ///   ending below 9/16 load (3/8 after a doubling) populates nothing unused.
    #[cold]
    fn ahead(&mut self) {
        let per = 1usize << self.chunk_shift;
        let mut wanted = Vec::new();
        // The next arena chunk.
        let arena_at = (self.chunks.len() * per).saturating_sub(per / 2);
        if self.len >= arena_at && !self.chunks.is_empty() && self.spare.is_none() {
            let chunk = ZeroBuf::new(self.chunk_bytes(), true);
            wanted.push(chunk.mapped());
            self.spare = Some(chunk);
        }
        let made = self.chunks.len() + usize::from(self.spare.is_some());
        let mut at = (made * per).saturating_sub(per / 2);
        // The index's next half, eighth by eighth.
        let slots = self.mask + 1;
        if self.inline {
            // The first eighth at the next size (asked for then) unless one comes before.
            at = at.min(slots);
        }
        if self.inline && slots * 16 >= AHEAD_INDEX_MIN {
            let piece = |i: usize| slots / 16 * 9 + i * slots / 64;
            let done = (0..8).take_while(|&i| self.len >= piece(i)).count();
            if done > 0 {
                // The first `done` eighths of the next half (`2 slots` words from the end).
                let words = 2 * slots + done * (2 * slots / 8);
                if let Some(range) = self.table.open_ahead(self.index_ahead, words) {
                    wanted.push(range);
                    self.index_ahead = words;
                }
            }
            if done < 8 {
                at = at.min(piece(done));
            }
        }
        self.ahead_at = at.max(self.len + 1);
        if wanted.is_empty() {
            return;
        }
        if self.prefault.is_none() {
            self.prefault = Prefault::start();
        }
        if let Some(p) = &self.prefault {
            for (addr, len) in wanted {
                p.request(addr, len);
            }
        }
    }

    /// Stops the [`Prefault`] thread's work on a buffer (before it is unmapped).
    fn forget<T: mem::Zeroable>(&self, buf: &ZeroBuf<T>) {
        if let Some(p) = &self.prefault {
            let (addr, len) = buf.mapped();
            p.forget(addr, len);
        }
    }

    /// Bytes of an arena chunk (its states and 8 bytes of padding).
    fn chunk_bytes(&self) -> usize {
        (self.stride << self.chunk_shift) + 8
    }

    /// The next arena chunk: the one made ahead, else a new one. Huge pages from the second
    /// chunk on: a small state space touches a few 4 KiB pages of the first chunk instead of
    /// a zeroed 2 MiB one.
    fn new_chunk(&mut self) -> ZeroBuf<u8> {
        self.spare
            .take()
            .unwrap_or_else(|| ZeroBuf::new(self.chunk_bytes(), !self.chunks.is_empty()))
    }

    /// Index slots once `len` states are held (the index doubles at 3/4 load).
    fn slots_for(&self, len: usize) -> usize {
        let mut slots = self.mask + 1;
        while (len + 1) * 4 > slots * 3 {
            slots *= 2;
        }
        slots
    }

    /// [`StateStore::memory_bytes`] once the store holds `len` states (at least its current
    /// number), inserted one by one or through [`StateStore::reserve`] and
    /// an [`Appender`] (arena chunks reserved past them
    /// not counted: [`StateStore::trim_arena`] gives them back).
    pub fn memory_bytes_at(&self, len: usize) -> usize {
        let chunk = (self.stride << self.chunk_shift) + 8;
        let chunks = len.max(self.len).div_ceil(1 << self.chunk_shift);
        let slots = self.slots_for(len);
        chunks * chunk + slots * if self.inline { 16 } else { 8 }
    }

    /// Grows the index to the size it has after `len` states were inserted one by one (after
    /// slots were claimed and numbered through [`StateStore::split_index`]).
    pub fn reserve(&mut self, len: usize) {
        self.reserve_with(len, 1);
    }

    /// [`StateStore::reserve`] with `threads` threads doubling an inline index.
    pub fn reserve_with(&mut self, len: usize, threads: usize) {
        while (len + 1) * 4 > (self.mask + 1) * 3 {
            if self.inline && threads > 1 {
                if !self.grow_inline_in_place_threads(threads, PAR_GROW_MIN) {
                    self.grow_inline_threads(threads);
                }
            } else {
                self.grow();
            }
        }
    }

    /// Doubles an inline index in its own mapping with `threads` threads (see
    /// [`StateStore::grow_inline_in_place`] for one thread); `false` (nothing changed) when
    /// the mapping cannot grow.
    ///
    /// In rounds: round `r` reads the old buckets `lo..hi` (`hi` the old number of buckets,
    /// then halving; `lo = hi / 2`), split between the threads, empties them, and places each
    /// of their markings whose new home is at least `2 lo = hi` in the first free slot from
    /// its home on (claimed by compare-and-swap, as [`SharedIndex`] does: the used slots of a
    /// bucket stay a prefix of it). The buckets a round writes (from `hi` on) are never read
    /// by it, and those from `hi` to `2 hi` were emptied by the round before (or are the new
    /// half): so a placed marking only passes full buckets that stay full. The markings
    /// whose new home lies below `hi` (they had overflowed from a lower old bucket), or
    /// that would wrap around the end, are set aside. Once a round would give a thread fewer
    /// than `min` buckets, the rest (`0..hi`) is [`StateStore::grow_inline_in_place`]'s pass
    /// by the calling thread, and the markings set aside are placed last, with wrap-around.
    /// Each thread touches the new pages of its own part of the new half.
    fn grow_inline_in_place_threads(&mut self, threads: usize, min: usize) -> bool {
        let old_buckets = (self.mask + 1) / 4;
        debug_assert!(old_buckets.is_power_of_two());
        if !self.table.grow_in_place(old_buckets * 16) {
            return false;
        }
        let n = 2 * old_buckets;
        let shift = self.shift - 1;
        let (words, stride) = (self.words, self.stride);
        let table = self.table.as_atomic();
        // One thread's part `part` of the round reading the old buckets from `lo` to `2 lo`.
        let round = |part: std::ops::Range<usize>, lo: usize| {
            let mut aside = Vec::new();
            for q in part {
                let bucket = &table[8 * q..8 * q + 8];
                for j in 0..4 {
                    let w1 = bucket[2 * j + 1].load(Ordering::Relaxed);
                    if w1 >> 32 == 0 {
                        break;
                    }
                    let w0 = bucket[2 * j].load(Ordering::Relaxed);
                    bucket[2 * j].store(EMPTY, Ordering::Relaxed);
                    bucket[2 * j + 1].store(EMPTY, Ordering::Relaxed);
                    let key = [w0, w1 & 0xFFFF_FFFF];
                    let home = (hash_words(&key[..words], stride) >> shift) as usize;
                    if home < 2 * lo || !claim_from(table, home, n, [w0, w1]) {
                        aside.push((home, [w0, w1]));
                    }
                }
            }
            aside
        };
        let round = &round;
        let mut aside = Vec::new();
        let mut hi = old_buckets;
        let min = min.max(1);
        while threads > 1 && hi / 2 >= threads * min {
            let lo = hi / 2;
            let per = lo / threads;
            let part = |t: usize| {
                lo + t * per..if t + 1 == threads {
                    hi
                } else {
                    lo + (t + 1) * per
                }
            };
            std::thread::scope(|sc| {
                let spawned: Vec<_> = (1..threads)
                    .map(|t| {
                        let run = std::thread::Builder::new()
                            .stack_size(256 << 10)
                            .spawn_scoped(sc, move || round(part(t), lo));
                        run.map_err(|_| t)
                    })
                    .collect();
                aside.extend(round(part(0), lo));
                for s in spawned {
                    match s {
                        Ok(h) => match h.join() {
                            Ok(a) => aside.extend(a),
                            Err(panic) => std::panic::resume_unwind(panic),
                        },
                        // Not started: its part on this thread.
                        Err(t) => aside.extend(round(part(t), lo)),
                    }
                }
            });
            hi = lo;
        }
        // The old buckets left (`0..hi`) by one thread, from the last down: a marking whose
        // new home lies at or after the bucket read goes there (the buckets from the one
        // read on hold only placed markings), the others aside.
        for q in (0..hi).rev() {
            let bucket = &table[8 * q..8 * q + 8];
            let mut held = [[EMPTY; 2]; 4];
            for (j, w) in held.iter_mut().enumerate() {
                *w = [
                    bucket[2 * j].load(Ordering::Relaxed),
                    bucket[2 * j + 1].load(Ordering::Relaxed),
                ];
                bucket[2 * j].store(EMPTY, Ordering::Relaxed);
                bucket[2 * j + 1].store(EMPTY, Ordering::Relaxed);
            }
            for [w0, w1] in held {
                if w1 >> 32 == 0 {
                    break;
                }
                let key = [w0, w1 & 0xFFFF_FFFF];
                let home = (hash_words(&key[..words], stride) >> shift) as usize;
                if home < q || !claim_from(table, home, n, [w0, w1]) {
                    aside.push((home, [w0, w1]));
                }
            }
        }
        // Wrapping around the end: every other marking is in place.
        for (home, w) in aside {
            let placed = claim_from(table, home, n, w) || claim_from(table, 0, n, w);
            debug_assert!(placed, "a full index");
        }
        self.mask = n * 4 - 1;
        self.shift = shift;
        true
    }

    /// Doubles an inline index with `threads` threads into a new mapping, when its own
    /// cannot grow (see [`StateStore::grow_inline_in_place_threads`]): each moves the
    /// markings of a range of old buckets (claiming new slots by compare-and-swap, as
    /// [`SharedIndex`] does) and gives the old index back behind it, as [`StateStore::grow`]
    /// does. The new mapping can grow in place (for the next doublings).
    fn grow_inline_threads(&mut self, threads: usize) {
        // The old index goes: no population may run on it.
        self.forget(&self.table);
        self.index_ahead = 0;
        let slots = (self.mask + 1) * 2;
        let (nmask, shift) = (slots - 1, self.shift - 1);
        let (words, stride) = (self.words, self.stride);
        let mut table = ZeroBuf::<u64>::growable(slots * 2, mem::growable_room(), true);
        let new = table.as_atomic();
        let old_buf = &mut self.table;
        let old_len = old_buf.len();
        // Element ranges of the old index per thread, whole buckets.
        let per = (old_len / 8).div_ceil(threads) * 8;
        {
            let old_view: &ZeroBuf<u64> = old_buf;
            // SAFETY of the reads below: every element is read once, by the thread of its
            // range, before that thread releases the range.
            let old_ptr = old_view.as_ptr() as usize;
            let work = move |range: std::ops::Range<usize>| {
                const BLOCK: usize = 1 << 20;
                let mut start = range.start;
                while start < range.end {
                    let end = (start + BLOCK).min(range.end);
                    for i in (start..end).step_by(2) {
                        // SAFETY: `i + 1 < old_len`, in the mapping, not released yet (see
                        // above); no thread writes the old index.
                        let (w0, w1) = unsafe {
                            let p = (old_ptr as *const u64).add(i);
                            (p.read(), p.add(1).read())
                        };
                        if w1 >> 32 == 0 {
                            continue;
                        }
                        let key = [w0, w1 & 0xFFFF_FFFF];
                        let h = hash_words(&key[..words], stride);
                        let mut b = (h >> shift) as usize;
                        'placed: loop {
                            for j in 0..4 {
                                let at = 2 * (4 * b + j);
                                if new[at + 1]
                                    .compare_exchange(
                                        EMPTY,
                                        w1,
                                        Ordering::Relaxed,
                                        Ordering::Relaxed,
                                    )
                                    .is_ok()
                                {
                                    new[at].store(w0, Ordering::Relaxed);
                                    break 'placed;
                                }
                            }
                            b = (b + 1) & (nmask >> 2);
                        }
                    }
                    // SAFETY: this thread's elements `start..end` were read above, and
                    // nothing reads them again.
                    unsafe { old_view.release_range(start, end) };
                    start = end;
                }
            };
            let work = &work;
            std::thread::scope(|sc| {
                for t in 1..threads {
                    let range = (t * per).min(old_len)..((t + 1) * per).min(old_len);
                    if std::thread::Builder::new()
                        .stack_size(256 << 10)
                        .spawn_scoped(sc, move || work(range.clone()))
                        .is_err()
                    {
                        work((t * per).min(old_len)..((t + 1) * per).min(old_len));
                    }
                }
                work(0..per.min(old_len));
            });
        }
        self.table = table;
        self.mask = nmask;
        self.shift = shift;
    }

    /// Allocates the arena chunks of the ids below `len`, for an [`Appender`] (see
    /// [`StateStore::split_index`]). Their pages cost nothing until written;
    /// [`StateStore::trim_arena`] gives back the chunks no state uses.
    pub fn reserve_arena(&mut self, len: usize) {
        let per = 1usize << self.chunk_shift;
        while self.chunks.len() < len.div_ceil(per) {
            let chunk = self.new_chunk();
            self.chunks.push(chunk);
        }
    }

    /// Drops the arena chunks past the last state (reserved by
    /// [`StateStore::reserve_arena`] and not used): the store is then as one filled one
    /// marking at a time.
    pub fn trim_arena(&mut self) {
        let keep = self.len.div_ceil(1 << self.chunk_shift);
        while self.chunks.len() > keep {
            let Some(chunk) = self.chunks.pop() else {
                break;
            };
            // The first chunk reserved and not used is kept (the next one to use), the others
            // go (without population running on them).
            if self.chunks.len() == keep && self.spare.is_none() {
                self.spare = Some(chunk);
            } else {
                self.forget(&chunk);
            }
        }
    }

    /// Takes in the states `len()..len` written through the [`Appender`] of
    /// [`StateStore::split_index`] (each entry once) and indexed through
    /// [`SharedIndex::publish`]. The chunks reserved past them stay (for the next ones)
    /// until [`StateStore::trim_arena`].
    pub fn appended(&mut self, len: usize) {
        assert!(
            len <= self.chunks.len() << self.chunk_shift && len < u32::MAX as usize,
            "appended states outside the reserved arena"
        );
        self.len = len;
        if self.len >= self.ahead_at {
            self.ahead();
        }
    }

    /// States the arena has room for without allocating.
    pub fn arena_room(&self) -> usize {
        self.chunks.len() << self.chunk_shift
    }

    /// The arena and, for an inline index, the index as a [`SharedIndex`] through which
    /// several threads look markings up and claim slots for new ones while they read the
    /// arena, and an [`Appender`] through which they write new markings to the chunks
    /// reserved by [`StateStore::reserve_arena`] (after the last lookup). `None` for a tagged
    /// index (its lookups compare with the arena, where a new marking has no entry yet).
    pub fn split_index(&mut self) -> Option<(Arena<'_>, SharedIndex<'_>, Appender)> {
        if !self.inline {
            return None;
        }
        let appender = Appender {
            chunks: self
                .chunks
                .iter_mut()
                .map(|c| c.as_mut_ptr() as usize)
                .collect(),
            chunk_shift: self.chunk_shift,
            stride: self.stride,
        };
        let table: &mut [u64] = &mut self.table;
        assert_eq!(
            table.as_ptr() as usize % align_of::<AtomicU64>(),
            0,
            "index alignment"
        );
        // SAFETY: `AtomicU64` has the size and bit validity of `u64`, the alignment is
        // checked above, and the exclusive borrow of the table lasts as long as the view.
        let table = unsafe { &*(table as *mut [u64] as *const [AtomicU64]) };
        let index = SharedIndex {
            table,
            mask: self.mask,
            shift: self.shift,
        };
        let arena = Arena {
            chunks: &self.chunks,
            chunk_shift: self.chunk_shift,
            stride: self.stride,
            words: self.words,
            last_mask: self.last_mask,
        };
        Some((arena, index, appender))
    }

    /// The arena (read-only view).
    #[inline]
    pub fn arena(&self) -> Arena<'_> {
        Arena {
            chunks: &self.chunks,
            chunk_shift: self.chunk_shift,
            stride: self.stride,
            words: self.words,
            last_mask: self.last_mask,
        }
    }

    /// How many slots [`SharedIndex::find_or_claim`] may claim before the next
    /// [`StateStore::reserve`] with the index filled to at most 7/8.
    pub fn claim_room(&self) -> usize {
        ((self.mask + 1) / 8 * 7).saturating_sub(self.len)
    }

    /// Frees a slot claimed through [`SharedIndex::find_or_claim`]. Freeing every slot
    /// claimed since the last [`StateStore::reserve`] gives back the index as it was (the
    /// used slots of a bucket are a prefix of it, and a marking older than a claimed one
    /// never probes past it).
    pub fn unclaim(&mut self, slot: usize) {
        self.table[2 * slot] = EMPTY;
        self.table[2 * slot + 1] = EMPTY;
    }

    /// Doubles the index. Inline: in place when its mapping can grow, else (below) the old
    /// buckets are read in order and each marking goes to
    /// the new bucket of its hash's top bits, which are in the same order: the new index is
    /// written nearly sequentially. Tagged: the arena is read in id order (sequentially) and
    /// the new slots of a block of states are prefetched before they are written.
    fn grow(&mut self) {
        let slots = (self.mask + 1) * 2;
        let mask = slots - 1;
        if self.inline && self.grow_inline_in_place() {
            return;
        }
        // The old index goes: no population may run on it.
        self.forget(&self.table);
        self.index_ahead = 0;
        if self.inline {
            let mut table = ZeroBuf::<u64>::new(slots * 2, true);
            let shift = self.shift - 1;
            let buckets = table.as_chunks_mut::<8>().0;
            // The old index is read in blocks of 8 MiB, each given back to the system once
            // read: the new index's pages are touched about as fast (it is written nearly
            // in order), so both together never take much more than the new one.
            const BLOCK: usize = 1 << 20;
            let old_len = self.table.len();
            let mut start = 0;
            while start < old_len {
                let end = (start + BLOCK).min(old_len);
                for slot in self.table[start..end].as_chunks::<2>().0 {
                    if slot[1] >> 32 == 0 {
                        continue;
                    }
                    let key = [slot[0], slot[1] & 0xFFFF_FFFF];
                    let h = hash_words(&key[..self.words], self.stride);
                    let mut b = (h >> shift) as usize;
                    loop {
                        let bucket = &mut buckets[b];
                        if let Some(j) = (0..4).find(|&j| bucket[2 * j + 1] == EMPTY) {
                            bucket[2 * j] = slot[0];
                            bucket[2 * j + 1] = slot[1];
                            break;
                        }
                        b = (b + 1) & (mask >> 2);
                    }
                }
                self.table.release_prefix(end);
                start = end;
            }
            self.table = table;
            self.mask = mask;
            self.shift = shift;
            return;
        }
        // Tagged: the new index is built from the arena, so the old one goes first.
        self.table = ZeroBuf::new(1, false);
        let mut table = ZeroBuf::<u64>::new(slots, true);
        const BLOCK: usize = 32;
        let mut key = vec![0u64; self.words];
        let mut hs = [0u64; BLOCK];
        let mut start = 0;
        while start < self.len {
            let end = (start + BLOCK).min(self.len);
            for (id, h) in (start..end).zip(hs.iter_mut()) {
                self.get_words(id as u32, &mut key);
                *h = hash_words(&key, self.stride);
                prefetch_read(&table[*h as usize & mask]);
            }
            for (id, &h) in (start..end).zip(hs.iter()) {
                let mut i = h as usize & mask;
                while table[i] != EMPTY {
                    i = (i + 1) & mask;
                }
                table[i] = (h >> 32) << 32 | (id as u64 + 1);
            }
            start = end;
        }
        self.table = table;
        self.mask = mask;
    }

    /// Doubles an inline index in its own mapping (see [`ZeroBuf::grow_in_place`]): the
    /// doubling touches the new half's pages only, instead of a whole new index's. `false`
    /// (nothing changed) when the mapping cannot grow.
    ///
    /// Old bucket `b` is the home of the hashes whose new home is bucket `2b` or `2b + 1`.
    /// The old buckets are taken from the last down: each is read, emptied, and each of its
    /// markings placed in the first free slot from its new home on. Its new home lies at or
    /// after the old bucket unless the marking lay more than about half its position away
    /// from its old home: so the buckets from the one just read on hold only placed markings
    /// (never emptied again), and every placed marking has only full buckets between its new
    /// home and its slot, and the used slots of each bucket stay a prefix of it. The rare
    /// markings whose new home lies before the bucket read, or that would wrap around the
    /// end of the new index, are set aside and placed at the end, with wrap-around, into the
    /// finished index. One pass, reading the old index once, nearly in order.
    fn grow_inline_in_place(&mut self) -> bool {
        let old_buckets = (self.mask + 1) / 4;
        if !self.table.grow_in_place(old_buckets * 16) {
            return false;
        }
        let buckets_n = 2 * old_buckets;
        let shift = self.shift - 1;
        let (words, stride) = (self.words, self.stride);
        let buckets = self.table.as_chunks_mut::<8>().0;
        debug_assert_eq!(buckets.len(), buckets_n);
        // Places `w` in the first free slot from bucket `b` on, up to the last bucket
        // (`wrap`: then on from the first one); `false` when there is none.
        fn place(buckets: &mut [[u64; 8]], mut b: usize, w: [u64; 2], wrap: bool) -> bool {
            loop {
                let bucket = &mut buckets[b];
                if let Some(j) = (0..4).find(|&j| bucket[2 * j + 1] >> 32 == 0) {
                    bucket[2 * j] = w[0];
                    bucket[2 * j + 1] = w[1];
                    return true;
                }
                b += 1;
                if b == buckets.len() {
                    if !wrap {
                        return false;
                    }
                    b = 0;
                }
            }
        }
        let mut aside = Vec::new();
        for q in (0..old_buckets).rev() {
            let bucket = buckets[q];
            if bucket[1] >> 32 == 0 {
                continue;
            }
            buckets[q] = [EMPTY; 8];
            for slot in bucket.as_chunks::<2>().0 {
                if slot[1] >> 32 == 0 {
                    break;
                }
                let key = [slot[0], slot[1] & 0xFFFF_FFFF];
                let home = (hash_words(&key[..words], stride) >> shift) as usize;
                if home < q || !place(buckets, home, *slot, false) {
                    aside.push((home, *slot));
                }
            }
        }
        for (home, slot) in aside {
            place(buckets, home, slot, true);
        }
        self.mask = buckets_n * 4 - 1;
        self.shift = shift;
        true
    }
}

/// States from which [`StateStore::ahead`] runs (below, the pages cost little).
const AHEAD_MIN: usize = 1 << 16;
/// Index size (bytes) from which [`StateStore::ahead`] populates its next half.
const AHEAD_INDEX_MIN: usize = 16 << 20;

/// Doublings of an inline index by several threads: rounds smaller than this many buckets
/// per thread are left to one thread.
const PAR_GROW_MIN: usize = 1 << 12;

/// Places the slot words `w` of an inline index in the first free slot from bucket `b` on,
/// up to the last of the `buckets` (claimed by compare-and-swap of its second word, so that
/// threads placing at once keep the used slots of a bucket a prefix of it); `false` when
/// every slot from `b` on is used.
fn claim_from(table: &[AtomicU64], mut b: usize, buckets: usize, w: [u64; 2]) -> bool {
    while b < buckets {
        for j in 0..4 {
            let at = 8 * b + 2 * j;
            // No plain read first: the first access to a page of the new half would then
            // map the huge zero page, and the write after it fault again to replace it.
            if table[at + 1]
                .compare_exchange(EMPTY, w[1], Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                table[at].store(w[0], Ordering::Relaxed);
                return true;
            }
        }
        b += 1;
    }
    false
}

/// A read-only view of a [`StateStore`]'s arena (see [`StateStore::split_index`]).
#[derive(Clone, Copy, Debug)]
pub struct Arena<'a> {
    chunks: &'a [ZeroBuf<u8>],
    chunk_shift: u32,
    stride: usize,
    words: usize,
    last_mask: u64,
}

impl Arena<'_> {
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The packed marking of a state as `words` little-endian words (as
    /// [`StateStore::get_words`]).
    #[inline(always)]
    pub fn get_words(&self, id: u32, out: &mut [u64]) {
        let id = id as usize;
        let (c, off) = (
            id >> self.chunk_shift,
            (id & ((1 << self.chunk_shift) - 1)) * self.stride,
        );
        let chunk = &self.chunks[c];
        for (j, w) in out[..self.words].iter_mut().enumerate() {
            *w = load_word(chunk, off + 8 * j);
        }
        out[self.words - 1] &= self.last_mask;
    }
}

/// Writes markings of at most [`INLINE_MAX`] bytes to arena entries reserved by
/// [`StateStore::reserve_arena`], from several threads at once (see
/// [`StateStore::split_index`]; [`StateStore::appended`] takes them in).
#[derive(Debug)]
pub struct Appender {
    /// The chunks' first bytes.
    chunks: Vec<usize>,
    chunk_shift: u32,
    stride: usize,
}

impl Appender {
    /// Writes the marking `key` (2 words, little-endian, the bytes past the stride zero) to
    /// the entry of state `id`: exactly its `stride` bytes, so that threads writing
    /// neighbouring entries never touch the same byte.
    ///
    /// # Safety
    /// `id` lies in the chunks reserved before [`StateStore::split_index`], and no other
    /// thread reads or writes entry `id` meanwhile (nor reads the arena through an
    /// [`Arena`] view while entries are written).
    #[inline(always)]
    pub unsafe fn write(&self, id: usize, key: [u64; 2]) {
        let (c, off) = (
            id >> self.chunk_shift,
            (id & ((1 << self.chunk_shift) - 1)) * self.stride,
        );
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&key[0].to_le_bytes());
        bytes[8..].copy_from_slice(&key[1].to_le_bytes());
        let n = self.stride.min(INLINE_MAX);
        let dst = self.chunks[c] as *mut u8;
        // Pieces of constant size (a call to `memcpy` for 10 bytes costs more than the copy).
        let mut at = 0;
        for size in [8, 4, 2, 1] {
            if n - at >= size {
                // SAFETY: `off + at + size <= off + stride`: within the entry, which lies in a
                // reserved chunk (the caller's contract) of `stride << chunk_shift` bytes (+
                // padding), and no one else accesses it meanwhile.
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr().add(at), dst.add(off + at), size)
                };
                at += size;
            }
        }
    }
}

/// The id field of a slot being written by [`SharedIndex::find_or_claim`] (its marking's
/// first word not stored yet).
const BUSY: u64 = u32::MAX as u64;

/// An inline index shared by several threads (see [`StateStore::split_index`]). A thread
/// looks a marking up and, when it is absent, claims the first free slot from its home
/// bucket on (a compare-and-swap of the slot's second word), so the used slots of a bucket
/// stay a prefix of it, as lookups expect. A claimed slot holds, in place of an id, a value
/// chosen by the claimer; a thread finding the marking again with a smaller value lowers it
/// (`fetch_min`): the value left is the smallest one the marking was met with. The caller
/// then numbers the claimed markings ([`SharedIndex::publish`]) or frees them
/// ([`StateStore::unclaim`]).
#[derive(Debug)]
pub struct SharedIndex<'a> {
    table: &'a [AtomicU64],
    mask: usize,
    shift: u32,
}

impl SharedIndex<'_> {
    /// A slot claimed through [`SharedIndex::find_or_claim`] (after every claim is done):
    /// its marking (2 words) and its value (the smallest one it was claimed or met with).
    #[inline(always)]
    pub fn claimed(&self, slot: usize) -> ([u64; 2], u32) {
        let w0 = self.table[2 * slot].load(Ordering::Relaxed);
        let w1 = self.table[2 * slot + 1].load(Ordering::Relaxed);
        ([w0, w1 & 0xFFFF_FFFF], (w1 >> 32) as u32)
    }

    /// Gives a slot claimed through [`SharedIndex::find_or_claim`] (after every claim is
    /// done) the id of its marking, whose second word is `key1`.
    #[inline(always)]
    pub fn publish(&self, slot: usize, key1: u64, id: u32) {
        self.table[2 * slot + 1].store(key1 | (u64::from(id) + 1) << 32, Ordering::Relaxed);
    }

    /// Hints the CPU to load a slot (as numbered by [`SharedIndex::find_or_claim`]).
    #[inline(always)]
    pub fn prefetch_slot(&self, slot: usize) {
        prefetch_read(&self.table[2 * slot]);
    }

    /// Hints the CPU to load the home bucket of hash `h`.
    #[inline(always)]
    pub fn prefetch(&self, h: u64) {
        prefetch_read(&self.table[8 * (h >> self.shift) as usize]);
    }

    /// Looks `key` (a marking of at most 12 bytes as 2 words, hash `h`) up: `None` when
    /// the index holds it (lowering its value to `value` if it was claimed with a larger
    /// one), else the slot claimed for it with `value` (below `u32::MAX`), as a slot number
    /// for [`SharedIndex::claimed`].
    #[inline(always)]
    pub fn find_or_claim(&self, key: [u64; 2], h: u64, value: u32) -> Option<usize> {
        debug_assert!(u64::from(value) < BUSY);
        let mine = key[1] | u64::from(value) << 32;
        let mut b = (h >> self.shift) as usize;
        loop {
            let bucket = &self.table[8 * b..8 * b + 8];
            // As `StateStore::find_inline`, branch-free: the slots holding the key, the used
            // ones (a prefix) and those being written. Second words first: a first word is
            // read after the second word that published it.
            let w1: [u64; 4] = std::array::from_fn(|j| bucket[2 * j + 1].load(Ordering::Acquire));
            let (mut hit, mut used, mut busy) = (0u32, 0usize, false);
            for (j, &w1) in w1.iter().enumerate() {
                let full = w1 >> 32 != 0;
                let writing = w1 >> 32 == BUSY;
                busy |= writing;
                used += full as usize;
                let w0 = bucket[2 * j].load(Ordering::Relaxed);
                hit |=
                    ((full & !writing & (w0 == key[0]) & (w1 & 0xFFFF_FFFF == key[1])) as u32) << j;
            }
            if hit != 0 {
                let j = hit.trailing_zeros() as usize;
                if w1[j] > mine {
                    bucket[2 * j + 1].fetch_min(mine, Ordering::Relaxed);
                }
                return None;
            }
            if busy {
                // Another thread is writing a marking here (perhaps this one): read again.
                std::hint::spin_loop();
                continue;
            }
            if used == 4 {
                b = (b + 1) & (self.mask >> 2);
                continue;
            }
            let word = &bucket[2 * used + 1];
            if word
                .compare_exchange(EMPTY, BUSY << 32, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                bucket[2 * used].store(key[0], Ordering::Relaxed);
                word.store(mine, Ordering::Release);
                return Some(4 * b + used);
            }
            // Another thread took the slot first: read the bucket again.
        }
    }
}

/// The little-endian word at byte `at` of an arena chunk (`at + 8` may pass the end by the
/// chunk's padding only when the chunk is shorter than expected: then zero-padded).
#[inline(always)]
fn load_word(chunk: &[u8], at: usize) -> u64 {
    match chunk.get(at..at + 8) {
        Some(b) => le_word(b),
        None => le_word(chunk.get(at..).unwrap_or_default()),
    }
}

/// Hints the CPU to load the cache line of `r`.
#[inline(always)]
pub fn prefetch_read<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: prefetching is a hint; it never faults and the pointer comes from a reference.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(r as *const T as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

const HASH_K: u64 = 0x9E37_79B9_7F4A_7C15;

#[inline(always)]
fn hash_seed(len: usize) -> u64 {
    len as u64 ^ 0x2545_F491_4F6C_DD1D
}

#[inline(always)]
fn hash_mix(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(HASH_K).rotate_left(29)
}

#[inline(always)]
fn hash_finish(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

/// Up to 8 bytes as a little-endian word, zero-padded (the words of the word entry points of
/// [`StateStore`] are the 8-byte chunks of a packed marking read this way).
#[inline(always)]
pub fn le_word(b: &[u8]) -> u64 {
    match <[u8; 8]>::try_from(b) {
        Ok(a) => u64::from_le_bytes(a),
        Err(_) => b
            .iter()
            .enumerate()
            .fold(0, |w, (i, &x)| w | (x as u64) << (8 * i)),
    }
}

/// A fast 64-bit hash of a byte string (8-byte words, multiply-xorshift, final avalanche).
#[inline]
pub fn hash(s: &[u8]) -> u64 {
    let mut h = hash_seed(s.len());
    for c in s.chunks(8) {
        h = hash_mix(h, le_word(c));
    }
    hash_finish(h)
}

/// [`hash`] of the `len` bytes held little-endian in `words` (`len.div_ceil(8)` words, the
/// bytes past `len` zero): the same value, without going through bytes.
#[inline]
pub fn hash_words(words: &[u64], len: usize) -> u64 {
    let mut h = hash_seed(len);
    for &w in words {
        h = hash_mix(h, w);
    }
    hash_finish(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips_every_width() {
        for max in [1u64, 3, 15, 255, 65535, u32::MAX as u64] {
            let pk = Packing::for_max(7, max);
            assert_eq!(pk.max_value(), max);
            let m: Vec<u32> = (0..7u64).map(|i| ((i * 7919) % (max + 1)) as u32).collect();
            let mut buf = vec![0u8; pk.stride()];
            pk.pack(&m, &mut buf);
            let mut back = Vec::new();
            pk.unpack(&buf, &mut back);
            assert_eq!(back, m, "bits {}", pk.bits);
        }
        assert_eq!(Packing::for_max(75, 1).stride(), 10);
    }

    #[test]
    fn store_dedups_and_grows() {
        let mut st = StateStore::new(3);
        for i in 0..5000u32 {
            let b = i.to_le_bytes();
            assert_eq!(st.insert(&b[..3]), Some((i, true)));
        }
        for i in (0..5000u32).rev() {
            let b = i.to_le_bytes();
            assert_eq!(st.insert(&b[..3]), Some((i, false)));
            assert_eq!(st.find(&b[..3]), Some(i));
            assert_eq!(st.get(i), &b[..3]);
        }
        assert_eq!(st.find(&[1, 2, 200]), None);
        assert_eq!(st.len(), 5000);
    }

    use crate::test_rng::Rng;

    /// `n` random markings of `stride` bytes drawn from a pool of `distinct` ones (so that
    /// many repeat), some of them all zero.
    fn markings(rng: &mut Rng, stride: usize, distinct: usize, n: usize) -> Vec<Vec<u8>> {
        let pool: Vec<Vec<u8>> = (0..distinct)
            .map(|i| {
                if i % 97 == 0 {
                    vec![0; stride]
                } else {
                    (0..stride).map(|_| rng.next() as u8).collect()
                }
            })
            .collect();
        (0..n)
            .map(|_| pool[rng.next() as usize % distinct].clone())
            .collect()
    }

    fn words_of(s: &[u8]) -> Vec<u64> {
        s.chunks(8).map(le_word).collect()
    }

    #[test]
    fn word_hash_equals_byte_hash() {
        let mut rng = Rng(7);
        for len in 1..40 {
            let s: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            assert_eq!(hash_words(&words_of(&s), len), hash(&s), "length {len}");
        }
    }

    #[test]
    fn layouts_follow_the_stride() {
        assert!(StateStore::new(INLINE_MAX).is_inline());
        assert!(StateStore::new(1).is_inline());
        assert!(!StateStore::new(INLINE_MAX + 1).is_inline());
        assert!(!StateStore::with_layout(4, true).is_inline());
    }

    /// Batch insertion gives the same ids, flags and store as one insertion at a time, for
    /// both index layouts, strides around the word and inline limits, and batches of every
    /// size (many index doublings on the way).
    #[test]
    fn batch_insert_equals_one_by_one() {
        let mut rng = Rng(0x5EED);
        for stride in [1, 3, 7, 8, 9, 10, 12, 13, 16, 17, 24] {
            for compact in [false, true] {
                let keys = markings(&mut rng, stride, 6000, 20000);
                let mut one = StateStore::with_layout(stride, compact);
                let expected: Vec<(u32, bool)> =
                    keys.iter().map(|k| one.insert(k).unwrap()).collect();
                let mut batched = StateStore::with_layout(stride, compact);
                let mut got = Vec::new();
                let mut at = 0;
                while at < keys.len() {
                    let n = (1 + rng.next() as usize % 300).min(keys.len() - at);
                    let chunk = &keys[at..at + n];
                    let words: Vec<u64> = chunk.iter().flat_map(|k| words_of(k)).collect();
                    let hashes: Vec<u64> = chunk.iter().map(|k| hash(k)).collect();
                    let end = batched.insert_batch(&words, &hashes, usize::MAX, Some(&mut got));
                    assert_eq!(end, BatchEnd::All);
                    at += n;
                }
                assert_eq!(got, expected, "stride {stride}, compact {compact}");
                assert_eq!(batched.len(), one.len());
                let mut w = vec![0u64; batched.words()];
                for id in 0..one.len() as u32 {
                    assert_eq!(batched.get(id), one.get(id));
                    batched.get_words(id, &mut w);
                    assert_eq!(w, words_of(one.get(id)));
                }
                for k in &keys {
                    let id = batched.find(k);
                    assert!(id.is_some_and(|id| batched.get(id) == &k[..]));
                    assert_eq!(batched.find_words(&words_of(k), hash(k)), id);
                }
                let absent = vec![0xA5; stride];
                assert_eq!(
                    batched.find(&absent).is_some(),
                    keys.contains(&absent),
                    "stride {stride}"
                );
                assert_eq!(batched.find(&vec![0; stride + 1]), None);
            }
        }
    }

    /// Every marking with the same (fake) hash: one long run of full buckets or slots from
    /// the last one, wrapping around to the first; every marking is still found, and a
    /// missing one is not.
    #[test]
    fn colliding_hashes_overflow_and_wrap_around() {
        for compact in [false, true] {
            let mut st = StateStore::with_layout(8, compact);
            let h = u64::MAX;
            for i in 0..700u64 {
                assert_eq!(st.insert_words(&[i * 3 + 1], h), Some((i as u32, true)));
            }
            for i in 0..700u64 {
                assert_eq!(st.insert_words(&[i * 3 + 1], h), Some((i as u32, false)));
                assert_eq!(st.find_words(&[i * 3 + 1], h), Some(i as u32));
            }
            assert_eq!(st.find_words(&[2], h), None);
            assert_eq!(st.len(), 700);
        }
    }

    #[test]
    fn batch_stops_after_the_state_limit() {
        let mut rng = Rng(99);
        for compact in [false, true] {
            let keys = markings(&mut rng, 10, 500, 2000);
            let words: Vec<u64> = keys.iter().flat_map(|k| words_of(k)).collect();
            let hashes: Vec<u64> = keys.iter().map(|k| hash(k)).collect();
            let mut st = StateStore::with_layout(10, compact);
            let mut out = Vec::new();
            let end = st.insert_batch(&words, &hashes, 123, Some(&mut out));
            assert_eq!(end, BatchEnd::Stopped(out.len()));
            assert_eq!(st.len(), 123);
            assert_eq!(out.last(), Some(&(122, true)));
            // The keys before the last were all handled, in order.
            let mut one = StateStore::with_layout(10, compact);
            for (k, r) in keys.iter().zip(&out) {
                assert_eq!(one.insert(k).as_ref(), Some(r));
            }
            // Already at the limit: the next new marking stops the batch at once.
            out.clear();
            let end = st.insert_batch(&words, &hashes, 100, Some(&mut out));
            let first_new = out.iter().position(|r| r.1);
            assert_eq!(end, BatchEnd::Stopped(out.len()));
            assert_eq!(first_new, Some(out.len() - 1));
        }
    }

    #[test]
    fn zeroed_buffers_are_zero_and_writable() {
        for (len, huge) in [
            (1usize, true),
            (1000, false),
            ((3 << 20) / 8 + 5, true),
            (3 << 20, false),
        ] {
            let mut b = ZeroBuf::<u64>::new(len, huge);
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 0));
            b[0] = 7;
            b[len - 1] += 42;
            assert_eq!(b[len - 1], if len == 1 { 49 } else { 42 });
            assert_eq!(b[0], if len == 1 { 49 } else { 7 });
        }
        // Released pages read as zero; the rest is kept.
        // 3 MiB, of which 2 MiB (one huge page) can be released.
        let mut b = ZeroBuf::<u64>::new((3 << 20) / 8, true);
        b.iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = i as u64 + 1);
        b.release_prefix((3 << 20) / 8 - 1);
        let released = if cfg!(target_os = "linux") {
            (2 << 20) / 8
        } else {
            0
        };
        assert!(b[..released].iter().all(|&x| x == 0));
        assert!(
            b[released..]
                .iter()
                .enumerate()
                .all(|(i, &x)| x == (released + i) as u64 + 1)
        );
    }

    /// In-place doublings of an inline index against a reference map, with keys whose
    /// hashes crowd into narrow ranges of the index (long runs of full buckets, some running
    /// past the end and wrapping around): every marking keeps its id, absent ones are not
    /// found, and the used slots of every bucket are a prefix of it.
    #[test]
    fn in_place_doublings_keep_every_marking() {
        let mut rng = Rng(0xD0B1E);
        // Ranges of the top 16 hash bits the keys are drawn from.
        let windows: [&[(u64, u64)]; 5] = [
            &[(0, 1 << 16)],
            &[((1 << 16) - 3000, 1 << 16)],
            &[((1 << 16) - 1000, 1 << 16), (0, 600)],
            &[(0, 500), (30000, 30500), ((1 << 16) - 300, 1 << 16)],
            &[((1 << 16) - 256, 1 << 16)],
        ];
        for (w, ranges) in windows.iter().enumerate() {
            for stride in [8, 12] {
                let mut st = StateStore::new(stride);
                assert!(st.is_inline());
                let mut reference = std::collections::HashMap::new();
                let mut keys = Vec::new();
                let n = if w == 4 { 3000 } else { 20_000 };
                while keys.len() < n {
                    let mut k = [rng.next(), rng.next() & 0xFFFF_FFFF];
                    if stride == 8 {
                        k[1] = 0;
                    }
                    let h = hash_words(&k[..stride.div_ceil(8)], stride);
                    if ranges.iter().any(|&(a, b)| (a..b).contains(&(h >> 48))) {
                        keys.push((k, h));
                    }
                }
                for (i, &(k, h)) in keys.iter().enumerate() {
                    let kw = &k[..stride.div_ceil(8)];
                    let next = reference.len() as u32;
                    let id = *reference.entry(k).or_insert(next);
                    assert_eq!(st.insert_words(kw, h), Some((id, id == next)));
                    // A key seen before, now and then.
                    let (k2, h2) = keys[rng.next() as usize % (i + 1)];
                    let r = st.insert_words(&k2[..stride.div_ceil(8)], h2);
                    assert_eq!(r, Some((reference[&k2], false)));
                }
                check_inline(&st, &reference, &mut rng, stride, w);
                assert_eq!(st.len(), reference.len());
            }
        }
    }

    /// What the doubling tests check of an inline index after their inserts: every key of
    /// `reference` found with its id, 2,000 absent keys not found, and the used slots of
    /// every bucket a prefix of it (`w`: the test's window, for the messages).
    fn check_inline(
        st: &StateStore,
        reference: &std::collections::HashMap<[u64; 2], u32>,
        rng: &mut Rng,
        stride: usize,
        w: usize,
    ) {
        for (k, &id) in reference {
            let kw = &k[..stride.div_ceil(8)];
            assert_eq!(st.find_words(kw, hash_words(kw, stride)), Some(id), "{w}");
        }
        for _ in 0..2000 {
            let k = [rng.next(), if stride == 8 { 0 } else { 1 << 31 | 1 }];
            let kw = &k[..stride.div_ceil(8)];
            assert_eq!(st.find_words(kw, hash_words(kw, stride)), None);
        }
        for bucket in st.table.as_chunks::<8>().0 {
            let used: Vec<bool> = (0..4).map(|j| bucket[2 * j + 1] >> 32 != 0).collect();
            assert!(used.windows(2).all(|p| p[0] | !p[1]), "window {w}");
        }
    }

    /// In-place doublings of an inline index by several threads (in rounds of a few
    /// buckets per thread, so that many rounds and the one-thread rest run), with keys whose
    /// hashes crowd into narrow ranges (long runs of full buckets across the threads' parts
    /// and the rounds' bounds, some wrapping around): every marking keeps its id, absent
    /// ones are not found, and the used slots of every bucket are a prefix of it.
    #[test]
    fn in_place_doublings_by_threads_keep_every_marking() {
        let mut rng = Rng(0x7EAD5);
        let windows: [&[(u64, u64)]; 4] = [
            &[(0, 1 << 16)],
            &[((1 << 16) - 3000, 1 << 16), (0, 900)],
            &[
                (0, 500),
                (16000, 16700),
                (32700, 33000),
                ((1 << 16) - 300, 1 << 16),
            ],
            &[((1 << 16) - 256, 1 << 16)],
        ];
        for (w, ranges) in windows.iter().enumerate() {
            for (stride, threads, min) in [(8, 2, 1), (12, 3, 2), (12, 2, 8)] {
                let mut st = StateStore::new(stride);
                let mut reference = std::collections::HashMap::new();
                let n = if w == 3 { 3000 } else { 10_000 };
                let mut doublings = 0;
                while reference.len() < n {
                    let mut k = [rng.next(), rng.next() & 0xFFFF_FFFF];
                    if stride == 8 {
                        k[1] = 0;
                    }
                    let kw = &k[..stride.div_ceil(8)];
                    let h = hash_words(kw, stride);
                    if !ranges.iter().any(|&(a, b)| (a..b).contains(&(h >> 48))) {
                        continue;
                    }
                    // Doubled by the threads before `insert_words` would double it alone.
                    if (st.len() + 2) * 4 > (st.mask + 1) * 3 {
                        assert!(st.grow_inline_in_place_threads(threads, min));
                        doublings += 1;
                    }
                    let next = reference.len() as u32;
                    let id = *reference.entry(k).or_insert(next);
                    assert_eq!(st.insert_words(kw, h), Some((id, id == next)));
                }
                assert!(doublings >= 2, "{doublings}");
                check_inline(&st, &reference, &mut rng, stride, w);
                let held = st
                    .table
                    .as_chunks::<2>()
                    .0
                    .iter()
                    .filter(|s| s[1] >> 32 != 0);
                assert_eq!(held.count(), reference.len());
            }
        }
    }

    #[test]
    fn growable_buffers_grow_in_place() {
        let mut b = ZeroBuf::<u64>::growable(1000, 64 << 20, true);
        b.iter_mut().enumerate().for_each(|(i, x)| *x = i as u64);
        let at = b.as_ptr();
        for len in [2000, 1 << 20, 3 << 20] {
            let before = b.len();
            assert!(b.grow_in_place(len) || cfg!(not(target_os = "linux")));
            if cfg!(target_os = "linux") {
                assert_eq!((b.len(), b.as_ptr()), (len, at));
                assert!(b[..1000].iter().enumerate().all(|(i, &x)| x == i as u64));
                assert!(b[before..].iter().all(|&x| x == 0));
                assert_eq!(b[before - 1], if before == 1000 { 999 } else { 5 });
                b[len - 1] = 5;
            }
        }
        assert!(!b.grow_in_place(9 << 20));
        assert_eq!(b[0..3], [0, 1, 2]);
    }

    /// Pages written ahead (the next arena chunk, the index's next half) while states are
    /// inserted, then doublings by the pass and by threads: every marking is still found,
    /// with its id, and the chunk made ahead is not counted as memory used.
    #[test]
    fn pages_written_ahead_keep_every_marking() {
        // 12-byte markings: arena chunks of 2^20 states, the next one made ahead from half
        // of the last (1.5 * 2^20 states); the index's next half asked for from 9/16 load
        // (from 2^20 slots, 16 MiB, on), all of it before the index doubles at 3/4.
        let mut st = StateStore::new(12);
        let key = |i: u64| [i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i & 0xFFFF_FFFF];
        let n = 1_600_000u64;
        for i in 0..n {
            let k = key(i);
            let h = hash_words(&k, 12);
            assert_eq!(st.insert_words(&k, h), Some((i as u32, true)));
        }
        assert_eq!(st.index_bytes(), 64 << 20);
        assert!(st.spare.is_some(), "the next chunk made ahead");
        assert_eq!(
            st.index_ahead,
            st.table.len(),
            "the new half asked for before"
        );
        let memory = st.memory_bytes();
        st.trim_arena();
        assert_eq!(
            st.memory_bytes(),
            memory,
            "the chunk made ahead is not counted"
        );
        // Doubled by the pass (pages written ahead, or being written) and by threads.
        st.reserve(3_200_000);
        st.reserve_with(6_400_000, 2);
        assert_eq!(st.index_bytes(), 256 << 20);
        for i in 0..n {
            let k = key(i);
            assert_eq!(st.find_words(&k, hash_words(&k, 12)), Some(i as u32));
            assert_eq!(st.get(i as u32)[..8], k[0].to_le_bytes());
        }
    }

    /// Indexes large enough for the doubling to give the old index back in blocks: every
    /// marking is still found, with its id.
    #[test]
    fn large_indexes_double_and_keep_every_marking() {
        for compact in [false, true] {
            let mut st = StateStore::with_layout(4, compact);
            let n = 400_000u32;
            for i in 0..n {
                let k = [u64::from(i.wrapping_mul(2_654_435_761))];
                let h = hash_words(&k, 4);
                assert_eq!(st.insert_words(&k, h), Some((i, true)));
            }
            assert!(st.index_bytes() >= 4 << 20);
            for i in 0..n {
                let k = [u64::from(i.wrapping_mul(2_654_435_761))];
                assert_eq!(st.find_words(&k, hash_words(&k, 4)), Some(i), "{compact}");
            }
            // Doubled twice more by three threads (inline) or one (tagged): the same.
            let before = st.index_bytes();
            st.reserve_with(6 * n as usize, 3);
            assert_eq!(st.index_bytes(), 4 * before);
            for i in 0..n {
                let k = [u64::from(i.wrapping_mul(2_654_435_761))];
                assert_eq!(st.find_words(&k, hash_words(&k, 4)), Some(i), "{compact}");
                let k = [u64::from(i) << 33 | 1];
                assert_eq!(st.find_words(&k, hash_words(&k, 4)), None, "{compact}");
            }
        }
    }
}
