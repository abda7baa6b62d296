//! `gspc` as a user meets it first: its help lists the commands. (This integration test also
//! makes `cargo test` build the binary, which the cross-crate tests in `tests/` run.)

use std::process::Command;

#[test]
fn help_lists_the_commands() {
    let out = Command::new(env!("CARGO_BIN_EXE_gspc"))
        .arg("--help")
        .output()
        .expect("run gspc");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for command in ["boot", "submit", "wait", "status", "stop"] {
        assert!(text.contains(command), "{command}: {text}");
    }
}
