//! Man pages and shell completions (issue 21): `tools/install-docs.sh PREFIX BINDIR`, the one
//! documented command, installs every tool's man page and bash, zsh and fish completions
//! (each tool prints them with the hidden `--generate=KIND`); each mentions a known option or
//! command of its tool.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every tool of `tools/install-docs.sh`, with an option (or a command) its man page and
/// completions must mention.
const TOOLS: &[(&str, &str)] = &[
    ("pnetc", "--emit"),
    ("pnet2dot", "--trace"),
    ("pnetv", "--max-states"),
    ("pnetput", "--place"),
    ("pnetget", "--json"),
    ("gspc-run", "--topology"),
    ("gspc", "submit"),
    ("gspc-topology", "validate"),
    ("gspc-dds", "--nodefile"),
    ("gspc-property", "wait"),
    ("gspc-worker", "--agent"),
    ("gspc-leaf", "--root"),
    ("gspc-selftest", "--bin-dir"),
    ("pnet-lsp", "--stdio"),
    ("workload_exec", "--help"),
];

fn repo() -> PathBuf {
    // This crate's folder is `tests/` in the workspace.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The tools the script installs (its `TOOLS="..."` line).
fn script_tools(script: &str) -> Vec<String> {
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("TOOLS=\""))
        .expect("a TOOLS=\"...\" line");
    let line = line.strip_suffix('"').expect("TOOLS on one line");
    line.split_whitespace().map(str::to_string).collect()
}

#[test]
fn install_docs_writes_a_man_page_and_completions_for_every_tool() {
    let script = repo().join("tools/install-docs.sh");
    let listed = script_tools(&read(&script));
    let known: Vec<String> = TOOLS.iter().map(|(t, _)| t.to_string()).collect();
    assert_eq!(listed, known, "the script's tools and this test's");
    // Every tool is built (pnet_tests::bin says how otherwise), all in one folder.
    let bin_dir = pnet_tests::bin("pnetc").parent().unwrap().to_path_buf();
    for (tool, _) in TOOLS {
        pnet_tests::bin(tool);
    }
    let prefix = std::env::temp_dir().join(format!("install-docs-{}", std::process::id()));
    let o = Command::new("sh")
        .arg(&script)
        .arg(&prefix)
        .arg(&bin_dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "install-docs.sh: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let share = prefix.join("share");
    for (tool, word) in TOOLS {
        let man = read(&share.join(format!("man/man1/{tool}.1")));
        assert!(man.contains(&format!(".TH {tool} 1")), "{tool}.1:\n{man}");
        // roff writes a dash as `\-`.
        assert!(
            man.contains(&word.replace('-', "\\-")),
            "{tool}.1 does not mention {word}:\n{man}"
        );
        for (file, text) in [
            (format!("bash-completion/completions/{tool}"), *word),
            (format!("zsh/site-functions/_{tool}"), *word),
            // fish: `-l emit`, `-a "submit"`.
            (
                format!("fish/vendor_completions.d/{tool}.fish"),
                word.trim_start_matches('-'),
            ),
        ] {
            let completion = read(&share.join(&file));
            assert!(
                completion.contains(tool) && completion.contains(text),
                "{file} does not mention {text}:\n{completion}"
            );
        }
    }
    std::fs::remove_dir_all(&prefix).unwrap();
}

#[test]
fn an_unknown_kind_of_generated_text_is_a_usage_error() {
    let o = Command::new(pnet_tests::bin("pnetget"))
        .arg("--generate=troff")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("pnetget: --generate: unknown kind 'troff' (one of man, bash, zsh"),
        "{err}"
    );
    // `--generate KIND` is the same as `--generate=KIND`.
    let o = Command::new(pnet_tests::bin("pnetget"))
        .args(["--generate", "bash"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("--json"));
}
