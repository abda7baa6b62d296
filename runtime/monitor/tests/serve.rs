//! The server with a scripted source: the token guards every path, the page and its assets
//! are served from the binary, the feed sends snapshots as server-sent events, a task's log
//! is read on demand.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use pnet_monitor::source::{JobSample, Running, TaskSample, WorkerSample};
use pnet_monitor::{LogReader, Options, Sample, Source};

/// Counts its polls; a worker runs task `n` at poll n.
struct Scripted(u64);

impl Source for Scripted {
    fn poll(&mut self) -> Result<Sample, String> {
        self.0 += 1;
        Ok(Sample {
            title: "scripted".into(),
            clock_ms: self.0 * 10,
            workers: vec![WorkerSample {
                name: "w1".into(),
                host: Some("h".into()),
                state: "up".into(),
                running: Some(Running {
                    job: Some(1),
                    transition: format!("t{}", self.0),
                }),
                in_flight: 1,
                ..WorkerSample::default()
            }],
            jobs: vec![JobSample {
                id: 1,
                net: "n.pnet".into(),
                state: "running".into(),
                ..JobSample::default()
            }],
            memory: None,
            tasks: Some(vec![TaskSample {
                id: "1/1".into(),
                job: Some(1),
                task: Some(1),
                worker: Some("w1".into()),
                transition: "t1".into(),
                state: "failed".into(),
                start_ms: Some(0),
                end_ms: Some(5),
                error: Some("it broke".into()),
                log_bytes: 3,
                ..TaskSample::default()
            }]),
        })
    }

    fn log_reader(&self) -> Option<LogReader> {
        Some(Arc::new(|job, task| Ok(format!("log of {job:?}/{task}"))))
    }
}

/// One GET: (status line, body).
fn get(addr: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

#[test]
fn the_token_guards_the_page_its_feed_and_logs() {
    let m = pnet_monitor::start(
        Box::new(Scripted(0)),
        Options {
            interval: Duration::from_millis(20),
            ..Options::default()
        },
    )
    .unwrap();
    let url = m.url().to_string();
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, token) = rest.split_once('/').unwrap();
    let token = token.trim_end_matches('/');
    assert!(addr.starts_with("127.0.0.1:"), "{url}");
    assert_eq!(token.len(), 32, "{url}");

    for bad in [
        "/",
        "/nope/",
        "/nope/events",
        &format!("/{token}x/"),
        "/app.js",
    ] {
        assert!(get(addr, bad).0.contains(" 404 "), "{bad}");
    }
    let (st, body) = get(addr, &format!("/{token}/"));
    assert!(st.contains(" 200 "), "{st}");
    assert!(body.contains("<script src=\"app.js\">"), "{body}");
    assert!(get(addr, &format!("/{token}")).0.contains(" 303 "));
    let (st, js) = get(addr, &format!("/{token}/app.js"));
    assert!(st.contains(" 200 ") && js.contains("EventSource"), "{st}");
    assert!(
        get(addr, &format!("/{token}/style.css"))
            .1
            .contains("#gantt")
    );

    // Snapshots come and go on.
    let mut seen = 0;
    for _ in 0..100 {
        let (_, body) = get(addr, &format!("/{token}/snapshot.json"));
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        if v["seq"].as_u64().unwrap() >= 3 {
            assert_eq!(v["title"], "scripted");
            assert_eq!(v["workers"][0]["host"], "h");
            assert_eq!(v["tasks"][0]["error"], "it broke");
            assert_eq!(v["tasks_sampled"], false);
            assert!(
                v["memory_note"]
                    .as_str()
                    .unwrap()
                    .contains("does not report")
            );
            seen = v["seq"].as_u64().unwrap();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(seen >= 3, "the snapshots did not advance");
    assert_eq!(
        get(addr, &format!("/{token}/log/1/7")).1,
        "log of Some(1)/7"
    );

    // The feed: an event stream whose first event is a snapshot.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /{token}/events HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&buf).contains("\"seq\"") {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "the feed closed");
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buf);
    assert!(text.contains("content-type: text/event-stream"), "{text}");
    assert!(text.contains("event: snapshot\ndata: {"), "{text}");
    m.stop();
}
