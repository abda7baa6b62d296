//! The agent: runs a job's net engine, starts workers through a launcher, and schedules the
//! net's module calls on them over the wire protocol ([`pnet_protocol`]).
//!
//! Layers:
//! - [`sched`]: the scheduler (placement by capabilities, windows, retries, eureka), no I/O;
//! - [`core`]: the engine plus the scheduler as a state machine of events and commands,
//!   no I/O (tested with in-memory fake workers);
//! - `shell` (private): the tokio runtime around it: the listener and handshake, one reader
//!   and one writer task per worker, heartbeats, launching and stopping workers, signals, the
//!   control socket, the progress line, the trace and the worker event log.
//!
//! - [`hub`]: many jobs (one [`core::Core`] each) over one set of workers, no I/O: global
//!   task and module ids, round-robin pumping, per-job windows on every worker (fairness);
//! - [`memory`]: the global memory (one table of the workers' segments and the allocations
//!   in them, shared by all jobs), the implicit `GPI` requirement of module calls with memory
//!   transfers, their planning at dispatch, and the client API's I/O thread;
//!
//! The entry points are [`run_job`] (one job: a runtime stopped when the job ends; used by
//! `gspc-run`) and [`serve`] (the persistent runtime of `gspc`); both run the same shell.
//! [`control`] holds the control protocols and their client side, [`output`] the printing of
//! a job's output tokens.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use pnet_bundle::Bundle;
use pnet_engine::{RunError, RunResult};
use pnet_stdlib::Value;

pub mod control;
pub mod core;
pub mod hub;
pub mod journal;
pub mod memory;
pub mod output;
pub mod sched;
mod shell;
pub mod tasks;
pub mod trace;

pub use control::Status;
pub use core::calls_modules;
pub use memory::{DEFAULT_WORKER_SHM, uses_memory};
pub use sched::SchedConfig;
pub use shell::leaf::{LeafConfig, LeafReport, run_leaf};

/// The `gspc-worker` program to start: the one next to the running executable, unless the
/// environment variable `GSPC_WORKER` names another.
pub fn worker_program() -> PathBuf {
    if let Some(p) = std::env::var_os("GSPC_WORKER") {
        return PathBuf::from(p);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("gspc-worker")))
        .unwrap_or_else(|| PathBuf::from("gspc-worker"))
}

/// When to start the plan's workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StartWorkers {
    /// Always, even for nets without module calls.
    Always,
    /// Only if the net calls modules (nets without module calls run without workers).
    #[default]
    IfModules,
}

/// How to run a job.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// Seed, firing limit, JIT runner.
    pub run: pnet_engine::RunConfig,
    /// Which workers to start where.
    pub plan: pnet_topology::Plan,
    pub launcher: pnet_launch::Launcher,
    /// The `gspc-worker` program (the same path on remote hosts).
    pub worker_program: PathBuf,
    /// Directories where workers look for modules (sent in the Welcome).
    pub module_path: Vec<PathBuf>,
    /// Where to listen for workers (default 127.0.0.1:0; ssh and Slurm need an address the
    /// workers can reach: with 0.0.0.0 the workers are told this host's name).
    pub listen: SocketAddr,
    /// Write a Chrome trace-event JSON file here.
    pub trace: Option<PathBuf>,
    /// Write the worker event log here (else: events go to stderr only with `verbose`).
    pub log: Option<PathBuf>,
    /// Write each task's log (see [`pnet_protocol::WorkerMsg::Log`]) into this directory,
    /// as `task-N-TRANSITION.log`.
    pub logs: Option<PathBuf>,
    pub verbose: bool,
    /// Show a progress line on stderr.
    pub progress: bool,
    /// A Unix control socket for clients (put_token, workflow responses, status, close,
    /// cancel); see [`control`] for how it changes the end of a job.
    pub control: Option<PathBuf>,
    /// Overrides the net's `fhg.drts.schedule.maximum_number_of_retries`.
    pub max_retries: Option<u32>,
    pub start_workers: StartWorkers,
    /// A testing aid: with N > 0, the i-th worker this agent starts gets the host identity
    /// `local-<i mod N>` (`gspc-worker --host-id`), so that workers on one machine transfer
    /// memory between "hosts" over TCP (loopback) instead of through shared memory.
    pub fake_hosts: u32,
    /// Started workers run native modules isolated in a child process
    /// (`gspc-worker --isolate-modules`): a crashing module fails its task, not the worker.
    pub isolate_modules: bool,
}

