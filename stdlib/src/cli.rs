//! Small process-level helpers shared by the command-line tools: standard output and error
//! that do not panic when they cannot be written (a closed pipe, `> /dev/full`), checked
//! output files, and the end of a command line that is not a run (`--help`, usage errors).

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

/// Writes to standard error without panicking (`eprintln!` panics when standard error cannot
/// be written, e.g. `2> /dev/full`): a write error ends the process with status 1 — there is
/// nowhere left to report it — or 141 for a closed pipe.
pub fn write_stderr(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    if let Err(e) = err.write_fmt(args).and_then(|()| err.flush()) {
        std::process::exit(if e.kind() == std::io::ErrorKind::BrokenPipe {
            141
        } else {
            1
        });
    }
}

/// `eprintln!` through [`write_stderr`](crate::cli::write_stderr).
#[macro_export]
macro_rules! errln {
    () => { $crate::cli::write_stderr(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::write_stderr(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Writes `bytes` to the file `path` (created or truncated) and makes sure they reached it;
/// the error is the message `cannot write PATH: REASON`, for the tool to report with a
/// non-zero exit.
pub fn write_file(path: &std::path::Path, bytes: impl AsRef<[u8]>) -> Result<(), String> {
    use std::io::Write;
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut f = std::fs::File::create(path).map_err(fail)?;
    f.write_all(bytes.as_ref()).map_err(fail)?;
    f.flush().map_err(fail)
}

/// Ends the process after a command line that does not start a run (the message of a
/// `clap::Error`, rendered by [`parse_args!`](crate::parse_args)): help and version texts go to
/// standard output (exit 0, or 1 with a message when it cannot be written); usage errors go
/// to standard error as `PROGRAM: MESSAGE` with status `code` (2).
pub fn exit_after_parse(program: &str, text: &str, is_error: bool, code: i32) -> ! {
    if is_error {
        let text = text.trim_end();
        let text = text.strip_prefix("error: ").unwrap_or(text);
        // The tools' own hint, which names the program.
        let text = text.replace(
            "For more information, try '--help'.",
            &format!("Try '{program} --help' for more information."),
        );
        if text.starts_with(&format!("{program}:")) {
            // A help text shown for a missing command already names the program.
            write_stderr(format_args!("{text}\n"));
        } else {
            write_stderr(format_args!("{program}: {text}\n"));
        }
        std::process::exit(code);
    }
    write_stdout(format_args!("{text}"));
    std::process::exit(code)
}

/// Parses the command line (`std::env::args_os()`, or the `OsString`s given, the program
/// name first) into the `clap::Parser` type `$ty`, ending the process as [`exit_after_parse`]
/// does for `--help`, `--version` and usage errors, and as [`generate_if_asked`] does for
/// `PROGRAM --generate=KIND`. The calling crate depends on `clap`.
#[macro_export]
macro_rules! parse_args {
    ($ty:ty, $program:expr) => {
        $crate::parse_args!($ty, $program, ::std::env::args_os())
    };
    ($ty:ty, $program:expr, $argv:expr) => {{
        let argv: ::std::vec::Vec<::std::ffi::OsString> =
            ::std::iter::IntoIterator::into_iter($argv)
                .map(::std::convert::Into::into)
                .collect();
        $crate::cli::generate_if_asked(
            $program,
            argv.get(1..).unwrap_or_default(),
            <$ty as ::clap::CommandFactory>::command,
        );
        match <$ty as ::clap::Parser>::try_parse_from(argv) {
            Ok(a) => a,
            Err(e) => $crate::cli::exit_after_parse(
                $program,
                &e.render().to_string(),
                e.use_stderr(),
                e.exit_code(),
            ),
        }
    }};
}

/// What `PROGRAM --generate=KIND` prints: its man page or a shell's completion script.
pub const GENERATE_KINDS: &[&str] = &["man", "bash", "zsh", "fish", "elvish", "powershell"];

/// The man page (`kind` "man", roff for `man -l`) or the completion script for a shell
/// (`bash`, `zsh`, `fish`, `elvish`, `powershell`) of the command `command`, named `program`.
pub fn generate(command: clap::Command, program: &str, kind: &str) -> Result<Vec<u8>, String> {
    // clap names commands with 'static strings; this runs at most once per process.
    let name: &'static str = Box::leak(program.to_string().into_boxed_str());
    let mut command = command.name(name).bin_name(name);
    let mut out = Vec::new();
    if kind == "man" {
        clap_mangen::Man::new(command)
            .render(&mut out)
            .map_err(|e| e.to_string())?;
        return Ok(out);
    }
    let shell = <clap_complete::Shell as clap::ValueEnum>::from_str(kind, false).map_err(|_| {
        format!(
            "--generate: unknown kind '{kind}' (one of {})",
            GENERATE_KINDS.join(", ")
        )
    })?;
    clap_complete::generate(shell, &mut command, name, &mut out);
    Ok(out)
}

/// The hidden option of every tool: when the arguments after the program name are exactly
/// `--generate=KIND` (or `--generate KIND`), prints [`generate`]'s text for the command
/// `command()` on standard output and ends the process (status 0; 2 for an unknown kind).
/// `tools/install-docs.sh` installs every tool's man page and completions this way.
pub fn generate_if_asked(
    program: &str,
    args: &[std::ffi::OsString],
    command: impl FnOnce() -> clap::Command,
) {
    let kind = match args {
        [a] => a.to_str().and_then(|a| a.strip_prefix("--generate=")),
        [a, k] if a == "--generate" => k.to_str(),
        _ => None,
    };
    let Some(kind) = kind else { return };
    match generate(command(), program, kind) {
        Ok(text) => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(&text).and_then(|()| out.flush()) {
                write_stderr(format_args!(
                    "{program}: cannot write to standard output: {e}\n"
                ));
                std::process::exit(1);
            }
            std::process::exit(0)
        }
        Err(e) => usage_exit(program, &e),
    }
}

/// The input and output arguments of the tools that read one net and write one file
/// (pnetc, pnet2dot, pnetput), flattened into their clap arguments: the positional NET,
/// `-i/--input FILE` instead of it, and `-o/--output FILE` (`--if` and `--of`, pnetput's
/// first names, are aliases). What a tool does without them, or with `-`, its own help says.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct InputOutput {
    /// The net (`-`: standard input)
    #[arg(value_name = "NET")]
    pub input_arg: Option<std::path::PathBuf>,
    /// The net (instead of the positional NET)
    #[arg(
        short = 'i',
        long = "input",
        alias = "if",
        value_name = "FILE",
        conflicts_with = "input_arg"
    )]
    pub input: Option<std::path::PathBuf>,
    /// Write the output to FILE
    #[arg(short = 'o', long = "output", alias = "of", value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

impl InputOutput {
    /// The input given, by `-i` or as the positional argument.
    pub fn input(&self) -> Option<&std::path::Path> {
        self.input.as_deref().or(self.input_arg.as_deref())
    }
}

/// Ends the process with a usage error: `PROGRAM: MESSAGE`, a hint at `--help`, status 2.
pub fn usage_exit(program: &str, msg: &str) -> ! {
    write_stderr(format_args!(
        "{program}: {msg}\nTry '{program} --help' for more information.\n"
    ));
    std::process::exit(2)
}
