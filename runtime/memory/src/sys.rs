//! The crate's only raw memory code: memory mappings and copies in and out of them.
//!
//! A [`Mapping`] is a region from `mmap`, unmapped on drop. Its bytes may be changed at any
//! time by other processes (shared segments), so the crate never forms Rust references to a
//! shared mapping: bytes go in and out by raw copies ([`Mapping::read`], [`Mapping::write`]),
//! bounds-checked here. Private anonymous mappings (the local buffers) are owned by one
//! [`crate::LocalBuffers`], which hands out slices of them under Rust's borrow rules.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;

/// The system's page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

/// The bytes an unprivileged process may still write on the file system holding `dir`, or
/// `None` when that cannot be asked.
pub(crate) fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path and `st` points to writable memory of the right
    // type; statvfs writes it completely when it returns 0.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a Mapping is a plain address range owned by this value; all accesses go through raw
// copies (`read`/`write`) or through `LocalBuffers`, which follows Rust's borrow rules, so
// moving it to or sharing it with another thread adds no unsynchronised Rust references.
unsafe impl Send for Mapping {}
// SAFETY: see `Send`: `read`/`write` take `&self` and copy with raw pointers; concurrent writers
// to one segment are the program's own business, like in any shared-memory region that other
// processes write as well.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `file` read-write, shared (`MAP_SHARED`). `len` 0 maps nothing.
    pub(crate) fn shared_file(file: &File, len: usize) -> io::Result<Mapping> {
        if len == 0 {
            return Ok(Mapping {
                ptr: NonNull::dangling(),
                len: 0,
            });
        }
        // SAFETY: a fresh mapping at an address chosen by the kernel: it cannot overlap any
        // Rust object; the file descriptor is valid for the duration of the call.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        Mapping::from_mmap(p, len)
    }

    /// Maps `len` (> 0) bytes of fresh zeroed private memory, read-write.
    pub(crate) fn anonymous(len: usize) -> io::Result<Mapping> {
        // SAFETY: as in `shared_file`; an anonymous mapping needs no file.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        Mapping::from_mmap(p, len)
    }

    fn from_mmap(p: *mut libc::c_void, len: usize) -> io::Result<Mapping> {
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        match NonNull::new(p.cast::<u8>()) {
            Some(ptr) => Ok(Mapping { ptr, len }),
            None => Err(io::Error::other("mmap returned a null address")),
        }
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Makes the pages `[offset, offset + len)` inaccessible (guard pages). Both must be
    /// multiples of the page size.
    pub(crate) fn protect_none(&self, offset: usize, len: usize) -> io::Result<()> {
        if offset.checked_add(len).is_none_or(|e| e > self.len) {
            return Err(io::Error::other("guard range outside the mapping"));
        }
        // SAFETY: the range lies inside this mapping (checked above); no Rust reference into
        // it is live (guard pages are never handed out).
        let r =
            unsafe { libc::mprotect(self.ptr.as_ptr().add(offset).cast(), len, libc::PROT_NONE) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn in_bounds(&self, offset: u64, len: usize) -> Option<usize> {
        let offset = usize::try_from(offset).ok()?;
        let end = offset.checked_add(len)?;
        (end <= self.len).then_some(offset)
    }

    /// Copies `out.len()` bytes at `offset` into `out`; false (and nothing copied) when the
    /// range is not inside the mapping.
    pub(crate) fn read(&self, offset: u64, out: &mut [u8]) -> bool {
        let Some(o) = self.in_bounds(offset, out.len()) else {
            return false;
        };
        if !out.is_empty() {
            // SAFETY: `[o, o + out.len())` lies inside the mapping (checked), which is readable
            // and stays mapped while `self` lives; `out` is a Rust slice and cannot alias the
            // mapping (the crate never hands out references into shared mappings).
            unsafe {
                std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(o), out.as_mut_ptr(), out.len())
            };
        }
        true
    }

    /// Copies `data` to `offset`; false (and nothing copied) when the range is not inside the
    /// mapping.
    pub(crate) fn write(&self, offset: u64, data: &[u8]) -> bool {
        let Some(o) = self.in_bounds(offset, data.len()) else {
            return false;
        };
        if !data.is_empty() {
            // SAFETY: as in `read`, with the mapping writable (PROT_WRITE).
            unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.as_ptr().add(o), data.len())
            };
        }
        true
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: `ptr`/`len` are exactly what mmap returned; no reference into the
            // mapping outlives `self` (slices handed out by LocalBuffers borrow it).
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        }
    }
}
