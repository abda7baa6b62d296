//! `pnetput` and `pnetget` with the real binaries: tokens put into a bundle are there in every
//! run; the output tokens of a run are read back from its result file.

use std::process::Command;

use pnet_tests::bin;

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pnet-tokens-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn countdown_bundle() -> std::path::PathBuf {
    let file = tmp("countdown.pnet");
    let o = output(
        Command::new(bin("pnetc"))
            .arg(pnet_tests::workspace_root().join("examples/countdown/countdown.xpnet"))
            .arg("-o")
            .arg(&file),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    file
}

#[test]
fn pnetput_makes_a_bundle_that_runs_without_arguments() {
    let plain = countdown_bundle();
    let ready = tmp("countdown-ready.pnet");
    let o = output(
        Command::new(bin("pnetput"))
            .arg(&plain)
            .args(["-o"])
            .arg(&ready)
            .args(["-p", "n=7L"]),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = output(Command::new(bin("pnetput")).arg("--list").arg(&ready));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "in n : long = [7L]\n");
    let o = output(Command::new(bin("gspc-run")).arg(&ready));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "done = 0L\n");
    // Without the token, the net has nothing to do.
    let o = output(Command::new(bin("gspc-run")).arg(&plain));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "");
}

#[test]
fn pnetput_refuses_what_does_not_fit() {
    let plain = countdown_bundle();
    let out = tmp("never.pnet");
    for (put, message) in [
        ("n=7", "value 7 for port `n` is not of type long: write 7L"),
        (
            "m=7L",
            "the net has no in port `m` (its in ports: n (long))",
        ),
        ("n=7L +", "-p n: '7L +' is not a value"),
    ] {
        let o = output(
            Command::new(bin("pnetput"))
                .arg(&plain)
                .arg("-o")
                .arg(&out)
                .args(["-p", put]),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(err.contains(message), "{put}: {err}");
    }
    assert!(!out.exists());
    let o = output(
        Command::new(bin("pnetput"))
            .arg("/nonexistent.pnet")
            .args(["-o", "x"]),
    );
    assert_eq!(o.status.code(), Some(1));
    let o = output(Command::new(bin("pnetput")).arg("--bogus"));
    assert_eq!(o.status.code(), Some(2));
}

fn output(cmd: &mut Command) -> std::process::Output {
    cmd.output().expect("the binary runs")
}

#[test]
fn pnetget_reads_the_result_file_of_a_run() {
    let plain = countdown_bundle();
    let result = tmp("countdown.pnr");
    let o = output(
        Command::new(bin("gspc-run"))
            .arg(&plain)
            .args(["-p", "n=4L", "--result"])
            .arg(&result),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let printed = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(printed, "done = 0L\n");
    // The literal form is what gspc-run printed.
    let o = output(Command::new(bin("pnetget")).arg(&result));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), printed);
    // JSON: typed, in the encoding modules see.
    let o = output(Command::new(bin("pnetget")).arg(&result).arg("--json"));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["outputs"]["done"]["type"], "long");
    assert_eq!(json["outputs"]["done"]["tokens"], serde_json::json!([0]));
    // An unknown port, and a file that is not a result file.
    let o = output(Command::new(bin("pnetget")).arg(&result).arg("nope"));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("has no output port `nope`"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = output(Command::new(bin("pnetget")).arg(&plain));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a pnet result file"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
