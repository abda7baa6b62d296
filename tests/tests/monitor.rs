//! `gspc monitor` in a real browser: Debian's headless Chromium, driven through chromedriver
//! (the W3C WebDriver protocol, spoken here over loopback with a small client of our own).
//! A runtime with three workers runs a job of eight 1.2 s tasks and a job whose task fails;
//! the page must show the workers, the running job and its task bars, and then update: more
//! bars, the job done, the other job failed with the task's error in the failed bar's
//! details (with its inputs). The page is kept as target/monitor-test/screenshot.png.
//!
//! Without `chromium` or `chromedriver` (`.ci/setup` installs both), it checks the snapshot
//! over HTTP only and says that the browser part was skipped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A program on the PATH (or at its Debian place).
fn find(program: &str, debian: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .chain([PathBuf::from(debian)])
        .find(|p| p.is_file())
}

/// A child process killed when dropped.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 request to chromedriver: the JSON answer's `value`.
fn webdriver(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .map_err(|e| e.to_string())?;
    let (head, body) = read_answer(&mut s)?;
    let v: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
    if !head.contains(" 200 ") {
        return Err(format!("{method} {path}: {head}: {v}"));
    }
    Ok(v["value"].clone())
}

/// Reads one HTTP answer: its head and its body (chromedriver keeps the connection open, so
/// the body is read by its Content-Length, or chunk by chunk).
fn read_answer(s: &mut TcpStream) -> Result<(String, String), String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let read_more =
        |s: &mut TcpStream, buf: &mut Vec<u8>, chunk: &mut [u8]| -> Result<(), String> {
            let n = s.read(chunk).map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("the connection closed".into());
            }
            buf.extend_from_slice(&chunk[..n]);
            Ok(())
        };
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        read_more(s, &mut buf, &mut chunk)?;
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let lower = head.to_ascii_lowercase();
    let length = lower
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    let start = head_end + 4;
    match length {
        Some(n) => {
            while buf.len() < start + n {
                read_more(s, &mut buf, &mut chunk)?;
            }
            Ok((
                head,
                String::from_utf8_lossy(&buf[start..start + n]).into_owned(),
            ))
        }
        None if lower.contains("transfer-encoding: chunked") => {
            while !buf[start..].ends_with(b"0\r\n\r\n") {
                read_more(s, &mut buf, &mut chunk)?;
            }
            Ok((head, unchunk(&String::from_utf8_lossy(&buf[start..]))))
        }
        None => {
            let _ = s.read_to_end(&mut buf);
            Ok((head, String::from_utf8_lossy(&buf[start..]).into_owned()))
        }
    }
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn base64_decode(text: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for v in text.bytes().filter_map(val) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// A headless Chromium session.
struct Browser {
    port: u16,
    session: String,
    _driver: Kill,
}

impl Browser {
    fn start(driver: &Path, chromium: &Path) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let driver = Kill(child);
        let t0 = Instant::now();
        while webdriver(port, "GET", "/status", None).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(15),
                "chromedriver did not answer"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.display().to_string(),
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,1000"]
            }
        }}});
        let v = webdriver(port, "POST", "/session", Some(&caps)).expect("a browser session");
        Browser {
            port,
            session: v["sessionId"].as_str().unwrap().to_string(),
            _driver: driver,
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        self.try_call(method, path, body).unwrap()
    }

    fn try_call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        let path = format!("/session/{}{path}", self.session);
        webdriver(self.port, method, &path, body)
    }

    /// Clicks the first element that `selector` finds (looked for again when it was replaced
    /// between finding and clicking).
    fn click(&self, selector: &str) {
        let mut clicked = Err(String::new());
        for _ in 0..5 {
            let el = self.call(
                "POST",
                "/element",
                Some(&json!({"using": "css selector", "value": selector})),
            );
            let id = el
                .as_object()
                .and_then(|o| o.values().next())
                .and_then(Value::as_str)
                .expect("an element id")
                .to_string();
            clicked = self.try_call("POST", &format!("/element/{id}/click"), Some(&json!({})));
            if clicked.is_ok() {
                return;
            }
        }
        clicked.unwrap_or_else(|e| panic!("a click on {selector}: {e}"));
    }

    fn js(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(&json!({"script": script, "args": []})),
        )
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = webdriver(
            self.port,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
        );
    }
}

