//! The hidden helper modes of `gspc-worker`, which re-executes itself (the path in
//! [`crate::Config::helper`]) as:
//!
//! - **a command module's supervisor** (`gspc-worker --pnet-supervise <worker pid> <program>
//!   [arg]`): started in a new process group with a parent-death signal (SIGTERM), it starts
//!   the command in that same group (stdin, stdout and stderr handed down, the command with
//!   a parent-death SIGKILL of its own) and ends as the command ends, with its exit status
//!   (or by its signal). When the worker dies (even by SIGKILL) the kernel sends the
//!   supervisor SIGTERM, and it kills the whole group with SIGKILL: the command *and* every
//!   process it started that stayed in its group (a parent-death signal alone would only
//!   reach the direct child). The worker cancels a command by killing the group, as before.
//! - **the isolated module host** (`gspc-worker --pnet-module-host`, with
//!   `--isolate-modules`): loads native modules and runs the calls the worker sends it over
//!   a pipe, one at a time, so that a module that crashes (SIGSEGV, abort, ...) takes only
//!   this process down; the worker fails the task naming the signal and starts a new host
//!   for the next call. It dies with the worker (parent-death SIGKILL).
//!
//! Parent-death signals are tied to the *thread* that forked the child, not to the process:
//! both helpers are started from the executor thread, which lives as long as the worker
//! runs tasks (a short-lived or pooled thread would get them killed when it ends).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Command;

use pnet_module_sdk::{ENTRY_SYMBOL, EntryFn, host};
use serde::{Deserialize, Serialize};

/// The first argument of the supervisor mode.
pub const SUPERVISE: &str = "--pnet-supervise";
/// The first argument of the module host mode.
pub const MODULE_HOST: &str = "--pnet-module-host";

/// The largest frame between the worker and its module host.
const MAX_HOST_FRAME: usize = pnet_protocol::MAX_FRAME + (1 << 20);

/// Runs a helper mode when the command line asks for one; its exit status then.
pub fn main_if_helper() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    let mode = args.next()?;
    if mode == SUPERVISE {
        Some(supervise(args.collect()))
    } else if mode == MODULE_HOST {
        Some(module_host())
    } else {
        None
    }
}

/// Makes `cmd`'s process get `signal` when the thread spawning it ends (the executor thread,
/// see the module docs), and not start at all when its parent is gone already.
pub fn die_with_parent(cmd: &mut Command, signal: i32) {
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    let hook = move || {
        // SAFETY: prctl and getppid are async-signal-safe system calls.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before the signal was armed: then it never comes.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
        Ok(())
    };
    // SAFETY: the hook makes only async-signal-safe calls.
    unsafe {
        cmd.pre_exec(hook);
    }
}

fn signal_set(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise the set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in signals {
            libc::sigaddset(&mut set, *s);
        }
        set
    }
}

/// The supervisor: `args` are the worker's pid, the program and its arguments.
fn supervise(args: Vec<OsString>) -> i32 {
    let set = signal_set(&[libc::SIGTERM, libc::SIGCHLD]);
    // SAFETY: blocking signals of this (only) thread, to take them with sigwait.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let Some((worker, rest)) = args.split_first() else {
        eprintln!("gspc-worker {SUPERVISE}: no worker pid");
        return 2;
    };
    let Some((program, rest)) = rest.split_first() else {
        eprintln!("gspc-worker {SUPERVISE}: no program");
        return 2;
    };
    let worker: i32 = worker.to_str().and_then(|w| w.parse().ok()).unwrap_or(0);
    // SAFETY: plain system call.
    if unsafe { libc::getppid() } != worker {
        // The worker died before SIGTERM was blocked or armed: start nothing.
        return 1;
    }
    let mut cmd = Command::new(program);
    cmd.args(rest);
    die_with_parent(&mut cmd, libc::SIGKILL);
    let unblock = set;
    // SAFETY: sigprocmask is async-signal-safe; the command starts with no blocked signals.
    unsafe {
        cmd.pre_exec(move || {
            libc::sigprocmask(libc::SIG_UNBLOCK, &unblock, std::ptr::null_mut());
            Ok(())
        });
    }
    let mut child = match crate::exec::spawn(&mut cmd) {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "cannot start {}: {e}",
                std::path::Path::new(program).display()
            );
            return 127;
        }
    };
    loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: `set` and `sig` are valid; both signals are blocked.
        let rc = unsafe { libc::sigwait(&set, &mut sig) };
        if rc != 0 {
            continue;
        }
        if sig == libc::SIGTERM {
            // The worker is gone: the command and whatever it started in this group go too.
            // SAFETY: plain system call; group 0 is this process's own group.
            unsafe {
                libc::kill(0, libc::SIGKILL);
            }
            return 137;
        }
        match child.try_wait() {
            Ok(Some(status)) => return relay(status),
            Ok(None) => {}
            Err(e) => {
                eprintln!(
                    "cannot wait for {}: {e}",
                    std::path::Path::new(program).display()
                );
                return 126;
            }
        }
    }
}

