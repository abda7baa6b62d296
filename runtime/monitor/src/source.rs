//! Where the monitor's data comes from: a [`Source`] answers one [`Sample`] per poll. Two
//! sources exist: [`RuntimeSource`] (a `gspc` runtime's control socket: its workers, jobs and
//! global memory) and [`JobSource`] (the control socket of one `gspc-run --control` run).
//!
//! A sample says what the control protocol tells today. A source that lists tasks (their
//! state, worker, times, retries, error, log) fills [`Sample::tasks`]; without such a list
//! the monitor draws the Gantt chart from what the workers run at each sample (see
//! [`crate::model`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::collections::HashMap;

use pnet_agent::control::{self, RtClient, RtRequest, RtResponse};
use serde::Serialize;

/// What one poll of a source saw.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Sample {
    /// One line naming what is watched (`gspc runtime, pid 42, 127.0.0.1:4000`).
    pub title: String,
    pub workers: Vec<WorkerSample>,
    pub jobs: Vec<JobSample>,
    /// The global memory; None: the source does not report it.
    pub memory: Option<control::MemoryStatus>,
    /// The tasks with their times (ms on the source's clock, see [`Sample::clock_ms`]); None:
    /// the source does not list tasks, the monitor samples what the workers run.
    pub tasks: Option<Vec<TaskSample>>,
    /// The source's clock when sampled (ms since the runtime or the job started).
    pub clock_ms: u64,
}

/// A worker.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WorkerSample {
    pub name: String,
    /// None: the source does not say (a `gspc-run` job's status has no hosts).
    pub host: Option<String>,
    pub pid: Option<u32>,
    pub capabilities: Vec<String>,
    /// `up`, `starting`, `lost: ...`, `exited: ...`.
    pub state: String,
    pub heartbeat_age_ms: Option<u64>,
    /// The task it runs now, when the source says which one.
    pub running: Option<Running>,
    /// Tasks sent to it and not answered yet.
    pub in_flight: u32,
    pub done: u64,
}

/// The task a worker runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Running {
    pub job: Option<u64>,
    pub transition: String,
}

/// A job.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct JobSample {
    pub id: u64,
    pub net: String,
    /// `running`, `done`, `failed`, `cancelled`, ...
    pub state: String,
    pub elapsed_ms: u64,
    pub tasks_running: u64,
    pub tasks_queued: u64,
    /// Sent to a worker that has not started them yet.
    pub tasks_sent: u64,
    pub tasks_done: u64,
    pub firings: Option<u64>,
    /// What it waits for, when a queued task fits no live worker.
    pub waiting: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
}

/// A task as a source that lists tasks reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TaskSample {
    /// Unique among the source's tasks.
    pub id: String,
    pub job: Option<u64>,
    /// The job's own task number (to ask for its log).
    pub task: Option<u64>,
    pub worker: Option<String>,
    pub transition: String,
    /// `queued`, `running`, `done`, `failed`, `cancelled`.
    pub state: String,
    pub sent_ms: Option<u64>,
    pub start_ms: Option<u64>,
    pub end_ms: Option<u64>,
    pub retries: u32,
    pub inputs: Option<String>,
    pub error: Option<String>,
    pub log: Option<String>,
    /// Bytes of log kept for it (ask with [`LogReader`]).
    pub log_bytes: u64,
}

/// Something the monitor polls.
pub trait Source: Send + 'static {
    /// Asks for the current state (blocking; a failure is shown on the page and the monitor
    /// polls again).
    fn poll(&mut self) -> Result<Sample, String>;

    /// What reads a task's log when the page asks for it (None: this source keeps no logs).
    fn log_reader(&self) -> Option<LogReader> {
        None
    }
}

/// Reads the log of a task: `(job, task)` to its text.
pub type LogReader =
    std::sync::Arc<dyn Fn(Option<u64>, u64) -> Result<String, String> + Send + Sync>;

/// The text of a task's logs as the page shows it.
fn log_text(logs: Vec<control::TaskLog>) -> String {
    let mut out = String::new();
    for l in logs {
        if l.dropped > 0 {
            out.push_str(&format!("[{} earlier bytes not kept]\n", l.dropped));
        }
        out.push_str(&l.text);
    }
    out
}

