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
//!
//! Besides these postcard frames, both sockets speak a JSON framing for clients in other
//! languages ([`json`], documented in `docs/PROTOCOL.md`).

pub mod json;

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
    /// The job's tasks (sent, running, ended); answered with [`Response::Tasks`]. A job keeps
    /// them when it has a control socket or a trace.
    Tasks,
    /// The logs of the job's tasks (one task, or all kept); answered with
    /// [`Response::Logs`].
    Logs {
        task: Option<u64>,
    },
    /// [`Request::PutToken`] with the value as the text of its JSON encoding (a JSON client's,
    /// `docs/PROTOCOL.md`): the job decodes it against the place's type.
    PutTokenJson {
        place: String,
        value: String,
    },
    /// [`Request::WorkflowResponse`] with the value as the text of its JSON encoding, decoded
    /// against the type of the place's field `value`; answered with [`Response::Value`].
    WorkflowResponseJson {
        place: String,
        value: String,
    },
}

/// The agent's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Response {
    Ok,
    Value(Value),
    Status(Status),
    Error(String),
    Tasks(JobTasks),
    Logs(Vec<TaskLog>),
}

/// How many ended tasks a job keeps for [`Request::Tasks`] (the latest; older ones are
/// counted in [`JobTasks::dropped`]).
pub const MAX_TASK_RECORDS: usize = 20_000;
/// How many bytes of task logs a job keeps in all (the latest tasks' logs; each task's log
/// is at most [`pnet_protocol::TASK_LOG_LIMIT`] bytes, its tail).
pub const MAX_JOB_LOG_BYTES: usize = 16 << 20;

/// A task of a job as `gspc tasks` shows it. Times are microseconds since the job started,
/// on the agent's clock; `started_us` and `ended_us` come from the worker's own report
/// (placed on the agent's clock from the time the task was sent).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskInfo {
    /// The job's own task number.
    pub task: u64,
    pub transition: String,
    /// `module.function`.
    pub module: String,
    pub worker_id: u32,
    pub worker: String,
    /// `sent` (waiting in the worker's queue), `running` (started on the worker), `done`,
    /// `failed`, `cancelled` or `lost` (its worker was lost; the task was queued again).
    pub state: String,
    pub sent_us: u64,
    pub started_us: Option<u64>,
    pub ended_us: Option<u64>,
    /// How many times it ran before on workers that were lost.
    pub retries: u32,
    /// Why it failed, or how its worker was lost.
    pub error: Option<String>,
    /// Bytes of its log kept (see [`Request::Logs`]).
    pub log_bytes: u64,
    /// Its inputs, `port = value, ...` in the literal form, cut at [`MAX_INPUTS_TEXT`] bytes.
    pub inputs: Option<String>,
}

/// The longest text of a task's inputs kept in its record (longer ones end with `...`).
pub const MAX_INPUTS_TEXT: usize = 1024;

/// A job's tasks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobTasks {
    pub job: u64,
    /// Ordered by the time they were sent.
    pub tasks: Vec<TaskInfo>,
    /// Tasks queued in the agent, not sent to a worker yet.
    pub queued: u64,
    /// Ended tasks no longer kept (beyond [`MAX_TASK_RECORDS`]).
    pub dropped: u64,
    /// The workers that ran or run its tasks: (id, name), for the lanes of a trace.
    pub workers: Vec<(u32, String)>,
}

/// What a task logged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskLog {
    pub task: u64,
    pub transition: String,
    pub worker: String,
    /// The tail of the log (at most [`pnet_protocol::TASK_LOG_LIMIT`] bytes).
    pub text: String,
    /// Bytes cut before `text`.
    pub dropped: u64,
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
    /// Tasks started on a worker and not answered yet.
    pub tasks_running: u64,
    /// Tasks queued in the agent, not sent yet.
    pub tasks_queued: u64,
    pub tasks_done: u64,
    pub firings: u64,
    /// What the job waits for, when a queued task fits no live worker.
    pub waiting: Option<String>,
    /// Tasks sent to a worker that has not started them yet (its queue).
    pub tasks_sent: u64,
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
            self.tasks_queued + self.tasks_sent,
            self.workers.len()
        )?;
        if let Some(w) = &self.waiting {
            writeln!(f, "waiting: {w}")?;
        }
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

