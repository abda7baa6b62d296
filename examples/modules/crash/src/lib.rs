//! `libcrash.so`: a native module (module name `crash`) whose functions crash the process
//! that runs them, for tests of crashing workers and of `--isolate-modules`.
//!
//! Every function has the same signature, `r f (x, ms, dir)`:
//! inputs `x: long`, `ms: long`, `dir: string`; output `r: long`. Each first sleeps `ms`
//! milliseconds (`ms <= 0`: not at all), then:
//!
//! | function     | then                                                                    |
//! |--------------|-------------------------------------------------------------------------|
//! | `segv`       | writes to address 16: the process dies of SIGSEGV                       |
//! | `abort`      | calls `abort()`: SIGABRT                                                |
//! | `kill`       | sends itself SIGKILL                                                    |
//! | `sleep`      | returns `r = x`                                                         |
//! | `crash_once` | if the file `<dir>/crash-once-<x>` does not exist, creates it and dies  |
//! |              | of SIGSEGV; else returns `r = x` (so the retried task succeeds)         |
//!
//! `dir` is only used by `crash_once` (an existing directory; give each test its own). The
//! command module `crashcmd` (examples/modules/bin/crashcmd) has the same signature for
//! `sleep`, `kill_worker_once` and `orphan`; examples/modules/crash.xpnet runs `n` tasks of
//! any of these functions in parallel and sums their results.

use std::time::Duration;

use pnet_module_sdk::{Context, Inputs, Outputs};

/// `x`, after sleeping `ms` milliseconds.
fn nap(inputs: &Inputs) -> Result<i64, String> {
    let x = inputs.get_i64("x")?;
    let ms = inputs.get_i64("ms")?;
    if ms > 0 {
        std::thread::sleep(Duration::from_millis(ms.unsigned_abs()));
    }
    Ok(x)
}

fn segfault() -> ! {
    // SAFETY: none: this is the point. Address 16 is never mapped (the first page is
    // reserved), so the volatile store faults; it is non-null and aligned, so no debug
    // assertion turns it into a panic first.
    unsafe {
        std::ptr::without_provenance_mut::<u8>(16).write_volatile(1);
    }
    // Not reached; in case the store did not fault after all.
    std::process::abort()
}

fn segv(_ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    nap(inputs)?;
    segfault()
}

fn abort(_ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    nap(inputs)?;
    std::process::abort()
}

fn kill(_ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    nap(inputs)?;
    // SAFETY: plain system calls.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    std::process::abort()
}

fn sleep(_ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    let x = nap(inputs)?;
    Ok(Outputs::new().set("r", x))
}

fn crash_once(_ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    let x = nap(inputs)?;
    let dir = inputs.get_str("dir")?;
    let marker = std::path::Path::new(dir).join(format!("crash-once-{x}"));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&marker)
    {
        Ok(_) => segfault(),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Outputs::new().set("r", x)),
        Err(e) => Err(format!("cannot create {}: {e}", marker.display())),
    }
}

pnet_module_sdk::export_module! {
    name: "crash",
    functions: {
        "segv" => segv,
        "abort" => abort,
        "kill" => kill,
        "sleep" => sleep,
        "crash_once" => crash_once,
    },
}