/// A task of the control protocol as a sample's task; `base_ms` is the job's start on the
/// sample's clock.
fn task_sample(job: u64, t: control::TaskInfo, base_ms: u64) -> TaskSample {
    let at = |us: u64| base_ms + us / 1000;
    TaskSample {
        id: format!("{job}/{}", t.task),
        job: Some(job),
        task: Some(t.task),
        worker: Some(t.worker),
        transition: t.transition,
        state: t.state,
        sent_ms: Some(at(t.sent_us)),
        start_ms: t.started_us.map(at),
        end_ms: t.ended_us.map(at),
        retries: t.retries,
        inputs: t.inputs,
        error: t.error,
        log: None,
        log_bytes: t.log_bytes,
    }
}

/// How long one request to a control socket may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A `gspc` runtime, through its control socket and secret.
#[derive(Debug)]
pub struct RuntimeSource {
    client: RtClient,
    /// A second client for the logs the page asks for.
    logs: Option<std::sync::Arc<RtClient>>,
    /// Each job's start on the runtime's clock (ms of uptime).
    starts: HashMap<u64, u64>,
    /// The tasks of ended jobs, asked once at their end (the latest jobs' only: at most
    /// [`crate::model::MAX_BARS`] tasks in all, but the last job's).
    ended: HashMap<u64, Vec<TaskSample>>,
    /// False once the runtime did not answer its first `Tasks` request (an older runtime).
    lists_tasks: bool,
    /// True once it answered one.
    tasks_answered: bool,
    /// The last list of each running job's tasks, and the poll it was asked at: a long list
    /// is asked less often (every `len / 1000` polls, at most 20) to spare the runtime.
    running: HashMap<u64, (u64, Vec<TaskSample>)>,
    polls: u64,
}

impl RuntimeSource {
    /// The runtime of a state directory (checks it and reads its secret).
    pub fn open(state_dir: &Path) -> Result<RuntimeSource, control::RtError> {
        let mut s = RuntimeSource::new(RtClient::open(state_dir)?);
        s.logs = Some(std::sync::Arc::new(RtClient::open(state_dir)?));
        Ok(s)
    }

    /// A source through `client` (without logs).
    pub fn new(client: RtClient) -> RuntimeSource {
        RuntimeSource {
            client,
            logs: None,
            starts: HashMap::new(),
            ended: HashMap::new(),
            lists_tasks: true,
            tasks_answered: false,
            running: HashMap::new(),
            polls: 0,
        }
    }

    /// The tasks of a job (None: the runtime does not list them).
    fn tasks_of(&mut self, job: u64, base_ms: u64) -> Option<Vec<TaskSample>> {
        if !self.lists_tasks {
            return None;
        }
        match self.client.call(RtRequest::Tasks { job }, Some(TIMEOUT)) {
            Ok(RtResponse::Tasks(t)) => {
                self.tasks_answered = true;
                Some(
                    t.tasks
                        .into_iter()
                        .map(|t| task_sample(job, t, base_ms))
                        .collect(),
                )
            }
            _ => {
                // A runtime that never answered lists none (an older one); a failure later
                // (a timeout under load) only leaves this job's list out of this sample.
                if !self.tasks_answered {
                    self.lists_tasks = false;
                }
                None
            }
        }
    }
}

/// The workers a runtime's sample shows at most (the first by name).
const MAX_WORKERS: u64 = 256;