/// What the page shows, read from its DOM.
const READ_PAGE: &str = r##"
const q = (s) => [...document.querySelectorAll(s)];
return {
  seq: Number(document.body.dataset.seq || 0),
  conn: document.getElementById("conn").textContent,
  workers: q("#workers tbody tr[data-worker]").map((r) => r.dataset.worker + " " + r.querySelector(".current").textContent),
  jobs: q("#jobs tbody tr[data-job]").map((r) => ({ id: r.dataset.job, state: r.querySelector(".state").textContent, text: r.textContent })),
  bars: q("#gantt .bar").length,
  failed: q('#gantt .bar[data-state="failed"]').length,
};"##;

fn job_state(page: &Value, id: &str) -> String {
    page["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == id)
        .map_or(String::new(), |j| j["state"].as_str().unwrap().to_string())
}

/// Polls the page until `ok` holds (at most `secs` seconds): the last reading.
fn wait_for(b: &Browser, secs: u64, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let t0 = Instant::now();
    loop {
        let page = b.js(READ_PAGE);
        if ok(&page) {
            return page;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "the page did not show {what} within {secs} s: {page:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What both tests build (one set: another would rebuild shared dependencies).
const PACKAGES: &[&str] = &["pnet-gspc", "gspc-run", "pnet-worker"];

const NET: &str = r#"<defun name="NAME">
  <in name="x" type="long" place="x"/>
  <out name="y" type="long" place="y"/>
  <net>
    <place name="x" type="long"/>
    <place name="y" type="long"/>
    <transition name="TRANSITION">
      <defun><in name="a" type="long"/><out name="y" type="long"/>
        <module name="MODULE" function="y FUNCTION (a)"/></defun>
      <connect-in port="a" place="x"/><connect-out port="y" place="y"/>
    </transition>
  </net>
</defun>
"#;

#[test]
fn the_monitor_page_shows_workers_jobs_and_task_bars_live() {
    let bin = pnet_tests::build_packages(PACKAGES);
    let scratch = pnet_tests::GspcScratch::new("monitor", "page", bin.join("gspc"));
    let mods = scratch.dir.join("mods");
    std::fs::create_dir_all(&mods).unwrap();
    let script = |name: &str, text: &str| {
        let p = mods.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    script(
        "slow.nap",
        "#!/bin/sh\ncat >/dev/null\necho napping >&2\nsleep 1.2\necho '{\"y\": 1}'\n",
    );
    script(
        "bad.fail",
        "#!/bin/sh\ncat >/dev/null\necho 'the disk is on fire' >&2\nexit 3\n",
    );
    let net = |name: &str, transition: &str, module: &str, function: &str| {
        let p = scratch.dir.join(format!("{name}.xpnet"));
        let text = NET
            .replace("NAME", name)
            .replace("TRANSITION", transition)
            .replace("MODULE", module)
            .replace("FUNCTION", function);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let naps = net("naps", "nap", "slow", "nap");
    let broken = net("broken", "explode", "bad", "fail");
    let o = scratch.ok(&[
        "boot",
        "--topology",
        "worker:3",
        "--module-path",
        &mods.display().to_string(),
        "--timeout",
        "30",
    ]);
    assert!(o.contains("gspc: runtime booted (pid "), "{o}");

    // gspc monitor: the URL first.
    let mut monitor = Command::new(bin.join("gspc"))
        .args(["monitor", "--interval", "100", "--state-dir"])
        .arg(scratch.state())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start gspc monitor");
    let mut line = String::new();
    BufReader::new(monitor.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _monitor = Kill(monitor);
    let url = line.trim().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "first line: {line:?}");
    // Without a browser too: the snapshot shows the workers.
    let t0 = Instant::now();
    loop {
        let snap: Option<Value> =
            http_get(&format!("{url}snapshot.json")).and_then(|b| serde_json::from_str(&b).ok());
        if snap.is_some_and(|s| s["workers"].as_array().is_some_and(|w| w.len() == 3)) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no snapshot with 3 workers"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let (Some(chromium), Some(driver)) = (
        find("chromium", "/usr/bin/chromium"),
        find("chromedriver", "/usr/bin/chromedriver"),
    ) else {
        println!(
            "skipped: the browser part of this test of `gspc monitor` needs chromium and \
             chromedriver (Debian: apt-get install chromium chromium-driver; .ci/setup installs \
             them)"
        );
        return;
    };
    let t0 = Instant::now();
    let b = Browser::start(&driver, &chromium);
    b.call("POST", "/url", Some(&json!({ "url": url })));
    let page = wait_for(&b, 30, "three workers", |p| {
        p["workers"].as_array().unwrap().len() == 3 && p["conn"] == "live"
    });
    assert_eq!(page["bars"], 0, "{page:#}");
    b.js(&format!(
        "window.__seen = []; const read = () => {{ {READ_PAGE} }}; \
         new MutationObserver(() => window.__seen.push(read())).observe(document.body, \
         {{ attributes: true, attributeFilter: ['data-seq'] }}); return true;"
    ));

    let mut submit = vec!["submit".to_string(), naps];
    for i in 1..=8 {
        submit.extend(["-p".to_string(), format!("x={i}L")]);
    }
    let submit: Vec<&str> = submit.iter().map(String::as_str).collect();
    let job = scratch.ok(&submit).trim().to_string();
    // The page is read every 100 ms, but on a loaded machine a WebDriver call may take longer
    // than the job: the page itself also records what each render showed.
    let t1 = Instant::now();
    let first = loop {
        let seen = b.js("return window.__seen");
        let first = seen.as_array().unwrap().iter().find(|p| {
            job_state(p, &job) == "running"
                && p["bars"].as_u64().unwrap() >= 1
                && (p["workers"].as_array().unwrap().iter())
                    .any(|w| w.as_str().unwrap().ends_with(": nap"))
        });
        if let Some(f) = first {
            break f.clone();
        }
        assert!(
            t1.elapsed() < Duration::from_secs(30),
            "the page did not show the running job, its bars and a worker's task within 30 \
             s: {seen:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let bad = scratch
        .ok(&["submit", &broken, "-p", "x=1L"])
        .trim()
        .to_string();
    let bars = first["bars"].as_u64().unwrap();
    let page = wait_for(&b, 45, "more bars, the job done, the other failed", |p| {
        p["bars"].as_u64().unwrap() > bars
            && job_state(p, &job) == "done"
            && job_state(p, &bad) == "failed"
            && p["failed"].as_u64().unwrap() >= 1
    });
    assert!(page["bars"].as_u64().unwrap() >= 9, "{page:#}");
    let failed_row = page["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == bad.as_str())
        .unwrap();
    assert!(
        failed_row["text"]
            .as_str()
            .unwrap()
            .contains("the disk is on fire"),
        "{failed_row}"
    );

    // Stop following the clock (the bars stand still), then click the failed task: its
    // details show the error (a bar replaced between finding and clicking it is looked for
    // again).
    b.click("#follow");
    assert_eq!(
        b.js("return document.getElementById('follow').checked"),
        false
    );
    b.click("#gantt .bar[data-state=\"failed\"]");
    let details = b.js("return document.getElementById('details').textContent");
    let details = details.as_str().unwrap();
    assert!(details.contains("explode"), "{details}");
    assert!(details.contains("the disk is on fire"), "{details}");
    assert!(
        details.contains("a = 1L"),
        "the failed task's inputs: {details}"
    );

    // A done task's log, asked for when it is clicked.
    b.click("#gantt .bar[data-state=\"done\"]");
    let t2 = Instant::now();
    loop {
        let log =
            b.js("const l = document.getElementById('details-log'); return l && l.textContent");
        if log == "napping\n" {
            break;
        }
        assert!(
            t2.elapsed() < Duration::from_secs(15),
            "the clicked task's log did not show: {log}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let shot = b.call("GET", "/screenshot", None);
    let png = base64_decode(shot.as_str().unwrap());
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    let out = bin.parent().unwrap().join("monitor-test");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("screenshot.png"), &png).unwrap();
    println!(
        "the page as the test left it: {} ({} s)",
        out.join("screenshot.png").display(),
        t0.elapsed().as_secs()
    );
}

/// One GET on the monitor: the body (None: no answer).
fn http_get(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let (addr, path) = rest.split_once('/')?;
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET /{path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    Some(text.split_once("\r\n\r\n")?.1.to_string())
}

/// `gspc-run --monitor` (no browser needed): the URL on stderr at the start, the run's
/// workers and tasks in the snapshots while it runs, a task's log on demand, then the run ends
/// as without a monitor (its private control socket is closed at once) and its folder is
/// removed.
#[test]
fn gspc_run_monitor_serves_the_run_while_it_runs() {
    let bin = pnet_tests::build_packages(PACKAGES);
    let dir = std::env::temp_dir().join(format!("pnet-monitor-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let nap = dir.join("slow.nap");
    std::fs::write(
        &nap,
        "#!/bin/sh\ncat >/dev/null\necho napping >&2\nsleep 0.6\necho '{\"y\": 1}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&nap, std::fs::Permissions::from_mode(0o755)).unwrap();
    let net = dir.join("naps.xpnet");
    std::fs::write(
        &net,
        NET.replace("NAME", "naps")
            .replace("TRANSITION", "nap")
            .replace("MODULE", "slow")
            .replace("FUNCTION", "nap"),
    )
    .unwrap();
    let stdout = std::fs::File::create(dir.join("out")).unwrap();
    let mut child = Command::new(bin.join("gspc-run"))
        .args(["--monitor", "--topology", "worker:2"])
        .arg(&net)
        .args(["-p", "x=1L", "-p", "x=2L", "-p", "x=3L", "-p", "x=4L"])
        .env_remove("PNET_MODULE_PATH")
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gspc-run");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let url = line
        .strip_prefix("gspc-run: monitor: ")
        .unwrap_or_else(|| panic!("first line on stderr: {line:?}"))
        .trim()
        .to_string();
    let mut rest = String::new();
    let drain = std::thread::spawn(move || err.read_to_string(&mut rest).map(|_| rest));

    let t0 = Instant::now();
    let snap = loop {
        let s: Option<Value> =
            http_get(&format!("{url}snapshot.json")).and_then(|b| serde_json::from_str(&b).ok());
        if let Some(s) = s.filter(|s| {
            s["workers"].as_array().is_some_and(|w| w.len() == 2)
                && s["tasks"].as_array().is_some_and(|t| {
                    t.iter()
                        .any(|t| t["state"] == "done" && t["log_bytes"].as_u64() > Some(0))
                })
        }) {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no snapshot with 2 workers and a done task"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        snap["jobs"][0]["net"]
            .as_str()
            .unwrap()
            .ends_with("naps.xpnet"),
        "{snap:#}"
    );
    assert_eq!(snap["tasks_sampled"], false);
    let done = snap["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["state"] == "done")
        .unwrap();
    let log = http_get(&format!("{url}log/1/{}", done["task"])).unwrap();
    assert_eq!(log, "napping\n");
    let title = snap["title"].as_str().unwrap();
    let socket = title.split("control socket ").nth(1).unwrap();

    let status = child.wait().unwrap();
    let rest = drain.join().unwrap().unwrap();
    assert!(status.success(), "{status:?}: {rest}");
    let out = std::fs::read_to_string(dir.join("out")).unwrap();
    assert_eq!(out, "y = 1L\n".repeat(4));
    assert!(
        !Path::new(socket).parent().unwrap().exists(),
        "{socket}'s folder is left"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