impl AgentConfig {
    /// A configuration with the defaults: local launcher, listening on 127.0.0.1:0, no
    /// trace, log, progress or control socket.
    pub fn new(plan: pnet_topology::Plan, worker_program: PathBuf) -> AgentConfig {
        AgentConfig {
            run: pnet_engine::RunConfig::default(),
            plan,
            launcher: pnet_launch::Launcher::Local,
            worker_program,
            module_path: Vec::new(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            trace: None,
            log: None,
            logs: None,
            verbose: false,
            progress: false,
            control: None,
            max_retries: None,
            start_workers: StartWorkers::IfModules,
            fake_hosts: 0,
            isolate_modules: false,
        }
    }
}

/// Extra knobs for tests, benchmarks and embedders (see [`run_job_with`]).
pub struct JobOptions {
    /// The run's secret (default: a fresh random one).
    pub secret: Option<pnet_protocol::Secret>,
    /// Called with the address the agent listens on, once it listens.
    pub on_listen: Option<Box<dyn FnOnce(SocketAddr) + Send>>,
    /// Workers that will connect on their own (not started from the plan): the agent waits
    /// for them as for planned ones.
    pub external_workers: usize,
    /// How long to wait for planned workers before going on without them.
    pub join_timeout: Duration,
    pub sched: SchedConfig,
    /// Grace period for workers to exit after the job before they are killed.
    pub stop_grace: Duration,
    /// Global memory to allocate (and fill) once the workers have joined, before the job
    /// starts; each binds a root in-port to the allocation's range (`gspc-run --alloc`).
    /// Freed when the job ends.
    pub allocs: Vec<MemAlloc>,
    /// After a successful job, write the bytes of the allocation bound to a port to a file
    /// (`gspc-run --dump PORT=FILE`; the port must be one of `allocs`).
    pub dumps: Vec<(String, PathBuf)>,
}

/// One allocation of [`JobOptions::allocs`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemAlloc {
    /// The root in-port that gets the `global_memory_range` token of the allocation.
    pub port: String,
    /// Size in bytes (with `data`: its length).
    pub size: u64,
    /// The initial contents (else zeros).
    pub data: Option<Vec<u8>>,
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            secret: None,
            on_listen: None,
            external_workers: 0,
            join_timeout: Duration::from_secs(60),
            sched: SchedConfig::default(),
            stop_grace: Duration::from_secs(3),
            allocs: Vec::new(),
            dumps: Vec::new(),
        }
    }
}

impl std::fmt::Debug for JobOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobOptions")
            .field("external_workers", &self.external_workers)
            .field("join_timeout", &self.join_timeout)
            .field("sched", &self.sched)
            .field("allocs", &self.allocs.len())
            .field("dumps", &self.dumps)
            .finish_non_exhaustive()
    }
}

/// Why a job did not produce a result.
#[derive(Debug)]
pub enum AgentError {
    /// The job failed: a module call, an expression, a type check, or a task that ran out of
    /// retries; the error names the transition and its source location.
    Run(RunError),
    /// A module call that no worker can run.
    NoWorker(String),
    /// The net cannot go on (it waits for tokens that nothing can put).
    Stuck(String),
    /// Cancelled by a signal or a control client (`gspc-run` exits with 130).
    Cancelled,
    /// Cancelled by SIGTERM (`gspc-run` exits with 143 = 128 + 15).
    Terminated,
    /// The agent could not start: listening, launching workers, the control socket, files.
    Setup(String),
}

