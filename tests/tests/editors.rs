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
        stdout
            .lines()
            .any(|l| l.starts_with("3:") && l.contains("pnet")),
        "{stdout}"
    );
}

#[test]
fn the_vscode_extension_declares_what_the_readme_documents() {
    let dir = workspace_root().join("compiler/lsp/editors/vscode");
    let text = std::fs::read_to_string(dir.join("package.json")).unwrap();
    let pkg: serde_json::Value = serde_json::from_str(&text).expect("package.json is JSON");
    let main = pkg["main"].as_str().expect("main");
    let js = std::fs::read_to_string(dir.join(main)).expect("the extension's main file exists");
    let readme = std::fs::read_to_string(workspace_root().join("compiler/lsp/README.md")).unwrap();
    let props = pkg["contributes"]["configuration"]["properties"]
        .as_object()
        .expect("configuration properties");
    for key in ["pnet.serverPath", "pnet.searchPaths", "pnet.warnings"] {
        assert!(props.contains_key(key), "package.json lacks {key}");
        assert!(readme.contains(key), "README lacks {key}");
        let short = key.trim_start_matches("pnet.");
        assert!(js.contains(short), "extension.js does not read {key}");
    }
    assert_eq!(
        pkg["contributes"]["languages"][0]["extensions"][0],
        ".xpnet"
    );
    assert!(js.contains("vscode-languageclient"));
}
