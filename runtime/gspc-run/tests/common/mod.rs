//! Helpers shared by the end-to-end tests of the `gspc-run` binary.

use std::path::Path;
use std::process::{Command, Output};

/// The `gspc-run` binary under test.
pub fn gspc_run_command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gspc-run"))
}

/// A file of the repository's `examples/` folder.
pub fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .display()
        .to_string()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