impl AgentError {
    /// A stable code for the error.
    pub fn code(&self) -> &'static str {
        match self {
            AgentError::Run(_) => "agent-job-failed",
            AgentError::NoWorker(_) => "agent-no-worker",
            AgentError::Stuck(_) => "agent-stuck",
            AgentError::Cancelled | AgentError::Terminated => "agent-cancelled",
            AgentError::Setup(_) => "agent-setup",
        }
    }

    /// The exit code a command-line tool should use.
    pub fn exit_code(&self) -> i32 {
        match self {
            AgentError::Cancelled => 130,
            AgentError::Terminated => 143,
            _ => 1,
        }
    }
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgentError::Run(e) => write!(f, "{e}"),
            AgentError::NoWorker(m) | AgentError::Stuck(m) | AgentError::Setup(m) => f.write_str(m),
            AgentError::Cancelled => f.write_str("the job was cancelled"),
            AgentError::Terminated => f.write_str("the job was cancelled by SIGTERM"),
        }
    }
}

impl std::error::Error for AgentError {}

/// How to run a persistent runtime ([`serve`]).
pub struct RuntimeConfig {
    /// The workers to start at boot, the launcher, module path, address, log, engine
    /// settings (`control`, `trace` and `start_workers` are not used).
    pub agent: AgentConfig,
    /// The private state directory: the control socket, pid file and `runtime.json` go there.
    pub state_dir: PathBuf,
    /// The runtime's secret (for workers and control clients).
    pub secret: pnet_protocol::Secret,
    pub sched: SchedConfig,
    /// Grace period for workers to exit before they are killed.
    pub stop_grace: Duration,
}

impl std::fmt::Debug for RuntimeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeConfig")
            .field("state_dir", &self.state_dir)
            .field("workers", &self.agent.plan.workers.len())
            .finish_non_exhaustive()
    }
}

/// Runs a persistent runtime in this process until a client stops it (or SIGTERM/SIGINT):
/// starts the planned workers, serves the control socket `state_dir/control.sock` (see
/// [`control::RtRequest`]), runs the submitted jobs on the shared workers, and returns what
/// the stop stopped.
pub fn serve(config: RuntimeConfig) -> Result<control::StopReport, AgentError> {
    shell::serve(config, journal::Journaling::Off)
}

/// [`serve`] with a journal of the jobs in the state directory (see [`journal`]): a new one,
/// or the one a crashed runtime left, whose jobs come back ([`journal::Journaling::Resume`]).
pub fn serve_journaled(
    config: RuntimeConfig,
    journaling: journal::Journaling,
) -> Result<control::StopReport, AgentError> {
    shell::serve(config, journaling)
}

/// Runs a job: starts the planned workers, runs the net with its module calls on them, stops
/// the workers, and returns the result.
pub fn run_job(
    bundle: &Bundle,
    inputs: &[(String, Vec<Value>)],
    config: &AgentConfig,
) -> Result<RunResult, AgentError> {
    run_job_with(bundle, inputs, config, JobOptions::default())
}

/// [`run_job`] with extra options.
pub fn run_job_with(
    bundle: &Bundle,
    inputs: &[(String, Vec<Value>)],
    config: &AgentConfig,
    options: JobOptions,
) -> Result<RunResult, AgentError> {
    shell::run(bundle, inputs, config, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_codes_and_messages() {
        assert_eq!(AgentError::Cancelled.exit_code(), 130);
        assert_eq!(AgentError::Cancelled.code(), "agent-cancelled");
        assert_eq!(AgentError::Cancelled.to_string(), "the job was cancelled");
        assert_eq!(AgentError::Terminated.exit_code(), 143);
        assert_eq!(AgentError::Terminated.code(), "agent-cancelled");
        assert_eq!(
            AgentError::Terminated.to_string(),
            "the job was cancelled by SIGTERM"
        );
        let e = AgentError::Setup("cannot listen".into());
        assert_eq!((e.code(), e.exit_code()), ("agent-setup", 1));
        let mut r = RunError::new(pnet_engine::RunErrorKind::TaskFailed {
            module: "arith".into(),
            message: "division by zero".into(),
        });
        r.transition = Some("div".into());
        r.transition_at = Some("net.xpnet:3:5".into());
        assert_eq!(
            AgentError::Run(r).to_string(),
            "in transition `div` (net.xpnet:3:5): module call `arith` failed: division by zero"
        );
    }
}