/// Ends this process as `status` says: the same exit code, or the same signal (without a
/// core dump).
fn relay(status: std::process::ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    let Some(sig) = status.signal() else {
        return 1;
    };
    // SAFETY: system calls on this process only.
    unsafe {
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        libc::signal(sig, libc::SIG_DFL);
        let set = signal_set(&[sig]);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    128 + sig
}

/// A call for the module host.
#[derive(Serialize, Deserialize, Debug)]
pub struct HostCall {
    /// The library's path, as the worker resolved it.
    pub lib: String,
    /// The function's name in the library (the target's variant when there is one).
    pub function: String,
    pub worker: String,
    pub hostname: String,
    pub task: u64,
    /// The inputs, as the native ABI takes them (a JSON object).
    pub input: Vec<u8>,
}

/// The host's answer: the call's status and output (as the native ABI gives them).
#[derive(Serialize, Deserialize, Debug)]
pub struct HostAnswer {
    pub status: i32,
    pub output: Vec<u8>,
    /// The call's log lines (the tail) and the bytes cut before them.
    pub log: String,
    pub log_dropped: u64,
}

/// Writes one frame: a little-endian u32 length and the postcard bytes of `value`.
pub fn write_frame<T: Serialize>(w: &mut impl Write, value: &T) -> std::io::Result<()> {
    let bytes = postcard::to_stdvec(value).map_err(std::io::Error::other)?;
    let len = u32::try_from(bytes.len()).map_err(std::io::Error::other)?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(&bytes)?;
    w.flush()
}

/// Reads one frame (`None` at end of file before it).
pub fn read_frame<T: for<'de> Deserialize<'de>>(r: &mut impl Read) -> std::io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_HOST_FRAME {
        return Err(std::io::Error::other(format!("a frame of {len} bytes")));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf)?;
    postcard::from_bytes(&buf)
        .map(Some)
        .map_err(std::io::Error::other)
}

/// The module host: calls from fd 0, answers to fd 1 (which modules' own output must not
/// reach: fd 1 then points to standard error, fd 0 to /dev/null).
fn module_host() -> i32 {
    // SAFETY: fd juggling on this (single-threaded) process's own descriptors.
    let (input, output) = unsafe {
        let input = libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3);
        let output = libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3);
        if input < 0 || output < 0 {
            eprintln!("gspc-worker {MODULE_HOST}: cannot duplicate its pipes");
            return 1;
        }
        libc::dup2(2, 1);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::close(null);
        }
        use std::os::fd::FromRawFd;
        (
            std::fs::File::from_raw_fd(input),
            std::fs::File::from_raw_fd(output),
        )
    };
    let mut input = std::io::BufReader::new(input);
    let mut output = std::io::BufWriter::new(output);
    let mut libs: HashMap<String, (libloading::Library, host::Module)> = HashMap::new();
    let cancelled = std::sync::atomic::AtomicBool::new(false);
    let mut out = Vec::with_capacity(256);
    let log = std::cell::RefCell::new(host::LogTail::new(pnet_protocol::TASK_LOG_LIMIT));
    loop {
        let call: HostCall = match read_frame(&mut input) {
            Ok(Some(c)) => c,
            Ok(None) => return 0,
            Err(e) => {
                eprintln!("gspc-worker {MODULE_HOST}: cannot read a call: {e}");
                return 1;
            }
        };
        let result = host_call(&mut libs, &call, &cancelled, &log, &mut out);
        let (log, log_dropped) = log.borrow_mut().take();
        let answer = match result {
            Ok(status) => HostAnswer {
                status,
                output: std::mem::take(&mut out),
                log,
                log_dropped,
            },
            Err(message) => HostAnswer {
                status: -1,
                output: message.into_bytes(),
                log,
                log_dropped,
            },
        };
        if write_frame(&mut output, &answer).is_err() {
            return 1;
        }
        out = answer.output;
    }
}

fn host_call(
    libs: &mut HashMap<String, (libloading::Library, host::Module)>,
    call: &HostCall,
    cancelled: &std::sync::atomic::AtomicBool,
    log: &std::cell::RefCell<host::LogTail>,
    out: &mut Vec<u8>,
) -> Result<i32, String> {
    if !libs.contains_key(&call.lib) {
        // SAFETY: loading a module library runs its initialisers; module libraries are code
        // the user asked to run (the worker loaded this one already).
        let lib = unsafe { libloading::Library::new(&call.lib) }
            .map_err(|e| format!("cannot load {}: {e}", call.lib))?;
        // SAFETY: the symbol has the ABI's entry point type.
        let entry = unsafe { lib.get::<EntryFn>(ENTRY_SYMBOL.as_bytes()) }
            .map_err(|_| format!("{} does not export `{ENTRY_SYMBOL}`", call.lib))?;
        // SAFETY: the entry point returns a descriptor as the ABI describes.
        let module =
            unsafe { host::read_descriptor(entry()) }.map_err(|e| format!("{}: {e}", call.lib))?;
        libs.insert(call.lib.clone(), (lib, module));
    }
    let (_, module) = &libs[&call.lib];
    let function = module
        .function(&call.function)
        .ok_or_else(|| format!("{} has no function `{}`", call.lib, call.function))?;
    let info = host::CallInfo {
        worker_name: &call.worker,
        hostname: &call.hostname,
        task: call.task,
        cancelled,
        buffers: &[],
        log: Some(log),
    };
    // SAFETY: the function comes from a library loaded above (kept in `libs`) whose
    // descriptor declared ABI version 1; no buffers.
    Ok(unsafe { host::call_with(function.call, &info, &call.input, out) })
}
