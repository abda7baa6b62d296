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
    // What happens to memory calls: they wait at the root (a leaf cannot say GPI).
    assert!(text.contains("capability GPI"), "{text}");
    // Its workers restarted as the root's; a root at a fixed address for --root leaves.
    assert!(text.contains("is started again under its name"), "{text}");
    assert!(
        text.contains("boot the root with\n--listen HOST:PORT"),
        "{text}"
    );
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
fn without_root_or_state_dir_it_reads_gspcs_default_state_directory() {
    let dir = std::env::temp_dir().join(format!("gspc-leaf-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gspc-leaf"))
        .args(["--wait-for-root", "0"])
        .env("GSPC_STATE_DIR", &dir)
        .env_remove("GSPC_SECRET")
        .output()
        .expect("run gspc-leaf");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("no runtime in {}", dir.display())) && err.contains("gspc boot"),
        "{err}"
    );
    assert!(
        !err.contains("waiting"),
        "--wait-for-root 0 does not wait: {err}"
    );
}

#[test]
fn a_root_that_does_not_come_is_waited_for_then_given_up_on() {
    // Nothing listens on the root's address (a port just closed): the leaf says that it
    // waits, how long, and gives up after --wait-for-root.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let root = format!("127.0.0.1:{port}");
    let t = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_gspc-leaf"))
        .args(["--root", &root, "--wait-for-root", "1.5"])
        .env("GSPC_SECRET", "0".repeat(64))
        .output()
        .expect("run gspc-leaf");
    let took = t.elapsed();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "waiting for the root agent (cannot connect to the root agent {root}"
        )) && err.contains("giving up in 2 s"),
        "{err}"
    );
    assert!(
        err.contains("waited 1.5 s for the root agent: --wait-for-root"),
        "{err}"
    );
    assert!(
        took >= std::time::Duration::from_millis(1500) && took < std::time::Duration::from_secs(20),
        "{took:?}"
    );
}

#[test]
fn root_and_state_dir_together_are_a_usage_error() {
    let out = leaf(&["--root", "127.0.0.1:1", "--state-dir", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}

#[test]
fn a_root_that_is_not_host_and_port_is_explained() {
    let out = Command::new(env!("CARGO_BIN_EXE_gspc-leaf"))
        .args(["--root", "roothost", "--workers", "1"])
        .env("GSPC_SECRET", "0".repeat(64))
        .output()
        .expect("run gspc-leaf");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot connect to the root agent roothost")
            && err.contains("give HOST:PORT")
            && err.contains("workers connect to"),
        "{err}"
    );
}

#[test]
fn the_memory_capability_needs_working_memory() {
    let out = Command::new(env!("CARGO_BIN_EXE_gspc-leaf"))
        .args([
            "--root",
            "127.0.0.1:1",
            "--capabilities",
            "GPI",
            "--workers",
            "1",
        ])
        .env("GSPC_SECRET", "0".repeat(64))
        .output()
        .expect("run gspc-leaf");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--capabilities GPI") && err.contains("--shm BYTES"),
        "{err}"
    );
    // The help says how to give a leaf's workers working memory.
    let help = Command::new(env!("CARGO_BIN_EXE_gspc-leaf"))
        .arg("--help")
        .output()
        .expect("run gspc-leaf");
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("--shm <BYTES>"), "{text}");
}