// ---------------------------------------------------------------------------------------------
// The persistent runtime's control protocol (`gspc`).

/// The name of the control socket in a runtime's state directory.
pub const SOCKET_FILE: &str = "control.sock";
/// The file with the runtime's secret (64 hex digits, mode 0600).
pub const SECRET_FILE: &str = "secret";
/// The daemon's pid.
pub const PID_FILE: &str = "gspc.pid";
/// Where the runtime runs and how to reach it (JSON, written once it listens).
pub const INFO_FILE: &str = "runtime.json";
/// The daemon's output and worker event log.
pub const LOG_FILE: &str = "daemon.log";

/// One request to a persistent runtime: every request carries the runtime's secret.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RtEnvelope {
    pub secret: pnet_protocol::Secret,
    pub request: RtRequest,
}

/// What a `gspc` client asks a persistent runtime.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RtRequest {
    Status,
    /// Start a job: `bundle` is an encoded bundle (`pnet_bundle::format::encode`), `net` the
    /// name shown in `gspc jobs`; answered with [`RtResponse::Submitted`] at once.
    Submit {
        net: String,
        bundle: Vec<u8>,
        inputs: Vec<(String, Vec<Value>)>,
    },
    /// Wait until the job has ended; answered with [`RtResponse::Outcome`].
    Wait {
        job: u64,
    },
    Cancel {
        job: u64,
    },
    PutToken {
        job: u64,
        place: String,
        value: Value,
    },
    /// No more tokens will be put into the job (see the module docs).
    Close {
        job: u64,
    },
    Jobs,
    /// Start more workers: a topology description over these hosts (none: the runtime's).
    AddWorkers {
        topology: String,
        hosts: Vec<String>,
    },
    /// Stop workers by name, or `count` (default: all) of a class.
    RemoveWorkers {
        names: Vec<String>,
        class: Option<String>,
        count: Option<u32>,
    },
    /// Stop the runtime: cancel the running jobs (or with `wait`, wait for them first).
    Stop {
        wait: bool,
    },
    /// Allocate `size` bytes of global memory (spread over the workers' segments); answered
    /// with [`RtResponse::Allocated`].
    MemAlloc {
        size: u64,
    },
    /// Free an allocation.
    MemFree {
        handle: String,
    },
    /// Write bytes into an allocation at `offset` (at most [`crate::memory::CLIENT_CHUNK`]
    /// bytes a request is a good size; a frame holds at most 64 MiB).
    MemWrite {
        handle: String,
        offset: u64,
        data: Vec<u8>,
    },
    /// Read `size` bytes of an allocation at `offset`; answered with [`RtResponse::Bytes`].
    MemRead {
        handle: String,
        offset: u64,
        size: u64,
    },
    /// The memory statistics; answered with [`RtResponse::Memory`].
    MemStats,
    /// [`RtRequest::Submit`] with the job's own module path: directories (absolute, on the
    /// workers' hosts) searched for its modules before the runtime's module path.
    SubmitAt {
        net: String,
        bundle: Vec<u8>,
        inputs: Vec<(String, Vec<Value>)>,
        module_path: Vec<String>,
    },
    /// The tasks of a job (running or ended); answered with [`RtResponse::Tasks`].
    Tasks {
        job: u64,
    },
    /// The logs of a job's tasks (one task, or all kept); answered with
    /// [`RtResponse::Logs`].
    Logs {
        job: u64,
        task: Option<u64>,
    },
    /// [`RtRequest::SubmitAt`] with a name for the job (`gspc submit --name`), shown by `gspc
    /// jobs` instead of the net's file name.
    SubmitNamed {
        name: String,
        net: String,
        bundle: Vec<u8>,
        inputs: Vec<(String, Vec<Value>)>,
        module_path: Vec<String>,
    },
    /// [`RtRequest::PutToken`] with the value as the text of its JSON encoding (a JSON
    /// client's, `docs/PROTOCOL.md`): the job decodes it against the place's type.
    PutTokenJson {
        job: u64,
        place: String,
        value: String,
    },
    /// The runtime's status with at most `limit` of its workers, from the `offset`th by name
    /// ([`RtRequest::Status`] lists every worker: costly when a monitor polls a runtime of
    /// thousands); the counts of [`RuntimeStatus`] are of all of them.
    StatusPage {
        offset: u64,
        limit: u64,
    },
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum JobOutcome {
    Done {
        outputs: Vec<(String, Vec<Value>)>,
        firings: u64,
        tasks: u64,
        /// The root's out ports and their types (for result files).
        types: Vec<(String, pnet_stdlib::Type)>,
        /// Tokens left, empty out ports (see [`pnet_engine::Ending`]).
        ending: pnet_engine::Ending,
    },
    /// `code` is the stable code of the error (`agent-job-failed`, ...).
    Failed {
        code: String,
        message: String,
    },
    Cancelled,
}

