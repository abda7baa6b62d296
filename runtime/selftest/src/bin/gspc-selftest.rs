//! `gspc-selftest`: checks the installation end to end (see `pnet_selftest`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut argv = Vec::new();
    for a in std::env::args_os().skip(1) {
        match a.into_string() {
            Ok(s) => argv.push(s),
            // A usage error, not the panic of `std::env::args()`.
            Err(a) => {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "gspc-selftest: argument '{}' is not valid UTF-8\nTry 'gspc-selftest --help' for more information.",
                    a.to_string_lossy()
                );
                return ExitCode::from(2);
            }
        }
    }
    pnet_selftest::main(&argv)
}
