//! Catching a native module that writes into the guard page of one of its memory buffers.
//!
//! Each local buffer of a call lies between two `PROT_NONE` guard pages (see
//! `pnet_memory::LocalBuffers`). A module that runs off its buffer far enough to touch one
//! gets a SIGSEGV (or SIGBUS). While a call with buffers runs, the guard ranges and one
//! pre-formatted line per range are registered here ([`arm`]); the handler, installed once
//! per worker with working memory ([`install`]), looks the fault address up in that table
//! (atomics only: no allocation and no lock in the handler), and when it is a guard page
//! writes the line to standard error, removes the worker's shared-memory file and exits with
//! [`FAULT_EXIT`] without running anything else, so that no memory is corrupted any further.
//! Any other fault is handed to the action that was installed before (the Rust runtime's
//! stack overflow report, else the default: a core dump).

use std::ffi::{CString, c_int, c_void};
use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// The exit status of a worker stopped by a write into a guard page.
pub const FAULT_EXIT: i32 = 75;

/// How many guard ranges the table holds (two per buffer); faults in the ranges of calls with
/// more buffers than half of this are reported as ordinary crashes.
pub const SLOTS: usize = 256;

struct Slot {
    start: AtomicUsize,
    end: AtomicUsize,
    msg: AtomicPtr<u8>,
    len: AtomicUsize,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            msg: AtomicPtr::new(std::ptr::null_mut()),
            len: AtomicUsize::new(0),
        }
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];
/// How many slots of [`TABLE`] are valid.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// The worker's shared-memory file, removed before exiting from the handler.
static SHM_PATH: OnceLock<CString> = OnceLock::new();
/// The actions of SIGSEGV and SIGBUS before [`install`].
static PREVIOUS: OnceLock<[libc::sigaction; 2]> = OnceLock::new();

