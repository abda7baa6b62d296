//! `gspc monitor` and `gspc-run --monitor`: a web page on loopback that shows a run live:
//! its workers (host, capabilities, state, current task, load), its jobs (state, progress,
//! errors), a Gantt chart of tasks per worker over time (zoom; click a task for its
//! transition, inputs, duration, log and error) and the memory layer's segments.
//!
//! [`start`] polls a [`Source`] (a `gspc` runtime's or a `gspc-run --control` job's control
//! socket) on a thread of its own, turns the samples into [`Snapshot`]s ([`model`]) and serves
//! them with axum on a thread of its own: the page (HTML, CSS and JS embedded in the binary:
//! no CDN, it works without internet) and a server-sent event stream of snapshots as JSON.
//! Every URL starts with a random token (`http://127.0.0.1:PORT/TOKEN/`); any other path is
//! answered 404.

pub mod model;
mod server;
pub mod source;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use model::{Bar, Model, Snapshot};
pub use source::{JobSource, LogReader, RuntimeSource, Sample, Source};

/// How to serve.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where to listen (default 127.0.0.1:0: a free port on loopback).
    pub listen: SocketAddr,
    /// The token in the URL (default: 128 random bits as hex).
    pub token: Option<String>,
    /// How often the source is polled (default 250 ms).
    pub interval: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: None,
            interval: Duration::from_millis(250),
        }
    }
}

/// A running monitor: it serves until [`Monitor::stop`] or the end of the process.
#[derive(Debug)]
pub struct Monitor {
    url: String,
    stop: Arc<AtomicBool>,
    stop_server: Option<tokio::sync::oneshot::Sender<()>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Monitor {
    /// The page's URL, token included (`http://127.0.0.1:PORT/TOKEN/`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Serves until the process ends.
    pub fn wait(mut self) {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }

    /// Stops polling and serving.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(s) = self.stop_server.take() {
            let _ = s.send(());
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.shut_down();
        }
    }
}

/// A fresh random token: 32 hex digits.
pub fn random_token() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the system's random numbers");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Binds the listener, starts polling `source` and serving; returns once the page can be
/// opened.
pub fn start(source: Box<dyn Source>, options: Options) -> std::io::Result<Monitor> {
    let listener = std::net::TcpListener::bind(options.listen)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let token = options.token.clone().unwrap_or_else(random_token);
    let url = format!("http://{addr}/{token}/");
    let interval = options.interval.max(Duration::from_millis(10));
    let first = serde_json::to_string(Model::new(interval.as_millis() as u64).snapshot())
        .map_err(std::io::Error::other)?;
    let (tx, rx) = tokio::sync::watch::channel(Arc::new(first));
    let logs = source.log_reader();
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("monitor-poll".into())
            .spawn(move || poll_loop(source, interval, &tx, &stop))?
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
    let app = server::router(server::AppState {
        token,
        feed: rx,
        logs,
    });
    let serve = std::thread::Builder::new()
        .name("monitor-http".into())
        .spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stop_rx => {}
                }
            });
        })?;
    Ok(Monitor {
        url,
        stop,
        stop_server: Some(stop_tx),
        threads: vec![poller, serve],
    })
}

/// Snapshots of more JSON bytes than this are sent at most once a second (a bar is about
/// 200 bytes).
const BIG_SNAPSHOT: usize = 256 << 10;

fn poll_loop(
    mut source: Box<dyn Source>,
    interval: Duration,
    tx: &tokio::sync::watch::Sender<Arc<String>>,
    stop: &AtomicBool,
) {
    let t0 = Instant::now();
    let mut model = Model::new(interval.as_millis() as u64);
    let mut last_sent = t0;
    while !stop.load(Ordering::Relaxed) {
        let began = Instant::now();
        let polled = source.poll();
        let now = t0.elapsed().as_millis() as u64;
        match polled {
            Ok(s) => model.update(now, s),
            Err(e) => model.failed(now, e),
        }
        if let Ok(json) = serde_json::to_string(model.snapshot()) {
            // A big snapshot (thousands of bars) goes out at most once a second.
            if json.len() <= BIG_SNAPSHOT || last_sent.elapsed() >= Duration::from_secs(1) {
                tx.send_replace(Arc::new(json));
                last_sent = Instant::now();
            }
        }
        // Sleep out the interval in small steps, to stop promptly.
        while !stop.load(Ordering::Relaxed) && began.elapsed() < interval {
            std::thread::sleep(
                (interval - began.elapsed().min(interval)).min(Duration::from_millis(50)),
            );
        }
    }
}
