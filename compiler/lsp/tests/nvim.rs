//! The documented Neovim configuration (`editors/pnet.lua`) driven headless against this
//! build of the server by `editors/nvim-check.sh` (the one test that runs it; `.ci/setup`
//! installs Neovim, so a missing `nvim` fails): diagnostics arrive, and the documented
//! mappings answer: `K` (hover), `gd` (definition), `<leader>rn` (rename), `]d` and
//! `<leader>ca` (a quick fix), `<leader>f` (formatting the expressions), `gd` on a `${port}`
//! inside an expression; signature help, workspace symbols, and (asked through Neovim's
//! client, which in 0.7 shows neither) inlay hints (of ports and locals) and semantic tokens.

use std::process::Command;

#[test]
fn neovim_mappings_hover_jump_rename_and_fix() {
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
    // <leader>rn, ]d, <leader>ca, signature help, workspace symbols
    assert!(
        stdout.contains(
            "rn: <place name=\"total\" type=\"long\"/> <connect-in port=\"a\" place=\"total\"/>"
        ),
        "{stdout}"
    );
    assert!(stdout.lines().any(|l| l == "]d: 9"), "{stdout}");
    assert!(
        stdout.contains("ca: <connect-in port=\"a\" place=\"total\"/>"),
        "{stdout}"
    );
    assert!(stdout.contains("sig: max (T, T) -> T"), "{stdout}");
    assert!(stdout.contains("ws: 3 [Variable] total"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "hints: : long"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "tokens: 2"), "{stdout}");
    // <leader>f (formatting), gd on a `${port}` inside an expression, a local's inlay hint
    assert!(
        stdout
            .lines()
            .any(|l| l == "fmt: <expression>${n} := ${a} * 2L</expression>"),
        "{stdout}"
    );
    assert!(stdout.lines().any(|l| l == "gd-expr: 6:18"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l == "local-hints: 7:24: long 7:32: long"),
        "{stdout}"
    );
    assert!(stdout.contains("nvim-check: ok"), "{stdout}");
    // The diagnostic nvim received: line 3 (0-based), from pnet, about the type.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("3:") && l.contains("pnet")),
        "{stdout}"
    );
}
