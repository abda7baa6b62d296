//! The documented Neovim configuration (`editors/pnet.lua`) driven headless against this
//! build of the server by `editors/nvim-check.sh`: diagnostics arrive, and the documented
//! mappings `K` (hover) and `gd` (definition) answer.

use std::process::Command;

#[test]
fn neovim_mappings_hover_and_jump_to_the_definition() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/editors/nvim-check.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_pnet-lsp"))
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_ne!(
        out.status.code(),
        Some(77),
        "nvim is not installed (.ci/setup installs it): {stdout}"
    );
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("K: place counter: long"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "gd: 3:17"), "{stdout}");
    assert!(stdout.contains("nvim-check: ok"), "{stdout}");
}
