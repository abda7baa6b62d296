//! `gspc-selftest`: checks the installation end to end (see `pnet_selftest`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    pnet_selftest::main(&argv)
}
