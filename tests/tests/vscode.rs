//! The VS Code extension (compiler/lsp/editors/vscode) against what VS Code needs of it, as
//! found by running it in a real VS Code (`compiler/lsp/editors/vscode/test/run.sh`, which is
//! not run here: it downloads code-server and needs a browser). These are the facts that run
//! depends on and a plain JSON check would miss.

use pnet_tests::workspace_root;

fn manifest() -> serde_json::Value {
    let path = workspace_root().join("compiler/lsp/editors/vscode/package.json");
    let text = std::fs::read_to_string(&path).expect("package.json is readable");
    serde_json::from_str(&text).expect("package.json is JSON")
}

#[test]
fn the_vscode_extension_activates_when_an_xpnet_file_opens() {
    // VS Code derives `onLanguage:<id>` from a `contributes.languages` entry only when that
    // entry has a `configuration` file; ours has none, so without the explicit event the
    // extension is never activated and no server starts (what run.sh found first).
    let pkg = manifest();
    let events: Vec<&str> = pkg["activationEvents"]
        .as_array()
        .expect("activationEvents is an array")
        .iter()
        .filter_map(|e| e.as_str())
        .collect();
    let languages = pkg["contributes"]["languages"]
        .as_array()
        .expect("contributes.languages");
    let xpnet = languages
        .iter()
        .find(|l| l["id"] == "xpnet")
        .expect("the xpnet language is contributed");
    assert!(
        events.contains(&"onLanguage:xpnet") || xpnet.get("configuration").is_some(),
        "nothing activates the extension for xpnet files: {events:?}"
    );
    // It runs a program named by a setting: not in VS Code's Restricted Mode.
    assert_eq!(
        pkg["capabilities"]["untrustedWorkspaces"]["supported"],
        serde_json::Value::Bool(false)
    );
}

#[test]
fn the_readme_names_the_vscode_test_and_its_code_server_version() {
    let readme = std::fs::read_to_string(workspace_root().join("compiler/lsp/README.md"))
        .expect("README is readable");
    let script =
        std::fs::read_to_string(workspace_root().join("compiler/lsp/editors/vscode/test/run.sh"))
            .expect("the VS Code test script exists");
    let version = script
        .lines()
        .find_map(|l| l.strip_prefix("CODE_SERVER_VERSION="))
        .and_then(|v| v.split_whitespace().next())
        .expect("run.sh pins CODE_SERVER_VERSION");
    assert!(
        readme.contains("compiler/lsp/editors/vscode/test/run.sh"),
        "README does not say how VS Code is tested"
    );
    assert!(
        readme.contains(&format!("code-server {version}")),
        "README does not name the code-server version run.sh uses ({version})"
    );
    // The install steps the README gives are the ones run.sh performs.
    for step in [
        "npm install",
        "ln -s",
        "pnet.serverPath",
        "files.associations",
    ] {
        assert!(readme.contains(step), "README lacks {step}");
        assert!(script.contains(step), "run.sh does not do {step}");
    }
}
