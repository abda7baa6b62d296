//! The control socket: a Unix socket through which clients (`gspc-run put-token`, ...) talk
//! to a running job. Each connection carries [`pnet_protocol::frame`] frames: the client sends
//! one [`Request`], the agent answers one [`Response`] (a connection may carry several in
//! turn). This module holds the messages and the blocking client side.
//!
//! How long a job with a control socket runs:
//! - a net with `drts.wait_for_output` runs until every out port of the root has a token
//!   (clients put them with [`put_token`]); without a control socket such a net that waits
//!   with nothing to do fails with a message asking for `--control`;
//! - a net with `put_token` places (and without `drts.wait_for_output`) keeps running while
//!   it has nothing to do, serving its clients, until one of them sends [`close`] (then it
//!   ends as soon as nothing is left to do) or [`cancel`];
//! - other nets end as without a control socket.
//!
//! The socket file is created with mode 0600 in a directory that must not be writable by
//! group or others; it is removed when the job ends.

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use pnet_protocol::frame::{read_msg, write_msg};
use pnet_stdlib::Value;
use serde::{Deserialize, Serialize};

/// A client's request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Request {
    /// Put a token on a `put_token="true"` place of the root net.
    PutToken {
        place: String,
        value: Value,
    },
    /// Put `Struct [value := VALUE, response_id := ID]` on the place and wait for the
    /// transition with `connect-response` to answer.
    WorkflowResponse {
        place: String,
        value: Value,
    },
    Status,
    /// No more tokens will be put: the job ends once nothing is left to do (as it would
    /// have without a control socket).
    Close,
    /// Cancel the job.
    Cancel,
}

/// The agent's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Response {
    Ok,
    Value(Value),
    Status(Status),
    Error(String),
}

/// A worker as the status shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerStatus {
    pub id: u32,
    pub name: String,
    pub capabilities: Vec<String>,
    /// Tasks sent to it and not answered yet.
    pub tasks: u32,
    pub done: u64,
}

/// The state of a running job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub elapsed_ms: u64,
    pub workers: Vec<WorkerStatus>,
    pub tasks_running: u64,
    pub tasks_queued: u64,
    pub tasks_done: u64,
    pub firings: u64,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "elapsed {:.1}s, {} firings, tasks: {} done, {} running, {} queued, {} workers",
            self.elapsed_ms as f64 / 1000.0,
            self.firings,
            self.tasks_done,
            self.tasks_running,
            self.tasks_queued,
            self.workers.len()
        )?;
        for w in &self.workers {
            writeln!(
                f,
                "  worker {} {} [{}]: {} in flight, {} done",
                w.id,
                w.name,
                w.capabilities.join(","),
                w.tasks,
                w.done
            )?;
        }
        Ok(())
    }
}

/// Sends one request and reads the answer.
pub fn request(socket: &Path, req: &Request) -> Result<Response, String> {
    let mut s = UnixStream::connect(socket).map_err(|e| {
        format!(
            "cannot connect to the control socket {}: {e}",
            socket.display()
        )
    })?;
    // Only a workflow response may take long (it waits for the net).
    if !matches!(req, Request::WorkflowResponse { .. }) {
        let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    }
    write_msg(&mut s, req).map_err(|e| format!("control socket {}: {e}", socket.display()))?;
    read_msg(&mut s).map_err(|e| format!("control socket {}: {e}", socket.display()))
}

fn expect_ok(r: Response) -> Result<(), String> {
    match r {
        Response::Ok => Ok(()),
        Response::Error(e) => Err(e),
        other => Err(format!("unexpected answer from the agent: {other:?}")),
    }
}

/// Puts a token on a `put_token` place of the running job.
pub fn put_token(socket: &Path, place: &str, value: &Value) -> Result<(), String> {
    expect_ok(request(
        socket,
        &Request::PutToken {
            place: place.to_string(),
            value: value.clone(),
        },
    )?)
}

/// Asks for a workflow response: waits until the net answers (or the job fails).
pub fn workflow_response(socket: &Path, place: &str, value: &Value) -> Result<Value, String> {
    match request(
        socket,
        &Request::WorkflowResponse {
            place: place.to_string(),
            value: value.clone(),
        },
    )? {
        Response::Value(v) => Ok(v),
        Response::Error(e) => Err(e),
        other => Err(format!("unexpected answer from the agent: {other:?}")),
    }
}

/// The job's state: workers, tasks running/queued/done, firings.
pub fn status(socket: &Path) -> Result<Status, String> {
    match request(socket, &Request::Status)? {
        Response::Status(s) => Ok(s),
        Response::Error(e) => Err(e),
        other => Err(format!("unexpected answer from the agent: {other:?}")),
    }
}

/// Tells the job that no more tokens will come: it ends once nothing is left to do.
pub fn close(socket: &Path) -> Result<(), String> {
    expect_ok(request(socket, &Request::Close)?)
}

/// Cancels the job.
pub fn cancel(socket: &Path) -> Result<(), String> {
    expect_ok(request(socket, &Request::Cancel)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let reqs = [
            Request::PutToken {
                place: "p".into(),
                value: Value::Long(3),
            },
            Request::WorkflowResponse {
                place: "q".into(),
                value: Value::string("x"),
            },
            Request::Status,
            Request::Close,
            Request::Cancel,
        ];
        for r in reqs {
            let b = postcard::to_allocvec(&r).unwrap();
            assert_eq!(postcard::from_bytes::<Request>(&b).unwrap(), r);
        }
        let st = Response::Status(Status {
            elapsed_ms: 1500,
            workers: vec![WorkerStatus {
                id: 0,
                name: "w".into(),
                capabilities: vec!["A".into()],
                tasks: 2,
                done: 7,
            }],
            tasks_running: 2,
            tasks_queued: 1,
            tasks_done: 7,
            firings: 20,
        });
        let b = postcard::to_allocvec(&st).unwrap();
        assert_eq!(postcard::from_bytes::<Response>(&b).unwrap(), st);
        let Response::Status(s) = st else {
            unreachable!()
        };
        assert_eq!(
            s.to_string(),
            "elapsed 1.5s, 20 firings, tasks: 7 done, 2 running, 1 queued, 1 workers\n  worker 0 w [A]: 2 in flight, 7 done\n"
        );
    }

    #[test]
    fn missing_socket_is_a_clear_error() {
        let e = status(Path::new("/nonexistent/dir/ctl.sock")).unwrap_err();
        assert!(
            e.starts_with("cannot connect to the control socket /nonexistent/dir/ctl.sock"),
            "{e}"
        );
    }
}