impl Source for RuntimeSource {
    fn poll(&mut self) -> Result<Sample, String> {
        self.polls += 1;
        // A page of workers: a runtime of thousands lists its first ones, and says how many.
        let page = RtRequest::StatusPage {
            offset: 0,
            limit: MAX_WORKERS,
        };
        let status = match self.client.call(page, Some(TIMEOUT)) {
            Ok(RtResponse::Status(s)) => s,
            Ok(r) => return Err(format!("unexpected answer from the runtime: {r:?}")),
            Err(e) => return Err(e.message),
        };
        let jobs = match self.client.call(RtRequest::Jobs, Some(TIMEOUT)) {
            Ok(RtResponse::Jobs(j)) => j,
            Ok(r) => return Err(format!("unexpected answer from the runtime: {r:?}")),
            Err(e) => return Err(e.message),
        };
        let mut title = format!("gspc runtime, pid {}, {}", status.pid, status.address);
        if status.workers_total > status.workers.len() as u64 {
            title.push_str(&format!(
                ", {} workers ({} up), the first {} shown",
                status.workers_total,
                status.workers_up,
                status.workers.len()
            ));
        }
        let mut sample = Sample {
            title,
            clock_ms: status.uptime_ms,
            memory: Some(status.memory.clone()),
            tasks: None,
            ..Sample::default()
        };
        for w in status.workers {
            sample.workers.push(WorkerSample {
                name: w.name,
                host: Some(w.host),
                pid: w.pid,
                capabilities: w.capabilities,
                state: w.state,
                heartbeat_age_ms: w.heartbeat_age_ms,
                running: w.running.map(|r| Running {
                    job: Some(r.job),
                    transition: r.transition,
                }),
                in_flight: w.in_flight,
                done: w.done,
            });
        }
        let now_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut tasks = Vec::new();
        for j in jobs {
            let running = j.state == "running";
            let start = *self.starts.entry(j.id).or_insert_with(|| {
                if running {
                    status.uptime_ms.saturating_sub(j.elapsed_ms)
                } else {
                    status
                        .uptime_ms
                        .saturating_sub(now_unix.saturating_sub(j.submitted_unix) * 1000)
                }
            });
            if running {
                let every = match self.running.get(&j.id) {
                    Some((_, t)) => (t.len() as u64 / 1000).clamp(1, 20),
                    None => 1,
                };
                match self.running.get(&j.id) {
                    Some((at, t)) if self.polls - at < every => tasks.extend(t.iter().cloned()),
                    _ => match self.tasks_of(j.id, start) {
                        Some(t) => {
                            tasks.extend(t.iter().cloned());
                            self.running.insert(j.id, (self.polls, t));
                        }
                        // Not answered this time: the last list.
                        None => {
                            if let Some((_, t)) = self.running.get(&j.id) {
                                tasks.extend(t.iter().cloned());
                            }
                        }
                    },
                }
            } else if let Some(t) = self.ended.get(&j.id) {
                tasks.extend(t.iter().cloned());
            } else if let Some(t) = self.tasks_of(j.id, start) {
                self.running.remove(&j.id);
                self.ended.insert(j.id, t.clone());
                tasks.extend(t);
                // Keep the lists of the latest ended jobs only (the page shows at most
                // MAX_BARS bars anyway).
                while self.ended.values().map(Vec::len).sum::<usize>() > crate::model::MAX_BARS {
                    let Some(oldest) = (self.ended.iter())
                        .filter(|(id, t)| !t.is_empty() && **id != j.id)
                        .map(|(id, _)| *id)
                        .min()
                    else {
                        break;
                    };
                    // Forgotten, not asked again.
                    self.ended.insert(oldest, Vec::new());
                }
            }
            let error = j.error.clone();
            sample.jobs.push(JobSample {
                id: j.id,
                net: j.name.clone().unwrap_or(j.net),
                state: j.state,
                elapsed_ms: j.elapsed_ms,
                tasks_running: j.tasks_running,
                tasks_queued: j.tasks_queued,
                tasks_sent: j.tasks_sent,
                tasks_done: j.tasks_done,
                firings: None,
                waiting: j.waiting,
                error,
            });
        }
        if self.lists_tasks {
            sample.tasks = Some(tasks);
        }
        Ok(sample)
    }

    fn log_reader(&self) -> Option<LogReader> {
        let client = self.logs.clone()?;
        Some(std::sync::Arc::new(move |job, task| {
            let job = job.ok_or("which job?")?;
            match client.call(
                RtRequest::Logs {
                    job,
                    task: Some(task),
                },
                Some(TIMEOUT),
            ) {
                Ok(RtResponse::Logs(l)) => Ok(log_text(l)),
                Ok(r) => Err(format!("unexpected answer from the runtime: {r:?}")),
                Err(e) => Err(e.message),
            }
        }))
    }
}

