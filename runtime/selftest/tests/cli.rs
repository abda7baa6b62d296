//! `gspc-selftest` as a user meets it first: its help. (This integration test also makes
//! `cargo test` build the binary, which the cross-crate tests in `tests/` run.)

use std::process::Command;

#[test]
fn help_names_the_options() {
    let out = Command::new(env!("CARGO_BIN_EXE_gspc-selftest"))
        .arg("--help")
        .output()
        .expect("run gspc-selftest");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Usage"), "{text}");
    assert!(text.contains("--bin-dir"), "{text}");
}
