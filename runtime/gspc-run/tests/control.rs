//! The `--control` socket of a running `gspc-run` serves its owner (the peer-uid check lets
//! our own user in; another user is refused: see `pnet-agent`'s
//! `a_control_client_of_another_user_is_refused`, which injects the mismatch).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

// Not every helper is used here.
#[allow(dead_code)]
mod common;

use common::{gspc_run_command, stderr, stdout};

/// `r = n + extra`, where `extra` comes from a control client.
const NET: &str = r#"<defun name="wait">
  <in name="n" type="long" place="n"/>
  <out name="r" type="long" place="r"/>
  <net>
    <place name="n" type="long"/>
    <place name="r" type="long"/>
    <place name="extra" type="long" put_token="true"/>
    <transition name="add">
      <defun>
        <in name="a" type="long"/>
        <in name="b" type="long"/>
        <out name="c" type="long"/>
        <expression>${c} := ${a} + ${b}</expression>
      </defun>
      <connect-in port="a" place="n"/>
      <connect-in port="b" place="extra"/>
      <connect-out port="c" place="r"/>
    </transition>
  </net>
</defun>
"#;

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn client(args: &[&str], sock: &Path) -> std::process::Output {
    gspc_run_command()
        .args(args)
        .arg("--control")
        .arg(sock)
        .output()
        .expect("run gspc-run")
}

#[test]
fn the_control_socket_serves_its_owner() {
    let dir =
        TempDir(std::env::temp_dir().join(format!("gspc-run-control-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o700)).unwrap();
    let net = dir.0.join("wait.xpnet");
    std::fs::write(&net, NET).unwrap();
    let sock = dir.0.join("ctl.sock");
    let job = gspc_run_command()
        .arg("--control")
        .arg(&sock)
        .arg(&net)
        .args(["-p", "n=1L"])
        .env("PNET_JIT", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gspc-run");
    let t = Instant::now();
    while !sock.exists() {
        assert!(t.elapsed() < Duration::from_secs(10), "no control socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    // A value of another type is refused with the literal to write (issue 22, item 1).
    let o = client(&["put-token", "extra=2"], &sock);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("value 2 for place `extra` is not of type long: write 2L"),
        "{}",
        stderr(&o)
    );
    let o = client(&["put-token", "extra=2L"], &sock);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The token makes `add` fire.
    let t = Instant::now();
    loop {
        let o = client(&["status"], &sock);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        if stdout(&o).contains(", 1 firings,") {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{}", stdout(&o));
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = client(&["close"], &sock);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = job.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "r = 3L\n");
}
