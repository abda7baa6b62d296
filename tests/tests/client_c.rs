//! `libpnet_client` from C and C++: the example `examples/c/boot_submit_wait.c` is built with
//! `cc` against `runtime/client-c/include/pnet_client.h` and `libpnet_client.so`, connects to
//! a runtime booted by the test, submits a net, puts a token, waits, and prints the outputs.
//! The header also compiles as C++ and the static library links.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Waits with a timeout on a job that waits for a token, cancels it, waits again.
const WAITS: &str = r#"#include <inttypes.h>
#include <stdio.h>
#include "pnet_client.h"
int main(int argc, char **argv) {
  pnet_client *c = NULL;
  uint64_t job = 0;
  char *result = NULL;
  if (argc != 3 || pnet_connect(argv[1], &c) != PNET_OK ||
      pnet_submit(c, argv[2], "{\"n\": [1]}", NULL, &job) != PNET_OK) {
    fprintf(stderr, "%s\n", pnet_last_error());
    return 1;
  }
  int rc = pnet_wait(c, job, 0.2, &result);
  printf("wait: %d %s\n", rc, pnet_last_error());
  printf("cancel: %d\n", pnet_cancel(c, job));
  rc = pnet_wait(c, job, 0, &result);
  printf("wait: %d %s %s\n", rc, pnet_last_error(), result ? result : "(none)");
  pnet_free_string(result);
  rc = pnet_put_token(c, job, "extra", "1");
  printf("put_token: %d %s\n", rc, pnet_last_error());
  pnet_disconnect(c);
  return 0;
}
"#;

fn has(tool: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("skipped: {tool} is not installed");
    }
    ok
}

