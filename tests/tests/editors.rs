//! The editor setups documented in compiler/lsp/README.md, checked with real editors.
//! `.ci/setup` installs Neovim, so a missing `nvim` fails the test rather than skipping it.

use std::process::Command;

use pnet_tests::{bin, workspace_root};

#[test]
fn neovim_shows_pnet_lsp_diagnostics_with_the_documented_config() {
    let script = workspace_root().join("compiler/lsp/editors/nvim-check.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(bin("pnet-lsp"))
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
    // The diagnostic nvim received: line 3 (0-based), from pnet, about the type.
    assert!(stdout.contains("nvim-check: ok"), "{stdout}");
    assert!(
        stdout.lines().any(|l| l.starts_with("3:") && l.contains("pnet")),
        "{stdout}"
    );
}