impl JobOutcome {
    /// The exit code of `gspc wait`: 0 done, 1 failed, 130 cancelled.
    pub fn exit_code(&self) -> u8 {
        match self {
            JobOutcome::Done { .. } => 0,
            JobOutcome::Failed { .. } => 1,
            JobOutcome::Cancelled => 130,
        }
    }

    /// `done`, `done (incomplete)` (the net stopped with tokens left or an out port empty),
    /// `failed` or `cancelled`.
    pub fn state(&self) -> &'static str {
        match self {
            JobOutcome::Done { ending, .. } if !ending.is_complete() => "done (incomplete)",
            JobOutcome::Done { .. } => "done",
            JobOutcome::Failed { .. } => "failed",
            JobOutcome::Cancelled => "cancelled",
        }
    }
}

/// A job as `gspc jobs` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobSummary {
    pub id: u64,
    pub net: String,
    /// `running`, `done`, `failed` or `cancelled`.
    pub state: String,
    /// Seconds since the Unix epoch.
    pub submitted_unix: u64,
    /// Milliseconds from submission to the end (or to now).
    pub elapsed_ms: u64,
    pub tasks_running: u64,
    pub tasks_queued: u64,
    pub tasks_done: u64,
    /// What a running job waits for, when a queued task fits no live worker.
    pub waiting: Option<String>,
    /// The name given at submission (`gspc submit --name`).
    pub name: Option<String>,
    /// Why a failed job failed.
    pub error: Option<String>,
    /// Tasks sent to workers that have not started them yet.
    pub tasks_sent: u64,
}

/// The task a worker runs now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunningTask {
    pub job: u64,
    pub transition: String,
}

/// A worker as `gspc status` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RtWorker {
    pub name: String,
    pub host: String,
    pub pid: Option<u32>,
    pub capabilities: Vec<String>,
    /// `up`, `starting` (launched, not joined yet) or `exited: HOW` (died before joining).
    pub state: String,
    /// Milliseconds since its last message (heartbeats come every 250 ms).
    pub heartbeat_age_ms: Option<u64>,
    pub running: Option<RunningTask>,
    /// Tasks sent to it and not answered yet.
    pub in_flight: u32,
    pub done: u64,
    /// A leaf agent's capacity (the tasks the runtime may keep on it); None: not a leaf.
    pub capacity: Option<u32>,
    /// A leaf agent's workers as it last reported them (named as the leaf names them;
    /// `running` is of the runtime's jobs); empty for other workers.
    pub workers: Vec<RtWorker>,
}