fn compile(tool: &str, args: &[&std::ffi::OsStr]) {
    let o = Command::new(tool).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{tool} {args:?}:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_c_example_submits_puts_a_token_and_waits() {
    if !has("cc") {
        return;
    }
    let bin = pnet_tests::build_packages(&["pnet-client-c", "pnet-gspc", "pnet-worker", "pnetc"]);
    let root = pnet_tests::workspace_root();
    let include = root.join("runtime/client-c/include");
    let example = root.join("examples/c/boot_submit_wait.c");
    let gspc = pnet_tests::GspcScratch::new("client-c", "example", bin.join("gspc"));
    let dir: PathBuf = gspc.dir.clone();

    // Build: the example against the shared library; the header as C++; the static library.
    let exe = dir.join("boot_submit_wait");
    let os = |p: &Path| p.as_os_str().to_owned();
    let rpath = format!("-Wl,-rpath,{}", bin.display());
    let inc = format!("-I{}", include.display());
    let lib = format!("-L{}", bin.display());
    compile(
        "cc",
        &[
            "-std=c99".as_ref(),
            "-Wall".as_ref(),
            "-Werror".as_ref(),
            inc.as_ref(),
            &os(&example),
            lib.as_ref(),
            "-lpnet_client".as_ref(),
            rpath.as_ref(),
            "-o".as_ref(),
            &os(&exe),
        ],
    );
    if has("c++") {
        let cpp = dir.join("header.cpp");
        std::fs::write(
            &cpp,
            "#include <pnet_client.h>\nint main() { pnet_client *c = nullptr; \
             pnet_disconnect(c); return pnet_last_error()[0]; }\n",
        )
        .unwrap();
        compile(
            "c++",
            &[
                "-Wall".as_ref(),
                "-Werror".as_ref(),
                inc.as_ref(),
                &os(&cpp),
                &os(&bin.join("libpnet_client.a")),
                "-lhwloc".as_ref(),
                "-lpthread".as_ref(),
                "-ldl".as_ref(),
                "-lm".as_ref(),
                "-o".as_ref(),
                &os(&dir.join("header_cpp")),
            ],
        );
        let o = Command::new(dir.join("header_cpp")).output().unwrap();
        assert!(o.status.success(), "the static C++ program failed: {o:?}");
    }

    // Without a runtime: a clear error.
    let o = Command::new(&exe)
        .arg(gspc.state())
        .arg(dir.join("none.pnet"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).starts_with("connect failed (2): "),
        "{}",
        text(&o.stderr)
    );

    let net = pnet_tests::workspace_root().join("tests/data/protocol/add.xpnet");
    let bundle = dir.join("add.pnet");
    let o = Command::new(bin.join("pnetc"))
        .arg(&net)
        .arg("-o")
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    gspc.ok(&["boot", "--topology", "worker:1", "--timeout", "30"]);

    let o = Command::new(&exe)
        .arg(gspc.state())
        .arg(&bundle)
        .output()
        .unwrap();
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    println!("{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "submitted job 1", "{out}");
    assert!(
        lines[1].starts_with("refused: value: expected an integer (long), found the string"),
        "{out}"
    );
    let status: serde_json::Value =
        serde_json::from_str(lines[2].strip_prefix("status: ").unwrap()).unwrap();
    assert_eq!(status["id"], 1);
    assert_eq!(status["name"], "c-example");
    let outputs: serde_json::Value =
        serde_json::from_str(lines[3].strip_prefix("outputs: ").unwrap()).unwrap();
    assert_eq!(outputs["state"], "done", "{out}");
    assert_eq!(
        outputs["outputs"],
        serde_json::json!({"r": {"type": "long", "tokens": [42]}})
    );

    // A wait that times out, a cancel, and the wait that sees it (PNET_ERR_TIMEOUT = 8,
    // PNET_ERR_JOB_FAILED = 9 with the outcome).
    let waits = dir.join("waits.c");
    std::fs::write(&waits, WAITS).unwrap();
    let waits_exe = dir.join("waits");
    compile(
        "cc",
        &[
            "-std=c99".as_ref(),
            "-Wall".as_ref(),
            "-Werror".as_ref(),
            inc.as_ref(),
            &os(&waits),
            lib.as_ref(),
            "-lpnet_client".as_ref(),
            rpath.as_ref(),
            "-o".as_ref(),
            &os(&waits_exe),
        ],
    );
    let o = Command::new(&waits_exe)
        .arg(gspc.state())
        .arg(&bundle)
        .output()
        .unwrap();
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "wait: 8 job 2 has not ended after 0.2 s", "{out}");
    assert_eq!(lines[1], "cancel: 0", "{out}");
    assert!(
        lines[2].starts_with("wait: 9 job 2 was cancelled {"),
        "{out}"
    );
    assert!(lines[2].contains(r#""state":"cancelled""#), "{out}");
    assert_eq!(lines[3], "put_token: 5 job 2 has ended", "{out}");

    // The job is in `gspc jobs` as the C program named it.
    let jobs = gspc.ok(&["jobs"]);
    assert!(jobs.contains("c-example"), "{jobs}");

    // A missing bundle is an error of its own.
    let o = Command::new(&exe)
        .arg(gspc.state())
        .arg(dir.join("none.pnet"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).starts_with("submit failed (6): cannot read "),
        "{}",
        text(&o.stderr)
    );

    // With a topology the example boots its own runtime (pnet_boot) and stops it (pnet_stop).
    let own = dir.join("own-runtime");
    let o = Command::new(&exe)
        .arg(&own)
        .arg(&bundle)
        .arg("worker:1")
        .env("GSPC", bin.join("gspc"))
        .output()
        .unwrap();
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("booted a runtime in {}", own.display()),
        "{out}"
    );
    assert_eq!(lines[1], "submitted job 1", "{out}");
    let outputs: serde_json::Value =
        serde_json::from_str(lines[4].strip_prefix("outputs: ").unwrap()).unwrap();
    assert_eq!(
        outputs["outputs"],
        serde_json::json!({"r": {"type": "long", "tokens": [42]}}),
        "{out}"
    );
    assert_eq!(lines[5], "stopped the runtime", "{out}");
    let o = Command::new(bin.join("gspc"))
        .args(["status", "--state-dir"])
        .arg(&own)
        .output()
        .unwrap();
    assert!(
        !o.status.success(),
        "the runtime still answers after pnet_stop"
    );
    // A topology with an error: boot fails with gspc's message.
    let o = Command::new(&exe)
        .arg(dir.join("bad-runtime"))
        .arg(&bundle)
        .arg("worker:x")
        .env("GSPC", bin.join("gspc"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).starts_with("boot failed (2): "),
        "{}",
        text(&o.stderr)
    );
}
