//! The `gspc-leaf` command line: its help, and clear errors before it connects anywhere.

use std::process::Command;

fn leaf(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gspc-leaf"))
        .args(args)
        .env_remove("GSPC_SECRET")
        .output()
        .expect("run gspc-leaf")
}

#[test]
fn help_says_how_to_start_a_tree() {
    let out = leaf(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--root <HOST:PORT>"), "{text}");
    assert!(text.contains("gspc boot --topology worker:0"), "{text}");
}

#[test]
fn no_secret_is_an_error_naming_the_ways_to_give_it() {
    let out = leaf(&["--root", "127.0.0.1:1", "--workers", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no secret") && err.contains("GSPC_SECRET"),
        "{err}"
    );
}

#[test]
fn neither_root_nor_state_dir_is_a_usage_error() {
    let out = leaf(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--root"));
}