/// Installs the handler for SIGSEGV and SIGBUS (once per process; later calls do nothing).
/// `shm_path` is the file the handler removes before exiting.
pub fn install(shm_path: &std::path::Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    if let Ok(c) = CString::new(shm_path.as_os_str().as_bytes()) {
        let _ = SHM_PATH.set(c);
    }
    if PREVIOUS.get().is_some() {
        return Ok(());
    }
    // SAFETY: plain system calls with valid, zero-initialised structures; the handler only
    // uses async-signal-safe operations.
    unsafe {
        let mut previous: [libc::sigaction; 2] = std::mem::zeroed();
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_fault as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        for (i, sig) in [libc::SIGSEGV, libc::SIGBUS].into_iter().enumerate() {
            if libc::sigaction(sig, std::ptr::null(), &mut previous[i]) != 0 {
                return Err(format!(
                    "cannot read the action of signal {sig}: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
        // Recorded before the handler can run.
        let _ = PREVIOUS.set(previous);
        for sig in [libc::SIGSEGV, libc::SIGBUS] {
            if libc::sigaction(sig, &action, std::ptr::null_mut()) != 0 {
                return Err(format!(
                    "cannot install the handler of signal {sig}: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
    }
    Ok(())
}

/// Gives the calling thread an alternate signal stack if it has none (the handler runs on
/// it, so that it works even when the fault is a stack overflow). The stack stays for the
/// thread's life.
pub fn ensure_altstack() -> Result<(), String> {
    const SIZE: usize = 64 << 10;
    // SAFETY: plain system calls; the new stack is a fresh private mapping that is never
    // unmapped (the thread may use it until it ends).
    unsafe {
        let mut old: libc::stack_t = std::mem::zeroed();
        if libc::sigaltstack(std::ptr::null(), &mut old) != 0 {
            return Err(format!(
                "cannot read the alternate signal stack: {}",
                std::io::Error::last_os_error()
            ));
        }
        if old.ss_flags & libc::SS_DISABLE == 0 && old.ss_size >= libc::MINSIGSTKSZ {
            return Ok(());
        }
        let p = libc::mmap(
            std::ptr::null_mut(),
            SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return Err(format!(
                "cannot map an alternate signal stack: {}",
                std::io::Error::last_os_error()
            ));
        }
        let stack = libc::stack_t {
            ss_sp: p,
            ss_flags: 0,
            ss_size: SIZE,
        };
        if libc::sigaltstack(&stack, std::ptr::null_mut()) != 0 {
            let e = std::io::Error::last_os_error();
            libc::munmap(p, SIZE);
            return Err(format!("cannot set an alternate signal stack: {e}"));
        }
    }
    Ok(())
}

/// The guard ranges of a running call, registered with the handler until dropped.
#[derive(Debug)]
pub struct Armed {
    /// The lines the table points to (kept alive while registered).
    _lines: Vec<Vec<u8>>,
}

/// Registers `ranges` (each with the line to print when a fault hits it) for the running
/// call. Only one call is armed at a time (the executor runs one task at a time).
pub fn arm(ranges: Vec<(Range<usize>, String)>) -> Armed {
    ACTIVE.store(0, Ordering::SeqCst);
    let mut lines = Vec::with_capacity(ranges.len().min(SLOTS));
    for (slot, (range, line)) in TABLE.iter().zip(ranges) {
        let mut bytes = line.into_bytes();
        if !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        slot.start.store(range.start, Ordering::Relaxed);
        slot.end.store(range.end, Ordering::Relaxed);
        slot.msg.store(bytes.as_ptr().cast_mut(), Ordering::Relaxed);
        slot.len.store(bytes.len(), Ordering::Relaxed);
        lines.push(bytes);
    }
    ACTIVE.store(lines.len(), Ordering::SeqCst);
    Armed { _lines: lines }
}

impl Drop for Armed {
    fn drop(&mut self) {
        ACTIVE.store(0, Ordering::SeqCst);
    }
}

/// The handler of SIGSEGV and SIGBUS.
extern "C" fn on_fault(sig: c_int, info: *mut libc::siginfo_t, _ctx: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let (addr, code) = if info.is_null() {
        (0, 0)
    } else {
        unsafe { ((*info).si_addr() as usize, (*info).si_code) }
    };
    let n = ACTIVE.load(Ordering::SeqCst).min(SLOTS);
    for slot in &TABLE[..n] {
        let start = slot.start.load(Ordering::Relaxed);
        let end = slot.end.load(Ordering::Relaxed);
        if code > 0 && start <= addr && addr < end {
            let msg = slot.msg.load(Ordering::Relaxed);
            let len = slot.len.load(Ordering::Relaxed);
            // SAFETY: async-signal-safe calls; `msg` points to `len` bytes kept alive by the
            // `Armed` of the running call.
            unsafe {
                write_all(msg, len);
                if let Some(p) = SHM_PATH.get() {
                    libc::unlink(p.as_ptr());
                }
                libc::_exit(FAULT_EXIT);
            }
        }
    }
    // Not ours: the previous action (or the default) takes over. For a fault, returning
    // runs the faulting instruction again, which then meets that action; a signal sent by a
    // process is raised again.
    let i = usize::from(sig == libc::SIGBUS);
    // SAFETY: async-signal-safe calls with valid structures.
    unsafe {
        match PREVIOUS.get() {
            Some(previous) => {
                libc::sigaction(sig, &previous[i], std::ptr::null_mut());
            }
            None => {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        if code <= 0 {
            libc::raise(sig);
        }
    }
}

/// Writes `len` bytes at `p` to standard error (async-signal-safe).
///
/// # Safety
/// `p` must point to `len` readable bytes.
unsafe fn write_all(mut p: *const u8, mut len: usize) {
    while len > 0 {
        // SAFETY: by the caller's guarantee.
        let n = unsafe { libc::write(2, p.cast(), len) };
        if n <= 0 {
            if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return;
        }
        let n = n as usize;
        // SAFETY: `n <= len` bytes were written.
        p = unsafe { p.add(n) };
        len -= n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arming_fills_the_table_and_dropping_empties_it() {
        let armed = arm(vec![
            (0x1000..0x2000, "one".into()),
            (0x5000..0x6000, "two\n".into()),
        ]);
        assert_eq!(ACTIVE.load(Ordering::SeqCst), 2);
        assert_eq!(TABLE[1].start.load(Ordering::SeqCst), 0x5000);
        assert_eq!(TABLE[0].len.load(Ordering::SeqCst), 4);
        assert_eq!(TABLE[1].len.load(Ordering::SeqCst), 4);
        drop(armed);
        assert_eq!(ACTIVE.load(Ordering::SeqCst), 0);
        // More ranges than slots: the table holds the first SLOTS.
        let many = (0..SLOTS + 3)
            .map(|i| (i * 10..i * 10 + 5, format!("r{i}")))
            .collect();
        let armed = arm(many);
        assert_eq!(ACTIVE.load(Ordering::SeqCst), SLOTS);
        drop(armed);
    }
}
