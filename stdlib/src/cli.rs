//! Small process-level helpers shared by the command-line tools: standard output that does
//! not panic when its reader goes away.

/// Makes writing to a closed pipe end the process quietly, as other Unix filters do
/// (`pnetc --emit=ir net.xpnet | head`): Rust starts programs with SIGPIPE ignored, so that
/// `println!` to a closed pipe panics instead. Call it first thing in `main` of a tool that
/// only reads files and writes standard output and error — not in one that talks to peers
/// over sockets, where a closed peer must be an error, not a silent exit.
pub fn exit_quietly_on_broken_pipe() {
    // SAFETY: restoring the default disposition of SIGPIPE at the start of `main`, before any
    // other thread exists; no handler is installed.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Writes to standard output without panicking: when its reader has gone (a closed pipe),
/// the process ends quietly with status 141 (as a process killed by SIGPIPE would report in
/// a shell); other write errors end it with status 1 and a message. For tools that must keep
/// SIGPIPE ignored (they write to sockets and to their children's pipes), use [`outln!`](crate::outln) /
/// [`out!`](crate::out) instead of `println!` / `print!`.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("error: cannot write to standard output: {e}");
        std::process::exit(1);
    }
}

/// `println!` through [`write_stdout`](crate::cli::write_stdout).
#[macro_export]
macro_rules! outln {
    () => { $crate::cli::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` through [`write_stdout`](crate::cli::write_stdout).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::write_stdout(format_args!($($arg)*)) };
}
