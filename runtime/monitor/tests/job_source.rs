//! `JobSource` against a stand-in for a `gspc-run --control` socket: a monitor-made socket is
//! closed at the first contact, the job's tasks become samples with their times, a task's log
//! is read on demand, and a socket that goes away leaves the last sample, ended.

use std::os::unix::net::UnixListener;
use std::sync::{Arc, Mutex};

use pnet_agent::control::{JobTasks, Request, Response, Status, TaskInfo, TaskLog, WorkerStatus};
use pnet_monitor::{JobSource, Source};
use pnet_protocol::frame::{read_msg, write_msg};

/// Serves `Status`, `Tasks`, `Logs` and `Close` on `listener`, recording the requests.
fn serve(listener: UnixListener, seen: Arc<Mutex<Vec<String>>>) {
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            while let Ok(req) = read_msg::<_, Request>(&mut conn) {
                seen.lock().unwrap().push(format!("{req:?}"));
                let answer = match req {
                    Request::Status => Response::Status(Status {
                        elapsed_ms: 2_000,
                        workers: vec![WorkerStatus {
                            id: 0,
                            name: "w0".into(),
                            capabilities: vec!["A".into()],
                            tasks: 1,
                            done: 1,
                        }],
                        tasks_running: 1,
                        tasks_queued: 2,
                        tasks_done: 1,
                        firings: 9,
                        waiting: None,
                        tasks_sent: 0,
                    }),
                    Request::Tasks => Response::Tasks(JobTasks {
                        job: 1,
                        tasks: vec![
                            task(0, "done", Some(900_000), None),
                            task(1, "running", None, None),
                            task(2, "failed", Some(1_500_000), Some("exit 3")),
                        ],
                        ..JobTasks::default()
                    }),
                    Request::Logs { task } => Response::Logs(vec![TaskLog {
                        task: task.unwrap_or(0),
                        transition: "t".into(),
                        worker: "w0".into(),
                        text: "tail\n".into(),
                        dropped: 10,
                    }]),
                    Request::Close => Response::Ok,
                    _ => Response::Error("no".into()),
                };
                if write_msg(&mut conn, &answer).is_err() {
                    break;
                }
            }
        }
    });
}

fn task(n: u64, state: &str, ended_us: Option<u64>, error: Option<&str>) -> TaskInfo {
    TaskInfo {
        task: n,
        transition: "t".into(),
        module: "m.f".into(),
        worker_id: 0,
        worker: "w0".into(),
        state: state.into(),
        sent_us: 100_000 * n,
        started_us: Some(100_000 * n + 50_000),
        ended_us,
        retries: 0,
        error: error.map(str::to_string),
        log_bytes: 5,
        inputs: Some(format!("n = {n}L")),
    }
}

#[test]
fn a_jobs_socket_gives_samples_with_its_tasks_and_logs() {
    let dir = std::env::temp_dir().join(format!("pnet-monitor-src-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("ctl.sock");
    let seen = Arc::new(Mutex::new(Vec::new()));
    serve(UnixListener::bind(&socket).unwrap(), seen.clone());

    let mut src = JobSource::closing(&socket).net("n.xpnet");
    let s = src.poll().unwrap();
    assert_eq!(
        seen.lock().unwrap()[..3],
        ["Status".to_string(), "Close".into(), "Tasks".into()]
    );
    assert_eq!(s.clock_ms, 2_000);
    assert_eq!(s.jobs[0].net, "n.xpnet");
    assert_eq!((s.jobs[0].tasks_queued, s.jobs[0].firings), (2, Some(9)));
    let tasks = s.tasks.as_ref().unwrap();
    let times: Vec<_> = tasks
        .iter()
        .map(|t| {
            (
                t.id.as_str(),
                t.state.as_str(),
                t.sent_ms,
                t.start_ms,
                t.end_ms,
            )
        })
        .collect();
    assert_eq!(
        times,
        [
            ("1/0", "done", Some(0), Some(50), Some(900)),
            ("1/1", "running", Some(100), Some(150), None),
            ("1/2", "failed", Some(200), Some(250), Some(1500)),
        ]
    );
    assert_eq!(tasks[2].error.as_deref(), Some("exit 3"));
    assert_eq!(tasks[2].inputs.as_deref(), Some("n = 2L"));
    let log = src.log_reader().unwrap();
    assert_eq!(
        log(Some(1), 2).unwrap(),
        "[10 earlier bytes not kept]\ntail\n"
    );

    // A second poll does not close again.
    src.poll().unwrap();
    assert_eq!(
        seen.lock()
            .unwrap()
            .iter()
            .filter(|r| *r == "Close")
            .count(),
        1
    );

    // The job ended: its socket is gone; the last sample stays, ended.
    std::fs::remove_file(&socket).unwrap();
    let s = src.poll().unwrap();
    assert_eq!(s.jobs[0].state, "ended");
    assert_eq!(s.workers[0].state, "stopped");
    assert_eq!(s.tasks.as_ref().unwrap().len(), 3);
    let _ = std::fs::remove_dir_all(&dir);

    // Never reached: an error.
    let mut none = JobSource::new(&dir.join("nothing.sock"));
    assert!(none.poll().unwrap_err().contains("cannot connect"));
}
