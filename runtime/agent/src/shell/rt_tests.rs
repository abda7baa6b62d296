//! The persistent runtime's control socket in-process: refusals (wrong secret, a state
//! directory or secret file others can read), submissions, waits and the stop.

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pnet_protocol::Secret;

use super::tests::TempDir;
use crate::control::{
    JobOutcome, RtClient, RtRequest, RtResponse, SECRET_FILE, SOCKET_FILE, check_private_dir,
    read_secret,
};
use crate::core::tests::{net, xs};
use crate::{AgentConfig, RuntimeConfig, SchedConfig, serve};

fn start(dir: &TempDir, secret: &Secret) -> std::thread::JoinHandle<crate::control::StopReport> {
    let rc = RuntimeConfig {
        agent: AgentConfig::new(
            pnet_topology::Plan::default(),
            PathBuf::from("/nonexistent/gspc-worker"),
        ),
        state_dir: dir.0.clone(),
        secret: secret.clone(),
        sched: SchedConfig::default(),
        stop_grace: Duration::from_millis(200),
    };
    let h = std::thread::spawn(move || serve(rc).expect("serve"));
    let t = Instant::now();
    while !dir.0.join(SOCKET_FILE).exists() {
        assert!(t.elapsed() < Duration::from_secs(10), "no control socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    h
}

#[test]
fn refuses_a_wrong_secret_and_serves_the_right_one() {
    let dir = TempDir::new();
    let secret = Secret::random().unwrap();
    let server = start(&dir, &secret);
    let sock = dir.0.join(SOCKET_FILE);
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let bad = RtClient::with_secret(&sock, Secret::random().unwrap());
    let e = bad
        .call(RtRequest::Status, Some(Duration::from_secs(5)))
        .unwrap_err();
    assert_eq!(e.code, "gspc-refused");
    assert!(e.message.starts_with("wrong secret"), "{e}");

    let c = RtClient::with_secret(&sock, secret.clone());
    let Ok(RtResponse::Status(s)) = c.call(RtRequest::Status, Some(Duration::from_secs(5))) else {
        panic!("no status");
    };
    assert_eq!(
        (s.pid, s.workers.len(), s.jobs_total),
        (std::process::id(), 0, 0)
    );
    // Garbage is not a bundle; a real one becomes job 1 and waits for a worker.
    let e = c
        .call(
            RtRequest::Submit {
                net: "x.pnet".into(),
                bundle: vec![1, 2, 3],
                inputs: vec![],
            },
            Some(Duration::from_secs(5)),
        )
        .unwrap_err();
    assert!(e.message.starts_with("x.pnet: not a valid bundle"), "{e}");
    let bytes = pnet_bundle::format::encode(&net("square")).unwrap();
    let r = c.call(
        RtRequest::Submit {
            net: "sq.pnet".into(),
            bundle: bytes,
            inputs: xs(0..3),
        },
        Some(Duration::from_secs(5)),
    );
    assert_eq!(r.unwrap(), RtResponse::Submitted { job: 1 });
    let e = c
        .call(RtRequest::Wait { job: 9 }, Some(Duration::from_secs(5)))
        .unwrap_err();
    assert!(e.message.starts_with("there is no job 9"), "{e}");
    let Ok(RtResponse::Jobs(jobs)) = c.call(RtRequest::Jobs, Some(Duration::from_secs(5))) else {
        panic!("no jobs");
    };
    assert_eq!(jobs.len(), 1);
    assert_eq!(
        (jobs[0].state.as_str(), jobs[0].tasks_queued),
        ("running", 3)
    );
    // A waiter on another connection hears of the cancellation at the stop.
    let c2 = RtClient::with_secret(&sock, secret);
    let waiter = std::thread::spawn(move || {
        c2.call(RtRequest::Wait { job: 1 }, Some(Duration::from_secs(10)))
    });
    std::thread::sleep(Duration::from_millis(100));
    let Ok(RtResponse::Stopped(rep)) = c.call(
        RtRequest::Stop { wait: false },
        Some(Duration::from_secs(10)),
    ) else {
        panic!("no stop report");
    };
    assert_eq!(rep.cancelled, vec![1]);
    assert!(rep.workers.is_empty() && rep.left.is_empty());
    assert_eq!(
        waiter.join().unwrap().unwrap(),
        RtResponse::Outcome {
            job: 1,
            outcome: JobOutcome::Cancelled
        }
    );
    assert_eq!(server.join().unwrap(), rep);
    assert!(!sock.exists());
}

#[test]
fn state_directory_and_secret_file_must_be_private() {
    let dir = TempDir::new();
    assert_eq!(check_private_dir(&dir.0), Ok(()));
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o750)).unwrap();
    let e = check_private_dir(&dir.0).unwrap_err();
    assert_eq!(e.code, "gspc-state-dir-mode");
    assert!(e.message.contains("mode 750"), "{e}");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o700)).unwrap();
    let e = read_secret(&dir.0).unwrap_err();
    assert_eq!(e.code, "gspc-no-runtime");
    let path = dir.0.join(SECRET_FILE);
    std::fs::write(&path, Secret::random().unwrap().to_hex()).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = read_secret(&dir.0).unwrap_err();
    assert_eq!(e.code, "gspc-secret-mode");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(read_secret(&dir.0).is_ok());
    std::fs::write(&path, "nonsense").unwrap();
    assert_eq!(read_secret(&dir.0).unwrap_err().code, "gspc-secret");
    let e = check_private_dir(&dir.0.join("missing")).unwrap_err();
    assert_eq!(e.code, "gspc-state-dir");
}