/// The state of a persistent runtime.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuntimeStatus {
    pub pid: u32,
    /// Where workers connect.
    pub address: String,
    pub state_dir: String,
    pub uptime_ms: u64,
    pub jobs_running: u64,
    pub jobs_total: u64,
    /// The workers by name: all of them, or the page asked for ([`RtRequest::StatusPage`]).
    pub workers: Vec<RtWorker>,
    /// How many workers there are (joined, starting, exited, lost) and how many are up.
    pub workers_total: u64,
    pub workers_up: u64,
    /// The place of `workers[0]` among them all (by name).
    pub workers_offset: u64,
    /// The global memory (all zero when no worker has working memory).
    pub memory: MemoryStatus,
    /// The journal (see [`crate::journal`]): `on`, `off` (`--no-journal`, or a `gspc-run`
    /// job), or `stopped: WHY` when writing it failed (a full disk): jobs then no longer
    /// survive a crash from the point it stopped.
    pub journal: String,
}

/// A worker named in an answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerRef {
    pub name: String,
    pub host: String,
    pub pid: Option<u32>,
}

/// What `gspc stop` stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopReport {
    pub pid: u32,
    /// Jobs cancelled by the stop.
    pub cancelled: Vec<u64>,
    /// Jobs that were waited for (`--wait`).
    pub finished: Vec<u64>,
    /// Every worker told to stop: those the runtime started, those that joined it by
    /// themselves, and those under its leaf agents (named `LEAF/WORKER`).
    pub workers: Vec<WorkerRef>,
    /// Workers (and leaf agents) still alive after the stop (should be none; only those on
    /// the runtime's host are looked at).
    pub left: Vec<WorkerRef>,
    /// The leaf agents told to stop (each stops its workers).
    pub leaves: Vec<WorkerRef>,
}

/// A persistent runtime's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RtResponse {
    Ok,
    Error(String),
    /// The request was refused (another user, a wrong secret).
    Refused(String),
    /// The answer of a job (put-token, close).
    Job(Response),
    Submitted {
        job: u64,
    },
    Outcome {
        job: u64,
        outcome: JobOutcome,
    },
    Jobs(Vec<JobSummary>),
    Status(RuntimeStatus),
    /// Workers started or stopped.
    Workers(Vec<WorkerRef>),
    Stopped(StopReport),
    /// A new allocation: its handle and the `global_memory_range` value of all of it.
    Allocated {
        handle: String,
        range: Value,
    },
    /// Bytes read from global memory.
    Bytes(Vec<u8>),
    Memory(MemoryStatus),
    Tasks(JobTasks),
    Logs(Vec<TaskLog>),
}

/// The memory of one host (the workers' host identities).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostMemory {
    pub host: String,
    pub segments: u64,
    pub capacity: u64,
    pub allocated: u64,
}

/// The global memory of a runtime: the workers' segments and the allocations in them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryStatus {
    pub segments: u64,
    /// Bytes in all segments.
    pub capacity: u64,
    /// Bytes allocated (the sum of the allocations' sizes).
    pub allocated: u64,
    pub allocations: u64,
    /// Bytes copied from global memory into module buffers (`memory-get`) and out of them
    /// (`memory-put`), by the tasks dispatched so far.
    pub bytes_got: u64,
    pub bytes_put: u64,
    /// Per host, sorted by host.
    pub hosts: Vec<HostMemory>,
}

impl std::fmt::Display for MemoryStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::memory::human_bytes as hb;
        write!(
            f,
            "memory: {} segments, {} capacity, {} allocated in {} allocations; transfers: {} got, \
             {} put",
            self.segments,
            hb(self.capacity),
            hb(self.allocated),
            self.allocations,
            hb(self.bytes_got),
            hb(self.bytes_put)
        )?;
        for h in &self.hosts {
            write!(
                f,
                "\n  host {}: {} segments, {} capacity, {} allocated",
                h.host,
                h.segments,
                hb(h.capacity),
                hb(h.allocated)
            )?;
        }
        Ok(())
    }
}

