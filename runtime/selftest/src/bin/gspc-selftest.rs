//! `gspc-selftest`: checks the installation end to end (see `pnet_selftest`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    pnet_selftest::main(&argv)
}
