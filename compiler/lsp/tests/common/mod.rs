//! A minimal LSP client for the end-to-end tests: starts the real `pnet-lsp` binary and
//! speaks JSON-RPC to it over stdio.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// GPI-Space's corpus (tests that use it start with `pnet_tests::corpus_absent()`).
pub fn corpus() -> PathBuf {
    pnet_tests::gpispace()
}

pub fn sum_dir() -> PathBuf {
    corpus()
        .join("share/doc/example/sum")
        .canonicalize()
        .expect("the corpus beside the checkout")
}

pub fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

pub struct Client {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    next_id: i64,
    /// Notifications received and not consumed yet.
    pub pending: Vec<Value>,
}

/// Generous: a slow CI machine must not fail the tests (nothing is timed).
const WAIT: Duration = Duration::from_secs(60);

impl Client {
    pub fn start(init_options: Value) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pnet-lsp"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start pnet-lsp");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut len = None;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Content-Length: ") {
                        len = v.parse::<usize>().ok();
                    }
                }
                let mut buf = vec![0; len.expect("Content-Length")];
                if r.read_exact(&mut buf).is_err() {
                    return;
                }
                let v: Value = serde_json::from_slice(&buf).expect("JSON from the server");
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        let mut c = Client {
            child,
            stdin,
            rx,
            next_id: 1,
            pending: Vec::new(),
        };
        let r = c.request(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": {},
                   "initializationOptions": init_options}),
        );
        assert!(r["capabilities"]["hoverProvider"].as_bool().unwrap());
        c.notify("initialized", json!({}));
        c
    }

    fn send(&mut self, v: Value) {
        let s = v.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{s}", s.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its response: the full response object.
    pub fn request_raw(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + WAIT;
        loop {
            let v = self
                .rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("no response to {method}"));
            if v.get("id") == Some(&json!(id)) && v.get("method").is_none() {
                return v;
            }
            self.pending.push(v);
        }
    }

    /// The `result` of a request (panics on an error response).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let v = self.request_raw(method, params);
        assert!(v.get("error").is_none(), "{method}: {v}");
        v["result"].clone()
    }

    pub fn open(&mut self, path: &Path, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri(path), "languageId": "xml", "version": 1, "text": text}}),
        );
    }

    pub fn change_full(&mut self, path: &Path, version: i32, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(path), "version": version},
                   "contentChanges": [{"text": text}]}),
        );
    }

    /// Waits for the diagnostics of `path` published for document version `version`.
    pub fn diagnostics(&mut self, path: &Path, version: i32) -> Vec<Value> {
        let u = uri(path);
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(i) = self.pending.iter().position(|v| {
                v["method"] == "textDocument/publishDiagnostics"
                    && v["params"]["uri"] == json!(u)
                    && v["params"]["version"] == json!(version)
            }) {
                let v = self.pending.remove(i);
                return v["params"]["diagnostics"].as_array().unwrap().clone();
            }
            match self
                .rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(v) => self.pending.push(v),
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no diagnostics for {u} version {version}: {:?}",
                        self.pending
                    )
                }
                Err(RecvTimeoutError::Disconnected) => panic!("the server died"),
            }
        }
    }

    /// The latest diagnostics published for `path` so far, waiting for at least one.
    pub fn latest_diagnostics(&mut self, path: &Path) -> Vec<Value> {
        // a round trip makes sure everything sent before was handled
        self.request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": uri(path)}}),
        );
        let u = uri(path);
        self.pending
            .iter()
            .rev()
            .find(|v| {
                v["method"] == "textDocument/publishDiagnostics" && v["params"]["uri"] == json!(u)
            })
            .map(|v| v["params"]["diagnostics"].as_array().unwrap().clone())
            .unwrap_or_default()
    }

    pub fn at(path: &Path, line: u32, character: u32) -> Value {
        json!({"textDocument": {"uri": uri(path)}, "position": {"line": line, "character": character}})
    }

    pub fn is_alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    pub fn shutdown(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status:?}");
    }
}

/// The (line, UTF-16 column) of the first occurrence of `needle` in `text`, plus `delta`
/// characters (ASCII texts only).
pub fn pos_of(text: &str, needle: &str, delta: usize) -> (u32, u32) {
    let off = text
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in text"))
        + delta;
    let line = text[..off].matches('\n').count();
    let col = off - text[..off].rfind('\n').map_or(0, |i| i + 1);
    (line as u32, col as u32)
}

pub fn errors(diags: &[Value]) -> Vec<&Value> {
    diags.iter().filter(|d| d["severity"] == json!(1)).collect()
}

/// xorshift64*: deterministic, no dependency (the random-edit tests' source of edits).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}
