//! The editor setups documented in compiler/lsp/README.md: the VS Code extension's manifest.
//! (The Neovim configuration is driven headless by `compiler/lsp/tests/nvim.rs`.)

use pnet_tests::workspace_root;

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