/// An error of a `gspc` client, with a stable code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtError {
    pub code: &'static str,
    pub message: String,
}

impl RtError {
    pub fn new(code: &'static str, message: impl Into<String>) -> RtError {
        RtError {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for RtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RtError {}

pub use pnet_protocol::peer::{current_uid, user_name};

/// The default state directory of a `gspc` runtime (and where `gspc-leaf` looks for its root):
/// `$GSPC_STATE_DIR`, else `$XDG_RUNTIME_DIR/gspc`, else `/tmp/gspc-UID/default`.
pub fn default_state_dir() -> std::path::PathBuf {
    use std::path::PathBuf;
    if let Some(d) = std::env::var_os("GSPC_STATE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("gspc");
    }
    PathBuf::from(format!("/tmp/gspc-{}/default", current_uid()))
}

/// Checks that `dir` is a directory owned by this user that no other user can read or
/// write (mode 0700 or stricter), as a runtime's state directory must be.
pub fn check_private_dir(dir: &Path) -> Result<(), RtError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir).map_err(|e| {
        RtError::new(
            "gspc-state-dir",
            format!("cannot use the state directory {}: {e}", dir.display()),
        )
    })?;
    if !meta.is_dir() {
        return Err(RtError::new(
            "gspc-state-dir",
            format!(
                "the state directory {} is not a directory (symbolic links are not accepted)",
                dir.display()
            ),
        ));
    }
    let me = current_uid();
    if meta.uid() != me {
        return Err(RtError::new(
            "gspc-not-owner",
            format!(
                "the state directory {} belongs to {}, not to you ({}): the runtime there is \
                 not yours",
                dir.display(),
                user_name(meta.uid()),
                user_name(me)
            ),
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(RtError::new(
            "gspc-state-dir-mode",
            format!(
                "the state directory {} is accessible by other users (mode {mode:o}); it must \
                 be private (chmod 700 {})",
                dir.display(),
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// What to do about a runtime that does not answer in `dir`: resume it if it left a journal
/// (it crashed, was killed, or was stopped with its ended jobs' outcomes), else boot one.
pub fn not_running_hint(dir: &Path) -> String {
    match resume_hint(dir) {
        Some(h) => format!("it is not running: {h}"),
        None => format!("start one with `gspc boot --state-dir {}`", dir.display()),
    }
}

/// How to bring back the jobs of a runtime in `dir` that died, if it left a journal.
fn resume_hint(dir: &Path) -> Option<String> {
    dir.join(crate::journal::JOURNAL_FILE).exists().then(|| {
        format!(
            "if it crashed or was killed, `gspc boot --resume --state-dir {}` brings back its \
             jobs from its journal",
            dir.display()
        )
    })
}

/// The address workers (and leaf agents) connect to, from a state directory's
/// [`INFO_FILE`] (written once the runtime listens).
pub fn worker_address(dir: &Path) -> Result<String, String> {
    let info = dir.join(INFO_FILE);
    let text = std::fs::read_to_string(&info)
        .map_err(|e| format!("cannot read {}: {e}", info.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", info.display()))?;
    v["address"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{}: no address", info.display()))
}

/// Reads the secret file of a state directory (it must be a regular file of this user with
/// mode 0600 or stricter).
pub fn read_secret(dir: &Path) -> Result<pnet_protocol::Secret, RtError> {
    use std::os::unix::fs::MetadataExt;
    let path = dir.join(SECRET_FILE);
    let meta = std::fs::symlink_metadata(&path).map_err(|e| {
        RtError::new(
            "gspc-no-runtime",
            format!(
                "no runtime in {} (cannot read {}: {e}); {}",
                dir.display(),
                path.display(),
                not_running_hint(dir)
            ),
        )
    })?;
    let mode = meta.mode() & 0o7777;
    if !meta.is_file() || meta.uid() != current_uid() || mode & 0o077 != 0 {
        return Err(RtError::new(
            "gspc-secret-mode",
            format!(
                "the secret file {} must be a regular file of yours with mode 600 (it is {}, \
                 mode {mode:o}, owned by {})",
                path.display(),
                if meta.is_file() {
                    "a file"
                } else {
                    "not a file"
                },
                user_name(meta.uid())
            ),
        ));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| {
        RtError::new(
            "gspc-secret",
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    pnet_protocol::Secret::from_hex(text.trim()).ok_or_else(|| {
        RtError::new(
            "gspc-secret",
            format!("{} does not hold a secret (64 hex digits)", path.display()),
        )
    })
}

/// A client of a persistent runtime.
#[derive(Debug)]
pub struct RtClient {
    socket: std::path::PathBuf,
    secret: pnet_protocol::Secret,
}

impl RtClient {
    /// Checks the state directory and reads its secret.
    pub fn open(state_dir: &Path) -> Result<RtClient, RtError> {
        if std::fs::symlink_metadata(state_dir)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            return Err(RtError::new(
                "gspc-no-runtime",
                format!(
                    "no runtime is running (state directory {}); start one with `gspc boot`",
                    state_dir.display()
                ),
            ));
        }
        check_private_dir(state_dir)?;
        let secret = read_secret(state_dir)?;
        Ok(RtClient {
            socket: state_dir.join(SOCKET_FILE),
            secret,
        })
    }

    /// A client with a given socket and secret (tests).
    pub fn with_secret(socket: &Path, secret: pnet_protocol::Secret) -> RtClient {
        RtClient {
            socket: socket.to_path_buf(),
            secret,
        }
    }

    /// Sends one request and reads the answer (`timeout` None: wait as long as it takes).
    pub fn call(
        &self,
        request: RtRequest,
        timeout: Option<Duration>,
    ) -> Result<RtResponse, RtError> {
        let mut s = UnixStream::connect(&self.socket).map_err(|e| {
            RtError::new(
                "gspc-not-running",
                format!(
                    "cannot reach the runtime at {}: {e} ({})",
                    self.socket.display(),
                    not_running_hint(self.socket.parent().unwrap_or(Path::new(".")))
                ),
            )
        })?;
        let _ = s.set_read_timeout(timeout);
        let env = RtEnvelope {
            secret: self.secret.clone(),
            request,
        };
        let io = |e: pnet_protocol::FrameError| {
            RtError::new(
                "gspc-connection",
                format!("control socket {}: {e}", self.socket.display()),
            )
        };
        write_msg(&mut s, &env).map_err(io)?;
        let answer = read_msg(&mut s).map_err(|e| match e {
            // The runtime went away while the request waited (a `wait` across a crash).
            pnet_protocol::FrameError::Closed => {
                let dir = self.socket.parent().unwrap_or(Path::new("."));
                RtError::new(
                    "gspc-connection",
                    format!(
                        "control socket {}: the runtime closed the connection without \
                         answering (did it stop or crash? {}; then ask again)",
                        self.socket.display(),
                        resume_hint(dir).unwrap_or_else(|| "see `gspc status`".into())
                    ),
                )
            }
            e => io(e),
        })?;
        match answer {
            RtResponse::Refused(m) => Err(RtError::new("gspc-refused", m)),
            RtResponse::Error(m) => Err(RtError::new("gspc-request-failed", m)),
            RtResponse::Job(Response::Error(m)) => Err(RtError::new("gspc-request-failed", m)),
            r => Ok(r),
        }
    }

    /// Allocates `size` bytes of global memory: (handle, `global_memory_range` of all of it).
    pub fn mem_alloc(&self, size: u64) -> Result<(String, Value), RtError> {
        match self.call(RtRequest::MemAlloc { size }, Some(MEM_TIMEOUT))? {
            RtResponse::Allocated { handle, range } => Ok((handle, range)),
            r => Err(unexpected_answer(r)),
        }
    }

    pub fn mem_free(&self, handle: &str) -> Result<(), RtError> {
        match self.call(
            RtRequest::MemFree {
                handle: handle.to_string(),
            },
            Some(MEM_TIMEOUT),
        )? {
            RtResponse::Ok => Ok(()),
            r => Err(unexpected_answer(r)),
        }
    }

    /// Writes `data` at `offset` of an allocation, in chunks of
    /// [`crate::memory::CLIENT_CHUNK`] bytes.
    pub fn mem_write(&self, handle: &str, offset: u64, data: &[u8]) -> Result<(), RtError> {
        let mut at = 0usize;
        loop {
            let end = (at + crate::memory::CLIENT_CHUNK).min(data.len());
            let request = RtRequest::MemWrite {
                handle: handle.to_string(),
                offset: offset.saturating_add(at as u64),
                data: data[at..end].to_vec(),
            };
            match self.call(request, Some(MEM_TIMEOUT))? {
                RtResponse::Ok => {}
                r => return Err(unexpected_answer(r)),
            }
            at = end;
            if at >= data.len() {
                return Ok(());
            }
        }
    }

    /// Reads `size` bytes at `offset` of an allocation, in chunks of
    /// [`crate::memory::CLIENT_CHUNK`] bytes.
    pub fn mem_read(&self, handle: &str, offset: u64, size: u64) -> Result<Vec<u8>, RtError> {
        let total = usize::try_from(size).map_err(|_| {
            RtError::new(
                "gspc-memory",
                format!("{size} bytes do not fit in this machine's memory"),
            )
        })?;
        let mut out = Vec::new();
        out.try_reserve_exact(total).map_err(|e| {
            RtError::new(
                "gspc-memory",
                format!("cannot hold {size} bytes in this process: {e}"),
            )
        })?;
        loop {
            let n = (total - out.len()).min(crate::memory::CLIENT_CHUNK);
            let request = RtRequest::MemRead {
                handle: handle.to_string(),
                offset: offset.saturating_add(out.len() as u64),
                size: n as u64,
            };
            match self.call(request, Some(MEM_TIMEOUT))? {
                RtResponse::Bytes(b) if b.len() == n => out.extend_from_slice(&b),
                RtResponse::Bytes(b) => {
                    return Err(RtError::new(
                        "gspc-protocol",
                        format!("asked for {n} bytes, the runtime sent {}", b.len()),
                    ));
                }
                r => return Err(unexpected_answer(r)),
            }
            if out.len() >= total {
                return Ok(out);
            }
        }
    }

    pub fn mem_stats(&self) -> Result<MemoryStatus, RtError> {
        match self.call(RtRequest::MemStats, Some(MEM_TIMEOUT))? {
            RtResponse::Memory(m) => Ok(m),
            r => Err(unexpected_answer(r)),
        }
    }
}

/// How long a memory request may take.
const MEM_TIMEOUT: Duration = Duration::from_secs(120);

fn unexpected_answer(r: RtResponse) -> RtError {
    RtError::new(
        "gspc-protocol",
        format!("unexpected answer from the runtime: {r:?}"),
    )
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
            tasks_sent: 0,
            waiting: Some("transition `t` waits for a worker with the capabilities `A`".into()),
        });
        let b = postcard::to_allocvec(&st).unwrap();
        assert_eq!(postcard::from_bytes::<Response>(&b).unwrap(), st);
        let Response::Status(s) = st else {
            unreachable!()
        };
        assert_eq!(
            s.to_string(),
            "elapsed 1.5s, 20 firings, tasks: 7 done, 2 running, 1 queued, 1 workers\n\
             waiting: transition `t` waits for a worker with the capabilities `A`\n  \
             worker 0 w [A]: 2 in flight, 7 done\n"
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