/// One `gspc-run --control SOCKET` run.
#[derive(Debug)]
pub struct JobSource {
    socket: PathBuf,
    /// Send `Close` at the first contact: for a socket the monitor made itself, so that the
    /// job ends as it would have without one.
    close_first: bool,
    /// The last status seen (the job has ended when the socket is gone).
    last: Option<Sample>,
    /// False once the job did not answer a `Tasks` request.
    lists_tasks: bool,
    /// The net's name, for the jobs table.
    net: String,
}

impl JobSource {
    pub fn new(socket: &Path) -> JobSource {
        JobSource {
            socket: socket.to_path_buf(),
            close_first: false,
            last: None,
            lists_tasks: true,
            net: "job".into(),
        }
    }

    /// Names the job's net (its file) in the jobs table.
    pub fn net(mut self, net: &str) -> JobSource {
        if !net.is_empty() {
            self.net = net.to_string();
        }
        self
    }

    /// A source for a control socket that only the monitor uses: at the first contact it
    /// tells the job that no tokens will come, so the job ends as without `--control`.
    pub fn closing(socket: &Path) -> JobSource {
        JobSource {
            close_first: true,
            ..JobSource::new(socket)
        }
    }
}

impl Source for JobSource {
    fn poll(&mut self) -> Result<Sample, String> {
        let status = match control::status(&self.socket) {
            Ok(s) => s,
            Err(e) => {
                // Gone after it was there: the job has ended.
                if let Some(last) = &mut self.last {
                    for j in &mut last.jobs {
                        if j.state == "running" {
                            j.state = "ended".into();
                        }
                        j.tasks_running = 0;
                        j.tasks_queued = 0;
                        j.tasks_sent = 0;
                    }
                    for w in &mut last.workers {
                        w.state = "stopped".into();
                        w.running = None;
                        w.in_flight = 0;
                    }
                    return Ok(last.clone());
                }
                return Err(e);
            }
        };
        if self.close_first {
            control::close(&self.socket)?;
            self.close_first = false;
        }
        let net = self.net.clone();
        let tasks = if self.lists_tasks {
            match control::request(&self.socket, &control::Request::Tasks) {
                Ok(control::Response::Tasks(t)) => Some(
                    t.tasks
                        .into_iter()
                        .map(|t| task_sample(1, t, 0))
                        .collect::<Vec<_>>(),
                ),
                // A job that never listed its tasks lists none (an older gspc-run); a failure
                // later keeps the last list.
                _ => match self.last.as_ref().and_then(|l| l.tasks.clone()) {
                    Some(t) => Some(t),
                    None => {
                        self.lists_tasks = false;
                        None
                    }
                },
            }
        } else {
            None
        };
        let sample = Sample {
            title: format!("gspc-run job, control socket {}", self.socket.display()),
            clock_ms: status.elapsed_ms,
            workers: status
                .workers
                .iter()
                .map(|w| WorkerSample {
                    name: w.name.clone(),
                    host: None,
                    pid: None,
                    capabilities: w.capabilities.clone(),
                    state: "up".into(),
                    heartbeat_age_ms: None,
                    running: (w.tasks > 0).then(|| Running {
                        job: Some(1),
                        transition: "task".into(),
                    }),
                    in_flight: w.tasks,
                    done: w.done,
                })
                .collect(),
            jobs: vec![JobSample {
                id: 1,
                net,
                state: "running".into(),
                elapsed_ms: status.elapsed_ms,
                tasks_running: status.tasks_running,
                tasks_queued: status.tasks_queued,
                tasks_sent: status.tasks_sent,
                tasks_done: status.tasks_done,
                firings: Some(status.firings),
                waiting: status.waiting,
                error: None,
            }],
            memory: None,
            tasks,
        };
        self.last = Some(sample.clone());
        Ok(sample)
    }

    fn log_reader(&self) -> Option<LogReader> {
        let socket = self.socket.clone();
        Some(std::sync::Arc::new(
            move |_job, task| match control::request(
                &socket,
                &control::Request::Logs { task: Some(task) },
            )? {
                control::Response::Logs(l) => Ok(log_text(l)),
                control::Response::Error(e) => Err(e),
                r => Err(format!("unexpected answer from the job: {r:?}")),
            },
        ))
    }
}
